"""Scene joints of the MJCF joints: a body's joints (applied in turn by MuJoCo) as one Dojo
joint between it and its parent (the table of the package's docstring), its hinges as a
universal or gimbal joint, or any sequence of its slides and hinges as a chain of Dojo
joints through light links (``split_joints``), with springs, dampers, limits and armature on
the Dojo joints' coordinates; and which integrator a model's armature needs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dojo_cli.errors import Problem
from dojo_cli.model.mechanism import AXES_ORTHOGONAL_TOL, ORIGIN_NAME, axis_basis
from dojo_cli.scene.importing.messages import listed, recovery_time_text
from dojo_cli.scene.importing.rotations import GIMBAL_LOCK_MARGIN
from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.mjcf.bodies import _scene_parent
from dojo_cli.scene.mjcf.elements import _Body, _Joint
from dojo_cli.scene.mjcf.options import CoordinateMap, MjcfImport
from dojo_cli.scene.mjcf.reader import _Reader
from dojo_cli.scene.mjcf.rotations import _quaternion_from_matrix


# Two directions are the same (or orthogonal) to this (dot products of unit vectors).
AXIS_TOL = 1e-9
# split_joints: each link body between two joints of a chain has this fraction of the body's
# mass and inertia (a sphere's, centred on its joint's anchor). MuJoCo's joints in one body
# have no mass between them; the links' kinetic energy changes the motion by about this
# fraction (the Hopper-to-Humanoid drops: well below their 5 cm budget; a swinging, sliding
# and twisting arm's centre of mass by 1e-3 m in 1 s, tests/simulation/test_mjcf_mujoco.py),
# while a much lighter link (1e-6) makes the step's Newton matrix ill-conditioned.
LINK_MASS_FRACTION = 1e-3


# The free coordinate of each scene joint type that is its one rotation (the variational
# integrator's rotor term, core maximal/rotor.h), and whether its translations turn with it.
_ARMATURE_KIND = "rotor inertia (armature) of slides, balls and free joints"
_ROTATION_SLOT = {"revolute": 0, "cylindrical": 1, "planar_axis": 2, "free_revolute": 3}
_TURNING = ("planar_axis", "free_revolute")


def _warn_outside_limits(reader: _Reader, scene: dict) -> None:
    """One warning naming the joints that start outside their range (Gymnasium's Ant: ankles at
    0, range 30..70 degrees). MuJoCo's soft limits push them in over their time constant; ours
    bring a violated limit in over the same 0.02 s, first order (core maximal/residual.h,
    limit_target), and are exact inside the range. The start stays the file's (a --keyframe
    inside the ranges avoids the difference)."""
    outside = []
    for j in scene["joints"]:
        limits = j.get("limits")
        if not limits:
            continue
        position = (j.get("initial") or {}).get("position") or [0.0] * len(limits["lower"])
        for k, (lo, hi) in enumerate(zip(limits["lower"], limits["upper"])):
            if not lo <= position[k] <= hi:
                outside.append(f"{j['name']} ({position[k]:.4g} not in [{lo:.4g}, {hi:.4g}])")
    if outside:
        reader.warnings.append(f"warning: {reader.file}: {len(outside)} joints start outside their range, brought in over "
                               f"a time constant of {recovery_time_text()}, as MuJoCo's soft limits push them in: "
                               + listed(outside, 4))


def _armature_integrator(reader: _Reader, scene: dict, joints: list[dict], contacts: list[dict],
                         coordinates: list[CoordinateMap]) -> None:
    """Rotor inertia: the variational integrator models it on the rotation of a joint with one
    rotation (every hinge) and on the slides of a body on the world that does not turn (or
    turns about its centre of mass: the linear rotor, core maximal/rotor.h); the
    minimal-coordinate layer (integrator: rk4, no contacts or limits) also on other
    translations that do not turn with a rotation. A slide's armature a model with contacts
    or limits needs (or one turning with a planar joint's hinge) cannot be mapped: refused,
    or left out with drop_unsupported. A ball's or free joint's rotation neither."""
    from dojo_cli.model.compiled import linear_rotor_applies
    from dojo_cli.model.joint_types import free_dimensions

    limited = [j["name"] for j in joints if "limits" in j]
    translational = []  # (scene joint, coordinate) of armature the variational integrator lacks
    for j in joints:
        free_translations, free_rotations = free_dimensions(j["type"])
        for k, a in enumerate(j.get("armature", [])):
            if not a or _ROTATION_SLOT.get(j["type"]) == k:
                continue
            # a slide from the world whose body does not turn (or turns about its centre of
            # mass): the variational integrator's linear rotor (core maximal/rotor.h)
            if k < free_translations and linear_rotor_applies(j["parent"] == ORIGIN_NAME, free_rotations,
                                                              j.get("child_vertex", [0.0, 0.0, 0.0])):
                continue
            translational.append((j, k))
    if not translational:
        return
    rk4_can = all(j["type"] not in _TURNING and j["type"] not in ("spherical", "floating") for j, _ in translational)
    if rk4_can and not contacts and not limited:
        scene["integrator"] = "rk4"
        return
    why = (f"this model has {len(contacts)} contacts" if contacts else f"this model has joint limits ({listed(limited, 3)})") if rk4_can else "the slide turns with the body's hinge"
    mjcf_joints = {x.name: x for b in reader.bodies for x in b.joints}
    for j, k in translational:
        # the MJCF joint whose coordinate it is (a chain's unit or link is no MJCF joint or body);
        # a ball's three coordinates are one MJCF joint's
        held = [c for c in coordinates if c.dojo_joint == j["name"]]
        first = mjcf_joints[next((c.joint for c in held if c.kind in ("slide", "hinge") and c.coordinate == k), held[0].joint)]
        reader.unsupported(first.file, first.line, f"joint {first.name!r}", _ARMATURE_KIND,
                           f"armature {first.armature:g} of a {first.type} joint: the variational integrator models rotor inertia "
                           "on hinges and on the slides of a body on the world that does not turn, the rk4 integrator "
                           f"(no contacts or limits) also on other slides that do not turn ({why})")
        if reader.options.drop_unsupported:
            j["armature"][k] = 0.0
    for j in joints:
        if "armature" in j and not any(j["armature"]):
            del j["armature"]


def _joints(reader: _Reader, result: MjcfImport) -> tuple[list[dict], list[CoordinateMap]]:
    out: list[dict] = []
    coordinates: list[CoordinateMap] = []
    qadr = dadr = 0
    for i, body in enumerate(reader.bodies):
        for j in body.joints:
            n_q, n_v = {"free": (7, 6), "ball": (4, 3), "slide": (1, 1), "hinge": (1, 1)}[j.type]
            coordinates.append(CoordinateMap(j.name, j.type, "", ref=j.ref, qpos_adr=qadr, dof_adr=dadr))
            qadr += n_q
            dadr += n_v
    k = 0
    chains = []  # bodies split into chains: "<body> (<n> links)"
    for i, body in enumerate(reader.bodies):
        maps = coordinates[k:k + len(body.joints)]
        k += len(body.joints)
        if body.host != i:
            continue
        parent, parent_com, pos, rot = _scene_parent(reader, body)
        element = f"body {body.name!r}"
        if not body.joints:
            out.append({"name": f"{body.name}_weld", "type": "fixed", "parent": parent, "child": body.name,
                        "parent_vertex": plain_vector(pos + rot @ body.com - parent_com), "child_vertex": [0.0, 0.0, 0.0],
                        "orientation_offset": _quaternion_from_matrix(rot)})
            continue
        joint = _body_joint(reader, body, element, parent, parent_com, pos, rot, maps)
        if isinstance(joint, list):
            out.extend(joint)
            chains.append(f"{body.name} ({len(joint) - 1} link{'' if len(joint) == 2 else 's'})")
        elif joint is not None:
            out.append(joint)
    if chains:
        are = "body is a chain" if len(chains) == 1 else "bodies are chains"
        reader.notes.append(f"{len(chains)} {are} of joints through light links (--split-joints), each link "
                            f"{LINK_MASS_FRACTION:g} of its body's mass and inertia, which MuJoCo does not have between a "
                            "body's joints (the motion changes by about that fraction): " + listed(chains, 4))
    return out, coordinates


def _body_joint(reader: _Reader, body: _Body, element: str, parent: str, parent_com: np.ndarray, pos: np.ndarray,
                rot: np.ndarray, maps: list[CoordinateMap]) -> dict | list[dict] | None:
    """A body's joints as one Dojo joint (the package docstring's table); with split_joints a
    sequence no Dojo joint is becomes a chain through light links (_joint_chain); else refused
    naming why."""
    joints = body.joints
    kinds = [j.type for j in joints]
    first = joints[0]
    data = _joint_data(_unit_name(joints), parent, body.name, _anchor(joints), body.com, parent_com, pos, rot)
    for m in maps:
        m.dojo_joint = data["name"]
    if kinds == ["free"]:
        if body.parent >= 0 and reader.bodies[body.parent].host >= 0:
            reader.problem(first.file, first.line, f"joint {first.name!r}", "a free joint must be on a top-level body")
            return None
        data["type"] = "floating"
        maps[0].frame = np.eye(3)
        data["parent_vertex"] = plain_vector(pos - parent_com)
        data["child_vertex"] = plain_vector(-body.com)
        if first.armature:  # MuJoCo's acts on the body origin's velocity and the angular velocity
            reader.unsupported(first.file, first.line, f"joint {first.name!r}", _ARMATURE_KIND,
                               f"armature {first.armature:g} of a free joint: rotor inertia on the angular velocity "
                               "(MuJoCo's) is not our floating joint's rotation coordinates'")
        return data
    if kinds == ["ball"]:
        data["type"] = "spherical"
        maps[0].frame = np.eye(3)
        _passive(reader, data, joints, [(0, 1.0)], 3)
        if first.limited:
            reader.unsupported(first.file, first.line, f"joint {first.name!r}", "ball joint cone limits",
                               "a ball joint's cone limit (range) is not modelled")
        return data
    if "free" in kinds or "ball" in kinds:
        reader.problem(body.file, body.line, element,
                       f"joints {_listed_joints(joints)}: MuJoCo applies them in turn; no Dojo joint is that sequence "
                       "(a ball or a free joint is supported alone; slides and hinges in any order with --split-joints)")
        return None
    if len(joints) > 1 and kinds == ["hinge"] * len(joints):
        return _hinges(reader, body, element, data, parent, parent_com, pos, rot, maps)
    plan = _slides_hinge_plan(joints, rot)
    if isinstance(plan, str):
        if reader.options.split_joints:
            return _joint_chain(reader, body, _chain_units(joints, rot), parent, parent_com, pos, rot, maps)
        reader.problem(body.file, body.line, element,
                       f"joints {_listed_joints(joints)}: MuJoCo applies them in turn; no Dojo joint is that sequence: "
                       f"{plan} (a chain of joints through light links: --split-joints)")
        return None
    return _planned(reader, data, joints, maps, plan)


def _listed_joints(joints: list[_Joint]) -> str:
    return ", ".join(f"{j.name} ({j.type})" for j in joints)


def _unit_name(joints: list[_Joint]) -> str:
    """The scene joint's name: the MJCF joint's, or theirs joined by '_' (rootx_rootz_rooty)."""
    return joints[0].name if len(joints) == 1 else "_".join(j.name for j in joints)


def _anchor(joints: list[_Joint]) -> np.ndarray:
    """(3,) the Dojo joint's point in the body frame: the rotation's (hinge, ball) anchor, else
    the first joint's (a slide's pos moves nothing in MuJoCo); a free joint's, the origin."""
    rotating = [j for j in joints if j.type in ("hinge", "ball")]
    return rotating[0].pos if rotating else (np.zeros(3) if joints[0].type == "free" else joints[0].pos)


