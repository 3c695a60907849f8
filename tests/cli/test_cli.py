"""The dojo command line, driven by typer's CliRunner: exit codes, messages, files."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.simulation import run as run_loop
from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.simulation.run import FIRST_BLOCK

runner = CliRunner()

# How far a resting contact may end inside the ground: the gap row's tolerance, rtol (1e-6) in its
# unit, the box's 0.1 m length scale (core/maximal/tolerances.h).
PENETRATION_TOL = 1e-7

PENDULUM = """\
name: test_pendulum
timestep: 0.01
gravity: [0, 0, -9.81]
steps: 20
bodies:
  - name: link
    shape: {type: box, size: [0.1, 0.1, 1.0]}
    mass: 1.0
joints:
  - name: hinge
    type: revolute
    parent: origin
    child: link
    axis: [1, 0, 0]
    parent_vertex: [0, 0, 1.1]
    child_vertex: [0, 0, 0.5]
    initial: {position: [0.5]}
"""


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def write(tmp_path, text, name="scene.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_simulate_builtin_writes_complete_storage(tmp_path):
    out = tmp_path / "run.h5"
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 30)
    assert res.exit_code == 0, res.output
    assert "wrote" in res.stdout and "30 steps" in res.stdout
    with h5py.File(out) as f:
        a = f.attrs
        assert a["format"] == "dojo-storage" and int(a["format_version"]) == 1
        assert a["status"] == "complete" and int(a["steps_completed"]) == 30
        assert a["scene_name"] == "pendulum" and float(a["timestep"]) == 0.01
        assert "joints:" in a["scene"] and json.loads(a["solver_options"])["rtol"] == 1e-6
        for key in ("dojo_cli_version", "gravity", "integrator", "created"):
            assert key in a, key
        assert f["x"].shape == (31, 1, 3) and f["q"].shape == (31, 1, 4)
        assert f["v"].shape == (31, 1, 3) and f["omega"].shape == (31, 1, 3)
        assert f["minimal/q"].shape == (31, 1) and f["minimal/v"].shape == (31, 1)
        assert f["inputs"].shape == (30, 1)
        assert f["solver/iterations"].shape == (30,) and f["solver/residual"].shape == (30,)
        assert list(f["x"].attrs["names"]) == ["link"]
        assert np.allclose(f["time"][...], np.arange(31) * 0.01)
        q = f["q"][...]
        assert np.allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-12), "unit quaternions"
        assert np.all(f["solver/residual"][...] < 1e-6)
    run = read_storage(out)
    assert run.trajectory.minimal_q[0, 0] == pytest.approx(0.7854, abs=1e-12), "initial angle of the built-in pendulum"


def test_simulate_set_override_changes_physics(tmp_path):
    out = tmp_path / "still.h5"
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 20, "--set", "gravity=[0, 0, 0]")
    assert res.exit_code == 0, res.output
    run = read_storage(out)
    assert np.max(np.abs(run.trajectory.minimal_q[:, 0] - 0.7854)) < 1e-12, "no gravity, released at rest: stays put"
    assert "- 0.0" in run.scene_yaml or "0.0, 0.0, 0.0" in run.scene_yaml


def test_simulate_duration_and_default_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scene = write(tmp_path, PENDULUM)
    res = invoke("simulate", scene, "--duration", 0.1, "--quiet")
    assert res.exit_code == 0, res.output
    assert res.stdout == "", "--quiet prints nothing"
    # the scene file's stem, in outputs/ (created)
    assert read_storage(tmp_path / "outputs" / "scene.h5").steps_completed == 10


def test_default_output_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = invoke("simulate", "pendulum", "--steps", 3)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("wrote outputs/pendulum.h5:"), first.stdout
    created = read_storage(tmp_path / "outputs" / "pendulum.h5").attrs["created"]
    second = invoke("simulate", "pendulum", "--steps", 4)
    assert second.exit_code == 0, second.output
    assert second.stdout.startswith("wrote outputs/pendulum-2.h5:"), "a new name, printed"
    assert read_storage(tmp_path / "outputs" / "pendulum.h5").attrs["created"] == created, "the first file untouched"
    assert read_storage(tmp_path / "outputs" / "pendulum-2.h5").steps_completed == 4
    third = invoke("simulate", "pendulum", "--steps", 5, "--force", "-q")
    assert third.exit_code == 0, third.output
    assert read_storage(tmp_path / "outputs" / "pendulum.h5").steps_completed == 5, "--force: the first name, rewritten"
    assert not (tmp_path / "outputs" / "pendulum-3.h5").exists()


def test_output_folders_are_created(tmp_path):
    out = tmp_path / "a" / "b" / "run.h5"
    res = invoke("simulate", "pendulum", "--steps", 2, "-o", out, "-q")
    assert res.exit_code == 0, res.output
    assert read_storage(out).steps_completed == 2


def test_simulate_scene_steps_used(tmp_path):
    res = invoke("simulate", write(tmp_path, PENDULUM), "-o", tmp_path / "a.h5")
    assert res.exit_code == 0, res.output
    assert read_storage(tmp_path / "a.h5").steps_completed == 20


def test_steps_and_duration_conflict(tmp_path):
    res = invoke("simulate", "pendulum", "-o", tmp_path / "x.h5", "--steps", 5, "--duration", 1)
    assert res.exit_code == 2
    assert "--steps and --duration" in res.stderr
    assert not (tmp_path / "x.h5").exists()


def test_no_steps_anywhere(tmp_path):
    scene = write(tmp_path, PENDULUM.replace("steps: 20\n", ""))
    res = invoke("simulate", scene, "-o", tmp_path / "x.h5")
    assert res.exit_code == 2 and "neither steps nor duration" in res.stderr
    assert not (tmp_path / "x.h5").exists()


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "run.h5"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 2).exit_code == 0
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 2)
    assert res.exit_code == 3 and "already exists" in res.stderr
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 3, "--force").exit_code == 0
    assert read_storage(out).steps_completed == 3


def test_unwritable_output_is_io_error(tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    out = tmp_path / "a_file" / "run.h5"  # (a missing folder is created; one under a file cannot be)
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 2)
    assert res.exit_code == 3, res.output
    assert str(out) in res.stderr and "cannot create the folder" in res.stderr and "Traceback" not in res.output
    assert not out.exists()


def test_abort_on_failure_marks_file_failed(tmp_path):
    out = tmp_path / "fail.h5"
    res = invoke(
        "simulate", "pendulum", "-o", out, "--steps", 10, "--abort-on-failure",
        "--set", "solver.rtol=1e-300", "--set", "solver.max_iter=1",
    )
    assert res.exit_code == 1, res.output
    assert "step 0" in res.stderr and "failed" in res.stderr
    run = read_storage(out)
    assert run.status == "failed" and run.steps_completed == 1
    assert run.trajectory.status[0] in ("max_iterations", b"max_iterations", "line_search_failure", b"line_search_failure")


def test_failures_without_abort_are_recorded(tmp_path):
    out = tmp_path / "f.h5"
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 3, "--set", "solver.rtol=1e-300", "--set", "solver.max_iter=1")
    assert res.exit_code == 4, "a run with failed steps is not a success"
    assert "3 of 3 steps did not converge, the first at step 0" in res.stderr
    assert read_storage(out).status == "complete_with_failures"


def test_failures_are_reported_even_when_quiet(tmp_path):
    out = tmp_path / "q.h5"
    res = invoke("simulate", "box", "-o", out, "--steps", 20, "-q", "--set", "solver.max_iter=2")
    assert res.exit_code == 4
    assert "20 of 20 steps did not converge" in res.stderr and "complete_with_failures" in res.stderr
    with h5py.File(out) as f:
        assert f.attrs["status"] == "complete_with_failures"
        assert f.attrs["failed_steps"] == 20 and f.attrs["first_failed_step"] == 0


def test_a_diverging_step_is_never_success(tmp_path):
    """A spring far too stiff for the timestep: Newton converges each step to a state
    that grows by orders of magnitude (the issue's slider at k = 1e12)."""
    out = tmp_path / "d.h5"
    res = invoke("simulate", "slider", "-o", out, "--steps", 60, "-q", "--set", "joints.0.spring=1e12")
    assert res.exit_code == 4, res.stderr
    with h5py.File(out) as f:
        status = [s.decode() for s in f["solver/status"][...]]
        x = f["x"][...]
        assert f.attrs["status"] == "complete_with_failures"
        first = int(f.attrs["first_failed_step"])
        assert status[first] == "diverged" and "success" not in status[first:], status
        assert np.all(np.isfinite(x[: first + 1])), "states before the divergence are finite"


def test_complete_means_every_step_converged(tmp_path):
    out = tmp_path / "c.h5"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 20, "-q").exit_code == 0
    with h5py.File(out) as f:
        assert f.attrs["status"] == "complete" and f.attrs["failed_steps"] == 0 and f.attrs["first_failed_step"] == -1


