"""Writing a run to a storage file (storage.format), step by step, readable after any stop.

Crash consistency (docs/storage.md, "What a stop leaves"). Steps are buffered in memory and
written in blocks: when ``flush_every`` steps and ``flush_interval`` seconds have passed, or
``_BLOCK_BYTES`` are buffered (and at ``finish``), the writer grows every dataset by the
buffered rows, writes them, then sets ``steps_completed`` and flushes the file. While the run is written its datasets are *not*
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
"""

from __future__ import annotations

import errno
import json
import os
import time as time_module
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

from dojo_cli.errors import StorageError
from dojo_cli.model.trajectory import has_start_record
from dojo_cli.io.labelled_files import json_default
from dojo_cli.io.storage.compaction import compact
from dojo_cli.io.storage.format import (
    _CHUNK_CACHE_BYTES,
    _CORE_DATASETS,
    _LIBVER,
    _METADATA_BYTES,
    _MIDPOINT_DATASETS,
    _MOMENTUM_DATASETS,
    _RESERVE_BYTES,
    _RESERVED_ATTRS,
    _STATE_DATASETS,
    _STEP_DATASETS,
    FINAL_STATUSES,
    FORMAT_NAME,
    FORMAT_VERSION,
    KNOT,
    MIDPOINT,
    STATUS_BYTES,
    STATUS_COMPLETE,
    STATUS_COMPLETE_WITH_FAILURES,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
    STEP_SUCCESS,
    VELOCITIES_ATTR,
    _create_series,
    _encode_attr,
    _fill_value,
    _os_reason,
    _series_chunks,
    _status_text,
    _utc_now,
    scene_hash,
)
from dojo_cli.io.storage.locks import BlockSection, _lock_for_writing, _path_reason
from dojo_cli.io.storage.reader import _read_storage