def _joint_data(name: str, parent: str, child: str, anchor: np.ndarray, child_com: np.ndarray, parent_com: np.ndarray,
                pos: np.ndarray, rot: np.ndarray) -> dict[str, Any]:
    """A scene joint through ``anchor`` (body frame), the joint frame the body's at qpos0.

    Args:
        anchor: (3,) the joint point in the body frame.
        child_com: (3,) the child's centre of mass in the body frame.
        parent_com: (3,) the parent's centre of mass in the parent's frame.
        pos, rot: (3,), (3, 3) the body frame at qpos0 in the parent's frame.
    """
    return {"name": name, "parent": parent, "child": child,
            "parent_vertex": plain_vector(pos + rot @ anchor - parent_com), "child_vertex": plain_vector(anchor - child_com),
            "orientation_offset": _quaternion_from_matrix(rot)}


def _slides_hinge_plan(joints: list[_Joint], rot: np.ndarray) -> tuple[dict, list[tuple[int, float]], int] | str:
    """Up to 3 orthogonal slides then at most one hinge as one Dojo joint: its type and axis,
    each MJCF joint's (coordinate, sign) and the number of free coordinates; or why no Dojo
    joint is that sequence. Pure: nothing is reported.

    Args:
        joints: slides and hinges, in MuJoCo's order.
        rot: (3, 3) the body frame at qpos0 in the parent's frame: the Dojo joint measures its
            translations in the parent frame, MuJoCo's slides are along axes of the body frame
            as the joints before them left it (mj_kinematics), here the body's at qpos0.
    """
    slides = [j for j in joints if j.type == "slide"]
    hinges = [j for j in joints if j.type == "hinge"]
    if len(hinges) > 1:
        return (f"{len(slides)} slide{'' if len(slides) == 1 else 's'} and {len(hinges)} hinges (a Dojo joint has "
                "slides, then at most one hinge)")
    if len(slides) > 3:
        return f"{len(slides)} slides (a Dojo joint translates along at most 3)"
    if [j.type for j in joints] != ["slide"] * len(slides) + ["hinge"] * len(hinges):
        return ("a slide after a hinge: the hinge turns the slide's axis, a Dojo joint translates in its parent's "
                "frame and then turns")
    # slide directions in the parent frame (MuJoCo: the body's frame before its rotations)
    directions = [rot @ j.axis for j in slides]
    for ia, a in enumerate(slides):
        for ib in range(ia + 1, len(slides)):
            c = float(np.dot(directions[ia], directions[ib]))
            if abs(c) > AXIS_TOL:
                return f"the slides {a.name} and {slides[ib].name} are not orthogonal (cosine {c:.4g})"
    hinge_axis = hinges[0].axis if hinges else None  # in the joint frame (= the body frame at qpos0)
    if hinge_axis is not None and slides and np.linalg.norm(rot @ hinge_axis - hinge_axis) > AXIS_TOL:
        return ("a hinge after slides whose axis the body's orientation turns: Dojo measures the translations in the "
                "parent frame and the rotation in the joint frame about one axis")
    n = len(slides)
    if n == 0:
        return {"type": "revolute", "axis": plain_vector(hinge_axis)}, [(0, 1.0)], 1
    if n == 1:
        d = directions[0]
        if hinge_axis is None:
            return {"type": "prismatic", "axis": plain_vector(d)}, [(0, 1.0)], 1
        if abs(abs(float(np.dot(d, hinge_axis))) - 1.0) > AXIS_TOL:
            return "a slide and a hinge about another axis"
        return {"type": "cylindrical", "axis": plain_vector(hinge_axis)}, [(0, float(np.dot(d, hinge_axis))), (1, 1.0)], 2
    fields: dict[str, Any] = {}
    if n == 3:
        basis = np.eye(3)
        fields["type"] = "free_revolute" if hinge_axis is not None else "fixed_orientation"
        if hinge_axis is not None:
            fields["axis"] = plain_vector(hinge_axis)
    else:
        normal = np.cross(directions[0], directions[1])
        if hinge_axis is not None:
            if abs(abs(float(np.dot(normal, hinge_axis))) - 1.0) > AXIS_TOL:
                return "a hinge not normal to its two slides"
            axis = hinge_axis
            fields["type"] = "planar_axis"
        else:
            axis = normal
            fields["type"] = "planar"
        fields["axis"] = plain_vector(axis)
        basis = axis_basis(axis)[:2]
    slots = []
    for j, d in zip(slides, directions):
        dots = basis @ d
        c = int(np.argmax(np.abs(dots)))
        if abs(abs(float(dots[c])) - 1.0) > AXIS_TOL:
            return (f"slide {j.name} along {plain_vector(d)} (parent frame) is not along the Dojo joint's basis "
                    f"{[plain_vector(b) for b in basis]}: its coordinate would mix with the other slides'")
        slots.append((c, float(np.sign(dots[c]))))
    if hinge_axis is not None:
        slots.append((n, 1.0))
    return fields, slots, n + (1 if hinge_axis is not None else 0)


