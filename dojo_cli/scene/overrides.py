"""Overrides of scene fields by dotted path, applied to the raw YAML data.

A path names mapping keys and list entries: ``bodies.0.mass``, ``solver.rtol``,
``gravity.2``. A list entry may also be named by its ``name`` field, so
``joints.hinge.spring`` is ``joints.0.spring`` when joint 0 is called hinge (a
number is always an index). A part with a wildcard (``*``, ``?``, ``[...]``, as in
shell patterns) sets every entry it matches: ``contacts.*.friction`` every contact,
``joints.leg_*.damper`` the joints whose names match, ``solver.*tol`` the keys of a
mapping; a pattern that matches nothing is an error. A path may reach into a field the scene leaves out:
it starts from the field's default (``gravity.2`` edits [0, 0, -9.81]), or from
an empty mapping. Overrides apply in order, before validation, so the
scene is validated once with every override in place and a bad overridden
value is reported like any other problem, on ``--set`` (or on the preset file and line
an ``Override`` came from, ``dojo simulate --config``). ``duration`` and ``steps`` are
exclusive: overriding one drops the other from the scene.
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.schema import MAPPING_OVERRIDE_FILE, OVERRIDE_FILE, field_default, value_text


# Scene fields of which a scene gives one at most: overriding one removes the other.
_EXCLUSIVE = {"duration": "steps", "steps": "duration"}
_PATTERN_CHARACTERS = frozenset("*?[")


@dataclass(frozen=True)
class Override:
    """One override and where it came from (problems with its value are reported there).

    Attributes:
        path: dotted field path, wildcards allowed (``contacts.*.friction``).
        value: the value, as YAML would read it.
        file: where it was written: ``--set`` (OVERRIDE_FILE) or a preset file.
        line: 1-based line in ``file``, None for ``--set``.
    """

    path: str
    value: Any
    file: str = OVERRIDE_FILE
    line: int | None = None


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
    data: dict, overrides: Mapping[str, Any] | Sequence[str | Override]
) -> tuple[dict, dict[str, str]]:
    """As ``apply_overrides``, also saying which fields the overrides set.

    Returns:
        The overridden copy, and {path in index form (``joints.0.spring``): path
        as written (``joints.hinge.spring``, ``joints.*.spring``)} for every field set.
    """
    result, paths, _ = apply_override_items(data, overrides)
    return result, paths


def override_items(overrides: Mapping[str, Any] | Sequence[str | Override] | str) -> list[Override]:
    """Overrides in any accepted form as a list of ``Override`` (strings parsed as ``--set``)."""
    if isinstance(overrides, str):
        overrides = [overrides]
    if isinstance(overrides, Mapping):
        return [Override(str(path), value, MAPPING_OVERRIDE_FILE) for path, value in overrides.items()]
    items = []
    for item in overrides:
        if isinstance(item, Override):
            items.append(item)
        else:
            path, value = parse_override(item)
            items.append(Override(path, value))
    return items


def apply_override_items(
    data: dict, overrides: Mapping[str, Any] | Sequence[str | Override]
) -> tuple[dict, dict[str, str], dict[str, tuple[str, int | None]]]:
    """As ``apply_overrides_with_paths``, also saying where each field's override was written.

    Returns:
        The overridden copy; {index path: path as written}; {index path: (file, line)}.
    """
    result = copy.deepcopy(data)
    paths: dict[str, str] = {}
    origins: dict[str, tuple[str, int | None]] = {}
    for item in override_items(overrides):
        value = _plain(item.value)
        for concrete in _expanded(result, item):
            done = _set(result, concrete, copy.deepcopy(value), item)
            paths[done] = item.path
            origins[done] = (item.file, item.line)
            other = _EXCLUSIVE.get(done)
            if other is not None and isinstance(result, dict):
                result.pop(other, None)
    return result, paths, origins


def _is_pattern(part: str) -> bool:
    return not _PATTERN_CHARACTERS.isdisjoint(part)


def _expanded(data: dict, item: Override) -> list[str]:
    """The concrete paths a path with wildcards names in ``data`` (the path itself when it has none).

    Raises:
        SceneError: a pattern that matches no field.
    """
    path = item.path
    parts = path.split(".")
    if not any(_is_pattern(p) for p in parts):
        return [path]
    if "" in parts:
        raise _no_such_field(path, "empty part in the path", item)
    found: list[str] = []

    def walk(node: Any, i: int, done: list[str]) -> None:
        if i == len(parts):
            found.append(".".join(done))
            return
        part = parts[i]
        if _is_pattern(part):
            if isinstance(node, list):
                for index, entry in enumerate(node):
                    name = entry.get("name") if isinstance(entry, dict) else None
                    if fnmatch.fnmatchcase(str(index), part) or (
                        isinstance(name, str) and fnmatch.fnmatchcase(name, part)
                    ):
                        walk(entry, i + 1, done + [str(index)])
            elif isinstance(node, dict):
                for key in list(node):
                    if fnmatch.fnmatchcase(str(key), part):
                        walk(node[key], i + 1, done + [str(key)])
            return
        child = _child(node, part)
        if child is _MISSING:
            if any(_is_pattern(p) for p in parts[i + 1 :]):
                return  # nothing below a missing field for a later pattern to match
            found.append(".".join(done + parts[i:]))  # _set creates (or reports) the rest
            return
        walk(child, i + 1, done + [part])

    walk(data, 0, [])
    if not found:
        raise _no_such_field(path, "the pattern matches no field of the scene", item)
    return found


_MISSING = object()


def _child(node: Any, part: str) -> Any:
    """``node[part]`` as a path names it (a key, an index or an entry's name), or _MISSING."""
    if isinstance(node, dict):
        value = node.get(part, _MISSING)
        return _MISSING if value is None else value
    if isinstance(node, list):
        if part.isdigit():
            return node[int(part)] if int(part) < len(node) else _MISSING
        for entry in node:
            if isinstance(entry, dict) and entry.get("name") == part:
                return entry
    return _MISSING


def _set(data: dict, path: str, value: Any, item: Override | None = None) -> str:
    """Set one field in place; returns the path in index form."""
    parts = path.split(".")
    if "" in parts:
        raise _no_such_field(path, "empty part in the path", item)
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
            key = _entry_index(node, part, path, done, item)
            if last:
                node[key] = value
        else:
            where = ".".join(done)
            raise _no_such_field(path, f"{where} is {_kind(node)}, not a mapping or a list", item)
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


def _entry_index(entries: list, part: str, path: str, done: list[str], item: Override | None = None) -> int:
    """Index of the list entry named by ``part``: a number, or an entry's name."""
    where = ".".join(done) or "the scene"
    if part.isdigit():
        index = int(part)
        if index >= len(entries):
            raise _no_such_field(path, f"{where} has {len(entries)} entries, so no index {index}", item)
        return index
    names = [e.get("name") for e in entries if isinstance(e, dict)]
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("name") == part:
            return index
    listed = ", ".join(str(n) for n in names if n is not None) or "none"
    raise _no_such_field(path, f"no entry of {where} is named {part!r} (names: {listed})", item)


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


def _no_such_field(path: str, reason: str, item: Override | None = None) -> SceneError:
    file, line = (item.file, item.line) if item is not None else (OVERRIDE_FILE, None)
    return SceneError(Problem(file, line, path, f"no such field: {reason}"))


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
