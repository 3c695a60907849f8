"""Core-speed benchmark: the C++ core issue's goal table, dojo_cli against MuJoCo in the same run.

Usage:
    python benchmarks/core_speed.py [--quick] [--rows a,b] [--json FILE] [--repeat R]
                                    [--hdf5-steps N] [--hdf5-timeout S] [--blas-threads N] [--start warm|cold]

Rows (h = 0.01 s everywhere) and their goals (issue 28's where it sets one; the hdf5 row's are
issue 10's, which issue 28 item 6 tightened to < 100 MB: benchmarks/long_run.py):

| row            | what                                                        | goal                     |
|----------------|-------------------------------------------------------------|--------------------------|
| `pendulum`     | built-in scene `pendulum` vs its MJCF twin                   | <= 1.5x MuJoCo per step  |
| `chain20`      | 20-link revolute chain (step_speed's npendulum20) vs twin    | <= 3x                    |
| `box`          | built-in `box`, 8 corner contacts, the whole 500-step toss   | <= 6x                    |
| `go1`          | built-in `go1` (Go1 URDF, 4 feet, PD) vs MuJoCo, same URDF   | <= 6x (issue 28)         |
| `a1`           | built-in `quadruped` (A1 URDF, PD) vs MuJoCo on the same URDF| <= 6x (the Go1's stand-in|
|                |                                                             | before the go1 row)      |
| `a1_gradients` | A1: one step + full A and B (`dojo.step_gradients`)          | < MuJoCo's centred       |
|                |                                                             | `mjd_transitionFD` alone |
| `hdf5`         | `dojo simulate pendulum --steps 1000000 -o FILE`, a child    | peak RSS < 300 MB and    |
|                | process, end to end                                         | >= 100,000 steps/s       |

and ``equal_fidelity``: the Go1 standing and dropped 10 cm, the largest step within 5 mm and
1 degree of each simulator's own reference and the simulated seconds per second there
(benchmarks/equal_fidelity.py); goal: dojo ahead of MuJoCo's best contact setting in both.

What is timed. dojo, through the public API as a user writes it: ``z = dojo.step(mech, z)``
in a Python loop (the A1: ``u = mech.controller(mech, k, z)`` first, as ``dojo.simulate``
does), and, as the "run" column, the library's whole-run function ``dojo.simulate(mech,
steps=N, z0=z0)`` (which also records every state, minimal coordinates and the solver
record). MuJoCo: ``mujoco.mj_step(model, data)`` in a Python loop (so ~1 us of binding
overhead per call on both sides). The A1 gradients: one call of ``dojo.step_gradients(mech,
z, u, wrt=("state", "input"))`` (solves the step and returns A (12 nb x 12 nb) and B) against
one call of ``mujoco.mjd_transitionFD(model, data, 1e-6, True, A, B, None, None)``. The HDF5
row runs the command as a child process and times it from fork to exit (interpreter start,
imports, the scene, 10^6 steps, the file); its peak resident memory is its ``ru_maxrss``
(os.wait4 in a small launcher process: see LAUNCHER). Steps per repetition: pendulum 1000,
chain 500, box 500 (the whole toss), A1 500 (the whole 5 s scene: settling within 0.5 s,
then standing); with --quick 500, 200, 500 and 100.

Method: per row, repetitions interleaved (dojo loop, MuJoCo, dojo run, dojo loop, ...), each
restarting from the same initial state, the garbage collector off during each timed
repetition, and the minimum reported (a shared, loaded machine only ever adds time); a row
stops repeating once its time budget is spent (after at least 2 repetitions; 1 with
--quick). BLAS is pinned to one thread (bench_common.py). Every repetition is timed on two
clocks: CPU time (``time.process_time``; the child's user + system time for the HDF5 row),
which the goals are judged on, and wall time (``time.perf_counter``), printed as a second
table. Both sides are single-threaded, so CPU time is the time the code takes; wall time on
a loaded machine also counts the time the process waited for a core, and a long dojo
repetition (seconds) waits far more often than a short MuJoCo one (microseconds to
milliseconds, usually inside one time slice), so the wall ratio does not cancel the load.

The MuJoCo models are the ones of benchmarks/step_speed.py (pendulum, chain, box twins),
benchmarks/equal_fidelity.py (the Go1 from the same go1.urdf, MuJoCo's own URDF reader, its
bodies checked against dojo's; MuJoCo's default contacts) and benchmarks/quadruped.py (the A1
from the same a1.urdf); the box, the Go1 and the A1 use MuJoCo's soft
contacts, a different contact model, so only their times are comparable, not their
trajectories.

"path" says which code stepped the dojo side: ``core`` when one ``dojo.step`` runs fewer
than CORE_MAX_PY_CALLS Python function calls (the C++ core does the step in one call),
``numpy`` otherwise (the numpy implementation: thousands of calls per step).

--quick: fewer repetitions and steps (the box still runs its whole toss), a 10^5-step HDF5
run capped at 10 s, the equal-fidelity sweep with equal_fidelity.py's --quick settings (six steps,
3 timed runs): a smoke run in about a minute.
The equal-fidelity row is its own table (simulated seconds per second at equal fidelity, not
time per step), printed after the goal tables by equal_fidelity.py's ``measure`` and
``print_summary`` (its docstring says what is measured and how the MuJoCo Go1 is made).
--companions (default gradients,minimal; add install, which takes minutes): the issue's rows
other scripts measure, each run as a child process with its own --json and judged here
against the issue's goals, printed after the equal-fidelity table and kept under
"companions" in the JSON: gradient_speed.py --clock process (the chain's minimal and maximal
gradients against MuJoCo's centred FD, <= 1x and <= 3x; each rollout's VJP, <= 3x the run),
minimal_speed.py (the Go1's minimal-coordinate functions against Pinocchio, <= 1.5x each) and
install_speed.py (first build <= 90 s on an idle 2-core machine, its estimate; a rebuild with
nothing changed <= 10 s and 0 objects; one touched .cpp recompiles that file only; the wheel
runs on a machine without a compiler). So this one command prints issue 28's whole table.
An HDF5 run still going at --hdf5-timeout (default 90 s) is stopped with SIGINT (the CLI keeps its
completed steps and marks the file ``interrupted``) and its rate is taken over the steps it
completed; its goal is then not met (its memory goal is unverified). Exit status: 1 if a
sanity check fails, else 0 (unmet goals are reported, not errors).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_common  # noqa: E402

BLAS_THREADS = bench_common.pin_blas_threads(sys.argv)  # before numpy loads

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402

import step_speed as ss  # noqa: E402  (puts the repository root on sys.path; models and MJCF twins)
import quadruped as qp  # noqa: E402  (the A1 in MuJoCo from the same URDF)
import cold_start as cs  # noqa: E402  (how to run the `dojo` command)
import equal_fidelity as ef  # noqa: E402  (the Go1 at equal fidelity, issue 28 item 3)

import dojo_cli as dojo  # noqa: E402
from dojo_cli.scene import robots  # noqa: E402

mujoco = ss.mujoco

# The rows that other scripts measure (each its own process, as a user runs it), run by
# --companions and judged here, so that this one command prints the whole table: name ->
# (script, its arguments, with --quick).
COMPANIONS = {
    "gradients": ("gradient_speed.py", ["--clock", "process"], ["--clock", "process", "--repeat", "20"]),
    "minimal": ("minimal_speed.py", [], ["--calls", "500", "--repeat", "3"]),
    "install": ("install_speed.py", [], []),  # minutes: a fresh venv and a cold build
}
MINIMAL_GOAL = 1.5  # issue 28 item 4: each minimal-coordinate function within 1.5x of Pinocchio
ROLLOUT_GOAL = 3.0  # item 1: a rollout's VJP at most 3x the forward run
GRADIENT_GOALS = {"minimal": 1.0, "maximal": 3.0}  # the chain's A, B against MuJoCo's centred FD
INSTALL_GOALS = {"first": 90.0, "unchanged": 10.0}  # s (item 5)


def run_companion(name: str, quick: bool) -> dict:
    """Run one companion script in a child process; its JSON, or {"error": ...}."""
    script, full, short = COMPANIONS[name]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{name}.json"
        cmd = [sys.executable, str(Path(__file__).with_name(script)), *(short if quick else full), "--json", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return {"error": f"{script} exited {proc.returncode}: {tail[0]}"}
        return json.loads(out.read_text())


def companion_rows(name: str, doc: dict) -> list[tuple[str, str, str, bool]]:
    """(row, measured, goal, met) of a companion's JSON."""
    if "error" in doc:
        return [(name, doc["error"], "-", False)]
    rows = []
    if name == "gradients":
        for r in doc["rows"]:
            if r["model"] != "npendulum20":
                continue
            rows.append(("chain minimal_gradients / MuJoCo FD", f"{r['min_vs_mujoco_fd']:.2f}x",
                         f"<= {GRADIENT_GOALS['minimal']:g}x", r["min_vs_mujoco_fd"] <= GRADIENT_GOALS["minimal"]))
            rows.append(("chain maximal_gradients / MuJoCo FD", f"{r['vs_mujoco_fd']:.2f}x",
                         f"<= {GRADIENT_GOALS['maximal']:g}x", r["vs_mujoco_fd"] <= GRADIENT_GOALS["maximal"]))
        for r in doc["rollouts"]:
            rows.append((f"{r['model']} rollout VJP / run (JVP {r['jvp_ratio']:.2f}x)", f"{r['vjp_ratio']:.2f}x",
                         f"<= {ROLLOUT_GOAL:g}x", r["vjp_ratio"] <= ROLLOUT_GOAL))
    elif name == "minimal":
        for r in doc["rows"]:
            rows.append((f"{doc['scene']} {r['function']}", f"{r['ratio']:.2f}x", f"<= {MINIMAL_GOAL:g}x",
                         r["ratio"] <= MINIMAL_GOAL))
    elif name == "install":
        steps = {st["name"]: st for st in doc["steps"]}
        first = doc["first_compile_idle_estimate_s"] + doc["first_other_cpu_s"]
        rows.append(("first build (idle 2-core estimate)", f"{first:.1f} s ({steps['first']['wall']:.1f} s wall here)",
                     f"<= {INSTALL_GOALS['first']:g} s", first <= INSTALL_GOALS["first"]))
        u = steps["unchanged"]
        rows.append(("rebuild, nothing changed", f"{u['wall']:.1f} s, {u['compiled']} objects",
                     f"<= {INSTALL_GOALS['unchanged']:g} s, 0 objects", u["wall"] <= INSTALL_GOALS["unchanged"] and u["compiled"] == 0))
        t = steps["touched"]
        rows.append((f"rebuild after touching {doc['touched']}", f"{t['compiled']} object(s)", "that file only",
                     t["compiled"] == 1))
        rows.append(("the wheel on a machine without a compiler", "runs" if doc["wheel_runs_on_second_machine"] else "fails",
                     "runs", bool(doc["wheel_runs_on_second_machine"])))
    return rows


