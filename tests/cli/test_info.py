"""`dojo info`: what a run records (overrides, command line, scene hash, wall time) and
prints, and `--get EXPR`, the expressions sweeps use for their metrics."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def box_run(tmp_path_factory):
    """20 steps of the sliding box with two overrides, one a wildcard."""
    out = tmp_path_factory.mktemp("info") / "box.h5"
    res = invoke("simulate", "sliding_box", "-o", out, "--steps", 20, "-q",
                 "--set", "contacts.*.friction=0.3", "--set", "bodies.box.mass=2")
    assert res.exit_code == 0, res.output
    return out


def test_run_records_its_provenance(box_run):
    run = read_storage(box_run)
    a = run.attrs
    assert a["overrides"] == {"contacts.*.friction": 0.3, "bodies.box.mass": 2}, "as given, in order"
    assert a["command_line"] == (f"dojo simulate sliding_box -o {box_run} --steps 20 -q "
                                 "--set 'contacts.*.friction=0.3' --set bodies.box.mass=2")
    assert a["scene_hash"] == hashlib.sha256(run.scene_yaml.encode()).hexdigest()
    assert 0 < a["wall_time"] < 600 and math.isfinite(a["wall_time"])


def test_preset_values_are_recorded_before_set(tmp_path):
    preset = tmp_path / "fast.yaml"
    preset.write_text("solver: {rtol: 1.0e-5}\nduration: 0.05\n")
    out = tmp_path / "p.h5"
    res = invoke("simulate", "pendulum", "--config", preset, "--set", "solver.rtol=2.0e-5", "-o", out, "-q")
    assert res.exit_code == 0, res.output
    run = read_storage(out)
    assert list(run.attrs["overrides"].items()) == [("solver.rtol", 2e-5), ("duration", 0.05)]
    assert run.solver_options["rtol"] == 2e-5, "scene < config < --set"
    assert run.steps_completed == 5, "the preset's duration"


def test_missing_preset_is_an_io_error(tmp_path):
    """A missing input file is an I/O error (exit 3, README), a preset as any other."""
    res = invoke("simulate", "pendulum", "--config", tmp_path / "nope.yaml", "-o", tmp_path / "x.h5")
    assert res.exit_code == 3
    assert res.stderr.strip() == f"{tmp_path / 'nope.yaml'}: no such file"
    assert not (tmp_path / "x.h5").exists()


def test_get_prints_the_stored_number_at_full_precision(box_run):
    run = read_storage(box_run)
    res = invoke("info", box_run, "--get", "x[-1, box, 0]", "--get", "x[-1, box, z]", "--get", "failed_steps")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines == [repr(float(run.trajectory.x[-1, 0, 0])), repr(float(run.trajectory.x[-1, 0, 2])), "0"]


@pytest.mark.parametrize("expr, expected", [
    ("time[-1]", lambda r: r.trajectory.time[-1]),
    ("minimal/q[-1, 0]", lambda r: r.trajectory.minimal_q[-1, 0]),
    ("max(abs(contacts/distance[:, 0]))", lambda r: np.max(np.abs(r.trajectory.contact_distance[:, 0]))),
    ("mean(solver/iterations)", lambda r: np.mean(r.trajectory.iterations)),
    ("iterations_mean", lambda r: np.mean(r.trajectory.iterations)),
    ("max_penetration", lambda r: max(0.0, -np.min(r.trajectory.contact_distance))),
    ("2 * x[0, box, 2] - 1", lambda r: 2 * r.trajectory.x[0, 0, 2] - 1),
])
def test_expressions(box_run, expr, expected):
    res = invoke("info", box_run, "--get", expr)
    assert res.exit_code == 0, res.output
    assert float(res.stdout) == float(expected(read_storage(box_run))), expr


def test_energy_drift_is_dojo_energy_max_drift(box_run):
    res = invoke("info", box_run, "--get", "energy_drift")
    energy = invoke("energy", box_run, "--json", box_run.with_suffix(".json"))
    assert res.exit_code == 0 and energy.exit_code == 0, res.output + energy.output
    doc = json.loads(box_run.with_suffix(".json").read_text())
    assert float(res.stdout) == doc["summary"]["mechanical [J]"]["max_drift"]


@pytest.mark.parametrize("expr, message", [
    ("x[-1, nobody, 0]", "no 'nobody' on axis 1 of 'x' (names: box)"),
    ("x[-1, box]", "gives an array of shape (3,), not one number"),
    ("x[99, box, 0]", "index 99 is out of range for axis 0 of 'x' (size 21)"),
    ("__import__('os')", "only calls of one argument to abs, min, max"),
    ("x.T", "attribute is not allowed"),
    ("nope[0]", "no dataset 'nope'"),
])
def test_bad_expressions_are_invalid_input(box_run, expr, message):
    res = invoke("info", box_run, "--get", expr)
    assert res.exit_code == 2, res.output
    assert message in res.stderr and "Traceback" not in res.output


def test_info_text_and_json(box_run):
    res = invoke("info", box_run)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"{box_run}: scene sliding_box"
    assert "status          complete" in lines
    assert "steps           20 of 0.01 s (0.2 s simulated)" in lines
    assert "failed steps    0" in lines
    assert "overrides       contacts.*.friction=0.3, bodies.box.mass=2" in lines
    doc = json.loads(invoke("info", box_run, "--json").stdout)
    run = read_storage(box_run)
    assert doc["status"] == "complete" and doc["steps"] == 20 and doc["failed_steps"] == 0
    assert doc["wall_time"] == run.attrs["wall_time"]
    assert doc["overrides"] == {"contacts.*.friction": 0.3, "bodies.box.mass": 2}
    assert doc["final_state"]["bodies"]["box"]["x"] == run.trajectory.x[-1, 0].tolist()
    assert doc["final_state"]["time"] == run.trajectory.time[-1]


def test_info_of_a_missing_file_is_io_error(tmp_path):
    res = invoke("info", tmp_path / "none.h5")
    assert res.exit_code == 3
    assert res.stderr.strip() == f"{tmp_path / 'none.h5'}: no such file"
