"""The walk of a file's structure before it is read (storage.probe._probe_structure) in a process
with other threads: Dask workers, notebooks, meshcat servers.

The child is forked holding h5py's global lock, so a thread busy in h5py cannot leave it
waiting; a verdict the fork itself may have caused (a crash, a child waiting at the
deadline) is checked once more in a fresh interpreter (``python -m dojo_cli.io.storage.hdf5_walk``),
whose verdict stands. Deadlines are shortened where a loop is involved; nothing here is
timed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.errors import StorageError
from dojo_cli.io.storage import probe as structure_probe
from dojo_cli.io.storage.hdf5_walk import walk_structure
from dojo_cli.io.storage import check_hdf5_structure, read_storage
from tests.io.damaged import zero_global_heap_free_space

runner = CliRunner()
STEPS = 20
ROOT = Path(__file__).resolve().parents[2]
# Probes of a good file in a row, with a thread busy in h5py: each fork meets the thread
# somewhere else in its reads.
READS_IN_A_ROW = 25
# The deadline of the tests that involve a loop or a waiting child (the real one is 10 s).
SHORT_DEADLINE = 0.5
# How long the busy thread and the tests wait for each other at most (a stuck thread fails
# the test instead of hanging it).
THREAD_WAIT_SECONDS = 30.0


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A 20-step pendulum run (a small, good storage file)."""
    path = tmp_path_factory.mktemp("probe") / "pendulum.h5"
    res = runner.invoke(app, ["simulate", "pendulum", "--steps", str(STEPS), "-o", str(path), "-q"])
    assert res.exit_code == 0, res.output
    return path


@pytest.fixture
def loop_file(run, tmp_path) -> Path:
    """The run with a global heap HDF5 never finishes parsing (tests/io/damaged.py), and the
    check of its bytes that would say so at once turned off: only the walk finds it."""
    path = tmp_path / "loop.h5"
    path.write_bytes(run.read_bytes())
    zero_global_heap_free_space(path)
    return path


@pytest.fixture
def probe(monkeypatch):
    """Every probe walks again (no memory of files that walked fine), with the byte check
    of the known loop off; the walks are recorded: ``walks["fork"]`` and ``walks["fresh"]``
    list the outcomes of each kind."""
    monkeypatch.setattr(structure_probe, "_PROBED", {})
    monkeypatch.setattr(structure_probe, "global_heap_problem", lambda p: None)
    walks: dict[str, list] = {"fork": [], "fresh": []}
    forked, fresh = structure_probe._forked_walk, structure_probe._fresh_walk

    def recorded(kind, walk):
        def wrapper(p):
            out = walk(p)
            walks[kind].append(out)
            return out

        return wrapper

    monkeypatch.setattr(structure_probe, "_forked_walk", recorded("fork", forked))
    monkeypatch.setattr(structure_probe, "_fresh_walk", recorded("fresh", fresh))
    return walks


@pytest.fixture
def short_deadline(monkeypatch):
    """The probe's deadline shortened, for the tests that wait for it. (Not for the good
    file: a child that got too little CPU in a short deadline on a loaded machine is walked
    again, which those tests would take for a doubt.)"""
    monkeypatch.setattr(structure_probe, "_PROBE_SECONDS", SHORT_DEADLINE)


@pytest.fixture
def busy_h5py(tmp_path):
    """A thread reading another HDF5 file through h5py without a pause, as a Dask task or a
    notebook's viewer would: it is inside h5py (holding its lock) most of the time. Yields
    the count of its reads; it is stopped and joined after the test (a daemon thread still
    in h5py when the interpreter exits can crash it)."""
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["data"] = np.random.default_rng(0).random((100, 100))
        f.attrs["note"] = "variable-length text, in the global heap"
    stop = threading.Event()
    started = threading.Event()
    reads = [0]
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                with h5py.File(other, "r", locking=False) as f:
                    f["data"][...]
                    f.attrs["note"]
                reads[0] += 1
                started.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the fixture
            errors.append(exc)
            started.set()

    thread = threading.Thread(target=read, name="busy-h5py", daemon=True)
    thread.start()
    assert started.wait(THREAD_WAIT_SECONDS), "the busy thread never read its file"
    yield reads
    stop.set()
    thread.join(THREAD_WAIT_SECONDS)
    assert not thread.is_alive(), "the busy thread did not stop"
    assert not errors, f"the busy thread failed: {errors[0]!r}"


