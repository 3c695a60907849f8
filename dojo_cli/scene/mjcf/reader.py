"""One MJCF file (and its includes) read into bodies, joints and geoms (``_Reader``), every
problem at ``file:line`` with its element; what cannot be mapped is refused, or with
``drop_unsupported`` left out with one warning per kind.

The reader reads the sections in the order that changes how the rest reads: ``<compiler>``,
``<default>``, ``<option>`` (with ``<flag>``), ``<asset>`` meshes, equality constraints and
actuators (before the tendons they make exert forces), then the ``<worldbody>``, contact
excludes, keyframes and tendons. Its parts: ``defaults`` (includes and default classes),
``values`` (attribute values and frames), ``body_tree`` (the body tree).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.importing.meshes import mesh_triangles
from dojo_cli.scene.mjcf.body_tree import _BodyTreeReader
from dojo_cli.scene.mjcf.defaults import _DefaultsReader
from dojo_cli.scene.mjcf.elements import _Body, _Geom
from dojo_cli.scene.mjcf.options import DEFAULT_GRAVITY, DEFAULT_TIMESTEP, MjcfOptions
from dojo_cli.scene.mjcf.values import _ValueReader


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
_MESH_INERTIA_MODES = ("legacy", "convex", "exact", "shell")
"""A mesh's ``inertia`` values (MJCF reference, ``<mesh>``); legacy is MuJoCo's default."""
_IGNORED_SECTIONS = {"visual", "statistic", "custom", "size", "extension", "contact", "keyframe", "asset", "default",
                     "compiler", "option", "worldbody", "actuator", "include"}


class _Reader(_BodyTreeReader, _DefaultsReader, _ValueReader):
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
        # <compiler inertiagrouprange>: only geoms of these groups give a body mass (MuJoCo's
        # default: all of its 6 groups, mjNGROUP)
        self.inertiagrouprange = (0, 5)
        self.meshdir = path.parent
        self.defaults: dict[str, dict[str, dict[str, str]]] = {}
        self.default_parent: dict[str, str | None] = {}
        self.meshes: dict[str, tuple[Path, np.ndarray, int | None, str]] = {}
        self.mesh_faces: dict[str, np.ndarray] = {}  # a mesh's triangles, where it has them
        self.mesh_inertia: dict[str, str] = {}  # a mesh's inertia= (MuJoCo's default: legacy)
        self.bodies: list[_Body] = []
        self.world_geoms: list[_Geom] = []
        self.excludes: list[tuple[str, str]] = []
        self.actuators: list[tuple[Any, str, str]] = []
        self.keys: list[tuple[Any, str]] = []
        self.links: list[dict] = []  # split_joints' link bodies (scene data)
        self.inert_tendons: list[str] = []  # tendons that exert no force (left out, a note)
        self.constrained_tendons: set[str] = set()  # tendons an <equality><tendon> holds
        self.notes: list[str] = []  # what the import did that the user should know, one line each
        self.worldbody: tuple[str, int | None] | None = None  # the first <worldbody>'s file and line
        self.disabled: set[str] = set()  # the parts of the physics <option><flag> turns off (_FLAGS_READ)
        self.contact_lines: dict[str, tuple[str, int | None]] = {}  # contact name -> its geom's file, line
        self.contact_geoms: dict[str, tuple[str, str]] = {}  # contact name -> (its geom, the other geom)
        # contact name -> (its geoms' margin (m), where it moved the surface: plane, own, against)
        self.contact_margins: dict[str, tuple[float, str]] = {}
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
        if "inertiagrouprange" in a:
            lo, hi = self.vec(a, "inertiagrouprange", 2, [0, 5], el, file, element)
            self.inertiagrouprange = (int(lo), int(hi))
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

    def read_mesh(self, el, file: str) -> None:
        # an asset's class= chooses its default class, as a geom's does (Menagerie's Robotiq
        # 2F-85 gives every mesh scale 0.001 in class '2f85': read at scale 1, its mount
        # weighed 1.5e8 kg)
        a = dict(self.defaults.get(self.default_class(el, None, file), {}).get("mesh", {}))
        a.update(el.attrib)
        name = a.get("name") or (Path(a.get("file", "")).stem if a.get("file") else None)
        if not name or "file" not in a:
            if "vertex" in a and name:
                verts = self.vec(a, "vertex", 0, [0, 0, 0], el, file, f"mesh {name!r}").reshape(-1, 3)
                self.meshes[name] = (Path(), verts, el.sourceline, file)
                if "face" in a:
                    faces = self.vec(a, "face", 0, [0, 0, 0], el, file, f"mesh {name!r}").astype(np.int64)
                    if len(faces) % 3 or faces.min(initial=0) < 0 or faces.max(initial=0) >= len(verts):
                        self.problem(file, el.sourceline, f"mesh {name!r}", "face= needs vertex indices in threes")
                    else:
                        self.mesh_faces[name] = faces.reshape(-1, 3)
                self.read_mesh_inertia(a, el, file, name)
                return
            self.problem(file, el.sourceline, "<mesh>", "needs a file (or vertex) and a name")
            return
        scale = self.vec(a, "scale", 3, [1, 1, 1], el, file, f"mesh {name!r}")
        self.meshes[name] = (self.meshdir / a["file"], scale, el.sourceline, file)
        self.read_mesh_inertia(a, el, file, name)

    def read_mesh_inertia(self, a: dict, el, file: str, name: str) -> None:
        """A mesh's ``inertia``: how MuJoCo derives a mass from it (legacy, its default;
        convex; exact; shell), read by mass._mesh_properties."""
        mode = a.get("inertia", "legacy")
        if mode not in _MESH_INERTIA_MODES:
            self.problem(file, el.sourceline, f"mesh {name!r}", f"inertia={mode!r}: one of {', '.join(_MESH_INERTIA_MODES)}")
        self.mesh_inertia[name] = mode

    def mesh_points(self, name: str, file: str, line, element: str) -> np.ndarray | None:
        if name not in self.meshes:
            self.problem(file, line, element, f"unknown mesh {name!r} (meshes: {', '.join(self.meshes) or 'none'})")
            return None
        path, scale, _mline, _mfile = self.meshes[name]
        if path == Path():
            return scale  # vertex list given inline
        try:  # trimesh (mesh_triangles imports it): only models with meshes pay for it
            points, self.mesh_faces[name] = mesh_triangles(path, scale)
        except Exception as exc:  # noqa: BLE001 - trimesh raises what its loaders raise
            self.problem(file, line, element, f"cannot read mesh {name!r} ({path}): {type(exc).__name__}: {exc}")
            return None
        if len(points) < 4 or not np.all(np.isfinite(points)):
            self.problem(file, line, element, f"mesh {name!r} has fewer than 4 finite vertices")
            return None
        return points


def reader_problems_stop(reader: _Reader) -> None:
    if reader.problems:
        raise SceneError(reader.problems)
