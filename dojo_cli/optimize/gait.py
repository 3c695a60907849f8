"""Kinematic reference gaits for ``costs.reference`` (docs/optimize.md): a quadruped's trot
and a biped's step.

**trot**: a trot as Dojo's quadruped example plans it (its ``quadruped_trajectory``
template): the legs in two diagonal pairs, one pair in stance while the other swings; a
stance foot stays where it is on the ground while the base moves over it, a swing foot goes
forward on an arch; the legs' joint angles at every knot by inverse kinematics of the feet
(``minimal.ik.nearest_ik``, the core's kinematics) with the base level at its initial
height. Unlike Dojo's template (a steady gait from the first knot) this one starts and
ends standing, in the scene's own pose: the first half cycle is a half step (each pair
moves a quarter stride from its stance centre), then full strides, then a half step back
to the standing pose, so that the optimiser starts from the scene's state and the goal is
a standing robot further on. It is a kinematic plan, not a motion the robot can follow
exactly (nothing in it balances the base): the optimiser tracks it as a cost.

**step**: a biped standing on flat feet (several contact points each) takes one step, as
a quasi-static plan: the base moves over the stance foot (and down by ``lower``, the knees
bent), the swing foot goes forward on an arch and lands flat, the base moves forward to
midway between the feet. Both feet are posed whole (every contact point of a foot at its
target: the leg's angles by Gauss-Newton on the stacked points, ``feet_ik``), so the feet
stay flat and level. Start it with the knees bent: from a straight knee (a singular leg)
the feet's inverse kinematics has no first-order way to lower the base.

Knots 0..T (T = half_cycles * steps, or the sum of the step's phases); velocities are the
knots' backward differences (q_k - q_{k-1}) / h, the midpoint velocity into knot k as a
run stores it (zero at knot 0: the scene starts at rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.minimal.dynamics import kinematics, kinematics_jacobian
from dojo_cli.minimal.ik import nearest_ik
from dojo_cli.minimal.model import build_model
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.initial import initial_state


@dataclass
class Gait:
    """A reference gait at knots 0..T.

    Attributes:
        time: (T+1,) s.
        names: the table's columns: ``time``, then the task's coordinate names
            (``joints.NAME``, ``joints.NAME.velocity``, ``joints.NAME[i]`` for a joint with several).
        table: (T+1, len(names)) one row per knot.
        feet: (T+1, n_feet, 3) the planned foot (contact sphere centre) positions, world frame.
        base: (T+1, 3) the planned base (floating joint) position, world frame.
        swing: (T+1, n_feet) whether each foot is in the air at each knot.
    """

    time: np.ndarray
    names: list[str]
    table: np.ndarray
    feet: np.ndarray
    base: np.ndarray
    swing: np.ndarray

    def write_csv(self, path) -> None:
        """The table as CSV with a header of names, every digit (a task's ``costs.reference.file``)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(",".join(self.names) + "\n")
            for row in self.table:
                f.write(",".join(repr(float(v)) for v in row) + "\n")


def trot(mech: Mechanism, pairs: list[tuple[str, str]], half_cycles: int, steps: int, stride: float,
         lift: float) -> Gait:
    """A trot from standing to standing (module docstring).

    Args:
        mech: a floating-base mechanism standing in its initial state; its feet are contacts.
        pairs: the two diagonal pairs of foot contacts, e.g. [("FR_foot", "RL_foot"), ("FL_foot", "RR_foot")];
            the first pair swings first.
        half_cycles: >= 2: a start half step, half_cycles - 2 full strides, a stop half step.
        steps: knots per half cycle (one swing).
        stride: m, how far a foot moves in a full swing (the base advances half of it per half
            cycle, a quarter in the start and stop ones): the base ends (half_cycles - 1) stride / 2 ahead.
        lift: m, the swing arch's height.
    """
    if half_cycles < 2 or steps < 1:
        raise ValueError(f"a trot needs half_cycles >= 2 (a start and a stop step) and steps >= 1, "
                         f"got {half_cycles} and {steps}")
    if len(pairs) != 2 or any(len(p) != 2 for p in pairs):
        raise ValueError(f"a trot needs two pairs of feet, got {pairs}")
    feet = [f for pair in pairs for f in pair]
    pair_of = [i for i, pair in enumerate(pairs) for _ in pair]
    model = build_model(mech, kinematics_points=feet)
    if not model.is_floating:
        raise ValueError("a trot needs a floating base")
    x0 = model.state_from_maximal(initial_state(mech))
    q = x0[: model.nq].copy()
    stance = kinematics(model, x0).reshape(-1, 3) - q[0:3]  # each foot's stance centre, from the base
    quarter = stride / 4.0
    T = half_cycles * steps
    base = np.tile(q[0:3], (T + 1, 1))
    foot = np.tile(stance + q[0:3], (T + 1, 1, 1))
    swing = np.zeros((T + 1, len(feet)), dtype=bool)
    for c in range(half_cycles):
        moving = c % 2  # the pair that swings in this half cycle
        stop = c == half_cycles - 1
        advance = quarter if c in (0, half_cycles - 1) else 2 * quarter
        k0 = c * steps
        for j in range(1, steps + 1):
            s = j / steps
            k = k0 + j
            base[k, 0] = base[k0, 0] + advance * s
            for i in range(len(feet)):
                if pair_of[i] != moving:
                    foot[k, i] = foot[k0, i]  # stance: where it stands
                    continue
                # swing: from where it stands to a quarter stride ahead of its stance centre
                # under the base at the end of the half cycle (the centre itself at the stop)
                start = foot[k0, i, 0]
                end = base[k0, 0] + advance + stance[i, 0] + (0.0 if stop else quarter)
                foot[k, i, 0] = start + (end - start) * 0.5 * (1.0 - np.cos(np.pi * s))
                swing[k, i] = j < steps
                if swing[k, i]:  # (at j = steps it has landed: sin(pi) is 1e-16, not 0)
                    foot[k, i, 2] = foot[k0, i, 2] + lift * np.sin(np.pi * s)
    Q = np.empty((T + 1, model.nq))
    for k in range(T + 1):
        q = q.copy()
        q[0:3] = base[k]
        Q[k] = nearest_ik(model, q, foot[k])
    names, columns = _coordinate_columns(mech, model, Q, feet)
    time = np.arange(T + 1) * mech.timestep
    return Gait(time=time, names=["time", *names], table=np.column_stack([time, *columns]), feet=foot,
                base=base, swing=swing)


def _coordinate_columns(mech: Mechanism, model, Q: np.ndarray, feet: list[str]) -> tuple[list[str], list[np.ndarray]]:
    """The task's coordinate columns of configurations Q (T+1, nq) of a level base: the floating
    joint's [x, y, z, 0, 0, 0] and each scalar joint's angle, with backward-difference velocities;
    then the positions of the bodies carrying the feet (``bodies.NAME.position[i]``, their centres
    of mass, from the core's minimal -> maximal map of those coordinates): a task may track the
    feet themselves."""
    from dojo_cli.physics.coordinates import interleave_minimal, minimal_to_maximal
    h = mech.timestep

    def rate(col: np.ndarray) -> np.ndarray:
        out = np.zeros_like(col)
        out[1:] = np.diff(col) / h
        return out

    names, columns = [], []
    for joint in mech.joints:
        idx = [i for i, n in enumerate(model.config_names) if n == joint.name or n.startswith(f"{joint.name}:")]
        if not idx:
            continue
        if len(idx) == 1:
            names += [f"joints.{joint.name}", f"joints.{joint.name}.velocity"]
            columns += [Q[:, idx[0]], rate(Q[:, idx[0]])]
            continue
        # the floating base: position and a level orientation (the rotation's minimal coordinates 0)
        coords = np.zeros((len(Q), 6))
        coords[:, 0:3] = Q[:, idx[0:3]]
        names += [f"joints.{joint.name}[{i}]" for i in range(6)]
        names += [f"joints.{joint.name}.velocity[{i}]" for i in range(6)]
        columns += list(coords.T) + [rate(c) for c in coords.T]
    theta = np.empty((len(Q), mech.nf))
    rates = np.empty((len(Q), mech.nf))
    by_name = dict(zip(names, columns))
    for j, joint in enumerate(mech.joints):
        r = np.arange(mech.nf)[mech.joint_free_range[j]]
        for i, c in enumerate(r):
            key = f"joints.{joint.name}" if len(r) == 1 else f"joints.{joint.name}[{i}]"
            theta[:, c] = by_name[key]
            rates[:, c] = by_name[key.replace(joint.name, f"{joint.name}.velocity", 1) if len(r) == 1
                                  else f"joints.{joint.name}.velocity[{i}]"]
    Z = np.stack([minimal_to_maximal(mech, interleave_minimal(mech, theta[k], rates[k])) for k in range(len(Q))])
    carriers = []
    for f in feet:
        b = next(c.body for c in mech.contacts if c.name == f)
        if b not in carriers:
            carriers.append(b)
    for b in carriers:
        names += [f"bodies.{mech.bodies[b].name}.position[{i}]" for i in range(3)]
        columns += [Z[:, 13 * b + i] for i in range(3)]
    return names, columns


# Gauss-Newton of feet_ik: converged when every point is within this of its target (m), in at
# most this many iterations (a leg moved a few centimetres from the last knot takes 3-5).
FEET_IK_TOLERANCE = 1e-12
FEET_IK_MAX_ITERATIONS = 50
# Largest change of one coordinate in one iteration (rad or m), as minimal.ik.IK_MAX_STEP.
FEET_IK_MAX_STEP = 0.3


def feet_ik(model, q: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """q (nq,) with the joints that move ``model.kinematics_points`` changed so that every point
    is at its target ((np, 3), world frame), the base held: Gauss-Newton on all the points at
    once (a flat foot's contact points together pose the foot, which minimal.ik's one chain per
    point cannot), from q. A ValueError when it does not converge (a target out of reach)."""
    x = np.concatenate([q, np.zeros(model.nv)])
    jac = kinematics_jacobian(model, x)[:, : model.nq]
    floating = 7 if model.is_floating else 0
    cols = floating + np.flatnonzero(np.any(jac[:, floating:] != 0.0, axis=0))
    goal = np.asarray(targets, dtype=float).reshape(-1)
    for _ in range(FEET_IK_MAX_ITERATIONS):
        err = kinematics(model, x) - goal
        if np.max(np.abs(err)) < FEET_IK_TOLERANCE:
            return x[: model.nq]
        J = kinematics_jacobian(model, x)[:, cols]
        dq = np.linalg.lstsq(J, err, rcond=None)[0]
        x[cols] -= dq * min(1.0, FEET_IK_MAX_STEP / max(np.max(np.abs(dq)), 1e-300))
    raise ValueError(f"feet_ik: the points are {np.max(np.abs(err)):.2e} m from their targets after "
                     f"{FEET_IK_MAX_ITERATIONS} iterations (out of reach?)")


def step(mech: Mechanism, stance: list[str], swing: list[str], length: float, lift: float, lower: float,
         phases: tuple[int, int, int, int]) -> Gait:
    """A biped's step from standing to standing (module docstring).

    Args:
        mech: a floating-base biped standing level in its initial state.
        stance, swing: the contact points of the foot that stays and of the one that steps.
        length: m, how far the swing foot moves forward (the base moves half of it).
        lift: m, the swing arch's height.
        lower: m, how far the base goes down while over the stance foot (knees bent).
        phases: knots of (the base moving over the stance foot, the swing, the base moving to
            midway between the feet, standing still).
    """
    if min(phases) < 1:
        raise ValueError(f"every phase needs at least one knot, got {phases}")
    feet = [*stance, *swing]
    model = build_model(mech, kinematics_points=feet)
    if not model.is_floating:
        raise ValueError("a step needs a floating base")
    x0 = model.state_from_maximal(initial_state(mech))
    q = x0[: model.nq].copy()
    start = kinematics(model, x0).reshape(-1, 3)
    ns = len(stance)
    T = sum(phases)
    base = np.tile(q[0:3], (T + 1, 1))
    foot = np.tile(start, (T + 1, 1, 1))
    moving = np.zeros((T + 1, len(feet)), dtype=bool)
    over = np.array([q[0], start[:ns, 1].mean(), q[2] - lower])  # over the stance foot, lowered
    landed = start.copy()
    landed[ns:, 0] += length
    midway = np.array([q[0] + 0.5 * length, 0.5 * (start[:ns, 1].mean() + start[ns:, 1].mean()), q[2] - lower])
    k = 0
    for phase, n in enumerate(phases):
        b0 = base[k].copy()
        for j in range(1, n + 1):
            s = j / n
            w = 0.5 * (1.0 - np.cos(np.pi * s))
            base[k + j] = b0
            if phase == 0:
                base[k + j] = b0 + (over - b0) * w
            elif phase == 1:
                foot[k + j, ns:] = start[ns:] + (landed[ns:] - start[ns:]) * w
                if j < n:
                    foot[k + j, ns:, 2] += lift * np.sin(np.pi * s)
                    moving[k + j, ns:] = True
            elif phase == 2:
                base[k + j] = b0 + (midway - b0) * w
            if phase >= 2:
                foot[k + j, ns:] = landed[ns:]
        k += n
    Q = np.empty((T + 1, model.nq))
    for k in range(T + 1):
        q = q.copy()
        q[0:3] = base[k]
        q = feet_ik(model, q, foot[k])
        Q[k] = q
    names, columns = _coordinate_columns(mech, model, Q, feet)
    time = np.arange(T + 1) * mech.timestep
    return Gait(time=time, names=["time", *names], table=np.column_stack([time, *columns]), feet=foot,
                base=base, swing=moving)
