"""Contacts of an imported model, by MuJoCo's collision filter: which geom pairs collide
(``contype``/``conaffinity``, welds, ``filterparent``, ``<exclude>``), each moving geom against
the world's planes and against the other moving bodies' geoms as the collision table pairs
them (an ellipsoid or mesh as its reduced convex hull); and a model that starts inside the
floor lifted out of it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.scene.importing.messages import listed, recovery_time_text
from dojo_cli.scene.importing.scene_data import contact_distance, plain_vector, shape_of
from dojo_cli.scene.mjcf.elements import _Body, _Geom
from dojo_cli.scene.mjcf.options import MjcfImport, MjcfOptions
from dojo_cli.scene.mjcf.reader import _Reader
from dojo_cli.scene.mjcf.rotations import _quaternion_from_matrix
from dojo_cli.solver.status import SolverStatus


# Contacts of shape pairs join a step's solve only within this of touching (m), as
# import-urdf's --contacts collision (docs/physics.md, "Contact margins"). Not MuJoCo's geom
# margin, which moves the contact surface (_pair_margin).
CONTACT_MARGIN = 0.01
# Shapes whose contact surface a margin moves exactly by a larger radius (the shape's points
# within that radius: a Minkowski sum with a ball); a box or cylinder's is not.
_ROUNDED = ("sphere", "capsule", "hull")
# An ellipsoid or mesh collides as the convex hull of at most this many points (each a contact).
HULL_VERTICES = 32
# Points sampled on an ellipsoid's surface before the hull reduction.
ELLIPSOID_SAMPLES = 16
# A contact may start this far inside (m): MuJoCo's soft contacts settle a few mm in; a model
# saved from a MuJoCo run starts there, and the first step pushes it out.
PENETRATION_TOL = 0.005
# A body inside a half-space is lifted (along world z) only when the half-space's normal
# rises at least this much: a floor or a slope, not a wall.
_LIFTABLE_NORMAL_Z = 0.5


def _place_initial_overlaps(reader: _Reader, scene: dict, result: MjcfImport) -> None:
    """A contact whose shapes overlap by more than PENETRATION_TOL at the start: the pose the
    scene starts from (its joints' ``initial`` positions: qpos0, or the keyframe's qpos).

    MuJoCo's soft contacts let a model begin inside the floor and push it out: Gymnasium's
    HumanoidStandup starts with its arms 3.6 cm in, and MuJoCo's contact forces lift them
    out in its first 60 ms (its root rising 1.7 cm on the way) before the body settles.
    Hard contacts give no first step from there. So a body inside the floor (a half-space
    whose normal has an upward component) that hangs from a free joint is placed: its
    tree's free root is lifted by the largest depth (over the normal's z) and a note says
    by how much and why; it then drops that far. Started inside the floor instead, the
    solve at t = 0 fails. A pair whose shapes hold a point inside both that the joints
    between their bodies keep fixed (_held_point) overlaps whatever they do: left out, with
    one warning. Other overlaps (two bodies inside each other, a body fixed to the world)
    start as they are: when the first step from the start converges and so does every step of
    the limp run while they come out (_steps_out), with one warning naming
    them (the contacts' recovery eases them out as MuJoCo's contacts do); when a step does
    not, the import refuses them (a problem naming them and the step), or with
    drop_unsupported leaves them out with one warning."""
    from dojo_cli.model.collisions import GROUND, UnsupportedPair, body_pair_contacts, half_space_contacts

    contacts, bodies, joints = scene["contacts"], scene["bodies"], scene["joints"]
    mech, z = _start_state(reader, scene)
    poses = {b.name: (z[i, :3].copy(), z[i, 6:10].copy()) for i, b in enumerate(mech.bodies)}
    index = {b.name: i for i, b in enumerate(mech.bodies)}

    # each body's tree root, where it is a free joint to the world (the joint lifted)
    parent_joint = {j["child"]: j for j in joints}
    roots: dict[str, str] = {}
    for b in bodies:
        j = parent_joint.get(b["name"])
        while j is not None and j["parent"] != "origin":
            j = parent_joint.get(j["parent"])
        if j is not None and j["type"] == "floating":
            roots[b["name"]] = j["name"]
    lifts: dict[str, dict] = {}
    held: list[tuple[dict, str]] = []  # pairs no motion separates (_held_point), with what the warning says
    overlaps: list[tuple[dict, str]] = []  # (contact, what the warning says) more than PENETRATION_TOL inside
    gaps: dict[int, float] = {}  # id(contact): its shapes' distance (m) at the start, before any lift
    in_band: list[str] = []  # contacts that start inside their margin's band (_pair_margin)
    # the contacts not lifting their tree: (contact, depth (m), its normal's z, the free root that
    # a floor lifts it with, or None)
    found: list[tuple[dict, float, float, str | None]] = []

    world = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))
    for c in contacts:
        if c["body"] not in poses:
            continue  # a split-hinge link (no geoms) or a merged body
        against = c["against"]
        try:
            if isinstance(against, dict) and "body" in against:
                if against["body"] not in poses:
                    continue
                other = {"type": against["shape"], "position_offset": against["offset"],
                         "orientation_offset": against["orientation_offset"],
                         **{k: against[k] for k in ("radius", "height", "size", "vertices") if k in against}}
                made = body_pair_contacts("", 0, shape_of(c["shape"]), 1, shape_of(other))
                names = (c["body"], against["body"])
            else:
                half = GROUND if against == "ground" else {"normal": np.asarray(against["normal"]), "point": np.asarray(against["point"])}
                made = half_space_contacts("", 0, shape_of(c["shape"]), half, rim_points=c.get("rim_points", 3))
                names = (c["body"], None)
        except UnsupportedPair:
            continue
        depth = 0.0
        for k in made:
            own = names[k.body]
            other_pose = world if k.other < 0 or names[k.other] is None else poses[names[k.other]]
            distance = contact_distance(k, poses[own], other_pose)
            depth = max(depth, -distance)
            gaps[id(c)] = min(gaps.get(id(c), math.inf), distance)
        if names[1] is not None and depth > _GEOMETRY_TOL:
            fixed = _held_point(mech, z, index[names[0]], c["shape"], index[names[1]], other)
            if fixed is not None:
                moving = [j.name for j in _joints_between(mech, index[names[0]], index[names[1]]) if j.type != "fixed"]
                file, line = reader.contact_lines.get(c["name"], (reader.file, None))
                held.append((c, f"{c['name']} {fixed[1] * 100:.3g} cm deep at "
                                f"joint{'s' if len(moving) > 1 else ''} {', '.join(map(repr, moving))} ({Path(file).name}:{line})"))
                continue
        up = 0.0
        if not (isinstance(against, dict) and "body" in against):
            up = 1.0 if against == "ground" else float(np.asarray(against["normal"], float)[2] / np.linalg.norm(against["normal"]))
        root = roots.get(c["body"])
        floor = up > _LIFTABLE_NORMAL_Z and root is not None  # lifted with its tree
        if depth > PENETRATION_TOL and floor:
            lift = lifts.setdefault(root, {"height": 0.0, "contacts": []})
            lift["height"] = max(lift["height"], depth / up)
            lift["contacts"].append(c["name"])
            continue
        found.append((c, depth, up, root if floor else None))
    for c, depth, up, root in found:
        against = c["against"]
        if root in lifts:
            depth -= lifts[root]["height"] * up
        margin = reader.contact_margins.get(c["name"], (0.0, ""))
        if depth > 0.0 and margin[0] > 0.0:
            # inside its margin's band: its surface starts at the shapes' distance (no less than 0)
            cut = min(depth, margin[0])
            _move_surface(c, margin[1], cut)
            reader.contact_margins[c["name"]] = (margin[0] - cut, margin[1])
            depth -= cut
            in_band.append(c["name"])
        if depth <= PENETRATION_TOL:
            continue
        what = "the floor" if up > 0.0 or not (isinstance(against, dict) and "body" in against) else f"body {against['body']!r}"
        file, line = reader.contact_lines.get(c["name"], (reader.file, None))
        overlaps.append((c, f"{c['name']} {depth * 100:.3g} cm inside {what} ({Path(file).name}:{line})"))
    if held:
        # MuJoCo keeps such a pair (filterparent spares a parent in the world's weld) and its soft
        # contact pushes against the joint for ever: through the held point itself where the
        # shapes meet end to end (dm_control's model_with_ball_joints.xml, whose run with the pair
        # excluded is the same to 1e-14 m), else with a torque about it that turns the bodies to
        # where the overlap is least; a hard contact that can never be satisfied gives no step
        # (all 500 of that file's steps failed)
        gone = {id(c) for c, _ in held}
        contacts[:] = [c for c in contacts if id(c) not in gone]
        if not contacts:
            del scene["contacts"]
        reader.warn(reader.file, None, "contacts",
                    f"{len(held)} contact{'s' if len(held) > 1 else ''} left out: the two shapes hold a point inside both "
                    "that the joints between their bodies keep fixed (a ball joint's anchor, a point of a hinge's axis), "
                    "so no motion separates them (MuJoCo's soft contact pushes against the joint for ever; a hard contact "
                    "there has no step): " + listed([what for _, what in held], 6))
    if in_band:
        # MuJoCo's soft contact pushes such shapes apart to their margin over its first steps,
        # or presses against the joints that hold them (Gymnasium's Pusher: its object on two
        # slides stands on the table, 4 mm inside the pair's margin); a hard contact inside its
        # surface that the joints hold there gives no step (every step of the Pusher failed)
        result.notes.append(
            f"{len(in_band)} contact{'s start' if len(in_band) > 1 else ' starts'} within the geoms' margin of touching, "
            "the contact surface placed where the shapes are (MuJoCo pushes them out to the margin, or presses "
            f"against the joints that hold them): {listed(in_band, 4)}")
    by_name = {j["name"]: j for j in joints}
    for root, lift in lifts.items():
        joint = by_name[root]
        initial = joint.setdefault("initial", {})
        position = list(initial.get("position", [0.0] * 6))
        position[2] += lift["height"]
        initial["position"] = position
        names = lift["contacts"]
        result.notes.append(
            f"lifted {joint['child']!r} (free joint {root!r}) by {lift['height'] * 100:.3g} cm: "
            f"{len(names)} contact{'s' if len(names) > 1 else ''} ({listed(names, 4)}) "
            "started inside the floor, which MuJoCo's soft contacts allow and hard contacts do not; it drops that far")
    if not overlaps:
        return
    # MuJoCo pushes such overlaps apart over its first steps, and so do our contacts, over the
    # same time constant (core maximal/recovery.h: the gap row allows a decaying penetration;
    # HumanoidStandup's hands 1.35 cm in its hips come out, every step converging). Whether the
    # joints let them is the first step's to say, tried here, so that a scene
    # with no first step is told at import, not run through failed steps (dm_control's Jaco,
    # robot_arm.xml, folded through itself at qpos0 with 11 pairs 1.5-6 cm deep: all 500 of
    # its steps failed). The step's solve starts with the contacts within their margin (core
    # maximal/margins.h; the others join only if its solution reaches them): it is tried with
    # those, and with every contact a lift may have brought nearer or whose distance is
    # unknown, so a large model's far contacts are not compiled for it (HumanoidStandup's
    # import: 16 ms more, not 150)
    lift = max((v["height"] for v in lifts.values()), default=0.0)
    near = [c for c in contacts if gaps.get(id(c), -math.inf) <= c["margin"] + lift]
    status, when = _steps_out(reader, {**scene, "contacts": near})
    listing = listed([what for _, what in overlaps], 6)
    if status is SolverStatus.SUCCESS:
        reader.warn(reader.file, None, "contacts",
                    f"{len(overlaps)} contact{'s' if len(overlaps) > 1 else ''} start inside another body by more than "
                    f"{PENETRATION_TOL * 1000:g} mm at the initial pose, pushed apart over {recovery_time_text()} "
                    "as MuJoCo's soft contacts push them: " + listing)
        return
    why = (f"{len(overlaps)} contact{'s' if len(overlaps) > 1 else ''} start inside another body by more than "
           f"{PENETRATION_TOL * 1000:g} mm at the initial pose, and {when} ({status.value}: {status.message}; "
           "no step takes them out, where MuJoCo's soft contacts press against what holds them): " + listing)
    if not reader.options.drop_unsupported:
        reader.problem(reader.file, None, "contacts", why + "; start from a keyframe where they are apart (--keyframe), "
                       "or import without them (--drop-unsupported)")
        return
    # MoveIt Setup Assistant's rule for a robot's links in collision at its default pose
    # (import-urdf --self-collision): such pairs are left out
    gone = {id(c) for c, _ in overlaps}
    contacts[:] = [c for c in contacts if id(c) not in gone]
    if not contacts:
        del scene["contacts"]
    reader.warn(reader.file, None, "contacts", f"left out (--drop-unsupported): {why}")


# How long the import follows overlapping contacts out (_steps_out): the recovery's time
# constants (core maximal/recovery.h: T = max(0.02 s, 2 h); after 10 T a violation is gone),
# and at most this many steps
_RECOVERY_CHECK_T = 10.0
_RECOVERY_CHECK_MAX_STEPS = 250


def _steps_out(reader: _Reader, scene: dict) -> tuple[SolverStatus, str]:
    """Whether the scene's overlaps come out, limp (no actuators), from its start state (the
    builder's initial state, its velocities at t = 0 taken as the step's): the status of the
    first step that fails, and which step it is ("the first step from it fails", "step k of
    their way out fails"), or SUCCESS.

    The first step is tried alone first, with the core's default solver options (the run's
    first step up to the midpoint velocities, simulation.initial, and its inputs). It asks
    little of a pair the joints hold inside each other (the contacts' recovery allows nearly
    all of its depth), the later ones more: so the limp run is then followed for 10 of the
    recovery's time constants (dm_control's CMU humanoid V2020, its hip and thigh capsules
    1.3 cm inside each other, converged 5 steps and failed 51 of the next 55, 2 s a step)."""
    import dojo_cli as dojo
    from dojo_cli import _core
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.solver.status import STATUS_FROM_CODE

    limp = {k: v for k, v in scene.items() if k not in ("actuators", "controller")}
    mech = build_mechanism(spec_from_dict(limp, file=reader.file))
    z = mech.initial if mech.initial is not None else mech.initial_t0
    code = _core.step(mech.core, mech.core_data, np.ascontiguousarray(z, dtype=float).reshape(-1), None, None, None, None,
                      _core.SolverOptions())
    if STATUS_FROM_CODE[code] is not SolverStatus.SUCCESS:
        return STATUS_FROM_CODE[code], "the first step from it fails"
    h = mech.timestep
    time_constant = max(_core.RECOVERY_TIME, _core.RECOVERY_STEPS * h)
    steps = min(_RECOVERY_CHECK_MAX_STEPS, int(math.ceil(_RECOVERY_CHECK_T * time_constant / h)))
    traj = dojo.simulate(mech, steps=steps)
    for k, text in enumerate(traj.status):
        if text != "success":
            return SolverStatus(text), f"step {k + 1} of their way out fails"
    return SolverStatus.SUCCESS, ""


def _start_state(reader: _Reader, scene: dict) -> tuple[Any, np.ndarray]:
    """The scene's bodies and joints built (a Mechanism without contacts, actuators and
    controller: they do not move the start pose) and its bodies' states (nb, 13) [x, v, q, w]
    at the pose the scene starts from: the scene builder's initial state (the core's
    kinematics of every joint type, the joints at their ``initial`` positions, a keyframe's
    when one was read), as the run will start from it. A scene its builder refuses here would
    be refused when the import is built (the same bodies, joints and initial values)."""
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict

    kinematic = {k: v for k, v in scene.items() if k not in ("contacts", "actuators", "controller")}
    mech = build_mechanism(spec_from_dict(kinematic, file=reader.file))
    z = (mech.initial_t0 if mech.initial_t0 is not None else mech.initial).reshape(mech.nb, 13)
    return mech, z


# A pair whose shapes both hold a point that the joints between their bodies keep fixed is
# held inside each other for ever (_held_point): positions closer than this (m) are the same
# point, lines closer than this meet; the point must be this far inside both shapes. The
# roundoff of the start pose's kinematics (products of a few rotations) is ~1e-15 m.
_GEOMETRY_TOL = 1e-9


def _fixed_set(joint, z: np.ndarray) -> tuple:
    """The points a joint keeps fixed in both its bodies whatever its coordinates, in the world
    at the start pose: ("all",) a weld; ("line", point, unit direction) a revolute joint's axis;
    ("point", p) the anchor of a joint that holds the three translations and turns about more
    than one axis (spherical, universal, gimbal, orbital); ("none",) a joint that translates.

    Args:
        joint: a Mechanism joint.
        z: (nb, 13) the bodies' start states [x, v, q, w] (q [w, x, y, z] body to world).
    """
    from dojo_cli.math.quaternion import matrix_from_quaternion
    from dojo_cli.model.joint_types import CONSTRAINED, JointType
    from dojo_cli.model.mechanism import ORIGIN

    held_translations, held_rotations = CONSTRAINED[JointType(joint.type)]
    if held_translations < 3:
        return ("none",)
    if held_rotations == 3:
        return ("all",)
    point = z[joint.child, :3] + matrix_from_quaternion(z[joint.child, 6:10]) @ np.asarray(joint.child_vertex, float)
    if held_rotations < 2:
        return ("point", point)
    parent = np.eye(3) if joint.parent == ORIGIN else matrix_from_quaternion(z[joint.parent, 6:10])
    axis = joint.rotation_axis if joint.rotation_axis is not None else joint.axis
    direction = parent @ matrix_from_quaternion(np.asarray(joint.orientation_offset, float)) @ np.asarray(axis, float)
    return ("line", point, direction / np.linalg.norm(direction))


def _meet(s: tuple, t: tuple) -> tuple:
    """The intersection of two fixed sets (_fixed_set's forms)."""
    if "none" in (s[0], t[0]):
        return ("none",)
    if s[0] == "all":
        return t
    if t[0] == "all":
        return s
    if s[0] == "line" and t[0] == "point":
        s, t = t, s
    if s[0] == "point":
        off = s[1] - t[1]
        if t[0] == "line":
            off = off - (off @ t[2]) * t[2]
        return s if np.linalg.norm(off) < _GEOMETRY_TOL else ("none",)
    normal, off = np.cross(s[2], t[2]), t[1] - s[1]
    if np.linalg.norm(normal) < _GEOMETRY_TOL:  # parallel: the same line, or none
        return s if np.linalg.norm(off - (off @ s[2]) * s[2]) < _GEOMETRY_TOL else ("none",)
    if abs(off @ normal) / np.linalg.norm(normal) > _GEOMETRY_TOL:  # skew
        return ("none",)
    return ("point", s[1] + (np.cross(off, t[2]) @ normal) / (normal @ normal) * s[2])


def _joints_between(mech, a: int, b: int) -> list:
    """The joints on the tree's path between bodies a and b (each side up to where they meet)."""
    from dojo_cli.model.mechanism import ORIGIN

    parent_joint = {j.child: j for j in mech.joints}

    def up(i: int) -> list:
        chain = []
        while i != ORIGIN and i in parent_joint:
            chain.append(parent_joint[i])
            i = parent_joint[i].parent
        return chain

    from_a, from_b = up(a), up(b)
    shared = {id(j) for j in from_a} & {id(j) for j in from_b}
    return [j for j in from_a + from_b if id(j) not in shared]


def _depth_at(shape: dict, pose: tuple):
    """A function of a world point (3,): how deep (m) it lies inside ``shape`` on a body at
    ``pose`` (negative outside): the collision table's distance of a point (a sphere of radius
    0) to the shape, so the same geometry as the contacts'."""
    from dojo_cli.model.collisions import body_pair_contacts

    point = {"type": "sphere", "radius": 0.0, "position_offset": [0.0, 0.0, 0.0], "orientation_offset": [1.0, 0.0, 0.0, 0.0]}
    # one contact, on the point (a sphere comes first in the table's order)
    (contact,) = body_pair_contacts("", 0, shape_of(point), 1, shape_of(shape))
    identity = np.array([1.0, 0.0, 0.0, 0.0])

    def depth(p: np.ndarray) -> float:
        return -contact_distance(contact, (p, identity), pose)
    return depth


def _bounding_ball(shape: dict, pose: tuple) -> tuple[np.ndarray, float]:
    """(centre (3,) in the world, radius): a ball holding the shape."""
    from dojo_cli.math.quaternion import matrix_from_quaternion

    centre = pose[0] + matrix_from_quaternion(pose[1]) @ np.asarray(shape["position_offset"], float)
    if shape["type"] == "hull":  # its vertices about the shape's origin, inflated by its radius
        return centre, float(np.linalg.norm(np.asarray(shape["vertices"], float), axis=1).max()) + shape["radius"]
    if shape["type"] == "box":
        return centre, 0.5 * float(np.linalg.norm(shape["size"]))
    half = 0.5 * float(shape.get("height", 0.0))
    return centre, (shape["radius"] + half if shape["type"] in ("sphere", "capsule") else math.hypot(shape["radius"], half))


def _held_point(mech, z: np.ndarray, a: int, shape_a: dict, b: int, shape_b: dict) -> tuple[np.ndarray, float] | None:
    """A point inside both shapes (body a's and body b's, each in its body frame) that every
    joint between the two bodies keeps fixed in both, and its depth (m) in the shallower of
    the two; None when there is none (then some motion may separate them).

    Such a point stays inside both whatever the joints do (a fixed point of every joint on the
    path is fixed through all of them: each rotates about it), so the pair overlaps at least
    that deep for ever: capsules that meet at a ball joint, as dm_control's
    model_with_ball_joints.xml. The joints' common fixed set is a point, a line (hinges on one
    axis) or nothing; on a line the deepest point is found by golden-section search (the
    smaller of two convex shapes' depths is concave along it)."""
    fixed: tuple = ("all",)
    for joint in _joints_between(mech, a, b):
        fixed = _meet(fixed, _fixed_set(joint, z))
    if fixed[0] in ("none", "all"):  # "all": one weld, never paired (_contacts)
        return None
    depth_a, depth_b = _depth_at(shape_a, (z[a, :3], z[a, 6:10])), _depth_at(shape_b, (z[b, :3], z[b, 6:10]))

    def depth(p: np.ndarray) -> float:
        return min(depth_a(p), depth_b(p))

    if fixed[0] == "point":
        point = fixed[1]
    else:
        start, direction = fixed[1], fixed[2]
        centre, radius = _bounding_ball(shape_a, (z[a, :3], z[a, 6:10]))
        mid = (centre - start) @ direction
        if np.linalg.norm(centre - start - mid * direction) > radius:
            return None  # the axis misses shape a
        lo, hi = mid - radius, mid + radius
        golden = (math.sqrt(5.0) - 1.0) / 2.0
        while hi - lo > _GEOMETRY_TOL:
            u, v = hi - golden * (hi - lo), lo + golden * (hi - lo)
            if depth(start + u * direction) < depth(start + v * direction):
                lo = u
            else:
                hi = v
        point = start + 0.5 * (lo + hi) * direction
    d = depth(point)
    return (point, d) if d > _GEOMETRY_TOL else None


def _move_surface(contact: dict, where: str, cut: float) -> None:
    """Move a contact's surface in by ``cut`` (m), the part of its margin the initial pose is
    inside: the plane back along its normal (``plane``), or the grown radius of its own shape
    (``own``) or of the other body's (``against``), as _contacts grew them."""
    if where == "plane":
        half = contact["against"]
        normal = np.asarray(half["normal"], float)
        contact["against"] = _half_space(normal, np.asarray(half["point"], float) - cut * normal / np.linalg.norm(normal))
    elif where == "own":
        contact["shape"] = {**contact["shape"], "radius": float(contact["shape"]["radius"] - cut)}
    else:
        contact["against"] = {**contact["against"], "radius": float(contact["against"]["radius"] - cut)}


def _half_space(normal: np.ndarray, point: np.ndarray) -> Any:
    """A contact's ``against`` for the plane through ``point`` with ``normal``: "ground" when it
    is z = 0 facing up, else the half-space."""
    if np.allclose(normal, [0, 0, 1], atol=1e-12) and abs(point[2]) < 1e-12:
        return "ground"
    return {"normal": plain_vector(normal), "point": plain_vector(point)}


def _tree(reader: _Reader, i: int) -> int:
    """The top body of body i's kinematic tree (its ancestor whose parent is the world)."""
    while reader.bodies[i].parent >= 0:
        i = reader.bodies[i].parent
    return i


def _machine(reader: _Reader, i: int) -> int:
    """Body i's kinematic tree (_tree), all trees mounted on the world (their top body has no
    joint: an arm on a table, the two arms of a bimanual rig) counted as one, -1. Their moving
    links pair their hulls with the static world's (a table) and with free objects only."""
    top = _tree(reader, i)
    return top if reader.bodies[top].joints else -1


def _weld(reader: _Reader, i: int) -> int:
    """The MJCF body whose joints move body i (MuJoCo's body_weldid; -1: the world)."""
    while i >= 0 and not reader.bodies[i].joints:
        i = reader.bodies[i].parent
    return i


def _collides(a: _Geom, b: _Geom) -> bool:
    return bool((a.contype & b.conaffinity) or (b.contype & a.conaffinity))


def _contact_shape(geom: _Geom, com: np.ndarray) -> dict | None:
    """A geom as a contact shape in its scene body's frame (None: no collision geometry here)."""
    pose = {"position_offset": plain_vector(geom.pos - com), "orientation_offset": _quaternion_from_matrix(geom.rot)}
    s = geom.size
    if geom.type == "sphere":
        return {"type": "sphere", "radius": float(s[0]), **pose}
    if geom.type in ("capsule", "cylinder"):
        return {"type": geom.type, "radius": float(s[0]), "height": float(2 * s[1]), **pose}
    if geom.type == "box":
        return {"type": "box", "size": plain_vector(2 * s), **pose}
    if geom.type in ("ellipsoid", "mesh"):
        from dojo_cli.model.collisions import reduced_hull

        if geom.type == "ellipsoid":
            u = np.linspace(0.0, math.pi, ELLIPSOID_SAMPLES // 2 + 1)
            v = np.linspace(0.0, 2 * math.pi, ELLIPSOID_SAMPLES, endpoint=False)
            uu, vv = np.meshgrid(u, v)
            points = np.column_stack([np.sin(uu).ravel() * np.cos(vv).ravel() * s[0],
                                      np.sin(uu).ravel() * np.sin(vv).ravel() * s[1], np.cos(uu).ravel() * s[2]])
            points = np.unique(np.round(points, 15), axis=0)
        else:
            points = geom.points
        vertices, error = reduced_hull(points, HULL_VERTICES)
        return {"type": "hull", "vertices": [plain_vector(v) for v in vertices], "radius": float(error), **pose}
    return None


def _pair_margin(a: _Geom, b: _Geom) -> float:
    """The distance (m) at which MuJoCo's contact of geoms a and b pushes: the sum of their
    ``margin`` s (mjContact.includemargin; measured with MuJoCo 4.0: a ball with margin 0.02 on a
    plane with 0.01 rests 0.0296 m above it, includemargin 0.03). Its soft contact drives the
    distance minus this to zero (the constraint's reference acceleration acts on efc_pos -
    efc_margin, docs "Computation", soft constraints): a margin is a contact surface that far
    out, which a hard contact reproduces by moving its surface (Gymnasium's Ant: 0.01 on every
    geom and the floor, its feet resting 1.97 cm above the floor).
    ``gap`` is not read: MuJoCo 4.0's contact rests at the summed margins whatever the gaps."""
    return float(a.margin + b.margin)


def _inflated(shape: dict, margin: float) -> dict | None:
    """A rounded shape (sphere, capsule, hull) whose surface is ``margin`` further out (None:
    a box or cylinder, which no radius inflates, or a radius that would be negative)."""
    if shape["type"] not in _ROUNDED or shape.get("radius", 0.0) + margin < 0.0:
        return None
    return {**shape, "radius": float(shape.get("radius", 0.0) + margin)}


def _contacts(reader: _Reader, options: MjcfOptions) -> list[dict]:
    from dojo_cli.model.collisions import BODY_SHAPES

    contacts: list[dict] = []
    planes = [g for g in reader.world_geoms if g.type == "plane"]
    # the world's other geoms that moving geoms collide with are the body WORLD_BODY (_world_body)
    excluded = set()
    for b1, b2 in reader.excludes:
        names = {b.name: i for i, b in enumerate(reader.bodies)}
        if b1 not in names and b1 != "world" or b2 not in names and b2 != "world":
            reader.problem(reader.file, None, "<exclude>", f"unknown body in ({b1}, {b2})")
            continue
        excluded.add(frozenset((_weld(reader, names[b1]) if b1 != "world" else -1,
                                _weld(reader, names[b2]) if b2 != "world" else -1)))
    hosts = [(i, b) for i, b in enumerate(reader.bodies) if b.host == i]
    used: set[str] = set()

    def label(base: str) -> str:
        name, k = base, 1
        while name in used:
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        return name

    def geom_label(body: _Body, g: _Geom) -> str:
        return g.name or f"{body.name}_geom{body.geoms.index(g)}"

    torsional: set[int] = set()  # geoms whose condim 4 or 6 was reported (once each, not per pair)
    unrounded: list[str] = []  # pairs with a margin that no radius carries (_with_margin)

    def model_of(a: _Geom, b: _Geom) -> dict:
        condim = max(a.condim, b.condim)
        for g in (a, b):
            if g.condim > 3 and id(g) not in torsional:
                torsional.add(id(g))
                reader.unsupported(g.file, g.line, f"geom {g.name!r}", "torsional and rolling friction (condim 4, 6)",
                                   f"condim {g.condim}: torsional and rolling friction are not modelled "
                                   "(condim 1, frictionless, and 3, the sliding friction cone, are)")
        return {"model": "impact" if condim == 1 else "nonlinear", "friction": max(a.friction, b.friction)}

    # against the world's planes; a body welded to the world (a static prop, MuJoCo's body_weldid
    # 0) is in the world's weld, whose geoms MuJoCo never collides with each other
    for i, body in hosts:
        weld = _weld(reader, i)
        if weld < 0:
            continue
        for g in body.geoms:
            for p in planes:
                if not _collides(g, p) or frozenset((weld, -1)) in excluded:
                    continue
                shape = _contact_shape(g, body.com)
                if shape is None:
                    continue
                # the plane moved out along its normal by the pair's margin: exact for any shape
                normal = p.rot[:, 2]
                against: Any = _half_space(normal, p.pos + _pair_margin(g, p) * normal)
                c = {"name": label(geom_label(body, g)), "body": body.name, **model_of(g, p), "shape": shape,
                     "against": against, "margin": CONTACT_MARGIN}
                reader.contact_margins[c["name"]] = (_pair_margin(g, p), "plane")
                reader.contact_lines[c["name"]] = (g.file, g.line)
                reader.contact_geoms[c["name"]] = (geom_label(body, g), p.name or f"world_geom{reader.world_geoms.index(p)}")
                if g.type == "cylinder":
                    c["rim_points"] = 3
                contacts.append(c)
    # between moving bodies
    for ia, (i, a) in enumerate(hosts):
        for j, b in hosts[ia + 1:]:
            wa, wb = _weld(reader, i), _weld(reader, j)
            if wa == wb or frozenset((wa, wb)) in excluded:
                continue
            pa = _weld(reader, reader.bodies[wa].parent) if wa >= 0 and reader.bodies[wa].parent >= 0 else -1
            pb = _weld(reader, reader.bodies[wb].parent) if wb >= 0 and reader.bodies[wb].parent >= 0 else -1
            if not reader.off("filterparent") and ((pa == wb and wb >= 0) or (pb == wa and wa >= 0)):
                continue  # MuJoCo's filterparent
            for ga in a.geoms:
                for gb in b.geoms:
                    if not _collides(ga, gb) or ga.type == "plane" or gb.type == "plane":
                        continue
                    paired = _pair(ga, a, gb, b, BODY_SHAPES)
                    made, many = (paired[:2], paired[2]) if paired is not None else (None, False)
                    same_tree = _tree(reader, i) == _tree(reader, j)
                    both_mounted = wa >= 0 and wb >= 0 and _machine(reader, i) == _machine(reader, j)
                    if many and (same_tree or both_mounted):
                        # the two arms of gym-aloha's bimanual rig, each mounted on the table:
                        # 4736 of its 6224 contacts, and steps that failed (184 s for 20 steps;
                        # 1488 contacts and 0.16 s without them)
                        reader.unsupported(ga.file, ga.line, f"geom {geom_label(a, ga)!r}",
                                           "hull pairs within one kinematic tree",
                                           f"collides with geom {geom_label(b, gb)!r} ({ga.type}-{gb.type}) of its own "
                                           "kinematic tree, or of another tree mounted on the world as its own is: a hull "
                                           "pair (a mesh; a cylinder and a box; a box turned in its body) is each shape's "
                                           f"vertices or rim points against the other (up to {2 * HULL_VERTICES} contacts; "
                                           "a cylinder and a box 24), which a robot's own links would multiply (fetch's "
                                           "push: 552 contacts, 8168 with them, 27 times the step time); such pairs with a "
                                           "free object or a mobile robot (an object against fingers or a table, another "
                                           "object) are kept")
                        continue
                    grown, margin = "", _pair_margin(ga, gb)
                    if made is not None and margin != 0.0:
                        with_margin, grown = _with_margin(made, margin)
                        if with_margin is None:
                            unrounded.append(f"{geom_label(a, ga)}-{geom_label(b, gb)} ({Path(ga.file).name}:{ga.line})")
                        else:
                            made = with_margin
                    if made is None:
                        reader.unsupported(ga.file, ga.line, f"geom {geom_label(a, ga)!r}", "geom pairs the collision table lacks",
                                           f"collides with geom {geom_label(b, gb)!r} ({ga.type}-{gb.type}): "
                                           "the collision table has sphere, capsule, box and convex hull (mesh, "
                                           "ellipsoid) pairs, and cylinders against spheres, capsules, boxes and hulls")
                        continue
                    (own, own_body, own_geom), against = made
                    reader.contact_lines[f"{geom_label(a, ga)}-{geom_label(b, gb)}"] = (ga.file, ga.line)
                    name = label(f"{geom_label(a, ga)}-{geom_label(b, gb)}")
                    reader.contact_geoms[name] = (geom_label(a, ga), geom_label(b, gb))
                    contacts.append({"name": name, "body": own_body.name,
                                     **model_of(ga, gb), "shape": own, "against": against, "margin": CONTACT_MARGIN})
                    if grown:
                        reader.contact_margins[name] = (margin, grown)
    if unrounded:
        reader.warn(reader.file, None, "contacts",
                    f"the geoms' margin is left out of {len(unrounded)} pair{'s' if len(unrounded) > 1 else ''} of boxes "
                    "and cylinders (a margin moves a sphere's, capsule's or mesh's surface out; these touch at 0): "
                    + listed(unrounded, 6))
    return contacts


def _pair(ga: _Geom, a: _Body, gb: _Geom, b: _Body, body_shapes) -> tuple | None:
    """(own shape, body, geom), against, many: geom a's shape against geom b's, or None where the
    collision table has no entry for the pair (dojo_cli.model.collisions.body_pair_contacts
    decides, as the builder will: sphere, capsule, box and hull (a mesh's or an ellipsoid's),
    cylinders against spheres, capsules, boxes and hulls); many: the pair goes through a hull's
    vertices or a cylinder's fixed rim points (dozens of contacts)."""
    from dojo_cli.model.collisions import UnsupportedPair, body_pair_contacts

    own, other = _contact_shape(ga, a.com), _contact_shape(gb, b.com)
    if own is None or other is None or own["type"] not in body_shapes or other["type"] not in body_shapes:
        return None

    try:
        kinds = {c.kind for c in body_pair_contacts("", 0, shape_of(own), 1, shape_of(other))}
    except UnsupportedPair:
        return None
    against = {"body": b.name, "shape": other["type"], "offset": other["position_offset"],
               "orientation_offset": other["orientation_offset"]}
    if other["type"] == "box":
        against["size"] = other["size"]
    else:
        against["radius"] = other["radius"]
        if other["type"] in ("capsule", "cylinder"):
            against["height"] = other["height"]
        if other["type"] == "hull":  # a mesh's or an ellipsoid's
            against["vertices"] = other["vertices"]
    # whether the pair goes through hulls' vertices or fixed rim points (a mesh, a cylinder and a
    # box, a turned box): many contacts, which _contacts leaves out within one kinematic tree
    many = "hull" in kinds or {own["type"], other["type"]} == {"cylinder", "box"}
    return (own, a, ga), against, many


def _with_margin(made: tuple, margin: float) -> tuple:
    """(_pair's (own shape, body, geom), against with the pair's contact surface ``margin``
    further out: the own shape's radius, or else the other's (a sphere or capsule) grown by it;
    which: ``own`` or ``against``), or (None, "") where neither is rounded."""
    (own, body, geom), against = made
    grown = _inflated(own, margin)
    if grown is not None:
        return ((grown, body, geom), against), "own"
    if against["shape"] in _ROUNDED and against["radius"] + margin >= 0.0:
        return ((own, body, geom), {**against, "radius": float(against["radius"] + margin)}), "against"
    return None, ""
