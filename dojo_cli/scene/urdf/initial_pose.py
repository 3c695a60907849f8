"""Where an imported robot starts: joints inside their ranges, a floating robot turned
upright (its legs down) and stood on the ground, a massless root fixed to the world raised
out of it; and each body's world pose with the joints at their initial positions, which
the contacts and ``dojo import-urdf --stand`` read.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.model.collisions import GROUND, RIM_POINTS, half_space_contacts, lowest_height
from dojo_cli.scene.importing.rotations import rotation_about
from dojo_cli.scene.importing.scene_data import plain_vector, shape_of
from dojo_cli.scene.legs import axis_name, legs_of
from dojo_cli.scene.urdf.options import UrdfImport
from dojo_cli.scene.urdf.reader import _Reader
from dojo_cli.scene.urdf.transforms import _matrix_from_quaternion


# Initial pose: a joint whose range does not hold zero strictly inside starts this far
# inside its range (a fraction of the range, at most LIMIT_INSET_MAX rad or m) from the
# bound nearest zero. A limit is an inequality of the interior-point solve: started on
# its bound, the t = 0 solve begins at a zero slack, and go1's (calves on -0.888) took
# 1.8 s against 0.4 s 0.01 rad inside; talos_reduced (8 joints with a bound at 0) 73 s.
LIMIT_INSET_FRACTION = 0.01
LIMIT_INSET_MAX = 0.01


def _turn_upright(reader: _Reader, result: UrdfImport) -> None:
    """Turn a floating robot whose legs point along another axis than the file's -z
    (dojo_cli.scene.legs: human.urdf is written with y up) so that they point down: the
    floating base's initial rotation, with a note."""
    poses = _initial_poses(result)
    legs = legs_of(result.scene_joints, poses)
    if not legs.legged or legs.down[2] < -1.0 + 1e-12:
        return
    down = legs.down / np.linalg.norm(legs.down)
    axis = np.cross(down, [0.0, 0.0, -1.0])
    if np.linalg.norm(axis) < 1e-12:
        axis = np.array([1.0, 0.0, 0.0])  # down is +z: half a turn about x
    axis = axis / np.linalg.norm(axis)
    angle = math.acos(max(-1.0, min(1.0, float(-down[2]))))
    base = result.scene_joints[0]
    base["initial"] = {"position": [0.0, 0.0, 0.0, *(float(v) + 0.0 for v in axis * angle)]}
    reader.note(None, "robot", f"its legs point along {axis_name(legs.down)} of the file, not -z "
                f"(REP 103's z up): the floating base starts turned {math.degrees(angle):.0f} deg about "
                f"[{', '.join(f'{v:.3g}' for v in axis)}] so that they point down")


def _body_parents(result: UrdfImport) -> set[str]:
    return {j["parent"] for j in result.scene_joints}


def _start_inside_limits(reader: _Reader, scene_joints: list[dict]) -> dict[str, list[str]]:
    """Give each limited joint whose range does not hold zero strictly inside an initial
    position: the point of its range nearest zero, moved LIMIT_INSET inside (go1's calves,
    [-2.818, -0.888], would start at 0, outside, and snap onto their limits in the first
    steps; a joint on its bound starts the t = 0 solve at a zero slack). One note lists them.
    A URDF has no default joint position (SRDF's group states are another file).
    Returns the moved coordinates by scene joint (UrdfImport.moved_into_range)."""
    moved: dict[str, list[str]] = {}
    for joint in scene_joints:
        limits = joint.get("limits")
        if limits is None or "initial" in joint:
            continue
        positions = []
        for k, (lower, upper) in enumerate(zip(limits["lower"], limits["upper"])):
            if lower < 0.0 < upper:
                positions.append(0.0)
                continue
            inset = min(LIMIT_INSET_FRACTION * (upper - lower), LIMIT_INSET_MAX)
            positions.append(float(lower + inset if lower >= 0.0 else upper - inset))
            names = joint.get("axis_names")
            moved.setdefault(joint["name"], []).append(f"{names[k] if names else joint['name']} {positions[-1]:.6g}")
        if any(p != 0.0 for p in positions):
            joint["initial"] = {"position": positions}
    note = range_note(moved)
    if note:
        reader.note(None, "robot", note)
    return moved


def range_note(moved: dict[str, list[str]]) -> str | None:
    """The one note listing the coordinates started inside their ranges (None: none)."""
    items = [item for coords in moved.values() for item in coords]
    if not items:
        return None
    return (f"{len(items)} joints start inside their ranges (zero is outside or on a bound; "
            f"{LIMIT_INSET_FRACTION:.0%} of the range in, at most {LIMIT_INSET_MAX:g}): {', '.join(items)}")


