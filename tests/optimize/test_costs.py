"""Costs by name (issue 26, second milestone): orientation targets (their residual's
derivative by differences, and the same optimum as the joint-angle target they equal),
tracking of a reference trajectory (a stored run's or a CSV table's: the inputs that made
it come back), slack inputs (driven to zero while the goal is still reached)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.math.quaternion import multiply
from dojo_cli.optimize.ilqr import solve
from dojo_cli.optimize.problem import _rotation_quaternion, orientation_residual, rollout, rotation_vector
from dojo_cli.optimize.results import write_schedule
from dojo_cli.optimize.task import load_task

# Central differences of the residual in the body's tangent: truncation O(eps^2) ~ 1e-12.
FD_STEP = 1e-6
FD_TOLERANCE = 1e-8
# The optimiser's solutions, compared: its gradient tolerance over the Hessian's scale.
SOLUTION_TOLERANCE = 1e-5
# Near the pendulum's optimum (objective 78.5, penalty 1e4) a step's decrease falls below the
# objective's last bits with the gradient at ~1e-7: whether the last iterations find a decrease
# there, and reach the 1e-9 asked, depends on the last bits of the step gradients. Measured with
# the penalty changed by 1e-6 relative (100.0001 instead of 100): the maximal run stalled at
# 6.5e-8; with the gradients' exact factorisation (issue 28, rounding-level changes) the minimal
# run stalled at 5.1e-8 at 100. A run stopped there is at the optimum the asserts below check.
STALL_GRADIENT = 1e-6


def test_orientation_residual_is_the_rotation_from_the_target_and_its_derivative():
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        g = rng.normal(size=3)
        # log and exp are inverse (angles within pi), and the residual vanishes at the target only
        g_in = g / np.linalg.norm(g) * rng.uniform(0.1, 3.0)
        assert np.allclose(rotation_vector(_rotation_quaternion(g_in)), g_in, atol=1e-12)
        assert np.allclose(orientation_residual(_rotation_quaternion(g_in), g_in)[0], 0.0, atol=1e-12)
        r, D = orientation_residual(q, g)
        assert np.allclose(orientation_residual(-q, g)[0], r), "q and -q are the same orientation"
        # |r| = 2 sin(angle / 2) of the rotation between target and q
        e = multiply(np.array([1, -1, -1, -1]) * _rotation_quaternion(g), q)
        angle = 2 * np.arccos(min(1.0, abs(e[0])))
        assert abs(np.linalg.norm(r) - 2 * np.sin(angle / 2)) < 1e-12
        # dr/dphi with q = q0 (x) [sqrt(1 - |phi|^2), phi], the tangent of problem.tangent_difference
        num = np.zeros((3, 3))
        for i in range(3):
            phi = np.zeros(3)
            phi[i] = FD_STEP
            plus = multiply(q, np.concatenate([[np.sqrt(1 - FD_STEP**2)], phi]))
            minus = multiply(q, np.concatenate([[np.sqrt(1 - FD_STEP**2)], -phi]))
            num[:, i] = (orientation_residual(plus, g)[0] - orientation_residual(minus, g)[0]) / (2 * FD_STEP)
        assert np.max(np.abs(num - D)) < FD_TOLERANCE, (num, D)


PENDULUM = """\
scene: pendulum
set: {{solver.rtol: 1.0e-12, joints.hinge.initial.position: [0.0]}}
horizon: 30
representation: {representation}
costs: {{state: {{joints.hinge.velocity: 0.01}}, input: 0.1}}
goal: {{{goal}}}
constraints: {{terminal: [{coordinate}]}}
solver: {{gradient_tolerance: 1.0e-9, constraint_tolerance: 1.0e-9, penalty: 100.0}}
"""


@pytest.mark.parametrize("representation", ["minimal", "maximal"])
def test_an_orientation_target_is_the_joint_angle_target_it_equals(tmp_path, representation):
    """Turning the pendulum's link to 1 rad about the hinge's axis (x), asked as the
    link's orientation (rotation vector [1, 0, 0]) or as the hinge's angle: the same
    constrained optimum, in both representations."""
    results = {}
    for coordinate, goal in (("joints.hinge", "joints.hinge: 1.0"), ("bodies.link.orientation", "bodies.link.orientation: [1.0, 0, 0]")):
        path = tmp_path / f"{coordinate}.yaml"
        path.write_text(PENDULUM.format(representation=representation, goal=goal, coordinate=coordinate))
        task = load_task(path)
        result = solve(task.problem, task.initial_guess, task.options)
        at_floor = result.status == "stalled" and result.gradient < STALL_GRADIENT
        assert result.status == "converged" or at_floor, (coordinate, result.message)
        results[coordinate] = result
    a, b = results["joints.hinge"], results["bodies.link.orientation"]
    assert abs(b.traj.MQ[-1, 0] - 1.0) < 1e-8, f"hinge at {b.traj.MQ[-1, 0]:.10f} rad"
    err = np.max(np.abs(a.traj.U - b.traj.U))
    assert err < SOLUTION_TOLERANCE * np.max(np.abs(a.traj.U)), f"optima differ by {err:.2e} N m"


CARTPOLE_TRACK = """\
scene: cartpole
set: {{timestep: 0.02, solver.rtol: 1.0e-12}}
horizon: 25
costs:
  input: 0.0
  reference: {{file: {file}, weight: {{joints.cart_slider: 10, joints.pole_hinge: 10, joints.cart_slider.velocity: 1, bodies.pole.orientation: [1, 1, 1]}}}}
