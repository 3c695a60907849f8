"""A PD stand for a legged robot imported from a URDF (`dojo import-urdf --stand`, issue 24 item 4).

The importer's scene (floating, with ground contacts) is given:
- a standing pose: the joint values of the robot's SRDF group state (``standing``,
  ``half_sitting``, ...: example-robot-data ships them beside the URDFs), else the import's
  own pose (each joint at the point of its range nearest zero);
- the base height at which the lowest contact touches the ground in that pose;
- a PD controller holding every revolute and prismatic joint at its standing value, with
  gains from the link masses and inertias (``stand_gains``, critically damped per joint).

Which robots are legged, and which bodies are their feet, is decided by their structure
in the standing pose (dojo_cli.scene.legs: two or more branches below the base whose
joints lift the lowest leaves; not the names, not the collision geometry); the lowest
contacts must then lie on the legs. Where the feet carry no collision element
(``stand_import``), the stand uses the feet rule's contacts instead.

A robot whose support does not hold its centre of mass (the support polygon has no area,
or the centre of mass lies outside it: ``must_balance``) cannot stand under a joint PD: bolt
touches the ground with two round feet, at a point each, and its centre of mass in the
SRDF's pose is 22 mm behind the line between them. On two feet it is leaned instead
(``lean_onto_feet``: the whole robot turned about horizontal axes until both feet touch the
ground and its centre of mass is over the line between them) and ``StandReport.balance``
says that it needs a balance controller, which dojo_cli.optimize.balance makes from the step
(an LQR about that equilibrium: the scene's ``linear`` controller).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.model.collisions import GROUND, RIM_POINTS, half_space_contacts, lowest_height
from dojo_cli.scene.importing.rotations import rotation_about
from dojo_cli.scene.importing.scene_data import shape_of
from dojo_cli.scene.legs import Legs, legs_of
from dojo_cli.scene.urdf import UrdfImport, note_text, range_note
from dojo_cli.scene.urdf.initial_pose import _initial_poses, _stand_on_ground

# SRDF group states taken as the standing pose, in this order of preference (the names
# example-robot-data uses for quadrupeds and humanoids); else the first state of the file.
STANDING_STATES = ("standing", "half_sitting", "straight_standing", "default")

# Contacts this close to the lowest one (m) support the robot in the standing pose: the
# four corners of a flat sole differ by a few mm in CAD, a lifted swing foot by far more.
SUPPORT_BAND = 0.01

# An SRDF group state whose values lie beyond the URDF's joint ranges by more than this
# (rad or m) was written for another model of the robot: the import's pose is used. Less
# is rounding (alex_psyonic_hands' thumbs: 0.001 beyond 0), clipped into the range.
STATE_RANGE_SLACK = 0.01

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

# The lean (lean_onto_feet): Newton steps, the finite-difference step of its Jacobian (rad)
# and the tolerance (m) on its two residuals (the feet's height difference, the centre of
# mass's horizontal distance from the line between them): the geometry is smooth, Newton
# reaches 1e-14 m in three steps on bolt.
LEAN_ITERATIONS = 10
LEAN_STEP = 1e-7
LEAN_TOL = 1e-9


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
            polygon (m, negative: outside; None: the support has no area, e.g. point feet),
            in the standing pose before any lean.
        balance: the support does not hold the centre of mass (must_balance) and the robot
            was leaned onto its two feet (lean_onto_feet): it needs a balance controller
            (dojo_cli.optimize.balance), not the PD the scene has.
        notes: one line each (joints clipped into their range, SRDF joints not in the scene).
    """

    pose_source: str
    feet: list[str]
    kp: dict[str, float] = field(default_factory=dict)
    damper: dict[str, float] = field(default_factory=dict)
    held_inertia: dict[str, float] = field(default_factory=dict)
    base_height: float = 0.0
    com_margin: float | None = None
    legs: str = ""
    notes: list[str] = field(default_factory=list)
    balance: bool = False


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


def _beyond_ranges(scene: dict, values: dict[str, list[float]]) -> list[str]:
    """The scene's joints to which ``values`` give a value beyond their range by more than
    STATE_RANGE_SLACK ("name value [lower, upper]")."""
    out = []
    for j in scene["joints"]:
        value = values.get(j["name"])
        if j["type"] not in ("revolute", "prismatic") or not value or len(value) != 1 or "limits" not in j:
            continue
        lo, hi = j["limits"]["lower"][0], j["limits"]["upper"][0]
        if not lo - STATE_RANGE_SLACK <= value[0] <= hi + STATE_RANGE_SLACK:
            out.append(f"{j['name']} {value[0]:g} [{lo:g}, {hi:g}]")
    return out


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