@pytest.fixture
def held_lock():
    """A lock (not h5py's) held by another thread for the whole test: a forked child
    inherits it held, by a thread it does not have, and waits on it forever."""
    lock = threading.Lock()
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(THREAD_WAIT_SECONDS)

    thread = threading.Thread(target=hold, name="lock-holder", daemon=True)
    thread.start()
    assert taken.wait(THREAD_WAIT_SECONDS)
    yield lock
    release.set()
    thread.join(THREAD_WAIT_SECONDS)


def fake_walk_module(monkeypatch, tmp_path: Path, body: str) -> None:
    """Make the fresh interpreter run ``body`` instead of dojo_cli.io.storage.hdf5_walk (a module
    on PYTHONPATH, which the child inherits): how it ends is what the verdict is made of."""
    (tmp_path / "fake_walk.py").write_text(textwrap.dedent(body))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(structure_probe, "_WALK_MODULE", "fake_walk")


def crash_the_fresh_walk(monkeypatch, tmp_path: Path, signame: str) -> None:
    """The fresh interpreter starts its walk, then dies of signal ``signame``."""
    fake_walk_module(monkeypatch, tmp_path, f"""\
        import os, signal
        print("walking", flush=True)
        os.kill(os.getpid(), signal.{signame})
        """)


def crash_the_forked_walk(monkeypatch) -> None:
    """The forked child dies of SIGSEGV where it would walk."""
    monkeypatch.setattr(structure_probe, "_walk_structure", lambda p: os.kill(os.getpid(), signal.SIGSEGV))


def block_the_forked_walk(monkeypatch, lock: threading.Lock) -> None:
    """The forked child takes ``lock`` before it walks (as the walk needs some library's
    lock): held at the fork by another thread, it never comes free in the child."""

    def walk(p):
        lock.acquire()
        walk_structure(p, structure_probe._WALK_NAMES)

    monkeypatch.setattr(structure_probe, "_walk_structure", walk)


LOOP_MESSAGE = "{path}: damaged {what}: HDF5 did not finish reading its structure within 0.5 s (a loop in damaged metadata)"
CRASH_MESSAGE = "{path}: damaged {what}: HDF5 crashed reading its structure ({signal})"


# ---------------------------------------------------------------- good files


def test_a_good_file_reads_while_a_thread_is_busy_in_h5py(run, probe, busy_h5py):
    """No false "damaged", and no doubt either: every forked walk finishes (it is forked
    while h5py's lock is held, so the busy thread is never caught inside HDF5), and no
    fresh interpreter is needed."""
    assert threading.active_count() > 1
    reads_before = busy_h5py[0]
    for k in range(READS_IN_A_ROW):
        structure_probe._PROBED.clear()  # (walked again each time)
        stored = read_storage(run)
        assert stored.steps_completed == STEPS, f"read {k}"
    assert [w.outcome for w in probe["fork"]] == [structure_probe._WalkOutcome.FINISHED] * READS_IN_A_ROW
    assert probe["fresh"] == [], "a fresh interpreter was needed"
    assert busy_h5py[0] > reads_before, "the busy thread read nothing meanwhile"


