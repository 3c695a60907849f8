"""PD-controlled runs: the PD law in the core's run loop against the per-step path it replaced.

Usage:
    python benchmarks/pd_run_speed.py [--repeat 5] [--stand-robots go1,solo12,...] [--json FILE]

A run under a PD controller used to cross into the core once a step: the Python loop called
the controller (its minimal coordinates and velocities from two core calls, the law in numpy),
solved the step (``_core.step``), advanced the angles and computed the step's record
(``_core.run_record``), one StepBlock a step. Now ``_core.rollout`` evaluates the law itself
before each step (core/maximal/pd_controller.h) and a block of steps is one call, as an
open-loop run. The per-step path still exists (a controller written in Python takes it); this
benchmark runs each case both ways in this process, interleaved (core, per-step, core, ...):

- ``core``: ``dojo.simulate(mech, steps=N)``, the scene's PD (today's path);
- ``per-step``: the same with the PD law evaluated in numpy by a Controller subclass, which
  the loop steps one state at a time: the path and the law as they were before (the run is
  the same to the bit, checked here on the trunk's positions; tests/simulation/
  test_pd_controller.py checks every dataset).

Cases: ``a1``, core_speed.py's row (the built-in quadruped, h = 10 ms, 100 steps);
``go1_standing`` and ``go1_drop``, equal_fidelity.py's two cases at dojo's largest passing
steps (50 ms and 25 ms, 2 s); and robot_zoo.py --stand's robots named by ``--stand-robots``
(``import-urdf --stand --contacts collision --merge-fixed``, 500 steps at the import's h).
Printed: CPU ms a step (median of ``--repeat`` runs, ``time.process_time``), simulated seconds
per CPU second, and the ratio per-step / core. On a loaded machine the absolute numbers move;
the ratios, measured in one process, hold better.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing
import bench_common  # noqa: E402

BLAS_THREADS = bench_common.pin_blas_threads(sys.argv)  # before numpy loads

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import dojo_cli as dojo  # noqa: E402
from tests.simulation.numpy_pd import NumpyPD  # noqa: E402  (the law as it was, the per-step path)

DEFAULT_STAND_ROBOTS = "go1,go2,solo12,anymal,g1_29dof_rev_1_0"


def go1_case(case: str, h: float):
    from equal_fidelity import go1_mechanism

    return go1_mechanism(case, h)


def stand_mechanism(stem: str):
    from dojo_cli.scene import robots
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.stand import add_stand
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    root = robots.example_robot_data_root()
    if root is None:
        raise SystemExit(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
    path = next((root / "robots").rglob(f"{stem}.urdf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = read_urdf(path, UrdfOptions(floating=True, contacts="collision", merge_fixed=True, meshes=False),
                           str(path))
    add_stand(result.scene, result, path, str(path))
    return build_mechanism(spec_from_dict(result.scene, file=str(path)))


def cpu_of(fn):
    gc.collect()
    gc.disable()
    try:
        c0 = time.process_time()
        out = fn()
        return time.process_time() - c0, out
    finally:
        gc.enable()


def measure(name: str, mech, steps: int, repeat: int) -> dict:
    twin = NumpyPD(mech.controller)
    runs = {"core": lambda: dojo.simulate(mech, steps=steps),
            "per-step": lambda: dojo.simulate(mech, steps=steps, controller=twin)}
    for fn in runs.values():  # warm up (imports, the initial state)
        fn()
    cpu = {key: [] for key in runs}
    last = {}
    for _ in range(repeat):
        for key, fn in runs.items():
            t, last[key] = cpu_of(fn)
            cpu[key].append(t)
    same = np.array_equal(last["core"].x, last["per-step"].x)
    failed = int(sum(s != "success" for s in last["core"].status))
    row = {"case": name, "steps": steps, "h": mech.timestep, "same_trajectory": bool(same), "failed_steps": failed}
    for key in runs:
        median = statistics.median(cpu[key])
        row[f"{key}_ms_per_step"] = 1e3 * median / steps
        row[f"{key}_sim_s_per_cpu_s"] = steps * mech.timestep / median
    row["ratio"] = row["per-step_ms_per_step"] / row["core_ms_per_step"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stand-robots", default=DEFAULT_STAND_ROBOTS, help="robot_zoo --stand's robots ('' for none)")
    parser.add_argument("--cases", default="a1,go1_standing,go1_drop,stand")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--blas-threads", default=BLAS_THREADS, help="BLAS threads (default 1; 0: the environment's)")
    args = parser.parse_args()
    wanted = set(args.cases.split(","))
    cases = []
    if "a1" in wanted:
        cases.append(("a1 (quadruped, 10 ms)", lambda: dojo.load_scene("quadruped"), 100))
    if "go1_standing" in wanted:
        cases.append(("go1 standing (50 ms, 2 s)", lambda: go1_case("standing", 0.05), 40))
    if "go1_drop" in wanted:
        cases.append(("go1 drop (25 ms, 2 s)", lambda: go1_case("drop", 0.025), 80))
    if "stand" in wanted:
        for stem in filter(None, args.stand_robots.split(",")):
            cases.append((f"{stem} --stand", lambda stem=stem: stand_mechanism(stem), 500))
    with bench_common.blas_limit(args.blas_threads)[0]:
        rows = []
        print(f"{'case':32s} {'steps':>5s} {'core ms':>8s} {'per-step':>8s} {'ratio':>6s} {'core sim/cpu':>12s} "
              f"{'failed':>6s} same")
        for name, make, steps in cases:
            row = measure(name, make(), steps, args.repeat)
            rows.append(row)
            print(f"{name:32s} {steps:5d} {row['core_ms_per_step']:8.3f} {row['per-step_ms_per_step']:8.3f} "
                  f"{row['ratio']:6.2f} {row['core_sim_s_per_cpu_s']:12.2f} {row['failed_steps']:6d} "
                  f"{row['same_trajectory']}", flush=True)
    try:
        load = " ".join(f"{x:.1f}" for x in __import__("os").getloadavg())
    except OSError:
        load = "?"
    print(f"load average: {load}; CPU times, median of {args.repeat}")
    if args.json:
        args.json.write_text(json.dumps({"repeat": args.repeat, "load": load, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