def print_companions(results: dict) -> None:
    for name, doc in results.items():
        script = COMPANIONS[name][0]
        print(f"\n{name} (benchmarks/{script} in its own process, judged here):")
        rows = companion_rows(name, doc)
        width = max(len(r[0]) for r in rows)
        for row, measured, goal, met in rows:
            print(f"  {row:<{width}}  {measured:>28}  {goal:>22}  {'yes' if met else 'no'}")

timed = bench_common.timed

ROWS = ("pendulum", "chain20", "box", "go1", "a1", "a1_gradients", "hdf5", "equal_fidelity")
# A dojo.step running fewer Python function calls than this is one call into the C++ core.
CORE_MAX_PY_CALLS = 200
HDF5_MEMORY_GOAL_MB = 300.0
HDF5_RATE_GOAL = 100_000.0
A1_GRADIENT_STEPS = 50  # the A1 state of the gradient row: 0.5 s into standing (settled, 4 feet loaded)
FD_EPS = 1e-6


@dataclass
class Plan:
    """Steps per repetition, repetitions and time budget of one stepping row."""

    steps: int
    reps: int
    budget_s: float
    min_reps: int
    run_column: bool


def plans(quick: bool, repeat: int | None) -> dict[str, Plan]:
    # Plan(steps, max repetitions, time budget s, min repetitions, run column); a repetition of
    # the box or the A1 took ~15 s on the numpy path, ~0.1 to 1.5 s on the core: the budgets
    # keep a full run within ~5 minutes either way
    if quick:
        p = {"pendulum": Plan(500, 3, 4, 1, True), "chain20": Plan(200, 2, 4, 1, True),
             "box": Plan(500, 2, 4, 1, True), "go1": Plan(100, 2, 4, 1, True), "a1": Plan(100, 2, 4, 1, True),
             "a1_gradients": Plan(1, 5, 4, 1, False)}
    else:
        p = {"pendulum": Plan(1000, 7, 20, 2, True), "chain20": Plan(500, 5, 20, 2, True),
             "box": Plan(500, 7, 40, 2, True), "go1": Plan(500, 5, 40, 2, True), "a1": Plan(500, 5, 40, 2, True),
             "a1_gradients": Plan(1, 15, 15, 2, False)}
    if repeat:
        for v in p.values():
            v.reps = repeat
    return p


CLOCKS = ("cpu", "wall")
SIDES = ("dojo", "run", "mujoco")


