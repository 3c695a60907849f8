"""PinnZoo's quadrupeds Go1() and Go2() as the built-in scenes pinnzoo_go1 and pinnzoo_go2
(docs/minimal.md, "The zoo"): their feet where PinnZoo's kinematics put them, PinnZoo's
friction, its 18x12 motor map B_func and torque limits, Go2's init_state, and the feet
carrying the robot's weight once it rests.

The reference numbers are PinnZoo's own: its generated code (CasADi, from its go1.urdf and
go2.urdf; RoboticExplorationLab/PinnZoo a26d9fa, models/unitree_go{1,2}/generated_code/
kinematics.c) compiled and evaluated at the states below, printed to 9 decimals.
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal

LEGS = ["FL", "FR", "RL", "RR"]
PARTS = ["hip", "thigh", "calf"]
# PinnZoo's nominal orders (its vector_orders.c), in our names
PINNZOO_CONFIG = (["floating_base:x", "floating_base:y", "floating_base:z", "floating_base:qw", "floating_base:qx",
                   "floating_base:qy", "floating_base:qz"] + [f"{leg}_{part}_joint" for leg in LEGS for part in PARTS])
PINNZOO_VELOCITY = ([f"floating_base:v{a}" for a in "xyz"] + [f"floating_base:w{a}" for a in "xyz"]
                    + [f"{leg}_{part}_joint" for leg in LEGS for part in PARTS])
# Go1's and Go2's kinematics_bodies (generate.py) and motors (the URDFs' transmissions)
PINNZOO_FEET = [f"{leg}_foot" for leg in LEGS]
PINNZOO_MOTORS = [f"{leg}_{part}_motor" for leg in LEGS for part in PARTS]
PINNZOO_MU = 0.3                     # Go1(; mu = 0.3), Go2(; mu = 0.3)
PINNZOO_TORQUE_LIMIT = 23.7          # torque_limits = 23.7 * ones(12), both robots
# PinnZoo's B_func(::Quadruped) (src/quadruped.jl): [zeros(6, 12); I(12)]
PINNZOO_B = np.vstack([np.zeros((6, 12)), np.eye(12)])


def _go2_init_state() -> np.ndarray:
    """init_state(Go2()) in PinnZoo's order (go2.jl): zeros, x[1:3] = [0, 0, 0.082], x[4:7] =
    axis_angle_to_quat(-7.5 pi / 180 [0, 1, 0]), hips [0, 0, 27, -27] deg, thighs 75 deg,
    calves -156 deg (Julia's 1-based indices)."""
    half = -7.5 * np.pi / 180 / 2
    q = [0.0, 0.0, 0.082, np.cos(half), 0.0, np.sin(half), 0.0]
    for hip in (0.0, 0.0, 27.0, -27.0):
        q += [hip * np.pi / 180, 75 * np.pi / 180, -156 * np.pi / 180]
    return np.array(q)


def _go1_init_state() -> np.ndarray:
    """init_state(Go1()) (go1.jl; tests/minimal/test_zoo_init_states.py)."""
    q = [0.0, 0.0, 0.058, 1.0, 0.0, 0.0, 0.0]
    for hip in (-0.55, 0.55, -0.55, 0.55):
        q += [hip, 64 * np.pi / 180, -155 * np.pi / 180]
    return np.array(q)


def _turned_state() -> np.ndarray:
    """A state off every symmetry: base at (0.1, -0.2, 0.3) turned by the unit quaternion of
    (0.9, 0.1, -0.2, 0.3), joint k at 0.1 k - 0.6 rad (PinnZoo's order)."""
    quat = np.array([0.9, 0.1, -0.2, 0.3]) / np.linalg.norm([0.9, 0.1, -0.2, 0.3])
    return np.concatenate([[0.1, -0.2, 0.3], quat, 0.1 * np.arange(12) - 0.6])


# PinnZoo's kinematics(model, x) (FL, FR, RL, RR foot positions, world frame, m)
PINNZOO_FEET_AT = {
    ("pinnzoo_go1", "init_state"): [0.209624427, 0.068090077, -0.060248654, 0.209624427, -0.068090077, -0.060248654,
                                    -0.166575573, 0.068090077, -0.060248654, -0.166575573, -0.068090077, -0.060248654],
    ("pinnzoo_go1", "turned"): [0.570694714, 0.084740429, 0.221579501, 0.579555342, -0.122120522, 0.083003163,
                                -0.043981425, -0.112069361, -0.184078432, -0.095535876, -0.344458086, -0.197264771],
    ("pinnzoo_go2", "init_state"): [0.207886106, 0.142000000, 0.020156504, 0.207886106, -0.142000000, 0.020156504,
                                    -0.182522192, 0.171746128, 0.022212038, -0.182522192, -0.171746128, 0.022212038],
    ("pinnzoo_go2", "turned"): [0.569650315, 0.100195813, 0.216884130, 0.590846190, -0.132270476, 0.088525285,
                                -0.057141425, -0.102819361, -0.185458432, -0.089050988, -0.357293999, -0.204625763],
}
# PinnZoo's numbers are printed to 9 decimals; both sides are exact otherwise.
PRINTED_TOL = 1e-9
ROBOTS = ["pinnzoo_go1", "pinnzoo_go2"]
STATES = {"init_state": {"pinnzoo_go1": _go1_init_state, "pinnzoo_go2": _go2_init_state}, "turned": None}


def _model(scene: str) -> minimal.MinimalModel:
    model = minimal.build_model(dojo.load_scene(scene), kinematics_points=PINNZOO_FEET)
    minimal.register_order(model, "pinnzoo", PINNZOO_CONFIG, PINNZOO_VELOCITY)
    return model


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    return request.param, _model(request.param)


def _state(model, q_pinnzoo) -> np.ndarray:
    """Our nominal state of a PinnZoo-order configuration, at rest."""
    q = minimal.change_order(model, np.asarray(q_pinnzoo, dtype=float), "pinnzoo", "nominal", kind="config")
    return np.concatenate([q, np.zeros(model.nv)])


@pytest.mark.parametrize("which", sorted(STATES))
def test_feet_and_contacts_are_pinnzoos(robot, which):
    """The four foot contacts sit where PinnZoo's kinematics put the feet (its generated code,
    at its init_state and at a turned state), with PinnZoo's friction."""
    scene, model = robot
    q = STATES[which][scene]() if STATES[which] else _turned_state()
    feet = minimal.kinematics(model, _state(model, q))
    np.testing.assert_allclose(feet, PINNZOO_FEET_AT[(scene, which)], rtol=0, atol=PRINTED_TOL,
                               err_msg=f"{scene} at {which}: feet {feet}")
    mech = model.mech
    assert sorted(c.name for c in mech.contacts) == sorted(PINNZOO_FEET)
    assert all(c.friction == PINNZOO_MU for c in mech.contacts), [c.friction for c in mech.contacts]


def test_b_func_is_pinnzoos_motor_map(robot):
    """minimal.B_func is PinnZoo's 18x12 [zeros(6, 12); I(12)] in PinnZoo's order, at every
    state (the motors act on their joints only: B is constant). Against the joint structure:
    motor a's column is the unit generalized force of the joint its actuator drives, and the
    floating base's six rows are zero (a motor pushes the trunk only through its joint)."""
    scene, model = robot
    mech = model.mech
    assert [a.name for a in mech.actuators] == PINNZOO_MOTORS
    rng = np.random.default_rng(0)
    states = [minimal.init_state(model)] + [minimal.randn_state(model, rng) for _ in range(3)]
    rows = [model.velocity_names.index(n) for n in PINNZOO_VELOCITY]
    for x in states:
        B = minimal.B_func(model, x)
        assert B.shape == (18, 12)
        np.testing.assert_array_equal(B[rows], PINNZOO_B, err_msg=f"{scene}: B in PinnZoo's order")
        for a, act in enumerate(mech.actuators):
            column = np.zeros(model.nv)
            column[model.velocity_names.index(mech.joints[act.joint].name)] = 1.0
            np.testing.assert_array_equal(B[:, a], column, err_msg=f"{scene}: motor {act.name}")
    assert not minimal.B_func(model)[:6].any()


def test_motor_torques_are_clamped_to_pinnzoos_limits():
    """PinnZoo's torque_limits (23.7 N m) as the actuators' ctrl_range: a command beyond them
    is applied, and stored, clamped."""
    mech = dojo.load_scene("pinnzoo_go2", overrides={
        "controller": {"type": "constant", "inputs": {m: [100.0 * (-1) ** k] for k, m in enumerate(PINNZOO_MOTORS)}}})
    traj = dojo.simulate(mech, steps=1)
    expected = PINNZOO_TORQUE_LIMIT * (-1.0) ** np.arange(12)
    np.testing.assert_array_equal(traj.inputs[0], expected)


def test_go2_init_state_is_pinnzoos():
    model = _model("pinnzoo_go2")
    x = minimal.init_state(model)
    got = minimal.change_order(model, x, "nominal", "pinnzoo", kind="state")
    np.testing.assert_allclose(got[: model.nq], _go2_init_state(), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got[model.nq:], 0.0)  # at rest


# The run below: long enough for the dropped Go2 to come to rest on its feet (at step ~90;
# measured: every body below 3e-6 m/s at step 100).
REST_STEPS = 150
REST_WINDOW = 50
# At rest the point feet still creep by stick-slip on the scale of the solver's tolerances
# (bodies up to 1.5e-4 m/s against 0.5 m/s falling, a step's carried weight within 1e-3 of m g).
REST_SPEED = 1e-3
WEIGHT_TOL = 1e-3


def test_go2_rests_on_its_four_feet():
    """Dropped from init_state with no motor torque, the Go2 comes to rest on the four point
    feet (no other contact in PinnZoo's model): their normal impulses carry its weight,
    sum(lambda_n) / h = m g, each foot a share, none below the ground."""
    mech = dojo.load_scene("pinnzoo_go2")
    traj = dojo.simulate(mech, steps=REST_STEPS)
    assert all(s == "success" for s in traj.status), set(traj.status)
    assert np.max(np.abs(traj.v[-REST_WINDOW:])) < REST_SPEED
    h, weight = float(mech.timestep), float(np.sum(mech.mass)) * 9.81
    carried = traj.contact_normal_impulse[-REST_WINDOW:].sum(axis=1) / h
    assert abs(carried.mean() - weight) < WEIGHT_TOL * weight, f"feet carry {carried.mean():.6f} N of {weight:.6f}"
    assert (traj.contact_normal_impulse[-1] > 0.05 * weight * h).all(), traj.contact_normal_impulse[-1]
    assert traj.contact_distance.min() > -1e-6
