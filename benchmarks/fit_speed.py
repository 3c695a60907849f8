"""System-identification speed: `dojo fit` on the real cube tosses (configs/fit/cube_tosses.yaml).

Usage:
    python benchmarks/fit_speed.py [--tosses N] [--evaluations E] [--loss one_step|shooting] [--window W] [--json FILE]

Fits the example's parameters (one friction, one restitution, the eight corners: 26 values)
to the first N tosses (default 100), at most E Jacobian evaluations (default the file's), and
reports the wall and CPU time of the fit (on a shared machine the CPU time is the
fit's own cost) (the file read, the data loaded and the scene built once,
outside the timing), the time per evaluation and per step (each step solved and
differentiated), the cost before and after, and the fitted values. The validation errors
are not part of the timing (docs/fit.md has them). An evaluation is one residual vector
(least_squares' function call) or one residual vector with its Jacobian; the fit runs on
one core.

Goal (issue 27): a fit of 100 tosses in under 2 minutes on 2 cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[0]))
import bench_common  # noqa: E402

THREADS = bench_common.pin_blas_threads(sys.argv)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dojo_cli.fit.problem import FitProblem  # noqa: E402
from dojo_cli.fit.solve import solve  # noqa: E402
from dojo_cli.fit.task import load_fit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 120.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tosses", type=int, default=100)
    parser.add_argument("--evaluations", type=int, default=None)
    parser.add_argument("--loss", default=None)
    parser.add_argument("--window", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2, help="processes the evaluations are split over (default 2)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--blas-threads", type=int, default=None)
    args = parser.parse_args()
    task = load_fit(ROOT / "configs" / "fit" / "cube_tosses.yaml")
    from dojo_cli.fit.task import _Reader, _selection  # noqa: F401 (the same reader as the file's)
    from dojo_cli.fit.data import read_recordings, BodyColumns

    recordings = read_recordings(ROOT / "data" / "cube_tosses" / "cube_tosses_train.npz", "cube_tosses_train.npz",
                                 {"cube": BodyColumns(["x", "y", "z"], ["qw", "qx", "qy", "qz"])}, ["cube"],
                                 task.mech.timestep)
    train = recordings[:args.tosses]
    if args.evaluations:
        task.options.max_evaluations = args.evaluations
    problem = FitProblem(task.mech, task.parameters, train, loss=args.loss or task.loss,
                         window=args.window or task.window, rotation_weight=task.rotation_weight,
                         opts=task.mech.default_options, kappa=task.kappa, workers=args.workers)
    steps = sum(s.steps for s in problem.segments)
    r0 = problem.evaluate(task.parameters.initial, jacobian=False)[0]
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, cpu_started = time.perf_counter(), time.process_time()
    status, x, starts, evaluations, log = solve(problem, task.options)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    problem.close()  # the workers' CPU time counts once they are ended
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu += (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    r1 = problem.evaluate(x, jacobian=False)[0]
    out = {
        "tosses": len(train), "workers": args.workers, "steps_per_evaluation": steps, "parameters": len(x), "loss": problem.loss,
        "window": problem.window, "status": status, "evaluations": evaluations, "seconds": seconds, "cpu_seconds": cpu,
        "seconds_per_evaluation": seconds / max(evaluations, 1), "initial_cost": 0.5 * float(r0 @ r0),
        "cost": 0.5 * float(r1 @ r1), "values": dict(zip(task.parameters.names, map(float, x))),
        "goal_seconds": GOAL_SECONDS, "goal_met": None if args.evaluations else seconds < GOAL_SECONDS,
        "blas_threads": THREADS,
        "python": platform.python_version(), "machine": platform.machine(),
    }
    print(f"{len(train)} tosses, {steps} steps per evaluation, {len(x)} parameters, loss {problem.loss}: "
          f"{status} after {evaluations} evaluations in {seconds:.1f} s wall, {cpu:.1f} s CPU ({cpu / max(evaluations, 1):.2f} s "
          f"CPU each, {1e6 * cpu / max(evaluations, 1) / steps:.0f} us per step); cost {out['initial_cost']:.4g} -> {out['cost']:.4g}; "
          + (f"goal (a whole fit) < {GOAL_SECONDS:.0f} s: {'met' if out['goal_met'] else 'NOT met'}" if out["goal_met"] is not None
             else "a partial fit (--evaluations): the goal is for a whole one"))
    print("friction %.4f, restitution %.4f" % (x[0], x[1]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
