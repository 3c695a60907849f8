"""Project invariants: the README's commands, CI, and the direction of imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# errors <- math <- model <- physics/minimal <- solver <- io <- scene <- simulation <- analysis/viz
#   <- api/sweep/optimize <- cli
# The scene sits below the simulation: its builder is arithmetic on the description (it never
# solves; a run's initial state is the simulation's, simulation.initial). io (the file formats:
# storage, input tables, state files) sits below the scene, which reads a schedule's table,
# and the simulation, whose run driver writes storage files (simulation.run_file), as Brax
# keeps every file format in io/. optimize sits with sweep, not with analysis: it loads its
# task's scene and writes a run's storage file; fit beside it: it loads its fit file's scene and
# data. Their task, fit and sweep files are read by one reader, scene.task_file. The compiled core (dojo_cli._core) is below
# them all: any layer may import it.
LAYERS = ["errors", "math", "model", "physics", "minimal", "solver", "io", "scene", "simulation", "analysis", "viz", "api",
          "sweep", "optimize", "fit", "cli"]
RANK = {"errors": 0, "math": 1, "model": 2, "physics": 3, "minimal": 3, "solver": 4, "io": 5, "scene": 6,
        "simulation": 7, "analysis": 8, "viz": 8, "api": 9, "sweep": 9, "optimize": 9, "fit": 9, "jax": 9, "cli": 10}


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    test_cmd = [b.strip() for b in blocks if "pytest" in b]
    assert len(test_cmd) == 1, "one README block runs the tests"
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd[0] in ci, "CI runs exactly the README's test command"


def test_readme_quick_start_runs_a_builtin_scene():
    readme = (ROOT / "README.md").read_text()
    assert "dojo simulate pendulum" in readme


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "dojo_cli" or len(parts) < 2:
        return None
    return parts[1]


def test_imports_point_one_way():
    bad = []
    for path in (ROOT / "dojo_cli").rglob("*.py"):
        rel = path.relative_to(ROOT / "dojo_cli")
        own = rel.parts[0].removesuffix(".py")
        if own not in RANK:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                target = _layer(node.module)
            elif isinstance(node, ast.Import):
                target = next((_layer(a.name) for a in node.names if _layer(a.name)), None)
            else:
                continue
            if target in RANK and RANK[target] > RANK[own]:
                bad.append(f"{rel}: imports {target}")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_every_package_has_a_layer():
    """A new top-level package or module gets a place in the order (an unranked one would
    escape test_imports_point_one_way)."""
    names = {p.stem if p.is_file() else p.name for p in (ROOT / "dojo_cli").iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists())}
    unranked = sorted(names - set(RANK) - {"__init__", "__main__"})
    assert not unranked, f"packages without a layer in RANK: {unranked}"


# The scene's packages split by concept, each module's place bottom to top: a module imports
# only those before it in its package (an import under ``if TYPE_CHECKING:`` is for
# annotations alone). Between the packages, imports go down SCENE_PACKAGE_RANK: what the two
# importers share (scene/importing) imports neither, and neither importer imports the other.
SCENE_PACKAGE_ORDER = {
    "schema": ["field_types", "shapes", "bodies", "joints", "contacts", "controller", "solver", "scene"],
    "importing": ["messages", "rotations", "scene_data", "mass", "meshes", "xml_file"],
    "urdf": ["values", "transforms", "options", "inertia", "elements", "link_reader", "joint_reader", "reader", "tree",
             "bodies", "joints", "initial_pose", "contacts", "importer"],
    "mjcf": ["rotations", "options", "elements", "values", "defaults", "body_tree", "reader", "mass", "contacts",
             "bodies", "joints", "actuators", "keyframes", "importer"],
}
SCENE_PACKAGE_RANK = {"schema": 0, "importing": 1, "urdf": 2, "mjcf": 2}


def _runtime_imports(tree: ast.AST) -> list[str]:
    """The modules a file imports, but under ``if TYPE_CHECKING:``."""
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
               for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_scene_packages_import_one_way():
    bad = []
    for package, order in SCENE_PACKAGE_ORDER.items():
        folder = ROOT / "dojo_cli" / "scene" / package
        modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
        unplaced = sorted(set(modules) - set(order))
        assert not unplaced, f"scene/{package}: modules without a place in SCENE_PACKAGE_ORDER: {unplaced}"
        for name in modules:
            for target in _runtime_imports(ast.parse((folder / f"{name}.py").read_text())):
                parts = target.split(".")
                if parts[:2] != ["dojo_cli", "scene"] or len(parts) < 3 or parts[2] not in SCENE_PACKAGE_ORDER:
                    continue
                other = parts[2]
                if other != package:
                    if SCENE_PACKAGE_RANK[other] >= SCENE_PACKAGE_RANK[package]:
                        bad.append(f"scene/{package}/{name}.py imports {target}")
                elif len(parts) > 3 and order.index(parts[3]) >= order.index(name):
                    bad.append(f"scene/{package}/{name}.py imports {target} (not below it)")
    assert not bad, "imports against the scene packages' order:\n" + "\n".join(bad)


def test_scene_packages_reexport_their_public_names():
    """dojo_cli.scene.schema, .urdf and .mjcf were modules: their packages' ``__init__``
    re-exports every public name of their modules, so that the old import paths hold."""
    import importlib

    missing = []
    for package in ("schema", "urdf", "mjcf"):
        exported = set(importlib.import_module(f"dojo_cli.scene.{package}").__all__)
        for name in SCENE_PACKAGE_ORDER[package]:
            tree = ast.parse((ROOT / "dojo_cli" / "scene" / package / f"{name}.py").read_text())
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names = [node.name]
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = [t.id for t in targets if isinstance(t, ast.Name)]
                else:
                    continue
                missing += [f"{package}.{name}.{n}" for n in names if not n.startswith("_") and n not in exported]
    assert not missing, f"public names the package does not re-export: {missing}"


def test_loading_a_scene_does_not_reach_the_simulation():
    """The builder is pure (issue 25, item 3): loading and building a scene, even one whose
    velocities are given at t = 0 (box tumbles), imports nothing of dojo_cli.simulation and
    solves nothing; the midpoint state is solved when a run starts."""
    code = (
        "import sys\n"
        "from dojo_cli.scene.builder import build_mechanism\n"
        "from dojo_cli.scene.loader import load_scene_spec\n"
        "mech = build_mechanism(load_scene_spec('box'))\n"
        "assert mech.initial is None and mech.initial_t0 is not None\n"
        "print(sorted(m for m in sys.modules if m.startswith('dojo_cli.simulation')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"building a scene imported {out.stdout.strip()}"


# Text a clone holds: sources, tests, docs, benchmarks, the top-level pages.
_TEXT_SUFFIXES = {".py", ".md", ".txt", ".h", ".cpp", ".toml", ".yaml", ".yml", ".cfg"}
_OUTSIDE = "/work/" + "shared"  # (split: this file would cite it)


def test_no_file_cites_the_planners_folder_outside_the_repository():
    """Comments and docs cite what a clone has (issue 25 item 7): the users' contract is
    docs/formats.md, the reference notes docs/reference/; a path into the planners' shared
    folder resolves on no one else's machine."""
    found = []
    for top in ("dojo_cli", "tests", "docs", "benchmarks", "configs", ".ci"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and (path.suffix in _TEXT_SUFFIXES or top == ".ci"):
                text = path.read_text(encoding="utf-8", errors="replace")
                found += [f"{path.relative_to(ROOT)}:{i}" for i, line in enumerate(text.splitlines(), 1) if _OUTSIDE in line]
    for page in ROOT.glob("*.md"):
        found += [f"{page.name}:{i}" for i, line in enumerate(page.read_text().splitlines(), 1) if _OUTSIDE in line]
    assert not found, f"citations of {_OUTSIDE}: {found}"


def test_only_io_imports_h5py():
    users = [p.relative_to(ROOT) for p in (ROOT / "dojo_cli").rglob("*.py") if re.search(r"^\s*import h5py", p.read_text(), re.M)]
    assert all(p.parts[1] == "io" for p in users), users


# Sizes the Python model counts as it lays out the core's input (they are the lengths of
# ModelInput's arrays): the one overlap with the core's attributes a Mechanism may keep.
_INPUT_SIZES = {"nb", "nj", "nf", "nlim", "nc", "nu"}


def test_python_model_has_no_field_the_core_owns():
    """A Mechanism stores no structure the core derives (tree order, row layout, block
    pattern, ...): what it needs of it, it reads from Mechanism.core (issue 25, item 1)."""
    from dojo_cli import _core, load_scene

    inputs = {f["name"] for f in _core.MODEL_INPUT_FIELDS}
    for scene in ("pendulum", "box", "fourbar"):
        mech = load_scene(scene)
        core = {n for n in dir(mech.core) if not n.startswith("_")}
        derived = core - inputs - _INPUT_SIZES
        stored = set(vars(mech))
        assert not stored & derived, f"{scene}: Mechanism keeps core-owned fields {sorted(stored & derived)}"
        for size in _INPUT_SIZES:
            assert getattr(mech, size) == getattr(mech.core, size), f"{scene}: {size} differs from the core's"
        assert mech.tree_joints == mech.core.tree_joints and mech.loop_joints == mech.core.loop_joints, scene


def test_python_model_input_sets_every_core_field():
    """compiled.model_input writes every field of the core's one field list (fields.h),
    so a field added there without its value here is caught."""
    from dojo_cli import _core

    source = (ROOT / "dojo_cli" / "model" / "compiled.py").read_text()
    written = set(re.findall(r"^\s+m\.(\w+) = ", source, re.M))
    missing = [f["name"] for f in _core.MODEL_INPUT_FIELDS if f["name"] not in written]
    assert not missing, f"model_input() does not write ModelInput fields {missing}"


# io/storage/, one subsystem a module, bottom to top: each imports only modules before it
# (hdf5_walk imports nothing of dojo_cli: the probe's fresh interpreter runs it alone).
STORAGE_ORDER = ["hdf5_checks", "hdf5_walk", "format", "locks", "probe", "reader", "compaction", "writer"]


def test_storage_modules_import_one_way():
    folder = ROOT / "dojo_cli" / "io" / "storage"
    assert sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__") == sorted(STORAGE_ORDER)
    bad = []
    for own in STORAGE_ORDER:
        tree = ast.parse((folder / f"{own}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dojo_cli.io.storage."):
                target = node.module.split(".")[3]
                if STORAGE_ORDER.index(target) >= STORAGE_ORDER.index(own):
                    bad.append(f"storage/{own}.py imports {target}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and own == "hdf5_walk":
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                bad += [f"storage/hdf5_walk.py imports {n}" for n in names if n.startswith("dojo_cli")]
    assert not bad, "\n".join(bad)


def test_storage_package_exports_resolve_to_their_modules():
    import importlib

    from dojo_cli.io import storage

    for name in storage.__all__:
        module = importlib.import_module(storage._EXPORTS[name])
        assert getattr(storage, name) is getattr(module, name), f"dojo_cli.io.storage.{name}"
