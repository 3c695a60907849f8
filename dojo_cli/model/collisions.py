"""Shape pairs compiled into contacts of the core's collision table.

The core's contact set is fixed per model (compiled once), and each of its contacts is one
entry of the collision table (core/maximal/collision.h): a sphere (a point when its radius is 0),
a segment (a capsule's core) or a circle (a cylinder cap's rim) on body a, against a
half-space or a sphere, capsule, box, cylinder or convex hull on body b. A pair of scene shapes becomes a fixed
list of such contacts, always the same ones in the same order (the storage names
``<group>/<k>`` follow it):

- against a half-space: a sphere is its centre with its radius; a capsule its two end
  spheres; a box, a pyramid or a convex hull its vertices (radius 0); a cylinder its two
  cap rims (circle_halfspace: the lowest rim point, so it rolls) then ``rim_points`` fixed
  points of each rim (default 3: 0, 120, 240 degrees from perpendicular_unit(axis)), so that
  it stands on an end (0: the rims alone, which never go through the plane but balance on
  the cap's centre when standing: what a robot's link needs, at a quarter of the contacts);
  a hull with a ``radius`` gives its vertices that radius (a hull inflated by it);
- between bodies (sphere, capsule, box, cylinder, hull, the shapes the table carries on body b):
  sphere-X: the sphere against X (1); capsule-capsule: the segments' closest points, then
  each capsule's end spheres against the other (1 + 2 + 2); capsule-box and
  capsule-cylinder: the segment's point of least box (cylinder) signed distance, then its
  end spheres against the box (cylinder) (1 + 2); box-box:
  each box's corners against the other box (corner_box: the face of least overlap holds
  them; 8 + 8); X-hull: body a's spheres (a sphere; a capsule's end spheres; a box's
  corners; a hull's vertices) against the hull, then the hull's vertices against body a's
  shape (but a sphere's), the hull's radius added to every sphere of the pair (1; 2 + N;
  a cylinder's 8 fixed points per rim, 16 + N; 8 + N; M + N); cylinder-box: the same with the
  box's corners as the hull's vertices (16 + 8).

docs/physics.md ("Collision table") says what each misses. Shapes are in their body's
frame (position_offset, orientation_offset); the table's box is axis-aligned in its body
frame, so a box turned otherwise than by quarter turns (a signed permutation, which
reorders the half sizes) pairs as its own hull (its 8 corners).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.mechanism import Contact
from dojo_cli.model.shapes import Shape, combined_parts

GROUND = {"normal": np.array([0.0, 0.0, 1.0]), "point": np.zeros(3)}
"""The ground half-space z >= 0."""
# Shapes that collide with a half-space, and with another body (the table's b shapes).
HALF_SPACE_SHAPES = ("sphere", "capsule", "box", "cylinder", "pyramid", "hull", "combined")
BODY_SHAPES = ("sphere", "capsule", "box", "cylinder", "hull", "combined")
# The pairs between bodies the table has, by the shape of body a (the first in the order
# sphere < capsule < cylinder < box < hull): a cylinder meets spheres, capsules, boxes and hulls only.
_BODY_PAIRS = {("sphere", "sphere"), ("sphere", "capsule"), ("sphere", "box"), ("sphere", "cylinder"),
               ("capsule", "capsule"), ("capsule", "box"), ("capsule", "cylinder"), ("box", "box"),
               ("sphere", "hull"), ("capsule", "hull"), ("cylinder", "hull"), ("box", "hull"), ("hull", "hull"),
               ("cylinder", "box")}
# Fixed points per cylinder cap rim, evenly spaced from perpendicular_unit(axis): three so
# that a cylinder on its end stands on a triangle holding its centre.
RIM_POINTS = 3
# Fixed points per cylinder cap rim against a hull or a box (the table has no circle kind for them): an
# octagon, which a cylinder lying on a hull's face rests on up to rho (1 - cos(pi / 8)) =
# 0.076 rho low (between two points), and standing on its end holds within its cap.
HULL_RIM_POINTS = 8
# A box's rotation in its body frame counts as a signed permutation of the axes when its
# entries are within this of 0 or +-1.
_PERMUTATION_TOL = 1e-9


class UnsupportedPair(ValueError):
    """The collision table has no entry for this shape pair (message says which)."""


def _frame(shape: Shape) -> tuple[np.ndarray, np.ndarray]:
    """(rotation (3, 3), origin (3,)) of a shape in its body frame."""
    return matrix_from_quaternion(np.asarray(shape.orientation_offset, float)), np.asarray(shape.position_offset, float)


def vertices(shape: Shape) -> np.ndarray:
    """(n, 3) vertices of a box (corners in the order -/+ x, then y, then z), a pyramid
    (base corners then apex) or a convex hull, in the body frame."""
    rot, origin = _frame(shape)
    p = shape.params
    if shape.kind == "box":
        half = 0.5 * np.asarray(p["size"], float)
        local = np.array([[sx, sy, sz] for sx, sy, sz in itertools.product((-1, 1), repeat=3)]) * half
    elif shape.kind == "pyramid":
        # square base at z = -height/4, apex at 3 height/4 (model/shapes.py: the centroid at 0)
        w, h = 0.5 * float(p["width"]), float(p["height"])
        base = [[sx * w, sy * w, -0.25 * h] for sx, sy in itertools.product((-1, 1), repeat=2)]
        local = np.array(base + [[0.0, 0.0, 0.75 * h]])
    else:  # hull
        local = np.asarray(p["vertices"], float).reshape(-1, 3)
    return origin + local @ rot.T


def perpendicular_unit(axis: np.ndarray) -> np.ndarray:
    """The core's fixed unit vector perpendicular to a unit axis (core/maximal/collision.h's
    perpendicular_unit: k the axis' largest component, e_{k+1} made perpendicular)."""
    k = int(np.argmax(np.abs(axis)))
    e = np.zeros(3)
    e[(k + 1) % 3] = 1.0
    p = e - (e @ axis) * axis
    return p / np.linalg.norm(p)