def _contact_points(scene: dict, poses: dict) -> list[tuple[str, np.ndarray]]:
    """(body, lowest world point) of each ground contact in the poses (a sphere's bottom,
    a shape's lowest point)."""
    out = []
    for c in scene["contacts"]:
        if c.get("against", "ground") != "ground":
            continue
        rot, pos = poses[c["body"]]
        if "shape" in c:
            made = half_space_contacts("", 0, shape_of(c["shape"]), GROUND, rim_points=c.get("rim_points", RIM_POINTS))
            for m in made:
                centre = pos + rot @ np.asarray(m.offset, float)
                z = lowest_height([m], rot, pos)
                out.append((c["body"], np.array([centre[0], centre[1], z])))
        else:
            point = pos + rot @ np.asarray(c["offset"], float)
            out.append((c["body"], np.array([point[0], point[1], point[2] - c["radius"]])))
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


def stand_gains(scene: dict, poses: dict, support: set[str], timestep: float) -> dict[str, tuple[list, list, list]]:
    """Joint -> (kp, damper, held inertia), one per coordinate, of every revolute,
    prismatic, universal and gimbal joint.

    Each joint holds one side of the robot up: the side away from the ground (for a joint
    on a leg, everything above it, since its foot is on the ground; for an arm's joint, the
    arm beyond it). I is that side's moment of inertia about the joint's axis in the
    standing pose (its mass for a prismatic joint; about each axis of a universal or gimbal
    joint, turned by the angles before it: core/maximal/euler_joints.h), and with omega =
    STAND_OMEGA_H / h the gains are those of a critically damped second-order loop,
    kp = I omega^2 and c = 2 I omega (damping ratio 1 for the joint moving that side alone).
    """
    omega = STAND_OMEGA_H / timestep
    subtree = _subtrees(scene)
    names = [b["name"] for b in scene["bodies"]]
    gains = {}
    for j in scene["joints"]:
        if j["type"] not in ("revolute", "prismatic", "universal", "gimbal"):
            continue
        below = subtree[j["name"]]
        held = [n for n in names if n not in below] if support & set(below) else below
        if j["parent"] == "origin":
            prot, ppos = np.eye(3), np.zeros(3)
        else:
            prot, ppos = poses[j["parent"]]
        frame = prot @ _quaternion_matrix(j.get("orientation_offset", [1.0, 0.0, 0.0, 0.0]))
        point = ppos + prot @ np.asarray(j.get("parent_vertex", [0.0, 0.0, 0.0]), float)
        if j["type"] == "prismatic":
            inertias = [float(sum(b["mass"] for b in scene["bodies"] if b["name"] in held))]
        else:
            axes = [j["axis"]] if j["type"] == "revolute" else j["axes"]
            angles = (j.get("initial") or {}).get("position") or [0.0] * len(axes)
            inertias, turn = [], frame
            for axis, angle in zip(axes, angles):
                a = np.asarray(axis, float) / np.linalg.norm(axis)
                inertias.append(_inertia_about(scene["bodies"], poses, held, point, turn @ a))
                turn = turn @ rotation_about(a, float(angle))  # R(a1, t1) R(a2, t2) ...
        inertias = [max(i, MIN_HELD_INERTIA) for i in inertias]
        gains[j["name"]] = ([i * omega**2 for i in inertias], [2.0 * i * omega for i in inertias], inertias)
    return gains


def _quaternion_matrix(q) -> np.ndarray:
    from dojo_cli.math.quaternion import matrix_from_quaternion

    return matrix_from_quaternion(np.asarray(q, float))


def _leg_bodies(scene: dict, legs: Legs) -> set[str]:
    """The bodies of the robot's legs (each branch's subtree)."""
    subtree = _subtrees(scene)
    return {b for leg in legs.legs for b in subtree[leg.branch]}


def feet_without_contacts(scene: dict, result: UrdfImport) -> list[str]:
    """The feet (dojo_cli.scene.legs, in the import's pose) on which the scene has no ground
    contact: a file without collision elements there (human.urdf has none at all,
    simple_humanoid.urdf only on its trunk). Empty for a robot without legs."""
    legs = legs_of(scene["joints"], _initial_poses(result))
    if not legs.legged:
        return []
    touching = {c["body"] for c in scene.get("contacts", []) if c.get("against", "ground") == "ground"}
    return [foot for foot in legs.feet if foot not in touching]


