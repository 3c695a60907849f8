"""Rotations and transforms of the URDF importer, with the arithmetic of the libraries that
once computed them (scipy's ``Rotation``, yourdfpy's ``<origin>``), operation for operation:
imported scenes hold the same numbers to the bit as when those libraries parsed them, and
importing a URDF costs neither scipy.spatial (~0.5 s) nor yourdfpy.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.scene.importing.scene_data import plain_vector


# A rotation matrix whose rows are orthonormal to this is used as it is (else the nearest
# rotation, U V^T of its SVD, as scipy's Rotation.from_matrix does).
_ORTHOGONAL_TOL = 1e-12


def _quaternion_from_matrix(rot: np.ndarray) -> list[float]:
    """[w, x, y, z] of a rotation matrix, w >= 0; exact for the identity.

    Shepperd's method with the largest of (trace, diagonal) as pivot, the arithmetic of
    scipy's ``Rotation.from_matrix`` operation for operation (imported scenes hold the
    same numbers as when scipy computed them; scipy.spatial costs ~0.5 s to import, a
    third of a URDF scene's start-up).
    """
    m = np.asarray(rot, dtype=float)
    if np.allclose(m, np.eye(3), rtol=0.0, atol=1e-15):
        return [1.0, 0.0, 0.0, 0.0]
    if not np.all(np.isclose(m @ m.T, np.eye(3), atol=_ORTHOGONAL_TOL)):
        u, _, vt = np.linalg.svd(m)
        m = u @ vt
    m = m.tolist()
    trace = m[0][0] + m[1][1] + m[2][2]
    decision = [m[0][0], m[1][1], m[2][2], trace]
    choice = decision.index(max(decision))
    q = [0.0, 0.0, 0.0, 0.0]  # x, y, z, w
    if choice != 3:
        i, j, k = choice, (choice + 1) % 3, (choice + 2) % 3
        q[i] = 1 - trace + 2 * m[i][i]
        q[j] = m[j][i] + m[i][j]
        q[k] = m[k][i] + m[i][k]
        q[3] = m[k][j] - m[j][k]
    else:
        q = [m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1], 1 + trace]
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    x, y, z, w = (v / norm for v in q)
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    return [float(w), float(x), float(y), float(z)]


def _matrix_from_quaternion(q: list[float]) -> np.ndarray:
    """(3, 3) rotation of a quaternion [w, x, y, z] (normalised first), scipy's arithmetic."""
    w, x, y, z = (float(v) for v in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    return np.array([
        [x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
        [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
        [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2],
    ])


def _translation(t: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, 3] = t
    return out


def _pose(transform: np.ndarray) -> dict:
    """``position_offset`` and ``orientation_offset`` of a 4x4 transform."""
    return {"position_offset": plain_vector(transform[:3, 3]), "orientation_offset": _quaternion_from_matrix(transform[:3, :3])}


def _transform_from_xyz_rpy(xyz: np.ndarray, rpy: np.ndarray) -> np.ndarray:
    """(4, 4) transform of an ``<origin>``: translation ``xyz``, rotation Rz(yaw) Ry(pitch) Rx(roll).

    URDF's rpy are fixed-axis roll, pitch, yaw. The arithmetic is that of yourdfpy
    (trimesh's ``compose_matrix(translate, angles)`` with ``euler_matrix(..., "sxyz")``),
    operation for operation, so scenes imported before and after the parser changed
    hold the same numbers to the bit.
    """
    si, sj, sk = np.sin(rpy[0]), np.sin(rpy[1]), np.sin(rpy[2])
    ci, cj, ck = np.cos(rpy[0]), np.cos(rpy[1]), np.cos(rpy[2])
    cc, cs = ci * ck, ci * sk
    sc, ss = si * ck, si * sk
    rotation = np.eye(4)
    rotation[0, 0], rotation[0, 1], rotation[0, 2] = cj * ck, sj * sc - cs, sj * cc + ss
    rotation[1, 0], rotation[1, 1], rotation[1, 2] = cj * sk, sj * ss + cc, sj * cs - sc
    rotation[2, 0], rotation[2, 1], rotation[2, 2] = -sj, cj * si, cj * ci
    translation = np.identity(4)
    translation[:3, 3] = xyz
    out = np.dot(np.dot(np.identity(4), translation), rotation)
    out /= out[3, 3]
    return out
