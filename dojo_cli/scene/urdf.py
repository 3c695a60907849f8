"""Import URDF robot descriptions as scenes (plain scene data, validated by the loader).

Parsing. lxml reads the file strictly (malformed XML is refused with its line, never
recovered from silently) and this module reads the numbers from the elements itself:
origins as 4x4 transforms (rpy as fixed-axis roll, pitch, yaw, URDF's convention, with
yourdfpy's arithmetic, so scenes are the same to the bit as when yourdfpy parsed them),
inertials, limits, dynamics, geometry (with the ``<capsule radius length>`` extension
Dojo's walkers use) and materials. Every problem names ``file:line`` and the element
(``joint 'knee'``); joints naming links that do not exist, several roots and loops are
refused. No mesh is opened to read a URDF (physics needs none), so importing it costs
no trimesh: only ``--contacts collision`` reads meshes, for their convex hulls, which
are cached by the mesh file's content (``dojo_cli.scene.hull_cache``).

Frames. The engine's body frame is the centre of mass. A body here has the
orientation of its *reference link* (the link at the top of the group of links
it stands for) and its origin at the group's centre of mass; each URDF link
records its pose in its body (``T_body_link``), so joint points, shapes and
contact spheres are placed through that one transform:
- inertia: the URDF inertia is about the inertial origin in the inertial frame;
  ``R I R^T`` rotates it into the link frame; merged links add by the parallel-axis
  rule about the group's centre of mass;
- joint: ``parent_vertex`` = the joint origin in the parent body, ``child_vertex``
  = the child link origin in the child body, ``orientation_offset`` = the joint
  origin's rotation in the parent body. Rotational axes are in that joint frame
  (URDF's axis frame). Translational axes (prismatic, planar) are measured in the
  parent body frame by the engine, so they are rotated by the joint origin.

Joint types: revolute and continuous -> revolute (continuous without limits),
prismatic -> prismatic, fixed -> fixed (or merged), floating -> floating, Bullet's
spherical -> spherical, planar -> planar_axis (two translations in the plane and the rotation about its
normal, as Drake, Pinocchio and RigidBodyDynamics.jl read it; Dojo maps it to its
translation-only Planar). Two or three revolute joints through massless links with one
child each, all through one point (the later origins without translation) and with
mutually orthogonal axes, onto a link with mass, are one universal or gimbal joint
(human.urdf's wrists and hips: ``_multi_axis_chain``), its angles the chain's revolute
angles and named after its joints (``axis_names``).

Bullet's readings (PyBullet's pybullet_data relies on them; docs/urdf.md "Bullet's
conventions"), each with one warning per kind: a base of mass 0 is fixed to the world,
lower > upper is no limit, commas separate numbers, a vector's numbers past the third are
ignored; xacro's ``$(optenv)`` left in a file is expanded as xacro does.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError, SceneFileError
from dojo_cli.model.collisions import GROUND, RIM_POINTS, half_space_contacts, lowest_height, reduced_hull
from dojo_cli.model.shapes import Shape
from dojo_cli.scene.legs import axis_name, legs_of
from dojo_cli.scene.robots import UnresolvedPackage, package_search_path, resolve_resource
from dojo_cli.scene.schema import MAX_MAGNITUDE, MAX_PATH_LENGTH

URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
"""Joint types of the URDF specification (all are read)."""
BULLET_JOINT_TYPES = ("spherical",)
"""Joint types Bullet's URDF reader adds (pybullet_data's humanoids): a ball joint, Dojo's spherical."""
CONTACT_MODES = ("feet", "collision", "none")
GEOMETRY_MODES = ("visual", "collision")
DEFAULT_TIMESTEP = 0.01
"""Timestep of an imported scene (s), Dojo's default for its robots."""
DEFAULT_FRICTION = 0.5
"""Friction coefficient of imported contacts unless told (the scene format's default)."""
FLOATING_JOINT = "floating_base"
"""Name of the joint --floating adds (Dojo's name)."""
FIXED_BASE_JOINT = "fixed_base"
"""Name of the joint holding a fixed-base robot's root link to the world."""

# Links lighter than this (kg) are massless: real files give 0 or 1e-6 to frames
# (sensor frames, a "base" above the trunk); they cannot be bodies of their own.
MASSLESS = 1e-5
# An inertia whose smallest eigenvalue is below this fraction of its largest (or
# not positive) is not positive definite for the solver.
INERTIA_EIGENVALUE_FLOOR = 1e-9
# Feet: leaf bodies whose lowest candidate contact (zero configuration, world z)
# is within this of the lowest leaf's (m) are feet; hands of a humanoid hang higher.
FOOT_HEIGHT_TOL = 0.05
# A planar joint's normal must be kept by its origin's rotation to this (rad).
AXIS_TOL = 1e-9
# A gimbal's middle angle is read in [-pi/2, pi/2] (core/maximal/euler_joints.h): at +-pi/2
# its first and last axes align and the chain's own mass matrix is singular (Pinocchio's of
# the same file too). A URDF range for it beyond that (human.urdf's shoulders, up to pi) is
# clipped this far inside, with a note.
GIMBAL_LOCK_MARGIN = 0.05
_MESH_SUFFIXES = (".obj", ".stl", ".dae")
# --contacts collision: a box whose longest side is at least this many times its middle
# one is a thin link, made the capsule around it (2 contacts, not 8); it then sits at most
# (half diagonal - half smallest side) of its cross-section too high, never too low.
THIN_BOX_RATIO = 4.0
# Elements read but not modelled, reported once per kind ("what|consequence"), naming the
# joints (go1 printed 12 near-identical lines, talos 20), at most this many names.
UNMODELLED_FRICTION = "Coulomb joint friction (<dynamics friction>)|ignored"
UNMODELLED_MIMIC = "<mimic>|each joint moves on its own"
# Bullet's swing-twist limit of a spherical joint: <limit lower upper twist> (the swing ranges
# about x and y and the twist range about z), applied only when all three and effort are > 0
# (URDF2Bullet; btMultiBodySphericalJointLimit, a soft limit on Euler angles of the swing and
# the twist): not one of Dojo's limits, which bound the rotation vector's components.
UNMODELLED_SWING_TWIST = "Bullet's swing-twist limit of a spherical joint (<limit lower upper twist>)|the joint turns freely"
# Readings of the reference loaders beyond the URDF specification, one warning per kind naming
# where (the element and its line): "what|how it is read".
LENIENT_COMMAS = ("numbers separated by commas|commas read as separators, as Bullet (its numbers stop at a comma) "
                  "and yourdfpy read them")
LENIENT_EXTRA_NUMBERS = ("more than 3 numbers where a vector has 3|the first 3 read and the rest ignored, as Bullet "
                         "reads them (urdfdom refuses them)")
LENIENT_NO_LIMIT = ("<limit> lower > upper|Bullet's convention for a joint without position limits (its default is "
                    "lower 0, upper -1): read as unlimited")
LENIENT_NUMBER_END = ("a number followed by stray punctuation|read as Bullet reads it (C's atof: the number, up to "
                      "what is not part of it)")
LENIENT_XACRO_ENV = ("xacro substitutions $(optenv NAME default) / $(env NAME) left in the file|expanded as xacro "
                     "does (the environment variable's value, else the default)")
UNMODELLED_LISTED = 40
# Initial pose: a joint whose range does not hold zero strictly inside starts this far
# inside its range (a fraction of the range, at most LIMIT_INSET_MAX rad or m) from the
# bound nearest zero. A limit is an inequality of the interior-point solve: started on
# its bound, the t = 0 solve begins at a zero slack, and go1's (calves on -0.888) took
# 1.8 s against 0.4 s 0.01 rad inside; talos_reduced (8 joints with a bound at 0) 73 s.
LIMIT_INSET_FRACTION = 0.01
LIMIT_INSET_MAX = 0.01
# --contacts collision: most vertices of a mesh's reduced convex hull (each is a contact).
HULL_VERTICES = 32
# --contacts collision: each contact's margin (m; core/maximal/margins.h): it joins
# a step's solve only within this of touching at the step's predicted configuration. A
# robot's collision shapes are many and most are far from the ground at any time; left
# out, they cost nothing. 1 cm: beyond a step's change of velocity under gravity
# (g h^2 = 1 mm at h = 0.01), and a contact the solution still brings to touch joins and
# the step is solved again. Measured on laikago (limp drop, docs/urdf.md): 3 mm and 1 cm
# alike, 2 cm slower (the contacts 1.6 cm off the ground at rest join every solve).
CONTACT_MARGIN = 0.01

