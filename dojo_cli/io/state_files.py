"""The files a one-state command starts from: ``--state FILE`` and ``--from RUN.h5 --index K``.

`dojo step`, `dojo gradients` (maximal or minimal states, docs/gradients.md) and `dojo
dynamics` (a minimal model's x = [q; v] in an order, docs/minimal.md) read different
contents, but the same way: this module is that one way. It checks the file before reading
it (a missing or unreadable file is an I/O error, exit 3; a device or an oversized file is
invalid input, 2), reads JSON with NaN and Infinity kept visible, reads plain lists of
numbers, and finds knot K of a stored run with the checks both commands need (the run's
bodies are the scene's, K in range). Messages start with the option (``--state PATH: ...``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dojo_cli.errors import InputError, StorageError

# A --state file holds one state: 16 MiB is hundreds of thousands of numbers.
MAX_STATE_FILE_BYTES = 16 * 1024 * 1024


class NonFinite(str):
    """A NaN or Infinity token of a JSON file (not JSON; Python's reader takes them unless
    told), kept as text so that its place can be named."""


def check_state_file(path: Path, what: str) -> None:
    """Refuse a file that cannot be a state file, before reading a byte.

    Raises:
        StorageError: no such file, or a directory (exit 3).
        InputError: a name the file system refuses, a device, FIFO or socket, or larger
            than MAX_STATE_FILE_BYTES (exit 2).
    """
    try:
        if not path.exists():
            raise StorageError(f"{what} {path}: no such file")
        if path.is_dir():
            raise StorageError(f"{what} {path}: is a directory")
        if not path.is_file():
            raise InputError(f"{what} {path}: not a regular file")
        size = path.stat().st_size
    except OSError as exc:  # a name the file system refuses (longer than NAME_MAX, ...): a bad name
        raise InputError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    if size > MAX_STATE_FILE_BYTES:
        raise InputError(f"{what} {path}: {size:,} bytes, more than the limit of {MAX_STATE_FILE_BYTES:,} bytes")


def read_json(path: Path, what: str) -> Any:
    """A JSON document whose NaN and Infinity tokens come back as ``NonFinite`` strings.

    Raises:
        InputError: nested too deeply (Python's reader recurses).
        OSError, ValueError, UnicodeDecodeError: unreadable or malformed (the caller names the file).
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=NonFinite)
    except RecursionError:
        raise InputError(f"{what} {path}: JSON nested too deeply") from None


def read_plain_numbers(path: Path) -> list[float]:
    """The numbers of a CSV/TXT file: separated by commas, semicolons or white space, ``#``
    starting a comment.

    Raises:
        OSError, ValueError, UnicodeDecodeError: unreadable, or a token that is not a number.
    """
    text = "\n".join(line.split("#", 1)[0] for line in path.read_text(encoding="utf-8").splitlines())
    return [float(t) for t in re.split(r"[,\s;]+", text) if t]


def stored_knot(run: Path, index: int | None, body_names: list[str], warn: Callable[[str], None], kind: str = "states"):
    """(the stored run, knot k) for ``--from RUN --index K``.

    Args:
        run: the storage file.
        index: K; negative counts from the end.
        body_names: the scene's bodies, which the run's must be.
        warn: called with a line for the user (the run's status note: killed, interrupted,
            failed), before any problem with the run is raised.
        kind: what the knots are called in messages ("states", "knots").

    Returns:
        (dojo_cli.io.storage.StoredRun, k in 0..T).

    Raises:
        InputError: no --index, a foreign run (other bodies), an empty run, K out of range.
        StorageError: no such file (exit 3), a damaged file.
    """
    from dojo_cli.io.storage import read_storage  # here: h5py only for --from

    if index is None:
        raise InputError(f"--from needs --index K (the {kind[:-1]} to take; 0 is the initial state, -1 the last)")
    if not run.exists():
        raise StorageError(f"--from {run}: no such file")
    try:
        stored = read_storage(run)  # validated: consistent lengths, widths matching the names
    except StorageError as exc:
        # a damaged file stays an I/O error (3), a foreign one invalid input (2)
        raise type(exc)(f"--from {exc}") from None
    note = stored.status_note()  # killed, interrupted, failed: said, then its states are used
    if note:
        warn(f"--from {note}")
    if stored.body_names != body_names:
        raise InputError(
            f"--from {run}: its bodies {stored.body_names} are not the scene's {body_names} "
            f"(the run was written by scene {stored.attrs.get('scene_name')!r})"
        )
    n = stored.x.shape[0]
    if n == 0:
        raise InputError(f"--from {run}: the run holds no state (its writer stopped before the initial state)")
    k = index + n if index < 0 else index
    if not 0 <= k < n:
        raise InputError(f"--index {index}: {run} holds {kind} 0..{n - 1} (or -{n}..-1 from the end)")
    return stored, k
