"""Step-speed benchmark of dojo_cli's variational integrator, against MuJoCo.

Usage:
    python benchmarks/step_speed.py [--steps N] [--repeat R] [--json FILE]
                                    [--contact-repeat R2] [--models a,b,...]
                                    [--linear auto|dense|sparse]
                                    [--mj-integrator Euler|implicitfast|RK4|implicit]

For each mechanism: warm up, then run N consecutive steps R times from the same
initial state and report the best-of-R mean wall time per step, the median, mean
and max solver iterations per step, failed steps, and the size of the Newton
system. The loop is the one the run loop (dojo_cli.simulation.run) runs step by step:
``solve_step`` with the previous step's joint impulses as the warm start (lam0).

Joint-only models (pendulum, chains, four-bar, free body) are built here in
Python and solved by Newton's method. The contact models are built-in scenes
(``dojo.load_scene``) solved by the interior-point method: ``box`` (the box toss,
8 corner contacts) and ``snake_contacts`` (5 links on ball joints, 10 contacts).
They always run their whole scene (500 and 300 steps, so flight, impacts and
rest are all in the average, whatever --steps says), best of --contact-repeat
(default 2) to keep the default run short.

If ``mujoco`` imports, the pendulum and the 5- and 20-link chains are also built
in MJCF (hinge joints, explicit <inertial> equal to dojo's box inertias, contacts
disabled, h = 0.01, integrator Euler unless --mj-integrator says otherwise) and
``mujoco.mj_step`` is timed the same way (a Python loop, so per-call binding
overhead, ~1 us, is included on both sides). The box also has a MuJoCo twin: a
free body (freejoint) with the same box geom, mass and inertia, on a ground
plane, friction 0.8, started from dojo's initial state, with MuJoCo's default
soft contacts (a different contact model: only the time ratio and the final
resting pose are comparable). Before timing, a sanity section compares dojo and
MuJoCo trajectories after 1 s (different integrators, so agreement is to O(h),
not exact) and checks the four-bar loop closure and the free body's angular
momentum; after timing, the contact models' final states (from the timed runs)
are checked to be at rest on the ground.
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import dojo_cli as dojo  # noqa: E402
from dojo_cli.math import quaternion as quat  # noqa: E402
from dojo_cli.model.mechanism import ORIGIN, Body, Joint, Mechanism  # noqa: E402
from dojo_cli.model.shapes import Shape, body_inertia  # noqa: E402
from dojo_cli.model.state import pack_maximal, unpack_maximal  # noqa: E402
from dojo_cli.physics.coordinates import (  # noqa: E402
    constraint_violation,
    maximal_to_minimal,
    minimal_to_maximal,
    split_minimal,
)
from dojo_cli.physics.energy import angular_momentum  # noqa: E402
from dojo_cli.simulation.step import solve_step  # noqa: E402
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


def load_builtin(scene: str) -> tuple[Mechanism, np.ndarray]:
    """A built-in scene (scenes/<group>/<scene>.yaml) and its initial state."""
    mech = dojo.load_scene(scene)
    return mech, dojo.initial_state(mech)


# contact model -> (built-in scene, steps per timed run = the whole scene at h = 0.01)
CONTACT_MODELS = {
    # 0.5 m cube, 1 kg, 8 corner contacts (nonlinear cone, mu 0.8), tossed with spin; rest from ~1.8 s
    "box": ("box", 500),
    # 5 links 1 x 0.15 x 0.1 m on spherical joints, 10 contact spheres; lying still by ~0.6 s
    "snake_contacts": ("snake", 300),
}
MODELS = {
    "pendulum": build_pendulum,
    "npendulum5": lambda: build_npendulum(5),
    "npendulum20": lambda: build_npendulum(20),
    "fourbar": build_fourbar,
    "free_body": build_free_body,
    "box": lambda: load_builtin("box"),
    "snake_contacts": lambda: load_builtin("snake"),
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
    statuses: dict[str, int] = {}
    t0 = time.perf_counter()
    for k in range(steps):
        z, result = solve_step(mech, z, None, opts, lam0=lam)
        # the joint impulses only (contact and limit unknowns are re-initialised each step)
        lam = result.w[6 * mech.nb : 6 * mech.nb + mech.nl]
        iters[k] = result.iterations
        resid[k] = result.residual
        if result.status.value != "success":
            failures += 1
            statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
    elapsed = time.perf_counter() - t0
    if record is not None:
        record["max_residual"] = float(resid.max())
        record["failed_statuses"] = statuses
        record["first_failure"] = int(np.argmax(resid >= opts.rtol)) if failures else None
    return elapsed, iters, failures, z


def set_linear_mode(mech: Mechanism, mode: str) -> str:
    """The Newton matrix factorisation: always the core's block-sparse LU now (the
    --linear option of the numpy implementation is accepted and ignored)."""
    return "block"


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


def box_mjcf(mech: Mechanism, integrator: str) -> str:
    """dojo's box scene in MJCF: a freejoint body with the same box geom, mass and
    (explicit) inertia on a ground plane, friction mu, MuJoCo's default contacts
    (soft, pyramidal cone, condim 3). MuJoCo combines the two geoms' friction by
    max, so both get mu; the start pose/velocity come from mj_box_state."""
    body = mech.bodies[0]
    hx, hy, hz = (0.5 * a for a in body.shape.params["size"])
    ixx, iyy, izz = (float(i) for i in np.diag(mech.inertia[0]))
    assert np.allclose(mech.inertia[0], np.diag([ixx, iyy, izz])), "box inertia is not diagonal"
    mus = {c.friction for c in mech.contacts}
    assert len(mus) == 1, "the box's contacts have different friction coefficients"
    mu = mus.pop()
    g = [float(c) for c in mech.gravity]
    return (
        f'<mujoco model="box_toss">'
        f'<option timestep="{mech.timestep}" gravity="{g[0]} {g[1]} {g[2]}" integrator="{integrator}"/>'
        f'<worldbody><geom name="ground" type="plane" size="0 0 1" friction="{mu} 0.005 0.0001"/>'
        f'<body name="box" pos="0 0 1"><freejoint/>'
        f'<inertial pos="0 0 0" mass="{float(mech.mass[0])!r}" diaginertia="{ixx!r} {iyy!r} {izz!r}"/>'
        f'<geom type="box" size="{hx} {hy} {hz}" friction="{mu} 0.005 0.0001"/>'
        f"</body></worldbody></mujoco>"
    )


def mj_box_state(mech: Mechanism, z0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(qpos (7,), qvel (6,)) of the MuJoCo freejoint for dojo's box state z0.

    dojo's state per body is [x(3), v(3), q(4) w,x,y,z, w(3)]: x, v world frame;
    w is the body-frame midpoint angular velocity of the previous interval in
    Dojo's quaternion map, q1 = q2 qmap(-w), a rotation by 2 asin(h |w| / 2) over
    h; the mean rate is omega = (2/h) asin(h |w| / 2) w/|w| (|w| = 4.9991 ->
    |omega| = 5 for the scene's [5, 4, 2] rad/s). MuJoCo's freejoint: qpos = [x,
    q (w,x,y,z)], qvel = [linear velocity, world frame; angular velocity, BODY
    frame] (checked with mj_objectVelocity), so only the magnitude changes.
    """
    h = mech.timestep
    x, v, q, w = (a[0] for a in unpack_maximal(z0, 1))
    nw = np.linalg.norm(w)
    omega = w * (2.0 / h * np.arcsin(0.5 * h * nw) / nw) if nw > 0 else w
    return np.concatenate([x, q]), np.concatenate([v, omega])


