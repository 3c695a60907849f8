"""Scene schema, YAML loader (line numbers, messages) and overrides."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from dojo_cli.errors import Problem, SceneError, SceneFileError
from dojo_cli.scene import loader
from dojo_cli.scene.loader import (
    builtin_scene_names,
    dump_scene,
    load_scene_spec,
    load_scene_spec_from_string,
    spec_from_dict,
)
from dojo_cli.scene.overrides import apply_overrides
from dojo_cli.scene.schema import (
    BodyCollisionSpec,
    BoxShapeSpec,
    FrameShapeSpec,
    HalfSpaceSpec,
    JointType,
    SceneSpec,
    SolverSpec,
)

# Normalised vectors are compared to 1 up to double rounding.
_UNIT_TOL = 1e-15  # float precision

# The reference scene; invalid scenes edit single lines of it, so the line
# numbers written next to it are the ones problems must report.
BASE = """\
name: demo
timestep: 0.01
duration: 1.0
bodies:
  - name: link
    shape: {type: box, size: [0.1, 0.1, 1.0]}
    mass: 1.0
  - name: bob
    shape: {type: sphere, radius: 0.1}
    mass: 0.5
joints:
  - name: hinge
    type: revolute
    parent: origin
    child: link
    axis: [1, 0, 0]
    child_vertex: [0, 0, 0.5]
  - name: elbow
    type: revolute
    parent: link
    child: bob
    initial: {position: [0.3], velocity: [0.0]}
controller:
  type: constant
  inputs: {hinge: [0.5]}
"""
# line  1 name            line 12 joints.0 (hinge)
# line  5 bodies.0 (link) line 16 joints.0.axis
# line  6 bodies.0.shape  line 18 joints.1 (elbow)
# line  7 bodies.0.mass   line 22 joints.1.initial
# line  8 bodies.1 (bob)  line 23 controller
# line 10 bodies.1.mass   line 25 controller.inputs

FULL = """\
format: 1
name: full
description: every section
timestep: 0.005
gravity: [0, 0, -9.81]
steps: 20
seed: 3
solver: {rtol: 1e-10, btol: 1.0e-8, max_iter: 30, undercut: .inf}
bodies:
  - name: base
    shape: {type: cylinder, radius: 0.2, height: 0.1, color: [0.2, 0.4, 0.6]}
    mass: 3.0
    inertia: [[0.1, 0.01, 0], [0.01, 0.2, 0], [0, 0, 0.3]]
  - name: arm
    shape: {type: capsule, radius: 0.05, height: 0.5, orientation_offset: [0.7071, 0.7071, 0, 0]}
    mass: 1.0
    inertia: [0.02, 0.02, 0.001]
    initial: {angular_velocity: [0, 0, 1]}
  - name: tip
    shape: {type: mesh, file: tip.obj, scale: [1, 2, 1]}
    mass: 0.1
    inertia: [0.001, 0.001, 0.001]
joints:
  - {name: ground, type: fixed, parent: origin, child: base}
  - name: shoulder
    type: revolute
    parent: base
    child: arm
    axis: [0, 0, 2]
    spring: [2.0]
    damper: 0.1
    spring_offset: [0.2]
    limits: {lower: [-1.5], upper: [.inf]}
  - {name: wrist, type: spherical, parent: arm, child: tip, parent_vertex: [0, 0, 0.3]}
contacts:
  - {name: foot, body: tip, radius: 0.02, against: ground}
  - {name: wall, body: arm, model: linear, friction: 0.3, against: {normal: [1, 0, 0], point: [2, 0, 0]}}
  - {name: knock, body: tip, model: impact, against: {body: base, shape: box, size: [0.4, 0.4, 0.1]}}
controller:
  type: pd
  kp: {shoulder: [5.0], wrist: [1, 1, 1]}
  kd: 0.5
  targets: {shoulder: [0.3]}
external:
  - {body: arm, force: [0, 1, 0], frame: world, start: 0.01, stop: 0.05}