def interrupt_after(real_run, steps: int):
    """The run loop (simulation.run.run, which run_scene drives) with a Ctrl-C arriving once ``steps`` steps are
    done (as the progress callback sees them: after whole blocks)."""

    def run(*args, **kwargs):
        def progress(k):
            if k >= steps:
                raise KeyboardInterrupt

        kwargs["progress"] = progress
        return real_run(*args, **kwargs)

    return run


def test_interrupted_run_keeps_steps(tmp_path, monkeypatch):
    monkeypatch.setattr(run_loop, "run", interrupt_after(run_loop.run, 5))  # (the loop run_scene drives)
    out = tmp_path / "int.h5"
    res = invoke("simulate", "pendulum", "-o", out, "--steps", 50)
    assert res.exit_code == 130
    assert "interrupted" in res.stderr
    run = read_storage(out)
    # the first block of the run loop (simulation.run.FIRST_BLOCK steps) was complete
    assert run.status == "interrupted" and run.steps_completed == FIRST_BLOCK
    assert run.trajectory.x.shape[0] == FIRST_BLOCK + 1 and np.all(np.isfinite(run.trajectory.x))


def test_verbose_prints_iterations(tmp_path):
    res = invoke("simulate", "pendulum", "-o", tmp_path / "v.h5", "--steps", 2, "--verbose")
    assert res.exit_code == 0
    header = res.stderr.splitlines()[0].split()
    assert header == ["n", "bvio", "rvio", "alpha", "kappa", "|res|", "|step|"], header


