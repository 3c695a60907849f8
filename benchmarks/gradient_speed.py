"""Gradient-speed benchmark: one step plus its full Jacobians (A and B), against MuJoCo.

Usage:
    python benchmarks/gradient_speed.py [--repeat R] [--models a,b] [--json FILE]

For each model, at one state: the median wall time (over R repeats, after a warm-up)
of
- ``step``: one step, ``solve_step`` (what ``dojo simulate`` does per step);
- ``step + A, B``: ``dojo.step_gradients(mech, z, u, wrt=("state", "input"))``, which
  solves the step and differentiates it by the implicit function theorem (A = dz'/dz,
  12 nb x 12 nb, and B = dz'/du, 12 nb x nu, in tangent coordinates);
- ``min A, B`` (jointed models): ``dojo.minimal_gradients(mech, y, u)``, the same step
  and its A (2 nf x 2 nf), B (2 nf x nu) in minimal coordinates y (MuJoCo's dimension);
and their ratio. If ``mujoco`` imports, the same systems as MuJoCo models (built as in
benchmarks/step_speed.py, plus one motor per joint coordinate so MuJoCo's B has the
same number of columns as dojo's) time ``mj_step`` and
``mjd_transitionFD(model, data, eps=1e-6, centered=True, A, B, None, None)``
(finite-difference transition Jacobians), measured in the same run.

Models (h = 0.01 s, default solver options: rtol 1e-6, btol 1e-4):
- ``pendulum``: step_speed's pendulum at its initial angle pi/4;
- ``npendulum20``: step_speed's 20-link chain (revolute X joints) at its initial state;
- ``box``: the built-in box toss after ``BOX_STEPS`` = 200 steps, resting on a face,
  four corners (contacts touching; MuJoCo's twin is stepped the same number of steps
  with its own soft contacts and checked to have contacts too).

Rollouts (``--rollout-steps`` T = 100): the median time of the open-loop run of T zero
inputs from the model's state (``_core.rollout``, what ``dojo simulate`` runs for a
schedule), of ``dojo.rollout_vjp`` (the run plus reverse mode: dL/dz0, dL/dU for random
cotangents of every state) and of ``dojo.rollout_jvp`` (the run plus forward mode along
one direction of z0), and their ratios to the run (goal: VJP <= 3x). For a model with contacts
the VJP and JVP are timed again with dr/dw always factorised by the robust order's block LU
(``Data.gradients_condensed`` False: the backward pass before the contacts were eliminated in
closed form there), the ratios in the last column.

MuJoCo's A is (2 nv, 2 nv) in its own tangent coordinates (nv = 1, 20, 6 here), dojo's
(12 nb, 12 nb) in maximal coordinates (12, 240, 12): for the chain dojo differentiates
a 240-dimensional state, MuJoCo a 40-dimensional one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# BLAS threads, before numpy loads: the matrices here are tiny (11 to 400 rows), where
# OpenBLAS threads only cost (benchmarks/bench_common.py). MuJoCo is single-threaded too.
# --blas-threads 0 leaves the environment as it is.
sys.path.insert(0, str(Path(__file__).resolve().parents[0]))
import bench_common  # noqa: E402

bench_common.pin_blas_threads(sys.argv)

import argparse
import gc
import json
import platform
import statistics
import time

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dojo_cli as dojo  # noqa: E402
from dojo_cli.simulation.step import solve_step  # noqa: E402

import step_speed as ss  # noqa: E402  (benchmarks/step_speed.py: models and MuJoCo twins)

mujoco = ss.mujoco
BOX_STEPS = 200  # 2 s into the toss: the box rests on a face (see the contact check)
FD_EPS = 1e-6
DEFAULT_MODELS = ("pendulum", "npendulum20", "box")
DEFAULT_REPEAT = {"pendulum": 200, "npendulum20": 30, "box": 60}


# The clock: wall time by default; --clock process measures this process's CPU time
# (time.process_time), which a machine shared with other jobs inflates far less (with the
# load average at ~18 on 2 cores, wall times of the same call varied 2-5x between runs).
CLOCK = {"wall": time.perf_counter, "process": time.process_time}
clock = time.perf_counter


def median_time(fn, repeat: int, warmup: int = 3) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    times = []
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = clock()
            fn()
            times.append(clock() - t0)
    finally:
        gc.enable()
    return statistics.median(times), times


def dojo_model(name: str):
    """(mech, z, u) at the benchmark state."""
    if name == "pendulum":
        mech, z = ss.build_pendulum()
    elif name == "npendulum20":
        mech, z = ss.build_npendulum(20)
    elif name == "box":
        mech, z0 = ss.load_builtin("box")
        traj = dojo.simulate(mech, steps=BOX_STEPS, z0=z0)
        z = traj.state(BOX_STEPS)
    else:
        raise SystemExit(f"unknown model {name!r}")
    return mech, z, np.zeros(mech.nu)


def box_touching(mech, z) -> int:
    """Contacts carrying a normal impulse above 1e-3 N s in the step from z (the box's
    weight per step is 0.098 N s; the interior point leaves ~2 mm gaps, so distance is no test)."""
    solve_step(mech, z, None, dojo.default_options(mech))
    return int(np.sum(mech.core_data.contact_normal_impulse > 1e-3))


def with_motors(xml: str, joints: list[str]) -> str:
    motors = "".join(f'<motor joint="{j}" gear="1"/>' for j in joints)
    return xml.replace("</mujoco>", f"<actuator>{motors}</actuator></mujoco>")


def mj_model(name: str, mech, z0_dojo):
    """(model, data) of the MuJoCo twin at the benchmark state, with motors."""
    integrator = "Euler"
    if name == "box":
        xml = ss.box_mjcf(mech, integrator)
        xml = xml.replace("<freejoint/>", '<freejoint/><site name="com" pos="0 0 0"/>')
        gears = ["1 0 0 0 0 0", "0 1 0 0 0 0", "0 0 1 0 0 0", "0 0 0 1 0 0", "0 0 0 0 1 0", "0 0 0 0 0 1"]
        motors = "".join(f'<motor site="com" gear="{g}"/>' for g in gears)
        xml = xml.replace("</mujoco>", f"<actuator>{motors}</actuator></mujoco>")
        model = mujoco.MjModel.from_xml_string(xml)
        data = mujoco.MjData(model)
        base, _ = ss.load_builtin("box")
        qpos, qvel = ss.mj_box_state(base, dojo.initial_state(base))
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(model, data)
        for _ in range(BOX_STEPS):
            mujoco.mj_step(model, data)
        return model, data
    n, side, pivot = ss.MJ_TWINS[name]
    xml = with_motors(ss.chain_mjcf(n, side, pivot, integrator), [f"joint{i + 1}" for i in range(n)])
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[0] = np.pi / 4
    mujoco.mj_forward(model, data)
    return model, data


def time_model(name: str, repeat: int) -> dict:
    mech, z, u = dojo_model(name)
    opts = dojo.default_options(mech)
    row: dict = {"model": name, "nb": mech.nb, "nu": mech.nu, "repeat": repeat}
    g = dojo.step_gradients(mech, z, u, opts)
    row["A_shape"], row["B_shape"] = list(g.A.shape), list(g.B.shape)
    row["solver_status"] = g.result.status.value
    if name == "box":
        row["contacts_touching"] = box_touching(mech, z)
    row["step_s"], row["step_runs"] = median_time(lambda: solve_step(mech, z, u, opts), repeat)
    row["grad_s"], row["grad_runs"] = median_time(lambda: dojo.step_gradients(mech, z, u, opts), repeat)
    row["ratio"] = row["grad_s"] / row["step_s"]
    if mech.nf > 0 and name != "box":
        y = dojo.maximal_to_minimal(mech, z)
        row["min_grad_s"], _ = median_time(lambda: dojo.minimal_gradients(mech, y, u, opts), repeat)
    if mujoco is not None:
        model, data = mj_model(name, mech, z)
        nx = 2 * model.nv + model.na
        A = np.zeros((nx, nx))
        B = np.zeros((nx, model.nu))
        row["mj_nv"], row["mj_nu"], row["mj_ncon"] = model.nv, model.nu, int(data.ncon)
        qpos, qvel, act = data.qpos.copy(), data.qvel.copy(), data.act.copy()

        def mj_one_step():
            data.qpos[:], data.qvel[:], data.act[:] = qpos, qvel, act
            mujoco.mj_step(model, data)

        row["mj_step_s"], _ = median_time(mj_one_step, repeat)
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(model, data)
        row["mj_fd_s"], _ = median_time(lambda: mujoco.mjd_transitionFD(model, data, FD_EPS, True, A, B, None, None), repeat)
        row["vs_mujoco_fd"] = row["grad_s"] / row["mj_fd_s"]
        if "min_grad_s" in row:
            row["min_vs_mujoco_fd"] = row["min_grad_s"] / row["mj_fd_s"]
    return row


ROLLOUT_STEPS = 100
ROLLOUT_REPEAT = 7


def time_rollout(name: str, steps: int, repeat: int) -> dict:
    """The run of ``steps`` zero inputs from the model's state, and its VJP and JVP."""
    from dojo_cli import _core
    from dojo_cli.simulation.step import core_options

    mech, z, _ = dojo_model(name)
    opts = dojo.default_options(mech)
    U = np.zeros((steps, mech.nu))
    cot = np.random.default_rng(0).standard_normal((steps, 12 * mech.nb))
    dz0 = np.random.default_rng(1).standard_normal(12 * mech.nb)

    def run():
        _core.rollout(mech.core, _core.Data(mech.core), z, steps, U, np.zeros(mech.nl), core_options(opts), False)

    row = {"model": name, "steps": steps}
    row["run_s"], _ = median_time(run, repeat, warmup=1)
    row["vjp_s"], _ = median_time(lambda: dojo.rollout_vjp(mech, z, U, cot, opts=opts), repeat, warmup=1)
    row["jvp_s"], _ = median_time(lambda: dojo.rollout_jvp(mech, z, U, dz0, opts=opts), repeat, warmup=1)
    row["vjp_ratio"], row["jvp_ratio"] = row["vjp_s"] / row["run_s"], row["jvp_s"] / row["run_s"]
    if mech.nc > 0:
        # the same calls with dr/dw always factorised by the robust order's block LU
        # (Data.gradients_condensed False: the backward pass before the contacts' closed form)
        from dojo_cli.simulation import rollout_gradients as rg

        fresh = rg._stretch_data

        def block_lu_data(*args):
            data = fresh(*args)
            data.gradients_condensed = False
            return data

        rg._stretch_data = block_lu_data
        try:
            row["vjp_lu_s"], _ = median_time(lambda: dojo.rollout_vjp(mech, z, U, cot, opts=opts), repeat, warmup=1)
            row["jvp_lu_s"], _ = median_time(lambda: dojo.rollout_jvp(mech, z, U, dz0, opts=opts), repeat, warmup=1)
        finally:
            rg._stretch_data = fresh
        row["vjp_lu_ratio"], row["jvp_lu_ratio"] = row["vjp_lu_s"] / row["run_s"], row["jvp_lu_s"] / row["run_s"]
    return row


def fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.0f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=None, help="repeats per model (default: 200 / 30 / 60)")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"subset of {', '.join(DEFAULT_MODELS)}")
    ap.add_argument("--blas-threads", default="1", help="BLAS threads (default 1; 0 = leave the environment alone)")
    ap.add_argument("--json", type=Path, default=None, help="also write every number here")
    ap.add_argument("--clock", choices=sorted(CLOCK), default="wall", help="wall (default) or process CPU time")
    ap.add_argument("--rollout-steps", type=int, default=ROLLOUT_STEPS, help="steps of the rollout rows (0: none)")
    args = ap.parse_args(argv)
    global clock
    clock = CLOCK[args.clock]
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    rows = [time_model(n, args.repeat or DEFAULT_REPEAT.get(n, 30)) for n in names]
    rollouts = [time_rollout(n, args.rollout_steps, ROLLOUT_REPEAT) for n in names] if args.rollout_steps > 0 else []

    print(f"dojo_cli {dojo.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
          f"MuJoCo {mujoco.__version__ if mujoco else 'not installed'}, BLAS threads "
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}; median {args.clock} time, microseconds")
    header = f"{'model':<13}{'nb':>4}{'nu':>4}{'A':>11}{'step':>9}{'step+A,B':>10}{'ratio':>7}"
    if mujoco is not None:
        header += f"{'MJ step':>9}{'MJ FD A,B':>11}{'dojo/MJ FD':>12}"
    header += f"{'min A,B':>9}" + (f"{'min/MJ FD':>11}" if mujoco is not None else "")
    print(header)
    for r in rows:
        shape = "x".join(map(str, r["A_shape"]))
        line = f"{r['model']:<13}{r['nb']:>4}{r['nu']:>4}{shape:>11}{fmt(r['step_s']):>9}{fmt(r['grad_s']):>10}{r['ratio']:>7.1f}"
        if mujoco is not None:
            line += f"{fmt(r['mj_step_s']):>9}{fmt(r['mj_fd_s']):>11}{r['vs_mujoco_fd']:>12.1f}"
        line += f"{fmt(r.get('min_grad_s')):>9}"
        if mujoco is not None:
            line += f"{r['min_vs_mujoco_fd']:>11.1f}" if "min_vs_mujoco_fd" in r else f"{'-':>11}"
        print(line)
    for r in rows:
        if r["model"] == "box":
            extra = f", MuJoCo twin ncon {r['mj_ncon']}" if "mj_ncon" in r else ""
            print(f"box after {BOX_STEPS} steps: {r['contacts_touching']} of 8 corner contacts carrying load{extra}")
        if r["solver_status"] != "success":
            print(f"warning: {r['model']}: solver status {r['solver_status']}")
    if rollouts:
        print(f"rollouts of {args.rollout_steps} steps (median of {ROLLOUT_REPEAT}), microseconds")
        print(f"{'model':<13}{'run':>10}{'run+VJP':>10}{'VJP/run':>9}{'run+JVP':>10}{'JVP/run':>9}"
              f"{'VJP/run, JVP/run with the block LU':>37}")
        for r in rollouts:
            lu = f"{r['vjp_lu_ratio']:>29.2f}, {r['jvp_lu_ratio']:.2f}" if "vjp_lu_ratio" in r else f"{'-':>29}"
            print(f"{r['model']:<13}{fmt(r['run_s']):>10}{fmt(r['vjp_s']):>10}{r['vjp_ratio']:>9.2f}"
                  f"{fmt(r['jvp_s']):>10}{r['jvp_ratio']:>9.2f}{lu}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "rollouts": rollouts, "machine": platform.platform()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