constraints: {{inputs: {{pole_hinge: [0, 0]}}}}
solver: {{gradient_tolerance: 1.0e-10}}
"""


def test_tracking_a_reference_brings_back_the_inputs_that_made_it(tmp_path):
    """A run of the cartpole under known inputs (stored by `dojo simulate`, and as a CSV
    of named columns) is tracked from zero inputs without an effort cost: its cost is zero
    only along the run itself, so the optimum is the run's inputs (both files)."""
    base = tmp_path / "base.yaml"
    base.write_text(CARTPOLE_TRACK.format(file="none.csv").replace("  reference:", "  #"))
    task = load_task(base)
    N = task.problem.horizon
    t = np.arange(N + 5) * 0.02
    U_true = np.stack([8.0 * np.sin(5 * t), np.zeros_like(t)], axis=1)
    write_schedule(tmp_path / "u.csv", task.problem.mech.input_names(), U_true)
    res = CliRunner().invoke(app, ["simulate", "cartpole", "--steps", str(N + 5), "-o", str(tmp_path / "ref.h5"), "-q",
                                   "--set", "timestep=0.02", "--set", "solver.rtol=1e-12", "--set", "initial_velocity=midpoint",
                                   "--set", f"controller={{type: schedule, file: {tmp_path / 'u.csv'}}}"])
    assert res.exit_code == 0, res.output
    ref = rollout(task.problem, U_true[:N])
    pole = ref.Z.reshape(N + 1, 2, 13)[:, 1, 6:10]
    rv = rotation_vector(pole)
    header = "joints.cart_slider,joints.pole_hinge,joints.cart_slider.velocity," + ",".join(
        f"bodies.pole.orientation[{i}]" for i in range(3))
    table = np.column_stack([ref.MQ[:, 0], ref.MQ[:, 1], ref.MV[:, 0], rv])
    np.savetxt(tmp_path / "ref.csv", table, delimiter=",", header=header, comments="", fmt="%.17g")
    assert np.ptp(ref.MQ[:, 1]) > 0.3, "the pole swings: a nonlinear reference"
    for file in ("ref.h5", "ref.csv"):
        path = tmp_path / f"track_{file}.yaml"
        path.write_text(CARTPOLE_TRACK.format(file=file))
        task = load_task(path)
        assert task.problem.reference.target.shape == (N + 1, 6)
        result = solve(task.problem, task.initial_guess, task.options)
        assert result.status == "converged", (file, result.message)
        err = np.max(np.abs(result.traj.U[:, 0] - U_true[:N, 0]))
        assert err < SOLUTION_TOLERANCE, f"{file}: inputs differ from the reference's by {err:.2e} N"
        assert result.iterations > 1, "a nonlinear problem (not one Gauss-Newton step)"


