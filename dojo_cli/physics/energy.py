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
from dojo_cli.model.mechanism import Mechanism


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
