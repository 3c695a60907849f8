"""Kinetic, potential and mechanical energy, linear and angular momentum: the Python
face of the C++ core (dojo_cli/core/maximal/energy.h, where they are defined; notes 7.2).

Dojo defines the momentum at time k by the discrete Legendre transform of the
step that leaves k, minus half of that step's impulses (notes 7.2). Since the
step's residual is zero, that equals the average of the two one-sided
transforms, which needs only the stored midpoint velocities into and out of k:
    p_k = m (v[k] + v[k+1]) / 2                                     (world)
    L_k = (h/4)[s+ J w+ + w+ x J w+ + s- J w- - w- x J w-]          (body)
with w- = omega[k], w+ = omega[k+1], s = sqrt(4/h^2 - |w|^2). So energy and
momentum are defined for the states 0..T-1 of a trajectory of T steps (the
last state has no outgoing step), and can be computed from a storage file.
Kinetic energy is sum |p|^2/(2m) + L^T J^-1 L / 2; potential energy is
-sum m g.x plus 1/2 k (theta - theta0)^2 for every joint spring.
Angular momentum is about the world origin: sum R(q) L + x x p.
Each function is one core call over the whole trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.model.mechanism import ORIGIN, Mechanism


@dataclass
class Mechanics:
    """Per-state mechanics of a trajectory (arrays over states k = 0..T-1).

    Attributes:
        time: (T,) s.
        kinetic, potential, mechanical: (T,) J.
        linear_momentum: (T,3) kg m/s, world.
        angular_momentum: (T,3) kg m^2/s, world, about the origin.
    """

    time: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    mechanical: np.ndarray
    linear_momentum: np.ndarray
    angular_momentum: np.ndarray


def _floats(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float)


def body_momenta(mech: Mechanism, v: np.ndarray, omega: np.ndarray):
    """Per-body momenta at states 0..T-1.

    Args:
        v: (T+1, nb, 3) midpoint linear velocities (world).
        omega: (T+1, nb, 3) midpoint angular velocities (body).

    Returns:
        p (T, nb, 3) world linear momenta, l (T, nb, 3) body-frame angular momenta.
    """
    return _core.body_momenta(mech.core, _floats(v), _floats(omega))


def kinetic_energy(mech: Mechanism, v: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """(T,) kinetic energy of states 0..T-1 from midpoint velocities (T+1, nb, 3)."""
    return _core.kinetic_energy(mech.core, _floats(v), _floats(omega))


def potential_energy(mech: Mechanism, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(T,) gravity and spring potential of configurations x (T,nb,3), q (T,nb,4)."""
    return _core.potential_energy(mech.core, _floats(x), _floats(q))


