"""Scene data of the joints: the URDF's joints between the bodies (the floating or fixed base
joint, revolute, prismatic, planar, Bullet's spherical), the chains of revolute joints
through massless links as universal and gimbal joints, with their limits, efforts,
velocities and dampers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dojo_cli.scene.importing.rotations import GIMBAL_LOCK_MARGIN
from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.urdf.options import FIXED_BASE_JOINT, FLOATING_JOINT
from dojo_cli.scene.urdf.elements import _Joint
from dojo_cli.scene.urdf.transforms import _quaternion_from_matrix, _translation
from dojo_cli.scene.urdf.tree import AXIS_TOL, _chain_axes


# Elements read but not modelled, reported once per kind ("what|consequence"), naming the
# joints (go1 printed 12 near-identical lines, talos 20), at most this many names.
UNMODELLED_FRICTION = "Coulomb friction on a floating joint (<dynamics friction>)|ignored"
UNMODELLED_MIMIC = "<mimic>|each joint moves on its own"
# Bullet's swing-twist limit of a spherical joint: <limit lower upper twist> (the swing ranges
# about x and y and the twist range about z), applied only when all three and effort are > 0
# (URDF2Bullet; btMultiBodySphericalJointLimit, a soft limit on Euler angles of the swing and
# the twist): not one of Dojo's limits, which bound the rotation vector's components.
UNMODELLED_SWING_TWIST = "Bullet's swing-twist limit of a spherical joint (<limit lower upper twist>)|the joint turns freely"


def _scene_joints(reader, links, joints, groups, body_of, world_links, root, options, result) -> list[dict]:
    # the URDF's own joints keep their names; a merged one's name is free again
    names = {j.name for j in joints if j.name not in result.merged}
    out: list[dict] = []
    if body_of.get(root, -1) == 0:
        base = FLOATING_JOINT if options.floating else FIXED_BASE_JOINT
        name = base
        while name in names:
            name += "_joint"
        group = groups[0]
        out.append({
            "name": name, "type": "floating" if options.floating else "fixed", "parent": "origin", "child": group.name,
            "child_vertex": plain_vector(-group.com),
        })
    for joint in joints:
        child_group = body_of.get(joint.child)
        if child_group is None or child_group < 0 or joint.name in result.merged:
            continue
        group = groups[child_group]
        if group.reference != joint.child:
            continue
        chain = reader.axes_chains.get(joint.child)
        first = joint if chain is None else chain[0]
        origin = first.origin
        for inner in ([] if chain is None else chain[1:]):
            origin = origin @ inner.origin  # rotations only (_multi_axis_chain)
        parent_index = body_of[first.parent]
        if parent_index == -1:
            parent = "origin"
            joint_frame = world_links[first.parent] @ origin
        else:
            parent_group = groups[parent_index]
            parent = parent_group.name
            joint_frame = _translation(-parent_group.com) @ parent_group.links[first.parent] @ origin
        rot = joint_frame[:3, :3]
        kind = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed",
                "floating": "floating", "planar": "planar_axis", "spherical": "spherical"}[joint.type]
        axis = joint.axis
        if joint.type in ("prismatic",):
            # translations are measured in the parent body frame by the engine
            axis = rot @ axis
        if joint.type == "planar" and np.linalg.norm(rot @ axis - axis) > AXIS_TOL:
            reader.problem(joint.line, f"joint {joint.name!r}", "a planar joint whose origin rotation moves its normal is not supported "
                           "(the engine measures the plane in the parent frame and the rotation in the joint frame)")
            continue
        data: dict[str, Any] = {
            "name": joint.name, "type": kind, "parent": parent, "child": group.name,
            "parent_vertex": plain_vector(joint_frame[:3, 3]), "child_vertex": plain_vector(-group.com),
            "orientation_offset": _quaternion_from_matrix(rot),
        }
        if chain is not None:
            out.append(_axes_joint(reader, data, chain))
            continue
        if kind not in ("fixed", "floating", "spherical"):
            data["axis"] = plain_vector(axis)  # (a ball joint has none: its coordinates are the rotation vector's)
        n = {"revolute": 1, "prismatic": 1, "planar_axis": 3, "floating": 6, "fixed": 0, "spherical": 3}[kind]
        if isinstance(joint.damping, list):
            data["damper"] = [float(d) for d in joint.damping]  # a planar joint's (x, y, theta)
        elif joint.damping and n:
            data["damper"] = float(joint.damping)
        if n == 1 and (joint.lower is not None or joint.upper is not None):
            data["limits"] = {"lower": [joint.lower if joint.lower is not None else -math.inf],
                              "upper": [joint.upper if joint.upper is not None else math.inf]}
        if n and joint.effort is not None and joint.effort > 0:
            data["effort_limit"] = float(joint.effort)
        if n and joint.velocity is not None and joint.velocity > 0:
            data["velocity_limit"] = float(joint.velocity)
        if joint.friction and n and kind != "floating":
            data["friction"] = float(joint.friction)  # dry joint friction (docs/physics.md "Joints")
        elif joint.friction:
            reader.unmodelled(UNMODELLED_FRICTION, joint.name)
        if joint.mimic:
            reader.unmodelled(UNMODELLED_MIMIC, f"{joint.name} (of {joint.mimic})")
        if joint.swing_twist is not None:
            reader.unmodelled(UNMODELLED_SWING_TWIST, f"{joint.name} (swing {joint.swing_twist[0]:g}, {joint.swing_twist[1]:g}, "
                              f"twist {joint.swing_twist[2]:g})")
        out.append(data)
    # the dropped leaves' joints go with them
    return out


def _axes_joint(reader, data: dict, chain: list[_Joint]) -> dict:
    """Scene data of a universal or gimbal joint from its chain (_multi_axis_chain): named
    after its first joint, its angles after the chain's joints; limits, efforts, velocities
    and dampers per axis."""
    data["name"] = chain[0].name
    data["type"] = "universal" if len(chain) == 2 else "gimbal"
    data["axes"] = [plain_vector(a) for a in _chain_axes(chain)]
    data["axis_names"] = [j.name for j in chain]
    lower = [j.lower if j.lower is not None else -math.inf for j in chain]
    upper = [j.upper if j.upper is not None else math.inf for j in chain]
    if len(chain) == 3:
        bound = math.pi / 2 - GIMBAL_LOCK_MARGIN
        if lower[1] < -bound or upper[1] > bound:
            reader.note(chain[1].line, f"joint {chain[1].name!r}",
                        f"range [{lower[1]:.6g}, {upper[1]:.6g}] clipped to +-{bound:.6g}: the middle axis of the gimbal "
                        f"{', '.join(j.name for j in chain)} aligns the other two at +-pi/2 (the chain's mass matrix is "
                        "singular there), and its angle is read on one side")
            lower[1], upper[1] = max(lower[1], -bound), min(upper[1], bound)
    if any(math.isfinite(v) for v in lower + upper):
        data["limits"] = {"lower": lower, "upper": upper}
    if any(j.damping for j in chain):
        data["damper"] = [float(j.damping) for j in chain]
    if any(j.effort is not None and j.effort > 0 for j in chain):
        data["effort_limit"] = [float(j.effort) if j.effort is not None and j.effort > 0 else math.inf for j in chain]
    if any(j.velocity is not None and j.velocity > 0 for j in chain):
        data["velocity_limit"] = [float(j.velocity) if j.velocity is not None and j.velocity > 0 else math.inf
                                  for j in chain]
    if any(j.friction for j in chain):
        data["friction"] = [float(j.friction) for j in chain]
    for j in chain:
        if j.mimic:
            reader.unmodelled(UNMODELLED_MIMIC, f"{j.name} (of {j.mimic})")
    return data
