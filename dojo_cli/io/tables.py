"""Input tables for schedule controllers: CSV or HDF5, one row per step."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def read_input_table(path: str | Path) -> np.ndarray:
    """Read a (rows, nu) table of joint inputs.

    CSV: comma-separated numbers, an optional header line of names, ``#`` comments.
    HDF5 (.h5/.hdf5): the dataset ``inputs`` (a dojo storage file works).

    Raises:
        ValueError: with a message naming what is wrong (the caller adds file and field).
        OSError: the file cannot be read.
    """
    path = Path(path)
    if path.suffix.lower() in (".h5", ".hdf5"):
        import h5py

        with h5py.File(path, "r") as f:
            if "inputs" not in f:
                raise ValueError("HDF5 file has no dataset 'inputs'")
            table = np.asarray(f["inputs"][...], dtype=float)
    else:
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if lines and not _numeric(lines[0]):
            lines = lines[1:]  # header
        rows = [[float(v) for v in ln.split(",")] if _numeric(ln) else None for ln in lines]
        bad = [i for i, r in enumerate(rows) if r is None]
        if bad:
            raise ValueError(f"row {bad[0] + 1} is not a list of comma-separated numbers")
        if len({len(r) for r in rows}) > 1:
            raise ValueError("rows have different numbers of values")
        table = np.array(rows, dtype=float).reshape(len(rows), -1)
    if table.ndim == 1:
        table = table.reshape(-1, 1)
    if not np.all(np.isfinite(table)):
        raise ValueError("contains non-finite values")
    return table


def _numeric(line: str) -> bool:
    try:
        [float(v) for v in line.split(",")]
        return True
    except ValueError:
        return False
