"""HDF5 storage files: round trip, stop statuses, extras, crash consistency, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from dojo_cli.errors import StorageError
from dojo_cli.io.storage import StorageWriter, read_storage
from dojo_cli.io.storage import writer as storage_writer
from dojo_cli.io.storage.hdf5_checks import allocated_end, lookup3

NB, NQ, NV, NU = 2, 3, 3, 3
H = 0.01
SCENE_YAML = "format: 1\nname: test\ntimestep: 0.01\nbodies: []\n"
SOLVER_OPTIONS = {"rtol": 1e-6, "btol": 1e-4, "max_iter": 50, "undercut": float("inf")}
STATUSES = ("success", "max_iterations", "line_search_failure")


def writer_kwargs(**overrides) -> dict:
    kwargs = dict(
        scene_yaml=SCENE_YAML,
        scene_name="test",
        timestep=H,
        gravity=[0.0, 0.0, -9.81],
        solver_options=SOLVER_OPTIONS,
        integrator="dojo-variational",
        body_names=["link1", "link2"],
        minimal_q_names=["a", "b", "c"],
        minimal_v_names=["a_dot", "b_dot", "c_dot"],
        input_dim=NU,
        dojo_cli_version="0.1.0",
    )
    kwargs.update(overrides)
    return kwargs


def make_run(steps: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random arrays shaped like a run of ``steps`` steps (seeded)."""
    rng = np.random.default_rng(seed)
    return {
        "time": np.arange(steps + 1) * H,
        "x": rng.normal(size=(steps + 1, NB, 3)),
        "q": rng.normal(size=(steps + 1, NB, 4)),
        "v": rng.normal(size=(steps + 1, NB, 3)),
        "omega": rng.normal(size=(steps + 1, NB, 3)),
        "minimal_q": rng.normal(size=(steps + 1, NQ)),
        "minimal_v": rng.normal(size=(steps + 1, NV)),
        "inputs": rng.normal(size=(steps, NU)),
        "iterations": rng.integers(1, 50, size=steps),
        "residual": rng.random(steps),
        "status": np.array([STATUSES[k % 3] for k in range(steps)]),
    }


def state(run: dict, k: int) -> tuple:
    return tuple(run[n][k] for n in ("time", "x", "q", "v", "omega", "minimal_q", "minimal_v"))


def write_steps(writer: StorageWriter, run: dict, start: int, stop: int, extra=None) -> None:
    for k in range(start, stop):
        writer.write_step(
            *state(run, k + 1),
            run["inputs"][k],
            iterations=int(run["iterations"][k]),
            residual=float(run["residual"][k]),
            status=str(run["status"][k]),
            extra=extra(k) if extra else None,
        )


def assert_run_equal(stored, run: dict, steps: int) -> None:
    """Exact equality of the first ``steps`` steps (float64 round trip is lossless)."""
    assert stored.steps_completed == steps, f"steps_completed {stored.steps_completed} != {steps}"
    for name in ("time", "x", "q", "v", "omega", "minimal_q", "minimal_v"):
        got = getattr(stored.trajectory, name)
        assert got.shape == run[name][: steps + 1].shape, f"{name}: shape {got.shape}"
        np.testing.assert_array_equal(got, run[name][: steps + 1], err_msg=name)
    np.testing.assert_array_equal(stored.trajectory.inputs, run["inputs"][:steps], err_msg="inputs")
    np.testing.assert_array_equal(stored.trajectory.iterations, run["iterations"][:steps], err_msg="iterations")
    np.testing.assert_array_equal(stored.trajectory.residual, run["residual"][:steps], err_msg="residual")
    assert list(stored.trajectory.status) == list(run["status"][:steps]), "solver status"


