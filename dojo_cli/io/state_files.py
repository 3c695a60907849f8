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
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli import _core
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


def check_start_options(state: Path | None, run: Path | None, index: int | None) -> None:
    """Refuse a start given twice (``--state`` and ``--from``) or ``--index`` without ``--from``
    (``stored_knot`` refuses ``--from`` without ``--index``).

    Raises:
        InputError: naming the options.
    """
    if state is not None and run is not None:
        raise InputError("--state and --from: give one of them, not both")
    if index is not None and run is None:
        raise InputError("--index needs --from RUN.h5")


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
    n = stored.trajectory.x.shape[0]
    if n == 0:
        raise InputError(f"--from {run}: the run holds no state (its writer stopped before the initial state)")
    k = index + n if index < 0 else index
    if not 0 <= k < n:
        raise InputError(f"--index {index}: {run} holds {kind} 0..{n - 1} (or -{n}..-1 from the end)")
    return stored, k


# A stored knot's time is a whole number of the scene's timesteps when it is within this
# many steps of one (times are sums or products of the timestep: rounding, not a choice).
STEP_ALIGNMENT_TOL = 1e-6


@dataclass
class StoredStart:
    """Knot k of a stored run as the state a step or a run starts from (``--from RUN --index K``).

    Attributes:
        z: (13 nb,) the knot in Dojo's layout [x, v15, q, w15] per body (the midpoint
            velocities of the step that reached it): a step from it is the run's next step.
        knot: (13 nb,) the same knot with its velocities at t_k (storage v, omega).
        k: the knot's index in the file; step: its step number, time / timestep (the
            controller's step, t = step h for external forces and the time axis).
        time: s, the knot's time.
        stored_input: the inputs the run applied at step k, when the run took one from there
            with inputs of the scene's width; else None.
        warm_start: (nl,) the joint impulses of the step that reached the knot (what the
            run's next solve started from), when the run's joint rows are the scene's.
        angles: (nf,) minimal/q of the knot: revolute angles unwrapped through turns, where
            the run's next step measured its limits from; None when the widths differ.
        start_record: the interior point's start record of the step that reached the knot
            (``solver/start`` row k - 1: the run's next step's warm start and restart scale,
            core maximal/step.h), when the file has it and the scene's unknowns are the run's;
            None: the next step starts from Dojo's point.
        source: a phrase for messages ("state 12 of run.h5 (t = 0.12 s)").
        substeps: how many substeps the run solved its step k as (solver/substeps: 1 for a
            plain step, n for a failed step solved again as n substeps of h/n; 1 when the
            file has no such record or no step k).
    """

    z: np.ndarray
    knot: np.ndarray
    k: int
    step: int
    time: float
    stored_input: np.ndarray | None
    warm_start: np.ndarray | None
    angles: np.ndarray | None
    source: str
    substeps: int = 1
    start_record: np.ndarray | None = None


def stored_start(run: Path, index: int | None, mech, scene_name: str, warn: Callable[[str], None],
                 whole_steps: bool = False) -> StoredStart:
    """``--from RUN --index K`` of `dojo step`, `dojo gradients` and `dojo simulate`: knot K
    of the run, checked (``stored_knot``; finite), with what restarts the run's next step to
    rounding (the warm start, the unwrapped angles).

    Args:
        run, index: the options.
        mech: the scene's mechanism (its bodies must be the run's).
        scene_name: the scene's name (a run of another scene is warned about, not refused:
            continuing a run with a changed scene, a joint locked or unlocked, is the point).
        warn: called with each line for the user (the run's status note, other scene or
            timestep).
        whole_steps: refuse a knot whose time is not a whole number of the scene's
            timesteps (a run continued from it numbers its steps on); otherwise say so and
            take the nearest step.

    Raises:
        InputError: as stored_knot; knot K not finite; with whole_steps, its time not a
            whole number of the scene's timesteps.
        StorageError: no such file, a damaged file.
    """
    stored, k = stored_knot(run, index, [b.name for b in mech.bodies], warn, "states")
    if stored.attrs.get("scene_name") != scene_name:
        warn(f"--from {run}: written by scene {stored.attrs.get('scene_name')!r}, starting scene {scene_name!r}")
    h = mech.timestep
    if not math.isclose(stored.timestep, h):
        warn(f"--from {run}: timestep {stored.timestep:g} s, the scene's is {h:g} s")
    traj = stored.trajectory
    z = traj.state(k)
    knot = np.concatenate([traj.x[k], traj.v[k], traj.q[k], traj.omega[k]], axis=1).reshape(-1)
    if np.all(np.isfinite(knot)) and not np.all(np.isfinite(z)):
        # a carried state (simulation.substeps): exact, but no step of h starts from it
        raise InputError(f"--index {index}: state {k} of {run} lies inside a stretch of steps solved as substeps "
                         "(solver/substeps; its spin is past what a step of the timestep can start from, so it has no "
                         "midpoint velocities v_mid, omega_mid); continue from a state before or after the stretch")
    if not (np.all(np.isfinite(z)) and np.all(np.isfinite(knot))):
        failed = f" (step {k - 1}: {traj.status[k - 1]!r})" if k > 0 else ""
        raise InputError(f"--index {index}: state {k} of {run} is not finite{failed}; pick an earlier state")
    t = float(traj.time[k])
    step = int(round(t / h))
    if abs(t - step * h) > STEP_ALIGNMENT_TOL * h:
        message = (f"--from {run}: state {k} is at t = {t:.9g} s, not a whole number of the scene's timestep "
                   f"{h:g} s ({t / h:.6g} steps)")
        if whole_steps:
            raise InputError(f"{message}; the steps from it would not line up with t = step * timestep")
        warn(f"{message}; taken as step {step} (t = {step * h:g} s) for the controller and external forces")
    u = None
    if k < traj.inputs.shape[0] and traj.inputs.shape[1] == mech.nu:
        u = np.asarray(traj.inputs[k], dtype=float)
    impulses = traj.impulses
    warm = None
    if k > 0 and impulses is not None and impulses.ndim == 2 and impulses.shape[1] == mech.nl:
        warm = np.asarray(impulses[k - 1], dtype=float)
        warm = warm if np.all(np.isfinite(warm)) else None
    angles = None
    if traj.minimal_q.ndim == 2 and traj.minimal_q.shape[1] == mech.nf and np.all(np.isfinite(traj.minimal_q[k])):
        angles = np.asarray(traj.minimal_q[k], dtype=float)
    substeps = 1
    if traj.substeps is not None and k < len(traj.substeps):
        substeps = int(traj.substeps[k])
    record = None
    starts = traj.solver_start
    if k > 0 and starts is not None and starts.ndim == 2 and starts.shape[1] == _core.start_record_size(mech.core):
        record = np.asarray(starts[k - 1], dtype=float)
    return StoredStart(z, knot, k, step, t, u, warm, angles, f"state {k} of {run} (t = {t:g} s)", substeps, record)


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


