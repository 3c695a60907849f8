"""Quaternions [w, x, y, z] (Hamilton product, body to world) and rotation helpers.

Every function accepts batches: leading dimensions broadcast, the last axis is
the quaternion (4) or vector (3). Perturbations of an orientation are always
*right* (body-frame) perturbations ``q -> q * exp(dtheta / 2)``, the convention
of Dojo's attitude Jacobian G(q) = L(q) V^T (dojo_engine_notes.md section 2).
"""

from __future__ import annotations

import numpy as np

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])

# Below this angle (rad) the series expansions replace the closed forms, whose
# divisions lose precision; the series error is O(angle^4) ~ 1e-24 there.
_SMALL_ANGLE = 1e-6


def _array(x) -> np.ndarray:
    """x as a float array, or complex if it is complex.

    The joint kinematics are differentiated a second time by the complex step
    (simulation.gradients), so the functions it uses keep complex inputs complex:
    they avoid abs, norm and arctan2, which are not complex-analytic.
    """
    x = np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(float)


def _norm(v: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """Euclidean norm over the last axis as sqrt(v . v) (complex-analytic, unlike np.linalg.norm)."""
    return np.sqrt(np.sum(v * v, axis=-1, keepdims=keepdims))


def _atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """arctan2 for y >= 0, complex-analytic: branches chosen on the real parts."""
    if not (np.iscomplexobj(y) or np.iscomplexobj(x)):
        return np.arctan2(y, x)
    yr, xr = y.real, x.real
    flat = np.abs(xr) >= np.abs(yr)  # |y/x| <= 1: atan(y/x) (+ pi when x < 0)
    safe_x = np.where(flat, x, 1.0)
    safe_y = np.where(flat, 1.0, y)
    near = np.arctan(y / safe_x) + np.where(xr < 0, np.pi, 0.0)
    steep = np.pi / 2 - np.arctan(x / safe_y)
    return np.where(flat, near, steep)


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix: skew(a) @ b == cross(a, b).

    Args:
        v: (..., 3) vectors.

    Returns:
        (..., 3, 3) skew-symmetric matrices.
    """
    v = _array(v)
    out = np.zeros(v.shape[:-1] + (3, 3), dtype=v.dtype)
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


# Levi-Civita symbol: cross(a, b)_k = sum_ij a_i b_j EPS_ijk.
_EPS = np.zeros((3, 3, 3))
_EPS[0, 1, 2] = _EPS[1, 2, 0] = _EPS[2, 0, 1] = 1.0
_EPS[0, 2, 1] = _EPS[2, 1, 0] = _EPS[1, 0, 2] = -1.0


def _hamilton_tensor() -> np.ndarray:
    """H with (p * q)_k = sum_ij p_i q_j H_ijk (the Hamilton product is bilinear)."""
    h = np.zeros((4, 4, 4))
    h[0, 0, 0] = 1.0
    for i in range(1, 4):
        h[i, i, 0] = -1.0  # -pv . qv
        h[0, i, i] = 1.0  # pw qv
        h[i, 0, i] = 1.0  # qw pv
    h[1:, 1:, 1:] = _EPS  # pv x qv
    return h


_HAMILTON = _hamilton_tensor()


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b over the last axis (..., 3), as one contraction (numpy's cross spends
    most of its time on axis bookkeeping for small batches)."""
    return np.einsum("...i,...j,ijk->...k", a, b, _EPS)


def multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product p * q.

    Args:
        p: (..., 4) quaternions [w, x, y, z].
        q: (..., 4) quaternions [w, x, y, z].

    Returns:
        (..., 4) product.
    """
    return np.einsum("...i,...j,ijk->...k", p, q, _HAMILTON)


def conjugate(q: np.ndarray) -> np.ndarray:
    """Conjugate (= inverse for unit quaternions), (..., 4)."""
    return _array(q) * np.array([1.0, -1.0, -1.0, -1.0])


def normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternion(s) along q, (..., 4)."""
    q = np.asarray(q, dtype=float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _rotation_tensor() -> np.ndarray:
    """C with R(q)_kl = sum_ij q_i q_j C_ijkl for unit q (R is quadratic in q)."""
    c = np.zeros((4, 4, 3, 3))
    w, x, y, z = range(4)
    entries = {
        (0, 0): [(w, w, 1), (x, x, 1), (y, y, -1), (z, z, -1)],
        (0, 1): [(x, y, 2), (w, z, -2)],
        (0, 2): [(x, z, 2), (w, y, 2)],
        (1, 0): [(x, y, 2), (w, z, 2)],
        (1, 1): [(w, w, 1), (x, x, -1), (y, y, 1), (z, z, -1)],
        (1, 2): [(y, z, 2), (w, x, -2)],
        (2, 0): [(x, z, 2), (w, y, -2)],
        (2, 1): [(y, z, 2), (w, x, 2)],
        (2, 2): [(w, w, 1), (x, x, -1), (y, y, -1), (z, z, 1)],
    }
    for (row, col), terms in entries.items():
        for i, j, coef in terms:
            c[i, j, row, col] += coef
    return c


_ROTATION_TENSOR = _rotation_tensor()


def matrix_from_quaternion(q: np.ndarray) -> np.ndarray:
    """Rotation matrix R(q) (body to world) of unit quaternions.

    Args:
        q: (..., 4) unit quaternions [w, x, y, z].

    Returns:
        (..., 3, 3) rotation matrices.
    """
    q = _array(q)
    outer = q[..., :, None] * q[..., None, :]
    return np.tensordot(outer, _ROTATION_TENSOR, axes=([-2, -1], [0, 1]))


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R(q) @ v for batches, (..., 3)."""
    return np.einsum("...ij,...j->...i", matrix_from_quaternion(q), v)


def quaternion_from_rotation_vector(rv: np.ndarray) -> np.ndarray:
    """exp map: the unit quaternion rotating by |rv| about rv / |rv|.

    Args:
        rv: (..., 3) rotation vectors (rad).

    Returns:
        (..., 4) unit quaternions, scalar part cos(|rv|/2).
    """
    rv = _array(rv)
    angle = _norm(rv, keepdims=True)
    half = 0.5 * angle
    small = angle.real < _SMALL_ANGLE
    # sin(a/2)/a -> 1/2 - a^2/48 as a -> 0
    safe = np.where(small, 1.0, angle)
    k = np.where(small, 0.5 - angle**2 / 48.0, np.sin(half) / safe)
    return np.concatenate([np.cos(half), k * rv], axis=-1)


def rotation_vector_from_quaternion(q: np.ndarray) -> np.ndarray:
    """log map: angle * axis with angle = 2 atan2(|vec|, w) in [0, 2 pi).

    No sign canonicalisation (q and -q give angles a and 2 pi - a), as in Dojo's
    ``rotation_vector`` (MRP-based, angle = 4 atan(|m|)).

    Args:
        q: (..., 4) unit quaternions.

    Returns:
        (..., 3) rotation vectors.
    """
    q = _array(q)
    v = q[..., 1:]
    s = _norm(v, keepdims=True)
    w = q[..., :1]
    angle = 2.0 * _atan2(s, w)
    small = s.real < _SMALL_ANGLE
    safe = np.where(small, 1.0, s)
    # angle / s -> 2 / w as s -> 0 (|w| -> 1 for unit q; for w -> -1 the axis is
    # undefined and this picks the short rotation)
    k = np.where(small, 2.0 / w, angle / safe)
    return k * v


def right_jacobian_inverse(rv: np.ndarray) -> np.ndarray:
    """d(log(exp(rv) * exp(d)))/dd at d = 0: the inverse right Jacobian of SO(3).

    Maps a body-frame rotation increment of exp(rv) to the change of its rotation
    vector: J_r^-1(t) = I + [t]/2 + (1/a^2 - cot(a/2)/(2a)) [t]^2, a = |t|
    (Barfoot, State Estimation for Robotics, eq. 7.187 with the right convention).

    Args:
        rv: (..., 3) rotation vectors.

    Returns:
        (..., 3, 3) matrices.
    """
    rv = _array(rv)
    a = _norm(rv)
    small = a.real < 1e-4
    safe = np.where(small, 1.0, a)
    coef = np.where(small, 1.0 / 12.0 + a**2 / 720.0, 1.0 / safe**2 - 1.0 / (2.0 * safe * np.tan(safe / 2.0)))
    k = skew(rv)
    return np.eye(3) + 0.5 * k + coef[..., None, None] * (k @ k)


def integrator_map(w: np.ndarray, h: float) -> np.ndarray:
    """Dojo's orientation increment qmap(w) = (h/2) [sqrt(4/h^2 - |w|^2), w].

    q3 = q2 * qmap(w25) (dojo_engine_notes.md 2.2); unit for |w| <= 2/h and a
    rotation by 2 asin(h |w| / 2) about w.

    Args:
        w: (..., 3) body-frame angular velocities (rad/s), |w| < 2/h.
        h: timestep (s).

    Returns:
        (..., 4) unit quaternions.
    """
    w = _array(w)
    s = np.sqrt(4.0 / h**2 - np.sum(w * w, axis=-1, keepdims=True))
    return 0.5 * h * np.concatenate([s, w], axis=-1)


def integrator_map_jacobian(w: np.ndarray, h: float) -> np.ndarray:
    """Body-frame tangent of q2 * qmap(w) with respect to w.

    d theta3 / d w where q3(w + dw) = q3(w) * exp(dtheta3 / 2): with
    p = qmap(w) and s = sqrt(4/h^2 - |w|^2), dtheta3/dw = 2 Vec(p* dp/dw)
    = (h^2 / 2) (s I + w w^T / s - [w]x). Equal to h I at w = 0.

    Args:
        w: (..., 3) angular velocities.
        h: timestep.

    Returns:
        (..., 3, 3) Jacobians.
    """
    w = np.asarray(w, dtype=float)
    s = np.sqrt(4.0 / h**2 - np.sum(w * w, axis=-1))
    outer = w[..., :, None] * w[..., None, :]
    return 0.5 * h**2 * (s[..., None, None] * np.eye(3) + outer / s[..., None, None] - skew(w))


def angular_velocity(q1: np.ndarray, q2: np.ndarray, h: float) -> np.ndarray:
    """The w with q2 = q1 * qmap(w): (2/h) Vec(q1* q2), (..., 3)."""
    return (2.0 / h) * multiply(conjugate(q1), q2)[..., 1:]
