"""The `dojo` command as a separate process, for tests that need one (signals, locks,
file-size limits, hangs): what a user's shell runs."""

from __future__ import annotations

import signal
import sys
from pathlib import Path


def dojo_command() -> list[str]:
    """The installed `dojo` script next to this Python, else ``python -m dojo_cli``."""
    exe = Path(sys.executable).with_name("dojo")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dojo_cli"]


def default_signals() -> None:
    """preexec_fn: default dispositions and nothing blocked for the stop signals (a test
    runner's worker may block or ignore signals, and a child inherits both)."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
    for sig in sigs:
        signal.signal(sig, signal.SIG_DFL)