def _segment(shape: Shape) -> tuple[np.ndarray, np.ndarray, float]:
    """A capsule's or cylinder's (middle, half-vector, radius) in the body frame (its axis is the shape's z)."""
    rot, origin = _frame(shape)
    return origin, 0.5 * float(shape.params["height"]) * rot[:, 2], float(shape.params["radius"])


def _b_kind(shape: Shape) -> tuple[str, dict]:
    """The table's parameters of a shape carried by body b."""
    rot, origin = _frame(shape)
    p = shape.params
    if shape.kind == "sphere":
        return "sphere", {"offset": origin, "radius": float(p["radius"])}
    if shape.kind in ("capsule", "cylinder"):  # a cylinder's segment ends are its caps' centres
        middle, half, radius = _segment(shape)
        return shape.kind, {"end1": middle - half, "end2": middle + half, "radius": radius}
    if shape.kind == "box":
        rounded = np.round(rot)
        if not (np.allclose(rot, rounded, rtol=0, atol=_PERMUTATION_TOL) and np.all(np.abs(rounded).sum(0) == 1)):
            raise UnsupportedPair("a box turned in its body frame (other than by quarter turns) cannot be body b of a pair")
        half = np.abs(rounded) @ (0.5 * np.asarray(p["size"], float))
        return "box", {"centre": origin, "half_sizes": half}
    if shape.kind == "hull":  # its radius is the pair's (body_pair_contacts adds it to body a's spheres)
        return "hull", {"vertices": (points := vertices(shape)), "triangles": _hull(points, shape).simplices}
    raise UnsupportedPair(f"a {shape.kind} collides only with the ground or a half-space")


def _hull(points: np.ndarray, shape: Shape):
    """scipy's ConvexHull of a shape's points (n, 3).

    Raises:
        UnsupportedPair: points with no volume (all on a plane), which no hull pair takes.
    """
    from scipy.spatial import ConvexHull, QhullError

    try:
        return ConvexHull(points)
    except (QhullError, ValueError):
        raise UnsupportedPair(f"a flat {shape.kind} (its {len(points)} vertices span no volume) collides only "
                              "with the ground or a half-space") from None


def _hull_radius(shape: Shape) -> float:
    """A hull's ``radius`` (the hull inflated by it); 0 for any other shape."""
    return float(shape.params.get("radius") or 0.0) if shape.kind == "hull" else 0.0


def _hull_vertices(shape: Shape) -> np.ndarray:
    """A box's corners or a hull's vertices (its convex hull's: points inside it never touch first), body frame."""
    points = vertices(shape)
    return points if shape.kind == "box" else points[np.sort(_hull(points, shape).vertices)]


