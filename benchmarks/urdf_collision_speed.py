"""Benchmark: laikago imported with --contacts collision against feet-only, limp drop.

Usage:
    python benchmarks/urdf_collision_speed.py [--steps N] [--repeat R] [--json FILE]

Both mechanisms come from example-robot-data's laikago.urdf (floating, meshes off): the
feet-only import (4 contact spheres) and the ``--contacts collision`` import (44 contacts,
each with the import's 1 cm margin: core/maximal/margins.h), plus the collision
import with the margins removed (every contact in every solve) for reference. Each is
dropped limp from its standing height and run N steps (default 150 = 1.5 s: the drop, the
collapse, the robot at rest) with ``dojo.simulate``; the time is CPU time
(``time.process_time``), the minimum of R runs (default 3), taken round-robin so that load
changes hit all three alike. Printed: ms per step, mean iterations, the lowest collision
shape's height, failed steps, and the ratios collision / feet-only (issue 12 asks <= 3),
all measured in the same run. Needs example-robot-data.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_common import blas_limit, pin_blas_threads  # noqa: E402

_THREADS = pin_blas_threads(sys.argv)

import numpy as np  # noqa: E402

import dojo_cli as dojo  # noqa: E402
from dojo_cli.scene import robots  # noqa: E402
from dojo_cli.scene.builder import build_mechanism  # noqa: E402
from dojo_cli.scene.loader import spec_from_dict  # noqa: E402
from dojo_cli.scene.urdf import UrdfOptions, read_urdf  # noqa: E402

LAIKAGO = "robots/laikago_description/urdf/laikago.urdf"
GOAL = 3.0


def mechanism(path, contacts: str, margins: bool = True):
    result = read_urdf(path, UrdfOptions(floating=True, contacts=contacts, meshes=False))
    if not margins:
        for c in result.scene["contacts"]:
            c.pop("margin", None)
    return build_mechanism(spec_from_dict(result.scene))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1")
    args = parser.parse_args()
    root = robots.example_robot_data_root()
    if root is None:
        print(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
        return 1
    path = root / LAIKAGO
    cases = {
        "feet": mechanism(path, "feet"),
        "collision": mechanism(path, "collision"),
        "collision, no margins": mechanism(path, "collision", margins=False),
    }
    best = {name: math.inf for name in cases}
    runs = {name: [] for name in cases}
    trajectories = {}
    limit, _ = blas_limit(_THREADS)
    with limit:
        for _ in range(args.repeat):
            for name, mech in cases.items():
                start = time.process_time()
                trajectories[name] = dojo.simulate(mech, steps=args.steps)
                seconds = time.process_time() - start
                runs[name].append(seconds / args.steps)
                best[name] = min(best[name], seconds / args.steps)
    rows = {}
    print(f"laikago, limp drop from standing, {args.steps} steps at h = {cases['feet'].timestep}, CPU time, best of {args.repeat}")
    print(f"{'case':24s} {'nc':>4s} {'ms/step':>8s} {'iters':>6s} {'lowest (mm)':>12s} {'failed':>6s} {'/ feet':>7s}")
    for name, mech in cases.items():
        traj = trajectories[name]
        row = {
            "nc": mech.nc, "ms_per_step": best[name] * 1e3, "ms_per_step_runs": [r * 1e3 for r in runs[name]],
            "iterations_mean": float(np.mean(traj.iterations)),
            "lowest_contact_mm": float(traj.contact_distance.min() * 1e3),
            "failed_steps": int(sum(s != "success" for s in traj.status)),
            "ratio_to_feet": best[name] / best["feet"],
        }
        rows[name] = row
        print(f"{name:24s} {row['nc']:4d} {row['ms_per_step']:8.3f} {row['iterations_mean']:6.2f} "
              f"{row['lowest_contact_mm']:12.4f} {row['failed_steps']:6d} {row['ratio_to_feet']:7.2f}")
    ratio = rows["collision"]["ratio_to_feet"]
    met = ratio <= GOAL
    print(f"collision / feet-only: {ratio:.2f}x (goal <= {GOAL:g}x): {'met' if met else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps({"steps": args.steps, "repeat": args.repeat, "cases": rows, "ratio": ratio,
                                         "goal": GOAL, "met": met}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
