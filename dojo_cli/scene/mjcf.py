"""Import MuJoCo MJCF models as scenes (plain scene data, validated by the loader).

What is read (MuJoCo's XML reference, https://mujoco.readthedocs.io/en/stable/XMLreference.html):
- ``<include file>`` (its ``<mujoco>`` children take its place), ``<compiler>`` (``angle``,
  ``eulerseq``, ``inertiafromgeom``, ``coordinate`` local only, ``settotalmass``,
  ``autolimits``, ``meshdir``/``assetdir``), ``<option>`` (``timestep``, ``gravity``),
  ``<default>`` classes (nested, ``class``, ``childclass``), ``<asset><mesh>``,
  ``<worldbody>``'s body tree, ``<contact><exclude>``, ``<actuator>`` (motor, position,
  velocity) and ``<keyframe>``.
- Frames: ``pos`` with one of ``quat``, ``axisangle``, ``euler`` (``eulerseq``: lower case
  axes move with the frame, upper case stay), ``xyaxes``, ``zaxis``; ``fromto`` on geoms.

Bodies. A scene body is an MJCF body at its centre of mass with the MJCF body frame's
orientation (the engine's body frame is the centre of mass). Its mass and inertia come from
``<inertial>`` or, where the body has none (``inertiafromgeom`` auto) or always (true),
from its geoms by MuJoCo's density rule (uniform density, 1000 kg/m^3 by default, or the
geom's ``mass``): sphere, capsule (a cylinder and two hemispheres), cylinder, box,
ellipsoid and mesh (its convex hull), summed by the parallel-axis rule about the body's
centre of mass (MuJoCo's ``mjCBody::InertiaFromGeom``), then scaled by ``settotalmass``.

Joints. A body's joints (MuJoCo applies them in order, each about its own anchor and axis in
the body frame) become one Dojo joint between the body and its parent, coordinate zero at
the file's placement (``qpos0``; a joint's ``ref`` is its value there):

| MJCF joints of a body | Dojo joint |
|---|---|
| none | fixed (or merged into the parent: massless bodies always, every body with ``merge_fixed``) |
| hinge | revolute about the hinge axis |
| slide | prismatic |
| 2 or 3 orthogonal slides | planar / fixed_orientation |
| 1, 2 or 3 orthogonal slides, then a hinge normal to them (or along the one slide) | cylindrical, planar_axis, free_revolute |
| ball | spherical (rotation vector of the ball's quaternion) |
| free | floating |
| 2 or 3 hinges through one anchor, axes mutually orthogonal | universal / gimbal (the hinges' angles) |

Other combinations (hinges about different anchors or axes that are not orthogonal, a hinge
before a slide) are sequences of rotations no Dojo joint has; they are refused with the
body's line, or, hinges alone, with ``split_hinges`` a chain of revolute joints through light
links (as are hinges with armature, which universal and gimbal joints do not carry).

``<option><flag>``: what it turns off (contact, constraint, limit, equality, frictionloss,
spring, damper, gravity, clampctrl, filterparent, actuation) is left out as MuJoCo leaves it out.

Contacts. MuJoCo's filter decides which geom pairs collide: ``(contype1 & conaffinity2) or
(contype2 & conaffinity1)``, not on the same body or weld, not parent and child (MuJoCo's
``filterparent``, the world exempt), not ``<exclude>``d; bodies without joints in the
world (props) are in the world's weld and collide with moving geoms only; the world's own
non-plane geoms that moving geoms collide with are one fixed body, WORLD_BODY. A moving geom against a world plane
is a shape contact against that half-space (``ground`` for the plane z = 0); a pair of
moving geoms is a shape contact against the other body's shape. ``friction`` is the larger
of the two geoms' sliding coefficients (MuJoCo's default mixing), ``condim`` 1 the impact
model (no friction), 3 the nonlinear cone (4 and 6, torsional and rolling friction, are
refused, or imported as 3 with drop_unsupported).

What cannot be mapped is refused, one problem per element (``file:line: element:
message``), or with ``drop_unsupported`` left out with one warning per kind: tendons,
equality constraints, sensors, explicit contact pairs, fluid forces (``<option density
viscosity>``), heightfields, actuators other than motor/position/velocity or on
tendons/sites, geom pairs the collision table lacks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError, SceneFileError
from dojo_cli.model.mechanism import AXES_ORTHOGONAL_TOL, ORIGIN_NAME, axis_basis

DEFAULT_TIMESTEP = 0.002
"""MuJoCo's default ``<option timestep>`` (s)."""
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
DEFAULT_DENSITY = 1000.0
"""MuJoCo's default geom density (kg/m^3, water)."""
DEFAULT_FRICTION = 1.0
"""MuJoCo's default sliding friction of a geom."""
# Bodies lighter than MuJoCo's mjMINVAL (1e-15 kg) have no mass: a welded one merges into its
# parent, a moving one is refused (MuJoCo refuses it too).
MASSLESS = 1e-15
# Two directions are the same (or orthogonal) to this (dot products of unit vectors).
AXIS_TOL = 1e-9
# Contacts of shape pairs join a step's solve only within this of touching (m), as
# import-urdf's --contacts collision (docs/physics.md, "Contact margins").
CONTACT_MARGIN = 0.01
# An ellipsoid or mesh collides as the convex hull of at most this many points (each a contact).
HULL_VERTICES = 32
# Points sampled on an ellipsoid's surface before the hull reduction.
ELLIPSOID_SAMPLES = 16
CONTACT_MODES = ("file", "none")
# split_hinges: each link body between two hinges of a chain has this fraction of the body's
# mass and inertia (a sphere's, centred on the hinges' anchor). MuJoCo's hinges in one body
# have no mass between them; the links' kinetic energy changes the motion by about this
# fraction (the Hopper-to-Humanoid drops: well below their 5 cm budget), while a much
# lighter link (1e-6) makes the step's Newton matrix ill-conditioned.
LINK_MASS_FRACTION = 1e-3
# A gimbal's middle angle is read in [-pi/2, pi/2] (core/maximal/euler_joints.h): at +-pi/2 its
# first and last axes align and its angles are singular. A range for it beyond that (or none)
# is clipped this far inside, with a note (import-urdf's GIMBAL_LOCK_MARGIN, the same rule).
GIMBAL_LOCK_MARGIN = 0.05
# The body holding the world's own non-plane geoms that moving geoms collide with (MuJoCo's
# name of body 0, which no model's body can have).
WORLD_BODY = "world"
# A contact may start this far inside (m): MuJoCo's soft contacts settle a few mm in; a model
# saved from a MuJoCo run starts there, and the first step pushes it out.
PENETRATION_TOL = 0.005
# A body inside a half-space is lifted (along world z) only when the half-space's normal
# rises at least this much: a floor or a slope, not a wall.
_LIFTABLE_NORMAL_Z = 0.5

_GEOM_TYPES = ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "hfield", "sdf")
_JOINT_TYPES = ("free", "ball", "slide", "hinge")
_ACTUATORS = ("motor", "position", "velocity", "general", "intvelocity", "damper", "cylinder", "muscle", "adhesion")
# top-level sections read for their physics; the others draw, annotate or size the model
_UNSUPPORTED_SECTIONS = {"tendon": "tendons", "equality": "equality constraints", "sensor": "sensors",
                         "flexcomp": "flexible bodies", "deformable": "flexible bodies", "skin": "skins"}
# <option><flag> switches that the import follows, with their default (MuJoCo's mjtDisableBit):
# constraint (every constraint: contacts, limits, equality, dry friction), contact, limit,
# equality, frictionloss, spring, damper, gravity, clampctrl (ctrlrange), filterparent,
# actuation (actuators exert no force)
_FLAGS_READ = {k: "enable" for k in ("constraint", "contact", "limit", "equality", "frictionloss", "spring", "damper",
                                     "gravity", "clampctrl", "filterparent", "actuation")}
# switches of the solver, sensors, collision algorithms and diagnostics: no physics of ours
_FLAGS_WITHOUT_PHYSICS = {"warmstart", "sensor", "midphase", "eulerdamp", "autoreset", "nativeccd", "refsafe", "energy",
                          "fwdinv", "invdiscrete", "multiccd", "island", "sleep"}
# switches that are off unless enabled (mjtEnableBit)
_ENABLE_FLAGS = {"override"}
_IGNORED_SECTIONS = {"visual", "statistic", "custom", "size", "extension", "contact", "keyframe", "asset", "default",
                     "compiler", "option", "worldbody", "actuator", "include"}


@dataclass
class MjcfOptions:
    """How an MJCF model becomes a scene.

    Attributes:
        keyframe: the ``<key>`` whose qpos, qvel and ctrl start the scene (None: qpos0 at rest).
        drop_unsupported: import without what cannot be mapped (one warning per kind)
            instead of refusing the file.
        contacts: "file" (MuJoCo's collision filter on the file's geoms) or "none".
        merge_fixed: merge bodies without joints into their parents (massless ones always).
        meshes: keep mesh geoms as drawn meshes.
        split_hinges: a body turned by 2 or 3 hinges that no universal or gimbal joint
            represents exactly (about different anchors, axes not orthogonal, or with armature,
            which those joints do not carry) becomes a chain of revolute joints through light
            link bodies (LINK_MASS_FRACTION of the body's mass each); else refused.
    """

    keyframe: str | None = None
    drop_unsupported: bool = False
    contacts: str = "file"
    merge_fixed: bool = False
    meshes: bool = True
    split_hinges: bool = False


@dataclass
class CoordinateMap:
    """Where an MJCF joint's qpos and qvel go in the scene (for keyframes and comparisons).

    Attributes:
        joint: the MJCF joint's name; kind: its type.
        dojo_joint: the scene joint holding it; ref: its qpos0 (hinge, slide).
        coordinate: the Dojo coordinate index (hinge, slide) and sign, the minimal
            coordinate being ``sign * (qpos - ref)``.
        qpos_adr, dof_adr: its place in MuJoCo's qpos and qvel.
    """

    joint: str
    kind: str
    dojo_joint: str
    ref: float = 0.0
    coordinate: int = 0
    sign: float = 1.0
    qpos_adr: int = 0
    dof_adr: int = 0
    frame: np.ndarray | None = None  # (3, 3) ball/free: rotation of the Dojo joint frame in the body frame


@dataclass
class MjcfImport:
    """An MJCF model read into scene data.

    Attributes:
        scene: plain scene data (what a YAML file would hold), not yet validated.
        warnings: one line each.
        notes: what was done that the user should know (merged bodies, ctrlrange).
        coordinates: one CoordinateMap per MJCF joint, in MuJoCo's order.
        merged: MJCF bodies merged into their parents (name -> the scene body holding it).
        target_ranges: position and velocity actuators' ``ctrlrange`` (name -> (lower,
            upper)): their ctrl is the PD target, clamped at import (keyframes included).
        contact_geoms: the MJCF geom pair of each contact (name -> (its geom, the other geom:
            a world plane or the other body's geom)); unnamed geoms as ``<body>_geom<k>``,
            unnamed world planes as ``world_geom<k>``.
    """

    scene: dict
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coordinates: list[CoordinateMap] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    target_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    contact_geoms: dict[str, tuple[str, str]] = field(default_factory=dict)


