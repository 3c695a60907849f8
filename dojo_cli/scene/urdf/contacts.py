"""Contacts of an imported robot against the ground (and itself): ``--contacts feet`` (spheres
at the ends of the legs, ``dojo_cli.scene.legs``), ``--contacts collision`` (every collision
element as its shape; a mesh as its reduced convex hull, cached by the file's content,
``dojo_cli.scene.hull_cache``), ``--self-collision`` (pairs of shapes on bodies not joined
parent-child that do not touch at the start).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np

from dojo_cli.model.collisions import reduced_hull
from dojo_cli.scene.importing.messages import listed
from dojo_cli.scene.importing.meshes import mesh_vertices
from dojo_cli.scene.importing.scene_data import contact_distance, plain_vector, shape_of
from dojo_cli.scene.legs import legs_of
from dojo_cli.scene.urdf.initial_pose import _body_parents, _initial_poses
from dojo_cli.scene.urdf.options import UrdfImport, UrdfOptions
from dojo_cli.scene.urdf.reader import _Reader
from dojo_cli.scene.urdf.transforms import _pose, _quaternion_from_matrix, _translation


# Feet: leaf bodies whose lowest candidate contact (zero configuration, world z)
# is within this of the lowest leaf's (m) are feet; hands of a humanoid hang higher.
FOOT_HEIGHT_TOL = 0.05
# --contacts collision: a box whose longest side is at least this many times its middle
# one is a thin link, made the capsule around it (2 contacts, not 8); it then sits at most
# (half diagonal - half smallest side) of its cross-section too high, never too low.
THIN_BOX_RATIO = 4.0
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
        return {"type": "box", "size": plain_vector(size), **_pose(pose)}, {}
    if kind == "mesh":
        made = _mesh_hull(reader, params, where, line)
        if made is None:
            return None
        vertices, error = made
        return {"type": "hull", "vertices": [plain_vector(v) for v in vertices], "radius": error, **_pose(pose)}, {}
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
    from dojo_cli.model.collisions import BODY_SHAPES, UnsupportedPair, body_pair_contacts

    joined = {frozenset((j["parent"], j["child"])) for j in result.scene_joints}
    poses = _initial_poses(result)
    quaternions = {body: np.asarray(_quaternion_from_matrix(rot)) for body, (rot, _) in poses.items()}
    # a robot's own hull pairs (each hull's vertices against the other) and cylinder-box pairs
    # (16 rim points + 8 corners) would multiply its contacts, as import-mjcf's within one
    # kinematic tree (docs/mjcf.md): hulls meet the ground only here, cylinders no boxes
    shapes = [c for c in contacts if c["shape"]["type"] in BODY_SHAPES and c["shape"]["type"] != "hull"]
    out, skipped, overlapping = [], [], []
    for a, b in itertools.combinations(shapes, 2):
        if a["body"] == b["body"] or frozenset((a["body"], b["body"])) in joined:
            continue
        try:
            if {a["shape"]["type"], b["shape"]["type"]} == {"cylinder", "box"}:
                raise UnsupportedPair("a robot's own cylinder-box pair")
            made = body_pair_contacts("", 0, shape_of(a["shape"]), 1, shape_of(b["shape"]))
            if any(c.kind == "hull" for c in made):  # a box turned in its body: as its hull, left out as before
                raise UnsupportedPair("a robot's own pair with a turned box")
        except UnsupportedPair:
            skipped.append(f"{a['name']}-{b['name']}")
            continue
        if a["body"] in poses and b["body"] in poses:
            bodies = (a["body"], b["body"])  # body_pair_contacts' indices 0 and 1
            gaps = [contact_distance(c, (poses[bodies[c.body]][1], quaternions[bodies[c.body]]),
                                     (poses[bodies[c.other]][1], quaternions[bodies[c.other]])) for c in made]
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
                    f"are left out (the collision table's boxes are axis-aligned): {listed(skipped, 4)}")
    if overlapping:
        reader.warn(None, "self-collision", f"{len(overlapping)} pairs that overlap or touch at the zero configuration "
                    f"are left out: {listed(overlapping, 4)}")
    return out


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
    try:  # trimesh: ~1 s to import, needed only for a mesh whose hull is not cached (mesh_vertices imports it)
        points = mesh_vertices(params["file"], params["scale"])
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
        contacts.append({"name": label, "body": body, **base, "radius": float(radius), "offset": plain_vector(centre)})

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