def linear_momentum(mech: Mechanism, v: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """(T,3) total linear momentum, world frame."""
    return _core.linear_momentum(mech.core, _floats(v), _floats(omega))


def angular_momentum(mech: Mechanism, x: np.ndarray, q: np.ndarray, v: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """(T,3) total angular momentum about the world origin, world frame.

    Args:
        x: (T+1 or T, nb, 3), q: (T+1 or T, nb, 4) configurations (the first T are used).
        v, omega: (T+1, nb, 3) midpoint velocities.
    """
    return _core.angular_momentum(mech.core, _floats(x), _floats(q), _floats(v), _floats(omega))


def mechanics(mech: Mechanism, time, x, q, v, omega) -> Mechanics:
    """All mechanics of a trajectory with T+1 states (T steps); results have T entries."""
    T = np.shape(v)[0] - 1
    kin, pot, lin, ang = _core.mechanics(mech.core, _floats(x), _floats(q), _floats(v), _floats(omega))
    return Mechanics(
        time=np.asarray(time)[:T],
        kinetic=kin,
        potential=pot,
        mechanical=kin + pot,
        linear_momentum=lin,
        angular_momentum=ang,
    )


def knot_velocities(mech: Mechanism, x, q, v_mid, omega_mid, extrapolate_last: bool = False):
    """Velocities at the knot times t_k from the integrator's midpoint velocities.

    v_k = p_k / m, omega_k = J^-1 L_k with p_k, L_k the knot momenta above (the average
    of the discrete Legendre transforms on both sides of k): second-order accurate
    (docs/physics.md, "Velocities at t0 and at the knots").

    Args:
        x: (n, nb, 3), q: (n, nb, 4) configurations of the n knots.
        v_mid, omega_mid: (n + 1, nb, 3) midpoint velocities into knots 0..n (the last:
            into the state after the n-th), or (n, nb, 3) with ``extrapolate_last``: the
            last knot's outgoing step is then taken to have the previous step's impulses.

    Returns:
        v (n, nb, 3) world, omega (n, nb, 3) body frame, minimal_v (n, nf): the free
        coordinates' rates at the knots (the exact map J(q) [v; omega]).
    """
    v, omega = _core.knot_velocities(mech.core, _floats(v_mid), _floats(omega_mid), bool(extrapolate_last))
    x, q = np.asarray(x, dtype=float), np.asarray(q, dtype=float)
    n = len(v)
    z = np.concatenate([x.reshape(n, mech.nb, 3), v, q.reshape(n, mech.nb, 4), omega], axis=2).reshape(n, 13 * mech.nb)
    rates = _core.instantaneous_minimal_velocities(mech.core, _floats(z))
    return v, omega, np.asarray(rates).reshape(n, mech.nf)


def knot_momenta(mech: Mechanism, q, v, omega) -> tuple[np.ndarray, np.ndarray]:
    """Dojo's Storage.px and Storage.pq: each body's momenta at the knots, world frame.

    The knot momenta knot_velocities divides by the inertia (core/maximal/energy.h
    knot_momenta): px = m v, the linear momentum, and pq = R(q) J omega, the angular
    momentum about the body's centre of mass, both in the world frame as Dojo stores them.
    Where a contact acts at the knot, half its impulse counts on each side here, while
    Dojo's momentum.jl leaves contact impulses out of that half.

    Args:
        q: (n, nb, 4) orientations [w, x, y, z], body to world, at the knots.
        v: (n, nb, 3) linear velocities at the knots, world frame.
        omega: (n, nb, 3) angular velocities at the knots, body frame.

    Returns:
        px (n, nb, 3), pq (n, nb, 3), world frame.
    """
    v = np.asarray(v, dtype=float).reshape(-1, mech.nb, 3)
    if len(v) == 0:
        return np.zeros((0, mech.nb, 3)), np.zeros((0, mech.nb, 3))
    px, pq = _core.knot_momenta(mech.core, _floats(np.asarray(q, dtype=float).reshape(-1, mech.nb, 4)), _floats(v),
                                _floats(np.asarray(omega, dtype=float).reshape(-1, mech.nb, 3)))
    return np.asarray(px), np.asarray(pq)


def rotor_energy(mech: Mechanism, minimal_v) -> np.ndarray:
    """(n,) kinetic energy of the joints' rotor inertia, sum_f 1/2 a_f theta_dot_f^2, from the
    free coordinates' rates minimal_v (n, nf) (zeros without armature)."""
    rates = np.asarray(minimal_v, dtype=float).reshape(-1, mech.nf)
    return 0.5 * (rates * rates) @ np.asarray(mech.armature, dtype=float)


def knot_mechanics(mech: Mechanism, time, x, q, v, omega) -> Mechanics:
    """All mechanics of n states whose velocities are at the knots (a knot storage file's
    v, omega (n, nb, 3)): p = m v, L = J omega; results have n entries. The kinetic
    energy includes the rotor inertia's (rotor_energy) at the coordinates' rates."""
    kin, pot, lin, ang = _core.knot_mechanics(mech.core, _floats(x), _floats(q), _floats(v), _floats(omega))
    if mech.has_armature:
        n = len(kin)
        z = np.concatenate([np.asarray(x, float).reshape(-1, mech.nb, 3)[:n], np.asarray(v, float).reshape(-1, mech.nb, 3)[:n],
                            np.asarray(q, float).reshape(-1, mech.nb, 4)[:n], np.asarray(omega, float).reshape(-1, mech.nb, 3)[:n]],
                           axis=2).reshape(n, 13 * mech.nb)
        rates = np.asarray(_core.instantaneous_minimal_velocities(mech.core, _floats(z))).reshape(n, mech.nf)
        kin = np.asarray(kin) + rotor_energy(mech, rates)
    return Mechanics(
        time=np.asarray(time)[: len(kin)],
        kinetic=kin,
        potential=pot,
        mechanical=kin + pot,
        linear_momentum=lin,
        angular_momentum=ang,
    )


# a gravity component below this (m/s^2) is taken as absent when deciding what is conserved
GRAVITY_ZERO = 1e-12


@dataclass
class Conservation:
    """Which of a scene's mechanics are conserved, decided from the mechanism's content.

    Attributes:
        energy: mechanical energy is conserved (no damper, input, external force, contact
            or joint limit: springs and gravity are in the potential).
        energy_reason: why not ("" when conserved).
        linear, angular: (3, k) orthonormal world directions along which the linear momentum
            and the angular momentum about the origin are conserved (k = 0: none).
        momentum_reason: why neither is conserved at all ("" otherwise).
    """

    energy: bool
    energy_reason: str
    linear: np.ndarray
    angular: np.ndarray
    momentum_reason: str


def _world_acts(mech: Mechanism) -> bool:
    """A joint to the world exerts a force on its child: it constrains a direction, is locked,
    or has a spring, damper or limit on a coordinate (a floating base joint has none of these)."""
    free_joint = np.asarray(mech.free_joint, dtype=int)
    pushed = np.asarray(mech.spring) != 0
    pushed |= np.asarray(mech.damper) != 0
    pushed[np.asarray(mech.limit_free, dtype=int)] = True
    for i in np.flatnonzero(np.asarray(mech.parent) == ORIGIN):
        if np.any(mech.constrained[i]) or mech.locked[i] or np.any(pushed[free_joint == i]):
            return True
    return False


def conservation(mech: Mechanism, inputs=None) -> Conservation:
    """What the equations of motion conserve for this mechanism (and its applied ``inputs``,
    (T, nu), or None for none).

    Energy: the Lagrangian is time invariant and only dampers, inputs, external forces and
    contact or limit impulses do work outside the potential. Momentum (Noether): a joint to
    the world, a contact, an input or an external force acts from outside; otherwise only
    gravity does, whose force m g has no component across g (linear momentum conserved
    perpendicular to g) and whose torque about the origin, sum x_i x m_i g, has none along g
    (angular momentum conserved along g). Without gravity both are conserved in full.
    """
    driven = inputs is not None and np.size(inputs) and bool(np.any(np.asarray(inputs) != 0))
    external = bool(getattr(mech, "external", None))
    energy_causes = [name for name, present in (
        ("joint damping", bool(np.any(np.asarray(mech.damper) != 0))),
        ("inputs", driven),
        ("external forces", external),
        ("contacts", mech.nc > 0),
        ("joint limits", mech.nlim > 0),
    ) if present]
    momentum_causes = [name for name, present in (
        ("a joint to the world", _world_acts(mech)),
        ("contacts", mech.nc > 0),
        ("inputs", driven),
        ("external forces", external),
    ) if present]
    g = np.asarray(mech.gravity, dtype=float)
    if momentum_causes:
        linear = angular = np.zeros((3, 0))
    elif np.linalg.norm(g) < GRAVITY_ZERO:
        linear = angular = np.eye(3)
    else:
        # full SVD: the last two right singular vectors span the plane perpendicular to g
        basis = np.linalg.svd(g[None, :])[2]
        linear = basis[1:].T
        angular = (g / np.linalg.norm(g))[:, None]
    return Conservation(
        energy=not energy_causes,
        energy_reason=", ".join(energy_causes),
        linear=linear,
        angular=angular,
        momentum_reason=", ".join(momentum_causes),
    )
