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
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic_core import PydanticCustomError, PydanticKnownError

from dojo_cli import _core
from dojo_cli.errors import Problem
from dojo_cli.model.joint_types import AXES_JOINTS, JointType, input_dimension
from dojo_cli.model.mechanism import joint_axes
from dojo_cli.scene.specs import (
    REQUIRED,
    Field,
    Spec,
    after,
    before,
    check,
    dict_of,
    ge,
    gt,
    le,
    list_of,
    literal,
    lt,
    nullable,
    plain,
    tagged_union,
)

# A quaternion whose norm is within this of 1 is accepted and normalised: it
# absorbs values typed with 3 to 4 significant digits (0.7071).
QUATERNION_NORM_TOL = 1e-3
# Norm deviations below this are rounding: such vectors are kept bit for bit,
# so that normalising is idempotent and a dumped scene reads back equal.
UNIT_ROUNDING = 1e-12
# Directions (joint axes, half-space normals) shorter than this have no meaningful
# normalisation.
MIN_DIRECTION_NORM = 1e-12
# Relative tolerance on the symmetry of an explicit 3x3 inertia.
INERTIA_SYMMETRY_RTOL = 1e-9

# Numbers. Every finite number of a scene is at most MAX_MAGNITUDE in magnitude, and
# every positive physical amount (mass, timestep, duration, shape lengths, inertia) at
# least MIN_AMOUNT. Nothing physical in SI units comes near either (the observable
# universe is ~1e53 kg and ~1e27 m), and within them a product or quotient of any three
# scene numbers (an inertia m a^2, a weight m g h, a rate 1/h) stays inside double
# precision (1e+-308), so deriving a quantity never overflows; the builder still checks
# each quantity it derives against the same bounds (dojo_cli.scene.builder). Directions
# and quaternions are exempt: they are normalised (safely, scaled first).
MAX_MAGNITUDE = 1e100
MIN_AMOUNT = 1.0 / MAX_MAGNITUDE
# Most steps a scene may ask for (steps, or duration / timestep, which the builder
# checks after the division): 10^9 states of one body are 100 GB, so more is a typo.
MAX_STEPS = 10**9
# Most iterations of any solver loop: 2,000 times Dojo's default (50), and the core
# keeps a record row per iteration (max_iter 10^5: a few MB).
MAX_ITERATIONS = 10**5
# Names end up in storage files, messages and dotted --set paths; they are printable
# text (no NUL, newline or other control character) of at most this many characters.
MAX_NAME_LENGTH = 256
# File paths in a scene: printable, at most PATH_MAX (Linux) characters.
MAX_PATH_LENGTH = 4096

RESERVED_BODY_NAME = "origin"
OVERRIDE_FILE = "--set"
"""The "file" named by problems in fields set by overrides."""
MAPPING_OVERRIDE_FILE = "overrides"
"""The "file" of overrides given as a mapping (``load_scene(..., overrides={...})`` in Python,
where there is no ``--set``)."""
SHAPE_TYPES = ("box", "sphere", "cylinder", "capsule", "pyramid", "mesh", "frame", "combined")
# Shapes a contact may give its body beyond the body shapes (a URDF mesh's convex hull).
CONTACT_SHAPE_TYPES = ("hull",)
# Contact models (docs/physics.md): impact (no friction), linear (pyramid), nonlinear (cone):
# the core's names (core/maximal/contact_params.h), listed alphabetically in messages.
CONTACT_MODELS = tuple(sorted(_core.CONTACT_MODELS))
# The word naming the ground in ``collisions.exclude`` pairs.
GROUND_NAME = "ground"
# Most vertices of a hull (each is a contact): a few dozen make a mesh (the importer
# reduces to HULL_VERTICES, dojo_cli.scene.urdf), a few hundred would make a step slow.
MAX_HULL_VERTICES = 256

# Tags of the callable discriminators below (angle brackets keep them apart from
# any scene key).
_SCALAR = "<scalar>"
_LIST = "<list>"
_MAPPING = "<mapping>"
_DIAGONAL = "<diagonal>"
_MATRIX = "<matrix>"
_GROUND = "<ground>"
_HALF_SPACE = "<half-space>"
_BODY = "<body>"
# Every tag pydantic may insert into an error location: the callable ones, and
# the shape types of the shape union (discriminated by its ``type`` field).
UNION_TAGS = frozenset(
    (_SCALAR, _LIST, _MAPPING, _DIAGONAL, _MATRIX, _GROUND, _HALF_SPACE, _BODY) + SHAPE_TYPES + CONTACT_SHAPE_TYPES
)

# Longest rendering of an input value inside a message.
_MAX_VALUE_TEXT = 40
# Most names listed in "unknown body" messages.
_MAX_LISTED_NAMES = 12


class SpecProblems(ValueError):
    """Several problems found by one model validator.

    Attributes:
        problems: (field path relative to the validated model, message) pairs.
    """

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = list(problems)
        super().__init__("; ".join(f"{path}: {message}" for path, message in self.problems))


def value_text(value: Any) -> str:
    """Short YAML-like rendering of an input value for error messages."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, int) and value.bit_length() > 4000:
        # str() refuses integers of more than 4,300 digits
        text = f"an integer of about {value.bit_length() * math.log10(2):.0f} digits"
    elif isinstance(value, Mapping):
        text = "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, (list, tuple, np.ndarray)):
        text = "[" + ", ".join(value_text(v) for v in list(value)) + "]"
    else:
        text = str(value)
    return text if len(text) <= _MAX_VALUE_TEXT else text[: _MAX_VALUE_TEXT - 3] + "..."


def _invalid(message: str) -> PydanticCustomError:
    """A validation error with exactly this message."""
    return PydanticCustomError("scene", "{message}", {"message": message})


def _entries(value: Any) -> list | None:
    """The entries of a list-like input (list, tuple, array), or None."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


def _normalised(values: list[float], norm: float) -> list[float]:
    """values / norm, or values unchanged when norm is 1 up to rounding."""
    if abs(norm - 1.0) <= UNIT_ROUNDING:
        return list(values)
    return [v / norm for v in values]


# ---------------------------------------------------------------- field types


def _number_not_bool(value: Any) -> Any:
    # pydantic reads true/false as 1/0; in a scene that is always a mistake
    if isinstance(value, bool):
        raise _invalid(f"must be a number, got {value_text(value)}")
    # an integer beyond every float would be reported as "not a number"
    if isinstance(value, int) and abs(value) > MAX_MAGNITUDE:
        raise _invalid(f"must be at most {MAX_MAGNITUDE:g} in magnitude, got {value_text(value)}")
    return value


def _integer_not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise _invalid(f"must be an integer, got {value_text(value)}")
    return value


def _not_nan(value: float) -> float:
    if math.isnan(value):
        raise _invalid("must be a number, got nan")
    return value


def _within_magnitude(value: float) -> float:
    if math.isfinite(value) and abs(value) > MAX_MAGNITUDE:
        raise _invalid(f"must be at most {MAX_MAGNITUDE:g} in magnitude, got {value:g}")
    return value


def _at_least_amount(value: float) -> float:
    if value < MIN_AMOUNT:
        raise _invalid(f"must be at least {MIN_AMOUNT:g}, got {value:g}")
    return value