def _planned(reader: _Reader, data: dict, joints: list[_Joint], maps: list[CoordinateMap],
             plan: tuple[dict, list[tuple[int, float]], int]) -> dict:
    fields, slots, nfree = plan
    data.update(fields)
    return _finish(reader, data, joints, maps, slots, nfree)


def _chain_units(joints: list[_Joint], rot: np.ndarray) -> list[list[_Joint]]:
    """A body's slides and hinges cut into the Dojo joints of a chain (split_joints): each run
    of slides one prismatic, planar or fixed_orientation joint where it is one
    (_slides_hinge_plan), each run of hinges one universal or gimbal joint where it is
    exactly one with no armature (_axes_joint_mismatch; those joints carry no rotor) and, a
    gimbal, its middle hinge's range readable (_middle_range_readable), else one joint per
    MJCF joint. The first unit's translations are in the parent frame (the
    body's at qpos0 turned by ``rot``), the later ones' in the link before it (the body's
    frame as the joints before them left it)."""
    runs: list[list[_Joint]] = []
    for j in joints:
        if runs and runs[-1][0].type == j.type:
            runs[-1].append(j)
        else:
            runs.append([j])
    units: list[list[_Joint]] = []
    for run in runs:
        frame = rot if not units else np.eye(3)
        if run[0].type == "slide":
            whole = len(run) > 1 and not isinstance(_slides_hinge_plan(run, frame), str)
        else:
            whole = (len(run) > 1 and _axes_joint_mismatch(run) is None and not any(j.armature for j in run)
                     and (len(run) == 2 or _middle_range_readable(run[1])))
        units += [run] if whole else [[j] for j in run]
    return units


