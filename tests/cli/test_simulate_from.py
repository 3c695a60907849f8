"""`dojo simulate --from RUN.h5 --index K`: a run continued from a stored state.

A run continued from knot K of another starts from the state the first run's next step
started from (the midpoint velocities, the warm-start impulses, the revolute angles unwrapped
through turns) and numbers its steps on from K's time, so with the same scene it *is* the
first run's remainder: measured bit for bit equal (0.0) for the variational integrator with
contacts and a PD controller, and 8.9e-16 for rk4 (its knot velocities are recomputed into
minimal coordinates). The scene may change between the two (here: a joint locked, then
unlocked again); its bodies may not.
"""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app

runner = CliRunner()

STATE = ("x", "q", "v", "omega", "minimal/q", "minimal/v")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def simulate(*args):
    res = invoke("simulate", *args, "-q")
    assert res.exit_code == 0, res.output
    return res


def datasets(path, names=STATE + ("time", "inputs")):
    with h5py.File(path) as f:
        return {k: f[k][()] for k in names}, {k: f.attrs[k] for k in f.attrs}


@pytest.mark.parametrize("scene", ["double_pendulum", "box", "hopper", "pendulum_limit", "rbd_fourbar"])
def test_continued_run_is_the_first_runs_remainder(tmp_path, scene):
    """60 steps in one run, and 30 + 30 continued from the last state: the same states,
    times and inputs (the hopper's PD inputs depend on the state; box and hopper touch the
    ground; pendulum_limit hits its limit; rbd_fourbar is the rk4 integrator's)."""
    whole, first, rest = tmp_path / "whole.h5", tmp_path / "first.h5", tmp_path / "rest.h5"
    simulate(scene, "--steps", 60, "-o", whole)
    simulate(scene, "--steps", 30, "-o", first)
    simulate(scene, "--steps", 30, "--from", first, "--index", -1, "-o", rest)
    a, _ = datasets(whole)
    c, attrs = datasets(rest)
    for name in STATE:
        assert np.abs(a[name][30:] - c[name]).max() <= 1e-12, name
    assert np.array_equal(a["time"][30:], c["time"])  # t = step h, numbered on from step 30
    assert np.abs(a["inputs"][30:] - c["inputs"]).max() <= 1e-12
    origin = json.loads(attrs["started_from"])
    assert origin == {"file": str(first), "index": 30, "time": pytest.approx(a["time"][30]), "step": 30}


WARM = ("--set", "solver.warm_start=true")


@pytest.mark.parametrize("scene, extra, k", [("box", ("--set", "contacts.*.margin=0.01"), 50), ("hopper", (), 30),
                                             ("pendulum_limit", (), 30)])
def test_a_warm_started_run_continues_bit_for_bit(tmp_path, scene, extra, k):
    """With the warm start (core/maximal/step.h, "Warm start") a run's next step starts from the
    previous step's cones, which the states do not hold: the file keeps them, solver/start
    (with the restart scale), and a run continued from state k starts its first step from row
    k - 1's, so it is the first run's remainder bit for bit (the box also with contact margins,
    landing: corners left out of a solve are NaN in the record). Without the record (the dataset
    deleted, as in a file written before it) the first step starts from Dojo's point and the
    continuation is the remainder only to the solver's tolerance."""
    whole, first, rest = tmp_path / "whole.h5", tmp_path / "first.h5", tmp_path / "rest.h5"
    simulate(scene, "--steps", 2 * k, *WARM, *extra, "-o", whole)
    simulate(scene, "--steps", k, *WARM, *extra, "-o", first)
    simulate(scene, "--steps", k, *WARM, *extra, "--from", first, "--index", -1, "-o", rest)
    a, _ = datasets(whole, STATE + ("time", "inputs", "solver/start"))
    c, _ = datasets(rest, STATE + ("time", "inputs", "solver/start"))
    assert np.all(a["solver/start"][:, 0] == 1.0), "a step of the warm run left no warm start"
    for name in STATE + ("inputs", "solver/start"):
        assert np.array_equal(a[name][k:], c[name], equal_nan=True), f"{name}: {np.nanmax(np.abs(a[name][k:] - c[name])):.3e}"
    with h5py.File(first, "r+") as f:
        del f["solver/start"]
    simulate(scene, "--steps", k, *WARM, *extra, "--from", first, "--index", -1, "-o", rest, "--force")
    c, _ = datasets(rest)
    assert not np.array_equal(a["x"][k:], c["x"]), "the record changed nothing: was it read?"