def _finite(value: float) -> float:
    # (pydantic's allow_inf_nan=False after other validators: the same error)
    if not math.isfinite(value):
        raise PydanticKnownError("finite_number")
    return value


_FLOAT = {"type": "float"}
_NUMBER = before(_number_not_bool, _FLOAT)
FINITE_REAL = after(_finite, _NUMBER)
"""Any finite number (the entries of a direction, which is normalised)."""
REAL = after(_within_magnitude, FINITE_REAL)
"""A finite number of magnitude at most MAX_MAGNITUDE."""
EXTENDED_REAL = after(_within_magnitude, after(_not_nan, _NUMBER))
"""A number that may be infinite (written ``.inf`` in YAML), never nan; finite ones as REAL."""
POSITIVE_REAL = gt(0, REAL)
AMOUNT = after(_at_least_amount, POSITIVE_REAL)
"""A positive physical amount (mass, timestep, length, inertia): in [MIN_AMOUNT, MAX_MAGNITUDE]."""
NON_NEGATIVE_REAL = ge(0, REAL)
UNIT_INTERVAL_REAL = le(1, ge(0, REAL))
INTEGER = before(_integer_not_bool, {"type": "int"})


def _non_empty(value: str) -> str:
    if not value.strip():
        raise _invalid("must not be empty")
    return value


def _control_character(value: str, allowed: str = "") -> str | None:
    """A message naming the first character of ``value`` that is not printable, or None."""
    for index, character in enumerate(value):
        if not character.isprintable() and character not in allowed:
            return f"must be printable text, got {character!r} (U+{ord(character):04X}) at character {index + 1}"
    return None


def _name_text(value: str) -> str:
    problem = _control_character(value)
    if problem is not None:
        raise _invalid(problem)
    if len(value) > MAX_NAME_LENGTH:
        raise _invalid(f"must be at most {MAX_NAME_LENGTH} characters, got {len(value):,}")
    return value


def _path_text(value: str) -> str:
    problem = _control_character(value)
    if problem is not None:
        raise _invalid(problem)
    if len(value) > MAX_PATH_LENGTH:
        raise _invalid(f"must be a path of at most {MAX_PATH_LENGTH} characters, got {len(value):,}")
    return value


def _free_text(value: str) -> str:
    # tabs and line breaks belong in prose; other control characters are garbage
    problem = _control_character(value, allowed="\t\n\r")
    if problem is not None:
        raise _invalid(problem)
    return value


def _file_name_safe(value: str) -> str:
    # the scene name is the default output file name (simulate writes <name>.h5)
    if "/" in value or "\\" in value or value in (".", ".."):
        raise _invalid(f"must not contain / or \\ (it names the output file), got {value_text(value)}")
    return value


_STR = {"type": "str"}
NAME = after(_name_text, after(_non_empty, _STR))
"""A name: not blank, printable (no NUL, newline or other control character), at most MAX_NAME_LENGTH."""
FILE_PATH = after(_path_text, after(_non_empty, _STR))
"""A file path: not blank, printable, at most MAX_PATH_LENGTH characters."""
TEXT = after(_free_text, _STR)
"""Free text: printable, with tabs and line breaks."""


def _list_entries(value: Any) -> list:
    entries = _entries(value)
    if entries is None:
        raise _invalid(f"must be a list of numbers, got {value_text(value)}")
    return entries


REAL_LIST = before(_list_entries, list_of(REAL))
EXTENDED_REAL_LIST = before(_list_entries, list_of(EXTENDED_REAL))


def _three_entries(value: Any) -> list:
    entries = _entries(value)
    if entries is None:
        raise _invalid(f"must be a list of 3 numbers, got {value_text(value)}")
    if len(entries) != 3:
        raise _invalid(f"must have 3 entries, got {len(entries)}")
    return entries


VECTOR3 = before(_three_entries, list_of(REAL))
"""Exactly three finite numbers."""


def _two_entries(value: Any) -> list:
    entries = _entries(value)
    if entries is None:
        raise _invalid(f"must be a list of 2 numbers [lower, upper], got {value_text(value)}")
    if len(entries) != 2:
        raise _invalid(f"must have 2 entries [lower, upper], got {len(entries)}")
    return entries


RANGE = before(_two_entries, list_of(REAL))
"""[lower, upper]: two finite numbers (their order checked where used)."""
POSITIVE_VECTOR3 = before(_three_entries, list_of(POSITIVE_REAL))
AMOUNT_VECTOR3 = before(_three_entries, list_of(AMOUNT))


def _unit_direction(value: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in value))
    if math.isfinite(norm) and norm > 1e-150:
        if norm < MIN_DIRECTION_NORM:
            raise _invalid(f"must be nonzero, got {value_text(value)}")
        return _normalised(value, norm)
    # the squares overflowed (entries past 1e154) or underflowed: scale by the largest
    # entry first, which keeps every step finite
    scale = max(abs(v) for v in value)
    if scale < MIN_DIRECTION_NORM:
        raise _invalid(f"must be nonzero, got {value_text(value)}")
    scaled = [v / scale for v in value]
    unit = math.sqrt(sum(v * v for v in scaled))  # in [1, sqrt(3)]
    return [v / unit for v in scaled]


DIRECTION = after(_unit_direction, before(_three_entries, list_of(FINITE_REAL)))
"""A nonzero 3-vector of any finite scale, normalised to unit length."""

_QUATERNION_TEXT = "must be a unit quaternion [w, x, y, z]"


def _four_entries(value: Any) -> list:
    entries = _entries(value)
    if entries is None:
        raise _invalid(f"{_QUATERNION_TEXT}, got {value_text(value)}")
    if len(entries) != 4:
        raise _invalid(f"{_QUATERNION_TEXT}, got {len(entries)} entries")
    return entries


def _unit_quaternion(value: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in value))
    if abs(norm - 1.0) > QUATERNION_NORM_TOL:
        raise _invalid(f"{_QUATERNION_TEXT}, got norm {norm:.6g}")
    return _normalised(value, norm)


QUATERNION = after(_unit_quaternion, before(_four_entries, list_of(REAL)))
"""Four finite numbers [w, x, y, z] of norm 1 +- QUATERNION_NORM_TOL, normalised."""


def _color_entries(value: Any) -> list:
    entries = _entries(value)
    if entries is None or len(entries) not in (3, 4):
        got = f"{len(entries)} entries" if entries is not None else value_text(value)
        raise _invalid(f"must be [r, g, b] or [r, g, b, a], got {got}")
    return entries


def _rgba(value: list[float]) -> list[float]:
    return value + [1.0] if len(value) == 3 else value


COLOR = after(_rgba, before(_color_entries, list_of(UNIT_INTERVAL_REAL)))
"""[r, g, b] or [r, g, b, a] in [0, 1], stored as RGBA (alpha 1 when not given)."""


def _scalar_or_list_tag(value: Any) -> str:
    return _LIST if _entries(value) is not None else _SCALAR


GAIN = tagged_union(_scalar_or_list_tag, {_SCALAR: NON_NEGATIVE_REAL, _LIST: list_of(NON_NEGATIVE_REAL)})
"""A number >= 0, or a list of them (one per free coordinate)."""

POSITIVE_EXTENDED_REAL = gt(0, EXTENDED_REAL)

