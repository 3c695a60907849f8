"""Motion-capture tables as named columns: NPZ, CSV and HDF5 (``dojo fit``'s data, docs/fit.md).

A table is a mapping {column name: (rows,) values}; a file may pack several trajectories
(row ranges). Our storage files are read as runs (time, x, q per body). Checking what the
columns hold (finite, unit quaternions, frame period) is the caller's (dojo_cli.fit.data).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from dojo_cli.io.tables import MAX_TEXT_BYTES


class TableError(ValueError):
    """A table that cannot be read: ``file``, ``row`` (1-based, or None) and the cause."""

    def __init__(self, file: str, row: int | None, message: str):
        self.file, self.row, self.message = file, row, message
        where = f"{file}: row {row}" if row is not None else file
        super().__init__(f"{where}: {message}")


def read_npz_table(path: Path) -> tuple[dict[str, np.ndarray], list[np.ndarray] | None, float | None]:
    """Columns of an NPZ file: either named arrays, or a packed table ``frames`` with
    ``columns`` (names, space separated) and ``offsets`` (trajectory k is rows
    offsets[k]:offsets[k+1]), as the cube-toss file holds. Returns (columns, row ranges of
    the trajectories or None, frame period ``dt`` or None)."""
    with np.load(path, allow_pickle=False) as d:
        keys = set(d.files)
        dt = float(d["dt"]) if "dt" in keys else None
        if "frames" in keys and "columns" in keys:
            names = str(d["columns"]).split()
            frames = np.asarray(d["frames"], dtype=float)
            if frames.ndim != 2 or frames.shape[1] != len(names):
                raise TableError(str(path), None, f"frames has shape {frames.shape}, columns names {len(names)}")
            cols = {n: frames[:, i] for i, n in enumerate(names)}
            ranges = None
            if "offsets" in keys:
                o = np.asarray(d["offsets"], dtype=int)
                if o.ndim != 1 or len(o) < 2 or o[0] != 0 or o[-1] != len(frames) or np.any(np.diff(o) < 0):
                    raise TableError(str(path), None, "offsets must rise from 0 to the number of frames")
                ranges = [np.arange(o[k], o[k + 1]) for k in range(len(o) - 1)]
            return cols, ranges, dt
        return {k: np.asarray(d[k], dtype=float).reshape(-1) for k in keys if d[k].ndim >= 1}, None, dt


def read_csv_table(path: Path) -> dict[str, np.ndarray]:
    """Columns of a CSV file with a header line of names (commas)."""
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise TableError(str(path), None, f"larger than {MAX_TEXT_BYTES // 2**20} MB")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise TableError(str(path), None, "empty file")
    header = [h.strip() for h in rows[0]]
    data = np.full((len(rows) - 1, len(header)), np.nan)
    for i, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise TableError(str(path), i + 1, f"{len(row)} values, the header names {len(header)}")
        for j, v in enumerate(row):
            try:
                data[i, j] = float(v)
            except ValueError:
                raise TableError(str(path), i + 1, f"column {header[j]!r}: not a number: {v!r}") from None
    return {n: data[:, j] for j, n in enumerate(header)}


def read_hdf5_motion(path: Path, bodies: list[str]):
    """A storage file's run as (None, (time (T,), x (T, nb, 3), q (T, nb, 4))) of ``bodies``,
    or another HDF5 file's one-dimensional datasets as ({name: values}, None)."""
    import h5py

    with h5py.File(path, "r") as fh:
        is_run = fh.attrs.get("format") == "dojo-storage"
        if not is_run:
            return {k: np.asarray(fh[k], dtype=float).reshape(-1) for k in fh
                    if isinstance(fh[k], h5py.Dataset) and fh[k].ndim == 1}, None
    from dojo_cli.io.storage import read_storage

    run = read_storage(path)
    names = list(run.body_names)
    missing = [b for b in bodies if b not in names]
    if missing:
        raise TableError(str(path), None, f"no body {missing[0]!r} in the run (bodies: {', '.join(names)})")
    idx = [names.index(b) for b in bodies]
    traj = run.trajectory
    return None, (np.asarray(traj.time, float), np.asarray(traj.x, float)[:, idx], np.asarray(traj.q, float)[:, idx])
