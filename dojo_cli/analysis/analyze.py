"""Equilibria, linearisation, stability, controllability and accessibility (docs/analysis.md).

The model is the scene's minimal-coordinate tree (dojo_cli.minimal): M(q) vdot + C(q, v) =
tau_passive(q, v) + B(q) u, with tau_passive the joints' springs and dampers and B the
scene's input map (its actuators, or one input per free coordinate).

- **Equilibria** (unforced: v = 0, u = 0) solve r(q) = C(q, 0) - tau_passive(q, 0) = 0 by
  Newton's method in the joints' tangent coordinates (dq, applied by minimal.apply_dx) with
  the analytic Jacobian d tau / d q of the inverse dynamics at vdot = 0 (the springs' part by
  central differences) and least-squares steps, from the scene's initial pose and from
  ``starts`` seeded random poses. A coordinate that r does not depend on anywhere sampled
  (a cyclic one: the cart's x, the hovercraft's pose) is held at its initial value: the
  equilibria are then a continuum along it, reported once with it in ``free``. After the
  first equilibrium, its half-turn variants (subsets of its angles plus pi) are starts too. Revolute
  angles without a spring are wrapped to [-pi, pi) (a sprung one is not: its spring force is
  not periodic in the angle) and equilibria closer than EQUILIBRIUM_TOL (tangent
  distance, angles modulo 2 pi) are one. Where r's Jacobian is singular beyond the held
  coordinates the equilibrium lies on a family (``family``: its dimension; a ball-joint
  pendulum hangs at any yaw): members with the same potential energy and spectrum are one.
  They are sorted by gravitational potential energy.
- **Linearisation** xdot = A x + B u about a state x* with u = 0, in error coordinates
  (minimal.state_error: the tangent dq of each joint, then dv), from the analytic
  derivatives of the forward dynamics (minimal.forward_dynamics_deriv, tangent=True).
  At v* = 0 the top block is exactly [0 I]; elsewhere it is d(dq)/dt's Jacobian by central
  differences. The springs' and dampers' derivatives are central differences.
- **Stability** (``stability``): continuous, every eigenvalue's real part <= EIGEN_TOL
  |A|, and each eigenvalue on the imaginary axis semisimple (geometric multiplicity
  n - rank(A - lambda I) equal to the algebraic one; a repeated zero eigenvalue with a
  Jordan block, as a free cart's, is unstable: a push makes it drift). Discrete: moduli <= 1
  + EIGEN_TOL, with the same check on the unit circle.
- **Controllability** (Kalman): the rank of [B, A~B, ..., A~^(n-1) B] with A~ = A / max(1,
  |A|) (the same rank, better scaled), by SVD with relative tolerance CONTROLLABILITY_TOL of
  the largest singular value.
- **Accessibility**: the rank of the distribution spanned by the input fields g_i and the
  drift f and their iterated Lie brackets [X, Y] = DY X - DX Y at x* (Bullo and Lewis;
  skydy's ``controllable(linear=False)``), bracketing from the left with f and the g_i up to
  depth n. The fields' Jacobians are central differences (step ACCESSIBILITY_STEP, nested
  for deeper brackets); a bracket that adds no direction at x* is not bracketed further
  (a heuristic that can only under-count), and the search stops at full rank. The rank is
  counted on the bracket vectors scaled to unit length, those shorter than ACCESSIBILITY_TOL
  times the input fields' size counting as zero, with relative SVD tolerance
  ACCESSIBILITY_TOL. Coordinates: x = [q; v] itself when the model has no quaternion joint;
  otherwise the chart apply_dx(x*, .) (its field by central differences).
- **Locked joints** (Drake's Lock, model.locked_joints): their coordinates are held where the
  state has them and their velocities at zero, so everything above is about the *reduced*
  system of the free coordinates: the equilibria solve the free rows of r over the free
  coordinates (the locked rows are the lock forces), and A, B, M, bias, B_tau, the
  eigenvalues, stability, controllability and accessibility are over the free error state
  [dq_f; dv_f] (``state_names``; the held coordinates are ``locked_names``). The held
  coordinates have no dynamics of their own: keeping them as zero rows would add zero
  eigenvalues that say nothing (and make a damped, asymptotically stable system only
  marginally stable, and no system controllable). States x stay full (nx,), names unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli import minimal
from dojo_cli.minimal.model import ROT_QUATERNION, ROT_REVOLUTE, MinimalModel
from dojo_cli.minimal.simulate import normalize_state
from dojo_cli.solver.options import DOJO_DEFAULTS

# An eigenvalue's real part counts as zero below EIGEN_TOL * max(1, |A|); eigenvalues closer
# than that are one (multiplicity).
EIGEN_TOL = 1e-7
# Kalman rank: singular values above CONTROLLABILITY_TOL * the largest count.
CONTROLLABILITY_TOL = 1e-9
# Accessibility: relative rank tolerance, and the step of the fields' central differences.
ACCESSIBILITY_TOL = 1e-5
ACCESSIBILITY_STEP = 1e-3
# Newton: |r| below NEWTON_TOL * (1 + the size of the generalized forces) converges.
NEWTON_TOL = 1e-11
NEWTON_ITERS = 60
# Two equilibria closer than this (tangent distance, angles modulo 2 pi) are one.
EQUILIBRIUM_TOL = 1e-6
FD_STEP = 1e-5  # central differences (springs, dampers, the top block off v = 0, chart fields)


def tangent_names(model: MinimalModel) -> list[str]:
    """The tangent coordinates dq (nv): a joint's coordinate names where it has one per
    velocity; a quaternion joint's rotation entries its angular velocity names + ``:dq``."""
    out: list[str] = []
    for tj in model.joints:
        cq = model.config_names[tj.q]
        cv = model.velocity_names[tj.v]
        if tj.rot == ROT_QUATERNION:
            out += list(cq[: tj.n_trans]) + [f"{n}:dq" for n in cv[tj.n_trans:]]
        else:
            out += list(cq)
    return out