def _middle_range_readable(middle: _Joint) -> bool:
    """Whether a gimbal reads the middle hinge's whole range (inside +-(pi/2 - GIMBAL_LOCK_MARGIN),
    where its angles are regular): else _axes_joint would clip it, and a chain, which has its
    links anyway, keeps MuJoCo's range as revolute joints."""
    bound = math.pi / 2 - GIMBAL_LOCK_MARGIN
    return middle.limited and -bound <= middle.range[0] - middle.ref and middle.range[1] - middle.ref <= bound


def _joint_chain(reader: _Reader, body: _Body, units: list[list[_Joint]], parent: str, parent_com: np.ndarray,
                 pos: np.ndarray, rot: np.ndarray, maps: list[CoordinateMap]) -> list[dict]:
    """A body's joints as a chain of Dojo joints through light link bodies (split_joints).

    MuJoCo moves the body by each joint in turn (mj_kinematics): a slide along its axis in the
    body frame as the joints before it left it, a hinge about its anchor and axis in that
    frame, each anchor carried by the joints before it. That is the chain parent -> link_1 ->
    ... -> body, one Dojo joint per unit (_chain_units), each in a frame that is the body's at
    qpos0 (the first in the parent's, turned by ``rot``), so hinges about different anchors,
    axes that are not orthogonal and slides after hinges are exact. Each link, ``<body>_<unit>``,
    sits at its unit's anchor with LINK_MASS_FRACTION of the body's mass and inertia (a
    sphere's), so it moves only with the units before it; the body's mass is on the last
    link, the body itself. Each joint keeps its MJCF joints' limits, springs, dampers,
    armature and actuators on their coordinates, qpos - ref.
    """
    quat = _quaternion_from_matrix(rot)
    mass = LINK_MASS_FRACTION * body.mass
    # a sphere of the body's mean gyration radius, scaled by the same fraction
    inertia = LINK_MASS_FRACTION * float(np.trace(body.inertia)) / 3.0
    out = []
    previous, previous_com = parent, parent_com
    k = 0
    for u, unit in enumerate(units):
        unit_maps = maps[k:k + len(unit)]
        k += len(unit)
        last = u == len(units) - 1
        name = _unit_name(unit)
        anchor = _anchor(unit)
        child = body.name if last else f"{body.name}_{name}"
        child_com = body.com if last else anchor
        data: dict[str, Any] = {
            "name": name, "parent": previous, "child": child,
            # the first joint's frame is the body's at qpos0 in the parent; the links' frames are the body's
            "parent_vertex": plain_vector((pos + rot @ anchor - parent_com) if u == 0 else (anchor - previous_com)),
            "child_vertex": plain_vector(anchor - child_com),
            "orientation_offset": quat if u == 0 else [1.0, 0.0, 0.0, 0.0],
        }
        for m in unit_maps:
            m.dojo_joint = name
        if len(unit) > 1 and unit[0].type == "hinge":
            out.append(_axes_joint(reader, data, unit, unit_maps))
        else:
            plan = _slides_hinge_plan(unit, rot if u == 0 else np.eye(3))
            assert not isinstance(plan, str), plan  # each unit is one Dojo joint (_chain_units)
            out.append(_planned(reader, data, unit, unit_maps, plan))
        if not last:
            reader.links.append({"name": child, "mass": float(mass), "inertia": [inertia] * 3,
                                 "shape": {"type": "sphere", "radius": float(max(np.sqrt(2.5 * inertia / mass), 1e-4)) if mass > 0 else 0.01}})
        previous, previous_com = child, child_com
    return out


