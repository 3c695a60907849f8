"""Benchmark: every URDF of example-robot-data imported and dropped limp onto the ground.

Usage:
    python benchmarks/robot_zoo.py [--steps N] [--jobs J] [--robots a,b,...] [--json FILE]
                                   [--tolerances relative|absolute]

Each URDF under example-robot-data's ``robots`` folder is imported as
``dojo import-urdf URDF --floating --contacts collision --merge-fixed`` does (through the
Python API, ``read_urdf`` then ``build_mechanism``: the same import and validation,
without a subprocess per robot), then dropped limp from where the import puts it (the
lowest contact touching the ground) for N steps (default 200 = 2 s at the scene's
h = 0.01) with ``dojo.simulate``.

Printed per robot: bodies, contacts, import time (wall, read + build, which includes the
state at t = 0), steps failed and the first failed step, the worst penetration (the most
negative contact distance over the run, mm; ``-`` without contacts), the mean and largest
interior-point iteration count, ms per step (CPU time of the whole run / N), and why a
robot was refused at import (the first line of its error). The robots run in J worker
processes (default 2), one robot per task; the slowest imports are started first.

``--tolerances absolute`` runs the solver with the tolerances' old absolute meaning (SI
units, every residual row alike; docs/physics.md "Solver tolerances"), for before/after
comparisons. Exit status 0; the table is the result. ``--json FILE`` writes every row.
Needs example-robot-data (``pip install 'dojo_cli[robots]'``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_common import pin_blas_threads  # noqa: E402

_THREADS = pin_blas_threads(sys.argv)

import numpy as np  # noqa: E402

# Robots whose import is known to be slow go first, so the pool does not end on them.
SLOW_FIRST = ("talos", "centauro", "g1", "romeo", "tiago", "pr2", "hextilt", "alex", "baxter")


def urdf_files(root: Path) -> list[Path]:
    """Every .urdf under example-robot-data's robots folder, sorted by path."""
    return sorted(root.rglob("*.urdf"))


def robot_names(files: list[Path], root: Path) -> list[str]:
    """Short unique names: the file's stem, with its package folder where two files share
    it (anymal_b_simple_description/anymal and anymal_c_simple_description/anymal)."""
    stems = [p.stem for p in files]
    return [p.stem if stems.count(p.stem) == 1 else f"{p.relative_to(root).parts[0]}/{p.stem}" for p in files]


def run_robot(task: tuple[str, str, int]) -> dict:
    """Import one URDF and drop it; a row of the table (never raises)."""
    name, path, steps, tolerances = task
    warnings.simplefilter("ignore")
    import dojo_cli as dojo
    from dojo_cli.errors import DojoError
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    row: dict = {"robot": name, "file": path}
    options = UrdfOptions(floating=True, contacts="collision", merge_fixed=True)
    t0 = time.perf_counter()
    try:
        result = read_urdf(path, options, path)
        mech = build_mechanism(spec_from_dict(result.scene, file=path))
    except (DojoError, ValueError) as exc:
        row["import_s"] = time.perf_counter() - t0
        text = str(exc).strip().replace(str(Path(path).parent) + "/", "")  # file:line: ..., without the folder
        row["refused"] = text.splitlines()[0] if text else type(exc).__name__
        return row
    row["import_s"] = time.perf_counter() - t0
    row.update(nb=mech.nb, nc=mech.nc, nj=mech.nj, mass=float(sum(b.mass for b in mech.bodies)))
    c0 = time.process_time()
    traj = dojo.simulate(mech, steps=steps, opts=dojo.default_options(mech).replace(tolerances=tolerances))
    cpu = time.process_time() - c0
    status = list(traj.status)
    failed = [k for k, s in enumerate(status) if s != "success"]
    row["steps"] = steps
    row["failed"] = len(failed)
    row["first_failed"] = failed[0] if failed else None
    row["failed_status"] = sorted(set(status[k] for k in failed))
    row["ms_per_step"] = 1e3 * cpu / steps
    row["iterations_mean"] = float(np.mean(traj.iterations))
    row["iterations_max"] = int(np.max(traj.iterations))
    if traj.contact_distance is not None and traj.contact_distance.size:
        d = traj.contact_distance
        finite = np.isfinite(d)
        row["penetration_mm"] = float(max(0.0, -np.min(d[finite]) if finite.any() else np.inf) * 1e3)
        ok = [k for k in range(steps) if status[k] == "success"]
        row["penetration_converged_mm"] = float(max(0.0, -np.min(d[ok])) * 1e3) if ok else None
    else:
        row["penetration_mm"] = None
    row["lowest_z"] = float(np.nanmin(traj.x[:, :, 2]))
    return row


def _fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def print_table(rows: list[dict], steps: int) -> None:
    print(f"{'robot':26s} {'nb':>3s} {'nc':>4s} {'import s':>8s} {'failed':>6s} {'first':>5s} "
          f"{'pen mm':>9s} {'iters':>5s} {'max':>3s} {'ms/step':>7s}  refused")
    for r in rows:
        if "refused" in r:
            print(f"{r['robot']:26s} {'':>3s} {'':>4s} {r['import_s']:8.2f} {'':>6s} {'':>5s} {'':>9s} {'':>5s} {'':>3s} "
                  f"{'':>7s}  {r['refused'][:160]}")
            continue
        pen = r["penetration_mm"]
        pen_s = "-" if pen is None else (f"{pen:9.3f}" if pen < 1e5 else f"{pen:9.2e}")
        print(f"{r['robot']:26s} {r['nb']:3d} {r['nc']:4d} {r['import_s']:8.2f} {r['failed']:6d} "
              f"{_fmt(r['first_failed'], 'd'):>5s} {pen_s:>9s} {r['iterations_mean']:5.1f} {r['iterations_max']:3d} "
              f"{r['ms_per_step']:7.2f}")
    ran = [r for r in rows if "refused" not in r]
    clean = [r for r in ran if r["failed"] == 0 and (r["penetration_mm"] or 0.0) <= 5.0]
    print(f"{len(rows)} robots: {len(clean)} with every step converged and penetration <= 5 mm, "
          f"{len(ran) - len(clean)} with failed steps or deeper penetration, {len(rows) - len(ran)} refused at import "
          f"({steps} steps each)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--robots", default="", help="comma-separated file stems (default: all)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1")
    parser.add_argument("--tolerances", choices=("relative", "absolute"), default="relative")
    args = parser.parse_args()
    from dojo_cli.scene import robots

    root = robots.example_robot_data_root()
    if root is None:
        print(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
        return 1
    files = urdf_files(root / "robots" if (root / "robots").is_dir() else root)
    wanted = {s for s in args.robots.split(",") if s}
    robots_dir = root / "robots" if (root / "robots").is_dir() else root
    tasks = [(name, str(p), args.steps, args.tolerances) for name, p in zip(robot_names(files, robots_dir), files) if not wanted or p.stem in wanted]
    tasks.sort(key=lambda t: (not any(t[0].startswith(s) for s in SLOW_FIRST), t[0]))
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn" if sys.platform == "darwin" else "fork")
    with ctx.Pool(max(1, args.jobs), maxtasksperchild=4) as pool:
        rows = list(pool.imap_unordered(run_robot, tasks))
    rows.sort(key=lambda r: r["robot"])
    wall = time.perf_counter() - t0
    print(f"example-robot-data at {root}; {len(rows)} URDFs, {args.steps} steps at the import's h, "
          f"{args.jobs} processes, {wall:.0f} s wall")
    print_table(rows, args.steps)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"steps": args.steps, "jobs": args.jobs, "wall_s": wall, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
