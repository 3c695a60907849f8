"""Fixtures shared by the storage tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def probe_forks(monkeypatch):
    """The structure probe forks only in a single-threaded process (storage._probe_structure:
    a child forked while another thread holds HDF5's lock would wait forever), and reads
    unprotected otherwise. Importing dask.distributed (the sweep tests, earlier in the same
    xdist worker) leaves its idle offload thread running, which turned the probe off and let
    a loop test spin forever in this process. These tests check the probe itself, so
    they pin the single-threaded case it is made for; the thread is idle and holds no lock."""
    import threading

    monkeypatch.setattr(threading, "active_count", lambda: 1)
