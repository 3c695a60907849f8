"""Invalid scenes: exit code 2, one line naming file, line and field, no traceback, no file."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from tests.cli.test_cli import PENDULUM

runner = CliRunner()

# (case id, edit of the valid pendulum scene, expected line, expected field path, words in the message)
CASES = [
    ("missing-field", lambda s: s.replace("    mass: 1.0\n", ""), 6, "bodies.0.mass", "required"),
    ("wrong-type", lambda s: s.replace("mass: 1.0", "mass: heavy"), 8, "bodies.0.mass", "number"),
    ("unknown-parent", lambda s: s.replace("parent: origin", "parent: base"), 12, "joints.0.parent", "unknown body 'base'"),
    ("duplicate-name", lambda s: s.replace("joints:", "  - name: link\n    mass: 1.0\njoints:"), 9, "bodies.1.name", "duplicate"),
    ("non-positive-mass", lambda s: s.replace("mass: 1.0", "mass: -2.0"), 8, "bodies.0.mass", "> 0"),
    ("inertia-not-pd", lambda s: s.replace("mass: 1.0", "mass: 1.0\n    inertia: [[1, 0, 0], [0, -1, 0], [0, 0, 1]]"), 9,
     "bodies.0.inertia", "positive definite"),
    ("bad-quaternion", lambda s: s.replace("child_vertex: [0, 0, 0.5]", "child_vertex: [0, 0, 0.5]\n    orientation_offset: [0, 0, 0, 0]"),
     17, "joints.0.orientation_offset", "quaternion"),
    ("wrong-initial-count", lambda s: s.replace("position: [0.5]", "position: [0.5, 0.1]"), 17, "joints.0.initial.position",
     "1 value"),
    ("unknown-joint-type", lambda s: s.replace("type: revolute", "type: hinge"), 11, "joints.0.type", "unknown joint type 'hinge'"),
    # YAML reports an unclosed bracket where it notices it: the next line
    ("malformed-yaml", lambda s: s.replace("timestep: 0.01", "timestep: [0.01"), 3, "", "invalid YAML"),
    ("unknown-field", lambda s: s.replace("mass: 1.0", "mass: 1.0\n    masss: 2"), 9, "bodies.0.masss", "unknown field"),
    ("non-positive-timestep", lambda s: s.replace("timestep: 0.01", "timestep: 0"), 2, "timestep", "> 0"),
    ("steps-and-duration", lambda s: s.replace("steps: 20", "steps: 20\nduration: 1.0"), None, "steps", "not both"),
    ("unattached-body", lambda s: s.replace("joints:", "  - name: loose\n    mass: 1.0\n    inertia: [1, 1, 1]\njoints:"), 9,
     "bodies.1", "attached by no joint"),
    ("controller-unknown-joint", lambda s: s + "controller: {type: constant, inputs: {knee: [1.0]}}\n", None,
     "controller.inputs.knee", "unknown joint"),
    # issue 11: numbers beyond the bounds, quantities derived after the arithmetic, names
    ("mass-too-large", lambda s: s.replace("mass: 1.0", "mass: 1.0e+300"), 8, "bodies.0.mass", "at most 1e+100 in magnitude"),
    ("derived-inertia-too-large", lambda s: s.replace("size: [0.1, 0.1, 1.0]", "size: [1.0e+60, 1.0e+60, 1.0e+60]"), 7,
     "bodies.0.shape", "the inertia from this shape and the mass 1 kg reaches"),
    ("weight-too-large", lambda s: s.replace("mass: 1.0", "mass: 1.0e+99").replace("-9.81]", "-100]"), 8, "bodies.0.mass",
     "the weight mass * |gravity|"),
    ("nul-in-name", lambda s: s.replace("name: hinge", 'name: "hin\\0ge"'), 10, "joints.0.name", "must be printable text"),
    ("control-character-in-file", lambda s: s.replace("name: hinge", "name: hin\x01ge"), 10, "", "character U+0001"),
]


@pytest.mark.parametrize("case,edit,line,field,words", CASES, ids=[c[0] for c in CASES])
def test_invalid_scene(tmp_path, case, edit, line, field, words):
    scene = tmp_path / "bad.yaml"
    scene.write_text(edit(PENDULUM))
    out = tmp_path / "out.h5"
    res = runner.invoke(app, ["simulate", str(scene), "-o", str(out)])
    assert res.exit_code == 2, f"exit {res.exit_code}: {res.output}"
    assert "Traceback" not in res.output
    assert not out.exists(), "no output file for an invalid scene"
    lines = res.stderr.strip().splitlines()
    prefix = f"{scene}:{line}: " if line is not None else f"{scene}:"
    hits = [ln for ln in lines if ln.startswith(prefix) and (not field or f": {field}: " in ln) and words in ln]
    assert hits, f"expected a line starting {prefix!r} naming {field!r} with {words!r}; got:\n{res.stderr}"
    check = runner.invoke(app, ["check", str(scene)])
    assert check.exit_code == 2 and check.stderr == res.stderr


def test_unknown_scene_name():
    res = runner.invoke(app, ["simulate", "no_such_scene"])
    assert res.exit_code == 2 and "no_such_scene" in res.stderr and "pendulum" in res.stderr