def stand_import(path, options, shown: str, srdf: Path | None = None, timestep: float | None = None):
    """``dojo import-urdf --stand``: the URDF read with ``options`` (floating), and made a
    stand (add_stand). Where the legs' feet have no collision element, the file is read
    with ``--contacts feet`` instead (the feet rule gives a foot with no collision element
    a flat sole under its inertia box), with a note. Returns (UrdfImport, StandReport).

    Raises:
        SceneError: as read_urdf and add_stand.
    """
    import dataclasses

    from dojo_cli.scene.urdf import read_urdf

    result = read_urdf(path, options, shown)
    bare = feet_without_contacts(result.scene, result) if options.contacts == "collision" else []
    if bare:
        result = read_urdf(path, dataclasses.replace(options, contacts="feet", self_collision=False), shown)
    if timestep is not None:
        result.scene["timestep"] = timestep  # the gains depend on it
    report = add_stand(result.scene, result, Path(path), shown, srdf=srdf)
    if bare:
        report.notes.append(f"the feet {', '.join(bare)} have no collision element in the file: contacts at the feet "
                            "(--contacts feet) instead of the collision shapes")
    return result, report


def apply_standing_pose(scene: dict, result: UrdfImport, urdf: Path, file: str, report: StandReport,
                        srdf: Path | None = None) -> None:
    """Set the joints of an imported scene to the standing pose (module doc): the SRDF's
    group state (``srdf``, else the one beside ``urdf``) unless it lies beyond the joint
    ranges; ``report.pose_source`` and its notes say which."""
    srdf = srdf if srdf is not None else srdf_for(Path(urdf))
    report.pose_source = "the import's pose (each joint at the point of its range nearest zero; no SRDF group state)"
    if srdf is not None:
        states = read_group_states(srdf)
        name = standing_state(states)
        forbidden = _beyond_ranges(scene, states[name]) if name is not None else []
        if forbidden:
            # written for another model of the robot (simple_humanoid.urdf's leg ranges are
            # not those of its SRDF's half_sitting: clipped, its legs would differ by 0.5 rad)
            report.notes.append(f"{srdf.name}: group_state {name!r} lies outside this URDF's joint ranges "
                                f"(by more than {STATE_RANGE_SLACK:g}): {', '.join(forbidden)}; the import's pose is used")
        elif name is not None:
            report.pose_source = f"{srdf.name} group state {name!r}"
            posed = _apply_pose(scene, states[name], f"{srdf.name}: group_state {name!r}", report)
            _revise_range_note(result, file, posed)


def must_balance(com_margin: float | None) -> bool:
    """Whether a robot whose centre of mass lies ``com_margin`` (m; None: no area) inside its
    support polygon must balance: no area, or the centre of mass on or outside its edge (a
    joint PD holds a pose; it cannot stop the whole robot tipping over an edge)."""
    return com_margin is None or com_margin <= 0.0


def _centre_of_mass(scene: dict, poses: dict) -> np.ndarray:
    total = sum(b["mass"] for b in scene["bodies"])
    return sum(b["mass"] * poses[b["name"]][1] for b in scene["bodies"]) / total


def _lean_residual(scene: dict, result: UrdfImport, feet: list[str], turn: np.ndarray) -> np.ndarray:
    """(2,) for the base turned to the rotation vector ``turn`` and stood on the ground: the
    height of the first foot's lowest contact point above the second's, and the horizontal
    distance of the centre of mass from the line through the two (m)."""
    base = scene["joints"][0]
    base["initial"]["position"][3:6] = [float(v) for v in turn]
    _stand_on_ground(scene, result)
    poses = _initial_poses(result)
    lowest: dict[str, np.ndarray] = {}
    for body, point in _contact_points(scene, poses):
        if body in feet and (body not in lowest or point[2] < lowest[body][2]):
            lowest[body] = point
    a, b = lowest[feet[0]], lowest[feet[1]]
    along = (b - a)[:2] / np.linalg.norm((b - a)[:2])
    across = np.array([-along[1], along[0]])
    return np.array([a[2] - b[2], float(across @ (_centre_of_mass(scene, poses)[:2] - a[:2]))])


