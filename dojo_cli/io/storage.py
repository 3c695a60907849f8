"""HDF5 storage files (format 1): written step by step, readable after any stop.

This module (and io/gradient_files.py, for `dojo gradients -o`) is where dojo_cli imports h5py. The user-facing contract is
FORMATS.md ("Storage files") and docs/storage.md; this docstring is the full layout.

Layout (T = steps stored, nb bodies, nq/nv minimal coordinates/velocities, nu inputs)::

    /                      root attributes (below)
    time                   (T+1,)        float64  s; entry 0 is the initial state
    x                      (T+1, nb, 3)  float64  body centre of mass, world frame; attribute `names`
    q                      (T+1, nb, 4)  float64  orientation [w, x, y, z], body to world
    v                      (T+1, nb, 3)  float64  linear (midpoint) velocity, world frame
    omega                  (T+1, nb, 3)  float64  angular (midpoint) velocity, body frame
    minimal/q              (T+1, nq)     float64  minimal coordinates; attribute `names`
    minimal/v              (T+1, nv)     float64  minimal velocities; attribute `names`
    inputs                 (T, nu)       float64  joint inputs applied during step k
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
``complete``, ``interrupted`` or ``failed``), ``steps_completed`` (T), ``created`` (ISO 8601,
UTC). ``solver_options`` is written by Python's ``json`` module, so an infinite option
(``undercut: .inf``) appears as ``Infinity``, which Python (and the lenient modes of most
JSON readers) read back as a float. Extensions: ``finished`` (ISO 8601, UTC, set by
``finish``), ``status_message`` (why a run stopped, when known), and the caller's
``extra_attrs`` (dicts and lists of non-numbers stored as JSON, decoded by ``read_storage``).

Every dataset is chunked along the time axis with an unlimited maximum length; numeric
datasets are gzip-compressed (with the shuffle filter, which helps float64 columns). An extra
dataset that first appears at step k > 0 is created with its earlier rows filled (NaN for
floating types, 0 otherwise); a step that omits an existing extra fills its row the same way.

Crash consistency. Steps are buffered in memory and written in blocks: every ``flush_every``
steps (and at ``finish``) the writer grows every dataset by the buffered rows, writes them,
sets ``steps_completed`` and flushes the file. Between blocks the file is not touched, so the
file of a killed process holds consistent lengths (``len(inputs) == steps_completed ==
len(time) - 1``) and loses at most ``flush_every - 1`` steps; ``status`` then still reads
``running``. A Python-level stop (exception, Ctrl-C) goes through ``finish``, which writes
every buffered step first. The file uses HDF5 format bounds ("v108", "v110"): v1.8 objects
allow attributes above 64 KiB (large scenes), and staying below superblock v3 avoids the
file-consistency flags that make a killed writer's file unopenable without ``h5clear``.
``read_storage`` trims every dataset to the shortest consistent length anyway, so a file
killed in the middle of a block write still reads.
"""

from __future__ import annotations

import json
import os
import time as time_module
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
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
STEP_SUCCESS = b"success"

# Width of the fixed-length solver/status strings: SolverStatus values are at most 19
# bytes; fixed width (unlike variable-length strings) compresses and needs no heap.
STATUS_BYTES = 32

# HDF5 format bounds: see the module docstring (large attributes, no consistency flags).
_LIBVER = ("v108", "v110")
# gzip level 4: the usual speed/ratio compromise (levels above 6 gain little on float64).
_GZIP_LEVEL = 4
# Target bytes per chunk. Each flush rewrites the last, partial chunk of every dataset, so
# smaller chunks flush faster, but gzip then compresses far worse: measured on a smooth
# 4-body trajectory, 64 KiB chunks store 30 % of the raw bytes at ~0.13 ms per step
# (flush_every = 50); 16 KiB chunks store 60 % at ~0.09 ms per step.
_CHUNK_BYTES = 64 * 1024
_MAX_CHUNK_ROWS = 4096