def test_the_child_is_forked_holding_h5pys_lock(run, probe, monkeypatch):
    """What keeps other threads out of HDF5 at the fork: the lock is held across it (and
    only across it: released in the parent right after)."""
    held_at_fork = []
    fork = os.fork

    def spy() -> int:
        held_at_fork.append(structure_probe._HDF5_LOCK._is_owned())
        return fork()

    monkeypatch.setattr(os, "fork", spy)
    read_storage(run)
    assert structure_probe._HDF5_LOCK is h5py._objects.phil
    assert held_at_fork == [True]
    assert not structure_probe._HDF5_LOCK._is_owned()


def test_the_fork_warning_of_python_312_is_not_an_error(run, probe, busy_h5py, monkeypatch):
    """Python 3.12+ warns (DeprecationWarning) in the parent of a fork made with threads
    running, after the child exists; under ``-W error`` that warning would raise out of
    os.fork with the child's pid lost. Here os.fork warns as 3.12's does (this may be 3.11):
    the probe still walks, finishes and reaps its child."""
    import warnings

    fork = os.fork
    children = []

    def warning_fork() -> int:
        pid = fork()
        if pid:
            children.append(pid)
            warnings.warn("This process is multi-threaded, use of fork() may lead to deadlocks in the child.",
                          DeprecationWarning, stacklevel=2)
        return pid

    monkeypatch.setattr(os, "fork", warning_fork)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stored = read_storage(run)
    assert stored.steps_completed == STEPS
    assert [w.outcome for w in probe["fork"]] == [structure_probe._WalkOutcome.FINISHED]
    assert len(children) == 1
    with pytest.raises(ChildProcessError):  # reaped by the probe
        os.waitpid(children[0], os.WNOHANG)


# ---------------------------------------------------------------- damaged files


def test_a_loop_is_reported_while_a_thread_is_busy_in_h5py(loop_file, probe, short_deadline, busy_h5py):
    assert threading.active_count() > 1
    for _ in range(2):  # (a file found damaged is walked again: only good files are remembered)
        with pytest.raises(StorageError) as info:
            read_storage(loop_file)
        assert str(info.value) == LOOP_MESSAGE.format(path=loop_file, what="storage file")
    with pytest.raises(StorageError) as info:
        check_hdf5_structure(loop_file)
    assert str(info.value) == LOOP_MESSAGE.format(path=loop_file, what="HDF5 file")
    # a spinning child is a loop at once; one that got little of a loaded machine's CPU is
    # walked again, and loops again
    assert all(w.outcome is structure_probe._WalkOutcome.TIMED_OUT for w in probe["fork"] + probe["fresh"])


def test_a_crash_the_fresh_interpreter_confirms_is_reported(run, tmp_path, probe, busy_h5py, monkeypatch):
    crash_the_forked_walk(monkeypatch)
    crash_the_fresh_walk(monkeypatch, tmp_path, "SIGSEGV")
    with pytest.raises(StorageError) as info:
        read_storage(run)
    assert str(info.value) == CRASH_MESSAGE.format(path=run, what="storage file", signal="SIGSEGV")
    assert [w.outcome for w in probe["fresh"]] == [structure_probe._WalkOutcome.CRASHED]


def test_a_crash_of_the_forked_child_alone_is_not_damage(run, probe, busy_h5py, monkeypatch):
    """In a threaded process a child can die of what another thread left half-changed: the
    fresh interpreter walks the file through, and the file reads."""
    crash_the_forked_walk(monkeypatch)
    assert read_storage(run).steps_completed == STEPS
    assert [w.outcome for w in probe["fork"]] == [structure_probe._WalkOutcome.CRASHED]
    assert [w.outcome for w in probe["fresh"]] == [structure_probe._WalkOutcome.FINISHED]


def test_a_single_threaded_process_keeps_the_forks_verdict(run, probe, monkeypatch, single_threaded_probe):
    crash_the_forked_walk(monkeypatch)
    with pytest.raises(StorageError) as info:
        read_storage(run)
    assert str(info.value) == CRASH_MESSAGE.format(path=run, what="storage file", signal="SIGSEGV")
    assert probe["fresh"] == []


