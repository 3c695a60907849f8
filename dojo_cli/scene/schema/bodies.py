"""Bodies: mass, inertia (diagonal or full, symmetric positive definite), shape and visuals,
and the initial pose and velocities.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.scene.schema.field_types import AMOUNT, INERTIA, NAME, QUATERNION, VECTOR3, _invalid
from dojo_cli.scene.schema.shapes import FrameShapeSpec, SHAPE, SHAPE_SPECS
from dojo_cli.scene.specs import Field, Spec, after, list_of, nullable


RESERVED_BODY_NAME = "origin"


class BodyInitialSpec(Spec):
    """A body's initial maximal state; None means "from the joints".

    Attributes:
        position: (3,) centre of mass, world frame (m).
        orientation: (4,) [w, x, y, z], body to world.
        velocity: (3,) linear velocity, world frame (m/s).
        angular_velocity: (3,) angular velocity, body frame (rad/s).
    """

    position = Field(nullable(VECTOR3), None)
    orientation = Field(nullable(QUATERNION), None)
    velocity = Field(nullable(VECTOR3), None)
    angular_velocity = Field(nullable(VECTOR3), None)


def _not_reserved(name: str) -> str:
    if name == RESERVED_BODY_NAME:
        raise _invalid(f"{name!r} is reserved for the world frame")
    return name


class BodySpec(Spec):
    """A rigid body.

    Attributes:
        name: unique; "origin" is reserved for the world frame.
        shape: geometry (drawing, and the default inertia).
        mass: kg, > 0.
        inertia: None (from shape and mass), (3,) diagonal, or (3, 3) central
            inertia in the body frame (kg m^2).
        initial: initial maximal state, overriding the joints' initial values.
        visuals: more shapes, drawn only (a URDF link's other visual elements);
            they never change the inertia.
    """

    name = Field(after(_not_reserved, NAME))
    shape = Field(SHAPE, factory=FrameShapeSpec, specs=SHAPE_SPECS)
    mass = Field(AMOUNT)
    inertia = Field(nullable(INERTIA), None)
    initial = Field(nullable(BodyInitialSpec.core_schema()), None, specs=(BodyInitialSpec,))
    visuals = Field(list_of(SHAPE), factory=list, specs=SHAPE_SPECS)

    def inertia_matrix(self) -> np.ndarray | None:
        """(3, 3) explicit inertia (symmetrised), or None when the shape gives it."""
        if self.inertia is None:
            return None
        matrix = np.array(self.inertia, dtype=float)
        if matrix.ndim == 1:
            return np.diag(matrix)
        return 0.5 * matrix + 0.5 * matrix.T
