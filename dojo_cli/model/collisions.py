"""Shape pairs compiled into contacts of the core's collision table.

The core's contact set is fixed per model (compiled once), and each of its contacts is one
entry of the collision table (core/collision.h): a sphere (a point when its radius is 0),
a segment (a capsule's core) or a circle (a cylinder cap's rim) on body a, against a
half-space or a sphere, capsule or box on body b. A pair of scene shapes becomes a fixed
list of such contacts, always the same ones in the same order (the storage names
``<group>/<k>`` follow it):

- against a half-space: a sphere is its centre with its radius; a capsule its two end
  spheres; a box, a pyramid or a convex hull its vertices (radius 0); a cylinder its two
  cap rims (circle_halfspace: the lowest rim point, so it rolls) then three fixed points of
  each rim (0, 120, 240 degrees from perpendicular_unit(axis)), so that it stands on an end;
- between bodies (sphere, capsule, box, the shapes the table carries on body b):
  sphere-X: the sphere against X (1); capsule-capsule: the segments' closest points, then
  each capsule's end spheres against the other (1 + 2 + 2); capsule-box: the segment's
  point of least box distance, then its end spheres against the box (1 + 2); box-box:
  each box's corners against the other box (corner_box: the face of least overlap holds
  them; 8 + 8).

docs/physics.md ("Collision table") says what each misses. Shapes are in their body's
frame (position_offset, orientation_offset); a box on body b must have its axes along
its body's (up to a signed permutation, which reorders the half sizes): the table's box
is axis-aligned in its body frame.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.mechanism import Contact
from dojo_cli.model.shapes import Shape

GROUND = {"normal": np.array([0.0, 0.0, 1.0]), "point": np.zeros(3)}
"""The ground half-space z >= 0."""
# Shapes that collide with a half-space, and with another body (the table's b shapes).
HALF_SPACE_SHAPES = ("sphere", "capsule", "box", "cylinder", "pyramid", "hull")
BODY_SHAPES = ("sphere", "capsule", "box")
# Fixed rim points of a cylinder cap (rad from perpendicular_unit(axis)), three so that a
# cylinder on its end stands on a triangle holding its centre.
_RIM_ANGLES = (0.0, 2.0 * np.pi / 3.0, 4.0 * np.pi / 3.0)
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
    """The core's fixed unit vector perpendicular to a unit axis (core/collision.h's
    perpendicular_unit: k the axis' largest component, e_{k+1} made perpendicular)."""
    k = int(np.argmax(np.abs(axis)))
    e = np.zeros(3)
    e[(k + 1) % 3] = 1.0
    p = e - (e @ axis) * axis
    return p / np.linalg.norm(p)


def _segment(shape: Shape) -> tuple[np.ndarray, np.ndarray, float]:
    """A capsule's (middle, half-vector, radius) in the body frame (its axis is the shape's z)."""
    rot, origin = _frame(shape)
    return origin, 0.5 * float(shape.params["height"]) * rot[:, 2], float(shape.params["radius"])


def _b_kind(shape: Shape) -> tuple[str, dict]:
    """The table's parameters of a shape carried by body b."""
    rot, origin = _frame(shape)
    p = shape.params
    if shape.kind == "sphere":
        return "sphere", {"offset": origin, "radius": float(p["radius"])}
    if shape.kind == "capsule":
        middle, half, radius = _segment(shape)
        return "capsule", {"end1": middle - half, "end2": middle + half, "radius": radius}
    if shape.kind == "box":
        rounded = np.round(rot)
        if not (np.allclose(rot, rounded, rtol=0, atol=_PERMUTATION_TOL) and np.all(np.abs(rounded).sum(0) == 1)):
            raise UnsupportedPair("a box turned in its body frame (other than by quarter turns) cannot be body b of a pair")
        half = np.abs(rounded) @ (0.5 * np.asarray(p["size"], float))
        return "box", {"centre": origin, "half_sizes": half}
    raise UnsupportedPair(f"a {shape.kind} collides only with the ground or a half-space")


