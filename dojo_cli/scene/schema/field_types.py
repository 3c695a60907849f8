"""The field types of the scene format, written once as pydantic-core schemas: numbers
(``REAL``, ``POSITIVE_REAL``, ``AMOUNT``: every finite number at most ``MAX_MAGNITUDE``,
every amount at least ``MIN_AMOUNT``), names and paths (printable), vectors, directions and
quaternions (normalised), colours, gains, bounds, scales and inertias; the callable
discriminators' tags (``UNION_TAGS``); and how a validator reports (``SpecProblems``,
``value_text``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic_core import PydanticCustomError, PydanticKnownError

from dojo_cli.scene.specs import after, before, ge, gt, le, list_of, tagged_union


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
# The body shapes' ``type`` tags (the tags of the shape union, shapes.SHAPE).
SHAPE_TYPES = ("box", "sphere", "cylinder", "capsule", "pyramid", "mesh", "frame", "combined")
# Shapes a contact may give its body beyond the body shapes (a URDF mesh's convex hull).
CONTACT_SHAPE_TYPES = ("hull",)

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
