"""Cold start: what ``import dojo_cli`` and each ``dojo`` command import.

``import dojo_cli`` imports nothing heavy (dojo_cli/__init__.py resolves its names on
first use), ``dojo --help`` imports no command's module, and a command imports its own
module and none of the others' (dojo_cli/cli/app.py lists them). Each check runs in a
fresh interpreter, since sys.modules of the test process already holds everything.
benchmarks/cold_start.py measures the times these keep low.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dojo_cli
from dojo_cli.cli.app import COMMANDS, load_command

ROOT = Path(__file__).resolve().parents[1]

# Libraries ``import dojo_cli`` must leave alone (each costs 0.05-0.7 s to import).
HEAVY_FOR_IMPORT = ("numpy", "scipy", "pydantic", "typer", "h5py", "lxml", "trimesh", "matplotlib", "meshcat")
# ``dojo --help`` needs typer (and rich), nothing of the library.
HEAVY_FOR_HELP = ("numpy", "scipy", "h5py", "lxml", "matplotlib", "meshcat", "trimesh")
# ``dojo simulate`` of a scene without `urdf:` draws nothing and reads no URDF; the step
# is the C++ core's, so scipy (only the URDF reader's rotations use it) stays out too.
HEAVY_FOR_SIMULATE = ("scipy", "lxml", "trimesh", "matplotlib", "meshcat")
# ``dojo simulate`` of a URDF scene reads the URDF with lxml, and nothing else heavy: no
# trimesh (no mesh is opened), no scipy (the importer's rotations are its own), issue 24.
HEAVY_FOR_URDF_SIMULATE = ("scipy", "trimesh", "matplotlib", "meshcat")

# The modules that define commands; each command may import only its own.
COMMAND_MODULES = {entry.target.partition(":")[0] for entry in COMMANDS}

# Run in a fresh interpreter: the code, then (at exit, also after SystemExit) the
# names in sys.modules written as JSON to the file named by the first argument.
_PROBE = """\
import atexit, json, sys
_out = sys.argv.pop(1)

def _dump_modules():
    with open(_out, "w") as f:
        json.dump(sorted(sys.modules), f)

atexit.register(_dump_modules)
"""
_RUN_DOJO = """\
from dojo_cli.__main__ import main  # the `dojo` entry point (pyproject.toml [project.scripts])
sys.argv = ["dojo", *sys.argv[1:]]
main()
"""


def _loaded(tmp_path: Path, code: str, *args: str, **environ: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules a fresh interpreter has imported after running ``code`` with ``args``
    (``environ``: further environment variables)."""
    out = tmp_path / "modules.json"
    # the dojo_cli this process imported (a checkout, or an installed package with its compiled core)
    here = str(Path(dojo_cli.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])), **environ)
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE + code, str(out), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.exists(), f"the probe wrote no module list (exit {proc.returncode}):\n{proc.stderr}"
    return set(json.loads(out.read_text())), proc


def _top_level(modules: set[str], names) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(names))


# ------------------------------------------------------------------ import dojo_cli


def test_import_dojo_cli_imports_no_heavy_library(tmp_path):
    modules, proc = _loaded(tmp_path, "import dojo_cli\n")
    assert proc.returncode == 0, proc.stderr
    heavy = _top_level(modules, HEAVY_FOR_IMPORT)
    assert not heavy, f"`import dojo_cli` imported {heavy}"
    ours = sorted(m for m in modules if m.startswith("dojo_cli."))
    assert not ours, f"`import dojo_cli` imported submodules {ours}"


def test_every_public_name_resolves_to_its_definition():
    import importlib

    for name in dojo_cli.__all__:
        module = importlib.import_module(dojo_cli._EXPORTS[name])
        assert getattr(dojo_cli, name) is getattr(module, name), f"dojo_cli.{name}"
    assert set(dojo_cli.__all__) <= set(dir(dojo_cli)), "dir(dojo_cli) lists every public name"
    assert dojo_cli.__version__


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        dojo_cli.no_such_name  # noqa: B018
    assert not hasattr(dojo_cli, "no_such_name")


def test_subpackages_are_attributes_as_before():
    for name in dojo_cli._SUBMODULES:
        assert getattr(dojo_cli, name).__name__ == f"dojo_cli.{name}"


