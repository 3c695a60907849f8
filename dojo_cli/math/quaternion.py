"""Quaternions [w, x, y, z] (Hamilton product, body to world) and rotation helpers.

Every function accepts batches: leading dimensions broadcast, the last axis is
the quaternion (4) or vector (3). Perturbations of an orientation are always
*right* (body-frame) perturbations ``q -> q * exp(dtheta / 2)``, the convention
of Dojo's attitude Jacobian G(q) = L(q) V^T (dojo_engine_notes.md section 2).
"""

from __future__ import annotations

import numpy as np

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])

# Below this angle (rad) the series expansion replaces the closed form, whose
# division loses precision; the series error is O(angle^4) ~ 1e-24 there.
_SMALL_ANGLE = 1e-6


def _array(x) -> np.ndarray:
    """x as a float array."""
    return np.asarray(x, dtype=float)


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
    angle = np.linalg.norm(rv, axis=-1, keepdims=True)
    half = 0.5 * angle
    small = angle < _SMALL_ANGLE
    # sin(a/2)/a -> 1/2 - a^2/48 as a -> 0
    safe = np.where(small, 1.0, angle)
    k = np.where(small, 0.5 - angle**2 / 48.0, np.sin(half) / safe)
    return np.concatenate([np.cos(half), k * rv], axis=-1)
