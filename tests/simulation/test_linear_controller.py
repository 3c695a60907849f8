"""The full-state linear controller (core/maximal/linear_controller.h; the scene's
``controller: {type: linear, u0, K, y0}``): the law against u0 - K (y - y0) written out, a
run the core steps a block at a time against the per-step run with the law in Python, bit for
bit; an LQR designed on the step's own gradients holding an inverted double pendulum up at
the rate its closed-loop spectrum predicts; and the scene's shape errors with their lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.model.controller import ClampedInputs, Controller, LinearController, core_law
from dojo_cli.physics.coordinates import interleave_minimal, minimal_to_maximal
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec
from dojo_cli.simulation.integrators import Variational

# The minimal state of a maximal state built from it comes back to rounding (coordinates.h:
# the round trip min -> max -> min), so the law at chosen y is compared at this tolerance;
# at the y the core itself reads back, the law is compared bit for bit.
LAW_RTOL = 1e-10

# A double pendulum standing upright on its joints (each body's centre of mass above its
# joint: angle 0 is the inverted equilibrium), under a linear law; the controller's lines:
# u0 13, K 14 (rows 15, 16), y0 17.
SCENE = """\
name: inverted_double
timestep: 0.01
duration: 0.5
gravity: [0, 0, -9.81]
bodies:
  - {name: upper, mass: 1.0, shape: {type: capsule, radius: 0.04, height: 0.5}}
  - {name: lower, mass: 0.5, shape: {type: capsule, radius: 0.03, height: 0.4}}
joints:
  - {name: shoulder, type: revolute, parent: origin, child: upper, axis: [1, 0, 0], child_vertex: [0, 0, -0.25], initial: {position: [0.05]}}
  - {name: elbow, type: revolute, parent: upper, child: lower, axis: [1, 0, 0], parent_vertex: [0, 0, 0.25], child_vertex: [0, 0, -0.2], initial: {position: [-0.03]}}
controller:
  type: linear
  u0: [0.5, -0.2]
  K:
    - [20.0, 5.0, 2.0, 0.5]
    - [3.0, 8.0, 0.4, 1.0]
  y0: [0.1, 0.0, -0.1, 0.0]
"""


def _mechanism(tmp_path: Path, text: str = SCENE):
    path = tmp_path / "scene.yaml"
    path.write_text(text, encoding="utf-8")
    return build_mechanism(load_scene_spec(path))


class OrderedLinear(Controller):
    """The linear law in Python, its sums in the core's order (row by row, left to right),
    on the core's minimal state: the per-step twin of the core's law. A Controller
    subclass: the run loop steps it one state at a time (core_law has no copy of it)."""

    def __init__(self, law: LinearController):
        self.law = law

    def __call__(self, mech, k, z):
        error = dojo.maximal_to_minimal(mech, z) - self.law.y0
        u = np.empty(mech.nu)
        for a in range(mech.nu):
            total = 0.0
            for i in range(error.size):
                total += self.law.K[a, i] * error[i]
            u[a] = self.law.u0[a] - total
        return u


def test_the_law_is_u0_minus_K_times_the_state_error(tmp_path):
    """At a state built from chosen y = [theta; theta_dot] per joint, the scene's law gives
    u0 - K (y - y0); at the state's own minimal coordinates, exactly; clamped, each input
    at its bound."""
    mech = _mechanism(tmp_path)
    law = mech.controller
    assert type(law) is LinearController and law.K.shape == (2, 4), type(law).__name__
    np.testing.assert_array_equal(law.K, [[20.0, 5.0, 2.0, 0.5], [3.0, 8.0, 0.4, 1.0]], err_msg="K as written")
    rng = np.random.default_rng(0)
    y = interleave_minimal(mech, rng.uniform(-0.5, 0.5, 2), rng.uniform(-2.0, 2.0, 2))
    z = minimal_to_maximal(mech, y)
    expected = law.u0 - law.K @ (y - law.y0)
    u = law(mech, 0, z)
    np.testing.assert_allclose(u, expected, rtol=LAW_RTOL, atol=LAW_RTOL * np.abs(expected).max(), err_msg="u0 - K (y - y0)")
    assert np.array_equal(u, OrderedLinear(law)(mech, 0, z)), "the core's law and its sums in Python differ"
    bound = 0.5 * np.abs(expected)
    clamped = ClampedInputs(law, -bound, bound)(mech, 0, z)
    np.testing.assert_allclose(clamped, np.sign(expected) * bound, rtol=LAW_RTOL, err_msg="u at its bounds")


def test_a_linear_run_in_the_core_is_the_per_step_run_bit_for_bit(tmp_path):
    """The run the core's rollout steps a block at a time (the law evaluated before each
    step) holds the numbers of the run the Python loop steps one state at a time with the
    law in Python: states, minimal coordinates, inputs, solver record."""
    mech = _mechanism(tmp_path)
    assert core_law(mech.controller) is not None
    assert Variational(mech, dojo.initial_state(mech), controller=mech.controller).fast, "not stepped a block at a time"
    fast = dojo.simulate(mech, steps=30)
    slow = dojo.simulate(mech, steps=30, controller=OrderedLinear(mech.controller))
    assert set(fast.status) == {"success"}, sorted(set(fast.status))
    for name in ("x", "q", "v_mid", "omega_mid", "minimal_q", "inputs", "iterations", "residual"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert np.array_equal(a, b), f"{name} differs by {np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))):.2e}"


def test_an_lqr_on_the_step_gradients_holds_the_inverted_double_pendulum(tmp_path):
    """K from the discrete Riccati equation on dojo.minimal_gradients at the upright
    equilibrium (y0 = 0, u0 = 0): the pendulum falls without it (an eigenvalue of A beyond
    1) and with it returns from a 0.05 rad tilt, its error after 100 steps within the
    closed-loop spectral radius's bound."""
    mech = _mechanism(tmp_path)
    y0 = np.zeros(4)
    A, B = dojo.minimal_gradients(mech, y0, np.zeros(2))
    assert np.max(np.abs(np.linalg.eigvals(A))) > 1.01, "the upright pendulum is not unstable"
    Q, R = np.diag([100.0, 1.0, 100.0, 1.0]), np.eye(2)
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
    rho = np.max(np.abs(np.linalg.eigvals(A - B @ K)))
    held = mech.with_run_setup(controller=LinearController(np.zeros(2), K, y0))
    run = dojo.simulate(held, steps=100)
    falls = dojo.simulate(mech.with_run_setup(controller=None), steps=100)
    assert set(run.status) == {"success"}
    start = np.abs(run.minimal_q[0]).max()
    end = np.abs(run.minimal_q[-1]).max()
    # the linear model's bound, with room for the transient and the nonlinearity (a factor 3;
    # measured: 0.54 of rho^100 times the start)
    assert end <= 3.0 * start * rho**100, f"error {end:.2e} after 100 steps, rho {rho:.4f}"
    assert np.abs(falls.minimal_q[-1]).max() > 0.5, "the pendulum does not fall without the controller"