def test_energy_summary_and_files(tmp_path):
    out = tmp_path / "run.h5"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 100).exit_code == 0
    csv, js, png = tmp_path / "e.csv", tmp_path / "e.json", tmp_path / "e.png"
    res = invoke("energy", out, "--csv", csv, "--json", js, "--plot", png)
    assert res.exit_code == 0, res.output
    assert "mechanical [J]" in res.stdout and "status complete" in res.stdout
    table = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert table.shape == (101, 10)  # every knot t_0..t_100: the file holds velocities at the knots
    header = csv.read_text().splitlines()[0].split(",")
    assert header[:4] == ["time", "kinetic", "potential", "mechanical"]
    assert np.allclose(table[:, 3], table[:, 1] + table[:, 2])
    drift = np.max(np.abs(table[:, 3] - table[0, 3])) / abs(table[0, 3])
    assert drift < 1e-3, f"pendulum energy drift {drift:.2e}"
    doc = json.loads(js.read_text())
    assert doc["summary"]["mechanical [J]"]["initial"] == pytest.approx(table[0, 3])
    assert len(doc["time"]) == 101
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    assert img.shape[0] > 300 and img.shape[1] > 300
    assert np.std(img[..., :3]) > 0.05, "plot is not blank"


def test_energy_plot_is_a_png_at_the_path_given(tmp_path):
    """--plot PATH writes a PNG at PATH, also without a .png suffix (viz.figures.save_png;
    before it, matplotlib's pyplot appended .png to a bare name while the command said
    `wrote PATH`)."""
    out = tmp_path / "run.h5"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 5).exit_code == 0
    plot = tmp_path / "energy_plot"
    res = invoke("energy", out, "--plot", plot)
    assert res.exit_code == 0, res.output
    assert f"wrote {plot}" in res.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert not (tmp_path / "energy_plot.png").exists(), "a suffix was added to the path given"


def test_energy_of_bad_files(tmp_path):
    res = invoke("energy", tmp_path / "nope.h5")
    assert res.exit_code == 3 and "nope.h5" in res.stderr
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    res = invoke("energy", junk)
    assert res.exit_code == 3 and "junk.h5" in res.stderr and "Traceback" not in res.output


def test_check_prints_structure():
    res = invoke("check", "fourbar")
    assert res.exit_code == 0, res.output
    assert "valid" in res.stdout and "bodies (4)" in res.stdout and "joints (5)" in res.stdout
    assert "closes a loop" in res.stdout
    assert "maximal state 52" in res.stdout


def test_check_with_override_error():
    res = invoke("check", "pendulum", "--set", "bodies.0.mass=-1")
    assert res.exit_code == 2
    assert "--set" in res.stderr and "bodies.0.mass" in res.stderr