# ------------------------------------------------------------------ rotations


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _matrix_from_quaternion(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _quaternion_from_matrix(rot: np.ndarray) -> list[float]:
    """[w, x, y, z], w >= 0 (Shepperd's method); exact for the identity."""
    r = np.asarray(rot, float)
    if np.allclose(r, np.eye(3), rtol=0.0, atol=1e-15):
        return [1.0, 0.0, 0.0, 0.0]
    t = np.trace(r)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(r)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + r[i, i] - r[j, j] - r[k, k])
        q = [0.0] * 4
        q[0] = (r[k, j] - r[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + k] = (r[k, i] + r[i, k]) / s
    q = np.asarray(q) / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    return [float(v) + 0.0 for v in q]


def rotation_vector_from_quaternion(q: np.ndarray) -> np.ndarray:
    """(3,) rotation vector (axis times angle, angle in [0, pi]) of a quaternion [w, x, y, z]."""
    q = np.asarray(q, float) / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return 2.0 * q[1:]
    return 2.0 * math.atan2(s, q[0]) * q[1:] / s


def _quaternion_multiply(a, b) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _vector(values) -> list[float]:
    return [float(v) + 0.0 for v in np.asarray(values, dtype=float).reshape(-1)]


# -------------------------------------------------------------------- reading


@dataclass
class _Geom:
    name: str
    line: int | None
    file: str
    type: str
    size: np.ndarray
    pos: np.ndarray  # (3,) in the MJCF body frame
    rot: np.ndarray  # (3, 3) in the MJCF body frame
    density: float
    mass: float | None
    friction: float
    contype: int
    conaffinity: int
    condim: int
    rgba: list[float] | None
    mesh: str | None = None
    points: np.ndarray | None = None  # mesh vertices (scaled), mesh frame


@dataclass
class _Joint:
    name: str
    line: int | None
    file: str
    type: str
    pos: np.ndarray
    axis: np.ndarray
    ref: float
    springref: float
    stiffness: float
    damping: float
    armature: float
    frictionloss: float
    limited: bool
    range: tuple[float, float]


@dataclass
class _Body:
    name: str
    line: int | None
    file: str
    parent: int  # -1: the world
    pos: np.ndarray  # frame relative to the parent's frame, at qpos0
    rot: np.ndarray
    joints: list[_Joint] = field(default_factory=list)
    geoms: list[_Geom] = field(default_factory=list)
    inertial: tuple[float, np.ndarray, np.ndarray] | None = None  # mass, com, (3,3) inertia in body frame
    # computed
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    world_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    world_rot: np.ndarray = field(default_factory=lambda: np.eye(3))
    host: int = -2  # the scene body carrying it (itself, or the one it merged into); -1 world
    host_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))  # its frame in the host's MJCF frame
    host_rot: np.ndarray = field(default_factory=lambda: np.eye(3))