def state_names(model: MinimalModel) -> list[str]:
    """The error-state entries [dq_f; dv_f] of the free coordinates (all of them without
    locked joints): tangent_names, then the velocity names (``:dot`` appended where a
    velocity has its coordinate's name, as a revolute joint's)."""
    dq, dv = tangent_names(model), velocity_state_names(model)
    free = free_indices(model)
    return [dq[k] for k in free] + [dv[k] for k in free]


def velocity_state_names(model: MinimalModel) -> list[str]:
    """(nv,) every velocity's name in an error state, locked or not (state_names' dv part)."""
    taken = set(tangent_names(model))
    return [f"{n}:dot" if n in taken else n for n in model.velocity_names]


def free_indices(model: MinimalModel) -> np.ndarray:
    """(nf,) the tangent (and velocity) indices not held by a locked joint."""
    return np.flatnonzero(~model.locked_v)


def locked_names(model: MinimalModel) -> list[str]:
    """The tangent coordinates a locked joint holds (tangent_names' entries), in order."""
    names = tangent_names(model)
    return [names[k] for k in np.flatnonzero(model.locked_v)]


def _error_free(model: MinimalModel) -> np.ndarray:
    """(2 nf,) the free entries of an error state [dq; dv]."""
    free = free_indices(model)
    return np.concatenate([free, model.nv + free])


def held_state(model: MinimalModel, x) -> np.ndarray:
    """A copy of x (nx,) with the locked joints' velocities zero (Drake's Lock)."""
    x = np.asarray(x, dtype=float).reshape(-1).copy()
    x[model.nq:][model.locked_v] = 0.0
    return x


def _revolute_indices(model: MinimalModel) -> list[tuple[int, int]]:
    """(q index, v index) of each revolute angle."""
    return [(tj.q.start + tj.n_trans, tj.v.start + tj.n_trans) for tj in model.joints if tj.rot == ROT_REVOLUTE]


def _has_quaternion(model: MinimalModel) -> bool:
    return any(tj.rot == ROT_QUATERNION for tj in model.joints)


def passive(model: MinimalModel, x) -> np.ndarray:
    return minimal.passive_forces(model, x)


def _passive_jacobian(model: MinimalModel, x) -> np.ndarray:
    """(nv, 2 nv) d tau_passive / d[dq; dv] by central differences (zero without springs and dampers)."""
    n = 2 * model.nv
    J = np.zeros((model.nv, n))
    if not _has_passive(model):
        return J
    for k in range(n):
        e = np.zeros(n)
        e[k] = FD_STEP
        J[:, k] = (passive(model, minimal.apply_dx(model, x, e)) - passive(model, minimal.apply_dx(model, x, -e))) / (2 * FD_STEP)
    return J


