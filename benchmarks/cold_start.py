"""Cold-start benchmark: wall time of fresh ``dojo`` processes, from exec to exit.

Usage:
    python benchmarks/cold_start.py [--runs N] [--json FILE] [--imports] [--dojo PATH]

Each case is a new process timed from the parent (``subprocess.run``, perf_counter around
it: interpreter start, imports, the work, exit). The cases run round-robin, one run of
each per round, after one untimed warm-up round (pyc files, the OS file cache), so a
change in the machine's load hits all of them alike; the median of N rounds (default 10)
is reported, with the fastest and slowest run.

- ``python``: the interpreter alone (``python -c pass``), the floor of every case.
- ``import numpy``: the reference a numpy program cannot go below.
- ``import dojo_cli``: the package (its names load on first use, so this is nearly free).
- ``dojo --help``: the command list, without importing any command.
- ``dojo simulate``: ``dojo simulate pendulum --steps 10 -o TMP/run.h5 --force``, the whole
  path: typer, scene validation (pydantic-core), the physics, the HDF5 file.

``dojo`` is the console script next to this interpreter (``.venv/bin/dojo``), or
``--dojo PATH``; without one, ``python -c "from dojo_cli.__main__ import main; main()"`` with
the repository on PYTHONPATH (the same code; the script adds ~1 ms). ``--imports`` runs
each case once more under ``python -X importtime`` and lists the libraries it imported
with their import time. The exit status is 0 unless a case fails (non-zero exit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata, util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Wall-time goals on an idle machine (s): the cold-start issue's targets.
GOALS = {"dojo --help": 0.3, "dojo simulate": 0.4}
# Libraries whose import time --imports reports (top-level names).
WATCHED = ("numpy", "scipy", "pydantic", "pydantic_core", "typer", "rich", "yaml", "h5py", "lxml", "trimesh",
          "matplotlib", "meshcat", "dojo_cli")
# `python -X importtime` lines: "import time: self [us] | cumulative | <indent>name".
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


@dataclass
class Case:
    name: str
    argv: list[str]
    runs: list[float] = field(default_factory=list)  # wall time of each run (s)
    cpu: list[float] = field(default_factory=list)  # user + system CPU time of each run (s)
    imports_ms: dict[str, float] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


def dojo_command(explicit: str | None) -> tuple[list[str], str]:
    """The argv prefix that runs ``dojo``, and a phrase saying which one it is."""
    if explicit:
        found = shutil.which(explicit)
        if found is None:
            raise SystemExit(f"--dojo {explicit}: not an executable")
        return [os.path.abspath(found)], explicit  # absolute: the cases run in a scratch folder
    script = Path(sys.executable).with_name("dojo")
    if script.exists():
        return [str(script)], str(script)
    return ([sys.executable, "-c", "from dojo_cli.__main__ import main; main()"],
            "python -c 'from dojo_cli.__main__ import main; main()' (no dojo script next to this python)")


def cases(dojo: list[str]) -> list[Case]:
    return [
        Case("python", [sys.executable, "-c", "pass"]),
        Case("import numpy", [sys.executable, "-c", "import numpy"]),
        Case("import dojo_cli", [sys.executable, "-c", "import dojo_cli"]),
        Case("dojo --help", [*dojo, "--help"]),
        Case("dojo simulate", [*dojo, "simulate", "pendulum", "--steps", "10", "-o", "run.h5", "--force"]),
    ]


def environment() -> dict[str, str]:
    """This environment, with the repository on PYTHONPATH only when dojo_cli is not installed.

    (An installed dojo_cli holds the compiled core, dojo_cli/_core; the checkout's sources
    put first would hide it.)
    """
    env = dict(os.environ)
    if util.find_spec("dojo_cli") is None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("COLUMNS", "100")  # rich's help layout should not depend on the terminal
    return env


def _children_cpu() -> float:
    """User + system CPU time of the finished child processes so far (s)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(case: Case, env: dict[str, str], folder: Path) -> tuple[float, float]:
    """Wall and CPU time (s) of one run of the case."""
    # cwd: a scratch folder, since `python -c` puts the working directory first on sys.path
    # (run from the checkout, it would import ./dojo_cli instead of the installed package)
    cpu0 = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(case.argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{case.name}: exit code {proc.returncode}\n{proc.stderr}")
    return wall, _children_cpu() - cpu0


def import_times(case: Case, env: dict[str, str], folder: Path) -> dict[str, float]:
    """Milliseconds importing each watched library took in one run (its outermost import, nested ones included)."""
    argv = list(case.argv)
    if Path(argv[0]).name == "dojo":  # a console script: run its code under python -X importtime
        argv = [sys.executable, "-c", "from dojo_cli.__main__ import main; main()", *argv[1:]]
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env, cwd=folder, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    out: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        m = _IMPORTTIME.match(line)
        if m:
            top = m[4].split(".")[0]
            if top in WATCHED:
                out[top] = max(out.get(top, 0.0), int(m[2]) / 1e3)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def versions() -> dict[str, str | None]:
    found = {}
    for name in ("dojo_cli", "numpy", "scipy", "pydantic", "typer", "rich", "h5py"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per case; the median is reported (default 10)")
    ap.add_argument("--json", type=Path, help="also write every run's time to this JSON file")
    ap.add_argument("--imports", action="store_true", help="also list each case's imported libraries and their import time")
    ap.add_argument("--dojo", help="the dojo executable (default: the script next to this python)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")

    dojo, dojo_text = dojo_command(args.dojo)
    env = environment()
    load_before = os.getloadavg()
    print(f"dojo_cli cold start: python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}, "
          f"load average {load_before[0]:.2f}")
    print(f"dojo: {dojo_text}")
    with tempfile.TemporaryDirectory(prefix="dojo_cold_start_") as tmp:
        folder = Path(tmp)
        todo = cases(dojo)
        for case in todo:  # warm-up round, untimed
            run_once(case, env, folder)
        for _ in range(args.runs):
            for case in todo:
                wall, cpu = run_once(case, env, folder)
                case.runs.append(wall)
                case.cpu.append(cpu)
        if args.imports:
            for case in todo:
                case.imports_ms = import_times(case, env, folder)
    load_after = os.getloadavg()

    print(f"\nWall time of a fresh process, s (median of {args.runs} runs; min and max of the runs), and its CPU time:")
    head = ("case", "median", "min", "max", "goal", "", "cpu median")
    rows = []
    for case in todo:
        goal = GOALS.get(case.name)
        verdict = "" if goal is None else ("ok" if case.median <= goal else "over")
        rows.append((case.name, f"{case.median:.3f}", f"{min(case.runs):.3f}", f"{max(case.runs):.3f}",
                     "" if goal is None else f"{goal:.2f}", verdict, f"{statistics.median(case.cpu):.3f}"))
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]

    def line(r) -> str:
        return "  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths)))

    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    print(f"\ngoals are for an idle machine; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after "
          f"({os.cpu_count()} CPUs). On a busy machine the CPU time (user + system) is the steadier number.")
    if args.imports:
        print("\nImport time per library, ms (one run under -X importtime, which inflates it; nested imports overlap):")
        for case in todo:
            listed = ", ".join(f"{k} {v:.0f}" for k, v in case.imports_ms.items()) or "none of the watched libraries"
            print(f"  {case.name:<16} {listed}")

    if args.json:
        doc = {
            "benchmark": "cold_start",
            "runs_per_case": args.runs,
            "dojo": dojo_text,
            "cases": [
                {"name": c.name, "argv": c.argv, "median_s": c.median, "min_s": min(c.runs), "max_s": max(c.runs),
                 "goal_s": GOALS.get(c.name), "runs_s": c.runs, "cpu_median_s": statistics.median(c.cpu), "cpu_s": c.cpu,
                 **({"imports_ms": c.imports_ms} if args.imports else {})}
                for c in todo
            ],
            "load_average_before": load_before, "load_average_after": load_after,
            "python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
            "versions": versions(),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
