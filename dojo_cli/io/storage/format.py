"""The storage file format (format 1): names, layout, attributes, versions, and how a
series is created and an attribute encoded. Every other module of the package writes or
reads what this one names; the user-facing contract is docs/formats.md ("Storage files") and
docs/storage.md, and this docstring is the full layout.

Layout (T = steps stored, nb bodies, nq/nv minimal coordinates/velocities, nu inputs)::

    /                      root attributes (below)
    time                   (T+1,)        float64  s; entry 0 is the initial state
    x                      (T+1, nb, 3)  float64  body centre of mass, world frame; attribute `names`
    q                      (T+1, nb, 4)  float64  orientation [w, x, y, z], body to world
    v                      (T+1, nb, 3)  float64  linear velocity at t_k, world frame
    omega                  (T+1, nb, 3)  float64  angular velocity at t_k, body frame
    v_mid, omega_mid       (T+1, nb, 3)  float64  the integrator's midpoint velocities into state k
                                                  (Dojo's state layout: exact restarts)
    px, pq                 (T+1, nb, 3)  float64  each body's momenta at t_k, world frame: linear
                                                  m v and angular R(q) J omega about its centre of
                                                  mass (Dojo's Storage.px, pq; knot files written
                                                  with ``momenta``; absent from older files)
    minimal/q              (T+1, nq)     float64  minimal coordinates; attribute `names`
    minimal/v              (T+1, nv)     float64  minimal velocities at t_k; attribute `names`
    inputs                 (T, nu)       float64  inputs applied during step k (attribute names)
    solver/iterations      (T,)          int32    Newton iterations of step k
    solver/residual        (T,)          float64  final residual (infinity norm) of step k
    solver/status          (T,)          string   fixed-length (32-byte) UTF-8, e.g. "success",
                                                  "max_iterations" (SolverStatus values)
    solver/substeps        (T,)          int32    how many substeps step k was solved as: 1 for a
                                                  plain step, n for a failed step solved again as
                                                  n substeps of h/n (docs/physics.md "Substeps");
                                                  variational runs only, absent from older files
    solver/start           (T, 2 + nk)   float64  the interior point's start record after step k
                                                  (core maximal/step.h): [warm_valid, restart
                                                  impulse scale, the warm start's cones (the
                                                  limits' and contacts' unknowns; NaN: a contact
                                                  left out of the solve)]; runs with contacts or
                                                  joint limits; what --from K restarts step K from
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
of the transforms of the midpoint velocities on both sides, core/maximal/energy.h knot_velocities),
and ``v_mid``, ``omega_mid`` the integrator's midpoint velocities. The run loop computes
the knot values from the midpoint ones (dojo_cli.simulation.knots; the writer only stores
them); row k needs row k+1, so the last row of each block of steps is extrapolated (the
next step's impulses taken as the last one's) and revised with the next block (the
writer's ``revise_last_state``: in its buffer, or on disk at the next block write); at the
end of a normal run the run loop takes one more step (not stored), whose midpoint
velocities make the last row's exact. Files without the attribute (written before it, or
by a writer with ``velocities="midpoint"``) hold midpoint velocities in
``v``, ``omega`` and ``minimal/v`` and no ``v_mid``; ``StoredRun.velocities`` says which, and
the run's Trajectory (``StoredRun.trajectory``) holds the midpoint velocities as ``v_mid``,
``omega_mid`` from either, so ``trajectory.state(k)`` is Dojo's state.

Every dataset is chunked along the time axis (about 64 KiB a chunk) with an unlimited maximum
length. An extra dataset that first appears at step k > 0 is created with its earlier rows
filled (NaN for floating types, 0 otherwise); a step that omits an existing extra fills its
row the same way.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from enum import Enum
from typing import Any

import h5py
import numpy as np

from dojo_cli.errors import StorageError

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

# HDF5 format bounds: see storage.writer's docstring (large attributes, no consistency flags).
_LIBVER = ("v108", "v110")
# gzip level 1: on float64 series (byte-shuffled) the higher levels buy little room for
# much time. A 300,000-step pendulum's 98.4 MB of raw series: level 1 41.3 MB in 0.94 s of
# CPU, level 4 41.1 MB in 1.50 s (3 % smaller, 60 % slower); the compaction at level 4 was
# two thirds of a 10^6-step `dojo simulate pendulum -o` run's time (benchmarks/core_speed.py,
# hdf5 row). lzf (0.37 s, 55.7 MB) is h5py's own filter, which other HDF5 readers lack.
_GZIP_LEVEL = 1
# Target bytes per chunk: gzip compresses 64 KiB chunks of a smooth 4-body trajectory to 30 %
# of the raw bytes, 16 KiB chunks only to 60 %.
_CHUNK_BYTES = 64 * 1024
_MAX_CHUNK_ROWS = 4096
# Kept allocated past the data while writing: room for the final status after a write error.
_RESERVE_BYTES = 256 * 1024
# Metadata a block write may add per dataset (index nodes, object header), generously.
_METADATA_BYTES = 8 * 1024
# HDF5's raw-data chunk cache, per open dataset, for the files the writer and the compaction
# open. HDF5 2.0 raised the default to 8 MiB a dataset (1.x: 1 MiB), and a chunk stays in it
# until the cache is full: a run's ~15 datasets held every chunk they wrote, up to 8 MiB each
# (the 10^6-step pendulum: 214 MB peak, growing ~135 B a step; issue 28 item 6). Appending
# needs only the last, partial chunk of each dataset (a block write tops it up, then fills
# whole chunks, which go straight to the file); the compaction writes whole chunks only.
# Four chunks of _CHUNK_BYTES keep the partial one cached (no read back from the file).
_CHUNK_CACHE_BYTES = 4 * _CHUNK_BYTES
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# Datasets with one row per state entry (T+1 rows) and per step (T rows).
_STATE_DATASETS = ("time", "x", "q", "v", "omega", "minimal/q", "minimal/v")
# State datasets of a file whose `velocities` attribute is "knot": the midpoint velocities.
_MIDPOINT_DATASETS = ("v_mid", "omega_mid")
VELOCITIES_ATTR = "velocities"
KNOT = "knot"
MIDPOINT = "midpoint"
# Optional state datasets of a knot file: the bodies' momenta at t_k (Dojo's Storage.px and
# Storage.pq), written by a writer given ``momenta`` (the core's knot_momenta); files
# written before them, or without them, read as before.
_MOMENTUM_DATASETS = ("px", "pq")
_STEP_DATASETS = ("inputs", "solver/iterations", "solver/residual", "solver/status")
_CORE_DATASETS = frozenset(_STATE_DATASETS + _STEP_DATASETS)
# Group of the per-step Jacobians of `dojo simulate --gradients` (read on request only).
GRADIENT_GROUP = "gradients"
CONTACT_DATASETS = ("contacts/distance", "contacts/normal_impulse", "contacts/friction_impulse", "contacts/slip")
# Datasets the walk of the structure also looks up by path: those a reader asks for by name.
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
    with ``compress`` (compaction), raw while a run is written (storage.writer: crash consistency). ``length``:
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