"""


def _edited(*replacements: tuple[str, str]) -> str:
    """BASE with whole lines replaced (each old line must occur exactly once)."""
    text = BASE
    for old, new in replacements:
        assert text.count(old + "\n") == 1, f"{old!r} is not a unique line of BASE"
        text = text.replace(old + "\n", new + "\n")
    return text


def _write(tmp_path: Path, text: str, name: str = "scene.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _problems(path: Path, overrides=None) -> list[Problem]:
    with pytest.raises(SceneError) as info:
        load_scene_spec(path, overrides)
    return info.value.problems


def _find(problems: list[Problem], field: str) -> Problem:
    matches = [p for p in problems if p.field == field]
    assert matches, f"no problem at {field!r}; got {[str(p) for p in problems]}"
    return matches[0]


# ------------------------------------------------------------- valid scenes


def test_base_scene_is_valid(tmp_path):
    spec = load_scene_spec(_write(tmp_path, BASE))
    assert [b.name for b in spec.bodies] == ["link", "bob"]
    assert spec.joints[1].type is JointType.REVOLUTE
    assert spec.controller.inputs == {"hinge": [0.5]}
    assert spec.base_dir == tmp_path.resolve()


def test_round_trip_through_dump(tmp_path):
    spec = load_scene_spec(_write(tmp_path, FULL))
    text = dump_scene(spec)
    assert ".inf" in text, "infinite values must be written so that YAML reads them back"
    again = load_scene_spec_from_string(text)
    assert again == spec
    assert dump_scene(again) == text
    # the dump is plain YAML with every default explicit
    data = yaml.safe_load(text)
    assert data["joints"][0]["orientation_offset"] == [1.0, 0.0, 0.0, 0.0]
    assert data["contacts"][0]["friction"] == 0.5
    assert data["solver"]["no_progress_undercut"] == 10.0


def test_full_scene_values(tmp_path):
    spec = load_scene_spec(_write(tmp_path, FULL))
    assert spec.solver.rtol == 1e-10, "1e-10 is a string to YAML 1.1 and must still read as a number"
    assert spec.bodies[0].shape.color == [0.2, 0.4, 0.6, 1.0]
    np.testing.assert_allclose(spec.bodies[0].inertia_matrix(), [[0.1, 0.01, 0], [0.01, 0.2, 0], [0, 0, 0.3]])
    np.testing.assert_allclose(spec.bodies[1].inertia_matrix(), np.diag([0.02, 0.02, 0.001]))
    q = np.array(spec.bodies[1].shape.orientation_offset)
    assert abs(np.linalg.norm(q) - 1.0) < _UNIT_TOL, f"quaternion norm {np.linalg.norm(q)}"
    assert spec.joints[1].axis == [0.0, 0.0, 1.0]
    assert spec.joints[1].limits.upper == [math.inf]
    np.testing.assert_array_equal(spec.joints[1].damper_values(), [0.1])
    np.testing.assert_array_equal(spec.joints[1].spring_offset_values(), [0.2])
    np.testing.assert_array_equal(spec.joints[0].spring_values(), np.zeros(0))
    assert spec.contacts[0].against == "ground"
    assert isinstance(spec.contacts[1].against, HalfSpaceSpec)
    assert isinstance(spec.contacts[2].against, BodyCollisionSpec)
    assert spec.controller.kp == {"shoulder": [5.0], "wrist": [1.0, 1.0, 1.0]}
    assert spec.external[0].frame == "world"
    assert spec.resolve_path(spec.bodies[2].shape.file) == tmp_path.resolve() / "tip.obj"


def test_defaults_filled_in():
    spec = load_scene_spec_from_string(
        "name: tiny\ntimestep: 0.1\nbodies: [{name: a, mass: 2}]\n"
        "joints: [{name: free, type: floating, parent: origin, child: a}]\n"
    )
    assert spec.format == 1
    assert spec.gravity == [0.0, 0.0, -9.81]
    assert spec.duration is None and spec.steps is None
    assert spec.seed == 0
    assert spec.solver == SolverSpec()
    assert spec.solver.undercut == math.inf and spec.solver.max_iter == 50
    assert spec.bodies[0].shape == FrameShapeSpec()
    assert spec.bodies[0].inertia is None and spec.bodies[0].inertia_matrix() is None
    joint = spec.joints[0]
    assert joint.axis == [0.0, 0.0, 1.0]
    assert joint.orientation_offset == [1.0, 0.0, 0.0, 0.0]
    assert joint.parent_vertex == joint.child_vertex == [0.0, 0.0, 0.0]
    np.testing.assert_array_equal(joint.spring_values(), np.zeros(6))
    np.testing.assert_array_equal(joint.spring_offset_values(), np.zeros(6))
    assert spec.contacts == [] and spec.external == []
    assert spec.controller.type == "none" and spec.controller.after_end == "zero"
    assert spec.description == ""


def test_scalar_spring_broadcasts():
    spec = load_scene_spec_from_string(
        "name: s\ntimestep: 0.1\nbodies: [{name: a, mass: 1}]\n"
        "joints: [{name: j, type: spherical, parent: origin, child: a, spring: 2, damper: [1, 2, 3]}]\n"
    )
    np.testing.assert_array_equal(spec.joints[0].spring_values(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(spec.joints[0].damper_values(), [1.0, 2.0, 3.0])


def test_four_bar_loop_closure_is_valid():
    spec = load_scene_spec_from_string(
        """\
