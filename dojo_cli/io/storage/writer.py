"""HDF5 storage files (format 1): written step by step, readable after any stop.

This module (and io/gradient_files.py and io/dynamics_files.py, for `dojo gradients -o` and `dojo dynamics -o`) is where dojo_cli imports h5py. The user-facing contract is
FORMATS.md ("Storage files") and docs/storage.md; this docstring is the full layout.

Layout (T = steps stored, nb bodies, nq/nv minimal coordinates/velocities, nu inputs)::

    /                      root attributes (below)
    time                   (T+1,)        float64  s; entry 0 is the initial state
    x                      (T+1, nb, 3)  float64  body centre of mass, world frame; attribute `names`
    q                      (T+1, nb, 4)  float64  orientation [w, x, y, z], body to world
    v                      (T+1, nb, 3)  float64  linear velocity at t_k, world frame
    omega                  (T+1, nb, 3)  float64  angular velocity at t_k, body frame
    v_mid, omega_mid       (T+1, nb, 3)  float64  the integrator's midpoint velocities into state k
                                                  (Dojo's state layout: exact restarts)
    minimal/q              (T+1, nq)     float64  minimal coordinates; attribute `names`
    minimal/v              (T+1, nv)     float64  minimal velocities at t_k; attribute `names`
    inputs                 (T, nu)       float64  inputs applied during step k (attribute names)
    solver/iterations      (T,)          int32    Newton iterations of step k
    solver/residual        (T,)          float64  final residual (infinity norm) of step k
    solver/status          (T,)          string   fixed-length (32-byte) UTF-8, e.g. "success",
                                                  "max_iterations" (SolverStatus values)
    <extra path>           (T, *shape)   any      optional per-step arrays passed to
                                                  ``write_step(extra=...)``, e.g. `impulses`,
                                                  `solver/complementarity`, `contacts/distance`

Root attributes: ``format = "dojo-storage"``, ``format_version = 1``, ``dojo_cli_version``,
``scene`` (the resolved scene YAML), ``scene_name``, ``timestep``, ``gravity`` (3,),
``solver_options`` (JSON object), ``integrator``, ``status`` (``running`` while writing, then
``complete``, ``complete_with_failures``, ``interrupted`` or ``failed``), ``steps_completed``
(T), ``created`` (ISO 8601, UTC). ``solver_options`` is written by Python's ``json`` module, so
an infinite option (``undercut: .inf``) appears as ``Infinity``, which Python (and the lenient
modes of most JSON readers) read back as a float. Extensions: ``finished`` (ISO 8601, UTC, set
by ``finish``), ``status_message`` (why a run stopped, when known), ``failed_steps``,
``first_failed_step``, the provenance of the run (``scene_hash``: SHA-256 of ``scene``, hex;
``overrides``: JSON object {path: value} of the ``--config`` and ``--set`` values in the order
applied; ``command_line``: the command as given; ``wall_time``: seconds from the file's
creation to its final status), and the caller's ``extra_attrs`` (dicts and lists of
non-numbers stored as JSON, decoded by ``read_storage``).

Velocities. Root attribute ``velocities = "knot"``: ``v``, ``omega`` and ``minimal/v`` are
velocities at the knot times t_k, from the discrete Legendre transform at q_k (the average
of the transforms of the midpoint velocities on both sides, core/energy.h knot_velocities),
and ``v_mid``, ``omega_mid`` the integrator's midpoint velocities. The writer computes the
knot values (``knot_velocities``, given by the run loop) from the midpoint velocities it is
handed; row k needs row k+1, so at each block write the last row's are extrapolated (the
next step's impulses taken as the last one's) and rewritten at the next write; at the end
of a normal run the run loop hands the midpoint velocities of one more step
(``set_final_midpoint``), which make the last row's exact. Files without the attribute
(written before it, or by a writer without ``knot_velocities``) hold midpoint velocities in
``v``, ``omega`` and ``minimal/v`` and no ``v_mid``; ``StoredRun.velocities`` says which, and
``StoredRun.midpoint_state(k)`` reads Dojo's state from either.

Every dataset is chunked along the time axis (about 64 KiB a chunk) with an unlimited maximum
length. An extra dataset that first appears at step k > 0 is created with its earlier rows
filled (NaN for floating types, 0 otherwise); a step that omits an existing extra fills its
row the same way.

Crash consistency (docs/storage.md, "What a stop leaves"). Steps are buffered in memory and
written in blocks: when ``flush_every`` steps and ``flush_interval`` seconds have passed (and
at ``finish``) the writer grows every dataset by the buffered rows, writes them, then sets
``steps_completed`` and flushes the file. While the run is written its datasets are *not*
compressed: an uncompressed chunk keeps its place and size in the file, so a block write
rewrites the last, partial chunk of each dataset in place, with the same bytes for the rows
already stored. (A compressed chunk changes size at every rewrite; HDF5 then frees its old
place, which the same flush may reuse for another chunk while the index on disk still points
there: a process killed in that window left a file whose last chunk no longer decompressed, 3
times in 15 kills.) A run that ends normally (``complete``, ``complete_with_failures``) is then
compacted: copied gzip-compressed into a temporary file next to it, which replaces it; an
interrupted or failed run is left as written (stopping stays quick), and a failed compaction
leaves the uncompressed file, which is complete. A run whose datasets hold less than
``_COMPACT_MIN_BYTES`` (64 KiB) is left as written too: compression would save little and
the copy costs more than a short run's steps. When the writer is told the run's length
(``steps``), its chunks hold no more rows than the run, so a short run's raw file holds no
empty chunk space. A killed process's file holds the steps of
the last block write, with ``status = running``; ``read_storage`` trims a ``running`` file to
its shortest consistent length and, through the lock below, says whether a process is still
writing it. The file uses HDF5 format bounds ("v108", "v110"): v1.8 objects allow attributes
above 64 KiB (large scenes), and staying below superblock v3 avoids the file-consistency flags
that make a killed writer's file unopenable without ``h5clear``.

One writer per file. The writer takes an exclusive ``flock`` on the file *before* HDF5 opens
(and so truncates) it, and holds it until the file is finished; HDF5's own locking is off for
the writer, since it would take a second, conflicting lock (and HDF5 truncates a file before
it even tries its lock). A second writer on the same file (``dojo simulate --force``) is
refused without touching the file; ``read_storage`` probes the lock to tell a run still being
written from one whose writer died.

Full disks. Before each block write the writer reserves the file space the block can need
(``posix_fallocate`` past HDF5's end of file, plus ``_RESERVE_BYTES``), so a full disk, a
quota or a file size limit fails the reservation, before HDF5 has written anything: the run
stops with a ``StorageError``, the file keeps every block written before, and the reserve
still holds the final ``status = failed``. (Without the reservation, HDF5 failing halfway
through a flush left files whose metadata pointed past their end, and sometimes crashed the
process.) A write error the reservation cannot foresee (an I/O error, a file system without
``posix_fallocate``) detaches HDF5 from the file before it can write anything more, then
reopens the file to cut it back to the last block write and mark it ``failed``; if HDF5 had
already written part of the block's metadata, the file may be damaged, and the message says so.

Reading. ``read_storage`` validates a file once for every reader: the format and version;
the type and range of every attribute the format defines (``timestep`` finite and > 0,
``status`` one of STATUSES, ``steps_completed`` an integer >= 0, ...); every core dataset
present, stored in the file (no links), of a floating-point, integer or text type as its
meaning wants, with shapes that agree with each other and with their ``names``; the contact
datasets with ``contact_names``; the lengths (a file with a final status holds exactly
``steps_completed`` steps in every per-step dataset, a ``running`` one is trimmed); times
finite and increasing; every chunk a dataset's length claims actually stored; and, in a
``complete`` run, every state finite. Before h5py opens the file in this process, HDF5's
walk of its structure (io/storage/hdf5_walk.py) is tried in a forked child with a deadline
(``_probe_structure``: HDF5 loops forever or crashes on some damaged metadata), in every
process, threads or not: the child is forked holding h5py's global lock, so no other
thread is inside HDF5 at the fork. In a process with other threads a child can still
inherit another library's lock held, or state half-changed, so there a crash of the
child, or a child still walking at the deadline that used little CPU (waiting, not
looping), is walked again in a fresh interpreter (``python -m dojo_cli.io.storage.hdf5_walk``),
whose verdict stands: at worst two deadlines. A readable HDF5 file
that is not a storage file is a NotStorageFileError (exit code 2), anything else wrong a
StorageError (3), each naming the file and what is wrong. The stored scene is checked by
the readers that use it (dojo_cli.scene.stored_run).
"""

from __future__ import annotations

import errno
import faulthandler
import io
import json
import math
import os
import re
import select
import signal
import stat
import subprocess
import sys
import threading
import time as time_module
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dojo_cli.errors import DojoError, StorageError, shown
from dojo_cli.io.storage.hdf5_checks import global_heap_problem
from dojo_cli.io.storage.hdf5_walk import DONE, WALKING, walk_structure
from dojo_cli.io.labelled_files import json_default

try:  # POSIX; without it (Windows) files are not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

FORMAT_NAME = "dojo-storage"
FORMAT_VERSION = 1

STATUS_RUNNING = "running"
STATUS_COMPLETE = "complete"
STATUS_INTERRUPTED = "interrupted"
STATUS_FAILED = "failed"
# Every step was taken but some did not converge (solver/status says which): a run is
# "complete" only when every step converged.
STATUS_COMPLETE_WITH_FAILURES = "complete_with_failures"
FINAL_STATUSES = (STATUS_COMPLETE, STATUS_COMPLETE_WITH_FAILURES, STATUS_INTERRUPTED, STATUS_FAILED)
STATUSES = (STATUS_RUNNING,) + FINAL_STATUSES
STEP_SUCCESS = b"success"

# Width of the fixed-length solver/status strings: SolverStatus values are at most 19
# bytes; fixed width (unlike variable-length strings) compresses and needs no heap.
STATUS_BYTES = 32

# HDF5 format bounds: see the module docstring (large attributes, no consistency flags).
_LIBVER = ("v108", "v110")
# gzip level 4: the usual speed/ratio compromise (levels above 6 gain little on float64).
_GZIP_LEVEL = 4
# Target bytes per chunk: gzip compresses 64 KiB chunks of a smooth 4-body trajectory to 30 %
# of the raw bytes, 16 KiB chunks only to 60 %.
_CHUNK_BYTES = 64 * 1024
_MAX_CHUNK_ROWS = 4096
# A run whose datasets hold fewer raw bytes than this is not compacted: gzip would save at
# most a few tens of KiB (HDF5's metadata, about 50 KiB, is most of such a file; a one-step
# file even grows), and the copy costs 30-50 ms, more than such a run's steps (issue 15:
# a sweep task's overhead).
_COMPACT_MIN_BYTES = 64 * 1024
# Kept allocated past the data while writing: room for the final status after a write error.
_RESERVE_BYTES = 256 * 1024
# Reservations grow by at least this much (and by 1/8 of the file), so most block writes
# find their room already reserved (one posix_fallocate every few blocks).
_RESERVE_STEP = 1024 * 1024
# Metadata a block write may add per dataset (index nodes, object header), generously.
_METADATA_BYTES = 8 * 1024
# How long a new writer waits for readers (shared locks) to close the file before refusing.
_READER_WAIT_SECONDS = 1.0
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
# Tries of a read of a file another process is writing (a block write may be under way).
_BUSY_READ_TRIES = 4
_BUSY_READ_PAUSE = 0.1
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# What h5py raises when HDF5 fails to write: OSError, or RuntimeError ("Unable to
# synchronously flush file (file write failed: ... errno = 27 ...)").
_WRITE_ERRORS = (OSError, RuntimeError)