class MjTwin:
    """A MuJoCo model of a dojo benchmark model, with its reset to the initial state."""

    def __init__(self, name: str, integrator: str, mech: Mechanism | None = None, z0: np.ndarray | None = None):
        self.name = name
        if name == "box":
            self.model = mujoco.MjModel.from_xml_string(box_mjcf(mech, integrator))
            self.qpos0, self.qvel0 = mj_box_state(mech, z0)
        else:
            n, side, pivot = MJ_TWINS[name]
            self.model = mujoco.MjModel.from_xml_string(chain_mjcf(n, side, pivot, integrator))
            self.qpos0 = np.zeros(self.model.nq)
            self.qpos0[0] = np.pi / 4
            self.qvel0 = np.zeros(self.model.nv)
        self.data = mujoco.MjData(self.model)

    def reset(self) -> None:
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.qpos0
        self.data.qvel[:] = self.qvel0
        mujoco.mj_forward(self.model, self.data)


def has_mj_twin(name: str) -> bool:
    return name in MJ_TWINS or name == "box"


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


def box_flight_check(opts: SolverOptions, integrator: str, add, steps: int = 30) -> None:
    """The box and its MuJoCo twin in free flight (0.3 s, before the first impact).

    Checks the twin's initial state (the qmap -> angular rate conversion, frames).
    With constant gravity and a cube's isotropic inertia, dojo's integrator and
    MuJoCo's semi-implicit Euler give the same positions (v += h g; x += h v) and
    orientations (a rotation by h |omega| per step): the same box without contacts
    matches to rounding (0.0). With its 8 contacts dojo's interior point stops at
    complementarity btol = 1e-4, which leaves tiny impulses at the open contacts:
    ~5e-6 m and rad after 0.3 s (1e-9 at btol 1e-8). Limit 1e-4: feeding MuJoCo
    dojo's w unconverted is 3.7e-4 rad off. MuJoCo's RK4 is O(h) off in position
    (1/2 g h t ~ 0.015 m at 0.3 s)."""
    mech, z0 = MODELS["box"]()
    _, _, fails, z = dojo_run(mech, z0, steps, opts)
    twin = MjTwin("box", integrator, mech, z0)
    twin.reset()
    mj_run(twin.model, twin.data, steps)
    x, _, q, _ = (a[0] for a in unpack_maximal(z, 1))
    qpos = twin.data.qpos
    dx = float(np.linalg.norm(x - qpos[:3]))
    dang = float(2.0 * np.arccos(min(1.0, abs(float(np.dot(q, qpos[3:7]))))))
    corners = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * 0.5 * np.array(
        mech.bodies[0].shape.params["size"])
    lowest = x[2] + min(quat.rotate(q, c)[2] for c in corners)
    add("box", f"free flight to t={steps * H:g}s (no contact yet), dojo vs MuJoCo twin: |dx| m + angle rad",
        dx + dang, 1e-4 if integrator != "RK4" else 0.02,
        f"|dx| {dx:.1e} m, angle {dang:.1e} rad, lowest corner {lowest:.3f} m up, MuJoCo contacts {twin.data.ncon}, "
        f"dojo solver failures {fails}")


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
            twin = MjTwin(name, integrator)
            model, data = twin.model, twin.data
            twin.reset()
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
    if mujoco is not None:
        box_flight_check(opts, integrator, add)
    mech, z0 = build_fourbar()
    _, _, fails, z = dojo_run(mech, z0, steps, opts)
    add("fourbar", "initial loop-closure violation (m)", np.max(constraint_violation(mech, z0)), 1e-3)
    add("fourbar", f"loop-closure violation at t={t_end:g}s (m)", np.max(constraint_violation(mech, z)),
        10 * opts.rtol, f"solver failures {fails}")
    mech, z0 = build_free_body()
    _, _, fails, z = dojo_run(mech, z0, steps, opts)
    # Discrete angular momentum of a state (the average of the Legendre transforms of the
    # steps into and out of it, physics.energy), which the variational integrator
    # conserves exactly (up to the solver tolerance); it needs the step out of the state.
    def world_angular_momentum(zz):
        z_next, _ = solve_step(mech, zz, None, opts)
        s = np.stack([zz, z_next]).reshape(2, mech.nb, 13)
        return angular_momentum(mech, s[:, :, 0:3], s[:, :, 6:10], s[:, :, 3:6], s[:, :, 10:13])[0]
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
    nc: int
    n: int
    dof: int
    linear: str
    steps: int
    repeat: int
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
    # final states of the last timed run (for the contact sanity checks), not in the JSON
    mech: Mechanism | None = field(default=None, repr=False)
    z_final: np.ndarray | None = field(default=None, repr=False)
    mj_final: tuple | None = field(default=None, repr=False)

    @property
    def ratio(self) -> float | None:
        return None if self.mj_us_per_step is None else self.us_per_step / self.mj_us_per_step


