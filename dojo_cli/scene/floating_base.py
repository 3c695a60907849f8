"""Re-root a scene's joint tree at another body: Dojo's ``set_floating_base``.

A URDF's tree starts at its first link, often not the body a user wants to float (a
humanoid rooted at its pelvis simulated on a foot, an arm rooted at its base picked up by
its hand). ``set_floating_base(scene, body)`` makes ``body`` the root: the joints on the
path from the old root to it are reversed, and the floating joint to the world holds
``body``, placed where the old tree had it, so the initial configuration is the same.

Reversing a joint from parent P to child C (scene conventions, docs/scenes.md: the joint
point is ``parent_vertex`` in P and ``child_vertex`` in C; ``orientation_offset`` O is
the joint frame in P):
- the vertices swap, and the offset becomes O^-1;
- revolute: the engine has q_C = q_P O R(a, theta). Then q_P = q_C O^-1 R(O a, -theta)
  = q_C O^-1 R(-O a, theta): the new axis is -O a (in the new joint frame), and the angle,
  its limits, initial value, spring, damper and input are those of before;
- prismatic: the axis a is measured in the parent frame, p_C + R_C c = p_P + R_P (p + a
  theta). Seen from C: p_P + R_P p = p_C + R_C (c - O^T a theta), so the new axis is
  -O^T a (in the new parent, C), the travel again unchanged;
- fixed: only the vertices and the offset.
Other joint types on the path are refused (their coordinates do not reverse this simply).

The floating joint (the old root's base joint, floating or fixed, is replaced) holds the
new root at its centre of mass with ``initial.position`` = its world position and rotation
vector in the old tree's initial configuration (joints at their initial positions).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.importing.rotations import rotation_about

FLOATING_JOINT = "floating_base"
_REVERSIBLE = ("revolute", "prismatic", "fixed")
_ORIGIN = "origin"


def set_floating_base(scene: Any, body: str) -> Any:
    """The scene re-rooted at ``body``, with a floating joint to the world holding it.

    Args:
        scene: plain scene data (a dict, as a YAML file holds it, with its joints' parents
            and children; e.g. ``read_urdf(...).scene``) or a SceneSpec.
        body: the body to float.

    Returns:
        The same kind of object (a new one; the given scene is left as it was).

    Raises:
        SceneError: no such body, a joint on the path that cannot be reversed, or a scene
            whose root is not held by one joint to the world.
    """
    from dojo_cli.scene.schema import SceneSpec

    if isinstance(scene, SceneSpec):
        from dojo_cli.scene.loader import spec_from_dict

        return spec_from_dict(set_floating_base(scene.dump(), body))
    data = copy.deepcopy(dict(scene))
    joints: list[dict] = data.get("joints", [])
    bodies = [b["name"] for b in data.get("bodies", [])]
    if body not in bodies:
        raise SceneError(Problem("", None, "bodies", f"no body {body!r} to float (bodies: {', '.join(bodies[:8])}{', ...' if len(bodies) > 8 else ''})"))
    to_world = [j for j in joints if j["parent"] == _ORIGIN]
    if len(to_world) != 1:
        raise SceneError(Problem("", None, "joints", f"the scene's tree must hang from the world by one joint, found {len(to_world)}"))
    base = to_world[0]
    poses = _initial_poses(joints)
    # the tree's joints by child (a loop's closing joint is not on the path: the first joint
    # reaching a child is the tree's)
    by_child: dict[str, dict] = {}
    for joint in joints:
        by_child.setdefault(joint["child"], joint)
    path = []
    node = body
    while node != base["child"]:
        joint = by_child.get(node)
        if joint is None or joint["parent"] == _ORIGIN:
            raise SceneError(Problem("", None, "joints", f"body {body!r} is not in the tree below {base['child']!r}"))
        path.append(joint)
        node = joint["parent"]
    for joint in path:
        if joint.get("type", "revolute") not in _REVERSIBLE:
            raise SceneError(Problem("", None, f"joints.{joint['name']}",
                                     f"a {joint['type']} joint on the way to {body!r} cannot be reversed (only {', '.join(_REVERSIBLE)})"))
        _reverse(joint)
    if body not in poses:
        raise SceneError(Problem("", None, "joints", f"body {body!r} has no initial pose (its joints do not reach the world)"))
    rot, pos = poses[body]
    joints.remove(base)
    names = {j["name"] for j in joints}
    name = FLOATING_JOINT
    while name in names:
        name += "_joint"
    floating = {"name": name, "type": "floating", "parent": _ORIGIN, "child": body,
                "initial": {"position": [*(float(v) + 0.0 for v in pos), *(float(v) for v in _rotation_vector(rot))]}}
    data["joints"] = [floating] + joints
    return data


def _reverse(joint: dict) -> None:
    """Swap a revolute, prismatic or fixed joint's parent and child in place (module doc)."""
    offset = _matrix(joint.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
    joint["parent"], joint["child"] = joint["child"], joint["parent"]
    parent_vertex = joint.get("parent_vertex", [0.0, 0.0, 0.0])
    joint["parent_vertex"] = list(joint.get("child_vertex", [0.0, 0.0, 0.0]))
    joint["child_vertex"] = list(parent_vertex)
    w, x, y, z = (float(v) for v in joint.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
    joint["orientation_offset"] = [w, -x, -y, -z]  # the inverse (a unit quaternion's conjugate)
    kind = joint.get("type", "revolute")
    if kind == "revolute":
        joint["axis"] = [float(v) + 0.0 for v in -(offset @ np.asarray(joint["axis"], float))]
    elif kind == "prismatic":
        joint["axis"] = [float(v) + 0.0 for v in -(offset.T @ np.asarray(joint["axis"], float))]


def _initial_poses(joints: list[dict]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """World (rotation, centre of mass) of each body with the joints at their initial
    positions (revolute, prismatic, floating; others at zero)."""
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {_ORIGIN: (np.eye(3), np.zeros(3))}
    pending = list(joints)
    while pending:
        ready = [j for j in pending if j["parent"] in poses and j["child"] not in poses]
        if not ready:
            break
        for joint in ready:
            if joint["child"] in poses:
                continue
            prot, ppos = poses[joint["parent"]]
            rot = prot @ _matrix(joint.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
            point = np.asarray(joint.get("parent_vertex", [0.0, 0.0, 0.0]), float)
            value = (joint.get("initial") or {}).get("position")
            kind = joint.get("type", "revolute")
            if value is not None and kind == "revolute":
                rot = rot @ _axis_angle(np.asarray(joint["axis"], float), float(value[0]))
            elif value is not None and kind == "prismatic":
                point = point + np.asarray(joint["axis"], float) / np.linalg.norm(joint["axis"]) * float(value[0])
            elif value is not None and kind == "floating":
                point = point + np.asarray(value[:3], float)
                rot = rot @ _axis_angle_vector(np.asarray(value[3:6], float))
            pos = ppos + prot @ point - rot @ np.asarray(joint.get("child_vertex", [0.0, 0.0, 0.0]), float)
            poses[joint["child"]] = (rot, pos)
        pending = [j for j in pending if j["child"] not in poses]
    return poses


def _matrix(q) -> np.ndarray:
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    return rotation_about(axis / np.linalg.norm(axis), angle)


def _axis_angle_vector(vector: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(vector))
    return np.eye(3) if angle == 0.0 else _axis_angle(vector, angle)


def _rotation_vector(rot: np.ndarray) -> list[float]:
    """The rotation vector (axis times angle, |angle| <= pi) of a rotation matrix."""
    # the quaternion by Shepperd's method, then 2 atan2(|v|, w) along v
    m = rot
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        w, x, y, z = 0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        v = [0.0, 0.0, 0.0]
        v[i] = 0.25 * s
        v[j] = (m[j, i] + m[i, j]) / s
        v[k] = (m[k, i] + m[i, k]) / s
        w = (m[k, j] - m[j, k]) / s
        x, y, z = v
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    norm = math.sqrt(x * x + y * y + z * z)
    if norm == 0.0:
        return [0.0, 0.0, 0.0]
    angle = 2.0 * math.atan2(norm, w)
    return [float(angle * x / norm) + 0.0, float(angle * y / norm) + 0.0, float(angle * z / norm) + 0.0]


__all__ = ["FLOATING_JOINT", "set_floating_base"]
