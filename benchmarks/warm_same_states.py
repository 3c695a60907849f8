"""Diagnosis: the warm start against Dojo's start on the same states (issue 28 item 2).

Usage:
    python benchmarks/warm_same_states.py ROBOT [STEPS] [--tolerances relative|absolute]

A limp drop (benchmarks/robot_zoo.py) is chaotic: a warm-started run and a run from Dojo's
start part within the solver's tolerance and then reach different states, so their
iterations a step (and their failed steps) compare two paths, not two starts. Here ROBOT (an
example-robot-data file stem, imported as benchmarks/hard_step.py does) is dropped for STEPS
steps (default 200) with ``solver.warm_start: true``, each step in one Data as the run loop
takes them, and every step is also solved from Dojo's start at the same state (a fresh
Data with the run's unwrapped angles, joint impulses and restart scale). Printed: the mean
iterations a step of both, the warm attempts that fell back (core/maximal/step.h, "Warm
start"), the failed steps of both, and the steps where the warm start took more iterations.
Exit status 0; the printout is the result. Needs example-robot-data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hard_step import import_robot  # noqa: E402

# Steps listed where the warm start took more iterations.
LISTED = 20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot")
    parser.add_argument("steps", type=int, nargs="?", default=200)
    parser.add_argument("--tolerances", choices=("relative", "absolute"), default="relative")
    args = parser.parse_args(argv)

    import dojo_cli as dojo
    from dojo_cli import _core
    from dojo_cli.simulation.initial import initial_state
    from dojo_cli.simulation.step import solve_step

    mech = import_robot(args.robot)
    opts = dojo.default_options(mech).replace(tolerances=args.tolerances)
    warm_opts, cold_opts = opts.replace(warm_start=True), opts.replace(warm_start=False)
    z = np.asarray(initial_state(mech), float).reshape(-1)
    data = _core.Data(mech.core)
    lam = np.zeros(mech.nl)
    rows = []  # (step, warm iterations, cold iterations, warm status, cold status, fell back)
    for k in range(args.steps):
        cold = _core.Data(mech.core)
        cold.impulse_scale = data.impulse_scale
        cold.angle_ref[:] = np.asarray(data.angle_ref)
        _, rc = solve_step(mech, z, None, cold_opts, lam0=lam.copy(), data=cold)
        z, rw = solve_step(mech, z, None, warm_opts, lam0=lam, data=data)
        lam[:] = rw.w[6 * mech.nb : 6 * mech.nb + mech.nl]
        _core.advance_angles(mech.core, data)
        rows.append((k, rw.iterations, rc.iterations, rw.status.value, rc.status.value, bool(data.warm_fell_back)))
    it = np.array([(r[1], r[2]) for r in rows], dtype=float)
    print(f"{args.robot}: {args.steps} steps ({args.tolerances}); iterations a step: warm {it[:, 0].mean():.2f}, "
          f"Dojo's start on the same states {it[:, 1].mean():.2f}")
    fell = [r[0] for r in rows if r[5]]
    print(f"  warm attempts fallen back: {len(fell)} {fell[:LISTED]}")
    print(f"  failed steps: warm {[r[0] for r in rows if r[3] != 'success']}, "
          f"Dojo's start {[r[0] for r in rows if r[4] != 'success']}")
    worse = [(r[0], r[1], r[2]) for r in rows if r[1] > r[2]]
    print(f"  steps with more iterations warm (step, warm, cold): {len(worse)} {worse[:LISTED]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
