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
from dojo_cli.scene.mjcf.mass import MASSLESS, geom_mass_properties, has_mass_and_inertia
from dojo_cli.scene.mjcf.options import MjcfImport, MjcfOptions
from dojo_cli.scene.mjcf.reader import _Reader
from dojo_cli.scene.mjcf.rotations import _quaternion_from_matrix


# The body holding the world's own non-plane geoms that moving geoms collide with (MuJoCo's
# name of body 0, which no model's body can have).
WORLD_BODY = "world"


def _welded_mass(reader: _Reader, children: list[list[int]], i: int) -> bool:
    """Whether body ``i`` or a body welded to it (reached through bodies without joints) has
    mass and inertia: MuJoCo's condition for a body that moves on joints to be compiled."""
    body = reader.bodies[i]
    if has_mass_and_inertia(body.mass, body.inertia):
        return True
    return any(_welded_mass(reader, children, c) for c in children[i] if not reader.bodies[c].joints)


def _mass_problem(body: _Body) -> str:
    if body.mass < MASSLESS:
        return "has no mass"
    shown = ", ".join(f"{e:.3g}" for e in np.linalg.eigvalsh(0.5 * (body.inertia + body.inertia.T)))
    return f"has mass {body.mass:g} but principal inertias [{shown}] (a point mass or a rod)"


def _place(reader: _Reader, options: MjcfOptions, result: MjcfImport) -> None:
    """World frames at qpos0, and which scene body carries each MJCF body (merges).

    A weld is rigid, so a body without joints merged into the body it is welded to is exact
    physics (its mass at its centre, its inertia by the parallel-axis rule). Merged: a welded
    body without mass and inertia of its own (massless, a point mass such as Fetch's
    estop_link and laser_link, diaginertia 0), every welded body with ``merge_fixed``, and
    the whole welded subtree of a moving body that has no mass and inertia of its own but a
    body welded to it has (Meta-World's objects: a free body whose welded child holds the
    geoms and the mass), which MuJoCo compiles and simulates as that subtree's composite
    rigid body. A moving body with neither is refused: MuJoCo refuses it too.
    """
    children: list[list[int]] = [[] for _ in reader.bodies]
    for i, body in enumerate(reader.bodies):
        if body.parent >= 0:
            children[body.parent].append(i)
    absorbing: set[int] = set()  # moving bodies taking in their welded subtrees
    point_masses: list[str] = []
    for i, body in enumerate(reader.bodies):
        if body.parent < 0:
            body.world_pos, body.world_rot = body.pos.copy(), body.rot.copy()
        else:
            p = reader.bodies[body.parent]
            body.world_pos = p.world_pos + p.world_rot @ body.pos
            body.world_rot = p.world_rot @ body.rot
        welded = not body.joints
        valid = has_mass_and_inertia(body.mass, body.inertia)
        if welded and body.parent >= 0 and (not valid or options.merge_fixed or reader.bodies[body.parent].host in absorbing):
            parent = reader.bodies[body.parent]
            body.host = parent.host
            body.host_pos = parent.host_pos + parent.host_rot @ body.pos
            body.host_rot = parent.host_rot @ body.rot
            result.merged[body.name] = reader.bodies[body.host].name if body.host >= 0 else "world"
            if not valid and body.mass >= MASSLESS:
                point_masses.append(body.name)
        elif welded and not valid:
            # a static body without mass and inertia: its geoms are the world's
            body.host = -1
            body.host_pos, body.host_rot = body.world_pos.copy(), body.world_rot.copy()
            result.merged[body.name] = "world"
        elif not valid and _welded_mass(reader, children, i):
            body.host = i
            absorbing.add(i)
        elif not valid:
            reader.problem(body.file, body.line, f"body {body.name!r}",
                           f"{_mass_problem(body)}, moves on joints, and no body welded to it (without joints) has mass and "
                           f"inertia of at least mjMINVAL = {MASSLESS:g}; MuJoCo refuses it too (\"mass and inertia of moving "
                           "bodies must be larger than mjMINVAL\")")
            body.host = i
        else:
            body.host = i
    for i in sorted(absorbing):
        welded = [b.name for b in reader.bodies if b.host == i and b is not reader.bodies[i]]
        result.notes.append(f"body {reader.bodies[i].name!r} {_mass_problem(reader.bodies[i])} and moves on joints: the bodies "
                            f"welded to it ({listed(welded, 4)}) are merged into it, one rigid body (exact, as MuJoCo moves them)")
    if point_masses:
        result.notes.append(f"welded bodies with mass but no inertia (point masses: {listed(point_masses, 4)}) are merged into "
                            "the bodies they are welded to: their mass at their centre, its parallel-axis inertia (exact)")
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
