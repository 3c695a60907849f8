"""Speed of the rk4 integrator (issue 13 item 6) against MuJoCo's RK4, in the same run.

Usage:
    python benchmarks/rk4_speed.py [--steps N] [--repeat R] [--json FILE]

For the pendulum scene at its timestep (0.01 s), the best over R repeats of:
- core: ``minimal.simulate`` (one core call for all N steps, states into preallocated
  arrays, no control callback);
- simulate: the loop of ``dojo simulate pendulum --integrator rk4`` (the run loop with the
  Rk4 integrator into the
  HDF5 StorageWriter: maximal states by forward kinematics in the core, Dojo's minimal
  coordinates, the file writes), timed around the run as the command reports it;
- mujoco: the same pendulum (a hinge, the same mass and inertia about the pivot) with
  ``integrator="RK4"``, stepped by ``mujoco.rollout`` (MuJoCo's C loop, one call).
Prints steps per second and our ratios to MuJoCo; the issue asks >= 200,000 steps/s for
``dojo simulate pendulum --integrator rk4``. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[0]))
import bench_common  # noqa: E402

THREADS = bench_common.pin_blas_threads(sys.argv)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import dojo_cli as dojo  # noqa: E402
from dojo_cli import __version__, minimal  # noqa: E402
from dojo_cli.io.storage import KNOT, StorageWriter  # noqa: E402
from dojo_cli.scene.loader import dump_scene, load_scene_spec  # noqa: E402
from dojo_cli.simulation.integrators import RK4_INTEGRATOR, Rk4  # noqa: E402
from dojo_cli.simulation.run import run  # noqa: E402


def core_rate(mech, steps: int) -> float:
    model = minimal.build_model(mech)
    x0 = minimal.init_state(model)
    h = mech.timestep
    t = time.perf_counter()
    minimal.simulate(model, x0, steps * h * (1 - 1e-9), dt=h)
    return steps / (time.perf_counter() - t)


def simulate_rate(mech, spec, steps: int) -> float:
    from dojo_cli.simulation.knots import KnotRows

    with tempfile.TemporaryDirectory() as tmp:
        writer = StorageWriter(
            Path(tmp) / "p.h5", scene_yaml=dump_scene(spec), scene_name=spec.name, timestep=mech.timestep,
            gravity=list(mech.gravity), solver_options={}, integrator=RK4_INTEGRATOR,
            body_names=[b.name for b in mech.bodies], minimal_q_names=mech.coordinate_names(),
            minimal_v_names=[f"{c}_dot" for c in mech.coordinate_names()], input_dim=mech.nf,
            dojo_cli_version=__version__, flush_every=1, flush_interval=0.1,
            velocities=KNOT, compact=False,
        )
        with writer:
            summary = run(mech, steps, KnotRows(mech, writer, exact=True), Rk4(mech, controller=mech.controller))
    return steps / summary.wall


def mujoco_rate(mech, steps: int) -> float | None:
    try:
        import mujoco
        from mujoco import rollout
    except ImportError:
        return None
    # the pendulum about its pivot: a hinge, the body's mass and inertia at its centre of mass
    j = mech.joints[0]
    com = -np.asarray(j.child_vertex, float)
    inertia = np.diag(mech.inertia[0])
    xml = f"""
<mujoco>
  <option timestep="{mech.timestep}" integrator="RK4" gravity="{' '.join(map(str, mech.gravity))}"/>
  <worldbody>
    <body pos="{' '.join(map(str, j.parent_vertex))}">
      <joint type="hinge" axis="{' '.join(map(str, j.axis))}"/>
      <inertial pos="{' '.join(map(str, com))}" mass="{mech.mass[0]}" diaginertia="{' '.join(map(str, inertia))}"/>
    </body>
  </worldbody>
</mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[0] = 0.7
    state = np.zeros(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(model, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    t = time.perf_counter()
    rollout.rollout(model, data, state[None], nstep=steps)
    return steps / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--blas-threads", default=THREADS)
    args = parser.parse_args()
    spec = load_scene_spec("pendulum")
    mech = dojo.load_scene("pendulum")
    best = {"core": 0.0, "simulate": 0.0, "mujoco": 0.0}
    for _ in range(args.repeat):
        best["core"] = max(best["core"], core_rate(mech, args.steps))
        best["simulate"] = max(best["simulate"], simulate_rate(mech, spec, args.steps))
        m = mujoco_rate(mech, args.steps)
        best["mujoco"] = max(best["mujoco"], m or 0.0)
    print(f"pendulum, {args.steps} steps of {mech.timestep:g} s, best of {args.repeat}:")
    for key, rate in best.items():
        ratio = f"  ({rate / best['mujoco']:.2f} x MuJoCo RK4)" if best["mujoco"] and key != "mujoco" else ""
        print(f"  {key:<9} {rate:>12,.0f} steps/s{ratio}")
    print(f"  target: dojo simulate --integrator rk4 >= 200,000 steps/s: {'met' if best['simulate'] >= 2e5 else 'NOT met'}")
    if args.json:
        args.json.write_text(json.dumps(best, indent=1))


if __name__ == "__main__":
    main()
