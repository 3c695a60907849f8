"""Sweep benchmark (issue 15): parallel speed-up, per-run overhead, shell-loop start-up.

Usage:
    python benchmarks/sweep_speed.py [--runs 40] [--seconds 1.0] [--overhead-runs 20] [--shell-runs 5] [--json FILE]

Three measurements, each printed with the machine's load average (other work on the
machine slows every case alike only when they run interleaved; the ratios are what to read):

1. **Speed-up**: ``--runs`` pendulum runs of about ``--seconds`` of computing each (the
   timestep is calibrated on this machine: pendulum at h = 1e-4 s, as many steps as take
   that long), swept with ``dojo sweep``'s library (``run_sweep``) on 1 and on 2 local
   worker processes; wall time of each sweep from the call to its return (cluster start-up
   and shutdown included) and its ratio. Also the same number of one-second-of-simulated-time
   runs (h = 0.01 s, 100 steps, milliseconds of work), where only the overhead is left.
   Issue target: >= 1.8x for the long runs on 2 workers. This process (and so its workers)
   runs numpy's BLAS on one thread, as ``dojo sweep`` does (dojo_cli.__main__).
2. **Per-run overhead of a sweep task**: everything a run costs but its steps, measured on
   runs of one step in this process (``task.execute``: scene load and validation, mechanism
   build, storage file creation and writing (a run this short is not compacted:
   dojo_cli.io.storage.writer._COMPACT_MIN_BYTES), reading it back, metrics), median of
   ``--overhead-runs``, with the parts timed separately; and the extra cost per task of
   going through Dask (``--overhead-runs`` one-step runs on 1 worker, wall per run minus the
   in-process cost). Issue target: <= 50 ms.
3. **Shell-loop start-up**: ``dojo simulate pendulum --steps 1 -o F --force -q`` followed by
   ``dojo info F --get 'x[-1, link, 0]'``, each a fresh process, ``--shell-runs`` rounds
   after a warm-up; median wall time of each and of the pair (that is the start-up: the one
   step takes microseconds), and, under ``python -X importtime``, the libraries each
   imports and their cumulative import times. Issue target: <= 0.5 s per run (the pair).
   Measured twice in the same rounds (interleaved): with Python's bytecode caching on, as
   users run it (the headline), and without cached bytecode for dojo_cli's own modules, as
   in a sandbox that exports ``PYTHONDONTWRITEBYTECODE=1`` with an editable install (no
   ``.pyc`` is ever written, so every process compiles dojo_cli's sources: ~90 ms more).
   For the latter each round deletes the ``.pyc`` files of ROOT/dojo_cli and runs with
   ``PYTHONDONTWRITEBYTECODE=1``; an untimed run then writes them again for the former
   (only when the dojo_cli that runs is this checkout's; otherwise that setting is
   skipped). ``python -c pass`` is the floor of each process (it includes the
   environment's ``.pth`` files: the ``robots`` extra's ``cmeel.pth`` costs ~10 ms per
   process, the base install has none).

The machine these numbers come from (2 cores, shared with other work) varies by tens of
per cent from minute to minute: every section prints the load average, the cases of a
section run interleaved so that load hits them alike, and medians are reported. Repeat a
run before reading much into a difference of less than ~10 %.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# as `dojo sweep` runs (dojo_cli.__main__ sets it before numpy loads; its workers inherit it)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from dojo_cli.scene.overrides import Override  # noqa: E402
from dojo_cli.sweep.execute import run_sweep  # noqa: E402
from dojo_cli.sweep.plan import load_sweep  # noqa: E402
from dojo_cli.sweep.task import RunTask, execute  # noqa: E402

TARGETS = {"speedup_2_workers": 1.8, "task_overhead_s": 0.050, "shell_pair_s": 0.5}
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")
WATCHED = ("numpy", "h5py", "pydantic", "typer", "rich", "yaml", "dojo_cli", "dask", "distributed", "pyarrow",
           "matplotlib", "meshcat", "scipy")


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def dojo() -> list[str]:
    exe = Path(sys.executable).with_name("dojo")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dojo_cli"]


def calibrate(seconds: float) -> float:
    """Simulated duration of a pendulum run at h = 1e-4 s that takes about ``seconds`` here."""
    import dojo_cli as dojo

    mech = dojo.load_scene("pendulum", overrides={"timestep": 1e-4})
    steps = 20_000
    start = time.perf_counter()
    dojo.simulate(mech, steps=steps)
    per_step = (time.perf_counter() - start) / steps
    return round(seconds / per_step) * 1e-4


def sweep_file(folder: Path, runs: int, timestep: float, duration: float) -> Path:
    path = folder / "bench.yaml"
    path.write_text(
        "scene: pendulum\n"
        f"set: {{timestep: {timestep!r}, duration: {duration!r}}}\n"
        f"grid: {{joints.0.damper: {{linspace: [0.0, 0.1, {runs}]}}}}\n"
        "metrics: {angle: 'minimal/q[-1, 0]', drift: energy_drift}\n"
    )
    return path


def timed_sweep(path: Path, out: Path, workers: int) -> float:
    shutil.rmtree(out, ignore_errors=True)
    plan = load_sweep(path)
    start = time.perf_counter()
    outcome = run_sweep(plan, out, workers=workers)
    wall = time.perf_counter() - start
    assert outcome.ran == len(plan.runs) and not outcome.failed, (outcome.ran, outcome.failed)
    return wall


def speedup(args, folder: Path, report: dict) -> None:
    duration = calibrate(args.seconds)
    print(f"\n1. speed-up: {args.runs} pendulum runs of ~{args.seconds:g} s of computing "
          f"(h = 1e-4 s, {duration:g} s simulated, {round(duration / 1e-4):,} steps each); {load()}")
    for label, timestep, dur in (("long", 1e-4, duration), ("one simulated second", 0.01, 1.0)):
        path = sweep_file(folder, args.runs, timestep, dur)
        one = timed_sweep(path, folder / "w1", 1)
        two = timed_sweep(path, folder / "w2", 2)
        print(f"   {label:>22}: 1 worker {one:7.2f} s, 2 workers {two:7.2f} s: speed-up {one / two:.2f}x; {load()}")
        if label == "long":
            verdict = "met" if one / two >= TARGETS["speedup_2_workers"] else "missed"
            print(f"   {'':>22}  target >= {TARGETS['speedup_2_workers']}x: {verdict}")
        report.setdefault("speedup", {})[label] = {"runs": args.runs, "timestep": timestep, "duration": dur,
                                                   "one_worker_s": one, "two_workers_s": two, "speedup": one / two}


def overhead(args, folder: Path, report: dict) -> None:
    import dojo_cli as dojo
    from dojo_cli.io.storage import read_storage
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import load_scene_spec
    from dojo_cli.sweep.metrics import RunData, metric_values

    print(f"\n2. per-run overhead of a sweep task (runs of one step, in this process); {load()}")
    metrics = (("angle", "minimal/q[-1, 0]"), ("drift", "energy_drift"))
    walls = []
    for i in range(args.overhead_runs + 1):
        task = RunTask(run_id=f"r{i}", scene="pendulum", overrides=(Override("steps", 1), Override("joints.0.damper", i * 1e-3)),
                       output=str(folder / f"o{i}.h5"), metrics=metrics)
        start = time.perf_counter()
        row = execute(task)
        walls.append(time.perf_counter() - start)
        assert row["status"] == "complete", row
    walls = walls[1:]  # the first pays the imports
    # the parts, timed on their own
    parts: dict[str, list[float]] = {"load + validate scene": [], "build mechanism": [], "one step": [],
                                     "read_storage (no probe)": [], "metrics": []}
    for i in range(args.overhead_runs):
        t0 = time.perf_counter()
        spec = load_scene_spec("pendulum", [Override("steps", 1)])
        t1 = time.perf_counter()
        mech = build_mechanism(spec)
        t2 = time.perf_counter()
        dojo.simulate(mech, steps=1)
        t3 = time.perf_counter()
        stored = read_storage(folder / f"o{i + 1}.h5", probe=False)  # as the task reads its own file
        t4 = time.perf_counter()
        metric_values(RunData(stored, mech), dict(metrics))
        t5 = time.perf_counter()
        for key, value in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            parts[key].append(value)
    median = statistics.median(walls)
    verdict = "met" if median <= TARGETS["task_overhead_s"] else "missed"
    print(f"   task.execute, whole: median {median * 1e3:.1f} ms (min {min(walls) * 1e3:.1f}, max {max(walls) * 1e3:.1f}); "
          f"target <= {TARGETS['task_overhead_s'] * 1e3:.0f} ms: {verdict}")
    accounted = 0.0
    for key, values in parts.items():
        m = statistics.median(values)
        accounted += m
        print(f"     {key:<24} {m * 1e3:7.2f} ms")
    print(f"     {'storage file (the rest)':<24} {max(median - accounted, 0) * 1e3:7.2f} ms  (create, write, finish)")
    report["overhead"] = {"task_median_s": median, "parts_s": {k: statistics.median(v) for k, v in parts.items()}}

    # through Dask: one worker, one-step runs
    path = folder / "tiny.yaml"
    path.write_text("scene: pendulum\nset: {steps: 1}\n"
                    f"grid: {{joints.0.damper: {{linspace: [0.0, 0.1, {args.overhead_runs}]}}}}\n"
                    "metrics: {angle: 'minimal/q[-1, 0]', drift: energy_drift}\n")
    # cluster start-up measured apart: a sweep of one run, then of all
    one_run = folder / "tiny1.yaml"
    one_run.write_text(path.read_text().replace(f"{args.overhead_runs}]", "1]"))
    startup = timed_sweep(one_run, folder / "t1", 1)
    whole = timed_sweep(path, folder / "tn", 1)
    per_task = (whole - startup) / max(args.overhead_runs - 1, 1)
    print(f"   through Dask (1 worker): a sweep of 1 run {startup:.2f} s (cluster start and stop), of "
          f"{args.overhead_runs} runs {whole:.2f} s: {per_task * 1e3:.1f} ms per further run "
          f"({(per_task - median) * 1e3:+.1f} ms over the in-process task); {load()}")
    report["overhead"].update({"dask_sweep_of_one_s": startup, "dask_sweep_s": whole, "dask_per_task_s": per_task})


def imports_of(argv: list[str], cwd: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    tops: dict[str, float] = {}
    for m in _IMPORTTIME.finditer(res.stderr):
        name = m.group(4).split(".")[0]
        if name in WATCHED:
            tops[name] = max(tops.get(name, 0.0), int(m.group(2)) / 1e6)
    return dict(sorted(tops.items(), key=lambda kv: -kv[1]))


CACHED, UNCACHED = "bytecode caching on", "dojo_cli's bytecode not cached"


def _own_bytecode() -> list[Path] | None:
    """The .pyc files of this checkout's dojo_cli, or None when the dojo_cli that runs is not
    this checkout's (an installed package: its caches are not this benchmark's to delete)."""
    import dojo_cli

    if Path(dojo_cli.__file__).resolve().parent != ROOT / "dojo_cli":
        return None
    return list((ROOT / "dojo_cli").rglob("__pycache__/*.pyc"))


def shell(args, folder: Path, report: dict) -> None:
    print(f"\n3. shell-loop start-up: dojo simulate (1 step) + dojo info --get, {args.shell_runs} rounds; {load()}")
    sim = [*dojo(), "simulate", "pendulum", "--steps", "1", "-o", "run.h5", "--force", "-q"]
    get = [*dojo(), "info", "run.h5", "--get", "x[-1, link, 0]"]
    python = [sys.executable, "-c", "pass"]
    cached = dict(os.environ)
    cached.pop("PYTHONDONTWRITEBYTECODE", None)
    envs = {CACHED: cached, UNCACHED: dict(cached, PYTHONDONTWRITEBYTECODE="1")}
    settings = [UNCACHED, CACHED] if _own_bytecode() is not None else [CACHED]
    if UNCACHED not in settings:
        print(f"   (dojo_cli is not this checkout's: {UNCACHED!r} skipped)")
    cases = [(setting, name, argv) for setting in settings
             for name, argv in (("python -c pass", python), ("dojo simulate", sim), ("dojo info --get", get))]
    times: dict[tuple[str, str], list[float]] = {(s, n): [] for s, n, _ in cases}
    for round_ in range(args.shell_runs + 1):  # round 0: warm-up
        for index, (setting, name, argv) in enumerate(cases):
            if setting == UNCACHED and index == 0:
                for pyc in _own_bytecode() or ():
                    pyc.unlink(missing_ok=True)
            if setting == CACHED and (index == 0 or cases[index - 1][0] != CACHED):
                subprocess.run(sim, cwd=folder, env=cached, check=True, capture_output=True)  # writes the caches again
            start = time.perf_counter()
            subprocess.run(argv, cwd=folder, env=envs[setting], check=True, capture_output=True)
            if round_:
                times[setting, name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in times.items()}
    report["shell"] = {}
    for setting in settings:
        print(f"   {setting}:")
        for name in ("python -c pass", "dojo simulate", "dojo info --get"):
            print(f"     {name:<18} median {medians[setting, name]:.3f} s (min {min(times[setting, name]):.3f})")
        pair = medians[setting, "dojo simulate"] + medians[setting, "dojo info --get"]
        verdict = "met" if pair <= TARGETS["shell_pair_s"] else "missed"
        print(f"     per run (simulate + info --get): {pair:.3f} s  (target <= {TARGETS['shell_pair_s']} s: {verdict})")
        report["shell"][setting] = {"medians_s": {n: medians[setting, n] for s, n, _ in cases if s == setting},
                                    "pair_s": pair, "runs_s": {n: times[setting, n] for s, n, _ in cases if s == setting}}
    print(f"   {load()}")
    for name, argv in (("dojo simulate", sim), ("dojo info --get", get)):
        tops = imports_of(argv, folder)
        print(f"   {name} imports (bytecode caching on): " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in tops.items()))
        report.setdefault("imports", {})[name] = tops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--overhead-runs", type=int, default=20)
    parser.add_argument("--shell-runs", type=int, default=5)
    parser.add_argument("--skip", default="", help="comma-separated: speedup, overhead, shell")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    report: dict = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "shell" not in skip:
            shell(args, folder, report)
        if "overhead" not in skip:
            overhead(args, folder, report)
        if "speedup" not in skip:
            speedup(args, folder, report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
