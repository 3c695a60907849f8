"""SIGTERM and SIGHUP stop a run as Ctrl-C does: the file says 'interrupted', keeps every
completed step with all datasets the same length, and the exit code is 128 + the signal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest

# Time for the child to start writing before it is signalled (imports, scene, first flush).
START_SECONDS = 4.0


def dojo_command() -> list[str]:
    exe = Path(sys.executable).with_name("dojo")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dojo_cli"]


def default_signals() -> None:
    """In the child: default dispositions and nothing blocked (a test runner's worker may
    block or ignore signals, and a child inherits both)."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
    for sig in sigs:
        signal.signal(sig, signal.SIG_DFL)


def wait_for_file(path: Path, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and path.stat().st_size > 0:
            return
        time.sleep(0.05)


def run_and_signal(tmp_path: Path, signals: list[tuple[int, float]]) -> tuple[int, str, Path]:
    """Start a long `dojo simulate`, send ``signals`` ((signal, seconds before it)) once
    it is writing, and return (exit code, stderr, the file)."""
    out = tmp_path / "sig.h5"
    # closed loop (--gradients): one step per core call, so the run lasts long enough
    child = subprocess.Popen(
        dojo_command() + ["simulate", "npendulum", "-o", str(out), "--steps", "10000000", "-q", "--gradients"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, preexec_fn=default_signals,
    )
    try:
        wait_for_file(out, 30.0)
        time.sleep(START_SECONDS / 4)
        for sig, gap in signals:
            time.sleep(gap)
            child.send_signal(sig)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    return child.returncode, err, out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_finishes_the_file_as_interrupted(tmp_path, sig):
    code, err, out = run_and_signal(tmp_path, [(sig, 0.0)])
    assert code == 128 + sig, (code, err)
    assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err, err
    with h5py.File(out) as f:
        assert f.attrs["status"] == "interrupted"
        steps = int(f.attrs["steps_completed"])
        assert steps > 0
        for name in ("x", "q", "minimal/q", "time"):
            assert f[name].shape[0] == steps + 1, name
        for name in ("inputs", "solver/status", "gradients/A", "impulses"):
            assert f[name].shape[0] == steps, name


@pytest.mark.parametrize("gap", [0.0, 0.005, 0.05])
def test_a_second_ctrl_c_during_the_clean_up_keeps_the_file_consistent(tmp_path, gap):
    code, err, out = run_and_signal(tmp_path, [(signal.SIGINT, 0.0), (signal.SIGINT, gap)])
    assert code == 130 and "Traceback" not in err, (code, err)
    with h5py.File(out) as f:
        assert f.attrs["status"] == "interrupted"
        steps = int(f.attrs["steps_completed"])
        assert f["x"].shape[0] == steps + 1 and f["solver/status"].shape[0] == steps
    assert f"keeps the {steps} completed steps" in err, "the message and the file agree"


def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C while the command line and the command's modules are imported (pydantic builds
    its schemas then, and turned a KeyboardInterrupt into a SchemaError with exit 1) or while
    the scene loads: exit 130 and one line, never a traceback. Delays from 0.1 s: before
    that, Python itself is starting, before any of our code runs."""
    outcomes = []
    for delay in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7):
        child = subprocess.Popen(
            dojo_command() + ["check", "box"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=tmp_path, preexec_fn=default_signals,
        )
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
        if child.returncode == 0:  # finished before the signal
            assert "scene 'box': valid" in out and err == "", (delay, err)
        else:
            assert (child.returncode, err) == (130, "dojo: interrupted\n"), (delay, child.returncode, err)
        outcomes.append(child.returncode)
    assert 130 in outcomes, f"no signal landed during start-up: {outcomes}"
