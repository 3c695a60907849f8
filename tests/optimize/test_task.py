"""Task files: what they build (weights, targets, bounds, guesses by name) and the errors at
their lines for what the CLI tests do not cover."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.errors import SceneError
from dojo_cli.optimize.results import write_schedule
from dojo_cli.optimize.task import load_task

CARTPOLE = """\
scene: cartpole
horizon: 4
goal: {joints.pole_hinge: 0.5, bodies.pole.position: [0, 1, 2]}
costs:
  state: {joints.cart_slider.velocity: 2.0, bodies.pole.position: [1, 0, 3]}
  input: {pole_hinge: 0.5, cart_slider:t0: 0.25}
  terminal: {joints.pole_hinge: 7}
constraints:
  inputs: {cart_slider: [-1, 2]}
"""


def _load(tmp_path, text):
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return load_task(path)


def test_names_become_weights_targets_and_bounds(tmp_path):
    task = _load(tmp_path, CARTPOLE)
    p = task.problem
    assert [f.name for f in p.stage.features] == ["joints.cart_slider.velocity", "bodies.pole.position"]
    assert p.stage.weight.tolist() == [2.0, 1.0, 0.0, 3.0]
    assert p.stage.target.tolist() == [0.0, 0.0, 1.0, 2.0]  # velocity: default 0; the body's goal
    assert p.terminal.weight.tolist() == [7.0] and p.terminal.target.tolist() == [0.5]
    assert p.effort.tolist() == [0.25, 0.5]  # by input name and by joint name
    assert p.lower.tolist() == [-1.0, -np.inf] and p.upper.tolist() == [2.0, np.inf]
    assert p.representation == "minimal" and p.horizon == 4
    assert task.initial_guess.shape == (4, 2) and not task.initial_guess.any()


def test_initial_guesses(tmp_path):
    task = _load(tmp_path, CARTPOLE + "initial_guess: {constant: {cart_slider: 1.5}}\n")
    assert task.initial_guess[:, 0].tolist() == [1.5] * 4 and not task.initial_guess[:, 1].any()
    table = np.arange(12.0).reshape(6, 2) / 7
    write_schedule(tmp_path / "u.csv", ["cart_slider:t0", "pole_hinge:r0"], table)
    task = _load(tmp_path, CARTPOLE + "initial_guess: {schedule: u.csv}\n")
    assert np.array_equal(task.initial_guess, table[:4]), "every digit, the first horizon rows"
    write_schedule(tmp_path / "short.csv", ["a", "b"], table[:2])
    with pytest.raises(SceneError) as err:
        _load(tmp_path, CARTPOLE + "initial_guess: {schedule: short.csv}\n")
    assert err.value.lines() == [f"{tmp_path / 'task.yaml'}:10: initial_guess.schedule: short.csv: has 2 rows, the horizon needs 4"]


@pytest.mark.parametrize(
    "extra, line",
    [
        ("solver: {kappa: [1.0e-2, -1]}\n", ":10: solver.kappa.1: must be > 0, got -1"),
        ("solver: {penalty_scaling: 0.5}\n", ":10: solver.penalty_scaling: must be >= 1, got 0.5"),
        ("solver: {exact_stage: 1}\n", ":10: solver.exact_stage: must be true or false, got 1"),
        ("solver: {exact_stage: false}\n", ":10: solver.exact_stage: false needs a kappa schedule (solver.kappa)"),
        ("initial_guess: ones\n", ":10: initial_guess: must be zeros"),
        ("constraints2: {}\n", ":10: constraints2: unknown key; did you mean 'constraints'?"),
        ("initial_guess: {constant: {cart: 1}}\n", ":10: initial_guess.constant.cart: unknown input 'cart'"),
    ],
)
def test_problems_at_their_lines(tmp_path, extra, line):
    with pytest.raises(SceneError) as err:
        _load(tmp_path, CARTPOLE + extra)
    assert any(line in text for text in err.value.lines()), err.value.lines()


def test_every_problem_is_reported_at_once(tmp_path):
    text = CARTPOLE.replace("horizon: 4", "horizon: 4\nrepresentation: polar").replace("cart_slider: [-1, 2]", "cart_slider: [3, 2]")
    text = text.replace("joints.cart_slider.velocity: 2.0", "joints.cart_slider.velocity: -2.0")
    with pytest.raises(SceneError) as err:
        _load(tmp_path, text)
    assert len(err.value.lines()) == 1, "representation is checked before the scene is built"
    with pytest.raises(SceneError) as err:
        _load(tmp_path, text.replace("representation: polar\n", ""))
    fields = [p.field for p in err.value.problems]
    assert fields == ["costs.state.joints.cart_slider.velocity", "constraints.inputs.cart_slider"], fields


@pytest.mark.parametrize(
    "target, line",
    [
        ("{coordinate: joints.cart_slider, time: 0.015}",
         ":8: costs.targets.0.time: must be a multiple of the timestep 0.01 s in 0.01..0.04 s, got 0.015"),
        ("{coordinate: joints.cart_slider, step: 5}", ":8: costs.targets.0.step: must be in 1..4, got 5"),
        ("{coordinate: joints.cart_slider, step: 2, time: 0.02}", ":8: costs.targets.0: needs one of step"),
        ("{coordinate: joints.cart, step: 2}", ":8: costs.targets.0.coordinate: unknown coordinate 'joints.cart'"),
        ("{coordinate: bodies.pole.position, step: 2, value: [1, 2]}",
         ":8: costs.targets.0.value: needs 3 values (one per component), got 2"),
    ],
)
def test_targets_at_chosen_knots(tmp_path, target, line):
    text = CARTPOLE.replace("  terminal: {joints.pole_hinge: 7}\n", f"  terminal: {{joints.pole_hinge: 7}}\n  targets: [{target}]\n")
    with pytest.raises(SceneError) as err:
        _load(tmp_path, text)
    assert any(line in t for t in err.value.lines()), err.value.lines()
    good = CARTPOLE.replace("  terminal: {joints.pole_hinge: 7}\n",
                            "  terminal: {joints.pole_hinge: 7}\n  targets: [{coordinate: bodies.pole.position, time: 0.03, value: [0, 1, 2], weight: 5}]\n")
    (knot, fs), = _load(tmp_path, good).problem.targets
    assert knot == 3 and fs.target.tolist() == [0, 1, 2] and fs.weight.tolist() == [5, 5, 5]


@pytest.mark.parametrize(
    "scene_set, message",
    [
        ("scene: rbd_fourbar\n", "the scene runs the rk4 integrator; dojo optimize differentiates the variational one"),
        ("scene: cartpole\nset: {external: [{body: cart, force: [0, 1, 0]}]}\n",
         "the scene has external forces, which the step gradients do not include"),
        # a controller's feedback is neither in the gradients nor in the run written (issue 26)
        ("scene: hopper\n", "the scene has a pd controller; dojo optimize computes every input itself"),
    ],
)
def test_scenes_the_optimiser_cannot_run_as_stored_are_refused(tmp_path, scene_set, message):
    with pytest.raises(SceneError) as err:
        _load(tmp_path, scene_set + "horizon: 4\n")
    lines = err.value.lines()
    assert len(lines) == 1 and lines[0].startswith(f"{tmp_path / 'task.yaml'}:1: scene: {message}"), lines


def test_a_controller_is_refused_where_the_task_sets_it_and_taken_off_by_set(tmp_path):
    # a controller given by the task's own set: is reported at that line
    text = "scene: cartpole\nset:\n  timestep: 0.01\n  controller: {type: constant, inputs: {cart_slider: [1.0]}}\nhorizon: 4\n"
    with pytest.raises(SceneError) as err:
        _load(tmp_path, text)
    lines = err.value.lines()
    assert len(lines) == 1 and lines[0].startswith(
        f"{tmp_path / 'task.yaml'}:4: set.controller: the scene has a constant controller"), lines
    # a scene's own controller is taken off by set: and the task then optimises every input
    task = _load(tmp_path, "scene: hopper\nset: {controller: {type: none}}\nhorizon: 4\n")
    assert task.spec.controller.type == "none" and task.problem.mech.controller is None, task.problem.mech.controller


@pytest.mark.parametrize(
    "costs, constraints, line",
    [
        ("reference: {file: r.csv, weight: {joints.pole_hinge: 1}}", "",
         ":8: costs.reference.file: r.csv: has no column 'joints.pole_hinge' (header: joints.cart_slider, bodies.pole.position[0])"),
        ("reference: {file: r.csv, weight: {joints.cart_slider: 1}}", "",
         ":8: costs.reference.file: r.csv: has 3 knots, the horizon needs 5 (0..4)"),
        ("reference: {file: pendulum.h5, weight: {joints.cart_slider: 1}}", "",
         ":8: costs.reference.file: pendulum.h5: is a run of bodies link, the task's scene has cart, pole"),
        ("reference: {file: r.csv}", "", ":8: costs.reference: must be {file: RUN.h5 or TABLE.csv, weight:"),
        ("reference: {file: r.csv, weight: {bodies.pole.orient: 1}}", "",
         ":8: costs.reference.weight.bodies.pole.orient: unknown coordinate 'bodies.pole.orient'; did you mean 'bodies.pole.orientation'"),
        ("", "  slack: [cart_slider]\n", ":10: constraints.slack.0: slack input 'cart_slider:t0' is driven to 0, outside its bounds [0.5, 2]"),
        ("", "  slack: [cart]\n", ":10: constraints.slack.0: unknown input 'cart'"),
    ],
)
def test_references_and_slacks_at_their_lines(tmp_path, costs, constraints, line):
    from typer.testing import CliRunner

    from dojo_cli.cli.app import app

    (tmp_path / "r.csv").write_text("joints.cart_slider,bodies.pole.position[0]\n0,1\n0,1\n0,1\n")
    if "pendulum.h5" in costs:
        res = CliRunner().invoke(app, ["simulate", "pendulum", "--steps", "5", "-o", str(tmp_path / "pendulum.h5"), "-q"])
        assert res.exit_code == 0, res.output
    text = CARTPOLE.replace("  terminal: {joints.pole_hinge: 7}\n", f"  terminal: {{joints.pole_hinge: 7}}\n  {costs}\n") if costs else CARTPOLE
    text = text.replace("cart_slider: [-1, 2]", "cart_slider: [0.5, 2]") + constraints
    with pytest.raises(SceneError) as err:
        _load(tmp_path, text)
    assert any(line in t for t in err.value.lines()), err.value.lines()
