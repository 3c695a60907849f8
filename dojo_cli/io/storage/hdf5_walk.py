"""The walk of an HDF5 file's structure: everything HDF5 parses before raw data.

HDF5 parsing damaged metadata can loop forever or crash the process, and neither can be
caught where it happens. So a reader walks the file's structure in another process
first (dojo_cli.io.storage.probe ``_probe_structure``: a forked child, and, when that child's
verdict may come from the fork itself, a fresh interpreter running this module):

    python -m dojo_cli.io.storage.hdf5_walk FILE [NAME ...]

exits 0 once the walk has finished, whatever errors it met on the way (the real read
reports those), and by a signal (SIGSEGV, SIGABRT, ...) when HDF5 crashes; when HDF5
loops, it never exits, and the caller's deadline ends it. Each ``NAME`` is a dataset
looked up by path as well (a damaged group can hide it from the walk of its links).
``--report`` prints ``walking`` once the interpreter and h5py are loaded and ``done``
after the walk, so that a caller can time the walk alone, without the start-up.

This module imports h5py and nothing of dojo_cli: the fresh interpreter loads only what
the walk needs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from typing import Any

import h5py

# Lines of ``--report`` (the caller reads them from the child's stdout).
WALKING = "walking"
DONE = "done"


def walk_structure(path: str | os.PathLike, names: Iterable[str] = ()) -> None:
    """Touch everything of the file HDF5 parses before raw data, as a reader would: the
    attributes of the root, of every group and dataset (variable-length text lives in the
    global heap), dataset types, chunk indexes (B-trees) and the contents of
    variable-length datasets. An error on one item does not end the walk: the reader may
    go on past it (it reads the root's attributes before any link, for one).

    Args:
        path: the file.
        names: datasets also looked up by path (a damaged group stops ``visititems``
            before it reaches them, but a reader that asks for them by name gets there).
    """
    with h5py.File(path, "r", locking=False) as f:
        _attributes(f)
        objects: dict[str, Any] = {}
        try:
            f.visititems(lambda name, obj: objects.setdefault(name, obj) and None)
        except Exception:
            pass  # (a damaged group: what was found, and the datasets by name below)
        for name in names:
            if name not in objects:
                try:
                    objects[name] = f[name]
                except Exception:
                    pass
        for obj in objects.values():
            _attributes(obj)
            if isinstance(obj, h5py.Dataset):
                _dataset(obj)


def _attributes(obj) -> None:
    try:
        names = list(obj.attrs)
    except Exception:
        return
    for key in names:
        try:
            obj.attrs[key]
        except Exception:
            pass


def _dataset(ds) -> None:
    try:
        ds.shape, ds.dtype  # noqa: B018 (parsed on access)
        if ds.chunks is not None:  # the chunk index: one traversal
            if hasattr(ds.id, "chunk_iter"):
                ds.id.chunk_iter(lambda info: None)
            else:
                for k in range(ds.id.get_num_chunks()):
                    ds.id.get_chunk_info(k)
        if h5py.check_vlen_dtype(ds.dtype) is not None or (
            h5py.check_string_dtype(ds.dtype) is not None and h5py.check_string_dtype(ds.dtype).length is None
        ):
            ds[()]
    except Exception:
        pass


def main(argv: list[str] | None = None) -> int:
    """``python -m dojo_cli.io.storage.hdf5_walk FILE [NAME ...]``: 0 once the walk has finished."""
    parser = argparse.ArgumentParser(
        prog="python -m dojo_cli.io.storage.hdf5_walk",
        description="Walk an HDF5 file's structure; exit 0 once done, by a signal if HDF5 crashes.",
    )
    parser.add_argument("file")
    parser.add_argument("names", nargs="*", help="datasets to look up by path as well")
    parser.add_argument("--report", action="store_true", help=f"print '{WALKING}' before the walk and '{DONE}' after")
    args = parser.parse_args(argv)
    if args.report:
        print(WALKING, flush=True)
    try:
        walk_structure(args.file, args.names)
    except Exception:
        pass  # (a file HDF5 cannot open, a missing file: the real read says why)
    if args.report:
        print(DONE, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
