"""Benchmark: every URDF of example-robot-data imported and dropped limp onto the ground.

Usage:
    python benchmarks/robot_zoo.py [--stand] [--steps N] [--jobs J] [--robots a,b,...] [--json FILE]
                                   [--tolerances relative|absolute] [--warm-start on|off]

Each URDF under example-robot-data's ``robots`` folder is imported as
``dojo import-urdf URDF --floating --contacts collision --merge-fixed`` does (through the
Python API, ``read_urdf`` then ``build_mechanism``: the same import and validation,
without a subprocess per robot), then dropped limp from where the import puts it (the
lowest contact touching the ground) for N steps (default 200 = 2 s at the scene's
h = 0.01) with ``dojo.simulate``.

Printed per robot: bodies, contacts, import time (wall, read + build, which includes the
state at t = 0), steps failed and the first failed step, the worst penetration (the most
negative contact distance over the run, mm; ``-`` without contacts), the mean and largest
interior-point iteration count, the steps restarted (more iterations than one attempt's
``max_iter``: core/maximal/step.h, "Restarts"; a contact joining within its margin
re-solves a step too), the steps whose full step failed and that were solved again as
substeps (``subst``: dojo_cli/simulation/substeps.py), ms per step (CPU time of the whole run / N), and why a
robot was refused at import (the first line of its error). The robots run in J worker
processes (default 2), one robot per task; the slowest imports are started first.

``--stand``: each URDF imported as ``dojo import-urdf URDF --stand --contacts collision
--merge-fixed`` does (scene/stand.py: the SRDF's standing pose, the base on the ground, PD
gains from the inertias; optimize/balance.py: a robot whose support does not hold its
centre of mass leaned onto its two feet and balanced by an LQR) and run for N steps
(default 500 = 5 s); the robots without legs are listed as such. Printed per legged robot: bodies, contacts, support bodies, how far the
centre of mass lies inside the support polygon ("line": point feet, no area), the trunk's
height at the start and at the end, failed steps, the steps solved as substeps, the deepest contact, ms per step, and
where the pose came from. A robot stands when every step converged and its trunk ends
within STAND_TOLERANCE of its start.

``--tolerances absolute`` runs the solver with the tolerances' old absolute meaning (SI
units, every residual row alike; docs/physics.md "Solver tolerances"), for before/after
comparisons. ``--warm-start on|off`` sets ``solver.warm_start`` (default: the scene's;
core/maximal/step.h, "Warm start"), for the same comparison of the interior point's start.
Exit status 0; the table is the result. ``--json FILE`` writes every row.
Needs example-robot-data (``pip install 'dojo_cli[robots]'``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
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


def run_robot(task: tuple) -> dict:
    """Import one URDF and drop it (or, with stand, stand it); a row of the table (never raises)."""
    name, path, steps, stand, tolerances, warm = task
    if stand:
        return stand_robot(name, path, steps, tolerances, warm)
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
    opts = solver_options(dojo.default_options(mech), tolerances, warm)
    c0 = time.process_time()
    traj = dojo.simulate(mech, steps=steps, opts=opts)
    cpu = time.process_time() - c0
    status = list(traj.status)
    failed = [k for k, s in enumerate(status) if s != "success"]
    row["steps"] = steps
    # steps that took more than one attempt's max_iter: restarted (core/maximal/step.h,
    # "Restarts"), or re-solved as a contact joined (margins.h)
    row["restarted"] = int(np.sum(np.asarray(traj.iterations) > opts.max_iter))
    row["failed"] = len(failed)
    row["first_failed"] = failed[0] if failed else None
    row["failed_status"] = sorted(set(status[k] for k in failed))
    # failed full steps solved again as substeps (simulation/substeps.py), and their largest count
    substeps = np.ones(steps, dtype=int) if traj.substeps is None else np.asarray(traj.substeps)
    row["substepped"] = int(np.sum(substeps > 1))
    row["substeps_max"] = int(np.max(substeps))
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


def solver_options(opts, tolerances: str, warm: bool | None):
    """The scene's solver options with --tolerances and --warm-start (None: the scene's)."""
    opts = opts.replace(tolerances=tolerances)
    return opts if warm is None else opts.replace(warm_start=warm)


def stand_robot(name: str, path: str, steps: int, tolerances: str = "relative", warm: bool | None = None) -> dict:
    """Import one URDF as ``dojo import-urdf URDF --stand --contacts collision --merge-fixed``
    does and run its PD stand; a row of the stand table (never raises)."""
    warnings.simplefilter("ignore")
    import dojo_cli as dojo
    from dojo_cli.errors import DojoError
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.optimize.balance import stand_import_balanced
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    row: dict = {"robot": name, "file": path}
    options = UrdfOptions(floating=True, contacts="collision", merge_fixed=True, meshes=False)
    t0 = time.perf_counter()
    try:
        result = read_urdf(path, options, path)
    except (DojoError, ValueError) as exc:
        row["refused"] = str(exc).strip().splitlines()[0].replace(str(Path(path).parent) + "/", "")
        return row
    try:
        result, report = stand_import_balanced(path, options, path)
    except DojoError as exc:
        row["not_legged"] = str(exc).strip().splitlines()[0].split("stand: ", 1)[-1]
        return row
    row["legs"] = report.legs
    row["notes"] = report.notes
    try:
        mech = build_mechanism(spec_from_dict(result.scene, file=path))
    except (DojoError, ValueError) as exc:
        row["refused"] = str(exc).strip().splitlines()[0].replace(str(Path(path).parent) + "/", "")
        return row
    row["import_s"] = time.perf_counter() - t0
    row.update(nb=mech.nb, nc=mech.nc, pose=report.pose_source.split(" (")[0], feet=len(report.feet), com_margin_mm=None if report.com_margin is None else 1e3 * report.com_margin,
               balance=report.balance)
    c0 = time.process_time()
    traj = dojo.simulate(mech, steps=steps, opts=solver_options(dojo.default_options(mech), tolerances, warm))
    cpu = time.process_time() - c0
    status = list(traj.status)
    failed = [k for k, s in enumerate(status) if s != "success"]
    base = mech.joints[0].child
    z = traj.x[:, base, 2]
    substeps = np.ones(steps, dtype=int) if traj.substeps is None else np.asarray(traj.substeps)
    row.update(steps=steps, failed=len(failed), first_failed=failed[0] if failed else None, ms_per_step=1e3 * cpu / steps,
               substepped=int(np.sum(substeps > 1)),
               z0=float(z[0]), z_min=float(np.min(z)), z_end=float(z[-1]),
               penetration_mm=float(max(0.0, -np.nanmin(traj.contact_distance)) * 1e3))
    return row


# A robot stands when its trunk ends within this of its starting height (m; the issue's "a
# few cm") with every step converged.
STAND_TOLERANCE = 0.05


def print_stand_table(rows: list[dict], steps: int) -> None:
    print(f"{'robot':26s} {'nb':>3s} {'nc':>4s} {'feet':>4s} {'COM in':>7s} {'z0 m':>6s} {'z end':>6s} {'failed':>6s} "
          f"{'subst':>5s} {'pen mm':>7s} {'ms/step':>7s}  pose")
    legged = [r for r in rows if "not_legged" not in r and "refused" not in r]
    for r in legged:
        margin = "line" if r["com_margin_mm"] is None else f"{r['com_margin_mm']:.0f}mm"
        print(f"{r['robot']:26s} {r['nb']:3d} {r['nc']:4d} {r['feet']:4d} {margin:>7s} {r['z0']:6.3f} {r['z_end']:6.3f} "
              f"{r['failed']:6d} {r['substepped']:5d} {r['penetration_mm']:7.2f} {r['ms_per_step']:7.2f}  {r['pose']}"
              f"{', leaned, LQR balance' if r.get('balance') else ''}")
    for r in rows:
        if "refused" in r:
            print(f"{r['robot']:26s} refused at import: {r['refused'][:140]}")
    print("why each robot is legged or not (dojo_cli/scene/legs.py, in the standing pose):")
    for r in rows:
        if "refused" not in r:
            print(f"  {r['robot']:26s} {r.get('legs') or r['not_legged']}")
            for note in r.get("notes", []):
                print(f"  {'':26s} note: {note}")
    stood = [r for r in legged if r["failed"] == 0 and abs(r["z_end"] - r["z0"]) <= STAND_TOLERANCE]
    print(f"{len(rows)} robots: {len(legged)} legged (by structure), {len(stood)} of them stand {steps} steps "
          f"(trunk within {STAND_TOLERANCE * 100:.0f} cm of its start, every step converged); "
          f"{sum('not_legged' in r for r in rows)} not legged, {sum('refused' in r for r in rows)} refused")


def _fmt(value, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def print_table(rows: list[dict], steps: int) -> None:
    print(f"{'robot':26s} {'nb':>3s} {'nc':>4s} {'import s':>8s} {'failed':>6s} {'first':>5s} "
          f"{'pen mm':>9s} {'iters':>5s} {'max':>3s} {'restart':>7s} {'subst':>5s} {'ms/step':>7s}  refused")
    for r in rows:
        if "refused" in r:
            print(f"{r['robot']:26s} {'':>3s} {'':>4s} {r['import_s']:8.2f} {'':>6s} {'':>5s} {'':>9s} {'':>5s} {'':>3s} "
                  f"{'':>7s} {'':>5s} {'':>7s}  {r['refused'][:160]}")
            continue
        pen = r["penetration_mm"]
        pen_s = "-" if pen is None else (f"{pen:9.3f}" if pen < 1e5 else f"{pen:9.2e}")
        print(f"{r['robot']:26s} {r['nb']:3d} {r['nc']:4d} {r['import_s']:8.2f} {r['failed']:6d} "
              f"{_fmt(r['first_failed'], 'd'):>5s} {pen_s:>9s} {r['iterations_mean']:5.1f} {r['iterations_max']:3d} "
              f"{r['restarted']:7d} {r['substepped']:5d} {r['ms_per_step']:7.2f}")
    ran = [r for r in rows if "refused" not in r]
    clean = [r for r in ran if r["failed"] == 0 and (r["penetration_mm"] or 0.0) <= 5.0]
    print(f"{len(rows)} robots: {len(clean)} with every step converged and penetration <= 5 mm, "
          f"{len(ran) - len(clean)} with failed steps or deeper penetration, {len(rows) - len(ran)} refused at import "
          f"({steps} steps each)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="steps per robot (default 200; 500 = 5 s with --stand)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--robots", default="", help="comma-separated file stems (default: all)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1")
    parser.add_argument("--tolerances", choices=("relative", "absolute"), default="relative")
    parser.add_argument("--warm-start", choices=("on", "off"), default=None,
                        help="solver.warm_start on or off (default: the scene's)")
    parser.add_argument("--stand", action="store_true", help="the legged robots' PD stands (import-urdf --stand), 500 steps by default")
    args = parser.parse_args()
    from dojo_cli.scene import robots

    root = robots.example_robot_data_root()
    if root is None:
        print(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
        return 1
    files = urdf_files(root / "robots" if (root / "robots").is_dir() else root)
    wanted = {s for s in args.robots.split(",") if s}
    robots_dir = root / "robots" if (root / "robots").is_dir() else root
    steps = args.steps if args.steps is not None else (500 if args.stand else 200)
    tasks = [(name, str(p), steps, args.stand, args.tolerances,
              None if args.warm_start is None else args.warm_start == "on") for name, p in zip(robot_names(files, robots_dir), files) if not wanted or p.stem in wanted]
    tasks.sort(key=lambda t: (not any(t[0].startswith(s) for s in SLOW_FIRST), t[0]))
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn" if sys.platform == "darwin" else "fork")
    with ctx.Pool(max(1, args.jobs), maxtasksperchild=4) as pool:
        rows = list(pool.imap_unordered(run_robot, tasks))
    rows.sort(key=lambda r: r["robot"])
    wall = time.perf_counter() - t0
    print(f"example-robot-data at {root}; {len(rows)} URDFs, {steps} steps at the import's h, "
          f"{args.jobs} processes, {wall:.0f} s wall")
    (print_stand_table if args.stand else print_table)(rows, steps)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"steps": steps, "stand": args.stand, "jobs": args.jobs, "wall_s": wall, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