def test_round_trip_ten_steps(tmp_path: Path):
    path = tmp_path / "run.h5"
    run = make_run(10)
    with StorageWriter(path, **writer_kwargs(flush_every=4, extra_attrs={"seed": 7, "meta": {"a": 1}})) as w:
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 10)
        assert w.steps_completed == 10
    stored = read_storage(path)
    assert_run_equal(stored, run, 10)
    failed = [k for k in range(10) if run["status"][k] != "success"]
    assert failed, "the synthetic run has failed steps"
    assert stored.status == "complete_with_failures", "complete means every step converged"
    assert stored.attrs["failed_steps"] == len(failed) and stored.attrs["first_failed_step"] == failed[0]
    assert stored.scene_yaml == SCENE_YAML
    assert stored.timestep == H
    assert stored.body_names == ["link1", "link2"]
    assert stored.minimal_q_names == ["a", "b", "c"]
    assert stored.minimal_v_names == ["a_dot", "b_dot", "c_dot"]
    assert stored.extras == {}
    attrs = stored.attrs
    assert attrs["format"] == "dojo-storage" and attrs["format_version"] == 1
    assert attrs["dojo_cli_version"] == "0.1.0" and attrs["scene_name"] == "test"
    assert attrs["integrator"] == "dojo-variational"
    assert attrs["steps_completed"] == 10
    assert attrs["solver_options"] == SOLVER_OPTIONS
    assert attrs["seed"] == 7 and attrs["meta"] == {"a": 1}
    np.testing.assert_array_equal(stored.gravity, [0.0, 0.0, -9.81])
    assert attrs["created"].endswith("+00:00"), attrs["created"]


def test_file_layout_matches_the_format(tmp_path: Path):
    """Raw h5py view: dataset names, chunked + resizable time axis, names attributes."""
    path = tmp_path / "run.h5"
    run = make_run(3)
    with StorageWriter(path, **writer_kwargs(compact_min_bytes=0)) as w:  # (compacted however small)
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 3)
    with h5py.File(path, "r") as f:
        all_converged = all(run["status"][k] == "success" for k in range(3))
        assert f.attrs["status"] == ("complete" if all_converged else "complete_with_failures")
        assert json.loads(f.attrs["solver_options"])["max_iter"] == 50
        for name, shape in {
            "time": (4,),
            "x": (4, NB, 3),
            "q": (4, NB, 4),
            "v": (4, NB, 3),
            "omega": (4, NB, 3),
            "minimal/q": (4, NQ),
            "minimal/v": (4, NV),
            "inputs": (3, NU),
            "solver/iterations": (3,),
            "solver/residual": (3,),
            "solver/status": (3,),
        }.items():
            d = f[name]
            assert d.shape == shape, f"{name}: shape {d.shape} != {shape}"
            assert d.chunks is not None and d.maxshape[0] is None, f"{name}: not resizable"
        assert f["x"].compression == "gzip"
        assert list(f["x"].attrs["names"]) == ["link1", "link2"]
        assert list(f["minimal/q"].attrs["names"]) == ["a", "b", "c"]
        assert h5py.check_string_dtype(f["solver/status"].dtype) is not None


def test_keyboard_interrupt_marks_interrupted_and_keeps_steps(tmp_path: Path):
    path = tmp_path / "run.h5"
    run = make_run(10)
    with pytest.raises(KeyboardInterrupt):
        with StorageWriter(path, **writer_kwargs(flush_every=50)) as w:
            w.write_initial(*state(run, 0))
            write_steps(w, run, 0, 6)
            raise KeyboardInterrupt
    stored = read_storage(path)
    assert stored.status == "interrupted"
    assert_run_equal(stored, run, 6)
    assert stored.attrs["status_message"] == "KeyboardInterrupt"


def test_exception_marks_failed_and_propagates_unchanged(tmp_path: Path):
    path = tmp_path / "run.h5"
    run = make_run(10)
    with pytest.raises(ZeroDivisionError, match="boom"):
        with StorageWriter(path, **writer_kwargs(flush_every=2)) as w:
            w.write_initial(*state(run, 0))
            write_steps(w, run, 0, 5)
            raise ZeroDivisionError("boom")
    stored = read_storage(path)
    assert stored.status == "failed"
    assert_run_equal(stored, run, 5)
    assert "boom" in stored.attrs["status_message"]


def test_explicit_finish_is_kept_by_the_context_manager(tmp_path: Path):
    path = tmp_path / "run.h5"
    run = make_run(2)
    with StorageWriter(path, **writer_kwargs()) as w:
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 2)
        w.finish("interrupted")
        assert w.finished
        with pytest.raises(RuntimeError):
            write_steps(w, run, 0, 1)
    assert read_storage(path).status == "interrupted"


