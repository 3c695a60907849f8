"""`dojo sweep`: files, manifest, metrics equal to `dojo info --get`, resuming after a stop
with no run done twice, failed and crashing runs isolated, the same manifest on a Dask
cluster, `dojo sweep summarize`."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.sweep import manifest
from tests.processes import default_signals, dojo_command

runner = CliRunner()

# 2 x 3 grid of short sliding-box runs (0.1 s, 10 steps each)
GRID = """\
scene: sliding_box
set: {duration: 0.1}
grid:
  contacts.*.friction: [0.2, 0.5]
  bodies.0.mass: {linspace: [1.0, 3.0, 3]}
metrics:
  final_x: "x[-1, box, 0]"
  drift: energy_drift
  pen: max_penetration
  failed: failed_steps
  iterations: iterations_mean
"""
METRICS = {"final_x": "x[-1, box, 0]", "drift": "energy_drift", "pen": "max_penetration", "failed": "failed_steps",
           "iterations": "iterations_mean"}
# Columns that differ from one execution of the same runs to another.
TIMES = ("wall_time",)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def write(folder: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def rows_without_times(folder: Path) -> tuple[list[str], list[dict]]:
    names, rows = manifest.read_csv(folder / "manifest.csv")
    return names, [{k: v for k, v in row.items() if k not in TIMES} for row in rows]


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory):
    """The 2 x 3 grid on 2 local worker processes."""
    folder = tmp_path_factory.mktemp("grid")
    res = invoke("sweep", write(folder, GRID), "-o", folder / "out", "--workers", 2)
    assert res.exit_code == 0, res.output
    return folder / "out", res


def test_grid_writes_one_file_per_run_and_the_manifest(grid_sweep):
    out, res = grid_sweep
    assert res.stdout.strip() == f"{out}: 6 runs: 6 run now, 0 already complete, 0 failed; manifest {out / 'manifest.csv'}"
    names, rows = manifest.read_csv(out / "manifest.csv")
    assert names == ["run_id", "file", "status", "failed_steps", "wall_time", "contacts.*.friction", "bodies.0.mass",
                     *METRICS, "error"]
    assert [(r["contacts.*.friction"], r["bodies.0.mass"]) for r in rows] == [
        (0.2, 1.0), (0.2, 2.0), (0.2, 3.0), (0.5, 1.0), (0.5, 2.0), (0.5, 3.0)]
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(f"{r['run_id']}.h5" for r in rows)
    for row in rows:
        run = read_storage(out / row["file"])
        assert row["status"] == run.status == "complete"
        assert row["failed_steps"] == 0 and row["wall_time"] == run.attrs["wall_time"]
        assert run.attrs["overrides"] == {"duration": 0.1, "contacts.*.friction": row["contacts.*.friction"],
                                          "bodies.0.mass": row["bodies.0.mass"]}
        assert run.steps_completed == 10 and row["error"] is None


def test_manifest_metrics_equal_dojo_info_get(grid_sweep):
    out, _ = grid_sweep
    _, rows = manifest.read_csv(out / "manifest.csv")
    for row in rows:
        res = invoke("info", out / row["file"], *[a for expr in METRICS.values() for a in ("--get", expr)])
        assert res.exit_code == 0, res.output
        printed = [float(line) for line in res.stdout.splitlines()]
        assert printed == [row[name] for name in METRICS], row["run_id"]  # exact: full precision both ways


def test_parquet_manifest_equals_csv(grid_sweep):
    import pyarrow.parquet as pq

    out, _ = grid_sweep
    names, rows = manifest.read_csv(out / "manifest.csv")
    table = pq.read_table(out / "manifest.parquet").to_pylist()
    assert list(table[0]) == names
    for csv_row, parquet_row in zip(rows, table):
        assert {k: v for k, v in parquet_row.items() if k != "error"} == {k: v for k, v in csv_row.items() if k != "error"}


def test_rerun_runs_nothing_again(grid_sweep, tmp_path):
    out, _ = grid_sweep
    created = {p.name: read_storage(p).attrs["created"] for p in (out / "runs").iterdir()}
    before = (out / "manifest.csv").read_text()
    res = invoke("sweep", out.parent / "sweep.yaml", "-o", out, "--workers", 2)
    assert res.exit_code == 0, res.output
    assert "6 runs: 0 run now, 6 already complete, 0 failed" in res.stdout
    assert {p.name: read_storage(p).attrs["created"] for p in (out / "runs").iterdir()} == created
    assert (out / "manifest.csv").read_text() == before


def test_same_manifest_on_a_dask_cluster(grid_sweep, tmp_path):
    from distributed import LocalCluster

    out, _ = grid_sweep
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        res = invoke("sweep", out.parent / "sweep.yaml", "-o", tmp_path / "dask", "--scheduler", cluster.scheduler_address)
    assert res.exit_code == 0, res.output
    assert rows_without_times(tmp_path / "dask") == rows_without_times(out)


def test_summarize_prints_writes_and_plots(grid_sweep, tmp_path):
    out, _ = grid_sweep
    png = tmp_path / "plot.png"
    res = invoke("sweep", "summarize", out, "--csv", tmp_path / "m.csv", "--parquet", tmp_path / "m.parquet",
                 "--plot", "final_x", "--vs", "contacts.*.friction", "--png", png)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["run_id", "file", "status", "failed_steps", "wall_time", "contacts.*.friction",
                                "bodies.0.mass", *METRICS, "error"]
    assert len(lines) == 1 + 6 + 1 + 3 and lines[7] == "6 runs: 6 complete"
    assert lines[-1] == f"wrote {png}: final_x against contacts.*.friction, 3 lines"  # one per mass
    assert manifest.read_csv(tmp_path / "m.csv") == manifest.read_csv(out / "manifest.csv")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = invoke("sweep", "summarize", out, "--plot", "nope", "--vs", "bodies.0.mass")
    assert bad.exit_code == 2 and "--plot: no column 'nope'" in bad.stderr


FAILING = """\
scene: sliding_box
set: {duration: 0.05}
grid:
  bodies.0.mass: [1.0, -1.0, 2.0, 3.0]