@dataclass
class UrdfOptions:
    """How a URDF becomes a scene.

    Attributes:
        floating: attach the root body to the world by a floating joint (else fixed).
        contacts: "feet" (spheres at the ends of the legs), "collision" (every collision
            element as its shape against the ground) or "none".
        self_collision: with contacts "collision", the links' collision shapes also
            against each other (bodies not joined parent-child; sphere, capsule, box, cylinder against sphere and capsule).
        friction: Coulomb coefficient of those contacts.
        contact_model: impact, linear or nonlinear.
        merge_fixed: merge links joined by fixed joints into one body (massless
            links are merged whatever this says: they cannot be bodies).
        package_path: directories searched for ``package://`` names, first.
        meshes: keep visual meshes (False: draw primitives and frames only).
        geometry: draw the "visual" elements, or the "collision" ones.
        inertia_from_geometry: every link's inertia computed from its collision shapes
            (uniform density, the file's mass and centre of mass); without it, only the
            links whose file inertia is not positive definite (a note names each).
        floating_base: float the robot at this link's body (set_floating_base: the joints
            on the way from the URDF's root are reversed); implies ``floating``.
    """

    floating: bool = False
    contacts: str = "none"
    self_collision: bool = False
    friction: float = DEFAULT_FRICTION
    contact_model: str = "nonlinear"
    merge_fixed: bool = False
    package_path: list[str] = field(default_factory=list)
    meshes: bool = True
    geometry: str = "visual"
    inertia_from_geometry: bool = False
    floating_base: str | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base_dir: Path | None, file: str, lines: Mapping[str, int], key: str) -> UrdfOptions:
        """Options from a scene's ``import:`` mapping (paths relative to ``base_dir``).

        Raises:
            SceneError: an unknown key or a bad value, at its line.
        """
        problems = []
        known = set(cls.__dataclass_fields__)
        options = cls()
        for name, value in (data or {}).items():
            path = f"{key}.{name}"
            line = lines.get(path, lines.get(key))
            if name not in known:
                problems.append(Problem(file, line, path, f"unknown import option (one of: {', '.join(sorted(known))})"))
                continue
            default = getattr(options, name)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    problems.append(Problem(file, line, path, f"must be true or false, got {value!r}"))
                    continue
            elif isinstance(default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                    problems.append(Problem(file, line, path, f"must be a number >= 0, got {value!r}"))
                    continue
                value = float(value)
            elif name == "floating_base":
                if not isinstance(value, str) or not value:
                    problems.append(Problem(file, line, path, f"must be a link's name, got {value!r}"))
                    continue
            elif isinstance(default, list):
                value = [value] if isinstance(value, str) else value
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    problems.append(Problem(file, line, path, f"must be a folder or a list of folders, got {value!r}"))
                    continue
                value = [str((base_dir or Path.cwd()) / Path(v).expanduser()) for v in value]
            setattr(options, name, value)
        problems += [
            Problem(file, lines.get(f"{key}.{name}", lines.get(key)), f"{key}.{name}", message)
            for name, message in options.problems()
        ]
        if problems:
            raise SceneError(problems)
        return options

    def problems(self) -> list[tuple[str, str]]:
        """(option, message) for each invalid choice."""
        out = []
        if self.contacts not in CONTACT_MODES:
            out.append(("contacts", f"must be one of {', '.join(CONTACT_MODES)}, got {self.contacts!r}"))
        elif self.self_collision and self.contacts != "collision":
            out.append(("self_collision", f"needs contacts: collision (the links' collision shapes), got contacts {self.contacts!r}"))
        if self.geometry not in GEOMETRY_MODES:
            out.append(("geometry", f"must be one of {', '.join(GEOMETRY_MODES)}, got {self.geometry!r}"))
        if self.contact_model not in ("impact", "linear", "nonlinear"):
            out.append(("contact_model", f"must be impact, linear or nonlinear, got {self.contact_model!r}"))
        return out


@dataclass
class UrdfImport:
    """A URDF read into scene data.

    Attributes:
        scene: plain scene data (what a YAML file would hold), not yet validated.
        warnings: one line each (``file:line: element: message``).
        link_bodies: URDF link -> (body name, (4, 4) link pose in the body frame).
        merged: URDF fixed joints merged away.
        dropped: URDF links left out (massless leaves, a massless root).
        scene_joints: the scene's joints (as in ``scene``), root to leaves.
        moved_into_range: scene joint -> its coordinates the import started inside their
            ranges ("name value"; _start_inside_limits), so that a pose set later (``dojo
            import-urdf --stand``'s SRDF pose) can revise the note that lists them.
    """

    scene: dict
    warnings: list[str] = field(default_factory=list)
    scene_joints: list[dict] = field(default_factory=list)
    moved_into_range: dict[str, list[str]] = field(default_factory=dict)
    link_bodies: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    merged: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


# ----------------------------------------------------------------- transforms


# A rotation matrix whose rows are orthonormal to this is used as it is (else the nearest
# rotation, U V^T of its SVD, as scipy's Rotation.from_matrix does).
_ORTHOGONAL_TOL = 1e-12


def _quaternion_from_matrix(rot: np.ndarray) -> list[float]:
    """[w, x, y, z] of a rotation matrix, w >= 0; exact for the identity.

    Shepperd's method with the largest of (trace, diagonal) as pivot, the arithmetic of
    scipy's ``Rotation.from_matrix`` operation for operation (imported scenes hold the
    same numbers as when scipy computed them; scipy.spatial costs ~0.5 s to import, a
    third of a URDF scene's start-up).
    """
    m = np.asarray(rot, dtype=float)
    if np.allclose(m, np.eye(3), rtol=0.0, atol=1e-15):
        return [1.0, 0.0, 0.0, 0.0]
    if not np.all(np.isclose(m @ m.T, np.eye(3), atol=_ORTHOGONAL_TOL)):
        u, _, vt = np.linalg.svd(m)
        m = u @ vt
    m = m.tolist()
    trace = m[0][0] + m[1][1] + m[2][2]
    decision = [m[0][0], m[1][1], m[2][2], trace]
    choice = decision.index(max(decision))
    q = [0.0, 0.0, 0.0, 0.0]  # x, y, z, w
    if choice != 3:
        i, j, k = choice, (choice + 1) % 3, (choice + 2) % 3
        q[i] = 1 - trace + 2 * m[i][i]
        q[j] = m[j][i] + m[i][j]
        q[k] = m[k][i] + m[i][k]
        q[3] = m[k][j] - m[j][k]
    else:
        q = [m[2][1] - m[1][2], m[0][2] - m[2][0], m[1][0] - m[0][1], 1 + trace]
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    x, y, z, w = (v / norm for v in q)
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    return [float(w), float(x), float(y), float(z)]


def _matrix_from_quaternion(q: list[float]) -> np.ndarray:
    """(3, 3) rotation of a quaternion [w, x, y, z] (normalised first), scipy's arithmetic."""
    w, x, y, z = (float(v) for v in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    return np.array([
        [x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
        [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
        [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2],
    ])


def _translation(t: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, 3] = t
    return out


def _origin(matrix: np.ndarray | None) -> np.ndarray:
    return np.eye(4) if matrix is None else np.asarray(matrix, dtype=float)


def _vector(values: np.ndarray) -> list[float]:
    """Plain floats, with -0.0 written as 0.0 and rounding noise of exact values kept."""
    return [float(v) + 0.0 for v in np.asarray(values, dtype=float).reshape(-1)]


def _pose(transform: np.ndarray) -> dict:
    """``position_offset`` and ``orientation_offset`` of a 4x4 transform."""
    return {"position_offset": _vector(transform[:3, 3]), "orientation_offset": _quaternion_from_matrix(transform[:3, :3])}


# ------------------------------------------------------------------- parsing


@dataclass
class _Link:
    name: str
    line: int | None
    mass: float
    com: np.ndarray  # (3,) centre of mass, link frame
    inertia: np.ndarray  # (3, 3) about the centre of mass, link frame
    visuals: list = field(default_factory=list)  # (kind, params, (4,4) pose in link, rgba | None, line)
    collisions: list = field(default_factory=list)
    has_inertial: bool = False


@dataclass
class _Joint:
    name: str
    line: int | None
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None
    damping: float | list[float] = 0.0  # a planar joint's may be (x, y, theta)
    friction: float = 0.0
    mimic: str | None = None
    swing_twist: tuple[float, float, float] | None = None  # a spherical joint's Bullet limit (not modelled)


class _Reader:
    """Reads one URDF file into links and joints, collecting problems and warnings."""

    def __init__(self, path: Path, shown: str, options: UrdfOptions):
        self.path = path
        self.file = shown
        self.options = options
        self.problems: list[Problem] = []
        self.warnings: list[str] = []
        self._unmodelled: dict[str, list[str]] = {}
        self._lenient: dict[str, list[tuple[int | None, str]]] = {}  # kind -> (line, where)
        self._empty_visuals: list[str] = []
        # end link of a chain of revolute joints through massless links -> the chain (one
        # universal or gimbal joint; _multi_axis_chain)
        self.axes_chains: dict[str, list[_Joint]] = {}
        self.search_path = package_search_path(options.package_path, path)

    def problem(self, line: int | None, element: str, message: str) -> None:
        self.problems.append(Problem(self.file, line, element, message))

    def warn(self, line: int | None, element: str, message: str) -> None:
        self.warnings.append(f"warning: {Problem(self.file, line, element, message)}")

    def unmodelled(self, kind: str, joint: str) -> None:
        """A joint carries an element of ``kind`` that is not modelled (one warning per kind,
        naming the joints, by report_unmodelled)."""
        self._unmodelled.setdefault(kind, []).append(joint)

    def lenient(self, kind: str, line: int | None, where: str) -> None:
        """Something read beyond the URDF specification as a reference loader reads it (one
        warning per kind, listing where, by report_unmodelled)."""
        self._lenient.setdefault(kind, []).append((line, where))

    def report_unmodelled(self) -> None:
        for kind, places in self._lenient.items():
            what, reading = kind.split("|")
            listed = _listed([f"{where} (line {line})" if line else where for line, where in places], UNMODELLED_LISTED)
            self.warn(places[0][0], "robot", f"{what} in {len(places)} place{'s' if len(places) > 1 else ''}, {reading}: {listed}")
        self._lenient.clear()
        if self._empty_visuals:
            self.note(None, "robot", f"{len(self._empty_visuals)} visual{'s' if len(self._empty_visuals) > 1 else ''} of size 0 "
                      f"skipped (nothing to draw): {_listed(self._empty_visuals, UNMODELLED_LISTED)}")
            self._empty_visuals.clear()
        for kind, joints in self._unmodelled.items():
            what, consequence = kind.split("|")
            self.warn(None, "robot", f"{what} not modelled on {len(joints)} joint{'s' if len(joints) > 1 else ''} "
                      f"({consequence}): {_listed(joints, UNMODELLED_LISTED)}")
        self._unmodelled.clear()

    def note(self, line: int | None, element: str, message: str) -> None:
        """Something the importer chose for the user (not a problem of the file)."""
        self.warnings.append(note_text(self.file, line, element, message))

    def finite(self, line: int | None, element: str, what: str, values, infinite: bool = False) -> bool:
        """Whether ``values`` are numbers of magnitude at most MAX_MAGNITUDE (the scene's
        bound; ``infinite``: or infinite); else a problem at the element."""
        arr = np.asarray(values, dtype=float)
        ok = ~np.isnan(arr) & ((np.abs(arr) <= MAX_MAGNITUDE) | (infinite & np.isinf(arr)))
        if np.all(ok):
            return True
        bad = arr.reshape(-1)[int(np.argmin(ok.reshape(-1)))]
        kind = "a number" if np.isnan(bad) else ("finite" if np.isinf(bad) else f"at most {MAX_MAGNITUDE:g} in magnitude")
        self.problem(line, element, f"{what} must be {kind}, got {bad:g}")
        return False

    def fail_if_problems(self) -> None:
        if self.problems:
            raise SceneError(self.problems)

    def read(self) -> tuple[str, dict[str, _Link], list[_Joint]]:
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            # a file that is missing or unreadable: I/O (exit 3)
            raise SceneFileError(Problem(self.file, None, "", f"cannot read the URDF: {exc.strerror or exc}")) from None
        from lxml import etree  # here: only URDF scenes pay for importing it

        repaired = []  # (line, what was read leniently)
        while True:
            try:
                root = etree.fromstring(data, etree.XMLParser(remove_comments=True, resolve_entities=False))
                break
            except etree.XMLSyntaxError as exc:
                line = exc.lineno if exc.lineno else None
                fixed = _lenient_xml(data, exc) if len(repaired) < len(_LENIENT_XML) else None
                if fixed is None or any(what == fixed[1] for _, what in repaired):
                    raise SceneError(Problem(self.file, line, "", f"malformed XML: {exc.msg}")) from None
                data = fixed[0]
                repaired.append((line, fixed[1]))
        if repaired:
            # what ROS tools and Pinocchio (urdfdom: TinyXML) read without a word
            self.warn(repaired[0][0], "XML", "not well-formed, read leniently: " + "; ".join(
                f"{what} (line {line})" for line, what in repaired))
        if root.tag != "robot":
            raise SceneError(Problem(self.file, root.sourceline, f"<{root.tag}>", "the root element of a URDF must be <robot>"))
        dtd = root.getroottree().docinfo.internalDTD
        if dtd is not None and any(True for _ in dtd.iterentities()):
            # never expanded (no entity bombs), and a URDF needs none: refused rather than half read
            names = ", ".join(f"&{entity.name};" for entity in dtd.iterentities())
            raise SceneError(Problem(self.file, None, "<!DOCTYPE>", f"XML entities are not supported (declared: {_shortened(names)})"))
        self._xacro_substitutions(root)
        # links and joints are known by their names; a robot without one is named after its
        # file (ur3.urdf of example-robot-data has none; Pinocchio reads it)
        for element in [e for e in root if e.tag in ("link", "joint")]:
            if element.get("name") is None:
                self.problem(element.sourceline, f"<{element.tag}>", "has no name attribute")
        if root.get("name") is None:
            self.note(root.sourceline, "<robot>", f"has no name attribute; the scene is named {self.path.stem!r} after the file")
        self.fail_if_problems()
        link_elements = root.findall("link")
        joint_elements = root.findall("joint")
        materials = self._materials(root)
        links: dict[str, _Link] = {}
        refused: set[str] = set()
        for element in link_elements:
            name = element.get("name")
            if not _printable_name(name):
                self.problem(element.sourceline, f"link {_shortened(str(name))}", "the name must be printable text (no control characters)")
                continue
            if name in links:
                self.problem(element.sourceline, f"link {name!r}", "defined twice")
                continue
            link = self._link(element, name, materials)
            if link is not None:
                links[name] = link
            else:
                refused.add(name)  # a problem says why; its joints are not "not defined"
        joints: list[_Joint] = []
        names: set[str] = set()
        for element in joint_elements:
            name = element.get("name")
            if not _printable_name(name):
                self.problem(element.sourceline, f"joint {_shortened(str(name))}", "the name must be printable text (no control characters)")
                continue
            if name in names:
                self.problem(element.sourceline, f"joint {name!r}", "defined twice")
                continue
            names.add(name)
            parsed = self._joint(element, name, links, refused)
            if parsed is not None:
                joints.append(parsed)
        if not links and not self.problems:
            # urdfdom and Pinocchio refuse it too ("No link elements found"): nothing to simulate.
            why = "has no <link>: the file describes no robot (a URDF needs at least one link)"
            deformable = root.find("deformable")
            if deformable is not None:
                # Bullet's extension (torus_deform.urdf): a finite-element soft body from a volume mesh
                why = (f"has no <link>, only a <deformable> (line {deformable.sourceline}): a deformable body, "
                       "Bullet's extension, not modelled (Dojo's bodies are rigid)")
            elif "xacro" in (root.nsmap or {}):
                why += "; it declares the xacro namespace: an empty <robot> is what xacro writes for a file of macros that are never called"
            self.problem(root.sourceline, "robot", why)
        self.fail_if_problems()
        return root.get("name") or self.path.stem, links, joints

    def _xacro_substitutions(self, root) -> None:
        """Expand xacro's ``$(optenv NAME default)`` and ``$(env NAME)`` left in the attributes
        of links, joints and materials as xacro does (husky.urdf's IMU origin: ``$(optenv
        HUSKY_IMU_XYZ 0.19 0 0.149)``), one warning listing them. Another substitution
        (``$(find ...)``, ``${...}``) is left: a number that holds one is refused naming it
        (``_xacro_hint``)."""
        for element in root.iter():
            if not isinstance(element.tag, str):
                continue
            for attribute, text in element.attrib.items():
                if "$(" not in text or _owner(element) is None:
                    continue
                expanded, unknown = _expand_environment(text)
                if unknown is None:
                    element.set(attribute, expanded)
                    self.lenient(LENIENT_XACRO_ENV, element.sourceline, f"{_owner(element)} <{element.tag} {attribute}> = {expanded!r}")

    def numbers(self, element, attribute: str, where: str, default: str | None = None, count: int | None = None) -> np.ndarray | None:
        """The numbers of an attribute (``default`` when it is absent), or None: a problem at its line.

        Read as Bullet's URDF reader reads a vector (pybullet_data's files rely on it), each
        with one warning per kind (``lenient``): commas separate numbers too (``0.07, 0,
        -0.69``; yourdfpy reads box sizes and mesh scales so), and of more than 3 numbers where
        ``count`` is 3 the first 3 are read (``rpy="-3.14159 1.57079 0 0"``).
        """
        text = element.get(attribute, default)
        if text is None:
            self.problem(element.sourceline, where, f"<{element.tag}> needs the attribute {attribute!r}")
            return None
        parts = text.replace(",", " ").split()
        try:
            read = [_lenient_float(v) for v in parts]
            values = np.array([v for v, _ in read], dtype=np.float64)
            if any(stray for _, stray in read):
                self.lenient(LENIENT_NUMBER_END, element.sourceline, f"{where} <{element.tag} {attribute}> {_shortened(text)}")
        except ValueError:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be numbers, got {_shortened(text)}{_xacro_hint(text)}")
            return None
        if "," in text:
            self.lenient(LENIENT_COMMAS, element.sourceline, f"{where} <{element.tag} {attribute}>")
        if count == 1 and values.size != 1:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be a number, got {_shortened(text)}")
            return None
        if count == 3 and values.size > 3:
            self.lenient(LENIENT_EXTRA_NUMBERS, element.sourceline, f"{where} <{element.tag} {attribute}> {_shortened(text)}")
            values = values[:3]
        if count is not None and values.size != count:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be {count} numbers, got {values.size}")
            return None
        return values

    def number(self, element, attribute: str, where: str, default: float | None = None) -> float | None:
        """One number (``default`` when the attribute is absent; a problem when it is not a number: None)."""
        text = element.get(attribute)
        if text is None:
            return default
        try:
            value, stray = _lenient_float(text)
            if stray:
                self.lenient(LENIENT_NUMBER_END, element.sourceline, f"{where} <{element.tag} {attribute}> {_shortened(text)}")
            return value
        except ValueError:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be a number, got {_shortened(text)}{_xacro_hint(text)}")
            return None

    def origin(self, parent, where: str) -> np.ndarray | None:
        """The (4, 4) transform of ``parent``'s ``<origin xyz rpy>`` (identity when absent), or None."""
        element = parent.find("origin")
        if element is None:
            return np.eye(4)
        xyz = self.numbers(element, "xyz", where, "0 0 0", 3)
        rpy = self.numbers(element, "rpy", where, "0 0 0", 3)
        if xyz is None or rpy is None:
            return None
        return _transform_from_xyz_rpy(xyz, rpy)

    def _materials(self, root) -> dict[str, np.ndarray]:
        """The robot's named materials' colours (top-level ``<material name><color rgba>``)."""
        colors = {}
        for material in root.findall("material"):
            rgba = self._color(material, "material")
            if material.get("name") and rgba is not None:
                colors[material.get("name")] = rgba
        return colors

    def _color(self, material, where: str) -> np.ndarray | None:
        color = material.find("color")
        return None if color is None else self.numbers(color, "rgba", where, "1 1 1 1")

    def _link(self, element, name: str, materials) -> _Link | None:
        where = f"link {name!r}"
        inertial = element.find("inertial")
        mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
        has_inertial = inertial is not None
        if inertial is not None:
            mass_element = inertial.find("mass")
            mass = 0.0 if mass_element is None else self.number(mass_element, "value", where, 0.0)
            if mass is None:
                return None
            # every comparison with nan is false: without this a nan mass would pass as "massless"
            if self.finite(element.sourceline, where, "<mass>", mass) and mass < 0:
                self.problem(element.sourceline, where, f"<mass> must be >= 0, got {mass:g}")
            origin = self.origin(inertial, where)
            if origin is None:
                return None
            if not self.finite(element.sourceline, where, "<inertial><origin>", origin):
                origin = np.eye(4)
            com = origin[:3, 3].copy()
            rot = origin[:3, :3]
            tensor = inertial.find("inertia")
            if tensor is not None:
                # yourdfpy's defaults for a missing attribute (1 on the diagonal, 0 off it)
                values = {key: self.number(tensor, key, where, 1.0 if key[1] == key[2] else 0.0) for key in _INERTIA_KEYS}
                if any(v is None for v in values.values()):
                    return None
                given = np.array([[values["ixx"], values["ixy"], values["ixz"]],
                                  [values["ixy"], values["iyy"], values["iyz"]],
                                  [values["ixz"], values["iyz"], values["izz"]]], dtype=np.float64)
                if self.finite(element.sourceline, where, "<inertia>", given):
                    # rotate the inertia from the inertial frame into the link frame
                    inertia = rot @ given @ rot.T
        out = _Link(name, element.sourceline, mass, com, 0.5 * (inertia + inertia.T), has_inertial=has_inertial)
        for kind in ("visual", "collision"):
            for item_element in element.findall(kind):
                shape = self._geometry(item_element, f"{where} {kind}", materials if kind == "visual" else None)
                if shape is not None:
                    (out.visuals if kind == "visual" else out.collisions).append(shape)
        if mass > MASSLESS and math.isfinite(mass) and (self.options.inertia_from_geometry or not _positive_definite(out.inertia)):
            computed = _inertia_from_shapes(out.collisions or out.visuals, mass, com, self)
            if computed is not None and _positive_definite(computed):
                if not self.options.inertia_from_geometry:
                    eig = np.linalg.eigvalsh(out.inertia)
                    self.note(element.sourceline, where, f"inertia eigenvalues [{', '.join(f'{e:.3g}' for e in eig)}] are not "
                              f"positive definite; computed from its {'collision' if out.collisions else 'visual'} shapes "
                              "(uniform density, the file's mass and centre of mass; --inertia-from-geometry)")
                out.inertia = computed
        return out

    def _geometry(self, element, where: str, materials: dict | None):
        """(kind, params, (4, 4) pose in the link, rgba | None, line) of a visual or collision, or None."""
        line = element.sourceline
        geometry_element = element.find("geometry")
        pose = self.origin(element, where)
        if pose is None or not self.finite(line, where, "<origin>", pose):
            return None
        rgba = None
        material = element.find("material") if materials is not None else None
        if material is not None:
            color = self._color(material, where)
            if color is not None:
                rgba = color
            elif material.get("name") in materials:
                rgba = materials[material.get("name")]
        shapes = [] if geometry_element is None else [e for e in geometry_element if isinstance(e.tag, str)]
        if geometry_element is None:
            self.warn(line, where, "has no <geometry>; ignored")
            return None
        if not shapes or shapes[0].tag not in ("box", "sphere", "cylinder", "capsule", "mesh"):
            self.warn(line, where, "unknown <geometry> (not box, sphere, cylinder, capsule or mesh); ignored")
            return None
        shape = shapes[0]
        if shape.tag == "capsule":
            try:
                params = {"radius": float(shape.get("radius")), "height": float(shape.get("length"))}
            except (TypeError, ValueError):
                self.problem(shape.sourceline, where, "<capsule> needs numbers radius and length")
                return None
            if not self.finite(shape.sourceline, where, "<capsule>", list(params.values())):
                return None
            return ("capsule", params, pose, rgba, line)
        if shape.tag == "box":
            size = self.numbers(shape, "size", where, count=3)
            if size is None:
                return None
            kind, params = "box", {"size": _vector(size)}
        elif shape.tag == "sphere":
            radius = self.numbers(shape, "radius", where, count=1)
            if radius is None:
                return None
            kind, params = "sphere", {"radius": float(radius[0])}
        elif shape.tag == "cylinder":
            radius, length = self.numbers(shape, "radius", where, count=1), self.numbers(shape, "length", where, count=1)
            if radius is None or length is None:
                return None
            kind, params = "cylinder", {"radius": float(radius[0]), "height": float(length[0])}
        else:
            return self._mesh(shape, where, pose, rgba)
        if not self.finite(line, where, f"<{kind}>", [v for value in params.values() for v in np.ravel(value)]):
            return None
        if materials is not None and min(np.ravel([params[k] for k in ("size", "radius", "height") if k in params])) == 0.0:
            # a visual of size 0 draws nothing (a radius-0 sphere marks a frame in some files)
            self._empty_visuals.append(f"{where.split(' visual')[0]} (line {line})")
            return None
        return (kind, params, pose, rgba, line)

    def _mesh(self, mesh_element, where: str, pose: np.ndarray, rgba):
        mesh_line = mesh_element.sourceline
        name = mesh_element.get("filename")
        if name is None or not name.isprintable() or len(name) > MAX_PATH_LENGTH:
            shown = "none" if name is None else _shortened(name)
            self.problem(mesh_line, f"{where} mesh", f"filename must be a printable path of at most {MAX_PATH_LENGTH} characters, got {shown}")
            return None
        try:
            path = resolve_resource(name, self.path.parent, self.search_path)
            exists = path.is_file()
        except UnresolvedPackage as exc:
            self.problem(mesh_line, f"{where} mesh", f"cannot resolve {_shortened(name)}: {exc.hint()}")
            return None
        except OSError as exc:
            # a name the file system refuses (a part longer than NAME_MAX, ...)
            self.problem(mesh_line, f"{where} mesh", f"filename {_shortened(name)}: {exc.strerror or exc}")
            return None
        if path.suffix.lower() not in _MESH_SUFFIXES:
            self.warn(mesh_line, f"{where} mesh", f"{name!r}: unsupported mesh format (supported: {', '.join(_MESH_SUFFIXES)}); not drawn")
            return None
        if not exists:
            # physics does not need meshes: the scene still loads and simulates
            self.warn(mesh_line, f"{where} mesh", f"{name!r}: no such file {path}; replay draws a placeholder")
        scale = None
        if mesh_element.get("scale") is not None:
            scale = self.numbers(mesh_element, "scale", f"{where} mesh")
            if scale is None:
                return None
            if scale.size > 3:
                # Bullet reads a vector's first 3 numbers (racecar_differential.urdf's "1 1 1 1")
                self.lenient(LENIENT_EXTRA_NUMBERS, mesh_line, f"{where} <mesh scale> {_shortened(mesh_element.get('scale'))}")
                scale = scale[:3]
            if scale.size not in (0, 1, 3):
                self.problem(mesh_line, f"{where} mesh", f"<mesh scale> must be 1 or 3 numbers, got {scale.size}")
                return None
            scale = None if scale.size == 0 else scale
            if scale is not None and not self.finite(mesh_line, f"{where} mesh", "scale", scale):
                return None
        scale = 1.0 if scale is None else _vector(np.broadcast_to(scale, (3,)))
        if isinstance(scale, list) and len(set(scale)) == 1 and scale[0] > 0:
            # uniform: one number; a uniform mirror (-1 -1 -1, tiago_dual's right arm) stays
            # per axis, the scene's form of a negative scale (a uniform scale is > 0)
            scale = scale[0]
        return ("mesh", {"file": str(path), "scale": scale}, pose, rgba, mesh_line)

    def _joint(self, element, name: str, links, refused: set[str]) -> _Joint | None:
        where = f"joint {name!r}"
        line = element.sourceline
        ok = True
        kind = element.get("type")
        if kind not in URDF_JOINT_TYPES + BULLET_JOINT_TYPES:
            shown = "missing" if kind is None else repr(kind)
            self.problem(line, where, f"unknown joint type {shown} (one of: {', '.join(URDF_JOINT_TYPES + BULLET_JOINT_TYPES)})")
            ok = False
        ends = {}
        for role in ("parent", "child"):
            tag = element.find(role)
            ends[role] = tag.get("link") if tag is not None else None
            tag_line = tag.sourceline if tag is not None else line
            if ends[role] is None:
                self.problem(tag_line, where, f"<{role} link=...> missing")
                ok = False
            elif ends[role] in refused:
                ok = False
            elif ends[role] not in links:
                self.problem(tag_line, where, f"{role} link {ends[role]!r} is not defined (links: {_listed(list(links))})")
                ok = False
        if not ok:
            return None
        axis_element = element.find("axis")
        axis = np.array([1.0, 0.0, 0.0]) if axis_element is None else self.numbers(axis_element, "xyz", where, "1 0 0")
        if axis is None:
            return None
        if axis.size > 3:
            # Bullet reads a vector's first 3 numbers
            self.lenient(LENIENT_EXTRA_NUMBERS, axis_element.sourceline, f"{where} <axis xyz> {_shortened(axis_element.get('xyz'))}")
            axis = axis[:3]
        if axis.shape != (3,):
            self.problem(line, where, f"<axis xyz> must be 3 numbers, got {axis.size}")
            return None
        origin = self.origin(element, where)
        if origin is None:
            return None
        if not (self.finite(line, where, "<axis xyz>", axis) and self.finite(line, where, "<origin>", origin)):
            return None
        if kind in ("revolute", "continuous", "prismatic", "planar") and np.linalg.norm(axis) < 1e-12:
            self.problem(line, where, "<axis xyz> must be nonzero")
            return None
        out = _Joint(name, line, kind, ends["parent"], ends["child"], origin, axis / max(np.linalg.norm(axis), 1e-300))
        limit_element = element.find("limit")
        if limit_element is not None:
            try:
                read = {key: _lenient_float(limit_element.get(key)) if limit_element.get(key) is not None else (None, False)
                        for key in ("effort", "velocity", "lower", "upper")}
                out.effort, out.velocity = read["effort"][0], read["velocity"][0]
                lower, upper = read["lower"][0], read["upper"][0]
                for key, (_, stray) in read.items():
                    if stray:
                        self.lenient(LENIENT_NUMBER_END, limit_element.sourceline,
                                     f"{where} <limit {key}> {_shortened(limit_element.get(key))}")
            except ValueError as exc:
                hint = "".join(_xacro_hint(limit_element.get(k) or "") for k in ("effort", "velocity", "lower", "upper"))
                self.problem(limit_element.sourceline, where, f"<limit> values must be numbers ({exc}){hint}")
                return None
            given = [v for v in (out.effort, out.velocity, lower, upper) if v is not None]
            if not self.finite(limit_element.sourceline, where, "<limit>", given, infinite=True):
                return None
            if kind in ("revolute", "prismatic"):
                # the spec defaults lower and upper to 0; a missing one means no bound here,
                # and equal bounds (a joint locked by its limits) are not solvable as inequalities
                if lower is not None and upper is not None and lower > upper:
                    # Bullet's "no limit" (biped2d_pybullet's lower="1" upper="-1"): btMultiBody
                    # applies a limit only when lower <= upper
                    self.lenient(LENIENT_NO_LIMIT, limit_element.sourceline, f"joint {name!r} [{lower:g}, {upper:g}]")
                elif lower is not None and upper is not None and lower == upper:
                    self.warn(limit_element.sourceline, where, f"<limit> lower = upper = {lower:g}; position limits ignored")
                else:
                    out.lower, out.upper = lower, upper
            if kind == "spherical" and all(v is not None and v > 0 for v in (lower, upper, out.effort)):
                twist = _number(limit_element.get("twist")) if _is_number(limit_element.get("twist")) else None
                if twist is not None and twist > 0:
                    out.swing_twist = (lower, upper, twist)
        elif kind in ("revolute", "prismatic"):
            self.warn(line, where, "has no <limit> (required for its type); no position limits")
        dynamics = element.find("dynamics")
        if dynamics is not None:
            try:
                if kind == "planar":
                    # Drake's parser: a planar joint's damping is 3 values (x, y, theta), or one for all
                    out.damping = _planar_damping(dynamics.get("damping"))
                else:
                    out.damping = _number(dynamics.get("damping")) or 0.0
                out.friction = _number(dynamics.get("friction")) or 0.0
            except ValueError as exc:
                self.problem(line, where, f"<dynamics> values must be numbers ({exc})")
                return None
            if not self.finite(line, where, "<dynamics>", np.r_[out.damping, out.friction]):
                return None
            if np.min(out.damping) < 0:
                self.problem(line, where, f"<dynamics damping> must be >= 0, got {np.min(out.damping):g}")
        mimic = element.find("mimic")
        if mimic is not None:
            out.mimic = mimic.get("joint")
        return out


def _inertia_from_shapes(shapes: list, mass: float, com: np.ndarray, reader: _Reader) -> np.ndarray | None:
    """(3, 3) inertia about ``com`` (link frame) of ``mass`` spread uniformly over the
    volume of ``shapes`` (a link's collision elements: box, sphere, cylinder, capsule; a
    mesh as its convex hull), or None (no shape with volume). Shapes are taken as disjoint
    (overlaps count twice, as in MuJoCo's inertiafromgeom). Solid-body moments: box
    m/12 (b^2 + c^2); sphere 2/5 m r^2; cylinder (axis z) m/12 (3 r^2 + h^2) across,
    m r^2 / 2 along; capsule the cylinder plus two half spheres, each at 3r/8 from its
    flat face (parallel-axis to the centre)."""
    parts = []  # (volume, (3,) centroid in the link, (3, 3) inertia per unit density about the centroid, link axes)
    for kind, params, pose, _rgba, _line in shapes:
        rot, centre = pose[:3, :3], pose[:3, 3]
        if kind == "box":
            a, b, c = (float(v) for v in params["size"])
            volume = a * b * c
            unit = volume / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        elif kind == "sphere":
            r = float(params["radius"])
            volume = 4.0 / 3.0 * math.pi * r**3
            unit = 0.4 * volume * r * r * np.eye(3)
        elif kind in ("cylinder", "capsule"):
            r, h = float(params["radius"]), float(params["height"])
            cylinder = math.pi * r * r * h
            across = cylinder * (3 * r * r + h * h) / 12.0
            along = cylinder * r * r / 2.0
            volume = cylinder
            if kind == "capsule":
                half = 2.0 / 3.0 * math.pi * r**3  # each end's half sphere
                offset = h / 2.0 + 3.0 * r / 8.0  # its centroid from the capsule's centre
                own_across = half * (2.0 / 5.0 * r * r - (3.0 * r / 8.0) ** 2)  # about its own centroid
                across += 2.0 * (own_across + half * offset * offset)
                along += 2.0 * (2.0 / 5.0 * half * r * r)
                volume += 2.0 * half
            unit = np.diag([across, across, along])
        elif kind == "mesh":
            made = _mesh_volume(params)
            if made is None:
                continue
            volume, mesh_centre, mesh_unit = made
            centre = centre + rot @ mesh_centre
            unit = mesh_unit
        else:
            continue
        if volume > 0.0 and np.all(np.isfinite(unit)):
            parts.append((volume, centre, rot @ unit @ rot.T))
    total = sum(v for v, _, _ in parts)
    if not parts or not total > 0.0:
        return None
    density = mass / total
    inertia = np.zeros((3, 3))
    for volume, centre, unit in parts:
        d = centre - com
        inertia += density * (unit + volume * (d @ d * np.eye(3) - np.outer(d, d)))
    return 0.5 * (inertia + inertia.T)


def _mesh_volume(params: dict) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(volume, centroid (3,), inertia per unit density about it (3, 3)) of a mesh file's
    convex hull (scaled), or None (unreadable)."""
    try:
        import trimesh  # here: only a link with a mesh and a bad inertia pays for it

        points = trimesh.load(params["file"], force="mesh").vertices * np.broadcast_to(np.asarray(params["scale"], float), (3,))
        hull = trimesh.convex.convex_hull(points)  # of the scaled points: a mirror keeps its volume positive
        hull.density = 1.0
        return float(hull.volume), np.asarray(hull.center_mass, float), np.asarray(hull.moment_inertia, float)
    except Exception:  # noqa: BLE001 - trimesh raises what its loaders raise
        return None


# Leniencies of the XML read (one warning lists those used): an XML declaration that is
# not at the very start of the file or not of version 1.0 (TinyXML, which urdfdom and
# Pinocchio use, ignores it) is dropped; content after the root element is cut off.
_LENIENT_XML = ("declaration", "trailing")
_DECLARATION = re.compile(rb"<\?xml(?:\s[^?]*)?\?>")


def _lenient_xml(data: bytes, exc) -> tuple[bytes, str] | None:
    """(the document with what lxml refused repaired, what it was), or None: not one of the
    _LENIENT_XML cases (a real error, reported as malformed XML)."""
    message = exc.msg or ""
    if message.startswith(("Unsupported version", "XML declaration allowed only at the start")):
        # every declaration goes (line breaks kept: the lines of the rest do not move)
        stripped = _DECLARATION.sub(lambda m: b"\n" * m.group(0).count(b"\n"), data)
        return (stripped, "an XML declaration not at the start or not of version 1.0, ignored") if stripped != data else None
    if message.startswith("Extra content at the end of the document") and exc.lineno:
        lines = data.split(b"\n")
        if exc.lineno > len(lines):
            return None
        cut = sum(len(line) + 1 for line in lines[: exc.lineno - 1]) + max(exc.position[1] - 1, 0)
        return data[:cut], "content after the root element, ignored"
    return None


_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _transform_from_xyz_rpy(xyz: np.ndarray, rpy: np.ndarray) -> np.ndarray:
    """(4, 4) transform of an ``<origin>``: translation ``xyz``, rotation Rz(yaw) Ry(pitch) Rx(roll).

    URDF's rpy are fixed-axis roll, pitch, yaw. The arithmetic is that of yourdfpy
    (trimesh's ``compose_matrix(translate, angles)`` with ``euler_matrix(..., "sxyz")``),
    operation for operation, so scenes imported before and after the parser changed
    hold the same numbers to the bit.
    """
    si, sj, sk = np.sin(rpy[0]), np.sin(rpy[1]), np.sin(rpy[2])
    ci, cj, ck = np.cos(rpy[0]), np.cos(rpy[1]), np.cos(rpy[2])
    cc, cs = ci * ck, ci * sk
    sc, ss = si * ck, si * sk
    rotation = np.eye(4)
    rotation[0, 0], rotation[0, 1], rotation[0, 2] = cj * ck, sj * sc - cs, sj * cc + ss
    rotation[1, 0], rotation[1, 1], rotation[1, 2] = cj * sk, sj * ss + cc, sj * cs - sc
    rotation[2, 0], rotation[2, 1], rotation[2, 2] = -sj, cj * si, cj * ci
    translation = np.identity(4)
    translation[:3, 3] = xyz
    out = np.dot(np.dot(np.identity(4), translation), rotation)
    out /= out[3, 3]
    return out


# xacro's $(optenv NAME [default ...]) and $(env NAME) (xacro/substitution_args.py: the default
# is the rest of the arguments joined by single spaces); any other $(...) or ${...} is xacro's
_XACRO_ENV = re.compile(r"\$\((optenv|env)\s+([^\s)]+)((?:\s+[^)]*)?)\)")
_XACRO_ANY = re.compile(r"\$\([^)]*\)?|\$\{[^}]*\}?")


def _expand_environment(text: str) -> tuple[str, str | None]:
    """(``text`` with xacro's environment substitutions expanded, None), or (text, the first
    substitution that cannot be: another xacro substitution, or $(env NAME) of an unset NAME)."""
    unknown = None

    def expand(match: re.Match) -> str:
        nonlocal unknown
        kind, name, rest = match.group(1), match.group(2), match.group(3).split()
        if name in os.environ:
            return os.environ[name]
        if kind == "env":
            unknown = unknown or f"{match.group(0)} (environment variable {name} is not set)"
            return match.group(0)
        return " ".join(rest)

    out = _XACRO_ENV.sub(expand, text)
    if unknown is None:
        left = _XACRO_ANY.search(out)
        if left is not None:
            unknown = left.group(0)
    return out, unknown


def _xacro_hint(text: str) -> str:
    """A message's ending for a value holding a xacro substitution ('' for another value)."""
    found = _XACRO_ANY.search(text)
    if found is None:
        return ""
    return (f": an unexpanded xacro substitution {_shortened(found.group(0))} (the file is a xacro source, "
            "not a URDF: run xacro on it, xacro FILE > robot.urdf)")


def _owner(element) -> str | None:
    """The link, joint or material an element belongs to (``joint 'imu_joint'``), or None."""
    for item in (element, *element.iterancestors()):
        if item.tag in ("link", "joint", "material") and item.get("name") is not None:
            return f"{item.tag} {item.get('name')!r}"
    return None


def _printable_name(name) -> bool:
    # names become scene names, which end up in storage files and messages (XML allows tabs and line breaks)
    return not isinstance(name, str) or name.isprintable()


def _shortened(name: str, most: int = 60) -> str:
    """repr of a name for a message, cut short when long."""
    return repr(name) if len(name) <= most else f"{name[:most]!r}... ({len(name):,} characters)"


def _planar_damping(value) -> float | list[float]:
    """A planar joint's ``<dynamics damping>``: one value, or three (x, y, theta) as Drake reads it."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    parts = str(value).split()
    if len(parts) not in (1, 3):
        raise ValueError(f"a planar joint's damping is 1 or 3 values (x, y, theta), got {len(parts)}: {value!r}")
    numbers = [float(p) for p in parts]
    return numbers[0] if len(numbers) == 1 else numbers


def _number(value) -> float | None:
    if value is None:
        return None
    return float(value)


# A number as C's strtod reads its start (Bullet's URDF reader casts with atof), followed only by
# punctuation: biped2d_pybullet.urdf's lower="-1.57." (a typo Bullet reads as -1.57)
_NUMBER_START = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([.,;:]+)\s*$")


def _lenient_float(text: str) -> tuple[float, bool]:
    """(the number, whether stray punctuation followed it and was ignored).

    Raises:
        ValueError: not a number (Python's float), nor a number followed by punctuation only.
    """
    try:
        return float(text), False
    except ValueError:
        found = _NUMBER_START.match(text)
        if found is None:
            raise
        return float(found.group(1)), True


def _is_number(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except ValueError:
        return False


def _listed(names: list[str], most: int = 8) -> str:
    shown = ", ".join(names[:most])
    return shown + (", ..." if len(names) > most else "") if names else "none"


# ---------------------------------------------------------------- the tree


@dataclass
class _Group:
    """Links rigidly joined into one body."""

    reference: str  # the top link: its frame orientation is the body's
    links: dict[str, np.ndarray] = field(default_factory=dict)  # link -> (4,4) pose in the reference link frame
    name: str = ""
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))  # in the reference link frame
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


def read_urdf(path: str | os.PathLike, options: UrdfOptions | None = None, shown: str | None = None) -> UrdfImport:
    """Read a URDF file into scene data.

    Args:
        path: the URDF file.
        options: import options (defaults: fixed base, no contacts, keep fixed joints).
        shown: the file's name in problems and warnings (default: the path as given).

    Returns:
        The scene data with the warnings found.

    Raises:
        SceneError: the file cannot be read or is not a usable URDF; one problem per
            issue, each ``file:line: element: message``.
    """
    options = options or UrdfOptions()
    path = Path(path)
    reader = _Reader(path, shown or str(path), options)
    robot_name, links, joints = reader.read()
    child_joint = _tree(reader, links, joints)
    reader.fail_if_problems()
    roots = [name for name in links if name not in child_joint]
    root = roots[0]
    if all(link.mass <= MASSLESS for link in links.values()):
        # plane.urdf, table.urdf, tray.urdf: Bullet loads them as static objects (a base of mass 0
        # is fixed to the world); with nothing that moves there is nothing to simulate
        reader.problem(links[root].line, "robot", f"no link has mass ({_listed(list(links))}): the file describes static "
                       "scenery (Bullet reads a base of mass 0 as fixed to the world), nothing that moves; a scene's static "
                       "ground is its 'ground:' half-space (docs/scenes.md)")
        reader.fail_if_problems()
    result = UrdfImport(scene={})
    groups, body_of, world_links = _group_links(reader, links, joints, child_joint, root, result)
    reader.fail_if_problems()
    floating = (options.floating or bool(options.floating_base)) and body_of.get(root) == 0

    bodies = []
    for group in groups:
        bodies.append(_body(reader, group, links, options))
        for link, pose in group.links.items():
            body_pose = _translation(-group.com) @ pose
            result.link_bodies[link] = (group.name, body_pose)
    scene_joints = _scene_joints(reader, links, joints, groups, body_of, world_links, root, options, result)
    reader.fail_if_problems()
    result.scene_joints = scene_joints
    reader.report_unmodelled()
    result.moved_into_range = _start_inside_limits(reader, scene_joints)
    if options.floating and not options.floating_base:
        _turn_upright(reader, result)
    contacts = _contacts(reader, links, groups, result, options)

    scene = {
        "name": robot_name,
        "description": f"imported from {path.name}" + (" (floating base)" if floating else ""),
        "timestep": DEFAULT_TIMESTEP,
        "bodies": bodies,
        "joints": scene_joints,
        "contacts": contacts,
    }
    if floating and contacts:
        _stand_on_ground(scene, result)
    elif options.floating and root in result.dropped and contacts:
        _lift_world_root(reader, scene, result, root, links[root].line)
    if options.floating_base:
        scene = _refloat(reader, scene, result, options.floating_base)
    result.scene = scene
    result.warnings = reader.warnings
    return result


def _refloat(reader: _Reader, scene: dict, result: UrdfImport, link: str) -> dict:
    """The scene re-rooted at ``link``'s body (dojo_cli.scene.floating_base)."""
    from dojo_cli.scene.floating_base import set_floating_base

    if link not in result.link_bodies:
        known = _listed(sorted(result.link_bodies))
        raise SceneError(Problem(reader.file, None, "floating_base", f"no link {link!r} in the robot (links that are bodies' parts: {known})"))
    try:
        scene = set_floating_base(scene, result.link_bodies[link][0])
    except SceneError as exc:
        raise SceneError([Problem(reader.file, None, "floating_base", p.message) for p in exc.problems]) from None
    result.scene_joints = scene["joints"]
    return scene


def _tree(reader: _Reader, links: dict[str, _Link], joints: list[_Joint]) -> dict[str, _Joint]:
    """child link -> its joint; checks one parent per link, one root, no loop."""
    child_joint: dict[str, _Joint] = {}
    for joint in joints:
        if joint.child in child_joint:
            first = child_joint[joint.child]
            reader.problem(joint.line, f"joint {joint.name!r}", f"link {joint.child!r} already has a parent joint ({first.name!r}); URDF is a tree")
            continue
        if joint.child == joint.parent:
            reader.problem(joint.line, f"joint {joint.name!r}", "parent and child are the same link")
            continue
        child_joint[joint.child] = joint
    if reader.problems:
        return child_joint
    roots = [name for name in links if name not in child_joint]
    if len(roots) != 1:
        if not roots:
            reader.problem(None, "robot", "every link has a parent joint: the joints form a loop")
        else:
            line = links[roots[1]].line
            reader.problem(line, "robot", f"more than one root link ({_listed(roots)}); a URDF has one")
        return child_joint
    for name in links:
        seen = []
        while name in child_joint and name not in seen:
            seen.append(name)
            name = child_joint[name].parent
        if name in seen:
            reader.problem(child_joint[name].line, f"joint {child_joint[name].name!r}", "is part of a loop of joints")
            break
    return child_joint


def _children(joints: list[_Joint]) -> dict[str, list[_Joint]]:
    out: dict[str, list[_Joint]] = {}
    for joint in joints:
        out.setdefault(joint.parent, []).append(joint)
    return out


def _positive_definite(inertia: np.ndarray) -> bool:
    eig = np.linalg.eigvalsh(inertia)
    return bool(eig.min() > INERTIA_EIGENVALUE_FLOOR * max(eig.max(), 1e-300) and eig.min() > 0)


def _group_links(reader, links, joints, child_joint, root, result):
    """Links -> bodies: which fixed joints merge, and the world-fixed links.

    Returns:
        groups (root to leaves), body_of (link -> group index, or -1 for the world),
        world_links (link -> (4, 4) pose in the world, for a dropped root).
    """
    children = _children(joints)
    root_link = links[root]
    world_links: dict[str, np.ndarray] = {}
    body_of: dict[str, int] = {}
    groups: list[_Group] = []
    options = reader.options

    # The root: a massless (or non-positive-definite) root cannot be a body. With a
    # floating base, or a single fixed child, it merges into the body below it; with a
    # fixed base it is the world itself (dropped), and its children hang from origin.
    root_usable = root_link.mass > MASSLESS and _positive_definite(root_link.inertia)
    drop_root = False
    root_fixed: set[str] = set()  # links merged into a massless root's body (its fixed subtree)
    if not root_usable:
        fixed_children = [j for j in children.get(root, []) if j.type == "fixed"]
        reason = "no mass" if root_link.mass <= MASSLESS else "an inertia that is not positive definite"
        if options.floating or (len(children.get(root, [])) == 1 and fixed_children):
            movable = [j for j in children.get(root, []) if j.type != "fixed"]
            if movable or not fixed_children:
                root_fixed = _massive_root_group(reader, root, children, links, movable, reason)
                if root_fixed is None:
                    # Bullet (and Gazebo's "world" link) read a base of mass 0 as static: the
                    # root is fixed to the world whatever --floating says (a massless body
                    # cannot float), and its joints hang from it (kuka_iiwa/model.urdf, cartpole)
                    drop_root, root_fixed = True, set()
                    reader.note(root_link.line, f"link {root!r}", f"the root link has {reason} and no link fixed to it has "
                                "mass: it is fixed to the world, not floating (Bullet reads a base of mass 0 as static), "
                                f"and its joints {_listed([j.name for j in movable])} hang from the world")
                    result.dropped.append(root)
            else:
                reader.warn(root_link.line, f"link {root!r}", f"the root link has {reason}; merged into {fixed_children[0].child!r}")
        else:
            drop_root = True
            reader.warn(root_link.line, f"link {root!r}", f"the root link has {reason}; dropped (it is the world frame)")
            result.dropped.append(root)

    def merges(joint: _Joint) -> bool:
        child = links[joint.child]
        if joint.type != "fixed":
            return False
        massless = child.mass <= MASSLESS
        if options.merge_fixed or massless:
            return True
        if not _positive_definite(child.inertia):
            reader.warn(child.line, f"link {child.name!r}", "inertia is not positive definite; merged into its parent")
            return True
        # a massless root takes the links fixed to it in (its fixed subtree)
        return joint.child in root_fixed or (joint.parent == root and not root_usable and not drop_root)

    # walk root to leaves
    order: list[str] = [root]
    for name in order:
        order += [j.child for j in children.get(name, [])]
    for name in order:
        if name == root:
            if drop_root:
                world_links[root] = np.eye(4)
                body_of[root] = -1
            else:
                groups.append(_Group(reference=root, links={root: np.eye(4)}))
                body_of[root] = 0
            continue
        joint = child_joint[name]
        if body_of.get(name) in (-2, -3):
            continue  # part of a massless subtree dropped above, or a frame inside a multi-axis joint
        if joint.parent not in body_of:
            # its parent was refused (a problem already says why): nothing to hang it from
            continue
        parent_group = body_of[joint.parent]
        if parent_group == -1 and joint.type == "fixed":
            world_links[name] = world_links[joint.parent] @ joint.origin
            body_of[name] = -1
            # a fixed joint to the world: the link is part of the world unless it has mass
            if links[name].mass > MASSLESS:
                del world_links[name]
                groups.append(_Group(reference=name, links={name: np.eye(4)}))
                body_of[name] = len(groups) - 1
            continue
        if parent_group != -1 and merges(joint):
            group = groups[parent_group]
            group.links[name] = group.links[joint.parent] @ joint.origin
            body_of[name] = parent_group
            result.merged.append(joint.name)
            continue
        if links[name].mass <= MASSLESS or not _positive_definite(links[name].inertia):
            # a massless link on a movable joint: fine as a leaf frame (dropped), not as a carrier
            if not children.get(name) and links[name].mass <= MASSLESS:
                reader.warn(links[name].line, f"link {name!r}", f"has no mass and moves on joint {joint.name!r}; dropped with the joint")
                result.dropped.append(name)
                body_of[name] = -2
                continue
            subtree = _massless_subtree(name, children, links)
            if subtree is not None:
                _drop_massless_subtree(reader, links, child_joint, subtree, result, body_of)
                continue
            if links[name].mass <= MASSLESS:
                chain = _massless_chain(name, joint, children, links)
                axes, why = _multi_axis_chain(name, joint, children, links)
                if axes is not None:
                    # one universal or gimbal joint from the chain's parent onto its end link
                    for inner in axes[:-1]:
                        body_of[inner.child] = -3
                        result.dropped.append(inner.child)
                    reader.axes_chains[axes[-1].child] = axes
                    continue
                reader.problem(links[name].line, f"link {name!r}", f"has no mass but moves on joint {joint.name!r} and carries links; "
                               f"give it an <inertial> (the joints {', '.join(chain)} through massless links are not "
                               f"one universal or gimbal joint: {why})")
                continue
        groups.append(_Group(reference=name, links={name: np.eye(4)}))
        body_of[name] = len(groups) - 1

    for group in groups:
        _mass_properties(group, links)
        if group.mass <= MASSLESS:
            reader.problem(links[group.reference].line, f"link {group.reference!r}", "has no mass (nor do the links merged into it)")
    return groups, body_of, world_links


def _massive_root_group(reader, root: str, children: dict[str, list[_Joint]], links: dict[str, _Link],
                        movable: list[_Joint], reason: str) -> set[str] | None:
    """The links fixed to a massless root that carries movable joints (its subtree through
    fixed joints, the root included), merged into one body with a note; None (and a
    problem) when together they have no mass.

    URDF files often give the floating base to a frame without mass ("base") with the
    trunk's mass on a link fixed below it (anymal's base -> base_inertia) and the legs on
    the frame itself: merged, the group is one body whose tree frame is the root's frame,
    where Pinocchio puts its free flyer, and the legs hang from it.
    """
    group = {root}
    stack = [root]
    while stack:
        for joint in children.get(stack.pop(), []):
            if joint.type == "fixed":
                group.add(joint.child)
                stack.append(joint.child)
    line = links[root].line
    if sum(links[name].mass for name in group) <= MASSLESS:
        return None
    reader.note(line, f"link {root!r}", f"the root link has {reason}; merged with the links fixed to it "
                f"({_listed(sorted(group - {root}))}) into one body, the floating base, which carries its joints "
                f"{_listed([j.name for j in movable])}")
    return group


def _massless_subtree(name: str, children: dict[str, list[_Joint]], links: dict[str, _Link]) -> list[str] | None:
    """``name`` and every link below it, root to leaves, if none of them has mass; else None.

    A massless subtree on movable joints (romeo's fingers: three massless links each) moves
    nothing: it is frames, not bodies, and is dropped with its joints as a massless leaf is
    (Pinocchio keeps those joints with a singular mass matrix, M q'' = tau has no unique q'').
    """
    order = [name]
    for link in order:
        order += [j.child for j in children.get(link, [])]
    if any(links[link].mass > MASSLESS for link in order):
        return None
    return order


def _massless_chain(name: str, joint: _Joint, children: dict[str, list[_Joint]], links: dict[str, _Link]) -> list[str]:
    """The joints from ``joint`` (onto the massless link ``name``) down through massless links
    with one child each, to the first link with mass or a branch: a multi-axis joint as URDF
    writes it (human.urdf's hip: left_hip_Z, left_hip_X, left_hip_Y)."""
    chain = [joint.name]
    while links[name].mass <= MASSLESS and len(children.get(name, [])) == 1:
        below = children[name][0]
        chain.append(below.name)
        name = below.child
    return chain


def _multi_axis_chain(name: str, joint: _Joint, children: dict[str, list[_Joint]],
                      links: dict[str, _Link]) -> tuple[list[_Joint] | None, str]:
    """The joints of a universal (2) or gimbal (3) joint written as a chain from ``joint``
    (onto the massless link ``name``) through massless links with one child each onto a
    link with mass; (None, why not) when the chain is not one: its joints must be revolute
    (or continuous), all through one point (no translation in the later origins) and their
    axes mutually orthogonal (core/maximal/euler_joints.h)."""
    chain = [joint]
    while links[name].mass <= MASSLESS:
        below = children.get(name, [])
        if len(below) != 1:
            return None, f"link {name!r} has {len(below)} children"
        chain.append(below[0])
        name = below[0].child
    if len(chain) not in (2, 3):
        return None, f"{len(chain)} joints (a universal joint has 2 axes, a gimbal 3)"
    bad = [j.name for j in chain if j.type not in ("revolute", "continuous")]
    if bad:
        return None, f"{', '.join(bad)} not revolute"
    moved = [j.name for j in chain[1:] if np.linalg.norm(j.origin[:3, 3]) > AXIS_TOL]
    if moved:
        return None, f"the origins of {', '.join(moved)} are not at the previous joint's (not through one point)"
    axes = _chain_axes(chain)
    if np.max(np.abs(axes @ axes.T - np.eye(len(chain)))) > AXIS_TOL:
        return None, "their axes are not mutually orthogonal"
    return chain, ""


def _chain_axes(chain: list[_Joint]) -> np.ndarray:
    """(k, 3) the chain's axes in its last joint's frame: O1 R(a1, t1) O2 R(a2, t2) ... =
    O1 O2 ... R(a1', t1) R(a2', t2) ..., a_i' = (O_{i+1} ... O_k)^T a_i (the O's rotations)."""
    out = []
    for i, j in enumerate(chain):
        after = np.eye(3)
        for k in chain[i + 1:]:
            after = after @ k.origin[:3, :3]
        out.append(after.T @ j.axis)
    return np.array(out)


def _drop_massless_subtree(reader, links, child_joint, subtree: list[str], result, body_of) -> None:
    """Drop a massless subtree (``_massless_subtree``) with its joints; one note naming them."""
    for link in subtree:
        body_of[link] = -2
        result.dropped.append(link)
    joints = [child_joint[link].name for link in subtree]
    reader.note(links[subtree[0]].line, f"link {subtree[0]!r}",
                f"it and the {len(subtree) - 1} links below it have no mass; dropped with their joints ({_listed(joints)})")


def _mass_properties(group: _Group, links: dict[str, _Link]) -> None:
    """Mass, centre of mass and central inertia of a group, in its reference frame.

    Parallel-axis rule: I = sum_i R_i I_i R_i^T + m_i (|r_i|^2 1 - r_i r_i^T), r_i the
    link's centre of mass relative to the group's.
    """
    mass = sum(links[name].mass for name in group.links)
    heaviest = max(group.links, key=lambda name: (links[name].mass, name == group.reference))
    # a massless reference (a frame above the body) gives its name up to the heaviest link
    group.name = group.reference if links[group.reference].mass > MASSLESS else heaviest
    group.mass = mass
    if mass <= 0:
        return
    centres = {name: pose[:3, :3] @ links[name].com + pose[:3, 3] for name, pose in group.links.items()}
    com = sum(links[name].mass * centres[name] for name in group.links) / mass
    inertia = np.zeros((3, 3))
    for name, pose in group.links.items():
        rot = pose[:3, :3]
        r = centres[name] - com
        m = links[name].mass
        inertia += rot @ links[name].inertia @ rot.T + m * (np.dot(r, r) * np.eye(3) - np.outer(r, r))
    group.com = com
    group.inertia = 0.5 * (inertia + inertia.T)


def _shape_data(kind: str, params: dict, body_pose: np.ndarray, rgba) -> dict:
    shape = {"type": kind, **params, **_pose(body_pose)}
    if rgba is not None:
        shape["color"] = [min(max(float(c), 0.0), 1.0) for c in rgba]
    return shape


def _body(reader: _Reader, group: _Group, links: dict[str, _Link], options: UrdfOptions) -> dict:
    """Scene data of one body: mass, central inertia, shapes from its links' geometry."""
    inertia = group.inertia
    if not _positive_definite(inertia):
        eig, vec = np.linalg.eigh(inertia)
        floor = max(INERTIA_EIGENVALUE_FLOOR * max(eig.max(), 0.0), 1e-9)
        reader.warn(links[group.reference].line, f"link {group.reference!r}",
                    f"inertia eigenvalues [{', '.join(f'{e:.3g}' for e in eig)}] are not positive; raised to at least {floor:.3g}")
        inertia = vec @ np.diag(np.maximum(eig, floor)) @ vec.T
    shapes = []
    # the heaviest link's geometry first: it becomes the body's shape (not a frame marker's)
    for name, pose in sorted(group.links.items(), key=lambda item: -links[item[0]].mass):
        link = links[name]
        body_pose = _translation(-group.com) @ pose
        items = link.visuals if options.geometry == "visual" else link.collisions
        if not items and options.geometry == "visual":
            items = [] if link.visuals else [c for c in link.collisions]
        for kind, params, origin, rgba, _line in items:
            if kind == "mesh" and not options.meshes:
                continue
            shapes.append(_shape_data(kind, params, body_pose @ origin, rgba))
    body: dict[str, Any] = {"name": group.name, "mass": float(group.mass)}
    # the inertia is written in full (3x3): a diagonal would drop the URDF's products
    body["inertia"] = [_vector(row) for row in inertia]
    body["shape"] = shapes[0] if shapes else {"type": "frame"}
    if len(shapes) > 1:
        body["visuals"] = shapes[1:]
    return body


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
            "child_vertex": _vector(-group.com),
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
            "parent_vertex": _vector(joint_frame[:3, 3]), "child_vertex": _vector(-group.com),
            "orientation_offset": _quaternion_from_matrix(rot),
        }
        if chain is not None:
            out.append(_axes_joint(reader, data, chain))
            continue
        if kind not in ("fixed", "floating", "spherical"):
            data["axis"] = _vector(axis)  # (a ball joint has none: its coordinates are the rotation vector's)
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
        if joint.friction:
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
    data["axes"] = [_vector(a) for a in _chain_axes(chain)]
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
    for j in chain:
        if j.friction:
            reader.unmodelled(UNMODELLED_FRICTION, j.name)
        if j.mimic:
            reader.unmodelled(UNMODELLED_MIMIC, f"{j.name} (of {j.mimic})")
    return data


# ------------------------------------------------------------------ contacts


def _contact_points(kind: str, params: dict, pose: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Contact spheres (centre in the body frame, radius) of a sphere or a box's corners (feet)."""
    centre, rot = pose[:3, 3], pose[:3, :3]
    if kind == "sphere":
        return [(centre, params["radius"])]
    if kind == "box":
        half = 0.5 * np.asarray(params["size"])
        corners = [np.array([sx, sy, sz]) * half for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
        return [(centre + rot @ c, 0.0) for c in corners]
    return []


def _collision_shape(reader: _Reader, kind: str, params: dict, pose: np.ndarray, where: str, line) -> tuple[dict, dict] | None:
    """(shape, extra contact fields) of a collision element against the ground, or None (a
    mesh that cannot be read: warned). See the module doc of dojo_cli.model.collisions."""
    if kind in ("sphere", "capsule"):
        return {"type": kind, **params, **_pose(pose)}, {}
    if kind == "cylinder":
        # the rolling rim contacts alone: a link never stands on a cylinder's end by itself
        return {"type": kind, **params, **_pose(pose)}, {"rim_points": 0}
    if kind == "box":
        size = np.asarray(params["size"], float)
        order = np.argsort(size)  # small, middle, long
        if size[order[2]] >= THIN_BOX_RATIO * size[order[1]]:
            # a thin link: the capsule around it (its long axis, the cross-section's half
            # diagonal), whose two end spheres hold the box's 8 corners
            long = int(order[2])
            axes = np.eye(3)[:, [(long + 1) % 3, (long + 2) % 3, long]]  # z along the long side
            turned = pose.copy()
            turned[:3, :3] = pose[:3, :3] @ axes
            radius = 0.5 * float(np.hypot(size[order[0]], size[order[1]]))
            return {"type": "capsule", "radius": radius, "height": float(size[long]), **_pose(turned)}, {}
        return {"type": "box", "size": _vector(size), **_pose(pose)}, {}
    if kind == "mesh":
        made = _mesh_hull(reader, params, where, line)
        if made is None:
            return None
        vertices, error = made
        return {"type": "hull", "vertices": [_vector(v) for v in vertices], "radius": error, **_pose(pose)}, {}
    return None


def _self_collisions(reader: _Reader, contacts: list[dict], result: UrdfImport) -> list[dict]:
    """Each pair of ground contacts' shapes on two bodies not joined parent-child (the
    ``collisions: all`` filter), as a contact ``<a>-<b>`` on the first against the second,
    where the collision table pairs them (sphere, capsule, box, a cylinder against a sphere or a capsule; a box turned by quarter
    turns only: others are left out with a warning), but the pairs that overlap or touch
    at the zero configuration (any of their table contacts at distance <= 0): a URDF's
    neighbouring links often overlap where they meet (a hip's box inside the thigh's
    cylinder), and such a pair would push the robot apart from its first step. MoveIt's
    setup assistant disables the same pairs ("in collision at the default pose", SRDF
    ``disable_collisions reason="Default"``); MuJoCo leaves out parent-child pairs only
    (it has ``<exclude>`` for the rest). Both filters are counted in a warning."""
    from dojo_cli import _core
    from dojo_cli.model.collisions import BODY_SHAPES, UnsupportedPair, body_pair_contacts
    from dojo_cli.model.compiled import contact_shape_parameters

    joined = {frozenset((j["parent"], j["child"])) for j in result.scene_joints}
    poses = _initial_poses(result)
    quaternions = {body: np.asarray(_quaternion_from_matrix(rot)) for body, (rot, _) in poses.items()}
    shapes = [c for c in contacts if c["shape"]["type"] in BODY_SHAPES]
    out, skipped, overlapping = [], [], []
    for a, b in itertools.combinations(shapes, 2):
        if a["body"] == b["body"] or frozenset((a["body"], b["body"])) in joined:
            continue
        try:
            made = body_pair_contacts("", 0, _shape(a["shape"]), 1, _shape(b["shape"]))
        except UnsupportedPair:
            skipped.append(f"{a['name']}-{b['name']}")
            continue
        if a["body"] in poses and b["body"] in poses:
            bodies = (a["body"], b["body"])  # body_pair_contacts' indices 0 and 1
            gaps = []
            for c in made:
                own, other = bodies[c.body], bodies[c.other]
                gaps.append(_core.contact_geometry(
                    c.kind, poses[own][1], quaternions[own], np.asarray(c.offset, float), float(c.radius),
                    poses[other][1], quaternions[other], contact_shape_parameters(c), False, list(c.shape_a))["distance"])
            if min(gaps) <= 0.0:
                overlapping.append(f"{a['name']}-{b['name']}")
                continue
        given = {k: v for k, v in b["shape"].items() if k in ("radius", "height", "size")}
        against = {"body": b["body"], "shape": b["shape"]["type"], "offset": b["shape"]["position_offset"],
                   "orientation_offset": b["shape"]["orientation_offset"], **given}
        base = {k: a[k] for k in ("model", "friction", "margin")}
        out.append({"name": f"{a['name']}-{b['name']}", "body": a["body"], **base, "shape": a["shape"], "against": against})
    if skipped:
        reader.warn(None, "self-collision", f"{len(skipped)} pairs with a box turned in its body other than by quarter turns "
                    f"are left out (the collision table's boxes are axis-aligned): {_listed(skipped, 4)}")
    if overlapping:
        reader.warn(None, "self-collision", f"{len(overlapping)} pairs that overlap or touch at the zero configuration "
                    f"are left out: {_listed(overlapping, 4)}")
    return out


def _shape(given: dict) -> Shape:
    """A scene shape mapping as the compile's Shape."""
    params = {k: v for k, v in given.items() if k not in ("type", "position_offset", "orientation_offset")}
    return Shape(given["type"], params, tuple(given["position_offset"]), tuple(given["orientation_offset"]))


def _mesh_hull(reader: _Reader, params: dict, where: str, line) -> tuple[np.ndarray, float] | None:
    """The reduced convex hull of a mesh file, scaled (mesh frame), and its error, or None
    (warned: no contacts). Cached by the file's content (dojo_cli.scene.hull_cache): a
    robot imported again reads no mesh and imports no trimesh."""
    from dojo_cli.scene.hull_cache import file_digest, load_hull, store_hull

    try:
        digest = file_digest(params["file"])
    except OSError:
        digest = None  # missing or unreadable: _mesh_points says so
    if digest is not None:
        cached = load_hull(digest, params["scale"], HULL_VERTICES)
        if cached is not None:
            return cached
    points = _mesh_points(reader, params, where, line)
    if points is None:
        return None
    try:
        vertices, error = reduced_hull(points, HULL_VERTICES)
    except ValueError as exc:
        reader.warn(line, where, f"{Path(params['file']).name}: {exc}; no contacts")
        return None
    if digest is not None:
        store_hull(digest, params["scale"], HULL_VERTICES, vertices, error)
    return vertices, error


def _mesh_points(reader: _Reader, params: dict, where: str, line) -> np.ndarray | None:
    """The vertices of a mesh file, scaled (mesh frame), or None (warned: no contacts)."""
    import trimesh  # here: ~1 s to import, needed only for a mesh whose hull is not cached

    try:
        mesh = trimesh.load(params["file"], force="mesh")
        points = np.asarray(mesh.vertices, float) * np.broadcast_to(np.asarray(params["scale"], float), (3,))
    except Exception as exc:  # noqa: BLE001 - trimesh raises what its loaders raise (missing file, bad format)
        reader.warn(line, where, f"{Path(params['file']).name}: cannot read the mesh ({type(exc).__name__}: {exc}); no contacts")
        return None
    if len(points) == 0 or not np.all(np.isfinite(points)):
        reader.warn(line, where, f"{Path(params['file']).name}: no finite vertices; no contacts")
        return None
    return points


def _contacts(reader, links, groups, result: UrdfImport, options: UrdfOptions) -> list[dict]:
    if options.contacts == "none":
        return []
    contacts: list[dict] = []
    base = {"model": options.contact_model, "friction": float(options.friction), "against": "ground"}
    if options.contacts == "collision":
        base["margin"] = CONTACT_MARGIN

    def add(body: str, label: str, centre, radius) -> None:
        contacts.append({"name": label, "body": body, **base, "radius": float(radius), "offset": _vector(centre)})

    if options.contacts == "collision":
        for group in groups:
            for name, pose in group.links.items():
                body_pose = _translation(-group.com) @ pose
                items = links[name].collisions
                for k, (kind, params, origin, _rgba, line) in enumerate(items):
                    made = _collision_shape(reader, kind, params, body_pose @ origin, f"link {name!r} collision", line)
                    if made is None:
                        continue
                    shape, extra = made
                    label = name if len(items) == 1 else f"{name}_{k}"
                    contacts.append({"name": label, "body": group.name, **base, "shape": shape, **extra})
        if options.self_collision:
            contacts += _self_collisions(reader, contacts, result)
        return contacts

    # feet: the ends of the legs (dojo_cli.scene.legs) in the import's pose; for a robot
    # without legs, the leaves of the body tree lowest in it
    world = _initial_poses(result)
    candidates: dict[int, list[tuple[np.ndarray, float]]] = {}
    parents = _body_parents(result)
    leaves = [i for i, g in enumerate(groups) if i != 0 and g.name not in parents]
    if not leaves:
        reader.warn(None, "robot", "--contacts feet: the robot has no legs (no body below its root); no contacts")
        return []
    for i in leaves:
        group = groups[i]
        found = []  # (link, primitive kind, centre, radius)
        for name, pose in group.links.items():
            body_pose = _translation(-group.com) @ pose
            for kind, params, origin, _rgba, _line in links[name].collisions:
                if kind in ("sphere", "box"):
                    found += [(name, kind, c, r) for c, r in _contact_points(kind, params, body_pose @ origin)]
        if not found and not any(links[name].collisions for name in group.links) and group.mass > 0.0:
            # no collision element at all (human.urdf): the sole of the box with the foot's
            # mass and inertia (_inertia_box); a point would leave two feet a line of support
            points = [(list(group.links)[0], c, 0.0) for c in _inertia_box_sole(group, world[group.name][0])]
        elif any(kind == "sphere" for _, kind, _, _ in found):
            points = [(link, c, r) for link, kind, c, r in found if kind == "sphere"]
        elif found:
            # box feet (humanoids): the four corners lowest in the import's pose
            rot, pos = world[group.name]
            heights = [float((pos + rot @ c)[2]) for _, _, c, _ in found]
            points = [(link, c, r) for (link, _, c, r), z in zip(found, heights) if z <= min(heights) + 1e-9]
        else:
            # the end of the leg: the origin of the deepest link of the group
            deepest = list(group.links)[-1]
            points = [(deepest, (_translation(-group.com) @ group.links[deepest])[:3, 3], 0.0)]
        candidates[i] = points
    legs = legs_of(result.scene_joints, world)
    if legs.legged:
        feet = [i for i in leaves if groups[i].name in legs.feet]
    else:
        lows = {}
        for i, points in candidates.items():
            rot, pos = world[groups[i].name]
            lows[i] = min(float((pos + rot @ c)[2]) - r for _, c, r in points)
        lowest = min(lows.values())
        feet = [i for i in leaves if lows[i] <= lowest + FOOT_HEIGHT_TOL]
    for i in feet:
        points = candidates[i]
        for k, (link, centre, radius) in enumerate(points):
            # named after the URDF link the sphere belongs to (the foot, merged or not)
            same = sum(1 for other, _, _ in points if other == link)
            add(groups[i].name, link if same == 1 else f"{link}_{k}", centre, radius)
    return contacts


def _inertia_box_sole(group, rot: np.ndarray) -> list[np.ndarray]:
    """A flat sole for a foot with no collision element: 4 points (body frame) under the
    face that looks most downward (world rotation ``rot`` (3, 3) of the body) of the uniform box with the body's mass and inertia (its
    principal axes and moments: MuJoCo's "inertia box"): sides a_k = sqrt(6 (I_j + I_l -
    I_k) / m), each clipped at zero (a body's moments obey the triangle inequality)."""
    inertia = np.asarray(group.inertia, float)
    moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
    half = 0.5 * np.sqrt(np.maximum(6.0 * (float(np.sum(moments)) - 2.0 * moments) / group.mass, 0.0))
    up = (rot @ axes)[2]  # world z of each principal axis
    k = int(np.argmax(np.abs(up)))
    sole = np.zeros(3)
    sole[k] = -math.copysign(half[k], up[k])  # the face whose outward normal points down
    i, j = [m for m in range(3) if m != k]
    corners = []
    for si in (-1.0, 1.0):
        for sj in (-1.0, 1.0):
            c = sole.copy()
            c[i], c[j] = si * half[i], sj * half[j]
            corners.append(axes @ c)
    # a flat sole: the face's corners brought down to its lowest one's height (the face is
    # tilted as the inertia's principal axes are, 12 deg on human.urdf's feet)
    heights = [float((rot @ c)[2]) for c in corners]
    return [c - rot.T @ np.array([0.0, 0.0, z - min(heights)]) for c, z in zip(corners, heights)]


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


def note_text(file: str, line: int | None, element: str, message: str) -> str:
    """One importer note as UrdfImport.warnings holds it."""
    return f"note: {Problem(file, line, element, message)}"


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
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(value) * k + (1.0 - math.cos(value)) * (k @ k), np.zeros(3)


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
            joint["parent_vertex"] = _vector(np.asarray(joint["parent_vertex"]) + [0.0, 0.0, -lowest])
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
            made = half_space_contacts("", 0, _shape(c["shape"]), GROUND, rim_points=c.get("rim_points", RIM_POINTS))
            lowest = min(lowest, lowest_height(made, rot, pos))
        else:
            lowest = min(lowest, float((pos + rot @ np.asarray(c["offset"]))[2]) - c["radius"])
    return lowest
