"""Actuators in the maximal (variational) step (issue 14 item 2): a body actuator's force and
torque are fixed in the body frame, so they turn with it.

- analytic motions of a free body in zero gravity: a constant body-frame thrust with no
  torque moves it along a straight line with acceleration F/m (the discrete solution is the
  exact parabola); a body-frame torque about a principal axis spins it up at tau / I (the
  discrete solution is Dojo's, sin(step angle) growing by h^2 tau / I per step, and the
  continuous one to O(h^2)); a thrust on a spinning body turns with it (the continuous
  circle-like path, second order in h);
- gradients with respect to state and inputs against finite differences (joint actuators
  with gains, forces at points off the centre of mass, torques, one actuator with both);
- the quadrotor hovers with u = m g / (4 kf) per rotor.
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import ORIGIN, Actuator, Body, Joint, Mechanism
from dojo_cli.model.controller import ConstantController
from tests.simulation.test_gradients import TOL, check_state_and_input

TIGHT = dojo.SolverOptions(rtol=1e-13, btol=1e-13, max_iter=100)
INERTIA = np.diag([0.1, 0.2, 0.3])
MASS = 2.0


def _free_body(actuators, h=0.01):
    body = Body("hull", MASS, INERTIA)
    return Mechanism([body], [Joint("base", "floating", ORIGIN, 0)], h, (0, 0, 0), name="hull", actuators=actuators)


def _state(q=(1.0, 0, 0, 0), v15=(0, 0, 0), w15=(0, 0, 0)):
    return np.concatenate([np.zeros(3), v15, np.asarray(q, float) / np.linalg.norm(q), w15])


def _run(mech, z0, u, steps):
    return dojo.simulate(mech, steps=steps, z0=z0, controller=ConstantController(np.asarray(u, float)), opts=TIGHT)


def test_body_thrust_without_torque_is_a_straight_line_at_f_over_m():
    h, steps = 0.01, 200
    mech = _free_body([Actuator("thrust", body=0, force=np.array([1.0, 0, 0]), point=np.zeros(3), gain=3.0)], h)
    q0 = np.array([0.9, 0.2, -0.3, 0.25]) / np.linalg.norm([0.9, 0.2, -0.3, 0.25])
    u = 1.5
    a = quat.matrix_from_quaternion(q0) @ np.array([3.0 * u, 0, 0]) / MASS  # world acceleration
    # midpoint velocity -h a / 2 over [-h, 0]: v(0) = 0, and the discrete path is x = a t^2 / 2
    traj = _run(mech, _state(q0, v15=-0.5 * h * a), [u], steps)
    t = traj.time
    np.testing.assert_allclose(traj.x[:, 0], 0.5 * np.outer(t**2, a), rtol=0, atol=1e-11 * np.abs(a).max() * t[-1] ** 2)
    np.testing.assert_allclose(traj.q[:, 0], np.tile(q0, (steps + 1, 1)), atol=1e-13)  # no torque: no rotation


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_body_torque_about_a_principal_axis_spins_at_tau_over_i(axis):
    h, steps, tau = 0.01, 100, 0.05
    direction = np.eye(3)[axis]
    mech = _free_body([Actuator("yaw", body=0, torque=direction)], h)
    q0 = np.array([1.0, 0, 0, 0])
    traj = _run(mech, _state(q0), [tau], steps)
    alpha = tau / INERTIA[axis, axis]
    # the rotation stays about the axis; its angle from the orientations
    rel = traj.q[:, 0]
    angle = 2 * np.arctan2(rel[:, 1 + axis], rel[:, 0])
    others = np.delete(rel[:, 1:], axis, axis=1)
    assert np.abs(others).max() < 1e-13
    # Dojo's discrete momentum about a principal axis is I sin(step angle) / h, and the
    # impulse h tau adds h^2 tau / I to sin(step angle) each step (from rest)
    k = np.arange(steps)
    discrete = np.concatenate([[0.0], np.cumsum(np.arcsin((k + 1) * h * h * alpha))])
    np.testing.assert_allclose(angle, discrete, rtol=0, atol=1e-11)
    # and the continuous solution theta = alpha t^2 / 2, omega = alpha t to O(h)
    t = traj.time
    assert np.abs(angle - 0.5 * alpha * t**2).max() <= alpha * h * t[-1]
    omega = traj.omega[:, 0, axis]
    assert np.abs(omega - alpha * t).max() <= 2 * alpha * h


def _spinning_thrust_error(h):
    """A body spinning at Omega about its principal z axis with a body-frame thrust F along
    body x: the world force turns, F (cos Omega t, sin Omega t, 0), and from rest at the origin
    x(t) = F / (m Omega) ((1 - cos Omega t) / Omega, t - sin(Omega t) / Omega, 0)."""
    force, omega, T = 0.8, 3.0, 1.0
    steps = int(round(T / h))
    mech = _free_body([Actuator("thrust", body=0, force=np.array([1.0, 0, 0]))], h)
    c = force / (MASS * omega)
    s = -0.5 * h  # the midpoint of [-h, 0]
    v15 = c * np.array([np.sin(omega * s), 1 - np.cos(omega * s), 0.0])
    # spinning about z: the step's rotation angle 2 asin(h w / 2) = Omega h
    w = 2.0 * np.sin(0.5 * omega * h) / h
    traj = _run(mech, _state(v15=v15, w15=(0, 0, w)), [force], steps)
    t = traj.time
    exact = c * np.stack([(1 - np.cos(omega * t)) / omega, t - np.sin(omega * t) / omega, 0 * t], axis=1)
    return np.abs(traj.x[:, 0] - exact).max() / (c * T)


def test_body_thrust_turns_with_the_spinning_body_second_order():
    e1, e2 = _spinning_thrust_error(0.01), _spinning_thrust_error(0.005)
    assert e1 < 1e-4, e1
    assert e2 < 0.3 * e1, (e1, e2)  # O(h^2): halving h quarters the error


def _hull_and_flap():
    """A floating hull with a hinged flap; actuators of every kind, one with force and torque."""
    bodies = [Body("hull", 2.0, np.diag([0.1, 0.2, 0.3])), Body("flap", 0.5, np.diag([0.01, 0.02, 0.015]))]
    joints = [Joint("base", "floating", ORIGIN, 0),
              Joint("hinge", "revolute", 0, 1, axis=np.array([0, 0, 1.0]), parent_vertex=np.array([0.3, 0, 0]),
                    child_vertex=np.array([-0.1, 0, 0]))]
    actuators = [
        Actuator("hinge", joint=1, coordinate=0, gain=2.0),
        Actuator("thrust", body=0, force=np.array([1.0, 0.5, 0]), point=np.array([0.1, -0.2, 0.05]), gain=1.5),
        Actuator("yaw", body=0, torque=np.array([0, 0.3, 1.0])),
        Actuator("rotor", body=1, force=np.array([0, 0, 1.0]), point=np.array([0.05, 0.1, 0]),
                 torque=np.array([0, 0, 0.02]), gain=0.7),
        Actuator("surge", joint=0, coordinate=0),  # the floating base's first free coordinate
    ]
    return Mechanism(bodies, joints, 0.01, (0, 0, -9.81), name="hull_flap", actuators=actuators)


def test_gradients_with_actuators_match_finite_differences():
    mech = _hull_and_flap()
    assert mech.nu == 5
    rng = np.random.default_rng(4)
    # a random pose and motion (minimal coordinates: the joints hold)
    z = dojo.minimal_to_maximal(mech, 0.5 * rng.standard_normal(2 * mech.nf))
    u = rng.standard_normal(mech.nu)
    err = check_state_and_input(mech, z, u, None, directions=5)
    assert err < TOL, f"relative error {err:.2e}"


def test_gradient_input_columns_of_body_actuators_are_analytic():
    """One step from rest: dv25/du of a body actuator is h R(q2) F / m, its angular part h I^-1 M."""
    h = 0.01
    mech = _free_body([Actuator("thrust", body=0, force=np.array([0, 1.0, 0]), point=np.array([0.2, 0, 0]),
                                torque=np.array([0.1, 0, 0]), gain=2.0)], h)
    q0 = np.array([0.9, 0.2, -0.3, 0.25]) / np.linalg.norm([0.9, 0.2, -0.3, 0.25])
    A, B = dojo.maximal_gradients(mech, _state(q0), np.zeros(1), opts=TIGHT)
    F = 2.0 * quat.matrix_from_quaternion(q0) @ np.array([0, 1.0, 0])
    M = 2.0 * (np.cross([0.2, 0, 0], [0, 1.0, 0]) + np.array([0.1, 0, 0]))
    np.testing.assert_allclose(B[3:6, 0], h * F / MASS, atol=1e-12)
    np.testing.assert_allclose(B[9:12, 0], h * np.linalg.solve(INERTIA, M), atol=1e-12)


def test_quadrotor_hovers_with_a_quarter_of_the_weight_per_rotor():
    mech = dojo.load_scene("pinnzoo_quadrotor")
    m, g, kf = mech.mass[0], 9.81, 1.0
    u = np.full(4, m * g / (4 * kf))
    np.testing.assert_allclose(mech.controller.u, u, rtol=0, atol=1e-15)  # the scene's own controller
    traj = dojo.simulate(mech, steps=300, opts=TIGHT)
    assert np.abs(traj.x).max() < 1e-12 and np.abs(traj.v).max() < 1e-12
    np.testing.assert_allclose(traj.q[:, 0], np.tile([1.0, 0, 0, 0], (301, 1)), atol=1e-14)
    # a tenth more on every rotor: straight up at 0.1 g
    up = dojo.simulate(mech, steps=100, controller=ConstantController(1.1 * u), opts=TIGHT)
    np.testing.assert_allclose(up.x[-1, 0], [0, 0, 0.5 * 0.1 * g * up.time[-1] ** 2], atol=0.5 * 0.1 * g * 0.01 * 1.0)
