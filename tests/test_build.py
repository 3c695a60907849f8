"""The build survives pip's build isolation (issue 28 item 5): a repeated `pip install -e .`
recompiles nothing.

Under isolation nanobind sits in a new temporary folder for every build and scikit-build-core
deletes the build directory's CMakeCache.txt and top-level CMakeFiles/ (a "new isolated
environment"). The test configures the project twice the way that happens: nanobind at two
different temporary paths (a copy on PYTHONPATH, which `python -m nanobind --cmake_dir` then
reports), the cache and CMakeFiles/ deleted in between. Ninja rebuilds an object when its
command changes or its file is gone, so the compile commands must be the same both times and
name neither temporary path, and the objects must live outside the top-level CMakeFiles/.
Configuring only (no compile): a few seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
# What configuring takes on a loaded 2-core machine (compiler detection, nanobind's checks).
CONFIGURE_TIMEOUT = 300


def _tools() -> tuple[str, str]:
    """cmake and ninja: the system's where they are on PATH, else the PyPI packages' of the
    test extra (what pip's isolated build environment fetches too)."""
    cmake, ninja = shutil.which("cmake"), shutil.which("ninja")
    if not cmake:
        import cmake as cmake_package

        cmake = str(Path(cmake_package.CMAKE_BIN_DIR) / "cmake")
    if not ninja:
        import ninja as ninja_package

        ninja = str(Path(ninja_package.BIN_DIR) / "ninja")
    return cmake, ninja


def _configure(cmake: str, ninja: str, build: Path, nanobind_site: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(nanobind_site))
    env.pop("CMAKE_CXX_COMPILER_LAUNCHER", None)  # a ccache launcher would be in the commands on one side only
    res = subprocess.run([cmake, "-S", str(ROOT), "-B", str(build), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}", "-DCMAKE_BUILD_TYPE=Release",
                          f"-DPython_EXECUTABLE={sys.executable}"], env=env, capture_output=True, text=True,
                         timeout=CONFIGURE_TIMEOUT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def _compile_commands(ninja: str, build: Path) -> dict[str, str]:
    """Each object of the module and of nanobind's library -> its compile command."""
    out = subprocess.run([ninja, "-C", str(build), "-t", "commands"], capture_output=True, text=True,
                         check=True).stdout
    commands = {}
    for line in out.splitlines():
        if " -c " in line and " -o " in line:
            commands[line.split(" -o ", 1)[1].split()[0]] = line
    return commands


def test_a_new_isolated_environment_recompiles_nothing(tmp_path):
    import nanobind  # the test extra installs it

    cmake, ninja = _tools()
    build = tmp_path / "build"
    runs = []
    for name in ("pip-build-env-first", "pip-build-env-second"):
        site = tmp_path / name / "site-packages"
        shutil.copytree(Path(nanobind.__file__).parent, site / "nanobind",
                        ignore=shutil.ignore_patterns("__pycache__"))
        # what scikit-build-core does when its isolated environment is a new one
        (build / "CMakeCache.txt").unlink(missing_ok=True)
        shutil.rmtree(build / "CMakeFiles", ignore_errors=True)
        _configure(cmake, ninja, build, site)
        runs.append(_compile_commands(ninja, build))
        shutil.rmtree(tmp_path / name)  # pip deletes its environment after the build

    first, second = runs
    core_objects = [o for o in first if o.endswith(".cpp.o") and "nanobind" not in o]
    assert len(core_objects) == len(list((ROOT / "dojo_cli" / "core").rglob("*.cpp"))), sorted(first)
    assert any("nanobind" in o for o in first), "nanobind's library is compiled from its sources"
    assert first == second, "a compile command changed with nanobind's temporary path"
    for obj, command in first.items():
        assert "pip-build-env" not in command, command
        assert not obj.startswith("CMakeFiles/"), f"{obj}: scikit-build-core deletes the top-level CMakeFiles/"
