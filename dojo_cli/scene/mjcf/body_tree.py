"""The ``<worldbody>``'s tree read into bodies (``_Body``), each with its joints (``_Joint``),
geoms (``_Geom``, their meshes' vertices read) and ``<inertial>``, every attribute over its
default class (``childclass`` inherited down the tree).

``_BodyTreeReader`` is a part of the MJCF reader (``dojo_cli.scene.mjcf.reader._Reader``):
it fills the reader's ``bodies`` and ``world_geoms``.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.scene.mjcf.elements import _Body, _Geom, _Joint
from dojo_cli.scene.mjcf.options import DEFAULT_DENSITY, DEFAULT_FRICTION

_GEOM_TYPES = ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "hfield", "sdf")
_JOINT_TYPES = ("free", "ball", "slide", "hinge")


class _BodyTreeReader:
    """Bodies, joints, geoms and inertials of the body tree."""

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
        margin = self.real(a, "margin", 0.0, el, file, element)
        geom = _Geom(name, el.sourceline, file, kind, size, pos, rot, density, mass, float(friction[0]) if len(friction) else 1.0,
                     contype, conaffinity, condim, rgba, margin)
        geom.group = int(self.real(a, "group", 0, el, file, element))
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
            geom.faces, geom.mesh_inertia = self.mesh_faces.get(geom.mesh), self.mesh_inertia.get(geom.mesh, "legacy")
        return geom
