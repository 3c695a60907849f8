"""dojo step, dojo gradients (files, --check) and dojo simulate --gradients, via typer's CliRunner."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.commands import gradient as gradient_commands
from dojo_cli.simulation import run as run_loop
from dojo_cli.io.storage import writer as storage_writer
from dojo_cli.cli.app import app
from tests.cli.test_cli import interrupt_after
from dojo_cli.io.gradient_files import read_gradient_file
from dojo_cli.io.storage import read_gradient_rows, read_storage

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def stored_state(run, k):
    return run.trajectory.state(k)


@pytest.fixture(scope="module")
def box_run(tmp_path_factory):
    """A box toss run to step 60 (0.6 s): in contact with the ground from about step 45."""
    out = tmp_path_factory.mktemp("box") / "box.h5"
    res = invoke("simulate", "box", "-o", out, "--steps", 60, "-q")
    assert res.exit_code == 0, res.output
    return out


# ------------------------------------------------------------------ dojo step
def test_step_json_equals_library_step():
    res = invoke("step", "pendulum", "--input", "0.5", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    mech = dojo.load_scene("pendulum")
    z1 = dojo.step(mech, dojo.initial_state(mech), [0.5])
    assert np.array_equal(doc["maximal"], z1)
    assert np.allclose(doc["minimal"], dojo.maximal_to_minimal(mech, z1), rtol=0, atol=1e-15)
    assert doc["bodies"]["link"]["q"] == z1[6:10].tolist()
    assert doc["minimal_names"] == ["hinge:r0", "hinge:r0_dot"]
    assert doc["solver"]["status"] == "success" and doc["solver"]["iterations"] >= 1
    assert doc["input"] == [0.5] and doc["time"] == pytest.approx(0.01)


def test_step_text_output_and_minimal(tmp_path):
    res = invoke("step", "pendulum")
    assert res.exit_code == 0, res.output
    assert "link" in res.stdout and "omega" in res.stdout and "solver: success" in res.stdout
    out = tmp_path / "next.json"
    res = invoke("step", "pendulum", "--minimal", "-o", out)
    assert res.exit_code == 0, res.output
    assert "hinge:r0_dot" in res.stdout and out.exists()
    assert json.loads(out.read_text())["coordinates"] == "minimal"


def test_step_output_chains_as_state_file(tmp_path):
    """The JSON `dojo step` writes is a --state file: two CLI steps = two library steps."""
    one = tmp_path / "one.json"
    assert invoke("step", "pendulum", "-o", one).exit_code == 0
    res = invoke("step", "pendulum", "--state", one, "--json")
    assert res.exit_code == 0, res.output
    mech = dojo.load_scene("pendulum")
    z2 = dojo.step(mech, dojo.step(mech, dojo.initial_state(mech)))
    assert np.allclose(json.loads(res.stdout)["maximal"], z2, rtol=0, atol=1e-14)


def test_step_minimal_csv_state(tmp_path):
    csv = tmp_path / "y.csv"
    csv.write_text("# angle, rate\n0.3, -0.2\n")
    res = invoke("step", "pendulum", "--state", csv, "--json")
    assert res.exit_code == 0, res.output
    mech = dojo.load_scene("pendulum")
    z1 = dojo.step(mech, dojo.minimal_to_maximal(mech, np.array([0.3, -0.2])))
    assert np.allclose(json.loads(res.stdout)["maximal"], z1, rtol=0, atol=1e-14)


def test_step_from_run_reproduces_stored_step(box_run):
    run = read_storage(box_run)
    res = invoke("step", "box", "--from", box_run, "--index", 50, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert "state 50 of" in doc["from"] and doc["time"] == pytest.approx(0.51)
    assert np.allclose(doc["maximal"], stored_state(run, 51), rtol=0, atol=1e-9)
    assert doc["input"] == run.trajectory.inputs[50].tolist()


def test_step_solver_failure_exit_codes():
    args = ("step", "pendulum", "--set", "solver.max_iter=1", "--set", "solver.rtol=1e-14")
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    assert "max_iterations" in res.stdout and "warning" in res.stderr
    res = invoke(*args, "--abort-on-failure")
    assert res.exit_code == 1


@pytest.mark.parametrize(
    "args,message",
    [
        (("--state", "SHORT"), "expected 13 (maximal"),
        (("--state", "BADQUAT"), "unit quaternion"),
        (("--state", "NOKEY"), "'maximal' or 'minimal'"),
        (("--from", "RUN", "--index", 61), "holds states 0..60"),
        (("--from", "RUN"), "--from needs --index"),
        (("--index", 3), "--index needs --from"),
        (("--input", "1,2"), "has 6 inputs"),
        (("--input", "a"), "expected numbers"),
    ],
    ids=["wrong-length", "quaternion", "json-key", "index", "no-index", "index-alone", "input-length", "input-text"],
)
def test_step_bad_inputs_exit_2(tmp_path, box_run, args, message):
    files = {
        "SHORT": tmp_path / "short.csv",
        "BADQUAT": tmp_path / "badq.json",
        "NOKEY": tmp_path / "nokey.json",
        "RUN": box_run,
    }
    files["SHORT"].write_text("1, 2, 3\n")
    z = dojo.initial_state(dojo.load_scene("box"))
    z[6] = 2.0
    files["BADQUAT"].write_text(json.dumps({"maximal": z.tolist()}))
    files["NOKEY"].write_text(json.dumps({"state": [1, 2]}))
    res = invoke("step", "box", *[files.get(a, a) if isinstance(a, str) else a for a in args])
    assert res.exit_code == 2, res.output
    assert message in res.stderr, res.stderr
    assert "Traceback" not in res.output


@pytest.mark.parametrize("command", ["step", "gradients", "dynamics"])
def test_missing_state_or_run_file_is_an_io_error(tmp_path, command):
    """A missing --state or --from file is an I/O error (exit 3, README), the same in the
    three commands that read them (dojo_cli.io.state_files)."""
    missing = tmp_path / "missing.json"
    res = invoke(command, "pendulum", "--state", missing)
    assert res.exit_code == 3, res.output
    assert res.stderr == f"--state {missing}: no such file\n"
    res = invoke(command, "pendulum", "--from", tmp_path / "none.h5", "--index", 0)
    assert res.exit_code == 3, res.output
    assert res.stderr == f"--from {tmp_path / 'none.h5'}: no such file\n"


def test_from_run_of_another_scene_exit_2(box_run):
    res = invoke("step", "pendulum", "--from", box_run, "--index", 0)
    assert res.exit_code == 2
    assert "are not the scene's" in res.stderr and "'box'" in res.stderr


# ------------------------------------------------------------- dojo gradients
def test_gradients_h5_equals_step_gradients(tmp_path):
    out = tmp_path / "g.h5"
    res = invoke("gradients", "pendulum", "--input", "0.2", "--wrt", "state,input,params", "--params", "mass,gravity", "-o", out)
    assert res.exit_code == 0, res.output
    assert "(12, 12)" in res.stdout and "kappa" in res.stdout
    mech = dojo.load_scene("pendulum")
    g = dojo.step_gradients(mech, dojo.initial_state(mech), [0.2], wrt=("state", "input", "params"), params=("mass", "gravity"))
    with h5py.File(out) as f:
        assert f.attrs["format"] == "dojo-gradients" and f.attrs["coordinates"] == "maximal"
        assert np.array_equal(f["A"][...], g.A) and np.array_equal(f["B"][...], g.B) and np.array_equal(f["P"][...], g.P)
        assert list(f["A"].attrs["rows"])[:4] == ["link.x.0", "link.x.1", "link.x.2", "link.v.0"]
        assert list(f["A"].attrs["rows"])[6:9] == ["link.phi.0", "link.phi.1", "link.phi.2"]
        assert list(f["B"].attrs["cols"]) == ["hinge:r0"]
        assert list(f["P"].attrs["cols"]) == ["bodies.link.mass", "gravity.x", "gravity.y", "gravity.z"]
        assert np.array_equal(f["next_state"][...], g.next_state) and f["input"][...].tolist() == [0.2]
    back = read_gradient_file(out)
    assert np.array_equal(back.matrices["A"], g.A) and back.labels["P"][1] == g.labels


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_gradients_minimal_json_npz(tmp_path, suffix):
    out = tmp_path / f"g{suffix}"
    res = invoke("gradients", "double_pendulum", "--minimal", "-o", out)
    assert res.exit_code == 0, res.output
    mech = dojo.load_scene("double_pendulum")
    y = dojo.maximal_to_minimal(mech, dojo.initial_state(mech))
    g = dojo.step_gradients(mech, y, None, minimal=True)
    back = read_gradient_file(out)
    assert back.meta["coordinates"] == "minimal"
    assert np.allclose(back.matrices["A"], g.A, rtol=0, atol=1e-14) and np.allclose(back.matrices["B"], g.B, rtol=0, atol=1e-14)
    rows, cols = back.labels["A"]
    assert rows == cols and len(rows) == 2 * mech.nf and rows[1].endswith("_dot")


@pytest.mark.parametrize(
    "scene,extra",
    [("pendulum", ("--wrt", "state,input,params", "--params", "mass,spring,damper", "--set", "joints.0.spring=2")),
     ("box", ()),
     # body actuators (forces at points and torques, fixed in the body) away from hover
     ("pinnzoo_quadrotor", ("-u", "2.6,2.4,2.3,2.5", "--set", "joints.0.initial.position=[0.1, 0.2, 0.3, 0.3, 0.5, -0.2]",
                            "--set", "joints.0.initial.velocity=[0.8, 0.1, 0.2, -0.4, 0.3, -0.5]")),
     # (a tighter solve: the step's residual 1e-10, in momentum units, on the 0.0046 kg m^2 rotor
     # body is 2e-8 rad/s, 1e-5 of the finite differences' columns at their step 2.6e-6)
     ("pinnzoo_quadrotor", ("--minimal", "-u", "2.6,2.4,2.3,2.5", "--set", "joints.0.initial.position=[0.1, 0.2, 0.3, 0.3, 0.5, -0.2]",
                            "--check-solver-tol", "1e-13"))],
    ids=["pendulum", "box-flying", "quadrotor-actuators", "quadrotor-actuators-minimal"],
)
def test_check_passes(scene, extra):
    res = invoke("gradients", scene, "--check", *extra)
    assert res.exit_code == 0, res.output
    assert "check passed" in res.stdout and "rtol = btol = 1e-1" in res.stdout
    assert "FAIL" not in res.stdout


def test_check_relaxed_in_contact(box_run):
    run = read_storage(box_run)
    assert run.trajectory.contact_distance[55].min() < 1e-3, "the box touches the ground at step 55"
    res = invoke("gradients", "box", "--from", box_run, "--index", 55, "--check", "--kappa", "1e-4")
    assert res.exit_code == 0, res.output
    assert "relaxed step" in res.stdout and "check passed" in res.stdout


def test_check_fails_on_wrong_jacobian(monkeypatch):
    real = gradient_commands.step_gradients

    def wrong(*args, **kwargs):
        g = real(*args, **kwargs)
        g.A = g.A + 1e-3
        return g

    monkeypatch.setattr(gradient_commands, "step_gradients", wrong)
    res = invoke("gradients", "pendulum", "--check")
    assert res.exit_code == 1, res.output
    assert "check FAILED" in res.stdout
    a_row = next(line for line in res.stdout.splitlines() if line.startswith("A     (all)"))
    assert "FAIL" in a_row and float(a_row.split()[-2]) == pytest.approx(1e-3, rel=0.01)
    b_row = next(line for line in res.stdout.splitlines() if line.startswith("B     (all)"))
    assert b_row.split()[-1] == "ok"


@pytest.mark.parametrize(
    "args,message",
    [
        (("--wrt", "state,speed"), "--wrt"),
        (("--params", "mass,colour"), "unknown parameter kind"),
        (("--kappa", "-1"), "--kappa"),
        (("-o", "grads.txt"), "unknown file type"),
        (("--input", "1", "--input-file", "u.json"), "not both"),
    ],
    ids=["wrt", "params", "kappa", "suffix", "two-inputs"],
)
def test_gradients_bad_options_exit_2(args, message):
    res = invoke("gradients", "pendulum", *args)
    assert res.exit_code == 2, res.output
    assert message in res.stderr


def test_gradients_refuse_external_forces():
    res = invoke("gradients", "pendulum", "--set", "external=[{body: link, force: [0, 1, 0]}]")
    assert res.exit_code == 2, res.output
    assert "external forces" in res.stderr


# --------------------------------------------------------- simulate --gradients
def test_simulate_stores_gradients(tmp_path, monkeypatch):
    monkeypatch.setattr(storage_writer, "_COMPACT_MIN_BYTES", 0)  # (8 steps are otherwise too few to compact)
    out = tmp_path / "g.h5"
    # from Dojo's start: dojo.step_gradients below is stateless (every step from Dojo's point),
    # and a warm-started step's solution differs from it within the solver's tolerance (1e-9
    # in A), not to the 1e-12 this compares the stored gradients to
    res = invoke("simulate", "box", "-o", out, "--steps", 8, "--gradients", "-q", "--set", "solver.warm_start=false")
    assert res.exit_code == 0, res.output
    mech = dojo.load_scene("box")
    with h5py.File(out) as f:
        a, b = f["gradients/A"], f["gradients/B"]
        assert a.shape == (8, 12, 12) and b.shape == (8, 12, 6)
        assert a.compression == "gzip" and a.chunks[1:] == (12, 12)
        assert list(b.attrs["cols"]) == mech.coordinate_names()
        assert f["gradients/kappa"].shape == (8,) and "gradients/mismatch" not in f, "taken on the step's own solve"
    run = read_storage(out)
    assert not any(k.startswith("gradients/") for k in run.extras), "gradients are read on request only"
    assert read_storage(out, gradients=True).extras["gradients/A"].shape == (8, 12, 12)
    k = 5
    g = dojo.step_gradients(mech, stored_state(run, k), run.trajectory.inputs[k])
    rows = read_gradient_rows(out, [k])
    assert np.allclose(rows["gradients/A"][0], g.A, rtol=0, atol=1e-12)
    assert np.allclose(rows["gradients/B"][0], g.B, rtol=0, atol=1e-12)
    assert invoke("energy", out).exit_code == 0
    assert invoke("contacts", out).exit_code == 0


def test_simulate_gradients_wrt_state_only(tmp_path):
    out = tmp_path / "a.h5"
    res = invoke("simulate", "double_pendulum", "-o", out, "--steps", 3, "--gradients-wrt", "state", "-q")
    assert res.exit_code == 0, res.output
    with h5py.File(out) as f:
        assert f["gradients/A"].shape == (3, 24, 24) and "gradients/B" not in f
    res = invoke("simulate", "pendulum", "-o", tmp_path / "b.h5", "--gradients-wrt", "mass")
    assert res.exit_code == 2 and "--gradients-wrt" in res.stderr


def test_interrupted_simulate_keeps_gradients(tmp_path, monkeypatch):
    monkeypatch.setattr(run_loop, "run", interrupt_after(run_loop.run, 5))  # (the loop run_scene drives)
    out = tmp_path / "int.h5"
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 50, "--gradients")
    assert res.exit_code == 130
    run = read_storage(out, gradients=True)
    assert run.status == "interrupted" and run.steps_completed == 5
    assert run.extras["gradients/A"].shape == (5, 12, 12)
    assert invoke("energy", out).exit_code == 0


def test_actuator_runs_store_named_inputs_and_gradient_columns(tmp_path):
    """With actuators the storage file's inputs and the stored B's columns are the actuators."""
    out = tmp_path / "quad.h5"
    res = invoke("simulate", "pinnzoo_quadrotor", "-o", out, "--steps", 5, "--gradients", "-q")
    assert res.exit_code == 0, res.output
    with h5py.File(out) as f:
        assert f["inputs"].shape == (5, 4)
        assert [str(n) for n in f["inputs"].attrs["names"]] == ["m1", "m2", "m3", "m4"]
        np.testing.assert_array_equal(f["inputs"][:], np.full((5, 4), 2.4525))
        assert f["gradients/B"].shape == (5, 12, 4)
    res = invoke("gradients", "pinnzoo_quadrotor", "-u", "1,2,3")
    assert res.exit_code == 2 and "this scene has 4 inputs (m1, m2, m3, m4), got 3" in res.output