def test_finish_rejects_unknown_status(tmp_path: Path):
    w = StorageWriter(tmp_path / "run.h5", **writer_kwargs())
    with pytest.raises(ValueError, match="finish status"):
        w.finish("running")
    w.finish("complete")


def test_extra_datasets(tmp_path: Path):
    """Extras of any fixed shape, nested paths, late first use and missing rows filled."""
    path = tmp_path / "run.h5"
    run = make_run(8)
    impulses = np.arange(8 * 5, dtype=float).reshape(8, 5)
    distance = np.arange(8 * 2 * 3, dtype=float).reshape(8, 2, 3)

    def extra(k: int) -> dict:
        out = {"impulses": impulses[k], "solver/complementarity": np.float64(k * 0.5)}
        if k >= 3:
            out["contacts/distance"] = distance[k]  # first used at step 3
        if k != 6:
            out["contacts/active"] = np.array([k % 2, 1], dtype=np.int8)  # missing at step 6
        return out

    with StorageWriter(path, **writer_kwargs(flush_every=2)) as w:
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 8, extra=extra)
    stored = read_storage(path)
    assert_run_equal(stored, run, 8)
    # the extras a Trajectory has are its fields; any other per-step dataset stays in extras
    assert set(stored.extras) == {"contacts/active"}
    assert {"impulses", "solver/complementarity", "contacts/distance"} <= set(stored.trajectory.datasets())
    np.testing.assert_array_equal(stored.trajectory.impulses, impulses)
    np.testing.assert_array_equal(stored.trajectory.complementarity, np.arange(8) * 0.5)
    got = stored.trajectory.contact_distance
    assert got.shape == (8, 2, 3), f"contacts/distance shape {got.shape}"
    assert np.isnan(got[:3]).all(), "rows before first use must be NaN"
    np.testing.assert_array_equal(got[3:], distance[3:])
    active = stored.extras["contacts/active"]
    assert active.dtype == np.int8 and active.shape == (8, 2)
    np.testing.assert_array_equal(active[6], [0, 0])
    np.testing.assert_array_equal(active[7], [1, 1])


def test_extra_shape_change_and_reserved_names_are_rejected(tmp_path: Path):
    run = make_run(3)
    with StorageWriter(tmp_path / "run.h5", **writer_kwargs(flush_every=1)) as w:
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 1, extra=lambda k: {"impulses": np.zeros(4)})
        with pytest.raises(ValueError, match="impulses"):
            write_steps(w, run, 1, 2, extra=lambda k: {"impulses": np.zeros(5)})
        for bad in ("x", "solver/status", "x/inner", "impulses/inner"):
            with pytest.raises(ValueError):
                write_steps(w, run, 1, 2, extra=lambda k, bad=bad: {bad: np.zeros(1)})
        assert w.steps_completed == 1, "a rejected step must not be stored"


def test_wrong_state_shape_is_rejected(tmp_path: Path):
    run = make_run(1)
    with StorageWriter(tmp_path / "run.h5", **writer_kwargs()) as w:
        with pytest.raises(ValueError, match="x: expected shape"):
            w.write_initial(0.0, np.zeros((3, 3)), *state(run, 0)[2:])
        w.write_initial(*state(run, 0))
        transposed = np.zeros((1, 3, NB))  # the right size, the wrong shape: never reshaped
        other = [np.zeros((1,) + np.shape(a)) for a in state(run, 0)[2:]]
        with pytest.raises(ValueError, match=r"x: expected shape \(1, 2, 3\)"):
            w.write_steps([H], transposed, *other, np.zeros((1, NU)), iterations=[1], residual=[0.0], status=["success"])
        assert w.steps_completed == 0


def test_zero_sized_dimensions(tmp_path: Path):
    """A mechanism with no free coordinates (all joints fixed) stores empty rows."""
    path = tmp_path / "run.h5"
    kwargs = writer_kwargs(minimal_q_names=[], minimal_v_names=[], input_dim=0, body_names=["a"])
    with StorageWriter(path, **kwargs) as w:
        z = (np.zeros((1, 3)), np.tile([1.0, 0, 0, 0], (1, 1)), np.zeros((1, 3)), np.zeros((1, 3)), [], [])
        w.write_initial(0.0, *z)
        for k in range(3):
            w.write_step((k + 1) * H, *z, [], iterations=1, residual=0.0, status="success")
    stored = read_storage(path)
    assert stored.trajectory.minimal_q.shape == (4, 0) and stored.trajectory.inputs.shape == (3, 0)