def half_space_contacts(name: str, body: int, shape: Shape, half_space: dict, rim_points: int = RIM_POINTS,
                        **base) -> list[Contact]:
    """A body's shape against a half-space ({normal, point}, world frame).

    Args:
        name: the group's name; contacts are ``name`` (one) or ``name/k``.
        body: index of the body carrying the shape.
        shape: the shape, in the body frame.
        half_space: ``normal`` (3,) unit and ``point`` (3,).
        rim_points: fixed points per cylinder rim (0: the rolling rim contacts only).
        base: model, friction and restitution of every contact.

    Raises:
        UnsupportedPair: a shape that cannot collide (frame, mesh).
    """
    if shape.kind == "combined":  # each part's contacts, in part order
        return _named(name, [c for part in combined_parts(shape)
                             for c in half_space_contacts("", body, part, half_space, rim_points, **base)])
    params = {"normal": np.asarray(half_space["normal"], float), "point": np.asarray(half_space["point"], float)}
    spheres: list[tuple[np.ndarray, float]] = []
    circles: list[Contact] = []
    if shape.kind == "sphere":
        spheres = [(_frame(shape)[1], float(shape.params["radius"]))]
    elif shape.kind == "capsule":
        middle, half, radius = _segment(shape)
        spheres = [(middle - half, radius), (middle + half, radius)]
    elif shape.kind in ("box", "pyramid", "hull"):
        radius = float(shape.params.get("radius") or 0.0) if shape.kind == "hull" else 0.0
        spheres = [(v, radius) for v in vertices(shape)]
    elif shape.kind == "cylinder":
        rot, origin = _frame(shape)
        axis, rho = rot[:, 2], float(shape.params["radius"])
        w0 = perpendicular_unit(axis)
        w1 = np.cross(axis, w0)
        caps = [origin - 0.5 * float(shape.params["height"]) * axis, origin + 0.5 * float(shape.params["height"]) * axis]
        circles = [Contact("", body, offset=cap, kind="circle_halfspace", params=params,
                           shape_a=_padded(axis, rho), **base) for cap in caps]
        angles = 2.0 * np.pi * np.arange(rim_points) / max(rim_points, 1)
        spheres = [(cap - rho * (np.cos(t) * w0 + np.sin(t) * w1), 0.0) for cap in caps for t in angles]
    else:
        raise UnsupportedPair(f"a {shape.kind} shape cannot collide")
    contacts = circles + [Contact("", body, radius=r, offset=c, kind="halfspace", params=params, **base) for c, r in spheres]
    return _named(name, contacts)


def body_pair_contacts(name: str, body_a: int, shape_a: Shape, body_b: int, shape_b: Shape, **base) -> list[Contact]:
    """Two bodies' shapes against each other (sphere, capsule, box, cylinder and hull; see the module doc).

    Raises:
        UnsupportedPair: a shape the table cannot carry on body b (pyramid, a flat hull, frame,
            mesh), or a cylinder against a cylinder.
    """
    if "combined" in (shape_a.kind, shape_b.kind):  # every pair of parts (each must be a table pair)
        return _named(name, [c for part_a in combined_parts(shape_a) for part_b in combined_parts(shape_b)
                             for c in body_pair_contacts("", body_a, part_a, body_b, part_b, **base)])
    # a box turned in its body frame other than by quarter turns, which the table's box (and
    # corner_box's own box) cannot carry: as its own hull (its 8 corners, any orientation)
    shape_a = _as_table_box(shape_a) if shape_a.kind == "box" else shape_a
    shape_b = _as_table_box(shape_b) if shape_b.kind == "box" else shape_b
    kinds = (shape_a.kind, shape_b.kind)
    if kinds[0] not in BODY_SHAPES or kinds[1] not in BODY_SHAPES:
        bad = kinds[0] if kinds[0] not in BODY_SHAPES else kinds[1]
        raise UnsupportedPair(f"a {bad} collides only with the ground or a half-space")
    # the first shape in this order carries the sphere or segment: sphere < capsule < cylinder < box < hull
    order = {"sphere": 0, "capsule": 1, "cylinder": 2, "box": 3, "hull": 4}
    if order[kinds[0]] > order[kinds[1]]:
        body_a, shape_a, body_b, shape_b = body_b, shape_b, body_a, shape_a
        kinds = kinds[::-1]
    if kinds not in _BODY_PAIRS:
        raise UnsupportedPair(f"a cylinder collides with spheres, capsules, boxes, hulls, the ground and half-spaces only, "
                              f"not a {kinds[1]}")

    def spheres(body, points, radius, against_body, against_shape):
        # a hull on body b is sharp in the table: its radius goes to the spheres (the distance
        # of a sphere of radius r + r_hull to the sharp hull is that of the two shapes)
        kind, params = _b_kind(against_shape)
        return [Contact("", body, radius=radius + _hull_radius(against_shape), offset=p, kind=kind, other=against_body,
                        params=params, **base) for p in points]

    if kinds[1] == "hull" or kinds == ("cylinder", "box"):  # a box as a hull: its corners, the box kind
        return _named(name, _hull_pair_contacts(body_a, shape_a, body_b, shape_b, spheres, base))

    if kinds[0] == "sphere":
        contacts = spheres(body_a, [_frame(shape_a)[1]], float(shape_a.params["radius"]), body_b, shape_b)
    elif kinds[0] == "capsule":
        middle, half, radius = _segment(shape_a)
        kind, params = _b_kind(shape_b)
        segment = Contact("", body_a, radius=radius, offset=middle, kind=f"segment_{kind}", other=body_b, params=params,
                          shape_a=_padded(half), **base)
        contacts = [segment] + spheres(body_a, [middle - half, middle + half], radius, body_b, shape_b)
        if kinds[1] == "capsule":
            middle_b, half_b, radius_b = _segment(shape_b)
            contacts += spheres(body_b, [middle_b - half_b, middle_b + half_b], radius_b, body_a, shape_a)
    else:  # box-box: each box's corners, with their box (corner_box chooses the face)
        contacts = []
        for (body, shape), (other, other_shape) in (((body_a, shape_a), (body_b, shape_b)),
                                                    ((body_b, shape_b), (body_a, shape_a))):
            _, params = _b_kind(other_shape)
            _, own = _b_kind(shape)  # its box, axis-aligned in its body frame
            box = _padded(own["centre"], *own["half_sizes"])
            contacts += [Contact("", body, offset=p, kind="corner_box", other=other, params=params, shape_a=box, **base)
                         for p in vertices(shape)]
    return _named(name, contacts)


