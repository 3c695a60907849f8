"""The README's tour runs as written (issue 30, item 4): every command of its bash blocks
below "Using it", in order, in a fresh folder holding the clone's configs/, scenes/ and data/
(what a user who pasted them one by one in the clone's root would get, their outputs kept
out of the clone), with the venv's `dojo` and `python` on the PATH as the quick start's
`source .venv/bin/activate` puts them.

Two kinds of line are handled, not skipped: the meshcat server (`dojo replay ... --contacts`,
"Ctrl-C stops") is started, must print its 127.0.0.1 address, and is stopped with SIGINT as
the user would; `pip install` lines are not run (the test command installed those extras
already: a test does not install from the network), and the test checks the distribution they
name is installed instead.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a README command may take here (the longest are the sweep's Dask start and the fits).
COMMAND_TIMEOUT = 600
SERVER_TIMEOUT = 120
SERVER_MARK = "Ctrl-C stops"
EXTRAS_DISTRIBUTION = {"robots": "example-robot-data"}


def tour_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start, end = text.index("## Using it"), text.index("## Documentation")
    return re.findall(r"```bash\n(.*?)```", text[start:end], re.S)


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("DOJO_CLI_TEST_MARKER", None)
    return env


def _folder(tmp_path: Path) -> Path:
    work = tmp_path / "tour"
    work.mkdir()
    for name in ("configs", "scenes", "data"):
        (work / name).symlink_to(ROOT / name)
    return work


def _serve(line: str, work: Path, env: dict) -> None:
    """A server line (a replay, a run with --view): it must come up on 127.0.0.1 and stop on
    Ctrl-C (a replay says "stopped", a run "interrupted", its file kept as such)."""
    command = line.split("#", 1)[0].strip()
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen, deadline = "", time.monotonic() + SERVER_TIMEOUT
    try:
        while time.monotonic() < deadline:
            out = proc.stdout.readline()
            if not out and proc.poll() is not None:
                break
            seen += out
            if "http://127.0.0.1" in out:
                break
        assert "http://127.0.0.1" in seen, f"{command}: no server address:\n{seen}"
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=SERVER_TIMEOUT)
        except subprocess.TimeoutExpired:
            # say where it is stuck: dojo prints every thread's stack on SIGUSR1 (dojo_cli.__main__)
            proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            os.killpg(proc.pid, signal.SIGKILL)
            rest, _ = proc.communicate()
            pytest.fail(f"{command}: still running {SERVER_TIMEOUT} s after Ctrl-C; its stacks:\n{seen}{rest[-6000:]}")
        # one user action, one exit code: 130 wherever the signal lands (docs/replay.md)
        assert proc.returncode == 130 and ("stopped" in rest or "interrupted" in rest), \
            f"{command}: exit {proc.returncode} on Ctrl-C:\n{seen}{rest}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _pip_line(line: str) -> None:
    """`pip install 'dojo_cli[extra]'`: the extra's distribution is installed (by the test command)."""
    from importlib.metadata import distribution

    extras = re.findall(r"dojo_cli\[(\w+)\]", line)
    assert extras, line
    for extra in extras:
        distribution(EXTRAS_DISTRIBUTION[extra])


@pytest.mark.long(40)
def test_the_readme_tour_runs_in_order(tmp_path):
    blocks = tour_blocks()
    assert len(blocks) >= 8, "the tour's blocks"
    work, env = _folder(tmp_path), _env()
    for block in blocks:
        script: list[str] = []

        def run_script():
            if not script:
                return
            body = "set -euo pipefail\ntrap 'echo \"README command failed: $BASH_COMMAND\" >&2' ERR\n" + "\n".join(script)
            res = subprocess.run(["bash", "-c", body], cwd=work, env=env, capture_output=True, text=True,
                                 timeout=COMMAND_TIMEOUT)
            assert res.returncode == 0, f"exit {res.returncode}\n{res.stderr[-3000:]}"
            script.clear()

        for line in block.splitlines():
            if line.strip().startswith("pip install"):
                _pip_line(line)
            elif SERVER_MARK in line:
                run_script()
                _serve(line, work, env)
            else:
                script.append(line)
        run_script()
    # what the tour wrote is where it says
    for name in ("cartpole.yaml", "cartpole.h5", "box.h5", "more.h5", "box.html", "fourbar.png", "swingup.h5",
                 "outputs/cube.yaml", "go1_feet.yaml", "hopper.yaml"):
        assert (work / name).is_file(), name
