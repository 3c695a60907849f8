"""Reading the YAML files that name a scene and what to do with it: ``dojo optimize``'s
task files (optimize.task), ``dojo fit``'s fit files (fit.task) and ``dojo sweep``'s sweep
files (sweep.plan).

One reader for the three: the file opened with a scene file's limits (``open_task_file``),
every problem collected at its line (``TaskFile.problem``, each a ``file:line: field:
message`` of the SceneError raised at the end), typed values (``number``, ``integer``,
``mapping``, ``unknown_key``), the files a task file names (``resolve_file``: beside the
task file, then in the working directory) and the scene with its ``set:`` overrides
(``scene``, ``overrides``).
"""

from __future__ import annotations

import difflib
import math
import os
from pathlib import Path
from typing import Any

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.overrides import Override
from dojo_cli.scene.schema import value_text


class TaskFile:
    """Problems of a task, fit or sweep file, each at its line.

    Args:
        file: the file as the user named it (what each problem starts with).
        lines: {field path: line} (scene.loader.read_yaml_file).
        name_enclosing_field: a field without a line of its own (a missing key) is reported
            at its enclosing key's line under the enclosing key's name (sweep files:
            ``random: n is 3 but no axis is given``) rather than under its own
            (task and fit files: ``costs.state: ...`` at the line of ``costs``).
    """

    def __init__(self, file: str, lines: dict[str, int], *, name_enclosing_field: bool = False):
        self.file = file
        self.lines = lines
        self.name_enclosing_field = name_enclosing_field
        self.problems: list[Problem] = []

    def line(self, path: str) -> int | None:
        """The line of ``path``, or of its nearest enclosing key that has one."""
        return self.lines.get(self._located(path))

    def _located(self, path: str) -> str:
        """``path``, or its nearest enclosing key with a line ('' when none has one)."""
        while path and path not in self.lines:
            path = path.rpartition(".")[0]
        return path

    def problem(self, path: str, message: str) -> None:
        located = self._located(path)
        named = path
        if self.name_enclosing_field:  # the key with the line, or the top-level key
            named = located or path.partition(".")[0]
        self.problems.append(Problem(self.file, self.lines.get(located), named, message))

    # ------------------------------------------------------------------ typed values

    def number(self, where: str, value: Any, *, minimum: float | None = None, positive: bool = False,
               infinite: bool = False) -> float | None:
        """A real number (None, with a problem, when it is not one or out of range)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(where, f"must be a number, got {value_text(value)}")
            return None
        v = float(value)
        if math.isnan(v) or (math.isinf(v) and not infinite):
            self.problem(where, f"must be finite, got {value_text(value)}")
            return None
        if positive and not v > 0:
            self.problem(where, f"must be > 0, got {value_text(value)}")
            return None
        if minimum is not None and v < minimum:
            self.problem(where, f"must be >= {minimum:g}, got {value_text(value)}")
            return None
        return v

    def integer(self, where: str, value: Any, minimum: int, maximum: int) -> int | None:
        """An integer in minimum..maximum (None, with a problem, otherwise)."""
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(where, f"must be an integer, got {value_text(value)}")
            return None
        if not minimum <= value <= maximum:
            self.problem(where, f"must be in {minimum}..{maximum:,}, got {value}")
            return None
        return int(value)

    def mapping(self, where: str, value: Any, what: str) -> dict:
        """A mapping of ``what`` (absent: empty; anything else: empty, with a problem)."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(where, f"must be a mapping of {what}, got {value_text(value)}")
            return {}
        return value

    def unknown_key(self, where: str, key: Any, known) -> None:
        close = difflib.get_close_matches(str(key), list(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
        self.problem(where, f"unknown key{hint}")

    def unknown_keys(self, where: str, mapping: dict, known) -> None:
        """A problem at each key of ``mapping`` that is not one of ``known``, at
        ``where.KEY`` (at ``KEY`` for the file's top level, ``where`` empty)."""
        for key in mapping:
            if key not in known:
                self.unknown_key(f"{where}.{key}" if where else str(key), key, known)

    # ------------------------------------------------------------------ the scene

    def scene(self, data: dict, folder: Path) -> str | None:
        """The file's ``scene``: a scene file (relative to ``folder``, the task file's, or to
        the working directory) as its resolved path, or a built-in scene's name; None with a
        problem."""
        from dojo_cli.scene.loader import builtin_scene_names, unknown_scene_message  # (start-up time)

        scene = data.get("scene")
        if not isinstance(scene, str) or not scene:
            self.problem("scene", "required: a built-in scene's name or a scene file")
            return None
        found = resolve_file(scene, folder)
        if found is not None:
            return str(found)
        if scene in builtin_scene_names():
            return scene
        self.problem("scene", unknown_scene_message(scene))
        return None

    def overrides(self, data: dict, key: str = "set") -> list[Override]:
        """The ``set:`` field paths and values as scene overrides, each at its line."""
        return [Override(str(p), v, self.file, self.lines.get(f"{key}.{p}"))
                for p, v in self.mapping(key, data.get(key), "field paths").items()]


def open_task_file(path: str | os.PathLike, kind: str, keys: str, *,
                   name_enclosing_field: bool = False) -> tuple[TaskFile, dict]:
    """Read a task, fit or sweep file: (its reader, its data).

    Args:
        kind: what the file is, for the message of a file that is not a mapping ("a task file").
        keys: the first keys it holds, for that message ("scene, horizon, costs, ...").

    Raises:
        SceneError: as scene.loader.read_yaml_file (unreadable, malformed, beyond the
            limits), or the file is not a mapping.
    """
    from dojo_cli.scene.loader import read_yaml_file  # (start-up time)

    file = os.fspath(path)
    data, lines = read_yaml_file(path, file)
    if not isinstance(data, dict):
        what = "the file is empty" if data is None else f"got {value_text(data)}"
        raise SceneError(Problem(file, lines.get(""), "", f"{kind} must be a mapping ({keys}); {what}"))
    return TaskFile(file, lines, name_enclosing_field=name_enclosing_field), data


def resolve_file(name: str, folder: Path) -> Path | None:
    """A file a task file names: relative to the task file's folder, then to the working
    directory (resolved), or None."""
    for candidate in (folder / name, Path(name)):
        if candidate.is_file():
            return candidate.resolve()
    return None


__all__ = ["TaskFile", "open_task_file", "resolve_file"]
