"""The specs of the YAML scene format, format 1 (docs/formats.md), validated by pydantic-core.

Each spec (dojo_cli.scene.specs.Spec) lists its fields with their pydantic-core schemas,
written here once per type of the format (``REAL``, ``VECTOR3``, ``NAME``, ...): what
pydantic would generate from the matching annotations, without pydantic's schema
generation at import (issue 15: ~90 ms of every command's start-up).

Every spec forbids unknown keys, so a typo is an error rather than a silently
ignored field. Validation is staged the way pydantic runs it: each field's type
and range first, then each spec's own consistency (a joint's value counts
against its type, its ``@check`` methods), then the scene's cross-references
(names, the joint tree).

Specs report several problems at once by raising ``SpecProblems``, a
``ValueError`` carrying (relative field path, message) pairs; pydantic-core keeps
the exception in the error's context, where the loader finds it and turns each
pair into one ``Problem`` with a line number. Single-field problems are raised
as ``PydanticCustomError`` with a short message.

Unions whose members cannot be told apart by a ``type`` key (a scalar or a
list, a diagonal or a full inertia, the three ``against`` forms) use callable
discriminators; pydantic-core inserts the chosen tag into error locations, and
``UNION_TAGS`` lists those tags so that the loader can drop them from field paths.

The modules, bottom to top (each imports only those above it; ``tests/test_project.py``):
``field_types``, ``shapes``, ``bodies``, ``joints``, ``contacts``, ``controller``, ``solver``,
``scene``. This package's ``__init__`` only re-exports the public names.
"""

from __future__ import annotations

from dojo_cli.model.joint_types import JointType  # the joint spec's type (imported from here by the tests)
from dojo_cli.scene.schema.bodies import BodyInitialSpec, BodySpec, RESERVED_BODY_NAME
from dojo_cli.scene.schema.contacts import (
    AGAINST, BodyCollisionSpec, CONTACT_MODELS, CONTACT_SHAPE, CONTACT_SHAPE_SPECS, CollisionsSpec, ContactSpec,
    GROUND_NAME, GroundSpec, HalfSpaceSpec, HullShapeSpec, MAX_HULL_VERTICES,
)
from dojo_cli.scene.schema.controller import ActuatorSpec, ControllerSpec, ExternalForceSpec, GAINS, NONZERO_VECTOR3
from dojo_cli.scene.schema.field_types import (
    AMOUNT, AMOUNT_VECTOR3, BOUND, COLOR, CONTACT_SHAPE_TYPES, DIRECTION, EXTENDED_REAL, EXTENDED_REAL_LIST,
    FILE_PATH, FINITE_REAL, GAIN, INERTIA, INERTIA_SYMMETRY_RTOL, INTEGER, MAX_ITERATIONS, MAX_MAGNITUDE,
    MAX_NAME_LENGTH, MAX_PATH_LENGTH, MAX_STEPS, MIN_AMOUNT, MIN_DIRECTION_NORM, NAME, NONZERO_REAL,
    NON_NEGATIVE_REAL, POSITIVE_EXTENDED_REAL, POSITIVE_REAL, POSITIVE_VECTOR3, PRIMITIVE_SCALE, QUATERNION,
    QUATERNION_NORM_TOL, RANGE, REAL, REAL_LIST, SCALE, SHAPE_TYPES, SpecProblems, TEXT, UNION_TAGS,
    UNIT_INTERVAL_REAL, UNIT_ROUNDING, VECTOR3, value_text,
)
from dojo_cli.scene.schema.joints import (
    DAMPER_FORMS, INTERVAL, JointInitialSpec, JointLimitsSpec, JointSpec, RANDOM_ALIASES, RANDOM_COORDINATES,
)
from dojo_cli.scene.schema.scene import (
    MAPPING_OVERRIDE_FILE, OVERRIDE_FILE, SPEC_MODELS, SceneSource, SceneSpec, field_default,
)
from dojo_cli.scene.schema.shapes import (
    BoxShapeSpec, CapsuleShapeSpec, CombinedShapeSpec, CylinderShapeSpec, FrameShapeSpec, MeshShapeSpec,
    PART_SHAPE_SPECS, PyramidShapeSpec, SHAPE, SHAPE_SPECS, SphereShapeSpec,
)
from dojo_cli.scene.schema.solver import SolverSpec

# private, read here by tests/scene/test_specs.py (an abstract spec builds no validator) and
# tests/test_coverage.py (a scene field walked by path)
from dojo_cli.scene.schema.scene import _model_field  # noqa: F401
from dojo_cli.scene.schema.shapes import _ShapeSpec  # noqa: F401

__all__ = [
    "AGAINST", "AMOUNT", "AMOUNT_VECTOR3", "ActuatorSpec", "BOUND", "BodyCollisionSpec", "BodyInitialSpec",
    "BodySpec", "BoxShapeSpec", "COLOR", "CONTACT_MODELS", "CONTACT_SHAPE", "CONTACT_SHAPE_SPECS",
    "CONTACT_SHAPE_TYPES", "CapsuleShapeSpec", "CollisionsSpec", "CombinedShapeSpec", "ContactSpec",
    "ControllerSpec", "CylinderShapeSpec", "DAMPER_FORMS", "DIRECTION", "EXTENDED_REAL", "EXTENDED_REAL_LIST",
    "ExternalForceSpec", "FILE_PATH", "FINITE_REAL", "FrameShapeSpec", "GAIN", "GAINS", "GROUND_NAME",
    "GroundSpec", "HalfSpaceSpec", "HullShapeSpec", "INERTIA", "INERTIA_SYMMETRY_RTOL", "INTEGER", "INTERVAL",
    "JointInitialSpec", "JointLimitsSpec", "JointSpec", "JointType", "MAPPING_OVERRIDE_FILE",
    "MAX_HULL_VERTICES", "MAX_ITERATIONS", "MAX_MAGNITUDE", "MAX_NAME_LENGTH", "MAX_PATH_LENGTH", "MAX_STEPS",
    "MIN_AMOUNT", "MIN_DIRECTION_NORM", "MeshShapeSpec", "NAME", "NONZERO_REAL", "NONZERO_VECTOR3",
    "NON_NEGATIVE_REAL", "OVERRIDE_FILE", "PART_SHAPE_SPECS", "POSITIVE_EXTENDED_REAL", "POSITIVE_REAL",
    "POSITIVE_VECTOR3", "PRIMITIVE_SCALE", "PyramidShapeSpec", "QUATERNION", "QUATERNION_NORM_TOL",
    "RANDOM_ALIASES", "RANDOM_COORDINATES", "RANGE", "REAL", "REAL_LIST", "RESERVED_BODY_NAME", "SCALE",
    "SHAPE", "SHAPE_SPECS", "SHAPE_TYPES", "SPEC_MODELS", "SceneSource", "SceneSpec", "SolverSpec",
    "SpecProblems", "SphereShapeSpec", "TEXT", "UNION_TAGS", "UNIT_INTERVAL_REAL", "UNIT_ROUNDING", "VECTOR3",
    "field_default", "value_text",
]