def _joint_motion(joint: dict) -> tuple[np.ndarray, np.ndarray]:
    """(rotation (3, 3) in the joint frame, translation (3,) in the parent body frame) of a
    joint at its initial position: a revolute turns about its axis (in the joint frame), a
    prismatic slides along its axis (in the parent body frame; the engine's convention)."""
    position = (joint.get("initial") or {}).get("position")
    if joint["type"] == "floating" and position:
        # [x, y, z, rotation vector]: the joint point's position and the turn about it
        from dojo_cli.math.quaternion import matrix_from_quaternion, quaternion_from_rotation_vector

        turn = matrix_from_quaternion(quaternion_from_rotation_vector(np.asarray(position[3:6], float)))
        return turn, np.asarray(position[:3], float)
    if joint["type"] in ("universal", "gimbal") and position:
        # R(a1, t1) R(a2, t2) [R(a3, t3)], the axes in the joint frame (core/maximal/euler_joints.h)
        turn = np.eye(3)
        for a, t in zip(joint["axes"], position):
            turn = turn @ _joint_motion({"type": "revolute", "axis": a, "initial": {"position": [t]}})[0]
        return turn, np.zeros(3)
    if joint["type"] not in ("revolute", "prismatic") or not position:
        return np.eye(3), np.zeros(3)
    axis, value = np.asarray(joint["axis"], float), float(position[0])
    if joint["type"] == "prismatic":
        return np.eye(3), axis * value
    return rotation_about(axis, value), np.zeros(3)


def _initial_poses(result: UrdfImport) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """World (rotation, centre of mass) of each body with every joint at its initial position
    (zero unless _start_inside_limits moved it; a floating base where its initial position
    puts it, else at the origin)."""
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    pending = list(result.scene_joints)
    # a URDF may list a joint before the one its parent hangs from: placed root to leaves
    while pending:
        ready = [joint for joint in pending if joint["parent"] == "origin" or joint["parent"] in poses]
        if not ready:
            break  # nothing left hangs from a placed body
        for joint in ready:
            if joint["parent"] == "origin":
                prot, ppos = np.eye(3), np.zeros(3)
            else:
                prot, ppos = poses[joint["parent"]]
            offset = _matrix_from_quaternion(joint.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
            turn, slide = _joint_motion(joint)
            rot = prot @ offset
            if joint.get("initial") and joint["type"] in ("revolute", "prismatic", "universal", "gimbal", "floating"):
                rot = rot @ turn  # (a joint at zero keeps the exact product of before)
            joint_point = ppos + prot @ (np.asarray(joint.get("parent_vertex", [0.0, 0.0, 0.0])) + slide)
            pos = joint_point - rot @ np.asarray(joint.get("child_vertex", [0.0, 0.0, 0.0]))
            poses[joint["child"]] = (rot, pos)
        pending = [joint for joint in pending if not any(joint is r for r in ready)]
    return poses


def _stand_on_ground(scene: dict, result: UrdfImport) -> None:
    """Lift a floating robot so that its lowest contact (a sphere's bottom, a shape's lowest
    point, as compiled into the collision table) touches z = 0."""
    base = scene["joints"][0]
    # the poses hold the base where its initial position puts it (turned upright, _turn_upright)
    position = list((base.get("initial") or {}).get("position") or [0.0] * 6)
    position[2] = position[2] - _lowest_contact(scene, result) + 0.0
    base["initial"] = {"position": [float(v) + 0.0 for v in position]}


def _lift_world_root(reader: _Reader, scene: dict, result: UrdfImport, root: str, line: int | None) -> None:
    """Raise a robot whose massless root is fixed to the world (``--floating`` asked for, a
    base of mass 0 is static) so that no contact starts below the ground: Bullet places such
    a base where the script loads it, and a robot started inside the ground cannot step
    (cartpole.urdf's cart, 0.05 m deep at the origin). The joints hanging from the world move
    up by the depth of the lowest contact, with a note; above the ground it stays."""
    lowest = _lowest_contact(scene, result)
    if not lowest < 0.0:
        return
    for joint in scene["joints"]:
        if joint["parent"] == "origin":
            joint["parent_vertex"] = plain_vector(np.asarray(joint["parent_vertex"]) + [0.0, 0.0, -lowest])
    reader.note(line, f"link {root!r}", f"raised {-lowest:.6g} m, so that its lowest contact touches the ground "
                "(it started below it)")


def _lowest_contact(scene: dict, result: UrdfImport) -> float:
    """The lowest point of the scene's ground contacts (world z) with every joint at its initial position."""
    poses = _initial_poses(result)
    lowest = math.inf
    for c in scene["contacts"]:
        rot, pos = poses[c["body"]]
        if "shape" in c:
            if c["against"] != "ground":
                continue  # a self-collision contact
            made = half_space_contacts("", 0, shape_of(c["shape"]), GROUND, rim_points=c.get("rim_points", RIM_POINTS))
            lowest = min(lowest, lowest_height(made, rot, pos))
        else:
            lowest = min(lowest, float((pos + rot @ np.asarray(c["offset"]))[2]) - c["radius"])
    return lowest