def half_space_contacts(name: str, body: int, shape: Shape, half_space: dict, **base) -> list[Contact]:
    """A body's shape against a half-space ({normal, point}, world frame).

    Args:
        name: the group's name; contacts are ``name`` (one) or ``name/k``.
        body: index of the body carrying the shape.
        shape: the shape, in the body frame.
        half_space: ``normal`` (3,) unit and ``point`` (3,).
        base: model, friction and restitution of every contact.

    Raises:
        UnsupportedPair: a shape that cannot collide (frame, mesh).
    """
    params = {"normal": np.asarray(half_space["normal"], float), "point": np.asarray(half_space["point"], float)}
    spheres: list[tuple[np.ndarray, float]] = []
    circles: list[Contact] = []
    if shape.kind == "sphere":
        spheres = [(_frame(shape)[1], float(shape.params["radius"]))]
    elif shape.kind == "capsule":
        middle, half, radius = _segment(shape)
        spheres = [(middle - half, radius), (middle + half, radius)]
    elif shape.kind in ("box", "pyramid", "hull"):
        spheres = [(v, 0.0) for v in vertices(shape)]
    elif shape.kind == "cylinder":
        rot, origin = _frame(shape)
        axis, rho = rot[:, 2], float(shape.params["radius"])
        w0 = perpendicular_unit(axis)
        w1 = np.cross(axis, w0)
        caps = [origin - 0.5 * float(shape.params["height"]) * axis, origin + 0.5 * float(shape.params["height"]) * axis]
        circles = [Contact("", body, offset=cap, kind="circle_halfspace", params=params,
                           shape_a=_padded(axis, rho), **base) for cap in caps]
        spheres = [(cap - rho * (np.cos(t) * w0 + np.sin(t) * w1), 0.0) for cap in caps for t in _RIM_ANGLES]
    else:
        raise UnsupportedPair(f"a {shape.kind} shape cannot collide")
    contacts = circles + [Contact("", body, radius=r, offset=c, kind="halfspace", params=params, **base) for c, r in spheres]
    return _named(name, contacts)


def body_pair_contacts(name: str, body_a: int, shape_a: Shape, body_b: int, shape_b: Shape, **base) -> list[Contact]:
    """Two bodies' shapes against each other (sphere, capsule and box; see the module doc).

    Raises:
        UnsupportedPair: a shape the table cannot carry on body b (cylinder, pyramid,
            hull, frame, mesh), or a box turned in its body frame.
    """
    kinds = (shape_a.kind, shape_b.kind)
    if kinds[0] not in BODY_SHAPES or kinds[1] not in BODY_SHAPES:
        bad = kinds[0] if kinds[0] not in BODY_SHAPES else kinds[1]
        raise UnsupportedPair(f"a {bad} collides only with the ground or a half-space")
    # the first shape in this order carries the sphere or segment: sphere < capsule < box
    order = {"sphere": 0, "capsule": 1, "box": 2}
    if order[kinds[0]] > order[kinds[1]]:
        body_a, shape_a, body_b, shape_b = body_b, shape_b, body_a, shape_a
        kinds = kinds[::-1]

    def spheres(body, points, radius, against_body, against_shape):
        kind, params = _b_kind(against_shape)
        return [Contact("", body, radius=radius, offset=p, kind=kind, other=against_body, params=params, **base)
                for p in points]

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


def _padded(*values) -> np.ndarray:
    """A contact's shape_a (7,) from its leading values (core/collision.h's kShapeASize)."""
    out = np.zeros(7)
    flat = np.concatenate([np.ravel(np.asarray(v, float)) for v in values])
    out[: flat.size] = flat
    return out


def _named(name: str, contacts: list[Contact]) -> list[Contact]:
    """The group's contacts named ``name`` (one) or ``name/0``, ``name/1``, ... (table order)."""
    if len(contacts) == 1:
        return [replace(contacts[0], name=name)]
    return [replace(c, name=f"{name}/{k}") for k, c in enumerate(contacts)]