def _has_passive(model: MinimalModel) -> bool:
    mech = model.mech
    for j in mech.joints:
        for attr in ("spring", "damper"):
            value = getattr(j, attr, 0.0)
            if np.any(np.asarray(value, dtype=float) != 0.0):
                return True
    return False


# ---------------------------------------------------------------- equilibria
@dataclass
class Equilibrium:
    """An unforced equilibrium: x (nx,) with v = 0, its residual, the coordinates it is free along."""

    x: np.ndarray
    residual: float
    free: list[str] = field(default_factory=list)
    potential: float = 0.0
    family: int = 0  # dimension of the family of equilibria through x beyond ``free`` (0: isolated)
    spectrum: np.ndarray | None = None


def _residual(model: MinimalModel, x) -> np.ndarray:
    """(nf,) r's free rows (a locked row is the lock's force, whatever it is)."""
    return (minimal.C_func(model, x) - passive(model, x))[free_indices(model)]


def _residual_jacobian(model: MinimalModel, x) -> np.ndarray:
    """(nf, nf) d r_f / d dq_f at v = 0 (analytic inverse-dynamics derivative, springs by differences)."""
    dtau, _ = minimal.inverse_dynamics_deriv(model, x, np.zeros(model.nv), tangent=True)
    free = free_indices(model)
    return (dtau[:, : model.nv] - _passive_jacobian(model, x)[:, : model.nv])[np.ix_(free, free)]


def _on_free(model: MinimalModel, dq_free: np.ndarray) -> np.ndarray:
    """(2 nv,) the error state with tangent step dq_free (nf,) on the free coordinates, v = 0."""
    dx = np.zeros(2 * model.nv)
    dx[free_indices(model)] = dq_free
    return dx


def potential_energy(model: MinimalModel, x) -> float:
    """Gravitational potential energy of a minimal state (J), -sum m_b g . c_b."""
    bodies = model.bodies_from_state(x)
    mass = np.asarray(model.mech.mass, dtype=float)
    return float(-np.sum(mass * (bodies["x"] @ model.gravity)))


def _periodic_indices(model: MinimalModel) -> list[tuple[int, int]]:
    """(q index, v index) of each revolute angle the dynamics are periodic in: one without a
    spring. A spring's force -k (theta - theta0) is not periodic in theta, so turning a
    sprung angle by 2 pi leaves the equilibrium (found with a skydy-style cart on a sprung
    triple pendulum: a wrapped angle had a residual of 2 pi k)."""
    mech = model.mech
    out = []
    for tj in model.joints:
        if tj.rot != ROT_REVOLUTE:
            continue
        spring = mech.spring[mech.joint_free_range[tj.index]][tj.n_trans]
        if spring == 0.0:
            out.append((tj.q.start + tj.n_trans, tj.v.start + tj.n_trans))
    return out


def _wrap(model: MinimalModel, x: np.ndarray) -> np.ndarray:
    x = x.copy()
    for iq, _ in _periodic_indices(model):
        x[iq] = (x[iq] + np.pi) % (2 * np.pi) - np.pi
    return x


def _distance(model: MinimalModel, a: np.ndarray, b: np.ndarray) -> float:
    d = minimal.state_error(model, a, b)[: model.nv]
    for _, iv in _periodic_indices(model):
        d[iv] = (d[iv] + np.pi) % (2 * np.pi) - np.pi
    return float(np.linalg.norm(d))


def _newton(model: MinimalModel, x0: np.ndarray, scale: float) -> tuple[np.ndarray, float, bool]:
    x = x0.copy()
    r = _residual(model, x)
    for _ in range(NEWTON_ITERS):
        nr = float(np.linalg.norm(r))
        if nr <= NEWTON_TOL * scale:
            return x, nr, True
        J = _residual_jacobian(model, x)
        dq = -np.linalg.lstsq(J, r, rcond=1e-12)[0]
        step = 1.0
        while step > 1e-6:
            xt = minimal.apply_dx(model, x, _on_free(model, step * dq))
            rt = _residual(model, xt)
            if np.linalg.norm(rt) < nr:
                break
            step *= 0.5
        else:
            return x, nr, False
        x, r = xt, rt
    nr = float(np.linalg.norm(r))
    return x, nr, nr <= NEWTON_TOL * scale