def time_model(name: str, steps: int, repeat: int, warmup: int, opts: SolverOptions, linear: str,
               integrator: str) -> Timing:
    mech, z0 = MODELS[name]()
    used = set_linear_mode(mech, linear)
    dojo_run(mech, z0, warmup, opts)  # warms the caches (core options, first-step allocations)
    runs, iters, fails, rec, z = [], None, 0, {}, None
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            sec, it, f, z = dojo_run(mech, z0, steps, opts, rec)
        finally:
            gc.enable()
        runs.append(1e6 * sec / steps)
        iters, fails = it, max(fails, f)  # identical across repeats (same start, deterministic)
    t = Timing(name, mech.nb, mech.nl, mech.nc, mech.core.n, mech.nf, used, steps, repeat, min(runs), runs,
               float(statistics.median(iters.tolist())), int(iters.max()), float(iters.mean()), fails,
               rec["max_residual"], rec["failed_statuses"], rec["first_failure"], mech=mech, z_final=z)
    if mujoco is not None and has_mj_twin(name):
        twin = MjTwin(name, integrator, mech, z0)
        model, data = twin.model, twin.data
        twin.reset()
        mj_run(model, data, warmup)
        mj_runs = []
        for _ in range(repeat):
            twin.reset()
            gc.collect()
            gc.disable()
            try:
                mj_runs.append(1e6 * mj_run(model, data, steps) / steps)
            finally:
                gc.enable()
        t.mj_us_per_step, t.mj_us_all = min(mj_runs), mj_runs
        t.mj_final = (data.qpos.copy(), data.qvel.copy(), data.xmat[1].reshape(3, 3).copy())
    return t


