"""Input tables for schedule controllers: CSV or HDF5, one row per step."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np

# A table holds one row of joint inputs per step: 10^8 numbers (800 MB) is far beyond any
# schedule; a larger claim is a damaged or foreign file, refused before it is read.
MAX_TABLE_VALUES = 10**8
# Text tables are read whole: the same bound for their size.
MAX_TEXT_BYTES = 256 * 1024 * 1024


def read_input_table(path: str | Path) -> np.ndarray:
    """Read a (rows, nu) table of joint inputs.

    CSV: comma-separated numbers, an optional header line of names, ``#`` comments.
    HDF5 (.h5/.hdf5): the dataset ``inputs`` (a dojo storage file works).

    Raises:
        ValueError: with a message naming what is wrong (the caller adds file and field):
            not a regular file, too large, not numbers, a damaged or foreign HDF5 file.
        OSError: the file cannot be read (missing, permission denied).
    """
    path = Path(path)
    info = os.stat(path)  # (OSError: missing, permission denied)
    if not stat.S_ISREG(info.st_mode):
        # a directory, FIFO or device: opening a FIFO would wait forever
        raise ValueError("not a regular file")
    if path.suffix.lower() in (".h5", ".hdf5"):
        table = _read_hdf5_table(path)
    else:
        if info.st_size > MAX_TEXT_BYTES:
            raise ValueError(f"{info.st_size:,} bytes, more than the limit of {MAX_TEXT_BYTES:,} for a text table")
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


def _read_hdf5_table(path: Path) -> np.ndarray:
    """The ``inputs`` dataset of an HDF5 file, as floats.

    The file's structure is walked in a child process first (dojo_cli.io.storage: HDF5
    can loop forever or crash on damaged metadata), and every failure of h5py on
    damaged bytes is a ValueError saying so.
    """
    from dojo_cli.io.storage.locks import reading_section

    with reading_section(path):  # (a storage file still being written: no block write meanwhile)
        return _read_inputs(path)


def _read_inputs(path) -> np.ndarray:
    import h5py

    from dojo_cli.errors import StorageError
    from dojo_cli.io.storage import check_hdf5_structure

    try:
        check_hdf5_structure(path)
    except StorageError as exc:
        raise ValueError(str(exc).removeprefix(f"{path}: ")) from None
    try:
        with h5py.File(path, "r", locking=False) as f:
            ds = f.get("inputs")
            if ds is None:
                raise ValueError("HDF5 file has no dataset 'inputs'")
            if not isinstance(ds, h5py.Dataset):
                raise ValueError("'inputs' in the HDF5 file is not a dataset")
            if ds.dtype.kind not in "biuf" or ds.ndim not in (1, 2):
                raise ValueError(f"dataset 'inputs' holds {ds.dtype} of shape {ds.shape}, expected a table of numbers")
            if int(np.prod(ds.shape, dtype=np.int64)) > MAX_TABLE_VALUES:
                raise ValueError(f"dataset 'inputs' claims {ds.shape} values, more than {MAX_TABLE_VALUES:.0e}")
            return np.asarray(ds[...], dtype=float)
    except (ValueError, FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # h5py raises OSError, RuntimeError, KeyError... on damaged bytes
        raise ValueError(f"not a readable HDF5 file ({' '.join(str(exc).split())[:200]})") from None


def _numeric(line: str) -> bool:
    try:
        [float(v) for v in line.split(",")]
        return True
    except ValueError:
        return False
