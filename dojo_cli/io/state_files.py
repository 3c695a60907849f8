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
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import InputError, StorageError
from dojo_cli.physics.coordinates import minimal_to_maximal

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


# --- vectors from files (`dojo step`, `gradients`, `analyze`: --state, --input-file) ---

# Unit-quaternion tolerance of a state read from a file.
QUAT_TOL = 1e-6
# A --state or --input-file file holds one vector (13 numbers per body): the state files' limit.
MAX_NUMBERS_FILE_BYTES = MAX_STATE_FILE_BYTES
# The JSON keys holding a vector (--state: maximal or minimal; --input-file: input).
_VECTOR_KEYS = ("maximal", "minimal", "input")


def _json_value_problem(value, where: str, depth: int = 0) -> str | None:
    """What is wrong with a JSON vector (numbers, or lists of them as rows), or None."""
    if isinstance(value, list):
        if depth >= 2:
            return f"{where}: nested deeper than a list of rows"
        for i, item in enumerate(value):
            problem = _json_value_problem(item, f"{where}[{i}]", depth + 1)
            if problem is not None:
                return problem
        return None
    shown = "an object" if isinstance(value, dict) else str(value) if isinstance(value, NonFinite) else json.dumps(value)[:40]
    if depth == 0:
        return f"{where}: must be a list of numbers, got {shown}"
    if isinstance(value, NonFinite):
        return f"{where}: must be a finite number, got {shown}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{where}: must be a number, got {shown}"
    try:
        finite = math.isfinite(float(value))
    except OverflowError:  # an integer beyond every float
        finite = False
    if not finite:
        return f"{where}: must be a finite number, got {shown[:20]} (beyond the floating-point range)"
    return None


def numbers_from_file(path: Path, what: str) -> tuple[np.ndarray, dict | None]:
    """(numbers, the JSON object or None) of a --state / --input-file file.

    Raises:
        StorageError: no such file, or unreadable (exit 3; io.state_files.check_state_file).
        InputError: naming the file (and the entry): not a regular file, larger than
            MAX_NUMBERS_FILE_BYTES, not UTF-8, JSON that is malformed, nested deeply or
            holds NaN/Infinity or non-numbers, an NPY file of anything but real numbers.
    """
    check_state_file(path, what)
    suffix = path.suffix.lower()
    doc = None
    try:
        if suffix == ".json":
            doc = read_json(path, what)  # NaN and Infinity come back as NonFinite
            values = doc
        elif suffix == ".npy":
            values = np.load(path, allow_pickle=False)
            if values.dtype.kind not in "iuf":
                raise InputError(f"{what} {path}: holds {values.dtype} values, not real numbers")
        else:
            values = read_plain_numbers(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {path}: cannot read numbers ({exc})") from None
    if isinstance(doc, dict):
        for key in _VECTOR_KEYS:
            if key in doc:
                problem = _json_value_problem(doc[key], repr(key))
                if problem is not None:
                    raise InputError(f"{what} {path}: {problem}")
        return np.zeros(0), doc
    if suffix == ".json":
        if not isinstance(doc, list):
            raise InputError(f"{what} {path}: expected a JSON list of numbers or an object, got {type(doc).__name__}")
        problem = _json_value_problem(doc, "entry")
        if problem is not None:
            raise InputError(f"{what} {path}: {problem}")
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{what} {path}: expected a list of numbers") from None
    return arr, None


def finite_vector(arr: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: contains non-finite numbers (NaN or infinity)")
    return arr


def vector_from(values, what: str) -> np.ndarray:
    try:
        return finite_vector(np.asarray(values, dtype=float).reshape(-1), what)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a list of numbers") from None


def _checked_maximal(mech, z: np.ndarray, what: str) -> np.ndarray:
    if z.size != 13 * mech.nb:
        raise InputError(
            f"{what}: a maximal state has 13 numbers per body (x, v, q [w x y z], omega) = {13 * mech.nb} "
            f"for this scene, got {z.size}"
        )
    z = z.reshape(mech.nb, 13).copy()
    for i, b in enumerate(mech.bodies):
        n = np.linalg.norm(z[i, 6:10])
        if abs(n - 1.0) > QUAT_TOL:
            raise InputError(f"{what}: body {b.name!r}: orientation [w x y z] must be a unit quaternion, |q| = {n:.9g}")
        z[i, 6:10] /= n
    return z.reshape(-1)


def _checked_minimal(mech, y: np.ndarray, what: str) -> np.ndarray:
    if y.size != 2 * mech.nf:
        raise InputError(
            f"{what}: a minimal state has 2 numbers per free coordinate (per joint [coordinates; velocities]) "
            f"= {2 * mech.nf} for this scene, got {y.size}"
        )
    return y


def read_state_file(mech, path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """(maximal z, minimal y or None) from a --state file (format: docs/gradients.md)."""
    what = f"--state {path}"
    arr, doc = numbers_from_file(path, "--state")
    kind = None
    if doc is not None:
        if "maximal" in doc:
            kind, arr = "maximal", vector_from(doc["maximal"], f"{what}: 'maximal'")
        elif "minimal" in doc:
            kind, arr = "minimal", vector_from(doc["minimal"], f"{what}: 'minimal'")
        else:
            raise InputError(f"{what}: expected a JSON object with a 'maximal' or 'minimal' list (or a plain list of numbers)")
    else:
        finite_vector(arr, what)
        n_max, n_min = 13 * mech.nb, 2 * mech.nf
        if arr.size == n_max and arr.size == n_min:
            raise InputError(f"{what}: {arr.size} numbers fit both a maximal and a minimal state; use JSON {{\"maximal\": [...]}} or {{\"minimal\": [...]}}")
        if arr.size == n_max:
            kind = "maximal"
        elif arr.size == n_min:
            kind = "minimal"
        else:
            raise InputError(
                f"{what}: {arr.size} numbers; expected {n_max} (maximal: 13 per body, x v q omega) "
                f"or {n_min} (minimal: per joint [coordinates; velocities])"
            )
    if kind == "maximal":
        return _checked_maximal(mech, arr, what), None
    y = _checked_minimal(mech, arr, what)
    return minimal_to_maximal(mech, y), y