@dataclass
class Row:
    """One row of the goal table. Times per step (or per call), microseconds, for both clocks:
    ``cpu`` (time.process_time: the CPU time this process spent, what the goals are judged on)
    and ``wall`` (time.perf_counter); ``runs[clock][side]`` every repetition, ``best`` the minima,
    ``ratio[clock]`` = {"loop": dojo / mujoco, "run": run / mujoco}, ``met`` likewise."""

    name: str
    model: str
    goal: str
    goal_ratio: float | None  # met when ratio <= goal_ratio (< for the gradients)
    unit: str = "us/step"
    path: str = "?"
    py_calls: int | None = None
    steps: int = 0
    reps: int = 0
    runs: dict = field(default_factory=lambda: {c: {s: [] for s in SIDES} for c in CLOCKS})
    best: dict = field(default_factory=lambda: {c: {} for c in CLOCKS})
    ratio: dict = field(default_factory=lambda: {c: {} for c in CLOCKS})
    met: dict = field(default_factory=lambda: {c: {} for c in CLOCKS})
    timed_dojo: str = ""
    timed_run: str = ""
    timed_mujoco: str = ""
    notes: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def finish(self, strict: bool = False) -> None:
        """Minima, ratios and goal verdicts."""
        for c in CLOCKS:
            for side, values in self.runs[c].items():
                if values:
                    self.best[c][side] = min(values)
            mj = self.best[c].get("mujoco")
            if not mj or self.goal_ratio is None:
                continue
            for key, side in (("loop", "dojo"), ("run", "run")):
                if side in self.best[c]:
                    r = self.best[c][side] / mj
                    self.ratio[c][key] = r
                    self.met[c][key] = bool(r < self.goal_ratio if strict else r <= self.goal_ratio)


# ----------------------------------------------------------------- helpers
def python_calls(fn) -> int:
    """Python function calls made while fn() runs (C calls not counted)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def set_path(row: Row, fn) -> None:
    row.py_calls = python_calls(fn)
    row.path = "core" if row.py_calls < CORE_MAX_PY_CALLS else "numpy"


def step_loop(mech, z0, steps: int, controller=None):
    """What a user writes: dojo.step in a Python loop (inputs from the controller if any)."""
    step = dojo.step
    z = z0
    if controller is None:
        for _ in range(steps):
            z = step(mech, z)
    else:
        for k in range(steps):
            z = step(mech, z, controller(mech, k, z))
    return z


def mj_loop(model, data, steps: int):
    step = mujoco.mj_step
    for _ in range(steps):
        step(model, data)


def with_cpu(fn):
    """fn, returning (its process CPU time, its result)."""
    def wrapped():
        c0 = time.process_time()
        out = fn()
        return time.process_time() - c0, out
    return wrapped


def interleave(row: Row, plan: Plan, dojo_fn, mj_fn=None, mj_reset=None, run_fn=None) -> dict:
    """Interleaved timed repetitions; per-step microseconds (wall and CPU) appended to the row.
    Returns the last results of each side ({"dojo": ..., "run": ...})."""
    last = {}
    started = time.perf_counter()

    def one(side: str, fn):
        sec, (cpu, out) = timed(with_cpu(fn))
        row.runs["wall"][side].append(1e6 * sec / plan.steps)
        row.runs["cpu"][side].append(1e6 * cpu / plan.steps)
        return out

    for rep in range(plan.reps):
        last["dojo"] = one("dojo", dojo_fn)
        if mj_fn is not None:
            mj_reset()
            one("mujoco", mj_fn)
        if run_fn is not None:
            last["run"] = one("run", run_fn)
        row.reps = rep + 1
        if rep + 1 >= plan.min_reps and time.perf_counter() - started > plan.budget_s:
            break
    row.steps = plan.steps
    return last


def check(out: list, row: str, what: str, value: float, limit: float, detail: str = "", gating: bool = True) -> None:
    """A sanity check; a non-gating one (about a MuJoCo twin we only borrow) warns instead of failing."""
    out.append({"row": row, "check": what, "value": float(value), "limit": float(limit),
                "ok": bool(value <= limit), "gating": gating, "detail": detail})


def run_record(row: Row, traj) -> None:
    """Solver record of the last whole run (iterations, failed steps)."""
    row.extra["iterations_median"] = float(np.median(traj.iterations))
    row.extra["iterations_max"] = int(traj.iterations.max())
    row.extra["failed_steps"] = int(sum(s != "success" for s in traj.status))


# --start warm|cold: the "run" column's dojo.simulate with solver.warm_start true or false (the
# default, the scene's: warm; each step starts its interior point from the previous converged
# step, docs/physics.md "Warm start"). The step-loop column is unchanged: dojo.step is
# stateless and always starts at Dojo's point.
START = {"warm_start": None}


def run_options(mech):
    """The run column's solver options: the scene's, with --start's warm start."""
    if START["warm_start"] is None:
        return None
    return dojo.default_options(mech).replace(warm_start=START["warm_start"])


# ------------------------------------------------------------------- rows
def row_pendulum(plan: Plan, sanity: list) -> Row:
    row = Row("pendulum", "built-in pendulum (1 link, revolute)", "<= 1.5x", 1.5)
    mech = dojo.load_scene("pendulum")
    z0 = dojo.initial_state(mech)
    row.timed_dojo = f"z = dojo.step(mech, z) x {plan.steps}"
    row.timed_run = f"dojo.simulate(mech, steps={plan.steps})"
    step_loop(mech, z0, 20)
    set_path(row, lambda: dojo.step(mech, z0))
    # sanity: the hinge angle after 1 s, dojo against the exact ODE and against MuJoCo
    steps_1s = int(round(1.0 / mech.timestep))
    theta = float(dojo.maximal_to_minimal(mech, step_loop(mech, z0, steps_1s))[0])
    inertia_pivot, mgl = mech.inertia[0, 0, 0] + 0.25, 0.5 * -ss.G
    # the scene's velocities are those at t = 0 (issue 12), so dojo's state after N steps is the
    # ODE's at t = N h; semi-implicit Euler (MuJoCo's) lags by h/2 (its velocity is the one at
    # the step's midpoint), so MuJoCo is held to the ODE at t + h/2
    exact = ss.pendulum_reference(1.0, inertia_pivot, mgl)
    check(sanity, "pendulum", "angle at t=1s, dojo.step vs exact ODE (relative)",
          abs(theta - exact) / abs(exact), 1e-3, f"dojo {theta:+.6f} rad, RK4 {exact:+.6f} rad")
    twin = None
    if mujoco is not None:
        twin = ss.MjTwin("pendulum", "Euler")
        twin.reset()
        mj_loop(twin.model, twin.data, steps_1s)
        theta_mj = float(twin.data.qpos[0])
        shifted = ss.pendulum_reference(1.0 + 0.5 * mech.timestep, inertia_pivot, mgl)
        check(sanity, "pendulum", "angle at t=1s, mujoco.mj_step vs exact ODE at t+h/2 (relative)",
              abs(theta_mj - shifted) / abs(shifted), 1e-3, f"MuJoCo {theta_mj:+.6f} rad, RK4 {shifted:+.6f} rad",
              gating=False)
        row.timed_mujoco = f"mujoco.mj_step(model, data) x {plan.steps} (step_speed's MJCF twin, Euler)"
        twin.reset()
        mj_loop(twin.model, twin.data, 20)
    last = interleave(
        row, plan, lambda: step_loop(mech, z0, plan.steps),
        (lambda: mj_loop(twin.model, twin.data, plan.steps)) if twin else None, twin.reset if twin else None,
        (lambda: dojo.simulate(mech, steps=plan.steps, z0=z0, opts=run_options(mech))) if plan.run_column else None)
    if "run" in last:
        run_record(row, last["run"])
    row.finish()
    return row