def equilibria(model: MinimalModel, starts: int | None = None, seed: int = 0, x_initial=None) -> list[Equilibrium]:
    """The unforced equilibria (module doc), sorted by gravitational potential energy.

    Args:
        starts: random starting poses besides the initial one (default 8 + 8 nv, at most 64).
        seed: the random starts' seed (the scene's ``seed``).
        x_initial: the first start (default minimal.init_state).
    """
    nv = model.nv
    x_init = minimal.init_state(model) if x_initial is None else np.asarray(x_initial, dtype=float).copy()
    x_init[model.nq:] = 0.0
    rng = np.random.default_rng(seed)
    free_idx = free_indices(model)  # the locked joints' coordinates are held at x_init's
    nf = free_idx.size
    n_starts = min(64, 8 + 8 * nf) if starts is None else int(starts)

    def random_dx(full: np.ndarray) -> np.ndarray:
        dx = np.zeros(2 * nv)
        for tj in model.joints:
            v = tj.v.start
            dx[v: v + tj.n_trans] = rng.uniform(-1.0, 1.0, tj.n_trans)
            if tj.rot == ROT_REVOLUTE:
                dx[v + tj.n_trans] = rng.uniform(-np.pi, np.pi)
            elif tj.rot == ROT_QUATERNION:
                axis = rng.standard_normal(3)
                dx[v + tj.n_trans: v + tj.n_trans + 3] = axis / np.linalg.norm(axis) * rng.uniform(0.0, np.pi)
        dx[:nv][free_idx] *= full
        dx[:nv][model.locked_v] = 0.0
        return dx

    # the coordinates r depends on somewhere (others are cyclic: held at the initial pose)
    samples = [x_init] + [minimal.apply_dx(model, x_init, random_dx(np.ones(nf))) for _ in range(3)]
    J_abs = sum(np.abs(_residual_jacobian(model, s)) for s in samples)
    force_scale = 1.0 + max(float(np.max(np.abs(_residual(model, s)), initial=0.0)) for s in samples)
    live = (np.max(J_abs, axis=0, initial=0.0) > 1e-9 * (1.0 + float(np.max(J_abs, initial=0.0)))).astype(float)
    names = tangent_names(model)
    free = [names[free_idx[k]] for k in range(nf) if not live[k]]

    found: list[Equilibrium] = []
    live_v = np.zeros(nv)
    live_v[free_idx] = live
    revolute = [iq for iq, iv in _revolute_indices(model) if live_v[iv]]
    queue = [x_init]
    flipped = False
    k = 0
    while queue or k < n_starts:
        if queue:
            start = queue.pop(0)
        else:
            k += 1
            start = minimal.apply_dx(model, x_init, random_dx(live))
        x, res, ok = _newton(model, start, force_scale)
        if not ok:
            continue
        if not flipped:
            # half-turn starts: the first equilibrium with subsets of its angles turned by pi
            # (a chain's equilibria are such flips of one another), at most 63
            flipped = True
            for mask in range(1, min(2 ** len(revolute), 64)):
                y = x.copy()
                for b, iq in enumerate(revolute):
                    if mask >> b & 1:
                        y[iq] += np.pi
                queue.append(y)
        x = _wrap(model, x)
        x[model.nq:] = 0.0
        if any(_distance(model, x, e.x) < EQUILIBRIUM_TOL for e in found):
            continue
        # a family of equilibria (r's Jacobian singular beyond the held coordinates, as a
        # ball-joint pendulum hanging at any yaw): one with the same energy and spectrum is the same
        Jr = _residual_jacobian(model, x)[:, live > 0]
        sv = np.linalg.svd(Jr, compute_uv=False) if Jr.size else np.zeros(0)
        family = int(np.sum(sv <= 1e-9 * max(1.0, float(sv[0]) if sv.size else 1.0)))
        potential = potential_energy(model, x)
        spectrum = None
        if family:
            spectrum = _sorted_eigenvalues(np.linalg.eigvals(_linear_blocks(model, x)[0]))
            if any(e.family == family and abs(e.potential - potential) <= 1e-9 * (1 + abs(potential))
                   and e.spectrum is not None and np.allclose(e.spectrum, spectrum, atol=1e-6) for e in found):
                continue
        found.append(Equilibrium(x=x, residual=res, free=free, potential=potential, family=family, spectrum=spectrum))
    found.sort(key=lambda e: (round(e.potential, 9), tuple(np.round(e.x, 9))))
    return found


