"""Every reading command on damaged, truncated, tampered and foreign storage files (issue 11,
item 4): a clean exit 3 (2 for a well-formed HDF5 file that is not a dojo file) naming the
file and what is wrong, never a traceback; and ``read_storage`` validates once, centrally.

The broken files are copies of real 20-step runs (tests/io/damaged.py makes them).
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.errors import StorageError
from dojo_cli.io.storage import probe as structure_probe
from dojo_cli.io.storage import NotStorageFileError, StorageWriter, read_storage
from dojo_cli.model.trajectory import EXTRA_FIELDS
from dojo_cli.scene.stored_run import run_mechanism
from tests.io.damaged import DAMAGED, FOREIGN, READABLE, SCENE_READERS, damaged_cases, zero_global_heap_free_space

runner = CliRunner()
COMMANDS = ("energy", "contacts", "plot", "replay", "step", "gradients")
STEPS = 20


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, list]]:
    """scene -> (its 20-step run, the broken copies)."""
    base = tmp_path_factory.mktemp("damaged")
    out = {}
    for scene in ("pendulum", "box"):
        path = base / f"{scene}.h5"
        res = invoke("simulate", scene, "--steps", STEPS, "-o", path, "-q")
        assert res.exit_code == 0, res.output
        out[scene] = (path, damaged_cases(path, base / scene, contacts=scene == "box"))
    return out


def command_args(command: str, scene: str, path: Path, tmp: Path) -> tuple:
    return {
        "energy": ("energy", path),
        "contacts": ("contacts", path),
        "plot": ("plot", path, "--png", tmp / "out.png"),
        "replay": ("replay", path, "--html", tmp / "out.html"),
        "step": ("step", scene, "--from", path, "--index", -1),
        "gradients": ("gradients", scene, "--from", path, "--index", 0),
    }[command]


def judge(case, command: str, scene: str, res) -> str | None:
    """What is wrong with a command's answer to a case, or None."""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return f"traceback: {type(res.exception).__name__}: {res.exception}"
    if "Traceback" in res.output:
        return "a traceback in the output"
    no_contacts = command == "contacts" and scene == "pendulum"
    expected = case.expected(command)
    if no_contacts and (expected == READABLE or case.scene_only):
        expected = 2  # a readable run without contact records: said before its scene is read
    allowed = {expected} if expected >= 0 else {READABLE, DAMAGED} | ({2} if no_contacts else set())
    if res.exit_code not in allowed:
        return f"exit {res.exit_code}, expected {sorted(allowed)}: {res.stderr.strip()[-300:]}"
    if res.exit_code in (DAMAGED, FOREIGN) and not (no_contacts and "no contact records" in res.stderr):
        first = res.stderr.strip().splitlines()[0] if res.stderr.strip() else ""
        if not first.startswith((str(case.path), f"--from {case.path}")):
            return f"the message does not start with the file: {first!r}"
        if expected in (DAMAGED, FOREIGN) and not re.search(case.message, res.stderr):
            return f"the message does not say {case.message!r}: {res.stderr.strip()[-300:]}"
    return None


