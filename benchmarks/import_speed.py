"""URDF import and start-up speed (issue 24, item 5).

Usage:
    python benchmarks/import_speed.py [--runs N] [--only SUBSTRING ...] [--no-startup] [--no-imports]
                                      [--cold] [--json FILE]

1. Import time of every URDF of example-robot-data: a fresh process running
   ``dojo import-urdf URDF --floating --contacts collision --merge-fixed -o TMP.yaml --force``
   (the issue's command: parse, hulls of the collision meshes, validation and the model
   build with its initial state), wall time from the parent. ``--cold`` points the hull
   cache (DOJO_CACHE_DIR) at an empty folder for each file (every hull computed, trimesh
   imported); by default the cache is a temporary folder filled by one untimed warm-up
   import of each file, which is what a user sees from the second import on.
   The goal is 5 s for every robot.
2. Start-up: ``dojo simulate go1 --steps 1`` against ``dojo simulate pendulum --steps 1``,
   fresh processes, round-robin after a warm-up round, the median of N runs (default 7);
   the goal is go1 within 0.3 s of pendulum.

Numbers depend on the machine's load: run it on an idle machine, and compare runs made
side by side. The exit status is 0 unless a command fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORT_GOAL = 5.0  # s, any robot of the collection
STARTUP_GOAL = 0.3  # s, go1 over pendulum
IMPORT_FLAGS = ("--floating", "--contacts", "collision", "--merge-fixed")


def _dojo() -> list[str]:
    script = Path(sys.executable).with_name("dojo")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from dojo_cli.__main__ import main; main()"]


def _run(argv: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    return time.perf_counter() - start, proc


def _urdfs(only: list[str]) -> tuple[Path, list[Path]]:
    sys.path.insert(0, str(ROOT))
    from dojo_cli.scene.robots import example_robot_data_root

    root = example_robot_data_root()
    if root is None:
        sys.exit("example-robot-data is not installed (pip install -e '.[test]')")
    files = sorted((root / "robots").rglob("*.urdf"))
    return root / "robots", [f for f in files if not only or any(s in str(f) for s in only)]


def import_times(only: list[str], cold: bool, tmp: Path) -> list[dict]:
    robots, files = _urdfs(only)
    dojo = _dojo()
    shared = tmp / "cache"
    rows = []
    for f in files:
        name = str(f.relative_to(robots))
        env = dict(os.environ, DOJO_CACHE_DIR=str(tmp / f"cold-{len(rows)}" if cold else shared))
        argv = [*dojo, "import-urdf", str(f), *IMPORT_FLAGS, "-o", str(tmp / "robot.yaml"), "--force"]
        if not cold:
            _run(argv, env)  # warm-up: the hull cache and the OS file cache
        seconds, proc = _run(argv, env)
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}: {(proc.stderr.strip().splitlines() or [''])[-1][:90]}"
        rows.append({"urdf": name, "seconds": seconds, "status": status})
        print(f"{seconds:7.2f} s  {name:<62} {status}", flush=True)
    slow = [r for r in rows if r["seconds"] > IMPORT_GOAL]
    worst = max(rows, key=lambda r: r["seconds"]) if rows else None
    if worst:
        print(f"slowest: {worst['urdf']} {worst['seconds']:.2f} s; {len(slow)} of {len(rows)} above {IMPORT_GOAL:g} s")
    return rows


def startup(runs: int, tmp: Path) -> dict:
    dojo = _dojo()
    env = dict(os.environ)
    cases = {name: [*dojo, "simulate", name, "--steps", "1", "-o", str(tmp / f"{name}.h5"), "--force", "-q"]
             for name in ("pendulum", "go1")}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(runs + 1):
        for name, argv in cases.items():
            seconds, proc = _run(argv, env)
            if proc.returncode != 0:
                sys.exit(f"{' '.join(argv)} failed: {proc.stderr}")
            if round_:  # the first round warms the caches
                times[name].append(seconds)
    median = {name: statistics.median(t) for name, t in times.items()}
    gap = median["go1"] - median["pendulum"]
    for name, t in times.items():
        print(f"dojo simulate {name} --steps 1: median {median[name]:.3f} s (min {min(t):.3f}, max {max(t):.3f}, {len(t)} runs)")
    print(f"go1 - pendulum: {gap:+.3f} s (goal <= {STARTUP_GOAL:g} s)")
    return {"median": median, "runs": times, "gap": gap}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--cold", action="store_true", help="an empty hull cache for each import")
    parser.add_argument("--no-startup", action="store_true")
    parser.add_argument("--no-imports", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dojo-import-speed-"))
    try:
        out = {}
        if not args.no_imports:
            out["imports"] = import_times(args.only, args.cold, tmp)
        if not args.no_startup:
            out["startup"] = startup(args.runs, tmp)
        if args.json:
            args.json.write_text(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
