"""docs/coverage.md, the table of the five reference systems' items, kept true.

The table cannot drift from the code or from the systems' documentation: every item listed in
docs/coverage/*.txt (extracted once from each system's documentation) has exactly one row;
every test a row names exists; every Python name resolves, every ``dojo`` command and flag
exists, every scene field is documented, every built-in scene exists; every row has a status.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "coverage.md"
ITEM_LISTS = ROOT / "docs" / "coverage"

# The table's systems and the item list each is checked against.
SYSTEMS = {
    "Dojo.jl": "dojo.txt",
    "RigidBodyDynamics.jl": "rigidbodydynamics.txt",
    "PinnZoo": "pinnzoo.txt",
    "Drake PlanarJoint": "drake_planar_joint.txt",
    "skydy": "skydy.txt",
}

# How a Python name in the "ours" column starts -> the module or class it names.
PREFIXES = {
    "dojo": "dojo_cli",
    "minimal": "dojo_cli.minimal",
    "dojo_cli": "dojo_cli",
    "JointHandle": "dojo_cli.model.joint_handle:JointHandle",
}

# A status: same, partial, not applicable or missing, with the reason in brackets where one is due.
STATUS = re.compile(r"^(same( \(.+\))?|partial \(.+\)|not applicable \(.+\)|missing \(.+\))$")
TEST = re.compile(r"^`(tests/[\w/]+\.py)::(test_\w+)(\[[^\]]+\])?`$")


@dataclasses.dataclass(frozen=True)
class Row:
    line: int
    system: str
    item: str
    ours: list[str]
    status: str
    test: str

    def where(self) -> str:
        return f"docs/coverage.md:{self.line}: {self.system} {self.item}"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


@cache
def rows() -> list[Row]:
    out = []
    for n, line in enumerate(TABLE.read_text().splitlines(), 1):
        if not line.startswith("| ") or line.startswith("| system |"):
            continue
        cells = _cells(line)
        assert len(cells) == 5, f"docs/coverage.md:{n}: {len(cells)} cells, expected 5: {line}"
        system, item, ours, status, test = cells
        assert item.startswith("`") and item.endswith("`"), f"docs/coverage.md:{n}: the item is not `quoted`"
        names = re.findall(r"`([^`]+)`", ours)
        out.append(Row(n, system, item.strip("`"), names, status, test))
    return out


def item_list(file: str) -> list[str]:
    text = (ITEM_LISTS / file).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_table_has_exactly_the_documented_items(system):
    documented = item_list(SYSTEMS[system])
    assert len(set(documented)) == len(documented), f"{SYSTEMS[system]} lists an item twice"
    table = [r.item for r in rows() if r.system == system]
    assert len(set(table)) == len(table), f"{system}: an item has two rows"
    missing, extra = set(documented) - set(table), set(table) - set(documented)
    assert not missing and not extra, f"{system}: rows missing for {sorted(missing)}, rows not documented {sorted(extra)}"


def test_every_row_is_of_a_known_system_and_has_a_status():
    for r in rows():
        assert r.system in SYSTEMS, f"{r.where()}: unknown system"
        assert STATUS.match(r.status), f"{r.where()}: status {r.status!r} is not same / partial (...) / not applicable (...) / missing (...)"
        if r.status.startswith(("same", "partial")):
            assert r.ours and r.test, f"{r.where()}: a row that is {r.status.split()[0]} needs our name and its test"
        if r.status.startswith("missing"):
            assert not r.test, f"{r.where()}: a missing item has no test"


@cache
def _test_functions(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text())
    return frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def test_every_named_test_exists():
    for r in rows():
        if not r.test:
            continue
        m = TEST.match(r.test)
        assert m, f"{r.where()}: test {r.test!r} is not `tests/path.py::test_name`"
        path, name = m.group(1), m.group(2)
        assert (ROOT / path).is_file(), f"{r.where()}: no file {path}"
        assert name in _test_functions(path), f"{r.where()}: no function {name} in {path}"


def _resolve_python(name: str):
    head, _, rest = name.partition(".")
    target = PREFIXES[head]
    module, _, cls = target.partition(":")
    obj = importlib.import_module(module)
    parts = ([cls] if cls else []) + (rest.split(".") if rest else [])
    for part in parts:
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif inspect.ismodule(obj) and importlib.util.find_spec(f"{obj.__name__}.{part}") is not None:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
        elif inspect.isclass(obj) and (part in {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj)
                                       else re.search(rf"self\.{part}\s*=", inspect.getsource(obj.__init__))):
            return None  # a dataclass field or an attribute every instance sets
        else:
            raise AttributeError(f"{name}: {getattr(obj, '__name__', obj)!r} has no {part!r}")
    return obj


@cache
def _commands() -> dict:
    import typer

    from dojo_cli.cli.app import COMMANDS, load_command

    del typer
    return {entry.name: load_command(entry) for entry in COMMANDS}


def _check_cli(text: str) -> None:
    words = text.split()
    assert words[0] == "dojo" and len(words) >= 2, text
    commands = _commands()
    assert words[1] in commands, f"no command 'dojo {words[1]}'"
    flags = {opt for p in commands[words[1]].params for opt in (*p.opts, *p.secondary_opts)}
    for w in words[2:]:
        assert not w.startswith("-") or w in flags, f"'dojo {words[1]}' has no option {w}"


def _check_scene_field(path: str) -> None:
    """A field of the scene format (dojo_cli/scene/schema/), walked from the top:
    ``joints.dofs``; ``bodies.shape.type=capsule`` is the shape whose type is capsule."""
    from dojo_cli.scene import schema

    models: tuple = (schema.SceneSpec,)
    for part in path.split("."):
        key, _, tag = part.partition("=")
        if tag:
            kinds = [m.fields[key].default for m in models if key in m.fields]
            assert tag in kinds, f"scene field {path}: no {key} {tag!r} (there are {kinds})"
            return
        try:
            field = schema._model_field(models, None, key)
        except LookupError:
            # a key the loader rewrites before validation (a joint's ``dofs``, skydy's way,
            # becomes its type and axis): documented in docs/scenes.md, not a spec field
            docs = (ROOT / "docs" / "scenes.md").read_text()
            assert f"`{key}:`" in docs or f"({key}:" in docs or f"`{key}`" in docs, \
                f"scene field {path}: {key!r} is neither a field of the schema nor documented in docs/scenes.md"
            return
        models = field.specs or ()


def test_every_name_of_ours_exists():
    from dojo_cli.scene.loader import builtin_scene_names

    builtins = set(builtin_scene_names())
    problems = []
    for r in rows():
        for name in r.ours:
            try:
                if name.startswith("dojo "):
                    _check_cli(name)
                elif name.startswith("scene: "):
                    try:
                        _check_scene_field(name.removeprefix("scene: "))
                    except LookupError as exc:
                        raise AssertionError(f"{name}: {exc}") from None
                elif name.startswith("builtin: "):
                    assert name.removeprefix("builtin: ") in builtins, f"no built-in scene {name}"
                else:
                    assert name.partition(".")[0] in PREFIXES, f"{name}: not a name of ours (prefixes {sorted(PREFIXES)})"
                    _resolve_python(name)
            except (AssertionError, AttributeError, ImportError) as exc:
                problems.append(f"{r.where()}: {exc}")
    assert not problems, "\n".join(problems)


def test_the_summary_counts_the_rows():
    counts: dict[str, int] = {}
    for r in rows():
        kind = "not applicable" if r.status.startswith("not applicable") else r.status.split(" (")[0].split()[0]
        counts[kind] = counts.get(kind, 0) + 1
    m = re.search(r"(\d+) items: (\d+) same, (\d+) partial, (\d+) missing, (\d+) not applicable", TABLE.read_text())
    assert m, "docs/coverage.md: no summary line 'N items: a same, b partial, c missing, d not applicable'"
    got = tuple(int(g) for g in m.groups())
    want = (len(rows()), counts.get("same", 0), counts.get("partial", 0), counts.get("missing", 0),
            counts.get("not applicable", 0))
    assert got == want, f"docs/coverage.md summary says {got}, the rows are {want}"
