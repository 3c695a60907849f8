"""Issue 30's messages: what a new user gets for the mistakes the issue lists, each checked by
the key part of its text and its exit code (2: the input is wrong, with what to do instead)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError, SolverError
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec
from dojo_cli.simulation.initial import initial_state

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("command", ["plot", "energy", "info", "contacts"])
def test_a_built_in_scene_given_to_a_command_that_reads_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file named box here
    res = invoke(command, "box")
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (f"box: a built-in scene, not a run file: `dojo {command}` reads a run; simulate it "
                                  f"first: `dojo simulate box -o box.h5`, then `dojo {command} box.h5`")


def test_a_missing_run_file_that_is_no_scene_is_still_an_io_error(tmp_path):
    res = invoke("plot", tmp_path / "nothing.h5")
    assert res.exit_code == 3 and "nothing.h5: no such file" in res.stderr


def test_a_run_file_given_to_draw_says_what_it_is(tmp_path):
    run = tmp_path / "b.h5"
    assert invoke("simulate", "pendulum", "--steps", 2, "-o", run).exit_code == 0
    res = invoke("draw", run)
    assert res.exit_code == 2, res.output
    assert f"{run}: this is an HDF5 run file (written by `dojo simulate` or `dojo sweep`), not a YAML scene" in res.stderr
    assert "UTF-8" not in res.stderr


def test_a_timestep_too_large_for_the_initial_velocities_is_blamed_on_the_timestep(tmp_path):
    """box tumbles at 6.7 rad/s: a 1 s step cannot start from it. The timestep set by
    --set is the cause (the scene's own initial values work at its own step). Loading the
    scene does not solve (the builder is pure): the run that starts from it fails, before
    any file is made, as a solver failure (exit 1) naming the field."""
    mech = build_mechanism(load_scene_spec("box", ["timestep=1"]))  # builds: nothing solved yet
    with pytest.raises(SolverError) as err:
        initial_state(mech)
    (line,) = err.value.lines()
    assert line.startswith("--set: timestep: at timestep 1 s (the fastest body turns 6.71 rad and moves 2.06 m in one "
                           "step), the velocities at t = 0 give no first step"), line
    assert line.endswith("or take a smaller timestep")
    res = invoke("simulate", "box", "--set", "timestep=1", "--steps", 2, "-o", tmp_path / "b.h5")
    assert res.exit_code == 1, res.output
    assert res.stderr.strip().splitlines()[-1] == line, res.stderr
    assert not (tmp_path / "b.h5").exists()
    assert initial_state(build_mechanism(load_scene_spec("box"))).shape == (13,)  # the scene as written starts


def test_overrides_given_in_python_are_not_called_set():
    with pytest.raises(SceneError) as err:
        load_scene_spec("pendulum", {"timestep": -1})
    assert err.value.lines() == ["overrides: timestep: must be > 0, got -1"]
    with pytest.raises(SceneError) as err:
        load_scene_spec("pendulum", ["timestep=-1"])  # --set's text form
    assert err.value.lines() == ["--set: timestep: must be > 0, got -1"]


def test_params_of_a_kind_the_scene_does_not_have_is_refused():
    res = invoke("gradients", "pendulum", "--params", "friction,mass")
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == "--params: pendulum has no friction parameter (its kinds: mass, inertia, gravity, " \
                                 "spring, damper)"
    assert invoke("gradients", "sphere", "--params", "friction").exit_code == 0


def test_a_contact_shape_named_by_a_word_is_a_plain_message(tmp_path):
    """`shape: box` on a contact: no pydantic internals (literal['body'], tagged-union[...])."""
    for value, expected in (
        ("box", ["--set: contacts.0.shape: must be 'body' or a mapping, got 'box'"]),
        ("{type: box}", ["--set: contacts.0.shape.size: field required"]),
        ("{type: boxx}", ["--set: contacts.0.shape.type: unknown shape type 'boxx' (one of: box, sphere, cylinder, "
                          "capsule, pyramid, hull)"]),
    ):
        with pytest.raises(SceneError) as err:
            load_scene_spec("sphere", [f"contacts.0.shape={value}"])
        assert err.value.lines() == expected
    # the word the docs give: the body's own shape
    from dojo_cli.scene.loader import builtin_scene_text

    scene = tmp_path / "sphere.yaml"
    text = builtin_scene_text("sphere")
    assert "radius: 0.5, offset: [0, 0, 0]," in text
    scene.write_text(text.replace("radius: 0.5, offset: [0, 0, 0],", "shape: body,"))
    assert load_scene_spec(scene).contacts[0].shape == "body"


def test_scenes_md_lists_every_contact_field():
    from pathlib import Path

    from dojo_cli.scene.schema import ContactSpec

    text = (Path(__file__).parents[2] / "docs" / "scenes.md").read_text()
    listed = text.split("`contacts: [{", 1)[1].split("}]`", 1)[0]
    assert set(ContactSpec.fields) <= {f.strip() for f in listed.split(",")}, listed