def row_chain(plan: Plan, sanity: list) -> Row:
    row = Row("chain20", "20-link revolute chain (npendulum20)", "<= 3x", 3.0)
    mech, z0 = ss.build_npendulum(20)
    row.timed_dojo = f"z = dojo.step(mech, z) x {plan.steps}"
    row.timed_run = f"dojo.simulate(mech, steps={plan.steps}, z0=z0)"
    step_loop(mech, z0, 10)
    set_path(row, lambda: dojo.step(mech, z0))
    twin = None
    if mujoco is not None:
        twin = ss.MjTwin("npendulum20", "Euler")
        steps_1s = int(round(1.0 / mech.timestep))
        z = step_loop(mech, z0, steps_1s)
        twin.reset()
        mj_loop(twin.model, twin.data, steps_1s)
        tip_d, tip_m = ss.dojo_tip(mech, z), ss.mj_tip(twin.model, twin.data)
        check(sanity, "chain20", "tip position at t=1s, dojo vs MuJoCo (m / number of links; O(h) apart)",
              float(np.linalg.norm(tip_d - tip_m)) / mech.nb, 0.05,
              f"dojo {np.round(tip_d, 4).tolist()}, MuJoCo {np.round(tip_m, 4).tolist()}")
        row.timed_mujoco = f"mujoco.mj_step x {plan.steps} (step_speed's MJCF chain, Euler)"
        twin.reset()
        mj_loop(twin.model, twin.data, 20)
    last = interleave(
        row, plan, lambda: step_loop(mech, z0, plan.steps),
        (lambda: mj_loop(twin.model, twin.data, plan.steps)) if twin else None, twin.reset if twin else None,
        (lambda: dojo.simulate(mech, steps=plan.steps, z0=z0, opts=run_options(mech))) if plan.run_column else None)
    if "run" in last:
        run_record(row, last["run"])
    row.finish()
    return row


def row_box(plan: Plan, sanity: list) -> Row:
    row = Row("box", "box toss, 8 corner contacts (built-in box, whole 500 steps)", "<= 6x", 6.0)
    mech = dojo.load_scene("box")
    z0 = dojo.initial_state(mech)
    row.timed_dojo = f"z = dojo.step(mech, z) x {plan.steps} (the whole toss)"
    row.timed_run = f"dojo.simulate(mech, steps={plan.steps})" if plan.run_column else "not timed"
    step_loop(mech, z0, 3)
    set_path(row, lambda: dojo.step(mech, z0))
    twin = None
    if mujoco is not None:
        # free flight before the first impact: dojo and the twin take the same steps
        ss.box_flight_check(dojo.default_options(mech), "Euler",
                            lambda name, what, value, limit, detail="": check(sanity, name, what, value, limit, detail))
        twin = ss.MjTwin("box", "Euler", mech, z0)
        row.timed_mujoco = (f"mujoco.mj_step x {plan.steps} (step_speed's box twin: freejoint, plane, "
                            "MuJoCo's soft contacts)")
        twin.reset()
        mj_loop(twin.model, twin.data, 20)
    last = interleave(
        row, plan, lambda: step_loop(mech, z0, plan.steps),
        (lambda: mj_loop(twin.model, twin.data, plan.steps)) if twin else None, twin.reset if twin else None,
        (lambda: dojo.simulate(mech, steps=plan.steps, z0=z0, opts=run_options(mech))) if plan.run_column else None)
    if "run" in last:
        run_record(row, last["run"])
    # at rest on a face at the end of the toss (step_speed's contact checks, on the last runs)
    done = SimpleNamespace(name="box", mech=mech, z_final=last["dojo"], steps=plan.steps, nb=mech.nb,
                           mj_final=None if twin is None else (twin.data.qpos.copy(), twin.data.qvel.copy(),
                                                               twin.data.xmat[1].reshape(3, 3).copy()))
    for c in ss.contact_sanity([done]):
        check(sanity, "box", c["check"], c["value"], c["limit"], c["detail"])
    row.finish()
    return row


def _resettable(model, data):
    """(model, data, reset): reset() puts the twin back at its present qpos and ctrl (a keyframe
    or standing pose the caller set), forward-evaluated; called once here."""
    qpos0, ctrl0 = data.qpos.copy(), data.ctrl.copy()

    def reset():
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.ctrl[:] = qpos0, ctrl0
        mujoco.mj_forward(model, data)

    reset()
    return model, data, reset


def a1_mujoco(h: float):
    """(model, data, reset) of benchmarks/quadruped.py's MuJoCo A1, or None without MuJoCo."""
    if mujoco is None:
        return None
    _, model, data = qp.mujoco_model(robots.example_robot_data_root() / "robots" / qp.A1, h)
    return _resettable(model, data)


def time_pd_stand(row: Row, plan: Plan, scene: str, mujoco_twin, mujoco_text: str):
    """The timed part of a PD standing row (a1, go1): the built-in scene's step loop under its
    controller, MuJoCo's twin (``mujoco_twin(h)``: (model, data, reset) or None) and the run,
    interleaved. Returns (mech, z0, the twin or None, the last repetitions' results)."""
    mech = dojo.load_scene(scene)
    z0 = dojo.initial_state(mech)
    ctrl = mech.controller
    row.timed_dojo = f"u = mech.controller(mech, k, z); z = dojo.step(mech, z, u) x {plan.steps}"
    row.timed_run = f"dojo.simulate(mech, steps={plan.steps})" if plan.run_column else "not timed"
    step_loop(mech, z0, 3, ctrl)
    u0 = ctrl(mech, 0, z0)
    set_path(row, lambda: dojo.step(mech, z0, u0))
    mj = mujoco_twin(mech.timestep)
    if mj is not None:
        model, data, reset = mj
        row.timed_mujoco = f"mujoco.mj_step x {plan.steps} ({mujoco_text})"
        mj_loop(model, data, 20)
    last = interleave(
        row, plan, lambda: step_loop(mech, z0, plan.steps, ctrl),
        (lambda: mj_loop(model, data, plan.steps)) if mj else None, reset if mj else None,
        (lambda: dojo.simulate(mech, steps=plan.steps, z0=z0, opts=run_options(mech))) if plan.run_column else None)
    if "run" in last:
        run_record(row, last["run"])
    return mech, z0, mj, last


