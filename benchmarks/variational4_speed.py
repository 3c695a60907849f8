"""Cost of integrator: variational4 per simulated second, against rk4 and the variational step.

Usage:
    python benchmarks/variational4_speed.py [--seconds S] [--repeat R] [--json FILE]

The double pendulum (scenes/basics/double_pendulum.yaml) for S simulated seconds (default
10) through ``dojo.simulate`` (the run loop, states into memory), best CPU time over R
repeats, for each integrator at the steps that matter:
- variational at h = 0.01 (second order: energy error 0.15 J) and at the step that brings
  its energy error to variational4's at h = 0.01;
- variational4 at h = 0.01 (fourth order, three solves per step);
- rk4 (Munthe-Kaas, minimal coordinates, explicit) at h = 0.01.
Printed per run: CPU seconds per simulated second, steps per second and the largest energy
error over the run (J). Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[0]))
import bench_common  # noqa: E402

THREADS = bench_common.pin_blas_threads(sys.argv)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import dojo_cli as dojo  # noqa: E402

RUNS = [("variational", 0.01), ("variational", 0.001), ("variational4", 0.01), ("rk4", 0.01)]


def measure(integrator: str, h: float, seconds: float, repeat: int) -> dict:
    mech = dojo.load_scene("double_pendulum", [f"integrator={integrator}", f"timestep={h}"])
    steps = int(round(seconds / h))
    best, traj = np.inf, None
    for _ in range(repeat):
        t0 = time.process_time()
        traj = dojo.simulate(mech, steps=steps)
        best = min(best, time.process_time() - t0)
    energy = dojo.mechanical_energy(mech, traj)
    return {"integrator": integrator, "h": h, "steps": steps, "cpu_s": best, "cpu_per_sim_s": best / seconds,
            "steps_per_s": steps / best, "energy_error_J": float(np.max(np.abs(energy - energy[0])))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blas-threads", default="1")
    args = parser.parse_args()
    rows = [measure(i, h, args.seconds, args.repeat) for i, h in RUNS]
    print(f"double pendulum, {args.seconds:g} s simulated, best of {args.repeat}")
    print(f"{'integrator':14s} {'h':>7s} {'CPU s / sim s':>13s} {'steps/s':>10s} {'energy error J':>14s}")
    for r in rows:
        print(f"{r['integrator']:14s} {r['h']:7.3g} {r['cpu_per_sim_s']:13.4f} {r['steps_per_s']:10.0f} "
              f"{r['energy_error_J']:14.2e}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
