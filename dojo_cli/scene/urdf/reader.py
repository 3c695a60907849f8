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

from pathlib import Path

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.importing.messages import listed, shortened
from dojo_cli.scene.importing.xml_file import read_xml
from dojo_cli.scene.robots import package_search_path
from dojo_cli.scene.schema import MAX_MAGNITUDE
from dojo_cli.scene.urdf.elements import _Joint, _Link
from dojo_cli.scene.urdf.joint_reader import _JointReader
from dojo_cli.scene.urdf.link_reader import _LinkReader
from dojo_cli.scene.urdf.options import UrdfOptions
from dojo_cli.scene.urdf.transforms import _transform_from_xyz_rpy
from dojo_cli.scene.urdf.values import (
    LENIENT_COMMAS, LENIENT_EXTRA_NUMBERS, LENIENT_NUMBER_END, LENIENT_XACRO_ENV, _expand_environment,
    _lenient_float, _owner, _printable_name, _xacro_hint,
)


# Most places or joints one warning of a kind lists (lenient readings, unmodelled elements).
UNMODELLED_LISTED = 40


class _Reader(_LinkReader, _JointReader):
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
            name = self._new_name(element, "link", links)
            if name is None:
                continue
            link = self._link(element, name, materials)
            if link is not None:
                links[name] = link
            else:
                refused.add(name)  # a problem says why; its joints are not "not defined"
        joints: list[_Joint] = []
        names: set[str] = set()
        for element in joint_elements:
            name = self._new_name(element, "joint", names)
            if name is None:
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

    def _new_name(self, element, kind: str, seen) -> str | None:
        """A <link> or <joint>'s name, or None with a problem saying why: not printable text,
        or already in ``seen`` (the names of its kind read so far)."""
        name = element.get("name")
        if not _printable_name(name):
            self.problem(element.sourceline, f"{kind} {shortened(str(name))}", "the name must be printable text (no control characters)")
            return None
        if name in seen:
            self.problem(element.sourceline, f"{kind} {name!r}", "defined twice")
            return None
        return name

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


def note_text(file: str, line: int | None, element: str, message: str) -> str:
    """One importer note as UrdfImport.warnings holds it."""
    return f"note: {Problem(file, line, element, message)}"