# ---------------------------------------------------------------- a child waiting on a lock


def test_a_child_waiting_on_a_lock_is_walked_again_and_the_file_reads(run, probe, short_deadline, held_lock, monkeypatch):
    block_the_forked_walk(monkeypatch, held_lock)
    assert read_storage(run).steps_completed == STEPS
    (fork,) = probe["fork"]
    assert fork.outcome is structure_probe._WalkOutcome.TIMED_OUT
    assert fork.cpu_seconds < structure_probe._BLOCKED_CPU_FRACTION * SHORT_DEADLINE, f"CPU {fork.cpu_seconds:.3f} s"
    assert [w.outcome for w in probe["fresh"]] == [structure_probe._WalkOutcome.FINISHED]


def test_a_waiting_child_then_a_fresh_loop_is_a_loop(loop_file, probe, short_deadline, held_lock, monkeypatch):
    block_the_forked_walk(monkeypatch, held_lock)
    with pytest.raises(StorageError) as info:
        read_storage(loop_file)
    assert str(info.value) == LOOP_MESSAGE.format(path=loop_file, what="storage file")
    assert [w.outcome for w in probe["fresh"]] == [structure_probe._WalkOutcome.TIMED_OUT]


def test_a_waiting_child_then_a_fresh_crash_is_a_crash_not_a_loop(run, tmp_path, probe, short_deadline, held_lock, monkeypatch):
    block_the_forked_walk(monkeypatch, held_lock)
    crash_the_fresh_walk(monkeypatch, tmp_path, "SIGABRT")
    with pytest.raises(StorageError) as info:
        read_storage(run)
    assert str(info.value) == CRASH_MESSAGE.format(path=run, what="storage file", signal="SIGABRT")


# ---------------------------------------------------------------- how a fresh walk ends


# How a fresh interpreter's walk ends (its module's body), and what that says.
FRESH_ENDINGS = [
    ("finished", 'print("walking", flush=True)\nprint("done", flush=True)\n', "FINISHED", 0),
    # the start-up (interpreter, h5py) is not timed as the walk: a slow one is no loop
    ("slow-start", 'import time\ntime.sleep(1.5)\nprint("walking", flush=True)\nprint("done", flush=True)\n',
     "FINISHED", 0),
    ("loop", 'print("walking", flush=True)\nwhile True:\n    pass\n', "TIMED_OUT", 0),
    ("crash", 'import os, signal\nprint("walking", flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n',
     "CRASHED", signal.SIGSEGV),
    # a SIGKILL before the deadline is not ours: the kernel's (out of memory), a crash
    ("killed", 'import os, signal\nprint("walking", flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n',
     "CRASHED", signal.SIGKILL),
    # stopped from outside, or failed before the walk: nothing said about the file
    ("terminated", 'import os, signal\nprint("walking", flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n',
     "UNKNOWN", 0),
    ("crash-before-walk", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "UNKNOWN", 0),
    ("exit-1", "raise SystemExit(1)\n", "UNKNOWN", 0),
]


@pytest.mark.parametrize("name,body,outcome,signum", FRESH_ENDINGS, ids=[e[0] for e in FRESH_ENDINGS])
def test_how_a_fresh_walk_ended(run, tmp_path, monkeypatch, short_deadline, name, body, outcome, signum):
    fake_walk_module(monkeypatch, tmp_path, body)
    walk = structure_probe._fresh_walk(run)
    assert walk.outcome is structure_probe._WalkOutcome[outcome], f"{name}: {walk}"
    assert walk.signum == signum, f"{name}: {walk}"


# ---------------------------------------------------------------- python -m dojo_cli.io.storage.hdf5_walk


