"""The one-writer-per-file lock: a writer takes an exclusive ``flock`` on the file *before*
HDF5 opens (and so truncates) it, and holds it until the file is finished; HDF5's own
locking is off for the writer, since it would take a second, conflicting lock (and HDF5
truncates a file before it even tries its lock). A second writer on the same file (``dojo
simulate --force``) is refused without touching the file; a reader probes the lock
(``being_written``) to tell a run still being written from one whose writer died.

The block-write section: HDF5 gives no guarantee to a reader of a file another process is
changing (no SWMR here: its superblock v3 flags make a killed writer's file unopenable
without ``h5clear``). Reading in the middle of a block write saw chunk indexes pointing past
the end of the file (about 1 read in 1000 in a tight loop) and once crashed the reading
process. So the writer changes the file only inside an exclusive lock on one byte far past
its end, and a reader holds a shared lock on that byte while it probes and reads
(``BlockSection``, ``reading_section``). A writer that has put a block write off long enough
insists: it first takes a second byte, the gate, which every reader passes through (takes
shared and drops) before it asks for the section. Without the gate a reader reading in a
tight loop took the section again within microseconds of dropping it, and the writer, trying
every few milliseconds, starved until its wait ran out (then wrote unlocked: the failure the
section exists to prevent). These are Linux open-file-description locks
(``F_OFD_SETLK``): they belong to an open file, not to a process, so h5py closing its own
descriptor of the same file does not drop them, and they conflict between two descriptors
of one process too. They are independent of the whole-file ``flock`` above. Where they do not
exist (other systems, file systems without byte-range locks) both sides go on unlocked, as
before, and the reader's retries remain.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import struct
import time as time_module
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dojo_cli.errors import StorageError
from dojo_cli.io.storage.format import _os_reason

try:  # POSIX; without it (Windows) files are not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

# How long a new writer waits for readers (shared locks) to close the file before refusing.
_READER_WAIT_SECONDS = 1.0

# The byte of the block-write section (module docstring): past the end of any real file
# (byte-range locks may lie beyond the end, and do not grow the file).
_SECTION_BYTE = 1 << 62
# The gate's byte (module docstring): an insisting writer holds it; a reader passes through it.
_GATE_BYTE = _SECTION_BYTE + 1
_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None) if fcntl is not None else None
# How long a reader waits for a block write to end before reading anyway (a block write
# takes milliseconds; a writer stopped inside one, with Ctrl-Z, would hold it for ever).
_SECTION_READ_WAIT_SECONDS = 5.0
# How often a waiting side tries the lock again.
_SECTION_POLL_SECONDS = 0.002
# Errors that say the file system has no byte-range locks: go on unlocked.
_NO_LOCKS = frozenset(
    getattr(errno, name) for name in ("EINVAL", "ENOLCK", "EOPNOTSUPP", "ENOTSUP", "ENOSYS", "EBADF") if hasattr(errno, name)
)


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


def _section_lock(fd: int, kind: int, byte: int = _SECTION_BYTE) -> bool | None:
    """Try to take (``F_RDLCK``, ``F_WRLCK``) or drop (``F_UNLCK``) the section's byte (or
    the gate's) on ``fd`` without waiting. True: done; False: another open file holds it;
    None: this file system has no byte-range locks."""
    # struct flock (Linux): l_type, l_whence (short), l_start, l_len (off_t), l_pid (pid_t,
    # 0 for OFD locks), padded to 8 bytes.
    request = struct.pack("@hhqqixxxx", kind, os.SEEK_SET, byte, 1, 0)
    try:
        fcntl.fcntl(fd, _OFD_SETLK, request)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        if exc.errno in _NO_LOCKS:
            return None
        raise


def _wait_for_section(fd: int, kind: int, seconds: float, byte: int = _SECTION_BYTE) -> bool:
    """Take the section's byte (or the gate's) on ``fd``, waiting up to ``seconds``. False:
    still held by another open file at the deadline (the caller goes on unlocked)."""
    deadline = time_module.monotonic() + seconds
    while True:
        got = _section_lock(fd, kind, byte)
        if got is None or got:
            return True
        if time_module.monotonic() >= deadline:
            return False
        time_module.sleep(_SECTION_POLL_SECONDS)


class BlockSection:
    """The writer's side of the block-write section (module docstring), on the descriptor
    that holds its ``flock``. ``try_enter`` does not wait (a block write can be put off
    while someone reads); ``enter`` waits up to ``seconds`` and then goes on regardless;
    ``exit`` lets readers in again."""

    def __init__(self, fd: int) -> None:
        self._fd = fd if _OFD_SETLK is not None else None

    def try_enter(self) -> bool:
        if self._fd is None:
            return True
        return _section_lock(self._fd, fcntl.F_WRLCK) is not False

    def enter(self, seconds: float | None = None) -> bool:
        """Take the section, waiting up to ``seconds``; False: readers still held it at the
        deadline (the write goes on regardless)."""
        if self._fd is None:
            return True
        deadline = time_module.monotonic() + (_SECTION_READ_WAIT_SECONDS if seconds is None else seconds)
        # the gate first: readers not yet inside wait at it, so the section frees up
        # (a reader holds the gate for microseconds, never while waiting for the section)
        _wait_for_section(self._fd, fcntl.F_WRLCK, max(0.0, deadline - time_module.monotonic()), _GATE_BYTE)
        return _wait_for_section(self._fd, fcntl.F_WRLCK, max(0.0, deadline - time_module.monotonic()))

    def exit(self) -> None:
        if self._fd is not None:
            try:
                _section_lock(self._fd, fcntl.F_UNLCK)
                _section_lock(self._fd, fcntl.F_UNLCK, _GATE_BYTE)
            except OSError:
                pass  # (closing the descriptor drops it anyway)

    @contextmanager
    def held(self, seconds: float | None = None) -> Iterator[None]:
        self.enter(seconds)
        try:
            yield
        finally:
            self.exit()


@contextmanager
def reading_section(path: str | os.PathLike) -> Iterator[None]:
    """Hold the reader's side of the block-write section of ``path`` (module docstring):
    no writer changes the file while the body probes and reads it. Waits for a block write
    under way (up to _SECTION_READ_WAIT_SECONDS, then reads anyway); a missing file or a
    system without the locks reads unlocked (the read then says what it finds)."""
    if _OFD_SETLK is None:
        yield
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        yield
        return
    try:
        try:
            deadline = time_module.monotonic() + _SECTION_READ_WAIT_SECONDS
            # through the gate (an insisting writer holds it: wait behind it), then the section
            if _wait_for_section(fd, fcntl.F_RDLCK, _SECTION_READ_WAIT_SECONDS, _GATE_BYTE):
                _section_lock(fd, fcntl.F_UNLCK, _GATE_BYTE)
            _wait_for_section(fd, fcntl.F_RDLCK, max(0.0, deadline - time_module.monotonic()))
        except OSError:
            pass  # any other locking error: read unlocked
        yield
    finally:
        os.close(fd)  # (drops the shared lock)
