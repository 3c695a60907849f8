"""Exact derivatives of one step by the implicit function theorem (dojo_engine_notes.md 6).

The step solves r(w; z2, u, theta) = 0 for the unknowns w (step.StepProblem). At the
solution, dw/dp = -(dr/dw)^-1 dr/dp for any p among the state z2, the inputs u and the
parameters theta. dr/dw is the Newton matrix at the solution itself, refactorised with
the raw rows (the solver's last factorisation is one iterate behind and its
second-order-cone rows are Nesterov-Todd scaled); one factorisation serves every
right-hand side. Unlike Dojo (which differentiates at the post-step state, notes 6),
everything here is evaluated at the state the step started from.

Tangent coordinates (FORMATS.md), per body [x, v, phi, w] on inputs and outputs, with
q -> q [sqrt(1 - |phi|^2), phi]. The physics code's rotation tangent t (q -> q exp(t/2))
is t = 2 phi to first order.

dr/dz2 has four parts:
- the previous momentum (v15, w15): -d momentum_left (dynamics.momentum_left_jacobian);
- the next configuration x3 = x2 + h v25, q3 = q2 qmap(w25) moves with z2:
  dx3/dx2 = I and dt3/dphi2 = 2 R(qmap(w25))^T; every quantity evaluated at z3
  (joint constraints, limit rows, contact rows and wrenches) already has its exact
  z3 Jacobian from the step, chained here through this map;
- the impulse maps evaluated at z2 (constraint impulses Jg(z2)^T lambda, springs,
  dampers, inputs and limit impulses, all J(z2)^T times a vector): their derivative
  needs the second derivative of the joint kinematics. It is taken by the complex
  step (Squire and Trapp 1998; Martins et al. 2003): for an analytic f,
  f'(x) = Im f(x + i e) / e + O(e^2) with no subtraction, so with e = 1e-20 the
  result is exact to rounding. The kinematics keep complex inputs complex
  (math.quaternion avoids abs, norm and arctan2), and every joint is perturbed at
  once (each joint sees its own copy of its bodies' poses), 12 evaluations in all.

Parameters: body mass and inertia (momenta and gravity), gravity, joint spring and
damper coefficients (linear in the residual), and per contact the friction
coefficient (the mu gn row), and the sphere offset and radius (extra Jet columns of
the contact geometry, physics.contact._parameter_columns).

Smoothness (the Dojo paper's relaxed gradients): by default the derivative is
taken where the solver stopped, on its final central-path value (s o gamma ~ kappa
of the last iterate). With ``kappa`` given, the step is first re-solved on the
central path s o gamma = kappa (Newton on the relaxed system, staying inside the
cones), and differentiated there: larger kappa, smoother and more biased gradients.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import CONTACT_HALF_SIZE, Mechanism
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels
from dojo_cli.physics.contact import evaluate_contacts
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.physics.dynamics import momentum_inertia_derivative, momentum_left_jacobian
from dojo_cli.physics.kinematics import (
    constraint_rows,
    input_rows,
    minimal_rows,
    parent_child_poses,
    pose_kinematics,
)
from dojo_cli import _core
from dojo_cli.simulation.step import CONSTRAINT_REGULARIZATION, StepProblem, core_step, solve_step
from dojo_cli.solver.interior_point import complementarity, cone_step, scaled_linearization
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverResult

# Complex-step size: far below rounding, so the derivative is exact to rounding.
_COMPLEX_STEP = 1e-20
# Relaxation onto the central path (kappa option): Newton iterations and tolerance.
_RELAX_ITERATIONS = 60
_RELAX_TOLERANCE = 1e-13
_RELAX_LIFT = 1e-2



# --------------------------------------------------------------- tangents
def state_tangent_columns(nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Indices of x, v, phi, w in the 12 nb tangent vector, each (nb, 3)."""
    base = 12 * np.arange(nb)[:, None] + np.arange(3)
    return base, base + 3, base + 6, base + 9


def _state_column(nb: int, body: np.ndarray, part: int) -> np.ndarray:
    """Tangent columns (m, 3) of ``part`` (0 x, 1 v, 2 phi, 3 w) of bodies (nb = the world: -1)."""
    cols = 12 * body[:, None] + 3 * part + np.arange(3)
    return np.where(body[:, None] >= nb, -1, cols)


