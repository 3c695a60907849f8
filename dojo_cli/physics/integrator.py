"""Dojo's configuration update and its Jacobian (dojo_engine_notes.md 2.2).

x3 = x2 + h v25, q3 = q2 qmap(w25). Jacobians of quantities at z3 are taken
with respect to [x, t] per body (t a body-frame rotation increment at q3);
``chain_to_velocities`` turns them into Jacobians with respect to xi25 = (v25, w25):
dx3/dv25 = h I and dt3/dw25 = integrator_map_jacobian(w25).
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as quat


def next_configuration(x2, q2, v25, w25, h: float):
    """(x3 (nb,3), q3 (nb,4)) from the current configuration and midpoint velocities."""
    return x2 + h * v25, quat.multiply(q2, quat.integrator_map(w25, h))


def velocity_jacobians(w25: np.ndarray, h: float) -> np.ndarray:
    """dt3/dw25 per body with a zero block appended for the world, (nb+1, 3, 3)."""
    return np.concatenate([quat.integrator_map_jacobian(w25, h), np.zeros((1, 3, 3))])


def chain_to_velocities(jac: np.ndarray, a: np.ndarray, b: np.ndarray, mw_ext: np.ndarray, h: float) -> np.ndarray:
    """Chain Jacobians wrt [xa, ta, xb, tb] at z3 through dz3/dxi25.

    Args:
        jac: (m, 12) or (m, k, 12) Jacobians.
        a, b: (m,) body indices (nb = the world, whose block of ``mw_ext`` is zero).
        mw_ext: (nb+1, 3, 3) from velocity_jacobians.
        h: timestep.
    """
    out = np.empty_like(jac)
    out[..., 0:3] = h * jac[..., 0:3]
    out[..., 6:9] = h * jac[..., 6:9]
    if jac.ndim == 2:
        out[..., 3:6] = np.einsum("rk,rkj->rj", jac[:, 3:6], mw_ext[a])
        out[..., 9:12] = np.einsum("rk,rkj->rj", jac[:, 9:12], mw_ext[b])
    else:
        out[..., 3:6] = np.einsum("rik,rkj->rij", jac[..., 3:6], mw_ext[a])
        out[..., 9:12] = np.einsum("rik,rkj->rij", jac[..., 9:12], mw_ext[b])
    return out
