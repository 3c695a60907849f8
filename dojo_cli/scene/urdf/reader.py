"""One URDF file read into links and joints (``_Reader``), every problem at ``file:line`` with
its element (``joint 'knee'``).

lxml reads the file strictly (``dojo_cli.scene.importing.xml_file``; two slips of the XML
read leniently, with a warning); the numbers of origins, inertials, limits, dynamics,
geometry (with Dojo's ``<capsule radius length>``) and materials are read here. No mesh is
opened (physics needs none; a mesh file's path is resolved, ``package://`` names through
``dojo_cli.scene.robots``). What is read beyond the URDF specification as Bullet reads it,
and what is read but not modelled, is reported once per kind (``lenient``, ``unmodelled``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.importing.messages import listed, shortened
from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.importing.xml_file import read_xml
from dojo_cli.scene.robots import UnresolvedPackage, package_search_path, resolve_resource
from dojo_cli.scene.schema import MAX_MAGNITUDE, MAX_PATH_LENGTH
from dojo_cli.scene.urdf.inertia import MASSLESS, _inertia_from_shapes, _positive_definite
from dojo_cli.scene.urdf.options import BULLET_JOINT_TYPES, URDF_JOINT_TYPES, UrdfOptions
from dojo_cli.scene.urdf.transforms import _transform_from_xyz_rpy
from dojo_cli.scene.urdf.values import _expand_environment, _is_number, _lenient_float, _number, _owner, _planar_damping, _printable_name, _xacro_hint


_MESH_SUFFIXES = (".obj", ".stl", ".dae")
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
            shown = listed([f"{where} (line {line})" if line else where for line, where in places], UNMODELLED_LISTED)
            self.warn(places[0][0], "robot", f"{what} in {len(places)} place{'s' if len(places) > 1 else ''}, {reading}: {shown}")
        self._lenient.clear()
        if self._empty_visuals:
            self.note(None, "robot", f"{len(self._empty_visuals)} visual{'s' if len(self._empty_visuals) > 1 else ''} of size 0 "
                      f"skipped (nothing to draw): {listed(self._empty_visuals, UNMODELLED_LISTED)}")
            self._empty_visuals.clear()
        for kind, joints in self._unmodelled.items():
            what, consequence = kind.split("|")
            self.warn(None, "robot", f"{what} not modelled on {len(joints)} joint{'s' if len(joints) > 1 else ''} "
                      f"({consequence}): {listed(joints, UNMODELLED_LISTED)}")
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
        root, repaired = read_xml(self.path, self.file, "the URDF", lenient=True)
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
            raise SceneError(Problem(self.file, None, "<!DOCTYPE>", f"XML entities are not supported (declared: {shortened(names)})"))
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
                self.problem(element.sourceline, f"link {shortened(str(name))}", "the name must be printable text (no control characters)")
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
                self.problem(element.sourceline, f"joint {shortened(str(name))}", "the name must be printable text (no control characters)")
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
                self.lenient(LENIENT_NUMBER_END, element.sourceline, f"{where} <{element.tag} {attribute}> {shortened(text)}")
        except ValueError:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be numbers, got {shortened(text)}{_xacro_hint(text)}")
            return None
        if "," in text:
            self.lenient(LENIENT_COMMAS, element.sourceline, f"{where} <{element.tag} {attribute}>")
        if count == 1 and values.size != 1:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be a number, got {shortened(text)}")
            return None
        if count == 3 and values.size > 3:
            self.lenient(LENIENT_EXTRA_NUMBERS, element.sourceline, f"{where} <{element.tag} {attribute}> {shortened(text)}")
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
                self.lenient(LENIENT_NUMBER_END, element.sourceline, f"{where} <{element.tag} {attribute}> {shortened(text)}")
            return value
        except ValueError:
            self.problem(element.sourceline, where, f"<{element.tag} {attribute}> must be a number, got {shortened(text)}{_xacro_hint(text)}")
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
            kind, params = "box", {"size": plain_vector(size)}
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
            shown = "none" if name is None else shortened(name)
            self.problem(mesh_line, f"{where} mesh", f"filename must be a printable path of at most {MAX_PATH_LENGTH} characters, got {shown}")
            return None
        try:
            path = resolve_resource(name, self.path.parent, self.search_path)
            exists = path.is_file()
        except UnresolvedPackage as exc:
            self.problem(mesh_line, f"{where} mesh", f"cannot resolve {shortened(name)}: {exc.hint()}")
            return None
        except OSError as exc:
            # a name the file system refuses (a part longer than NAME_MAX, ...)
            self.problem(mesh_line, f"{where} mesh", f"filename {shortened(name)}: {exc.strerror or exc}")
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
                self.lenient(LENIENT_EXTRA_NUMBERS, mesh_line, f"{where} <mesh scale> {shortened(mesh_element.get('scale'))}")
                scale = scale[:3]
            if scale.size not in (0, 1, 3):
                self.problem(mesh_line, f"{where} mesh", f"<mesh scale> must be 1 or 3 numbers, got {scale.size}")
                return None
            scale = None if scale.size == 0 else scale
            if scale is not None and not self.finite(mesh_line, f"{where} mesh", "scale", scale):
                return None
        scale = 1.0 if scale is None else plain_vector(np.broadcast_to(scale, (3,)))
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
                self.problem(tag_line, where, f"{role} link {ends[role]!r} is not defined (links: {listed(list(links))})")
                ok = False
        if not ok:
            return None
        axis_element = element.find("axis")
        axis = np.array([1.0, 0.0, 0.0]) if axis_element is None else self.numbers(axis_element, "xyz", where, "1 0 0")
        if axis is None:
            return None
        if axis.size > 3:
            # Bullet reads a vector's first 3 numbers
            self.lenient(LENIENT_EXTRA_NUMBERS, axis_element.sourceline, f"{where} <axis xyz> {shortened(axis_element.get('xyz'))}")
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
                                     f"{where} <limit {key}> {shortened(limit_element.get(key))}")
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


_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def note_text(file: str, line: int | None, element: str, message: str) -> str:
    """One importer note as UrdfImport.warnings holds it."""
    return f"note: {Problem(file, line, element, message)}"