def _axes_joint_mismatch(joints: list[_Joint]) -> str | None:
    """Why a body's hinges are no universal (2) or gimbal (3) joint, or None when they are one.

    MuJoCo turns a body by its hinges in turn, each about its anchor and axis in the body frame
    as the hinges before it left it (mj_kinematics): R = R0 R(a1, t1) R(a2, t2) (R(a3, t3)).
    Through one anchor that is the universal or gimbal joint's rotation in its joint frame
    (docs/scenes.md), the joint frame being the body's at qpos0. Hinges about different anchors
    also move the later anchors: a rotation coupled to a translation that no Dojo joint has.
    The core reads the angles about mutually orthogonal axes (euler_joints.h, Tait-Bryan);
    with other axes the same rotations have another chart, which it does not have.
    """
    if len(joints) > 3:
        return f"{len(joints)} hinges (a universal joint has 2 axes, a gimbal 3)"
    anchor = joints[0].pos
    for j in joints[1:]:
        if np.linalg.norm(j.pos - anchor) > AXIS_TOL:
            return (f"the hinges turn about different points ({joints[0].name} at {plain_vector(anchor)}, {j.name} at "
                    f"{plain_vector(j.pos)} in the body frame): a universal or gimbal joint turns about one point")
    for ia, a in enumerate(joints):
        for b in joints[ia + 1:]:
            c = float(np.dot(a.axis, b.axis))
            if abs(c) > AXES_ORTHOGONAL_TOL:
                return (f"the axes of {a.name} and {b.name} are not orthogonal (cosine {c:.4g}): universal and gimbal "
                        "joints turn about mutually orthogonal axes")
    return None


