"""Discrete Euler-Lagrange residual of each body (dojo_engine_notes.md 2.3).

With h the timestep, s = sqrt(4/h^2 - |w|^2), J the body-frame inertia:
- linear:  m (v25 - v15) - h (m g + F_ext)                              (world)
- angular: (h/2)[s25 J w25 + w25 x J w25] - (h/2)[s15 J w15 - w15 x J w15]
           - h tau_ext                                                   (body)
minus the impulses of joints, springs, dampers and inputs. The two bracketed
angular terms are the right and left discrete Legendre transforms; their
average is the body's momentum at time 2 (see physics.energy).
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math.quaternion import cross, skew
from dojo_cli.model.mechanism import Mechanism


def _half_s(w: np.ndarray, h: float) -> np.ndarray:
    sq = 4.0 / h**2 - np.sum(w * w, axis=-1)
    return np.sqrt(np.maximum(sq, 0.0))


def momentum_right(mech: Mechanism, v25: np.ndarray, w25: np.ndarray) -> np.ndarray:
    """[m v25; (h/2)(s25 J w25 + w25 x J w25)], (..., nb, 6): the next-interval side (leading axes broadcast)."""
    h = mech.timestep
    jw = np.einsum("bij,...bj->...bi", mech.inertia, w25)
    s = _half_s(w25, h)[..., None]
    return np.concatenate([mech.mass[:, None] * v25, 0.5 * h * (s * jw + cross(w25, jw))], axis=-1)


def momentum_left(mech: Mechanism, v15: np.ndarray, w15: np.ndarray) -> np.ndarray:
    """[m v15; (h/2)(s15 J w15 - w15 x J w15)], (..., nb, 6): the previous-interval side."""
    h = mech.timestep
    jw = np.einsum("bij,...bj->...bi", mech.inertia, w15)
    s = _half_s(w15, h)[..., None]
    return np.concatenate([mech.mass[:, None] * v15, 0.5 * h * (s * jw - cross(w15, jw))], axis=-1)


def momentum_right_jacobian(mech: Mechanism, w25: np.ndarray) -> np.ndarray:
    """d momentum_right / d [v25, w25], (nb, 6, 6) block-diagonal blocks.

    d/dw of (h/2)(s J w + w x J w) = (h/2)(s J - J w w^T / s + [w]x J - [J w]x).
    """
    h = mech.timestep
    nb = mech.nb
    out = np.zeros((nb, 6, 6))
    out[:, 0:3, 0:3] = mech.mass[:, None, None] * np.eye(3)
    jw = np.einsum("bij,bj->bi", mech.inertia, w25)
    s = _half_s(w25, h)[:, None, None]
    out[:, 3:6, 3:6] = 0.5 * h * (
        s * mech.inertia - jw[:, :, None] * w25[:, None, :] / s + skew(w25) @ mech.inertia - skew(jw)
    )
    return out


def momentum_left_jacobian(mech: Mechanism, w15: np.ndarray) -> np.ndarray:
    """d momentum_left / d [v15, w15], (nb, 6, 6) block-diagonal blocks.

    d/dw of (h/2)(s J w - w x J w) = (h/2)(s J - J w w^T / s - [w]x J + [J w]x).
    """
    h = mech.timestep
    nb = mech.nb
    out = np.zeros((nb, 6, 6))
    out[:, 0:3, 0:3] = mech.mass[:, None, None] * np.eye(3)
    jw = np.einsum("bij,bj->bi", mech.inertia, w15)
    s = _half_s(w15, h)[:, None, None]
    out[:, 3:6, 3:6] = 0.5 * h * (
        s * mech.inertia - jw[:, :, None] * w15[:, None, :] / s - skew(w15) @ mech.inertia + skew(jw)
    )
    return out


def momentum_inertia_derivative(mech: Mechanism, v15, w15, v25, w25) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of momentum_right - momentum_left with respect to mass and inertia.

    Returns:
        d/dm (nb, 6) and d/dJ (nb, 6, 6) with inertia columns (xx, yy, zz, xy, xz, yz)
        (a product of inertia moves both symmetric entries).
    """
    h = mech.timestep
    nb = mech.nb
    dm = np.zeros((nb, 6))
    dm[:, 0:3] = v25 - v15
    units = np.zeros((6, 3, 3))
    for k, (i, j) in enumerate(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))):
        units[k, i, j] = units[k, j, i] = 1.0
    s2 = _half_s(w25, h)[:, None, None]
    s1 = _half_s(w15, h)[:, None, None]
    ew2 = np.einsum("kij,bj->bki", units, w25)  # (nb, 6, 3): E_k w25
    ew1 = np.einsum("kij,bj->bki", units, w15)
    right = 0.5 * h * (s2 * ew2 + cross(w25[:, None, :], ew2))
    left = 0.5 * h * (s1 * ew1 - cross(w15[:, None, :], ew1))
    dj = np.zeros((nb, 6, 6))
    dj[:, 3:6, :] = np.swapaxes(right - left, 1, 2)
    return dm, dj