def row_a1(plan: Plan, sanity: list) -> Row:
    row = Row("a1", f"A1 standing, PD (built-in quadruped, {plan.steps} steps)", "<= 6x", 6.0)
    if robots.example_robot_data_root() is None:
        row.notes.append(f"skipped: example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
        return row
    mech, z0, mj, last = time_pd_stand(
        row, plan, "quadruped", a1_mujoco,
        "quadruped.py: the same a1.urdf, free joint, plane, position servos kp 200, dampers 5, implicitfast, soft contacts")
    if mj is not None:
        model, data, reset = mj
    # both still standing at the end of the last timed runs
    t_end = plan.steps * mech.timestep
    trunk = mech.body_index("trunk")
    z_end = float(last["dojo"][13 * trunk + 2])
    check(sanity, "a1", f"dojo trunk height at t={t_end:g}s, |z - {qp.HEIGHT:.4f}| (m)",
          abs(z_end - qp.HEIGHT), 0.01, f"dojo trunk at {z_end:.4f} m")
    if "run" in last:  # standing still after settling (0.5 s): the trunk height range over the rest
        z_run = last["run"].x[int(round(0.5 / mech.timestep)):, trunk, 2]
        check(sanity, "a1", f"dojo standing still over t=0.5..{t_end:g}s: trunk height range (m)", np.ptp(z_run),
              0.002, f"{z_run.min():.4f}..{z_run.max():.4f} m")
    if mj is not None:
        check(sanity, "a1", f"MuJoCo trunk height at t={t_end:g}s, |z - {qp.HEIGHT:.4f}| (m)",
              abs(float(data.qpos[2]) - qp.HEIGHT), 0.06, f"MuJoCo trunk at {float(data.qpos[2]):.4f} m")
        # the same over an untimed MuJoCo run, recording the trunk height and the contacts
        reset()
        heights, contacts = [], []
        for _ in range(plan.steps):
            mujoco.mj_step(model, data)
            heights.append(float(data.qpos[2]))
            contacts.append(int(data.ncon))
        k0 = int(round(0.5 / mech.timestep))
        k0 = k0 if plan.steps >= 2 * k0 else plan.steps // 4  # --quick: 50 steps, from 0.12 s
        z_mj = np.array(heights[k0:])
        check(sanity, "a1", f"MuJoCo (quadruped.py's twin) standing still over t={k0 * mech.timestep:g}..{t_end:g}s: "
              "trunk height range (m)", np.ptp(z_mj), 0.002,
              f"{z_mj.min():.4f}..{z_mj.max():.4f} m, contacts {min(contacts[k0:])}..{max(contacts[k0:])}, "
              f"|qvel| at the end {np.linalg.norm(data.qvel):.2f}, trunk x drift {float(data.qpos[0]):+.3f} m",
              gating=False)
    row.finish()
    return row


def go1_mujoco(h: float):
    """(model, data, reset) of the MuJoCo Go1 of benchmarks/equal_fidelity.py (the scene's
    go1.urdf read by MuJoCo's own URDF reader, its masses and inertias checked there against
    dojo's to 1e-12, the scene's PD as position servos kp 200, dampers 5, implicitfast,
    elliptic cones, MuJoCo's default soft contacts), or None without MuJoCo."""
    if mujoco is None:
        return None
    model, data = ef.mujoco_go1(h)
    return _resettable(model, data)


def row_go1(plan: Plan, sanity: list) -> Row:
    """Issue 28's row "Go1 standing on four feet, PD": the built-in go1 scene (its URDF, four
    foot spheres, PD kp 200 to the standing pose) against MuJoCo's Go1 from the same URDF
    (equal_fidelity.mujoco_go1, MuJoCo's default contact setting)."""
    row = Row("go1", f"Go1 standing, PD (built-in go1, {plan.steps} steps)", "<= 6x", 6.0)
    if robots.example_robot_data_root() is None:
        row.notes.append(f"skipped: example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
        return row
    mech, z0, mj, last = time_pd_stand(
        row, plan, "go1", go1_mujoco,
        "equal_fidelity.py's Go1: the same go1.urdf, free joint, plane, position servos kp 200, dampers 5, "
        "implicitfast, elliptic cones, soft contacts")
    if mj is not None:
        model, data, reset = mj
    # both still standing at the end of the last timed runs: the trunk's centre of mass within
    # 1 cm (dojo: hard contacts) and 6 cm (MuJoCo: soft, a standing foot sinks) of its start
    t_end = plan.steps * mech.timestep
    trunk = mech.body_index(ef.TRUNK)
    z_start, z_end = float(z0[13 * trunk + 2]), float(last["dojo"][13 * trunk + 2])
    check(sanity, "go1", f"dojo trunk height at t={t_end:g}s against its start, |dz| (m)", abs(z_end - z_start), 0.01,
          f"dojo trunk at {z_end:.4f} m, started at {z_start:.4f} m")
    if "run" in last:
        k0 = min(int(round(0.5 / mech.timestep)), plan.steps // 2)
        z_run = last["run"].x[k0:, trunk, 2]
        check(sanity, "go1", f"dojo standing still over t={k0 * mech.timestep:g}..{t_end:g}s: trunk height range (m)",
              np.ptp(z_run), 0.002, f"{z_run.min():.4f}..{z_run.max():.4f} m")
    if mj is not None:
        mj_trunk = ef.mujoco_body(model, ef.TRUNK)
        reset()
        mj_start = float(data.xipos[mj_trunk][2])
        mj_loop(model, data, plan.steps)
        check(sanity, "go1", f"MuJoCo trunk height at t={t_end:g}s against its start, |dz| (m)",
              abs(float(data.xipos[mj_trunk][2]) - mj_start), 0.06,
              f"MuJoCo trunk at {float(data.xipos[mj_trunk][2]):.4f} m, started at {mj_start:.4f} m")
    row.finish()
    return row


def row_a1_gradients(plan: Plan, sanity: list) -> Row:
    row = Row("a1_gradients", f"A1: one step + full A, B (state after {A1_GRADIENT_STEPS} steps)",
              "< 1x (faster than MJ FD)", 1.0, unit="us/call")
    if robots.example_robot_data_root() is None:
        row.notes.append(f"skipped: example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
        return row
    mech = dojo.load_scene("quadruped")
    traj = dojo.simulate(mech, steps=A1_GRADIENT_STEPS)
    z = traj.state(A1_GRADIENT_STEPS)
    u = mech.controller(mech, A1_GRADIENT_STEPS, z)
    loaded = int(np.sum(traj.contact_normal_impulse[-1] > 1e-3))

    def grads():
        return dojo.step_gradients(mech, z, u, wrt=("state", "input"))

    g = grads()
    set_path(row, grads)
    row.timed_dojo = (f"dojo.step_gradients(mech, z, u, wrt=('state', 'input')): one step + A {g.A.shape[0]}x"
                      f"{g.A.shape[1]}, B {g.B.shape[0]}x{g.B.shape[1]} (maximal tangent coordinates)")
    row.extra.update(A_shape=list(g.A.shape), B_shape=list(g.B.shape), solver_status=g.result.status.value,
                     feet_loaded=loaded)
    check(sanity, "a1_gradients", "dojo: feet carrying load at the gradient state (of 4), 4 - n", 4 - loaded, 0)
    check(sanity, "a1_gradients", "dojo: the differentiated step converged (0 = success)",
          0 if g.result.status.value == "success" else 1, 0, f"status {g.result.status.value}")
    mj_fd = reset = None
    if mujoco is not None:
        model, data, _ = a1_mujoco(mech.timestep)
        mj_loop(model, data, A1_GRADIENT_STEPS)
        qpos, qvel, act, ctrl = data.qpos.copy(), data.qvel.copy(), data.act.copy(), data.ctrl.copy()
        nx = 2 * model.nv + model.na
        A = np.zeros((nx, nx))
        B = np.zeros((nx, model.nu))

        def reset():
            data.qpos[:], data.qvel[:], data.act[:], data.ctrl[:] = qpos, qvel, act, ctrl
            mujoco.mj_forward(model, data)

        def mj_fd():
            mujoco.mjd_transitionFD(model, data, FD_EPS, True, A, B, None, None)

        reset()
        mj_fd()
        row.timed_mujoco = (f"mujoco.mjd_transitionFD(model, data, {FD_EPS:g}, flg_centered=True, A {nx}x{nx}, "
                            f"B {nx}x{model.nu}) alone (no step), quadruped.py's A1 after {A1_GRADIENT_STEPS} steps")
        row.extra.update(mj_A_shape=[nx, nx], mj_B_shape=[nx, model.nu], mj_ncon=int(data.ncon))
        check(sanity, "a1_gradients", "MuJoCo twin: contacts at its gradient state, |ncon - 4|", abs(data.ncon - 4), 0,
              f"ncon {data.ncon}, trunk at {float(data.qpos[2]):.4f} m",
              gating=False)
    interleave(row, plan, grads, mj_fd, reset)
    row.finish(strict=True)
    return row


def mujoco_pendulum_us() -> dict:
    """MuJoCo's pendulum step per clock (best of 3 x 10^4 steps), when the pendulum row did not run."""
    twin = ss.MjTwin("pendulum", "Euler")
    twin.reset()
    probe = Row("mujoco pendulum", "", "", None)
    interleave(probe, Plan(10_000, 3, 0, 3, False), lambda: mj_loop(twin.model, twin.data, 10_000))
    probe.finish()
    return {c: probe.best[c]["dojo"] for c in CLOCKS}  # interleave files its first side as "dojo"


# The HDF5 run's launcher: a small python that forks and execs `dojo`, waits for it and writes
# its rusage to a file. Not os.wait4 on a child of this process: Linux records the exec'ing
# process's old address space in ru_maxrss, and subprocess spawns by vfork, so a direct
# child's ru_maxrss would be at least this (large: MuJoCo, the A1) process's peak RSS. The
# grandchild is forked from the launcher (a few MB), so its ru_maxrss is dojo's own. SIGINT
# to the launcher is passed on to dojo.
LAUNCHER = r"""
import json, os, signal, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
signal.signal(signal.SIGINT, lambda *a: os.kill(pid, signal.SIGINT))
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
code = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as f:
    json.dump({"wall_s": wall, "maxrss_kib": ru.ru_maxrss, "cpu_s": ru.ru_utime + ru.ru_stime, "exit": code}, f)
sys.exit(code if code >= 0 else 128 - code)
"""


def row_hdf5(steps: int, timeout: float, mj_us: dict, sanity: list) -> Row:
    """mj_us: MuJoCo's pendulum step per clock ({'cpu': us, 'wall': us}), a reference."""
    row = Row("hdf5", f"pendulum to HDF5, {steps:,} steps, `dojo simulate` child process",
              f"< {HDF5_MEMORY_GOAL_MB:g} MB, >= {HDF5_RATE_GOAL:,.0f} steps/s", None)
    argv_prefix, which = cs.dojo_command(None)
    env = cs.environment()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "pendulum.h5"
        usage_file = Path(folder) / "usage.json"
        argv = [*argv_prefix, "simulate", "pendulum", "--steps", str(steps), "-o", str(out)]
        row.timed_dojo = (f"`{' '.join(['dojo', *argv[len(argv_prefix):-1], 'FILE'])}` ({which}) from fork to "
                          "exit; peak memory = its ru_maxrss (os.wait4 in a small launcher process)")
        interrupted_at: list[float] = []
        with open(Path(folder) / "stdout", "w") as so, open(Path(folder) / "stderr", "w+") as se:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, str(usage_file), *argv], env=env,
                                    cwd=folder, stdout=so, stderr=se)

            def interrupt():
                interrupted_at.append(time.perf_counter() - t0)
                proc.send_signal(signal.SIGINT)

            timer = threading.Timer(timeout, interrupt)
            timer.start()
            try:
                proc.wait()
            finally:
                timer.cancel()
            parent_wall = time.perf_counter() - t0
            se.seek(0)
            stderr = se.read()
        usage = json.loads(usage_file.read_text()) if usage_file.exists() else None
        completed, file_status = 0, "missing"
        if out.exists():
            import h5py

            with h5py.File(out, "r") as f:
                completed, file_status = int(f.attrs["steps_completed"]), str(f.attrs["status"])
            row.extra["file_mb"] = out.stat().st_size / 1e6
    if usage is None:
        row.notes.append(f"the launcher failed (exit {proc.returncode}): {stderr.strip()[-300:]}")
        return row
    code = usage["exit"]
    rss_mb = usage["maxrss_kib"] * 1024 / 1e6  # Linux: KiB
    complete = file_status == "complete" and completed == steps and code == 0
    # partial run: the memory at the end is unknown unless already over the goal
    met_memory = rss_mb < HDF5_MEMORY_GOAL_MB if complete else (False if rss_mb >= HDF5_MEMORY_GOAL_MB else None)
    seconds = {"wall": interrupted_at[0] if interrupted_at else usage["wall_s"], "cpu": usage["cpu_s"]}
    row.steps, row.reps = completed, 1
    row.extra.update(exit_code=code, file_status=file_status, steps_requested=steps, steps_completed=completed,
                     wall_s=usage["wall_s"], parent_wall_s=parent_wall, child_cpu_s=usage["cpu_s"],
                     interrupted_at_s=interrupted_at[0] if interrupted_at else None, peak_rss_mb=rss_mb,
                     met_memory=met_memory)
    if mj_us:
        row.timed_mujoco = "reference only: the pendulum row's mujoco.mj_step per step (in-process, no file)"
    for c in CLOCKS:
        rate = completed / seconds[c] if seconds[c] > 0 else 0.0
        row.extra[f"steps_per_s_{c}"] = rate
        row.extra[f"met_rate_{c}"] = bool(rate >= HDF5_RATE_GOAL)
        row.met[c]["run"] = bool(complete and met_memory and rate >= HDF5_RATE_GOAL)
        if completed:
            row.best[c]["run"] = 1e6 * seconds[c] / completed
            if mj_us and c in mj_us:
                row.best[c]["mujoco"] = mj_us[c]
                row.ratio[c]["run"] = row.best[c]["run"] / mj_us[c]
    if interrupted_at:
        row.notes.append(f"stopped by SIGINT at the {timeout:g} s cap after {completed:,} of {steps:,} steps "
                         f"(file status '{file_status}', exit {code}): the rate is over the completed steps "
                         "(start-up included), the peak memory is at that point, not at the end")
    elif not complete:
        row.notes.append(f"the run failed: exit {code}, file status '{file_status}': {stderr.strip()[-300:]}")
    check(sanity, "hdf5", "run complete, or interrupted at the cap with a consistent file (0 = yes)",
          0 if complete or (interrupted_at and file_status == "interrupted") else 1, 0,
          f"steps_completed {completed}, status '{file_status}', exit {code}")
    return row


def row_equal_fidelity(quick: bool):
    """equal_fidelity.py's sweep and timed runs (its --quick settings with --quick, else its
    defaults), or why not (a string)."""
    if robots.example_robot_data_root() is None:
        return f"skipped: example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})"
    if mujoco is None:
        return "skipped: MuJoCo is not installed"
    steps = ef.QUICK_STEPS if quick else ef.STEPS
    reference = ef.QUICK_REFERENCE_STEP if quick else ef.REFERENCE_STEP
    bad = [c for c in ef.model_sanity() if not c["ok"]]
    if bad:
        return "skipped: the MuJoCo Go1 differs from dojo's: " + "; ".join(f"{c['check']} {c['value']:.3g}" for c in bad)
    return ef.measure(list(ef.CASES), list(ef.SIMS), steps, reference, ef.DURATION, 3 if quick else 5,
                      log=lambda *_: None)


def provenance() -> dict:
    """The checkout's commit, whether dojo_cli/ differs from it, and the core build's file
    time: the core changes under concurrent work, so a table says what it measured."""
    root = HERE.parent
    out = {"commit": None, "dojo_cli_modified": None, "core_file": None, "core_built": None}
    try:
        out["commit"] = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                       text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "dojo_cli"],
                                capture_output=True, text=True, check=True).stdout
        out["dojo_cli_modified"] = bool(status.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    core = getattr(__import__("dojo_cli._core").__dict__.get("_core"), "__file__", None)
    if core:
        out["core_file"] = core
        out["core_built"] = datetime.datetime.fromtimestamp(os.path.getmtime(core)).astimezone().isoformat(
            timespec="seconds")
    return out


# ------------------------------------------------------------------ output
def fmt_time(us: float | None, unit: str) -> str:
    if us is None:
        return "-"
    text = f"{us:,.1f}" if us < 100 else f"{us:,.0f}"
    return f"{text} {unit}"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}x" if r < 10 else f"{r:,.0f}x"