def test_unfinished_writer_is_readable(tmp_path: Path):
    """Writer dropped without finish: status stays running, lengths are consistent."""
    path = tmp_path / "run.h5"
    run = make_run(5)
    w = StorageWriter(path, **writer_kwargs(flush_every=1))
    w.write_initial(*state(run, 0))
    write_steps(w, run, 0, 3)
    del w
    stored = read_storage(path)
    assert stored.status == "running"
    assert_run_equal(stored, run, 3)


def test_killed_process_keeps_flushed_blocks(tmp_path: Path):
    """os._exit mid-run: the file holds every flushed block, attrs match dataset lengths."""
    path = tmp_path / "run.h5"
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.io.test_storage import StorageWriter, make_run, state, write_steps, writer_kwargs
        run = make_run(9)
        w = StorageWriter({str(path)!r}, **writer_kwargs(flush_every=4))
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 9)   # 8 steps flushed in two blocks, step 9 still buffered
        os._exit(0)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    with h5py.File(path, "r") as f:
        assert f.attrs["status"] == "running"
        assert f.attrs["steps_completed"] == 8, f"steps_completed {f.attrs['steps_completed']}"
        assert f["inputs"].shape[0] == 8 and f["time"].shape[0] == 9 and f["solver/status"].shape[0] == 8
    stored = read_storage(path)
    assert stored.status == "running"
    assert_run_equal(stored, make_run(9), 8)


def test_reader_trims_a_running_file_to_consistent_length(tmp_path: Path):
    """A running file whose datasets disagree (its writer was killed during a block write)
    reads at the shortest length."""
    path = tmp_path / "run.h5"
    run = make_run(6)
    w = StorageWriter(path, **writer_kwargs(flush_every=1))
    w.write_initial(*state(run, 0))
    write_steps(w, run, 0, 6)
    del w  # status stays 'running'
    with h5py.File(path, "a") as f:
        f["inputs"].resize(4, axis=0)
    stored = read_storage(path)
    assert stored.status == "running" and not stored.writing
    assert_run_equal(stored, run, 4)


def _killed_run(path: Path, steps: int = 3000) -> dict:
    """A running file (its writer gone without a status) of ``steps`` steps in blocks of
    1000, more than one chunk per dataset."""
    run = make_run(steps)
    w = StorageWriter(path, **writer_kwargs(flush_every=1000))
    w.write_initial(*state(run, 0))
    write_steps(w, run, 0, steps)
    del w  # status stays 'running'
    return run


