"""Labelled-array files: vectors and matrices with their entries' names, in HDF5, JSON or NPZ.

The containers shared by the gradient files (``dojo gradients -o``, io/gradient_files.py)
and the dynamics files (``dojo dynamics -o``, ``dojo analyze -o``, io/dynamics_files.py);
each of those modules says what its files hold. The suffix chooses the container
(SUFFIXES), and a matrix with its row and column names is stored the same way in both:

- HDF5: a dataset with the attributes ``rows`` and ``cols``; metadata as root attributes
  (dicts and lists as JSON text, None as ``"none"``);
- JSON: ``{"rows": [...], "cols": [...], "data": [[...], ...]}``; metadata as top-level keys;
- NPZ: arrays ``M``, ``M_rows``, ``M_cols``; metadata as the JSON string ``meta``.

``write_atomically`` writes a file whole into a temporary file next to it, which then
takes its name (a rename: atomic), so a reader never sees half a file and a failed write
leaves none; the sweep manifests (sweep/manifest.py) are written with it too, and storage
files encode their JSON attributes with ``json_default``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import InputError, StorageError

SUFFIXES = (".h5", ".hdf5", ".json", ".npz")


def check_output(output: Path | None, force: bool) -> None:
    """Refuse an ``--output`` file before any work: a type other than SUFFIXES (invalid
    input), or (without ``--force``) a file that exists (an I/O problem).

    Raises:
        InputError: an unknown suffix (checked first: --force cannot mend it).
        StorageError: the file exists and ``force`` is False.
    """
    if output is None:
        return
    if output.suffix.lower() not in SUFFIXES:
        raise InputError(f"--output {output}: unknown file type; use .h5, .json or .npz")
    if output.exists() and not force:
        raise StorageError(f"{output}: already exists (use --force to overwrite)")


def json_default(value: Any) -> Any:
    """JSON encoding of what the standard encoder refuses in metadata (labelled files' and
    storage files' attributes): numpy values as Python numbers and lists, enums as their
    value, anything else as its text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Enum):
        return value.value
    return str(value)


def attr_text(v: Any) -> Any:
    """An HDF5 attribute value as Python: bytes decoded, numpy scalars unwrapped."""
    return v.decode("utf-8") if isinstance(v, bytes) else (v.item() if isinstance(v, np.generic) else v)


def meta_attr(value: Any) -> Any:
    """A metadata value as an HDF5 attribute: dicts and lists as JSON text, None as "none"."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=json_default)
    return "none" if value is None else value


def write_h5_matrix(f, name: str, mat, rows: list, cols: list, **dataset_options) -> None:
    """Dataset ``name`` of the open HDF5 file ``f``: the matrix (as floats) with its names.

    Args:
        dataset_options: h5py create_dataset options (compression, ...).
    """
    ds = f.create_dataset(name, data=np.asarray(mat, dtype=float), **dataset_options)
    ds.attrs["rows"] = [str(r) for r in rows]
    ds.attrs["cols"] = [str(c) for c in cols]


def h5_matrix(ds) -> tuple[np.ndarray, list[str], list[str]]:
    """(matrix, row names, column names) of an HDF5 dataset ``write_h5_matrix`` wrote."""
    return np.asarray(ds[...], dtype=float), [attr_text(r) for r in ds.attrs["rows"]], [attr_text(c) for c in ds.attrs["cols"]]


def matrix_document(mat, rows: list, cols: list) -> dict:
    """The JSON form of a matrix with its names."""
    return {"rows": list(rows), "cols": list(cols), "data": np.asarray(mat, dtype=float).tolist()}


def matrix_from_document(value: dict) -> tuple[np.ndarray, list[str], list[str]]:
    """(matrix, row names, column names) of ``matrix_document``'s form.

    Raises:
        KeyError, TypeError, ValueError: not that form, or data of another shape (the
            caller names the file and the entry).
    """
    rows, cols = [str(r) for r in value["rows"]], [str(c) for c in value["cols"]]
    return np.asarray(value["data"], dtype=float).reshape(len(rows), len(cols)), rows, cols


def add_npz_matrix(arrays: dict[str, Any], name: str, mat, rows: list, cols: list) -> None:
    """Put a matrix and its names into the arrays of an NPZ file: ``name``, ``name_rows``, ``name_cols``."""
    arrays[name] = np.asarray(mat, dtype=float)
    arrays[f"{name}_rows"] = np.array([str(r) for r in rows], dtype=str)
    arrays[f"{name}_cols"] = np.array([str(c) for c in cols], dtype=str)


def npz_matrix(data, name: str) -> tuple[np.ndarray, list[str], list[str]]:
    """(matrix, row names, column names) of ``name`` in an open NPZ file (``add_npz_matrix``'s arrays)."""
    return (np.asarray(data[name], dtype=float), [str(r) for r in data[f"{name}_rows"]],
            [str(c) for c in data[f"{name}_cols"]])


def write_text(path: Path, text: str) -> None:
    """Write a text output (JSON, a report, a LaTeX fragment) as UTF-8; a file the system refuses
    is a StorageError naming it."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None


def write_atomically(path: Path, write: Callable[[Path], None], overwrite: bool) -> None:
    """Call ``write(temporary path)``, then give the file its name ``path``.

    Args:
        write: writes the whole file at the path it is given.
        overwrite: replace an existing file (False: refuse, also when one appears while
            the file is written).

    Raises:
        StorageError: an existing file without ``overwrite``, or the file cannot be
            written (nothing is left behind then).
    """
    import tempfile  # here, not at the top: storage files (and so `dojo info`) import this module for json_default

    p = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
    except OSError as exc:
        raise StorageError(f"{p}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    try:
        # mkstemp makes the file private (0600); an output file gets the usual 0666 & ~umask
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        write(Path(tmp))
        if overwrite:
            os.replace(tmp, p)
        else:
            os.link(tmp, p)  # fails if p exists: no clobbering, even of a file that appeared meanwhile
            os.unlink(tmp)
    except FileExistsError:
        _remove(tmp)
        raise StorageError(f"{p}: already exists (use --force to overwrite)") from None
    except OSError as exc:
        _remove(tmp)
        raise StorageError(f"{p}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