def test_scenes_list_show_copy(tmp_path):
    res = invoke("scenes")
    assert res.exit_code == 0
    names = [line.split()[0] for line in res.stdout.splitlines()]
    for required in ("pendulum", "npendulum", "double_pendulum", "cartpole", "slider", "nslider", "fourbar",
                     "dzhanibekov", "orbital_chain", "spherical_chain"):
        assert required in names, required
    res = invoke("scenes", "--show", "cartpole")
    assert res.exit_code == 0 and "name: cartpole" in res.stdout
    res = invoke("scenes", "--copy", "slider", tmp_path)
    assert res.exit_code == 0 and (tmp_path / "slider.yaml").exists()
    assert invoke("scenes", "--copy", "slider", tmp_path).exit_code == 3
    assert invoke("scenes", "--copy", "slider", tmp_path, "--force").exit_code == 0
    res = invoke("scenes", "--show", "nosuch")
    assert res.exit_code == 2 and "nosuch" in res.stderr


def test_schedule_controller_from_csv(tmp_path):
    (tmp_path / "u.csv").write_text("hinge\n" + "\n".join(["2.0"] * 5))
    scene = write(tmp_path, PENDULUM + "controller: {type: schedule, file: u.csv}\n")
    out = tmp_path / "s.h5"
    res = invoke("simulate", scene, "-o", out)
    assert res.exit_code == 0, res.output
    run = read_storage(out)
    assert np.allclose(run.trajectory.inputs[:5, 0], 2.0) and np.allclose(run.trajectory.inputs[5:, 0], 0.0)


def test_schedule_with_wrong_columns(tmp_path):
    (tmp_path / "u.csv").write_text("1,2\n3,4\n")
    scene = write(tmp_path, PENDULUM + "controller: {type: schedule, file: u.csv}\n")
    res = invoke("simulate", scene, "-o", tmp_path / "s.h5")
    assert res.exit_code == 2 and "controller.file" in res.stderr and "2 columns" in res.stderr
    assert not (tmp_path / "s.h5").exists()


def test_pd_controller_holds_target(tmp_path):
    scene = write(
        tmp_path,
        PENDULUM.replace("steps: 20", "steps: 600")
        + "controller: {type: pd, kp: {hinge: [60.0]}, kd: {hinge: [8.0]}, targets: {hinge: [1.0]}}\n",
    )
    out = tmp_path / "pd.h5"
    assert invoke("simulate", scene, "-o", out).exit_code == 0
    theta = read_storage(out).trajectory.minimal_q[:, 0]
    # steady state of a PD against gravity: kp (1 - theta) = m g d sin(theta)
    assert abs(theta[-1] - 1.0) < 0.1 and np.std(theta[-100:]) < 1e-3


def test_contact_records_and_summary(tmp_path):
    out = tmp_path / "box.h5"
    res = invoke("simulate", "box", "-o", out)  # the whole 5 s toss: it ends resting on a face
    assert res.exit_code == 0, res.output
    run = read_storage(out)
    e = run.trajectory.datasets()  # the run's arrays by dataset name
    assert e["contacts/distance"].shape == (500, 8) and e["contacts/normal_impulse"].shape == (500, 8)
    assert e["contacts/friction_impulse"].shape == (500, 8, 2) and e["contacts/slip"].shape == (500, 8, 2)
    assert e["solver/complementarity"].shape == (500,) and np.all(e["solver/complementarity"] < 1e-4)
    resting = e["contacts/normal_impulse"][-1] > 1e-3
    assert resting.sum() == 4, "at rest on a face: four corners carry the weight"
    assert e["contacts/normal_impulse"][-1][resting].sum() == pytest.approx(9.81 * 0.01, rel=1e-3), "m g h"
    assert run.attrs["contact_names"][0] == "corner_ppp"
    assert np.all(e["contacts/normal_impulse"] >= 0)
    js = tmp_path / "c.json"
    res = invoke("contacts", out, "--json", js)
    assert res.exit_code == 0, res.output
    assert "max penetration" in res.stdout and "corner_ppp" in res.stdout
    doc = json.loads(js.read_text())
    rows = doc["contacts"]
    # the resting corners end within the solver's tolerance of the ground (warm-started: ~1e-8
    # m inside it; rtol in the gap rows' unit, the box's 0.1 m scale, 1e-7 m)
    assert len(rows) == 8 and all(r["penetration"] < PENETRATION_TOL for r in rows), [r["penetration"] for r in rows]
    # resting on a face from about 1.8 s: four corners touch for most of the run
    assert sum(r["contact_fraction"] > 0.5 for r in rows) == 4
    assert all(r["max_cone_violation"] < 1e-6 for r in rows)
    # the summary agrees with the raw records
    d = e["contacts/distance"]
    assert rows[0]["min_distance"] == pytest.approx(float(d[:, 0].min()))