metrics:
  x: "x[-1, box, 0]"
  crash: crashing_metric:maybe_crash
"""
CRASHING_METRIC = """\
import os


def maybe_crash(run):
    if run.attrs["overrides"]["bodies.0.mass"] == 3.0:
        os._exit(1)  # the worker process dies, as on a segmentation fault
    return {"mass": run.attrs["overrides"]["bodies.0.mass"]}
"""


def test_failed_and_crashing_runs_do_not_stop_the_others(tmp_path):
    sweep = write(tmp_path, FAILING)
    write(tmp_path, CRASHING_METRIC, "crashing_metric.py")
    res = invoke("sweep", sweep, "-o", tmp_path / "out", "--workers", 2)
    assert res.exit_code == 4, res.output  # done, some runs failed
    _, rows = manifest.read_csv(tmp_path / "out" / "manifest.csv")
    status = {r["bodies.0.mass"]: r["status"] for r in rows}
    assert status == {1.0: "complete", -1.0: "failed", 2.0: "complete", 3.0: "failed"}
    invalid = next(r for r in rows if r["bodies.0.mass"] == -1.0)
    assert invalid["error"] == f"{sweep}:4: bodies.0.mass: must be > 0, got -1.0" and invalid["file"] is None
    crashed = next(r for r in rows if r["bodies.0.mass"] == 3.0)
    assert crashed["error"].startswith("the worker process died running it (KilledWorker")
    for mass in (1.0, 2.0):
        row = next(r for r in rows if r["bodies.0.mass"] == mass)
        assert row["crash.mass"] == mass and row["x"] == read_storage(tmp_path / "out" / row["file"]).trajectory.x[-1, 0, 0]
    assert f"run {invalid['run_id']} failed: {invalid['error']}" in res.stderr


KILLABLE = """\
scene: pendulum
set: {timestep: 1.0e-4, duration: 2.0}   # 20,000 steps: about half a second a run
grid:
  joints.0.damper: [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]
metrics:
  angle: "minimal/q[-1, 0]"
"""


@pytest.mark.long
def test_stopped_sweep_resumes_without_redoing_runs(tmp_path):
    sweep = write(tmp_path, KILLABLE)
    out = tmp_path / "out"
    proc = subprocess.Popen([*dojo_command(), "sweep", str(sweep), "-o", str(out), "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    deadline = time.monotonic() + 240
    complete = 0
    while complete < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if (out / "manifest.csv").exists():
            try:
                complete = sum(r["status"] == "complete" for r in manifest.read_csv(out / "manifest.csv")[1])
            except Exception:  # noqa: BLE001 - being replaced this instant
                pass
    assert complete >= 2, "two runs finished"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "stopped by SIGINT" in stderr and "Traceback" not in stderr
    _, rows = manifest.read_csv(out / "manifest.csv")
    first = {r["run_id"]: r["status"] for r in rows}
    assert set(first.values()) <= {"complete", "interrupted", "pending"} and "complete" in first.values()
    assert sum(s != "complete" for s in first.values()) > 0, "the stop came before the end"
    for row in rows:  # the manifest says what each file holds
        path = out / "runs" / f"{row['run_id']}.h5"
        if row["status"] == "pending":
            assert not path.exists() and row["file"] is None
        else:
            assert read_storage(path).status == row["status"]
    created = {rid: read_storage(out / "runs" / f"{rid}.h5").attrs["created"]
               for rid, s in first.items() if s == "complete"}

    res = subprocess.run([*dojo_command(), "sweep", str(sweep), "-o", str(out), "--workers", "1"],
                         capture_output=True, text=True, timeout=600, preexec_fn=default_signals)
    assert res.returncode == 0, res.stdout + res.stderr
    done = len(created)
    assert f"6 runs: {6 - done} run now, {done} already complete, 0 failed" in res.stdout
    _, rows = manifest.read_csv(out / "manifest.csv")
    assert all(r["status"] == "complete" for r in rows)
    for rid, when in created.items():
        assert read_storage(out / "runs" / f"{rid}.h5").attrs["created"] == when, f"run {rid} was done again"


def test_sweep_runs_write_the_file_dojo_simulate_writes(tmp_path):
    """A sweep task and `dojo simulate` share one run driver (simulation.run.run_scene): same integrator
    (an rk4 scene runs rk4), same datasets and names, same trajectory to the last bit."""
    sweep = write(tmp_path, """\