BOUND = tagged_union(_scalar_or_list_tag, {_SCALAR: POSITIVE_EXTENDED_REAL, _LIST: list_of(POSITIVE_EXTENDED_REAL)})
"""A bound > 0 (``.inf`` for none), or a list of them (one per free coordinate)."""

def _nonzero(value: float) -> float:
    if value == 0:
        raise _invalid("must be nonzero, got 0")
    return value


NONZERO_REAL = after(_nonzero, REAL)


SCALE = tagged_union(_scalar_or_list_tag, {_SCALAR: POSITIVE_REAL, _LIST: before(_three_entries, list_of(NONZERO_REAL))})
# A primitive's scale multiplies its dimensions (uniform, or per axis of the shape frame),
# so it must be positive: a mirrored box or sphere is the same solid.
PRIMITIVE_SCALE = tagged_union(_scalar_or_list_tag, {_SCALAR: POSITIVE_REAL,
                                                      _LIST: before(_three_entries, list_of(POSITIVE_REAL))})
"""A uniform scale > 0, or one per axis (nonzero: a negative one mirrors, as URDF meshes do)."""


def _inertia_tag(value: Any) -> str:
    rows = _entries(value) or []
    return _MATRIX if any(_entries(row) is not None for row in rows) else _DIAGONAL


def _inertia_matrix_shape(value: Any) -> list:
    rows = [_entries(row) for row in _entries(value)]
    if len(rows) != 3 or any(row is None or len(row) != 3 for row in rows):
        raise _invalid(f"must be 3 numbers (the diagonal) or a 3x3 list, got {value_text(value)}")
    return rows


def _symmetric_positive_definite(rows: list[list[float]]) -> list[list[float]]:
    matrix = np.array(rows)
    asymmetry = np.abs(matrix - matrix.T)
    if asymmetry.max() > INERTIA_SYMMETRY_RTOL * np.abs(matrix).max():
        i, j = np.unravel_index(np.argmax(asymmetry), asymmetry.shape)
        raise _invalid(f"must be symmetric, got [{i}][{j}] = {matrix[i, j]:g} but [{j}][{i}] = {matrix[j, i]:g}")
    # halves first: m + m.T overflows for entries past half the largest float
    eigenvalues = np.linalg.eigvalsh(0.5 * matrix + 0.5 * matrix.T)
    shown = ", ".join(f"{e:.4g}" for e in eigenvalues)
    if eigenvalues.min() <= 0.0:
        raise _invalid(f"must be positive definite, got eigenvalues [{shown}]")
    if eigenvalues.min() < MIN_AMOUNT:
        raise _invalid(f"must have eigenvalues of at least {MIN_AMOUNT:g}, got [{shown}]")
    return rows


def _diagonal_entries(value: Any) -> list:
    entries = _entries(value)
    if entries is None or len(entries) != 3:
        raise _invalid(f"must be 3 numbers (the diagonal) or a 3x3 list, got {value_text(value)}")
    return entries


INERTIA = tagged_union(_inertia_tag, {
    _DIAGONAL: before(_diagonal_entries, list_of(AMOUNT)),
    _MATRIX: after(_symmetric_positive_definite, before(_inertia_matrix_shape, list_of(list_of(REAL)))),
})
"""Central inertia: 3 positive numbers (diagonal) or a symmetric positive-definite 3x3 list."""


def _zero_vector() -> list[float]:
    return [0.0, 0.0, 0.0]


def _identity_quaternion() -> list[float]:
    return [1.0, 0.0, 0.0, 0.0]


# --------------------------------------------------------------------- shapes


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


# --------------------------------------------------------------------- bodies


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


# --------------------------------------------------------------------- joints


def _count_message(n: int, joint_type: JointType, got: int) -> str:
    """"must have n values for a <type> joint (its free coordinates), got m"."""
    article = "an" if joint_type.value[0] in "aeiou" else "a"
    values = "value" if n == 1 else "values"
    return f"must have {n} {values} for {article} {joint_type.value} joint (its free coordinates), got {got}"


class JointLimitsSpec(Spec):
    """Bounds on a joint's free coordinates (``-.inf``/``.inf`` for none)."""

    lower = Field(EXTENDED_REAL_LIST)
    upper = Field(EXTENDED_REAL_LIST)

    @check
    def _ordered(self) -> JointLimitsSpec:
        # Drake's Joint::set_*_limits checks, its condition text kept (docs/planar.md)
        if len(self.upper) != len(self.lower):
            message = (f"must have as many values as lower ({len(self.lower)}), got {len(self.upper)} "
                       "(condition 'lower_limits.size() == upper_limits.size()' failed)")
            raise SpecProblems([("upper", message)])
        problems = [
            (f"lower.{i}", f"must be <= upper ({low:g} > {high:g}) "
                           "(condition '(lower_limits.array() <= upper_limits.array()).all()' failed)")
            for i, (low, high) in enumerate(zip(self.lower, self.upper))
            if low > high
        ]
        if problems:
            raise SpecProblems(problems)
        return self


# How the step discretises dampers (core/maximal/residual.h): second order (midpoint), or
# first order and L-stable (implicit: stiff damping at large steps); the core's names.
DAMPER_FORMS = _core.DAMPER_FORMS


def _interval(value: Any) -> list:
    entries = _entries(value)
    if entries is None or len(entries) != 2:
        raise _invalid(f"must be an interval [lower, upper], got {value_text(value)}")
    return entries


def _ordered_interval(value: list[float]) -> list[float]:
    if value[0] > value[1]:
        raise _invalid(f"must have lower <= upper, got [{value[0]:g}, {value[1]:g}]")
    return value


INTERVAL = after(_ordered_interval, before(_interval, list_of(REAL)))
"""[lower, upper], finite, lower <= upper."""

# The coordinates a random initial pose may name, per joint type (Drake's PlanarJoint:
# x, y, theta). ``qz`` is the coordinate's storage name, accepted as theta's alias.
RANDOM_COORDINATES: dict[JointType, tuple[str, ...]] = {JointType.PLANAR_AXIS: ("x", "y", "theta")}
RANDOM_ALIASES = {"qz": "theta"}


class JointInitialSpec(Spec):
    """A joint's initial minimal coordinates (None = zero).

    ``random``: a uniform random pose, coordinate -> [lower, upper] (planar_axis: ``x``,
    ``y``, ``theta``), drawn from the scene's ``seed``; it replaces those coordinates of
    ``position`` (Drake's random pose distribution; docs/planar.md).
    """

    position = Field(nullable(REAL_LIST), None)
    velocity = Field(nullable(REAL_LIST), None)
    random = Field(nullable(dict_of(INTERVAL)), None)


def _joint_type_name(value: Any) -> Any:
    if isinstance(value, JointType):
        return value
    names = ", ".join(t.value for t in JointType)
    if not isinstance(value, str):
        raise _invalid(f"must be a joint type name (one of: {names}), got {value_text(value)}")
    if value not in {t.value for t in JointType}:
        raise _invalid(f"unknown joint type {value!r} (one of: {names})")
    return value


def _drake_size_condition(path: str) -> str:
    """Drake's condition text for a limit vector of the wrong size ("" for other fields)."""
    kind = {"limits": "num_positions()", "velocity_limits": "num_velocities()",
            "acceleration_limits": "num_velocities()"}.get(path.split(".")[0])
    if kind is None:
        return ""
    return f" (condition '{path.split('.')[-1]}_limits.size() == {kind}' failed)"


