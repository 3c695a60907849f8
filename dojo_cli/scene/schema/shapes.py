"""Body shapes: the primitives (box, sphere, cylinder, capsule, pyramid), a mesh file, a
frame marker and a combined shape of primitives, one union discriminated by ``type``.
"""

from __future__ import annotations

from dojo_cli.scene.schema.field_types import (
    AMOUNT, AMOUNT_VECTOR3, COLOR, FILE_PATH, PRIMITIVE_SCALE, QUATERNION, SCALE, VECTOR3, _STR,
    _identity_quaternion, _zero_vector,
)
from dojo_cli.scene.specs import Field, Spec, list_of, literal, nullable, tagged_union


class _ShapeSpec(Spec):
    """Fields every shape has.

    Attributes:
        type: the shape kind, one of SHAPE_TYPES (each subclass fixes it).
        position_offset: (3,) shape origin in the body frame.
        orientation_offset: (4,) shape orientation in the body frame, [w, x, y, z].
        color: (4,) RGBA in [0, 1] (given as RGB or RGBA), or None for the default.
    """

    type = Field(_STR)
    position_offset = Field(VECTOR3, factory=_zero_vector)
    orientation_offset = Field(QUATERNION, factory=_identity_quaternion)
    color = Field(nullable(COLOR), None)


class _PrimitiveShapeSpec(_ShapeSpec):
    """A solid: ``scale`` (a positive number, or three along the shape's x, y, z) multiplies its
    dimensions, for its inertia and its drawing alike (Dojo's shapes' ``scale``); a sphere
    takes a uniform scale, a cylinder, capsule or pyramid the same x and y."""

    scale = Field(PRIMITIVE_SCALE, 1.0)


class BoxShapeSpec(_PrimitiveShapeSpec):
    """A box; ``size``: (3,) edge lengths along the shape's x, y, z (m)."""

    type = Field(literal("box"), "box")
    size = Field(AMOUNT_VECTOR3)


class SphereShapeSpec(_PrimitiveShapeSpec):
    """A sphere of ``radius`` (m)."""

    type = Field(literal("sphere"), "sphere")
    radius = Field(AMOUNT)


class CylinderShapeSpec(_PrimitiveShapeSpec):
    """A cylinder of ``radius`` and ``height`` along the shape's z axis (m)."""

    type = Field(literal("cylinder"), "cylinder")
    radius = Field(AMOUNT)
    height = Field(AMOUNT)


class CapsuleShapeSpec(_PrimitiveShapeSpec):
    """A capsule: a cylinder of ``radius`` and ``height`` (z axis) with hemispherical caps (m)."""

    type = Field(literal("capsule"), "capsule")
    radius = Field(AMOUNT)
    height = Field(AMOUNT)


class PyramidShapeSpec(_PrimitiveShapeSpec):
    """A square pyramid of base ``width`` and ``height`` along z (m)."""

    type = Field(literal("pyramid"), "pyramid")
    width = Field(AMOUNT)
    height = Field(AMOUNT)


class MeshShapeSpec(_ShapeSpec):
    """A mesh (visual only): ``file`` relative to the scene's folder, ``scale`` uniform or per axis."""

    type = Field(literal("mesh"), "mesh")
    file = Field(FILE_PATH)
    scale = Field(SCALE, 1.0)


class FrameShapeSpec(_ShapeSpec):
    """No geometry: a body drawn as coordinate axes."""

    type = Field(literal("frame"), "frame")


def _shape_union(specs: tuple[type[Spec], ...]) -> dict:
    """One of ``specs``, by the input's ``type`` key (read from a spec's attribute too)."""
    choices = {spec.fields["type"].default: spec.core_schema() for spec in specs}
    return tagged_union("type", choices, strict=False, from_attributes=True)


PART_SHAPE_SPECS = (BoxShapeSpec, SphereShapeSpec, CylinderShapeSpec, CapsuleShapeSpec, PyramidShapeSpec)


class CombinedShapeSpec(_ShapeSpec):
    """Several solids as one body's shape (Dojo's CombinedShapes): ``shapes``, each placed in the
    combined shape's frame by its own offsets. The body's inertia, without an explicit one, is
    the parts' (uniform density: the mass split by volume) about the body frame, which is the
    centre of mass, so the parts' volume centroid must be at the combined shape's origin."""

    type = Field(literal("combined"), "combined")
    shapes = Field(list_of(_shape_union(PART_SHAPE_SPECS), min_length=1), specs=PART_SHAPE_SPECS)


SHAPE_SPECS = (BoxShapeSpec, SphereShapeSpec, CylinderShapeSpec, CapsuleShapeSpec, PyramidShapeSpec, MeshShapeSpec,
               FrameShapeSpec, CombinedShapeSpec)
SHAPE = _shape_union(SHAPE_SPECS)
