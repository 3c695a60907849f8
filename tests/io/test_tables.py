"""Input tables of schedule controllers (CSV, HDF5): damaged and foreign files are a
ValueError saying what is wrong (the scene loader adds file and field), never a hang,
a crash or another exception."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from dojo_cli.io.storage import probe as structure_probe
from dojo_cli.io.tables import read_input_table
from tests.io.damaged import zero_global_heap_free_space


def test_csv_and_hdf5_tables(tmp_path: Path):
    csv = tmp_path / "u.csv"
    csv.write_text("# comment\nhinge:r0,hinge:r1\n1,2\n3,4\n")
    np.testing.assert_array_equal(read_input_table(csv), [[1, 2], [3, 4]])
    h5 = tmp_path / "u.h5"
    with h5py.File(h5, "w") as f:
        f["inputs"] = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(read_input_table(h5), np.arange(6.0).reshape(3, 2))


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda p: p.write_text("not hdf5"), "not a readable HDF5 file"),
        (lambda p: h5py.File(p, "w").create_group("inputs"), "'inputs' in the HDF5 file is not a dataset"),
        (lambda p: h5py.File(p, "w").create_dataset("inputs", data=np.array([b"a", b"b"])),
         "holds |S1 of shape (2,), expected a table of numbers"),
        (lambda p: h5py.File(p, "w").create_dataset("inputs", shape=(10**9, 6), maxshape=(None, 6), chunks=(64, 6), dtype="f8"),
         "claims (1000000000, 6) values, more than 1e+08"),
        (lambda p: h5py.File(p, "w").create_dataset("other", data=[1.0]), "HDF5 file has no dataset 'inputs'"),
        (lambda p: h5py.File(p, "w").create_dataset("inputs", data=[[1.0, np.nan]]), "contains non-finite values"),
    ],
    ids=["text", "group", "strings", "claims", "missing", "nan"],
)
def test_damaged_hdf5_tables(tmp_path: Path, make, message):
    path = tmp_path / "u.h5"
    handle = make(path)
    if isinstance(handle, (h5py.Group, h5py.Dataset)):
        handle.file.close()
    with pytest.raises(ValueError) as info:
        read_input_table(path)
    assert message in str(info.value)


def test_not_a_regular_file(tmp_path: Path):
    fifo = tmp_path / "u.csv"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_input_table(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_input_table(tmp_path)
    with pytest.raises(OSError):
        read_input_table(tmp_path / "missing.csv")


def test_hdf5_table_hdf5_loops_on(tmp_path: Path, monkeypatch, single_threaded_probe):
    """A storage file whose global heap makes HDF5 loop: refused within the deadline."""
    monkeypatch.setattr(structure_probe, "_PROBE_SECONDS", 1.0)
    path = tmp_path / "u.h5"
    with h5py.File(path, "w") as f:
        f["inputs"] = np.zeros((3, 1))
        f.attrs["note"] = "variable-length text, in the global heap"
    zero_global_heap_free_space(path)
    with pytest.raises(ValueError) as info:
        read_input_table(path)
    assert str(info.value).startswith("damaged global heap (the HDF5 library would never finish reading it)")
    monkeypatch.setattr(structure_probe, "global_heap_problem", lambda p: None)  # the walk with a deadline then
    with pytest.raises(ValueError) as info:
        read_input_table(path)
    assert str(info.value) == "damaged HDF5 file: HDF5 did not finish reading its structure within 1 s (a loop in damaged metadata)"
