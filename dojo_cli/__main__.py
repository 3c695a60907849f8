"""The ``dojo`` executable (pyproject.toml [project.scripts]) and ``python -m dojo_cli``.

This module imports nothing of the command line at import time, so that what
happens while Python imports it (typer, then the command's own modules: about half
a second of start-up) is inside ``main``'s handling:

- Ctrl-C (and SIGTERM, SIGHUP) during start-up ends with one line and exit 128 + the
  signal, not a traceback from whichever import it interrupted (issue 11;
  dojo_cli.cli.signals). Only Python's own start-up, before this function runs (some
  30 ms on an idle machine), keeps Python's defaults: no file exists yet then. Once a command runs, its own handling takes over (``dojo
  simulate`` finishes its file as 'interrupted').
- numpy's RuntimeWarnings (overflow, invalid value) are not shown to users unless
  they ask with ``-W``/``PYTHONWARNINGS``, the standard practice for applications
  (Python's warnings documentation, "Overriding the default filter"). The library
  is meant to produce none: the test suite turns them into errors (pyproject.toml),
  so one that appears there is a bug fixed at its source, and numbers are checked
  before arithmetic can overflow.
- numpy's BLAS (OpenBLAS) runs on one thread unless ``OPENBLAS_NUM_THREADS`` says
  otherwise. Its matrices here are tiny (the physics is in the compiled core, which uses
  no BLAS), where threads only cost, and starting OpenBLAS's thread pool alone took
  20-30 ms of every command's start-up and about 100 ms of CPU on a 2-core machine
  (issue 15, benchmarks/cold_start.py). Sweep workers inherit the setting, so two
  workers do not also fight over BLAS threads.
- SIGUSR1 prints every thread's Python stack to stderr and the command goes on
  (``faulthandler.register``): what a command that seems stuck is doing, without
  stopping it (``kill -USR1 PID``; the tests send it to a command past its deadline).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys

# light (no library): imported with this module, before main() takes the signals
from dojo_cli.cli.signals import ignore_signals

# numpy reads this when it loads; tiny matrices run faster on one thread (docstring)
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


def main() -> None:
    """Run the ``dojo`` command line on ``sys.argv``."""
    for name, value in BLAS_THREADS.items():
        os.environ.setdefault(name, value)  # (before anything imports numpy)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True, chain=False)  # (docstring)
    try:
        from dojo_cli.cli import signals  # light: no library imported

        signals.install_stop_handlers()  # first: SIGTERM and SIGHUP then stop as Ctrl-C does
        if not sys.warnoptions:
            import warnings

            warnings.simplefilter("ignore", RuntimeWarning)
        with signals.signals_deferred():
            from dojo_cli.cli.app import app
        app()
    except KeyboardInterrupt as exc:
        # start-up, before typer's own handling (LazyGroup) is in place
        ignore_signals((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))  # a second signal while we exit changes nothing
        signum = getattr(exc, "signum", signal.SIGINT)
        sys.stderr.write(f"dojo: interrupted by {signal.Signals(signum).name}\n")
        raise SystemExit(128 + signum) from None
    finally:
        # The command is done (typer's SystemExit is on its way out): a signal from here
        # on would only turn that exit into a traceback and death by SIGINT.
        ignore_signals((signal.SIGINT, signal.SIGTERM, signal.SIGHUP))


if __name__ == "__main__":
    main()
