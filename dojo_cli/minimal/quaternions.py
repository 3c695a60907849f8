"""PinnZoo's quaternion helpers (other_systems_notes.md 2.5), [w x y z], Hamilton, body to world.

Single vectors and matrices (no batches), as PinnZoo has them; the batched helpers
the rest of dojo_cli uses live in ``dojo_cli.math.quaternion``.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as _q

# Below this |q_v| quat_to_axis_angle returns 2 q_v (PinnZoo's tol): the closed form
# theta q_v/|q_v| divides by |q_v|, and 2 q_v is its limit to O(|q_v|^3).
AXIS_ANGLE_TOL = 1e-12


def skew(v) -> np.ndarray:
    """(3, 3) matrix with skew(v) @ x == cross(v, x)."""
    return _q.skew(np.asarray(v, dtype=float).reshape(3))


def L_mult(q) -> np.ndarray:  # noqa: N802 (PinnZoo's name)
    """(4, 4) left multiplication: q1 * q2 == L_mult(q1) @ q2."""
    s, v = float(q[0]), np.asarray(q[1:4], dtype=float)
    out = np.empty((4, 4))
    out[0, 0], out[0, 1:] = s, -v
    out[1:, 0], out[1:, 1:] = v, s * np.eye(3) + skew(v)
    return out


def R_mult(q) -> np.ndarray:  # noqa: N802
    """(4, 4) right multiplication: q1 * q2 == R_mult(q2) @ q1."""
    s, v = float(q[0]), np.asarray(q[1:4], dtype=float)
    out = np.empty((4, 4))
    out[0, 0], out[0, 1:] = s, -v
    out[1:, 0], out[1:, 1:] = v, s * np.eye(3) - skew(v)
    return out


def attitude_jacobian(q) -> np.ndarray:
    """G(q) (4, 3) with q' = 1/2 G(q) w, w in the body frame: L(q) [0; I]."""
    return L_mult(q)[:, 1:]


def quat_conjugate(q) -> np.ndarray:
    """[w, -x, -y, -z]."""
    q = np.asarray(q, dtype=float)
    return np.array([q[0], -q[1], -q[2], -q[3]])


def quat_to_rot(q) -> np.ndarray:
    """R (3, 3) = I + 2 s [v]x + 2 [v]x^2 (unit q; PinnZoo's formula)."""
    s, v = float(q[0]), np.asarray(q[1:4], dtype=float)
    vx = skew(v)
    return np.eye(3) + 2.0 * s * vx + 2.0 * vx @ vx


def rot_to_quat(R) -> np.ndarray:
    """Unit quaternion of an orthonormal R (3, 3), scalar part >= 0.

    Solves the four squared-component equations of R's trace and diagonal and takes
    the largest for the divisions (Shepperd's method; PinnZoo's newer index uses the
    Rotations.jl equivalent), then normalises.
    """
    R = np.asarray(R, dtype=float)
    t = np.trace(R)
    cands = np.array([1.0 + t, 1.0 + 2.0 * R[0, 0] - t, 1.0 + 2.0 * R[1, 1] - t, 1.0 + 2.0 * R[2, 2] - t])
    k = int(np.argmax(cands))
    r = np.sqrt(cands[k])
    if k == 0:
        q = np.array([r, (R[2, 1] - R[1, 2]) / r, (R[0, 2] - R[2, 0]) / r, (R[1, 0] - R[0, 1]) / r])
    elif k == 1:
        q = np.array([(R[2, 1] - R[1, 2]) / r, r, (R[0, 1] + R[1, 0]) / r, (R[0, 2] + R[2, 0]) / r])
    elif k == 2:
        q = np.array([(R[0, 2] - R[2, 0]) / r, (R[0, 1] + R[1, 0]) / r, r, (R[1, 2] + R[2, 1]) / r])
    else:
        q = np.array([(R[1, 0] - R[0, 1]) / r, (R[0, 2] + R[2, 0]) / r, (R[1, 2] + R[2, 1]) / r, r])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def quat_to_axis_angle(q, tol: float = AXIS_ANGLE_TOL) -> np.ndarray:
    """Axis-angle theta a, theta = 2 atan2(|q_v|, q_w) (no sign canonicalisation: q_w < 0
    gives theta in (pi, 2 pi), as PinnZoo); 2 q_v below tol."""
    q = np.asarray(q, dtype=float)
    v = q[1:4]
    n = float(np.linalg.norm(v))
    if n < tol:
        return 2.0 * v
    return 2.0 * np.arctan2(n, q[0]) * v / n


def axis_angle_to_quat(w) -> np.ndarray:
    """[cos(|w|/2); w sin(|w|/2)/|w|] (the exp map)."""
    return _q.quaternion_from_rotation_vector(np.asarray(w, dtype=float).reshape(3))
