"""Project invariants: the README's commands, CI, and the direction of imports."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# errors <- math <- model <- physics/minimal <- solver <- simulation <- scene/io/viz <- api/sweep/optimize <- cli
# (optimize sits with sweep, not with analysis: it loads its task's scene and writes a run's storage file)
LAYERS = ["errors", "math", "model", "physics", "minimal", "solver", "simulation", "analysis", "io", "scene", "viz", "api",
          "sweep", "optimize", "cli"]
RANK = {"errors": 0, "math": 1, "model": 2, "physics": 3, "minimal": 3, "solver": 4, "simulation": 5,
        "analysis": 6, "io": 6, "scene": 7, "viz": 7, "api": 8, "sweep": 8, "optimize": 8, "cli": 9}


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


def test_only_io_imports_h5py():
    users = [p.relative_to(ROOT) for p in (ROOT / "dojo_cli").rglob("*.py") if re.search(r"^\s*import h5py", p.read_text(), re.M)]
    assert all(p.parts[1] == "io" for p in users), users
