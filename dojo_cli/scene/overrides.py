"""Overrides of scene fields by dotted path, applied to the raw YAML data.

A path names mapping keys and list entries: ``bodies.0.mass``, ``solver.rtol``,
``gravity.2``. A list entry may also be named by its ``name`` field, so
``joints.hinge.spring`` is ``joints.0.spring`` when joint 0 is called hinge (a
number is always an index). A path may reach into a field the scene leaves out:
it starts from the field's default (``gravity.2`` edits [0, 0, -9.81]), or from
an empty mapping. Overrides apply in order, before validation, so the
scene is validated once with every override in place and a bad overridden
value is reported like any other problem, on ``--set``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.schema import OVERRIDE_FILE, field_default, value_text


def parse_override(text: str) -> tuple[str, Any]:
    """Split a ``PATH=VALUE`` override; VALUE is read as YAML (``2``, ``[0, 0, -1]``, ``.inf``),
    within the limits of a scene file (size, nesting, aliases, characters: see the loader).

    Raises:
        SceneError: no ``=``, an empty path, or a VALUE that is not YAML or is beyond a limit.
    """
    # here, not at the top: the loader imports this module
    from dojo_cli.scene.loader import YamlProblem, read_yaml

    path, sep, raw = text.partition("=")
    path = path.strip()
    if not sep or not path:
        raise SceneError(Problem(OVERRIDE_FILE, None, "", f"expected PATH=VALUE, got {value_text(text)}"))
    if not path.isprintable():
        raise SceneError(Problem(OVERRIDE_FILE, None, "", f"the path must be printable, got {value_text(path)}"))
    try:
        _, value = read_yaml(raw)
    except YamlProblem as exc:
        raise SceneError(Problem(OVERRIDE_FILE, None, path, f"invalid value {value_text(raw)}: {exc.message}")) from None
    return path, value


def apply_overrides(data: dict, overrides: Mapping[str, Any] | Sequence[str]) -> dict:
    """A copy of raw scene data with overrides applied in order.

    Args:
        data: the scene as read from YAML (not modified).
        overrides: {path: value}, or ``PATH=VALUE`` strings as given to ``--set``.

    Returns:
        The overridden copy.

    Raises:
        SceneError: a malformed override or a path naming no field.
    """
    return apply_overrides_with_paths(data, overrides)[0]


def apply_overrides_with_paths(
    data: dict, overrides: Mapping[str, Any] | Sequence[str]
) -> tuple[dict, dict[str, str]]:
    """As ``apply_overrides``, also saying which fields the overrides set.

    Returns:
        The overridden copy, and {path in index form (``joints.0.spring``): path
        as written (``joints.hinge.spring``)} for every override.
    """
    if isinstance(overrides, str):
        overrides = [overrides]
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        items = [parse_override(text) for text in overrides]
    result = copy.deepcopy(data)
    paths = {}
    for path, value in items:
        paths[_set(result, str(path), _plain(value))] = str(path)
    return result, paths


def _set(data: dict, path: str, value: Any) -> str:
    """Set one field in place; returns the path in index form."""
    parts = path.split(".")
    if "" in parts:
        raise _no_such_field(path, "empty part in the path")
    node: Any = data
    done: list[str] = []
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, dict):
            key = part
            if last:
                node[key] = value
            elif node.get(key) is None:
                node[key] = _default(data, done + [key])
        elif isinstance(node, list):
            key = _entry_index(node, part, path, done)
            if last:
                node[key] = value
        else:
            where = ".".join(done)
            raise _no_such_field(path, f"{where} is {_kind(node)}, not a mapping or a list")
        done.append(str(key))
        node = node[key]
    return ".".join(done)


def _default(data: dict, path: list[str]) -> Any:
    """What a missing field holds before an override reaches into it: its default, or a new mapping."""
    try:
        default = field_default(data, path)
    except LookupError:
        default = None
    return {} if default is None else default


def _entry_index(entries: list, part: str, path: str, done: list[str]) -> int:
    """Index of the list entry named by ``part``: a number, or an entry's name."""
    where = ".".join(done) or "the scene"
    if part.isdigit():
        index = int(part)
        if index >= len(entries):
            raise _no_such_field(path, f"{where} has {len(entries)} entries, so no index {index}")
        return index
    names = [e.get("name") for e in entries if isinstance(e, dict)]
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("name") == part:
            return index
    listed = ", ".join(str(n) for n in names if n is not None) or "none"
    raise _no_such_field(path, f"no entry of {where} is named {part!r} (names: {listed})")


def _kind(value: Any) -> str:
    """A value's kind in YAML words ("a number", "a string", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _no_such_field(path: str, reason: str) -> SceneError:
    return SceneError(Problem(OVERRIDE_FILE, None, path, f"no such field: {reason}"))


def _plain(value: Any) -> Any:
    """Value as plain YAML data: arrays and tuples become lists, numpy scalars Python numbers."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