class _Reader:
    """Reads one MJCF file (and its includes) into bodies, collecting problems and warnings."""

    def __init__(self, path: Path, shown: str, options: MjcfOptions):
        self.path = path
        self.file = shown
        self.options = options
        self.problems: list[Problem] = []
        self.warnings: list[str] = []
        self.dropped: dict[str, list[str]] = {}  # kind -> where
        self.angle_scale = math.pi / 180.0  # MuJoCo's default angle unit is the degree
        self.eulerseq = "xyz"
        self.inertiafromgeom = "auto"
        self.autolimits = True
        self.settotalmass = -1.0
        self.meshdir = path.parent
        self.defaults: dict[str, dict[str, dict[str, str]]] = {}
        self.default_parent: dict[str, str | None] = {}
        self.meshes: dict[str, tuple[Path, np.ndarray, int | None, str]] = {}
        self.bodies: list[_Body] = []
        self.world_geoms: list[_Geom] = []
        self.excludes: list[tuple[str, str]] = []
        self.actuators: list[tuple[Any, str, str]] = []
        self.keys: list[tuple[Any, str]] = []
        self.links: list[dict] = []  # split_hinges' link bodies (scene data)
        self.inert_tendons: list[str] = []  # tendons that exert no force (left out, a note)
        self.constrained_tendons: set[str] = set()  # tendons an <equality><tendon> holds
        self.notes: list[str] = []  # what the import did that the user should know, one line each
        self.worldbody: tuple[str, int | None] | None = None  # the first <worldbody>'s file and line
        self.disabled: set[str] = set()  # the parts of the physics <option><flag> turns off (_FLAGS_READ)
        self.contact_lines: dict[str, tuple[str, int | None]] = {}  # contact name -> its geom's file, line
        self.contact_geoms: dict[str, tuple[str, str]] = {}  # contact name -> (its geom, the other geom)
        self.timestep = DEFAULT_TIMESTEP
        self.gravity = np.array(DEFAULT_GRAVITY)
        self.model = path.stem

    # -- reporting
    def problem(self, file: str, line: int | None, element: str, message: str) -> None:
        self.problems.append(Problem(file, line, element, message))

    def unsupported(self, file: str, line: int | None, element: str, kind: str, message: str) -> None:
        """Something that cannot be mapped: a problem, or with drop_unsupported one warning per kind."""
        if self.options.drop_unsupported:
            self.dropped.setdefault(kind, []).append(f"{file}:{line}" if line else file)
        else:
            self.problem(file, line, element, f"{message} (import without it: --drop-unsupported)")

    def warn(self, file: str, line: int | None, element: str, message: str) -> None:
        self.warnings.append(f"warning: {Problem(file, line, element, message)}")

    # -- XML
    def parse(self, path: Path, shown: str):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SceneFileError(Problem(shown, None, "", f"cannot read the MJCF file: {exc.strerror or exc}")) from None
        from lxml import etree

        try:
            root = etree.fromstring(data, etree.XMLParser(remove_comments=True, resolve_entities=False))
        except etree.XMLSyntaxError as exc:
            raise SceneError(Problem(shown, exc.lineno or None, "", f"malformed XML: {exc.msg}")) from None
        if root.tag != "mujoco":
            raise SceneError(Problem(shown, root.sourceline, f"<{root.tag}>", "not an MJCF model (its root element must be <mujoco>)"))
        return root

    def children(self, element, file: str, depth: int = 0) -> Iterator[tuple[Any, str]]:
        """(child, file) of an element, ``<include>``s replaced by the included file's children."""
        for child in element:
            if not isinstance(child.tag, str):
                continue
            if child.tag != "include":
                yield child, file
                continue
            name = child.get("file")
            if not name:
                self.problem(file, child.sourceline, "<include>", "needs a file attribute")
                continue
            if depth > 16:
                self.problem(file, child.sourceline, "<include>", "includes nested deeper than 16 (a cycle?)")
                continue
            target = (Path(file).parent / name) if not Path(name).is_absolute() else Path(name)
            if not target.is_file():
                target = self.path.parent / name
            shown = str(target)
            if not target.is_file():
                self.problem(file, child.sourceline, f"<include file={name!r}>", "no such file")
                continue
            included = self.parse(target, shown)
            yield from self.children(included, shown, depth + 1)

    # -- values
    def numbers(self, el, file: str, attr: str, count: int | None, default=None, element: str | None = None):
        text = el.get(attr)
        if text is None:
            return None if default is None else np.asarray(default, float)
        try:
            values = np.array([float(t) for t in text.split()], float)
        except ValueError:
            self.problem(file, el.sourceline, element or f"<{el.tag}>", f"{attr}={text!r}: not numbers")
            return None if default is None else np.asarray(default, float)
        if not np.all(np.isfinite(values)):
            self.problem(file, el.sourceline, element or f"<{el.tag}>", f"{attr}={text!r}: must be finite")
            return None if default is None else np.asarray(default, float)
        if count is not None and len(values) != count:
            self.problem(file, el.sourceline, element or f"<{el.tag}>", f"{attr}={text!r}: needs {count} numbers, got {len(values)}")
            return None if default is None else np.asarray(default, float)
        return values

    def attrs(self, el, cls: str | None) -> dict[str, str]:
        """An element's attributes over its default class's for its tag."""
        merged = dict(self.defaults.get(cls or "main", {}).get(el.tag, {}))
        merged.update({k: v for k, v in el.attrib.items()})
        return merged

    def frame(self, el, a: dict, file: str, element: str) -> tuple[np.ndarray, np.ndarray]:
        """(pos, rot) of an element's frame (pos and one orientation attribute)."""
        pos = self.vec(a, "pos", 3, [0, 0, 0], el, file, element)
        given = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in a]
        if len(given) > 1:
            self.problem(file, el.sourceline, element, f"more than one orientation: {', '.join(given)}")
        rot = np.eye(3)
        if "quat" in a:
            q = self.vec(a, "quat", 4, [1, 0, 0, 0], el, file, element)
            if np.linalg.norm(q) > 0:
                rot = _matrix_from_quaternion(q)
            else:
                self.problem(file, el.sourceline, element, "quat must not be zero")
        elif "axisangle" in a:
            v = self.vec(a, "axisangle", 4, [0, 0, 1, 0], el, file, element)
            if np.linalg.norm(v[:3]) > 0:
                rot = _axis_rotation(v[:3], v[3] * self.angle_scale)
            else:
                self.problem(file, el.sourceline, element, "axisangle's axis must not be zero")
        elif "euler" in a:
            v = self.vec(a, "euler", 3, [0, 0, 0], el, file, element) * self.angle_scale
            for ch, angle in zip(self.eulerseq, v):
                r = _axis_rotation(np.eye(3)["xyz".index(ch.lower())], angle)
                # lower case: about the moving frame's axis (intrinsic); upper case: the fixed one
                rot = rot @ r if ch.islower() else r @ rot
        elif "xyaxes" in a:
            v = self.vec(a, "xyaxes", 6, [1, 0, 0, 0, 1, 0], el, file, element)
            x = v[:3] / max(np.linalg.norm(v[:3]), 1e-300)
            y = v[3:] - np.dot(v[3:], x) * x
            if np.linalg.norm(y) < 1e-12:
                self.problem(file, el.sourceline, element, "xyaxes: the two axes are parallel")
            else:
                y /= np.linalg.norm(y)
                rot = np.column_stack([x, y, np.cross(x, y)])
        elif "zaxis" in a:
            rot = self.zaxis(self.vec(a, "zaxis", 3, [0, 0, 1], el, file, element))
        return pos, rot

    @staticmethod
    def zaxis(z: np.ndarray) -> np.ndarray:
        """The smallest rotation taking (0, 0, 1) to z (MuJoCo's zaxis, and fromto's frame)."""
        z = np.asarray(z, float)
        n = np.linalg.norm(z)
        if n < 1e-300:
            return np.eye(3)
        z = z / n
        c = float(z[2])
        axis = np.cross([0.0, 0.0, 1.0], z)
        s = float(np.linalg.norm(axis))
        if s < 1e-14:
            return np.eye(3) if c > 0 else _axis_rotation([1.0, 0.0, 0.0], math.pi)
        return _axis_rotation(axis / s, math.atan2(s, c))

    def vec(self, a: dict, key: str, count: int, default, el, file: str, element: str) -> np.ndarray:
        text = a.get(key)
        if text is None:
            return np.asarray(default, float)
        try:
            values = np.array([float(t) for t in text.split()], float)
        except ValueError:
            self.problem(file, el.sourceline, element, f"{key}={text!r}: not numbers")
            return np.asarray(default, float)
        if not np.all(np.isfinite(values)) or (count and len(values) != count):
            self.problem(file, el.sourceline, element, f"{key}={text!r}: needs {count} finite numbers")
            return np.asarray(default, float)
        return values

    def real(self, a: dict, key: str, default: float, el, file: str, element: str) -> float:
        v = self.vec(a, key, 1, [default], el, file, element)
        return float(v[0])

    def flag(self, a: dict, key: str, default: str, el, file: str, element: str) -> str:
        value = a.get(key, default)
        if value not in ("true", "false", "auto"):
            self.problem(file, el.sourceline, element, f"{key}={value!r}: must be true, false or auto")
            return default
        return value

    # -- the model
    def read(self) -> None:
        root = self.parse(self.path, self.file)
        self.model = root.get("model") or self.path.stem
        # compiler and defaults first: they change how everything else reads
        items = list(self.children(root, self.file))
        for el, file in items:
            if el.tag == "compiler":
                self.read_compiler(el, file)
        for el, file in items:
            if el.tag == "default":
                self.read_default(el, file, None)
        for el, file in items:
            tag = el.tag
            if tag == "option":
                self.read_option(el, file)
            elif tag == "asset":
                for child, cfile in self.children(el, file):
                    if child.tag == "mesh":
                        self.read_mesh(child, cfile)
                    elif child.tag == "hfield":
                        self.unsupported(cfile, child.sourceline, "<hfield>", "heightfields", "heightfields are not supported")
        for el, file in items:
            # before the tendons: a tendon an equality constraint holds exerts forces
            if el.tag == "equality" and not self.off("constraint", "equality"):
                for child, cfile in self.children(el, file):
                    if child.tag == "tendon":
                        self.constrained_tendons |= {child.get(k) for k in ("tendon1", "tendon2")} - {None}
        for el, file in items:
            if el.tag == "actuator":  # before the tendons: an actuated tendon exerts forces
                for child, cfile in self.children(el, file):
                    self.actuators.append((child, cfile, self.default_class(child, None, cfile)))
        for el, file in items:
            tag = el.tag
            if tag == "worldbody":
                self.worldbody = self.worldbody or (file, el.sourceline)
                self.read_body_children(el, file, -1, None)
            elif tag == "contact":
                for child, cfile in self.children(el, file):
                    if child.tag == "exclude":
                        b1, b2 = child.get("body1"), child.get("body2")
                        if not b1 or not b2:
                            self.problem(cfile, child.sourceline, "<exclude>", "needs body1 and body2")
                        else:
                            self.excludes.append((b1, b2))
                    elif child.tag == "pair":
                        self.unsupported(cfile, child.sourceline, "<pair>", "explicit contact pairs",
                                         "explicit contact pairs are not supported (contacts follow contype/conaffinity)")
            elif tag == "keyframe":
                for child, cfile in self.children(el, file):
                    if child.tag == "key":
                        self.keys.append((child, cfile))
            elif tag == "tendon":
                self.read_tendons(el, file)
            elif tag == "equality" and self.off("constraint", "equality"):
                continue  # <flag> turns them off: no physics to map
            elif tag in _UNSUPPORTED_SECTIONS:
                kind = _UNSUPPORTED_SECTIONS[tag]
                if len([c for c in el if isinstance(c.tag, str)]):
                    self.unsupported(file, el.sourceline, f"<{tag}>", kind, f"{kind} are not supported")
            elif tag not in _IGNORED_SECTIONS:
                self.warn(file, el.sourceline, f"<{tag}>", "not read (no physics here maps it)")

    def read_tendons(self, el, file: str) -> None:
        """Tendons cannot be mapped, but one with no limit, spring, damper or friction that no
        actuator drives and no equality constraint holds exerts no force (Gymnasium's Humanoid has two such, kept for
        observations): left out with a note. Any other is unsupported."""
        driven = {a.get("tendon") for a, _f, _c in self.actuators if a.get("tendon")}
        for child, cfile in self.children(el, file):
            a = self.attrs(child, self.default_class(child, None, cfile))
            a = {**self.defaults.get(child.get("class") or "main", {}).get("tendon", {}), **a}
            name = a.get("name") or "(unnamed)"
            forces = [k for k in ("stiffness", "damping", "frictionloss") if float(a.get(k, "0") or 0) != 0]
            limited = a.get("limited", "auto")
            if limited == "true" or (limited == "auto" and self.autolimits and "range" in a):
                forces.append("range")
            if name in driven:
                forces.append("an actuator")
            if name in self.constrained_tendons:
                forces.append("an equality constraint")
            if forces:
                self.unsupported(cfile, child.sourceline, f"tendon {name!r}", "tendons",
                                 f"tendons are not supported (this one has {', '.join(forces)})")
            else:
                self.inert_tendons.append(name)

    def read_compiler(self, el, file: str) -> None:
        a = dict(el.attrib)
        element = "<compiler>"
        if "angle" in a:
            if a["angle"] not in ("degree", "radian"):
                self.problem(file, el.sourceline, element, f"angle={a['angle']!r}: must be degree or radian")
            self.angle_scale = 1.0 if a["angle"] == "radian" else math.pi / 180.0
        if "eulerseq" in a:
            seq = a["eulerseq"]
            if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
                self.problem(file, el.sourceline, element, f"eulerseq={seq!r}: three of x y z X Y Z")
            else:
                self.eulerseq = seq
        if "inertiafromgeom" in a:
            self.inertiafromgeom = self.flag(a, "inertiafromgeom", "auto", el, file, element)
        if a.get("coordinate", "local") != "local":
            self.problem(file, el.sourceline, element, f"coordinate={a['coordinate']!r}: only local frames are read "
                         "(MuJoCo 3 removed global coordinates too)")
        if "autolimits" in a:
            self.autolimits = a["autolimits"] == "true"
        if "settotalmass" in a:
            self.settotalmass = self.real(a, "settotalmass", -1.0, el, file, element)
        for key in ("meshdir", "assetdir"):
            if key in a:
                # relative to the model file's folder (MuJoCo's rule), not to the name shown in messages
                self.meshdir = self.path.parent / a[key]
        for key in ("boundmass", "boundinertia", "balanceinertia", "fusestatic", "discardvisual"):
            if key in a and a[key] not in ("0", "false"):
                self.warn(file, el.sourceline, element, f"{key}={a[key]!r} is not applied")

    def read_option(self, el, file: str) -> None:
        a = dict(el.attrib)
        element = "<option>"
        if "timestep" in a:
            self.timestep = self.real(a, "timestep", DEFAULT_TIMESTEP, el, file, element)
            if not self.timestep > 0:
                self.problem(file, el.sourceline, element, f"timestep must be > 0, got {self.timestep:g}")
        if "gravity" in a:
            self.gravity = self.vec(a, "gravity", 3, DEFAULT_GRAVITY, el, file, element)
        fluid = [k for k in ("density", "viscosity") if self.real(a, k, 0.0, el, file, element) != 0.0]
        if fluid:
            self.unsupported(file, el.sourceline, element, "fluid forces",
                             f"fluid forces ({', '.join(f'{k}={a[k]}' for k in fluid)}) are not modelled")
        wind = self.vec(a, "wind", 3, [0, 0, 0], el, file, element)
        if np.any(wind != 0):
            self.unsupported(file, el.sourceline, element, "fluid forces", "wind is not modelled")
        for flag in el:
            if isinstance(flag.tag, str) and flag.tag == "flag":
                self.read_flag(flag, file)

    def read_flag(self, el, file: str) -> None:
        """``<option><flag>``: MuJoCo's switches of whole parts of the physics (the DeepMind
        Control Suite turns contacts off in its cartpole, pendulum, reacher, point mass and
        swimmer, all constraints in its acrobot, gravity in its finger)."""
        for name, value in el.attrib.items():
            if value not in ("enable", "disable"):
                self.problem(file, el.sourceline, "<flag>", f"{name}={value!r}: must be enable or disable")
            elif name in _FLAGS_READ:
                if value == "disable":
                    self.disabled.add(name)
                else:
                    self.disabled.discard(name)
            elif name not in _FLAGS_WITHOUT_PHYSICS:
                if value != ("disable" if name in _ENABLE_FLAGS else "enable"):
                    self.warn(file, el.sourceline, "<flag>", f"{name}={value!r} is not read (the import is as with "
                              f"{name}={'disable' if name in _ENABLE_FLAGS else 'enable'})")

    def off(self, *parts: str) -> bool:
        """Whether ``<flag>`` turns off any of these parts of the physics."""
        return any(p in self.disabled for p in parts)

    def read_default(self, el, file: str, parent: str | None) -> None:
        name = el.get("class", "main" if parent is None else None)
        if name is None:
            self.problem(file, el.sourceline, "<default>", "a nested default needs a class")
            return
        inherited = {tag: dict(values) for tag, values in self.defaults.get(parent, {}).items()} if parent else {}
        self.defaults[name] = inherited
        self.default_parent[name] = parent
        for child, cfile in self.children(el, file):
            if child.tag == "default":
                self.read_default(child, cfile, name)
            else:
                inherited.setdefault(child.tag, {}).update(child.attrib)

    def default_class(self, el, childclass: str | None, file: str | None = None) -> str:
        cls = el.get("class") or childclass or "main"
        if cls not in self.defaults and cls != "main":
            self.problem(file or self.file, el.sourceline, f"<{el.tag}>", f"unknown default class {cls!r}")
            return "main"
        return cls

    def read_mesh(self, el, file: str) -> None:
        a = dict(self.defaults.get("main", {}).get("mesh", {}))
        a.update(el.attrib)
        name = a.get("name") or (Path(a.get("file", "")).stem if a.get("file") else None)
        if not name or "file" not in a:
            if "vertex" in a and name:
                verts = self.vec(a, "vertex", 0, [0, 0, 0], el, file, f"mesh {name!r}").reshape(-1, 3)
                self.meshes[name] = (Path(), verts, el.sourceline, file)
                return
            self.problem(file, el.sourceline, "<mesh>", "needs a file (or vertex) and a name")
            return
        scale = self.vec(a, "scale", 3, [1, 1, 1], el, file, f"mesh {name!r}")
        self.meshes[name] = (self.meshdir / a["file"], scale, el.sourceline, file)

    def mesh_points(self, name: str, file: str, line, element: str) -> np.ndarray | None:
        if name not in self.meshes:
            self.problem(file, line, element, f"unknown mesh {name!r} (meshes: {', '.join(self.meshes) or 'none'})")
            return None
        path, scale, _mline, _mfile = self.meshes[name]
        if path == Path():
            return scale  # vertex list given inline
        import trimesh  # yourdfpy's dependency; only models with meshes pay for it

        try:
            mesh = trimesh.load(str(path), force="mesh")
            points = np.asarray(mesh.vertices, float) * scale
        except Exception as exc:  # noqa: BLE001 - trimesh raises what its loaders raise
            self.problem(file, line, element, f"cannot read mesh {name!r} ({path}): {type(exc).__name__}: {exc}")
            return None
        if len(points) < 4 or not np.all(np.isfinite(points)):
            self.problem(file, line, element, f"mesh {name!r} has fewer than 4 finite vertices")
            return None
        return points

    def read_body_children(self, el, file: str, parent: int, childclass: str | None) -> None:
        for child, cfile in self.children(el, file):
            tag = child.tag
            if tag == "body":
                self.read_body(child, cfile, parent, childclass)
            elif tag == "geom":
                geom = self.read_geom(child, cfile, childclass)
                if geom is None:
                    continue
                if parent < 0:
                    self.world_geoms.append(geom)
                else:
                    self.bodies[parent].geoms.append(geom)
            elif tag in ("joint", "freejoint"):
                if parent < 0:
                    self.problem(cfile, child.sourceline, f"<{tag}>", "a joint must be inside a body, not the worldbody")
                else:
                    joint = self.read_joint(child, cfile, childclass)
                    if joint is not None:
                        self.bodies[parent].joints.append(joint)
            elif tag == "inertial":
                if parent < 0:
                    continue
                self.read_inertial(child, cfile, self.bodies[parent])
            elif tag in ("site", "camera", "light"):
                continue  # frames, views and lamps: no physics
            elif tag == "frame":
                self.problem(cfile, child.sourceline, "<frame>", "frames are not read; place their children in the body")
            elif tag in ("composite", "flexcomp", "replicate", "attach"):
                self.unsupported(cfile, child.sourceline, f"<{tag}>", f"<{tag}> elements", f"<{tag}> is not supported")
            elif tag == "plugin":
                self.unsupported(cfile, child.sourceline, "<plugin>", "plugins", "plugins are not supported")

    def read_body(self, el, file: str, parent: int, childclass: str | None) -> None:
        name = el.get("name") or f"body{len(self.bodies) + 1}"
        element = f"body {name!r}"
        a = dict(el.attrib)
        pos, rot = self.frame(el, a, file, element)
        if any(b.name == name for b in self.bodies):
            self.problem(file, el.sourceline, element, "duplicate body name")
        body = _Body(name, el.sourceline, file, parent, pos, rot)
        self.bodies.append(body)
        own = el.get("childclass") or childclass
        if own and own not in self.defaults and own != "main":
            self.problem(file, el.sourceline, element, f"unknown childclass {own!r}")
            own = None
        self.read_body_children(el, file, len(self.bodies) - 1, own)

    def read_inertial(self, el, file: str, body: _Body) -> None:
        a = dict(el.attrib)
        element = f"body {body.name!r} <inertial>"
        pos, rot = self.frame(el, a, file, element)
        mass = self.real(a, "mass", math.nan, el, file, element)
        if not mass >= 0:
            self.problem(file, el.sourceline, element, "needs mass >= 0")
            return
        if "fullinertia" in a and any(k in a for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis")):
            self.problem(file, el.sourceline, element, "fullinertia with an orientation (MuJoCo refuses it too)")
            return
        if "fullinertia" in a:
            v = self.vec(a, "fullinertia", 6, [0] * 6, el, file, element)
            inertia = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
        elif "diaginertia" in a:
            inertia = np.diag(self.vec(a, "diaginertia", 3, [0, 0, 0], el, file, element))
        else:
            self.problem(file, el.sourceline, element, "needs diaginertia or fullinertia")
            return
        body.inertial = (mass, pos, rot @ inertia @ rot.T)

    def read_joint(self, el, file: str, childclass: str | None) -> _Joint | None:
        a = self.attrs(el, self.default_class(el, childclass, file)) if el.tag == "joint" else {"type": "free", **el.attrib}
        name = a.get("name") or f"joint{sum(len(b.joints) for b in self.bodies) + 1}"
        element = f"joint {name!r}"
        kind = a.get("type", "hinge")
        if kind not in _JOINT_TYPES:
            self.problem(file, el.sourceline, element, f"unknown joint type {kind!r} (one of: {', '.join(_JOINT_TYPES)})")
            return None
        pos = self.vec(a, "pos", 3, [0, 0, 0], el, file, element)
        axis = self.vec(a, "axis", 3, [0, 0, 1], el, file, element)
        if np.linalg.norm(axis) < 1e-12:
            self.problem(file, el.sourceline, element, "axis must not be zero")
            axis = np.array([0.0, 0.0, 1.0])
        axis = axis / np.linalg.norm(axis)
        scale = self.angle_scale if kind == "hinge" else 1.0
        ref = self.real(a, "ref", 0.0, el, file, element) * scale
        springref = self.real(a, "springref", 0.0, el, file, element) * scale
        range_ = self.vec(a, "range", 2, [0, 0], el, file, element)
        limited = self.flag(a, "limited", "auto", el, file, element)
        limited_bool = (limited == "true") or (limited == "auto" and self.autolimits and "range" in a)
        if limited == "auto" and not self.autolimits and "range" in a:
            self.problem(file, el.sourceline, element, "range without limited, and autolimits is false")
        if limited_bool and kind in ("hinge", "slide") and not range_[0] < range_[1]:
            self.problem(file, el.sourceline, element, f"range {range_.tolist()}: lower must be below upper")
        values = {k: self.real(a, k, 0.0, el, file, element) for k in ("stiffness", "damping", "armature", "frictionloss")}
        for k, v in values.items():
            if v < 0:
                self.problem(file, el.sourceline, element, f"{k} must be >= 0, got {v:g}")
        # what <option><flag> turns off acts on no joint
        limited_bool = limited_bool and not self.off("constraint", "limit")
        for key, parts in (("stiffness", ("spring",)), ("damping", ("damper",)), ("frictionloss", ("constraint", "frictionloss"))):
            if self.off(*parts):
                values[key] = 0.0
        if kind == "hinge":
            range_ = range_ * self.angle_scale
        elif kind == "ball":
            range_ = range_ * self.angle_scale
        return _Joint(name, el.sourceline, file, kind, pos, axis, ref, springref, values["stiffness"], values["damping"],
                      values["armature"], values["frictionloss"], limited_bool, (float(range_[0]), float(range_[1])))

    def read_geom(self, el, file: str, childclass: str | None) -> _Geom | None:
        a = self.attrs(el, self.default_class(el, childclass, file))
        name = a.get("name") or ""
        element = f"geom {name!r}" if name else "<geom>"
        kind = a.get("type", "sphere")
        if kind not in _GEOM_TYPES:
            self.problem(file, el.sourceline, element, f"unknown geom type {kind!r} (one of: {', '.join(_GEOM_TYPES)})")
            return None
        if kind in ("hfield", "sdf"):
            self.unsupported(file, el.sourceline, element, "heightfields" if kind == "hfield" else "SDF geoms",
                             f"{kind} geoms are not supported")
            return None
        size = self.vec(a, "size", 0, [0, 0, 0], el, file, element)
        size = np.concatenate([size, np.zeros(3)])[:3]
        pos, rot = self.frame(el, a, file, element)
        if "fromto" in a:
            ft = self.vec(a, "fromto", 6, [0] * 6, el, file, element)
            if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
                self.problem(file, el.sourceline, element, f"fromto on a {kind}: only capsule, cylinder, box, ellipsoid")
            d = ft[3:] - ft[:3]
            length = float(np.linalg.norm(d))
            if length < 1e-12:
                self.problem(file, el.sourceline, element, "fromto: the two points coincide")
            pos, rot = 0.5 * (ft[:3] + ft[3:]), self.zaxis(d)
            if kind in ("capsule", "cylinder"):
                size[1] = 0.5 * length
            else:
                size[2] = 0.5 * length
        needed = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3, "plane": 0, "mesh": 0}[kind]
        if kind != "plane" and kind != "mesh" and not np.all(size[:needed] > 0):
            self.problem(file, el.sourceline, element, f"size {size[:needed].tolist()}: a {kind} needs {needed} sizes > 0")
            return None
        density = self.real(a, "density", DEFAULT_DENSITY, el, file, element)
        mass = self.real(a, "mass", -1.0, el, file, element) if "mass" in a else None
        friction = self.vec(a, "friction", 0, [DEFAULT_FRICTION], el, file, element)
        contype = int(self.real(a, "contype", 1, el, file, element))
        conaffinity = int(self.real(a, "conaffinity", 1, el, file, element))
        condim = int(self.real(a, "condim", 3, el, file, element))
        rgba = self.vec(a, "rgba", 4, [0.5, 0.5, 0.5, 1], el, file, element).tolist() if "rgba" in a else None
        geom = _Geom(name, el.sourceline, file, kind, size, pos, rot, density, mass, float(friction[0]) if len(friction) else 1.0,
                     contype, conaffinity, condim, rgba)
        if kind == "mesh":
            geom.mesh = a.get("mesh")
            if not geom.mesh:
                self.problem(file, el.sourceline, element, "a mesh geom needs mesh=")
                return None
            # the vertices stay in the file's mesh frame, placed by the geom's pos and orientation
            # (MuJoCo re-centres a mesh internally and offsets the geom by as much: the same place)
            geom.points = self.mesh_points(geom.mesh, file, el.sourceline, element)
            if geom.points is None:
                return None
        return geom