def contact_sanity(rows: list[Timing]) -> list[dict]:
    """Final states of the contact models' last timed runs: at rest on the ground."""
    out = []

    def add(name, what, value, limit, detail=""):
        out.append({"model": name, "check": what, "value": float(value), "limit": limit,
                    "ok": bool(value <= limit), "detail": detail})

    for t in rows:
        if t.name == "box":
            half = 0.5 * t.mech.bodies[0].shape.params["size"][2]
            x, v, q, w = (a[0] for a in unpack_maximal(t.z_final, 1))
            up = np.abs(quat.rotate(q, np.eye(3))[:, 2])  # world-z component of each body axis
            sides = [("dojo", x, np.linalg.norm(v), np.linalg.norm(w), up.max())]
            if t.mj_final is not None:
                qpos, qvel, xmat = t.mj_final
                sides.append(("MuJoCo", qpos[:3], np.linalg.norm(qvel[:3]), np.linalg.norm(qvel[3:]),
                              np.abs(xmat[2]).max()))
            for who, pos, speed, spin, vertical in sides:
                add("box", f"{who}: rest height at t={t.steps * H:g}s, |z - {half:g}| (m)", abs(pos[2] - half), 0.01,
                    f"centre {np.round(pos, 4).tolist()}, |v| {speed:.1e} m/s, |w| {spin:.1e} rad/s, "
                    f"most vertical body axis |cos| {vertical:.6f}")
                add("box", f"{who}: at rest, max(|v| m/s, |w| rad/s)", max(speed, spin), 1e-2)
                add("box", f"{who}: on a face, 1 - |cos| of the most vertical body axis", max(0.0, 1.0 - vertical),
                    1e-3)
        elif t.name == "snake_contacts":
            x, v, _, w = unpack_maximal(t.z_final, t.nb)
            half = 0.5 * t.mech.bodies[0].shape.params["size"][2]
            gap = np.abs(x[:, 2] - half).max()
            add("snake_contacts", f"links lying on the ground at t={t.steps * H:g}s, max |z - {half:g}| (m)", gap,
                0.01, f"link heights {np.round(x[:, 2], 4).tolist()}")
            add("snake_contacts", "at rest, max(|v| m/s, |w| rad/s) over links",
                max(np.linalg.norm(v, axis=1).max(), np.linalg.norm(w, axis=1).max()), 1e-2)
    return out


def fmt_us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"


def print_table(rows: list[Timing], steps: int, repeat: int, contact_repeat: int) -> None:
    head = ["model", "nb", "rows", "nc", "n", "dof", "LU", "steps", "us/step", "spread",
            "iters med", "mean", "max", "failed", "MuJoCo us", "ratio"]
    body = []
    for t in rows:
        spread = f"+{100 * (max(t.us_all) / t.us_per_step - 1):.0f}%" if len(t.us_all) > 1 else "-"
        body.append([
            t.name, str(t.nb), str(t.nl), str(t.nc), str(t.n), str(t.dof), t.linear, f"{t.steps}x{t.repeat}",
            fmt_us(t.us_per_step), spread, f"{t.iter_median:g}", f"{t.iter_mean:.2f}", str(t.iter_max),
            str(t.failures), fmt_us(t.mj_us_per_step), "-" if t.ratio is None else f"{t.ratio:,.0f}x",
        ])
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) if i < 1 or i == 6 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(f"\nStep timing (us = microseconds per step, best of the runs): joint models best of {repeat} runs of "
          f"{steps} consecutive steps;\ncontact models best of {contact_repeat} runs of their whole scene (box "
          f"500 steps, snake 300: flight, impacts and rest), fewer repeats to keep the run short")
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in body:
        print(line(r))
    print("\nnb bodies, rows = joint constraint rows, nc = contacts, n = Newton system size (6 nb + rows, plus 2 per "
          "joint-limit\nside and the contact unknowns: 8 per nonlinear-cone contact), dof = free coordinates;")
    print("LU = the core's block-sparse LU; steps = steps per run x runs; spread = slowest run vs best;")
    print("iters = solver iterations per step, each one matrix assembly + factorisation: Newton (joint models) or")
    print("interior-point predictor-corrector (contact models, two solves per factorisation); failed = steps whose")
    print("status is not success; ratio = dojo us / MuJoCo us (both timed in this run). MuJoCo's box uses its own")
    print("soft contacts (not Dojo's hard contacts): only the time ratio is comparable, not the trajectories.")
    for t in rows:
        if t.failures:
            kinds = ", ".join(f"{n} x{c}" for c, n in sorted(((c, n) for n, c in t.failed_statuses.items()),
                                                             reverse=True))
            print(f"WARNING: {t.name}: {t.failures}/{t.steps} steps did not converge ({kinds}); first at step "
                  f"{t.first_failure}, worst final residual {t.max_residual:.2g}")


