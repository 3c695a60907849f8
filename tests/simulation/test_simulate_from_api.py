"""dojo.simulate(mech, steps, from_run=RUN, index=K): the Python side of `dojo simulate
--from` (tests/cli/test_simulate_from.py). A run continued from the last state of a stored
run is the stored run's remainder: the same states and times as one longer run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import InputError

runner = CliRunner()


def stored(tmp_path, scene, steps, name="first.h5"):
    out = tmp_path / name
    res = runner.invoke(app, ["simulate", scene, "--steps", str(steps), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    return out


@pytest.mark.parametrize("scene, tol", [("double_pendulum", 0.0), ("hopper", 0.0), ("box", 0.0),
                                        ("rbd_fourbar", 1e-14)])
def test_continued_simulation_is_the_longer_runs_remainder(tmp_path, scene, tol):
    """Measured: bit for bit (0.0) with the variational integrator (the hopper's PD inputs
    depend on the state; box slides on the ground), 8.9e-16 with rk4 (rbd_fourbar)."""
    mech = dojo.load_scene(scene)
    whole = dojo.simulate(mech, 60)
    first = stored(tmp_path, scene, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same scene, complete run: nothing to warn about
        rest = dojo.simulate(mech, 30, from_run=first, index=-1)
    assert np.array_equal(rest.time, whole.time[30:])
    for name in ("x", "q", "v", "omega", "minimal_q", "minimal_v"):
        assert np.abs(getattr(rest, name) - getattr(whole, name)[30:]).max() <= tol, name


def test_an_earlier_state_and_negative_index(tmp_path):
    mech = dojo.load_scene("double_pendulum")
    whole = dojo.simulate(mech, 40)
    first = stored(tmp_path, "double_pendulum", 30)
    a = dojo.simulate(mech, 20, from_run=first, index=20)
    b = dojo.simulate(mech, 20, from_run=first, index=-11)  # 31 states: -11 is state 20
    assert np.array_equal(a.time, whole.time[20:]) and np.array_equal(a.x, b.x)
    assert np.abs(a.x - whole.x[20:]).max() == 0.0


def test_misuse_is_refused_and_another_scene_warned(tmp_path):
    first = stored(tmp_path, "double_pendulum", 10)
    mech = dojo.load_scene("double_pendulum")
    with pytest.raises(InputError, match="z0 or from_run"):
        dojo.simulate(mech, 5, z0=dojo.initial_state(mech), from_run=first)
    with pytest.raises(InputError):
        dojo.simulate(dojo.load_scene("box"), 5, from_run=first)  # other bodies
    with pytest.raises(InputError):
        dojo.simulate(mech, 5, from_run=first, index=11)  # no state 11
    other = dojo.load_scene("double_pendulum", ["name=renamed"])
    with pytest.warns(UserWarning, match="written by scene 'double_pendulum'"):
        dojo.simulate(other, 5, from_run=first)
