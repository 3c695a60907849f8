"""Presets: YAML files of scene fields merged into a scene (``dojo simulate --config``).

A preset is a mapping of scene fields, a part of a scene::

    # configs/solver/accurate.yaml
    solver: {rtol: 1.0e-10, btol: 1.0e-8, max_iter: 100}

Its values are merged into the scene field by field, as if each were given with
``--set``: nested mappings are merged (``solver: {rtol: ...}`` sets ``solver.rtol`` and
leaves the scene's other solver options), any other value (a number, a list) replaces the
scene's. A key may also be a dotted path with wildcards (``contacts.*.friction: 0.3``).
Presets apply after the scene and before ``--set`` (scene < config < --set), and a problem
with one of their values names the preset's file and line.
"""

from __future__ import annotations

import os
from typing import Any

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.overrides import Override
from dojo_cli.scene.schema import value_text


def read_preset(path: str | os.PathLike) -> list[Override]:
    """The overrides of a preset file, in file order, each with its file and line.

    Raises:
        SceneError: the file cannot be read, is not YAML, or is not a mapping.
    """
    # here: the loader imports the scene schema and its validators, which a caller may not need yet
    from dojo_cli.scene.loader import read_yaml_file

    file = os.fspath(path)
    data, lines = read_yaml_file(path, file)
    if not isinstance(data, dict):
        what = "the file is empty" if data is None else f"got {value_text(data)}"
        raise SceneError(Problem(file, lines.get(""), "", f"a preset must be a mapping of scene fields; {what}"))
    return preset_overrides(data, file, lines)


def preset_overrides(data: dict, file: str, lines: dict[str, int] | None = None) -> list[Override]:
    """A preset's mapping flattened to leaf overrides (nested mappings merge, see the module)."""
    lines = lines or {}
    items: list[Override] = []

    def flatten(node: dict, prefix: str) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if isinstance(value, dict) and value:
                flatten(value, path + ".")
            else:
                items.append(Override(path, value, file, lines.get(path)))

    flatten(data, "")
    return items


def preset_values(items: list[Override]) -> dict[str, Any]:
    """{path: value} of overrides, in order (a later one of the same path wins)."""
    return {item.path: item.value for item in items}
