"""The structure probe: before h5py opens a file in this process, HDF5's walk of its
structure (storage.hdf5_walk) is tried in another process with a deadline, since HDF5 parsing
damaged metadata can loop forever or crash the process, and neither can be caught where it
happens (docs/storage.md, "Reading: validation and exit codes").

The walk (io/storage/hdf5_walk.py) runs in a forked child with a deadline
(``_probe_structure``: HDF5 loops forever or crashes on some damaged metadata), in every
process, threads or not: the child is forked holding h5py's global lock, so no other
thread is inside HDF5 at the fork. In a process with other threads a child can still
inherit another library's lock held, or state half-changed, so there a crash of the
child, or a child still walking at the deadline that used little CPU (waiting, not
looping), is walked again in a fresh interpreter (``python -m dojo_cli.io.storage.hdf5_walk``),
whose verdict stands: at worst two deadlines.
"""

from __future__ import annotations

import faulthandler
import os
import select
import signal
import subprocess
import sys
import threading
import time as time_module
import warnings
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from dojo_cli.errors import StorageError
from dojo_cli.io.storage.format import _CORE_DATASETS, CONTACT_DATASETS
from dojo_cli.io.storage.hdf5_checks import global_heap_problem
from dojo_cli.io.storage.hdf5_walk import DONE, WALKING, walk_structure

# Deadline of the walk of a file's structure in a child process (read_storage): far more
# than any real file needs (milliseconds), far less than a user waits.
_PROBE_SECONDS = 10.0
# A forked child still walking at the deadline with less CPU time than this share of it was
# waiting (on a lock held at the fork by a thread it does not have), not looping: a loop in
# HDF5 spins, and gets far more than a tenth of a core even on a loaded machine.
_BLOCKED_CPU_FRACTION = 0.1
# How long a fresh interpreter may take to start and load h5py before its walk is timed
# (about 0.2 s on an idle machine): past it, something other than the file is wrong.
_FRESH_START_SECONDS = 60.0
# The module a fresh interpreter runs for the walk (python -m), and the lines it says.
_WALK_MODULE = "dojo_cli.io.storage.hdf5_walk"
_WALKING = WALKING.encode()
_DONE = DONE.encode()
# Signals that say the walker crashed. SIGKILL is the kernel's when memory runs out (HDF5
# allocating what damaged sizes claim), unless the deadline sent it; others (SIGINT,
# SIGTERM, SIGHUP) come from outside and say nothing about the file.
_CRASH_SIGNALS = frozenset(
    getattr(signal, name)
    for name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGTRAP", "SIGSYS", "SIGKILL")
    if hasattr(signal, name)  # (Windows has only some of them)
)
try:
    # h5py's global lock, taken around every call into HDF5 (private, but h5py's threading
    # model since 2.4): held across a fork, it keeps every other thread out of HDF5. (h5py
    # 3.14 and later take it at every os.fork themselves, h5py PR 2585; 3.9 to 3.13 do not.)
    from h5py._objects import phil as _HDF5_LOCK
except ImportError:  # pragma: no cover - a later h5py without it: the fresh-interpreter check remains
    _HDF5_LOCK = threading.RLock()
# Files whose structure walked fine, by (device, inode, size, modification time): not again.
_PROBED: dict[tuple, None] = {}
_PROBED_MAX = 256
_WALK_NAMES = tuple(sorted(_CORE_DATASETS)) + CONTACT_DATASETS


def _walk_structure(p: Path) -> None:
    """The walk of the probe (dojo_cli.io.storage.hdf5_walk), with the datasets a reader asks for by
    name (a damaged group can hide them from the walk of its links)."""
    walk_structure(p, _WALK_NAMES)


def check_hdf5_structure(path: str | os.PathLike) -> None:
    """Make sure HDF5 can walk the structure of any HDF5 file (``_probe_structure``)
    before this process reads it.

    Raises:
        StorageError: HDF5 loops or crashes on it ("<file>: damaged HDF5 file: ...").
    """
    _probe_structure(Path(path), os.fspath(path), "HDF5 file")


