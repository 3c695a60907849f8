"""Scenes built on a URDF: ``urdf: robot.urdf`` plus YAML overrides on top.

A scene file holding a ``urdf`` key is expanded before validation:

1. the URDF is imported (``dojo_cli.scene.urdf``) with the options of the scene's
   ``import`` mapping (the flags of ``dojo import-urdf``: ``floating``,
   ``contacts``, ``friction``, ``contact_model``, ``merge_fixed``,
   ``package_path``, ``meshes``, ``geometry``, ``inertia_from_geometry``,
   ``floating_base``);
2. the scene's other keys are laid over the imported scene:
   - ``bodies``, ``joints``, ``contacts``: entries are matched **by name**. An entry
     naming an imported one replaces the keys it gives (each key whole: a given
     ``limits`` or ``shape`` replaces the imported one, keys not given stay); a
     name with shell wildcards (``"*_calf_joint"``) does so for every imported
     entry it matches (it must match one); ``remove: true`` drops the matched
     entries; any other name adds a new entry at the end;
   - every other key (``name``, ``timestep``, ``gravity``, ``duration``,
     ``solver``, ``controller``, ``external``, ...) replaces the imported value;
   - in the controller's per-joint tables (``inputs``, ``kp``, ``kd``, ``targets``,
     ``velocity_targets``) a joint name may be a wildcard pattern too.
3. ``--set`` overrides apply to the expanded scene, so they can reach imported
   fields (``joints.FR_calf_joint.damper=2``).

Line numbers of the file's own entries follow them to their place in the
expanded scene, so problems still point at the right line.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.robots import PACKAGE_SCHEME, UnresolvedPackage, package_search_path, resolve_resource
from dojo_cli.scene.schema import SceneSource, value_text

if TYPE_CHECKING:
    from dojo_cli.scene.urdf import UrdfImport, UrdfOptions

URDF_KEY = "urdf"
IMPORT_KEY = "import"
MERGED_SECTIONS = ("bodies", "joints", "contacts")
CONTROLLER_TABLES = ("inputs", "kp", "kd", "targets", "velocity_targets")
REMOVE_KEY = "remove"
_WILDCARDS = set("*?[")
_SINGULAR = {"bodies": "body", "joints": "joint", "contacts": "contact"}

_log = logging.getLogger(__name__)


def is_urdf_scene(data: Any) -> bool:
    """Whether raw scene data is built on a URDF."""
    return isinstance(data, Mapping) and URDF_KEY in data


def urdf_path(value: Any, source: SceneSource, search: list[str]) -> Path:
    """The URDF file a scene's ``urdf`` value names.

    Raises:
        SceneError: not a string, a package that is not installed, or no such file.
    """
    line = source.lines.get(URDF_KEY)
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise SceneError(Problem(source.file, line, URDF_KEY, f"must be the path of a URDF file, got {value_text(value)}"))
    base = source.base_dir or Path.cwd()
    try:
        path = resolve_resource(value, base, package_search_path(search))
        found = path.is_file()
    except UnresolvedPackage as exc:
        raise SceneError(Problem(source.file, line, URDF_KEY, f"cannot resolve {value!r}: {exc.hint()}")) from None
    except OSError as exc:  # a name the file system refuses (longer than NAME_MAX, ...)
        raise SceneError(Problem(source.file, line, URDF_KEY, f"cannot use {value_text(value)}: {exc.strerror or exc}")) from None
    if not found:
        raise SceneError(Problem(source.file, line, URDF_KEY, f"no such URDF file: {path}"))
    return path


def unavailable_reason(data: Any) -> str | None:
    """Why a URDF scene cannot be loaded here (its package is not installed), or None."""
    if not is_urdf_scene(data) or not isinstance(data[URDF_KEY], str) or not data[URDF_KEY].startswith(PACKAGE_SCHEME):
        return None
    try:
        resolve_resource(data[URDF_KEY], Path.cwd(), package_search_path())
    except UnresolvedPackage as exc:
        return exc.hint()
    return None


@functools.lru_cache(maxsize=16)
def _cached_import(path: str, mtime: float, options_key: tuple, shown: str) -> UrdfImport:
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    options = UrdfOptions(**{k: list(v) if isinstance(v, tuple) else v for k, v in options_key})
    return read_urdf(path, options, shown)


def import_urdf(path: Path, options: UrdfOptions, shown: str | None = None) -> UrdfImport:
    """``read_urdf`` with a cache: a scene loaded again does not parse its URDF again.

    Returns a deep copy, so callers may change it.
    """
    key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in vars(options).items())
    try:
        mtime = os.path.getmtime(path)
    except OSError as exc:  # removed since it was found
        raise SceneError(Problem(shown or str(path), None, "", f"cannot read the URDF: {exc.strerror or exc}")) from None
    result = _cached_import(str(path), mtime, key, shown or str(path))
    return copy.deepcopy(result)


def expand_urdf_scene(data: dict, source: SceneSource) -> tuple[dict, SceneSource]:
    """The scene a ``urdf:`` scene stands for, and its line map.

    Raises:
        SceneError: bad import options, an unreadable URDF, or an override naming
            nothing (a wildcard that matches no entry, an entry without a name).
    """
    if not isinstance(data.get(IMPORT_KEY) or {}, Mapping):
        raise SceneError(Problem(source.file, source.lines.get(IMPORT_KEY), IMPORT_KEY, "must be a mapping of import options"))
    # here, not at the top: a scene without `urdf:` never imports the URDF reader
    from dojo_cli.scene.urdf import UrdfOptions

    options = UrdfOptions.from_mapping(data.get(IMPORT_KEY) or {}, source.base_dir, source.file, source.lines, IMPORT_KEY)
    path = urdf_path(data[URDF_KEY], source, options.package_path)
    imported = import_urdf(path, options, _shown_urdf(data[URDF_KEY], path))
    for warning in imported.warnings:
        _log.info("%s", warning)
    scene = imported.scene
    lines: dict[str, int] = {"": source.lines.get("", 1)}
    problems: list[Problem] = []
    for key, value in data.items():
        if key in (URDF_KEY, IMPORT_KEY):
            continue
        if key in MERGED_SECTIONS:
            if not isinstance(value, list):
                problems.append(Problem(source.file, source.lines.get(key), key, "must be a list of entries (matched by name)"))
                continue
            scene[key], moved = _merge_section(key, scene.get(key, []), value, source, problems)
            lines[key] = source.lines.get(key, 1)
            for old, new in moved:
                _move_lines(source.lines, lines, f"{key}.{old}", f"{key}.{new}")
            continue
        scene[key] = value
        _move_lines(source.lines, lines, key, key)
    controller = scene.get("controller")
    if isinstance(controller, dict):
        joint_names = [j.get("name") for j in scene.get("joints", []) if isinstance(j, Mapping)]
        for table in CONTROLLER_TABLES:
            if isinstance(controller.get(table), Mapping):
                controller[table] = _expand_table(f"controller.{table}", controller[table], joint_names, source, lines, problems)
    if problems:
        raise SceneError(problems)
    return scene, replace(source, lines=lines)


def _shown_urdf(value: str, path: Path) -> str:
    """The URDF's name in problems and warnings: a package name as the scene wrote it
    (``package://example-robot-data/...``, not the site-packages folder it resolved to), a
    file relative to the working folder when it is under it, else its absolute path."""
    if value.startswith(PACKAGE_SCHEME):
        return value
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith(os.pardir) else relative


def _move_lines(old_lines: Mapping[str, int], new_lines: dict[str, int], old: str, new: str) -> None:
    """Copy the lines of field ``old`` and everything below it to ``new``."""
    for path, line in old_lines.items():
        if path == old:
            new_lines[new] = line
        elif path.startswith(old + "."):
            new_lines[new + path[len(old):]] = line


def _is_pattern(name: str) -> bool:
    return bool(_WILDCARDS & set(name))


def _merge_section(section: str, imported: list[dict], given: list, source: SceneSource, problems: list[Problem]):
    """Entries of one section merged by name; (merged list, [(file index, merged index)])."""
    entries: list[dict | None] = [dict(e) for e in imported]
    origin: list[list[int]] = [[] for _ in entries]
    index = {e["name"]: i for i, e in enumerate(entries)}
    singular = _SINGULAR[section]
    for k, entry in enumerate(given):
        path = f"{section}.{k}"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            problems.append(Problem(source.file, source.line(path), path,
                                    f"needs a name: the {singular} it overrides, a pattern, or a new {singular}'s name"))
            continue
        name = entry["name"]
        remove = entry.get(REMOVE_KEY) is True
        changes = {key: value for key, value in entry.items() if key not in ("name", REMOVE_KEY)}
        if _is_pattern(name):
            targets = [i for n, i in index.items() if entries[i] is not None and fnmatch.fnmatchcase(n, name)]
            if not targets:
                listed = ", ".join(list(index)[:8]) + (", ..." if len(index) > 8 else "")
                problems.append(Problem(source.file, source.line(f"{path}.name"), f"{path}.name",
                                        f"the pattern {name!r} matches no imported {singular} ({listed or 'none'})"))
                continue
        elif name in index and entries[index[name]] is not None:
            targets = [index[name]]
        elif remove:
            problems.append(Problem(source.file, source.line(f"{path}.name"), f"{path}.name", f"no imported {singular} {name!r} to remove"))
            continue
        else:
            entries.append(copy.deepcopy(dict(entry)))
            origin.append([k])
            index[name] = len(entries) - 1
            continue
        for i in targets:
            if remove:
                entries[i] = None
            else:
                entries[i].update(copy.deepcopy(changes))
                origin[i].append(k)
    merged, moved = [], []
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        moved += [(k, len(merged)) for k in origin[i]]
        merged.append(entry)
    return merged, moved


def _expand_table(path: str, table: Mapping, joint_names: list[str], source: SceneSource, lines: dict[str, int], problems: list[Problem]) -> dict:
    out: dict = {}
    for key, value in table.items():
        key = str(key)
        if not _is_pattern(key):
            out[key] = value
            continue
        matched = [n for n in joint_names if isinstance(n, str) and fnmatch.fnmatchcase(n, key)]
        if not matched:
            problems.append(Problem(source.file, source.line(f"{path}.{key}"), f"{path}.{key}", f"the pattern {key!r} matches no joint"))
        for name in matched:
            out.setdefault(name, value)
            _move_lines(source.lines, lines, f"{path}.{key}", f"{path}.{name}")
    return out
