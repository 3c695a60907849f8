"""Step-speed benchmark of dojo_cli's variational integrator, against MuJoCo.

Usage:
    python benchmarks/step_speed.py [--steps N] [--repeat R] [--json FILE]
                                    [--models a,b,...] [--linear auto|dense|sparse]
                                    [--mj-integrator Euler|implicitfast|RK4|implicit]

For each mechanism (built here in Python, no scene files): warm up, then run N
consecutive steps R times from the same initial state and report the best-of-R
mean wall time per step, the median and max Newton iterations per step, and the
size of the Newton system (6 nb + constraint rows). The loop is the one
``dojo_cli.simulation.simulate`` runs: ``solve_step`` with the previous step's
joint impulses as the warm start (lam0).

If ``mujoco`` imports, the pendulum and the 5- and 20-link chains are also built
in MJCF (hinge joints, explicit <inertial> equal to dojo's box inertias, contacts
disabled, h = 0.01, integrator Euler unless --mj-integrator says otherwise) and
``mujoco.mj_step`` is timed the same way (a Python loop, so per-call binding
overhead, ~1 us, is included on both sides). Before timing, a sanity section
compares dojo and MuJoCo trajectories after 1 s (different integrators, so
agreement is to O(h), not exact) and checks the four-bar loop closure and the
free body's angular momentum.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dojo_cli.math import quaternion as quat  # noqa: E402
from dojo_cli.model.mechanism import ORIGIN, Body, Joint, Mechanism  # noqa: E402
from dojo_cli.model.shapes import Shape, body_inertia  # noqa: E402
from dojo_cli.model.state import pack_maximal, unpack_maximal  # noqa: E402
from dojo_cli.physics.dynamics import momentum_left  # noqa: E402
from dojo_cli.physics.coordinates import (  # noqa: E402
    constraint_violation,
    maximal_to_minimal,
    minimal_to_maximal,
    split_minimal,
)
from dojo_cli.simulation.step import solve_step, step_structure  # noqa: E402
from dojo_cli.solver.options import SolverOptions  # noqa: E402

try:
    import mujoco
except ImportError:  # pragma: no cover - depends on the environment
    mujoco = None

X, Y, Z = np.eye(3)
H = 0.01
G = -9.81
PEND_PIVOT = 1.1  # the pendulum's pivot height (tests/mechanisms.py's pendulum)


# --------------------------------------------------------------------- models
def box_body(name: str, size, mass: float = 1.0) -> Body:
    shape = Shape("box", {"size": tuple(size)})
    return Body(name, mass, body_inertia(shape, mass), shape)


def build_pendulum() -> tuple[Mechanism, np.ndarray]:
    """0.1 x 0.1 x 1 box, 1 kg, revolute X, pivot at its top (1.1 m up), angle pi/4."""
    body = box_body("link", (0.1, 0.1, 1.0))
    joint = Joint("hinge", "revolute", ORIGIN, 0, axis=X, parent_vertex=PEND_PIVOT * Z, child_vertex=0.5 * Z)
    mech = Mechanism([body], [joint], H, (0, 0, G), name="pendulum")
    return mech, minimal_to_maximal(mech, np.array([np.pi / 4, 0.0]))


def build_npendulum(n: int) -> tuple[Mechanism, np.ndarray]:
    """Dojo's npendulum: n boxes 0.05 x 0.05 x 1 (1 kg), revolute X, base pivot at
    the origin, each link hanging from the previous one's bottom; base angle pi/4."""
    bodies = [box_body(f"link{i + 1}", (0.05, 0.05, 1.0)) for i in range(n)]
    joints = [Joint("joint1", "revolute", ORIGIN, 0, axis=X, child_vertex=0.5 * Z)]
    for i in range(1, n):
        joints.append(
            Joint(f"joint{i + 1}", "revolute", i - 1, i, axis=X, parent_vertex=-0.5 * Z, child_vertex=0.5 * Z)
        )
    mech = Mechanism(bodies, joints, H, (0, 0, G), name=f"npendulum{n}")
    y = np.zeros(2 * n)
    y[0] = np.pi / 4
    return mech, minimal_to_maximal(mech, y)


