"""Validation that cannot overflow (issue 11, item 2): every scene number is bounded
(schema.MAX_MAGNITUDE, schema.MIN_AMOUNT), every quantity derived from them is checked
after the arithmetic, names are printable, and each problem names the file, the line and
the field (or --set). The suite turns any numpy RuntimeWarning into a failure, so these
also check that nothing warns on the way."""

from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.model.compiled import _non_finite_field, model_input
from dojo_cli.model.mechanism import Body, Joint, Mechanism, axis_basis
from dojo_cli.model.shapes import Shape, body_inertia
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec, load_scene_spec_from_string
from dojo_cli.scene.schema import (
    MAX_MAGNITUDE,
    MAX_NAME_LENGTH,
    MAX_PATH_LENGTH,
    MAX_STEPS,
    MIN_AMOUNT,
)
from tests.cli.test_cli import PENDULUM

runner = CliRunner()


def _cli(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output and "Warning" not in res.output, res.output
    return res


def _problems(scene, *overrides, text=None, file="scene.yaml"):
    """The problems of loading and building a scene (a built-in name, or YAML text)."""
    with pytest.raises(SceneError) as info:
        spec = load_scene_spec_from_string(text, file, overrides=list(overrides)) if text is not None else (
            load_scene_spec(scene, list(overrides)))
        build_mechanism(spec)
    return [str(p) for p in info.value.problems]


# -------------------------------------------------------- the reproducers


def test_huge_axis_is_normalised_without_overflow(tmp_path):
    spec = load_scene_spec("slider", ["joints.0.axis=[0,1e200,0]"])
    assert spec.joints[0].axis == [0.0, 1.0, 0.0]
    spec = load_scene_spec("slider", ["joints.0.axis=[0,1e308,-1e308]"])
    assert spec.joints[0].axis == pytest.approx([0.0, math.sqrt(0.5), -math.sqrt(0.5)], rel=1e-15)
    out = tmp_path / "run.h5"
    res = _cli("simulate", "slider", "--set", "joints.0.axis=[0,1e200,0]", "--steps", 3, "-o", out)
    assert res.exit_code == 0, res.output
    assert "not finite" not in res.output


def test_huge_box_size_is_refused_on_its_field():
    res = _cli("check", "box", "--set", "bodies.0.shape.size=[1e200,1e200,1e200]")
    assert res.exit_code == 2
    assert res.stderr.splitlines()[0] == "--set: bodies.0.shape.size.0: must be at most 1e+100 in magnitude, got 1e+200"


def test_inertia_derived_from_shape_and_mass_is_checked_after_the_product():
    # every number within its bound, but m (x^2 + y^2) / 12 is 1.7e119
    res = _cli("check", "box", "--set", "bodies.0.shape.size=[1e60,1e60,1e60]")
    assert res.exit_code == 2
    assert res.stderr.strip() == (
        "--set: bodies.0.shape.size: the inertia from this shape and the mass 1 kg reaches 1.67e+119 kg m^2, "
        "more than 1e+100"
    )


def test_derived_inertia_problem_points_at_the_file_line_or_the_field_set():
    text = PENDULUM.replace("mass: 1.0", "mass: 1.0e+90").replace("size: [0.1, 0.1, 1.0]", "size: [1.0e+10, 1.0e+10, 1.0e+10]")
    assert _problems(None, text=text) == [
        ("scene.yaml:7: bodies.0.shape: the inertia from this shape and the mass 1e+90 kg reaches 1.67e+109 kg m^2, "
         "more than 1e+100")
    ]
    text = PENDULUM.replace("size: [0.1, 0.1, 1.0]", "size: [1.0e+10, 1.0e+10, 1.0e+10]")
    (problem,) = _problems(None, "bodies.0.mass=1e90", text=text)
    assert problem.startswith("--set: bodies.0.mass: the inertia from this shape and the mass 1e+90 kg")
    # an inertia too small to invert safely
    text = PENDULUM.replace("mass: 1.0", "mass: 1.0e-90").replace("size: [0.1, 0.1, 1.0]", "size: [1.0e-10, 1.0e-10, 1.0e-10]")
    (problem,) = _problems(None, text=text)
    assert problem.startswith("scene.yaml:7: bodies.0.shape: the inertia from this shape and the mass 1e-90 kg is down to")
    assert problem.endswith(f"less than {MIN_AMOUNT:g}")


def test_weight_is_checked_after_the_product():
    (problem,) = _problems(None, text=PENDULUM.replace("mass: 1.0", "mass: 1.0e+60").replace("-9.81]", "-1.0e+50]"))
    assert problem == "scene.yaml:8: bodies.0.mass: the weight mass * |gravity| = 1e+110 N is more than 1e+100"
    (problem,) = _problems(None, "gravity=[0, 0, -1e50]", text=PENDULUM.replace("mass: 1.0", "mass: 1.0e+60"))
    assert problem == "--set: gravity: the weight mass * |gravity| = 1e+110 N is more than 1e+100"


TWO_SLIDERS = """\
name: two_sliders
timestep: 0.01
steps: 10
bodies:
  - {name: a, shape: {type: box, size: [1, 1, 1]}, mass: 1.0}
  - {name: b, shape: {type: box, size: [1, 1, 1]}, mass: 1.0}
joints:
  - {name: ja, type: prismatic, parent: origin, child: a, axis: [0, 0, 1], initial: {position: [1.0e+100]}}
  - {name: jb, type: prismatic, parent: a, child: b, axis: [0, 0, 1], initial: {position: [1.0e+100]}}
"""


def test_initial_state_derived_from_the_joints_is_checked():
    # each coordinate within its bound, but b sits at 2e100 (a chain adds them up)
    (problem,) = _problems(None, text=TWO_SLIDERS)
    assert problem == (
        "scene.yaml:9: joints.1.initial: the initial position of body 'b' is not finite or more than 1e+100 in magnitude"
    )
    (problem,) = _problems(None, "joints.ja.initial.position=[1e100]", text=TWO_SLIDERS.replace("[1.0e+100]}}\n  - {name: jb", "[0.0]}}\n  - {name: jb"))
    assert problem.startswith("--set: joints.ja.initial.position: the initial position of body 'b' is not finite")
    assert load_scene_spec_from_string(TWO_SLIDERS, overrides=["joints.jb.initial.position=[-1e100]"]).joints[1].initial


def test_step_count_is_checked_after_the_division():
    (problem,) = _problems("slider", "timestep=1e-20")
    assert problem == f"--set: timestep: 5 s at timestep 1e-20 s is 5e+20 steps, more than {MAX_STEPS:.0e}"
    text = PENDULUM.replace("steps: 20", "duration: 1.0e+50")
    (problem,) = _problems(None, text=text)
    assert problem == "scene.yaml:4: duration: 1e+50 s at timestep 0.01 s is 1e+52 steps, more than 1e+09"
    (problem,) = _problems("pendulum", f"steps={10 * MAX_STEPS}")
    assert problem == f"--set: steps: must be <= 1e+09, got {10 * MAX_STEPS}"


# --------------------------------------------------------------- scene numbers


BOUNDED = [
    ("bodies.0.mass=1e300", "bodies.0.mass", "must be at most 1e+100 in magnitude, got 1e+300"),
    (f"bodies.0.mass={10 ** 400}", "bodies.0.mass", "must be at most 1e+100 in magnitude, got 1000000000000000000"),
    ("bodies.0.mass=1e-300", "bodies.0.mass", "must be at least 1e-100, got 1e-300"),
    ("gravity=[0, 0, 1e300]", "gravity.2", "must be at most 1e+100 in magnitude"),
    ("timestep=1e-300", "timestep", "must be at least 1e-100, got 1e-300"),
    ("timestep=1e300", "timestep", "must be at most 1e+100 in magnitude"),
    ("bodies.0.inertia=[1e300, 1, 1]", "bodies.0.inertia.0", "must be at most 1e+100 in magnitude"),
    ("bodies.0.inertia=[1e-320, 1, 1]", "bodies.0.inertia.0", "must be at least 1e-100"),
    ("bodies.0.inertia=[[1, 0, 0], [0, 1, 0], [0, 0, 1e-200]]", "bodies.0.inertia", "must have eigenvalues of at least 1e-100"),
    ("bodies.0.shape.size=[1, 1e-200, 1]", "bodies.0.shape.size.1", "must be at least 1e-100"),
    ("joints.0.spring=1e300", "joints.0.spring", "must be at most 1e+100 in magnitude"),
    ("joints.0.damper=[1e300]", "joints.0.damper.0", "must be at most 1e+100 in magnitude"),
    ("joints.0.spring_offset=[-1e300]", "joints.0.spring_offset.0", "must be at most 1e+100 in magnitude"),
    ("joints.0.limits={lower: [-1e300], upper: [.inf]}", "joints.0.limits.lower.0", "must be at most 1e+100 in magnitude"),
    ("joints.0.parent_vertex=[0, 0, 1e300]", "joints.0.parent_vertex.2", "must be at most 1e+100 in magnitude"),
    ("joints.0.initial.position=[1e300]", "joints.0.initial.position.0", "must be at most 1e+100 in magnitude"),
    ("bodies.0.initial={orientation: [1e300, 0, 0, 0]}", "bodies.0.initial.orientation.0", "must be at most 1e+100"),
    ("bodies.0.initial={velocity: [0, 0, -1e300]}", "bodies.0.initial.velocity.2", "must be at most 1e+100"),
    ("external=[{body: link, force: [1e300, 0, 0]}]", "external.0.force.0", "must be at most 1e+100 in magnitude"),
    ("external=[{body: link, stop: 1e300}]", "external.0.stop", "must be at most 1e+100 in magnitude"),
    ("controller={type: pd, kp: 1e300}", "controller.kp", "must be at most 1e+100 in magnitude"),
    ("controller={type: constant, inputs: {hinge: [1e300]}}", "controller.inputs.hinge.0", "must be at most 1e+100"),
    ("contacts=[{name: c, body: link, friction: 1e300}]", "contacts.0.friction", "must be at most 1e+100 in magnitude"),
    ("contacts=[{name: c, body: link, radius: 1e300}]", "contacts.0.radius", "must be at most 1e+100 in magnitude"),
    ("solver.max_iter=100000000000000000000000", "solver.max_iter", "must be <= 100000"),
    ("solver.undercut=1e300", "solver.undercut", "must be at most 1e+100 in magnitude"),
]


@pytest.mark.parametrize("override,field,message", BOUNDED, ids=[b[1] for b in BOUNDED])
def test_scene_numbers_are_bounded(tmp_path, override, field, message):
    scene = tmp_path / "scene.yaml"
    scene.write_text(PENDULUM)
    res = _cli("check", scene, "--set", override)
    assert res.exit_code == 2
    assert any(line.startswith(f"--set: {field}: {message}") for line in res.stderr.splitlines()), res.stderr


def test_bounds_are_reported_at_the_file_line():
    text = PENDULUM.replace("mass: 1.0", "mass: 1.0e+300").replace("[0, 0, 1.1]", "[0, 0, -1.0e+101]")
    assert _problems(None, text=text) == [
        "scene.yaml:8: bodies.0.mass: must be at most 1e+100 in magnitude, got 1e+300",
        "scene.yaml:15: joints.0.parent_vertex.2: must be at most 1e+100 in magnitude, got -1e+101",
    ]


def test_sensible_extremes_are_accepted():
    spec = load_scene_spec_from_string(
        PENDULUM.replace("mass: 1.0", "mass: 1.0e-6\n    inertia: [1.0e-12, 1.0e-12, 1.0e-12]"), "scene.yaml",
        overrides=["joints.0.spring=1e12", "gravity=[0, 0, -1e6]", "solver.rtol=1e-300", "joints.0.limits={lower: [-.inf], upper: [1e50]}"],
    )
    mech = build_mechanism(spec)
    assert mech.inertia[0, 0, 0] == 1e-12 and mech.spring[0] == 1e12


def test_explicit_inertia_near_the_bound_does_not_overflow_when_symmetrised():
    big = 0.9 * MAX_MAGNITUDE
    spec = load_scene_spec("pendulum", [f"bodies.0.inertia=[[{big}, 0, 0], [0, {big}, 0], [0, 0, {big}]]"])
    assert np.all(np.isfinite(spec.bodies[0].inertia_matrix()))


# ------------------------------------------------------------------------ names


NAMES = [
    ("bodies.0.name", '"li\\0nk"', "must be printable text, got '\\x00' (U+0000) at character 3"),
    ("bodies.0.name", '"li\\nnk"', "must be printable text, got '\\n' (U+000A) at character 3"),
    ("joints.0.name", '"hi\\tnge"', "must be printable text, got '\\t' (U+0009) at character 3"),
    ("joints.0.name", '"hinge\\x7f"', "must be printable text, got '\\x7f' (U+007F) at character 6"),
    ("joints.0.name", "x" * (MAX_NAME_LENGTH + 1), f"must be at most {MAX_NAME_LENGTH} characters, got {MAX_NAME_LENGTH + 1}"),
    ("name", '"run\\e"', "must be printable text, got '\\x1b' (U+001B) at character 4"),
    ("name", "../runs/x", "must not contain / or \\ (it names the output file), got '../runs/x'"),
    ("description", '"a\\bb"', "must be printable text, got '\\x08' (U+0008) at character 2"),
    ("bodies.0.shape", "{type: mesh, file: " + "m" * (MAX_PATH_LENGTH + 1) + "}", "must be a path of at most 4096 characters, got 4,097"),
]


@pytest.mark.parametrize("field,value,message", NAMES, ids=[f"{n[0]}-{i}" for i, n in enumerate(NAMES)])
def test_names_are_printable(tmp_path, field, value, message):
    problems = _problems(None, f"{field}={value}", text=PENDULUM)
    assert any(p.startswith(f"--set: {field}") and p.endswith(message) for p in problems), problems


def test_a_nul_in_a_body_name_writes_no_file(tmp_path):
    scene = tmp_path / "scene.yaml"
    scene.write_text(PENDULUM.replace("name: link", 'name: "li\\0nk"').replace("child: link", 'child: "li\\0nk"'))
    out = tmp_path / "run.h5"
    res = _cli("simulate", scene, "-o", out)
    assert res.exit_code == 2 and not out.exists()
    assert res.stderr.splitlines() == [
        f"{scene}:6: bodies.0.name: must be printable text, got '\\x00' (U+0000) at character 3",
        f"{scene}:13: joints.0.child: must be printable text, got '\\x00' (U+0000) at character 3",
    ]


def test_prose_may_have_line_breaks():
    spec = load_scene_spec_from_string(PENDULUM + 'description: "two\\nlines,\\ttabbed"\n')
    assert spec.description == "two\nlines,\ttabbed"


# ---------------------------------------------------------- the numeric model


def test_schedule_inputs_are_bounded(tmp_path):
    table = tmp_path / "inputs.csv"
    table.write_text("hinge\n0.5\n1e200\n")
    scene = tmp_path / "scene.yaml"
    scene.write_text(PENDULUM + "controller: {type: schedule, file: inputs.csv}\n")
    res = _cli("check", scene)
    assert res.exit_code == 2
    line = len(PENDULUM.splitlines()) + 1
    assert res.stderr.strip() == (
        f"{scene}:{line}: controller.file: {table}: row 2, column 1 is 1e+200, more than 1e+100 in magnitude"
    )


def test_shape_inertia_overflow_is_an_error_not_a_warning():
    for shape in (Shape("box", {"size": (1e200, 1e200, 1e200)}), Shape("sphere", {"radius": 1e200}),
                  Shape("capsule", {"radius": 1e200, "height": 1.0}), Shape("cylinder", {"radius": 1e160, "height": 1e160})):
        with pytest.raises(ValueError, match="not finite"):
            body_inertia(shape, 1e10)


def test_axis_basis_scales_before_normalising():
    np.testing.assert_array_equal(axis_basis(np.array([0.0, 1e200, 0.0]))[2], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(axis_basis(np.array([1e-200, 0.0, 0.0]))[2], [1.0, 0.0, 0.0])
    for bad in ([0.0, 0.0, 0.0], [np.nan, 1.0, 0.0], [np.inf, 0.0, 0.0]):
        with pytest.raises(ValueError, match="finite nonzero axis"):
            axis_basis(np.array(bad))


def _link(**changes):
    body = {"name": "link", "mass": 1.0, "inertia": np.eye(3)}
    body.update(changes)
    return Body(**body)


@pytest.mark.parametrize(
    "bodies,joints,field",
    [
        ([_link(inertia=np.full((3, 3), np.nan))], [Joint("hinge", "revolute", -1, 0)], "bodies.0.inertia"),
        ([_link(inertia=np.zeros((3, 3)))], [Joint("hinge", "revolute", -1, 0)], "bodies.0.inertia"),
        ([_link(mass=math.inf)], [Joint("hinge", "revolute", -1, 0)], "bodies.0.mass"),
        ([_link()], [Joint("hinge", "revolute", -1, 0, axis=np.zeros(3))], "joints.0.axis"),
        ([_link()], [Joint("hinge", "revolute", -1, 0, axis=np.array([np.nan, 0, 1]))], "joints.0.axis"),
        ([_link()], [Joint("hinge", "revolute", -1, 0, child_vertex=np.array([0, 0, np.inf]))], "joints.0.child_vertex"),
        ([_link()], [Joint("hinge", "revolute", -1, 0, spring=np.array([np.nan]))], "joints.0.spring"),
    ],
)
def test_mechanism_names_the_field_it_cannot_build_from(bodies, joints, field):
    with pytest.raises(SceneError) as info:
        Mechanism(bodies, joints, name="m")
    assert [p.field for p in info.value.problems] == [field]
    assert str(info.value.problems[0]).startswith(f"mechanism 'm': {field}: ")


def test_mechanism_refuses_a_non_finite_timestep_or_gravity():
    for timestep, gravity, field in ((math.nan, (0, 0, -9.81), "timestep"), (0.0, (0, 0, -9.81), "timestep"),
                                     (0.01, (0, math.inf, 0), "gravity")):
        with pytest.raises(SceneError) as info:
            Mechanism([_link()], [Joint("hinge", "revolute", -1, 0)], timestep=timestep, gravity=gravity)
        assert [p.field for p in info.value.problems] == [field]


def test_compile_model_names_the_scene_field_of_a_non_finite_entry():
    mech = dojo.load_scene("pendulum_limit")
    for attribute, index, field in (("basis", 4, "joints.0.axis"), ("limit_bound", 0, "joints.0.limits"),
                                    ("spring", 0, "joints.0.spring"), ("inertia", 8, "bodies.0.inertia"),
                                    ("gravity", 2, "gravity")):
        m = model_input(mech)
        values = list(getattr(m, attribute))
        values[index] = math.nan
        setattr(m, attribute, values)
        problem = _non_finite_field(mech, m)
        assert problem is not None and problem.field == field, (attribute, problem)
        assert "not finite" in problem.message


def test_non_finite_parameters_name_the_field():
    mech = dojo.load_scene("pendulum")
    with pytest.raises(SceneError) as info:
        dojo.with_parameters(mech, ["bodies.link.inertia.xx"], [math.inf])
    assert [p.field for p in info.value.problems] == ["bodies.0.inertia"]
