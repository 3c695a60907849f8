"""States and error states (PinnZoo's zero_state, randn_state, init_state, state_error,
apply_dx, error_jacobian(_T); other_systems_notes.md 2.5), per joint:

- a floating base: position error in the body frame of x0, R(q0)^T (p - p0), and the
  rotation error quat_to_axis_angle(q0* q) ("delta on the left", PinnZoo's);
- a spherical joint: quat_to_axis_angle(q0* q);
- translations turned by a revolute joint (planar, free_revolute): E_t(q0)^T (t - t0),
  the same body-frame rule (E_t the joint's block of velocity_kinematics);
- every other coordinate: the difference (among them a swing's two rotation coordinates
  and the translations measured in the predecessor frame, whose velocities are their rates).
apply_dx is the exact inverse; error_jacobian = [E 0; 0 I], error_jacobian_T = [E_T 0; 0 I].
"""

from __future__ import annotations

import numpy as np

from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.minimal.dynamics import velocity_kinematics, velocity_kinematics_T
from dojo_cli.minimal.model import ROT_QUATERNION, ROT_REVOLUTE, ROT_SWING, MinimalModel
from dojo_cli.minimal.quaternions import L_mult, axis_angle_to_quat, quat_to_axis_angle


def _x(model: MinimalModel, x) -> np.ndarray:
    x = np.asarray(x, dtype=float).reshape(-1)
    if x.size != model.nx:
        raise ValueError(f"state must have nx = {model.nx} entries, got {x.size}")
    return x


def zero_state(model: MinimalModel) -> np.ndarray:
    """(nx,) zeros with identity quaternions."""
    x = np.zeros(model.nx)
    for tj in model.joints:
        if tj.rot == ROT_QUATERNION:
            x[tj.q.start + tj.n_trans] = 1.0
    return x


def randn_state(model: MinimalModel, rng: np.random.Generator | None = None) -> np.ndarray:
    """(nx,) every coordinate N(0, 1), quaternions normalised (PinnZoo's randn_state)."""
    rng = np.random.default_rng() if rng is None else rng
    x = rng.standard_normal(model.nx)
    for tj in model.joints:
        if tj.rot == ROT_QUATERNION:
            s = slice(tj.q.start + tj.n_trans, tj.q.stop)
            x[s] /= np.linalg.norm(x[s])
    return x


def init_state(model: MinimalModel) -> np.ndarray:
    """(nx,) the scene's initial state in minimal coordinates (its ``initial`` joint values,
    or the zero configuration), as PinnZoo's init_state gives a model's starting pose.

    Velocities are those at t = 0 (the scene's initial velocities; with ``initial_velocity:
    midpoint``, Dojo's midpoint velocities, which the scene then gives)."""
    mech = model.mech
    z = getattr(mech, "initial_t0", None)
    if z is None:
        z = getattr(mech, "initial", None)
    if z is None:
        z = minimal_to_maximal(mech, np.zeros(mech.minimal_dimension()))
    return model.state_from_maximal(z)


def _blocks(model: MinimalModel, q: np.ndarray):
    """(tree joint, E_t block (n_t, n_t) or None) for joints whose translations turn."""
    E = None
    for tj in model.joints:
        if tj.n_trans and tj.rot in (ROT_REVOLUTE, ROT_QUATERNION) and not tj.trans_pred:
            if E is None:
                E = velocity_kinematics(model, q)
            yield tj, E[tj.q.start: tj.q.start + tj.n_trans, tj.v.start: tj.v.start + tj.n_trans]
        else:
            yield tj, None


def state_error(model: MinimalModel, x, x0) -> np.ndarray:
    """(2 nv,) error of x relative to x0 in the tangent space (module doc)."""
    x, x0 = _x(model, x), _x(model, x0)
    nq, nv = model.nq, model.nv
    dx = np.zeros(2 * nv)
    for tj, Et in _blocks(model, x0[:nq]):
        q, q0 = x[tj.q], x0[tj.q]
        d = dx[tj.v]
        nt = tj.n_trans
        d[:nt] = (q[:nt] - q0[:nt]) if Et is None else Et.T @ (q[:nt] - q0[:nt])
        if tj.rot in (ROT_REVOLUTE, ROT_SWING):
            d[nt:] = q[nt:] - q0[nt:]
        elif tj.rot == ROT_QUATERNION:
            d[nt:] = quat_to_axis_angle(L_mult(q0[nt:]).T @ q[nt:])
    dx[nv:] = x[nq:] - x0[nq:]
    return dx


def apply_dx(model: MinimalModel, x, dx) -> np.ndarray:
    """(nx,) x moved by the tangent step dx (2 nv,): the inverse of state_error."""
    x = _x(model, x)
    dx = np.asarray(dx, dtype=float).reshape(-1)
    nq, nv = model.nq, model.nv
    if dx.size != 2 * nv:
        raise ValueError(f"dx must have 2 nv = {2 * nv} entries, got {dx.size}")
    out = x.copy()
    for tj, Et in _blocks(model, x[:nq]):
        q, d, o = x[tj.q], dx[tj.v], out[tj.q]
        nt = tj.n_trans
        o[:nt] = q[:nt] + (d[:nt] if Et is None else Et @ d[:nt])
        if tj.rot in (ROT_REVOLUTE, ROT_SWING):
            o[nt:] = q[nt:] + d[nt:]
        elif tj.rot == ROT_QUATERNION:
            o[nt:] = L_mult(q[nt:]) @ axis_angle_to_quat(d[nt:])
    out[nq:] = x[nq:] + dx[nv:]
    return out


def error_jacobian(model: MinimalModel, x) -> np.ndarray:
    """(nx, 2 nv) = [E 0; 0 I], d apply_dx(x, dx)/d dx at dx = 0."""
    x = _x(model, x)
    out = np.zeros((model.nx, 2 * model.nv))
    out[: model.nq, : model.nv] = velocity_kinematics(model, x)
    out[model.nq:, model.nv:] = np.eye(model.nv)
    return out


def error_jacobian_T(model: MinimalModel, x) -> np.ndarray:  # noqa: N802
    """(2 nv, nx) = [E_T 0; 0 I], d state_error(x~, x)/d x~ at x~ = x."""
    x = _x(model, x)
    out = np.zeros((2 * model.nv, model.nx))
    out[: model.nv, : model.nq] = velocity_kinematics_T(model, x)
    out[model.nv:, model.nq:] = np.eye(model.nv)
    return out