def _scatter_add(out: np.ndarray, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
    """out[rows, cols] += values, broadcasting, skipping rows or columns < 0."""
    rows, cols, values = np.broadcast_arrays(rows, cols, values)
    keep = (rows >= 0) & (cols >= 0)
    np.add.at(out, (rows[keep], cols[keep]), values[keep])


# ---------------------------------------------------- joint impulse maps at z2
@dataclass
class _JointWeights:
    """What multiplies each joint's row Jacobians at z2 in the body residual, per (joint, slot)."""

    lam: np.ndarray  # (nj, 6) constraint impulses (rows -Jc^T lam)
    spring: np.ndarray  # (nj, 6) h k
    offset: np.ndarray  # (nj, 6) spring offset
    damper: np.ndarray  # (nj, 6) h c
    limit: np.ndarray  # (nj, 6) sigma gamma summed over a coordinate's limits
    inputs: np.ndarray  # (nj, 6) h u
    xi: np.ndarray  # (nj, 12) [va, wa, vb, wb] at the solution (origin zero)
    minimal: bool = field(default=False)


def _joint_weights(problem: StepProblem, w: np.ndarray) -> _JointWeights:
    mech, s = problem.mech, problem.s
    h = mech.timestep
    nj = mech.nj
    fj, fs = mech.free_joint, mech.free_slot

    def per_slot(values) -> np.ndarray:
        out = np.zeros((nj, 6))
        np.add.at(out, (fj, fs), values)
        return out

    lam = np.zeros((nj, 6))
    lam[mech.row_joint, mech.row_slot] = w[s.lam]
    limit = np.zeros((nj, 6))
    if mech.nlim:
        np.add.at(limit, (fj[mech.limit_free], fs[mech.limit_free]), mech.limit_sign * w[s.lim_g])
    xi_ext = np.concatenate([w[: s.nv].reshape(mech.nb, 6), np.zeros((1, 6))])
    xi = np.concatenate([xi_ext[mech.parent_padded], xi_ext[mech.child]], axis=1)
    minimal = bool(mech.has_springs or mech.has_dampers or mech.nlim)
    return _JointWeights(
        lam=lam,
        spring=per_slot(h * mech.spring),
        offset=per_slot(mech.spring_offset),
        damper=per_slot(h * mech.damper),
        limit=limit,
        inputs=per_slot(h * problem.u),
        xi=xi,
        minimal=minimal,
    )


def _joint_impulses(mech: Mechanism, kin, wt: _JointWeights) -> np.ndarray:
    """Each joint's part of the body residual at z2, on its 12 columns (nj, 12).

    -Jc^T lam + Jm^T (h k (m - m0) + h c Jm xi - sigma gamma) - Ju^T (h u): the terms
    of step.StepProblem that are evaluated at z2 (signs as in its body rows).
    """
    _, jc = constraint_rows(mech, kin)
    out = -np.einsum("jrk,jr->jk", jc, wt.lam)
    if wt.minimal:
        m, jm = minimal_rows(mech, kin)
        rate = np.einsum("jrk,jk->jr", jm, wt.xi)
        coef = wt.spring * (m - wt.offset) + wt.damper * rate - wt.limit
        out = out + np.einsum("jrk,jr->jk", jm, coef)
    if np.any(wt.inputs):
        out = out - np.einsum("jrk,jr->jk", input_rows(mech, kin), wt.inputs)
    return out


def _joint_impulse_derivative(problem: StepProblem, w: np.ndarray) -> np.ndarray:
    """d(_joint_impulses)/d[xa, ta, xb, tb] per joint, (nj, 12, 12), by the complex step."""
    mech = problem.mech
    wt = _joint_weights(problem, w)
    xa, qa, xb, qb = parent_child_poses(mech, problem.x2, problem.q2)
    e = _COMPLEX_STEP
    out = np.empty((mech.nj, 12, 12))
    for k in range(12):
        part, axis = divmod(k, 3)
        cxa, cqa, cxb, cqb = xa.astype(complex), qa.astype(complex), xb.astype(complex), qb.astype(complex)
        if part in (0, 2):
            (cxa if part == 0 else cxb)[:, axis] += 1j * e
        else:
            # q exp(i e u / 2) = q [cosh(e/2), i sinh(e/2) u] = q [1, i e/2 u] to rounding
            dq = np.zeros(4, dtype=complex)
            dq[0] = 1.0
            dq[1 + axis] = 0.5j * e
            if part == 1:
                cqa = quat.multiply(cqa, dq)
            else:
                cqb = quat.multiply(cqb, dq)
        kin = pose_kinematics(mech, cxa, cqa, cxb, cqb)
        out[:, :, k] = _joint_impulses(mech, kin, wt).imag / e
    return out


# ------------------------------------------------------- z3 through z2
def _rotation_chain(problem: StepProblem, w25: np.ndarray) -> np.ndarray:
    """dt3/dphi2 = 2 R(qmap(w25))^T per body, with a zero block for the world (nb+1, 3, 3)."""
    rot = quat.matrix_from_quaternion(quat.integrator_map(w25, problem.mech.timestep))
    return np.concatenate([2.0 * np.swapaxes(rot, 1, 2), np.zeros((1, 3, 3))])


def _add_z3(out, rows, jac, a, b, chain, nb) -> None:
    """out[rows, state] += jac (wrt [xa, ta, xb, tb] at z3) chained to [x2, phi2] of a and b.

    Args:
        rows: (m,) residual rows; jac: (m, 12); a, b: (m,) bodies (nb = the world).
    """
    if not len(rows):
        return
    jac = jac[..., :12]
    for body, col in ((a, 0), (b, 6)):
        _scatter_add(out, rows[:, None], _state_column(nb, body, 0), jac[:, col : col + 3])
        rot_part = np.einsum("rk,rkj->rj", jac[:, col + 3 : col + 6], chain[body])
        _scatter_add(out, rows[:, None], _state_column(nb, body, 2), rot_part)


def state_residual_jacobian(problem: StepProblem, w: np.ndarray) -> np.ndarray:
    """dr/dz2 at the unknowns w, (n, 12 nb) in [x, v, phi, w] tangents per body."""
    mech, s = problem.mech, problem.s
    nb = mech.nb
    out = np.zeros((s.n, 12 * nb))
    body_rows = 6 * np.arange(nb)[:, None] + np.arange(6)  # (nb, 6)
    # previous momenta: the residual is momentum_right - momentum_left - ...
    ml = momentum_left_jacobian(mech, problem.w15)  # (nb, 6, 6) wrt [v15, w15]
    for part, sl in ((1, slice(0, 3)), (3, slice(3, 6))):
        cols = _state_column(nb, np.arange(nb), part)  # (nb, 3)
        _scatter_add(out, body_rows[:, :, None], cols[:, None, :], -ml[:, :, sl])

    # impulse maps at z2 (complex step), 12 joint tangents -> [x, phi] of parent and child
    if mech.nj:
        dj = _joint_impulse_derivative(problem, w)  # (nj, 12 rows, 12 tangents)
        rows = mech.joint_columns  # (nj, 12) body residual rows
        parent = np.where(mech.parent < 0, nb, mech.parent)
        for body, col in ((parent, 0), (mech.child, 6)):
            _scatter_add(out, rows[:, :, None], _state_column(nb, body, 0)[:, None, :], dj[:, :, col : col + 3])
            # d/dphi = 2 d/dt
            _scatter_add(out, rows[:, :, None], _state_column(nb, body, 2)[:, None, :], 2.0 * dj[:, :, col + 3 : col + 6])

    # quantities at z3
    _, jc3, w25, jm3, contact = problem._evaluate(w)
    chain = _rotation_chain(problem, w25)
    if mech.nl:
        jg3 = jc3[mech.row_joint, mech.row_slot]
        _add_z3(out, s.lam, jg3, s.row_a, s.row_b, chain, nb)
    if mech.nlim:
        _add_z3(out, s.lim_g, -jm3, s.lim_a, s.lim_b, chain, nb)
    if mech.nc:
        _add_contacts_z3(out, problem, contact, chain)
    return out


def _add_contacts_z3(out, problem: StepProblem, contact, chain) -> None:
    """Contact constraint rows and body impulses (both evaluated at z3), chained to z2."""
    mech, cs = problem.mech, problem.s.contacts
    nb = mech.nb
    a, b = contact._blocks["a"], contact._blocks["b"]
    for model, (comp_jac, local, (z3, direct), impulse_map) in contact._blocks["models"].items():
        idx, _, g_idx = cs.groups[model]
        n = CONTACT_HALF_SIZE[model]
        rows = g_idx.reshape(-1)
        _add_z3(out, rows, z3.reshape(-1, z3.shape[-1]), np.repeat(a[idx], n), np.repeat(b[idx], n), chain, nb)
    # body rows: -wrench(z3); wrench_jac (nc, 12 rows, 12 cols)
    wrench = -contact._blocks["wrench_jac"][..., :12]
    pair_rows = cs.pair_cols  # (nc, 12), -1 for the world
    for r in range(12):
        _add_z3(out, pair_rows[:, r], wrench[:, r], a, b, chain, nb)


def input_residual_jacobian(problem: StepProblem) -> np.ndarray:
    """dr/du (n, nu): -h (input rows at z2)^T on the body rows."""
    mech, s = problem.mech, problem.s
    ju2 = input_rows(mech, problem.kin2)[mech.free_joint, mech.free_slot]  # (nf, 12)
    out = np.zeros((s.n, mech.nf))
    _scatter_add(out, s.free_cols, np.arange(mech.nf)[:, None], -mech.timestep * ju2)
    return out


# ------------------------------------------------------------- parameters
def parameter_residual_jacobian(problem: StepProblem, w: np.ndarray, kinds) -> np.ndarray:
    """dr/dtheta (n, p) for the parameter kinds (columns as parameter_labels)."""
    mech, s = problem.mech, problem.s
    h = mech.timestep
    nb = mech.nb
    v25, w25, _ = problem.split(w)
    body_rows = 6 * np.arange(nb)[:, None] + np.arange(6)
    blocks = []
    for kind in kinds:
        if kind in ("mass", "inertia"):
            dm, dj = momentum_inertia_derivative(mech, problem.v15, problem.w15, v25, w25)
            if kind == "mass":
                dm[:, 0:3] -= h * mech.gravity  # gravity impulse h m g is subtracted
                block = np.zeros((s.n, nb))
                _scatter_add(block, body_rows, np.arange(nb)[:, None], dm)
            else:
                block = np.zeros((s.n, 6 * nb))
                cols = 6 * np.arange(nb)[:, None, None] + np.arange(6)[None, None, :]
                _scatter_add(block, body_rows[:, :, None], cols, dj)
        elif kind == "gravity":
            block = np.zeros((s.n, 3))
            _scatter_add(block, body_rows[:, :3, None], np.arange(3)[None, None, :], -h * mech.mass[:, None, None] * np.eye(3))
        elif kind in ("spring", "damper"):
            block = _joint_coefficient_block(problem, w, kind)
        else:
            block = _contact_parameter_block(problem, w, kind)
        blocks.append(block)
    return np.concatenate(blocks, axis=1) if blocks else np.zeros((s.n, 0))


def _joint_coefficient_block(problem: StepProblem, w: np.ndarray, kind: str) -> np.ndarray:
    """d r / d k_f (spring: +h (m - m0) Jm^T) or d c_f (damper: +h (Jm xi) Jm^T), (n, nf)."""
    mech, s = problem.mech, problem.s
    h = mech.timestep
    m2, jm2 = minimal_rows(mech, problem.kin2)
    jf = jm2[mech.free_joint, mech.free_slot]  # (nf, 12)
    if kind == "spring":
        coef = h * (m2[mech.free_joint, mech.free_slot] - mech.spring_offset)
    else:
        cols = s.free_cols
        coef = h * np.einsum("fk,fk->f", jf, np.where(cols >= 0, w[cols], 0.0))
    out = np.zeros((s.n, mech.nf))
    _scatter_add(out, s.free_cols, np.arange(mech.nf)[:, None], coef[:, None] * jf)
    return out


def _contact_parameter_block(problem: StepProblem, w: np.ndarray, kind: str) -> np.ndarray:
    """d r / d (friction | radius | offset) per contact."""
    mech, s = problem.mech, problem.s
    cs = s.contacts
    nc = mech.nc
    if kind == "friction":
        out = np.zeros((s.n, nc))
        for model, (idx, _, g_idx) in cs.groups.items():
            if idx.size and model != "impact":
                out[g_idx[:, 1], idx] = w[g_idx[:, 0]]  # the mu gn row
        return out
    width = 1 if kind == "radius" else 3
    out = np.zeros((s.n, width * nc))
    if not nc:
        return out
    v25, w25, _ = problem.split(w)
    x3, q3 = problem.next_configuration(v25, w25)
    ev = evaluate_contacts(mech, cs, w, x3, q3, v25, w25, parameters=True)
    sel = slice(15, 16) if kind == "radius" else slice(12, 15)
    cols = width * np.arange(nc)[:, None] + np.arange(width)  # (nc, width)
    for model, (comp_jac, local, (z3, direct), impulse_map) in ev._blocks["models"].items():
        idx, _, g_idx = cs.groups[model]
        _scatter_add(out, g_idx[:, :, None], cols[idx][:, None, :], z3[..., sel])
    wrench = ev._blocks["wrench_jac"][..., sel]  # (nc, 12, width)
    _scatter_add(out, cs.pair_cols[:, :, None], cols[:, None, :], -wrench)
    return out


# ----------------------------------------------------------- the results
@dataclass
class StepGradients:
    """One step and its derivatives.

    Attributes:
        next_state: (13 nb,) the step's result.
        A: (12 nb, 12 nb) dz'/dz, or None.
        B: (12 nb, nu) dz'/du, or None.
        P: (12 nb, p) dz'/dtheta, or None; ``labels`` names its columns.
        result: the solver's result (status, iterations, residual).
        kappa: central-path value the derivatives were taken at (0 without inequalities).
    """

    next_state: np.ndarray
    A: np.ndarray | None
    B: np.ndarray | None
    P: np.ndarray | None
    labels: list[str]
    result: SolverResult
    kappa: float


def next_state_tangent(mech: Mechanism, dw: np.ndarray, w25: np.ndarray) -> np.ndarray:
    """Derivatives of the unknowns -> derivatives of the next state, (12 nb, k).

    Per body dx3 = h dv25, dphi3 = (1/2) integrator_map_jacobian(w25) dw25 (the
    direct dependence of z3 on z2 is added by state_gradients).
    """
    h = mech.timestep
    nb = mech.nb
    k = dw.shape[1]
    xi = dw[: 6 * nb].reshape(nb, 6, k)
    dv, dom = xi[:, :3], xi[:, 3:]
    dphi = 0.5 * np.einsum("bij,bjk->bik", quat.integrator_map_jacobian(w25, h), dom)
    return np.concatenate([h * dv, dv, dphi, dom], axis=1).reshape(12 * nb, k)


def _exact_solver(problem: StepProblem, w: np.ndarray, sweeps: int = 3):
    """x -> M^-1 b for the Newton matrix M at w without the joint-impulse regularisation.

    The step's matrix carries REG on the impulse diagonal (step.CONSTRAINT_REGULARIZATION)
    so that redundant joints factorise. Its effect on a solve is REG * dlambda, which
    is no longer negligible when the impulses are very sensitive (a joint and a sticking
    contact holding the same direction). Iterative refinement against the matrix without
    it (x += M_reg^-1 (b - M x)) removes it: the solution of the step's true linearisation.
    """
    pattern = problem.s.pattern
    data = problem.matrix_values(w)  # slot values
    factorization = pattern.factorize(data)
    matrix = pattern.to_csc(data)
    lam = problem.s.lam

    def solve(b: np.ndarray) -> np.ndarray:
        x = factorization.solve(b)
        r = _unregularized_residual(b, x)
        for _ in range(sweeps):
            x_new = x + factorization.solve(r)
            r_new = _unregularized_residual(b, x_new)
            # Redundant joints (a planar loop) make M singular: a right-hand side that
            # breaks the redundancy has no exact solution and refinement would drift
            # along the null space. Keep a sweep only when it reduces the residual.
            if not np.linalg.norm(r_new) < 0.5 * np.linalg.norm(r):
                break
            x, r = x_new, r_new
        return x

    def _unregularized_residual(b, x):
        r = b - matrix @ x
        r[lam] += CONSTRAINT_REGULARIZATION * x[lam]
        return r

    return solve


def _relax(problem: StepProblem, w: np.ndarray, kappa: float) -> np.ndarray:
    """Move a converged solution onto the central path s o gamma = kappa.

    Newton on the relaxed system, second-order cones linearised in Nesterov-Todd
    scaled form as in the interior-point solver (the raw linearisation can jam on a
    cone boundary), steps kept inside the cones.
    """
    target = np.zeros(problem.s.n)
    target[problem.orthant_rows] = kappa
    if len(problem.soc_rows):
        target[problem.soc_rows[:, 0]] = kappa
    w = w.copy()
    # Start strictly inside the cones: at tight tolerances the solver's last iterate
    # can sit within rounding of a cone boundary (or just past it, ~1e-12), where the
    # scaling is undefined. The lift is far below the central-path values (~kappa / gamma).
    lift = _RELAX_LIFT * kappa
    w[problem.orthant_s] = np.maximum(w[problem.orthant_s], 0.0) + lift
    w[problem.orthant_g] = np.maximum(w[problem.orthant_g], 0.0) + lift
    for idx in (problem.soc_s, problem.soc_g):
        if idx.size:
            x = w[idx]
            x[:, 0] = np.maximum(x[:, 0], np.sqrt(np.sum(x[:, 1:] ** 2, axis=1))) + lift
            w[idx] = x
    for _ in range(_RELAX_ITERATIONS):
        r = problem.residual(w)
        if np.max(np.abs(r - target)) < _RELAX_TOLERANCE * max(1.0, kappa):
            break
        rn, soc_jac, _ = scaled_linearization(problem, w, r)
        dw = problem.factorize(w, soc_jac).solve(target - rn)
        w = w + min(1.0, cone_step(problem, w, dw, 0.99)) * dw
    return w


def step_gradients(
    mech: Mechanism,
    z,
    u=None,
    opts: SolverOptions | None = None,
    wrt=("state", "input"),
    params=(),
    kappa: float | None = None,
) -> StepGradients:
    """Solve one step from z and differentiate it (implicit function theorem).

    Args:
        mech: the mechanism.
        z: (13 nb,) maximal state [x, v, q, w] per body.
        u: (nu,) joint inputs, or None for zero.
        opts: solver options (tight tolerances give the derivative of the exact step).
        wrt: any of "state", "input", "params".
        params: parameter kinds (PARAMETER_KINDS) when "params" is in wrt.
        kappa: central-path value to differentiate at (None: where the solver stopped).
    """
    opts = opts or SolverOptions()
    if not mech.nc:
        return _core_step_gradients(mech, z, u, opts, wrt, params, kappa)
    # contacts: still differentiated in numpy, at the core's solution
    z_next, result = solve_step(mech, z, u, opts)
    problem = StepProblem(mech, z, u)
    w = result.w
    kappa_used = 0.0
    if problem.degree:
        if kappa is not None:
            w = _relax(problem, w, float(kappa))
            z_next = problem.next_state(w)
        kappa_used = float(complementarity(problem, w))
    solve = _exact_solver(problem, w)
    _, w25, _ = problem.split(w)
    nb = mech.nb
    A = B = P = None
    labels: list[str] = []
    if "state" in wrt:
        dw = solve(-state_residual_jacobian(problem, w))
        A = next_state_tangent(mech, dw, w25)
        # direct dependence of z3 on z2: dx3/dx2 = I, dphi3/dphi2 = R(qmap(w25))^T
        xc, _, pc, _ = state_tangent_columns(nb)
        rot = quat.matrix_from_quaternion(quat.integrator_map(w25, mech.timestep))
        A[xc[:, :, None], xc[:, None, :]] += np.eye(3)
        A[pc[:, :, None], pc[:, None, :]] += np.swapaxes(rot, 1, 2)
    if "input" in wrt:
        dw = solve(-input_residual_jacobian(problem))
        B = next_state_tangent(mech, dw, w25)
    if "params" in wrt and params:
        labels = parameter_labels(mech, params)
        dw = solve(-parameter_residual_jacobian(problem, w, params))
        P = next_state_tangent(mech, dw, w25)
    return StepGradients(next_state=z_next, A=A, B=B, P=P, labels=labels, result=result, kappa=kappa_used)


def _core_step_gradients(mech: Mechanism, z, u, opts: SolverOptions, wrt, params, kappa) -> StepGradients:
    """step_gradients in the C++ core: one step, then its derivatives on the same solve."""
    z_next, result = core_step(mech, z, u, opts)
    codes = [PARAMETER_KINDS.index(kind) for kind in params] if "params" in wrt else []
    data = mech.core_data
    A, B, P, kappa_used = _core.gradients(
        mech.core, data, "state" in wrt, "input" in wrt, codes, -1.0 if kappa is None else float(kappa)
    )
    labels = parameter_labels(mech, params) if codes else []
    if kappa is not None and mech.has_inequalities:
        z_next = data.z_next.copy()  # the relaxed step's result
    return StepGradients(next_state=z_next, A=A, B=B, P=P, labels=labels, result=result, kappa=float(kappa_used))


def maximal_gradients(mech: Mechanism, z, u=None, opts: SolverOptions | None = None, kappa=None):
    """(A, B) = (dz'/dz (12 nb, 12 nb), dz'/du (12 nb, nu)) of one step from z."""
    g = step_gradients(mech, z, u, opts, wrt=("state", "input"), kappa=kappa)
    return g.A, g.B


def parameter_gradients(mech: Mechanism, z, u=None, names=PARAMETER_KINDS, opts: SolverOptions | None = None, kappa=None):
    """(dz'/dtheta (12 nb, p), labels) for the parameter kinds ``names``."""
    g = step_gradients(mech, z, u, opts, wrt=("params",), params=tuple(names), kappa=kappa)
    return g.P, g.labels


# ------------------------------------------------------ minimal coordinates
def minimal_to_maximal_jacobian(mech: Mechanism, y) -> np.ndarray:
    """d z / d y (12 nb, 2 nf) of physics.coordinates.minimal_to_maximal, exact (the core's
    templated conversion over dual numbers), tangents [x, v, phi, w] per body."""
    return _core.minimal_to_maximal_jacobian(mech.core, np.ascontiguousarray(y, dtype=float).reshape(-1))


def maximal_to_minimal_jacobian(mech: Mechanism, z) -> np.ndarray:
    """d y / d z (2 nf, 12 nb) of physics.coordinates.maximal_to_minimal, exact (the core's
    templated conversion over dual numbers), tangents [x, v, phi, w] per body."""
    return _core.maximal_to_minimal_jacobian(mech.core, np.ascontiguousarray(z, dtype=float).reshape(-1))


def minimal_step_gradients(
    mech: Mechanism, y, u=None, opts: SolverOptions | None = None, wrt=("state", "input"), params=(), kappa=None
) -> StepGradients:
    """step_gradients in minimal coordinates: y -> y' with A (2nf, 2nf), B (2nf, nu), P (2nf, p).

    The chain dy'/dz' (maximal -> minimal at the next state) . dz'/dz . dz/dy
    (minimal -> maximal at y); next_state is y'.
    """
    z = minimal_to_maximal(mech, y)
    g = step_gradients(mech, z, u, opts, wrt=wrt, params=params, kappa=kappa)
    out_map = maximal_to_minimal_jacobian(mech, g.next_state)
    A = out_map @ g.A @ minimal_to_maximal_jacobian(mech, y) if g.A is not None else None
    B = out_map @ g.B if g.B is not None else None
    P = out_map @ g.P if g.P is not None else None
    return StepGradients(
        next_state=maximal_to_minimal(mech, g.next_state), A=A, B=B, P=P, labels=g.labels, result=g.result, kappa=g.kappa
    )


def minimal_gradients(mech: Mechanism, y, u=None, opts: SolverOptions | None = None, kappa=None):
    """(A_min (2nf, 2nf), B_min (2nf, nu)) of one step in minimal coordinates."""
    g = minimal_step_gradients(mech, y, u, opts, kappa=kappa)
    return g.A, g.B