def test_contacts_command_errors(tmp_path):
    out = tmp_path / "p.h5"
    assert invoke("simulate", "pendulum", "-o", out, "--steps", 3).exit_code == 0
    res = invoke("contacts", out)
    assert res.exit_code == 2 and "no contact records" in res.stderr
    res = invoke("contacts", out, "--gap", "-1")
    assert res.exit_code == 2 and "--gap" in res.stderr
    assert invoke("contacts", tmp_path / "missing.h5").exit_code == 3


def test_version_flag():
    from dojo_cli import __version__

    res = invoke("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"dojo_cli {__version__}"


def test_contacts_slip_tolerance_changes_the_classification(tmp_path):
    out = tmp_path / "slide.h5"
    assert invoke("simulate", "sliding_box", "-o", out, "-q").exit_code == 0
    strict, loose = tmp_path / "a.json", tmp_path / "b.json"
    assert invoke("contacts", out, "--json", strict, "--slip-tol", "1e-9").exit_code == 0
    assert invoke("contacts", out, "--json", loose, "--slip-tol", "10").exit_code == 0
    a = json.loads(strict.read_text())["contacts"][0]
    b = json.loads(loose.read_text())["contacts"][0]
    assert b["stick_fraction"] == 1.0 and a["stick_fraction"] < b["stick_fraction"], (a, b)


def test_control_characters_in_messages_are_escaped(tmp_path):
    """A hostile file name or key never sends control characters (a terminal escape
    sequence) to the terminal: every message line is printed with them escaped."""
    scene = tmp_path / "red\x1b[31m.yaml"
    scene.write_text("name: x\nbodies:\n  - name: b\n    mass: 1\n    shape: {type: sphere, radius: 1}\n    \x07bell: 1\n")
    result = invoke("check", str(scene))
    assert result.exit_code == 2
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "red\\x1b[31m.yaml" in result.output, result.output


# A box resting on four frictionless corners with the nonlinear (cone) model: mu = 0 makes
# each cone's raw rows degenerate (the impulse cone ends exactly at its apex), so the Newton
# matrix at the solution (the gradients') is exactly singular.
FRICTIONLESS_BOX = """\
format: 1
name: frictionless
timestep: 0.01
steps: 5
bodies:
  - {name: box, shape: {type: box, size: [0.5, 0.5, 0.5]}, mass: 1.0, initial: {position: [0, 0, 0.25]}}
joints:
  - {name: base, type: floating, parent: origin, child: box}
contacts:
""" + "".join(
    f"  - {{name: c{i}, body: box, model: nonlinear, friction: 0.0, offset: [{x}, {y}, -0.25], against: ground}}\n"
    for i, (x, y) in enumerate([(0.25, 0.25), (-0.25, 0.25), (0.25, -0.25), (-0.25, -0.25)])
)


def test_singular_matrix_is_a_failed_step_naming_its_block(tmp_path):
    """Issue 12, item 7c: an exactly singular factorisation is a failed step whose message
    names what is singular, never an error that stops the run (it did: 'run stopped,
    status failed after 0 steps', exit 1)."""
    out = tmp_path / "s.h5"
    res = invoke("simulate", write(tmp_path, FRICTIONLESS_BOX), "-o", out, "--gradients")
    assert res.exit_code == 4, res.output
    assert "step 0 (t = 0 s): the Newton matrix is singular" in res.stderr and "contact 'c0'" in res.stderr
    run = read_storage(out)
    assert run.status == "complete_with_failures" and run.steps_completed == 5
    assert set(np.asarray(run.trajectory.status).astype(str)) == {"singular_matrix"}
    # the run itself (no gradients asked) converges. The landing of `box` with one
    # frictionless corner met a singular matrix inside the solve: Dojo's cone step had
    # taken that corner's impulse cone out of the cone (issue 12 item 7a); the solver's
    # step stays inside (interior_point.h), and every step converges
    assert invoke("simulate", write(tmp_path, FRICTIONLESS_BOX), "-o", tmp_path / "t.h5").exit_code == 0
    res = invoke("simulate", "box", "-o", tmp_path / "b.h5", "--set", "contacts.0.friction=0")
    assert res.exit_code == 0 and "all steps converged" in res.output, res.output + res.stderr
