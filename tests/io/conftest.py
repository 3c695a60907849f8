"""Fixtures shared by the storage tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def single_threaded_probe(monkeypatch):
    """Pin the structure probe (storage.probe._probe_structure) to its single-threaded case, where
    the forked child's verdict stands. With other threads in the process (importing
    dask.distributed, as the sweep tests do earlier in the same xdist worker, leaves its idle
    offload thread running) a crash of the child, or a child waiting at the deadline, is
    walked again in a fresh interpreter, which runs the real walk and not a test's
    monkeypatched one. Tests of the child's own verdict pin it; tests/io/test_probe_threads.py
    covers the threaded case."""
    import threading

    monkeypatch.setattr(threading, "active_count", lambda: 1)
