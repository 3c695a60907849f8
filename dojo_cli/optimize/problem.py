"""A trajectory-optimization problem in numbers, and its dynamics through the core.

The problem (what ``dojo optimize`` solves; docs/optimize.md)::

    minimise over u_0 .. u_{N-1}
        J = sum_{k<N} [ 1/2 |f(s_k) - g|^2_W + 1/2 |u_k - u_ref|^2_R ] + 1/2 |f(s_N) - g|^2_Wf
            + sum_j 1/2 |f_j(s_{k_j}) - g_j|^2_{W_j}        (targets at chosen knots k_j)
    subject to  s_{k+1} = step(s_k, u_k)            (the variational integrator, exactly)
                lower <= u_k <= upper               (box, by projected Newton in the backward pass)
                c_N(s_N) = f_E(s_N) - g_E = 0       (terminal equalities, augmented Lagrangian)
                lower_I <= f_I(s_k) <= upper_I      (path inequalities, augmented Lagrangian)

``f`` stacks named features of the state: joint coordinates and velocities (the
minimal coordinates, angles unwrapped along the trajectory as a run stores them), body
positions (world frame) and body orientations (the residual of an orientation is its
rotation from the target, ``orientation_residual``). A target g is one vector for
every knot, or one per knot (tracking a reference trajectory). Slack inputs (Dojo's
trick for underactuated gaits: inputs on coordinates no motor drives, e.g. a floating
base) are free to help the optimiser early and are driven to zero by the augmented
Lagrangian (the equality u_k[slack] = 0 at every step). The state s is the representation's: minimal, per joint
[coordinates; velocities] (2 nf), or maximal in tangent coordinates, per body
[x, v, phi, w] (12 nb, docs/gradients.md). Both are views of the same maximal
rollout; the representation only decides in which coordinates the backward pass runs.

Rollouts are the core's (``_core.rollout``, the loop ``dojo simulate`` runs for a
schedule, with its warm starts), so a stored optimal trajectory is what ``dojo
simulate`` gives for the same inputs; the derivatives are the exact step gradients
(implicit function theorem), optionally on the relaxed central path s o gamma = kappa.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SolverError, from_core
from dojo_cli.math.quaternion import conjugate, multiply
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.gradients import minimal_to_maximal_jacobian
from dojo_cli.simulation.run import minimal_state
from dojo_cli.simulation.step import core_options, singular_message
from dojo_cli.solver.options import SolverOptions

REPRESENTATIONS = ("minimal", "maximal")


@dataclass(frozen=True)
class Feature:
    """A named block of the state features f(s).

    Attributes:
        name: ``joints.hinge``, ``joints.hinge.velocity``, ``bodies.box.position``.
        kind: "q" (minimal coordinates), "v" (minimal velocities), "x" (a body's position) or
            "r" (a body's orientation: 3 components, see orientation_residual).
        index: (n,) the minimal coordinate indices (kind q, v) or the body index (kind x, r).
    """

    name: str
    kind: str
    index: tuple[int, ...]

    @property
    def size(self) -> int:
        return 3 if self.kind in ("x", "r") else len(self.index)


def feature_catalogue(mech: Mechanism) -> dict[str, Feature]:
    """Every feature a task may name: per joint with free coordinates ``joints.NAME`` and
    ``joints.NAME.velocity``, per body ``bodies.NAME.position`` and ``bodies.NAME.orientation``."""
    out: dict[str, Feature] = {}
    for j, joint in enumerate(mech.joints):
        r = np.arange(mech.nf)[mech.joint_free_range[j]]
        if len(r):
            out[f"joints.{joint.name}"] = Feature(f"joints.{joint.name}", "q", tuple(int(i) for i in r))
            out[f"joints.{joint.name}.velocity"] = Feature(f"joints.{joint.name}.velocity", "v", tuple(int(i) for i in r))
    for b, body in enumerate(mech.bodies):
        out[f"bodies.{body.name}.position"] = Feature(f"bodies.{body.name}.position", "x", (b,))
        out[f"bodies.{body.name}.orientation"] = Feature(f"bodies.{body.name}.orientation", "r", (b,))
    return out


@dataclass
class FeatureSet:
    """Features stacked into one vector, with per-entry weight and target.

    Attributes:
        features: the named blocks, in order.
        target: (n,) g at every knot, or (N+1, n) one per knot (a reference trajectory); an
            orientation's target is a rotation vector (axis times angle, rad: the body-to-world
            rotation exp(g)); weight: (n,) diagonal of W (may be empty for constraint sets).
        lower, upper: (n,) bounds (path inequalities), or None.
    """

    features: list[Feature]
    target: np.ndarray
    weight: np.ndarray | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(sum(f.size for f in self.features))


@dataclass
class Problem:
    """A trajectory-optimization problem (module docstring).

    Attributes:
        mech: the mechanism (its scene's initial state, solver options).
        horizon: N steps.
        representation: "minimal" or "maximal".
        z0: (13 nb,) initial maximal state.
        stage, terminal: the tracking costs (FeatureSet with weights), or None.
        effort: (nu,) R's diagonal; effort_reference: (nu,) u_ref.
        lower, upper: (nu,) input bounds (+-inf for none).
        terminal_equality: FeatureSet whose f = target at s_N, or None.
        targets: (knot, FeatureSet with weights) pairs: costs at chosen knots 1..N.
        path_inequality: FeatureSet with lower <= f <= upper at s_1 .. s_N, or None.
        reference: a FeatureSet with weights and (N+1, n) targets: tracking at knots 0..N, or None.
        slack: input indices driven to zero (augmented-Lagrangian equalities u_k[slack] = 0).
        opts: the step's solver options.
    """

    mech: Mechanism
    horizon: int
    representation: str
    z0: np.ndarray
    stage: FeatureSet | None
    terminal: FeatureSet | None
    effort: np.ndarray
    effort_reference: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    opts: SolverOptions
    terminal_equality: FeatureSet | None = None
    path_inequality: FeatureSet | None = None
    targets: list[tuple[int, FeatureSet]] = ()
    reference: FeatureSet | None = None
    slack: tuple[int, ...] = ()

    @property
    def nu(self) -> int:
        return self.mech.nu

    @property
    def ns(self) -> int:
        """Dimension of the representation's (tangent) state."""
        return 2 * self.mech.nf if self.representation == "minimal" else 12 * self.mech.nb


@dataclass
class Rollout:
    """A trajectory of the problem's dynamics.

    Attributes:
        U: (N, nu) inputs; Z: (N+1, 13 nb) maximal states; MQ, MV: (N+1, nf) minimal
            coordinates (unwrapped) and velocities; lam: (N, nl) joint impulses of each step
            (the warm start of the next); status: (N,) the core's status codes.
    """

    U: np.ndarray
    Z: np.ndarray
    MQ: np.ndarray
    MV: np.ndarray
    lam: np.ndarray
    status: np.ndarray

    @property
    def failed_step(self) -> int | None:
        bad = np.flatnonzero(self.status)
        if bad.size:
            return int(bad[0])
        if not np.all(np.isfinite(self.Z)):
            return int(np.flatnonzero(~np.all(np.isfinite(self.Z), axis=1))[0]) - 1
        return None


def rollout(problem: Problem, U: np.ndarray) -> Rollout:
    """The open-loop rollout of inputs U (N, nu) from z0: one call into the core, the loop
    ``dojo simulate`` runs for a schedule (warm starts included)."""
    mech = problem.mech
    N = problem.horizon
    data = _core.Data(mech.core)
    lam = np.zeros(mech.nl)
    U = np.ascontiguousarray(U, dtype=float).reshape(N, mech.nu)
    try:
        out = _core.rollout(mech.core, data, np.ascontiguousarray(problem.z0, dtype=float), N, U, lam,
                            core_options(problem.opts), False)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise from_core(exc, "optimize: rollout") from None
    Z = np.concatenate([problem.z0[None], out["states"]])
    return _finish(mech, U, Z, out["impulses"], out["status"])


def _finish(mech: Mechanism, U, Z, lam, status) -> Rollout:
    if np.all(np.isfinite(Z)):
        MQ, MV = minimal_state(mech, Z)
    else:
        MQ = np.full((len(Z), mech.nf), np.nan)
        MV = MQ.copy()
    return Rollout(U=U, Z=Z, MQ=MQ, MV=MV, lam=np.asarray(lam).reshape(len(U), mech.nl), status=np.asarray(status))


def closed_loop_rollout(problem: Problem, ref: Rollout, lin: Linearization, d: np.ndarray, K: np.ndarray,
                        alpha: float) -> Rollout:
    """The forward pass: u_k = clip(u_k^ref + alpha d_k + K_k ds_k, lower, upper) with ds_k the
    state's deviation from the reference in the representation's tangent coordinates (to
    first order for the minimal one: ds = dy/dz dz). Steps as the core's rollout does
    (same warm starts), one crossing per step since the input depends on the state.

    What does not depend on the state is prepared for all steps at once (the feedforward
    inputs, the gains composed with dy/dz, the reference's conjugate quaternions as
    left-multiplication matrices), so that each step costs the core's solve and a few
    small products (tangent_difference, step by step)."""
    mech = problem.mech
    N, nb = problem.horizon, mech.nb
    data = _core.Data(mech.core)
    lam = np.zeros(mech.nl)
    Z = np.empty((N + 1, 13 * nb))
    Z[0] = problem.z0
    U = np.empty((N, mech.nu))
    lams = np.zeros((N, mech.nl))
    status = np.zeros(N, dtype=int)
    options = core_options(problem.opts)
    lo, hi = problem.lower, problem.upper
    nb6 = 6 * nb
    feedforward = ref.U + alpha * d
    # the minimal gains act on dy = dy/dz dz: two matrix-vector products a step, not the
    # gains composed with dy/dz beforehand (a batched (nu, 2 nf) x (2 nf, 12 nb) product, which
    # multi-threaded OpenBLAS took 0.6 s for on the humanoid on a loaded 2-core machine: 10x
    # the 40 steps' solves; 2 ms on one thread)
    to_minimal = lin.to_minimal if problem.representation == "minimal" else None
    R = ref.Z.reshape(N + 1, nb, 13)
    conj = _left_matrices(R[:, :, 6:10] * [1.0, -1.0, -1.0, -1.0])  # (N+1, nb, 4, 4): q_ref* (x) .
    dz = np.empty((nb, 12))
    for k in range(N):
        z = Z[k].reshape(nb, 13)
        # tangent_difference(z, ref.Z[k]): [x, v] and w differences, phi = Vec(q_ref* q) on w >= 0
        rel = (conj[k] @ z[:, 6:10, None])[:, :, 0]
        dz[:, 0:6] = z[:, 0:6] - R[k, :, 0:6]
        dz[:, 6:9] = rel[:, 1:] * np.where(rel[:, :1] >= 0, 1.0, -1.0)
        dz[:, 9:12] = z[:, 10:13] - R[k, :, 10:13]
        ds = dz.reshape(-1) if to_minimal is None else to_minimal[k] @ dz.reshape(-1)
        U[k] = np.minimum(np.maximum(feedforward[k] + K[k] @ ds, lo), hi)
        # the step as the core's rollout takes it (the previous step's impulses as warm start)
        code = _core.step(mech.core, data, Z[k], U[k], None, None, lam, options)
        lam = data.w[nb6: nb6 + mech.nl].copy()
        _core.advance_angles(mech.core, data)
        lams[k] = lam
        Z[k + 1] = data.z_next
        if code != 0 or not np.all(np.isfinite(Z[k + 1])):
            status[k:] = 1
            Z[k + 1:] = np.nan
            U[k + 1:] = np.nan
            break
    return _finish(mech, U, Z, lams, status)


def _left_matrices(p: np.ndarray) -> np.ndarray:
    """(..., 4, 4) matrices L(p) with L(p) q = p (x) q (Hamilton product, [w, x, y, z])."""
    w, x, y, z = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    return np.stack([
        np.stack([w, -x, -y, -z], -1),
        np.stack([x, w, -z, y], -1),
        np.stack([y, z, w, -x], -1),
        np.stack([z, -y, x, w], -1),
    ], -2)


def tangent_difference(mech: Mechanism, z: np.ndarray, z_ref: np.ndarray) -> np.ndarray:
    """(12 nb,) z - z_ref in tangent coordinates per body [x, v, phi, w], with
    q = q_ref [sqrt(1 - |phi|^2), phi] (docs/gradients.md): phi = Vec(q_ref* q), q_ref* q
    taken on the hemisphere w >= 0."""
    a = z.reshape(mech.nb, 13)
    b = z_ref.reshape(mech.nb, 13)
    out = np.empty((mech.nb, 12))
    out[:, 0:6] = a[:, 0:6] - b[:, 0:6]
    rel = multiply(conjugate(b[:, 6:10]), a[:, 6:10])
    out[:, 6:9] = np.where(rel[:, :1] >= 0, rel[:, 1:], -rel[:, 1:])
    out[:, 9:12] = a[:, 10:13] - b[:, 10:13]
    return out.reshape(-1)


@dataclass
class Linearization:
    """The dynamics' Jacobians along a rollout, in the representation's coordinates.

    Attributes:
        A: (N, ns, ns); B: (N, ns, nu).
        Jy: (N+1, 2 nf, ns) d y / d s (interleaved minimal state), or None when no feature needs it.
        Jz: (N+1, 12 nb, ns) d z / d s (maximal tangent), or None.
        kappa: (N,) where on the central path each step was differentiated.
        to_minimal: (N+1, 2 nf, 12 nb) dy/dz at each knot (minimal representation), or None.
    """

    A: np.ndarray
    B: np.ndarray
    Jy: np.ndarray | None
    Jz: np.ndarray | None
    kappa: np.ndarray
    to_minimal: np.ndarray | None = None


def linearize(problem: Problem, traj: Rollout, kappa: float | None, need_y: bool, need_z: bool) -> Linearization:
    """A_k = d s_{k+1} / d s_k and B_k = d s_{k+1} / d u_k along ``traj``.

    Each step is solved again from its stored state with the rollout's warm start (the
    same solve) and differentiated on it by the core (implicit function theorem); with
    ``kappa`` the derivative is the relaxed one (the step moved onto s o gamma = kappa).
    Minimal coordinates chain dy'/dz' A_max dz/dy (simulation.gradients)."""
    mech = problem.mech
    N, ns, nu = problem.horizon, problem.ns, mech.nu
    minimal = problem.representation == "minimal"
    data = _core.Data(mech.core)
    kap = np.zeros(N)
    nb12 = 12 * mech.nb
    if not minimal:
        Amax = np.empty((N, nb12, nb12))
        Bmax = np.empty((N, nb12, nu))
    # dy/dz (2nf, 12nb) and dz/dy (12nb, 2nf) at each knot: what the minimal chain and the features need
    M2m = m2M = None
    if minimal or need_y:
        # dz/dy at every knot, and dy/dz as its left inverse (J' J)^-1 J': on the tangents of
        # the joints' constraint manifold (where every deviation of a rollout lies) it is the
        # derivative of maximal_to_minimal, at a third of the core's cost for it
        qpos, vpos = interleaved_index(mech)
        Y = np.empty((N + 1, 2 * mech.nf))
        Y[:, qpos], Y[:, vpos] = traj.MQ, traj.MV
        m2M = np.stack([minimal_to_maximal_jacobian(mech, Y[k]) for k in range(N + 1)])
        m2Mt = np.swapaxes(m2M, 1, 2)
        M2m = np.linalg.solve(m2Mt @ m2M, m2Mt)
    lam = np.zeros(mech.nl)
    options = core_options(problem.opts)
    relax = -1.0 if kappa is None else float(kappa)
    if minimal:
        # the chain dy'/dz' (dz'/dz dz/dy) formed in the core: the minimal directions dz/dy as
        # the right-hand sides (GradientRequest.state_map: 2 nf solves instead of 12 nb) and
        # dy'/dz' applied to the solved columns (output_map), as dojo.minimal_gradients does
        # (on the A1 at h = 0.05: 1.2 ms a step instead of 2.3 ms and a (12 nb)^2 product)
        ny = 2 * mech.nf
        A = np.empty((N, ny, ny))
        B = np.empty((N, ny, nu))
        state_maps = np.ascontiguousarray(m2M)
        output_maps = np.ascontiguousarray(M2m)
    for k in range(N):
        _core.step(mech.core, data, traj.Z[k], traj.U[k], None, None, lam, options)  # the rollout's own solve
        try:
            if minimal:
                A[k], B[k], _, kap[k] = _core.gradients(mech.core, data, True, True, [], relax, state_maps[k],
                                                        output_maps[k + 1])
            else:
                Am, Bm, _, kap[k] = _core.gradients(mech.core, data, True, True, [], relax)
                Amax[k] = Am
                Bmax[k] = Bm.reshape(nb12, nu)
        except RuntimeError:
            raise SolverError(f"optimize: gradients of step {k}: {singular_message(mech, data.singular_node)}") from None
        _core.advance_angles(mech.core, data)
        lam = traj.lam[k].copy()
    if not minimal:
        A, B = Amax, Bmax
    eye = np.eye(ns)
    Jy = Jz = None
    if need_y:
        Jy = np.broadcast_to(eye, (N + 1, ns, ns)) if minimal else M2m
    if need_z:
        Jz = m2M if minimal else np.broadcast_to(eye, (N + 1, ns, ns))
    return Linearization(A=A, B=B, Jy=Jy, Jz=Jz, kappa=kap, to_minimal=M2m if minimal else None)


def interleaved_index(mech: Mechanism) -> tuple[np.ndarray, np.ndarray]:
    """Where minimal coordinate i and velocity i sit in the interleaved state (per joint
    [coordinates; velocities], physics.coordinates.interleave_minimal): two (nf,) arrays."""
    from dojo_cli.physics.coordinates import interleave_minimal

    names = np.arange(2 * mech.nf)
    mixed = interleave_minimal(mech, names[: mech.nf], names[mech.nf:])
    pos = np.empty(2 * mech.nf, dtype=int)
    pos[mixed.astype(int)] = np.arange(2 * mech.nf)
    return pos[: mech.nf], pos[mech.nf:]


def feature_values(problem: Problem, fs: FeatureSet, traj: Rollout, k) -> np.ndarray:
    """f(s_k) of a feature set: (n,) at knot k, or (len(k), n) at knots k (an index array).
    An orientation's value is its residual from the identity (orientation_residual)."""
    out = []
    X = traj.Z.reshape(len(traj.Z), problem.mech.nb, 13)
    for f in fs.features:
        if f.kind == "q":
            out.append(traj.MQ[k][..., list(f.index)])
        elif f.kind == "v":
            out.append(traj.MV[k][..., list(f.index)])
        elif f.kind == "x":
            out.append(X[k][..., f.index[0], 0:3])
        else:
            out.append(orientation_residual(X[k][..., f.index[0], 6:10], np.zeros(3))[0])
    return np.concatenate(out, axis=-1)


def target_at(fs: FeatureSet, k) -> np.ndarray:
    """g at knot k (or knots k): the set's one target, or its reference's row(s)."""
    return fs.target[k] if fs.target.ndim == 2 else fs.target


def residuals(problem: Problem, fs: FeatureSet, traj: Rollout, k) -> np.ndarray:
    """f(s_k) - g_k: (n,) at knot k or (len(k), n) at knots k; for an orientation the
    rotation from its target (orientation_residual), not a difference of vectors."""
    r = feature_values(problem, fs, traj, k) - target_at(fs, k)
    if any(f.kind == "r" for f in fs.features):
        X = traj.Z.reshape(len(traj.Z), problem.mech.nb, 13)
        g = target_at(fs, k)
        i = 0
        for f in fs.features:
            if f.kind == "r":
                r[..., i:i + 3] = orientation_residual(X[k][..., f.index[0], 6:10], g[..., i:i + 3])[0]
            i += f.size
    return r


def _rotation_quaternion(g: np.ndarray) -> np.ndarray:
    """exp of rotation vectors (..., 3): unit quaternions [w, x, y, z] (..., 4)."""
    angle = np.linalg.norm(g, axis=-1, keepdims=True)
    # sin(a/2)/a -> 1/2 as a -> 0 (no division by zero at the identity)
    half = np.where(angle > 1e-12, np.sin(0.5 * angle) / np.where(angle > 1e-12, angle, 1.0), 0.5)
    return np.concatenate([np.cos(0.5 * angle), half * g], axis=-1)


def rotation_vector(q: np.ndarray) -> np.ndarray:
    """log of unit quaternions (..., 4): rotation vectors (..., 3), axis times angle in
    [0, pi] (q and -q give the same)."""
    q = np.where(q[..., :1] >= 0, q, -q)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    scale = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)
    return scale * q[..., 1:]


def orientation_residual(q: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotation of orientations q (..., 4) from targets exp(g) (g (..., 3) rotation
    vectors) and its derivative with respect to the body's tangent phi.

    r = 2 sign(e_w) Vec(e), e = exp(g)* q: zero exactly at the target, the rotation vector
    of the error to first order (2 sin(a/2) ~ a along its axis, in the body frame), and
    sign-fixed so that q and -q (the same orientation) give the same r. With the body's
    tangent q = q0 (x) [sqrt(1 - |phi|^2), phi] (problem.tangent_difference), e (x) [1, phi]
    gives dr/dphi = 2 sign(e_w) (e_w I + [e_v]x) (Hamilton product). Returns (r (..., 3),
    dr/dphi (..., 3, 3))."""
    e = multiply(conjugate(np.broadcast_to(_rotation_quaternion(g), np.shape(q))), q)
    sign = np.where(e[..., :1] >= 0, 1.0, -1.0)
    r = 2.0 * sign * e[..., 1:]
    ew, ev = e[..., 0], e[..., 1:]
    D = ew[..., None, None] * np.eye(3)
    D = D + np.stack([
        np.stack([np.zeros_like(ew), -ev[..., 2], ev[..., 1]], -1),
        np.stack([ev[..., 2], np.zeros_like(ew), -ev[..., 0]], -1),
        np.stack([-ev[..., 1], ev[..., 0], np.zeros_like(ew)], -1),
    ], -2)
    return r, 2.0 * sign[..., None] * D


def _feature_rows(problem: Problem, fs: FeatureSet) -> tuple[np.ndarray, np.ndarray]:
    """Where each entry of f sits: (n,) rows of Jy (kind q, v) and (n,) rows of Jz (kind x,
    and r: the body's tangent phi); -1 where the other applies."""
    qpos, vpos = interleaved_index(problem.mech)
    ry, rz = [], []
    for f in fs.features:
        if f.kind in ("x", "r"):
            ry += [-1] * 3
            rz += [12 * f.index[0] + (0 if f.kind == "x" else 6) + i for i in range(3)]
        else:
            ry += [int(i) for i in (qpos if f.kind == "q" else vpos)[list(f.index)]]
            rz += [-1] * len(f.index)
    return np.array(ry, dtype=int), np.array(rz, dtype=int)


def feature_jacobian(problem: Problem, fs: FeatureSet, lin: Linearization, k, traj: Rollout | None = None) -> np.ndarray:
    """d (f(s_k) - g_k) / d s: (n, ns) at knot k, or (len(k), n, ns) at knots k. An
    orientation's rows are dr/dphi dphi/ds (orientation_residual): they need ``traj``."""
    ry, rz = _feature_rows(problem, fs)
    shape = np.shape(lin.Jy[k] if lin.Jy is not None else lin.Jz[k])[:-2]
    out = np.zeros(shape + (len(ry), problem.ns))
    y, z = ry >= 0, rz >= 0
    if y.any():
        out[..., y, :] = lin.Jy[k][..., ry[y], :]
    if z.any():
        out[..., z, :] = lin.Jz[k][..., rz[z], :]
    if any(f.kind == "r" for f in fs.features):
        X = traj.Z.reshape(len(traj.Z), problem.mech.nb, 13)
        g = target_at(fs, k)
        i = 0
        for f in fs.features:
            if f.kind == "r":
                _, D = orientation_residual(X[k][..., f.index[0], 6:10], g[..., i:i + 3])
                out[..., i:i + 3, :] = D @ out[..., i:i + 3, :]
            i += f.size
    return out


def needs(problem: Problem) -> tuple[bool, bool]:
    """(need_y, need_z): whether any feature reads minimal coordinates, body positions."""
    kinds = set()
    for fs in (problem.stage, problem.terminal, problem.terminal_equality, problem.path_inequality,
               problem.reference, *(fs for _, fs in problem.targets)):
        if fs is not None:
            kinds |= {f.kind for f in fs.features}
    return bool(kinds & {"q", "v"}), bool(kinds & {"x", "r"})
