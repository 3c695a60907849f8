"""The text of URDF attributes read as numbers and names, as the reference loaders read it.

A number as Python reads it, or as Bullet's URDF reader does (C's ``atof``: a number followed by
stray punctuation, ``_lenient_float``); a planar joint's damping as Drake reads it; xacro's
``$(optenv)`` / ``$(env)`` substitutions expanded as xacro does, and a hint naming any other
xacro substitution left in a file; which link, joint or material an element belongs to, and
whether a name is printable (names end up in storage files and messages); and the kinds of
these readings beyond the URDF specification (``LENIENT_*``), each reported once.
"""

from __future__ import annotations

import math
import os
import re

from dojo_cli.scene.importing.messages import shortened


# xacro's $(optenv NAME [default ...]) and $(env NAME) (xacro/substitution_args.py: the default
# is the rest of the arguments joined by single spaces); any other $(...) or ${...} is xacro's
_XACRO_ENV = re.compile(r"\$\((optenv|env)\s+([^\s)]+)((?:\s+[^)]*)?)\)")
_XACRO_ANY = re.compile(r"\$\([^)]*\)?|\$\{[^}]*\}?")


def _expand_environment(text: str) -> tuple[str, str | None]:
    """(``text`` with xacro's environment substitutions expanded, None), or (text, the first
    substitution that cannot be: another xacro substitution, or $(env NAME) of an unset NAME)."""
    unknown = None

    def expand(match: re.Match) -> str:
        nonlocal unknown
        kind, name, rest = match.group(1), match.group(2), match.group(3).split()
        if name in os.environ:
            return os.environ[name]
        if kind == "env":
            unknown = unknown or f"{match.group(0)} (environment variable {name} is not set)"
            return match.group(0)
        return " ".join(rest)

    out = _XACRO_ENV.sub(expand, text)
    if unknown is None:
        left = _XACRO_ANY.search(out)
        if left is not None:
            unknown = left.group(0)
    return out, unknown


def _xacro_hint(text: str) -> str:
    """A message's ending for a value holding a xacro substitution ('' for another value)."""
    found = _XACRO_ANY.search(text)
    if found is None:
        return ""
    return (f": an unexpanded xacro substitution {shortened(found.group(0))} (the file is a xacro source, "
            "not a URDF: run xacro on it, xacro FILE > robot.urdf)")


def _owner(element) -> str | None:
    """The link, joint or material an element belongs to (``joint 'imu_joint'``), or None."""
    for item in (element, *element.iterancestors()):
        if item.tag in ("link", "joint", "material") and item.get("name") is not None:
            return f"{item.tag} {item.get('name')!r}"
    return None


def _printable_name(name) -> bool:
    # names become scene names, which end up in storage files and messages (XML allows tabs and line breaks)
    return not isinstance(name, str) or name.isprintable()


def _planar_damping(value) -> float | list[float]:
    """A planar joint's ``<dynamics damping>``: one value, or three (x, y, theta) as Drake reads it."""
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    parts = str(value).split()
    if len(parts) not in (1, 3):
        raise ValueError(f"a planar joint's damping is 1 or 3 values (x, y, theta), got {len(parts)}: {value!r}")
    numbers = [float(p) for p in parts]
    return numbers[0] if len(numbers) == 1 else numbers


def _number(value) -> float | None:
    if value is None:
        return None
    return float(value)


# A number as C's strtod reads its start (Bullet's URDF reader casts with atof), followed only by
# punctuation: biped2d_pybullet.urdf's lower="-1.57." (a typo Bullet reads as -1.57)
_NUMBER_START = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([.,;:]+)\s*$")


def _lenient_float(text: str) -> tuple[float, bool]:
    """(the number, whether stray punctuation followed it and was ignored).

    Raises:
        ValueError: not a number (Python's float), nor a number followed by punctuation only.
    """
    try:
        return float(text), False
    except ValueError:
        found = _NUMBER_START.match(text)
        if found is None:
            raise
        return float(found.group(1)), True


def _is_number(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except ValueError:
        return False


# Readings of the reference loaders beyond the URDF specification, one warning per kind naming
# where (the element and its line): "what|how it is read".
LENIENT_COMMAS = ("numbers separated by commas|commas read as separators, as Bullet (its numbers stop at a comma) "
                  "and yourdfpy read them")
LENIENT_EXTRA_NUMBERS = ("more than 3 numbers where a vector has 3|the first 3 read and the rest ignored, as Bullet "
                         "reads them (urdfdom refuses them)")
LENIENT_NO_LIMIT = ("<limit> lower > upper|Bullet's convention for a joint without position limits (its default is "
                    "lower 0, upper -1): read as unlimited")
LENIENT_NUMBER_END = ("a number followed by stray punctuation|read as Bullet reads it (C's atof: the number, up to "
                      "what is not part of it)")
LENIENT_XACRO_ENV = ("xacro substitutions $(optenv NAME default) / $(env NAME) left in the file|expanded as xacro "
                     "does (the environment variable's value, else the default)")