def test_type_checking_imports_list_the_public_names():
    """The names IDEs and type checkers see (the TYPE_CHECKING block) are the exported ones."""
    tree = ast.parse((ROOT / "dojo_cli" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    seen = {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert seen == dojo_cli._EXPORTS


# ------------------------------------------------------------------------ dojo CLI


@pytest.mark.parametrize("args", [["--help"], ["--version"]], ids=["help", "version"])
def test_dojo_help_imports_no_command(tmp_path, args):
    modules, proc = _loaded(tmp_path, _RUN_DOJO, *args)
    assert proc.returncode == 0, proc.stderr
    commands = sorted(modules & COMMAND_MODULES)
    assert not commands, f"`dojo {' '.join(args)}` imported command modules {commands}"
    heavy = _top_level(modules, HEAVY_FOR_HELP)
    assert not heavy, f"`dojo {' '.join(args)}` imported {heavy}"
    entry = {"dojo_cli.__main__"}  # the executable's entry point is not library code
    library = sorted(m for m in modules - entry if m.startswith("dojo_cli.") and not m.startswith("dojo_cli.cli"))
    assert not library, f"`dojo {' '.join(args)}` imported {library}"


def _first_command_of_each_module() -> list:
    """The first command of each command module (a module's other commands import the same)."""
    first = {}
    for entry in COMMANDS:
        first.setdefault(entry.target.partition(":")[0], entry)
    return list(first.values())


_ONE_PER_MODULE = _first_command_of_each_module()


@pytest.mark.parametrize("entry", _ONE_PER_MODULE, ids=[entry.name for entry in _ONE_PER_MODULE])
def test_command_help_imports_only_its_module(tmp_path, entry):
    modules, proc = _loaded(tmp_path, _RUN_DOJO, entry.name, "--help")
    assert proc.returncode == 0, proc.stderr
    own = entry.target.partition(":")[0]
    others = sorted((modules & COMMAND_MODULES) - {own})
    assert own in modules, f"`dojo {entry.name} --help` did not import {own}"
    assert not others, f"`dojo {entry.name} --help` imported other commands' modules {others}"


def test_simulate_imports_no_picture_viewer_or_urdf_reader(tmp_path):
    modules, proc = _loaded(tmp_path, _RUN_DOJO, "simulate", "pendulum", "--steps", "10", "-o", "run.h5", "-q")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "run.h5").exists()
    heavy = _top_level(modules, HEAVY_FOR_SIMULATE)
    assert not heavy, f"`dojo simulate pendulum` imported {heavy}"
    others = sorted((modules & COMMAND_MODULES) - {"dojo_cli.cli.commands.simulate"})
    assert not others, f"`dojo simulate` imported other commands' modules {others}"


def test_simulate_of_a_urdf_scene_imports_no_mesh_library_or_scipy(tmp_path):
    # example-robot-data is in the test extra: go1's URDF is there (no skip)
    modules, proc = _loaded(tmp_path, _RUN_DOJO, "simulate", "go1", "--steps", "1", "-o", "run.h5", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "lxml" in {m.split(".")[0] for m in modules}, "go1 is a URDF scene: its URDF was read"
    heavy = _top_level(modules, HEAVY_FOR_URDF_SIMULATE)
    assert not heavy, f"`dojo simulate go1` imported {heavy}"


def test_shell_loop_commands_import_only_what_they_use(tmp_path):
    """The shell loop of the issue (simulate, then info --get) pays start-up twice per run:
    `dojo info --get` validates no scene, so it imports no YAML reader, scipy or matplotlib,
    and a variational run imports none of the rk4 integrator's minimal-coordinate modules.
    (pydantic, and hashlib with it, are typer's: typer 0.29 coerces every option value
    through a pydantic TypeAdapter, and dojo_cli uses typer through its public API only,
    issue 25.)"""
    modules, proc = _loaded(tmp_path, _RUN_DOJO, "simulate", "pendulum", "--steps", "2", "-o", "run.h5", "-q")
    assert proc.returncode == 0, proc.stderr
    minimal = sorted(m for m in modules if m.startswith("dojo_cli.minimal"))
    assert not minimal, f"`dojo simulate pendulum` imported {minimal}"
    modules, proc = _loaded(tmp_path, _RUN_DOJO, "info", "run.h5", "--get", "x[-1, link, 0]")
    assert proc.returncode == 0, proc.stderr
    heavy = _top_level(modules, ("scipy", "matplotlib", "yaml"))
    assert not heavy, f"`dojo info --get` imported {heavy}"


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "pendulum", "--steps", "2", "--duration", "1", "-o", "run.h5", "-q"],  # refused: both given
        ["simulate", "pendulum", "--steps", "abc"],  # a bad number: typer's message
        ["check", "pendulum"],
        ["check", "bad.yaml"],  # an invalid scene: problems from pydantic-core's errors
        ["info", "run.h5", "--get", "x[-1, link, 0]"],
    ],
    ids=["simulate", "simulate-bad-option", "check", "check-invalid", "info"],
)
def test_shell_loop_commands_answer_in_one_line(tmp_path, args):
    """The commands of the shell loop answer good and bad input with their exit code and
    no traceback, in a fresh interpreter (what each start-up imports on the way)."""
    (tmp_path / "bad.yaml").write_text("name: bad\ntimestep: abc\nbodies: []\n")
    if args[0] == "info":
        _, proc = _loaded(tmp_path, _RUN_DOJO, "simulate", "pendulum", "--steps", "2", "-o", "run.h5", "-q")
        assert proc.returncode == 0, proc.stderr
    _, proc = _loaded(tmp_path, _RUN_DOJO, *args)
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_the_library_never_imports_pydantic():
    """The scene specs are validated by pydantic-core alone (dojo_cli.scene.specs, issue 15):
    no module of dojo_cli imports pydantic itself (typer's coercion of option values does,
    and that cost is typer's: benchmarks/cold_start.py measures it)."""
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "dojo_cli").rglob("*.py")
                   if re.search(r"^\s*(import pydantic\b(?!_core)|from pydantic\b(?!_core))", p.read_text(), re.M))
    assert not users, f"modules importing pydantic: {users}"


