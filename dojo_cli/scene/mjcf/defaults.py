"""MJCF's file structure: ``<include file>`` (the included file's top element's children take
its place, whatever that element is called: ``<mujoco>``, or the ``<mujocoinclude>`` of
MuJoCo 1.x and 2.x models (Meta-World, Adroit), as MuJoCo's XML reference says; relative to the including file, else to the model's folder) and ``<default>`` classes
(nested, inherited; ``class`` and ``childclass`` choose one), over which an element's
attributes are read.

``_DefaultsReader`` is a part of the MJCF reader (``dojo_cli.scene.mjcf.reader._Reader``):
it keeps the reader's ``defaults`` and ``default_parent`` and reports through its ``problem``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.importing.xml_file import read_xml


class _DefaultsReader:
    """Included files and default classes of an MJCF model."""

    def parse(self, path: Path, shown: str, included: bool = False):
        root, _ = read_xml(path, shown, "the MJCF file")
        # an included file's top element is discarded, whatever its tag (MuJoCo's <include>)
        if root.tag != "mujoco" and not included:
            raise SceneError(Problem(shown, root.sourceline, f"<{root.tag}>", "not an MJCF model (its root element must be <mujoco>)"))
        return root

    def children(self, element, file: str, depth: int = 0) -> Iterator[tuple[Any, str]]:
        """(child, file) of an element, ``<include>``s replaced by the included file's children."""
        for child in element:
            if not isinstance(child.tag, str):
                continue
            if child.tag != "include":
                yield child, file
                continue
            name = child.get("file")
            if not name:
                self.problem(file, child.sourceline, "<include>", "needs a file attribute")
                continue
            if depth > 16:
                self.problem(file, child.sourceline, "<include>", "includes nested deeper than 16 (a cycle?)")
                continue
            target = (Path(file).parent / name) if not Path(name).is_absolute() else Path(name)
            if not target.is_file():
                target = self.path.parent / name
            shown = str(target)
            if not target.is_file():
                self.problem(file, child.sourceline, f"<include file={name!r}>", "no such file")
                continue
            included = self.parse(target, shown, included=True)
            yield from self.children(included, shown, depth + 1)

    def attrs(self, el, cls: str | None) -> dict[str, str]:
        """An element's attributes over its default class's for its tag."""
        merged = dict(self.defaults.get(cls or "main", {}).get(el.tag, {}))
        merged.update({k: v for k, v in el.attrib.items()})
        return merged

    def read_default(self, el, file: str, parent: str | None) -> None:
        name = el.get("class", "main" if parent is None else None)
        if name is None:
            self.problem(file, el.sourceline, "<default>", "a nested default needs a class")
            return
        inherited = {tag: dict(values) for tag, values in self.defaults.get(parent, {}).items()} if parent else {}
        self.defaults[name] = inherited
        self.default_parent[name] = parent
        for child, cfile in self.children(el, file):
            if child.tag == "default":
                self.read_default(child, cfile, name)
            else:
                inherited.setdefault(child.tag, {}).update(child.attrib)

    def default_class(self, el, childclass: str | None, file: str | None = None) -> str:
        cls = el.get("class") or childclass or "main"
        if cls not in self.defaults and cls != "main":
            self.problem(file or self.file, el.sourceline, f"<{el.tag}>", f"unknown default class {cls!r}")
            return "main"
        return cls