def _hinges(reader: _Reader, body: _Body, element: str, data: dict, parent: str, parent_com: np.ndarray,
            pos: np.ndarray, rot: np.ndarray, maps: list[CoordinateMap]) -> dict | list[dict] | None:
    """A body's 2 or 3 hinges: one universal or gimbal joint where it is exactly MuJoCo's
    composition (_axes_joint_mismatch), else with split_joints a chain through light links,
    else refused naming why. Armature on such hinges: the universal and gimbal joints carry
    no rotor inertia (core maximal/rotor.h models a joint with one rotation), the chain's
    revolute joints do; with split_joints the chain keeps it, else it is refused or left out
    (drop_unsupported)."""
    joints = body.joints
    why = _axes_joint_mismatch(joints)
    armature = [j for j in joints if j.armature]
    if why is None and not (armature and reader.options.split_joints):
        if armature:
            reader.unsupported(armature[0].file, armature[0].line, f"joint {armature[0].name!r}",
                               "rotor inertia (armature) of hinges joined into a universal or gimbal joint",
                               f"armature of {', '.join(j.name for j in armature)}: the universal or gimbal joint "
                               f"{', '.join(j.name for j in joints)} carries no rotor inertia (keep it on a chain of "
                               "revolute joints through light links: --split-joints)")
        return _axes_joint(reader, data, joints, maps)
    if reader.options.split_joints:
        return _joint_chain(reader, body, _chain_units(joints, rot), parent, parent_com, pos, rot, maps)
    reader.problem(body.file, body.line, element,
                   f"joints {', '.join(f'{j.name} ({j.type})' for j in joints)}: MuJoCo applies them in turn; "
                   f"no Dojo joint is that sequence: {why} (a chain of revolute joints through light links: --split-joints)")
    return None


