"""Contacts and collisions: contact specs (a sphere point or a shape on a body, against the
ground, a half-space or another body's shape), the ground, and the ``collisions`` filter
that makes body pairs' contacts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dojo_cli import _core
from dojo_cli.scene.schema.field_types import (
    DIRECTION, MIN_DIRECTION_NORM, NAME, NON_NEGATIVE_REAL, POSITIVE_VECTOR3, QUATERNION, REAL, SpecProblems,
    UNIT_INTERVAL_REAL, VECTOR3, _BODY, _GROUND, _HALF_SPACE, _identity_quaternion, _invalid, _zero_vector,
    value_text,
)
from dojo_cli.scene.schema.shapes import (
    BoxShapeSpec, CapsuleShapeSpec, CylinderShapeSpec, PyramidShapeSpec, SphereShapeSpec, _ShapeSpec,
    _shape_union,
)
from dojo_cli.scene.specs import Field, Spec, before, check, list_of, literal, nullable, tagged_union


# Contact models (docs/physics.md): impact (no friction), linear (pyramid), nonlinear (cone):
# the core's names (core/maximal/contact_params.h), listed alphabetically in messages.
CONTACT_MODELS = tuple(sorted(_core.CONTACT_MODELS))
# The word naming the ground in ``collisions.exclude`` pairs.
GROUND_NAME = "ground"
# Most vertices of a hull (each is a contact): a few dozen make a mesh (the importer
# reduces to HULL_VERTICES, dojo_cli.scene.urdf), a few hundred would make a step slow.
MAX_HULL_VERTICES = 256


class HalfSpaceSpec(Spec):
    """The half-space {p : normal . (p - point) >= 0}, world frame.

    Attributes:
        normal: (3,) outward normal of the boundary, normalised.
        point: (3,) a point on the boundary (m).
    """

    normal = Field(DIRECTION)
    point = Field(VECTOR3, factory=_zero_vector)


class HullShapeSpec(_ShapeSpec):
    """A convex hull (a contact's shape: a URDF collision mesh reduced to its hull);
    ``vertices``: (n, 3) points in the shape frame (m), each a contact against a half-space;
    ``radius``: each vertex is a sphere of this radius (m): the hull inflated by it (the
    importer's reduction error, so that the inflated hull holds the whole mesh)."""

    type = Field(literal("hull"), "hull")
    vertices = Field(list_of(VECTOR3, min_length=1, max_length=MAX_HULL_VERTICES))
    radius = Field(NON_NEGATIVE_REAL, 0.0)


CONTACT_SHAPE_SPECS = (BoxShapeSpec, SphereShapeSpec, CylinderShapeSpec, CapsuleShapeSpec, PyramidShapeSpec, HullShapeSpec)
"""The shapes a contact can give its body (mesh and frame have no collision geometry)."""
CONTACT_SHAPE = _shape_union(CONTACT_SHAPE_SPECS)


class BodyCollisionSpec(Spec):
    """Another body's geometry, for body-body contact.

    Attributes:
        body: the other body's name.
        shape: sphere, capsule, box, cylinder or hull; or ``body``: that body's own shape
            (sphere, capsule, box, cylinder or hull), the other fields unused.
        radius: sphere, capsule or cylinder radius (m), or a hull's inflation (m, as a hull
            shape's ``radius``); a box has none (0: the collision
            table's box is not rounded, so a radius given for a box is refused rather than ignored).
        offset: (3,) shape centre in the other body's frame (m).
        orientation_offset: the shape's orientation in the other body's frame [w, x, y, z]
            (a capsule's and a cylinder's axis is its z; a box turned otherwise than by quarter
            turns pairs as its own hull).
        height: capsule segment length, or cylinder height, along the shape's z axis (m).
        size: (3,) box edge lengths (m), required for a box.
        vertices: (n, 3) a hull's points in the shape frame (m), required for a hull (their
            convex hull, which must have volume).
    """

    body = Field(NAME)
    shape = Field(literal("sphere", "capsule", "box", "cylinder", "hull", "body"))
    radius = Field(NON_NEGATIVE_REAL, 0.0)
    offset = Field(VECTOR3, factory=_zero_vector)
    orientation_offset = Field(QUATERNION, factory=_identity_quaternion)
    height = Field(NON_NEGATIVE_REAL, 0.0)
    size = Field(nullable(POSITIVE_VECTOR3), None)
    vertices = Field(nullable(list_of(VECTOR3, min_length=4, max_length=MAX_HULL_VERTICES)), None)

    @check
    def _box_has_size(self) -> BodyCollisionSpec:
        problems = []
        if self.shape == "box" and self.size is None:
            problems.append(("size", "field required for a box"))
        if self.shape == "hull" and self.vertices is None:
            problems.append(("vertices", "field required for a hull"))
        if self.shape == "box" and self.radius != 0.0:
            problems.append(("radius", "a box has no radius (the collision table's box is not rounded); "
                                       "inflate the shape on the contact's own body instead, or leave it out"))
        if problems:
            raise SpecProblems(problems)
        return self


_AGAINST_TEXT = "must be ground, a half-space (normal, point) or a body (body, shape, ...)"


def _ground(value: Any) -> Any:
    if value != "ground":
        raise _invalid(f"{_AGAINST_TEXT}, got {value_text(value)}")
    return value


def _against_tag(value: Any) -> str:
    if isinstance(value, HalfSpaceSpec):
        return _HALF_SPACE
    if isinstance(value, BodyCollisionSpec):
        return _BODY
    if isinstance(value, Mapping):
        return _BODY if "body" in value else _HALF_SPACE
    # anything else must be the word ground, whose validator says what is wrong
    return _GROUND


AGAINST = tagged_union(_against_tag, {
    _GROUND: before(_ground, literal("ground")),
    _HALF_SPACE: HalfSpaceSpec.core_schema(),
    _BODY: BodyCollisionSpec.core_schema(),
})


class ContactSpec(Spec):
    """A contact sphere (or a shape) on a body, against the ground, a half-space or another body.

    Attributes:
        name: unique contact name.
        body: the body carrying the sphere.
        model: impact, linear or nonlinear (friction cone).
        friction: Coulomb coefficient, >= 0 (ignored by impact).
        radius: sphere radius (m), 0 for a point.
        offset: (3,) sphere centre in the body frame (m).
        restitution: coefficient e in [0, 1] of the normal velocity after an impact
            (0: inelastic, Dojo's contact; docs/physics.md "Restitution").
        shape: None (the sphere of radius and offset), ``body`` (the body's own shape) or
            a shape in the body frame (box, sphere, cylinder, capsule, pyramid, hull):
            the contact is then the shape pair, compiled into the collision table's
            contacts named ``<name>/<k>`` (dojo_cli.model.collisions), and radius and
            offset stay unset.
        rim_points: with a cylinder shape against a half-space, the fixed points per cap
            rim besides the rolling rim contact (3 by default, so that it stands on an end;
            0: the rims alone, dojo_cli.model.collisions).
        against: "ground" (z >= 0), a HalfSpaceSpec or a BodyCollisionSpec.
        margin: None (in every step's solve) or a distance >= 0 (m): the contact (each of
            a shape's contacts) joins a step's solve only when its distance at the
            step's predicted configuration is within it; one that the solution brings
            to touch joins and the step is solved again (docs/physics.md, "Contact
            margins").
    """

    name = Field(NAME)
    body = Field(NAME)
    model = Field(literal(*CONTACT_MODELS), "nonlinear")
    friction = Field(NON_NEGATIVE_REAL, 0.5)
    radius = Field(NON_NEGATIVE_REAL, 0.0)
    offset = Field(VECTOR3, factory=_zero_vector)
    restitution = Field(UNIT_INTERVAL_REAL, 0.0)
    shape = Field(nullable({"type": "union", "choices": [literal("body"), CONTACT_SHAPE], "mode": "left_to_right"}), None,
                  specs=CONTACT_SHAPE_SPECS)
    rim_points = Field({"type": "int", "ge": 0, "le": 16}, 3)
    against = Field(AGAINST, "ground", specs=(HalfSpaceSpec, BodyCollisionSpec))
    margin = Field(nullable(NON_NEGATIVE_REAL), None)

    @check
    def _sphere_or_shape(self) -> ContactSpec:
        problems = []
        if self.shape is not None:
            # a stored scene (a run file's 'scene') writes every field back, the sphere's
            # defaults too: those are accepted, as rim_points' below
            defaults = {"radius": 0.0, "offset": [0.0, 0.0, 0.0]}
            problems = [(key, "describes the contact sphere; a contact with a shape has none (leave it out)")
                        for key in ("radius", "offset") if key in self.fields_set and getattr(self, key) != defaults[key]]
        # (a stored scene writes the default back on every contact: that one is accepted)
        if self.rim_points in (1, 2) or (self.shape is None and self.rim_points != 3):
            problems.append(("rim_points", "fixed points per rim of a cylinder shape: 0, or 3 to 16 (fewer cannot stand)"))
        if problems:
            raise SpecProblems(problems)
        return self


class GroundSpec(Spec):
    """The ground: the half-space ``against: ground`` and ``collisions:`` meet (issue 27).

    By default the plane z = 0 with normal +z. A table that is not at z = 0 (a motion-capture
    frame on the table's markers, a raised platform) or not level is the plane through
    ``point`` (or (0, 0, ``height``)) with the outward ``normal``; the ground is the side
    the normal points into, {p : normal . (p - point) >= 0}.

    Attributes:
        normal: (3,) outward normal, normalised.
        height: z of the plane on the world's z axis (m); with ``point`` not given.
        point: (3,) a point of the plane (m), or None: (0, 0, height).
    """

    normal = Field(DIRECTION, factory=lambda: [0.0, 0.0, 1.0])
    height = Field(REAL, 0.0)
    point = Field(nullable(VECTOR3), None)

    @check
    def _one_place(self) -> GroundSpec:
        if self.point is not None and self.height != 0.0:
            raise SpecProblems([("height", "give either height or point, not both")])
        if self.point is None and abs(self.normal[2]) < MIN_DIRECTION_NORM:
            raise SpecProblems([("normal", "a vertical plane (normal with no z part) never crosses the z axis at a "
                                           "height: give its point instead")])
        return self

    def half_space(self) -> dict:
        """{normal (3,), point (3,)} of the ground, world frame."""
        point = [0.0, 0.0, float(self.height)] if self.point is None else list(self.point)
        return {"normal": np.asarray(self.normal, dtype=float), "point": np.asarray(point, dtype=float)}


class CollisionsSpec(Spec):
    """Collisions asked for wholesale (MuJoCo's default), besides the listed contacts.

    Attributes:
        mode: none; ground (every body's shape against the ground z >= 0); all (also
            every pair of bodies not joined parent-child).
        model, friction: as on a contact, for every generated contact.
        restitution: in [0, 1], as on a contact.
        margin: as on a contact, for every generated contact.
        exclude: pairs of body names (or a body and ``ground``) left out.
    """

    mode = Field(literal("none", "ground", "all"), "none")
    model = Field(literal(*CONTACT_MODELS), "nonlinear")
    friction = Field(NON_NEGATIVE_REAL, 0.5)
    restitution = Field(UNIT_INTERVAL_REAL, 0.0)
    margin = Field(nullable(NON_NEGATIVE_REAL), None)
    exclude = Field(list_of(list_of(NAME, min_length=2, max_length=2)), factory=list)
