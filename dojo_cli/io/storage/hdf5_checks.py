"""Checks of an HDF5 file's bytes for damage the HDF5 library itself cannot survive.

libhdf5 (2.0.0, as bundled with h5py 3.16) never returns from reading a *global heap
collection* (where variable-length strings live: our string attributes and name
lists) whose object headers were zeroed or tampered with: ``H5HG__cache_heap_deserialize``
walks the collection's objects and moves on by each object's size, and a free-space
object (index 0) of size 0 does not move it on. The loop holds the process in C code,
where no signal handler of ours runs: only SIGKILL ends it. Found by the fuzz suite
(issue 11; tests/fuzz), in every command that reads a run.

So before opening a file with h5py, ``global_heap_problem`` walks each collection the
way the library will (HDF5 file format specification, version 3, section III.E
"Global Heap": the signature ``GCOL``, version 1, three reserved bytes, the collection
size as a length field; then objects, each a 2-byte index, 2-byte reference count, 4
reserved bytes, a length-field size and the data padded to 8 bytes; index 0 is the
free space, its size counting its own header) and reports a walk that would not end.
Collections are found by their signature: a false match inside data would have to
look like a collection of a plausible size whose walk stalls, which random data does
with a probability far below 1e-15 per file.
"""

from __future__ import annotations

import mmap
import os
import struct

_SIGNATURE = b"GCOL"
_HEADER = 16  # signature, version, 3 reserved, 8-byte collection size
_OBJECT_HEADER = 16  # index, reference count, 4 reserved, 8-byte object size
_MIN_COLLECTION = 4096  # the library's smallest collection (H5HG_MINSIZE)


def global_heap_problem(path: str | os.PathLike) -> str | None:
    """What in the file would make libhdf5 loop forever, or None.

    Assumes 8-byte length fields (HDF5's default, and h5py's). A file that cannot
    be read at all is left to h5py to report.
    """
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size == 0:
                return None
            with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _walk_all(data, size)
    except (OSError, ValueError):
        return None


def _walk_all(data, size: int) -> str | None:
    at = data.find(_SIGNATURE)
    while at >= 0:
        problem = _walk(data, size, at)
        if problem is not None:
            return problem
        at = data.find(_SIGNATURE, at + 1)
    return None


def _walk(data, size: int, at: int) -> str | None:
    if at + _HEADER > size or data[at + 4] != 1:
        return None  # not a collection (version 1 is the only one)
    (length,) = struct.unpack_from("<Q", data, at + 8)
    if length < _MIN_COLLECTION or at + length > size:
        return None  # not a plausible collection: the library would fail on it, not loop
    end = at + length
    p = at + _HEADER
    while p < end:
        if p + _OBJECT_HEADER > end:
            return None  # the tail too small for a header is free space: the walk ends
        index, _ = struct.unpack_from("<HH", data, p)
        (object_size,) = struct.unpack_from("<Q", data, p + 8)
        step = _OBJECT_HEADER + (object_size + 7) // 8 * 8 if index > 0 else object_size
        if step <= 0:
            return (
                f"damaged global heap (the HDF5 library would never finish reading it): a free-space "
                f"object of size 0 at byte {p} of the collection at byte {at}"
            )
        p += step
    return None
