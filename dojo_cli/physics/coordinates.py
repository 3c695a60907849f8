"""Conversions between maximal and minimal states (dojo_engine_notes.md 3.7): the
Python face of the C++ core (dojo_cli/core/maximal/coordinates.h, where they are defined).

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

The conversions take leading batch axes (a trajectory's (T, 13 nb) states is one
call). Their exact Jacobians (analytic, one pass over the tree: the joint-space
Jacobians, core/maximal/coordinates.cpp) are ``_core.maximal_to_minimal_jacobian`` and
``_core.minimal_to_maximal_jacobian`` (simulation.gradients).
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.model.mechanism import Mechanism

# Parts of a body that minimal_to_maximal's body_overrides may replace, in the order of
# the core's override flags (core/maximal/coordinates.h OverridePart), with their slice of the
# 13 maximal numbers [x, v, q, w] of a body.
_OVERRIDE_PARTS = (
    ("position", slice(0, 3)),
    ("orientation", slice(6, 10)),
    ("velocity", slice(3, 6)),
    ("angular_velocity", slice(10, 13)),
)


def _floats(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def minimal_coordinates(mech: Mechanism, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Free coordinates (nf,) at the configuration (x (nb,3), q (nb,4)); leading axes batch."""
    return _core.minimal_coordinates(mech.core, _floats(x), _floats(q))


def minimal_velocities(mech: Mechanism, z: np.ndarray, instantaneous: bool = False) -> np.ndarray:
    """Free-coordinate velocities (nf,) of a maximal state (13 nb,); leading axes batch.

    By default z holds midpoint velocities (Dojo's state) and the result is the backward
    difference over the last interval; with ``instantaneous`` z holds velocities at its
    configuration's time (knot velocities) and the result is their exact image J(q) qdot.
    """
    if instantaneous:
        return _core.instantaneous_minimal_velocities(mech.core, _floats(z))
    return _core.minimal_velocities(mech.core, _floats(z))


def maximal_to_minimal(mech: Mechanism, z: np.ndarray) -> np.ndarray:
    """Minimal state (2 nf,) of a maximal state (13 nb,), per joint [coords; velocities].

    A batch of states (T, 13 nb) gives (T, 2 nf) in one call.
    """
    return _core.maximal_to_minimal(mech.core, _floats(z))


def interleave_minimal(mech: Mechanism, theta: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Per joint [theta_j; rate_j] from all coordinates (nf,) and all velocities (nf,)."""
    out = []
    for r in mech.joint_free_range:
        out.append(theta[r])
        out.append(rate[r])
    return np.concatenate(out) if out else np.zeros(0)


def split_minimal(mech: Mechanism, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of interleave_minimal: (coordinates (nf,), velocities (nf,))."""
    y = np.asarray(y, dtype=float).reshape(-1)
    if y.shape != (2 * mech.nf,):
        raise ValueError(f"minimal state must have {2 * mech.nf} entries, got {y.size}")
    theta, rate, k = [], [], 0
    for r in mech.joint_free_range:
        n = r.stop - r.start
        theta.append(y[k : k + n])
        rate.append(y[k + n : k + 2 * n])
        k += 2 * n
    return np.concatenate(theta) if theta else np.zeros(0), np.concatenate(rate) if rate else np.zeros(0)


def body_override_arrays(mech: Mechanism, body_overrides: dict | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The core's form of minimal_to_maximal's body_overrides.

    Returns:
        flags (nb, 4) bool [position, orientation, velocity, angular_velocity] and
        values (nb, 13) in the maximal layout, or (None, None) without overrides.
    """
    if not body_overrides:
        return None, None
    flags = np.zeros((mech.nb, len(_OVERRIDE_PARTS)), dtype=bool)
    values = np.zeros((mech.nb, 13))
    for b, parts in body_overrides.items():
        for k, (name, where) in enumerate(_OVERRIDE_PARTS):
            if parts.get(name) is not None:
                flags[b, k] = True
                values[b, where] = np.asarray(parts[name], dtype=float).reshape(-1)
    return flags, values


def minimal_to_maximal(
    mech: Mechanism, y: np.ndarray, z_base: np.ndarray | None = None, body_overrides: dict | None = None,
    instantaneous: bool = False,
) -> np.ndarray:
    """Maximal state (13 nb,) from a minimal state (2 nf,).

    Args:
        mech: the mechanism.
        y: (2 nf,) minimal state, per joint [coordinates; velocities] ((T, 2 nf) batches).
        z_base: unused bodies keep this state (default: all bodies at rest at
            the origin); every body reached by a tree joint is overwritten.
        body_overrides: {body index: {"position", "orientation", "velocity",
            "angular_velocity"}} maximal values (world frame; angular velocity in
            the body frame) that replace what the joint gives, applied as the
            tree is walked so that the body's descendants follow it.
        instantaneous: the rates in y and the overrides' velocities are velocities at
            the configuration's time, and so are the result's (the exact velocity map,
            core/maximal/coordinates.h; one state (2 nf,), no z_base). By default the result
            holds Dojo's midpoint velocities: differences of the poses at theta - h rate
            and at theta.
    """
    y = _floats(y)
    if y.shape[-1:] != (2 * mech.nf,):
        raise ValueError(f"minimal state must have {2 * mech.nf} entries, got {y.size}")
    flags, values = body_override_arrays(mech, body_overrides)
    if instantaneous:
        if z_base is not None:
            raise ValueError("instantaneous conversions take no z_base")
        return _core.minimal_to_maximal_instantaneous(mech.core, y, flags, values)
    base = None if z_base is None else _floats(z_base)
    return _core.minimal_to_maximal(mech.core, y, base, flags, values)


def constraint_violation(mech: Mechanism, z: np.ndarray) -> np.ndarray:
    """Largest constraint-row magnitude of each joint at the configuration of z, (nj,)."""
    return _core.constraint_violation(mech.core, _floats(z))