name: fourbar
timestep: 0.01
bodies: [{name: a, mass: 1}, {name: b, mass: 1}, {name: c, mass: 1}]
joints:
  - {name: j0, type: revolute, parent: origin, child: a}
  - {name: j1, type: revolute, parent: a, child: b}
  - {name: j2, type: revolute, parent: b, child: c}
  - {name: j3, type: revolute, parent: origin, child: c}
"""
    )
    assert [j.child for j in spec.joints] == ["a", "b", "c", "c"]


def test_schedule_file_resolved_against_scene_folder(tmp_path):
    text = _edited(("  type: constant", "  type: schedule\n  file: inputs/u.csv"))
    spec = load_scene_spec(_write(tmp_path, text))
    assert spec.controller.file == str(tmp_path.resolve() / "inputs" / "u.csv")


def test_python_models_and_problem_lines(tmp_path):
    spec = SceneSpec(
        name="py",
        timestep=0.1,
        bodies=[{"name": "a", "mass": 1.0, "shape": BoxShapeSpec(size=[1, 1, 1])}],
        joints=[{"name": "j", "type": "floating", "parent": "origin", "child": "a"}],
    )
    assert load_scene_spec_from_string(dump_scene(spec)) == spec
    loaded = load_scene_spec(_write(tmp_path, BASE))
    problem = loaded.problem("bodies.1.inertia", "required")
    assert (problem.file, problem.line, problem.field) == (str(tmp_path / "scene.yaml"), 8, "bodies.1.inertia")


# ----------------------------------------------------------- invalid scenes

INVALID = [
    # (id, line replacements, line, field, message)
    ("missing field", [("    mass: 1.0", "    # no mass")], 5, "bodies.0.mass", "field required"),
    ("wrong type", [("    mass: 1.0", "    mass: abc")], 7, "bodies.0.mass", "must be a number, got 'abc'"),
    ("boolean number", [("    mass: 1.0", "    mass: yes")], 7, "bodies.0.mass", "must be a number, got true"),
    ("non-positive mass", [("    mass: 1.0", "    mass: 0")], 7, "bodies.0.mass", "must be > 0, got 0"),
    (
        "unknown parent",
        [("    parent: link", "    parent: foo")],
        20,
        "joints.1.parent",
        "unknown body 'foo' (bodies: link, bob; or origin)",
    ),
    ("duplicate body name", [("  - name: bob", "  - name: link")], 8, "bodies.1.name", "duplicate body name 'link'"),
    (
        "inertia not positive definite",
        [("    shape: {type: box, size: [0.1, 0.1, 1.0]}", "    inertia: [[1, 2, 0], [2, 1, 0], [0, 0, 1]]")],
        6,
        "bodies.0.inertia",
        "must be positive definite, got eigenvalues [-1, 1, 3]",
    ),
    (
        "inertia not symmetric",
        [("    shape: {type: box, size: [0.1, 0.1, 1.0]}", "    inertia: [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]")],
        6,
        "bodies.0.inertia",
        "must be symmetric, got [0][1] = 0.5 but [1][0] = 0",
    ),
    (
        "quaternion of norm 0",
        [("    axis: [1, 0, 0]", "    orientation_offset: [0, 0, 0, 0]")],
        16,
        "joints.0.orientation_offset",
        "must be a unit quaternion [w, x, y, z], got norm 0",
    ),
    (
        "quaternion of 3 entries",
        [("    axis: [1, 0, 0]", "    orientation_offset: [1, 0, 0]")],
        16,
        "joints.0.orientation_offset",
        "must be a unit quaternion [w, x, y, z], got 3 entries",
    ),
    ("vector of 2 entries", [("    axis: [1, 0, 0]", "    axis: [1, 0]")], 16, "joints.0.axis", "must have 3 entries"),
    ("zero axis", [("    axis: [1, 0, 0]", "    axis: [0, 0, 0]")], 16, "joints.0.axis", "must be nonzero"),
    (
        "initial values for the joint type",
        [("    initial: {position: [0.3], velocity: [0.0]}", "    initial: {position: [0.3, 0.1], velocity: [0.0]}")],
        22,
        "joints.1.initial.position",
        "must have 1 value for a revolute joint (its free coordinates), got 2",
    ),
    (
        "initial values for a fixed joint",
        [("    type: revolute\n    parent: link", "    type: fixed\n    parent: link")],
        22,
        "joints.1.initial.position",
        "must have 0 values for a fixed joint (its free coordinates), got 1",
    ),
    (
        "unknown joint type",
        [("    type: revolute\n    parent: link", "    type: hinge\n    parent: link")],
        19,
        "joints.1.type",
        "unknown joint type 'hinge' (one of: fixed, prismatic, planar, fixed_orientation, revolute,",
    ),
    (
        "unknown shape type",
        [("    shape: {type: sphere, radius: 0.1}", "    shape: {type: ball, radius: 0.1}")],
        9,
        "bodies.1.shape.type",
        "unknown shape type 'ball' (one of: box, sphere, cylinder, capsule, pyramid, mesh, frame, combined)",
    ),
    ("malformed YAML", [("    mass: 0.5", "    mass: 0.5: 2")], 10, "", "invalid YAML: mapping values are not allowed"),
    (
        "unknown field",
        [("    mass: 0.5", "    masss: 0.5")],
        10,
        "bodies.1.masss",
        "unknown field 'masss' (did you mean 'mass'?)",
    ),
    (
        "both steps and duration",
        [("  inputs: {hinge: [0.5]}", "  inputs: {hinge: [0.5]}\nsteps: 100")],
        26,
        "steps",
        "give either steps or duration, not both",
    ),
    (
        "body attached by no joint",
        [("    parent: link", "    parent: origin"), ("    child: bob", "    child: link")],
        8,
        "bodies.1",
        "body 'bob' is attached by no joint; add a floating joint to make it free",
    ),
    (
        "joints not reaching origin",
        [("    parent: origin", "    parent: bob")],
        5,
        "bodies.0",
        "body 'link' is not connected to origin: its parent chain runs into the loop link <- bob <- link",
    ),
    (
        "controller names an unknown joint",
        [("  inputs: {hinge: [0.5]}", "  inputs: {hinge: [0.5], knee: [1.0]}")],
        25,
        "controller.inputs.knee",
        "unknown joint 'knee' (joints: hinge, elbow)",
    ),
    (
        "controller with the wrong number of values",
        [("  inputs: {hinge: [0.5]}", "  inputs: {hinge: [0.5, 1.0]}")],
        25,
        "controller.inputs.hinge",
        "must have 1 value for a revolute joint (its free coordinates), got 2",
    ),
    (
        "schedule without file",
        [("  type: constant", "  type: schedule")],
        23,
        "controller.file",
        "field required for a schedule controller",
    ),
    (
        "unknown damper form",
        [("    parent: link", "    parent: link\n    damper_form: trapezoid")],
        21,
        "joints.1.damper_form",
        "must be 'midpoint' or 'implicit', got 'trapezoid'",
    ),
    (
        "duplicate key",
        [("    mass: 0.5", "    mass: 0.5\n    mass: 0.6")],
        11,
        "bodies.1.mass",
        "duplicate key 'mass' (first given on line 10)",
    ),
]


@pytest.mark.parametrize(
    ("replacements", "line", "field", "message"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_invalid_scene_names_file_line_and_field(tmp_path, replacements, line, field, message):
    path = _write(tmp_path, _edited(*replacements))
    problem = _find(_problems(path), field)
    assert problem.file == str(path)
    assert problem.line == line, f"{problem} should be on line {line}"
    assert message in problem.message, f"{problem.message!r} lacks {message!r}"
    assert str(problem).startswith(f"{path}:{line}: {field + ': ' if field else ''}")


def test_every_problem_reported_at_once(tmp_path):
    text = _edited(
        ("  - name: bob", "  - name: link"),
        ("    parent: link", "    parent: nowhere"),
        ("  inputs: {hinge: [0.5]}", "  inputs: {knee: [0.5]}"),
    )
    problems = _problems(_write(tmp_path, text))
    fields = {p.field for p in problems}
    assert {"bodies.1.name", "joints.1.parent", "joints.1.child", "controller.inputs.knee"} <= fields, fields
    assert [p.line for p in problems] == sorted(p.line for p in problems), "problems are listed in file order"


def test_top_level_must_be_a_mapping(tmp_path):
    path = _write(tmp_path, "- 1\n- 2\n")
    [problem] = _problems(path)
    assert (problem.file, problem.line, problem.field) == (str(path), 1, "")
    assert "a scene must be a mapping" in problem.message


def test_missing_and_unreadable_scene_files(tmp_path):
    # a path that is not there: an I/O problem (exit 3), still a SceneError
    with pytest.raises(SceneFileError, match="no such file") as missing:
        load_scene_spec(tmp_path / "missing.yaml")
    assert missing.value.exit_code == 3 and isinstance(missing.value, SceneError)
    # a bare word that is no built-in: a misspelt name (exit 2)
    with pytest.raises(SceneError, match="did you mean 'pendulum' or") as misspelt:
        load_scene_spec("pendulm")
    assert misspelt.value.exit_code == 2
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    [problem] = _problems(path)
    assert problem.file == str(path) and "not UTF-8" in problem.message


def test_builtin_names_without_scene_library(monkeypatch):
    monkeypatch.setattr(loader, "scene_library", lambda: None)
    assert builtin_scene_names() == []
    with pytest.raises(SceneError, match=r"built-in scene 'nothing' \(built-in: none\)"):
        load_scene_spec("nothing")


def test_builtin_names_are_sorted():
    names = builtin_scene_names()
    assert names == sorted(names)


# ----------------------------------------------------------------- overrides


def test_override_by_index_and_by_name(tmp_path):
    path = _write(tmp_path, BASE)
    spec = load_scene_spec(path, {"bodies.0.mass": 2.0, "joints.elbow.spring": 3, "solver.rtol": 1e-9})
    assert spec.bodies[0].mass == 2.0
    assert spec.joints[1].spring == 3.0
    assert spec.solver.rtol == 1e-9
    assert load_scene_spec(path, {"joints.1.spring": 3}).joints == spec.joints


def test_override_strings_and_list_values(tmp_path):
    spec = load_scene_spec(
        _write(tmp_path, BASE),
        [
            "joints.hinge.spring=[4.0]",
            "gravity.2=-3",
            "solver.undercut=.inf",
            "bodies.bob.initial.position=[0, 0, 1]",
            "description=a=b",
            "controller.inputs={elbow: [1]}",
        ],
    )
    assert spec.joints[0].spring == [4.0]
    assert spec.gravity == [0.0, 0.0, -3.0], "an override reaches into a default value"
    assert spec.solver.undercut == math.inf
    assert spec.bodies[1].initial.position == [0.0, 0.0, 1.0]
    assert spec.description == "a=b"
    assert spec.controller.inputs == {"elbow": [1.0]}


def test_an_override_reaches_into_a_joints_default(tmp_path):
    """``orientation_offset`` left at its default [1, 0, 0, 0]: setting entries edits that
    default (it used to start from an empty mapping: "got {0: 0.7071}")."""
    spec = load_scene_spec(_write(tmp_path, BASE), ["joints.hinge.orientation_offset.0=0.6",
                                                    "joints.hinge.orientation_offset.3=0.8"])
    assert spec.joints[0].orientation_offset == [0.6, 0.0, 0.0, 0.8]


def test_apply_overrides_leaves_input_unchanged():
    data = yaml.safe_load(BASE)
    result = apply_overrides(data, {"bodies.link.mass": 5, "gravity": np.array([0.0, 0.0, -1.0])})
    assert data == yaml.safe_load(BASE)
    assert result["bodies"][0]["mass"] == 5
    assert result["gravity"] == [0.0, 0.0, -1.0]


@pytest.mark.parametrize(
    ("override", "field", "reason"),
    [
        ("bodies.5.mass=1", "bodies.5.mass", "bodies has 2 entries, so no index 5"),
        ("joints.knee.spring=1", "joints.knee.spring", "no entry of joints is named 'knee' (names: hinge, elbow)"),
        ("bodies.0.mass.value=1", "bodies.0.mass.value", "bodies.0.mass is a number, not a mapping or a list"),
    ],
    ids=["index out of range", "unknown name", "into a number"],
)
def test_invalid_override_path(tmp_path, override, field, reason):
    [problem] = _problems(_write(tmp_path, BASE), [override])
    assert (problem.file, problem.line, problem.field) == ("--set", None, field)
    assert problem.message == f"no such field: {reason}"


def test_malformed_override():
    with pytest.raises(SceneError, match="expected PATH=VALUE"):
        spec_from_dict(yaml.safe_load(BASE), overrides=["bodies.0.mass"])


def test_override_validation_problem_names_set(tmp_path):
    text = _edited(("    mass: 0.5", "    mass: -0.5"))
    problems = _problems(_write(tmp_path, text), ["bodies.link.mass=-1", "joints.elbow.initial.position=[1, 2]"])
    assert [(p.file, p.line, p.field) for p in problems] == [
        ("--set", None, "bodies.link.mass"),
        ("--set", None, "joints.elbow.initial.position"),
        (str(tmp_path / "scene.yaml"), 10, "bodies.1.mass"),
    ], "overridden fields are reported on --set, as the user named them; the rest keep their line"
    assert problems[0].message == "must be > 0, got -1"


def test_a_box_against_which_a_contact_collides_has_no_radius():
    """The collision table's box (core/maximal/collision.h) is not rounded: a radius given for a box
    under ``against:`` is refused with its field, not silently ignored; 0 (what a stored
    scene writes back) is accepted."""
    from dojo_cli.errors import SceneError
    from dojo_cli.scene.loader import spec_from_dict

    def scene(radius):
        return {
            "name": "b", "timestep": 0.01,
            "bodies": [{"name": "a", "mass": 1, "shape": {"type": "sphere", "radius": 0.1}},
                       {"name": "b", "mass": 1, "shape": {"type": "box", "size": [1, 1, 1]}}],
            "joints": [{"name": "ja", "type": "floating", "parent": "origin", "child": "a"},
                       {"name": "jb", "type": "fixed", "parent": "origin", "child": "b"}],
            "contacts": [{"name": "c", "body": "a", "radius": 0.1,
                          "against": {"body": "b", "shape": "box", "size": [1, 1, 1], "radius": radius}}],
        }

    spec_from_dict(scene(0.0))
    with pytest.raises(SceneError, match=r"contacts\.0\.against\.radius: a box has no radius"):
        spec_from_dict(scene(0.05))