def test_a_killed_flush_that_indexed_part_of_a_block_reads_to_its_indexed_rows(tmp_path: Path):
    """A writer killed inside HDF5's flush left the block's lengths and steps_completed
    written but some of its chunks unindexed (seen on a SIGKILLed `dojo simulate box`: 66 of
    68 chunks of contacts/distance): the run reads to the rows every dataset has stored,
    not 'damaged' (the fill value, zeros, must never be read as stored data)."""
    path = tmp_path / "run.h5"
    run = _killed_run(path)
    with h5py.File(path, "a") as f:  # the last chunk of inputs never indexed
        old = f["inputs"]
        data, chunks, shape = old[()], old.chunks, old.shape
        del f["inputs"]
        new = f.create_dataset("inputs", shape=shape, maxshape=(None,) + shape[1:], chunks=chunks, dtype=data.dtype)
        kept = (shape[0] - 1) // chunks[0] * chunks[0]
        new[:kept] = data[:kept]
        assert new.id.get_num_chunks() < -(-shape[0] // chunks[0])
    assert 0 < kept < 3000
    stored = read_storage(path)
    assert stored.status == "running" and stored.ended_without_status
    assert_run_equal(stored, run, kept)


def test_a_killed_flush_before_the_superblock_reads_to_its_end_of_allocation(tmp_path: Path):
    """HDF5 flushes the superblock last: a writer killed before it leaves chunks indexed past
    the end-of-allocation the superblock records, which HDF5 refuses to read ("addr
    overflow"; 1 run in 60 of a SIGKILLed `dojo simulate box`). The run reads to the rows
    stored below that end. The superblock's end is read with HDF5's own checksum (lookup3):
    on a file HDF5 closed, it is the file's size."""
    closed = tmp_path / "closed.h5"
    with h5py.File(closed, "w", libver=("v108", "v110")) as f:
        f.create_dataset("x", data=np.arange(100.0))
    assert allocated_end(closed) == closed.stat().st_size
    path = tmp_path / "run.h5"
    run = _killed_run(path)
    chunks = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, d: chunks.extend(
            d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())
        ) if isinstance(d, h5py.Dataset) and d.chunks else None)
    last = max(chunks, key=lambda info: info.byte_offset)  # the last chunk allocated
    cut = int(last.chunk_offset[0])  # the rows of that chunk and after are past the end
    assert 0 < cut < 3000
    raw = bytearray(path.read_bytes()[:48])
    assert raw[8] == 2 and raw[9] == 8  # superblock version 2, 8-byte addresses
    raw[28:36] = int(last.byte_offset).to_bytes(8, "little")  # the end of allocation, before that chunk
    raw[44:48] = lookup3(bytes(raw[:44])).to_bytes(4, "little")
    with open(path, "r+b") as fh:
        fh.write(raw)
    assert allocated_end(path) == last.byte_offset
    stored = read_storage(path)
    assert stored.status == "running" and stored.ended_without_status
    assert_run_equal(stored, run, cut)


def test_finished_file_with_a_short_dataset_is_damaged(tmp_path: Path):
    """A file with a final status holds exactly steps_completed steps: anything else is damage."""
    path = tmp_path / "run.h5"
    run = make_run(6)
    with StorageWriter(path, **writer_kwargs(flush_every=1)) as w:
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 6)
    with h5py.File(path, "a") as f:
        f["inputs"].resize(4, axis=0)
    with pytest.raises(StorageError) as info:
        read_storage(path)
    assert str(info.value) == (
        f"{path}: damaged storage file: dataset 'inputs' holds 4 steps, but the run has 6 (attribute 'steps_completed')"
    )
    assert info.value.exit_code == 3


def test_non_storage_hdf5_file(tmp_path: Path):
    path = tmp_path / "run.h5"
    with h5py.File(path, "w") as f:
        f["data"] = np.zeros(3)
    with pytest.raises(StorageError) as info:
        read_storage(path)
    assert str(info.value) == (
        f"{path}: not a dojo storage file (no attribute 'format': an HDF5 file written by another program?)"
    )
    assert info.value.exit_code == 2, "a well-formed file of another program is invalid input, not an I/O error"


def test_wrong_format_and_newer_version(tmp_path: Path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "something-else"
    with pytest.raises(StorageError, match="not a dojo storage file"):
        read_storage(path)
    path = tmp_path / "future.h5"
    run = make_run(1)
    with StorageWriter(path, **writer_kwargs()) as w:
        w.write_initial(*state(run, 0))
    with h5py.File(path, "a") as f:
        f.attrs["format_version"] = 2
    with pytest.raises(StorageError, match="unsupported format_version 2"):
        read_storage(path)


def test_non_hdf5_file(tmp_path: Path):
    path = tmp_path / "run.h5"
    path.write_text("time,x\n0,1\n")
    with pytest.raises(StorageError, match=r"run\.h5: not an HDF5 file"):
        read_storage(path)
    with pytest.raises(StorageError, match="no such file"):
        read_storage(tmp_path / "missing.h5")


def test_unwritable_paths(tmp_path: Path):
    missing_dir = tmp_path / "no" / "such" / "run.h5"
    with pytest.raises(StorageError) as info:
        StorageWriter(missing_dir, **writer_kwargs())
    assert str(missing_dir) in str(info.value) and "does not exist" in str(info.value)
    assert info.value.exit_code == 3
    with pytest.raises(StorageError, match="is a directory"):
        StorageWriter(tmp_path, **writer_kwargs())
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    with pytest.raises(StorageError, match="is not a directory"):
        StorageWriter(not_a_dir / "run.h5", **writer_kwargs())


def test_read_only_directory(tmp_path: Path, monkeypatch):
    """A permission error while creating the file becomes a StorageError naming the path.
    (The test runs as root, which ignores directory permissions, so the failing open is
    injected rather than arranged with chmod.)"""
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(args[0]) if args else "")

    monkeypatch.setattr(storage_writer.h5py, "File", denied)
    target = tmp_path / "run.h5"
    with pytest.raises(StorageError, match="(?i)permission denied") as info:
        StorageWriter(target, **writer_kwargs())
    assert str(target) in str(info.value) and info.value.exit_code == 3