CARTPOLE_CATCH = """\
scene: cartpole
set: {{timestep: 0.02, solver.rtol: 1.0e-12}}
horizon: 30
costs: {{state: {{joints.cart_slider: 1.0}}, input: 0.01}}
constraints:
  terminal: [joints.pole_hinge, joints.pole_hinge.velocity]
  {hinge}
solver: {{gradient_tolerance: 1.0e-7, constraint_tolerance: 1.0e-8, penalty: 100.0}}
"""


def test_slack_inputs_are_driven_to_zero_and_the_goal_is_reached(tmp_path):
    """The cartpole's falling pole (pi/4 from upright) caught upright in 0.6 s by the cart.
    With the hinge's torque as a slack input the first iterations use it (it is cheaper
    than moving the cart), the augmented Lagrangian drives it to zero, and the optimum is
    the one with the torque bounded to zero."""
    results = {}
    for name, hinge in (("bounded", "inputs: {pole_hinge: [0, 0]}"), ("slack", "slack: [pole_hinge]")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(CARTPOLE_CATCH.format(hinge=hinge))
        task = load_task(path)
        results[name] = result = solve(task.problem, task.initial_guess, task.options)
        assert result.status == "converged", (name, result.message)
    slack = results["slack"]
    assert task.problem.slack == (1,)
    assert np.max(np.abs(slack.traj.U[:, 1])) < 1e-8, "the slack torque is driven to zero"
    assert np.max(np.abs(slack.multipliers["slack"])) > 0, "the slack's equality was active"
    assert abs(slack.traj.MQ[-1, 1]) < 1e-8, "the pole is caught upright"
    err = np.max(np.abs(slack.traj.U[:, 0] - results["bounded"].traj.U[:, 0]))
    assert err < SOLUTION_TOLERANCE * np.max(np.abs(slack.traj.U[:, 0])), f"optima differ by {err:.2e} N"


def test_an_orientation_target_at_a_chosen_time_is_a_stationary_optimum(tmp_path):
    """A cost on the link's orientation at t = 0.15 s (rotation vector [0.5, 0, 0]) and one
    on its orientation about every axis along the way: the optimum's cost gradient, by
    central differences of whole rollouts, vanishes (the orientation residuals' model
    derivatives are right where they enter, at one knot and at every knot)."""
    from dojo_cli.optimize.ilqr import cost

    text = PENDULUM.format(representation="maximal", goal="bodies.link.orientation: [0.2, 0, 0]", coordinate="joints.hinge")
    text = text.replace("constraints: {terminal: [joints.hinge]}\n", "")
    text = text.replace("costs: {state: {joints.hinge.velocity: 0.01}, input: 0.1}",
                        "costs: {state: {bodies.link.orientation: [1, 1, 1]}, input: 0.1,"
                        " targets: [{coordinate: bodies.link.orientation, time: 0.15, value: [0.5, 0, 0], weight: 1.0e+4}]}")
    path = tmp_path / "target.yaml"
    path.write_text(text)
    task = load_task(path)
    (knot, fs), = task.problem.targets
    assert knot == 15 and fs.features[0].kind == "r"
    result = solve(task.problem, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    p, U = task.problem, result.traj.U
    assert result.traj.MQ[15, 0] > 0.2, "the target pulls the link towards 0.5 rad"
    grad = np.zeros(len(U))
    for k in range(len(U)):
        Up, Um = U.copy(), U.copy()
        Up[k, 0] += 1e-5
        Um[k, 0] -= 1e-5
        grad[k] = (cost(p, rollout(p, Up)) - cost(p, rollout(p, Um))) / 2e-5
    assert np.max(np.abs(grad)) < 1e-6, f"cost gradient {np.max(np.abs(grad)):.2e} by differences"
