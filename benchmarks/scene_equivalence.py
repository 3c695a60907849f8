"""Scene validation, before and after a change: the same inputs, the same outcomes.

Usage:
    python benchmarks/scene_equivalence.py record OUT.jsonl [--per-scene N] [--seed S] [--no-cli] [--skip-urdf]
    python benchmarks/scene_equivalence.py compare A.jsonl B.jsonl

``record`` runs a large set of scene inputs through ``dojo check`` (the loader, then the
builder) and writes one JSON line per input: the exit code and output of ``dojo check``,
and, for a valid scene, the validated spec in full (every value with its Python type, each
model's set fields) and whether its dump loads back equal. Run it with one checkout's
interpreter, then with another's, and ``compare`` the two files: a change to the schema
or the loader that is meant to keep validation as it is (issue 15's pydantic-core specs)
must leave every line identical.

The inputs: every built-in scene, and for each many single mutations of its data (of the
file as written, or of its resolved dump for a URDF scene): a value replaced by one of
another type or out of range (a string, true, null, nan, .inf, a huge integer, a negative
number, a list, a mapping, a bad name), a key removed, an unknown key added, a list one
entry longer or shorter; and ``--set`` overrides of fields the file leaves at their
defaults (``field_default``), with good and bad values. The mutations are drawn with a
fixed seed (per scene), so both runs see the same inputs.

``--no-cli`` leaves ``dojo check`` out (the loader alone: an environment without typer or
the compiled core, such as one with the oldest pydantic-core allowed), ``--skip-urdf`` the
URDF scenes (an environment without their robot packages); compare records made alike.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import yaml  # noqa: E402

# Replacement values: wrong types, bad numbers, bad names, lists and mappings.
VALUES = [
    "abc", True, False, None, math.nan, math.inf, -math.inf, -1, 0, 0.5, 2, 3, 1e200, -1e-200, 1e-150,
    10**400, [], {}, [1, 2], [0, 0, 0], [1, 0, 0], [1, 0, 0, 0], [0.5, 0.5, 0.5, 0.5], [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    [[1, 2, 0], [0, 1, 0], [0, 0, 1]], [1, 2, 3, 4, 5], "origin", "", "  ", "a/b", "x\x01y", "ground", "box", "revolute",
    "floating", "n" * 300, {"type": "box", "size": [1, 1, 1]}, {"type": "sphere"}, {"type": "blob"},
    {"normal": [0, 0, 1]}, {"body": "nosuch", "shape": "sphere", "radius": 0.1}, {"lower": [0], "upper": [-1]},
    {"x": [0, 1]}, "schedule", "pd", "body", "hull", 17, -0.0, 1.5,
]
# Values only Python data can hold (``spec_from_dict``): numpy scalars and arrays, tuples.
PYTHON_VALUES = [
    lambda: np.float64(2.0), lambda: np.int64(3), lambda: np.float32(0.5), lambda: np.array([1.0, 0.0, 0.0]),
    lambda: np.array([[2.0, 0, 0], [0, 2.0, 0], [0, 0, 2.0]]), lambda: (1.0, 0.0, 0.0), lambda: (1, 0, 0, 0),
    lambda: np.bool_(True), lambda: np.array([np.nan, 0, 1]), lambda: 1 + 2j, lambda: b"bytes", lambda: {1: 2},
    lambda: ("a", "b"), lambda: np.array(["x"]), lambda: frozenset({1}),
]
UNKNOWN_KEYS = [("masss", 1.0), ("colour", [1, 0, 0]), ("typ", "box"), ("nmae", "x"), ("zzz", None)]


def _paths(node, prefix=()):
    """Every path into the data (mapping keys and list indexes), the root excluded."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield prefix + (index,)
            yield from _paths(value, prefix + (index,))


def _parent(data, path):
    node = data
    for part in path[:-1]:
        node = node[part]
    return node