# ---------------------------------------------------------------- stability
def stability(A: np.ndarray, discrete: bool = False) -> tuple[bool, str]:
    """(stable, reason) of xdot = A x (or x+ = A x with ``discrete``): module doc."""
    A = np.asarray(A, dtype=float)
    n = A.shape[0]
    if n == 0:
        return True, "no states"
    eig = np.linalg.eigvals(A)
    scale = max(1.0, float(np.linalg.norm(A, 2)))
    tol = EIGEN_TOL * scale
    margin = np.abs(eig) - 1.0 if discrete else eig.real
    worst = int(np.argmax(margin))
    if margin[worst] > tol:
        what = f"|lambda| = {abs(eig[worst]):.6g} > 1" if discrete else f"Re lambda = {eig[worst].real:.6g} > 0"
        return False, f"unstable: {what}"
    boundary = [lam for lam, m in zip(eig, margin) if m > -tol]
    seen: list[complex] = []
    for lam in boundary:
        if any(abs(lam - s) <= 1e3 * tol for s in seen):
            continue
        seen.append(lam)
        alg = sum(1 for e in eig if abs(e - lam) <= 1e3 * tol)
        sv = np.linalg.svd(A - lam * np.eye(n), compute_uv=False)
        geo = int(np.sum(sv <= 1e3 * tol))
        if geo < alg:
            return False, (f"unstable: eigenvalue {lam.real:.6g}{lam.imag:+.6g}i on the "
                           f"{'unit circle' if discrete else 'imaginary axis'} has a Jordan block "
                           f"(multiplicity {alg}, {geo} eigenvector{'s' if geo != 1 else ''})")
    if boundary:
        return True, ("marginally stable: eigenvalues on the " + ("unit circle" if discrete else "imaginary axis")
                      + " are semisimple")
    return True, "asymptotically stable"


def controllability_rank(A: np.ndarray, B: np.ndarray, tol: float = CONTROLLABILITY_TOL) -> int:
    """Kalman rank of (A, B): module doc."""
    A = np.asarray(A, dtype=float)
    n = A.shape[0]
    if n == 0:  # no states (every joint locked)
        return 0
    B = np.asarray(B, dtype=float).reshape(n, -1)
    if B.shape[1] == 0:
        return 0
    At = A / max(1.0, float(np.linalg.norm(A, 2)))
    blocks = [B]
    for _ in range(n - 1):
        blocks.append(At @ blocks[-1])
    sv = np.linalg.svd(np.hstack(blocks), compute_uv=False)
    return int(np.sum(sv > tol * sv[0])) if sv[0] > 0 else 0


# ---------------------------------------------------------------- linearisation
@dataclass
class Linearization:
    """The linearisation at x (module doc). A (2nv, 2nv), B (2nv, nu) in error coordinates."""

    x: np.ndarray
    A: np.ndarray  # (2 nf, 2 nf): the free coordinates' error state (module doc, locked joints)
    B: np.ndarray  # (2 nf, nu)
    eigenvalues: np.ndarray
    stable: bool
    stability: str
    controllability_rank: int
    accessibility_rank: int | None
    accessibility_depth: int | None
    M: np.ndarray  # (nf, nf) the free block
    bias: np.ndarray  # (nf,)
    input_map: np.ndarray  # B_tau (nf, nu): generalized forces per input, M vdot + bias = B_tau u
    state_names: list[str]
    input_names: list[str]
    velocity_names: list[str] = field(default_factory=list)  # (nf,) the rows of M, bias, B_tau
    locked: list[str] = field(default_factory=list)  # the locked joints' held coordinates (locked_names)


def _vdot(model: MinimalModel, x, tau_extra=None) -> np.ndarray:
    tau = passive(model, x)
    if tau_extra is not None:
        tau = tau + tau_extra
    return minimal.forward_dynamics(model, x, tau)


