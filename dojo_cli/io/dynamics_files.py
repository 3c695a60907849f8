"""Dynamics files written by ``dojo dynamics -o``: HDF5, JSON or NPZ (format 1).

Labelled vectors and matrices of one state (docs/minimal.md, "Command line"). The
suffix chooses the container: ``.h5``/``.hdf5`` HDF5, ``.json`` JSON, ``.npz`` NumPy.
Every container (io/labelled_files.py) holds the same content:

- vectors (``q``, ``v``, ``C``, ...) with their entries' names (HDF5: dataset attribute
  ``names``; JSON: ``{"names": [...], "data": [...]}``; NPZ: arrays ``q`` and ``q_names``);
- matrices (``M``, ``E``, ...) with row and column names (HDF5: attributes ``rows``,
  ``cols``; JSON: ``{"rows", "cols", "data"}``; NPZ: ``M``, ``M_rows``, ``M_cols``);
- metadata (HDF5: root attributes; JSON: top-level keys; NPZ: the JSON string ``meta``):
  ``format = "dojo-dynamics"``, ``format_version``, ``created`` and the writer's keys.

A file is written atomically (labelled_files.write_atomically): a reader never sees half a
file and a failed write leaves none.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import StorageError
from dojo_cli.io.labelled_files import (
    SUFFIXES, add_npz_matrix, attr_text, h5_matrix, json_default, matrix_document, matrix_from_document, meta_attr,
    npz_matrix, write_atomically, write_h5_matrix,
)

FORMAT_NAME = "dojo-dynamics"
FORMAT_VERSION = 1
# Largest JSON dynamics file read back: the matrices of a 100-joint robot are a few MB.
MAX_JSON_BYTES = 256 * 1024 * 1024


@dataclass
class DynamicsFile:
    """The content of a dynamics file.

    Attributes:
        vectors: name -> ((n,) array, n entry names).
        matrices: name -> ((rows, cols) array, row names, column names).
        meta: metadata (JSON-serialisable values).
    """

    vectors: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)
    matrices: dict[str, tuple[np.ndarray, list[str], list[str]]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def dynamics_document(content: DynamicsFile) -> dict:
    """The JSON form of ``content`` (what ``dojo dynamics --json`` prints and ``.json`` holds)."""
    doc: dict[str, Any] = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **content.meta}
    for name, (vec, names) in content.vectors.items():
        doc[name] = {"names": list(names), "data": np.asarray(vec, dtype=float).tolist()}
    for name, (mat, rows, cols) in content.matrices.items():
        doc[name] = matrix_document(mat, rows, cols)
    return doc


def write_dynamics_file(path: str | os.PathLike, content: DynamicsFile, overwrite: bool = False) -> None:
    """Write ``content`` to ``path`` atomically; the suffix picks HDF5, JSON or NPZ.

    Args:
        overwrite: replace an existing file (False: refuse, also when one appears
            while the file is written).

    Raises:
        StorageError: unknown suffix, an existing file without ``overwrite``, or the
            file cannot be written (nothing is left behind then).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise StorageError(f"{p}: unknown dynamics file type {suffix or '(none)'!r}; use .h5, .json or .npz")
    content = DynamicsFile(content.vectors, content.matrices,
                           {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), **content.meta})
    if suffix in (".h5", ".hdf5"):
        write_atomically(p, lambda tmp: _write_h5(tmp, content), overwrite)
    elif suffix == ".json":
        text = json.dumps(dynamics_document(content), indent=1, default=json_default)
        write_atomically(p, lambda tmp: tmp.write_text(text), overwrite)
    else:
        write_atomically(p, lambda tmp: _write_npz(tmp, content), overwrite)


def _write_h5(p: Path, content: DynamicsFile) -> None:
    import h5py

    with h5py.File(p, "w") as f:
        f.attrs["format"] = FORMAT_NAME
        f.attrs["format_version"] = FORMAT_VERSION
        for key, value in content.meta.items():
            f.attrs[key] = meta_attr(value)
        for name, (vec, names) in content.vectors.items():
            ds = f.create_dataset(name, data=np.asarray(vec, dtype=float))
            ds.attrs["names"] = [str(n) for n in names]
        for name, (mat, rows, cols) in content.matrices.items():
            write_h5_matrix(f, name, mat, rows, cols)