def _mutations(data, rng: random.Random, count: int):
    """``count`` single mutations of ``data``: (label, mutated data)."""
    paths = list(_paths(data))
    out = []
    for _ in range(count):
        path = rng.choice(paths)
        mutated = copy.deepcopy(data)
        parent = _parent(mutated, path)
        key = path[-1]
        kind = rng.random()
        label = ".".join(map(str, path))
        if kind < 0.62:
            value = copy.deepcopy(rng.choice(VALUES))
            parent[key] = value
            label += f" = {value!r:.40}"
        elif kind < 0.72:
            del parent[key]
            label += " removed"
        elif kind < 0.82:
            target = parent[key] if isinstance(parent[key], dict) else parent
            if not isinstance(target, dict):
                continue
            name, value = rng.choice(UNKNOWN_KEYS)
            target[name] = value
            label += f" + {name}"
        else:
            target = parent[key] if isinstance(parent[key], list) else parent
            if not isinstance(target, list) or not target:
                continue
            if rng.random() < 0.5:
                target.append(copy.deepcopy(target[-1]))
                label += " longer"
            else:
                target.pop()
                label += " shorter"
        out.append((label, mutated))
    return out


def _flat(node, prefix=()):
    """{path: value} of the leaves (and empty containers) of plain data."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _flat(value, prefix + (str(key),))
    elif isinstance(node, list) and node:
        for index, value in enumerate(node):
            yield from _flat(value, prefix + (str(index),))
    else:
        yield prefix, node


def _override_inputs(raw, full, rng: random.Random, count: int):
    """--set overrides of fields the file leaves out (their defaults), good and bad values."""
    raw_paths = {p for p, _ in _flat(raw)} | {tuple(map(str, p)) for p in _paths(raw)}
    missing = [(p, v) for p, v in _flat(full) if p not in raw_paths]
    out = []
    for _ in range(count if missing else 0):
        path, value = rng.choice(missing)
        text = ".".join(path)
        choice = rng.random()
        if choice < 0.4:
            shown = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()
        else:
            shown = rng.choice(["abc", "-1", "0", "true", "null", "[1, 2]", "{a: 1}", ".nan", "1e300", "2"])
        # the parent field too, so that field_default answers for missing mappings
        if rng.random() < 0.3 and len(path) > 1:
            text = ".".join(path[:-1]) + ".nosuch" if rng.random() < 0.3 else text
        out.append((f"--set {text}={shown}", [f"{text}={shown}"]))
    return out


def _walk(obj):
    """Plain, comparable form of a validated spec: models with their set fields, leaves typed."""
    fields_set = getattr(obj, "__pydantic_fields_set__", None)
    if fields_set is not None:
        return [type(obj).__name__, {k: _walk(v) for k, v in obj.__dict__.items()}, sorted(fields_set)]
    if isinstance(obj, list):
        return [_walk(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _walk(v) for k, v in obj.items()}
    return f"{type(obj).__name__}:{obj!r}"


def record(out_path: Path, per_scene: int, seed: int, cli: bool = True, urdf_scenes: bool = True) -> None:
    from dojo_cli.errors import DojoError
    from dojo_cli.scene.loader import (
        builtin_scene_names,
        builtin_scene_text,
        builtin_scene_unavailable,
        dump_scene,
        dump_scene_data,
        load_scene_spec_from_string,
        spec_from_dict,
    )

    if cli:
        from typer.testing import CliRunner

        from dojo_cli.cli.app import app

        runner = CliRunner()
    work = Path(tempfile.mkdtemp(prefix="scene_equivalence_"))
    os.chdir(work)
    lines = 0
    with open(out_path, "w") as out:

        def validated(entry: dict, load) -> object | None:
            """``load()``'s spec, recorded in ``entry`` with its problems or its values."""
            try:
                spec = load()
            except DojoError as exc:
                entry["problems"] = [str(p) for p in getattr(exc, "problems", [exc])]
            except Exception as exc:  # noqa: BLE001 (recorded: the two runs must fail alike)
                entry["problems"] = [f"{type(exc).__name__}: {exc}"]
            else:
                entry["spec"] = _walk(spec)
                return spec
            return None

        def run_python(label: str, data: dict) -> None:
            entry: dict = {"input": label}
            validated(entry, lambda: spec_from_dict(data, "scene.py", base_dir=work))
            write(entry)

        def write(entry: dict) -> None:
            nonlocal lines
            # paths into this checkout and its environment (mesh files of URDF scenes) as placeholders
            line = json.dumps(entry, sort_keys=True, default=repr)
            for path, shown in ((str(work), "<work>"), (sys.prefix, "<venv>"), (str(ROOT), "<checkout>")):
                line = line.replace(path, shown)
            out.write(line + "\n")
            lines += 1

        def run(label: str, text: str, overrides: list[str]) -> None:
            entry: dict = {"input": label}
            if cli:
                (work / "scene.yaml").write_text(text, encoding="utf-8")
                args = ["check", "scene.yaml"] + [w for item in overrides for w in ("--set", item)]
                res = runner.invoke(app, args)
                entry.update({"exit": res.exit_code, "output": res.output})
                if res.exception is not None and not isinstance(res.exception, SystemExit):
                    entry["exception"] = f"{type(res.exception).__name__}: {res.exception}"
            spec = validated(entry, lambda: load_scene_spec_from_string(text, "scene.yaml", work, overrides))
            if spec is not None:
                dumped = dump_scene(spec)
                entry["dump"] = dumped
                entry["round_trip"] = load_scene_spec_from_string(dumped, "scene.yaml", work) == spec
            write(entry)

        for name in builtin_scene_names():
            if builtin_scene_unavailable(name) is not None:
                print(f"{name}: unavailable here, skipped", file=sys.stderr)
                continue
            rng = random.Random(f"{seed}:{name}")
            text = builtin_scene_text(name)
            raw = yaml.safe_load(text)
            if not urdf_scenes and "urdf" in raw:
                continue
            run(f"{name}", text, [])
            spec = load_scene_spec_from_string(text, "scene.yaml", work)
            full = yaml.safe_load(dump_scene(spec))
            urdf = "urdf" in raw
            base = full if urdf else raw
            count = per_scene // 3 if urdf else per_scene
            for label, mutated in _mutations(base, rng, count):
                run(f"{name}: {label}", dump_scene_data(mutated), [])
            if not urdf:
                for label, mutated in _mutations(full, rng, count // 4):
                    run(f"{name} (resolved): {label}", dump_scene_data(mutated), [])
            for label, items in _override_inputs(raw, full, rng, count // 4):
                run(f"{name}: {label}", text, items)
            paths = list(_paths(base))
            for _ in range(count // 6):
                path = rng.choice(paths)
                mutated = copy.deepcopy(base)
                value = rng.choice(PYTHON_VALUES)()
                _parent(mutated, path)[path[-1]] = value
                run_python(f"{name} (python): {'.'.join(map(str, path))} = {value!r:.40}", mutated)
    print(f"{lines} inputs recorded in {out_path}")


def compare(a: Path, b: Path) -> int:
    left = a.read_text().splitlines()
    right = b.read_text().splitlines()
    if len(left) != len(right):
        print(f"different counts: {len(left)} and {len(right)} inputs")
        return 1
    differ = 0
    for x, y in zip(left, right):
        if x != y:
            differ += 1
            if differ <= 10:
                ex, ey = json.loads(x), json.loads(y)
                print(f"differs: {ex['input']}")
                for key in sorted(set(ex) | set(ey)):
                    if ex.get(key) != ey.get(key):
                        print(f"  {key}:\n    {str(ex.get(key))[:600]}\n    {str(ey.get(key))[:600]}")
    valid = sum('"spec"' in x for x in left)
    print(f"{len(left)} inputs ({valid} valid, {len(left) - valid} invalid): "
          + ("all identical" if not differ else f"{differ} differ"))
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--per-scene", type=int, default=90, help="mutations per scene (a third for URDF scenes)")
    rec.add_argument("--seed", type=int, default=15)
    rec.add_argument("--no-cli", action="store_true", help="the loader alone, without dojo check")
    rec.add_argument("--skip-urdf", action="store_true", help="leave out the URDF scenes")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out.resolve(), args.per_scene, args.seed, cli=not args.no_cli, urdf_scenes=not args.skip_urdf)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
