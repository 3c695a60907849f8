"""The true-process sample: a few cases per family through the installed `dojo` executable.

Each case runs twice, through the fork server and as a plain subprocess of the console
script, in two folders holding the same files. The two must agree (exit code or signal,
stdout, stderr, up to the folder names and the fork server's one frame at the top of a
traceback), which is what lets the families run on the fork server; and the real process
must keep the properties every fuzz case keeps.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.fuzz.damage import apply_damage
from tests.fuzz.runner import run_real, violations
from tests.fuzz.strategies import URDF_DIR, builtin_text

PENDULUM = builtin_text("pendulum")
ROBOT = (URDF_DIR / "robot.urdf").read_text()
PACKAGES = str(URDF_DIR / "packages")


def _write(d: Path, name: str, data) -> None:
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# family -> [(case id, setup(dir, base_runs), argv, outputs)]
CASES = {
    "scenes": [
        ("valid-heavier", lambda d, r: _write(d, "s.yaml", PENDULUM.replace("mass: 1.0", "mass: 2.0")),
         ["simulate", "s.yaml", "--steps", "5", "-q", "-o", "out.h5"], ["out.h5"]),
        ("nul-in-name", lambda d, r: _write(d, "s.yaml", PENDULUM.replace("name: link", "name: li\x00nk")),
         ["check", "s.yaml"], []),
        ("nested-400", lambda d, r: _write(d, "s.yaml", PENDULUM.replace("mass: 1.0", "mass: " + "[" * 400 + "1" + "]" * 400)),
         ["check", "s.yaml"], []),
    ],
    "set": [
        ("mass-1e300", None, ["simulate", "pendulum", "--set", "bodies.0.mass=1e300", "--steps", "5", "-q", "-o", "out.h5"],
         ["out.h5"]),
        ("nan-initial", None, ["simulate", "box", "--set", "joints.0.initial.position=[0, 0, 1, 0, 0, .nan]", "--steps",
                               "5", "-q", "-o", "out.h5"], ["out.h5"]),
        ("spring-text", None, ["check", "slider", "--set", "joints.slide.spring=abc"], []),
    ],
    "storage": [
        ("truncated", lambda d, r: _damaged(d, r, [("truncate", 3000)]), ["energy", "run.h5"], []),
        ("nan-states", lambda d, r: _damaged(d, r, [("dataset", "x", "nan", 3)]), ["plot", "run.h5", "--png", "p.png"], []),
        ("scene-attr-nul", lambda d, r: _damaged(d, r, [("attr", ("/", "scene"), ("str", PENDULUM.replace("link", "l\x00k")))]),
         ["replay", "run.h5", "--html", "r.html"], []),
        ("replay-speed-1e-300", lambda d, r: _damaged(d, r, []), ["replay", "run.h5", "--html", "r.html", "--speed", "1e-300"],
         []),
    ],
    "urdf": [
        ("mass-nan", lambda d, r: _write(d, "robot.urdf", ROBOT.replace('<mass value="0.5"/>', '<mass value="nan"/>')),
         ["import-urdf", "robot.urdf", "-o", "out.yaml", "--package-path", PACKAGES], []),
        ("mesh-path-5000", lambda d, r: _write(d, "robot.urdf", ROBOT.replace("package://fixture_pkg/meshes/part.obj", "m" * 5000)),
         ["import-urdf", "robot.urdf", "-o", "out.yaml"], []),
        ("xxe", lambda d, r: _write(d, "robot.urdf", ROBOT.replace(
            "<robot ", '<!DOCTYPE robot [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<robot ').replace('name="base"', 'name="&xxe;"', 1)),
         ["import-urdf", "robot.urdf", "-o", "out.yaml"], []),
    ],
}


def _damaged(d: Path, runs: dict[str, Path], ops: list) -> None:
    shutil.copyfile(runs["pendulum"], d / "run.h5")
    apply_damage(d / "run.h5", ops, PENDULUM)


_SERVER_FRAME = re.compile(r'  File "[^"]*forkserver\.py", line \d+, in <module>\n(    .*\n)?(\s*\^+\n)?')


def normalised(text: str, d: Path) -> str:
    return _SERVER_FRAME.sub("", text.replace(str(d.resolve()), "<case>").replace(str(d), "<case>"))


@pytest.mark.parametrize("family", sorted(CASES))
def test_real_process_matches_fork(fuzz, base_runs, request, family):
    test = request.node.nodeid
    problems = []
    for case_id, setup, argv, outputs in CASES[family]:
        fork_dir, real_dir = fuzz.case_dir(), fuzz.case_dir()
        for d in (fork_dir, real_dir):
            if setup is not None:
                setup(d, base_runs)
        inputs = [p.name for p in fork_dir.iterdir()]
        fork = fuzz.server.run(argv, fork_dir)
        real = run_real(argv, real_dir)
        fuzz.check(test, family, real, violations(real, [real_dir / o for o in outputs]), inputs, {"case": case_id})
        same = (fork.code, fork.stdout, normalised(fork.stderr, fork_dir)) == (
            real.code, real.stdout, normalised(real.stderr, real_dir))
        if not same:
            problems.append(f"{case_id}: the fork server and the real executable differ:\n"
                            f"  fork {fork.code}: {normalised(fork.stderr, fork_dir)[-800:]!r}\n"
                            f"  real {real.code}: {normalised(real.stderr, real_dir)[-800:]!r}")
        fuzz.done(fork_dir)
        fuzz.done(real_dir)
    summary = fuzz.recorder.summary(test) if fuzz.recorder.failures.get(test) else ""
    assert not problems and not summary, "\n".join(problems + [summary])
