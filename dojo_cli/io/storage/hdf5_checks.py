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


# The superblock (HDF5 file format specification, version 3, section II.A, versions 2 and 3):
# the signature, version, size of offsets O, size of lengths, flags, then four addresses of O
# bytes (base, superblock extension, end of file, root group object header) and a Jenkins
# lookup3 checksum of everything before it. The "end of file address" is the file's
# end-of-allocation (EOA): nothing the file's metadata points to lies past it.
_SUPERBLOCK_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_EOA_FIELD = 2  # the third address after the 12 bytes of signature, version, sizes and flags


def allocated_end(path: str | os.PathLike) -> int | None:
    """The end-of-allocation address a file's superblock records (its version 2 or 3 at byte
    0, with a valid checksum), or None (another layout, damaged, unreadable).

    A writer killed inside HDF5's flush can leave the superblock's EOA older than the
    metadata already written: the superblock is flushed last (its ring is the innermost), so
    chunk indexes may point to chunks allocated past it, which HDF5 then refuses to read
    ("addr overflow"). The reader trims such a file to the rows stored below this end
    (reader.py, ``_covered_rows``).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(12 + 4 * 8 + 4)
    except OSError:
        return None
    if len(head) < 12 or head[:8] != _SUPERBLOCK_SIGNATURE or head[8] not in (2, 3):
        return None
    size = head[9]
    if size not in (2, 4, 8):
        return None
    end = 12 + 4 * size
    if len(head) < end + 4 or lookup3(head[:end]) != int.from_bytes(head[end : end + 4], "little"):
        return None
    at = 12 + _EOA_FIELD * size
    return int.from_bytes(head[at : at + size], "little")


_MASK32 = 0xFFFFFFFF


def _rotate(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _MASK32


def lookup3(data: bytes, initial: int = 0) -> int:
    """Bob Jenkins' lookup3 ``hashlittle`` of ``data``: HDF5's metadata checksum
    (H5_checksum_lookup3, H5checksum.c), on little-endian words, the tail zero-padded."""
    n = len(data)
    a = b = c = (0xDEADBEEF + n + initial) & _MASK32
    i = 0
    while n - i > 12:
        a = (a + int.from_bytes(data[i : i + 4], "little")) & _MASK32
        b = (b + int.from_bytes(data[i + 4 : i + 8], "little")) & _MASK32
        c = (c + int.from_bytes(data[i + 8 : i + 12], "little")) & _MASK32
        # mix(a, b, c): six rounds of x -= z, x ^= rot(z, r), z += y on (a, b, c) turned by one
        for r in (4, 6, 8, 16, 19, 4):
            a = (a - c) & _MASK32
            a ^= _rotate(c, r)
            c = (c + b) & _MASK32
            a, b, c = b, c, a
        i += 12
    if i == n:
        return c
    tail = data[i:] + bytes(12 - (n - i))
    a = (a + int.from_bytes(tail[0:4], "little")) & _MASK32
    b = (b + int.from_bytes(tail[4:8], "little")) & _MASK32
    c = (c + int.from_bytes(tail[8:12], "little")) & _MASK32
    # final(a, b, c): seven rounds of x ^= y, x -= rot(y, r) on (c, b), (a, c), (b, a), ...
    x, y, z = c, b, a
    for r in (14, 11, 25, 16, 4, 14, 24):
        x ^= y
        x = (x - _rotate(y, r)) & _MASK32
        x, y, z = z, x, y
    return y  # c: seven turns of (c, b, a) leave it second