def build_fourbar() -> tuple[Mechanism, np.ndarray]:
    """Dojo's four-bar parallelogram; the loop joint j5 is listed last."""
    bodies = [box_body(f"link{i}", (0.1, 0.1, 1.0)) for i in range(1, 5)]
    top, bot = 0.5 * Z, -0.5 * Z
    joints = [
        Joint("j1", "revolute", ORIGIN, 0, axis=X, child_vertex=top),
        Joint("j2", "revolute", 0, 1, axis=X, parent_vertex=top, child_vertex=top),
        Joint("j3", "revolute", 0, 2, axis=X, parent_vertex=bot, child_vertex=top),
        Joint("j4", "revolute", 1, 3, axis=X, parent_vertex=bot, child_vertex=top),
        Joint("j5", "revolute", 2, 3, axis=X, parent_vertex=bot, child_vertex=bot),
    ]
    mech = Mechanism(bodies, joints, H, (0, 0, G), name="fourbar")
    a = 0.7854
    coords = [a, a, a, -a, -a]
    y = np.array([v for c in coords for v in (c, 0.0)])
    return mech, minimal_to_maximal(mech, y)


def build_free_body() -> tuple[Mechanism, np.ndarray]:
    """A floating 0.5 x 0.3 x 0.2 box (1 kg) spinning at [1, 2, 3] rad/s (body frame), no gravity."""
    body = box_body("box", (0.5, 0.3, 0.2))
    joint = Joint("float", "floating", ORIGIN, 0)
    mech = Mechanism([body], [joint], H, (0, 0, 0), name="free_body")
    z = pack_maximal(np.zeros((1, 3)), np.zeros((1, 3)), quat.IDENTITY[None].copy(), np.array([[1.0, 2.0, 3.0]]))
    return mech, z


MODELS = {
    "pendulum": build_pendulum,
    "npendulum5": lambda: build_npendulum(5),
    "npendulum20": lambda: build_npendulum(20),
    "fourbar": build_fourbar,
    "free_body": build_free_body,
}
DEFAULT_MODELS = list(MODELS)
# dojo model -> (number of links, link cross-section, base pivot height) of its MuJoCo twin
MJ_TWINS = {
    "pendulum": (1, 0.1, PEND_PIVOT),
    "npendulum5": (5, 0.05, 0.0),
    "npendulum20": (20, 0.05, 0.0),
}


def resolve_model(name: str) -> bool:
    """Register ``npendulum<K>`` for any K >= 1 (e.g. to find the dense/sparse LU crossover)."""
    if name in MODELS:
        return True
    if name.startswith("npendulum") and name[9:].isdigit() and int(name[9:]) >= 1:
        k = int(name[9:])
        MODELS[name] = lambda: build_npendulum(k)
        MJ_TWINS[name] = (k, 0.05, 0.0)
        return True
    return False


# ------------------------------------------------------------- dojo stepping
def dojo_run(mech: Mechanism, z0: np.ndarray, steps: int, opts: SolverOptions, record: dict | None = None):
    """Step ``steps`` times from z0 as simulate() does; returns (seconds, iterations, failures, z).

    ``record``, if given, receives the worst final residual and the failure statuses.
    """
    z, lam = z0, None
    iters = np.empty(steps, dtype=int)
    resid = np.empty(steps)
    failures = 0
    nv = 6 * mech.nb
    statuses: dict[str, int] = {}
    t0 = time.perf_counter()
    for k in range(steps):
        z, result, _ = solve_step(mech, z, None, opts, lam0=lam)
        lam = result.w[nv:]
        iters[k] = result.iterations
        resid[k] = result.residual
        if not result.success:
            failures += 1
            statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
    elapsed = time.perf_counter() - t0
    if record is not None:
        record["max_residual"] = float(resid.max())
        record["failed_statuses"] = statuses
        record["first_failure"] = int(np.argmax(resid >= opts.rtol)) if failures else None
    return elapsed, iters, failures, z


