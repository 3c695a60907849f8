"""The scene's `actuators:` list (issue 14 item 2): parse errors name file:line:field, and a
valid list becomes the mechanism's inputs (names, order, controllers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec
from dojo_cli.simulation.initial import initial_state

# A hull on a floating joint plus a hinged flap; the actuators start at line 17.
SCENE = """\
name: boat
timestep: 0.01
gravity: [0, 0, 0]
bodies:
  - name: hull
    mass: 2.0
    inertia: [0.1, 0.2, 0.3]
  - name: flap
    mass: 0.5
    inertia: [0.01, 0.01, 0.01]
joints:
  - {name: base, type: floating, parent: origin, child: hull}
  - {name: hinge, type: revolute, parent: hull, child: flap, axis: [0, 0, 1], child_vertex: [0.2, 0, 0]}
actuators:
  - {name: m1, joint: hinge, coordinate: 0}
  - {name: thrust, body: hull, force: [1, 0, 0], point: [0, 0, 0]}
  - {name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}
"""
ACTUATOR_LINE = {0: 15, 1: 16, 2: 17}


def _problems(tmp_path: Path, text: str) -> list[Problem]:
    path = tmp_path / "scene.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SceneError) as info:
        build_mechanism(load_scene_spec(path))
    return info.value.problems


def _only(problems: list[Problem], field: str) -> Problem:
    matches = [p for p in problems if p.field == field]
    assert matches, f"no problem at {field!r}; got {[str(p) for p in problems]}"
    return matches[0]


def test_valid_actuators_are_the_inputs(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE, encoding="utf-8")
    mech = build_mechanism(load_scene_spec(path))
    assert mech.nu == 3 and mech.nf == 7
    assert mech.input_names() == ["m1", "thrust", "yaw"]
    assert mech.input_dimensions() == [1, 1, 1]
    # the joint actuator drives the hinge's coordinate (free coordinate 6, after the base's 6)
    expected = np.zeros((7, 3))
    expected[6, 0] = 1.0
    np.testing.assert_array_equal(mech.input_map(), expected)
    assert mech.core.nu == 3


@pytest.mark.parametrize("old, new, index, field, message", [
    ("{name: m1, joint: hinge, coordinate: 0}", "{name: m1, joint: hing, coordinate: 0}", 0, "joint",
     "unknown joint 'hing' (joints: base, hinge)"),
    ("{name: m1, joint: hinge, coordinate: 0}", "{name: m1, joint: hinge, coordinate: 1}", 0, "coordinate",
     "must be in 0..0 (joint 'hinge', revolute, has 1 free coordinate), got 1"),
    ("{name: m1, joint: hinge, coordinate: 0}", "{name: m1, joint: base, coordinate: 6}", 0, "coordinate",
     "must be in 0..5 (joint 'base', floating, has 6 free coordinates), got 6"),
    ("{name: thrust, body: hull, force: [1, 0, 0], point: [0, 0, 0]}",
     "{name: thrust, body: hul, force: [1, 0, 0], point: [0, 0, 0]}", 1, "body",
     "unknown body 'hul' (bodies: hull, flap)"),
    ("{name: thrust, body: hull, force: [1, 0, 0], point: [0, 0, 0]}",
     "{name: thrust, body: hull, force: [0, 0, 0], point: [0, 0, 0]}", 1, "force", "must be nonzero, got [0.0, 0.0, 0.0]"),
    ("{name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}", "{name: yaw, body: hull, torque: [0, 0.0, 0], gain: 2.0}",
     2, "torque", "must be nonzero, got [0.0, 0.0, 0.0]"),
    ("{name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}", "{name: yaw, body: hull, gain: 2.0}", 2, "force",
     "a body actuator needs a force or a torque (or both)"),
    ("{name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}", "{name: yaw, body: hull, torque: [0, 0, 1], gain: 0}",
     2, "gain", "must be nonzero, got 0"),
    ("{name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}", "{name: yaw, joint: hinge, body: hull, torque: [0, 0, 1]}",
     2, "body", "give either joint (a joint actuator) or body (a body actuator), not both"),
    ("{name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}", "{name: yaw, torque: [0, 0, 1]}", 2, "joint",
     "field required: joint (with coordinate) or body (with force and/or torque)"),
    ("{name: m1, joint: hinge, coordinate: 0}", "{name: m1, joint: hinge, torque: [0, 0, 1]}", 0, "torque",
     "only for a body actuator (this one drives a joint)"),
    ("{name: yaw, body: hull, torque: [0, 0, 1], gain: 2.0}", "{name: m1, body: hull, torque: [0, 0, 1]}", 2, "name",
     "duplicate actuator name 'm1'"),
])
def test_actuator_errors_name_file_line_and_field(tmp_path, old, new, index, field, message):
    assert SCENE.count(old) == 1
    problems = _problems(tmp_path, SCENE.replace(old, new))
    p = _only(problems, f"actuators.{index}.{field}")
    assert p.message == message
    assert Path(p.file).name == "scene.yaml"
    assert p.line == ACTUATOR_LINE[index]
    assert str(p).endswith(f"scene.yaml:{ACTUATOR_LINE[index]}: actuators.{index}.{field}: {message}")


def test_constant_controller_names_actuators(tmp_path):
    text = SCENE + "controller:\n  type: constant\n  inputs: {thrust: [3.0], yaw: [0.5]}\n"
    path = tmp_path / "scene.yaml"
    path.write_text(text, encoding="utf-8")
    mech = build_mechanism(load_scene_spec(path))
    np.testing.assert_array_equal(mech.controller.u, [0.0, 3.0, 0.5])


def test_constant_controller_unknown_actuator(tmp_path):
    bad = SCENE + "controller:\n  type: constant\n  inputs: {hinge: [3.0]}\n"
    p = _only(_problems(tmp_path, bad), "controller.inputs.hinge")
    assert p.message == "unknown actuator 'hinge' (actuators: m1, thrust, yaw)" and p.line == 20


def test_pd_controller_acts_through_joint_actuators(tmp_path):
    text = SCENE.replace("coordinate: 0}", "coordinate: 0, gain: 4.0}") + (
        "controller:\n  type: pd\n  kp: {hinge: [2.0]}\n  targets: {hinge: [0.5]}\n")
    path = tmp_path / "scene.yaml"
    path.write_text(text, encoding="utf-8")
    mech = build_mechanism(load_scene_spec(path))
    u = mech.controller(mech, 0, initial_state(mech))
    # tau = kp (target - 0) = 1.0 on the hinge, through the actuator of gain 4
    np.testing.assert_allclose(u, [0.25, 0.0, 0.0], atol=1e-12)


def test_pd_controller_needs_joint_actuators(tmp_path):
    ungoverned = SCENE + "controller:\n  type: pd\n  kp: {base: [1, 1, 1, 1, 1, 1]}\n"
    p = _only(_problems(tmp_path, ungoverned), "controller.kp")
    assert "no joint actuator drives" in p.message and "base" in p.message
