"""RigidBodyDynamics.jl's ``simulate``: the Munthe-Kaas RK4 integrator in minimal coordinates.

The stepping is the core's (dojo_cli/core/rk4.h): one call runs many steps into
preallocated arrays; a Python ``control`` callable is the only reason the loop comes
back to Python (once per RK stage). This module compiles what the core needs beside
the tree (body map, inputs, springs and dampers, loop-closing joints and their
Baumgarte gains) and implements RBD's ``simulate`` semantics (docs/minimal.md,
"Simulation: simulate and rk4").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import Problem, SceneError
from dojo_cli.model.joint_types import JointType
from dojo_cli.model.mechanism import ORIGIN
from dojo_cli.minimal.model import ROT_QUATERNION, MinimalModel
from dojo_cli.minimal.quaternions import rot_to_quat

# RBD's default_constraint_stabilization_gains: SE3PDGains(PDGains(100, 20), PDGains(100, 20)),
# critical damping at 10 rad/s (Featherstone 2008, sec. 8.3, T_stab = 0.1 s).
DEFAULT_GAINS = (100.0, 20.0)
# RBD's simulate default step
DEFAULT_DT = 1e-4


def _pair(value, where: str) -> tuple[float, float]:
    try:
        kp, kd = (float(g) for g in value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: gains must be a pair (kp, kd) of numbers, got {value!r}") from None
    if not (math.isfinite(kp) and math.isfinite(kd) and kp >= 0 and kd >= 0):
        raise ValueError(f"{where}: gains must be finite and >= 0, got ({kp}, {kd})")
    return kp, kd


def _joint_gains(value, where: str) -> tuple[float, float, float, float]:
    """(kp_lin, kd_lin, kp_ang, kd_ang) of one joint's gains: a pair for both row kinds,
    ((kp, kd) linear, (kp, kd) angular), or {"linear": (kp, kd), "angular": (kp, kd)}."""
    if isinstance(value, dict):
        unknown = set(value) - {"linear", "angular"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)} (linear, angular)")
        lin = _pair(value.get("linear", DEFAULT_GAINS), f"{where}.linear")
        ang = _pair(value.get("angular", DEFAULT_GAINS), f"{where}.angular")
        return lin + ang
    seq = list(value) if isinstance(value, (list, tuple)) else None
    if seq is not None and len(seq) == 2 and all(isinstance(s, (list, tuple)) for s in seq):
        return _pair(seq[0], f"{where}.linear") + _pair(seq[1], f"{where}.angular")
    p = _pair(value, where)
    return p + p


def resolve_gains(model: MinimalModel, stabilization_gains) -> tuple[np.ndarray, np.ndarray]:
    """(gains (nl, 4), stabilized (nl,)) of the loop joints from RBD-style options:
    "default" (RBD's (100, 20) on every loop joint), None (no stabilisation), one
    joint's gains for all, or a dict {loop joint name: gains} naming every loop joint."""
    names = model.loop_joints
    nl = len(names)
    if stabilization_gains is None:
        return np.zeros((nl, 4)), np.zeros(nl, dtype=int)
    if isinstance(stabilization_gains, str):
        if stabilization_gains != "default":
            raise ValueError(f"stabilization_gains: {stabilization_gains!r} (\"default\", None, gains or a dict by joint)")
        return np.tile(DEFAULT_GAINS + DEFAULT_GAINS, (nl, 1)), np.ones(nl, dtype=int)
    if isinstance(stabilization_gains, dict) and not set(stabilization_gains) <= {"linear", "angular"}:
        unknown = [k for k in stabilization_gains if k not in names]
        if unknown:
            raise ValueError(f"stabilization_gains: {', '.join(map(repr, unknown))} is not a loop joint "
                             f"(loop joints: {', '.join(names) or 'none'})")
        missing = [n for n in names if n not in stabilization_gains]
        if missing:
            raise ValueError(f"stabilization_gains: no gains for loop joint(s) {', '.join(missing)} "
                             "(give every loop joint, or one set of gains for all)")
        gains = np.array([_joint_gains(stabilization_gains[n], f"stabilization_gains[{n!r}]") for n in names])
        return gains.reshape(nl, 4), np.ones(nl, dtype=int)
    g = _joint_gains(stabilization_gains, "stabilization_gains")
    return np.tile(g, (nl, 1)), np.ones(nl, dtype=int)


def _refuse_universal_loop_joints(mech) -> None:
    """A universal loop-closing joint: the RK4 loop solve holds a loop joint's constrained
    rows as Dojo's (components of Vec(q_rel), rk4.h), and the universal joint's Hooke row
    (core/maximal/euler_joints.h) is not one of them; refused, naming the joint's type.

    Raises:
        SceneError: naming every such joint (file, line and field when the scene is known).
    """
    bad = [j for j in mech.loop_joints if JointType(mech.joints[j].type) == JointType.UNIVERSAL]
    if not bad:
        return
    source = getattr(mech, "source", None)
    problems = []
    for i in bad:
        message = (f"joint {mech.joints[i].name!r} is a universal loop-closing joint; the rk4 integrator's loop solve "
                   "holds Dojo's rotational rows only: use the variational integrator, or make it a tree joint")
        problems.append(source.problem(f"joints.{i}.type", message) if source is not None
                        else Problem(f"mechanism {mech.name!r}", None, f"joints.{i}.type", message))
    raise SceneError(problems)


class Rk4:
    """The core's RK4 integrator for a MinimalModel: its compiled input and scratch.

    Args:
        model: the minimal model (``minimal.build_model``).
        stabilization_gains: see ``resolve_gains``.
    """

    def __init__(self, model: MinimalModel, stabilization_gains="default"):
        mech = model.mech
        _refuse_universal_loop_joints(mech)
        self.model = model
        ri = _core.Rk4Input()
        ri.nb = mech.nb
        ri.body = [tj.body for tj in model.joints]
        ri.placement_quat = np.array([rot_to_quat(tj.placement_rotation) for tj in model.joints]).reshape(-1).tolist()
        ri.nu = mech.nf
        free_start, offsets = [], []
        for tj in model.joints:
            cols = tj.free
            free_start.append(cols.start if cols.stop > cols.start else -1)
            offsets.append(np.asarray(mech.joints[tj.index].orientation_offset, dtype=float))
        ri.free_start = free_start
        ri.floating = [int(tj.floating) for tj in model.joints]
        ri.offset_quat = np.array(offsets).reshape(-1).tolist()
        # loop joints: Dojo's constrained basis rows of each
        tree_of_body = {tj.body: k for k, tj in enumerate(model.joints) if not tj.frame}
        loop_parent, loop_child, pa, pb, off, starts, rot, basis = [], [], [], [], [], [0], [], []
        for j in mech.loop_joints:
            joint = mech.joints[j]
            loop_parent.append(-1 if mech.parent[j] == ORIGIN else tree_of_body[int(mech.parent[j])])
            loop_child.append(tree_of_body[int(mech.child[j])])
            pa.append(mech.parent_vertex[j])
            pb.append(mech.child_vertex[j])
            off.append(np.asarray(joint.orientation_offset, dtype=float))
            for slot in range(6):
                if mech.constrained[j, slot]:
                    rot.append(int(slot >= 3))
                    basis.append(mech.basis[j, slot])
            starts.append(len(rot))
        gains, stabilized = resolve_gains(model, stabilization_gains)
        ri.loop_parent, ri.loop_child = loop_parent, loop_child
        ri.loop_pa = np.array(pa, dtype=float).reshape(-1).tolist()
        ri.loop_pb = np.array(pb, dtype=float).reshape(-1).tolist()
        ri.loop_offset = np.array(off, dtype=float).reshape(-1).tolist()
        ri.loop_row_start = starts
        ri.row_rotational = rot
        ri.row_basis = np.array(basis, dtype=float).reshape(-1).tolist()
        ri.loop_gains = gains.reshape(-1).tolist()
        ri.loop_stabilized = [int(s) for s in stabilized]
        self.core = _core.Rk4Model(model.tree, ri)
        self.data = _core.Rk4Data(self.core)
        self.tree_data = _core.TreeData(model.tree)

    def run(self, q: np.ndarray, v: np.ndarray, t0: float, h: float, n: int, out_q: np.ndarray, out_v: np.ndarray,
            out_z: np.ndarray | None = None, row0: int = 0, inputs: np.ndarray | None = None,
            control: Callable | None = None) -> int:
        """n steps (q, v updated in place) into the outputs' rows (row0 + k) % cap; the steps taken."""
        return _core.rk4_run(self.model.tree, self.tree_data, self.core, self.data, q, v, float(t0), float(h), int(n),
                             inputs, out_q, out_v, out_z, int(row0), control)

    def bodies(self, x) -> np.ndarray:
        """(nb, 13) every body's maximal state [x, v, q, w] at the minimal state x."""
        return _core.rk4_bodies(self.model.tree, self.tree_data, self.core, self.data, _vec(x))

    def loop_errors(self, x) -> np.ndarray:
        """(nl, 2) per loop joint: the distance between its joint points, the constrained rotation error."""
        return _core.rk4_loop_errors(self.model.tree, self.tree_data, self.core, self.data, _vec(x))

    def dynamics(self, x, u=None, t: float = 0.0, tau=None) -> np.ndarray:
        """vdot (nv,) of the integrator's dynamics at x (inputs u (nu,), springs, dampers, loops,
        and generalized forces tau (nv,), a control's torques)."""
        return _core.rk4_dynamics(self.model.tree, self.tree_data, self.core, self.data, _vec(x),
                                  None if u is None else _vec(u), float(t), None if tau is None else _vec(tau))


def _vec(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float).reshape(-1)


def normalize_state(model: MinimalModel, x) -> np.ndarray:
    """A copy of x (nx,) with its quaternions normalised."""
    x = np.array(x, dtype=float).reshape(-1)
    if x.size != model.nx:
        raise ValueError(f"state must have nx = {model.nx} entries, got {x.size}")
    for tj in model.joints:
        if tj.rot == ROT_QUATERNION:
            s = slice(tj.q.start + tj.n_trans, tj.q.stop)
            norm = np.linalg.norm(x[s])
            if not norm > 0:
                raise ValueError(f"joint {tj.name!r}: its quaternion is zero")
            x[s] /= norm
    return x


def step_times(final_time: float, dt: float) -> np.ndarray:
    """RBD's sample times: 0, then ``while t < final_time: t += dt`` (the last may pass
    final_time by up to one step)."""
    if not (math.isfinite(final_time) and final_time >= 0):
        raise ValueError(f"final_time: must be finite and >= 0, got {final_time}")
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt: must be finite and > 0, got {dt}")
    n = int(math.ceil(final_time / dt)) + 2
    ts = np.cumsum(np.concatenate([[0.0], np.full(n, dt)]))  # the same additions as RBD's loop
    count = int(np.searchsorted(ts, final_time, side="left"))  # steps while t < final_time
    return ts[: count + 1]


def simulate(
    model: MinimalModel,
    x0,
    final_time: float,
    control: Callable | None = None,
    dt: float = DEFAULT_DT,
    stabilization_gains="default",
    keep_last: int | None = None,
    max_realtime_rate: float = math.inf,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RigidBodyDynamics.jl's ``simulate``: Munthe-Kaas RK4 from x0 = [q; v] over [0, final_time].

    Args:
        model: the minimal model (``build_model``).
        x0: (nx,) initial state (quaternions are normalised; a locked joint's velocities
            are set to zero, Drake's Lock, and its coordinates held: docs/minimal.md).
        final_time: s; stepping goes on ``while t < final_time`` (RBD's loop).
        control: ``control(torques, t, x)``, called at every RK stage with its time and
            state x = [q; v] (nx,), fills the generalized forces torques (nv,, zeroed
            before each call) that are added to the scene's springs and dampers. None:
            no torques (RBD's zero_torque!); the whole loop then stays in the core.
        dt: the step (RBD's default 1e-4).
        stabilization_gains: loop joints' Baumgarte gains: "default" (RBD's (100, 20)
            for translations and rotations), None (off), (kp, kd) for all, or a dict
            {loop joint: (kp, kd) | ((kp, kd), (kp, kd)) | {"linear": .., "angular": ..}}.
        keep_last: keep only the last N states (RBD's RingBufferStorage); None keeps all.
        max_realtime_rate: at most this many simulated seconds per wall-clock second.

    Returns:
        (ts (T,), qs (T, nq), vs (T, nv)): times and states, the initial one first
        (the last ``keep_last`` of them with keep_last).
    """
    ts = step_times(final_time, dt)
    n = len(ts) - 1
    x = normalize_state(model, x0)
    if keep_last is not None and (int(keep_last) != keep_last or keep_last < 1):
        raise ValueError(f"keep_last: must be an integer >= 1, got {keep_last}")
    if not (max_realtime_rate > 0):
        raise ValueError(f"max_realtime_rate: must be > 0, got {max_realtime_rate}")
    integ = Rk4(model, stabilization_gains)
    x[model.nq:][model.locked_v] = 0.0  # Drake's Lock zeroes a locked joint's velocities (so does the core's step)
    cap = n + 1 if keep_last is None else min(int(keep_last), n + 1)
    qs = np.zeros((cap, model.nq))
    vs = np.zeros((cap, model.nv))
    q = np.ascontiguousarray(x[: model.nq])
    v = np.ascontiguousarray(x[model.nq:])
    qs[0], vs[0] = q, v
    k = 0
    started = time.perf_counter()
    throttled = math.isfinite(max_realtime_rate)
    block = n if not throttled else max(1, int(0.01 * max_realtime_rate / dt))
    while k < n:
        m = min(block, n - k)
        done = integ.run(q, v, k * dt, dt, m, qs, vs, None, row0=k + 1, control=control)
        k += done
        if done < m or not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise FloatingPointError(f"rk4: the state is no longer finite after step {k} (t = {ts[k]:.6g} s); "
                                     "a smaller dt?")
        if throttled:
            ahead = ts[k] / max_realtime_rate - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
    if keep_last is None:
        return ts, qs, vs
    # the ring buffer in time order: rows (n - cap + 1 .. n) % cap
    order = np.arange(n + 1 - cap, n + 1) % cap
    return ts[n + 1 - cap:], qs[order], vs[order]


def loop_joint_errors(model: MinimalModel, x) -> np.ndarray:
    """(nl, 2) per loop-closing joint (``model.loop_joints``): the distance (m) between
    its joint points on the parent and the child, and the largest constrained rotation
    error (rad), at the state (or configuration) x."""
    return Rk4(model, None).loop_errors(x)
