"""Reading a storage file back, validated once for every reader.

``read_storage`` validates a file once for every reader: the format and version;
the type and range of every attribute the format defines (``timestep`` finite and > 0,
``status`` one of STATUSES, ``steps_completed`` an integer >= 0, ...); every core dataset
present, stored in the file (no links), of a floating-point, integer or text type as its
meaning wants, with shapes that agree with each other and with their ``names``; the contact
datasets with ``contact_names``; the lengths (a file with a final status holds exactly
``steps_completed`` steps in every per-step dataset, a ``running`` one is trimmed); times
finite and increasing; every chunk a dataset's length claims actually stored; and, in a
``complete`` run, every state finite. Before h5py opens the file in this process, HDF5's
walk of its structure is tried in another process with a deadline (storage.probe).
A readable HDF5 file that is not a storage file is a NotStorageFileError (exit code 2),
anything else wrong a StorageError (3), each naming the file and what is wrong. The stored
scene is checked by the readers that use it (dojo_cli.scene.stored_run).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import stat
import time as time_module
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dojo_cli.errors import DojoError, StorageError, shown
from dojo_cli.io.storage.format import (
    _CORE_DATASETS,
    _HDF5_SIGNATURE,
    _MIDPOINT_DATASETS,
    _MOMENTUM_DATASETS,
    _REQUIRED_ATTRS,
    _STATE_DATASETS,
    _STEP_DATASETS,
    CONTACT_DATASETS,
    FINAL_STATUSES,
    FORMAT_NAME,
    FORMAT_VERSION,
    GRADIENT_GROUP,
    KNOT,
    MIDPOINT,
    STATUS_COMPLETE,
    STATUS_COMPLETE_WITH_FAILURES,
    STATUS_INTERRUPTED,
    STATUS_RUNNING,
    STATUSES,
    VELOCITIES_ATTR,
    NotStorageFileError,
    _decode_attr,
    _os_reason,
)
from dojo_cli.io.storage.hdf5_checks import allocated_end
from dojo_cli.io.storage.locks import being_written, reading_section
from dojo_cli.io.storage.probe import _probe_structure
from dojo_cli.model.trajectory import DATASETS, EXTRA_FIELDS, Trajectory

# Tries of a read of a file another process is writing (a block write may be under way).
_BUSY_READ_TRIES = 4
_BUSY_READ_PAUSE = 0.1


@dataclass
class StoredRun:
    """A storage file read back and validated: the file's own metadata and its run, trimmed
    to its consistent length T, as a ``Trajectory`` (model.trajectory), the one shape of a
    run in memory.

    The metadata stays here, not on the Trajectory: a run in memory (``dojo.simulate``) has
    no path, no writer lock, no final status nor dataset names; a run read from a file has.
    Every per-state array has T+1 rows (none when a killed run had not yet written its
    initial state), every per-step array T rows, and the widths agree with the names
    (``read_storage`` checks it).

    Attributes:
        path: the file.
        attrs: every root attribute, decoded (str, Python numbers, dicts from JSON).
        scene_yaml: the resolved scene YAML.
        status: running | complete | complete_with_failures | interrupted | failed.
        steps_completed: T, steps stored.
        timestep: s.
        velocities: ``knot`` (v, omega, minimal/v at t_k; v_mid, omega_mid stored) or
            ``midpoint`` (a file written before knot velocities: v, omega are the midpoint
            ones, and the trajectory's v_mid, omega_mid are the same arrays).
        trajectory: the run's arrays (time, states, inputs, solver record, the extras the
            file has: impulses, complementarity, contacts).
        minimal_q_names, minimal_v_names, body_names: dataset `names` attributes.
        extras: every other per-step dataset by path, (T, ...) (the gradients when read with
            ``gradients=True``, any a writer's caller added).
        writing: a process holds the file's writer lock (a run still being written), so a
            ``running`` status is current, not the mark of a killed writer.
    """

    path: Path
    attrs: dict[str, Any]
    scene_yaml: str
    status: str
    steps_completed: int
    timestep: float
    velocities: str
    trajectory: Trajectory
    minimal_q_names: list[str]
    minimal_v_names: list[str]
    body_names: list[str]
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    writing: bool = False

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

    def no_contacts_reason(self) -> str:
        """Why the run has no contact records (``trajectory.contact_distance`` is None): a run
        that stored no step has none to keep, whatever its scene (the datasets come with the
        first block write); else its scene has no contacts."""
        if self.steps_completed == 0:
            return "the run stored no step (it stopped before its first block write)"
        return "its scene has no contacts"

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
    with reading_section(p):  # no block write while the file is probed and read (locks.py)
        return _read_locked(p, label, gradients, probe)


def _read_locked(p: Path, label: str, gradients: bool, probe: bool) -> StoredRun:
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
        momenta = _momentum_datasets(f, knot, len(body_names))
        datasets.update(momenta)  # state datasets: read and cut to length as the others
        extras = _extra_datasets(f, attrs, len(body_names), datasets["inputs"].shape[1])
        steps, n_states = _consistent_length(attrs, datasets, extras, allocated_end(p))

        def rows(name: str, n: int) -> np.ndarray:
            _check_stored(name, datasets[name], n)
            return np.asarray(datasets[name][:n])

        arrays = {name: rows(name, n_states) for name in _state_datasets(knot) + tuple(momenta)}
        arrays.update({name: rows(name, steps) for name in _STEP_DATASETS})
        status = arrays["solver/status"]
        try:
            text = [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in status.reshape(-1).tolist()]
        except UnicodeDecodeError:
            raise _Damaged("dataset 'solver/status' is not UTF-8 text") from None
        arrays["solver/status"] = np.array([t.rstrip("\0") for t in text], dtype=str).reshape(steps)
        substeps = extras.get("solver/substeps")
        _check_values(attrs["status"], arrays, None if substeps is None else np.asarray(substeps[:steps]))
        extra_arrays = {}
        for name, d in extras.items():
            if gradients or not name.startswith(GRADIENT_GROUP + "/"):
                if d.ndim >= 1:
                    _check_stored(name, d, steps)
                extra_arrays[name] = np.asarray(d[:steps]) if d.ndim >= 1 else np.asarray(d[()])
    except _Damaged as exc:
        raise StorageError(f"{label}: damaged storage file: {exc}") from None
    v, omega = arrays["v"], arrays["omega"]
    in_trajectory = {DATASETS[name] for name in EXTRA_FIELDS}
    trajectory = Trajectory(
        time=arrays["time"], x=arrays["x"], q=arrays["q"], v=v, omega=omega,
        minimal_q=arrays["minimal/q"], minimal_v=arrays["minimal/v"],
        # a midpoint file's v, omega are the midpoint velocities (Trajectory's docstring)
        v_mid=arrays.get("v_mid", v), omega_mid=arrays.get("omega_mid", omega),
        inputs=arrays["inputs"],
        iterations=arrays["solver/iterations"].astype(np.int64),
        residual=arrays["solver/residual"],
        status=[str(t) for t in arrays["solver/status"]],
        px=arrays.get("px"), pq=arrays.get("pq"),  # None in a file written without them
        **{name: extra_arrays[DATASETS[name]] for name in EXTRA_FIELDS if DATASETS[name] in extra_arrays},
    )
    return StoredRun(
        path=p,
        attrs=attrs,
        scene_yaml=attrs["scene"],
        status=attrs["status"],
        steps_completed=steps,
        timestep=float(attrs["timestep"]),
        velocities=KNOT if knot else MIDPOINT,
        trajectory=trajectory,
        minimal_q_names=_names(datasets["minimal/q"]) or [],
        minimal_v_names=_names(datasets["minimal/v"]) or [],
        body_names=body_names,
        extras={name: a for name, a in extra_arrays.items() if name not in in_trajectory},
        writing=writing,
    )


def _state_datasets(knot: bool) -> tuple[str, ...]:
    """The per-state datasets of a knot file (knot) or of a midpoint one."""
    return _STATE_DATASETS + (_MIDPOINT_DATASETS if knot else ())


def _covered_rows(ds: h5py.Dataset, eoa: int | None) -> int:
    """The rows of a running file's dataset that can be read: its length, or less where its
    last chunks (the writer fills them in row order) are not indexed or lie past the file's
    end-of-allocation ``eoa`` (None: not known), which HDF5 refuses to read ("addr
    overflow"). A writer killed inside HDF5's flush leaves both: the new lengths written,
    some of the new chunks' index entries not (seen: 66 of 68 chunks of a dataset), and the
    superblock, flushed last, with the end from before the block. Looked for from the end
    until a chunk row is whole; a hole further back is ``_check_stored``'s."""
    n = ds.shape[0]
    if ds.chunks is None or n == 0 or any(m == 0 for m in ds.shape[1:]):
        return n
    rows = ds.chunks[0]
    across = list(itertools.product(*(range(0, m, c) for m, c in zip(ds.shape[1:], ds.chunks[1:]))))

    def stored(k: int) -> bool:
        for rest in across:
            try:
                info = ds.id.get_chunk_info_by_coord((k * rows,) + rest)
            except Exception:  # an index block past the end: not stored either
                return False
            if info.byte_offset is None or (eoa is not None and info.byte_offset + info.size > eoa):
                return False
        return True

    # from the last chunk row the stored chunks could fill (a tampered length of 10^9 rows
    # in a small file must not mean 10^9 / rows lookups)
    last = min(-(-n // rows), -(-ds.id.get_num_chunks() // len(across))) - 1
    for k in range(last, -1, -1):
        if stored(k):
            return min(n, (k + 1) * rows)
    return 0


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


def _has_link(f: h5py.File, name: str) -> bool:
    """Whether the file names ``name`` (a link of any kind; not followed)."""
    try:
        return f.get(name, getlink=True) is not None
    except Exception:
        return False


def _momentum_datasets(f: h5py.File, knot: bool, nb: int) -> dict[str, h5py.Dataset]:
    """A knot file's optional ``px``, ``pq`` (both or neither), checked like ``v``."""
    found = [name for name in _MOMENTUM_DATASETS if knot and _has_link(f, name)]
    if not found:
        return {}
    if len(found) != len(_MOMENTUM_DATASETS):
        missing = next(n for n in _MOMENTUM_DATASETS if n not in found)
        raise _Damaged(f"missing dataset {missing!r} (the file has {found[0]!r}: the momenta come as a pair)")
    datasets = {name: _dataset(f, name) for name in found}
    for name, ds in datasets.items():
        _check_kind(name, ds, _FLOAT, "numbers")
        if len(ds.shape) != 3 or ds.shape[1:] != (nb, 3):
            raise _Damaged(f"dataset {name!r} has shape {ds.shape}, expected (states, {nb}, 3) like 'x'")
    return datasets


def _extra_datasets(f: h5py.File, attrs: dict, nb: int, nu: int) -> dict[str, h5py.Dataset]:
    """Every other dataset; the ones the format knows (contacts, gradients) checked."""
    found: list[str] = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    knot = attrs.get(VELOCITIES_ATTR, MIDPOINT) == KNOT
    extras = {name: _dataset(f, name) for name in found
              if name not in _CORE_DATASETS and not (knot and name in _MIDPOINT_DATASETS + _MOMENTUM_DATASETS)}
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
    if "solver/start" in extras and (extras["solver/start"].ndim != 2 or extras["solver/start"].shape[1] < 2):
        raise _Damaged(f"dataset 'solver/start' has shape {extras['solver/start'].shape}, expected (steps, 2 + cones)")
    return extras


def _consistent_length(attrs: dict, datasets: dict[str, h5py.Dataset], extras: dict[str, h5py.Dataset],
                       eoa: int | None = None) -> tuple[int, int]:
    """(steps T, states) to read.

    A file with a final status must hold exactly what ``steps_completed`` says (its writer
    cut every dataset to the last complete block before it set the status). A ``running``
    file is whatever its writer's last block write left, or a write in progress: the
    shortest consistent length, counting only the rows whose chunks are stored below the
    file's end-of-allocation ``eoa`` (the superblock's, hdf5_checks.allocated_end): a writer
    killed inside HDF5's flush leaves lengths and attributes of the new block with some of
    its chunks unindexed or past that end (``_covered_rows``).
    """
    claimed = attrs["steps_completed"]
    final = attrs["status"] in FINAL_STATUSES
    length = (lambda d: d.shape[0]) if final else (lambda d: _covered_rows(d, eoa))
    states = {name: length(datasets[name]) for name in datasets if name not in _STEP_DATASETS}
    steps = {name: length(datasets[name]) for name in _STEP_DATASETS}
    if "contact_names" in attrs:  # contact records, created with the first block of steps
        steps.update({name: 0 for name in CONTACT_DATASETS})
    steps.update({name: length(d) for name, d in extras.items() if d.ndim >= 1})
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


_FINITE_IN_COMPLETE = ("x", "q", "v", "omega", "v_mid", "omega_mid", "px", "pq", "minimal/q", "minimal/v", "inputs",
                       "solver/residual")


# The midpoint velocities, NaN at a knot carried on in substeps (no step of h starts there:
# docs/physics.md "Substeps"): the step that reached it was solved as substeps.
_MIDPOINT = ("v_mid", "omega_mid")


def _check_values(status: str, arrays: dict[str, np.ndarray], substeps: np.ndarray | None = None) -> None:
    """Times finite and increasing; in a ``complete`` run (every step converged), every
    state finite (v_mid, omega_mid but at a knot carried on in substeps: ``substeps``, (T,)
    solver/substeps, above 1 for the step that reached it): a non-finite one marks a
    damaged or tampered file."""
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
        if name in _MIDPOINT and substeps is not None and len(finite) == len(substeps) + 1:
            finite[1:] |= substeps > 1
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
    with reading_section(path):
        return _gradient_rows(Path(path), label, run.writing, idx)


def _gradient_rows(path: Path, label: str, writing: bool, idx: np.ndarray) -> dict[str, Any]:
    out: dict[str, Any] = {}
    f = _open_hdf5(path, label, writing)
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
        with reading_section(p), h5py.File(p, "r", locking=False) as f:
            if f.attrs.get("format") not in (FORMAT_NAME, FORMAT_NAME.encode()):
                return None
            status = f.attrs.get("status")
    except Exception:  # noqa: BLE001 - any failure to read means: no usable file
        return None
    if isinstance(status, bytes):
        status = status.decode("utf-8", "replace")
    return status if status in STATUSES else None