# --------------------------------------------------------------- mass properties


def _hull_properties(points: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(volume, centre, (3,3) inertia about the centre at unit density) of a point set's convex hull."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    centre = points[hull.vertices].mean(axis=0)
    volume = 0.0
    first = np.zeros(3)
    second = np.zeros((3, 3))
    # tetrahedra from an inside point to each (outward-oriented) facet
    for simplex, eq in zip(hull.simplices, hull.equations):
        a, b, c = points[simplex]
        n = np.cross(b - a, c - a)
        if np.dot(n, eq[:3]) < 0:
            b, c = c, b
        v = np.array([centre, a, b, c])
        d = v[1:] - centre
        vol = abs(np.linalg.det(d)) / 6.0
        volume += vol
        first += vol * v.mean(axis=0)
        # second moment of a tetrahedron: vol/20 (sum v v^T + (sum v)(sum v)^T)
        s = v.sum(axis=0)
        second += vol / 20.0 * (v.T @ v + np.outer(s, s))
    com = first / volume
    cov = second - volume * np.outer(com, com)
    inertia = np.trace(cov) * np.eye(3) - cov
    return volume, com, inertia


def geom_mass_properties(geom: _Geom) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre in the body frame, (3,3) inertia about it in the body frame) of a geom.

    MuJoCo's uniform-density solids (mjCGeom::SetInertia): sphere, capsule (a cylinder and
    two hemispheres, each hemisphere's inertia moved by the parallel-axis rule from its own
    centre of mass, 3r/8 from its flat face), cylinder, box, ellipsoid, mesh (its hull).
    """
    s = geom.size
    kind = geom.type
    if kind == "sphere":
        volume = 4.0 / 3.0 * math.pi * s[0] ** 3
        unit = np.full(3, 2.0 / 5.0 * s[0] ** 2)
    elif kind == "capsule":
        r, h = s[0], 2.0 * s[1]
        cyl, sph = math.pi * r * r * h, 4.0 / 3.0 * math.pi * r ** 3
        volume = cyl + sph
        axial = cyl * r * r / 2.0 + sph * 2.0 * r * r / 5.0
        lateral = cyl * (r * r / 4.0 + h * h / 12.0) + sph * (2.0 * r * r / 5.0 + h * h / 4.0 + 3.0 * h * r / 8.0)
        unit = np.array([lateral, lateral, axial]) / volume
    elif kind == "cylinder":
        r, h = s[0], 2.0 * s[1]
        volume = math.pi * r * r * h
        unit = np.array([(3 * r * r + h * h) / 12.0, (3 * r * r + h * h) / 12.0, r * r / 2.0])
    elif kind == "box":
        volume = 8.0 * s[0] * s[1] * s[2]
        unit = np.array([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2]) / 3.0
    elif kind == "ellipsoid":
        volume = 4.0 / 3.0 * math.pi * s[0] * s[1] * s[2]
        unit = np.array([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2]) / 5.0
    elif kind == "mesh":
        volume, centre, inertia = _hull_properties(geom.points)
        mass = geom.mass if geom.mass is not None else geom.density * volume
        rot = geom.rot
        return mass, geom.pos + rot @ centre, mass / volume * (rot @ inertia @ rot.T) if volume > 0 else np.zeros((3, 3))
    else:  # plane: no volume
        return 0.0, geom.pos.copy(), np.zeros((3, 3))
    mass = geom.mass if geom.mass is not None else geom.density * volume
    return mass, geom.pos.copy(), geom.rot @ np.diag(mass * unit) @ geom.rot.T


def _combine(items: list[tuple[float, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, centre of mass and inertia about it of (mass, centre, inertia) items (parallel axis)."""
    mass = sum(m for m, _, _ in items)
    if mass <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in items) / mass
    inertia = np.zeros((3, 3))
    for m, c, i in items:
        d = c - com
        inertia += i + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