def _axes_joint(reader: _Reader, data: dict, joints: list[_Joint], maps: list[CoordinateMap]) -> dict:
    """A body's hinges through one anchor with orthogonal axes as one universal or gimbal
    joint: its axes the hinges' (body frame at qpos0, the joint frame), its angles the hinges'
    qpos - ref in order, named after them; limits, springs and dampers per angle. A gimbal's
    middle angle is read in [-pi/2, pi/2] (at +-pi/2 the other two axes align): a range beyond
    it is clipped GIMBAL_LOCK_MARGIN inside, with a note (import-urdf's rule)."""
    data["type"] = "universal" if len(joints) == 2 else "gimbal"
    data["axes"] = [plain_vector(j.axis) for j in joints]
    data["axis_names"] = [j.name for j in joints]
    slots = [(k, 1.0) for k in range(len(joints))]
    for m, (c, s) in zip(maps, slots):
        m.coordinate, m.sign = c, s
    saved = [j.armature for j in joints]
    for j in joints:
        j.armature = 0.0  # not modelled on these joints (_hinges reported it)
    _passive(reader, data, joints, slots, len(joints))
    for j, a in zip(joints, saved):
        j.armature = a
    if len(joints) == 3:
        bound = math.pi / 2 - GIMBAL_LOCK_MARGIN
        limits = data.get("limits", {"lower": [-math.inf] * 3, "upper": [math.inf] * 3})
        lower, upper = limits["lower"], limits["upper"]
        if lower[1] < -bound or upper[1] > bound:
            middle = joints[1]
            reader.notes.append(str(Problem(
                middle.file, middle.line, f"joint {middle.name!r}",
                f"range [{lower[1]:.6g}, {upper[1]:.6g}] clipped to +-{bound:.6g}: the middle axis of the gimbal "
                f"{', '.join(j.name for j in joints)} aligns the other two at +-pi/2, where its angles are singular")))
            lower[1], upper[1] = max(lower[1], -bound), min(upper[1], bound)
            data["limits"] = limits
    return data


def _finish(reader: _Reader, data: dict, joints: list[_Joint], maps: list[CoordinateMap], slots: list[tuple[int, float]],
            nfree: int) -> dict:
    for m, (c, s) in zip(maps, slots):
        m.coordinate, m.sign = c, s
    _passive(reader, data, joints, slots, nfree)
    return data


def _passive(reader: _Reader, data: dict, joints: list[_Joint], slots: list[tuple[int, float]], nfree: int) -> None:
    """Springs, dampers, limits and armature of a body's joints on the Dojo joint's coordinates."""
    spring = [0.0] * nfree
    damper = [0.0] * nfree
    offset = [0.0] * nfree
    armature = [0.0] * nfree
    friction = [0.0] * nfree
    lower = [-math.inf] * nfree
    upper = [math.inf] * nfree
    limited = False
    for j, (c, s) in zip(joints, slots):
        if j.type == "ball":
            spring = [j.stiffness] * 3
            damper = [j.damping] * 3
            armature = [j.armature] * 3
            friction = [j.frictionloss] * 3
            if j.frictionloss:
                reader.warn(j.file, j.line, f"joint {j.name!r}", "a ball joint's frictionloss acts on the rates of its "
                            "rotation vector (MuJoCo's on its angular velocity's components: the same at rest)")
            if j.stiffness:
                reader.warn(j.file, j.line, f"joint {j.name!r}", "a ball joint's stiffness acts on its rotation vector "
                            "(MuJoCo's on the quaternion's angle: the same to first order)")
            continue
        spring[c], damper[c], armature[c], friction[c] = j.stiffness, j.damping, j.armature, j.frictionloss
        offset[c] = s * (j.springref - j.ref)
        if j.limited:
            limited = True
            lo, hi = s * (j.range[0] - j.ref), s * (j.range[1] - j.ref)
            lower[c], upper[c] = min(lo, hi), max(lo, hi)
    if any(spring):
        data["spring"] = spring
        if any(offset):
            data["spring_offset"] = offset
    if any(damper):
        data["damper"] = damper
    if any(armature):
        data["armature"] = armature
    if any(friction):
        data["friction"] = friction  # frictionloss: dry joint friction (docs/physics.md "Joints")
    if limited:
        data["limits"] = {"lower": lower, "upper": upper}