def _write_npz(p: Path, content: DynamicsFile) -> None:
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **content.meta}
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta, default=json_default))}
    for name, (vec, names) in content.vectors.items():
        arrays[name] = np.asarray(vec, dtype=float)
        arrays[f"{name}_names"] = np.array([str(n) for n in names], dtype=str)
    for name, (mat, rows, cols) in content.matrices.items():
        add_npz_matrix(arrays, name, mat, rows, cols)
    with open(p, "wb") as fh:
        np.savez(fh, **arrays)


def read_dynamics_file(path: str | os.PathLike) -> DynamicsFile:
    """Read a file written by ``write_dynamics_file`` (any of the three containers).

    Raises:
        StorageError: missing, unreadable or not a dynamics file.
    """
    p = Path(path)
    if not p.is_file():
        raise StorageError(f"{p}: no such file")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise StorageError(f"{p}: unknown dynamics file type {suffix!r}")
    try:
        if suffix in (".h5", ".hdf5"):
            content = _read_h5(p)
        elif suffix == ".json":
            if p.stat().st_size > MAX_JSON_BYTES:
                raise StorageError(f"{p}: {p.stat().st_size:,} bytes, more than the limit of {MAX_JSON_BYTES:,} bytes")
            content = dynamics_from_document(json.loads(p.read_text(encoding="utf-8")), str(p))
        else:
            content = _read_npz(p)
    except StorageError:
        raise
    except RecursionError:
        raise StorageError(f"{p}: cannot read dynamics file (JSON nested too deeply)") from None
    except (OSError, ValueError, KeyError, TypeError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise StorageError(f"{p}: cannot read dynamics file ({exc})") from None
    if content.meta.get("format") != FORMAT_NAME:
        raise StorageError(f"{p}: not a dojo dynamics file (format {content.meta.get('format')!r})")
    return content


def dynamics_from_document(doc: Any, where: str) -> DynamicsFile:
    """The content of a JSON document (``dynamics_document``'s form).

    Raises:
        StorageError: not an object, or a vector/matrix entry of the wrong form.
    """
    if not isinstance(doc, dict):
        raise StorageError(f"{where}: not a dojo dynamics file (a JSON {type(doc).__name__}, not an object)")
    out = DynamicsFile()
    for key, value in doc.items():
        if isinstance(value, dict) and "data" in value and ("names" in value or "rows" in value):
            try:
                if "names" in value:
                    names = [str(n) for n in value["names"]]
                    out.vectors[key] = (np.asarray(value["data"], dtype=float).reshape(len(names)), names)
                else:
                    out.matrices[key] = matrix_from_document(value)
            except (KeyError, TypeError, ValueError) as exc:
                raise StorageError(f"{where}: {key}: must be {{names, data}} or {{rows, cols, data}} of matching sizes ({exc})") from None
        else:
            out.meta[key] = value
    return out


def _read_h5(p: Path) -> DynamicsFile:
    import h5py

    out = DynamicsFile()
    with h5py.File(p, "r") as f:
        out.meta = {k: attr_text(v) for k, v in f.attrs.items()}
        for name, ds in f.items():
            if not isinstance(ds, h5py.Dataset):
                continue
            if "names" in ds.attrs:
                out.vectors[name] = (np.asarray(ds[...], dtype=float), [attr_text(n) for n in ds.attrs["names"]])
            elif "rows" in ds.attrs:
                out.matrices[name] = h5_matrix(ds)
    return out


def _read_npz(p: Path) -> DynamicsFile:
    out = DynamicsFile()
    with np.load(p, allow_pickle=False) as data:
        out.meta = json.loads(str(data["meta"])) if "meta" in data else {}
        keys = set(data.files)
        for name in keys:
            if name == "meta" or name.endswith(("_names", "_rows", "_cols")):
                continue
            if f"{name}_names" in keys:
                out.vectors[name] = (np.asarray(data[name], dtype=float), [str(n) for n in data[f"{name}_names"]])
            elif f"{name}_rows" in keys:
                out.matrices[name] = npz_matrix(data, name)
    return out