# -------------------------------------------------------------------- import


def read_mjcf(path: str | Path, options: MjcfOptions | None = None, shown: str | None = None) -> MjcfImport:
    """Read an MJCF file into scene data.

    Args:
        path: the model's XML file.
        options: how to import it.
        shown: the file name used in messages (default: ``path``).

    Raises:
        SceneFileError: the file cannot be read (exit code 3).
        SceneError: one problem per element that is invalid or cannot be mapped.
    """
    options = options or MjcfOptions()
    path = Path(path)
    reader = _Reader(path, shown or str(path), options)
    reader.read()
    reader_problems_stop(reader)
    result = MjcfImport(scene={})
    _mass_properties(reader)
    _place(reader, options, result)
    if options.contacts == "file" and not reader.off("constraint", "contact"):
        _world_body(reader, result)
    if not any(b.host == i for i, b in enumerate(reader.bodies)):
        file, line = reader.worldbody or (reader.file, None)
        what = "no <body>" if not reader.bodies else "only massless bodies fixed to the world"
        reader.problem(file, line, "<worldbody>", f"{what}: the model has nothing that moves, and a scene needs a body "
                       "(a template whose bodies code adds cannot be imported as it is)")
    reader_problems_stop(reader)
    joints, coordinates = _joints(reader, result)
    result.coordinates = coordinates
    bodies = _bodies(reader, options) + reader.links
    contacts = _contacts(reader, options) if options.contacts == "file" and not reader.off("constraint", "contact") else []
    actuators, controller = _actuators(reader, result) if not reader.off("actuation") else ([], None)
    if reader.off("actuation") and reader.actuators:
        result.notes.append(f"<flag actuation=\"disable\">: the {len(reader.actuators)} actuators exert no force, left out")
    scene: dict[str, Any] = {
        "name": reader.model,
        "description": f"imported from {Path(path).name} by dojo import-mjcf",
        "timestep": float(reader.timestep),
        "gravity": _vector(np.zeros(3) if reader.off("gravity") else reader.gravity),
        "bodies": bodies,
        "joints": joints,
    }
    _armature_integrator(reader, scene, joints, contacts)
    if contacts:
        _place_initial_overlaps(reader, contacts, bodies, result, joints)
    if contacts:
        scene["contacts"] = contacts
    if actuators:
        scene["actuators"] = actuators
    if controller:
        scene["controller"] = controller
    if options.keyframe is not None:
        _keyframe(reader, options.keyframe, scene, result)
    reader_problems_stop(reader)
    for kind, places in reader.dropped.items():
        reader.warnings.append(f"warning: {reader.file}: {kind} left out (--drop-unsupported), {len(places)} at "
                               + ", ".join(places[:4]) + (", ..." if len(places) > 4 else ""))
    _warn_outside_limits(reader, scene)
    result.notes.extend(reader.notes)
    result.contact_geoms = {c["name"]: reader.contact_geoms[c["name"]] for c in contacts}
    if reader.inert_tendons:
        result.notes.append(f"{len(reader.inert_tendons)} tendons left out: no limit, spring, damper, friction or actuator, "
                            f"so no force ({', '.join(reader.inert_tendons)})")
    result.scene = scene
    result.warnings = reader.warnings
    return result


# The free coordinate of each scene joint type that is its one rotation (the variational
# integrator's rotor term, core maximal/rotor.h), and whether its translations turn with it.
_ARMATURE_KIND = "rotor inertia (armature) of slides, balls and free joints"
_ROTATION_SLOT = {"revolute": 0, "cylindrical": 1, "planar_axis": 2, "free_revolute": 3}
_TURNING = ("planar_axis", "free_revolute")


def _warn_outside_limits(reader: _Reader, scene: dict) -> None:
    """One warning naming the joints that start outside their range (Gymnasium's Ant: ankles at
    0, range 30..70 degrees). MuJoCo's soft limits push them in over a few steps; ours are exact,
    so the first step puts them on the bound (the Ant's ankles at 52 rad/s). The start stays the
    file's (a --keyframe inside the ranges avoids it)."""
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
        reader.warnings.append(f"warning: {reader.file}: {len(outside)} joints start outside their range, where the first "
                               f"step puts them on the bound (MuJoCo's soft limits push them in over a few steps): "
                               + ", ".join(outside[:4]) + (", ..." if len(outside) > 4 else ""))


def _armature_integrator(reader: _Reader, scene: dict, joints: list[dict], contacts: list[dict]) -> None:
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
    why = (f"this model has {len(contacts)} contacts" if contacts else f"this model has joint limits ({', '.join(limited[:3])}"
           f"{', ...' if len(limited) > 3 else ''})") if rk4_can else "the slide turns with the body's hinge"
    for j, k in translational:
        source = [x for b in reader.bodies for x in b.joints if x.name == j["name"] or b.name == j["child"]]
        first = next((x for x in source if x.armature and x.type != "hinge"), source[0])
        reader.unsupported(first.file, first.line, f"joint {first.name!r}", _ARMATURE_KIND,
                           f"armature {first.armature:g} of a {first.type} joint: the variational integrator models rotor inertia "
                           "on hinges and on the slides of a body on the world that does not turn, the rk4 integrator "
                           f"(no contacts or limits) also on other slides that do not turn ({why})")
        if reader.options.drop_unsupported:
            j["armature"][k] = 0.0
    for j in joints:
        if "armature" in j and not any(j["armature"]):
            del j["armature"]


def _place_initial_overlaps(reader: _Reader, contacts: list[dict], bodies: list[dict], result: MjcfImport,
                             joints: list[dict]) -> None:
    """A contact whose shapes overlap by more than PENETRATION_TOL at the start (qpos0).

    MuJoCo's soft contacts let a model begin inside the floor and push it out: Gymnasium's
    HumanoidStandup starts with its arms 3.6 cm in, and MuJoCo's contact forces lift them
    out in its first 60 ms (its root rising 1.7 cm on the way) before the body settles.
    Hard contacts give no first step from there. So a body inside the floor (a half-space
    whose normal has an upward component) that hangs from a free joint is placed: its
    tree's free root is lifted by the largest depth (over the normal's z) and a note says
    by how much and why; it then drops that far. Started inside the floor instead, the
    solve at t = 0 fails. Other overlaps (two bodies inside each other, a body fixed to
    the world) start as they are, with one warning naming them: the first step pushes them
    apart as MuJoCo's contacts do, or the solve at t = 0 refuses the scene."""
    from dojo_cli import _core
    from dojo_cli.model.collisions import GROUND, UnsupportedPair, body_pair_contacts, half_space_contacts
    from dojo_cli.model.compiled import contact_shape_parameters
    from dojo_cli.model.shapes import Shape

    poses = {}
    for i, body in enumerate(reader.bodies):
        if body.host == i:
            poses[body.name] = (body.world_pos + body.world_rot @ body.com, np.asarray(_quaternion_from_matrix(body.world_rot)))

    def shape(given: dict) -> Shape:
        params = {k: v for k, v in given.items() if k not in ("type", "position_offset", "orientation_offset")}
        return Shape(given["type"], params, tuple(given["position_offset"]), tuple(given["orientation_offset"]))

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
    overlaps: list[str] = []

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
                         **{k: against[k] for k in ("radius", "height", "size") if k in against}}
                made = body_pair_contacts("", 0, shape(c["shape"]), 1, shape(other))
                names = (c["body"], against["body"])
            else:
                half = GROUND if against == "ground" else {"normal": np.asarray(against["normal"]), "point": np.asarray(against["point"])}
                made = half_space_contacts("", 0, shape(c["shape"]), half, rim_points=c.get("rim_points", 3))
                names = (c["body"], None)
        except UnsupportedPair:
            continue
        depth = 0.0
        for k in made:
            own = names[k.body]
            other_pose = world if k.other < 0 or names[k.other] is None else poses[names[k.other]]
            distance = _core.contact_geometry(k.kind, poses[own][0], poses[own][1], np.asarray(k.offset, float), float(k.radius),
                                              other_pose[0], other_pose[1], contact_shape_parameters(k), False,
                                              list(k.shape_a))["distance"]
            depth = max(depth, -distance)
        if depth <= PENETRATION_TOL:
            continue
        up = 0.0
        if not (isinstance(against, dict) and "body" in against):
            up = 1.0 if against == "ground" else float(np.asarray(against["normal"], float)[2] / np.linalg.norm(against["normal"]))
        root = roots.get(c["body"])
        if up > _LIFTABLE_NORMAL_Z and root is not None:
            lift = lifts.setdefault(root, {"height": 0.0, "contacts": []})
            lift["height"] = max(lift["height"], depth / up)
            lift["contacts"].append(c["name"])
            continue
        what = "the floor" if up > 0.0 or not (isinstance(against, dict) and "body" in against) else f"body {against['body']!r}"
        file, line = reader.contact_lines.get(c["name"], (reader.file, None))
        overlaps.append(f"{c['name']} {depth * 100:.3g} cm inside {what} ({Path(file).name}:{line})")
    if overlaps:
        # MuJoCo pushes such overlaps apart over its first steps; the first step does it here
        # (HumanoidStandup's hands 1.35 cm in its hips: every step converges). One that gives
        # no first step is refused when the scene is built, by the solve at t = 0.
        reader.warn(reader.file, None, "contacts",
                    f"{len(overlaps)} contact{'s' if len(overlaps) > 1 else ''} start inside another body by more than "
                    f"{PENETRATION_TOL * 1000:g} mm at the initial pose (MuJoCo's soft contacts push them apart; "
                    "the first step does here): " + ", ".join(overlaps[:6]) + (", ..." if len(overlaps) > 6 else ""))
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
            f"{len(names)} contact{'s' if len(names) > 1 else ''} ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}) "
            "started inside the floor, which MuJoCo's soft contacts allow and hard contacts do not; it drops that far")


def reader_problems_stop(reader: _Reader) -> None:
    if reader.problems:
        raise SceneError(reader.problems)


def _mass_properties(reader: _Reader) -> None:
    """Each body's mass, centre of mass and inertia (MJCF body frame), then settotalmass."""
    for body in reader.bodies:
        from_geoms = reader.inertiafromgeom == "true" or (reader.inertiafromgeom == "auto" and body.inertial is None)
        if from_geoms:
            items = [geom_mass_properties(g) for g in body.geoms if g.type != "plane"]
            body.mass, body.com, body.inertia = _combine(items)
        elif body.inertial is not None:
            body.mass, body.com, body.inertia = body.inertial
    if reader.settotalmass > 0:
        total = sum(b.mass for b in reader.bodies)
        if total > 0:
            scale = reader.settotalmass / total
            for b in reader.bodies:
                b.mass *= scale
                b.inertia = b.inertia * scale


