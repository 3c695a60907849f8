"""Rotations of the MJCF importer: MuJoCo's frame conventions (an axis and angle, a quaternion
[w, x, y, z]) as matrices and back, and a ball or free joint's quaternion as the rotation
vector the scene's spherical and floating joints use.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.scene.importing.rotations import rotation_about


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    a = np.asarray(axis, float)
    return rotation_about(a / np.linalg.norm(a), angle)


def _matrix_from_quaternion(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _quaternion_from_matrix(rot: np.ndarray) -> list[float]:
    """[w, x, y, z], w >= 0 (Shepperd's method); exact for the identity."""
    r = np.asarray(rot, float)
    if np.allclose(r, np.eye(3), rtol=0.0, atol=1e-15):
        return [1.0, 0.0, 0.0, 0.0]
    t = np.trace(r)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = [0.0] * 4
        q[0] = (r[k, j] - r[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + k] = (r[k, i] + r[i, k]) / s
    q = np.asarray(q) / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    return [float(v) + 0.0 for v in q]


def rotation_vector_from_quaternion(q: np.ndarray) -> np.ndarray:
    """(3,) rotation vector (axis times angle, angle in [0, pi]) of a quaternion [w, x, y, z]."""
    q = np.asarray(q, float) / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return 2.0 * q[1:]
    return 2.0 * math.atan2(s, q[0]) * q[1:] / s


def _quaternion_multiply(a, b) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
