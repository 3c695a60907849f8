"""Which robots stand on legs, and which bodies are their feet: decided by structure.

A scene's tree (its joints, root to leaves) and its bodies' poses in a standing pose are
all it reads: no names, and no collision geometry (a file may have none: human.urdf,
alexander_v1.lowerBodyOnly.urdf). Along a direction ``down`` (a unit vector in the frame
of the poses):

- the *support* is the leaves of the body tree (the bodies with no child: ends of chains)
  whose centres of mass lie within ``SUPPORT_FRACTION`` of the base's height of the lowest
  leaf, the base's height being how far the floating base's centre of mass lies above
  that lowest leaf (a robot whose base is at or below its leaves rests on its base: an arm
  lying on the ground, a drone, a hand on its palm);
- a *leg* is the chain of joints from a support leaf up to where another support leaf's
  chain joins it (a quadruped's trunk, a humanoid's pelvis below its waist) or the base,
  whose joints can lift that leaf: the largest vertical excursion of the leaf's centre of
  mass that one joint of the chain gives by turning (the radius of the circle it moves on,
  times how far that circle's plane is from horizontal: |r_perp| sqrt(1 - (a . down)^2)
  for a revolute axis a through the joint, r_perp the leaf's offset perpendicular to the
  axis) or sliding (its travel times |a . down|) is at least ``LEG_LIFT_FRACTION`` of the
  base's height, and at most 1 / ``LIFT_HOLD_FRACTION`` times it (legs hold the base up;
  arms hanging beside a base on the ground do not). A wheel turns about its own centre and a
  caster swivels about a vertical axis: neither lifts anything (0 on every wheel and
  caster of the collection), so a wheeled base is not legged however many joints lead
  to its wheels, while legs ending in wheels (centauro) lift them by their hips and knees;
- the robot is *legged* with at least ``MIN_LEGS`` legs (a monopod cannot stand still;
  Gymnasium's Hopper has one leg), and its *feet* are its legs' support leaves.

The direction: ``-z`` of the file (REP 103, the ROS convention: z up). A file written with
another axis up (OpenSim's and glTF's y up: human.urdf lies along y at its zero pose) is
found when ``-z`` gives no legs: the axis along which the robot is tallest in the pose,
if it is not z, with the sign that gives legs (the larger base height if both do).
``legs_of`` says which, and why a robot is or is not legged, in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Leaves whose centre of mass is within this fraction of the base's height of the lowest
# leaf support the robot: both feet of a humanoid in half-sitting (level within mm), the
# four of a quadruped; a hand hanging at a humanoid's thigh is far higher (0.3 of the
# base's height on talos, icub).
SUPPORT_FRACTION = 0.1

# A leg's joints lift its foot by at least this fraction of the base's height (the
# collection: 0.8 to 1.1 on its quadrupeds, bipeds and centauro's wheeled legs; 0 on every
# wheel and caster, which turn about their own centre or a vertical axis).
LEG_LIFT_FRACTION = 0.5

# ... and at most 1 / LIFT_HOLD_FRACTION times it: legs hold the base up (the collection's
# 0.8 to 1.1, Gymnasium's ant sprawling 2.0), a robot lying on the ground does not
# (Gymnasium's humanoidstandup: its arms lift 0.23 m, its base is 0.01 m up).
LIFT_HOLD_FRACTION = 0.25

# A robot stands on legs with at least this many (one leg cannot stand still: a hopper).
MIN_LEGS = 2

# Movable joint kinds and the axes each turns about (in its joint frame), for the lift.
_SPHERICAL = ("spherical", "ball", "gimbal")

# The directions tried, base frame: the file's -z first (REP 103).
DOWN = np.array([0.0, 0.0, -1.0])


@dataclass
class Leg:
    """One leg: the top joint of its chain (``branch``), the support leaf at its end
    (``foot``), its movable joints and the lift (m) of its best joint."""

    branch: str
    foot: str
    joints: int
    lift: float


@dataclass
class Legs:
    """What ``legs_of`` found.

    Attributes:
        down: (3,) the direction of gravity in the poses' frame (unit).
        base_height: the base's centre of mass above the lowest leaf's, along -down (m).
        support: the support leaves (lowest first).
        legs: the legs (one per branch holding support leaves).
        reason: one line: why the robot is or is not legged.
    """

    down: np.ndarray
    base_height: float
    support: list[str] = field(default_factory=list)
    legs: list[Leg] = field(default_factory=list)
    reason: str = ""

    @property
    def legged(self) -> bool:
        return len(self.legs) >= MIN_LEGS

    @property
    def feet(self) -> list[str]:
        return sorted(leg.foot for leg in self.legs)


def axis_name(down: np.ndarray) -> str:
    """"-z", "+y", ...: the coordinate axis nearest the direction ``down`` (3,)."""
    k = int(np.argmax(np.abs(down)))
    return ("+" if down[k] > 0 else "-") + "xyz"[k]


def _matrix_from_quaternion(q) -> np.ndarray:
    from dojo_cli.math.quaternion import matrix_from_quaternion

    return matrix_from_quaternion(np.asarray(q, float))


def _joint_lift(joint: dict, poses: dict, point: np.ndarray, down: np.ndarray) -> float:
    """How far one joint lifts ``point`` (3,) (world) along -down by its motion (m)."""
    kind = joint["type"]
    if joint["parent"] == "origin" or kind in ("fixed", "floating"):
        return 0.0
    prot, ppos = poses[joint["parent"]]
    frame = prot @ _matrix_from_quaternion(joint.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
    pivot = ppos + prot @ np.asarray(joint.get("parent_vertex", [0.0, 0.0, 0.0]), float)
    r = point - pivot
    if kind == "prismatic":
        # the axis is measured in the parent body frame (the engine's convention)
        a = prot @ np.asarray(joint["axis"], float)
        a = a / np.linalg.norm(a)
        limits = joint.get("limits")
        travel = (limits["upper"][0] - limits["lower"][0]) if limits else math.inf
        return abs(float(a @ down)) * travel
    if kind in _SPHERICAL:
        return float(np.linalg.norm(r))  # turns the point over its whole sphere
    if kind in ("revolute", "universal"):
        axes = [joint["axis"]] if kind == "revolute" else joint["axes"]
        best = 0.0
        for axis in axes:
            a = frame @ np.asarray(axis, float)
            a = a / np.linalg.norm(a)
            r_perp = r - a * float(a @ r)
            best = max(best, float(np.linalg.norm(r_perp)) * math.sqrt(max(0.0, 1.0 - float(a @ down) ** 2)))
        return best
    return 0.0  # the other kinds (planar, cylindrical, ...) are not leg joints here


def legs_along(joints: list[dict], poses: dict, down: np.ndarray) -> Legs:
    """The legs of a floating robot with gravity along ``down`` (module doc).

    Args:
        joints: the scene's joints, the floating base's first (its child is the base).
        poses: body -> ((3, 3) rotation, (3,) centre of mass), world, in the standing pose.
        down: (3,) unit vector, world.
    """
    down = np.asarray(down, float)
    base = joints[0]["child"]
    parent_joint = {j["child"]: j for j in joints}
    parents = {j["parent"] for j in joints}
    leaves = [j["child"] for j in joints if j["child"] not in parents and j["child"] in poses]
    height = {b: -float(poses[b][1] @ down) for b in poses}
    where = axis_name(down)
    if not leaves or leaves == [base]:
        return Legs(down, 0.0, reason=f"not legged: no body below the base {base!r}")
    lowest = min(height[b] for b in leaves)
    base_height = height[base] - lowest
    support = sorted((b for b in leaves if height[b] <= lowest + SUPPORT_FRACTION * max(base_height, 0.0)),
                     key=lambda b: height[b])
    found = Legs(down, base_height, support)
    if base_height <= 0.0:
        found.reason = (f"not legged (down {where}): its base {base!r} is not above its lowest leaf "
                        f"{support[0]!r} ({base_height:+.3f} m): it rests on its base")
        return found
    def ancestors(body: str) -> set[str]:
        out = set()
        while body in parent_joint and body != base:
            body = parent_joint[body]["parent"]
            out.add(body)
        return out

    above = {foot: ancestors(foot) for foot in support}
    legs: dict[str, Leg] = {}
    for foot in support:
        # its leg: the chain from the foot up to where another support leaf's chain joins
        # (a humanoid's pelvis below a waist, a quadruped's trunk) or the base
        joins = set().union(*(above[g] | {g} for g in support if g != foot)) if len(support) > 1 else set()
        b, lift, movable, branch = foot, 0.0, 0, None
        while b != base and b in parent_joint and (b == foot or b not in joins):
            j = parent_joint[b]
            if j["type"] not in ("fixed", "floating"):
                movable += 1
                lift = max(lift, _joint_lift(j, poses, poses[foot][1], down))
            branch, b = j["name"], j["parent"]
        if branch is None or b not in poses and b != base:
            continue
        if branch not in legs or legs[branch].lift < lift:
            legs[branch] = Leg(branch, foot, movable, lift)
    need = LEG_LIFT_FRACTION * base_height
    # a leg holds the base up: it lifts its foot by the base's height or so, not by many
    # times it (a humanoid lying on the ground, its arms beside its trunk: 0.23 m, 0.01 m)
    holds = [leg for leg in legs.values() if leg.lift * LIFT_HOLD_FRACTION <= base_height]
    found.legs = sorted((leg for leg in holds if leg.lift >= need), key=lambda leg: leg.foot)
    short = sorted((leg for leg in holds if leg.lift < need), key=lambda leg: leg.foot)
    lying = sorted((leg for leg in legs.values() if leg not in holds), key=lambda leg: leg.foot)
    said = f"base {base_height:.3f} m above its lowest leaves (down {where}); "
    if found.legged:
        found.reason = (f"legged: {len(found.legs)} legs, feet {', '.join(found.feet)}; " + said
                        + f"each leg lifts its foot >= {min(leg.lift for leg in found.legs):.3f} m "
                        f"(>= {LEG_LIFT_FRACTION:g} x the base height)")
    else:
        parts = []
        if found.legs:
            parts.append(f"{len(found.legs)} leg ({found.legs[0].foot}, lifts {found.legs[0].lift:.3f} m), "
                         f"{MIN_LEGS} needed")
        if short:
            parts.append(f"{', '.join(leg.foot for leg in short)} lifted only "
                         f"{max(leg.lift for leg in short):.3f} m by their joints (< {LEG_LIFT_FRACTION:g} x the base "
                         f"height: they cannot hold it up, as wheels or casters cannot)")
        if lying:
            parts.append(f"{', '.join(leg.foot for leg in lying)} lifted up to {max(leg.lift for leg in lying):.3f} m, "
                         f"more than {1 / LIFT_HOLD_FRACTION:g} x the base height: they do not hold it up (arms "
                         "beside a base on the ground)")
        if not legs:
            parts.append(f"its lowest leaves {', '.join(support)} hang from no branch below the base")
        found.reason = "not legged: " + said + "; ".join(parts)
    return found


def legs_of(joints: list[dict], poses: dict) -> Legs:
    """The legs of a floating robot in the standing pose ``poses`` (module doc): along the
    file's -z, else along the axis of the base frame on which it is tallest."""
    first = legs_along(joints, poses, DOWN)
    if first.legged:
        return first
    rot = poses[joints[0]["child"]][0]  # the base frame's axes, world
    centres = np.array([p for _, p in poses.values()])
    extent = [float(np.ptp(centres @ rot[:, k])) for k in range(3)]
    tallest = int(np.argmax(extent))
    if tallest == 2 or extent[tallest] <= extent[2]:
        return first
    tried = [legs_along(joints, poses, sign * rot[:, tallest]) for sign in (-1.0, 1.0)]
    legged = [t for t in tried if t.legged]
    if not legged:
        return first
    best = max(legged, key=lambda t: t.base_height)
    best.reason += (f"; the file's z is not up (it is {extent[tallest]:.2f} m tall along {'xyz'[tallest]}, "
                    f"{extent[2]:.2f} m along z; no legs along -z)")
    return best