def _place(reader: _Reader, options: MjcfOptions, result: MjcfImport) -> None:
    """World frames at qpos0, and which scene body carries each MJCF body (merges)."""
    for i, body in enumerate(reader.bodies):
        if body.parent < 0:
            body.world_pos, body.world_rot = body.pos.copy(), body.rot.copy()
        else:
            p = reader.bodies[body.parent]
            body.world_pos = p.world_pos + p.world_rot @ body.pos
            body.world_rot = p.world_rot @ body.rot
        welded = not body.joints
        massless = body.mass <= MASSLESS
        if welded and body.parent >= 0 and (massless or options.merge_fixed):
            parent = reader.bodies[body.parent]
            body.host = parent.host
            body.host_pos = parent.host_pos + parent.host_rot @ body.pos
            body.host_rot = parent.host_rot @ body.rot
            result.merged[body.name] = reader.bodies[body.host].name
        elif massless:
            where = "moves on joints" if body.joints else "is welded to the world"
            if body.parent < 0 and welded:
                # a static body: its geoms are the world's
                body.host = -1
                body.host_pos, body.host_rot = body.world_pos.copy(), body.world_rot.copy()
                result.merged[body.name] = "world"
                continue
            reader.problem(body.file, body.line, f"body {body.name!r}",
                           f"has no mass (no <inertial>, no geom with volume) but {where}; MuJoCo refuses it too")
            body.host = i
        else:
            body.host = i
    # merged bodies hand their geoms and mass to the host (mass items in the host's MJCF frame)
    for i, body in enumerate(reader.bodies):
        if body.host == i or body.host < 0:
            continue
        host = reader.bodies[body.host]
        items = [(host.mass, host.com, host.inertia),
                 (body.mass, body.host_pos + body.host_rot @ body.com, body.host_rot @ body.inertia @ body.host_rot.T)]
        host.mass, host.com, host.inertia = _combine([it for it in items if it[0] > 0])
    for i, body in enumerate(reader.bodies):
        if body.host == -1:
            for g in body.geoms:
                g.pos, g.rot = body.host_pos + body.host_rot @ g.pos, body.host_rot @ g.rot
                reader.world_geoms.append(g)
            body.geoms = []
        elif body.host != i:
            host = reader.bodies[body.host]
            for g in body.geoms:
                g.pos, g.rot = body.host_pos + body.host_rot @ g.pos, body.host_rot @ g.rot
                host.geoms.append(g)
            body.geoms = []


def _world_body(reader: _Reader, result: MjcfImport) -> None:
    """The world's own geoms other than planes that moving geoms collide with (dm_control's
    cartpole rails and reacher arena, were their contacts on) become one body fixed to the
    world, WORLD_BODY, whose shapes the moving bodies' contacts meet as any other body's
    (the collision table's body pairs). It is in the world's weld (no joints), so it never
    collides with planes or props (MuJoCo's filter). Its mass does no work (it is held): it
    is the moving bodies' total, the geoms' density-rule inertia scaled to it, so that its
    rows of the Newton matrix have the model's scale."""
    moving = [g for i, b in enumerate(reader.bodies) if b.host == i and _weld(reader, i) >= 0 for g in b.geoms]
    statics = [g for g in reader.world_geoms if g.type != "plane" and any(_collides(g, h) for h in moving)]
    if not statics:
        return
    total = sum(b.mass for i, b in enumerate(reader.bodies) if b.host == i and _weld(reader, i) >= 0)
    items = [geom_mass_properties(g) for g in statics]
    items = [it for it in items if it[0] > 0] or [(1.0, np.mean([g.pos for g in statics], axis=0), np.eye(3))]
    mass, com, inertia = _combine(items)
    scale = (total if total > 0 else 1.0) / mass
    first = statics[0]
    body = _Body(WORLD_BODY, first.line, first.file, -1, np.zeros(3), np.eye(3), geoms=statics)
    body.mass, body.com, body.inertia = mass * scale, com, inertia * scale
    body.host = len(reader.bodies)
    reader.bodies.append(body)
    reader.world_geoms = [g for g in reader.world_geoms if all(g is not h for h in statics)]
    result.notes.append(f"the world's geoms {', '.join(g.name or g.type for g in statics[:4])}"
                        f"{', ...' if len(statics) > 4 else ''} (not planes) collide with moving geoms: they are the "
                        f"body {WORLD_BODY!r}, fixed to the world")


def _scene_parent(reader: _Reader, body: _Body) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """(scene parent name, parent's MJCF-frame-to-COM offset, this body's frame in the parent's
    MJCF frame (pos, rot)) for a body that is its own host."""
    if body.parent < 0:
        return "origin", np.zeros(3), body.pos, body.rot
    p = reader.bodies[body.parent]
    host = reader.bodies[p.host] if p.host >= 0 else None
    pos = p.host_pos + p.host_rot @ body.pos
    rot = p.host_rot @ body.rot
    if host is None:
        return "origin", np.zeros(3), pos, rot
    return host.name, host.com, pos, rot


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
    for i, body in enumerate(reader.bodies):
        maps = coordinates[k:k + len(body.joints)]
        k += len(body.joints)
        if body.host != i:
            continue
        parent, parent_com, pos, rot = _scene_parent(reader, body)
        element = f"body {body.name!r}"
        if not body.joints:
            out.append({"name": f"{body.name}_weld", "type": "fixed", "parent": parent, "child": body.name,
                        "parent_vertex": _vector(pos + rot @ body.com - parent_com), "child_vertex": [0.0, 0.0, 0.0],
                        "orientation_offset": _quaternion_from_matrix(rot)})
            continue
        joint = _body_joint(reader, body, element, parent, parent_com, pos, rot, maps)
        if isinstance(joint, list):
            out.extend(joint)
        elif joint is not None:
            out.append(joint)
    return out, coordinates