def set_linear_mode(mech: Mechanism, mode: str) -> str:
    """Force the Newton matrix factorisation (dense LU or SuperLU); returns the one used."""
    pattern = step_structure(mech).pattern
    if mode == "dense":
        pattern.dense = True
    elif mode == "sparse":
        pattern.dense = False
    return "dense" if pattern.dense else "sparse"


# ------------------------------------------------------------------- MuJoCo
def chain_mjcf(n: int, side: float, pivot_z: float, integrator: str) -> str:
    """n boxes side x side x 1 m, 1 kg, hinged about X at their tops, each hanging
    from the previous one's bottom; inertia given explicitly (box about its centre)."""
    ixx = (side * side + 1.0) / 12.0
    izz = (2.0 * side * side) / 12.0
    hs = 0.5 * side
    body = ""
    for i in reversed(range(n)):
        pos = f"0 0 {pivot_z}" if i == 0 else "0 0 -1"
        body = (
            f'<body name="link{i + 1}" pos="{pos}">'
            f'<joint name="joint{i + 1}" type="hinge" axis="1 0 0" pos="0 0 0"/>'
            f'<inertial pos="0 0 -0.5" mass="1" diaginertia="{ixx!r} {ixx!r} {izz!r}"/>'
            f'<geom type="box" size="{hs} {hs} 0.5" pos="0 0 -0.5" contype="0" conaffinity="0"/>'
            f"{body}</body>"
        )
    return (
        f'<mujoco model="chain{n}"><compiler angle="radian"/>'
        f'<option timestep="{H}" gravity="0 0 {G}" integrator="{integrator}">'
        f'<flag contact="disable"/></option>'
        f"<worldbody>{body}</worldbody></mujoco>"
    )


def mj_build(name: str, integrator: str):
    n, side, pivot = MJ_TWINS[name]
    model = mujoco.MjModel.from_xml_string(chain_mjcf(n, side, pivot, integrator))
    data = mujoco.MjData(model)
    return model, data


def mj_reset(model, data) -> None:
    mujoco.mj_resetData(model, data)
    data.qpos[0] = np.pi / 4
    mujoco.mj_forward(model, data)


def mj_run(model, data, steps: int) -> float:
    step = mujoco.mj_step
    t0 = time.perf_counter()
    for _ in range(steps):
        step(model, data)
    return time.perf_counter() - t0


def mj_tip(model, data) -> np.ndarray:
    """World position of the last link's bottom end."""
    b = model.nbody - 1
    return data.xpos[b] + data.xmat[b].reshape(3, 3) @ np.array([0.0, 0.0, -1.0])


def dojo_tip(mech: Mechanism, z: np.ndarray) -> np.ndarray:
    x, _, q, _ = unpack_maximal(z, mech.nb)
    return x[-1] + quat.rotate(q[-1], -0.5 * Z)