def _hull_pair_contacts(body_a: int, shape_a: Shape, body_b: int, shape_b: Shape, spheres, base: dict) -> list[Contact]:
    """A cylinder against a box (body b; its corners as a hull's vertices, the box kind, or
    the box's own hull when the box is turned in its body frame otherwise than by quarter
    turns), or a sphere, capsule, cylinder, box or hull (body a) against a hull (body b): body a's
    spheres (the sphere; a capsule's end spheres; a cylinder's HULL_RIM_POINTS fixed points
    per cap rim; a box's corners; a hull's vertices, with its radius) against the hull, then
    (but for a sphere) the hull's vertices, with its radius, against body a's shape (the
    capsule kind; the cylinder kind; the box kind, or the box's own hull when the box is
    turned in its body frame otherwise than by quarter turns; the other hull)."""
    kind = shape_a.kind
    if shape_b.kind == "box":
        shape_b = _as_table_box(shape_b)
    if kind == "sphere":
        return spheres(body_a, [_frame(shape_a)[1]], float(shape_a.params["radius"]), body_b, shape_b)
    if kind in ("capsule", "cylinder"):
        middle, half, radius = _segment(shape_a)
        if kind == "capsule":
            own = spheres(body_a, [middle - half, middle + half], radius, body_b, shape_b)
        else:  # points of the rims, from perpendicular_unit(axis) as the half-space's rim points
            axis = half / np.linalg.norm(half)
            w0 = perpendicular_unit(axis)
            w1 = np.cross(axis, w0)
            angles = 2.0 * np.pi * np.arange(HULL_RIM_POINTS) / HULL_RIM_POINTS
            rims = [cap - radius * (np.cos(t) * w0 + np.sin(t) * w1) for cap in (middle - half, middle + half)
                    for t in angles]
            own = spheres(body_a, rims, 0.0, body_b, shape_b)
        return own + spheres(body_b, _hull_vertices(shape_b), _hull_radius(shape_b), body_a, shape_a)
    own = _hull_vertices(shape_a)
    against = _as_table_box(shape_a) if kind == "box" else shape_a
    return (spheres(body_a, own, _hull_radius(shape_a), body_b, shape_b)
            + spheres(body_b, _hull_vertices(shape_b), _hull_radius(shape_b), body_a, against))