def _body_joint(reader: _Reader, body: _Body, element: str, parent: str, parent_com: np.ndarray, pos: np.ndarray,
                rot: np.ndarray, maps: list[CoordinateMap]) -> dict | None:
    joints = body.joints
    kinds = [j.type for j in joints]
    first = joints[0]
    name = first.name if len(joints) == 1 else "_".join(j.name for j in joints)
    # the anchor: the rotation's (hinge, ball) anchor, else the first joint's; in the body frame
    rotating = [j for j in joints if j.type in ("hinge", "ball")]
    anchor = rotating[0].pos if rotating else (np.zeros(3) if first.type == "free" else first.pos)
    data: dict[str, Any] = {
        "name": name, "parent": parent, "child": body.name,
        "parent_vertex": _vector(pos + rot @ anchor - parent_com), "child_vertex": _vector(anchor - body.com),
        "orientation_offset": _quaternion_from_matrix(rot),
    }
    for m in maps:
        m.dojo_joint = name
    if kinds == ["free"]:
        if body.parent >= 0 and reader.bodies[body.parent].host >= 0:
            reader.problem(first.file, first.line, f"joint {first.name!r}", "a free joint must be on a top-level body")
            return None
        data["type"] = "floating"
        maps[0].frame = np.eye(3)
        data["parent_vertex"] = _vector(pos - parent_com)
        data["child_vertex"] = _vector(-body.com)
        if first.armature:  # MuJoCo's acts on the body origin's velocity and the angular velocity
            reader.unsupported(first.file, first.line, f"joint {first.name!r}", _ARMATURE_KIND,
                               f"armature {first.armature:g} of a free joint: rotor inertia on the angular velocity "
                               "(MuJoCo's) is not our floating joint's rotation coordinates'")
        return data
    if kinds == ["ball"]:
        data["type"] = "spherical"
        maps[0].frame = np.eye(3)
        _passive(reader, data, joints, [(0, 1.0)], body, 3)
        if first.limited:
            reader.unsupported(first.file, first.line, f"joint {first.name!r}", "ball joint cone limits",
                               "a ball joint's cone limit (range) is not modelled")
        return data
    slides = [j for j in joints if j.type == "slide"]
    hinges = [j for j in joints if j.type == "hinge"]
    order_ok = kinds == ["slide"] * len(slides) + ["hinge"] * len(hinges)
    if kinds == ["hinge"] * len(kinds) and len(kinds) > 1:
        return _hinges(reader, body, element, data, parent, parent_com, pos, rot, maps)
    if "free" in kinds or "ball" in kinds or len(hinges) > 1 or not order_ok or len(slides) > 3:
        reader.problem(body.file, body.line, element,
                       f"joints {', '.join(f'{j.name} ({j.type})' for j in joints)}: MuJoCo applies them in turn; "
                       "no Dojo joint is such a sequence (supported: up to 3 orthogonal slides then at most one hinge, "
                       "or one ball, or one free joint, or 2-3 hinges alone)")
        return None
    # slide directions in the parent frame (MuJoCo: the body's frame before its rotations)
    directions = [rot @ j.axis for j in slides]
    for a_, b_ in [(a, b) for ia, a in enumerate(directions) for b in directions[ia + 1:]]:
        if abs(float(np.dot(a_, b_))) > AXIS_TOL:
            reader.problem(body.file, body.line, element, "its slides are not orthogonal: no Dojo joint")
            return None
    hinge_axis = hinges[0].axis if hinges else None  # in the joint frame (= the body frame at qpos0)
    if hinge_axis is not None and slides and np.linalg.norm(rot @ hinge_axis - hinge_axis) > AXIS_TOL:
        reader.problem(body.file, body.line, element, "a hinge after slides whose axis the body's orientation turns: "
                       "Dojo measures the translations in the parent frame and the rotation in the joint frame about one axis")
        return None
    n = len(slides)
    if n == 0:
        data["type"], data["axis"] = "revolute", _vector(hinge_axis)
        return _finish(reader, data, joints, maps, [(0, 1.0)], body, 1)
    if n == 1:
        d = directions[0]
        if hinge_axis is None:
            data["type"], data["axis"] = "prismatic", _vector(d)
            return _finish(reader, data, joints, maps, [(0, 1.0)], body, 1)
        if abs(abs(float(np.dot(d, hinge_axis))) - 1.0) > AXIS_TOL:
            reader.problem(body.file, body.line, element, "a slide and a hinge about another axis: no Dojo joint")
            return None
        data["type"], data["axis"] = "cylindrical", _vector(hinge_axis)
        return _finish(reader, data, joints, maps, [(0, float(np.dot(d, hinge_axis))), (1, 1.0)], body, 2)
    if n == 3:
        basis = np.eye(3)
        axis = hinge_axis if hinge_axis is not None else np.array([0.0, 0.0, 1.0])
        data["type"] = "free_revolute" if hinge_axis is not None else "fixed_orientation"
        if hinge_axis is not None:
            data["axis"] = _vector(axis)
    else:
        normal = np.cross(directions[0], directions[1])
        if hinge_axis is not None:
            if abs(abs(float(np.dot(normal, hinge_axis))) - 1.0) > AXIS_TOL:
                reader.problem(body.file, body.line, element, "a hinge not normal to its two slides: no Dojo joint")
                return None
            axis = hinge_axis
            data["type"] = "planar_axis"
        else:
            axis = normal
            data["type"] = "planar"
        data["axis"] = _vector(axis)
        basis = axis_basis(axis)[:2]
    slots = []
    for j, d in zip(slides, directions):
        dots = basis @ d
        c = int(np.argmax(np.abs(dots)))
        if abs(abs(float(dots[c])) - 1.0) > AXIS_TOL:
            reader.problem(j.file, j.line, f"joint {j.name!r}",
                           f"slide along {_vector(d)} (parent frame) is not along the Dojo joint's in-plane basis "
                           f"{[_vector(b) for b in basis]}: its coordinate would mix with the other slide's")
            return None
        slots.append((c, float(np.sign(dots[c]))))
    if hinge_axis is not None:
        slots.append((n, 1.0))
    return _finish(reader, data, joints, maps, slots, body, n + (1 if hinge_axis is not None else 0))


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
            return (f"the hinges turn about different points ({joints[0].name} at {_vector(anchor)}, {j.name} at "
                    f"{_vector(j.pos)} in the body frame): a universal or gimbal joint turns about one point")
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
    composition (_axes_joint_mismatch), else with split_hinges a chain through light links,
    else refused naming why. Armature on such hinges: the universal and gimbal joints carry
    no rotor inertia (core maximal/rotor.h models a joint with one rotation), the chain's
    revolute joints do; with split_hinges the chain keeps it, else it is refused or left out
    (drop_unsupported)."""
    joints = body.joints
    why = _axes_joint_mismatch(joints)
    armature = [j for j in joints if j.armature]
    if why is None and not (armature and reader.options.split_hinges):
        if armature:
            reader.unsupported(armature[0].file, armature[0].line, f"joint {armature[0].name!r}",
                               "rotor inertia (armature) of hinges joined into a universal or gimbal joint",
                               f"armature of {', '.join(j.name for j in armature)}: the universal or gimbal joint "
                               f"{', '.join(j.name for j in joints)} carries no rotor inertia (keep it on a chain of "
                               "revolute joints through light links: --split-hinges)")
        return _axes_joint(reader, data, body, maps)
    if reader.options.split_hinges:
        return _hinge_chain(reader, body, element, parent, parent_com, pos, rot, maps)
    reader.problem(body.file, body.line, element,
                   f"joints {', '.join(f'{j.name} ({j.type})' for j in joints)}: MuJoCo applies them in turn; "
                   f"no Dojo joint is that sequence: {why} (a chain of revolute joints through light links: --split-hinges)")
    return None


def _axes_joint(reader: _Reader, data: dict, body: _Body, maps: list[CoordinateMap]) -> dict:
    """A body's hinges through one anchor with orthogonal axes as one universal or gimbal
    joint: its axes the hinges' (body frame at qpos0, the joint frame), its angles the hinges'
    qpos - ref in order, named after them; limits, springs and dampers per angle. A gimbal's
    middle angle is read in [-pi/2, pi/2] (at +-pi/2 the other two axes align): a range beyond
    it is clipped GIMBAL_LOCK_MARGIN inside, with a note (import-urdf's rule)."""
    joints = body.joints
    data["type"] = "universal" if len(joints) == 2 else "gimbal"
    data["axes"] = [_vector(j.axis) for j in joints]
    data["axis_names"] = [j.name for j in joints]
    slots = [(k, 1.0) for k in range(len(joints))]
    for m, (c, s) in zip(maps, slots):
        m.coordinate, m.sign = c, s
    saved = [j.armature for j in joints]
    for j in joints:
        j.armature = 0.0  # not modelled on these joints (_hinges reported it)
    _passive(reader, data, joints, slots, body, len(joints))
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


def _hinge_chain(reader: _Reader, body: _Body, element: str, parent: str, parent_com: np.ndarray, pos: np.ndarray,
                 rot: np.ndarray, maps: list[CoordinateMap]) -> list[dict] | None:
    """A body's hinges as a chain of revolute joints through light link bodies (split_hinges).

    MuJoCo turns the body by each hinge in turn, about its anchor and axis in the body frame
    as already turned (and moved) by the hinges before it (mj_kinematics): R = R0 R1(q1)
    R2(q2) ..., each anchor held. That is the chain parent -> link_1 -> ... -> body, each
    revolute about its hinge's anchor and axis in a frame that is the body's at qpos0 (so
    hinges about different anchors, and axes that are not orthogonal, are exact too). Each
    link sits at its own hinge's anchor with no lever, so its mass moves only with the
    earlier hinges; each joint keeps its hinge's limits, spring, damper and armature, and its
    coordinate is the hinge's qpos - ref.
    """
    joints = body.joints
    quat = _quaternion_from_matrix(rot)
    mass = LINK_MASS_FRACTION * body.mass
    # a sphere of the body's mean gyration radius, scaled by the same fraction
    inertia = LINK_MASS_FRACTION * float(np.trace(body.inertia)) / 3.0
    out = []
    previous, previous_com = parent, parent_com
    for k, (j, m) in enumerate(zip(joints, maps)):
        last = k == len(joints) - 1
        child = body.name if last else f"{body.name}_{j.name}"
        child_com = body.com if last else j.pos
        data: dict[str, Any] = {
            "name": j.name, "type": "revolute", "parent": previous, "child": child,
            # the first joint's frame is the body's at qpos0 in the parent; the links' frames are the body's
            "parent_vertex": _vector((pos + rot @ j.pos - parent_com) if k == 0 else (j.pos - previous_com)),
            "child_vertex": _vector(j.pos - child_com),
            "orientation_offset": quat if k == 0 else [1.0, 0.0, 0.0, 0.0],
            "axis": _vector(j.axis),
        }
        m.dojo_joint, m.coordinate, m.sign = j.name, 0, 1.0
        _passive(reader, data, [j], [(0, 1.0)], body, 1)
        out.append(data)
        if not last:
            reader.links.append({"name": child, "mass": float(mass), "inertia": [inertia] * 3,
                                 "shape": {"type": "sphere", "radius": float(max(np.sqrt(2.5 * inertia / mass), 1e-4)) if mass > 0 else 0.01}})
        previous, previous_com = child, child_com
    return out


def _finish(reader, data, joints, maps, slots, body, nfree) -> dict:
    for m, (c, s) in zip(maps, slots):
        m.coordinate, m.sign = c, s
    _passive(reader, data, joints, slots, body, nfree)
    return data


def _passive(reader: _Reader, data: dict, joints: list[_Joint], slots: list[tuple[int, float]], body: _Body, nfree: int) -> None:
    """Springs, dampers, limits and armature of a body's joints on the Dojo joint's coordinates."""
    spring = [0.0] * nfree
    damper = [0.0] * nfree
    offset = [0.0] * nfree
    armature = [0.0] * nfree
    lower = [-math.inf] * nfree
    upper = [math.inf] * nfree
    limited = False
    for j, (c, s) in zip(joints, slots):
        if j.type == "ball":
            spring = [j.stiffness] * 3
            damper = [j.damping] * 3
            armature = [j.armature] * 3
            if j.stiffness:
                reader.warn(j.file, j.line, f"joint {j.name!r}", "a ball joint's stiffness acts on its rotation vector "
                            "(MuJoCo's on the quaternion's angle: the same to first order)")
            continue
        spring[c], damper[c], armature[c] = j.stiffness, j.damping, j.armature
        offset[c] = s * (j.springref - j.ref)
        if j.limited:
            limited = True
            lo, hi = s * (j.range[0] - j.ref), s * (j.range[1] - j.ref)
            lower[c], upper[c] = min(lo, hi), max(lo, hi)
        if j.frictionloss:
            reader.warn(j.file, j.line, f"joint {j.name!r}", f"frictionloss {j.frictionloss:g} (dry joint friction) is not modelled")
    if any(spring):
        data["spring"] = spring
        if any(offset):
            data["spring_offset"] = offset
    if any(damper):
        data["damper"] = damper
    if any(armature):
        data["armature"] = armature
    if limited:
        data["limits"] = {"lower": lower, "upper": upper}


def _bodies(reader: _Reader, options: MjcfOptions) -> list[dict]:
    out = []
    for i, body in enumerate(reader.bodies):
        if body.host != i:
            continue
        shapes = [s for s in (_draw_shape(g, body.com, options) for g in body.geoms) if s is not None]
        data: dict[str, Any] = {
            "name": body.name,
            "mass": float(body.mass),
            "inertia": [_vector(row) for row in 0.5 * (body.inertia + body.inertia.T)],
            "shape": shapes[0] if shapes else {"type": "frame"},
        }
        if len(shapes) > 1:
            data["visuals"] = shapes[1:]
        out.append(data)
    return out


def _draw_shape(geom: _Geom, com: np.ndarray, options: MjcfOptions) -> dict | None:
    s = geom.size
    pose = {"position_offset": _vector(geom.pos - com), "orientation_offset": _quaternion_from_matrix(geom.rot)}
    color = {"color": [float(c) for c in geom.rgba]} if geom.rgba else {}
    kind = geom.type
    if kind == "sphere":
        shape = {"type": "sphere", "radius": float(s[0])}
    elif kind in ("capsule", "cylinder"):
        shape = {"type": kind, "radius": float(s[0]), "height": float(2 * s[1])}
    elif kind == "box":
        shape = {"type": "box", "size": _vector(2 * s)}
    elif kind == "ellipsoid":
        # drawn as the box around it (the scene format has no ellipsoid; contacts use its hull)
        shape = {"type": "box", "size": _vector(2 * s)}
    elif kind == "mesh" and options.meshes:
        # drawn as its hull's bounding box: the mesh file's frame is not the geom's (MuJoCo re-centres it)
        lo, hi = geom.points.min(axis=0), geom.points.max(axis=0)
        pose["position_offset"] = _vector(geom.pos - com + geom.rot @ (0.5 * (lo + hi)))
        shape = {"type": "box", "size": _vector(np.maximum(hi - lo, 1e-6))}
    else:
        return None
    return {**shape, **pose, **color}


# ------------------------------------------------------------------ contacts


def _weld(reader: _Reader, i: int) -> int:
    """The MJCF body whose joints move body i (MuJoCo's body_weldid; -1: the world)."""
    while i >= 0 and not reader.bodies[i].joints:
        i = reader.bodies[i].parent
    return i


def _collides(a: _Geom, b: _Geom) -> bool:
    return bool((a.contype & b.conaffinity) or (b.contype & a.conaffinity))


def _contact_shape(geom: _Geom, com: np.ndarray) -> dict | None:
    """A geom as a contact shape in its scene body's frame (None: no collision geometry here)."""
    pose = {"position_offset": _vector(geom.pos - com), "orientation_offset": _quaternion_from_matrix(geom.rot)}
    s = geom.size
    if geom.type == "sphere":
        return {"type": "sphere", "radius": float(s[0]), **pose}
    if geom.type in ("capsule", "cylinder"):
        return {"type": geom.type, "radius": float(s[0]), "height": float(2 * s[1]), **pose}
    if geom.type == "box":
        return {"type": "box", "size": _vector(2 * s), **pose}
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
        return {"type": "hull", "vertices": [_vector(v) for v in vertices], "radius": float(error), **pose}
    return None


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
                normal, point = p.rot[:, 2], p.pos
                against: Any = "ground" if np.allclose(normal, [0, 0, 1], atol=1e-12) and abs(point[2]) < 1e-12 \
                    else {"normal": _vector(normal), "point": _vector(point)}
                c = {"name": label(geom_label(body, g)), "body": body.name, **model_of(g, p), "shape": shape,
                     "against": against, "margin": CONTACT_MARGIN}
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
                    made = _pair(ga, a, gb, b, BODY_SHAPES)
                    if made is None:
                        reader.unsupported(ga.file, ga.line, f"geom {geom_label(a, ga)!r}", "geom pairs the collision table lacks",
                                           f"collides with geom {geom_label(b, gb)!r} ({ga.type}-{gb.type}): "
                                           "the collision table has sphere, capsule and box pairs, and cylinders "
                                           "against spheres and capsules")
                        continue
                    (own, own_body, own_geom), against = made
                    reader.contact_lines[f"{geom_label(a, ga)}-{geom_label(b, gb)}"] = (ga.file, ga.line)
                    name = label(f"{geom_label(a, ga)}-{geom_label(b, gb)}")
                    reader.contact_geoms[name] = (geom_label(a, ga), geom_label(b, gb))
                    contacts.append({"name": name, "body": own_body.name,
                                     **model_of(ga, gb), "shape": own, "against": against, "margin": CONTACT_MARGIN})
    return contacts


def _pair(ga: _Geom, a: _Body, gb: _Geom, b: _Body, body_shapes) -> tuple | None:
    """(own shape, body, geom), against: geom a's shape against geom b's, or None where the
    collision table has no entry for the pair (dojo_cli.model.collisions.body_pair_contacts
    decides, as the builder will: sphere, capsule and box, a box turned by quarter turns,
    cylinders against spheres and capsules)."""
    from dojo_cli.model.collisions import UnsupportedPair, body_pair_contacts
    from dojo_cli.model.shapes import Shape

    own, other = _contact_shape(ga, a.com), _contact_shape(gb, b.com)
    if own is None or other is None or ga.type not in body_shapes or gb.type not in body_shapes:
        return None

    def shape(given: dict) -> Shape:
        params = {k: v for k, v in given.items() if k not in ("type", "position_offset", "orientation_offset")}
        return Shape(given["type"], params, tuple(given["position_offset"]), tuple(given["orientation_offset"]))

    try:
        body_pair_contacts("", 0, shape(own), 1, shape(other))
    except UnsupportedPair:
        return None
    against = {"body": b.name, "shape": gb.type, "offset": other["position_offset"],
               "orientation_offset": other["orientation_offset"]}
    if gb.type == "box":
        against["size"] = other["size"]
    else:
        against["radius"] = other["radius"]
        if gb.type in ("capsule", "cylinder"):
            against["height"] = other["height"]
    return (own, a, ga), against


# ------------------------------------------------------------------ actuators


def _actuators(reader: _Reader, result: MjcfImport) -> tuple[list[dict], dict | None]:
    coords = {m.joint: m for m in result.coordinates}
    actuators: list[dict] = []
    kp: dict[str, list[float]] = {}
    kd: dict[str, list[float]] = {}
    targets: dict[str, list[float]] = {}
    velocity_targets: dict[str, list[float]] = {}
    ranged = []
    driven: set[tuple[str, int]] = set()
    for k, (el, file, cls) in enumerate(reader.actuators):
        a = reader.attrs(el, cls)
        name = a.get("name") or f"actuator{k}"
        element = f"actuator {name!r}"
        tag = el.tag
        if tag not in _ACTUATORS:
            reader.warn(file, el.sourceline, f"<{tag}>", "not an actuator; ignored")
            continue
        if tag not in ("motor", "position", "velocity") or "joint" not in a:
            target = next((t for t in ("tendon", "site", "body", "jointinparent") if t in a), "joint")
            reader.unsupported(file, el.sourceline, element, "actuators other than motor/position/velocity on a joint",
                               f"<{tag}> on a {target} is not supported (motor, position and velocity on a joint are)")
            continue
        joint = a["joint"]
        if joint not in coords:
            reader.problem(file, el.sourceline, element, f"unknown joint {joint!r}")
            continue
        m = coords[joint]
        if m.kind not in ("hinge", "slide"):
            reader.unsupported(file, el.sourceline, element, "actuators on ball or free joints",
                               f"on the {m.kind} joint {joint!r}: only hinge and slide joints")
            continue
        gear = reader.vec(a, "gear", 0, [1.0], el, file, element)
        g = float(gear[0]) if len(gear) else 1.0
        if (m.dojo_joint, m.coordinate) in driven:
            reader.unsupported(file, el.sourceline, element, "several actuators on one joint",
                               f"a second actuator on joint {joint!r}")
            continue
        driven.add((m.dojo_joint, m.coordinate))
        actuators.append({"name": name, "joint": m.dojo_joint, "coordinate": m.coordinate, "gain": m.sign * g})
        limited = a.get("ctrllimited", "auto")
        if reader.off("clampctrl"):
            limited = "false"  # <flag clampctrl="disable">: MuJoCo does not clamp ctrl
        if limited == "true" or (limited == "auto" and reader.autolimits and "ctrlrange" in a):
            lo, hi = (float(v) for v in reader.vec(a, "ctrlrange", 2, [-np.inf, np.inf], el, file, element))
            if not lo <= hi:
                reader.problem(file, el.sourceline, element, f"ctrlrange={a.get('ctrlrange')!r}: lower above upper")
            elif tag == "motor":
                # MuJoCo clips ctrl to ctrlrange before the gear: the input, clamped (ClampedInputs)
                actuators[-1]["ctrl_range"] = [lo, hi]
            else:
                result.target_ranges[name] = (lo, hi)  # the PD's target: clamped here
            ranged.append(name)
        if tag in ("position", "velocity"):
            kv = reader.real(a, "kv", 0.0, el, file, element)
            gain = reader.real(a, "kp", 1.0, el, file, element) if tag == "position" else 0.0
            damp = kv if tag == "position" else reader.real(a, "kv", 1.0, el, file, element)
            # MuJoCo: force = kp (ctrl - g q) - kv g qdot on the actuator length g q, torque g force:
            # a PD on the joint with kp g^2, kd kv g^2, target ctrl / g (ctrl 0: target 0)
            n = m.coordinate + 1
            for table, value in ((kp, gain * g * g), (kd, damp * g * g)):
                row = table.setdefault(m.dojo_joint, [])
                row.extend([0.0] * (n - len(row)))
                row[m.coordinate] = value
            for table in (targets, velocity_targets):
                row = table.setdefault(m.dojo_joint, [])
                row.extend([0.0] * (n - len(row)))
            # ctrl starts at 0, clipped to ctrlrange like any ctrl (MuJoCo clamps before use)
            lo, hi = result.target_ranges.get(name, (-np.inf, np.inf))
            start = min(max(0.0, lo), hi) / g
            (targets if tag == "position" else velocity_targets)[m.dojo_joint][m.coordinate] = start
    if ranged:
        result.notes.append(f"ctrlrange of {len(ranged)} actuators: motors' inputs are clamped to it (the actuator's "
                            "ctrl_range), position and velocity actuators' targets are clamped at import: "
                            + ", ".join(ranged[:6]) + (", ..." if len(ranged) > 6 else ""))
    controller = None
    if kp or kd:
        # every coordinate of a driven joint needs a value
        controller = {"type": "pd", "kp": kp, "kd": kd, "targets": targets, "velocity_targets": velocity_targets}
    return actuators, controller


# ------------------------------------------------------------------ keyframes


def joint_coordinates_from_qpos(result: MjcfImport, qpos: np.ndarray, joints: list[dict]) -> dict[str, list[float]]:
    """Each scene joint's minimal coordinates at a MuJoCo qpos (the imported model's layout)."""
    sizes = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "planar": 2, "planar_axis": 3, "fixed_orientation": 3,
             "free_revolute": 4, "spherical": 3, "floating": 6, "fixed": 0, "universal": 2, "gimbal": 3}
    out = {j["name"]: [0.0] * sizes[j["type"]] for j in joints}
    for m in result.coordinates:
        values = out[m.dojo_joint]
        if m.kind in ("hinge", "slide"):
            values[m.coordinate] += m.sign * (float(qpos[m.qpos_adr]) - m.ref)
        elif m.kind == "ball":
            values[:] = _vector(rotation_vector_from_quaternion(qpos[m.qpos_adr:m.qpos_adr + 4]))
        else:  # free: the body origin's displacement from qpos0, and the rotation relative to the file's
            joint = next(j for j in joints if j["name"] == m.dojo_joint)
            q0 = np.asarray(joint["orientation_offset"], float)
            q0inv = q0 * np.array([1, -1, -1, -1])
            rel = _quaternion_multiply(q0inv, qpos[m.qpos_adr + 3:m.qpos_adr + 7])
            origin0 = np.asarray(joint["parent_vertex"], float)
            values[:3] = _vector(np.asarray(qpos[m.qpos_adr:m.qpos_adr + 3], float) - origin0)
            values[3:] = _vector(rotation_vector_from_quaternion(rel))
    return out


