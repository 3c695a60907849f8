"""The one-writer-per-file lock: a writer takes an exclusive ``flock`` on the file *before*
HDF5 opens (and so truncates) it, and holds it until the file is finished; HDF5's own
locking is off for the writer, since it would take a second, conflicting lock (and HDF5
truncates a file before it even tries its lock). A second writer on the same file (``dojo
simulate --force``) is refused without touching the file; a reader probes the lock
(``being_written``) to tell a run still being written from one whose writer died.
"""

from __future__ import annotations

import io
import os
import stat
import time as time_module
from pathlib import Path

from dojo_cli.errors import StorageError
from dojo_cli.io.storage.format import _os_reason

try:  # POSIX; without it (Windows) files are not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

# How long a new writer waits for readers (shared locks) to close the file before refusing.
_READER_WAIT_SECONDS = 1.0


def _path_reason(path: Path, exc: BaseException | None = None) -> str:
    """Why a storage file cannot be created at ``path``."""
    parent = path.parent
    if not parent.exists():
        return f"directory '{parent}' does not exist"
    if not parent.is_dir():
        return f"'{parent}' is not a directory"
    if path.is_dir():
        return "is a directory"
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "permission denied"
    if exc is not None:
        return _os_reason(exc)
    return "cannot be created"


def _lock_for_writing(path: Path, overwrite: bool) -> tuple[io.FileIO, bool]:
    """Open (create) ``path`` without truncating it and take its exclusive writer lock.

    Returns the open file, which holds the lock until it is closed (by the writer, or by
    the kernel when the process dies), and whether it was created here. HDF5 truncates
    only after this succeeded.

    Raises:
        StorageError: the file exists (``overwrite`` False), cannot be created, is not a
            regular file, or another process holds it (a writer, or readers that did not
            close it within _READER_WAIT_SECONDS); the file is left untouched.
    """
    # O_NONBLOCK: opening a FIFO must not wait for a reader; regular files ignore it.
    flags = os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if path.is_dir():
        raise StorageError(f"{path}: cannot create storage file: is a directory")
    created = True
    try:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)  # (atomic: two runs cannot both create it)
        except FileExistsError:
            if not overwrite:
                raise StorageError(f"{path}: already exists (use --force to overwrite)") from None
            created = False
            fd = os.open(path, flags | os.O_CREAT, 0o666)
    except OSError as exc:
        raise StorageError(f"{path}: cannot create storage file: {_path_reason(path, exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StorageError(f"{path}: not a regular file (a device, FIFO or socket); cannot write a storage file there")
        if fcntl is not None:
            _flock_exclusive(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return io.FileIO(fd, "r+", closefd=True), created


def _flock_exclusive(fd: int, path: Path) -> None:
    """Take the exclusive lock on ``fd``, telling a writer (exclusive lock) from readers
    (shared locks: HDF5 holds one while a program has the file open for reading)."""
    deadline = time_module.monotonic() + _READER_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError:
            return  # no locks on this file system (some network mounts): proceed unlocked
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StorageError(
                f"{path}: another run is writing it (a `dojo simulate` still running?); not overwritten"
            ) from None
        except OSError:
            return
        fcntl.flock(fd, fcntl.LOCK_UN)
        if time_module.monotonic() > deadline:
            raise StorageError(f"{path}: another program has it open (reading it); close it first; not overwritten")
        time_module.sleep(0.05)


def being_written(path: str | os.PathLike) -> bool:
    """Whether a process holds ``path``'s writer lock (a run still being written).

    A lock held by a process that died is released by the kernel, so a ``running`` file
    that nobody holds was left by a killed (or crashed) writer.
    """
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # (closing also drops the shared lock)
    return False