@pytest.mark.long
@pytest.mark.parametrize("scene", ["pendulum", "box"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_reader_answers_every_damaged_file(runs, scene, command, tmp_path):
    _, cases = runs[scene]
    assert len(cases) > 90
    if command not in SCENE_READERS:  # they do not read the stored scene: one such case is enough
        cases = [c for c in cases if not c.scene_only or c.name == "scene-invalid"]
    problems = []
    for case in cases:
        res = invoke(*command_args(command, scene, case.path, tmp_path))
        problem = judge(case, command, scene, res)
        if problem:
            problems.append(f"{case.name}: {problem}")
    assert not problems, f"`dojo {command}` on damaged copies of a {scene} run:\n" + "\n".join(problems)


def test_read_storage_validates_every_case(runs):
    """The library's own answer: NotStorageFileError (exit 2) for foreign files, a
    StorageError (exit 3) naming the file for damaged ones, a consistent StoredRun else."""
    _, cases = runs["box"]
    for case in cases:
        if case.scene_only or case.exit_code == -1:
            continue
        if case.exit_code == READABLE:
            run = read_storage(case.path)
            t = run.steps_completed
            traj = run.trajectory
            assert len(traj.time) == t + 1 and traj.x.shape[0] == t + 1 and traj.inputs.shape[0] == t, case.name
            assert all(len(v) == t for v in (traj.iterations, traj.residual, traj.status)), case.name
            assert all(v.shape[0] == t for v in run.extras.values()), case.name
            assert all(getattr(traj, f) is None or getattr(traj, f).shape[0] == t for f in EXTRA_FIELDS), case.name
            continue
        with pytest.raises(StorageError) as info:
            read_storage(case.path)
        assert info.value.exit_code == case.exit_code, f"{case.name}: {info.value}"
        assert isinstance(info.value, NotStorageFileError) == (case.exit_code == FOREIGN), case.name
        assert str(info.value).startswith(str(case.path)), f"{case.name}: {info.value}"
        assert re.search(case.message, str(info.value)), f"{case.name}: {info.value}"
        assert "\n" not in str(info.value), f"{case.name}: one line"


def by_name(runs, scene: str, name: str):
    return next(c for c in runs[scene][1] if c.name == name)


@pytest.mark.parametrize(
    "name,message",
    [
        ("zero-length", "{path}: empty file (0 bytes), not a storage file (a run killed before it wrote anything?)"),
        ("text", "{path}: not an HDF5 file (no HDF5 signature), not a storage file"),
        ("directory", "{path}: is a directory, not a storage file"),
        ("fifo", "{path}: not a regular file (a device, FIFO or socket), not a storage file"),
        ("foreign-plain", "{path}: not a dojo storage file (no attribute 'format': an HDF5 file written by another program?)"),
        ("foreign-format", "{path}: not a dojo storage file (attribute 'format' is 'dojo-gradients': "
                           "a gradient file of `dojo gradients -o`)"),
        ("status-unknown", "{path}: damaged storage file: unknown status 'exploded' "
                           "(known: running, complete, complete_with_failures, interrupted, failed)"),
        ("status-control", "{path}: damaged storage file: unknown status 'complete\\n\\x1b[31m' "
                           "(known: running, complete, complete_with_failures, interrupted, failed)"),
        ("timestep-nan", "{path}: damaged storage file: attribute 'timestep' is nan, expected a finite number of seconds > 0"),
        ("timestep-text", "{path}: damaged storage file: attribute 'timestep' is '0.01', expected a finite number of seconds > 0"),
        ("status-10-of-20", "{path}: damaged storage file: dataset 'solver/status' holds 10 steps, but the run has 20 "
                            "(attribute 'steps_completed')"),
        ("contacts-short", "{path}: damaged storage file: dataset 'contacts/distance' holds 10 steps, but the run has 20 "
                           "(attribute 'steps_completed')"),
        ("x-names-2-bodies", "{path}: damaged storage file: dataset 'x' holds 1 body but its attribute 'names' lists 2"),
        ("nan-in-complete-run", "{path}: damaged storage file: status 'complete' but dataset 'x' holds a non-finite value "
                                "at state 10 (a complete run has every state finite)"),
        ("x-external-link", "{path}: damaged storage file: dataset 'x' is a link (ExternalLink), not data stored in the file"),
        ("iterations-float", "{path}: damaged storage file: dataset 'solver/iterations' holds float64, expected integers"),
    ],
)
def test_read_storage_says_what_is_wrong(runs, name, message):
    case = by_name(runs, "box", name)
    with pytest.raises(StorageError) as info:
        read_storage(case.path)
    assert str(info.value) == message.format(path=case.path)


def test_truncated_file_says_how_much_is_there(runs):
    run, cases = runs["pendulum"]
    size = run.stat().st_size
    for case in cases:
        if not case.name.startswith("truncated-"):
            continue
        with pytest.raises(StorageError) as info:
            read_storage(case.path)
        cut = case.path.stat().st_size
        text = str(info.value)
        assert text.startswith(f"{case.path}: "), text
        assert info.value.exit_code == 3
        if cut >= 48:  # the superblock is there: HDF5 knows the length it should have
            assert text == f"{case.path}: damaged storage file: truncated ({cut} of its {size} bytes are there)", text


def test_scene_errors_name_the_storage_file_and_the_line(runs):
    """A stored scene that does not validate: the loader's problems, each on the storage
    file's ``:scene`` with its line, under one line saying the file is damaged (exit 3)."""
    case = by_name(runs, "box", "scene-invalid")
    res = invoke("energy", case.path)
    assert res.exit_code == 3, res.output
    lines = res.stderr.strip().splitlines()
    assert lines[0] == f"{case.path}: damaged storage file: its 'scene' attribute is not a valid scene:"
    assert any(re.match(rf"{re.escape(str(case.path))}:scene:2: timestep: ", line) for line in lines[1:]), lines
    case = by_name(runs, "box", "scene-other-bodies")
    with pytest.raises(StorageError) as info:
        run_mechanism(read_storage(case.path))
    assert str(info.value).startswith(f"{case.path}: damaged storage file: its 'scene' attribute is not a valid scene:")


def test_stored_scene_of_other_bodies_than_the_datasets(runs, tmp_path):
    """A valid scene of other bodies than the datasets hold (same coordinates count)."""
    run, _ = runs["pendulum"]
    path = tmp_path / "swapped.h5"
    path.write_bytes(run.read_bytes())
    with h5py.File(path, "a") as f:
        f.attrs["scene"] = f.attrs["scene"].replace("name: link", "name: rod").replace("child: link", "child: rod")
    res = invoke("energy", path)
    assert res.exit_code == 3, res.output
    assert res.stderr.strip() == (
        f"{path}: damaged storage file: its datasets hold bodies ['link'], its scene has ['rod']"
    ), res.stderr


def test_running_file_is_trimmed_and_said_to_be_killed(runs):
    case = by_name(runs, "box", "running-trimmed")
    run = read_storage(case.path)
    assert run.status == "running" and not run.writing and run.ended_without_status
    assert run.steps_completed == STEPS - 3
    assert run.status_note() == f"{case.path}: the run ended without a status (killed?); {STEPS - 3} steps stored"
    for command in COMMANDS:
        res = invoke(*command_args(command, "box", case.path, case.path.parent))
        assert res.exit_code == 0, f"{command}: {res.output}"
        assert f"ended without a status (killed?); {STEPS - 3} steps stored" in res.stderr, f"{command}: {res.stderr}"


def test_failed_run_with_non_finite_states_reads(runs):
    case = by_name(runs, "box", "nan-in-failed-run")
    run = read_storage(case.path)
    assert run.status == "failed" and np.isnan(run.trajectory.x).any()
    res = invoke("step", "box", "--from", case.path, "--index", STEPS // 2)
    assert res.exit_code == 2 and f"state {STEPS // 2} of {case.path} is not finite" in res.stderr, res.output


def empty_run(path: Path, scene: str, *, initial: bool, status: str | None) -> Path:
    """A run of the scene with no step (``initial``: its initial state only; else nothing),
    finished with ``status`` (None: left running, as a killed writer leaves it)."""
    import dojo_cli as dojo
    from dojo_cli.scene.loader import builtin_scene_path

    mech = dojo.load_scene(scene)
    writer = StorageWriter(
        path, scene_yaml=builtin_scene_path(scene).read_text(),
        scene_name=scene, timestep=mech.timestep, gravity=list(mech.gravity), solver_options={}, integrator="test",
        body_names=[b.name for b in mech.bodies], minimal_q_names=mech.coordinate_names(),
        minimal_v_names=mech.coordinate_names(), input_dim=mech.nf, dojo_cli_version="test",
        extra_attrs={"contact_names": [c.name for c in mech.contacts]} if mech.nc else None,
    )
    if initial:
        z = np.asarray(dojo.initial_state(mech)).reshape(mech.nb, 13)
        writer.write_initial(0.0, z[:, 0:3], z[:, 6:10], z[:, 3:6], z[:, 10:13], np.zeros(mech.nf), np.zeros(mech.nf))
    if status is not None:
        writer.finish(status)
    else:
        writer._close_quietly()  # as a kill leaves it: no status
    return path


def test_empty_run_every_reader(tmp_path):
    """A complete run of 0 steps (its initial state only): what can be done is done."""
    path = empty_run(tmp_path / "empty.h5", "box", initial=True, status="complete")
    run = read_storage(path)
    assert run.steps_completed == 0 and len(run.trajectory.time) == 1 and run.extras == {}
    res = invoke("energy", path)
    assert res.exit_code == 2 and "no completed step; energy needs at least one" in res.stderr, res.output
    res = invoke("contacts", path)
    assert res.exit_code == 2 and "no contact records" in res.stderr, res.output
    for command in ("plot", "replay", "step", "gradients"):
        res = invoke(*command_args(command, "box", path, tmp_path))
        assert res.exit_code == 0, f"{command}: {res.output}"


def test_run_killed_before_its_initial_state(tmp_path):
    """No state at all (running, nothing flushed): every reader says so, exit 2."""
    path = empty_run(tmp_path / "nothing.h5", "pendulum", initial=False, status=None)
    run = read_storage(path)
    assert run.status == "running" and run.steps_completed == 0 and len(run.trajectory.time) == 0
    expected = {
        "energy": "no completed step", "plot": "holds no state", "replay": "holds no state",
        "step": "holds no state", "gradients": "holds no state", "contacts": "no contact records",
    }
    for command, needle in expected.items():
        res = invoke(*command_args(command, "pendulum", path, tmp_path))
        assert res.exit_code == 2 and needle in res.stderr, f"{command}: {res.output}"
        assert "ended without a status (killed?); 0 steps stored" in res.stderr, res.stderr


def _drop_file_permission_override() -> None:
    """In the child: without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (PR_CAPBSET_DROP),
    root is held to file permissions like anyone (the bounding set limits the program
    that runs next)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_unreadable_file_is_permission_denied(runs, tmp_path):
    """An unreadable file (mode 000): exit 3, 'permission denied'. As root the child runs
    without the capabilities that ignore file permissions."""
    run, _ = runs["pendulum"]
    path = tmp_path / "secret.h5"
    path.write_bytes(run.read_bytes())
    path.chmod(0)
    script = textwrap.dedent(
        """
        import sys
        from dojo_cli.cli.app import app
        sys.argv = ["dojo", "energy", sys.argv[1]]
        app()
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120,
        preexec_fn=_drop_file_permission_override, cwd=Path(__file__).resolve().parents[2],
    )
    assert res.returncode == 3, (res.returncode, res.stderr)
    assert res.stderr.strip() == f"{path}: permission denied", res.stderr


def test_a_structure_hdf5_loops_on_is_damage_not_a_hang(runs, tmp_path, monkeypatch, single_threaded_probe):
    """HDF5 loops forever on some damaged metadata. The loop known by its bytes (a global
    heap's free space of size 0: dojo_cli.io.storage.hdf5_checks) is said at once; any other is
    caught by the walk of the structure in a child process, with a deadline (shortened
    here, and shown on the same file with the byte check off)."""
    run, _ = runs["pendulum"]
    path = tmp_path / "loop.h5"
    path.write_bytes(run.read_bytes())
    zero_global_heap_free_space(path)
    res = invoke("energy", path)
    assert res.exit_code == 3, res.output
    assert res.stderr.startswith(f"{path}: damaged global heap (the HDF5 library would never finish reading it)")
    monkeypatch.setattr(structure_probe, "global_heap_problem", lambda p: None)
    monkeypatch.setattr(structure_probe, "_PROBE_SECONDS", 0.5)
    started = time.monotonic()
    for command in COMMANDS:
        res = invoke(*command_args(command, "pendulum", path, tmp_path))
        assert res.exit_code == 3, f"{command}: {res.output}"
        assert res.stderr.strip().endswith(
            f"{path}: damaged storage file: HDF5 did not finish reading its structure within 0.5 s (a loop in damaged metadata)"
        ), res.stderr
    assert time.monotonic() - started < 15.0


def test_a_structure_hdf5_crashes_on_is_damage_not_a_crash(runs, tmp_path, monkeypatch, single_threaded_probe):
    """A crash of HDF5 while it walks the structure (simulated: the child kills itself with
    SIGSEGV) is reported, and the reader's own process lives on."""
    monkeypatch.setattr(structure_probe, "_walk_structure", lambda p: os.kill(os.getpid(), signal.SIGSEGV))
    run, _ = runs["pendulum"]
    path = tmp_path / "crash.h5"
    path.write_bytes(run.read_bytes())
    with pytest.raises(StorageError) as info:
        read_storage(path)
    assert str(info.value) == f"{path}: damaged storage file: HDF5 crashed reading its structure (SIGSEGV)"
