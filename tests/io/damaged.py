"""Damaged, truncated, tampered and foreign storage files, made from a real run.

``damaged_cases(run, folder)`` copies a storage file written by `dojo simulate` and
breaks each copy one way; every case says what a reading command must answer (exit
code and a pattern of its message). tests/io/test_damaged_files.py runs every reading
command on every case; the fuzz suite can reuse the mutations.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

# Exit codes (dojo_cli.errors): a damaged or unreadable file is an I/O error (3); a
# well-formed HDF5 file that is not a dojo storage file is invalid input (2).
DAMAGED = 3
FOREIGN = 2
READABLE = 0


# Readers that use the scene stored in the file (the others use only its datasets, or
# the scene given on the command line: a broken scene attribute does not concern them).
SCENE_READERS = ("energy", "contacts", "replay")


@dataclass(frozen=True)
class Case:
    """One broken file and what every reading command must answer.

    Attributes:
        name: short id (test ids).
        path: the broken file (or directory).
        exit_code: expected exit code of every reader (0: still readable; -1: random
            damage that may miss everything that is read: 0 or 3).
        message: regular expression the error line must contain (after the file name).
        scene_only: only the stored scene is broken: readers outside SCENE_READERS work.
    """

    name: str
    path: Path
    exit_code: int
    message: str
    scene_only: bool = False

    def expected(self, command: str) -> int:
        """The exit code ``command`` must give."""
        if self.scene_only and command not in SCENE_READERS:
            return READABLE
        return self.exit_code


def _copy(run: Path, folder: Path, name: str) -> Path:
    path = folder / f"{name}.h5"
    shutil.copyfile(run, path)
    return path


def _edit(run: Path, folder: Path, name: str, edit: Callable[[h5py.File], None]) -> Path:
    path = _copy(run, folder, name)
    with h5py.File(path, "a") as f:
        edit(f)
    return path


def _replace(name: str, data, **attrs) -> Callable[[h5py.File], None]:
    """An edit that replaces dataset ``name`` by ``data`` (keeping the ``names`` attribute)."""

    def edit(f: h5py.File) -> None:
        names = f[name].attrs.get("names") if isinstance(f.get(name), h5py.Dataset) else None
        value = data(f) if callable(data) else data
        if name in f:
            del f[name]
        f[name] = value
        if names is not None:
            f[name].attrs["names"] = names
        for key, value in attrs.items():
            f[name].attrs[key] = value

    return edit


def _set_attr(name: str, value) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        f.attrs[name] = value

    return edit


def _del(name: str) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        del f[name]

    return edit


def _del_attr(name: str) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        del f.attrs[name]

    return edit


def _resize(name: str, rows: int) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        f[name].resize(rows, axis=0)

    return edit


def _nan_state(f: h5py.File) -> None:
    x = f["x"][...]
    x[len(x) // 2, 0, 2] = np.nan
    f["x"][...] = x


def _many(*edits: Callable[[h5py.File], None]) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        for e in edits:
            e(f)

    return edit


_STATES = ("time", "x", "q", "v", "omega", "v_mid", "omega_mid", "px", "pq", "minimal/q", "minimal/v")

# A scene whose YAML bombs a naive loader (nested aliases, 9 levels of 10x).
_ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)


def damaged_cases(run: Path, folder: Path, *, contacts: bool = False) -> list[Case]:
    """Broken copies of ``run`` (a complete run of >= 10 steps) in ``folder``.

    Args:
        run: a storage file written by `dojo simulate` (status complete).
        folder: where the copies go (created).
        contacts: the run has contact datasets (``box``): add the contact cases.
    """
    folder.mkdir(parents=True, exist_ok=True)
    raw = run.read_bytes()
    size = len(raw)
    with h5py.File(run, "r") as f:
        steps = int(f.attrs["steps_completed"])
        nb = f["x"].shape[1]
    cases: list[Case] = []

    def add(name: str, path: Path, code: int, message: str, scene_only: bool = False) -> None:
        cases.append(Case(name, path, code, message, scene_only))

    # ---- bytes: truncated, overwritten, empty, not HDF5 at all
    for frac in (0.002, 0.05, 0.25, 0.5, 0.75, 0.95, 0.999):
        cut = max(1, int(size * frac))
        path = folder / f"truncated_{cut}.h5"
        path.write_bytes(raw[:cut])
        add(f"truncated-{frac}", path, DAMAGED, r"truncated|damaged|not an HDF5 file|cannot (open|read)")
    rng = np.random.default_rng(11)
    for k in range(6):
        data = bytearray(raw)
        start = int(rng.integers(0, size - 256))
        data[start : start + 256] = rng.integers(0, 256, 256, dtype=np.uint8).tobytes()
        path = folder / f"overwritten_{k}.h5"
        path.write_bytes(bytes(data))
        # random bytes may land in unused space: such a file can still read; the test
        # accepts 0 for these, and requires no traceback either way
        add(f"overwritten-{k}", path, -1, "")
    data = bytearray(raw)
    data[0:8] = b"\0" * 8  # the HDF5 signature
    path = folder / "no_signature.h5"
    path.write_bytes(bytes(data))
    add("no-signature", path, DAMAGED, r"not an HDF5 file")
    path = folder / "empty.h5"
    path.write_bytes(b"")
    add("zero-length", path, DAMAGED, r"empty file")
    path = folder / "text.h5"
    path.write_text("time,x,y,z\n0,1,2,3\n")
    add("text", path, DAMAGED, r"not an HDF5 file")
    path = folder / "binary.h5"
    path.write_bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    add("binary", path, DAMAGED, r"not an HDF5 file")
    path = folder / "a_directory.h5"
    path.mkdir(exist_ok=True)
    add("directory", path, DAMAGED, r"is a directory")
    path = folder / "fifo.h5"
    if not path.exists():
        os.mkfifo(path)
    add("fifo", path, DAMAGED, r"not a regular file")

    # ---- foreign HDF5 files
    path = folder / "plain.h5"
    with h5py.File(path, "w") as f:
        f["data"] = np.zeros(3)
    add("foreign-plain", path, FOREIGN, r"not a dojo storage file")
    path = folder / "empty_hdf5.h5"
    h5py.File(path, "w").close()
    add("foreign-empty", path, FOREIGN, r"not a dojo storage file")
    add("foreign-format", _edit(run, folder, "other_format", _set_attr("format", "dojo-gradients")), FOREIGN,
        r"not a dojo storage file")
    add("format-not-text", _edit(run, folder, "format_int", _set_attr("format", 7)), FOREIGN, r"not a dojo storage file")

    # ---- attributes
    for attr in ("scene", "timestep", "status", "steps_completed", "format_version"):
        add(f"no-attr-{attr}", _edit(run, folder, f"no_{attr}", _del_attr(attr)), DAMAGED, rf"missing attribute '{attr}'")
    bad_attrs = {
        "timestep-text": ("timestep", "0.01", r"timestep"),
        "timestep-negative": ("timestep", -0.01, r"timestep"),
        "timestep-zero": ("timestep", 0.0, r"timestep"),
        "timestep-nan": ("timestep", np.nan, r"timestep"),
        "timestep-inf": ("timestep", np.inf, r"timestep"),
        "timestep-array": ("timestep", np.array([0.01, 0.02]), r"timestep"),
        "steps-negative": ("steps_completed", -5, r"steps_completed"),
        "steps-text": ("steps_completed", "20", r"steps_completed"),
        "steps-float": ("steps_completed", 20.5, r"steps_completed"),
        "steps-more": ("steps_completed", steps + 7, r"steps_completed|holds"),
        "status-unknown": ("status", "exploded", r"unknown status 'exploded'"),
        "status-int": ("status", 3, r"status"),
        "status-control": ("status", "complete\n\x1b[31m", r"status"),
        "version-text": ("format_version", "1", r"format_version"),
        "version-newer": ("format_version", 2, r"format_version 2"),
        "version-zero": ("format_version", 0, r"format_version"),
        "scene-int": ("scene", 5, r"scene"),
        "scene-opaque": ("scene", np.void(b"\xff\xfe\x00name"), r"scene"),
        "scene-bytes-not-utf8": ("scene", np.bytes_(b"name: \xff\xfe\ntimestep: 0.01\n"), r"scene"),
        "scene-not-yaml": ("scene", "name: [unclosed\n", r"scene"),
        "scene-not-mapping": ("scene", "- 1\n- 2\n", r"scene"),
        "scene-invalid": ("scene", "name: x\ntimestep: -1\nsteps: 3\nbodies: []\n", r"scene"),
        "scene-nul": ("scene", np.bytes_(b"name: a\x00b\ntimestep: 0.01\n"), r"scene"),
        "scene-control": ("scene", "name: a\x1bb\ntimestep: 0.01\n", r"scene"),
        "scene-alias-bomb": ("scene", _ALIAS_BOMB, r"scene"),
        "scene-deep": ("scene", "a: " + "[" * 2000 + "]" * 2000 + "\n", r"scene"),
        "gravity-text": ("gravity", "down", r"gravity"),
        "gravity-short": ("gravity", np.array([0.0, -9.81]), r"gravity"),
        "failed-steps-text": ("failed_steps", "none", r"failed_steps"),
        "contact-names-garbage": ("contact_names", "{not json", r"contact_names"),
    }
    # scene attributes that are text but not a valid scene: only the readers of the scene see it
    scene_texts = {"scene-not-yaml", "scene-not-mapping", "scene-invalid", "scene-nul", "scene-control",
                   "scene-alias-bomb", "scene-deep"}
    for name, (attr, value, message) in bad_attrs.items():
        add(name, _edit(run, folder, name.replace("-", "_"), _set_attr(attr, value)), DAMAGED, message,
            scene_only=name in scene_texts)
    # the scene of another mechanism (valid YAML, other bodies)
    other = (
        "name: two\ntimestep: 0.01\nsteps: 3\nbodies:\n"
        "- {name: a, shape: {type: sphere, radius: 0.1}, mass: 1}\n- {name: b, shape: {type: sphere, radius: 0.1}, mass: 1}\n"
    )
    add("scene-other-bodies", _edit(run, folder, "scene_other", _set_attr("scene", other)), DAMAGED, r"scene",
        scene_only=True)

    # ---- datasets: missing, wrong kind, wrong shape, wrong dtype, wrong length
    for name in ("time", "x", "q", "v", "omega", "minimal/q", "minimal/v", "inputs", "solver/iterations",
                 "solver/residual", "solver/status"):
        add(f"missing-{name}", _edit(run, folder, "missing_" + name.replace("/", "_"), _del(name)), DAMAGED,
            rf"missing dataset '{name}'")
    add("solver-is-dataset", _edit(run, folder, "solver_dataset", _many(_del("solver"), _replace("solver", np.zeros(3)))),
        DAMAGED, r"solver")
    add("x-is-group", _edit(run, folder, "x_group", _many(_del("x"), lambda f: f.create_group("x"))), DAMAGED, r"'x'")
    add("x-external-link", _edit(run, folder, "x_link", _many(_del("x"), lambda f: f.__setitem__(
        "x", h5py.ExternalLink("/etc/passwd", "/x")))), DAMAGED, r"'x'")
    add("time-scalar", _edit(run, folder, "time_scalar", _replace("time", 0.0)), DAMAGED, r"'time'")
    add("time-2d", _edit(run, folder, "time_2d", _replace("time", lambda f: f["time"][...][:, None])), DAMAGED, r"'time'")
    add("time-nan", _edit(run, folder, "time_nan", _replace("time", lambda f: np.where(
        np.arange(len(f["time"])) == 3, np.nan, f["time"][...]))), DAMAGED, r"'time'")
    add("x-2-bodies", _edit(run, folder, "x_wide", _replace("x", lambda f: np.concatenate([f["x"][...]] * 2, axis=1))),
        DAMAGED, r"'x'")
    add("x-names-2-bodies", _edit(run, folder, "x_names", lambda f: f["x"].attrs.__setitem__(
        "names", ["a", "b"] if nb == 1 else ["a"])), DAMAGED, r"names")
    add("x-names-missing", _edit(run, folder, "x_no_names", lambda f: f["x"].attrs.__delitem__("names")), DAMAGED,
        r"names")
    add("q-3-wide", _edit(run, folder, "q_narrow", _replace("q", lambda f: f["q"][..., :3])), DAMAGED, r"'q'")
    add("x-text", _edit(run, folder, "x_text", _replace("x", lambda f: np.full(f["x"].shape, b"abc"))), DAMAGED, r"'x'")
    add("x-complex", _edit(run, folder, "x_complex", _replace("x", lambda f: f["x"][...] + 0j)), DAMAGED, r"'x'")
    add("x-int", _edit(run, folder, "x_int", _replace("x", lambda f: f["x"][...].astype(np.int64))), DAMAGED, r"'x'")
    add("minimal-q-names", _edit(run, folder, "mq_names", lambda f: f["minimal/q"].attrs.__setitem__(
        "names", ["a", "b", "c", "d", "e", "f", "g", "h", "i"])), DAMAGED, r"minimal/q")
    add("minimal-v-wide", _edit(run, folder, "mv_wide", _replace("minimal/v", lambda f: np.zeros(
        (f["minimal/v"].shape[0], 9)))), DAMAGED, r"minimal/v")
    add("inputs-1d", _edit(run, folder, "inputs_1d", _replace("inputs", lambda f: np.zeros(f["inputs"].shape[0]))),
        DAMAGED, r"'inputs'")
    add("iterations-float", _edit(run, folder, "iter_float", _replace("solver/iterations", lambda f: np.full(
        f["solver/iterations"].shape, 1.5))), DAMAGED, r"solver/iterations")
    add("status-float", _edit(run, folder, "status_float", _replace("solver/status", lambda f: np.zeros(
        f["solver/status"].shape))), DAMAGED, r"solver/status")
    add("status-bad-utf8", _edit(run, folder, "status_utf8", _replace("solver/status", lambda f: np.full(
        f["solver/status"].shape, b"\xff\xfe", dtype="S2"))), DAMAGED, r"solver/status")
    add("status-10-of-20", _edit(run, folder, "status_short", _resize("solver/status", steps // 2)), DAMAGED,
        r"solver/status")
    add("states-longer", _edit(run, folder, "x_longer", _resize("x", steps + 5)), DAMAGED, r"'x'")
    add("inputs-empty", _edit(run, folder, "inputs_empty", _resize("inputs", 0)), DAMAGED, r"'inputs'")
    add("time-short", _edit(run, folder, "time_short", _resize("time", 3)), DAMAGED, r"'time'")
    add("nan-in-complete-run", _edit(run, folder, "nan_complete", _nan_state), DAMAGED, r"non-finite")

    def claim_rows(f: h5py.File) -> None:  # every length set to 10^9 without data: a tiny file claiming 100 GB
        f.visititems(lambda name, obj: obj.resize(10**9 + (name in _STATES), axis=0) if isinstance(obj, h5py.Dataset) else None)
        f.attrs["steps_completed"] = 10**9

    add("claims-1e9-rows", _edit(run, folder, "claims", claim_rows), DAMAGED, r"claims 1000000001 rows")
    add("impulses-short", _edit(run, folder, "impulses_short", _resize("impulses", steps // 2)), DAMAGED, r"impulses")

    # ---- readable: a damaged-looking but valid situation
    add("nan-in-failed-run", _edit(run, folder, "nan_failed", _many(_nan_state, _set_attr("status", "failed"))),
        READABLE, "")
    add("running-trimmed", _edit(run, folder, "running_uneven", _many(
        _set_attr("status", "running"), _resize("solver/status", steps - 3))), READABLE, "")
    # a finished run holds exactly steps_completed steps: more is damage too
    add("datasets-longer-than-steps", _edit(run, folder, "longer", _set_attr("steps_completed", steps - 4)), DAMAGED,
        rf"'time' holds {steps + 1} states, but the run has {steps - 4} steps")

    if contacts:
        add("contacts-short", _edit(run, folder, "contacts_short", _resize("contacts/distance", steps // 2)), DAMAGED,
            r"contacts/distance")
        add("contacts-width", _edit(run, folder, "contacts_width", _replace("contacts/distance", lambda f: np.zeros(
            (f["contacts/distance"].shape[0], 3)))), DAMAGED, r"contacts/distance")
        add("contacts-missing", _edit(run, folder, "contacts_missing", _del("contacts/normal_impulse")), DAMAGED,
            r"contacts/normal_impulse")
        add("contact-names-short", _edit(run, folder, "contact_names_short", _set_attr("contact_names", '["a"]')),
            DAMAGED, r"contact_names")
    return cases


def zero_global_heap_free_space(path: Path) -> None:
    """Set the size of the free-space object of the file's first global heap collection
    (where variable-length text lives) to 0: HDF5's parser of the collection then never
    advances (found by the fuzz suite, as zeroed bytes)."""
    data = bytearray(path.read_bytes())
    at = data.find(b"GCOL")
    end = at + struct.unpack_from("<Q", data, at + 8)[0]
    p = at + 16
    while p + 16 <= end:
        index, size = struct.unpack_from("<H", data, p)[0], struct.unpack_from("<Q", data, p + 8)[0]
        if index == 0:
            struct.pack_into("<Q", data, p + 8, 0)
            path.write_bytes(bytes(data))
            return
        p += 16 + (size + 7) // 8 * 8
    raise AssertionError("no free space in the global heap")
