"""What the walk of a file's structure before a read costs (dojo_cli.io.structure_probe._probe_structure).

Usage:
    python benchmarks/probe_speed.py [--reads 20] [--steps 20] [--json FILE]

The probe forks a child that walks the file's structure with h5py (io/hdf5_walk.py) before
the file is opened in this process; in a process with other threads a doubtful verdict
of the child is walked again in a fresh interpreter. Four cases, on a small storage file
(``dojo simulate pendulum --steps 20``, ~60 KiB), each the median of ``--reads`` probes
(the memory of files already walked cleared before each):

- ``single-threaded``: this process has one thread: the fork and the child's walk.
- ``idle thread``: one more thread, waiting on an event (a notebook's, a server's).
- ``busy h5py thread``: one more thread reading another HDF5 file through h5py without a
  pause (a Dask task's): the fork waits for h5py's global lock, which it holds most of the time.
- ``fresh interpreter``: the walk in a new ``python -m dojo_cli.io.storage.hdf5_walk`` (what a
  doubtful verdict costs on top of the fork; interpreter start-up and imports included).

The cases run round-robin, one probe of each per round, after one untimed round, so a
change in the machine's load hits all of them alike. The outcomes of each probe's walks are
counted ("finished"; "timed out, then finished" when a child waited at the fork and a fresh
interpreter walked again). Every probe must end with the walk finished (no false
"damaged"); the exit status is 1 if one does not.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from dojo_cli.io.storage import probe as structure_probe  # noqa: E402

CASES = ("single-threaded", "idle thread", "busy h5py thread", "fresh interpreter")


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


class Busy:
    """A thread reading ``path`` through h5py without a pause, while in a ``with`` block."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.reads = 0
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="busy-h5py", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with h5py.File(self.path, "r", locking=False) as f:
                f["data"][...]
                f.attrs["note"]
            self.reads += 1
            self._started.set()

    def __enter__(self) -> Busy:
        self._thread.start()
        self._started.wait()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()  # (a thread still in h5py at exit can crash the interpreter)


class Idle:
    """A thread that waits, while in a ``with`` block."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._stop.wait, name="idle", daemon=True)

    def __enter__(self) -> Idle:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def probe(path: Path) -> str:
    """One probe from scratch, as read_storage runs it; the outcomes of its walks ("finished",
    or "timed out, then finished" when a fresh interpreter walked again)."""
    structure_probe._PROBED.clear()
    walks: list[structure_probe._Walk] = []
    forked, fresh = structure_probe._forked_walk, structure_probe._fresh_walk

    def recorded(walk: Callable[[Path], structure_probe._Walk]) -> Callable[[Path], structure_probe._Walk]:
        def wrapper(p: Path) -> structure_probe._Walk:
            walks.append(walk(p))
            return walks[-1]

        return wrapper

    structure_probe._forked_walk, structure_probe._fresh_walk = recorded(forked), recorded(fresh)
    try:
        structure_probe._probe_structure(path, str(path))
    finally:
        structure_probe._forked_walk, structure_probe._fresh_walk = forked, fresh
    return ", then ".join(w.outcome.value for w in walks)


def timed(fn: Callable[[], str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=20, help="probes per case (median reported; default 20)")
    parser.add_argument("--steps", type=int, default=20, help="steps of the pendulum run probed (default 20)")
    parser.add_argument("--json", type=Path, help="also write every time (s) and outcome")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "pendulum.h5"
        subprocess.run([sys.executable, "-m", "dojo_cli", "simulate", "pendulum", "--steps", str(args.steps), "-o",
                        str(run), "-q"], check=True, cwd=ROOT)
        other = Path(tmp) / "other.h5"
        with h5py.File(other, "w") as f:
            f["data"] = np.random.default_rng(0).random((100, 100))
            f.attrs["note"] = "variable-length text, in the global heap"
        if threading.active_count() != 1:
            print(f"warning: {threading.active_count()} threads before the single-threaded case", file=sys.stderr)

        busy_reads = 0

        def with_busy() -> str:
            nonlocal busy_reads
            with Busy(other) as busy:
                before = busy.reads
                out = probe(run)
                busy_reads += busy.reads - before
            return out

        def with_idle() -> str:
            with Idle():
                return probe(run)

        cases: dict[str, Callable[[], str]] = {
            "single-threaded": lambda: probe(run),
            "idle thread": with_idle,
            "busy h5py thread": with_busy,
            "fresh interpreter": lambda: structure_probe._fresh_walk(run).outcome.value,
        }
        times: dict[str, list[float]] = {name: [] for name in CASES}
        outcomes: dict[str, list[str]] = {name: [] for name in CASES}
        print(f"{run.stat().st_size / 1024:.0f} KiB file, {args.reads} probes a case, round-robin; {load()}")
        for round_ in range(args.reads + 1):
            for name in CASES:
                seconds, outcome = timed(cases[name])
                if round_ > 0:  # (round 0 warms the caches: not timed)
                    times[name].append(seconds)
                    outcomes[name].append(outcome)

    failed = False
    print(f"{'case':<20} {'median ms':>10} {'min ms':>8} {'max ms':>8}  outcomes")
    for name in CASES:
        ms = [t * 1e3 for t in times[name]]
        seen = {o: outcomes[name].count(o) for o in sorted(set(outcomes[name]))}
        failed |= any(not o.endswith("finished") for o in seen)
        print(f"{name:<20} {statistics.median(ms):>10.1f} {min(ms):>8.1f} {max(ms):>8.1f}  {seen}")
    print(f"the busy thread read its file {busy_reads} times during its {args.reads} probes; {load()}")
    if args.json:
        args.json.write_text(json.dumps({
            "reads": args.reads, "times_s": times, "outcomes": outcomes, "busy_reads": busy_reads,
            "python": platform.python_version(), "h5py": h5py.version.version, "hdf5": h5py.version.hdf5_version,
        }, indent=1))
    if failed:
        print("a probe of a good file did not end with the walk finished", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