# Datasets with one row per state entry (T+1 rows) and per step (T rows).
_STATE_DATASETS = ("time", "x", "q", "v", "omega", "minimal/q", "minimal/v")
_STEP_DATASETS = ("inputs", "solver/iterations", "solver/residual", "solver/status")
_CORE_DATASETS = frozenset(_STATE_DATASETS + _STEP_DATASETS)
# Group of the per-step Jacobians of `dojo simulate --gradients` (read on request only).
GRADIENT_GROUP = "gradients"
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
    }
)
_REQUIRED_ATTRS = ("format_version", "scene", "timestep", "status", "steps_completed")


def _utc_now() -> str:
    """Current time, ISO 8601 in UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _status_text(status: Any) -> str:
    """A solver status (SolverStatus or str) as stored."""
    return str(status.value) if isinstance(status, Enum) else str(status)


def _chunk_rows(row_shape: tuple[int, ...], itemsize: int) -> int:
    """Rows per chunk so one chunk holds about _CHUNK_BYTES."""
    row_bytes = max(1, int(np.prod(row_shape, dtype=np.int64)) * itemsize)
    return int(min(_MAX_CHUNK_ROWS, max(1, _CHUNK_BYTES // row_bytes)))


def _create_series(group: h5py.Group, name: str, row_shape: tuple[int, ...], dtype) -> h5py.Dataset:
    """An empty (0, *row_shape) dataset, chunked and resizable along axis 0."""
    dtype = np.dtype(dtype) if not isinstance(dtype, np.dtype) else dtype
    rows = _chunk_rows(row_shape, dtype.itemsize)
    chunks = (rows,) + tuple(max(1, n) for n in row_shape)
    kwargs: dict[str, Any] = {}
    # Empty rows have nothing to compress.
    if all(n > 0 for n in row_shape):
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
    """An HDF5 attribute as Python: bytes -> str, numpy scalars -> Python, JSON objects -> dict."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
        value = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in value.tolist()]
    elif isinstance(value, np.generic):
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
        return str(exc).strip() or type(exc).__name__
    return "cannot be created"


