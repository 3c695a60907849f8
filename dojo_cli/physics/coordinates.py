"""Conversions between maximal and minimal states (dojo_engine_notes.md 3.7).

Minimal state, joint by joint in joint order: [theta_t; theta_r; dtheta_t;
dtheta_r] of that joint's free coordinates (Dojo's per-joint grouping; fixed
joints contribute nothing; loop-closure joints are included).
- theta_t = free rows of basis_t d, theta_r = free rows of basis_r log(q_rel);
- velocities are backward differences over the last interval, which the maximal
  state holds as midpoint velocities: z1 = (x2 - h v15, q2 qmap(-w15)),
  dtheta_t = (theta_t(z2) - theta_t(z1)) / h,
  dtheta_r = free rows of basis_r log(q_rel(z1)* q_rel(z2)) / h.
minimal_to_maximal places bodies from the origin to the leaves along tree joints
(loop joints are skipped: their coordinates follow from the others), building
each child's current and previous poses from its parent's, then its midpoint
velocities from the two poses; the round trip min -> max -> min is exact.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import ORIGIN, Mechanism
from dojo_cli.model.state import pack_maximal, unpack_maximal
from dojo_cli.physics.kinematics import constraint_rows, joint_kinematics, minimal_rows


def previous_configuration(x2, v15, q2, w15, h: float):
    """(x1, q1) = (x2 - h v15, q2 qmap(-w15)) for arrays of bodies."""
    return x2 - h * v15, quat.multiply(q2, quat.integrator_map(-w15, h))


def minimal_coordinates(mech: Mechanism, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Free coordinates (nf,) at the configuration (x (nb,3), q (nb,4))."""
    m, _ = minimal_rows(mech, joint_kinematics(mech, x, q), jacobian=False)
    return m[mech.free_joint, mech.free_slot]


def minimal_velocities(mech: Mechanism, z: np.ndarray) -> np.ndarray:
    """Free-coordinate velocities (nf,) of a maximal state (backward difference)."""
    h = mech.timestep
    x2, v15, q2, w15 = unpack_maximal(z, mech.nb)
    x1, q1 = previous_configuration(x2, v15, q2, w15, h)
    k2 = joint_kinematics(mech, x2, q2)
    k1 = joint_kinematics(mech, x1, q1)
    bt, br = mech.basis[:, :3], mech.basis[:, 3:]
    dt = np.einsum("jik,jk->ji", bt, k2.d - k1.d) / h
    inc = quat.multiply(quat.conjugate(k1.q_rel), k2.q_rel)
    dr = np.einsum("jik,jk->ji", br, quat.rotation_vector_from_quaternion(inc)) / h
    rates = np.concatenate([dt, dr], axis=1)
    return rates[mech.free_joint, mech.free_slot]


def maximal_to_minimal(mech: Mechanism, z: np.ndarray) -> np.ndarray:
    """Minimal state (2 nf,) of a maximal state (13 nb,), per joint [coords; velocities]."""
    x2, _, q2, _ = unpack_maximal(z, mech.nb)
    theta = minimal_coordinates(mech, x2, q2)
    rate = minimal_velocities(mech, z)
    return interleave_minimal(mech, theta, rate)