def yes_no(ok: bool | None) -> str:
    return "-" if ok is None else "yes" if ok else "no"


def verdict(row: Row, clock: str) -> str:
    met = row.met[clock]
    if row.name == "hdf5":
        if "run" not in met:
            return "-"
        missed = [] if row.extra.get(f"met_rate_{clock}") else ["rate"]
        memory = row.extra.get("met_memory")
        missed += ["memory"] if memory is False else ["memory unverified: partial run"] if memory is None else []
        return "yes" if met["run"] else "no (" + "; ".join(missed) + ")"
    if "loop" not in met:
        return "n/a" if row.best[clock].get("dojo") is not None else "-"
    text = yes_no(met["loop"])
    if "run" in met and met["run"] != met["loop"]:
        text += f" (run: {yes_no(met['run'])})"
    return text


def table(rows: list[Row], clock: str) -> list[list[str]]:
    head = ["row", "path", "dojo step loop", "dojo run", "MuJoCo", "ratio", "run ratio", "goal", "met"]
    body = [head]
    for r in rows:
        best, ratio = r.best[clock], r.ratio[clock]
        path = r.path if r.py_calls is None else f"{r.path} ({r.py_calls:,})"
        if r.name == "hdf5":
            dojo_cell = "-"
            if "run" in best:
                dojo_cell = (f"{r.extra[f'steps_per_s_{clock}']:,.0f} steps/s ({best['run']:,.1f} us/step), "
                             f"{r.extra['peak_rss_mb']:.0f} MB peak")
            body.append([r.name, path, "-", dojo_cell, fmt_time(best.get("mujoco"), r.unit), "-",
                         fmt_ratio(ratio.get("run")), r.goal, verdict(r, clock)])
            continue
        body.append([r.name, path, fmt_time(best.get("dojo"), r.unit), fmt_time(best.get("run"), r.unit),
                     fmt_time(best.get("mujoco"), r.unit), fmt_ratio(ratio.get("loop")), fmt_ratio(ratio.get("run")),
                     r.goal, verdict(r, clock)])
    return body


