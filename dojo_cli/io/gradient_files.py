"""Gradient files written by ``dojo gradients -o``: HDF5, JSON or NPZ (format 1).

One step's Jacobians with their row and column labels (docs/storage.md, "Gradient
files"). The suffix chooses the container: ``.h5``/``.hdf5`` HDF5, ``.json`` JSON,
``.npz`` NumPy. Every container (io/labelled_files.py) holds the same content:

- matrices ``A`` (d next state / d state), ``B`` (d next state / d input),
  ``P`` (d next state / d parameters), each only when computed, with their labels
  ``rows`` and ``cols`` (HDF5: dataset attributes; JSON: ``{"rows", "cols", "data"}``;
  NPZ: arrays ``A_rows``, ``A_cols``...);
- vectors ``state`` (where the step starts), ``input`` (u), ``next_state``;
- metadata (HDF5: root attributes; JSON: top-level keys; NPZ: the JSON string ``meta``):
  ``format = "dojo-gradients"``, ``format_version``, ``coordinates`` (``maximal`` or
  ``minimal``), ``scene_name``, ``scene`` (resolved YAML), ``time``, ``timestep``,
  ``kappa``, ``solver_status``, ``solver_iterations``, ``solver_residual``,
  ``solver_options``, ``source``, ``dojo_cli_version``, ``created``.

A file is written atomically (labelled_files.write_atomically): a reader never sees half a
file and a failed write leaves none.
"""

from __future__ import annotations

import json
import os
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

FORMAT_NAME = "dojo-gradients"
FORMAT_VERSION = 1
MATRICES = ("A", "B", "P")
# Largest JSON gradient file read: A for 200 bodies ((12 nb)^2 numbers) is about 140 MB as text.
MAX_JSON_BYTES = 512 * 1024 * 1024


@dataclass
class GradientFile:
    """The content of a gradient file.

    Attributes:
        matrices: name ("A", "B", "P") -> (rows, cols) array.
        labels: name -> (row labels, column labels).
        vectors: "state", "input", "next_state" -> 1-D array.
        meta: the metadata keys of the module docstring.
    """

    matrices: dict[str, np.ndarray]
    labels: dict[str, tuple[list[str], list[str]]]
    vectors: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_gradient_file(path: str | os.PathLike, content: GradientFile, overwrite: bool = True) -> None:
    """Write ``content`` to ``path`` atomically; the suffix picks HDF5, JSON or NPZ.

    Args:
        overwrite: replace an existing file (False: refuse, also when one appears while
            the file is written).

    Raises:
        StorageError: unknown suffix, an existing file without ``overwrite``, or the file
            cannot be written (nothing is left behind then).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise StorageError(f"{p}: unknown gradient file type {suffix or '(none)'!r}; use .h5, .json or .npz")
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "created": _now(), **content.meta}
    if suffix in (".h5", ".hdf5"):
        write_atomically(p, lambda tmp: _write_h5(tmp, content, meta), overwrite)
    elif suffix == ".json":
        doc = dict(meta)
        for name, vec in content.vectors.items():
            doc[name] = np.asarray(vec, dtype=float).tolist()
        for name, mat in content.matrices.items():
            doc[name] = matrix_document(mat, *content.labels[name])
        text = json.dumps(doc, indent=1, default=json_default, allow_nan=True)
        write_atomically(p, lambda tmp: tmp.write_text(text), overwrite)
    else:
        write_atomically(p, lambda tmp: _write_npz(tmp, content, meta), overwrite)


def _write_h5(p: Path, content: GradientFile, meta: dict) -> None:
    import h5py

    with h5py.File(p, "w") as f:
        for key, value in meta.items():
            f.attrs[key] = meta_attr(value)
        for name, vec in content.vectors.items():
            f.create_dataset(name, data=np.asarray(vec, dtype=float))
        for name, mat in content.matrices.items():
            kwargs = {"compression": "gzip", "compression_opts": 4, "shuffle": True} if np.size(mat) else {}
            write_h5_matrix(f, name, mat, *content.labels[name], **kwargs)


def _write_npz(p: Path, content: GradientFile, meta: dict) -> None:
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta, default=json_default))}
    for name, vec in content.vectors.items():
        arrays[name] = np.asarray(vec, dtype=float)
    for name, mat in content.matrices.items():
        add_npz_matrix(arrays, name, mat, *content.labels[name])
    with open(p, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def read_gradient_file(path: str | os.PathLike) -> GradientFile:
    """Read a file written by ``write_gradient_file`` (any of the three containers).

    Raises:
        StorageError: missing, unreadable or not a gradient file.
    """
    p = Path(path)
    if not p.is_file():
        raise StorageError(f"{p}: no such file")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise StorageError(f"{p}: unknown gradient file type {suffix!r}")
    try:
        if suffix in (".h5", ".hdf5"):
            content = _read_h5(p)
        elif suffix == ".json":
            # refused before reading: a JSON document is held whole in memory, several times over
            if p.stat().st_size > MAX_JSON_BYTES:
                raise StorageError(f"{p}: {p.stat().st_size:,} bytes, more than the limit of {MAX_JSON_BYTES:,} bytes for JSON")
            try:
                # NaN and Infinity tokens are allowed: the writer puts them in the matrices of a failed step
                doc = json.loads(p.read_text(encoding="utf-8"))
            except RecursionError:
                raise StorageError(f"{p}: cannot read gradient file (JSON nested too deeply)") from None
            if not isinstance(doc, dict):
                raise StorageError(f"{p}: not a dojo gradient file (a JSON {type(doc).__name__}, not an object)")
            matrices, labels, vectors = {}, {}, {}
            for name in MATRICES:
                if name in doc:
                    block = doc.pop(name)
                    try:
                        matrices[name], rows, cols = matrix_from_document(block)
                    except (KeyError, TypeError, ValueError) as exc:
                        what = f"no {exc}" if isinstance(exc, KeyError) else exc
                        raise StorageError(f"{p}: {name}: must be {{rows, cols, data}} with a rows x cols matrix ({what})") from None
                    labels[name] = (rows, cols)
            for name in ("state", "input", "next_state"):
                if name in doc:
                    try:
                        vectors[name] = np.asarray(doc.pop(name), dtype=float).reshape(-1)
                    except (TypeError, ValueError) as exc:
                        raise StorageError(f"{p}: {name}: must be a list of numbers ({exc})") from None
            content = GradientFile(matrices, labels, vectors, doc)
        else:
            with np.load(p, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                matrices, labels, vectors = {}, {}, {}
                for name in MATRICES:
                    if name in data:
                        matrices[name], rows, cols = npz_matrix(data, name)
                        labels[name] = (rows, cols)
                for name in ("state", "input", "next_state"):
                    if name in data:
                        vectors[name] = np.asarray(data[name])
            content = GradientFile(matrices, labels, vectors, meta)
    except StorageError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"{p}: cannot read gradient file ({exc})") from None
    if content.meta.get("format") != FORMAT_NAME:
        raise StorageError(f"{p}: not a dojo gradient file (format {content.meta.get('format')!r})")
    return content


def _read_h5(p: Path) -> GradientFile:
    import h5py

    with h5py.File(p, "r") as f:
        meta = {k: attr_text(v) for k, v in f.attrs.items()}
        matrices, labels, vectors = {}, {}, {}
        for name in MATRICES:
            if name in f:
                matrices[name], rows, cols = h5_matrix(f[name])
                labels[name] = (rows, cols)
        for name in ("state", "input", "next_state"):
            if name in f:
                vectors[name] = np.asarray(f[name][...])
    return GradientFile(matrices, labels, vectors, meta)