# A run whose datasets hold fewer raw bytes than this is not compacted: gzip would save at
# most a few tens of KiB (HDF5's metadata, about 50 KiB, is most of such a file; a one-step
# file even grows), and the copy costs 30-50 ms, more than such a run's steps (issue 15:
# a sweep task's overhead).
_COMPACT_MIN_BYTES = 64 * 1024
# A block write happens once this much is buffered, however soon (a fast run's 0.1 s of
# steps held megabytes: memory, the steps a kill loses, and a first write larger than a
# nearly full disk can take, when smaller ones would have kept steps).
_BLOCK_BYTES = 1 << 20
# How long a block write may be put off while a reader holds the file (locks.BlockSection):
# past it the writer waits for the reader, so a reader polling the file cannot starve it.
_MAX_PUT_OFF_SECONDS = 1.0
# Reservations grow by at least this much (and by 1/8 of the file), so most block writes
# find their room already reserved (one posix_fallocate every few blocks).
_RESERVE_STEP = 1024 * 1024
# What h5py raises when HDF5 fails to write: OSError, or RuntimeError ("Unable to
# synchronously flush file (file write failed: ... errno = 27 ...)").
_WRITE_ERRORS = (OSError, RuntimeError)


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
            one, or once _BLOCK_BYTES (1 MiB) of steps are buffered, whichever comes first
            (checked whenever steps are added). A killed process loses the steps
            buffered since: at most ``flush_every - 1`` steps or ``flush_interval`` seconds
            of them, whichever is more; an interrupted or failed one loses nothing
            (``finish`` writes every buffered step). `dojo simulate` uses 1 step and
            FLUSH_SECONDS (docs/storage.md: each block write costs a few milliseconds).
        extra_attrs: further root attributes (must not reuse the format's names).
        dataset_attrs: attributes to set on extra datasets when they are created, by
            dataset path (e.g. ``{"gradients/A": {"rows": [...], "cols": [...]}}``).
        velocities: ``"knot"``: the file holds velocities at the knots in ``v``, ``omega``,
            ``minimal/v`` and the integrator's midpoint velocities in ``v_mid``,
            ``omega_mid`` (storage.format's docstring, "Velocities"): ``write_initial`` and
            ``write_steps`` take both, and ``revise_last_state`` replaces the last state's
            knot velocities once its successor is known. ``"midpoint"``: ``v``, ``omega``
            as given, no ``v_mid`` (a midpoint file). The writer computes neither: the run
            loop does (dojo_cli.simulation.knots).
        momenta: a knot file's bodies' momenta at the knots (``px``, ``pq``, Dojo's
            Storage.px and pq): ``momenta(q, v, omega)`` with (n, nb, 4), (n, nb, 3) rows
            returns (px, pq), (n, nb, 3) each (the core's knot_momenta, handed in by the
            run's writer: the writer computes no physics itself). It is called on every
            state row buffered, and again on a row whose knot velocities are revised.
            None: no ``px``, ``pq``.
        overwrite: replace an existing file (False: refuse, atomically, if one exists).
        compact: compress a run that ends normally (storage.compaction) when its datasets hold
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
        velocities: str = MIDPOINT,
        overwrite: bool = True,
        compact: bool = True,
        compact_min_bytes: int | None = None,
        stop_requested: Callable[[], bool] | None = None,
        input_names: list[str] | None = None,
        overrides: dict | None = None,
        command_line: str | None = None,
        steps: int | None = None,
        momenta: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> None:
        if int(flush_every) < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        if velocities not in (KNOT, MIDPOINT):
            raise ValueError(f"velocities must be {KNOT!r} or {MIDPOINT!r}, got {velocities!r}")
        if momenta is not None and velocities != KNOT:
            raise ValueError("momenta are stored by knot files only (velocities='knot')")
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
        self._knot = velocities == KNOT
        self._expected_steps = None if steps is None else max(0, int(steps))
        self._state_names = _STATE_DATASETS + (_MIDPOINT_DATASETS if self._knot else ())
        self._momenta = momenta
        if momenta is not None:
            self._state_names += _MOMENTUM_DATASETS
        self._last_q: np.ndarray | None = None  # the last state row's q: its momenta when revised
        # knot files: the revised velocities of the last state row on disk, for the next block write
        self._revised: dict[str, np.ndarray] | None = None
        self._shapes: dict[str, tuple[int, ...]] = {
            "time": (),
            "x": (self.nb, 3),
            "q": (self.nb, 4),
            "v": (self.nb, 3),
            "omega": (self.nb, 3),
            "v_mid": (self.nb, 3),
            "omega_mid": (self.nb, 3),
            "px": (self.nb, 3),
            "pq": (self.nb, 3),
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
        self._buffered_bytes = 0  # of the steps buffered since the last block write
        self._extras: dict[str, h5py.Dataset] = {}
        self._dataset_attrs = {name: dict(attrs) for name, attrs in (dataset_attrs or {}).items()}

        # the lock first: nothing may truncate a file another run is writing
        self._lock, created = _lock_for_writing(self.path, bool(overwrite))
        # HDF5 changes the file only inside the block-write section (locks.py): readers
        # never parse a half-written header or block
        self._section = BlockSection(self._lock.fileno())
        self._section.enter()
        try:
            self._file = h5py.File(self.path, "w", libver=_LIBVER, locking=False, rdcc_nbytes=_CHUNK_CACHE_BYTES)
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
            f.attrs[VELOCITIES_ATTR] = velocities
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
        self._section.exit()
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

    def write_initial(self, time: float, x, q, v, omega, minimal_q, minimal_v, *, v_mid=None, omega_mid=None) -> None:
        """Store state entry 0 and flush it to disk.

        Args:
            time: s, initial time.
            x: (nb, 3) positions; q: (nb, 4) orientations [w,x,y,z]; v: (nb, 3) linear
                velocities; omega: (nb, 3) angular velocities, body frame.
            minimal_q: (nq,) minimal coordinates; minimal_v: (nv,) minimal velocities.
            v_mid, omega_mid: (nb, 3) the midpoint velocities into the state (knot files
                only, where v, omega, minimal_v are the velocities at the knot).
        """
        self._check_open()
        if self._initial_written:
            raise RuntimeError(f"{self.path}: the initial state was already written")
        self._buffer_state(time, x, q, v, omega, minimal_q, minimal_v, v_mid, omega_mid)
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
        v_mid=None,
        omega_mid=None,
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
            v_mid, omega_mid: the midpoint velocities into the new state (knot files only).
        """
        self._check_open()
        # one step's rows, checked as rows (a flat vector may stand for a row of one axis)
        row = lambda name, a: None if a is None else self._checked(name, a)[None]  # noqa: E731
        self.write_steps(
            [time], row("x", x), row("q", q), row("v", v), row("omega", omega), row("minimal/q", minimal_q),
            row("minimal/v", minimal_v), row("inputs", inputs),
            iterations=[iterations], residual=[residual], status=[_status_text(status)],
            extra={name: np.asarray(value)[None] for name, value in (extra or {}).items()},
            v_mid=row("v_mid", v_mid), omega_mid=row("omega_mid", omega_mid),
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
        v_mid=None,
        omega_mid=None,
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
        }, None if v_mid is None else self._checked_block("v_mid", v_mid, n),
            None if omega_mid is None else self._checked_block("omega_mid", omega_mid, n))
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
        self._last_q = rows["q"][-1].copy()
        self._step_buffer["inputs"].append(inputs)
        self._step_buffer["solver/iterations"].append(iterations)
        self._step_buffer["solver/residual"].append(residual)
        self._step_buffer["solver/status"].append(status_text)
        self._extra_buffer.append((n, extra_rows))
        self._buffered_bytes += sum(a.nbytes for a in (*rows.values(), inputs, iterations, residual, *extra_rows.values()))
        failed = np.flatnonzero(status_text != STEP_SUCCESS)
        if failed.size and self._first_failed < 0:
            self._first_failed = self._steps + int(failed[0])
        self._failed += int(failed.size)
        self._steps += n
        since = time_module.monotonic() - self._last_flush
        due = self._steps - self._steps_on_disk >= self.flush_every and since >= self.flush_interval
        if due or self._buffered_bytes >= _BLOCK_BYTES:
            # a reader inside the section (reading the file now) puts the block write off
            # to a later step, up to _MAX_PUT_OFF_SECONDS; then the write waits for it
            if since >= _MAX_PUT_OFF_SECONDS or self._section.try_enter():
                self.flush()

    def revise_last_state(self, v, omega, minimal_v) -> None:
        """Replace the knot velocities of the last state stored (knot files): the run loop
        extrapolates them until it knows the state's successor (storage.format, "Velocities").

        Args:
            v, omega: (nb, 3) the velocities at the knot, world and body frame.
            minimal_v: (nv,) the minimal velocities there.
        """
        self._check_open()
        if not self._knot:
            raise RuntimeError(f"{self.path}: a midpoint file has no knot velocities to revise")
        if not self._initial_written:
            raise RuntimeError(f"{self.path}: no state to revise before write_initial")
        values = {"v": self._checked("v", v), "omega": self._checked("omega", omega),
                  "minimal/v": self._checked("minimal/v", minimal_v)}
        if self._momenta is not None:  # the row's momenta follow its knot velocities
            px, pq = self._momenta(self._last_q[None], values["v"][None], values["omega"][None])
            values["px"], values["pq"] = self._checked("px", px[0]), self._checked("pq", pq[0])
        if self._steps + 1 > self._states_on_disk:  # still buffered: its row changes in place
            for name, value in values.items():
                self._state_buffer[name][-1][-1] = value
        else:  # on disk: written again at the next block write
            self._revised = values

    def _state_rows(self, rows: dict[str, np.ndarray], v_mid, omega_mid) -> dict[str, np.ndarray]:
        """State rows by dataset, with the midpoint velocities in a knot file (which needs
        them, and a midpoint file refuses)."""
        if self._knot != (v_mid is not None and omega_mid is not None):
            what = "needs" if self._knot else "has no"
            raise ValueError(f"{self.path}: a {KNOT if self._knot else MIDPOINT} file {what} v_mid and omega_mid")
        if self._knot:
            rows["v_mid"], rows["omega_mid"] = v_mid, omega_mid
        if self._momenta is not None:
            single = rows["q"].ndim == 2  # one state's rows (write_initial), not a block
            q, v, omega = (rows[n][None] if single else rows[n] for n in ("q", "v", "omega"))
            px, pq = (np.asarray(a, dtype=float).reshape(v.shape) for a in self._momenta(q, v, omega))
            rows["px"], rows["pq"] = (px[0], pq[0]) if single else (px, pq)
        return rows

    def write_block(self, mech, block, knot) -> None:
        """Store a run loop's block of steps (simulation.integrators.StepBlock) with its
        extras: joint impulses, complementarity, contacts and per-step gradients.

        ``knot``: (v, omega, minimal_v) at the block's knots (computed by
        simulation.knots.KnotRows, the one place they are derived); the block's own
        velocities are the midpoint ones (a knot file: ``velocities="knot"``).
        """
        x, v, q, w = block.state_parts(mech.nb)
        extra = {"impulses": block.impulses, "solver/complementarity": block.complementarity}
        if mech.nc:
            extra.update({
                "contacts/distance": block.contact_distance, "contacts/normal_impulse": block.contact_normal_impulse,
                "contacts/friction_impulse": block.contact_friction_impulse, "contacts/slip": block.contact_slip,
            })
        if block.substeps is not None:
            extra["solver/substeps"] = block.substeps.astype(np.int32)
        if block.start is not None and has_start_record(mech):
            extra["solver/start"] = block.start
        extra.update(block.gradients)
        kv, kw, kmv = knot
        self.write_steps(block.time, x, q, kv, kw, block.minimal_q, kmv, block.inputs, iterations=block.iterations,
                         residual=block.residual, status=block.status, extra=extra, v_mid=v, omega_mid=w)

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
        with self._section.held():  # (already entered when write_steps found it free: taken again)
            error, clean = self._write_block(state_target)
        if error is not None:  # (outside the section: the clean-up reads the file back)
            self._stop_on_write_error(error, clean=clean)
        self._clear_buffers()
        self._steps_on_disk = self._steps
        self._states_on_disk = state_target
        self._failed_on_disk = self._failed
        self._first_failed_on_disk = self._first_failed
        self._last_flush = time_module.monotonic()

    def _write_block(self, state_target: int) -> tuple[BaseException | None, bool]:
        """Reserve the space and write the buffered steps (``flush``, inside the block-write
        section). Returns the write error, if any, and whether it came before HDF5 wrote
        anything of the block (the reservation failed)."""
        try:
            self._reserve(self._pending_bytes(state_target))
        except _WRITE_ERRORS as exc:
            return exc, True
        try:
            if self._revised is not None:  # the last state row on disk, with its successor known now
                for name, value in self._revised.items():
                    self._datasets[name][self._states_on_disk - 1] = value
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
            return exc, False
        return None, True

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
        with self._section.held():
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
            with self._section.held():  # (readers wait until the file is cut back and marked)
                self._detach()
                marked = self._cut_back(kept, message)
            marked = marked and self._reads_back()
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

    def _cut_back(self, kept: int, message: str) -> bool:
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
            return True
        except Exception:
            return False

    def _reads_back(self) -> bool:
        """Whether the file cut back by ``_cut_back`` reads back whole (no fork: we may have
        threads)."""
        try:
            _read_storage(self.path, False, probe=False)
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
        """Replace the finished file by a gzip-compressed copy (storage.compaction). Best
        effort: on any failure the uncompressed file stays, complete, and
        ``compaction_note`` says why."""
        self.compaction_note = compact(self.path, reserve_space=self._can_reserve, stop_requested=self._stop_requested)
        self.compacted = self.compaction_note is None

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
        self._buffered_bytes = 0
        self._revised = None

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
        if not name or name in _CORE_DATASETS or name in self._state_names or name in ("minimal", "solver"):
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

    def _buffer_state(self, time, x, q, v, omega, minimal_q, minimal_v, v_mid=None, omega_mid=None) -> None:
        rows = self._state_rows({
            "x": self._checked("x", x),
            "q": self._checked("q", q),
            "v": self._checked("v", v),
            "omega": self._checked("omega", omega),
            "minimal/q": self._checked("minimal/q", minimal_q),
            "minimal/v": self._checked("minimal/v", minimal_v),
        }, None if v_mid is None else self._checked("v_mid", v_mid), None if omega_mid is None else self._checked("omega_mid", omega_mid))
        self._state_buffer["time"].append(np.array([float(time)]))
        for name, row in rows.items():
            self._state_buffer[name].append(row[None])
        self._last_q = rows["q"].copy()

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