# --- minimal states in an order (`dojo dynamics --state`, docs/minimal.md) ---


def names_shown(names: list[str], limit: int = 12) -> str:
    """The first ``limit`` names, and how many there are in all when more."""
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def read_minimal_state_file(model, path: Path, order: str) -> tuple[np.ndarray, str]:
    """(x = [q; v] in the nominal order, the order the file was read in) from a
    ``dojo dynamics --state`` file: JSON (a list, or {"q": ..., "v": ...} as lists or
    name: value objects; ``--json`` output too), NPZ (arrays q and v, or x), CSV/TXT (nx
    numbers) or a ``dojo dynamics -o`` file, its numbers in ``order`` unless the file says
    its own. Quaternions are normalised (InputError when one is off unit length by more
    than QUAT_TOL).

    Args:
        model: the minimal model (dojo_cli.minimal.build_model).
        order: the --order the numbers are in when the file does not say.
    """
    from dojo_cli import minimal

    x_file, file_order = _ordered_state(model, path, order)
    if file_order == "mujoco" or order == "mujoco":
        q_nominal = x_file[: model.nq]  # the mujoco and nominal orders share the configuration
    else:
        q_nominal = None
    x = minimal.change_order(model, x_file, file_order, "nominal", kind="state", q=q_nominal)
    return _checked_quaternions(model, x, f"--state {path}"), file_order


def _vector_by_names(value: Any, names: list[str], what: str) -> np.ndarray:
    """A vector given as a list (in ``names``' order), {"names": [...], "data": [...]} or {name: number}."""
    n = len(names)
    if isinstance(value, dict) and "data" in value and "names" in value:
        given = value["names"]
        data = vector_from(value["data"], what)
        if not isinstance(given, list) or len(given) != data.size:
            raise InputError(f"{what}: 'names' and 'data' must be lists of the same length")
        value = dict(zip((str(g) for g in given), data.tolist()))
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise InputError(f"{what}: unknown name {unknown[0]!r} (known: {names_shown(names)})")
        missing = [k for k in names if k not in value]
        if missing:
            raise InputError(f"{what}: no value for {names_shown(missing, 6)} (every one of the {n} names is needed)")
        return vector_from([value[k] for k in names], what)
    if not isinstance(value, (list, np.ndarray)) or (isinstance(value, list) and not all(_is_number(t) for t in value)):
        raise InputError(f"{what}: expected a list of {n} numbers, {{name: number}} or {{\"names\": [...], \"data\": [...]}}")
    arr = vector_from(value, what)
    if arr.size != n:
        raise InputError(f"{what}: {arr.size} numbers; expected {n} ({names_shown(names)})")
    return arr