def _keyframe(reader: _Reader, name: str, scene: dict, result: MjcfImport) -> None:
    found = [(el, file) for el, file in reader.keys if el.get("name") == name]
    if not found:
        names = [el.get("name") or "(unnamed)" for el, _ in reader.keys]
        reader.problem(reader.file, None, "--keyframe", f"no <key name={name!r}> (keys: {', '.join(names) or 'none'})")
        return
    el, file = found[0]
    element = f"key {name!r}"
    nq = sum({"free": 7, "ball": 4}.get(m.kind, 1) for m in result.coordinates)
    nv = sum({"free": 6, "ball": 3}.get(m.kind, 1) for m in result.coordinates)
    qpos0 = []
    for m in result.coordinates:
        if m.kind in ("hinge", "slide"):
            qpos0.append(m.ref)
        elif m.kind == "ball":
            qpos0 += [1.0, 0.0, 0.0, 0.0]
        else:
            joint = next(j for j in scene["joints"] if j["name"] == m.dojo_joint)
            qpos0 += list(joint["parent_vertex"]) + list(joint["orientation_offset"])
    qpos = reader.numbers(el, file, "qpos", nq, qpos0, element)
    qvel = reader.numbers(el, file, "qvel", nv, [0.0] * nv, element)
    if qpos is None or qvel is None:
        return
    positions = joint_coordinates_from_qpos(result, qpos, scene["joints"])
    velocities = {j: [0.0] * len(v) for j, v in positions.items()}
    for m in result.coordinates:
        if m.kind in ("hinge", "slide"):
            velocities[m.dojo_joint][m.coordinate] += m.sign * float(qvel[m.dof_adr])
            continue
        # ball: qvel is the child's angular velocity relative to its parent, child frame; free: the
        # body origin's world velocity, then its angular velocity in its own frame. A spherical or
        # floating joint's initial rotation velocity is that relative angular velocity, child
        # frame (checked against MuJoCo's positions along qvel: tests/scene/test_mjcf.py)
        rates = np.asarray(qvel[m.dof_adr + (0 if m.kind == "ball" else 3):m.dof_adr + (3 if m.kind == "ball" else 6)], float)
        if m.kind == "ball":
            velocities[m.dojo_joint][:] = _vector(rates)
        else:
            velocities[m.dojo_joint][:] = _vector(np.concatenate([qvel[m.dof_adr:m.dof_adr + 3], rates]))
    for joint in scene["joints"]:
        if joint["type"] == "fixed":
            continue
        pos, vel = positions[joint["name"]], velocities[joint["name"]]
        if any(pos) or any(vel):
            joint["initial"] = {"position": pos, "velocity": vel}
    ctrl = reader.numbers(el, file, "ctrl", None, None, element)
    if ctrl is not None and ctrl.size:
        controller = scene.get("controller")
        if controller is None:
            reader.warn(file, el.sourceline, element, "ctrl is for motors: give it as inputs (it is not a state)")
        else:
            actuators = scene.get("actuators", [])
            if len(ctrl) != len(actuators):
                reader.problem(file, el.sourceline, element, f"ctrl has {len(ctrl)} values for {len(actuators)} actuators")
                return
            for value, act in zip(ctrl, actuators):
                if act["joint"] in controller["targets"]:
                    lo, hi = result.target_ranges.get(act["name"], (-np.inf, np.inf))
                    controller["targets"][act["joint"]][act["coordinate"]] = min(max(float(value), lo), hi) / act["gain"]
