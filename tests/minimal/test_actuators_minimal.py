"""minimal.B_func with a scene's actuators (issue 14 item 2): PinnZoo's quadrotor motor map
exactly, and body actuators' generalized forces against the virtual work of their wrench
along finite tangent perturbations (an implementation that shares nothing with the core's
Jacobians: forward kinematics of perturbed states). The maximal step agrees with them at
small h in test_maximal_agreement.py (its actuator cases)."""

from __future__ import annotations

import numpy as np

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.mechanism import Mechanism
from tests.simulation.test_actuators import _hull_and_flap

# PinnZoo's Quadrotor(; L = 0.175, kf = 1.0, km = 0.0245) B_func (other_systems_notes.md 2.4)
L, KF, KM = 0.175, 1.0, 0.0245
PINNZOO_QUADROTOR_B = np.array([
    [0, 0, 0, 0],
    [0, 0, 0, 0],
    [KF, KF, KF, KF],
    [0, L * KF, 0, -L * KF],
    [-L * KF, 0, L * KF, 0],
    [KM, -KM, KM, -KM],
])


def test_quadrotor_b_func_is_pinnzoos_motor_map():
    model = minimal.build_model(dojo.load_scene("pinnzoo_quadrotor"))
    assert (model.nq, model.nv, model.nu) == (7, 6, 4)
    rng = np.random.default_rng(0)
    for x in [minimal.init_state(model)] + [minimal.randn_state(model, rng) for _ in range(5)]:
        np.testing.assert_allclose(minimal.B_func(model, x), PINNZOO_QUADROTOR_B, rtol=0, atol=1e-12)


def test_quadrotor_hover_is_an_equilibrium_of_the_minimal_dynamics():
    model = minimal.build_model(dojo.load_scene("pinnzoo_quadrotor"))
    x = minimal.init_state(model)
    np.testing.assert_array_equal(x, minimal.zero_state(model))
    u = np.full(4, 9.81 / 4 / KF)
    vdot = minimal.forward_dynamics(model, x, minimal.B_func(model, x) @ u)
    np.testing.assert_allclose(vdot, 0.0, atol=1e-12)


def _rotation_vector(R):
    """log of a rotation near the identity (world frame)."""
    c = np.clip((np.trace(R) - 1) / 2, -1, 1)
    a = np.arccos(c)
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2
    return w if a < 1e-12 else w * a / np.sin(a)


def _virtual_work_columns(model, x, eps=1e-6):
    """B by finite differences: Q_k = F_w . d p / d e_k + T_w . d theta / d e_k, with p the
    actuator's world point and theta the body's world rotation along the tangent direction
    e_k (minimal.apply_dx), F_w = R g f and T_w = R g t at x."""
    mech = model.mech
    B = np.zeros((model.nv, mech.nu))
    here = model.bodies_from_state(x)
    for a, act in enumerate(mech.actuators):
        if act.body < 0:
            continue
        R = matrix_from_quaternion(here["q"][act.body])
        F = R @ (act.gain * (np.zeros(3) if act.force is None else act.force))
        T = R @ (act.gain * (np.zeros(3) if act.torque is None else act.torque))
        for k in range(model.nv):
            dx = np.zeros(2 * model.nv)
            dx[k] = eps
            sides = []
            for sign in (1.0, -1.0):
                b = model.bodies_from_state(minimal.apply_dx(model, x, sign * dx))
                Rs = matrix_from_quaternion(b["q"][act.body])
                sides.append((b["x"][act.body] + Rs @ act.point, Rs))
            dp = (sides[0][0] - sides[1][0]) / (2 * eps)
            dtheta = _rotation_vector(sides[0][1] @ sides[1][1].T) / (2 * eps)
            B[k, a] = F @ dp + T @ dtheta
    return B


def test_body_actuator_columns_are_the_virtual_work_of_their_wrench():
    mech = _hull_and_flap()
    model = minimal.build_model(mech)
    rng = np.random.default_rng(1)
    body = [a for a, act in enumerate(mech.actuators) if act.body >= 0]
    for _ in range(3):
        x = minimal.randn_state(model, rng)
        B = minimal.B_func(model, x)
        fd = _virtual_work_columns(model, x)
        np.testing.assert_allclose(B[:, body], fd[:, body], rtol=0, atol=1e-8 * max(1.0, np.abs(fd).max()))


def test_joint_actuator_columns_are_the_joint_inputs_times_gain():
    mech = _hull_and_flap()
    plain = Mechanism(list(mech.bodies), list(mech.joints), mech.timestep, mech.gravity, name="plain")
    model, plain_model = minimal.build_model(mech), minimal.build_model(plain)
    x = minimal.randn_state(model, np.random.default_rng(2))
    B, B_joint = minimal.B_func(model, x), minimal.B_func(plain_model, x)
    np.testing.assert_allclose(B[:, 0], 2.0 * B_joint[:, 6], atol=1e-14)  # the hinge, gain 2
    np.testing.assert_allclose(B[:, 4], B_joint[:, 0], atol=1e-14)  # the base's first coordinate
