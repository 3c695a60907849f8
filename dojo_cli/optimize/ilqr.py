"""Iterative LQR (Gauss-Newton DDP) on the exact step gradients, with box-constrained
inputs, an augmented Lagrangian for constraints and a kappa schedule for contact.

Each iteration (Li and Todorov, "Iterative linear quadratic regulator design for nonlinear
biological movement systems", 2004; Tassa, Erez, Todorov, "Synthesis and stabilization of
complex behaviors through online trajectory optimization", IROS 2012, sec. II):

1. **Backward pass** on the linearised dynamics s' = A s + B u and the Gauss-Newton
   quadratic model of the cost (feature Jacobians J: J' W J, no second derivatives of
   the dynamics), the Riccati recursion of Tassa 2012. Q_uu is regularised
   Levenberg-Marquardt style (Q_uu + rho I); the input step solves the box QP
   min 1/2 du' Q_uu du + Q_u' du on lower - u <= du <= upper - u by projected Newton
   (box-DDP: Tassa, Mansard, Todorov, "Control-limited differential dynamic programming",
   ICRA 2014), and clamped inputs get no feedback (K rows zero).
2. **Forward pass**: the real (nonlinear, contact) rollout with u = u* + alpha d + K ds,
   clipped to the box; backtracking on alpha until the actual decrease is at least
   ARMIJO of the model's predicted one (Tassa 2012). No step found: rho grows; a step
   found: rho shrinks (Tassa's schedule, RHO_GROWTH below).
3. **Linearise** the accepted trajectory (problem.linearize: the implicit-function-theorem
   gradients of every step, exact or relaxed at kappa).

Constraints (terminal equalities c = 0, path inequalities c <= 0) enter through an
augmented Lagrangian (Hestenes-Powell-Rockafellar; ALTRO: Howell, Jackson, Manchester,
"ALTRO: a fast solver for constrained trajectory optimization", IROS 2019; as
IterativeLQR.jl does): the inner iLQR minimises

    J + sum lambda' c + mu/2 |c|^2                    (equalities)
    J + sum (|max(0, lambda + mu c)|^2 - |lambda|^2) / (2 mu)   (inequalities)

and when it has converged the multipliers are updated (lambda <- lambda + mu c, or
max(0, lambda + mu c)) and the penalty grows (mu <- penalty_scaling mu) when the
violation did not fall to PENALTY_KEEP of the last, until it is below the tolerance.
Through contact, the gradients are first taken on the relaxed central path (kappa from
the schedule: smooth, informative), each stage solved in turn, the last exact (Howell,
Le Cleac'h et al., "Dojo: a differentiable physics engine for robotics": relaxed
gradients through contact).

Convergence is measured by the projected gradient of the (augmented) objective with
respect to the inputs, computed by the adjoint recursion with the same Jacobians
(p_N = l_s(N); g_k = l_u + B' p_{k+1}; p_k = l_s + A' p_{k+1}).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dojo_cli.errors import SolverError
from dojo_cli.optimize.boxqp import NotPositiveDefinite, solve_box_qp
from dojo_cli.optimize.problem import (
    FeatureSet, Linearization, Problem, Rollout, closed_loop_rollout, feature_jacobian, linearize, needs, residuals,
    rollout,
)

# Sufficient decrease of the line search: actual over predicted reduction (Tassa 2012 uses 0-0.1).
ARMIJO = 1e-4
# Line-search steps alpha = 1, 1/2, ... (this many tries: down to 1/128).
LINE_SEARCH_STEPS = 8
# A relaxed (kappa) stage ends after this many consecutive iterations without a decrease:
# its model is the smoothed dynamics', which the exact rollout cannot follow to the end.
RELAXED_STAGE_FAILURES = 5
# Levenberg-Marquardt, Tassa, Erez, Todorov 2012, sec. II-F: the factor Delta grows by
# RHO_GROWTH per consecutive failure (Delta <- max(D0, Delta D0), rho <- max(rho_min, rho Delta))
# and shrinks as gradually after a success (Delta <- min(1/D0, Delta/D0), rho <- rho Delta,
# zero below RHO_MIN); beyond RHO_MAX the iteration has stalled (no decrease along any
# regularised direction).
RHO_GROWTH = 2.0
RHO_MIN = 1e-6
RHO_MAX = 1e10
# Relative decrease of the objective below which an accepted step counts as no progress
# (floating point: the rollout's own solver tolerance bounds what can be resolved).
STALL_DECREASE = 1e-13
# Inner tolerance of the augmented Lagrangian: the first outer loop stops at this fraction of
# the initial gradient, each next at INNER_TOLERANCE_FACTOR times the previous one's, down to
# the requested tolerance (ALTRO's loose intermediate solves).
INNER_TOLERANCE_START = 1e-2
INNER_TOLERANCE_FACTOR = 0.1
# Largest penalty mu (beyond it the Gauss-Newton model is too ill-conditioned to be useful).
PENALTY_MAX = 1e8
# The penalty stays when an outer update has cut the violation to this fraction of the last.
PENALTY_KEEP = 0.25


@dataclass(frozen=True)
class OptimizeOptions:
    """Options of the solver (a task's ``solver:``).

    Attributes:
        max_iterations: iLQR iterations in all (every stage and outer update together).
        gradient_tolerance: the inner loop has converged when the projected gradient of the
            objective w.r.t. the inputs is below this (infinity norm, cost units per input unit).
        constraint_tolerance: the largest constraint violation accepted.
        regularization: initial rho (Q_uu + rho I).
        penalty: initial mu; penalty_scaling: mu's growth per outer update; max_outer: updates.
        kappa: relaxed-gradient schedule, solved in turn before the exact gradients
            (scenes with contacts or limits only).
        exact_stage: whether the exact gradients follow the kappa schedule. Without it the
            last kappa is the final stage: converged means the relaxed gradient there is
            below the tolerance (a gait whose feet stick and slide: the exact gradient of a
            contact at its switch does not vanish at the optimum, docs/optimize.md).
    """

    max_iterations: int = 200
    gradient_tolerance: float = 1e-6
    constraint_tolerance: float = 1e-6
    regularization: float = 0.0
    penalty: float = 1.0
    penalty_scaling: float = 10.0
    max_outer: int = 30
    kappa: tuple[float, ...] = ()
    exact_stage: bool = True


@dataclass
class OptimizeResult:
    """The outcome of a solve.

    Attributes:
        status: "converged", "max_iterations", "stalled" (no decrease possible before the
            tolerances were met), "infeasible" (the outer updates ran out with constraints
            violated), "interrupted" (Ctrl-C: the best iterate is kept) or "diverged".
        message: one sentence about it.
        traj: the best (last accepted) trajectory.
        K: (N, nu, ns) feedback gains, u = u* + K (s - s*) in the representation's
            coordinates; d: (N, nu) the last feedforward step.
        cost: J; violation: largest constraint violation; gradient: projected gradient norm.
        log: one dict per iteration (iteration, cost, objective, violation, gradient, step,
            regularization, kappa, penalty, wall_time).
        timing: seconds spent in rollouts, gradients and backward passes.
        multipliers: {"terminal": (n_e,), "path": (N, 2 n_i)}.
    """

    status: str
    message: str
    traj: Rollout
    K: np.ndarray
    d: np.ndarray
    cost: float
    violation: float
    gradient: float
    iterations: int
    seconds: float
    log: list[dict] = field(default_factory=list)
    timing: dict = field(default_factory=dict)
    multipliers: dict = field(default_factory=dict)
    task: object = None  # the Task solved, when solved by dojo.optimize


@dataclass
class _Multipliers:
    """Augmented-Lagrangian state: equality and inequality multipliers, penalty."""

    eq: np.ndarray
    ineq: np.ndarray  # (N+1, 2 n_i): lower and upper sides at each knot (knot 0 unconstrained)
    mu: float
    slack: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (N, n_slack)


def _effort(problem: Problem, traj: Rollout) -> float:
    du = traj.U - problem.effort_reference
    return 0.5 * float(np.sum(du * du * problem.effort))


def _tracking(problem: Problem, fs: FeatureSet | None, traj: Rollout, knots: np.ndarray) -> float:
    if fs is None:
        return 0.0
    r = residuals(problem, fs, traj, knots)
    return 0.5 * float(np.sum(r * r * fs.weight))


def cost(problem: Problem, traj: Rollout) -> float:
    """J of a trajectory (module docstring of problem)."""
    N = problem.horizon
    return (_tracking(problem, problem.stage, traj, np.arange(N)) + _effort(problem, traj)
            + _tracking(problem, problem.terminal, traj, np.array([N]))
            + _tracking(problem, problem.reference, traj, np.arange(N + 1))
            + sum(_tracking(problem, fs, traj, np.array([k])) for k, fs in problem.targets))


def _equality(problem: Problem, traj: Rollout) -> np.ndarray:
    fs = problem.terminal_equality
    if fs is None:
        return np.zeros(0)
    return residuals(problem, fs, traj, problem.horizon)


def _slack(problem: Problem, traj: Rollout) -> np.ndarray:
    """(N, n_slack) the slack inputs, each equality u_k[slack] = 0."""
    return traj.U[:, list(problem.slack)]


def _inequality(problem: Problem, traj: Rollout) -> np.ndarray:
    """(N+1, 2 n_i) c <= 0 at every knot: [lower - f, f - upper] (infinite bounds give -inf:
    never active); knot 0 (the given initial state) is not constrained: zeros... set to -inf."""
    fs = problem.path_inequality
    f = residuals(problem, fs, traj, np.arange(problem.horizon + 1))
    c = np.concatenate([fs.lower - f, f - fs.upper], axis=1)
    c[0] = -np.inf
    return c


def violation(problem: Problem, traj: Rollout) -> float:
    """The largest constraint violation of a trajectory (0 without constraints)."""
    out = 0.0
    c = _equality(problem, traj)
    if c.size:
        out = float(np.max(np.abs(c)))
    if problem.path_inequality is not None:
        out = max(out, float(np.max(_inequality(problem, traj), initial=0.0)))
    if problem.slack:
        out = max(out, float(np.max(np.abs(_slack(problem, traj)))))
    return out


def objective(problem: Problem, traj: Rollout, m: _Multipliers) -> float:
    """The augmented Lagrangian (module docstring) of a trajectory."""
    out = cost(problem, traj)
    c = _equality(problem, traj)
    if c.size:
        out += float(m.eq @ c + 0.5 * m.mu * c @ c)
    if problem.path_inequality is not None:
        c = _inequality(problem, traj)
        out += float(np.sum(np.maximum(0.0, m.ineq + m.mu * c) ** 2 - m.ineq**2) / (2 * m.mu))
    if problem.slack:
        c = _slack(problem, traj)
        out += float(np.sum(m.slack * c) + 0.5 * m.mu * np.sum(c * c))
    return out


@dataclass
class _Model:
    """Derivatives of the objective along a trajectory: l_s (N+1, ns), l_ss (N+1, ns, ns),
    l_u (N, nu), l_uu (nu, nu) (constant)."""

    ls: np.ndarray
    lss: np.ndarray
    lu: np.ndarray
    luu: np.ndarray


def _model(problem: Problem, traj: Rollout, lin: Linearization, m: _Multipliers) -> _Model:
    """Gradient and Gauss-Newton Hessian of the objective's terms per knot (J' W r, J' W J)."""
    N, ns = problem.horizon, problem.ns
    ls = np.zeros((N + 1, ns))
    lss = np.zeros((N + 1, ns, ns))
    terms = [(problem.stage, np.arange(N)), (problem.terminal, np.array([N])), (problem.reference, np.arange(N + 1))]
    terms += [(fs, np.array([k])) for k, fs in problem.targets]
    for fs, knots in terms:
        if fs is None:
            continue
        r = residuals(problem, fs, traj, knots)
        J = feature_jacobian(problem, fs, lin, knots, traj)
        # (batched matrix products: BLAS, where einsum's three-operand contraction is a plain
        # loop, 36 ms a call for the humanoid's 70 states)
        Jt = np.swapaxes(J, -1, -2)
        ls[knots] += (Jt @ (fs.weight * r)[..., None])[..., 0]
        lss[knots] += Jt @ (fs.weight[:, None] * J)
    if problem.path_inequality is not None:
        c = _inequality(problem, traj)
        active = (m.ineq + m.mu * c) > 0
        if active.any():
            J = feature_jacobian(problem, problem.path_inequality, lin, np.arange(N + 1), traj)
            Jc = np.concatenate([-J, J], axis=1)  # d[lower - f, f - upper]/ds
            Jct = np.swapaxes(Jc, -1, -2)
            ls += (Jct @ np.where(active, m.ineq + m.mu * c, 0.0)[..., None])[..., 0]
            lss += m.mu * (Jct @ (active[..., None] * Jc))
    if problem.terminal_equality is not None:
        c = _equality(problem, traj)
        J = feature_jacobian(problem, problem.terminal_equality, lin, N, traj)
        ls[N] += J.T @ (m.eq + m.mu * c)
        lss[N] += m.mu * J.T @ J
    lu = (traj.U - problem.effort_reference) * problem.effort
    luu = np.diag(problem.effort)
    if problem.slack:
        # the slack equalities' augmented-Lagrangian terms lambda' u + mu/2 |u|^2 (slack entries)
        idx = list(problem.slack)
        lu[:, idx] += m.slack + m.mu * _slack(problem, traj)
        luu[idx, idx] += m.mu
    return _Model(ls=ls, lss=lss, lu=lu, luu=luu)


def projected_gradient(problem: Problem, traj: Rollout, lin: Linearization, model: _Model) -> np.ndarray:
    """(N, nu) d objective / d u_k by the adjoint recursion (module docstring), zero where
    an input is held at a bound by a gradient pointing out of the box."""
    N = problem.horizon
    g = np.zeros((N, problem.nu))
    p = model.ls[N]
    for k in range(N - 1, -1, -1):
        g[k] = model.lu[k] + lin.B[k].T @ p
        p = model.ls[k] + lin.A[k].T @ p
    held = ((traj.U <= problem.lower) & (g >= 0)) | ((traj.U >= problem.upper) & (g <= 0))
    g[held] = 0.0
    return g


def backward_pass(problem: Problem, traj: Rollout, lin: Linearization, model: _Model, rho: float, d_warm=None):
    """The Riccati recursion with box-constrained inputs: (K (N, nu, ns), d (N, nu), dV (2,)),
    dV the model's predicted change [d' Q_u, 1/2 d' Q_uu d] summed. NotPositiveDefinite when
    a regularised Q_uu has no Cholesky factor on the free inputs.

    Inputs held by their bounds (lower == upper: an unactuated coordinate) never move and
    get no feedback: they are left out of the recursion (B's columns, Q_uu's rows), which
    is the box QP's answer for them (boxqp: held inputs) at a fraction of its cost. The
    others' unconstrained Newton step and gains come from one solve with Q_u and Q_ux
    stacked; only when that step leaves the box is the box QP solved (projected Newton)."""
    N, ns, nu = problem.horizon, problem.ns, problem.nu
    K = np.zeros((N, nu, ns))
    d = np.zeros((N, nu))
    dV = np.zeros(2)
    Vx = model.ls[N].copy()
    Vxx = model.lss[N].copy()
    act = np.flatnonzero(problem.lower < problem.upper)
    if act.size == 0:
        return K, d, dV
    na = act.size
    Bs = lin.B[:, :, act]
    lu = model.lu[:, act]
    luu = model.luu[np.ix_(act, act)]
    lo = problem.lower[act] - traj.U[:, act]
    hi = problem.upper[act] - traj.U[:, act]
    boxed = bool(np.any(np.isfinite(problem.lower[act])) or np.any(np.isfinite(problem.upper[act])))
    reg = rho * np.eye(na)
    for k in range(N - 1, -1, -1):
        A, B = lin.A[k], Bs[k]
        VxxA = Vxx @ A
        Qx = model.ls[k] + A.T @ Vx
        Qu = lu[k] + B.T @ Vx
        Qxx = model.lss[k] + A.T @ VxxA
        Quu = luu + B.T @ Vxx @ B
        Qux = B.T @ VxxA
        H = Quu + reg
        rhs = np.concatenate([Qu[:, None], Qux], axis=1)
        if na == 1:  # (one free input, e.g. a cart: a division; numpy's solvers cost ~10 us a call)
            if not H[0, 0] > 0.0:
                raise NotPositiveDefinite()
            sol = rhs / H[0, 0]
        else:
            H = 0.5 * (H + H.T)
            try:
                np.linalg.cholesky(H)  # the test of positive definiteness (Levenberg-Marquardt grows rho)
            except np.linalg.LinAlgError:
                raise NotPositiveDefinite() from None
            sol = np.linalg.solve(H, rhs)
        dk, Kk = -sol[:, 0], -sol[:, 1:]
        if boxed and not ((dk >= lo[k]).all() and (dk <= hi[k]).all()):
            qp = solve_box_qp(H, Qu, lo[k], hi[k], None if d_warm is None else d_warm[k, act])
            dk = qp.x
            Kk = np.zeros((na, ns))
            if qp.H_free is not None:
                Kk[qp.free] = -np.linalg.solve(qp.H_free, Qux[qp.free])
        d[k, act] = dk
        K[k, act] = Kk
        KtQuu = Kk.T @ Quu
        dV[0] += dk @ Qu
        dV[1] += 0.5 * dk @ Quu @ dk
        Vx = Qx + KtQuu @ dk + Kk.T @ Qu + Qux.T @ dk
        Vxx = Qxx + KtQuu @ Kk + Kk.T @ Qux + Qux.T @ Kk
        Vxx = 0.5 * (Vxx + Vxx.T)
    return K, d, dV


def solve(
    problem: Problem,
    U0: np.ndarray,
    options: OptimizeOptions | None = None,
    progress: Callable[[dict], None] | None = None,
) -> OptimizeResult:
    """Optimise the inputs of ``problem`` from the initial guess U0 (N, nu) (module docstring).

    ``progress`` receives each iteration's log record. Ctrl-C (KeyboardInterrupt) ends the
    solve with status "interrupted" and the best iterate; a solve whose initial rollout
    fails, or that reaches non-finite numbers, ends "diverged" with the reason.
    """
    return _Solve(problem, options or OptimizeOptions(), progress).run(U0)


class _Solve:
    """One solve's state (the trajectory, its linearisation, multipliers, schedules)."""

    def __init__(self, problem: Problem, opts: OptimizeOptions, progress):
        self.problem, self.opts, self.progress = problem, opts, progress
        self.started = time.perf_counter()
        self.timing = {"rollout": 0.0, "gradients": 0.0, "backward": 0.0}
        N, nu, ns = problem.horizon, problem.nu, problem.ns
        n_eq = problem.terminal_equality.size if problem.terminal_equality is not None else 0
        n_ineq = problem.path_inequality.size if problem.path_inequality is not None else 0
        self.constrained = bool(n_eq or n_ineq or problem.slack)
        self.m = _Multipliers(eq=np.zeros(n_eq), ineq=np.zeros((N + 1, 2 * n_ineq)), mu=opts.penalty,
                              slack=np.zeros((N, len(problem.slack))))
        self.kappas: list[float | None] = [None]
        if problem.mech.has_inequalities:
            self.kappas = [*opts.kappa, None] if opts.exact_stage or not opts.kappa else list(opts.kappa)
        self.stage = 0
        self.need_y, self.need_z = needs(problem)
        self.log: list[dict] = []
        self.K = np.zeros((N, nu, ns))
        self.d = np.zeros((N, nu))
        self.iteration = 0
        self.gnorm = float("nan")
        self.rho = opts.regularization
        self.growth = 1.0
        self.failures = 0

    def _timed(self, key: str, fn, *args):
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.timing[key] += time.perf_counter() - t

    def _relinearize(self) -> None:
        p = self.problem
        self.lin = self._timed("gradients", linearize, p, self.traj, self.kappas[self.stage], self.need_y, self.need_z)
        self._remodel()

    def _remodel(self) -> None:
        t = time.perf_counter()
        self.model = _model(self.problem, self.traj, self.lin, self.m)
        grad = projected_gradient(self.problem, self.traj, self.lin, self.model)
        self.gnorm = float(np.max(np.abs(grad), initial=0.0))
        self.obj = objective(self.problem, self.traj, self.m)
        self.timing["backward"] += time.perf_counter() - t

    def _result(self, status: str, message: str) -> OptimizeResult:
        return OptimizeResult(
            status=status, message=message, traj=self.traj, K=self.K, d=self.d, cost=cost(self.problem, self.traj),
            violation=violation(self.problem, self.traj), gradient=self.gnorm, iterations=self.iteration,
            seconds=time.perf_counter() - self.started, log=self.log, timing=self.timing,
            multipliers={"terminal": self.m.eq.copy(), "path": self.m.ineq.copy(), "slack": self.m.slack.copy(),
                         "penalty": self.m.mu},
        )

    def run(self, U0) -> OptimizeResult:
        p = self.problem
        U0 = np.clip(np.asarray(U0, dtype=float).reshape(p.horizon, p.nu), p.lower, p.upper)
        self.traj = self._timed("rollout", rollout, p, U0)
        failed = self.traj.failed_step
        if failed is not None:
            return self._result("diverged", f"the initial guess's rollout fails at step {failed} (the step's solver "
                                            "does not converge)")
        try:
            status, message = self._iterate()
        except KeyboardInterrupt:
            status, message = "interrupted", f"stopped after {self.iteration} iterations; the best iterate is kept"
        except SolverError as exc:
            # the kept trajectory cannot be differentiated (its first linearisation, or at a
            # change of kappa): nothing to continue from
            if not hasattr(self, "model"):
                return self._result("diverged", f"the initial guess's trajectory cannot be differentiated: {exc}")
            status, message = "stalled", f"the trajectory cannot be differentiated further: {exc}"
        if status != "diverged":
            self._final_gains()
        return self._result(status, message)

    def _iterate(self) -> tuple[str, str]:
        p, opts, m = self.problem, self.opts, self.m
        self._relinearize()
        # the inner loop's gradient tolerance: loose while the multipliers are far off, tightened
        # by 10 per outer update down to the requested one (ALTRO's intermediate tolerances)
        inner = max(opts.gradient_tolerance, INNER_TOLERANCE_START * self.gnorm) if self.constrained else opts.gradient_tolerance
        stalled = False
        outer = 0
        last_violation = np.inf
        while True:
            if not np.isfinite(self.obj):
                return "diverged", "the objective is not finite"
            if self.gnorm <= inner or stalled:
                viol = violation(p, self.traj)
                final_kappa = self.stage == len(self.kappas) - 1
                done_inner = self.gnorm <= opts.gradient_tolerance or stalled
                if viol <= opts.constraint_tolerance and final_kappa and done_inner:
                    if self.gnorm <= opts.gradient_tolerance:
                        kappa = self.kappas[self.stage]
                        which = "gradient" if kappa is None else f"relaxed gradient (kappa {kappa:g})"
                        return "converged", f"{which} {self.gnorm:.3g}, violation {viol:.3g}"
                    return "stalled", (f"no decrease found with the gradient at {self.gnorm:.3g} "
                                       f"(tolerance {opts.gradient_tolerance:g})")
                if stalled and not final_kappa:
                    # the relaxed model is exhausted (the exact rollout no longer follows it):
                    # the next, less relaxed, gradients, before any multiplier update (an
                    # update on a stalled relaxed stage only grows the penalty; measured on
                    # the quadruped: mu 1 -> 1e4 in 30 iterations without a step accepted)
                    self.stage += 1
                    self._relinearize()
                elif viol > opts.constraint_tolerance:
                    if outer >= opts.max_outer:
                        return "infeasible", f"the constraints are violated by {viol:.3g} after {outer} penalty updates"
                    # outer update of the augmented Lagrangian (ALTRO's multiplier update)
                    outer += 1
                    c = _equality(p, self.traj)
                    if c.size:
                        m.eq = m.eq + m.mu * c
                    if m.ineq.size:
                        m.ineq = np.maximum(0.0, m.ineq + m.mu * _inequality(p, self.traj))
                    if m.slack.size:
                        m.slack = m.slack + m.mu * _slack(p, self.traj)
                    if viol > PENALTY_KEEP * last_violation:
                        # too little progress from the multipliers alone: a larger penalty
                        # (Nocedal and Wright, Numerical Optimization, ch. 17: the
                        # bound-constrained Lagrangian method)
                        m.mu = min(m.mu * opts.penalty_scaling, PENALTY_MAX)
                    last_violation = viol
                elif not final_kappa:
                    self.stage += 1  # the next, less relaxed, gradients
                    self._relinearize()
                inner = max(opts.gradient_tolerance, inner * INNER_TOLERANCE_FACTOR)
                stalled = False
                self.rho = opts.regularization
                self.growth = 1.0
                self.failures = 0
                self._remodel()
                continue
            if self.iteration >= opts.max_iterations:
                return "max_iterations", f"{self.iteration} iterations, gradient {self.gnorm:.3g}"
            self.iteration += 1
            stalled = self._step()

    def _step(self) -> bool:
        """One iteration: backward pass, line search, linearisation; True when it stalled."""
        p = self.problem
        t = time.perf_counter()
        while True:  # Levenberg-Marquardt growth until Q_uu is positive definite on the free inputs
            try:
                K, d, dV = backward_pass(p, self.traj, self.lin, self.model, self.rho)
                break
            except NotPositiveDefinite:
                self._grow()
                if self.rho > RHO_MAX:
                    self.timing["backward"] += time.perf_counter() - t
                    self._record(0.0)
                    return True
        self.timing["backward"] += time.perf_counter() - t
        accepted = None
        alpha = 1.0
        t = time.perf_counter()
        for _ in range(LINE_SEARCH_STEPS):
            trial = closed_loop_rollout(p, self.traj, self.lin, d, K, alpha)
            if trial.failed_step is None:
                obj_trial = objective(p, trial, self.m)
                predicted = -(alpha * dV[0] + alpha**2 * dV[1])
                actual = self.obj - obj_trial
                if np.isfinite(obj_trial) and actual > 0 and (predicted <= 0 or actual >= ARMIJO * predicted):
                    accepted = trial
                    break
            alpha *= 0.5
        self.timing["rollout"] += time.perf_counter() - t
        if accepted is None:
            self._grow()
            self._record(0.0)
            self.failures += 1
            # a relaxed stage with a next one gives way to it after a few failures; the last
            # stage (relaxed with exact_stage false) regularises on, as the exact one does
            moving_on = self.kappas[self.stage] is not None and self.stage < len(self.kappas) - 1
            return self.rho > RHO_MAX or (moving_on and self.failures >= RELAXED_STAGE_FAILURES)
        before = self.obj
        kept = (self.traj, self.K, self.d, self.lin, self.model, self.gnorm, self.obj)
        self.traj, self.K, self.d = accepted, K, d
        try:
            self._relinearize()
        except SolverError:
            # a step of the trial cannot be differentiated (a singular Newton matrix at its
            # solution, e.g. a contact exactly at its switch): the trial is rejected as a
            # failed line search would be
            self.traj, self.K, self.d, self.lin, self.model, self.gnorm, self.obj = kept
            self._grow()
            self._record(0.0)
            self.failures += 1
            return self.rho > RHO_MAX
        self.failures = 0
        self.growth = min(1.0 / RHO_GROWTH, self.growth / RHO_GROWTH)
        self.rho = self.rho * self.growth if self.rho * self.growth >= RHO_MIN else 0.0
        self._record(alpha)
        return (before - self.obj) <= STALL_DECREASE * max(1.0, abs(before))

    def _grow(self) -> None:
        """Levenberg-Marquardt growth after a failure (RHO_GROWTH)."""
        self.growth = max(RHO_GROWTH, self.growth * RHO_GROWTH)
        self.rho = max(self.rho * self.growth, RHO_MIN)

    def _record(self, step: float) -> None:
        kappa = self.kappas[self.stage]
        record = {
            "iteration": self.iteration, "cost": cost(self.problem, self.traj), "objective": self.obj,
            "violation": violation(self.problem, self.traj), "gradient": self.gnorm, "step": step,
            "regularization": self.rho, "kappa": -1.0 if kappa is None else float(kappa), "penalty": self.m.mu,
            "wall_time": time.perf_counter() - self.started,
        }
        self.log.append(record)
        if self.progress is not None:
            self.progress(record)

    def _final_gains(self) -> None:
        """The gains of the kept trajectory, from a backward pass on its exact linearisation,
        so a user can track the plan (u = u* + K (s - s*))."""
        p = self.problem
        try:
            if self.kappas[self.stage] is not None or not hasattr(self, "model"):
                self.lin = linearize(p, self.traj, None, self.need_y, self.need_z)
                self.model = _model(p, self.traj, self.lin, self.m)
            self.K, self.d, _ = backward_pass(p, self.traj, self.lin, self.model, self.rho)
        except (NotPositiveDefinite, SolverError):
            pass  # (the gains of the last accepted iteration stay)