def _probe_structure(p: Path, label: str, what: str = "storage file") -> None:
    """Walk the file's structure (``_walk_structure``) in a forked child first, with a
    deadline: HDF5 parsing damaged metadata can loop forever (a global heap whose object
    sizes do not add up spins in H5HG__cache_heap_deserialize) or crash the process, and
    neither can be caught in the process that calls it. A hang or a crash of the child
    is this StorageError; anything else the child meets, the real read reports.

    The child is forked holding h5py's global lock, so no other thread of this process
    is inside HDF5 at the fork (``_forked_walk``). A child of a process with other
    threads can still inherit some other library's lock held, and wait on it forever,
    or die of state another thread left half-changed: there a crash, or a deadline
    passed with little CPU time used (waiting, not looping), is checked once more in a
    fresh interpreter (``_fresh_walk``), whose verdict stands. A single-threaded
    process has no such doubt, and keeps the child's.

    Raises:
        StorageError: HDF5 looped or crashed on the file's structure.
    """
    try:
        info = os.stat(p)
    except OSError:
        return  # (the real read says why)
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    if key in _PROBED:
        return  # this very file walked fine already (a command reads a file more than once)
    problem = global_heap_problem(p)  # the one loop known by its bytes: said at once, and precisely
    if problem is not None:
        raise StorageError(f"{label}: {problem}")
    if not hasattr(os, "fork"):
        return  # (Windows: read unprotected, after the byte check above)
    threaded = threading.active_count() > 1
    walk = _forked_walk(p)
    if threaded and _fork_may_be_to_blame(walk):
        walk = _fresh_walk(p)
    if walk.outcome is _WalkOutcome.CRASHED:
        raise StorageError(f"{label}: damaged {what}: HDF5 crashed reading its structure ({_signal_name(walk.signum)})")
    if walk.outcome is _WalkOutcome.TIMED_OUT:
        raise StorageError(
            f"{label}: damaged {what}: HDF5 did not finish reading its structure within {_PROBE_SECONDS:g} s "
            "(a loop in damaged metadata)"
        )
    if walk.outcome is _WalkOutcome.FINISHED:
        if len(_PROBED) >= _PROBED_MAX:
            _PROBED.clear()
        _PROBED[key] = None
    # (UNKNOWN: no verdict on the file, which is read as it would be without the probe)


class _WalkOutcome(Enum):
    """How a walk of the structure in another process ended."""

    FINISHED = "finished"  # the walk finished (whatever errors it met: the real read says those)
    CRASHED = "crashed"  # a crash signal ended the process during the walk
    TIMED_OUT = "timed out"  # still walking at the deadline: killed
    UNKNOWN = "unknown"  # not run, or stopped by something else (a signal from outside): no verdict


@dataclass(frozen=True)
class _Walk:
    outcome: _WalkOutcome
    signum: int = 0  # the signal of a crash
    cpu_seconds: float = 0.0  # CPU time the walker used (user + system), forked child only


def _fork_may_be_to_blame(walk: _Walk) -> bool:
    """Whether a forked child's "damaged" may come from the fork of a threaded process
    rather than from the file: a crash (state another thread left half-changed), or a
    deadline passed with little CPU time used (waiting on a lock held at the fork by a
    thread the child does not have; HDF5 looping on metadata spins)."""
    if walk.outcome is _WalkOutcome.CRASHED:
        return True
    return walk.outcome is _WalkOutcome.TIMED_OUT and walk.cpu_seconds < _BLOCKED_CPU_FRACTION * _PROBE_SECONDS


def _walk_ending(signum: int | None, done: bool, timed_out: bool, walking: bool = True) -> _Walk:
    """The outcome of a walker process from the signal that ended it (None: it exited).
    ``done``: it said it finished the walk; ``timed_out``: the deadline passed and it was
    sent SIGKILL; ``walking``: it had started the walk (a fresh interpreter says so once
    loaded)."""
    if done:
        return _Walk(_WalkOutcome.FINISHED)  # (however it left after saying so)
    if signum is None or not walking:
        return _Walk(_WalkOutcome.UNKNOWN)  # an exit without the walk done, or a failed start: not the file
    if signum == signal.SIGKILL and timed_out:
        # (ours; a walker that ended by itself just as the deadline passed has its own status)
        return _Walk(_WalkOutcome.TIMED_OUT)
    if signum in _CRASH_SIGNALS:
        # (a SIGKILL not ours, before the deadline: the kernel's, out of memory; said as a
        # crash, not as a loop)
        return _Walk(_WalkOutcome.CRASHED, signum)
    return _Walk(_WalkOutcome.UNKNOWN)  # SIGINT, SIGTERM, SIGHUP: stopped from outside


