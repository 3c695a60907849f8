"""Long-run benchmark: peak memory and speed of ``dojo simulate pendulum --steps N``.

Usage:
    python benchmarks/long_run.py [--steps 10000,100000,1000000] [--scene pendulum]
                                  [--interval 0.05] [--json FILE] [--dojo PATH]

Each run is a fresh ``dojo simulate SCENE --steps N -o TMP/run.h5 --force -q`` process,
measured from the parent: its peak resident memory (the kernel's ``ru_maxrss`` of the
child), its resident memory sampled every ``--interval`` s from ``/proc/PID/status``
(VmRSS; the shape of the growth: a run that holds its steps grows linearly, a bounded one
levels off), its wall time from exec to exit, and the run's own ``wall_time`` (stored in
the file: from opening the file to the final status, the steps and their block writes,
without the compaction that follows) and so the steps per second of the run loop. The file
size is reported too (the data the writer handed HDF5, compressed).

Before issue 28 item 6 the 10^6-step pendulum peaked at 207-214 MB, growing ~135 B per
step: HDF5 2.0's default chunk cache (8 MiB per dataset, 15 datasets) kept every chunk
written (storage.format._CHUNK_CACHE_BYTES now bounds it).

``dojo`` is the console script next to this interpreter (``.venv/bin/dojo``) or ``--dojo
PATH``. Not a test: no timing is asserted; the exit status is 0 unless a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _rss_mb(pid: int) -> float | None:
    """Resident memory of a live process, MB (None once it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        return None
    return None


def run_once(dojo: list[str], scene: str, steps: int, folder: Path, interval: float) -> dict:
    """One ``dojo simulate`` process: peak RSS, RSS samples, wall times, file size."""
    import h5py  # (the parent reads the run's wall_time attribute)

    out = folder / f"{scene}-{steps}.h5"
    cmd = dojo + ["simulate", scene, "--steps", str(steps), "-o", str(out), "--force", "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    samples: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def sample() -> None:
        while proc.poll() is None:
            rss = _rss_mb(proc.pid)
            if rss is not None:
                samples.append((round(time.perf_counter() - t0, 3), round(rss, 1)))
            time.sleep(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.join()
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err.strip()}")
    with h5py.File(out, "r") as f:
        run_wall = float(f.attrs["wall_time"])
        stored = int(f.attrs["steps_completed"])
    # ru_maxrss of the children is the largest child so far: a smaller run after a larger
    # one would report the larger's; the runs go in increasing size, and the samples say it too
    peak = peak_kb / 1024 if peak_kb > before else max((s[1] for s in samples), default=float("nan"))
    return {
        "steps": steps,
        "stored_steps": stored,
        "peak_rss_mb": round(peak * 1.048576, 1),  # KiB -> MB
        "process_wall_s": round(wall, 3),
        "run_wall_s": round(run_wall, 3),
        "steps_per_s": round(steps / run_wall),
        "file_mb": round(out.stat().st_size / 1e6, 2),
        "rss_samples_mb": samples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="10000,100000,1000000", help="comma-separated run lengths (increasing)")
    parser.add_argument("--scene", default="pendulum")
    parser.add_argument("--interval", type=float, default=0.05, help="RSS sampling interval, s")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument("--dojo", help="the dojo executable (default: next to this interpreter)")
    args = parser.parse_args(argv)

    script = Path(sys.executable).with_name("dojo")
    if args.dojo:
        dojo = [args.dojo]
    elif script.exists():
        dojo = [str(script)]
    else:
        dojo = [sys.executable, "-c", "from dojo_cli.__main__ import main; main()"]
    lengths = sorted(int(float(s)) for s in args.steps.split(","))
    folder = Path(tempfile.mkdtemp(prefix="dojo-long-run-"))
    results = []
    try:
        print(f"{'steps':>9} {'peak RSS MB':>12} {'run s':>8} {'steps/s':>9} {'process s':>10} {'file MB':>8}  RSS over time (MB)")
        for steps in lengths:
            r = run_once(dojo, args.scene, steps, folder, args.interval)
            results.append(r)
            picks = r["rss_samples_mb"][:: max(1, len(r["rss_samples_mb"]) // 8)]
            shape = " ".join(f"{rss:.0f}" for _, rss in picks)
            print(f"{steps:>9} {r['peak_rss_mb']:>12.1f} {r['run_wall_s']:>8.2f} {r['steps_per_s']:>9} "
                  f"{r['process_wall_s']:>10.2f} {r['file_mb']:>8.2f}  {shape}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                "scene": args.scene, "runs": results}
        args.json.write_text(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
