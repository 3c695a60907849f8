"""A URDF ``<link>`` read: its ``<inertial>`` (rotated into the link frame; computed from the
collision shapes where the file's is not positive definite, or always with
``inertia_from_geometry``), its visual and collision geometry (box, sphere, cylinder,
Dojo's ``<capsule>``, meshes by path, ``package://`` names resolved, no mesh opened) and the
robot's named materials.

``_LinkReader`` is a part of the URDF reader (``dojo_cli.scene.urdf.reader._Reader``): it
reads numbers and origins through the reader's ``numbers``, ``number``, ``origin`` and
``finite``, and reports through its ``problem``, ``warn``, ``note`` and ``lenient``.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.scene.importing.messages import shortened
from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.robots import UnresolvedPackage, resolve_resource
from dojo_cli.scene.schema import MAX_PATH_LENGTH
from dojo_cli.scene.urdf.elements import _Link
from dojo_cli.scene.urdf.inertia import MASSLESS, _inertia_from_shapes, _positive_definite
from dojo_cli.scene.urdf.values import LENIENT_EXTRA_NUMBERS

_MESH_SUFFIXES = (".obj", ".stl", ".dae")
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


class _LinkReader:
    """Links, their geometry and the robot's materials."""

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