# ------------------------------------------------------------------- sanity
def pendulum_reference(t_end: float, inertia_pivot: float, mgl: float, dt: float = 1e-4) -> float:
    """theta(t_end) of theta'' = -mgl sin(theta) / I from (pi/4, 0), classical RK4."""
    def f(y):
        return np.array([y[1], -mgl * np.sin(y[0]) / inertia_pivot])

    y = np.array([np.pi / 4, 0.0])
    for _ in range(int(round(t_end / dt))):
        k1 = f(y)
        k2 = f(y + 0.5 * dt * k1)
        k3 = f(y + 0.5 * dt * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return float(y[0])


def sanity_checks(opts: SolverOptions, integrator: str) -> list[dict]:
    """Physical agreement checks run before timing (1 s = 100 steps each)."""
    out = []
    t_end = 1.0
    steps = int(round(t_end / H))

    def add(name, what, value, limit, detail=""):
        out.append({"model": name, "check": what, "value": float(value), "limit": limit,
                    "ok": bool(value <= limit), "detail": detail})

    # The pendulum against its exact ODE, theta'' = -m g l sin(theta) / (I_xx + m l^2)
    # (l = 0.5 m, pivot at the box's top), integrated with fine RK4. The state's
    # velocity is the midpoint velocity of the previous interval, so "at rest at
    # pi/4" means at rest half a step earlier: compare with the ODE at t + h/2
    # (the plain comparison at t differs by ~h/2 * theta_dot, about 1 % here).
    mech, z0 = build_pendulum()
    _, _, fails, z = dojo_run(mech, z0, steps, opts)
    theta_d = split_minimal(mech, maximal_to_minimal(mech, z))[0][0]
    inertia_pivot, mgl = mech.inertia[0, 0, 0] + 0.25, 0.5 * -G
    theta_ref = pendulum_reference(t_end + 0.5 * H, inertia_pivot, mgl)
    theta_plain = pendulum_reference(t_end, inertia_pivot, mgl)
    add("pendulum", f"angle at t={t_end:g}s, dojo vs exact ODE at t+h/2 (relative)",
        abs(theta_d - theta_ref) / abs(theta_ref), 1e-3,
        f"dojo {theta_d:+.5f} rad, RK4 {theta_ref:+.5f} rad (at t: {theta_plain:+.5f})")
    if mujoco is not None:
        for name in MJ_TWINS:
            mech, z0 = MODELS[name]()
            _, _, fails, z = dojo_run(mech, z0, steps, opts)
            theta_d, _ = split_minimal(mech, maximal_to_minimal(mech, z))
            model, data = mj_build(name, integrator)
            mj_reset(model, data)
            mj_run(model, data, steps)
            theta_m = data.qpos.copy()
            if name == "pendulum":
                a, b = theta_d[0], theta_m[0]
                rel = abs(a - b) / abs(b)
                add(name, f"angle at t={t_end:g}s, dojo vs MuJoCo (relative)", rel, 0.05,
                    f"dojo {a:+.5f} rad, MuJoCo {b:+.5f} rad")
            else:
                # A hanging chain released at 45 deg is chaotic after a while; over
                # 1 s both integrators stay O(h) apart. Compare the tip position.
                tip_d, tip_m = dojo_tip(mech, z), mj_tip(model, data)
                dist = float(np.linalg.norm(tip_d - tip_m))
                add(name, f"tip position at t={t_end:g}s, dojo vs MuJoCo (m / chain length)", dist / len(mech.bodies),
                    0.05, f"dojo {np.round(tip_d, 4).tolist()}, MuJoCo {np.round(tip_m, 4).tolist()}, "
                    f"base angle {theta_d[0]:+.4f} vs {theta_m[0]:+.4f}")
            if fails:
                add(name, "solver failures", fails, 0)
    mech, z0 = build_fourbar()
    _, _, fails, z = dojo_run(mech, z0, steps, opts)
    add("fourbar", "initial loop-closure violation (m)", np.max(constraint_violation(mech, z0)), 1e-3)
    add("fourbar", f"loop-closure violation at t={t_end:g}s (m)", np.max(constraint_violation(mech, z)),
        10 * opts.rtol, f"solver failures {fails}")
    mech, z0 = build_free_body()
    _, _, fails, z = dojo_run(mech, z0, steps, opts)
    # Discrete angular momentum at a state [x, v15, q, w15]: R(q) momentum_left(w15),
    # which the variational integrator conserves exactly (up to the solver tolerance).
    def world_angular_momentum(zz):
        _, v, q, w = unpack_maximal(zz, 1)
        return quat.rotate(q[0], momentum_left(mech, v, w)[0, 3:])
    l0, l1 = world_angular_momentum(z0), world_angular_momentum(z)
    # each step's momentum residual is below rtol (N m s), so |L1 - L0| <= steps rtol
    bound = float(f"{steps * opts.rtol / np.linalg.norm(l0):.1g}")
    drift = np.linalg.norm(l1 - l0) / np.linalg.norm(l0)
    add("free_body", f"discrete angular momentum drift at t={t_end:g}s (relative)", drift, bound,
        f"|L| = {np.linalg.norm(l0):.4f} N m s, body travel {np.linalg.norm(unpack_maximal(z, 1)[0]):.1e} m, "
        f"solver failures {fails}")
    return out


# ------------------------------------------------------------------ driver
@dataclass
class Timing:
    name: str
    nb: int
    nl: int
    n: int
    dof: int
    linear: str
    us_per_step: float
    us_all: list[float]
    iter_median: float
    iter_max: int
    iter_mean: float
    failures: int
    max_residual: float
    failed_statuses: dict
    first_failure: int | None
    mj_us_per_step: float | None = None
    mj_us_all: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return None if self.mj_us_per_step is None else self.us_per_step / self.mj_us_per_step


def time_model(name: str, steps: int, repeat: int, warmup: int, opts: SolverOptions, linear: str,
               integrator: str) -> Timing:
    mech, z0 = MODELS[name]()
    used = set_linear_mode(mech, linear)
    dojo_run(mech, z0, warmup, opts)  # builds the step structure, SuperLU ordering, numpy caches
    runs, iters, fails, rec = [], None, 0, {}
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            sec, it, f, _ = dojo_run(mech, z0, steps, opts, rec)
        finally:
            gc.enable()
        runs.append(1e6 * sec / steps)
        iters, fails = it, max(fails, f)  # identical across repeats (same start, deterministic)
    s = step_structure(mech)
    t = Timing(name, mech.nb, mech.nl, s.n, mech.nf, used, min(runs), runs,
               float(statistics.median(iters.tolist())), int(iters.max()), float(iters.mean()), fails,
               rec["max_residual"], rec["failed_statuses"], rec["first_failure"])
    if mujoco is not None and name in MJ_TWINS:
        model, data = mj_build(name, integrator)
        mj_reset(model, data)
        mj_run(model, data, warmup)
        mj_runs = []
        for _ in range(repeat):
            mj_reset(model, data)
            gc.collect()
            gc.disable()
            try:
                mj_runs.append(1e6 * mj_run(model, data, steps) / steps)
            finally:
                gc.enable()
        t.mj_us_per_step, t.mj_us_all = min(mj_runs), mj_runs
    return t


def fmt_us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"


def print_table(rows: list[Timing], steps: int, repeat: int) -> None:
    head = ["model", "nb", "rows", "n", "dof", "LU", "us/step", "spread",
            "iters med", "mean", "max", "failed", "MuJoCo us", "ratio"]
    body = []
    for t in rows:
        spread = f"+{100 * (max(t.us_all) / t.us_per_step - 1):.0f}%"
        body.append([
            t.name, str(t.nb), str(t.nl), str(t.n), str(t.dof), t.linear, fmt_us(t.us_per_step), spread,
            f"{t.iter_median:g}", f"{t.iter_mean:.2f}", str(t.iter_max), str(t.failures), fmt_us(t.mj_us_per_step),
            "-" if t.ratio is None else f"{t.ratio:,.0f}x",
        ])
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 1 or i == 5 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(f"\nStep timing: best of {repeat} runs of {steps} consecutive steps (us = microseconds per step)")
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in body:
        print(line(r))
    print("\nnb bodies, rows = joint constraint rows, n = 6 nb + rows (Newton system size), dof = free coordinates;")
    print("LU = dense LAPACK or sparse SuperLU factorisation; spread = slowest repeat vs best;")
    print("iters = Newton iterations per step (each one factorisation); failed = steps that did not reach rtol;")
    print("ratio = dojo us / MuJoCo us (both timed in this run).")
    for t in rows:
        if t.failures:
            kinds = ", ".join(f"{n} x{c}" for c, n in sorted(((c, n) for n, c in t.failed_statuses.items()),
                                                             reverse=True))
            print(f"WARNING: {t.name}: {t.failures}/{steps} steps did not converge ({kinds}); first at step "
                  f"{t.first_failure}, worst final residual {t.max_residual:.2g}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=500, help="consecutive steps per timed run (default 500)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per model; the best is reported (default 3)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps before timing (default 20)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help=f"comma-separated list from {', '.join(DEFAULT_MODELS)}, or npendulum<K> for any K")
    ap.add_argument("--linear", choices=["auto", "dense", "sparse"], default="auto",
                    help="Newton matrix factorisation: the library's size rule (auto), or force one")
    ap.add_argument("--mj-integrator", default="Euler", choices=["Euler", "implicitfast", "implicit", "RK4"],
                    help="MuJoCo integrator (default Euler, MuJoCo's semi-implicit default)")
    ap.add_argument("--no-sanity", action="store_true", help="skip the physical agreement checks")
    args = ap.parse_args(argv)
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in names if not resolve_model(m)]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(DEFAULT_MODELS)} or npendulum<K>")
    if args.steps < 1 or args.repeat < 1:
        ap.error("--steps and --repeat must be >= 1")

    opts = SolverOptions()
    import scipy
    import scipy.linalg

    # A singular Newton matrix (redundant loop constraints) makes LAPACK warn on
    # every such step; those steps are counted in the "failed" column instead.
    warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)

    print(f"dojo_cli step benchmark: python {platform.python_version()}, numpy {np.__version__}, "
          f"scipy {scipy.__version__}, {os.cpu_count()} CPUs, {platform.machine()}")
    print(f"solver: Newton, rtol {opts.rtol:g}, warm start from the previous step's impulses; h = {H} s")
    if mujoco is None:
        print("MuJoCo: not installed (pip install mujoco); skipping the MuJoCo timings and ratios")
    else:
        print(f"MuJoCo {mujoco.__version__}: integrator {args.mj_integrator}, contacts disabled, "
              f"explicit <inertial> per link")

    t_start = time.perf_counter()
    sanity = []
    if not args.no_sanity:
        sanity = sanity_checks(opts, args.mj_integrator)
        print("\nSanity (before timing):")
        for c in sanity:
            mark = "ok  " if c["ok"] else "FAIL"
            detail = f"  [{c['detail']}]" if c["detail"] else ""
            print(f"  {mark} {c['model']:<12} {c['check']}: {c['value']:.3g} (limit {c['limit']:g}){detail}")

    rows = [time_model(n, args.steps, args.repeat, args.warmup, opts, args.linear, args.mj_integrator)
            for n in names]
    print_table(rows, args.steps, args.repeat)
    elapsed = time.perf_counter() - t_start
    print(f"\ntotal benchmark time {elapsed:.1f} s")

    if args.json:
        doc = {
            "meta": {
                "python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                "mujoco": None if mujoco is None else mujoco.__version__, "machine": platform.machine(),
                "cpus": os.cpu_count(), "steps": args.steps, "repeat": args.repeat, "warmup": args.warmup,
                "timestep": H, "rtol": opts.rtol, "linear": args.linear,
                "mujoco_integrator": None if mujoco is None else args.mj_integrator,
                "elapsed_s": elapsed,
            },
            "models": [
                {
                    "name": t.name, "bodies": t.nb, "constraint_rows": t.nl, "newton_size": t.n, "dof": t.dof,
                    "linear_solver": t.linear, "us_per_step": t.us_per_step, "us_per_step_runs": t.us_all,
                    "iterations_median": t.iter_median, "iterations_max": t.iter_max,
                    "iterations_mean": t.iter_mean, "failed_steps": t.failures,
                    "failed_statuses": t.failed_statuses, "first_failed_step": t.first_failure,
                    "max_final_residual": t.max_residual,
                    "mujoco_us_per_step": t.mj_us_per_step, "mujoco_us_per_step_runs": t.mj_us_all or None,
                    "ratio_to_mujoco": t.ratio,
                }
                for t in rows
            ],
            "sanity": sanity,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(c["ok"] for c in sanity) else 1


if __name__ == "__main__":
    sys.exit(main())