def hdf5_walk(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dojo_cli.io.storage.hdf5_walk", *map(str, args)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, **kwargs)


def test_hdf5_walk_exits_0_once_the_walk_is_done(run, tmp_path):
    text = tmp_path / "text.h5"
    text.write_text("not HDF5\n")
    for path in (run, text, tmp_path / "missing.h5"):  # (errors are the real read's to report)
        res = hdf5_walk(path)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), path
    res = hdf5_walk("--report", run, "time", "x", "no/such/dataset")
    assert (res.returncode, res.stdout) == (0, "walking\ndone\n")


def test_hdf5_walk_never_ends_on_a_loop(loop_file):
    child = subprocess.Popen([sys.executable, "-m", "dojo_cli.io.storage.hdf5_walk", "--report", str(loop_file)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert child.stdout.readline() == "walking\n"
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(SHORT_DEADLINE)  # (a walk of this small file takes milliseconds)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL


def test_hdf5_walk_exits_by_the_signal_hdf5_crashes_with(run):
    """A crash is not caught or turned into an exit code: the caller sees the signal."""
    script = textwrap.dedent(f"""\
        import os, signal, sys
        from dojo_cli.io.storage import hdf5_walk
        hdf5_walk.walk_structure = lambda *args: os.kill(os.getpid(), signal.SIGSEGV)
        sys.exit(hdf5_walk.main([{str(run)!r}]))
        """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, cwd=ROOT)
    assert res.returncode == -signal.SIGSEGV, res.stderr


# ---------------------------------------------------------------- a sweep on a Dask cluster

SWEEP = """\
scene: scene.yaml
set: {duration: 0.05}
grid:
  bodies.0.mass: [1.0, 2.0]
metrics:
  x: "x[-1, link, 0]"
"""


def test_a_sweep_on_a_dask_cluster_reports_a_damaged_input_table(tmp_path, probe, short_deadline):
    """The runs of a sweep on a Dask cluster execute in worker threads; a schedule table
    HDF5 loops on is reported in each run's row, instead of hanging the worker."""
    from distributed import LocalCluster

    from dojo_cli.sweep import manifest

    table = tmp_path / "u.h5"
    with h5py.File(table, "w") as f:
        f["inputs"] = np.zeros((10, 1))
        f.attrs["note"] = "variable-length text, in the global heap"
    zero_global_heap_free_space(table)
    scene = (ROOT / "scenes" / "basics" / "pendulum.yaml").read_text() + "controller: {type: schedule, file: u.h5}\n"
    (tmp_path / "scene.yaml").write_text(scene)
    (tmp_path / "sweep.yaml").write_text(SWEEP)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        res = runner.invoke(app, ["sweep", str(tmp_path / "sweep.yaml"), "-o", str(tmp_path / "out"), "--scheduler",
                                  cluster.scheduler_address])
    assert res.exit_code == 4, res.output  # done, some runs failed
    _, rows = manifest.read_csv(tmp_path / "out" / "manifest.csv")
    assert [r["status"] for r in rows] == ["failed", "failed"]
    for row in rows:
        assert row["error"].endswith(LOOP_MESSAGE.format(path=table, what="HDF5 file")), row["error"]
    assert probe["fork"], "no walk of the table"


def test_a_read_after_jax_started_says_nothing_about_the_fork(run, monkeypatch):
    """JAX (dojo_cli.jax) warns at every fork of a process that uses it that the fork "will
    likely lead to a deadlock"; the probe's child only walks and leaves by os._exit, so a
    user reading a storage file saw that warning (as "Exception ignored", with a traceback,
    under -W error) for nothing. The probe silences that one warning around its fork."""
    import jax.numpy as jnp

    jnp.zeros(1).block_until_ready()  # JAX's backend and its threads started
    monkeypatch.setattr(structure_probe, "_PROBED", {})  # (walk again, even if this file walked before)
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", dropped.append)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert read_storage(run).steps_completed == STEPS
    assert dropped == [], [str(u.exc_value) for u in dropped]