def _type_from_dofs(data: Any) -> Any:
    """skydy's ``dofs: [x, rz]`` instead of ``type`` and ``axis`` (scene/dofs.py), and the
    held values of the others (``const_values``)."""
    if not isinstance(data, dict):
        return data
    if "dofs" not in data:
        if data.get("const_values") is not None:
            raise SpecProblems([("const_values", "goes with dofs (it holds the degrees of freedom dofs leaves out)")])
        return data
    from dojo_cli.scene.dofs import check_const_values, dofs_to_joint

    try:
        check_const_values(data["dofs"], data.get("const_values"))
    except ValueError as exc:
        raise SpecProblems([("const_values", str(exc))]) from None

    given = [k for k in ("type", "axis", "rotation_axis") if k in data]
    if given:
        raise SpecProblems([("dofs", f"give either dofs or {' and '.join(given)}, not both (dofs sets the type and axis)")])
    try:
        joint_type, axis, rotation_axis = dofs_to_joint(data["dofs"])
    except ValueError as exc:
        raise SpecProblems([("dofs", str(exc))]) from None
    out = {k: v for k, v in data.items() if k != "dofs"}
    out["type"], out["axis"] = joint_type.value, axis
    if rotation_axis is not None:
        out["rotation_axis"] = rotation_axis
    return out


class JointSpec(Spec):
    """A joint between a parent (a body or origin) and a child body.

    Attributes:
        name: unique joint name.
        type: one of the sixteen Dojo joint types.
        parent: parent body name, or "origin".
        child: child body name. The first joint naming a body as child is its
            tree joint; later ones close loops.
        axis: (3,) unit axis in the parent's joint frame.
        rotation_axis: (3,) the rotational element's own axis (None: ``axis``, Dojo's one
            axis for both elements); with it the free translations and rotations need not
            share an axis (skydy's ``[x, ry]``; docs/scenes.md "Joints by degrees of freedom").
        axes: a ``universal`` joint's two or a ``gimbal``'s three mutually orthogonal axes
            in the parent's joint frame (None: from ``axis`` a, (a, v1[, v2]) of its
            in-plane basis: axis z gives z, x, y); the rotation is R(a1, t1) R(a2, t2)
            [R(a3, t3)], the coordinates the angles (docs/scenes.md "Universal and gimbal joints").
        axis_names: names of those angles, one per axis (a URDF chain's joint names; None:
            ``NAME:t1``, ...): the minimal-coordinate layer's coordinate names.
        const_values: skydy's ``const_value``: constrained degrees of freedom held at a
            value, ``{y: 0.1, rx: 0.2}`` (names of scene/dofs.py, none of the free ones);
            translations in the parent body frame, rotations applied before the free ones
            (scene/dofs.py ``held_frame``).
        parent_vertex: (3,) joint point in the parent body frame (m).
        child_vertex: (3,) joint point in the child body frame (m).
        orientation_offset: (4,) joint frame in the parent frame, [w, x, y, z].
        spring: stiffness, scalar or one per free coordinate (>= 0).
        damper: damping, scalar or one per free coordinate (>= 0).
        armature: rotor inertia, scalar or one per free coordinate (>= 0; kg m^2 or kg):
            the kinetic energy 1/2 a theta_dot^2 of the coordinate's rate (MuJoCo's
            armature); modelled by the minimal-coordinate layer (integrator: rk4,
            ``dojo dynamics``), refused by the variational integrator (docs/physics.md).
        spring_offset: rest values of the free coordinates (None = zero).
        limits: bounds on the free coordinates.
        initial: initial minimal coordinates and velocities.
        effort_limit: largest force or torque per free coordinate (a URDF
            ``<limit effort>``); recorded, not enforced by the simulator.
        velocity_limit: largest speed per free coordinate (``<limit velocity>``);
            recorded, not enforced.
        velocity_limits, acceleration_limits: Drake's lower and upper velocity and
            acceleration limits per free coordinate; stored and reported, not enforced
            (as in Drake's dynamics).
        damper_form: ``midpoint`` or ``implicit``, the damper's discretisation (None:
            the scene's ``damper_form``; docs/physics.md "Joints" says which when).
        locked: Drake's Lock: the joint's free coordinates are held where they are
            (velocities zero, initial velocity set to zero); a no-op on a fixed joint
            (docs/scenes.md "Locked joints").
    """

    prepare = _type_from_dofs
    name = Field(NAME)
    # (the names are checked first; JointType(name) then only meets valid ones)
    type = Field(before(_joint_type_name, plain(JointType)))
    parent = Field(NAME)
    child = Field(NAME)
    axis = Field(DIRECTION, factory=lambda: [0.0, 0.0, 1.0])
    rotation_axis = Field(nullable(DIRECTION), None)
    axes = Field(nullable(list_of(DIRECTION)), None)
    axis_names = Field(nullable(list_of(NAME)), None)
    const_values = Field(nullable(dict_of(REAL)), None)
    parent_vertex = Field(VECTOR3, factory=_zero_vector)
    child_vertex = Field(VECTOR3, factory=_zero_vector)
    orientation_offset = Field(QUATERNION, factory=_identity_quaternion)
    spring = Field(GAIN, 0.0)
    damper = Field(GAIN, 0.0)
    armature = Field(GAIN, 0.0)
    spring_offset = Field(nullable(REAL_LIST), None)
    limits = Field(nullable(JointLimitsSpec.core_schema()), None, specs=(JointLimitsSpec,))
    initial = Field(nullable(JointInitialSpec.core_schema()), None, specs=(JointInitialSpec,))
    effort_limit = Field(nullable(BOUND), None)
    velocity_limit = Field(nullable(BOUND), None)
    velocity_limits = Field(nullable(JointLimitsSpec.core_schema()), None, specs=(JointLimitsSpec,))
    acceleration_limits = Field(nullable(JointLimitsSpec.core_schema()), None, specs=(JointLimitsSpec,))
    damper_form = Field(nullable(literal(*DAMPER_FORMS)), None)
    locked = Field({"type": "bool", "strict": True}, False)

    @check
    def _axes(self) -> JointSpec:
        count = AXES_JOINTS.get(JointType(self.type))
        if self.axis_names is not None:
            if count is None or len(self.axis_names) != count:
                raise SpecProblems([("axis_names", "one name per axis of a universal (2) or gimbal (3) joint, got "
                                                   f"{len(self.axis_names)}")])
            if len(set(self.axis_names)) != len(self.axis_names):
                raise SpecProblems([("axis_names", "the names must differ")])
        if self.axes is None:
            return self
        if count is None:
            kinds = " and ".join(t.value for t in AXES_JOINTS)
            raise SpecProblems([("axes", f"axes are for {kinds} joints; a {JointType(self.type).value} joint has "
                                         "`axis`")])
        try:
            joint_axes(self.type, self.axis, self.axes)
        except ValueError as exc:
            raise SpecProblems([("axes", str(exc))]) from None
        return self

    @check
    def _random_coordinates(self) -> JointSpec:
        if self.initial is None or self.initial.random is None:
            return self
        known = RANDOM_COORDINATES.get(JointType(self.type))
        if known is None:
            kinds = ", ".join(t.value for t in RANDOM_COORDINATES)
            raise SpecProblems([("initial.random", f"a random initial pose is for {kinds} joints, not {self.type.value}")])
        problems = []
        seen: dict[str, str] = {}
        for key in self.initial.random:
            name = RANDOM_ALIASES.get(key, key)
            if name not in known:
                problems.append((f"initial.random.{key}", f"unknown coordinate {key!r} (one of: {', '.join(known)})"))
            elif name in seen:
                problems.append((f"initial.random.{key}", f"names the same coordinate as {seen[name]!r}"))
            seen[name] = key
        if problems:
            raise SpecProblems(problems)
        return self

    def random_intervals(self) -> dict[int, tuple[float, float]]:
        """Free-coordinate index -> (lower, upper) of the random initial pose (empty: none)."""
        if self.initial is None or not self.initial.random:
            return {}
        known = RANDOM_COORDINATES[JointType(self.type)]
        out = {known.index(RANDOM_ALIASES.get(k, k)): (float(v[0]), float(v[1])) for k, v in self.initial.random.items()}
        return dict(sorted(out.items()))

    @check
    def _counts_match_type(self) -> JointSpec:
        n = input_dimension(self.type)
        given = {
            "spring": self.spring if isinstance(self.spring, list) else None,
            "damper": self.damper if isinstance(self.damper, list) else None,
            "armature": self.armature if isinstance(self.armature, list) else None,
            "effort_limit": self.effort_limit if isinstance(self.effort_limit, list) else None,
            "velocity_limit": self.velocity_limit if isinstance(self.velocity_limit, list) else None,
            "spring_offset": self.spring_offset,
            "limits.lower": self.limits.lower if self.limits else None,
            "limits.upper": self.limits.upper if self.limits else None,
            "initial.position": self.initial.position if self.initial else None,
            "initial.velocity": self.initial.velocity if self.initial else None,
        }
        for name in ("velocity_limits", "acceleration_limits"):
            limits = getattr(self, name)
            given[f"{name}.lower"] = limits.lower if limits else None
            given[f"{name}.upper"] = limits.upper if limits else None
        problems = [
            (path, _count_message(n, self.type, len(values)) + _drake_size_condition(path))
            for path, values in given.items()
            if values is not None and len(values) != n
        ]
        if self.velocity_limit is not None and self.velocity_limits is not None:
            problems.append(("velocity_limits", "give velocity_limit (a URDF bound) or velocity_limits, not both"))
        if problems:
            raise SpecProblems(problems)
        return self

    def _per_coordinate(self, value: float | list[float]) -> np.ndarray:
        if isinstance(value, list):
            return np.array(value, dtype=float)
        return np.full(input_dimension(self.type), float(value))

    def spring_values(self) -> np.ndarray:
        """(n,) spring stiffness per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.spring)

    def damper_values(self) -> np.ndarray:
        """(n,) damping per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.damper)

    def armature_values(self) -> np.ndarray:
        """(n,) rotor inertia per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.armature)

    def spring_offset_values(self) -> np.ndarray:
        """(n,) spring rest values of the free coordinates (zeros when not given)."""
        return self._per_coordinate(0.0 if self.spring_offset is None else self.spring_offset)


# ------------------------------------------------------------------- contacts


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
        shape: sphere, capsule, box or cylinder; or ``body``: that body's own shape
            (sphere, capsule, box or cylinder), the other fields unused.
        radius: sphere, capsule or cylinder radius (m); a box has none (0: the collision
            table's box is not rounded, so a radius given for a box is refused rather than ignored).
        offset: (3,) shape centre in the other body's frame (m).
        orientation_offset: the shape's orientation in the other body's frame [w, x, y, z]
            (a capsule's and a cylinder's axis is its z; a box may only be turned by quarter turns).
        height: capsule segment length, or cylinder height, along the shape's z axis (m).
        size: (3,) box edge lengths (m), required for a box.
    """

    body = Field(NAME)
    shape = Field(literal("sphere", "capsule", "box", "cylinder", "body"))
    radius = Field(NON_NEGATIVE_REAL, 0.0)
    offset = Field(VECTOR3, factory=_zero_vector)
    orientation_offset = Field(QUATERNION, factory=_identity_quaternion)
    height = Field(NON_NEGATIVE_REAL, 0.0)
    size = Field(nullable(POSITIVE_VECTOR3), None)

    @check
    def _box_has_size(self) -> BodyCollisionSpec:
        problems = []
        if self.shape == "box" and self.size is None:
            problems.append(("size", "field required for a box"))
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


