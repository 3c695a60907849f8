"""Labelled-array files (io/labelled_files.py): the gradient and dynamics files' shared containers."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.errors import InputError, StorageError
from dojo_cli.io import gradient_files, labelled_files
from dojo_cli.io.dynamics_files import DynamicsFile, read_dynamics_file, write_dynamics_file
from dojo_cli.io.gradient_files import GradientFile, read_gradient_file, write_gradient_file

ROWS, COLS = ["a", "b"], ["x", "y", "z"]
MATRIX = np.arange(6.0).reshape(2, 3) - 2.5


def _gradients() -> GradientFile:
    return GradientFile({"A": MATRIX}, {"A": (ROWS, COLS)}, {"state": np.ones(3)}, {"scene_name": "t", "kappa": None})


@pytest.mark.parametrize("suffix", [".h5", ".json", ".npz"])
def test_both_files_store_a_matrix_with_its_names_alike(tmp_path, suffix):
    write_gradient_file(tmp_path / f"g{suffix}", _gradients())
    write_dynamics_file(tmp_path / f"d{suffix}", DynamicsFile({}, {"A": (MATRIX, ROWS, COLS)}, {"scene_name": "t"}))
    g = read_gradient_file(tmp_path / f"g{suffix}")
    d = read_dynamics_file(tmp_path / f"d{suffix}")
    assert np.array_equal(g.matrices["A"], MATRIX) and g.labels["A"] == (ROWS, COLS), f"gradient file {g.labels}"
    mat, rows, cols = d.matrices["A"]
    assert np.array_equal(mat, MATRIX) and (rows, cols) == (ROWS, COLS), f"dynamics file {rows}, {cols}"


@pytest.mark.parametrize("suffix", [".h5", ".json", ".npz"])
def test_a_gradient_file_is_written_whole_or_not_at_all(tmp_path, suffix, monkeypatch):
    """Gradient files are written as dynamics files are (labelled_files.write_atomically):
    before, a failed write left a partial file at the path."""
    path = tmp_path / f"g{suffix}"

    def fail(p, *args, **kwargs):
        with open(p, "wb") as fh:
            fh.write(b"half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gradient_files, "_write_h5", fail)
    monkeypatch.setattr(gradient_files, "_write_npz", fail)
    monkeypatch.setattr("pathlib.Path.write_text", lambda p, *a, **k: fail(p))
    with pytest.raises(StorageError, match="cannot write .No space left on device"):
        write_gradient_file(path, _gradients())
    assert list(tmp_path.iterdir()) == [], f"left behind {[p.name for p in tmp_path.iterdir()]}"


def test_a_gradient_file_without_overwrite_keeps_an_existing_file(tmp_path):
    path = tmp_path / "g.json"
    path.write_text("keep")
    with pytest.raises(StorageError, match="already exists"):
        write_gradient_file(path, _gradients(), overwrite=False)
    assert path.read_text() == "keep"
    write_gradient_file(path, _gradients())  # the default overwrites, as before
    assert read_gradient_file(path).meta["scene_name"] == "t"


def test_check_output_names_the_type_before_the_existing_file(tmp_path):
    existing = tmp_path / "out.csv"
    existing.write_text("")
    with pytest.raises(InputError, match="unknown file type"):
        labelled_files.check_output(existing, force=False)
    labelled_files.check_output(tmp_path / "new.h5", force=False)
    labelled_files.check_output(None, force=False)