def print_sanity(title: str, checks: list[dict]) -> None:
    print(f"\n{title}:")
    for c in checks:
        mark = "ok  " if c["ok"] else "FAIL"
        detail = f"  [{c['detail']}]" if c["detail"] else ""
        print(f"  {mark} {c['model']:<14} {c['check']}: {c['value']:.3g} (limit {c['limit']:g}){detail}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=500,
                    help="consecutive steps per timed run of the joint models (default 500); the contact "
                         "models always run their whole scene")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs per joint model; the best is reported (default 3)")
    ap.add_argument("--contact-repeat", type=int, default=2,
                    help="timed runs per contact model (box, snake_contacts); the best is reported (default 2)")
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
    if args.steps < 1 or args.repeat < 1 or args.contact_repeat < 1:
        ap.error("--steps, --repeat and --contact-repeat must be >= 1")

    opts = SolverOptions()
    print(f"dojo_cli step benchmark: python {platform.python_version()}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs, {platform.machine()}")
    print(f"solver: Newton (joints) / interior point (contacts), rtol {opts.rtol:g}, btol {opts.btol:g}, "
          f"warm start from the previous step's joint impulses; h = {H} s")
    if mujoco is None:
        print("MuJoCo: not installed (pip install mujoco); skipping the MuJoCo timings and ratios")
    else:
        print(f"MuJoCo {mujoco.__version__}: integrator {args.mj_integrator}; chains: contacts disabled, "
              f"explicit <inertial> per link;\n  box: freejoint + ground plane, same mass/inertia/friction and "
              f"initial state, MuJoCo's default SOFT contacts (a different contact model)")

    t_start = time.perf_counter()
    sanity = []
    if not args.no_sanity:
        sanity = sanity_checks(opts, args.mj_integrator)
        print_sanity("Sanity (before timing)", sanity)

    rows = []
    for n in names:
        if n in CONTACT_MODELS:
            rows.append(time_model(n, CONTACT_MODELS[n][1], args.contact_repeat, args.warmup, opts, args.linear,
                                   args.mj_integrator))
        else:
            rows.append(time_model(n, args.steps, args.repeat, args.warmup, opts, args.linear, args.mj_integrator))
    print_table(rows, args.steps, args.repeat, args.contact_repeat)
    if not args.no_sanity:
        after = contact_sanity(rows)
        if after:
            print_sanity("Contact sanity (final states of the last timed runs)", after)
            sanity += after
    elapsed = time.perf_counter() - t_start
    print(f"\ntotal benchmark time {elapsed:.1f} s")

    if args.json:
        doc = {
            "meta": {
                "python": platform.python_version(), "numpy": np.__version__,
                "mujoco": None if mujoco is None else mujoco.__version__, "machine": platform.machine(),
                "cpus": os.cpu_count(), "steps": args.steps, "repeat": args.repeat,
                "contact_repeat": args.contact_repeat, "warmup": args.warmup,
                "timestep": H, "rtol": opts.rtol, "btol": opts.btol, "linear": args.linear,
                "mujoco_integrator": None if mujoco is None else args.mj_integrator,
                "elapsed_s": elapsed,
            },
            "models": [
                {
                    "name": t.name, "bodies": t.nb, "constraint_rows": t.nl, "contacts": t.nc,
                    "newton_size": t.n, "dof": t.dof, "linear_solver": t.linear, "steps": t.steps,
                    "repeat": t.repeat, "us_per_step": t.us_per_step, "us_per_step_runs": t.us_all,
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