# ------------------------------------------------------ controller and forces


def _gains_tag(value: Any) -> str:
    return _MAPPING if isinstance(value, Mapping) else _SCALAR


GAINS = tagged_union(_gains_tag, {_SCALAR: NON_NEGATIVE_REAL, _MAPPING: dict_of(list_of(NON_NEGATIVE_REAL))})
"""One gain >= 0 for every free coordinate, or per joint name one per free coordinate."""


class ControllerSpec(Spec):
    """Joint inputs (forces and torques, SI units, held over each step).

    Attributes:
        type: none, constant, pd or schedule.
        inputs: constant: per joint name, one value per free coordinate (with ``actuators``:
            per actuator name, one value).
        kp: pd: position gain, for all coordinates or per joint.
        kd: pd: velocity gain, for all coordinates or per joint.
        targets: pd: per joint, target minimal coordinates (default zero).
        velocity_targets: pd: per joint, target minimal velocities (default zero).
        file: schedule: CSV or .h5 input table; the loader makes it absolute,
            resolving a relative path against the scene file's folder.
        after_end: schedule: inputs after the table ends, zero or hold the last row.
        u0: linear: (nu,) the feedforward inputs (default zero).
        K: linear: (nu, 2 nf) the gain, one row per input, one column per entry of the
            minimal state (per joint [coordinates; velocities], dojo.maximal_to_minimal).
        y0: linear: (2 nf,) the minimal state the law regulates to.
    """

    type = Field(literal("none", "constant", "pd", "schedule", "linear"), "none")
    inputs = Field(dict_of(REAL_LIST), factory=dict)
    kp = Field(GAINS, 0.0)
    kd = Field(GAINS, 0.0)
    targets = Field(dict_of(REAL_LIST), factory=dict)
    velocity_targets = Field(dict_of(REAL_LIST), factory=dict)
    file = Field(nullable(FILE_PATH), None)
    after_end = Field(literal("zero", "hold"), "zero")
    u0 = Field(nullable(REAL_LIST), None)
    K = Field(nullable(list_of(REAL_LIST)), None)
    y0 = Field(nullable(REAL_LIST), None)

    @check
    def _schedule_has_file(self) -> ControllerSpec:
        if self.type == "schedule" and self.file is None:
            raise SpecProblems([("file", "field required for a schedule controller")])
        return self

    @check
    def _linear_fields(self) -> ControllerSpec:
        # the shapes against the model (nu inputs, 2 nf minimal state) are the builder's
        if self.type == "linear":
            missing = [(key, "field required for a linear controller") for key in ("K", "y0")
                       if getattr(self, key) is None]
            if missing:
                raise SpecProblems(missing)
        else:
            given = [(key, f"only for a linear controller (type is {self.type})") for key in ("u0", "K", "y0")
                     if getattr(self, key) is not None]
            if given:
                raise SpecProblems(given)
        return self

    def per_joint_tables(self) -> dict[str, dict[str, list[float]]]:
        """The fields given per joint name, by field name (gains only when given per joint)."""
        tables = {
            "inputs": self.inputs,
            "kp": self.kp,
            "kd": self.kd,
            "targets": self.targets,
            "velocity_targets": self.velocity_targets,
        }
        return {key: table for key, table in tables.items() if isinstance(table, dict)}


