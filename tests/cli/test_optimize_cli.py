"""`dojo optimize`: the files it writes are a normal run that `dojo simulate` reproduces from the
schedule CSV, bad task files exit 2 at their line, a failing solve exits 1 with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from dojo_cli.cli.app import app

runner = CliRunner()
CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "optimize"
STATE = ("x", "q", "v_mid", "omega_mid", "minimal/q")
# The replay runs the same core loop on the same inputs (every digit in the CSV): the
# issue asks 1e-8; it is measured 0.
REPLAY_TOLERANCE = 1e-8


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _replay(task_file: Path, csv: Path, out: Path, tmp_path: Path):
    """`dojo simulate` of the task's scene with its `set:`, the midpoint initial velocities
    of a task, and the written schedule (docs/optimize.md, "Replaying")."""
    task = yaml.safe_load(task_file.read_text())
    sets = [f"{k}={json.dumps(v)}" for k, v in (task.get("set") or {}).items()]
    args = ["simulate", task["scene"], "--steps", task["horizon"], "-o", out, "-q", "--set", "initial_velocity=midpoint",
            "--set", f"controller={{type: schedule, file: {csv}}}"]
    for s in sets:
        args += ["--set", s]
    res = invoke(*args)
    assert res.exit_code == 0, res.output


def _datasets(path):
    with h5py.File(path) as f:
        return {k: f[k][()] for k in STATE + ("inputs",)}


@pytest.mark.parametrize("name", ["slider_lqr.yaml", "cartpole_swingup.yaml", "hopper_hop.yaml"])
def test_optimize_writes_a_run_that_simulate_reproduces(tmp_path, name):
    """The slider converges (exit 0); the cartpole and the hopper are stopped after 5
    iterations (exit 1, not converged): their files are written all the same and replay as
    well (the hopper through making and breaking contact: the run loop's warm starts are
    the optimiser's)."""
    task_file = CONFIGS / name
    converged = name == "slider_lqr.yaml"
    if not converged:
        text = task_file.read_text().replace("max_iterations: 300", "max_iterations: 5")
        task_file = tmp_path / name
        task_file.write_text(text)
    out = tmp_path / "opt.h5"
    res = invoke("optimize", task_file, "-o", out)
    assert res.exit_code == (0 if converged else 1), res.output
    assert " iter " in res.output  # the progress table
    if converged:
        assert "converged" in res.output
    else:
        assert "warning: not converged (max_iterations): 5 iterations" in res.output, res.output
    csv = tmp_path / "opt.inputs.csv"
    assert out.exists() and csv.exists()
    _replay(task_file, csv, tmp_path / "replay.h5", tmp_path)
    a, b = _datasets(out), _datasets(tmp_path / "replay.h5")
    for key in STATE + ("inputs",):
        err = np.max(np.abs(a[key] - b[key]))
        assert err <= REPLAY_TOLERANCE, f"{key}: replay differs by {err:.2e}"
    with h5py.File(out) as f:
        record = json.loads(f.attrs["optimize"])
        assert record["status"] == ("converged" if converged else "max_iterations") and record["best_iterate"] is False
        n = record["iterations"]
        assert len(f.attrs["optimize_log_cost"]) == n and len(f.attrs["optimize_log_violation"]) == n
        assert np.all(np.diff(f.attrs["optimize_log_wall_time"]) >= 0)
        gains = f["optimize/gains"]
        assert gains.shape[0] == record["horizon"] and list(gains.attrs["rows"]) == list(f["inputs"].attrs["names"])
    for command in (["info", out], ["energy", out], ["plot", out, "-q", "minimal", "-q", "inputs", "--png", tmp_path / "p.png"]):
        res = invoke(*command)
        assert res.exit_code == 0, (command, res.output)


def _task(tmp_path, text: str) -> Path:
    path = tmp_path / "task.yaml"
    path.write_text(text)
    return path


BASE = """\
scene: slider
horizon: 10
costs:
  state: {joints.slide: 1.0}
  input: 0.1
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (BASE.replace("joints.slide: 1.0", "joints.slid: 1.0"),
         "task.yaml:4: costs.state.joints.slid: unknown coordinate 'joints.slid'; did you mean 'joints.slide'"),
        (BASE.replace("horizon: 10", "horizon: 0"), "task.yaml:2: horizon: must be in 1..100,000, got 0"),
        (BASE + "constraints:\n  inputs: {slide: [2.0, -2.0]}\n",
         "task.yaml:7: constraints.inputs.slide: infeasible bounds: lower 2 > upper -2"),
        (BASE + "constraints:\n  inputs: {slider: [-1, 1]}\n", "task.yaml:7: constraints.inputs.slider: unknown input 'slider'"),
        (BASE + "constraints:\n  terminal: [joints.slide.velocty]\n",
         "task.yaml:7: constraints.terminal.0: unknown coordinate 'joints.slide.velocty'"),
        (BASE + "goal: {joints.slide: [1.0, 2.0]}\n", "task.yaml:6: goal.joints.slide: needs 1 value (one per component), got 2"),
        (BASE + "representation: tangent\n", "task.yaml:6: representation: must be one of minimal, maximal"),
        (BASE + "solver: {max_iteration: 3}\n", "task.yaml:6: solver.max_iteration: unknown key; did you mean 'max_iterations'?"),
        (BASE + "set: {bodies.0.mass: -1}\n", "task.yaml:6: bodies.0.mass: must be > 0"),
        (BASE.replace("scene: slider", "scene: slidr"), "task.yaml:1: scene:"),
    ],
)
def test_bad_tasks_exit_2_at_their_line(tmp_path, text, expected):
    out = tmp_path / "out.h5"
    res = invoke("optimize", _task(tmp_path, text), "-o", out)
    assert res.exit_code == 2, res.output
    assert expected in res.output.replace(str(tmp_path) + "/", ""), res.output
    assert "Traceback" not in res.output and not out.exists()


def test_a_diverging_solve_exits_1_with_its_reason(tmp_path):
    out = tmp_path / "out.h5"
    text = (CONFIGS / "cartpole_swingup.yaml").read_text().replace("  solver.rtol: 1.0e-12", "  solver.rtol: 1.0e-12\n  solver.max_iter: 1")
    res = invoke("optimize", _task(tmp_path, text), "-o", out, "-q")
    assert res.exit_code == 1, res.output
    assert "diverged: the initial guess's rollout fails at step 0" in res.output, res.output
    assert "Traceback" not in res.output and not out.exists()


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "out.h5"
    out.write_text("")
    res = invoke("optimize", CONFIGS / "slider_lqr.yaml", "-o", out, "-q")
    assert res.exit_code == 2 and "exists (--force overwrites it)" in res.output, res.output
    res = invoke("optimize", CONFIGS / "slider_lqr.yaml", "-o", out, "-q", "--force", "--plot", tmp_path / "c.png")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "--plot writes a PNG"



def test_ctrl_c_writes_the_best_iterate_marked_as_such(tmp_path, monkeypatch):
    from dojo_cli.cli.commands import optimize as optimize_command

    shown = optimize_command._progress_line

    def line(rec):
        if rec["iteration"] == 3:
            raise KeyboardInterrupt  # Ctrl-C during the solve (after three iterations)
        return shown(rec)

    monkeypatch.setattr(optimize_command, "_progress_line", line)
    out = tmp_path / "out.h5"
    res = invoke("optimize", CONFIGS / "cartpole_swingup.yaml", "-o", out)
    assert res.exit_code == 130, res.output
    assert "interrupted by SIGINT; the best iterate so far was written" in res.output
    with h5py.File(out) as f:
        record = json.loads(f.attrs["optimize"])
        assert record["status"] == "interrupted" and record["best_iterate"] is True and record["iterations"] == 3
        assert f.attrs["status"] == "complete", "the run of the kept inputs itself is complete"
