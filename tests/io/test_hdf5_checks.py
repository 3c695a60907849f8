"""A run file whose global heap was zeroed: libhdf5 would loop forever reading it (every
reader hung until SIGKILL, found by the fuzz suite); the byte check refuses it first."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dojo_cli.io.storage.hdf5_checks import global_heap_problem
from tests.processes import dojo_command



def _spinning_copy(good: Path, bad: Path) -> None:
    data = bytearray(good.read_bytes())
    at = data.find(b"GCOL")
    assert at >= 0, "the run file has a global heap (its string attributes)"
    data[at + 16 : at + 16 + 64] = bytes(64)  # the first objects' headers: index 0, size 0
    bad.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("heap")
    good, bad = folder / "good.h5", folder / "spin.h5"
    subprocess.run([*dojo_command(), "simulate", "pendulum", "--steps", "8", "-q", "-o", str(good)], check=True, timeout=60)
    _spinning_copy(good, bad)
    return good, bad


def test_the_check_finds_the_stalling_collection_and_passes_a_good_file(files):
    good, bad = files
    assert global_heap_problem(good) is None
    problem = global_heap_problem(bad)
    assert problem is not None and "global heap" in problem and "size 0" in problem


def test_the_check_leaves_files_it_cannot_judge_to_h5py(tmp_path):
    for name, content in {"empty.h5": b"", "text.h5": b"GCOL\x01 not a heap", "short.h5": b"GCOL"}.items():
        (tmp_path / name).write_bytes(content)
        assert global_heap_problem(tmp_path / name) is None
    assert global_heap_problem(tmp_path / "missing.h5") is None
    assert global_heap_problem(tmp_path) is None  # a directory


@pytest.mark.parametrize("command", [["energy"], ["contacts"], ["step", "pendulum", "--index", "0", "--from"]])
def test_readers_refuse_the_file_instead_of_hanging(files, command):
    _, bad = files
    proc = subprocess.run([*dojo_command(), *command, str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, (proc.returncode, proc.stderr)
    assert "global heap" in proc.stderr and str(bad) in proc.stderr and "Traceback" not in proc.stderr