@pytest.mark.parametrize(
    "edit, field, line, message",
    [
        (("    - [3.0, 8.0, 0.4, 1.0]\n", "    - [3.0, 8.0, 0.4, 1.0]\n    - [1.0, 1.0, 1.0, 1.0]\n"), "controller.K", 14,
         "must have 2 rows (one per input: the model has 2 inputs), got 3"),
        (("    - [3.0, 8.0, 0.4, 1.0]\n", "    - [3.0, 8.0, 0.4]\n"), "controller.K.1", 16,
         "must have 4 values (the minimal state has 4 entries (2 x 2 free coordinates)), got 3"),
        (("  y0: [0.1, 0.0, -0.1, 0.0]\n", "  y0: [0.1, 0.0, -0.1]\n"), "controller.y0", 17,
         "must have 4 values (the minimal state has 4 entries (2 x 2 free coordinates)), got 3"),
        (("  u0: [0.5, -0.2]\n", "  u0: [0.5, -0.2, 1.0]\n"), "controller.u0", 13, "must have 2 values (the model has 2 inputs), got 3"),
        (("  type: linear\n", "  type: pd\n"), "controller.K", 14, "only for a linear controller (type is pd)"),
        (("  y0: [0.1, 0.0, -0.1, 0.0]\n", ""), "controller.y0", None, "field required for a linear controller"),
    ],
    ids=["rows", "row-length", "y0", "u0", "on-pd", "missing-y0"],
)
def test_a_law_that_does_not_fit_the_model_names_its_field_and_line(tmp_path, edit, field, line, message):
    text = SCENE.replace(*edit)
    assert text != SCENE
    with pytest.raises(SceneError) as info:
        _mechanism(tmp_path, text)
    problems = [p for p in info.value.problems if p.field == field]
    assert problems, f"no problem at {field}: {[str(p) for p in info.value.problems]}"
    assert message in problems[0].message, problems[0].message
    if line is not None:
        assert problems[0].line == line, f"{field} at line {problems[0].line}"


def test_dojo_check_refuses_a_gain_of_the_wrong_shape_with_exit_code_2(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.replace("    - [3.0, 8.0, 0.4, 1.0]\n", "    - [3.0, 8.0, 0.4]\n"), encoding="utf-8")
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 2, out.output
    assert "scene.yaml:16: controller.K.1: must have 4 values" in out.output, out.output
    assert "Traceback" not in out.output