def test_cli_runs_blas_on_one_thread_unless_told(tmp_path):
    """dojo_cli.__main__ sets OPENBLAS_NUM_THREADS=1 before numpy loads (its thread pool cost
    20-30 ms of every start on 2 cores; the matrices here are tiny), and keeps a user's value."""
    code = _RUN_DOJO.replace("main()", "import os\ntry:\n    main()\nfinally:\n"
                                       "    print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)")
    _, proc = _loaded(tmp_path, code, "--version")
    assert proc.returncode == 0 and "BLAS 1" in proc.stderr, proc.stderr
    _, proc = _loaded(tmp_path, code, "--version", OPENBLAS_NUM_THREADS="2")
    assert proc.returncode == 0 and "BLAS 2" in proc.stderr, proc.stderr


def test_listed_help_is_the_command_docstring():
    """`dojo --help` shows COMMANDS' help lines; `dojo NAME --help` the function's docstring."""
    assert len({entry.name for entry in COMMANDS}) == len(COMMANDS), "command names are unique"
    for entry in COMMANDS:
        command = load_command(entry)
        assert command.name == entry.name
        assert command.help == entry.help, f"{entry.name}: COMMANDS says {entry.help!r}, the docstring {command.help!r}"


def test_commands_do_not_import_the_app():
    """app.py registers the commands and imports them by name; they import dojo_cli.cli.shared,
    never app.py (no import circle)."""
    for path in (ROOT / "dojo_cli" / "cli").rglob("*.py"):
        if path.name == "app.py":
            continue
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        named = {f"{node.module}.{a.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
                 for a in node.names}
        assert "dojo_cli.cli.app" not in imported | named, f"{path.name} imports dojo_cli.cli.app"


def test_command_modules_do_not_import_each_other():
    """A command's module imports no other command's module, not even inside a function (what
    two commands share lives in dojo_cli.cli.shared, another non-command cli module, or below)."""
    for module in sorted(COMMAND_MODULES):
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        others = sorted((imported & COMMAND_MODULES) - {module})
        assert not others, f"{module} imports the command modules {others}"
