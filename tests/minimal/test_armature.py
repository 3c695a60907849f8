"""Rotor inertia (``armature``, MuJoCo's): the kinetic energy 1/2 a theta_dot^2 of a joint
coordinate's rate, modelled in minimal coordinates (M += a on the coordinate's diagonal).

Oracles: the mass matrix without armature plus a; RNEA against ABA (two algorithms that add
the rotor separately: tau += a vdot and D_i += a); the pendulum's energy, rotor included,
conserved by RK4 to its order; its period against the exact one, 4 sqrt(I/(m g l)) K(sin
(theta0/2)), with I the pivot inertia plus a (scipy's elliptic integral); the refusals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ellipk

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.errors import SceneError
from dojo_cli.physics.energy import knot_mechanics

ARMATURE = 0.7  # kg m^2: twice the pendulum's own pivot inertia, so the rotor dominates
THETA0 = 0.1  # rad: the release angle
# RK4 at h = 1e-3 over 5 s: its energy error is ~1e-13 relative; roundoff leaves 1e-15
ENERGY_TOL = 1e-11
# The period from interpolated zero crossings (cubic between knots at h = 1e-3): ~1e-9 s
PERIOD_TOL = 1e-7
# Algorithms that agree to roundoff
ROUNDOFF = 1e-12


def _pendulum(**extra):
    overrides = {"joints.0.armature": ARMATURE, "integrator": "rk4", "timestep": 1e-3,
                 "joints.0.initial": {"position": [THETA0]}}
    overrides.update(extra)
    return dojo.load_scene("pendulum", overrides=overrides)


def test_mass_matrix_gains_the_armature_on_the_coordinates_diagonal():
    plain = minimal.build_model(dojo.load_scene("double_pendulum"))
    geared = minimal.build_model(dojo.load_scene("double_pendulum", overrides={
        "joints.1.armature": 0.3, "integrator": "rk4"}))
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = minimal.randn_state(plain, rng)
        difference = minimal.M_func(geared, x) - minimal.M_func(plain, x)
        np.testing.assert_allclose(difference, np.diag([0.0, 0.3]), rtol=0, atol=ROUNDOFF)


def test_inverse_dynamics_undoes_forward_dynamics_with_armature():
    mech = dojo.load_scene("double_pendulum", overrides={"joints.0.armature": 0.2, "joints.1.armature": 0.05,
                                                         "integrator": "rk4"})
    model = minimal.build_model(mech)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = minimal.randn_state(model, rng)
        tau = rng.standard_normal(model.nv)
        vdot = minimal.forward_dynamics(model, x, tau)
        np.testing.assert_allclose(minimal.inverse_dynamics(model, x, vdot), tau, rtol=0, atol=ROUNDOFF)
        # and M vdot + C = tau with the M that holds the armature
        np.testing.assert_allclose(minimal.M_func(model, x) @ vdot + minimal.C_func(model, x), tau, rtol=0, atol=ROUNDOFF)


def test_pendulum_with_armature_conserves_energy_including_the_rotors_and_keeps_the_exact_period():
    mech = _pendulum()
    traj = dojo.simulate(mech, steps=5000)
    mechanics = knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega)
    energy = mechanics.mechanical
    drift = float(np.max(np.abs(energy - energy[0])) / abs(energy[0]))
    assert drift < ENERGY_TOL, f"energy drift {drift:.2e} (rotor included)"
    # without the rotor's share the energy is not conserved: the term is really there
    rotor = 0.5 * ARMATURE * traj.minimal_v[:, 0] ** 2
    assert np.max(np.abs(energy - rotor - energy[0])) > 1e3 * ENERGY_TOL * abs(energy[0])

    link = mech.bodies[0]
    lever = float(np.linalg.norm(mech.joints[0].child_vertex))  # pivot to centre of mass
    pivot_inertia = float(link.inertia[0, 0]) + link.mass * lever**2
    g = float(np.linalg.norm(mech.gravity))
    exact = 4.0 * math.sqrt((pivot_inertia + ARMATURE) / (link.mass * g * lever)) * ellipk(math.sin(THETA0 / 2) ** 2)
    theta, t = traj.minimal_q[:, 0], traj.time
    changes = np.flatnonzero(np.sign(theta[:-1]) != np.sign(theta[1:]))
    crossings = []
    for k in changes:  # cubic through four knots around the crossing, its root
        window = slice(k - 1, k + 3)
        poly = np.polynomial.Polynomial.fit(t[window], theta[window], 3)
        roots = [r.real for r in poly.roots() if abs(r.imag) < 1e-12 and t[k] <= r.real <= t[k + 1]]
        crossings.append(roots[0])
    assert len(crossings) >= 2, f"crossings {crossings}"
    period = 2.0 * float(np.mean(np.diff(crossings)))  # zero crossings are half a period apart
    assert abs(period - exact) < PERIOD_TOL, f"period {period:.10f} s, exact {exact:.10f} s"


def test_armature_on_a_spherical_joint_is_refused_by_the_minimal_layer():
    mech = dojo.load_scene("spherical_chain", overrides={"joints.1.armature": 0.1, "integrator": "rk4"})
    with pytest.raises(SceneError, match=r"joints\.1\.armature: rotor inertia on the rotations of a spherical joint"):
        minimal.build_model(mech)
