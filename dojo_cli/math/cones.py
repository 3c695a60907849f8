"""Second-order-cone algebra (the Jordan algebra of the Lorentz cone, dimension 3).

cone_product(u, w) = (u.w, u0 w[1:] + w0 u[1:]); arrow(u) is its matrix in w, so
arrow(u) @ w = cone_product(u, w). The complementarity of a pair in the cone is
cone_product(u, w) = 0 (Dojo's ``cone_product`` and ``cone_product_jacobian``,
dojo_engine_notes.md 4.2).
"""

from __future__ import annotations

import numpy as np


def cone_product(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(u.w, u0 w[1:] + w0 u[1:]) over the last axis, (..., 3)."""
    return np.concatenate(
        [np.sum(u * w, axis=-1, keepdims=True), u[..., :1] * w[..., 1:] + w[..., :1] * u[..., 1:]], axis=-1
    )


def arrow(u: np.ndarray) -> np.ndarray:
    """Arrow matrices [[u0, u1, u2], [u1, u0, 0], [u2, 0, u0]], (..., 3, 3)."""
    out = np.zeros(u.shape[:-1] + (3, 3))
    out[..., 0, :] = u
    out[..., 1, 0] = u[..., 1]
    out[..., 2, 0] = u[..., 2]
    out[..., 1, 1] = out[..., 2, 2] = u[..., 0]
    return out