def test_read_while_open_elsewhere_in_process(tmp_path: Path):
    """HDF5 rejects mixed locking flags in one process; the reader must still open."""
    path = tmp_path / "run.h5"
    run = make_run(2)
    with StorageWriter(path, **writer_kwargs()) as w:
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 2)
    with h5py.File(path, "r"):
        assert read_storage(path).steps_completed == 2


def test_read_while_another_process_writes(tmp_path: Path):
    """A run still being written (file locked by the writer) can be inspected."""
    path = tmp_path / "run.h5"
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.io.test_storage import StorageWriter, make_run, state, write_steps, writer_kwargs
        run = make_run(5)
        w = StorageWriter({str(path)!r}, **writer_kwargs(flush_every=5))
        w.write_initial(*state(run, 0))
        write_steps(w, run, 0, 5)
        print("ready", flush=True)
        sys.stdin.readline()
        os._exit(0)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        stored = read_storage(path)
        assert stored.status == "running"
        assert_run_equal(stored, make_run(5), 5)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_ctrl_c_inside_a_block_write_is_repaired_by_finish(tmp_path: Path, monkeypatch):
    """KeyboardInterrupt after the core datasets of a block were written, before the
    extras: finish repeats the flush without duplicating rows."""
    path = tmp_path / "run.h5"
    run = make_run(6)
    original = StorageWriter._flush_extras
    calls = {"n": 0}

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == 3:  # the block write at step 4 (initial, step 2, step 4)
            raise KeyboardInterrupt
        original(self)

    monkeypatch.setattr(StorageWriter, "_flush_extras", flaky)
    with pytest.raises(KeyboardInterrupt):
        with StorageWriter(path, **writer_kwargs(flush_every=2)) as w:
            w.write_initial(*state(run, 0))
            write_steps(w, run, 0, 6, extra=lambda k: {"impulses": np.full(2, float(k))})
    stored = read_storage(path)
    assert stored.status == "interrupted"
    assert_run_equal(stored, run, 4)
    np.testing.assert_array_equal(stored.trajectory.impulses[:, 0], np.arange(4.0))


def test_a_second_writer_on_the_same_file_is_refused(tmp_path: Path):
    """The writer's lock is taken before HDF5 truncates: a second writer (here in the same
    process; another process alike) is refused and the first one's file is untouched."""
    path = tmp_path / "run.h5"
    run = make_run(6)
    with StorageWriter(path, **writer_kwargs(flush_every=2)) as first:
        first.write_initial(*state(run, 0))
        write_steps(first, run, 0, 4)
        stored = read_storage(path)
        assert stored.writing and stored.status == "running" and stored.steps_completed == 4
        assert stored.status_note() == f"{path}: still being written by another process (status 'running'); 4 steps stored so far"
        with pytest.raises(StorageError) as info:
            StorageWriter(path, **writer_kwargs())
        assert str(info.value) == f"{path}: another run is writing it (a `dojo simulate` still running?); not overwritten"
        assert info.value.exit_code == 3
        write_steps(first, run, 4, 6)
    stored = read_storage(path)
    assert not stored.writing
    assert_run_equal(stored, run, 6)