# Datasets with one row per state entry (T+1 rows) and per step (T rows).
_STATE_DATASETS = ("time", "x", "q", "v", "omega", "minimal/q", "minimal/v")
# State datasets of a file whose `velocities` attribute is "knot": the midpoint velocities.
_MIDPOINT_DATASETS = ("v_mid", "omega_mid")
VELOCITIES_ATTR = "velocities"
KNOT = "knot"
MIDPOINT = "midpoint"
_STEP_DATASETS = ("inputs", "solver/iterations", "solver/residual", "solver/status")
_CORE_DATASETS = frozenset(_STATE_DATASETS + _STEP_DATASETS)
# Group of the per-step Jacobians of `dojo simulate --gradients` (read on request only).
GRADIENT_GROUP = "gradients"
CONTACT_DATASETS = ("contacts/distance", "contacts/normal_impulse", "contacts/friction_impulse", "contacts/slip")
# Datasets the walk of the structure also looks up by path: those a reader asks for by name.
_WALK_NAMES = tuple(sorted(_CORE_DATASETS)) + CONTACT_DATASETS
_RESERVED_ATTRS = frozenset(
    {
        "format",
        "format_version",
        "dojo_cli_version",
        "scene",
        "scene_name",
        "timestep",
        "gravity",
        "solver_options",
        "integrator",
        "status",
        "steps_completed",
        "failed_steps",
        "first_failed_step",
        "created",
        "finished",
        "status_message",
        "velocities",
        "scene_hash",
        "overrides",
        "command_line",
        "wall_time",
    }
)
_REQUIRED_ATTRS = ("format_version", "scene", "timestep", "status", "steps_completed")


class NotStorageFileError(StorageError):
    """A readable HDF5 file that is not a dojo storage file (another program's, or a gradient
    file): the user named the wrong file, so invalid input (exit code 2), not an I/O error."""

    exit_code = 2


def scene_hash(scene_yaml: str) -> str:
    """The ``scene_hash`` attribute: SHA-256 (hex) of the resolved scene's YAML text."""
    import hashlib  # (here: OpenSSL's loading, ~5 ms, only for the writers, not every reader)

    return hashlib.sha256(scene_yaml.encode("utf-8")).hexdigest()


def _utc_now() -> str:
    """Current time, ISO 8601 in UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _status_text(status: Any) -> str:
    """A solver status (SolverStatus or str) as stored."""
    return str(status.value) if isinstance(status, Enum) else str(status)


def _series_chunks(row_shape: tuple[int, ...], itemsize: int, length: int | None = None) -> tuple[int, ...]:
    """The chunk shape of a series: rows so one chunk holds about _CHUNK_BYTES, and no more
    than ``length`` rows when the dataset's final length is known (a short run's chunks hold
    no empty rows); HDF5 chunks are at least 1 wide along every other axis."""
    row_bytes = max(1, int(np.prod(row_shape, dtype=np.int64)) * itemsize)
    rows = min(_MAX_CHUNK_ROWS, max(1, _CHUNK_BYTES // row_bytes))
    if length is not None:
        rows = min(rows, max(1, int(length)))
    return (int(rows),) + tuple(max(1, n) for n in row_shape)


def _create_series(
    group: h5py.Group, name: str, row_shape: tuple[int, ...], dtype, *, compress: bool = False,
    length: int | None = None,
) -> h5py.Dataset:
    """An empty (0, *row_shape) dataset, chunked and resizable along axis 0; gzip-compressed
    with ``compress`` (compaction), raw while a run is written (module docstring). ``length``:
    the rows it will hold, when known (chunks no longer than that)."""
    dtype = np.dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    chunks = _series_chunks(row_shape, dtype.itemsize, length)
    kwargs: dict[str, Any] = {}
    # Empty rows have nothing to compress.
    if compress and all(n > 0 for n in row_shape):
        kwargs = {"compression": "gzip", "compression_opts": _GZIP_LEVEL, "shuffle": dtype.itemsize > 1}
    # HDF5 chunks are at least 1 wide, so an empty axis (nq = 0, nu = 0) gets an unlimited maximum.
    maxshape = (None,) + tuple(n if n > 0 else None for n in row_shape)
    return group.create_dataset(name, shape=(0,) + row_shape, maxshape=maxshape, chunks=chunks, dtype=dtype, **kwargs)


def _fill_value(dtype: np.dtype):
    """Value of rows an extra dataset did not receive."""
    return np.nan if np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.complexfloating) else 0


def _encode_attr(value: Any) -> Any:
    """A caller's attribute value as HDF5 can store it (dicts, lists of mixed types: JSON)."""
    if isinstance(value, (str, bool, int, float, np.generic, np.ndarray)):
        return value
    if isinstance(value, (list, tuple)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf":
            return arr
    return json.dumps(value)


def _decode_attr(name: str, value: Any) -> Any:
    """An HDF5 attribute as Python: bytes -> str, numpy scalars -> Python, JSON objects -> dict.

    Raises:
        UnicodeDecodeError: text that is not UTF-8.
    """
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
        value = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.tolist()]
    elif isinstance(value, np.generic) and value.dtype.kind != "V":
        value = value.item()
    if isinstance(value, str) and name != "scene" and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _path_reason(path: Path, exc: BaseException | None = None) -> str:
    """Why a storage file cannot be created at ``path``."""
    parent = path.parent
    if not parent.exists():
        return f"directory '{parent}' does not exist"
    if not parent.is_dir():
        return f"'{parent}' is not a directory"
    if path.is_dir():
        return "is a directory"
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "permission denied"
    if exc is not None:
        return _os_reason(exc)
    return "cannot be created"


_ERRNO_IN_MESSAGE = re.compile(r"errno = (\d+)")


def _os_reason(exc: BaseException) -> str:
    """The operating system's words for an error (h5py's messages bury the errno in a long
    line: ``Can't write data (file write failed: ..., errno = 28, error message = ...)``)."""
    code = getattr(exc, "errno", None)
    if not isinstance(code, int):
        found = _ERRNO_IN_MESSAGE.search(str(exc))
        code = int(found.group(1)) if found else None
    if isinstance(code, int) and code > 0:
        return os.strerror(code)
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


# ---------------------------------------------------------------------- locks