def _as_table_box(box: Shape) -> Shape:
    """A box as body b of the table: itself when its axes are its body's (up to quarter turns),
    else its own hull (its 8 corners; any orientation)."""
    try:
        _b_kind(box)
        return box
    except UnsupportedPair:
        return Shape("hull", {"vertices": vertices(box)}, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))


def _padded(*values) -> np.ndarray:
    """A contact's shape_a (7,) from its leading values (core/maximal/collision.h's kShapeASize)."""
    out = np.zeros(7)
    flat = np.concatenate([np.ravel(np.asarray(v, float)) for v in values])
    out[: flat.size] = flat
    return out


def _named(name: str, contacts: list[Contact]) -> list[Contact]:
    """The group's contacts named ``name`` (one) or ``name/0``, ``name/1``, ... (table order)."""
    if len(contacts) == 1:
        return [replace(contacts[0], name=name)]
    return [replace(c, name=f"{name}/{k}") for k, c in enumerate(contacts)]


def lowest_height(contacts: list[Contact], rotation: np.ndarray, position: np.ndarray) -> float:
    """The lowest world height (z) of a body's half-space contacts with the body at
    (rotation (3, 3), centre of mass position (3,)): a sphere's bottom, a rim's lowest point."""
    lows = []
    for c in contacts:
        centre = position + rotation @ np.asarray(c.offset, float)
        if c.kind == "circle_halfspace":
            axis, rho = rotation @ np.asarray(c.shape_a[:3], float), float(c.shape_a[3])
            lows.append(centre[2] - rho * np.sqrt(max(0.0, 1.0 - axis[2] ** 2)))
        else:
            lows.append(centre[2] - float(c.radius))
    return float(min(lows))


def reduced_hull(points: np.ndarray, most: int) -> tuple[np.ndarray, float]:
    """At most ``most`` vertices of the convex hull of ``points`` (n, 3), and the error:
    the largest distance of a point from their hull.

    Greedy: the extreme points along +-x, +-y, +-z, then repeatedly the point farthest
    beyond a face of the current hull (Quickhull's choice), until ``most`` or every point
    is inside. The vertices are a subset of the hull's, so their hull lies inside the
    mesh's and the error is one-sided: the hull inflated by the error (each vertex a
    sphere of that radius, the hull shape's ``radius``) holds every point; against a
    plane it sits at most the error lower than the points do (in any direction: the
    error is the Hausdorff distance of the two hulls).

    Raises:
        ValueError: points with no volume (all on a plane), or ``most`` < 4.
    """
    from scipy.spatial import ConvexHull, QhullError
    from trimesh.triangles import closest_point

    if most < 4:
        raise ValueError(f"a hull needs at least 4 vertices, asked for {most}")
    points = np.asarray(points, float).reshape(-1, 3)
    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError):
        raise ValueError(f"the {len(points)} points span no volume (flat or fewer than 4)") from None
    candidates = points[hull.vertices]
    if len(candidates) <= most:
        return candidates, 0.0
    centred = candidates - candidates.mean(axis=0)
    chosen = list(dict.fromkeys(int(i) for k in range(3) for i in (np.argmin(centred[:, k]), np.argmax(centred[:, k]))))
    while len(chosen) < 4:  # a flat start (a disc's extremes): the farthest point off its plane
        base = candidates[chosen]
        normal = np.linalg.svd(base - base.mean(axis=0))[2][-1]
        chosen.append(int(np.argmax(np.abs((candidates - base.mean(axis=0)) @ normal))))
    while len(chosen) < most:
        sub = ConvexHull(candidates[chosen])
        beyond = (candidates @ sub.equations[:, :3].T + sub.equations[:, 3]).max(axis=1)
        k = int(np.argmax(beyond))
        if beyond[k] <= 0.0:
            break
        chosen.append(k)
    vertices = candidates[chosen]
    sub = ConvexHull(vertices)
    # a point outside a convex hull is nearest its boundary: the closest point over its triangles
    outside = candidates[(candidates @ sub.equations[:, :3].T + sub.equations[:, 3]).max(axis=1) > 0.0]
    if len(outside) == 0:
        return vertices, 0.0
    triangles = vertices[sub.simplices]
    pairs_t = np.repeat(triangles[None], len(outside), axis=0).reshape(-1, 3, 3)
    pairs_p = np.repeat(outside, len(triangles), axis=0)
    distance = np.linalg.norm(closest_point(pairs_t, pairs_p) - pairs_p, axis=1).reshape(len(outside), len(triangles))
    return vertices, float(distance.min(axis=1).max())