def test_small_runs_stay_raw_and_chunks_fit_a_known_length(tmp_path: Path):
    """A run below _COMPACT_MIN_BYTES is not compacted (the copy would cost more than it
    saves); told its length, the writer makes chunks no longer than the run; a run past the
    threshold is compacted, chunks no longer than its data."""
    small, large = tmp_path / "small.h5", tmp_path / "large.h5"
    run = make_run(5)
    with StorageWriter(small, **writer_kwargs(steps=5)) as writer:
        writer.write_initial(*state(run, 0))
        write_steps(writer, run, 0, 5)
    assert not writer.compacted and writer.compaction_note is None, "left as written, no note"
    with h5py.File(small, "r") as f:
        assert f["x"].compression is None and f["x"].chunks[0] == 6 and f["inputs"].chunks[0] == 5
        assert f["x"].maxshape[0] is None, "still resizable"
    assert_run_equal(read_storage(small), run, 5)
    # a state row of this layout (2 bodies, 3 + 3 minimal coordinates) is (1 + 2 * 13 + 6) * 8 = 264 bytes
    steps = storage_writer._COMPACT_MIN_BYTES // 264 + 1
    run = make_run(steps)
    with StorageWriter(large, **writer_kwargs(steps=steps)) as writer:
        writer.write_initial(*state(run, 0))
        write_steps(writer, run, 0, steps)
    assert writer.compacted
    with h5py.File(large, "r") as f:
        assert f["x"].compression == "gzip" and f["time"].chunks[0] == steps + 1
    assert_run_equal(read_storage(large), run, steps)