def _lock_for_writing(path: Path, overwrite: bool) -> tuple[io.FileIO, bool]:
    """Open (create) ``path`` without truncating it and take its exclusive writer lock.

    Returns the open file, which holds the lock until it is closed (by the writer, or by
    the kernel when the process dies), and whether it was created here. HDF5 truncates
    only after this succeeded.

    Raises:
        StorageError: the file exists (``overwrite`` False), cannot be created, is not a
            regular file, or another process holds it (a writer, or readers that did not
            close it within _READER_WAIT_SECONDS); the file is left untouched.
    """
    # O_NONBLOCK: opening a FIFO must not wait for a reader; regular files ignore it.
    flags = os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if path.is_dir():
        raise StorageError(f"{path}: cannot create storage file: is a directory")
    created = True
    try:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)  # (atomic: two runs cannot both create it)
        except FileExistsError:
            if not overwrite:
                raise StorageError(f"{path}: already exists (use --force to overwrite)") from None
            created = False
            fd = os.open(path, flags | os.O_CREAT, 0o666)
    except OSError as exc:
        raise StorageError(f"{path}: cannot create storage file: {_path_reason(path, exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StorageError(f"{path}: not a regular file (a device, FIFO or socket); cannot write a storage file there")
        if fcntl is not None:
            _flock_exclusive(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return io.FileIO(fd, "r+", closefd=True), created


def _flock_exclusive(fd: int, path: Path) -> None:
    """Take the exclusive lock on ``fd``, telling a writer (exclusive lock) from readers
    (shared locks: HDF5 holds one while a program has the file open for reading)."""
    deadline = time_module.monotonic() + _READER_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError:
            return  # no locks on this file system (some network mounts): proceed unlocked
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StorageError(
                f"{path}: another run is writing it (a `dojo simulate` still running?); not overwritten"
            ) from None
        except OSError:
            return
        fcntl.flock(fd, fcntl.LOCK_UN)
        if time_module.monotonic() > deadline:
            raise StorageError(f"{path}: another program has it open (reading it); close it first; not overwritten")
        time_module.sleep(0.05)


def stored_status(path: str | os.PathLike) -> str | None:
    """The ``status`` attribute of a storage file, read cheaply (no validation: a resumed
    sweep's look at the runs it has), or None when there is no readable storage file there.
    A ``running`` file is ``running`` whether its writer lives or died."""
    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size < len(_HDF5_SIGNATURE):
            return None
        with open(p, "rb") as stream:
            if stream.read(len(_HDF5_SIGNATURE)) != _HDF5_SIGNATURE:
                return None
        with h5py.File(p, "r", locking=False) as f:
            if f.attrs.get("format") not in (FORMAT_NAME, FORMAT_NAME.encode()):
                return None
            status = f.attrs.get("status")
    except Exception:  # noqa: BLE001 - any failure to read means: no usable file
        return None
    if isinstance(status, bytes):
        status = status.decode("utf-8", "replace")
    return status if status in STATUSES else None


def being_written(path: str | os.PathLike) -> bool:
    """Whether a process holds ``path``'s writer lock (a run still being written).

    A lock held by a process that died is released by the kernel, so a ``running`` file
    that nobody holds was left by a killed (or crashed) writer.
    """
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # (closing also drops the shared lock)
    return False


def _scratch_fd() -> int:
    """A descriptor that takes any write (the null device): where a failed HDF5 handle is
    pointed so that its close writes nothing more into the real file. (Not a memory file:
    a file size limit, one cause of the failure, applies to those too, and HDF5 failing
    again while it closes has crashed the process.)"""
    return os.open(os.devnull, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))


# ---------------------------------------------------------------------- writing


class StorageWriter:
    """Writes one run to an HDF5 storage file, step by step (see the module docstring).

    Use as a context manager: a ``KeyboardInterrupt`` finishes the file as ``interrupted``,
    any other exception as ``failed`` (the exception propagates unchanged), and a normal
    exit as ``complete`` unless ``finish`` was already called.

    Args:
        path: file to create.
        scene_yaml: the resolved scene, as YAML text.
        scene_name: the scene's name.
        timestep: s, the time step h.
        gravity: (3,) m/s^2, world frame.
        solver_options: the solver options (stored as JSON).
        integrator: the integrator's name.
        body_names: (nb,) body names, in state order.
        minimal_q_names: (nq,) names of the minimal coordinates.
        minimal_v_names: (nv,) names of the minimal velocities.
        input_dim: nu, inputs per step.
        input_names: (nu,) names of the inputs (attribute ``names`` of ``inputs``), or None.
        dojo_cli_version: the writing program's version.
        flush_every, flush_interval: a block write happens once ``flush_every`` (>= 1)
            steps are buffered *and* ``flush_interval`` seconds have passed since the last
            one (checked whenever steps are added). A killed process loses the steps
            buffered since: at most ``flush_every - 1`` steps or ``flush_interval`` seconds
            of them, whichever is more; an interrupted or failed one loses nothing
            (``finish`` writes every buffered step). `dojo simulate` uses 1 step and
            FLUSH_SECONDS (docs/storage.md: each block write costs a few milliseconds).
        extra_attrs: further root attributes (must not reuse the format's names).
        dataset_attrs: attributes to set on extra datasets when they are created, by
            dataset path (e.g. ``{"gradients/A": {"rows": [...], "cols": [...]}}``).
        knot_velocities: ``(x (n, nb, 3), q (n, nb, 4), v_mid (m, nb, 3), omega_mid (m, nb, 3),
            extrapolate_last) -> (v, omega (n, nb, 3), minimal_v (n, nv))``, velocities at the
            knots of n states from their midpoint velocities (m = n + 1: the next state's
            included; m = n with extrapolate_last: the last knot extrapolated). Given, the
            file holds knot velocities in ``v``, ``omega``, ``minimal/v`` and the velocities
            handed to ``write_initial``/``write_steps`` (midpoint ones) in ``v_mid``,
            ``omega_mid`` (module docstring, "Velocities"); None: they go to ``v``,
            ``omega`` as given (a midpoint file).
        overwrite: replace an existing file (False: refuse, atomically, if one exists).
        compact: compress a run that ends normally (module docstring) when its datasets hold
            at least ``compact_min_bytes`` raw bytes; False leaves the file as written.
        compact_min_bytes: the size below which a run is left uncompressed (None:
            _COMPACT_MIN_BYTES, 64 KiB; 0 compresses every run).
        stop_requested: called between the blocks of the compaction; True skips the rest
            of it (the file stays complete, uncompressed): a stop signal during a long
            compaction need not wait for it.
        overrides: {path: value} the scene was given on top of its file (``--config``,
            ``--set``, a sweep's axes), stored as the JSON attribute ``overrides``.
        command_line: the command that made the run, stored as ``command_line``.
        steps: the steps the run is to take, when known: chunks hold no more rows than the
            run (a short run's raw file holds no empty rows); the datasets stay resizable,
            so a run may still end earlier or go on.

    Raises:
        StorageError: the file cannot be created, exists (``overwrite`` False) or another
            process is writing it (the message names the path and the reason; the file
            is then left untouched).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        scene_yaml: str,
        scene_name: str,
        timestep: float,
        gravity,
        solver_options: dict,
        integrator: str,
        body_names: list[str],
        minimal_q_names: list[str],
        minimal_v_names: list[str],
        input_dim: int,
        dojo_cli_version: str,
        flush_every: int = 50,
        flush_interval: float = 0.0,
        extra_attrs: dict | None = None,
        dataset_attrs: dict[str, dict] | None = None,
        knot_velocities: Callable | None = None,
        overwrite: bool = True,
        compact: bool = True,
        compact_min_bytes: int | None = None,
        stop_requested: Callable[[], bool] | None = None,
        input_names: list[str] | None = None,
        overrides: dict | None = None,
        command_line: str | None = None,
        steps: int | None = None,
    ) -> None:
        if int(flush_every) < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        gravity = np.asarray(gravity, dtype=float).reshape(-1)
        if gravity.shape != (3,):
            raise ValueError(f"gravity must have shape (3,), got {gravity.shape}")
        clash = sorted(set(extra_attrs or {}) & _RESERVED_ATTRS)
        if clash:
            raise ValueError(f"extra_attrs may not redefine format attributes: {', '.join(clash)}")

        self.path = Path(path)
        self.flush_every = int(flush_every)
        self.flush_interval = float(flush_interval)
        self.compact = bool(compact)
        self.compact_min_bytes = _COMPACT_MIN_BYTES if compact_min_bytes is None else int(compact_min_bytes)
        self._stop_requested = stop_requested
        self.compacted = False  # whether finish compressed the file
        self.compaction_note: str | None = None  # why it did not, when it tried
        self._data_bytes = 0  # raw bytes of the datasets, once the status is written
        self._last_flush = time_module.monotonic()
        self._created = time_module.perf_counter()  # wall_time counts from here
        self.nb = len(body_names)
        self.nq = len(minimal_q_names)
        self.nv = len(minimal_v_names)
        self.nu = int(input_dim)
        self._knots = knot_velocities
        self._expected_steps = None if steps is None else max(0, int(steps))
        self._state_names = _STATE_DATASETS + (_MIDPOINT_DATASETS if knot_velocities else ())
        self._final_midpoint: tuple[np.ndarray, np.ndarray] | None = None
        self._tail: dict[str, np.ndarray] = {}  # knot files: the last state row on disk (x, q, v_mid, omega_mid)
        self._shapes: dict[str, tuple[int, ...]] = {
            "time": (),
            "x": (self.nb, 3),
            "q": (self.nb, 4),
            "v": (self.nb, 3),
            "omega": (self.nb, 3),
            "v_mid": (self.nb, 3),
            "omega_mid": (self.nb, 3),
            "minimal/q": (self.nq,),
            "minimal/v": (self.nv,),
            "inputs": (self.nu,),
            "solver/iterations": (),
            "solver/residual": (),
            "solver/status": (),
        }
        self._file: h5py.File | None = None
        self._lock: io.FileIO | None = None
        self._finished = False
        self._initial_written = False
        self._steps = 0  # steps accepted (written or buffered)
        self._failed = 0  # of which the solver failed
        self._first_failed = -1  # index of the first of those
        self._steps_on_disk = 0  # step rows written by the last complete flush
        self._states_on_disk = 0  # state rows written by the last complete flush
        self._failed_on_disk = 0  # failed_steps and first_failed_step as last written
        self._first_failed_on_disk = -1
        self._reserved = 0  # bytes of the file known to be allocated on disk
        self._can_reserve = hasattr(os, "posix_fallocate")
        self._state_buffer: dict[str, list] = {name: [] for name in self._state_names}
        self._step_buffer: dict[str, list] = {name: [] for name in _STEP_DATASETS}
        self._extra_buffer: list[tuple[int, dict[str, np.ndarray]]] = []  # (rows, arrays by name)
        self._extras: dict[str, h5py.Dataset] = {}
        self._dataset_attrs = {name: dict(attrs) for name, attrs in (dataset_attrs or {}).items()}

        # the lock first: nothing may truncate a file another run is writing
        self._lock, created = _lock_for_writing(self.path, bool(overwrite))
        try:
            self._file = h5py.File(self.path, "w", libver=_LIBVER, locking=False)
        except (OSError, ValueError) as exc:
            if created:  # nothing of ours may stay behind
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
            self._release_lock()
            raise StorageError(f"{self.path}: cannot create storage file: {_path_reason(self.path, exc)}") from None

        try:
            f = self._file
            f.attrs["format"] = FORMAT_NAME
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["dojo_cli_version"] = str(dojo_cli_version)
            f.attrs["scene"] = str(scene_yaml)
            f.attrs["scene_name"] = str(scene_name)
            f.attrs["timestep"] = float(timestep)
            f.attrs["gravity"] = gravity
            f.attrs["solver_options"] = json.dumps(solver_options, default=json_default)
            f.attrs["integrator"] = str(integrator)
            f.attrs["status"] = STATUS_RUNNING
            f.attrs["steps_completed"] = 0
            f.attrs["created"] = _utc_now()
            f.attrs[VELOCITIES_ATTR] = KNOT if knot_velocities else MIDPOINT
            f.attrs["scene_hash"] = scene_hash(str(scene_yaml))
            f.attrs["overrides"] = json.dumps(dict(overrides or {}), default=json_default)
            if command_line is not None:
                f.attrs["command_line"] = str(command_line)
            for key, value in (extra_attrs or {}).items():
                f.attrs[key] = _encode_attr(value)

            string = h5py.string_dtype("utf-8", STATUS_BYTES)
            dtypes = {"solver/iterations": np.int32, "solver/status": string}
            self._datasets: dict[str, h5py.Dataset] = {}
            for name in self._state_names + _STEP_DATASETS:
                self._datasets[name] = _create_series(f, name, self._shapes[name], dtypes.get(name, np.float64),
                                                      length=self._length(name))
            self._datasets["x"].attrs["names"] = [str(n) for n in body_names]
            self._datasets["minimal/q"].attrs["names"] = [str(n) for n in minimal_q_names]
            self._datasets["minimal/v"].attrs["names"] = [str(n) for n in minimal_v_names]
            if input_names is not None:
                self._datasets["inputs"].attrs["names"] = [str(n) for n in input_names]
            self._reserve(len(self._datasets) * _METADATA_BYTES)
            f.flush()
        except _WRITE_ERRORS as exc:
            self._discard()
            raise StorageError(f"{self.path}: cannot write storage file: {_os_reason(exc)} (nothing written)") from None
        except BaseException:
            self._discard()
            raise
    # ------------------------------------------------------------------ properties

    @property
    def steps_completed(self) -> int:
        """Steps accepted so far (written to disk or buffered for the next block)."""
        return self._steps

    @property
    def failed_steps(self) -> int:
        """Steps accepted so far whose solver status is not ``success``."""
        return self._failed

    @property
    def first_failed_step(self) -> int:
        """Index of the first of them, or -1."""
        return self._first_failed

    @property
    def finished(self) -> bool:
        """Whether ``finish`` has been called (the file is then closed)."""
        return self._finished

    # ------------------------------------------------------------------ writing

    def write_initial(self, time: float, x, q, v, omega, minimal_q, minimal_v) -> None:
        """Store state entry 0 and flush it to disk.

        Args:
            time: s, initial time.
            x: (nb, 3) positions; q: (nb, 4) orientations [w,x,y,z]; v: (nb, 3) linear
                velocities; omega: (nb, 3) angular velocities, body frame.
            minimal_q: (nq,) minimal coordinates; minimal_v: (nv,) minimal velocities.
        """
        self._check_open()
        if self._initial_written:
            raise RuntimeError(f"{self.path}: the initial state was already written")
        self._buffer_state(time, x, q, v, omega, minimal_q, minimal_v)
        self._initial_written = True
        self.flush()

    def write_step(
        self,
        time: float,
        x,
        q,
        v,
        omega,
        minimal_q,
        minimal_v,
        inputs,
        *,
        iterations: int,
        residual: float,
        status: str,
        extra: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Store state entry k+1 (reached by step k) and step k's record.

        Args:
            time: s, time of the new state.
            x, q, v, omega, minimal_q, minimal_v: the new state (shapes as ``write_initial``).
            inputs: (nu,) joint inputs applied during the step.
            iterations: solver iterations of the step.
            residual: final solver residual of the step.
            status: solver status of the step (a ``SolverStatus`` or its string value).
            extra: per-step arrays by dataset path (e.g. ``"impulses"``,
                ``"solver/complementarity"``), each of a fixed shape from step to step.
        """
        self._check_open()
        # one step's rows, checked as rows (a flat vector may stand for a row of one axis)
        row = lambda name, a: self._checked(name, a)[None]  # noqa: E731
        self.write_steps(
            [time], row("x", x), row("q", q), row("v", v), row("omega", omega), row("minimal/q", minimal_q),
            row("minimal/v", minimal_v), row("inputs", inputs),
            iterations=[iterations], residual=[residual], status=[_status_text(status)],
            extra={name: np.asarray(value)[None] for name, value in (extra or {}).items()},
        )

    def write_steps(
        self,
        time,
        x,
        q,
        v,
        omega,
        minimal_q,
        minimal_v,
        inputs,
        *,
        iterations,
        residual,
        status,
        extra: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Store n consecutive steps at once: each argument has a leading axis of n
        (the arguments of ``write_step`` stacked over steps; ``extra`` arrays too).

        A block is accepted whole or not at all (a Ctrl-C while it is being checked
        leaves the writer as it was).
        """
        self._check_open()
        if not self._initial_written:
            raise RuntimeError(f"{self.path}: write_initial must come before write_step")
        time = np.asarray(time, dtype=float).reshape(-1)
        n = len(time)
        if n == 0:
            return
        rows = self._state_rows({
            "time": time,
            "x": self._checked_block("x", x, n),
            "q": self._checked_block("q", q, n),
            "v": self._checked_block("v", v, n),
            "omega": self._checked_block("omega", omega, n),
            "minimal/q": self._checked_block("minimal/q", minimal_q, n),
            "minimal/v": self._checked_block("minimal/v", minimal_v, n),
        })
        inputs = self._checked_block("inputs", inputs, n)
        iterations = np.asarray(iterations, dtype=np.int64).reshape(n)
        residual = np.asarray(residual, dtype=float).reshape(n)
        status_text = np.asarray(status)
        if status_text.dtype.kind != "U":  # enums or mixed objects: their string values
            status_text = np.array([_status_text(t) for t in status_text.reshape(-1)], dtype=str)
        status_text = status_text.reshape(n)
        if status_text[0] == status_text[-1] and np.all(status_text == status_text[0]):
            # one status for the whole block (the usual case): encode it once
            one = str(status_text[0]).encode("utf-8")
            status_text = np.full(n, one, dtype=f"S{max(1, len(one))}")
        else:
            status_text = np.char.encode(status_text, "utf-8")
        if status_text.dtype.itemsize > STATUS_BYTES:
            longest = max(status_text.tolist(), key=len).decode("utf-8")
            raise ValueError(f"solver status {longest!r} is longer than {STATUS_BYTES} bytes")
        extra_rows: dict[str, np.ndarray] = {}
        for name, value in (extra or {}).items():
            name = str(name).strip("/")
            self._check_extra_name(name, extra_rows)
            arr = np.asarray(value)
            if arr.dtype.kind in "OUS":
                raise ValueError(f"extra dataset {name!r}: only numeric arrays are supported, got {arr.dtype}")
            if arr.ndim == 0 or arr.shape[0] != n:
                raise ValueError(f"extra dataset {name!r}: expected {n} rows, got shape {arr.shape}")
            known = self._extras.get(name)
            if known is not None and known.shape[1:] != arr.shape[1:]:
                raise ValueError(f"extra dataset {name!r}: shape {arr.shape[1:]}, earlier steps had {known.shape[1:]}")
            pending = next((blk[name] for _, blk in self._extra_buffer if name in blk), None)
            if known is None and pending is not None and pending.shape[1:] != arr.shape[1:]:
                raise ValueError(f"extra dataset {name!r}: shape {arr.shape[1:]}, earlier steps had {pending.shape[1:]}")
            extra_rows[name] = arr.copy()

        for name, block in rows.items():
            self._state_buffer[name].append(block)
        self._final_midpoint = None  # it was the state after the last one
        self._step_buffer["inputs"].append(inputs)
        self._step_buffer["solver/iterations"].append(iterations)
        self._step_buffer["solver/residual"].append(residual)
        self._step_buffer["solver/status"].append(status_text)
        self._extra_buffer.append((n, extra_rows))
        failed = np.flatnonzero(status_text != STEP_SUCCESS)
        if failed.size and self._first_failed < 0:
            self._first_failed = self._steps + int(failed[0])
        self._failed += int(failed.size)
        self._steps += n
        if self._steps - self._steps_on_disk >= self.flush_every and (
            time_module.monotonic() - self._last_flush >= self.flush_interval
        ):
            self.flush()

    def set_final_midpoint(self, v_mid, omega_mid) -> None:
        """The midpoint velocities (nb, 3) of the state after the last one written (a step
        past the end of the run): the last row's knot velocities are then exact instead of
        extrapolated (knot files; ignored otherwise). Cleared by any further step."""
        if self._knots is not None:
            self._final_midpoint = (self._checked("v_mid", v_mid), self._checked("omega_mid", omega_mid))

    def _state_rows(self, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """State rows by dataset: in a knot file the given velocities are the midpoint
        ones, and the knot datasets are filled at each block write (_knot_rows)."""
        if self._knots is None:
            return rows
        rows["v_mid"], rows["omega_mid"] = rows.pop("v"), rows.pop("omega")
        del rows["minimal/v"]
        return rows

    def _knot_rows(self, state_target: int) -> None:
        """Knot velocities of the buffered states into their buffers, and the last row on
        disk (extrapolated at the previous write) rewritten from its successor."""
        first = self._states_on_disk
        new = state_target - first
        if self._knots is None or (new <= 0 and self._final_midpoint is None):
            return
        part = {name: np.concatenate(self._state_buffer[name])[:new] if new > 0 else np.zeros((0,) + self._shapes[name])
                for name in ("x", "q", "v_mid", "omega_mid")}
        redo = first > 0  # the row before the buffered ones, on disk, gains its successor
        if redo:
            part = {name: np.concatenate([self._tail[name][None], part[name]]) for name in part}
        v_mid, omega_mid = part["v_mid"], part["omega_mid"]
        final = self._final_midpoint is not None
        if final:
            v_mid = np.concatenate([v_mid, self._final_midpoint[0][None]])
            omega_mid = np.concatenate([omega_mid, self._final_midpoint[1][None]])
        v, omega, minimal_v = self._knots(part["x"], part["q"], v_mid, omega_mid, not final)
        if redo:
            for name, values in (("v", v), ("omega", omega), ("minimal/v", minimal_v)):
                self._datasets[name][first - 1] = values[0]
            v, omega, minimal_v = v[1:], omega[1:], minimal_v[1:]
        for name, values in (("v", v), ("omega", omega), ("minimal/v", minimal_v)):
            self._state_buffer[name] = [np.asarray(values, dtype=float)]
        if state_target > 0:
            self._tail = {name: part[name][-1].copy() for name in part}

    def write_block(self, mech, block) -> None:
        """Store a run loop's block of steps (simulation.run.StepBlock) with its extras:
        joint impulses, complementarity, contacts and per-step gradients."""
        x, v, q, w = block.state_parts(mech.nb)
        extra = {"impulses": block.impulses, "solver/complementarity": block.complementarity}
        if mech.nc:
            extra.update({
                "contacts/distance": block.contact_distance, "contacts/normal_impulse": block.contact_normal_impulse,
                "contacts/friction_impulse": block.contact_friction_impulse, "contacts/slip": block.contact_slip,
            })
        extra.update(block.gradients)
        self.write_steps(
            block.time, x, q, v, w, block.minimal_q, block.minimal_v, block.inputs,
            iterations=block.iterations, residual=block.residual, status=block.status, extra=extra,
        )

    def flush(self) -> None:
        """Write the buffered steps, update ``steps_completed`` and flush the file.

        Each dataset is topped up to its target length from the rows it lacks, so a flush
        that was itself interrupted (Ctrl-C inside h5py) can simply be repeated, and a
        step whose buffering was interrupted (a trailing partial row) is ignored.

        Raises:
            StorageError: a write error (disk full, quota, file size limit, I/O error). The
                writer is then finished: the file keeps the steps of the previous block
                writes, marked ``failed`` when that could still be written (module docstring).
        """
        self._check_open()
        assert self._file is not None
        state_target = self._steps + 1 if self._initial_written else 0
        try:
            self._reserve(self._pending_bytes(state_target))
        except _WRITE_ERRORS as exc:
            self._stop_on_write_error(exc, clean=True)
        try:
            self._knot_rows(state_target)
            for name in self._state_names:
                self._top_up(self._datasets[name], self._state_buffer[name], self._states_on_disk, state_target)
            for name in _STEP_DATASETS:
                self._top_up(self._datasets[name], self._step_buffer[name], self._steps_on_disk, self._steps)
            self._flush_extras()
            self._file.attrs["steps_completed"] = self._steps
            self._file.attrs["failed_steps"] = self._failed
            self._file.attrs["first_failed_step"] = self._first_failed
            self._file.flush()
        except _WRITE_ERRORS as exc:
            self._stop_on_write_error(exc, clean=False)
        self._clear_buffers()
        self._steps_on_disk = self._steps
        self._states_on_disk = state_target
        self._failed_on_disk = self._failed
        self._first_failed_on_disk = self._first_failed
        self._last_flush = time_module.monotonic()

    def finish(self, status: str, message: str | None = None) -> None:
        """Write every buffered step, set the final status and close the file (then compact
        a run that ended normally, see the module docstring).

        Args:
            status: ``"complete"``, ``"interrupted"`` or ``"failed"`` (``"complete"``
                becomes ``"complete_with_failures"`` when a step did not converge).
            message: optional reason, stored as the ``status_message`` attribute.

        Raises:
            StorageError: a write error (as ``flush``).
        """
        status = _status_text(status)
        if status not in FINAL_STATUSES:
            raise ValueError(f"finish status must be one of {', '.join(FINAL_STATUSES)}, got {status!r}")
        if status == STATUS_COMPLETE and self._failed:
            status = STATUS_COMPLETE_WITH_FAILURES  # "complete" means every step converged
        self._check_open()
        try:
            self.flush()
            try:
                self._write_status(status, message)
            except _WRITE_ERRORS as exc:
                self._stop_on_write_error(exc, clean=False)
            if self.compact and status in (STATUS_COMPLETE, STATUS_COMPLETE_WITH_FAILURES) \
                    and self._data_bytes >= self.compact_min_bytes:
                self._compact()
        finally:
            self._finished = True
            self._close_quietly()

    def __enter__(self) -> StorageWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._finished:
            return False
        if exc_type is None:
            self.finish(STATUS_COMPLETE)
            return False
        status = STATUS_INTERRUPTED if issubclass(exc_type, KeyboardInterrupt) else STATUS_FAILED
        reason = f"{exc_type.__name__}: {exc}" if str(exc) else exc_type.__name__
        try:
            self.finish(status, reason)
        except Exception:  # never mask the exception that stopped the run
            self._finished = True
            self._close_quietly()
        return False

    # ------------------------------------------------------------------ file space and errors

    def _pending_bytes(self, state_target: int) -> int:
        """The file space the next block write needs: the chunks it adds (HDF5 allocates a
        raw chunk whole, when its first row is written) and some metadata per dataset."""
        need = 0
        targets = {name: state_target for name in self._state_names}
        targets.update({name: self._steps for name in _STEP_DATASETS})
        for name, target in targets.items():
            ds = self._datasets[name]
            need += _chunk_growth(ds.chunks, ds.dtype, ds.shape[0], target)
        for ds in self._extras.values():
            need += _chunk_growth(ds.chunks, ds.dtype, ds.shape[0], self._steps)
        new: dict[str, np.ndarray] = {}
        for _, blk in self._extra_buffer:
            for name, arr in blk.items():
                if name not in self._extras:
                    new.setdefault(name, arr)
        for name, arr in new.items():  # created with every row up to now, as _flush_extras makes them
            chunks = _series_chunks(arr.shape[1:], arr.dtype.itemsize, self._length(name))
            need += _chunk_growth(chunks, arr.dtype, 0, self._steps)
        return need + (len(targets) + len(self._extras) + len(new)) * _METADATA_BYTES

    def _reserve(self, need: int) -> None:
        """Have the file space for ``need`` more bytes, and the reserve after them, allocated
        on disk before HDF5 writes (module docstring, "Full disks").

        Raises:
            OSError: no space (ENOSPC), quota (EDQUOT), file size limit (EFBIG), I/O error.
        """
        if not self._can_reserve or self._lock is None or self._file is None:
            return
        end = int(self._file.id.get_filesize())
        needed = end + int(need) + _RESERVE_BYTES
        if needed <= self._reserved:
            return
        generous = max(needed, self._reserved + _RESERVE_STEP, end + end // 8)
        fd = self._lock.fileno()
        for target in (generous, needed):
            try:
                os.posix_fallocate(fd, end, target - end)
            except OSError as exc:
                if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS, errno.ENODEV):
                    self._can_reserve = False  # this file system cannot: write unprotected
                    return
                if target == needed:
                    raise
                continue
            self._reserved = target
            return

    def _write_status(self, status: str, message: str | None) -> None:
        """Set the final status, flush, give back the unused reserve, close HDF5's handle."""
        assert self._file is not None
        f = self._file
        self._data_bytes = sum(ds.size * ds.dtype.itemsize for ds in (*self._datasets.values(), *self._extras.values()))
        f.attrs["status"] = status
        f.attrs["finished"] = _utc_now()
        f.attrs["wall_time"] = time_module.perf_counter() - self._created
        if message:
            f.attrs["status_message"] = str(message)
        f.flush()
        if self._reserved and self._lock is not None:
            try:
                os.ftruncate(self._lock.fileno(), int(f.id.get_filesize()))
            except OSError:
                pass  # the reserve stays: a few hundred KiB of zeros past the data
        f.close()
        self._file = None

    def _stop_on_write_error(self, exc: BaseException, *, clean: bool) -> None:
        """Finish the file after a write error and raise the StorageError that says so.

        ``clean``: the error came before HDF5 wrote anything of the block (the reservation
        failed), so the file holds the previous block writes exactly and the reserve has
        room for the status. Otherwise HDF5 is detached from the file first (whatever it
        still holds goes to a scratch file), and the file is reopened to cut every dataset
        back to the last complete block and mark it failed.
        """
        reason = _os_reason(exc)
        kept = self._steps_on_disk
        message = f"write error after {kept} steps: {reason}"
        marked = False
        if clean:
            try:
                self._write_status(STATUS_FAILED, message)
                marked = True
            except Exception:
                pass
        if not marked:
            self._detach()
            marked = self._mark_failed(kept, message)
        self._finished = True
        self._close_quietly()
        self._clear_buffers()
        self._steps, self._failed, self._first_failed = kept, self._failed_on_disk, self._first_failed_on_disk
        if marked:
            kept_text = f"after {kept} steps, which the file keeps" if kept else "before its first step was stored"
            raise StorageError(f"{self.path}: write error: {reason}; the run stopped {kept_text} (status 'failed')") from None
        raise StorageError(
            f"{self.path}: write error: {reason}, in the middle of a block write; the run stopped after {kept} steps "
            "and the file may be damaged"
        ) from None

    def _detach(self) -> None:
        """Point HDF5's descriptor of the file at a scratch file, then close the handle: what
        HDF5 still holds of a failed block write never reaches the file."""
        if self._file is None:
            return
        try:
            fd = int(self._file.id.get_vfd_handle())
            scratch = _scratch_fd()
            try:
                os.dup2(scratch, fd)
            finally:
                os.close(scratch)
        except Exception:
            pass
        try:
            self._file.close()
        except Exception:
            pass
        self._file = None

    def _mark_failed(self, kept: int, message: str) -> bool:
        """Reopen the file after a failed block write: every dataset back to the last
        complete block, status failed. False when the file cannot be updated."""
        try:
            with h5py.File(self.path, "r+", locking=False) as f:
                datasets: dict[str, h5py.Dataset] = {}
                f.visititems(lambda name, obj: datasets.setdefault(name, obj) if isinstance(obj, h5py.Dataset) else None)
                for name, ds in datasets.items():
                    target = kept + 1 if name in self._state_names else kept
                    if ds.ndim and ds.shape[0] > target:
                        ds.resize(target, axis=0)
                    elif ds.ndim and ds.shape[0] < target:
                        return False  # the last block write did not reach the disk whole
                f.attrs["steps_completed"] = kept
                f.attrs["failed_steps"] = self._failed_on_disk
                f.attrs["first_failed_step"] = self._first_failed_on_disk
                f.attrs["status"] = STATUS_FAILED
                f.attrs["status_message"] = message
                f.attrs["finished"] = _utc_now()
            _read_storage(self.path, False, probe=False)  # and it reads back whole (no fork: we may have threads)
            return True
        except Exception:
            return False

    def _discard(self) -> None:
        """The file could not even get its header: detach HDF5, remove the (truncated) file,
        let go of the lock."""
        self._detach()
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self._finished = True
        self._release_lock()

    # ------------------------------------------------------------------ compaction

    def _compact(self) -> None:
        """Replace the finished file by a gzip-compressed copy (module docstring). Best
        effort: on any failure (no room for the copy, a second Ctrl-C) the uncompressed
        file stays, complete, and ``compaction_note`` says why.

        The copy is written under a temporary name next to the file (a rename within one
        folder is atomic), locked like the file; a copy left by a killed compaction is
        removed by the next one.
        """
        try:
            source = Path(os.path.realpath(self.path))  # a symbolic link stays a link
            info = os.stat(source)
            if info.st_nlink > 1:
                self.compaction_note = "not compressed: the file has other hard links"
                return
            _remove_stale_copies(source)
            temporary = source.with_name(f".{source.name}.{os.getpid()}{_COMPACTING_SUFFIX}")
            fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), stat.S_IMODE(info.st_mode))
        except OSError as exc:
            self.compaction_note = f"not compressed: {_os_reason(exc)}"
            return
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with h5py.File(source, "r", locking=False) as src, h5py.File(temporary, "w", libver=_LIBVER, locking=False) as dst:

                def reserve(raw_bytes: int) -> None:
                    # compressed rows never outgrow the raw ones: with the next dataset's raw
                    # size reserved, HDF5 cannot meet a full disk while it writes the copy
                    if self._can_reserve:
                        end = int(dst.id.get_filesize())
                        os.posix_fallocate(fd, end, int(raw_bytes) + _RESERVE_BYTES)

                _copy_compressed(src, dst, reserve, self._stop_requested)
                dst.flush()
                os.ftruncate(fd, int(dst.id.get_filesize()))
            os.fsync(fd)  # the copy is on disk before its name replaces the file
            os.replace(temporary, source)
            self.compacted = True
        except BaseException as exc:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            interrupted = isinstance(exc, (KeyboardInterrupt, _CompactionStopped))
            self.compaction_note = "not compressed: interrupted" if interrupted else f"not compressed: {_os_reason(exc)}"
            if not isinstance(exc, (Exception, KeyboardInterrupt)):
                raise  # SystemExit and the like
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ internals

    def _length(self, name: str) -> int | None:
        """The rows dataset ``name`` will hold when the run takes its expected steps."""
        if self._expected_steps is None:
            return None
        return self._expected_steps + 1 if name in self._state_names else self._expected_steps

    def _check_open(self) -> None:
        if self._finished or self._file is None:
            raise RuntimeError(f"{self.path}: the storage writer is already finished")

    def _clear_buffers(self) -> None:
        for buffer in list(self._state_buffer.values()) + list(self._step_buffer.values()):
            buffer.clear()
        self._extra_buffer.clear()

    def _release_lock(self) -> None:
        if self._lock is not None:
            try:
                self._lock.close()
            except OSError:
                pass
            self._lock = None

    def _close_quietly(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except Exception:
                pass
            self._file = None
        self._release_lock()

    def _check_extra_name(self, name: str, current: dict[str, np.ndarray]) -> None:
        """ValueError when ``name`` is empty, reserved, or nests into another dataset's path."""
        if name in self._extras:
            return
        if not name or name in _CORE_DATASETS or name in ("minimal", "solver"):
            raise ValueError(f"extra dataset name {name!r} is empty or reserved")
        others = set(_CORE_DATASETS) | set(self._extras) | set(current)
        others |= {n for _, blk in self._extra_buffer for n in blk}
        for other in others - {name}:
            if name.startswith(other + "/") or other.startswith(name + "/"):
                raise ValueError(f"extra dataset name {name!r} clashes with dataset {other!r}")

    def _checked(self, name: str, value) -> np.ndarray:
        """``value`` as float64 with the dataset's row shape, or ValueError naming the field."""
        arr = np.asarray(value, dtype=float)
        shape = self._shapes[name]
        if arr.shape != shape:
            if arr.size == int(np.prod(shape, dtype=np.int64)) and arr.ndim <= 1 and len(shape) <= 1:
                arr = arr.reshape(shape)
            else:
                raise ValueError(f"{name}: expected shape {shape}, got {arr.shape}")
        return arr.copy()

    def _checked_block(self, name: str, value, n: int) -> np.ndarray:
        """``value`` as float64 with n rows of the dataset's row shape, or ValueError naming the field.

        As for one row, only rows of at most one axis may come flat ((n,) for (n, 1)); a
        block of the right size but another shape is an error, never reshaped."""
        arr = np.asarray(value, dtype=float)
        row = self._shapes[name]
        shape = (n,) + row
        if arr.shape != shape:
            if arr.size == int(np.prod(shape, dtype=np.int64)) and len(row) <= 1 and arr.ndim <= 2 and len(arr) == n:
                arr = arr.reshape(shape)
            else:
                raise ValueError(f"{name}: expected shape {shape}, got {arr.shape}")
        return np.array(arr, copy=True)

    def _buffer_state(self, time, x, q, v, omega, minimal_q, minimal_v) -> None:
        rows = self._state_rows({
            "x": self._checked("x", x),
            "q": self._checked("q", q),
            "v": self._checked("v", v),
            "omega": self._checked("omega", omega),
            "minimal/q": self._checked("minimal/q", minimal_q),
            "minimal/v": self._checked("minimal/v", minimal_v),
        })
        self._state_buffer["time"].append(np.array([float(time)]))
        for name, row in rows.items():
            self._state_buffer[name].append(row[None])

    @staticmethod
    def _top_up(dataset: h5py.Dataset, blocks: list, base: int, target: int) -> None:
        """Grow ``dataset`` to ``target`` rows; the buffered ``blocks`` (arrays) hold rows
        ``base`` onwards, in order."""
        n0 = dataset.shape[0]
        missing = target - n0
        if missing <= 0:
            return
        rows = np.concatenate([np.asarray(b) for b in blocks]) if blocks else np.zeros((0,) + dataset.shape[1:])
        if n0 < base or target - base > len(rows):
            raise RuntimeError(f"{dataset.name}: rows {n0}..{target} are not all buffered (from row {base})")
        # (status strings are buffered utf-8 encoded, as bytes)
        block = np.asarray(rows[n0 - base : target - base], dtype=dataset.dtype)
        block = block.reshape((missing,) + dataset.shape[1:])
        dataset.resize(target, axis=0)
        dataset[n0:] = block

    def _flush_extras(self) -> None:
        """Bring every extra dataset to ``steps`` rows, creating datasets on first use."""
        assert self._file is not None
        entries = self._extra_buffer  # [(rows, {name: (rows, ...) array})]
        new = sorted({name for _, blk in entries for name in blk} - set(self._extras))
        for name in new:
            first = next(blk[name] for _, blk in entries if name in blk)
            self._extras[name] = _create_series(self._file, name, first.shape[1:], first.dtype, length=self._length(name))
            for key, value in self._dataset_attrs.get(name, {}).items():
                if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
                    self._extras[name].attrs[key] = [str(v) for v in value]  # labels: an array of strings
                else:
                    self._extras[name].attrs[key] = _encode_attr(value)
        total = sum(n for n, _ in entries)
        for name, dataset in self._extras.items():
            fill = _fill_value(dataset.dtype)
            if dataset.shape[0] < self._steps_on_disk:  # rows from before the dataset existed
                n0 = dataset.shape[0]
                dataset.resize(self._steps_on_disk, axis=0)
                dataset[n0:] = fill
            block = np.full((total,) + dataset.shape[1:], fill, dtype=dataset.dtype)
            row = 0
            for n, blk in entries:
                if name in blk:
                    block[row : row + n] = blk[name]
                row += n
            self._top_up(dataset, [block], self._steps_on_disk, self._steps)




def _chunk_growth(chunks: tuple[int, ...] | None, dtype, before: int, after: int) -> int:
    """Bytes of the chunks a raw series gains from ``before`` to ``after`` rows."""
    if not chunks or after <= before:
        return 0
    rows = int(chunks[0])
    new_chunks = -(-int(after) // rows) - -(-int(before) // rows)
    return new_chunks * int(np.prod(chunks, dtype=np.int64)) * np.dtype(dtype).itemsize


# Rows copied at once by the compaction (whole chunks, about this many bytes).
_COPY_BYTES = 4 * 1024 * 1024


def _copy_attrs(source: h5py.AttributeManager, target: h5py.AttributeManager) -> None:
    """Every attribute, with its HDF5 type (variable-length strings stay strings)."""
    for key in source:
        target.create(key, source[key], dtype=source.get_id(key).dtype)


_COMPACTING_SUFFIX = ".compacting"


def _remove_stale_copies(source: Path) -> None:
    """Remove the temporary copies of ``source`` that no compaction holds (left by a
    process killed while it compacted)."""
    for path in source.parent.glob(f".{source.name}.*{_COMPACTING_SUFFIX}"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(path)
        except OSError:
            pass  # another compaction holds it
        finally:
            os.close(fd)


class _CompactionStopped(Exception):
    """A stop was requested during a compaction."""


def _copy_compressed(src: h5py.File, dst: h5py.File, reserve=None, stop_requested=None) -> None:
    """Copy a storage file's groups, datasets and attributes into ``dst``, the datasets
    chunked as the writer makes them and gzip-compressed. ``reserve(bytes)`` is called
    before each dataset with its raw size (file space for the copy); ``stop_requested()``
    between blocks of rows (True: raise _CompactionStopped)."""
    _copy_attrs(src.attrs, dst.attrs)
    items: list[tuple[str, Any]] = []

    def collect(name: str, obj) -> None:
        items.append((name, obj))

    src.visititems(collect)
    for name, obj in items:
        if isinstance(obj, h5py.Group):
            _copy_attrs(obj.attrs, dst.require_group(name).attrs)
            continue
        if not isinstance(obj, h5py.Dataset):
            continue
        if reserve is not None:
            reserve(obj.size * obj.dtype.itemsize + _METADATA_BYTES)
        if obj.ndim == 0:
            out = dst.create_dataset(name, data=obj[()], dtype=obj.dtype)
        else:
            n = obj.shape[0]
            out = _create_series(dst, name, obj.shape[1:], obj.dtype, compress=True, length=n)  # (a short run's chunks stay short)
            out.resize(n, axis=0)
            rows = out.chunks[0]
            row_bytes = max(1, obj.dtype.itemsize * int(np.prod(obj.shape[1:], dtype=np.int64)))
            step = rows * max(1, _COPY_BYTES // (rows * row_bytes))
            for start in range(0, n, step):
                if stop_requested is not None and stop_requested():
                    raise _CompactionStopped
                out[start : start + step] = obj[start : start + step]
        _copy_attrs(obj.attrs, out.attrs)


# ---------------------------------------------------------------------- reading


@dataclass
class StoredRun:
    """A storage file read back and validated, trimmed to its consistent length T.

    Every per-state array has T+1 rows (none when a killed run had not yet written its
    initial state), every per-step array (``inputs``, ``solver``, ``extras``) T rows, and
    the widths agree with the names (``read_storage`` checks it).

    Attributes:
        path: the file.
        attrs: every root attribute, decoded (str, Python numbers, dicts from JSON).
        scene_yaml: the resolved scene YAML.
        status: running | complete | complete_with_failures | interrupted | failed.
        steps_completed: T, steps stored.
        timestep: s.
        time: (T+1,) s.
        x: (T+1, nb, 3); q: (T+1, nb, 4); v: (T+1, nb, 3); omega: (T+1, nb, 3): velocities
            at t_k in a knot file, midpoint velocities in an older one (``velocities``).
        v_mid, omega_mid: (T+1, nb, 3) the integrator's midpoint velocities (knot files;
            None in a midpoint file, whose ``v``, ``omega`` are those).
        minimal_q: (T+1, nq); minimal_v: (T+1, nv) (at t_k in a knot file).
        minimal_q_names, minimal_v_names, body_names: dataset `names` attributes.
        inputs: (T, nu).
        solver: "iterations" (T,) int, "residual" (T,) float, "status" (T,) str.
        extras: every other dataset by path, (T, ...).
        writing: a process holds the file's writer lock (a run still being written), so a
            ``running`` status is current, not the mark of a killed writer.
    """

    path: Path
    attrs: dict[str, Any]
    scene_yaml: str
    status: str
    steps_completed: int
    timestep: float
    time: np.ndarray
    x: np.ndarray
    q: np.ndarray
    v: np.ndarray
    omega: np.ndarray
    minimal_q: np.ndarray
    minimal_v: np.ndarray
    minimal_q_names: list[str]
    minimal_v_names: list[str]
    body_names: list[str]
    inputs: np.ndarray
    solver: dict[str, np.ndarray] = field(default_factory=dict)
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    writing: bool = False
    v_mid: np.ndarray | None = None
    omega_mid: np.ndarray | None = None

    @property
    def velocities(self) -> str:
        """``knot`` (v, omega, minimal/v at t_k; v_mid, omega_mid stored) or ``midpoint``
        (a file written before knot velocities: v, omega are the midpoint ones)."""
        return KNOT if self.v_mid is not None else MIDPOINT

    @property
    def midpoint_velocities(self) -> tuple[np.ndarray, np.ndarray]:
        """(v, omega) (T+1, nb, 3): the integrator's midpoint velocities, from either kind of file."""
        if self.v_mid is not None:
            return self.v_mid, self.omega_mid
        return self.v, self.omega

    def midpoint_state(self, k: int) -> np.ndarray:
        """Maximal state (13 nb,) of entry k in Dojo's layout [x, v15, q, w15] per body (the
        state a step starts from: restarts reproduce the run's next step)."""
        v, omega = self.midpoint_velocities
        return np.concatenate([self.x[k], v[k], self.q[k], omega[k]], axis=1).reshape(-1)

    @property
    def gravity(self) -> np.ndarray:
        """(3,) m/s^2, world frame."""
        return np.asarray(self.attrs.get("gravity", [0.0, 0.0, 0.0]), dtype=float)

    @property
    def solver_options(self) -> dict:
        """The solver options the run used."""
        value = self.attrs.get("solver_options", {})
        return value if isinstance(value, dict) else {}

    @property
    def ended_without_status(self) -> bool:
        """The writer died (killed, crashed) before it could set a final status."""
        return self.status == STATUS_RUNNING and not self.writing

    def status_note(self) -> str | None:
        """One line saying how the run ended, when not ``complete``; None when complete.

        Every reading command prints it, so a killed, interrupted or failed run is never
        taken for a whole one.
        """
        t = self.steps_completed
        steps = f"{t} step{'' if t == 1 else 's'}"
        if self.status == STATUS_COMPLETE:
            return None
        if self.status == STATUS_RUNNING:
            if self.writing:
                return f"{self.path}: still being written by another process (status 'running'); {steps} stored so far"
            return f"{self.path}: the run ended without a status (killed?); {steps} stored"
        if self.status == STATUS_COMPLETE_WITH_FAILURES:
            failed = self.attrs.get("failed_steps")
            first = self.attrs.get("first_failed_step")
            which = f"{failed} of {t} steps" if isinstance(failed, int) else "some steps"
            at = f", the first at step {first}" if isinstance(first, int) and first >= 0 else ""
            return f"{self.path}: {which} did not converge{at} (status 'complete_with_failures')"
        why = self.attrs.get("status_message")
        why = f": {shown(why, 120)}" if isinstance(why, str) and why else ""
        if self.status == STATUS_INTERRUPTED:
            return f"{self.path}: the run was interrupted after {steps} (status 'interrupted'{why})"
        return f"{self.path}: the run failed after {steps} (status 'failed'{why})"


def _names(dataset: h5py.Dataset) -> list[str] | None:
    """The ``names`` attribute as a list of str, None when missing or not text."""
    if "names" not in dataset.attrs:
        return None
    raw = dataset.attrs["names"]
    values = np.asarray(raw).reshape(-1).tolist() if not isinstance(raw, (str, bytes)) else [raw]
    out = []
    for n in values:
        if isinstance(n, bytes):
            n = n.decode("utf-8")
        if not isinstance(n, str):
            return None
        out.append(n)
    return out


def read_storage(path: str | os.PathLike, gradients: bool = False, probe: bool = True) -> StoredRun:
    """Read and validate a storage file, whatever its status.

    A ``running`` file (a writer still at work, or one that was killed) is trimmed to the
    shortest consistent length; a file with a final status must hold exactly
    ``steps_completed`` steps in every per-step dataset. Per-step Jacobians
    (``gradients/...`` datasets of ``dojo simulate --gradients``, (T, 12 nb, 12 nb) each,
    large) are read into ``extras`` only with ``gradients=True``; ``read_gradient_rows``
    reads the rows of a few steps. ``probe=False`` skips the walk of the file's structure in
    a child process (about 20 ms, a fork): for a file this process has just written and
    finished itself (a sweep's run reading its own file back), never for a file from
    elsewhere.

    Raises:
        NotStorageFileError: a well-formed HDF5 file that is not a dojo storage file (exit 2).
        StorageError: the file is missing, unreadable, not HDF5, truncated, damaged or
            inconsistent (a missing or malformed attribute or dataset, lengths or widths that
            disagree, a non-finite state in a ``complete`` run), or of a newer format
            version; the message names the file and what is wrong.
    """
    return _read_storage(path, gradients, probe=probe)


def _read_storage(path: str | os.PathLike, gradients: bool, probe: bool) -> StoredRun:
    label = os.fspath(path)
    p = Path(path)
    _check_readable_file(p, label)
    writing = being_written(p)
    if probe:
        _probe_structure(p, label)
    tries = _BUSY_READ_TRIES if writing else 1
    for attempt in range(tries):
        try:
            f = _open_hdf5(p, label, writing)
            try:
                return _read_open(f, p, label, gradients, writing)
            finally:
                try:
                    f.close()
                except Exception:
                    pass
        except NotStorageFileError:
            raise
        except StorageError as exc:
            # a block write may have been under way: read again, then say what was seen
            if attempt + 1 < tries and being_written(p):
                time_module.sleep(_BUSY_READ_PAUSE)
                continue
            if writing:
                raise StorageError(f"{exc} (another process is writing the file; try again)") from None
            raise
    raise AssertionError("unreachable")  # pragma: no cover


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


def _check_readable_file(p: Path, label: str) -> None:
    """StorageError unless ``p`` is a readable, non-empty regular file (checked before
    anything opens it: opening a FIFO would wait forever)."""
    try:
        info = os.stat(p)
    except FileNotFoundError:
        raise StorageError(f"{label}: no such file") from None
    except PermissionError:
        raise StorageError(f"{label}: permission denied") from None
    except OSError as exc:
        raise StorageError(f"{label}: cannot read: {_os_reason(exc)}") from None
    if stat.S_ISDIR(info.st_mode):
        raise StorageError(f"{label}: is a directory, not a storage file")
    if not stat.S_ISREG(info.st_mode):
        raise StorageError(f"{label}: not a regular file (a device, FIFO or socket), not a storage file")
    try:
        with open(p, "rb") as fh:
            head = fh.read(len(_HDF5_SIGNATURE))
    except PermissionError:
        raise StorageError(f"{label}: permission denied") from None
    except OSError as exc:
        raise StorageError(f"{label}: cannot read: {_os_reason(exc)}") from None
    if info.st_size == 0:
        raise StorageError(f"{label}: empty file (0 bytes), not a storage file (a run killed before it wrote anything?)")
    if head != _HDF5_SIGNATURE and not h5py.is_hdf5(p):
        raise StorageError(f"{label}: not an HDF5 file (no HDF5 signature), not a storage file")


_TRUNCATED = re.compile(r"truncated file: eof = (\d+).*stored_eof = (\d+)")


def _open_hdf5(p: Path, label: str, writing: bool) -> h5py.File:
    """Open read-only.

    HDF5's own file locks are skipped when a writer holds the file (HDF5 would refuse),
    and tried first otherwise: HDF5 refuses to open one file twice in a process with
    different locking flags, so a file this process already has open with locks (a test,
    a notebook) needs them again.
    """
    unlocked: dict[str, Any] = {"locking": False}
    attempts = (unlocked, {}) if writing else ({}, unlocked)
    error: BaseException | None = None
    for kwargs in attempts:
        try:
            return h5py.File(p, "r", **kwargs)
        except Exception as exc:  # h5py raises OSError, and others for damaged headers
            error = error or exc
    text = str(error)
    found = _TRUNCATED.search(text)
    if found:
        raise StorageError(
            f"{label}: damaged storage file: truncated ({found.group(1)} of its {found.group(2)} bytes are there)"
        ) from None
    if not h5py.is_hdf5(p):
        raise StorageError(f"{label}: not an HDF5 file") from None
    raise StorageError(f"{label}: damaged storage file: HDF5 cannot open it ({_os_reason(error)})") from None


def _read_open(f: h5py.File, p: Path, label: str, gradients: bool = False, writing: bool = False) -> StoredRun:
    """Validate an open storage file and read it (see read_storage). Any failure of h5py
    on damaged bytes becomes a StorageError naming the file."""
    try:
        return _validated(f, p, label, gradients, writing)
    except DojoError:
        raise
    except RecursionError:
        raise StorageError(f"{label}: damaged storage file: its groups nest too deeply") from None
    except MemoryError:
        raise StorageError(f"{label}: damaged storage file: a dataset claims more rows than fit in memory") from None
    except Exception as exc:  # h5py and HDF5 raise many types on damaged bytes
        raise StorageError(f"{label}: damaged storage file: {_os_reason(exc)}") from None


class _Damaged(Exception):
    """What is wrong with a storage file (becomes ``StorageError("<file>: damaged storage file: <what>")``)."""


def _validated(f: h5py.File, p: Path, label: str, gradients: bool, writing: bool) -> StoredRun:
    try:
        attrs = _attributes(f, label)
        knot = attrs.get(VELOCITIES_ATTR, MIDPOINT) == KNOT
        body_names, datasets = _core_datasets(f, knot)
        extras = _extra_datasets(f, attrs, len(body_names), datasets["inputs"].shape[1])
        steps, n_states = _consistent_length(attrs, datasets, extras)

        def rows(name: str, n: int) -> np.ndarray:
            _check_stored(name, datasets[name], n)
            return np.asarray(datasets[name][:n])

        arrays = {name: rows(name, n_states) for name in _state_datasets(knot)}
        arrays.update({name: rows(name, steps) for name in _STEP_DATASETS})
        status = arrays["solver/status"]
        try:
            text = [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in status.reshape(-1).tolist()]
        except UnicodeDecodeError:
            raise _Damaged("dataset 'solver/status' is not UTF-8 text") from None
        arrays["solver/status"] = np.array([t.rstrip("\0") for t in text], dtype=str).reshape(steps)
        _check_values(attrs["status"], arrays)
        extra_arrays = {}
        for name, d in extras.items():
            if gradients or not name.startswith(GRADIENT_GROUP + "/"):
                if d.ndim >= 1:
                    _check_stored(name, d, steps)
                extra_arrays[name] = np.asarray(d[:steps]) if d.ndim >= 1 else np.asarray(d[()])
    except _Damaged as exc:
        raise StorageError(f"{label}: damaged storage file: {exc}") from None
    return StoredRun(
        path=p,
        attrs=attrs,
        scene_yaml=attrs["scene"],
        status=attrs["status"],
        steps_completed=steps,
        timestep=float(attrs["timestep"]),
        time=arrays["time"],
        x=arrays["x"],
        q=arrays["q"],
        v=arrays["v"],
        omega=arrays["omega"],
        minimal_q=arrays["minimal/q"],
        minimal_v=arrays["minimal/v"],
        minimal_q_names=_names(datasets["minimal/q"]) or [],
        minimal_v_names=_names(datasets["minimal/v"]) or [],
        body_names=body_names,
        inputs=arrays["inputs"],
        solver={
            "iterations": arrays["solver/iterations"].astype(np.int64),
            "residual": arrays["solver/residual"],
            "status": arrays["solver/status"],
        },
        extras=extra_arrays,
        writing=writing,
        v_mid=arrays.get("v_mid"),
        omega_mid=arrays.get("omega_mid"),
    )


def _state_datasets(knot: bool) -> tuple[str, ...]:
    """The per-state datasets of a knot file (knot) or of a midpoint one."""
    return _STATE_DATASETS + (_MIDPOINT_DATASETS if knot else ())


def _check_stored(name: str, ds: h5py.Dataset, rows: int) -> None:
    """The first ``rows`` rows of a chunked dataset are stored, not just claimed: the writer
    writes every chunk it extends a dataset over, so a chunk missing there means a length
    set without its data (HDF5 would read the fill value, zeros, as if stored), or a
    tampered length (10^9 rows claimed in a small file), found before anything is read."""
    if ds.chunks is None or rows <= 0 or any(n == 0 for n in ds.shape[1:]):
        return
    extent = (rows,) + ds.shape[1:]
    needed = int(np.prod([-(-n // c) for n, c in zip(extent, ds.chunks)], dtype=np.int64))
    stored = ds.id.get_num_chunks()
    if stored < needed:
        raise _Damaged(f"dataset {name!r} claims {ds.shape[0]} rows, but its data covers fewer than {rows}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _attributes(f: h5py.File, label: str) -> dict[str, Any]:
    """The root attributes, decoded and checked (format first: a foreign file is told as such)."""
    attrs: dict[str, Any] = {}
    for name in f.attrs:
        try:
            attrs[name] = _decode_attr(name, f.attrs[name])
        except UnicodeDecodeError:
            if name == "format":
                raise NotStorageFileError(f"{label}: not a dojo storage file (attribute 'format' is not text)") from None
            raise _Damaged(f"attribute {name!r} is not UTF-8 text") from None
        except Exception as exc:
            raise _Damaged(f"attribute {name!r} cannot be read ({_os_reason(exc)})") from None
    if "format" not in attrs:
        raise NotStorageFileError(
            f"{label}: not a dojo storage file (no attribute 'format': an HDF5 file written by another program?)"
        )
    if attrs["format"] != FORMAT_NAME:
        hint = ": a gradient file of `dojo gradients -o`" if attrs["format"] == "dojo-gradients" else ""
        raise NotStorageFileError(f"{label}: not a dojo storage file (attribute 'format' is {shown(attrs['format'])}{hint})")
    for name in _REQUIRED_ATTRS:
        if name not in attrs:
            raise _Damaged(f"missing attribute {name!r}")
    version = attrs["format_version"]
    if not _is_int(version) or version < 1:
        raise _Damaged(f"attribute 'format_version' is {shown(version)}, expected an integer >= 1")
    if version > FORMAT_VERSION:
        raise StorageError(
            f"{label}: unsupported format_version {version} (this dojo_cli reads {FORMAT_VERSION}; a newer dojo_cli wrote it)"
        )
    if not isinstance(attrs["scene"], str):
        raise _Damaged(f"attribute 'scene' is {type(attrs['scene']).__name__}, expected the scene's YAML text")
    h = attrs["timestep"]
    if not _is_real(h) or not math.isfinite(h) or h <= 0:
        raise _Damaged(f"attribute 'timestep' is {shown(h)}, expected a finite number of seconds > 0")
    status = attrs["status"]
    if not isinstance(status, str):
        raise _Damaged(f"attribute 'status' is {shown(status)}, expected text")
    if status not in STATUSES:
        raise _Damaged(f"unknown status {shown(status)} (known: {', '.join(STATUSES)})")
    steps = attrs["steps_completed"]
    if not _is_int(steps) or steps < 0:
        raise _Damaged(f"attribute 'steps_completed' is {shown(steps)}, expected an integer >= 0")
    for name in ("failed_steps", "first_failed_step"):
        if name in attrs and (not _is_int(attrs[name]) or attrs[name] < -1):
            raise _Damaged(f"attribute {name!r} is {shown(attrs[name])}, expected an integer")
    if "overrides" in attrs and not isinstance(attrs["overrides"], dict):
        raise _Damaged(f"attribute 'overrides' is {shown(attrs['overrides'])}, expected a JSON object")
    if "wall_time" in attrs and (not _is_real(attrs["wall_time"]) or not attrs["wall_time"] >= 0):
        raise _Damaged(f"attribute 'wall_time' is {shown(attrs['wall_time'])}, expected seconds >= 0")
    for name in ("scene_name", "integrator", "dojo_cli_version", "created", "finished", "status_message",
                 "scene_hash", "command_line"):
        if name in attrs and not isinstance(attrs[name], str):
            raise _Damaged(f"attribute {name!r} is {shown(attrs[name])}, expected text")
    if "gravity" in attrs:
        g = attrs["gravity"]
        try:
            ok = np.asarray(g).dtype.kind in "iuf" and np.shape(g) == (3,) and bool(np.all(np.isfinite(g)))
        except Exception:
            ok = False
        if not ok:
            raise _Damaged(f"attribute 'gravity' is {shown(g)}, expected 3 finite numbers")
    if VELOCITIES_ATTR in attrs and attrs[VELOCITIES_ATTR] not in (KNOT, MIDPOINT):
        raise _Damaged(f"attribute {VELOCITIES_ATTR!r} is {shown(attrs[VELOCITIES_ATTR])}, expected {KNOT!r} or {MIDPOINT!r}")
    if "solver_options" in attrs and not isinstance(attrs["solver_options"], dict):
        raise _Damaged(f"attribute 'solver_options' is {shown(attrs['solver_options'])}, expected a JSON object")
    if "contact_names" in attrs:
        names = attrs["contact_names"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _Damaged(f"attribute 'contact_names' is {shown(names)}, expected a JSON list of names")
    return attrs


_FLOAT = "f"
_CORE_SPECS: dict[str, tuple[str, str]] = {
    # name: (dtype kinds, what the row holds); row shapes are checked in _core_datasets
    "time": (_FLOAT, "numbers"),
    "x": (_FLOAT, "numbers"),
    "q": (_FLOAT, "numbers"),
    "v": (_FLOAT, "numbers"),
    "omega": (_FLOAT, "numbers"),
    "v_mid": (_FLOAT, "numbers"),
    "omega_mid": (_FLOAT, "numbers"),
    "minimal/q": (_FLOAT, "numbers"),
    "minimal/v": (_FLOAT, "numbers"),
    "inputs": (_FLOAT, "numbers"),
    "solver/iterations": ("iu", "integers"),
    "solver/residual": (_FLOAT, "numbers"),
    "solver/status": ("S", "text"),
}


def _dataset(f: h5py.File, name: str) -> h5py.Dataset:
    """The dataset ``name``, stored in this file (no links to other files or places)."""
    try:
        link = f.get(name, getlink=True)
    except Exception:
        link = None
    if link is None:
        raise _Damaged(f"missing dataset {name!r}")
    if not isinstance(link, h5py.HardLink):
        raise _Damaged(f"dataset {name!r} is a link ({type(link).__name__}), not data stored in the file")
    obj = f.get(name)
    if not isinstance(obj, h5py.Dataset):
        raise _Damaged(f"{name!r} is a {type(obj).__name__}, expected a dataset")
    return obj


def _check_kind(name: str, ds: h5py.Dataset, kinds: str, what: str) -> None:
    kind = ds.dtype.kind
    if kinds == "S":
        if h5py.check_string_dtype(ds.dtype) is None and kind != "S":
            raise _Damaged(f"dataset {name!r} holds {ds.dtype}, expected {what}")
    elif kind not in kinds:
        raise _Damaged(f"dataset {name!r} holds {ds.dtype}, expected {what}")


def _core_datasets(f: h5py.File, knot: bool) -> tuple[list[str], dict[str, h5py.Dataset]]:
    """The core datasets (with the midpoint velocities in a knot file), their types and row
    shapes checked against each other and their names."""
    datasets = {name: _dataset(f, name) for name in _state_datasets(knot) + _STEP_DATASETS}
    for name, (kinds, what) in _CORE_SPECS.items():
        if name in datasets:
            _check_kind(name, datasets[name], kinds, what)
    for name in ("time", "solver/iterations", "solver/residual", "solver/status"):
        if datasets[name].ndim != 1:
            raise _Damaged(f"dataset {name!r} has shape {datasets[name].shape}, expected one value per row")
    x = datasets["x"]
    if x.ndim != 3 or x.shape[2] != 3:
        raise _Damaged(f"dataset 'x' has shape {x.shape}, expected (states, bodies, 3)")
    nb = x.shape[1]
    for name, width in (("q", 4), ("v", 3), ("omega", 3)) + tuple((n, 3) for n in _MIDPOINT_DATASETS if knot):
        shape = datasets[name].shape
        if len(shape) != 3 or shape[1:] != (nb, width):
            raise _Damaged(f"dataset {name!r} has shape {shape}, expected (states, {nb}, {width}) like 'x'")
    body_names = _names(x)
    if body_names is None:
        raise _Damaged("dataset 'x' has no attribute 'names' (the body names)")
    if len(body_names) != nb:
        raise _Damaged(
            f"dataset 'x' holds {nb} {'body' if nb == 1 else 'bodies'} but its attribute 'names' lists {len(body_names)}"
        )
    for name in ("minimal/q", "minimal/v", "inputs"):
        if datasets[name].ndim != 2:
            raise _Damaged(f"dataset {name!r} has shape {datasets[name].shape}, expected (rows, width)")
    for name in ("minimal/q", "minimal/v"):
        names = _names(datasets[name])
        width = datasets[name].shape[1]
        if names is None:
            raise _Damaged(f"dataset {name!r} has no attribute 'names'")
        if len(names) != width:
            raise _Damaged(f"dataset {name!r} holds {width} coordinates but its attribute 'names' lists {len(names)}")
    return body_names, datasets


def _extra_datasets(f: h5py.File, attrs: dict, nb: int, nu: int) -> dict[str, h5py.Dataset]:
    """Every other dataset; the ones the format knows (contacts, gradients) checked."""
    found: list[str] = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    knot = attrs.get(VELOCITIES_ATTR, MIDPOINT) == KNOT
    extras = {name: _dataset(f, name) for name in found
              if name not in _CORE_DATASETS and not (knot and name in _MIDPOINT_DATASETS)}
    for name, ds in extras.items():
        if ds.dtype.kind not in "biufcS" and h5py.check_string_dtype(ds.dtype) is None:
            raise _Damaged(f"dataset {name!r} holds {ds.dtype}, expected numbers")
    if "contact_names" in attrs and any(name in extras for name in CONTACT_DATASETS):
        # written by `dojo simulate` for a scene with contacts; the datasets appear with the
        # first block of steps (_consistent_length wants them once the run has a step)
        for name in CONTACT_DATASETS:
            if name not in extras:
                raise _Damaged(f"missing dataset {name!r} (the run has contact records)")
        nc = extras["contacts/distance"].shape[1] if extras["contacts/distance"].ndim == 2 else -1
        if len(attrs["contact_names"]) != nc:
            raise _Damaged(
                f"attribute 'contact_names' lists {len(attrs['contact_names'])} contacts, dataset 'contacts/distance' "
                f"holds {nc if nc >= 0 else 'no'} columns"
            )
        for name, tail in zip(CONTACT_DATASETS, ((nc,), (nc,), (nc, 2), (nc, 2))):
            if extras[name].shape[1:] != tail or extras[name].dtype.kind != "f":
                raise _Damaged(
                    f"dataset {name!r} has shape {extras[name].shape} ({extras[name].dtype}), expected "
                    f"(steps, {', '.join(map(str, tail))}) numbers"
                )
    expected = {
        "gradients/A": (12 * nb, 12 * nb),
        "gradients/B": (12 * nb, nu),
        "gradients/kappa": (),
        "solver/complementarity": (),
    }
    for name, tail in expected.items():
        if name in extras and extras[name].shape[1:] != tail:
            raise _Damaged(f"dataset {name!r} has shape {extras[name].shape}, expected (steps{''.join(', ' + str(n) for n in tail)})")
    if "impulses" in extras and extras["impulses"].ndim != 2:
        raise _Damaged(f"dataset 'impulses' has shape {extras['impulses'].shape}, expected (steps, impulses)")
    return extras


def _consistent_length(attrs: dict, datasets: dict[str, h5py.Dataset], extras: dict[str, h5py.Dataset]) -> tuple[int, int]:
    """(steps T, states) to read.

    A file with a final status must hold exactly what ``steps_completed`` says (its writer
    cut every dataset to the last complete block before it set the status). A ``running``
    file is whatever its writer's last block write left, or a write in progress: the
    shortest consistent length.
    """
    claimed = attrs["steps_completed"]
    states = {name: datasets[name].shape[0] for name in datasets if name not in _STEP_DATASETS}
    steps = {name: datasets[name].shape[0] for name in _STEP_DATASETS}
    if "contact_names" in attrs:  # contact records, created with the first block of steps
        steps.update({name: 0 for name in CONTACT_DATASETS})
    steps.update({name: d.shape[0] for name, d in extras.items() if d.ndim >= 1})
    if attrs["status"] in FINAL_STATUSES:
        if claimed == 0 and not any(states.values()) and not any(steps.values()):
            return 0, 0  # stopped (a write error) before even the initial state was stored
        for name, n in states.items():
            if n != claimed + 1:
                raise _Damaged(
                    f"dataset {name!r} holds {n} states, but the run has {claimed} steps ({claimed + 1} states, "
                    "attribute 'steps_completed')"
                )
        for name, n in steps.items():
            if n != claimed and name in CONTACT_DATASETS and name not in extras:
                raise _Damaged(f"missing dataset {name!r} (the run has {claimed} steps with contact records)")
            if n != claimed:
                raise _Damaged(f"dataset {name!r} holds {n} steps, but the run has {claimed} (attribute 'steps_completed')")
        return claimed, claimed + 1
    fewest_states = min(states.values())
    if fewest_states == 0:
        return 0, 0
    t = min([claimed, fewest_states - 1] + list(steps.values()))
    return t, t + 1


_FINITE_IN_COMPLETE = ("x", "q", "v", "omega", "v_mid", "omega_mid", "minimal/q", "minimal/v", "inputs",
                       "solver/residual")


def _check_values(status: str, arrays: dict[str, np.ndarray]) -> None:
    """Times finite and increasing; in a ``complete`` run (every step converged), every
    state finite: a non-finite one marks a damaged or tampered file."""
    time = arrays["time"]
    bad = np.flatnonzero(~np.isfinite(time))
    if bad.size:
        raise _Damaged(f"dataset 'time' holds a non-finite value at state {int(bad[0])}")
    back = np.flatnonzero(np.diff(time) <= 0)
    if back.size:
        raise _Damaged(f"dataset 'time' does not increase at state {int(back[0]) + 1}")
    if status != STATUS_COMPLETE:
        return  # a failed step may have left non-finite states (solver/status says which)
    for name in _FINITE_IN_COMPLETE:
        if name not in arrays:
            continue  # v_mid, omega_mid of a midpoint file
        values = arrays[name]
        finite = np.isfinite(values).reshape(len(values), -1).all(axis=1) if values.size else np.ones(len(values), bool)
        bad = np.flatnonzero(~finite)
        if bad.size:
            what = "step" if name in _STEP_DATASETS else "state"
            raise _Damaged(
                f"status 'complete' but dataset {name!r} holds a non-finite value at {what} {int(bad[0])} "
                "(a complete run has every state finite)"
            )


def read_gradient_rows(path: str | os.PathLike, steps) -> dict[str, Any]:
    """Rows of the ``gradients/...`` datasets for the given step indices (not the whole run).

    Returns name -> (len(steps), ...) array, plus ``name + ":rows"`` / ``":cols"`` label
    lists when the dataset has them.

    Raises:
        StorageError: the file has no gradients, or a step is outside 0..T-1.
    """
    run = read_storage(path)  # validates the file and gives the consistent length
    label = os.fspath(path)
    idx = np.asarray(steps, dtype=int).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= run.steps_completed):
        raise StorageError(f"{label}: steps {idx.tolist()} outside 0..{run.steps_completed - 1}")
    out: dict[str, Any] = {}
    f = _open_hdf5(Path(path), label, run.writing)
    try:
        with f:
            group = f.get(GRADIENT_GROUP)
            if not isinstance(group, h5py.Group):
                raise StorageError(f"{label}: no per-step gradients (simulate with --gradients)")
            for name, ds in group.items():
                key = f"{GRADIENT_GROUP}/{name}"
                out[key] = np.stack([np.asarray(ds[int(k)]) for k in idx]) if idx.size else np.zeros((0,) + ds.shape[1:])
                for attr in ("rows", "cols"):
                    if attr in ds.attrs:
                        out[f"{key}:{attr}"] = _decode_attr(attr, ds.attrs[attr])
    except DojoError:
        raise
    except Exception as exc:
        raise StorageError(f"{label}: damaged storage file: {_os_reason(exc)}") from None
    return out
