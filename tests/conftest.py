"""Loaded by pytest before it reads its options (the tests folder's own conftest)."""

import os

# numpy's BLAS on one thread, as the dojo command runs it (dojo_cli.__main__.BLAS_THREADS):
# the library's matrices are small, and OpenBLAS's threads on 2 cores shared by two xdist
# workers only contend (measured on the humanoid's step optimisation, tests/optimize/
# test_gait.py: 20.7 s CPU with them, 11.5 s without). Set before anything imports numpy.
if "numpy" not in __import__("sys").modules:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import atexit
import shutil
import signal
import sys
import tempfile

import pytest

import tests.fuzz.profiles  # noqa: F401  (registers --hypothesis-profile=long and fuzz-ci)

# The hull cache (dojo_cli.scene.hull_cache) of this test process: the tests neither read
# nor fill the user's cache (each xdist worker has its own folder, removed at exit).
os.environ["DOJO_CACHE_DIR"] = tempfile.mkdtemp(prefix="dojo-test-cache-")
atexit.register(shutil.rmtree, os.environ["DOJO_CACHE_DIR"], True)

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``long`` (several seconds each; most take a fraction of one) run first.
    pytest-xdist hands tests out in collection order, so a long test collected near the end
    keeps one worker busy after the other has run out of work (CI has two). The sort is
    stable and the same in every worker, as xdist requires; ``long(seconds)`` orders the
    long ones, longest first."""

    def order(item) -> tuple[bool, float]:
        mark = item.get_closest_marker("long")
        return mark is None, -float(mark.args[0]) if mark is not None and mark.args else 0.0

    items.sort(key=order)


@pytest.fixture(autouse=True)
def _stop_signals_as_they_were():
    """A command run in-process may leave the stop signals ignored or handled by dojo
    (dojo_cli.cli.signals: once a stop is under way, further signals are ignored), and a
    later test in the same worker would inherit that: each test starts from the worker's own."""
    handlers = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    hook = sys.unraisablehook
    yield
    for sig, handler in handlers.items():
        if handler is not None and signal.getsignal(sig) is not handler:  # (None: set outside Python)
            signal.signal(sig, handler)
    sys.unraisablehook = hook