def print_table(rows: list[Row], clock: str) -> None:
    body = table(rows, clock)
    widths = [max(len(line[i]) for line in body) for i in range(len(body[0]))]
    for k, line in enumerate(body):
        print("  ".join(c.ljust(w) if i in (0, 1, 7, 8) else c.rjust(w)
                        for i, (c, w) in enumerate(zip(line, widths))).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def print_sanity(checks: list[dict]) -> None:
    print("\nSanity (same physics where comparable):")
    for c in checks:
        mark = "ok  " if c["ok"] else "FAIL" if c["gating"] else "WARN"
        detail = f"  [{c['detail']}]" if c["detail"] else ""
        print(f"  {mark} {c['row']:<13} {c['check']}: {c['value']:.3g} (limit {c['limit']:g}){detail}")


def print_timed(rows: list[Row]) -> None:
    print("\nWhat is timed (per repetition; minimum over the repetitions, per step or per call):")
    for r in rows:
        reps = f"{r.reps} rep{'s' if r.reps != 1 else ''}"
        print(f"  {r.name} [{r.model}; {reps}]")
        if r.timed_dojo:
            print(f"    dojo:   {r.timed_dojo}")
        if r.timed_run and r.name != "hdf5":
            print(f"    run:    {r.timed_run}")
        if r.timed_mujoco:
            print(f"    MuJoCo: {r.timed_mujoco}")
        for note in r.notes:
            print(f"    note:   {note}")
        if "iterations_median" in r.extra:
            print(f"    solver: iterations median {r.extra['iterations_median']:g}, max {r.extra['iterations_max']}, "
                  f"failed steps {r.extra['failed_steps']} (last dojo.simulate run)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer repetitions and steps, a 10^5-step HDF5 run capped at 10 s (smoke run, < 1 min)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {', '.join(ROWS)}")
    ap.add_argument("--json", type=Path, help="also write every number to this JSON file")
    ap.add_argument("--repeat", type=int,
                    help="maximum repetitions per row (defaults: pendulum 7, chain20 5, box 7, a1 5, a1_gradients 15; "
                         "--quick 3, 2, 2, 2, 5)")
    ap.add_argument("--hdf5-steps", type=int, help="steps of the HDF5 run (default 1000000; --quick 100000)")
    ap.add_argument("--hdf5-timeout", type=float,
                    help="stop the HDF5 run with SIGINT after this many seconds (default 90; --quick 10)")
    ap.add_argument("--blas-threads", default="1", help="BLAS threads (default 1; 0 = leave the environment alone)")
    ap.add_argument("--start", choices=("warm", "cold"), default=None,
                    help="the run column with solver.warm_start true or false (default: the scene's, warm); "
                         "the step loop is stateless either way")
    ap.add_argument("--companions", default="gradients,minimal",
                    help="the issue's rows other scripts measure, run in child processes and judged here: a "
                         f"comma-separated subset of {', '.join(COMPANIONS)} ('install' takes minutes: a fresh venv "
                         "and a cold build; '' for none; default gradients,minimal)")
    args = ap.parse_args(argv)
    companions = [n.strip() for n in args.companions.split(",") if n.strip()]
    if any(n not in COMPANIONS for n in companions):
        ap.error(f"unknown companion(s) in {args.companions!r}; choose from {', '.join(COMPANIONS)}")
    START["warm_start"] = None if args.start is None else args.start == "warm"
    ef.START["warm_start"] = START["warm_start"]  # the equal-fidelity table's dojo runs alike
    names = [n.strip() for n in args.rows.split(",") if n.strip()]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        ap.error(f"unknown row(s) {', '.join(unknown)}; choose from {', '.join(ROWS)}")
    hdf5_steps = args.hdf5_steps or (100_000 if args.quick else 1_000_000)
    hdf5_timeout = args.hdf5_timeout or (10.0 if args.quick else 90.0)
    plan = plans(args.quick, args.repeat)

    limit, blas_text = bench_common.blas_limit(BLAS_THREADS)
    load0 = os.getloadavg()
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    print(f"dojo_cli {dojo.__version__} core speed vs MuJoCo {mujoco.__version__ if mujoco else '(not installed)'}, "
          f"{date}; python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
          f"load average {load0[0]:.1f}; BLAS threads {blas_text}; h = 0.01 s; {'--quick' if args.quick else 'full'}")
    prov = provenance()
    print(f"checkout {prov['commit']}{' (dojo_cli/ modified)' if prov['dojo_cli_modified'] else ''}, "
          f"core built {prov['core_built']}")
    print("run column: solver.warm_start " + ({None: "the scene's (default: on)", "warm": "on (--start warm)",
                                                "cold": "off (--start cold)"}[args.start]))
    if mujoco is None:
        print("MuJoCo is not installed (pip install -e '.[bench]'): no ratios, goals unjudged")
    started = time.perf_counter()
    sanity: list[dict] = []
    rows: list[Row] = []
    builders = {"pendulum": row_pendulum, "chain20": row_chain, "box": row_box, "go1": row_go1, "a1": row_a1,
                "a1_gradients": row_a1_gradients}
    fidelity = None  # the equal-fidelity results (a table of their own)
    with limit:
        for name in names:
            t = time.perf_counter()
            if name == "equal_fidelity":
                fidelity = row_equal_fidelity(args.quick)
                print(f"  {name}: done in {time.perf_counter() - t:.1f} s", flush=True)
                continue
            if name == "hdf5":
                pend = next((r for r in rows if r.name == "pendulum"), None)
                mj_us = {c: pend.best[c]["mujoco"] for c in CLOCKS if "mujoco" in pend.best[c]} if pend else (
                    mujoco_pendulum_us() if mujoco is not None else {})
                rows.append(row_hdf5(hdf5_steps, hdf5_timeout, mj_us, sanity))
                pend = dojo.load_scene("pendulum")
                z_pend = dojo.step(pend, dojo.initial_state(pend))  # builds the core model first
                set_path(rows[-1], lambda: dojo.step(pend, z_pend))
            else:
                rows.append(builders[name](plan[name], sanity))
            rows[-1].extra["row_seconds"] = time.perf_counter() - t
            print(f"  {name}: done in {rows[-1].extra['row_seconds']:.1f} s", flush=True)
    companion_docs = {}
    for name in companions:
        t = time.perf_counter()
        companion_docs[name] = run_companion(name, args.quick)
        print(f"  {name} ({COMPANIONS[name][0]}): done in {time.perf_counter() - t:.1f} s", flush=True)
    elapsed = time.perf_counter() - started
    load1 = os.getloadavg()

    print_sanity(sanity)
    print("\nGoal table, CPU time (time.process_time of this process; for hdf5 the child's user + system time):\n"
          "minimum over interleaved repetitions; ratio = dojo / MuJoCo, both timed in this run; path = core or numpy,\n"
          "with the Python function calls of one dojo.step (one dojo.step_gradients for a1_gradients)")
    print_table(rows, "cpu")
    print("\nThe same repetitions, wall time (time.perf_counter; for hdf5 fork to exit): on a shared machine a long\n"
          "dojo repetition is descheduled more often than a short MuJoCo one, so wall ratios overstate dojo's time")
    print_table(rows, "wall")
    print("\ndojo step loop = dojo.step in a Python loop; dojo run = dojo.simulate(mech, steps=N) (warm-starts each step"
          " with\nthe previous step's joint impulses, records every state); for hdf5 the `dojo simulate` child process."
          "\nmet: the step loop's ratio against the goal, the run's in brackets where it differs")
    print_timed(rows)
    fidelity_doc = None
    if isinstance(fidelity, list):
        print("\nEqual fidelity, the Go1 (benchmarks/equal_fidelity.py" + (" --quick" if args.quick else "") + "):")
        table_rows, best = ef.print_summary(fidelity)
        fidelity_doc = {"table": table_rows, "against_best_mujoco": best, "results": [asdict(r) for r in fidelity]}
    elif fidelity is not None:
        print(f"\nEqual fidelity: {fidelity}")
        fidelity_doc = {"skipped": fidelity}
    print_companions(companion_docs)
    print(f"\ntotal {elapsed:.0f} s; load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end")
    slow = [r.name for r in rows if r.path == "numpy"]
    if slow:
        print(f"rows still on the numpy path (not yet the C++ core): {', '.join(slow)}")

    if args.json:
        doc = {
            "meta": {"date": date, "dojo_cli": dojo.__version__, "mujoco": mujoco.__version__ if mujoco else None,
                     "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
                     "platform": platform.platform(), "cpus": os.cpu_count(), "blas_threads": blas_text,
                     "loadavg_start": load0, "loadavg_end": load1, "quick": args.quick, "elapsed_s": elapsed,
                     "timestep": 0.01, "core_max_py_calls": CORE_MAX_PY_CALLS, "hdf5_timeout_s": hdf5_timeout,
                     "plans": {k: asdict(v) for k, v in plan.items() if k in names}, **prov},
            "rows": [asdict(r) | {"met_text": {c: verdict(r, c) for c in CLOCKS}} for r in rows],
            "sanity": sanity,
            "equal_fidelity": fidelity_doc,
            "companions": {name: {"rows": [dict(zip(("row", "measured", "goal", "met"), r))
                                           for r in companion_rows(name, doc)], "raw": doc}
                           for name, doc in companion_docs.items()},
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(c["ok"] or not c["gating"] for c in sanity) else 1


if __name__ == "__main__":
    sys.exit(main())