def lean_onto_feet(scene: dict, result: UrdfImport, feet: list[str]) -> np.ndarray | None:
    """Turn the standing robot (the x and y components of its floating base's rotation
    vector: about the world's x and y axes for a base upright before) until both ``feet``
    touch the ground (their lowest contact points level) and its centre of mass is over the
    line between those points: the equilibrium of a robot on two point feet (Newton's method,
    LEAN_*). The base stays on the ground. Returns the turn (rad, about x and y) or None, the
    pose unchanged, where Newton does not converge."""
    base = scene["joints"][0]
    start = list(base["initial"]["position"])
    turn = np.asarray(start[3:6], dtype=float).copy()
    for _ in range(LEAN_ITERATIONS):
        r = _lean_residual(scene, result, feet, turn)
        if np.max(np.abs(r)) <= LEAN_TOL:
            return turn[:2] - np.asarray(start[3:5], dtype=float)
        jacobian = np.zeros((2, 2))
        for k in range(2):
            d = np.zeros(3)
            d[k] = LEAN_STEP
            jacobian[:, k] = (_lean_residual(scene, result, feet, turn + d) - r) / LEAN_STEP
        try:
            turn[:2] -= np.linalg.solve(jacobian, r)
        except np.linalg.LinAlgError:
            break
    base["initial"]["position"] = start
    _stand_on_ground(scene, result)
    return None


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
    report = StandReport(pose_source="", feet=[])
    apply_standing_pose(scene, result, urdf, file, report, srdf)
    _stand_on_ground(scene, result)
    base = joints[0]
    report.base_height = float(base["initial"]["position"][2])
    poses = _initial_poses(result)  # the base where its initial position puts it
    legs = legs_of(joints, poses)
    report.legs = legs.reason
    if not legs.legged:
        raise SceneError(Problem(file, None, "stand", (
            f"the robot has no legs to stand on: in the standing pose ({report.pose_source}) it is {legs.reason}")))
    points = _contact_points(scene, poses)
    lowest = min(p[2] for _, p in points)
    support = [(b, p) for b, p in points if p[2] <= lowest + SUPPORT_BAND]
    support_bodies = {b for b, _ in support}
    off_feet = sorted(support_bodies - _leg_bodies(scene, legs))
    if off_feet:
        raise SceneError(Problem(file, None, "stand", (
            f"its lowest contacts in the standing pose ({report.pose_source}) are on {', '.join(off_feet)}, not on its "
            f"legs ({', '.join(legs.feet)}): its collision shapes there reach below its feet")))
    report.feet = sorted(support_bodies)
    total = sum(b["mass"] for b in scene["bodies"])
    com = sum(b["mass"] * poses[b["name"]][1] for b in scene["bodies"]) / total
    report.com_margin = _polygon_margin(np.array([p[:2] for _, p in support]), com[:2])
    if must_balance(report.com_margin):
        support_text = ("has no area" if report.com_margin is None else
                        f"does not hold its centre of mass ({-report.com_margin * 1e3:.0f} mm outside it)")
        if len(report.feet) == 2:
            lean = lean_onto_feet(scene, result, report.feet)
            if lean is not None:
                report.balance = True
                report.base_height = float(base["initial"]["position"][2])
                poses = _initial_poses(result)
                report.notes.append(
                    f"its support ({', '.join(report.feet)}) {support_text}: no joint PD holds it up; leaned "
                    f"{math.degrees(lean[0]):.2f} deg about x, {math.degrees(lean[1]):.2f} deg about y so that both "
                    "feet touch and the centre of mass is over the line between them, to be balanced there by a "
                    "full-state law (dojo_cli.optimize.balance)")
        if not report.balance:
            report.notes.append(f"its support ({', '.join(report.feet)}) {support_text}: the PD stand will not hold "
                                f"it up (a balance controller is made for two feet, this robot has {len(report.feet)}"
                                f"{'' if len(report.feet) != 2 else ' but they cannot both touch with the centre of mass between them'})")
    gains = stand_gains(scene, poses, support_bodies, float(scene.get("timestep", 0.01)))
    targets = {}
    kps = {}
    for j in joints:
        if j["name"] not in gains:
            continue
        kp, c, inertia = gains[j["name"]]
        n = len(kp)
        # report per coordinate: a universal or gimbal joint's by its axes' names
        coordinates = j.get("axis_names") or ([j["name"]] if n == 1 else [f"{j['name']}[{k}]" for k in range(n)])
        for k, coordinate in enumerate(coordinates):
            report.kp[coordinate], report.damper[coordinate], report.held_inertia[coordinate] = kp[k], c[k], inertia[k]
        given = j.get("damper", 0.0)
        given = list(given) if isinstance(given, list) else [float(given)] * n
        given = given * n if len(given) == 1 else given
        j["damper"] = [float(g) + ck for g, ck in zip(given, c)] if n > 1 else float(given[0]) + c[0]
        position = (j.get("initial") or {}).get("position") or [0.0] * n
        targets[j["name"]] = [float(v) for v in position[:n]]
        kps[j["name"]] = kp
    scene["damper_form"] = "implicit"  # stiff dampers: the L-stable form (docs/physics.md, Joints)
    scene["duration"] = STAND_DURATION
    scene["controller"] = {
        "type": "pd",
        "kp": kps,
        "kd": 0.0,
        "targets": targets,
    }
    return report