def _forked_walk(p: Path) -> _Walk:
    """``_walk_structure`` in a forked child, with the deadline ``_PROBE_SECONDS``.

    The fork happens while this thread holds h5py's global lock (``phil``, which h5py
    takes around every call into HDF5): no other thread is then inside HDF5 (a child
    forked in the middle of another thread's HDF5 call would wait forever for that
    thread's lock, or see HDF5's caches half-changed). The parent releases it at once;
    the child, the only thread of its process, holds its own copy, which it may take
    again (the lock is reentrant and the child's thread is the one that took it). h5py
    3.14 and later also take the lock around any os.fork; the reentrant lock is then
    just taken twice.
    """
    read_end, write_end = os.pipe()
    try:
        _HDF5_LOCK.acquire()
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns (DeprecationWarning) about a fork with threads running,
                # in the parent after the child exists: under -W error it would raise with
                # the child's pid lost (never reaped, never killed at the deadline). The
                # child runs only the walk and os._exit, which is what makes this fork safe.
                warnings.simplefilter("ignore", DeprecationWarning)
                # JAX (dojo_cli.jax) warns at every fork of a process that imported it that
                # the fork "will likely lead to a deadlock": true of a child that goes on, not
                # of this one, for the same reason (a RuntimeWarning from an at-fork hook,
                # which a user saw at each read of a storage file)
                warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
                pid = os.fork()
            if pid == 0:
                _walk_in_child(p, read_end, write_end)  # (leaves by os._exit)
        finally:
            _HDF5_LOCK.release()  # (the parent's; the child never gets here)
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return _Walk(_WalkOutcome.UNKNOWN)
    os.close(write_end)
    done = timed_out = False
    try:
        deadline = time_module.monotonic() + _PROBE_SECONDS
        while True:
            left = deadline - time_module.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                done = os.read(read_end, 16) == b"done"  # (b"": the child ended without finishing)
                break
    finally:
        os.close(read_end)
        if not done:
            try:
                os.kill(pid, signal.SIGKILL)  # a loop in C does not see anything milder
            except OSError:
                pass
        _, status, usage = os.wait4(pid, 0)
    walk = _walk_ending(os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, done, timed_out)
    return _Walk(walk.outcome, walk.signum, usage.ru_utime + usage.ru_stime)


def _walk_in_child(p: Path, read_end: int, write_end: int) -> None:
    """The forked child: walk, say "done", leave without any clean-up of the parent's.
    It runs nothing but the walk (no logging, no imports: locks other threads held at
    the fork stay held here forever)."""
    try:
        os.close(read_end)
        silent = os.open(os.devnull, os.O_WRONLY)  # what it meets, the real read reports
        os.dup2(silent, 1)
        os.dup2(silent, 2)
        faulthandler.disable()  # (a crash is the parent's to report)
        try:
            _walk_structure(p)
        except BaseException:
            pass  # (an error the real read reports)
        os.write(write_end, b"done")
    finally:
        os._exit(0)


def _fresh_walk(p: Path) -> _Walk:
    """The walk in a fresh interpreter (``python -m dojo_cli.io.storage.hdf5_walk``): nothing
    inherited from this process but its environment, so no lock held by another thread.
    The deadline ``_PROBE_SECONDS`` counts from the start of the walk (the child says
    ``walking`` once loaded), so that a slow start-up on a loaded machine is not taken
    for a loop; the start-up has its own, generous limit, past which there is no verdict.
    """
    if not sys.executable or getattr(sys, "frozen", False):
        return _Walk(_WalkOutcome.UNKNOWN)  # (no interpreter to start: an embedded or frozen Python)
    # Run from the folder that holds this dojo_cli package: `-m` puts the working folder
    # first on sys.path, and that makes the child import this very package (not another
    # checkout in the caller's folder, and even when this one was found through a sys.path
    # of the caller's own); the file is named absolutely for the same reason.
    root = Path(__file__).resolve().parents[3]
    command = [sys.executable, "-m", _WALK_MODULE, "--report", os.path.abspath(p), *_WALK_NAMES]
    try:
        child = subprocess.Popen(command, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
    except OSError:
        return _Walk(_WalkOutcome.UNKNOWN)
    said = b""
    walking = done = timed_out = False
    try:
        fd = child.stdout.fileno()
        deadline = time_module.monotonic() + _FRESH_START_SECONDS
        while True:
            lines = said.split(b"\n")[:-1]  # (complete lines only)
            if not walking and _WALKING in lines:
                walking = True
                deadline = time_module.monotonic() + _PROBE_SECONDS
            if _DONE in lines:
                done = True
                break
            left = deadline - time_module.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    break  # (the child ended)
                said += chunk
    finally:
        child.stdout.close()
        if not done:
            try:
                child.kill()  # SIGKILL: a loop in C does not see anything milder
            except OSError:
                pass
        child.wait()
    signum = -child.returncode if child.returncode < 0 else None  # (Popen: -signal for a child killed by one)
    return _walk_ending(signum, done, timed_out and walking, walking)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