class ExternalForceSpec(Spec):
    """A force and torque on a body, applied while start <= t < stop.

    Attributes:
        body: the body pushed.
        force: (3,) N, in ``frame``.
        torque: (3,) N m, in ``frame``.
        vertex: (3,) application point in the body frame (m).
        frame: frame of force and torque, body or world.
        start: s, >= 0.
        stop: s, > start (``.inf`` for never).
    """

    body = Field(NAME)
    force = Field(VECTOR3, factory=_zero_vector)
    torque = Field(VECTOR3, factory=_zero_vector)
    vertex = Field(VECTOR3, factory=_zero_vector)
    frame = Field(literal("body", "world"), "body")
    start = Field(NON_NEGATIVE_REAL, 0.0)
    stop = Field(EXTENDED_REAL, math.inf)

    @check
    def _stop_after_start(self) -> ExternalForceSpec:
        if self.stop <= self.start:
            raise SpecProblems([("stop", f"must be > start ({self.stop:g} <= {self.start:g})")])
        return self


def _nonzero_vector(value: list[float]) -> list[float]:
    if not any(value):
        raise _invalid(f"must be nonzero, got {value_text(value)}")
    return value


NONZERO_VECTOR3 = after(_nonzero_vector, before(_three_entries, list_of(REAL)))
"""Three finite numbers, not all zero."""


class ActuatorSpec(Spec):
    """A named input (docs/scenes.md "Actuators"): one free coordinate of a joint, or a
    force and/or torque fixed in a body (body frame: they turn with the body).

    Attributes:
        name: unique among the actuators; names the input (controllers, storage, gradients).
        joint: joint actuator: the joint whose free coordinate it drives.
        coordinate: joint actuator: which free coordinate (0-based; default 0).
        body: body actuator: the body pushed.
        force: body actuator: (3,) force per unit input, body frame (N).
        point: body actuator: (3,) where the force acts, body frame from the centre of mass (m).
        torque: body actuator: (3,) torque per unit input, body frame (N m).
        gain: the input is multiplied by it (default 1).
        ctrl_range: [lower, upper] the input is clamped to before the gain, whatever
            gives it (the controller, a schedule, a constant): MuJoCo's ``ctrlrange``.
    """

    name = Field(NAME)
    joint = Field(nullable(NAME), None)
    coordinate = Field(nullable(ge(0, INTEGER)), None)
    body = Field(nullable(NAME), None)
    force = Field(nullable(NONZERO_VECTOR3), None)
    point = Field(nullable(VECTOR3), None)
    torque = Field(nullable(NONZERO_VECTOR3), None)
    gain = Field(NONZERO_REAL, 1.0)
    ctrl_range = Field(nullable(RANGE), None)

    @check
    def _one_kind(self) -> ActuatorSpec:
        problems = []
        if self.ctrl_range is not None and not self.ctrl_range[0] <= self.ctrl_range[1]:
            problems.append(("ctrl_range", f"lower {self.ctrl_range[0]:g} is above upper {self.ctrl_range[1]:g}"))
        if self.joint is not None and self.body is not None:
            problems.append(("body", "give either joint (a joint actuator) or body (a body actuator), not both"))
        elif self.joint is None and self.body is None:
            problems.append(("joint", "field required: joint (with coordinate) or body (with force and/or torque)"))
        elif self.joint is not None:
            for key in ("force", "point", "torque"):
                if getattr(self, key) is not None:
                    problems.append((key, "only for a body actuator (this one drives a joint)"))
        else:
            if self.coordinate is not None:
                problems.append(("coordinate", "only for a joint actuator (this one pushes a body)"))
            if self.force is None and self.torque is None:
                problems.append(("force", "a body actuator needs a force or a torque (or both)"))
            if self.point is not None and self.force is None:
                problems.append(("point", "the point of a force: give force too"))
        if problems:
            raise SpecProblems(problems)
        return self


# The core's solver defaults (core/maximal/data.h SolverOptions: Dojo's), read once.
_SOLVER_DEFAULTS = _core.SolverOptions()


class SolverSpec(Spec):
    """The scene's default solver options (Dojo's names and defaults, SolverOptions)."""

    rtol = Field(POSITIVE_REAL, _SOLVER_DEFAULTS.rtol)
    btol = Field(POSITIVE_REAL, _SOLVER_DEFAULTS.btol)
    # rtol, btol relative to the scene's scales (default) or absolute, SI (docs/physics.md)
    tolerances = Field(literal("relative", "absolute"), "relative" if _SOLVER_DEFAULTS.relative else "absolute")
    max_iter = Field(le(MAX_ITERATIONS, ge(1, INTEGER)), _SOLVER_DEFAULTS.max_iter)
    max_ls = Field(le(MAX_ITERATIONS, ge(0, INTEGER)), _SOLVER_DEFAULTS.max_ls)
    ls_scale = Field(lt(1, gt(0, REAL)), _SOLVER_DEFAULTS.ls_scale)
    undercut = Field(gt(0, EXTENDED_REAL), _SOLVER_DEFAULTS.undercut)
    no_progress_max = Field(le(MAX_ITERATIONS, ge(1, INTEGER)), _SOLVER_DEFAULTS.no_progress_max)
    no_progress_undercut = Field(gt(1, REAL), _SOLVER_DEFAULTS.no_progress_undercut)
    # start a run's next step from the previous step's cones (core/maximal/step.h, "Warm start")
    warm_start = Field({"type": "bool", "strict": True}, _SOLVER_DEFAULTS.warm_start)


# ---------------------------------------------------------------------- scene


@dataclass(frozen=True)
class SceneSource:
    """Where a scene came from, so that problems found later point at it.

    Attributes:
        file: the file as named in problems ("scene.yaml", "<string>").
        base_dir: folder that relative paths in the scene resolve against
            (None: the current directory).
        lines: dotted field path -> 1-based line of that field in ``file``.
        overrides: field paths set by overrides, in index form
            (``joints.0.spring``) -> as the user wrote them (``joints.hinge.spring``).
        override_origins: the same paths -> (file, line) the override was written at
            (``--set``, None unless it came from a preset file: ``--config``).
    """

    file: str = "<scene>"
    base_dir: Path | None = None
    lines: Mapping[str, int] = field(default_factory=dict)
    overrides: Mapping[str, str] = field(default_factory=dict)
    override_origins: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)

    def line(self, path: str) -> int | None:
        """Line of a field, or of its closest enclosing field that is in the file."""
        while path not in self.lines:
            if not path:
                return None
            path = path.rpartition(".")[0]
        return self.lines[path]

    def problem(self, path: str, message: str) -> Problem:
        """A Problem at a field: in the file, or on ``--set`` when an override set it."""
        matches = [key for key in self.overrides if path == key or path.startswith(key + ".")]
        if matches:
            key = max(matches, key=len)
            file, line = self.override_origins.get(key, (OVERRIDE_FILE, None))
            return Problem(file, line, self.overrides[key] + path[len(key) :], message)
        return Problem(self.file, self.line(path), path, message)

    def derived_problem(self, sources: list[str], message: str) -> Problem:
        """A problem with a quantity derived from the fields ``sources``.

        Reported on the first source set by an override (on ``--set``, at the overridden
        field, which may lie inside the source: ``bodies.0.shape.size``), else on the
        first source's line in the file.
        """
        for path in sources:
            for key in self.overrides:
                if key == path or path.startswith(key + "."):
                    return self.problem(path, message)
                if key.startswith(path + "."):
                    return self.problem(key, message)
        return self.problem(sources[0], message)

    def resolve_path(self, path: str | os.PathLike) -> Path:
        """Absolute path of a file named in the scene (relative to the scene's folder)."""
        candidate = Path(path).expanduser()
        if candidate.is_absolute():
            return candidate
        return Path(os.path.abspath((self.base_dir or Path.cwd()) / candidate))