def interleave_minimal(mech: Mechanism, theta: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Per joint [theta_j; rate_j] from all coordinates (nf,) and all velocities (nf,)."""
    out = []
    for r in mech.joint_free_range:
        out.append(theta[r])
        out.append(rate[r])
    return np.concatenate(out) if out else np.zeros(0)


def split_minimal(mech: Mechanism, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of interleave_minimal: (coordinates (nf,), velocities (nf,))."""
    y = np.asarray(y).reshape(-1)
    y = y if y.dtype.kind in "fc" else y.astype(float)  # complex stays complex (complex-step derivatives)
    if y.shape != (2 * mech.nf,):
        raise ValueError(f"minimal state must have {2 * mech.nf} entries, got {y.size}")
    theta, rate, k = [], [], 0
    for r in mech.joint_free_range:
        n = r.stop - r.start
        theta.append(y[k : k + n])
        rate.append(y[k + n : k + 2 * n])
        k += 2 * n
    return np.concatenate(theta) if theta else np.zeros(0), np.concatenate(rate) if rate else np.zeros(0)


def child_pose(mech: Mechanism, j: int, xa, qa, theta6: np.ndarray):
    """Pose of joint j's child from the parent pose and the joint's six basis
    coordinates (constrained rows zero).

    Returns:
        xb (3,), qb (4,): with q_rel = exp(basis_r^T theta_r), d = basis_t^T theta_t,
        qb = qa offset q_rel, xb = xa + R(qa)(pa + d) - R(qb) pb.
    """
    d = mech.basis[j, :3].T @ theta6[:3]
    q_rel = quat.quaternion_from_rotation_vector(mech.basis[j, 3:].T @ theta6[3:])
    qb = quat.multiply(quat.multiply(qa, mech.orientation_offset[j]), q_rel)
    xb = xa + quat.rotate(qa, mech.parent_vertex[j] + d) - quat.rotate(qb, mech.child_vertex[j])
    return xb, qb


def minimal_to_maximal(
    mech: Mechanism, y: np.ndarray, z_base: np.ndarray | None = None, body_overrides: dict | None = None
) -> np.ndarray:
    """Maximal state (13 nb,) from a minimal state (2 nf,).

    Args:
        mech: the mechanism.
        y: (2 nf,) minimal state, per joint [coordinates; velocities].
        z_base: unused bodies keep this state (default: all bodies at rest at
            the origin); every body reached by a tree joint is overwritten.
        body_overrides: {body index: {"position", "orientation", "velocity",
            "angular_velocity"}} maximal values (world frame; angular velocity in
            the body frame) that replace what the joint gives, applied as the
            tree is walked so that the body's descendants follow it.
    """
    theta, rate = split_minimal(mech, y)
    h = mech.timestep
    nb = mech.nb
    dtype = np.result_type(theta, float if z_base is None else np.asarray(z_base))
    if z_base is None:
        x = np.zeros((nb, 3), dtype=dtype)
        q = np.tile(quat.IDENTITY, (nb, 1)).astype(dtype)
        x1, q1 = x.copy(), q.copy()
    else:
        x, v, q, w = unpack_maximal(np.asarray(z_base, dtype=dtype), nb)
        x1, q1 = previous_configuration(x, v, q, w, h)
    six = np.zeros((mech.nj, 6), dtype=dtype)
    six_rate = np.zeros((mech.nj, 6), dtype=dtype)
    six[mech.free_joint, mech.free_slot] = theta
    six_rate[mech.free_joint, mech.free_slot] = rate
    for j in mech.tree_joints:
        a, b = mech.parent[j], mech.child[j]
        if a == ORIGIN:
            xa, qa, xa1, qa1 = np.zeros(3), quat.IDENTITY, np.zeros(3), quat.IDENTITY
        else:
            xa, qa, xa1, qa1 = x[a], q[a], x1[a], q1[a]
        x[b], q[b] = child_pose(mech, j, xa, qa, six[j])
        # Previous relative pose: d1 = d - h d_dot, q_rel1 = q_rel exp(-h w_rel).
        prev = six[j].copy()
        prev[:3] -= h * six_rate[j, :3]
        q_rel = quat.quaternion_from_rotation_vector(mech.basis[j, 3:].T @ six[j, 3:])
        q_rel1 = quat.multiply(q_rel, quat.quaternion_from_rotation_vector(-h * mech.basis[j, 3:].T @ six_rate[j, 3:]))
        d1 = mech.basis[j, :3].T @ prev[:3]
        q1[b] = quat.multiply(quat.multiply(qa1, mech.orientation_offset[j]), q_rel1)
        x1[b] = xa1 + quat.rotate(qa1, mech.parent_vertex[j] + d1) - quat.rotate(q1[b], mech.child_vertex[j])
        if body_overrides and b in body_overrides:
            _override(body_overrides[b], b, x, q, x1, q1, h)
    v = (x - x1) / h
    w = quat.angular_velocity(q1, q, h)
    return pack_maximal(x, v, q, w)


def _override(values: dict, b: int, x, q, x1, q1, h: float) -> None:
    """Replace parts of body b's current/previous pose, keeping the other parts' velocities."""
    v = (x[b] - x1[b]) / h
    dq = quat.multiply(quat.conjugate(q[b]), q1[b])  # body-frame increment q -> q1
    if values.get("position") is not None:
        x[b] = np.asarray(values["position"], dtype=float)
    if values.get("orientation") is not None:
        q[b] = quat.normalize(np.asarray(values["orientation"], dtype=float))
    if values.get("velocity") is not None:
        v = np.asarray(values["velocity"], dtype=float)
    if values.get("angular_velocity") is not None:
        dq = quat.integrator_map(-np.asarray(values["angular_velocity"], dtype=float), h)
    x1[b] = x[b] - h * v
    q1[b] = quat.multiply(q[b], dq)


def constraint_violation(mech: Mechanism, z: np.ndarray) -> np.ndarray:
    """Largest constraint-row magnitude of each joint at the configuration of z, (nj,)."""
    x, _, q, _ = unpack_maximal(z, mech.nb)
    c, _ = constraint_rows(mech, joint_kinematics(mech, x, q))
    return np.max(np.where(mech.constrained, np.abs(c), 0.0), axis=1) if mech.nj else np.zeros(0)