def _linear_blocks(model: MinimalModel, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A (2 nf, 2 nf), B (2 nf, nu)) over the free error state (the reduced solve's
    derivatives have zero locked rows; the held coordinates' columns are dropped)."""
    nv = model.nv
    keep = _error_free(model)
    Bu = minimal.B_func(model, x)
    tau = passive(model, x)
    dfd_dx, dfd_dtau = minimal.forward_dynamics_deriv(model, x, tau, tangent=True)
    lower = dfd_dx + dfd_dtau @ _passive_jacobian(model, x)
    if np.all(x[model.nq:] == 0.0):
        upper = np.hstack([np.zeros((nv, nv)), np.eye(nv)])
    else:
        upper = np.zeros((nv, 2 * nv))
        for k in keep:
            e = np.zeros(2 * nv)
            e[k] = FD_STEP
            upper[:, k] = (_chart_field(model, x, e)[:nv] - _chart_field(model, x, -e)[:nv]) / (2 * FD_STEP)
    A = np.vstack([upper, lower])[np.ix_(keep, keep)]
    B = np.vstack([np.zeros((nv, Bu.shape[1])), dfd_dtau @ Bu])[keep]
    return A, B


def _raw_rate(model: MinimalModel, x: np.ndarray, which: int) -> np.ndarray:
    """d x_raw / dt of the drift (which = -1) or of input field ``which``."""
    if which < 0:
        qdot = minimal.velocity_kinematics(model, x) @ x[model.nq:]
        return np.concatenate([qdot, _vdot(model, x)])
    b = minimal.B_func(model, x)[:, which]
    free = free_indices(model)
    vdot = np.zeros(model.nv)  # the reduced solve: a locked row is the lock's
    vdot[free] = np.linalg.solve(minimal.M_func(model, x)[np.ix_(free, free)], b[free])
    return np.concatenate([np.zeros(model.nq), vdot])


def _chart_field(model: MinimalModel, x0: np.ndarray, delta: np.ndarray, which: int = -1) -> np.ndarray:
    """The field (drift or input ``which``) in the chart delta -> apply_dx(x0, delta)."""
    x = minimal.apply_dx(model, x0, delta)
    rate = _raw_rate(model, x, which)
    h = FD_STEP
    plus = minimal.state_error(model, normalize_state(model, x + h * rate), x0)
    minus = minimal.state_error(model, normalize_state(model, x - h * rate), x0)
    return (plus - minus) / (2 * h)


def linearize(model: MinimalModel, x, accessibility: bool = True) -> Linearization:
    """The linearisation at state x (nx,) with u = 0, its stability and controllability (module doc;
    with locked joints, of the free coordinates, their velocities in x read as zero)."""
    x = held_state(model, x)
    A, B = _linear_blocks(model, x)
    eig = np.linalg.eigvals(A) if A.size else np.zeros(0, dtype=complex)
    stable, reason = stability(A)
    acc_rank, acc_depth = accessibility_rank(model, x) if accessibility else (None, None)
    free = free_indices(model)
    return Linearization(
        x=x, A=A, B=B, eigenvalues=_sorted_eigenvalues(eig), stable=stable, stability=reason,
        controllability_rank=controllability_rank(A, B), accessibility_rank=acc_rank, accessibility_depth=acc_depth,
        M=minimal.M_func(model, x)[np.ix_(free, free)], bias=(minimal.C_func(model, x) - passive(model, x))[free],
        input_map=minimal.B_func(model, x)[free], state_names=state_names(model),
        input_names=list(model.mech.input_names()), velocity_names=[model.velocity_names[k] for k in free],
        locked=locked_names(model),
    )


def _sorted_eigenvalues(eig: np.ndarray) -> np.ndarray:
    eig = np.asarray(eig, dtype=complex)
    return eig[np.lexsort((eig.imag, np.round(eig.real, 12)))] if eig.size else eig


# ---------------------------------------------------------------- accessibility
def accessibility_rank(model: MinimalModel, x, max_depth: int | None = None) -> tuple[int, int]:
    """(rank, depth reached) of the Lie-bracket distribution of drift and inputs at x (module doc)."""
    x = held_state(model, x)
    n = 2 * int(np.sum(~model.locked_v))  # the free error state's dimension
    nu = model.mech.nu
    keep = _error_free(model)
    if n == 0 or nu == 0:
        return 0, 0
    chart = _has_quaternion(model)
    h = ACCESSIBILITY_STEP

    def base(which: int):
        if chart:
            return lambda y: _chart_field(model, x, y, which)
        return lambda y: _raw_rate(model, y, which)  # x = [q; v] itself (nq = nv)

    def bracket(F, G):
        return lie_bracket(F, G, h)

    y0 = np.zeros(2 * model.nv) if chart else x.copy()
    drift = base(-1)
    inputs = [base(i) for i in range(nu)]
    generators = [drift] + inputs
    vectors: list[np.ndarray] = []
    size = max(1.0, max(float(np.linalg.norm(g(y0))) for g in inputs))

    def add(vec: np.ndarray) -> bool:
        vec = vec[keep]  # the fields have no held components (their rates are zero)
        if not np.all(np.isfinite(vec)) or np.linalg.norm(vec) <= ACCESSIBILITY_TOL * size:
            return False
        trial = vectors + [vec / np.linalg.norm(vec)]
        sv = np.linalg.svd(np.array(trial), compute_uv=False)
        if int(np.sum(sv > ACCESSIBILITY_TOL * sv[0])) > len(vectors):
            vectors.append(trial[-1])
            return True
        return False

    frontier = [g for g in generators if add(g(y0))]
    depth = 0
    limit = n if max_depth is None else max_depth
    while len(vectors) < n and frontier and depth < limit:
        depth += 1
        new = []
        for Y in frontier:
            for X in generators:
                Z = bracket(X, Y)
                if add(Z(y0)):
                    new.append(Z)
                if len(vectors) == n:
                    break
            if len(vectors) == n:
                break
        frontier = new
    return len(vectors), depth


def lie_bracket(F, G, step: float = ACCESSIBILITY_STEP):
    """The vector field [F, G](y) = DG(y) F(y) - DF(y) G(y) (Bullo and Lewis; skydy's
    ``lie_bracket`` is its negative), its directional derivatives by central differences."""
    def field_(y):
        y = np.asarray(y, dtype=float)
        fy, gy = F(y), G(y)
        return (G(y + step * fy) - G(y - step * fy)) / (2 * step) - (F(y + step * gy) - F(y - step * gy)) / (2 * step)
    return field_


# ---------------------------------------------------------------- discrete
def discrete_linearization(model: MinimalModel, x, opts=None):
    """(A_d, B_d, state labels, input labels) of the variational step at the scene's timestep,
    in Dojo's minimal coordinates (per joint [coordinates; velocities]) from the minimal state x;
    with locked joints, of the free joints' entries only (the step holds the others: their
    rows are the identity on the coordinates and zero on the velocities, module doc)."""
    from dojo_cli.physics.coordinates import interleave_minimal, maximal_to_minimal
    from dojo_cli.simulation.gradient_record import input_labels, minimal_labels
    from dojo_cli.simulation.gradients import minimal_gradients

    mech = model.mech
    z = maximal_from_minimal_state(model, held_state(model, x))
    y = maximal_to_minimal(mech, z)
    if opts is None:
        opts = getattr(mech, "default_options", None) or DOJO_DEFAULTS
    A, B = minimal_gradients(mech, y, np.zeros(mech.nu), opts)
    labels = minimal_labels(mech)
    held = np.array([bool(mech.joints[int(mech.free_joint[f])].locked) for f in range(mech.nf)], dtype=bool)
    keep = ~np.asarray(interleave_minimal(mech, held, held), dtype=bool)
    return A[np.ix_(keep, keep)], B[keep], [n for n, k in zip(labels, keep) if k], input_labels(mech)


def maximal_from_minimal_state(model: MinimalModel, x) -> np.ndarray:
    """The maximal state (13 nb,) [x, v, q, w] per body of a minimal state x."""
    bodies = model.bodies_from_state(np.asarray(x, dtype=float))
    nb = model.mech.nb
    z = np.zeros((nb, 13))
    z[:, 0:3], z[:, 3:6], z[:, 6:10], z[:, 10:13] = bodies["x"], bodies["v"], bodies["q"], bodies["w"]
    return z.reshape(-1)