def _format_version(value: Any) -> Any:
    if isinstance(value, bool) or value != 1:
        raise _invalid(f"unsupported scene format {value_text(value)} (this version reads format 1)")
    return value


def _listed(names: list[str]) -> str:
    """Names for a message: "a, b, c", shortened when long, "none" when empty."""
    names = list(dict.fromkeys(names))
    if not names:
        return "none"
    shown = ", ".join(names[:_MAX_LISTED_NAMES])
    return shown + ", ..." if len(names) > _MAX_LISTED_NAMES else shown


class SceneSpec(Spec):
    """A whole scene, as validated from a YAML file.

    Two scenes are equal when their fields are, wherever they were loaded from.

    Attributes:
        format: scene format version, 1.
        name: scene name.
        timestep: s, > 0.
        gravity: (3,) m/s^2, world frame.
        duration: s, or None (at most one of duration and steps).
        steps: number of steps, or None.
        seed: seed of anything random in the scene.
        solver: default solver options.
        bodies: at least one body.
        joints: joints in order (a body's first joint as child is its tree joint).
        contacts: contact spheres and shape pairs.
        collisions: collisions asked for wholesale.
        ground: the half-space ``against: ground`` and ``collisions:`` meet (z >= 0 by default).
        controller: joint inputs.
        external: external forces.
        actuators: the inputs u, in order (none: one per free coordinate of each joint).
        damper_form: ``midpoint`` (default, second order) or ``implicit`` (first
            order, L-stable): how joints' dampers are discretised unless a joint says.
        initial_velocity: what the initial velocities of bodies and joints mean: ``t0``
            (default) the velocities at t = 0, ``midpoint`` Dojo's convention, the
            integrator's midpoint velocity over [-h, 0] (docs/physics.md).
        integrator: ``variational`` (Dojo's, default) or ``rk4`` (the Munthe-Kaas RK4 in
            minimal coordinates, RigidBodyDynamics.jl's simulate; docs/minimal.md).
        description: free text.
    """

    format = Field(before(_format_version, literal(1)), 1)
    name = Field(after(_file_name_safe, NAME))
    timestep = Field(AMOUNT)
    gravity = Field(VECTOR3, factory=lambda: [0.0, 0.0, -9.81])
    duration = Field(nullable(AMOUNT), None)
    steps = Field(nullable(le(MAX_STEPS, gt(0, INTEGER))), None)
    seed = Field(ge(0, INTEGER), 0)
    solver = Field(SolverSpec.core_schema(), factory=SolverSpec, specs=(SolverSpec,))
    bodies = Field(list_of(BodySpec.core_schema(), min_length=1), specs=(BodySpec,))
    joints = Field(list_of(JointSpec.core_schema()), factory=list, specs=(JointSpec,))
    contacts = Field(list_of(ContactSpec.core_schema()), factory=list, specs=(ContactSpec,))
    collisions = Field(CollisionsSpec.core_schema(), factory=CollisionsSpec, specs=(CollisionsSpec,))
    ground = Field(GroundSpec.core_schema(), factory=GroundSpec, specs=(GroundSpec,))
    controller = Field(ControllerSpec.core_schema(), factory=ControllerSpec, specs=(ControllerSpec,))
    external = Field(list_of(ExternalForceSpec.core_schema()), factory=list, specs=(ExternalForceSpec,))
    actuators = Field(list_of(ActuatorSpec.core_schema()), factory=list, specs=(ActuatorSpec,))
    damper_form = Field(literal(*DAMPER_FORMS), "midpoint")
    initial_velocity = Field(literal("t0", "midpoint"), "t0")
    integrator = Field(literal("variational", "rk4", "variational4"), "variational")
    description = Field(TEXT, "")

    # (where it was loaded from is kept beside the fields: two scenes are equal when
    # their fields are, as Spec compares them)

    @check
    def _cross_references(self) -> SceneSpec:
        problems: list[tuple[str, str]] = []
        if self.steps is not None and self.duration is not None:
            problems.append(("steps", "give either steps or duration, not both"))
        for section, items in (("bodies", self.bodies), ("joints", self.joints), ("contacts", self.contacts),
                               ("actuators", self.actuators)):
            problems += _duplicate_names(section, items)
        problems += self._joint_references()
        problems += self._actuator_references()
        problems += self._tree_problems()
        problems += self._body_references()
        problems += self._controller_references()
        if problems:
            raise SpecProblems(problems)
        return self

    def _joint_references(self) -> list[tuple[str, str]]:
        bodies = [b.name for b in self.bodies]
        problems = []
        for i, joint in enumerate(self.joints):
            if joint.parent != RESERVED_BODY_NAME and joint.parent not in bodies:
                message = f"unknown body {joint.parent!r} (bodies: {_listed(bodies)}; or origin)"
                problems.append((f"joints.{i}.parent", message))
            if joint.child == RESERVED_BODY_NAME:
                problems.append((f"joints.{i}.child", "origin cannot be a child (it is the fixed world frame)"))
            elif joint.child not in bodies:
                problems.append((f"joints.{i}.child", f"unknown body {joint.child!r} (bodies: {_listed(bodies)})"))
            elif joint.child == joint.parent:
                problems.append((f"joints.{i}.child", f"is the same body as the parent ({joint.child!r})"))
        return problems

    def _tree_problems(self) -> list[tuple[str, str]]:
        """Each body hangs from its first joint as child; that tree must reach origin."""
        tree_parent: dict[str, str] = {}
        named_as_child = set()
        for joint in self.joints:
            named_as_child.add(joint.child)
            if joint.child != joint.parent:
                tree_parent.setdefault(joint.child, joint.parent)
        # body -> None when its parent chain reaches origin, else the loop it
        # runs into ("" when it ends at an unknown or unattached body, which
        # are reported on their own)
        outcome: dict[str, str | None] = {RESERVED_BODY_NAME: None}
        problems = []
        for i, body in enumerate(self.bodies):
            if body.name not in named_as_child:
                problems.append(
                    (f"bodies.{i}", f"body {body.name!r} is attached by no joint; add a floating joint to make it free")
                )
                continue
            chain: list[str] = []
            name = body.name
            while name not in outcome and name in tree_parent and name not in chain:
                chain.append(name)
                name = tree_parent[name]
            if name in outcome:
                result = outcome[name]
            elif name in chain:
                result = " <- ".join(chain[chain.index(name) :] + [name])
            else:
                result = ""
            for link in chain:
                outcome[link] = result
            if result:
                problems.append(
                    (
                        f"bodies.{i}",
                        f"body {body.name!r} is not connected to origin: its parent chain runs into the loop "
                        f"{result} (a body hangs from the first joint naming it as child; list a joint "
                        "leading towards origin first)",
                    )
                )
        return problems

    def _body_references(self) -> list[tuple[str, str]]:
        bodies = [b.name for b in self.bodies]
        problems = []

        def check(path: str, name: str) -> None:
            if name not in bodies:
                problems.append((path, f"unknown body {name!r} (bodies: {_listed(bodies)})"))

        for i, contact in enumerate(self.contacts):
            check(f"contacts.{i}.body", contact.body)
            if isinstance(contact.against, BodyCollisionSpec):
                check(f"contacts.{i}.against.body", contact.against.body)
                if contact.against.body == contact.body:
                    problems.append((f"contacts.{i}.against.body", "a body cannot collide with itself"))
        for i, pair in enumerate(self.collisions.exclude):
            for k, name in enumerate(pair):
                if name != GROUND_NAME and name not in bodies:
                    problems.append((f"collisions.exclude.{i}.{k}", f"unknown body {name!r} (bodies: {_listed(bodies)}; or ground)"))
        for i, force in enumerate(self.external):
            check(f"external.{i}.body", force.body)
        return problems

    def _actuator_references(self) -> list[tuple[str, str]]:
        types = {j.name: j.type for j in self.joints}
        bodies = [b.name for b in self.bodies]
        problems = []
        for i, a in enumerate(self.actuators):
            if a.joint is not None:
                if a.joint not in types:
                    problems.append((f"actuators.{i}.joint", f"unknown joint {a.joint!r} (joints: {_listed(list(types))})"))
                    continue
                n = input_dimension(types[a.joint])
                if (a.coordinate or 0) >= n:
                    kind = types[a.joint].value if hasattr(types[a.joint], "value") else types[a.joint]
                    problems.append((f"actuators.{i}.coordinate",
                                     f"must be in 0..{n - 1} (joint {a.joint!r}, {kind}, has {n} free "
                                     f"coordinate{'s' if n != 1 else ''}), got {a.coordinate}" if n else
                                     f"joint {a.joint!r} ({kind}) has no free coordinate to drive"))
            elif a.body is not None and a.body not in bodies:
                problems.append((f"actuators.{i}.body", f"unknown body {a.body!r} (bodies: {_listed(bodies)})"))
        return problems

    def _controller_references(self) -> list[tuple[str, str]]:
        types = {j.name: j.type for j in self.joints}
        actuators = [a.name for a in self.actuators]
        problems = []
        for key, table in self.controller.per_joint_tables().items():
            for name, values in table.items():
                path = f"controller.{key}.{name}"
                if key == "inputs" and actuators:
                    # with actuators, constant inputs are per actuator name, one value each
                    if name not in actuators:
                        problems.append((path, f"unknown actuator {name!r} (actuators: {_listed(actuators)})"))
                    elif len(values) != 1:
                        problems.append((path, f"must have 1 value (one input per actuator), got {len(values)}"))
                    continue
                if name not in types:
                    problems.append((path, f"unknown joint {name!r} (joints: {_listed(list(types))})"))
                elif len(values) != input_dimension(types[name]):
                    problems.append((path, _count_message(input_dimension(types[name]), types[name], len(values))))
        return problems

    @property
    def source(self) -> SceneSource:
        """Where this scene was loaded from (a default SceneSource when not from a file)."""
        private = self.__pydantic_private__
        return private["source"] if private else SceneSource()

    @property
    def base_dir(self) -> Path | None:
        """Folder that relative paths resolve against (None: the current directory)."""
        return self.source.base_dir

    def problem(self, path: str, message: str) -> Problem:
        """A Problem naming this scene's file and the line of field ``path``."""
        return self.source.problem(path, message)

    def resolve_path(self, path: str | os.PathLike) -> Path:
        """Absolute path of a file named in the scene (relative to the scene's folder)."""
        return self.source.resolve_path(path)

    def with_source(self, source: SceneSource) -> SceneSpec:
        """A copy that remembers ``source``, with ``controller.file`` made absolute."""
        spec = copy.deepcopy(self)
        object.__setattr__(spec, "__pydantic_private__", {"source": source})
        if spec.controller.file is not None:
            spec.controller.file = str(spec.resolve_path(spec.controller.file))
        return spec


