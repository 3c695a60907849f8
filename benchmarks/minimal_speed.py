"""Minimal-coordinate speed against Pinocchio, from Python, in the same run (issue 13).

Usage:
    python benchmarks/minimal_speed.py [--scene go1] [--calls N] [--repeat R] [--json FILE]

For one scene (default go1, from example-robot-data; else the largest tree scene
available, spherical_chain) at a random state, the best over R repeats of the mean time
of N calls of each of our functions and of Pinocchio's counterpart on Pinocchio's own
model of the same URDF (or, for a scene without a URDF, the joint-by-joint model of
tests/minimal/pinocchio_reference.py), the repeats of the two sides interleaved, timed by
the CPU time of the process (``--clock wall`` for the wall clock):

| ours (dojo_cli.minimal)                       | Pinocchio                               |
|-----------------------------------------------|-----------------------------------------|
| M_func                                        | crba                                    |
| C_func                                        | nonLinearEffects                        |
| forward_dynamics                              | aba                                     |
| inverse_dynamics                              | rnea                                    |
| forward_dynamics_deriv (raw x, PinnZoo's)     | computeABADerivatives                   |
| inverse_dynamics_deriv (raw x, PinnZoo's)     | computeRNEADerivatives                  |
| forward/inverse_dynamics_deriv(tangent=True)  | the same                                |

and prints the ratios (issue 28 asks <= 1.5 for each). Like with like (pin 4.1): both sides
run the forward kinematics inside each call, and Pinocchio's crba, nonLinearEffects, aba
and rnea return new arrays as ours do (crba with its lower triangle filled, as our M);
ours add PinnZoo's Python wrapper. The derivative rows differ: Pinocchio's return views of
its Data, ours new arrays (raw x or tangent columns, and M or M^-1), so those ratios count
our allocations against none. Not a timed test.
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
from dojo_cli import minimal  # noqa: E402
from dojo_cli.scene import robots  # noqa: E402

URDFS = {"go1": "go1_description/urdf/go1.urdf", "quadruped": "a1_description/urdf/a1.urdf",
         "solo12": "solo_description/robots/solo12.urdf", "panda": "panda_description/urdf/panda.urdf"}
FALLBACK = "spherical_chain"


# CPU time of this process by default (core_speed.py's convention): on a machine shared with
# other jobs the wall clock counts the time the process waits for a core, which inflates
# both sides by different amounts; --clock wall for an idle machine.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def _mean_time(fn, calls: int, repeat: int, clock=time.process_time) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = clock()
        for _ in range(calls):
            fn()
        best = min(best, (clock() - t0) / calls)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="go1")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=None)
    parser.add_argument("--blas-threads", default="1")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    args = parser.parse_args()
    import pinocchio as pin

    scene = args.scene
    if scene in URDFS and robots.example_robot_data_root() is None:
        print(f"example-robot-data is not installed: using {FALLBACK} instead of {scene}")
        scene = FALLBACK
    model = minimal.build_model(dojo.load_scene(scene))
    rng = np.random.default_rng(0)
    x = minimal.randn_state(model, rng)
    tau, vdot = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    if scene in URDFS:
        path = robots.example_robot_data_root() / "robots" / URDFS[scene]
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if model.is_floating \
            else pin.buildModelFromUrdf(str(path))
        xs = minimal.change_order(model, x, "nominal", "pinocchio", kind="state")
        q, v = xs[: model.nq], xs[model.nq:]
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.minimal import pinocchio_reference as ref
        pm, info = ref.build(model)
        q_of, v_of, _ = ref.converters(model, pm, info)
        q, v = q_of(x), v_of(x)
    pd = pm.createData()
    pairs = [
        ("M_func / crba", lambda: minimal.M_func(model, x), lambda: pin.crba(pm, pd, q)),
        ("C_func / nonLinearEffects", lambda: minimal.C_func(model, x), lambda: pin.nonLinearEffects(pm, pd, q, v)),
        ("forward_dynamics / aba", lambda: minimal.forward_dynamics(model, x, tau), lambda: pin.aba(pm, pd, q, v, tau)),
        ("inverse_dynamics / rnea", lambda: minimal.inverse_dynamics(model, x, vdot), lambda: pin.rnea(pm, pd, q, v, vdot)),
        ("forward_dynamics_deriv / computeABADerivatives", lambda: minimal.forward_dynamics_deriv(model, x, tau),
         lambda: pin.computeABADerivatives(pm, pd, q, v, tau)),
        ("inverse_dynamics_deriv / computeRNEADerivatives", lambda: minimal.inverse_dynamics_deriv(model, x, vdot),
         lambda: pin.computeRNEADerivatives(pm, pd, q, v, vdot)),
        ("forward_dynamics_deriv(tangent) / computeABADerivatives",
         lambda: minimal.forward_dynamics_deriv(model, x, tau, tangent=True),
         lambda: pin.computeABADerivatives(pm, pd, q, v, tau)),
        ("inverse_dynamics_deriv(tangent) / computeRNEADerivatives",
         lambda: minimal.inverse_dynamics_deriv(model, x, vdot, tangent=True),
         lambda: pin.computeRNEADerivatives(pm, pd, q, v, vdot)),
    ]
    print(f"{scene}: nq={model.nq} nv={model.nv}, pin {pin.__version__}, {args.calls} calls, best of {args.repeat}, "
          f"BLAS threads {THREADS}, {args.clock} clock")
    rows = []
    clock = CLOCKS[args.clock]
    for name, ours, theirs in pairs:
        ours(), theirs()
        # interleaved repeats: a burst of load reaches both sides alike
        t_ours = t_pin = float("inf")
        for _ in range(args.repeat):
            t_ours = min(t_ours, _mean_time(ours, args.calls, 1, clock))
            t_pin = min(t_pin, _mean_time(theirs, args.calls, 1, clock))
        rows.append({"function": name, "ours_us": 1e6 * t_ours, "pinocchio_us": 1e6 * t_pin, "ratio": t_ours / t_pin})
        print(f"  {name:58s} {1e6 * t_ours:8.2f} us  {1e6 * t_pin:8.2f} us  ratio {t_ours / t_pin:5.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"scene": scene, "nq": model.nq, "nv": model.nv, "clock": args.clock,
                                               "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
