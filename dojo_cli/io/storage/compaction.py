"""Compaction: a run that ended normally (``complete``, ``complete_with_failures``) is
copied gzip-compressed into a temporary file next to it, which then replaces it (a rename
within one folder: atomic, so a kill during the compaction leaves the complete
uncompressed file, and the next compaction there removes the orphan copy). While a run is
written its datasets are raw (storage.writer: crash consistency); this is where they are
compressed, once, at the end.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from dojo_cli.io.storage.format import _CHUNK_CACHE_BYTES, _LIBVER, _METADATA_BYTES, _RESERVE_BYTES, _create_series, _os_reason
from dojo_cli.io.storage.locks import fcntl

# Rows copied at once by the compaction (whole chunks, about this many bytes).
_COPY_BYTES = 4 * 1024 * 1024


def _copy_attrs(source: h5py.AttributeManager, target: h5py.AttributeManager) -> None:
    """Every attribute, with its HDF5 type (variable-length strings stay strings)."""
    for key in source:
        target.create(key, source[key], dtype=source.get_id(key).dtype)


_COMPACTING_SUFFIX = ".compacting"


def _remove_stale_copies(source: Path) -> None:
    """Remove the temporary copies of ``source`` that no compaction holds (left by a
    process killed while it compacted)."""
    for path in source.parent.glob(f".{source.name}.*{_COMPACTING_SUFFIX}"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(path)
        except OSError:
            pass  # another compaction holds it
        finally:
            os.close(fd)


class _CompactionStopped(Exception):
    """A stop was requested during a compaction."""


def _copy_compressed(src: h5py.File, dst: h5py.File, reserve=None, stop_requested=None) -> None:
    """Copy a storage file's groups, datasets and attributes into ``dst``, the datasets
    chunked as the writer makes them and gzip-compressed. ``reserve(bytes)`` is called
    before each dataset with its raw size (file space for the copy); ``stop_requested()``
    between blocks of rows (True: raise _CompactionStopped)."""
    _copy_attrs(src.attrs, dst.attrs)
    items: list[tuple[str, Any]] = []

    def collect(name: str, obj) -> None:
        items.append((name, obj))

    src.visititems(collect)
    for name, obj in items:
        if isinstance(obj, h5py.Group):
            _copy_attrs(obj.attrs, dst.require_group(name).attrs)
            continue
        if not isinstance(obj, h5py.Dataset):
            continue
        if reserve is not None:
            reserve(obj.size * obj.dtype.itemsize + _METADATA_BYTES)
        if obj.ndim == 0:
            out = dst.create_dataset(name, data=obj[()], dtype=obj.dtype)
        else:
            n = obj.shape[0]
            out = _create_series(dst, name, obj.shape[1:], obj.dtype, compress=True, length=n)  # (a short run's chunks stay short)
            out.resize(n, axis=0)
            rows = out.chunks[0]
            row_bytes = max(1, obj.dtype.itemsize * int(np.prod(obj.shape[1:], dtype=np.int64)))
            step = rows * max(1, _COPY_BYTES // (rows * row_bytes))
            for start in range(0, n, step):
                if stop_requested is not None and stop_requested():
                    raise _CompactionStopped
                out[start : start + step] = obj[start : start + step]
        _copy_attrs(obj.attrs, out.attrs)


def compact(path: Path, *, reserve_space: bool, stop_requested: Callable[[], bool] | None = None) -> str | None:
    """Replace the finished storage file ``path`` by a gzip-compressed copy. Best effort:
    on any failure (no room for the copy, a second Ctrl-C, ``stop_requested()`` True) the
    uncompressed file stays, complete.

    The copy is written under a temporary name next to the file (a rename within one
    folder is atomic), locked like the file; a copy left by a killed compaction is
    removed by the next one. ``reserve_space``: the file system has ``posix_fallocate``
    (the copy's room is then reserved before HDF5 writes it).

    Returns:
        None once the file is compressed, or why it was not (``"not compressed: ..."``).
    """
    try:
        source = Path(os.path.realpath(path))  # a symbolic link stays a link
        info = os.stat(source)
        if info.st_nlink > 1:
            return "not compressed: the file has other hard links"
        _remove_stale_copies(source)
        temporary = source.with_name(f".{source.name}.{os.getpid()}{_COMPACTING_SUFFIX}")
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), stat.S_IMODE(info.st_mode))
    except OSError as exc:
        return f"not compressed: {_os_reason(exc)}"
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with h5py.File(source, "r", locking=False, rdcc_nbytes=_CHUNK_CACHE_BYTES) as src, \
                h5py.File(temporary, "w", libver=_LIBVER, locking=False, rdcc_nbytes=_CHUNK_CACHE_BYTES) as dst:

            def reserve(raw_bytes: int) -> None:
                # compressed rows never outgrow the raw ones: with the next dataset's raw
                # size reserved, HDF5 cannot meet a full disk while it writes the copy
                if reserve_space:
                    end = int(dst.id.get_filesize())
                    os.posix_fallocate(fd, end, int(raw_bytes) + _RESERVE_BYTES)

            _copy_compressed(src, dst, reserve, stop_requested)
            dst.flush()
            os.ftruncate(fd, int(dst.id.get_filesize()))
        os.fsync(fd)  # the copy is on disk before its name replaces the file
        os.replace(temporary, source)
        return None
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        interrupted = isinstance(exc, (KeyboardInterrupt, _CompactionStopped))
        if not isinstance(exc, (Exception, KeyboardInterrupt)):
            raise  # SystemExit and the like
        return "not compressed: interrupted" if interrupted else f"not compressed: {_os_reason(exc)}"
    finally:
        os.close(fd)
