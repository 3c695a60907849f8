"""A PD stand for a legged robot imported from a URDF (`dojo import-urdf --stand`, issue 24 item 4).

The importer's scene (floating, with ground contacts) is given:
- a standing pose: the joint values of the robot's SRDF group state (``standing``,
  ``half_sitting``, ...: example-robot-data ships them beside the URDFs), else the import's
  own pose (each joint at the point of its range nearest zero);
- the base height at which the lowest contact touches the ground in that pose;
- a PD controller holding every revolute and prismatic joint at its standing value, with
  gains from the link masses and inertias (``stand_gains``, critically damped per joint).

Which robots are legged is decided by their structure in the standing pose, not by name:
the contacts within ``SUPPORT_BAND`` of the lowest one (the support) must lie on at least
two different branches of the body tree below the floating base, each reached through at
least ``MIN_LEG_JOINTS`` movable joints and standing on something other than a cylinder
lying on its side (legs, not a base lying on the ground, a hand, or wheels and casters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.model.collisions import GROUND, RIM_POINTS, half_space_contacts, lowest_height
from dojo_cli.scene.urdf import UrdfImport, _initial_poses, _shape, _stand_on_ground, note_text, range_note

# SRDF group states taken as the standing pose, in this order of preference (the names
# example-robot-data uses for quadrupeds and humanoids); else the first state of the file.
STANDING_STATES = ("standing", "half_sitting", "straight_standing", "default")

# Contacts this close to the lowest one (m) support the robot in the standing pose: the
# four corners of a flat sole differ by a few mm in CAD, a lifted swing foot by far more.
SUPPORT_BAND = 0.01

# A leg reaches its foot through at least this many movable joints (a hip and a knee); a
# single joint to a lowest contact is a base lying on the ground. A support contact on the
# rim of a cylinder lying on its side is a wheel or a caster (it rolls), not a foot (_rolls).
MIN_LEG_JOINTS = 2

# Natural frequency of each joint's PD loop times the timestep, omega h. The PD torque is
# explicit (the controller reads the state at step k) and its damper implicit (the joint's
# damper, damper_form: implicit): with kp = I omega^2 and c = 2 I omega the loop is stable for
# omega h < 4 whatever the inertia on the joint's other side, and omega h = 0.3 (omega = 30
# rad/s, 4.8 Hz at h = 0.01) holds a body of radius of gyration l with a gravity sag of about
# g / (l omega^2): 0.02 rad at l = 0.5 m.
STAND_OMEGA_H = 0.3

# Inertia floor about a joint axis (kg m^2; kg for a prismatic): a held side of zero
# inertia (a massless stub) would give the joint no gain at all.
MIN_HELD_INERTIA = 1e-6

# Seconds a stand scene runs for (the check: it holds the robot up for 5 s).
STAND_DURATION = 5.0


@dataclass
class StandReport:
    """What ``add_stand`` did.

    Attributes:
        pose_source: "SRDF FILE state NAME" or "the import's pose (no SRDF group state)".
        feet: names of the bodies whose contacts support the robot.
        kp: joint -> stiffness (N m/rad, N/m); damper: joint -> damping (N m s/rad, N s/m).
        held_inertia: joint -> the inertia about its axis of the side it holds (kg m^2, kg).
        base_height: the floating base's initial height (m).
        com_margin: the horizontal distance of the centre of mass inside the support
            polygon (m, negative: outside; None: the support has no area, e.g. point feet).
        notes: one line each (joints clipped into their range, SRDF joints not in the scene).
    """

    pose_source: str
    feet: list[str]
    kp: dict[str, float] = field(default_factory=dict)
    damper: dict[str, float] = field(default_factory=dict)
    held_inertia: dict[str, float] = field(default_factory=dict)
    base_height: float = 0.0
    com_margin: float | None = None
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ SRDF


def srdf_for(urdf: Path) -> Path | None:
    """The SRDF beside a URDF: ``../srdf/STEM.srdf`` (a ROS description package's layout,
    example-robot-data's) or ``STEM.srdf`` in the URDF's folder; None if neither exists."""
    for candidate in (urdf.parent.parent / "srdf" / f"{urdf.stem}.srdf", urdf.with_suffix(".srdf")):
        if candidate.is_file():
            return candidate
    return None


def read_group_states(srdf: Path) -> dict[str, dict[str, list[float]]]:
    """Group states of an SRDF: state name -> joint name -> values (one per coordinate).

    Raises:
        SceneError: malformed XML or a joint value that is not a list of numbers (file:line).
    """
    from lxml import etree

    try:
        root = etree.parse(str(srdf)).getroot()
    except etree.XMLSyntaxError as exc:
        raise SceneError(Problem(str(srdf), exc.lineno, "srdf", f"malformed XML: {exc.msg}")) from None
    states: dict[str, dict[str, list[float]]] = {}
    for state in root.iter("group_state"):
        values: dict[str, list[float]] = {}
        for joint in state.iter("joint"):
            try:
                values[joint.get("name", "")] = [float(v) for v in (joint.get("value") or "").split()]
            except ValueError:
                raise SceneError(Problem(str(srdf), joint.sourceline, f"group_state {state.get('name')!r}",
                                         f"joint {joint.get('name')!r}: value {joint.get('value')!r} is not a list of numbers")) from None
        states.setdefault(state.get("name", ""), values)
    return states


def standing_state(states: dict[str, dict[str, list[float]]]) -> str | None:
    """The name of the group state to stand in (``STANDING_STATES`` first), or None."""
    for name in STANDING_STATES:
        if name in states:
            return name
    return next(iter(states), None)


# ------------------------------------------------------------------ the stand


def _rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _apply_pose(scene: dict, values: dict[str, list[float]], source: str, report: StandReport) -> set[str]:
    """Joint initial positions from ``values`` (revolute and prismatic joints of the scene),
    each clipped into its range (a note lists the clipped ones). Returns the joints set."""
    by_name = {j["name"]: j for j in scene["joints"]}
    clipped, missing, posed = [], [], set()
    for name, value in values.items():
        joint = by_name.get(name)
        if joint is None:
            if len(value) == 1:
                missing.append(name)  # merged away or dropped by the import (a fixed joint, a massless leaf)
            continue
        if joint["type"] not in ("revolute", "prismatic") or len(value) != 1:
            continue
        x = value[0]
        if "limits" in joint:
            lo, hi = joint["limits"]["lower"][0], joint["limits"]["upper"][0]
            if not lo <= x <= hi:
                clipped.append(f"{name} {x:g} -> [{lo:g}, {hi:g}]")
                x = min(max(x, lo), hi)
        joint["initial"] = {"position": [x]}
        posed.add(name)
    if clipped:
        report.notes.append(f"{source}: joint values outside their range, clipped: {', '.join(clipped)}")
    if missing:
        report.notes.append(f"{source}: joints not in the scene (merged or dropped by the import), ignored: {', '.join(missing)}")
    return posed


def _revise_range_note(result: UrdfImport, file: str, posed: set[str]) -> None:
    """The importer's note listing the joints it started inside their ranges names only
    those the standing pose left there (none: the note goes), so that what is printed
    after the import is the pose the scene holds."""
    old = range_note(result.moved_into_range)
    if old is None or not posed:
        return
    line = note_text(file, None, "robot", old)
    if line not in result.warnings:
        return
    result.moved_into_range = {j: c for j, c in result.moved_into_range.items() if j not in posed}
    new = range_note(result.moved_into_range)
    i = result.warnings.index(line)
    if new is None:
        del result.warnings[i]
    else:
        result.warnings[i] = note_text(file, None, "robot", new)


# A cylinder whose axis is within this of horizontal (|axis . z| below it) rolls on the
# ground: a wheel or a caster. Standing on its end face it is a foot (a round sole).
WHEEL_AXIS_TILT = 0.5


def _rolls(shape: dict, rot: np.ndarray) -> bool:
    """Whether a contact shape on a body of orientation rot (3, 3), world from body, is a
    cylinder lying on its side (its axis, the shape frame's z, nearly horizontal)."""
    if shape.get("type") != "cylinder":
        return False
    axis = rot @ _quaternion_matrix(shape.get("orientation_offset", [1.0, 0.0, 0.0, 0.0])) @ np.array([0.0, 0.0, 1.0])
    return abs(float(axis[2])) < WHEEL_AXIS_TILT


def _contact_points(scene: dict, poses: dict) -> list[tuple[str, np.ndarray, bool]]:
    """(body, lowest world point, on a wheel) of each ground contact in the poses (a sphere's
    bottom, a shape's lowest point; on a wheel: a cylinder lying on its side, _rolls)."""
    out = []
    for c in scene["contacts"]:
        if c.get("against", "ground") != "ground":
            continue
        rot, pos = poses[c["body"]]
        if "shape" in c:
            made = half_space_contacts("", 0, _shape(c["shape"]), GROUND, rim_points=c.get("rim_points", RIM_POINTS))
            for m in made:
                centre = pos + rot @ np.asarray(m.offset, float)
                z = lowest_height([m], rot, pos)
                out.append((c["body"], np.array([centre[0], centre[1], z]), _rolls(c["shape"], rot)))
        else:
            point = pos + rot @ np.asarray(c["offset"], float)
            out.append((c["body"], np.array([point[0], point[1], point[2] - c["radius"]]), False))
    return out


def _polygon_margin(points: np.ndarray, p: np.ndarray) -> float | None:
    """Signed distance of the 2-D point p inside the convex hull of points (k, 2) (negative
    outside), or None when the hull has no area."""
    from scipy.spatial import ConvexHull, QhullError

    if len(points) < 3:
        return None
    try:
        hull = ConvexHull(points)
    except QhullError:
        return None  # collinear: a line of support (two point feet), no area
    # each facet: normal . x + offset <= 0 inside
    return float(-np.max(hull.equations[:, :2] @ p + hull.equations[:, 2]))


def _subtrees(scene: dict) -> dict[str, list[str]]:
    """Joint name -> the bodies at and below its child."""
    children: dict[str, list[dict]] = {}
    for j in scene["joints"]:
        children.setdefault(j["parent"], []).append(j)

    def below(body: str) -> list[str]:
        out = [body]
        for j in children.get(body, []):
            out += below(j["child"])
        return out

    return {j["name"]: below(j["child"]) for j in scene["joints"]}


def _inertia_about(bodies: list[dict], poses: dict, names: list[str], point: np.ndarray, axis: np.ndarray) -> float:
    """Moment of inertia (kg m^2) of the rigid group ``names`` about the line (point, axis)."""
    total = 0.0
    for b in bodies:
        if b["name"] not in names:
            continue
        rot, pos = poses[b["name"]]
        inertia = np.asarray(b["inertia"], float)
        r = pos - point
        r_perp = r - axis * (axis @ r)
        total += float(axis @ rot @ inertia @ rot.T @ axis) + b["mass"] * float(r_perp @ r_perp)
    return total


def stand_gains(scene: dict, poses: dict, support: set[str], timestep: float) -> dict[str, tuple[float, float, float]]:
    """Joint -> (kp, damper, held inertia) of every revolute and prismatic joint.

    Each joint holds one side of the robot up: the side away from the ground (for a joint
    on a leg, everything above it, since its foot is on the ground; for an arm's joint, the
    arm beyond it). I is that side's moment of inertia about the joint's axis in the
    standing pose (its mass for a prismatic joint), and with omega = STAND_OMEGA_H / h the
    gains are those of a critically damped second-order loop, kp = I omega^2 and
    c = 2 I omega (damping ratio 1 for the joint moving that side alone).
    """
    omega = STAND_OMEGA_H / timestep
    subtree = _subtrees(scene)
    names = [b["name"] for b in scene["bodies"]]
    gains = {}
    for j in scene["joints"]:
        if j["type"] not in ("revolute", "prismatic"):
            continue
        below = subtree[j["name"]]
        held = [n for n in names if n not in below] if support & set(below) else below
        if j["parent"] == "origin":
            prot, ppos = np.eye(3), np.zeros(3)
        else:
            prot, ppos = poses[j["parent"]]
        frame = prot @ _quaternion_matrix(j.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
        point = ppos + prot @ np.asarray(j.get("parent_vertex", [0.0, 0.0, 0.0]), float)
        if j["type"] == "revolute":
            axis = frame @ np.asarray(j["axis"], float)
            inertia = _inertia_about(scene["bodies"], poses, held, point, axis / np.linalg.norm(axis))
        else:
            inertia = float(sum(b["mass"] for b in scene["bodies"] if b["name"] in held))
        inertia = max(inertia, MIN_HELD_INERTIA)
        gains[j["name"]] = (inertia * omega**2, 2.0 * inertia * omega, inertia)
    return gains


def _quaternion_matrix(q) -> np.ndarray:
    from dojo_cli.math.quaternion import matrix_from_quaternion

    return matrix_from_quaternion(np.asarray(q, float))


def _legs(scene: dict, support_bodies: set[str]) -> dict[str, int]:
    """Branch (the joint leaving the floating base's body) -> movable joints on the way to
    its deepest support body, for the branches holding support bodies."""
    base = scene["joints"][0]["child"]
    parent_joint = {j["child"]: j for j in scene["joints"]}
    legs: dict[str, int] = {}
    for body in support_bodies:
        movable, branch, b = 0, None, body
        while b != base and b in parent_joint:
            j = parent_joint[b]
            movable += j["type"] in ("revolute", "prismatic")
            branch = j["name"]
            b = j["parent"]
        if branch is not None and b == base:
            legs[branch] = max(legs.get(branch, 0), movable)
    return legs


def add_stand(scene: dict, result: UrdfImport, urdf: Path, file: str, srdf: Path | None = None) -> StandReport:
    """Turn an imported floating scene with ground contacts into a PD stand (module doc).

    Args:
        scene: the importer's scene data (changed in place).
        result: the import (its joints, root to leaves).
        urdf: the URDF file (its SRDF is looked for beside it unless ``srdf`` is given).
        file: the name errors give.

    Raises:
        SceneError: the scene is not floating or has no ground contacts, or the robot has
            no legs (the message says what its support is).
    """
    joints = scene["joints"]
    if not joints or joints[0]["type"] != "floating" or not scene.get("contacts"):
        raise SceneError(Problem(file, None, "stand", "needs a floating robot with ground contacts (--floating and --contacts feet or collision)"))
    srdf = srdf if srdf is not None else srdf_for(Path(urdf))
    report = StandReport(pose_source="the import's pose (each joint at the point of its range nearest zero; no SRDF group state)", feet=[])
    if srdf is not None:
        states = read_group_states(srdf)
        name = standing_state(states)
        if name is not None:
            report.pose_source = f"{srdf.name} group state {name!r}"
            posed = _apply_pose(scene, states[name], f"{srdf.name}: group_state {name!r}", report)
            _revise_range_note(result, file, posed)
    _stand_on_ground(scene, result)
    base = joints[0]
    report.base_height = float(base["initial"]["position"][2])
    poses = _initial_poses(result)
    lift = np.array([0.0, 0.0, report.base_height])
    poses = {k: (rot, pos + lift) for k, (rot, pos) in poses.items()}
    points = _contact_points(scene, poses)
    lowest = min(p[2] for _, p, _ in points)
    support = [(b, p) for b, p, _ in points if p[2] <= lowest + SUPPORT_BAND]
    support_bodies = {b for b, _ in support}
    feet = {b for b, p, wheel in points if p[2] <= lowest + SUPPORT_BAND and not wheel}
    legs = _legs(scene, feet)
    real_legs = {k: n for k, n in legs.items() if n >= MIN_LEG_JOINTS}
    if len(real_legs) < 2:
        where = ", ".join(sorted(support_bodies))
        raise SceneError(Problem(file, None, "stand", (
            f"the robot has no legs to stand on: in the standing pose ({report.pose_source}) its lowest contacts are on "
            f"{where} ({len(real_legs)} branch(es) of the body tree below {base['child']!r} reach them through "
            f">= {MIN_LEG_JOINTS} movable joints, on feet rather than wheels; a legged robot has two or more)")))
    report.feet = sorted(support_bodies)
    total = sum(b["mass"] for b in scene["bodies"])
    com = sum(b["mass"] * poses[b["name"]][1] for b in scene["bodies"]) / total
    report.com_margin = _polygon_margin(np.array([p[:2] for _, p in support]), com[:2])
    gains = stand_gains(scene, poses, support_bodies, float(scene.get("timestep", 0.01)))
    targets = {}
    for j in joints:
        if j["name"] not in gains:
            continue
        kp, c, inertia = gains[j["name"]]
        report.kp[j["name"]], report.damper[j["name"]], report.held_inertia[j["name"]] = kp, c, inertia
        j["damper"] = float(j.get("damper", 0.0) if not isinstance(j.get("damper"), list) else j["damper"][0]) + c
        position = (j.get("initial") or {}).get("position") or [0.0]
        targets[j["name"]] = [float(position[0])]
    scene["damper_form"] = "implicit"  # stiff dampers: the L-stable form (docs/physics.md, Joints)
    scene["duration"] = STAND_DURATION
    scene["controller"] = {
        "type": "pd",
        "kp": {name: [report.kp[name]] for name in targets},
        "kd": 0.0,
        "targets": targets,
    }
    return report
