"""The Python energy functions report one value per state (the knots t_0..t_T), as `dojo energy`
does; `dojo.initial_state` holds midpoint velocities, the trajectory's v, omega the knot ones."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app

runner = CliRunner()

# the knot velocity of a first step solved to this rtol is the given one to about this (rad/s)
KNOT_VELOCITY_TOL = 1e-9
TIGHT = dojo.SolverOptions(rtol=1e-12)


def test_python_energy_has_one_value_per_state_as_dojo_energy(tmp_path):
    mech = dojo.load_scene("pendulum")
    traj = dojo.simulate(mech, steps=50)
    energy = dojo.mechanical_energy(mech, traj)
    assert energy.shape == (51,) == traj.time.shape
    p, ang = dojo.momentum(mech, traj)
    assert p.shape == ang.shape == (51, 3)
    run, js = tmp_path / "p.h5", tmp_path / "p.json"
    assert runner.invoke(app, ["simulate", "pendulum", "--steps", "50", "-o", str(run), "-q"]).exit_code == 0
    res = runner.invoke(app, ["energy", str(run), "--json", str(js)])
    assert "51 states" in res.stdout
    assert np.allclose(json.loads(js.read_text())["mechanical"], energy, rtol=0, atol=1e-12)


def test_initial_state_holds_midpoint_velocities_knot_velocity_is_zero():
    mech = dojo.load_scene("pendulum")
    omega_mid = dojo.initial_state(mech).reshape(mech.nb, 13)[0, 10:13]
    # released from rest: the state holds half a step of its angular acceleration
    assert np.linalg.norm(omega_mid) == pytest.approx(0.052, abs=1e-3)
    traj = dojo.simulate(mech, steps=1, opts=TIGHT)
    assert np.abs(traj.omega[0]).max() < KNOT_VELOCITY_TOL and np.abs(traj.v[0]).max() < KNOT_VELOCITY_TOL
    assert "**midpoint** velocities" in dojo.initial_state.__doc__
    assert "dojo.simulate(mech, steps=1).v[0]" in dojo.initial_state.__doc__