def _ordered_state(model, path: Path, order: str) -> tuple[np.ndarray, str]:
    """(x in the order of the file, that order) from a `dojo dynamics --state` file.

    A file that says its order (a `dojo dynamics` output, a JSON object with "order") is
    read in it; otherwise in ``order``.
    """
    from dojo_cli import minimal
    from dojo_cli.io.dynamics_files import read_dynamics_file
    from dojo_cli.minimal.orders import BUILTIN_ORDERS as ORDERS

    check_state_file(path, "--state")
    what = f"--state {path}"
    suffix = path.suffix.lower()
    file_order = order
    q = v = x = None
    cq, cv, _ = minimal.order_names(model, order)
    try:
        if suffix == ".json":
            doc = read_json(path, "--state")  # NaN and Infinity come back as NonFinite
            if isinstance(doc, dict):
                file_order = doc.get("order", order)
                if file_order not in ORDERS:
                    raise InputError(f"{what}: 'order': must be one of {', '.join(ORDERS)}, got {str(file_order)[:40]!r}")
                cq, cv, _ = minimal.order_names(model, file_order)
                if "x" in doc:
                    x = doc["x"]
                elif "q" in doc and "v" in doc:
                    q, v = doc["q"], doc["v"]
                else:
                    raise InputError(f"{what}: expected a JSON list of nx = {model.nx} numbers or an object with 'q' and 'v'")
                if any(isinstance(t, NonFinite) for t in _leaves([x, q, v])):
                    raise InputError(f"{what}: contains non-finite numbers (NaN or infinity)")
            else:
                x = doc
        elif suffix in (".h5", ".hdf5"):
            content = read_dynamics_file(path)
            file_order = content.meta.get("order", order)
            cq, cv, _ = minimal.order_names(model, file_order if file_order in ORDERS else order)
            q, v = (content.vectors.get(k) for k in ("q", "v"))
            if q is None or v is None:
                raise InputError(f"{what}: no 'q' and 'v' vectors (not written by `dojo dynamics -o`?)")
            q, v = {"names": q[1], "data": q[0].tolist()}, {"names": v[1], "data": v[0].tolist()}
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            if "meta" in arrays:
                meta = json.loads(str(arrays["meta"]))
                file_order = meta.get("order", order) if isinstance(meta, dict) else order
                if file_order not in ORDERS:
                    raise InputError(f"{what}: meta 'order': must be one of {', '.join(ORDERS)}")
                cq, cv, _ = minimal.order_names(model, file_order)
            if "x" in arrays:
                x = arrays["x"]
            elif "q" in arrays and "v" in arrays:
                q, v = arrays["q"], arrays["v"]
                if "q_names" in arrays and "v_names" in arrays:
                    q = {"names": [str(n) for n in arrays["q_names"]], "data": np.asarray(q, dtype=float).tolist()}
                    v = {"names": [str(n) for n in arrays["v_names"]], "data": np.asarray(v, dtype=float).tolist()}
            else:
                raise InputError(f"{what}: expected arrays 'q' and 'v' (or 'x'); it has {', '.join(sorted(arrays)) or 'none'}")
            for a in (x, q, v):
                if isinstance(a, np.ndarray) and a.dtype.kind not in "iuf":
                    raise InputError(f"{what}: holds {a.dtype} values, not real numbers")
        else:
            x = read_plain_numbers(path)
    except InputError:
        raise
    except StorageError as exc:
        raise InputError(f"--state {exc}") from None
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise InputError(f"{what}: cannot read numbers ({exc})") from None
    if x is not None:
        if isinstance(x, list):
            for i, t in enumerate(x):
                if isinstance(t, NonFinite):
                    raise InputError(f"{what}: entry [{i}]: must be a finite number, got {t}")
                if not _is_number(t):
                    raise InputError(f"{what}: entry [{i}]: must be a number, got {json.dumps(t)[:40] if not isinstance(t, str) else repr(t[:40])}")
        elif not isinstance(x, np.ndarray):
            raise InputError(f"{what}: expected a JSON list of nx = {model.nx} numbers or an object with 'q' and 'v'")
        arr = vector_from(x, what)
        if arr.size != model.nx:
            raise InputError(
                f"{what}: {arr.size} numbers; a state x = [q; v] of this model has nx = {model.nx} "
                f"(nq = {model.nq}: {names_shown(cq, 8)}; nv = {model.nv}: {names_shown(cv, 8)})"
            )
        return arr, file_order
    return np.concatenate([_vector_by_names(q, cq, f"{what}: 'q'"), _vector_by_names(v, cv, f"{what}: 'v'")]), file_order


def _is_number(t) -> bool:
    return isinstance(t, (int, float)) and not isinstance(t, bool)


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _checked_quaternions(model, x: np.ndarray, what: str) -> np.ndarray:
    """x (nominal order) with its quaternions normalised; InputError when one is far from unit length."""
    from dojo_cli.minimal.model import ROT_QUATERNION

    x = x.copy()
    for tj in model.joints:
        if tj.rot != ROT_QUATERNION:
            continue
        s = slice(tj.q.start + tj.n_trans, tj.q.stop)
        norm = float(np.linalg.norm(x[s]))
        if abs(norm - 1.0) > QUAT_TOL:
            names = ", ".join(model.config_names[s])
            raise InputError(f"{what}: joint {tj.name!r}: [{names}] must be a unit quaternion, |q| = {norm:.9g}")
        x[s] /= norm
    return x
