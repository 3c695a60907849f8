"""Maximal state layout: per body [x (3), v (3), q (4), w (3)], 13 numbers.

x: centre-of-mass position, world frame; v: linear midpoint velocity, world
frame; q: orientation [w,x,y,z], body to world; w: angular midpoint velocity,
body frame (Dojo's ``pack_maximal_state``, dojo_engine_notes.md 2.1).
"""

from __future__ import annotations

import numpy as np

STATE_SIZE = 13


def unpack_maximal(z: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split a maximal state.

    Args:
        z: (13 nb,) maximal state.
        nb: number of bodies.

    Returns:
        x (nb,3), v (nb,3), q (nb,4), w (nb,3) (copies).
    """
    z = np.asarray(z, dtype=float)
    if z.shape != (STATE_SIZE * nb,):
        raise ValueError(f"maximal state must have shape ({STATE_SIZE * nb},), got {z.shape}")
    s = z.reshape(nb, STATE_SIZE)
    return s[:, 0:3].copy(), s[:, 3:6].copy(), s[:, 6:10].copy(), s[:, 10:13].copy()


def pack_maximal(x: np.ndarray, v: np.ndarray, q: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Inverse of unpack_maximal: (nb,3),(nb,3),(nb,4),(nb,3) -> (13 nb,)."""
    return np.concatenate([x, v, q, w], axis=1).reshape(-1)