class StorageWriter:
    """Writes one run to an HDF5 storage file, step by step (see the module docstring).

    Use as a context manager: a ``KeyboardInterrupt`` finishes the file as ``interrupted``,
    any other exception as ``failed`` (the exception propagates unchanged), and a normal
    exit as ``complete`` unless ``finish`` was already called.

    Args:
        path: file to create (an existing file is overwritten).
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
        dojo_cli_version: the writing program's version.
        flush_every: steps between block writes (>= 1); a killed process loses at most
            ``flush_every - 1`` steps. Each block write costs a few milliseconds
            (partial compressed chunks are rewritten), so 1 is for tests, not long runs.
        flush_interval: and at least this many seconds between block writes (a long
            fast run then writes a few times a second, not once per block; a killed
            process loses at most that much, an interrupted or failed one nothing:
            ``finish`` writes every buffered step).
        extra_attrs: further root attributes (must not reuse the format's names).
        dataset_attrs: attributes to set on extra datasets when they are created, by
            dataset path (e.g. ``{"gradients/A": {"rows": [...], "cols": [...]}}``).

    Raises:
        StorageError: the file cannot be created (message names the path and the reason).
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
        self._last_flush = time_module.monotonic()
        self.nb = len(body_names)
        self.nq = len(minimal_q_names)
        self.nv = len(minimal_v_names)
        self.nu = int(input_dim)
        self._shapes: dict[str, tuple[int, ...]] = {
            "time": (),
            "x": (self.nb, 3),
            "q": (self.nb, 4),
            "v": (self.nb, 3),
            "omega": (self.nb, 3),
            "minimal/q": (self.nq,),
            "minimal/v": (self.nv,),
            "inputs": (self.nu,),
            "solver/iterations": (),
            "solver/residual": (),
            "solver/status": (),
        }
        self._file: h5py.File | None = None
        self._finished = False
        self._initial_written = False
        self._steps = 0  # steps accepted (written or buffered)
        self._failed = 0  # of which the solver failed
        self._first_failed = -1  # index of the first of those
        self._steps_on_disk = 0  # step rows written by the last complete flush
        self._states_on_disk = 0  # state rows written by the last complete flush
        self._state_buffer: dict[str, list] = {name: [] for name in _STATE_DATASETS}
        self._step_buffer: dict[str, list] = {name: [] for name in _STEP_DATASETS}
        self._extra_buffer: list[tuple[int, dict[str, np.ndarray]]] = []  # (rows, arrays by name)
        self._extras: dict[str, h5py.Dataset] = {}
        self._dataset_attrs = {name: dict(attrs) for name, attrs in (dataset_attrs or {}).items()}

        try:
            self._file = h5py.File(self.path, "w", libver=_LIBVER)
        except (OSError, ValueError) as exc:
            raise StorageError(f"{self.path}: cannot create storage file: {_path_reason(self.path, exc)}") from exc

        try:
            f = self._file
            f.attrs["format"] = FORMAT_NAME
            f.attrs["format_version"] = FORMAT_VERSION
            f.attrs["dojo_cli_version"] = str(dojo_cli_version)
            f.attrs["scene"] = str(scene_yaml)
            f.attrs["scene_name"] = str(scene_name)
            f.attrs["timestep"] = float(timestep)
            f.attrs["gravity"] = gravity
            f.attrs["solver_options"] = json.dumps(solver_options, default=_json_default)
            f.attrs["integrator"] = str(integrator)
            f.attrs["status"] = STATUS_RUNNING
            f.attrs["steps_completed"] = 0
            f.attrs["created"] = _utc_now()
            for key, value in (extra_attrs or {}).items():
                f.attrs[key] = _encode_attr(value)

            string = h5py.string_dtype("utf-8", STATUS_BYTES)
            dtypes = {"solver/iterations": np.int32, "solver/status": string}
            self._datasets: dict[str, h5py.Dataset] = {}
            for name in _STATE_DATASETS + _STEP_DATASETS:
                self._datasets[name] = _create_series(f, name, self._shapes[name], dtypes.get(name, np.float64))
            self._datasets["x"].attrs["names"] = [str(n) for n in body_names]
            self._datasets["minimal/q"].attrs["names"] = [str(n) for n in minimal_q_names]
            self._datasets["minimal/v"].attrs["names"] = [str(n) for n in minimal_v_names]
            f.flush()
        except OSError as exc:
            self._close_quietly()
            raise StorageError(f"{self.path}: cannot write storage file: {exc}") from exc
        except BaseException:
            self._close_quietly()
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
        rows = {
            "time": time,
            "x": self._checked_block("x", x, n),
            "q": self._checked_block("q", q, n),
            "v": self._checked_block("v", v, n),
            "omega": self._checked_block("omega", omega, n),
            "minimal/q": self._checked_block("minimal/q", minimal_q, n),
            "minimal/v": self._checked_block("minimal/v", minimal_v, n),
        }
        inputs = self._checked_block("inputs", inputs, n)
        iterations = np.asarray(iterations, dtype=np.int64).reshape(n)
        residual = np.asarray(residual, dtype=float).reshape(n)
        status_text = np.asarray(status)
        if status_text.dtype.kind != "U":  # enums or mixed objects: their string values
            status_text = np.array([_status_text(t) for t in status_text.reshape(-1)], dtype=str)
        status_text = np.char.encode(status_text.reshape(n), "utf-8")
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
        """
        self._check_open()
        assert self._file is not None
        state_target = self._steps + 1 if self._initial_written else 0
        try:
            for name in _STATE_DATASETS:
                self._top_up(self._datasets[name], self._state_buffer[name], self._states_on_disk, state_target)
            for name in _STEP_DATASETS:
                self._top_up(self._datasets[name], self._step_buffer[name], self._steps_on_disk, self._steps)
            self._flush_extras()
            self._file.attrs["steps_completed"] = self._steps
            self._file.attrs["failed_steps"] = self._failed
            self._file.attrs["first_failed_step"] = self._first_failed
            self._file.flush()
        except OSError as exc:
            raise StorageError(f"{self.path}: cannot write storage file: {exc}") from exc
        for buffer in list(self._state_buffer.values()) + list(self._step_buffer.values()):
            buffer.clear()
        self._extra_buffer.clear()
        self._steps_on_disk = self._steps
        self._states_on_disk = state_target
        self._last_flush = time_module.monotonic()

    def finish(self, status: str, message: str | None = None) -> None:
        """Write every buffered step, set the final status and close the file.

        Args:
            status: ``"complete"``, ``"interrupted"`` or ``"failed"`` (``"complete"``
                becomes ``"complete_with_failures"`` when a step did not converge).
            message: optional reason, stored as the ``status_message`` attribute.
        """
        status = _status_text(status)
        if status not in FINAL_STATUSES:
            raise ValueError(f"finish status must be one of {', '.join(FINAL_STATUSES)}, got {status!r}")
        if status == STATUS_COMPLETE and self._failed:
            status = STATUS_COMPLETE_WITH_FAILURES  # "complete" means every step converged
        self._check_open()
        assert self._file is not None
        try:
            self.flush()
            self._file.attrs["status"] = status
            self._file.attrs["finished"] = _utc_now()
            if message:
                self._file.attrs["status_message"] = str(message)
            self._file.flush()
            self._file.close()
        except OSError as exc:
            raise StorageError(f"{self.path}: cannot finish storage file: {exc}") from exc
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

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._finished or self._file is None:
            raise RuntimeError(f"{self.path}: the storage writer is already finished")

    def _close_quietly(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except Exception:
                pass
            self._file = None

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
        rows = {
            "x": self._checked("x", x),
            "q": self._checked("q", q),
            "v": self._checked("v", v),
            "omega": self._checked("omega", omega),
            "minimal/q": self._checked("minimal/q", minimal_q),
            "minimal/v": self._checked("minimal/v", minimal_v),
        }
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
            self._extras[name] = _create_series(self._file, name, first.shape[1:], first.dtype)
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


def _json_default(value: Any) -> Any:
    """JSON encoding of numpy values and infinities inside solver options."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Enum):
        return value.value
    return str(value)


@dataclass
class StoredRun:
    """A storage file read back, trimmed to its consistent length T.

    Attributes:
        path: the file.
        attrs: every root attribute, decoded (str, Python numbers, dicts from JSON).
        scene_yaml: the resolved scene YAML.
        status: running | complete | interrupted | failed.
        steps_completed: T, steps stored.
        timestep: s.
        time: (T+1,) s.
        x: (T+1, nb, 3); q: (T+1, nb, 4); v: (T+1, nb, 3); omega: (T+1, nb, 3).
        minimal_q: (T+1, nq); minimal_v: (T+1, nv).
        minimal_q_names, minimal_v_names, body_names: dataset `names` attributes.
        inputs: (T, nu).
        solver: "iterations" (T,) int, "residual" (T,) float, "status" (T,) str.
        extras: every other dataset by path, (T, ...).
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

    @property
    def gravity(self) -> np.ndarray:
        """(3,) m/s^2, world frame."""
        return np.asarray(self.attrs.get("gravity", [0.0, 0.0, 0.0]), dtype=float)

    @property
    def solver_options(self) -> dict:
        """The solver options the run used."""
        value = self.attrs.get("solver_options", {})
        return value if isinstance(value, dict) else {}


def _names(dataset: h5py.Dataset) -> list[str]:
    raw = dataset.attrs.get("names", [])
    return [n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in np.asarray(raw).tolist()]


def read_storage(path: str | os.PathLike, gradients: bool = False) -> StoredRun:
    """Read a storage file, whatever its status, trimmed to the consistent length.

    Per-step Jacobians (``gradients/...`` datasets of ``dojo simulate --gradients``,
    (T, 12 nb, 12 nb) each, large) are read into ``extras`` only with ``gradients=True``;
    ``read_gradient_rows`` reads the rows of a few steps.

    Raises:
        StorageError: the file is missing, not HDF5, not a dojo storage file, of a newer
            format version, or lacks a dataset (the message names the file and the reason).
    """
    label = os.fspath(path)
    p = Path(path)
    if not p.exists():
        raise StorageError(f"{label}: no such file")
    if p.is_dir():
        raise StorageError(f"{label}: is a directory, not a storage file")
    try:
        f = _open_for_reading(p)
    except OSError as exc:
        if not os.access(p, os.R_OK):
            raise StorageError(f"{label}: permission denied") from exc
        if not h5py.is_hdf5(p):
            raise StorageError(f"{label}: not an HDF5 file") from exc
        raise StorageError(f"{label}: cannot open storage file: {exc}") from exc
    try:
        with f:
            return _read_open(f, p, label, gradients)
    except OSError as exc:
        raise StorageError(f"{label}: cannot read storage file: {exc}") from exc


def _open_for_reading(p: Path) -> h5py.File:
    """Open read-only; if another process holds the HDF5 file lock (a run still being
    written), open without locking, so the blocks flushed so far can be inspected.

    HDF5 refuses to open one file twice in a process with different locking flags, so
    locking=False is the fallback, not the default.
    """
    try:
        return h5py.File(p, "r")
    except OSError as exc:
        if "lock" not in str(exc).lower():
            raise
    return h5py.File(p, "r", locking=False)


def _read_open(f: h5py.File, p: Path, label: str, gradients: bool = False) -> StoredRun:
    attrs = {name: _decode_attr(name, f.attrs[name]) for name in f.attrs}
    if "format" not in attrs:
        raise StorageError(f"{label}: not a dojo storage file (missing attribute 'format')")
    if attrs["format"] != FORMAT_NAME:
        raise StorageError(f"{label}: not a dojo storage file (attribute 'format' is {attrs['format']!r})")
    for name in _REQUIRED_ATTRS:
        if name not in attrs:
            raise StorageError(f"{label}: damaged storage file (missing attribute {name!r})")
    version = attrs["format_version"]
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise StorageError(f"{label}: unsupported format_version {version!r} (this dojo_cli reads {FORMAT_VERSION})")
    for name in _CORE_DATASETS:
        if not isinstance(f.get(name), h5py.Dataset):
            raise StorageError(f"{label}: damaged storage file (missing dataset {name!r})")

    extras: dict[str, h5py.Dataset] = {}

    def visit(name: str, obj) -> None:
        if isinstance(obj, h5py.Dataset) and name not in _CORE_DATASETS:
            extras[name] = obj

    f.visititems(visit)

    # Consistent length: the smallest of what the attribute and every dataset promise.
    lengths = [int(attrs["steps_completed"]), f["time"].shape[0] - 1]
    lengths += [f[n].shape[0] - 1 for n in _STATE_DATASETS] + [f[n].shape[0] for n in _STEP_DATASETS]
    lengths += [d.shape[0] for d in extras.values() if d.ndim >= 1]
    steps = max(0, min(lengths))
    n_states = steps + 1 if f["time"].shape[0] > 0 else 0

    def state(name: str) -> np.ndarray:
        return np.asarray(f[name][:n_states])

    status_ds = f["solver/status"]
    if h5py.check_string_dtype(status_ds.dtype) is not None:
        status = np.array(status_ds.asstr()[:steps], dtype=str)
    else:
        status = np.asarray(status_ds[:steps])
    return StoredRun(
        path=p,
        attrs=attrs,
        scene_yaml=str(attrs["scene"]),
        status=str(attrs["status"]),
        steps_completed=steps,
        timestep=float(attrs["timestep"]),
        time=state("time"),
        x=state("x"),
        q=state("q"),
        v=state("v"),
        omega=state("omega"),
        minimal_q=state("minimal/q"),
        minimal_v=state("minimal/v"),
        minimal_q_names=_names(f["minimal/q"]),
        minimal_v_names=_names(f["minimal/v"]),
        body_names=_names(f["x"]),
        inputs=np.asarray(f["inputs"][:steps]),
        solver={
            "iterations": np.asarray(f["solver/iterations"][:steps]),
            "residual": np.asarray(f["solver/residual"][:steps]),
            "status": status,
        },
        extras={
            name: np.asarray(d[:steps]) if d.ndim >= 1 else np.asarray(d[()])
            for name, d in extras.items()
            if gradients or not name.startswith(GRADIENT_GROUP + "/")
        },
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
    with _open_for_reading(Path(path)) as f:
        group = f.get(GRADIENT_GROUP)
        if not isinstance(group, h5py.Group):
            raise StorageError(f"{label}: no per-step gradients (simulate with --gradients)")
        for name, ds in group.items():
            key = f"{GRADIENT_GROUP}/{name}"
            out[key] = np.stack([np.asarray(ds[int(k)]) for k in idx]) if idx.size else np.zeros((0,) + ds.shape[1:])
            for attr in ("rows", "cols"):
                if attr in ds.attrs:
                    out[f"{key}:{attr}"] = _decode_attr(attr, ds.attrs[attr])
    return out