def _duplicate_names(section: str, items: list[Any]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    problems = []
    singular = {"bodies": "body", "joints": "joint", "contacts": "contact", "actuators": "actuator"}[section]
    for i, item in enumerate(items):
        if item.name in seen:
            problems.append((f"{section}.{i}.name", f"duplicate {singular} name {item.name!r}"))
        seen.add(item.name)
    return problems


SPEC_MODELS: tuple[type[Spec], ...] = (
    SceneSpec,
    SolverSpec,
    BodySpec,
    BodyInitialSpec,
    BoxShapeSpec,
    SphereShapeSpec,
    CylinderShapeSpec,
    CapsuleShapeSpec,
    PyramidShapeSpec,
    MeshShapeSpec,
    FrameShapeSpec,
    CombinedShapeSpec,
    JointSpec,
    JointLimitsSpec,
    JointInitialSpec,
    ContactSpec,
    HalfSpaceSpec,
    BodyCollisionSpec,
    HullShapeSpec,
    CollisionsSpec,
    GroundSpec,
    ControllerSpec,
    ExternalForceSpec,
    ActuatorSpec,
)
"""Every model of the scene format (for "did you mean" suggestions)."""


def field_default(data: Mapping[str, Any], path: Sequence[str]) -> Any:
    """Default of a field missing from raw scene data, as plain data.

    Lets an override reach into a field the file leaves at its default
    (``gravity.2``, ``solver.rtol``).

    Args:
        data: raw scene data, holding every field of ``path`` but the last.
        path: the field, in index form (``["bodies", "0", "initial"]``).

    Returns:
        The default (None for optional fields).

    Raises:
        LookupError: the path names no field with a default.
    """
    models: tuple[type[Spec], ...] = (SceneSpec,)
    node: Any = data
    for part in path[:-1]:
        if isinstance(node, list):
            # an entry of a list of models: the same candidate models
            node = node[int(part)]
            continue
        models = _model_field(models, node, part).specs
        node = node.get(part) if isinstance(node, Mapping) else None
    default = _model_field(models, node, path[-1]).get_default()
    if default is REQUIRED:
        raise LookupError(f"field {'.'.join(path)} has no default")
    return default.dump() if isinstance(default, Spec) else default


def _model_field(models: tuple[type[Spec], ...], node: Any, key: str) -> Field:
    """The field ``key`` of the model among ``models`` that ``node`` is data for.

    ``type`` tells apart the members of a tagged union (the shapes: each declares its own
    tag as its default); for a lone model (a joint, a controller) it is an ordinary field,
    whatever its value."""
    kind = node.get("type") if isinstance(node, Mapping) else None
    for model in models:
        declared = model.fields.get("type")
        if key in model.fields and (kind is None or len(models) == 1 or declared is None
                                    or declared.default in (kind, None)):
            return model.fields[key]
    raise LookupError(f"no field {key!r} here")
