"""Scene bodies of the MJCF bodies: world frames at qpos0, massless and (with
``merge_fixed``) jointless bodies merged into their parents, the world's own colliding geoms
as one fixed body (``WORLD_BODY``), and each body's scene data (mass, inertia, drawn shapes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dojo_cli.scene.importing.mass import combine
from dojo_cli.scene.importing.messages import listed
from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.mjcf.contacts import _collides, _weld
from dojo_cli.scene.mjcf.elements import _Body, _Geom
from dojo_cli.scene.mjcf.mass import MASSLESS, geom_mass_properties
from dojo_cli.scene.mjcf.options import MjcfImport, MjcfOptions
from dojo_cli.scene.mjcf.reader import _Reader
from dojo_cli.scene.mjcf.rotations import _quaternion_from_matrix


# The body holding the world's own non-plane geoms that moving geoms collide with (MuJoCo's
# name of body 0, which no model's body can have).
WORLD_BODY = "world"


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
        host.mass, host.com, host.inertia = combine([it for it in items if it[0] > 0])
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
    mass, com, inertia = combine(items)
    scale = (total if total > 0 else 1.0) / mass
    first = statics[0]
    body = _Body(WORLD_BODY, first.line, first.file, -1, np.zeros(3), np.eye(3), geoms=statics)
    body.mass, body.com, body.inertia = mass * scale, com, inertia * scale
    body.host = len(reader.bodies)
    reader.bodies.append(body)
    reader.world_geoms = [g for g in reader.world_geoms if all(g is not h for h in statics)]
    result.notes.append(f"the world's geoms {listed([g.name or g.type for g in statics], 4)} (not planes) collide with moving geoms: they are the "
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


def _bodies(reader: _Reader, options: MjcfOptions) -> list[dict]:
    out = []
    for i, body in enumerate(reader.bodies):
        if body.host != i:
            continue
        shapes = [s for s in (_draw_shape(g, body.com, options) for g in body.geoms) if s is not None]
        data: dict[str, Any] = {
            "name": body.name,
            "mass": float(body.mass),
            "inertia": [plain_vector(row) for row in 0.5 * (body.inertia + body.inertia.T)],
            "shape": shapes[0] if shapes else {"type": "frame"},
        }
        if len(shapes) > 1:
            data["visuals"] = shapes[1:]
        out.append(data)
    return out


def _draw_shape(geom: _Geom, com: np.ndarray, options: MjcfOptions) -> dict | None:
    s = geom.size
    pose = {"position_offset": plain_vector(geom.pos - com), "orientation_offset": _quaternion_from_matrix(geom.rot)}
    color = {"color": [float(c) for c in geom.rgba]} if geom.rgba else {}
    kind = geom.type
    if kind == "sphere":
        shape = {"type": "sphere", "radius": float(s[0])}
    elif kind in ("capsule", "cylinder"):
        shape = {"type": kind, "radius": float(s[0]), "height": float(2 * s[1])}
    elif kind == "box":
        shape = {"type": "box", "size": plain_vector(2 * s)}
    elif kind == "ellipsoid":
        # drawn as the box around it (the scene format has no ellipsoid; contacts use its hull)
        shape = {"type": "box", "size": plain_vector(2 * s)}
    elif kind == "mesh" and options.meshes:
        # drawn as its hull's bounding box: the mesh file's frame is not the geom's (MuJoCo re-centres it)
        lo, hi = geom.points.min(axis=0), geom.points.max(axis=0)
        pose["position_offset"] = plain_vector(geom.pos - com + geom.rot @ (0.5 * (lo + hi)))
        shape = {"type": "box", "size": plain_vector(np.maximum(hi - lo, 1e-6))}
    else:
        return None
    return {**shape, **pose, **color}