def test_lock_and_unlock_a_joint_between_runs(tmp_path):
    """The double pendulum swings for 1 s, then continues with its elbow locked (Drake's Lock:
    the elbow's angle holds where it was), then unlocked again: the angle moves again."""
    free, locked, unlocked = tmp_path / "free.h5", tmp_path / "locked.h5", tmp_path / "unlocked.h5"
    simulate("double_pendulum", "--steps", 100, "-o", free)
    simulate("double_pendulum", "--steps", 100, "--from", free, "--index", -1,
             "--set", "joints.joint2.locked=true", "-o", locked)
    simulate("double_pendulum", "--steps", 100, "--from", locked, "--index", -1, "-o", unlocked)
    f, _ = datasets(free)
    lk, attrs = datasets(locked)
    u, _ = datasets(unlocked)
    elbow_rate = np.abs(f["minimal/v"][-1, 1])
    assert elbow_rate > 0.5  # it was moving when locked (0.95 rad/s)
    assert lk["minimal/q"][0, 1] == f["minimal/q"][-1, 1]
    assert np.ptp(lk["minimal/q"][1:, 1]) < 1e-9  # held (measured 3.1e-11)
    assert np.abs(lk["minimal/v"][1:, 1]).max() < 1e-8  # (1.3e-9)
    assert np.ptp(lk["minimal/q"][:, 0]) > 0.1  # while the shoulder swings on
    assert json.loads(attrs["locked_joints"]) == ["joint2"]
    assert np.ptp(u["minimal/q"][:, 1]) > 0.1  # unlocked: the elbow swings again
    assert u["time"][0] == pytest.approx(2.0) and u["time"][-1] == pytest.approx(3.0)
    res = invoke("info", unlocked)
    assert res.exit_code == 0 and f"started from    state 100 of {locked} (t = 2 s)" in res.stdout


def test_from_any_state_and_the_run_length_counts_from_there(tmp_path):
    run, rest = tmp_path / "run.h5", tmp_path / "rest.h5"
    simulate("pendulum", "--steps", 40, "-o", run)
    res = invoke("simulate", "pendulum", "--from", run, "--index", 10, "--duration", 0.25, "-o", rest)
    assert res.exit_code == 0, res.output
    assert "from state 10 of" in res.stdout
    c, _ = datasets(rest)
    a, _ = datasets(run)
    assert len(c["time"]) == 26 and c["time"][0] == pytest.approx(a["time"][10])
    assert np.abs(a["x"][10:36] - c["x"]).max() <= 1e-12


@pytest.mark.parametrize(
    "args, code, text",
    [
        (("--index", 3), 2, "--index needs --from"),
        (("--from", "RUN"), 2, "--from needs --index"),
        (("--from", "RUN", "--index", 41), 2, "holds states 0..40"),
        (("--from", "MISSING", "--index", -1), 3, "no such file"),
        (("--from", "RUN", "--index", -1, "-o", "RUN", "--force"), 2, "is the --from run"),
        (("--from", "RUN", "--index", -1, "--set", "timestep=0.003"), 2, "not a whole number of the scene's timestep"),
    ],
)
def test_bad_starts_are_refused(tmp_path, args, code, text):
    run = tmp_path / "run.h5"
    simulate("pendulum", "--steps", 40, "-o", run)
    subst = {"RUN": run, "MISSING": tmp_path / "missing.h5"}
    args = [subst.get(a, a) for a in args]
    out = [] if "-o" in args else ["-o", tmp_path / "out.h5"]
    res = invoke("simulate", "pendulum", "--steps", 5, *args, *out)
    assert res.exit_code == code, res.output
    assert text in res.output
    assert "Traceback" not in res.output


def test_a_run_of_other_bodies_is_refused(tmp_path):
    run = tmp_path / "box.h5"
    simulate("box", "--steps", 5, "-o", run)
    res = invoke("simulate", "pendulum", "--steps", 5, "--from", run, "--index", -1, "-o", tmp_path / "out.h5")
    assert res.exit_code == 2 and "are not the scene's" in res.output
