"""Benchmark: PyBullet's URDF collection (pybullet_data) imported and dropped limp, as robot_zoo.py does.

Usage:
    python benchmarks/pybullet_zoo.py DATA_DIR [--every 40] [--steps N] [--jobs J] [--json FILE]
                                      [--tolerances relative|absolute]

DATA_DIR is a pybullet_data folder (the ``pybullet_data`` package of a pybullet wheel,
``pybullet_data.getDataPath()``; pybullet itself is not needed). The files: every .urdf
outside ``random_urdfs/`` and every ``--every``-th of the 1,000 ``random_urdfs/*/*.urdf``
(sorted; default 40: 25 of them), 120 files for pybullet 3.2.7. Each is imported as ``dojo
import-urdf URDF --floating --contacts collision --merge-fixed`` does and dropped limp for N
steps (default 200) by robot_zoo.py's ``run_robot``, in J worker processes (default 1: the
machine is shared); the table is robot_zoo.py's (docs/urdf.md, "PyBullet's collection,
measured").
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import robot_zoo  # noqa: E402  (pins the BLAS threads from --blas-threads before numpy loads)

RANDOM = "random_urdfs"


def collection(root: Path, every: int) -> list[Path]:
    """pybullet_data's URDFs outside random_urdfs/, then every ``every``-th of random_urdfs/*/*.urdf."""
    files = sorted(p for p in root.rglob("*.urdf") if RANDOM not in p.relative_to(root).parts)
    return files + sorted(root.glob(f"{RANDOM}/*/*.urdf"))[::every]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a pybullet_data folder")
    parser.add_argument("--every", type=int, default=40, help="every N-th of random_urdfs (default 40)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1")
    parser.add_argument("--tolerances", choices=("relative", "absolute"), default="relative")
    args = parser.parse_args()
    if not args.data.is_dir():
        print(f"{args.data}: not a folder (give a pybullet_data folder)")
        return 2
    files = collection(args.data, max(1, args.every))
    tasks = [(str(p.relative_to(args.data)), str(p), args.steps, False, args.tolerances) for p in files]
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn" if sys.platform == "darwin" else "fork")
    with ctx.Pool(max(1, args.jobs), maxtasksperchild=4) as pool:
        rows = list(pool.imap_unordered(robot_zoo.run_robot, tasks))
    rows.sort(key=lambda r: r["robot"])
    wall = time.perf_counter() - t0
    print(f"pybullet_data at {args.data}; {len(rows)} URDFs, {args.steps} steps at the import's h, "
          f"{args.jobs} processes, {wall:.0f} s wall")
    robot_zoo.print_table(rows, args.steps)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"steps": args.steps, "jobs": args.jobs, "wall_s": wall, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
