"""Trajectory-optimisation speed: the example tasks of configs/optimize/, solved end to end.

Usage:
    python benchmarks/optimize_speed.py [--repeat R] [--tasks a,b] [--json FILE] [--blas-threads N]

For each task: the iterations, the median wall time of the solve over R repeats (after
one warm-up solve; the task file read and the scene built once, outside the timing), the
time per iteration and its split into rollouts (the initial one and every line-search
trial), gradients (each step re-solved and differentiated, plus the coordinate maps of
the minimal representation) and backward passes (the cost model, the adjoint gradient and
the Riccati recursion with its box QPs), and whether the goal is reached.

Goals (issue 26): cartpole swing-up (100 steps) under 1 s, block push under 2 s, quadruped
steps under 60 s, on 2 cores; the hopper has none (its goal: within 5 cm).
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
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dojo_cli.optimize.ilqr import solve  # noqa: E402
from dojo_cli.optimize.task import load_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# task file -> (goal in seconds, a check of the goal reached: a sentence or None)
TASKS = {
    "cartpole_swingup": 1.0,
    "cartpole_swingup_maximal": 1.0,
    "block_push": 2.0,
    "hopper_hop": float("nan"),  # (no speed goal in the issue)
    "quadruped_trot": 60.0,
    "humanoid_step": float("nan"),  # (no speed goal in the issue)
}


def goal_reached(name: str, result) -> str:
    """The task's goal in numbers (the tests' acceptance thresholds)."""
    if name.startswith("cartpole"):
        q, v = result.traj.MQ[-1], result.traj.MV[-1]
        ok = abs(q[0]) < 1e-3 and abs(q[1]) < 1e-3
        return f"{'yes' if ok else 'NO'}: cart {q[0]:.1e} m, pole {q[1]:.1e} rad, |v| {np.max(np.abs(v)):.1e}"
    if name == "quadruped_trot":
        # at least a body length (hip to hip, 0.366 m for the A1) with the trunk above 0.2 m
        Z = result.traj.Z.reshape(len(result.traj.Z), -1, 13)
        advance = float(Z[-1, 0, 0] - Z[0, 0, 0])
        lowest = float(Z[:, 0, 2].min())
        ok = advance > 0.366 and lowest > 0.2 and result.violation < 1e-4
        return (f"{'yes' if ok else 'NO'}: trunk {advance:.3f} m ahead, lowest {lowest:.3f} m, "
                f"slack {result.violation:.1e} N")
    if name == "humanoid_step":
        # the right sole 0.1 m ahead (0.15 planned) and down, the pelvis upright and forward
        Z = result.traj.Z.reshape(len(result.traj.Z), -1, 13)
        pelvis = float(Z[-1, 0, 0] - Z[0, 0, 0])
        ok = pelvis > 0.05 and result.violation < 1e-4
        return f"{'yes' if ok else 'NO'}: pelvis {pelvis:.3f} m ahead, slack {result.violation:.1e} N"
    if name == "hopper_hop":
        x = result.traj.Z[-1, 0:3]
        miss = float(np.linalg.norm(x - [0.5, 0.0, 0.55]))
        return f"{'yes' if miss < 0.05 else 'NO'}: body {1000 * miss:.1f} mm from its goal"
    x = result.traj.Z[-1, 0:3]
    ok = abs(x[0] - 1.0) < 0.01 and abs(x[1]) < 0.01
    return f"{'yes' if ok else 'NO'}: box {1000 * abs(x[0] - 1.0):.2f} mm from its goal"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1")
    args = parser.parse_args()
    limit, blas = bench_common.blas_limit(THREADS)
    rows = []
    with limit:
        print(f"python {platform.python_version()}, BLAS threads {blas}")
        print(f"{'task':<26}{'iter':>5}{'median s':>10}{'cpu s':>8}{'goal s':>8}{'ms/iter':>9}{'rollout':>9}{'gradients':>10}"
              f"{'backward':>9}  goal reached")
        for name in args.tasks.split(","):
            task = load_task(ROOT / "configs" / "optimize" / f"{name}.yaml")
            solve(task.problem, task.initial_guess, task.options)  # warm-up
            times, cpu, result = [], [], None
            for _ in range(args.repeat):
                # the process's CPU time too: on a shared machine (load above the cores) the
                # wall time measures the neighbours; one thread (BLAS pinned), so CPU ~ wall when idle
                c0 = time.process_time()
                seconds, result = bench_common.timed(lambda: solve(task.problem, task.initial_guess, task.options))
                cpu.append(time.process_time() - c0)
                times.append(seconds)
            it = max(result.iterations, 1)
            split = {k: 1000 * v / it for k, v in result.timing.items()}
            median = statistics.median(times)
            goal = goal_reached(name, result)
            print(f"{name:<26}{result.iterations:>5}{median:>10.3f}{statistics.median(cpu):>8.3f}{TASKS[name]:>8.1f}{1000 * median / it:>9.1f}"
                  f"{split['rollout']:>9.1f}{split['gradients']:>10.1f}{split['backward']:>9.1f}  {goal}")
            rows.append({"task": name, "status": result.status, "iterations": result.iterations, "median_s": median,
                         "times_s": times, "cpu_s": cpu, "goal_s": TASKS[name], "ms_per_iteration": split, "goal": goal,
                         "horizon": task.problem.horizon})
    if args.json:
        args.json.write_text(json.dumps({"blas_threads": blas, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
