"""`dojo import-mjcf`: writes a scene that loads, refuses what it cannot map with file:line
(exit 2), reports a missing file as I/O (exit 3); the physics is checked in
tests/scene/test_mjcf.py and tests/simulation/test_mjcf_mujoco.py."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.scene.loader import load_scene_spec

import gymnasium  # noqa: E402  (the test extra: its models must not be skipped, issue 25 item 8)
HOPPER = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "hopper.xml"
FEATURES = Path(__file__).parents[1] / "scene" / "data" / "mjcf" / "features.xml"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


SWIMMER = HOPPER.parent / "swimmer.xml"


def test_import_writes_a_scene_that_loads(tmp_path):
    out = tmp_path / "hopper.yaml"
    res = invoke("import-mjcf", HOPPER, "-o", out)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(f"wrote {out}: 4 bodies, 4 joints, 23 contacts, 3 inputs, total mass 15.82")
    assert "note: ctrlrange of 3 actuators: motors' inputs are clamped to it" in res.stdout
    assert res.stderr == ""
    mech = dojo.load_scene(str(out))
    assert mech.timestep == 0.002 and [j.name for j in mech.joints][:2] == ["rootx_rootz_rooty", "thigh_joint"]
    assert list(mech.armature) == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]  # the hinges' rotors, root none
    assert [a.ctrl_range for a in load_scene_spec(out).actuators] == [[-1.0, 1.0]] * 3  # the motors: ctrlrange -1 1
    # its run reads back (the stored scene's shape contacts: their sphere fields are written as defaults)
    run = tmp_path / "hopper.h5"
    res = invoke("simulate", out, "--steps", 3, "-o", run, "-q")
    assert res.exit_code == 0, res.output
    res = invoke("energy", run)
    assert res.exit_code == 0, res.output


def test_import_refuses_with_file_line_and_element_and_writes_nothing(tmp_path):
    out = tmp_path / "swimmer.yaml"
    res = invoke("import-mjcf", SWIMMER, "-o", out)
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert lines[0] == (f"{SWIMMER}:3: <option>: fluid forces (density=4000, viscosity=0.1) are not modelled "
                        "(import without it: --drop-unsupported)")
    assert "Traceback" not in res.output and not out.exists()
    res = invoke("import-mjcf", SWIMMER, "-o", out, "--drop-unsupported")
    assert res.exit_code == 0, res.output
    warnings = res.stderr.splitlines()
    assert len(warnings) == 2 and "fluid forces left out (--drop-unsupported), 1 at" in warnings[0]
    assert "rotor inertia (armature) of slides, balls and free joints left out (--drop-unsupported), 2 at" in warnings[1]


def test_keyframe_option(tmp_path):
    out = tmp_path / "features.yaml"
    res = invoke("import-mjcf", FEATURES, "-o", out, "--keyframe", "bent", "--drop-unsupported")
    assert res.exit_code == 0, res.output
    scene = dojo.load_scene(str(out))
    assert scene.joints[1].name == "hip"
    res = invoke("import-mjcf", FEATURES, "-o", tmp_path / "other.yaml", "--keyframe", "nope", "--drop-unsupported")
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [f"{FEATURES}: --keyframe: no <key name='nope'> (keys: bent)"]


PRISMAVERSAL = """<mujoco model="prismaversal">
  <worldbody>
    <body name="b" pos="0 0 1">
      <joint name="h" type="hinge" axis="0 1 0"/>
      <joint name="s" type="slide" axis="1 0 0" range="-1 1"/>
      <geom type="sphere" size="0.1" pos="0.2 0 0"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_split_joints_and_its_old_name_split_hinges_write_the_same_chain(tmp_path):
    """A hinge then a slide in one body: refused naming --split-joints (exit 2); with it, or its
    old name --split-hinges, the same scene: a revolute joint to a light link, a prismatic
    joint to the body."""
    model = tmp_path / "prismaversal.xml"
    model.write_text(PRISMAVERSAL)
    res = invoke("import-mjcf", model, "-o", tmp_path / "refused.yaml")
    assert res.exit_code == 2 and res.stderr.rstrip().endswith("(a chain of joints through light links: --split-joints)"), res.output
    written = []
    for flag in ("--split-joints", "--split-hinges"):
        out = tmp_path / f"{flag[2:]}.yaml"
        res = invoke("import-mjcf", model, "-o", out, flag)
        assert res.exit_code == 0, res.output
        assert res.stdout.startswith(f"wrote {out}: 2 bodies, 2 joints, 0 contacts"), res.stdout
        written.append(out.read_text())
    assert written[0] == written[1]
    mech = dojo.load_scene(str(tmp_path / "split-joints.yaml"))
    assert [(j.name, str(j.type)) for j in mech.joints] == [("h", "revolute"), ("s", "prismatic")]