scene: pendulum
set: {duration: 0.2, integrator: rk4}
grid:
  joints.0.damper: [0.0, 0.3]
""")
    res = invoke("sweep", sweep, "-o", tmp_path / "out", "--workers", 0)
    assert res.exit_code == 0, res.output
    names, rows = manifest.read_csv(tmp_path / "out" / "manifest.csv")
    assert [r["status"] for r in rows] == ["complete", "complete"]
    for row, damper in zip(rows, ("0.0", "0.3")):
        swept = read_storage(tmp_path / "out" / row["file"])
        ref = tmp_path / f"ref-{damper}.h5"
        r = invoke("simulate", "pendulum", "-o", ref, "-q", "--set", "duration=0.2", "--set", "integrator=rk4",
                   "--set", f"joints.0.damper={damper}")
        assert r.exit_code == 0, r.output
        direct = read_storage(ref)
        assert swept.attrs["integrator"] == direct.attrs["integrator"] == "munthe-kaas-rk4"
        for name in ("x", "q", "v", "omega", "minimal_q", "minimal_v", "inputs"):
            assert (getattr(swept.trajectory, name) == getattr(direct.trajectory, name)).all(), name


SHORT = """\
scene: sliding_box
set: {duration: 0.05}
grid:
  bodies.0.mass: [1.0, 2.0]
metrics:
  x: "METRIC"
"""


def test_a_failing_metric_fails_its_row_and_a_fixed_one_is_evaluated_without_simulating(tmp_path):
    """Issue 30: a metric that errors on a run (an index beyond its 6 states) fails that row
    (status, exit 4, stderr), not only a NaN; the fixed metric is evaluated on the files
    on the next run, which simulates nothing; --recompute evaluates every metric again."""
    out = tmp_path / "out"
    sweep = write(tmp_path, SHORT.replace("METRIC", "x[100, box, 0]"))
    res = invoke("sweep", sweep, "-o", out, "--workers", 0)
    assert res.exit_code == 4, res.output
    assert "2 runs: 2 run now, 0 already complete, 2 failed" in res.stdout
    _, rows = manifest.read_csv(out / "manifest.csv")
    assert [r["status"] for r in rows] == ["failed", "failed"]
    assert all("index 100 is out of range for axis 0 of 'x'" in r["error"] for r in rows)
    assert f"run {rows[0]['run_id']} failed: metric x:" in res.stderr
    created = {r["run_id"]: read_storage(out / r["file"]).attrs["created"] for r in rows}

    write(tmp_path, SHORT.replace("METRIC", "x[-1, box, 0]"))
    res = invoke("sweep", sweep, "-o", out, "--workers", 0)
    assert res.exit_code == 0, res.output
    assert "2 runs: 0 run now, 2 already complete, 0 failed" in res.stdout
    _, rows = manifest.read_csv(out / "manifest.csv")
    for row in rows:
        stored = read_storage(out / row["file"])
        assert row["status"] == "complete" and row["error"] is None
        assert row["x"] == stored.trajectory.x[-1, 0, 0] and stored.attrs["created"] == created[row["run_id"]]

    # a manifest value that no longer says what the file holds (a module:function metric
    # whose code changed): kept by a plain re-run, evaluated again by --recompute
    text = (out / "manifest.csv").read_text()
    (out / "manifest.csv").write_text(text.replace(repr(rows[0]["x"]), "99.0"))
    invoke("sweep", sweep, "-o", out, "--workers", 0)
    assert manifest.read_csv(out / "manifest.csv")[1][0]["x"] == 99.0
    res = invoke("sweep", sweep, "-o", out, "--recompute")
    assert res.exit_code == 0, res.output
    assert manifest.read_csv(out / "manifest.csv")[1] == rows