def test_compaction_keeps_every_value_and_attribute(tmp_path: Path):
    """Raw while written, gzip once finished complete: the same values, dtypes, attributes."""
    path = tmp_path / "run.h5"
    run = make_run(7)
    rows = {"rows": ["a.x", "a.y"], "cols": ["u"], "meaning": "d z'/d u"}
    writer = StorageWriter(path, **writer_kwargs(flush_every=1, dataset_attrs={"gradients/B": rows}, compact_min_bytes=0,
                                                 extra_attrs={"contact_names": ["c"], "seed": 3}))
    with writer:
        writer.write_initial(*state(run, 0))
        write_steps(writer, run, 0, 7, extra=lambda k: {
            "gradients/B": np.full((24, 3), float(k)), "contacts/distance": np.array([k * 0.1]),
            "contacts/normal_impulse": np.array([0.0]), "contacts/friction_impulse": np.zeros((1, 2)),
            "contacts/slip": np.zeros((1, 2)), "flags": np.array([k % 2], dtype=np.int8),
        })
        with h5py.File(path, "r", locking=False) as f:
            assert f["x"].compression is None, "raw while the run is written"
    assert writer.compacted and writer.compaction_note is None
    with h5py.File(path, "r") as f:
        for name in ("x", "solver/status", "gradients/B", "contacts/slip", "flags"):
            assert f[name].compression == "gzip", name
        assert f["solver/status"].dtype == h5py.string_dtype("utf-8", 32)
        assert f["flags"].dtype == np.int8 and f["solver/iterations"].dtype == np.int32
        assert list(f["gradients/B"].attrs["rows"]) == ["a.x", "a.y"] and f["gradients/B"].attrs["meaning"] == "d z'/d u"
        assert isinstance(f.attrs["status"], str) and f["x"].maxshape[0] is None
    stored = read_storage(path, gradients=True)
    assert_run_equal(stored, run, 7)
    assert stored.attrs["contact_names"] == ["c"] and stored.attrs["seed"] == 3
    np.testing.assert_array_equal(stored.extras["gradients/B"][:, 0, 0], np.arange(7.0))
    np.testing.assert_array_equal(stored.extras["flags"][:, 0], np.arange(7) % 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.h5"]


@pytest.mark.parametrize("flush_every", [1, 1000], ids=["on-disk", "buffered"])
def test_revise_last_state_replaces_the_last_knot_row_wherever_it_is(tmp_path, flush_every):
    """A knot file: the writer stores the velocities it is given (at the knots, and the
    midpoint ones in v_mid, omega_mid) and ``revise_last_state`` replaces the last state's
    knot velocities, whether that row is still buffered or already on disk (written again
    at the next block write); a midpoint file refuses both."""
    run = make_run(6, seed=3)
    revised = make_run(6, seed=4)  # the revised rows' values
    out = tmp_path / "knot.h5"
    with StorageWriter(out, **writer_kwargs(velocities="knot", flush_every=flush_every)) as writer:
        writer.write_initial(*state(run, 0), v_mid=run["v"][0] + 1, omega_mid=run["omega"][0] + 1)
        for k in range(6):
            writer.revise_last_state(revised["v"][k], revised["omega"][k], revised["minimal_v"][k])
            t, x, q, v, w, mq, mv = state(run, k + 1)
            writer.write_step(t, x, q, v, w, mq, mv, run["inputs"][k], iterations=1, residual=0.0, status="success",
                              v_mid=v + 1, omega_mid=w + 1)
        writer.revise_last_state(revised["v"][6], revised["omega"][6], revised["minimal_v"][6])
    stored = read_storage(out)
    assert stored.velocities == "knot"
    for name, field in (("v", "v"), ("omega", "omega"), ("minimal_v", "minimal_v")):
        assert np.array_equal(getattr(stored.trajectory, field), revised[name]), f"{field}: the revised rows"
    assert np.array_equal(stored.trajectory.v_mid, run["v"] + 1) and np.array_equal(stored.trajectory.omega_mid, run["omega"] + 1)
    with StorageWriter(tmp_path / "mid.h5", **writer_kwargs()) as writer:
        with pytest.raises(ValueError, match="midpoint file has no v_mid"):
            writer.write_initial(*state(run, 0), v_mid=run["v"][0], omega_mid=run["omega"][0])
        writer.write_initial(*state(run, 0))
        with pytest.raises(RuntimeError, match="no knot velocities to revise"):
            writer.revise_last_state(run["v"][0], run["omega"][0], run["minimal_v"][0])


def test_a_long_run_is_written_in_bounded_memory(tmp_path: Path):
    """The writer's memory does not grow with the run: 60 MB of rows written in blocks raise
    the process's resident memory by a bounded amount (HDF5 2.0's default chunk cache, 8 MiB
    a dataset, kept every chunk of the 13 datasets: ~60 MB here; issue 28 item 6), and the
    file holds every row."""
    path = tmp_path / "long.h5"
    block, blocks = 4096, 43  # 176k steps of ~340 bytes: 60 MB of rows
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.io.test_storage import NB, NQ, NU, NV, StorageWriter, make_run, state, writer_kwargs

        def rss_mb(field):
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) / 1024 for line in f if line.startswith(field))

        n, blocks = {block}, {blocks}
        rng = np.random.default_rng(0)
        rows = dict(x=rng.normal(size=(n, NB, 3)), q=rng.normal(size=(n, NB, 4)), v=rng.normal(size=(n, NB, 3)),
                    omega=rng.normal(size=(n, NB, 3)), mq=rng.normal(size=(n, NQ)), mv=rng.normal(size=(n, NV)),
                    u=rng.normal(size=(n, NU)), it=np.ones(n, dtype=int), res=rng.random(n))
        w = StorageWriter({str(path)!r}, **writer_kwargs(flush_every=1, compact=False, steps=n * blocks))
        w.write_initial(*state(make_run(1), 0))
        for b in range(blocks):
            w.write_steps((b * n + 1 + np.arange(n)) * 0.01, rows["x"], rows["q"], rows["v"], rows["omega"], rows["mq"],
                          rows["mv"], rows["u"], iterations=rows["it"], residual=rows["res"], status=["success"] * n)
            if b == 2:
                start = rss_mb("VmRSS:")
        w.finish("complete")
        print(rss_mb("VmHWM:") - start)
        """
    )
    growth = float(subprocess.run([sys.executable, "-c", script], check=True, timeout=120, capture_output=True,
                                  text=True).stdout)
    with h5py.File(path, "r") as f:
        assert f.attrs["steps_completed"] == block * blocks and f["x"].shape == (block * blocks + 1, NB, 3)
        assert f["time"][-1] == pytest.approx(block * blocks * 0.01)
        raw_mb = sum(f[name].id.get_storage_size() for name in ("time", "x", "q", "v", "omega", "minimal/q",
                                                                "minimal/v", "inputs", "solver/residual")) / 2**20
    assert raw_mb > 50, f"the file holds {raw_mb:.0f} MiB of rows"
    # the chunk caches (13 datasets x _CHUNK_CACHE_BYTES, 3.3 MiB), HDF5's metadata and one
    # block's arrays; the data itself is 60 MB
    assert growth < 16, f"resident memory grew {growth:.1f} MiB while writing {raw_mb:.0f} MiB of rows"

