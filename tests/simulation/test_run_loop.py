"""The one run loop (simulation.run): its per-block hook, the record a block brings back from
its one core call (minimal coordinates and knot velocities) against the functions that
derive them one by one, and the run's one shape (Trajectory) to and from a storage file."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from typer.testing import CliRunner

from dojo_cli import _core
from dojo_cli.cli.app import app
from dojo_cli.io.storage import StorageWriter, read_storage
from dojo_cli.model.controller import Controller
from dojo_cli.physics.energy import knot_momenta, knot_velocities
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.integrators import Rk4, Variational, knot_identity
from dojo_cli.simulation.run import run_scene
from dojo_cli.simulation.trajectory import TrajectoryRecorder, write_trajectory


class _PythonLaw(Controller):
    """A controller the core has no copy of (a Controller subclass): the loop steps it one
    state at a time, each step's record from _core.run_record."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, mech, k, z):
        return self.inner(mech, k, z)


@pytest.mark.parametrize("scene, python_law", [("pendulum", False), ("box", False), ("pendulum_limit", False),
                                               ("hopper", False), ("hopper", True)])
def test_a_blocks_core_record_is_the_one_derived_step_by_step(scene, python_law):
    """rollout(theta=...) returns, with the steps, the unwrapped minimal coordinates and the
    knot velocities of the state before the block and its states (the last extrapolated),
    and run_record the same for a closed-loop step: bit for bit what unwrapped_coordinates,
    knot_velocities and the exact velocity map give for those states (the same core
    functions, one crossing instead of four). (hopper: its PD in the core's rollout, and
    in Python, one step a block.)"""
    mech = dojo.load_scene(scene)
    controller = _PythonLaw(mech.controller) if python_law else mech.controller
    integ = Variational(mech, initial_state(mech), controller=controller, opts=mech.default_options)
    assert integ.fast != python_law, scene
    before = integ.before
    n = 40 if integ.fast else 1
    for k in (0, n):
        block, stop = integ.advance(k, n)
        assert stop is None and block.n == n and block.knot is not None, scene
        z = np.ascontiguousarray(block.z)
        mq = _core.unwrapped_coordinates(mech.core, z, np.ascontiguousarray(before[0]), np.ascontiguousarray(before[1]))
        assert np.array_equal(block.minimal_q, np.asarray(mq).reshape(block.n, mech.nf)), f"{scene}: minimal_q"
        states = np.concatenate([before[0][None], z.reshape(block.n, -1)]).reshape(block.n + 1, mech.nb, 13)
        v, omega, rates = knot_velocities(mech, states[:, :, 0:3], states[:, :, 6:10], states[:, :, 3:6],
                                          states[:, :, 10:13], True)
        for name, got, want in zip(("v", "omega", "minimal_v"), block.knot, (v, omega, rates)):
            assert np.array_equal(got, want), f"{scene}: knot {name} differs by {np.abs(got - want).max():.2e}"
        before = integ.before


def test_an_rk4_blocks_core_record_is_the_one_derived_step_by_step():
    """rk4_run with a record: the bodies' unwrapped minimal coordinates and their exact knot
    rates, bit for bit those of unwrapped_coordinates and knot_identity."""
    mech = dojo.load_scene("double_pendulum", ["integrator=rk4"])
    integ = Rk4(mech, controller=mech.controller)
    before = integ.before
    for k in (0, 30):
        block, stop = integ.advance(k, 30)
        assert stop is None and block.n == 30 and block.knot is not None
        z = np.ascontiguousarray(block.z)
        mq = _core.unwrapped_coordinates(mech.core, z, np.ascontiguousarray(before[0]), np.ascontiguousarray(before[1]))
        assert np.array_equal(block.minimal_q, np.asarray(mq).reshape(block.n, mech.nf)), "minimal_q"
        states = np.concatenate([before[0][None], z]).reshape(block.n + 1, mech.nb, 13)
        want = knot_identity(mech, states[:, :, 0:3], states[:, :, 6:10], states[:, :, 3:6], states[:, :, 10:13])
        for name, got, w in zip(("v", "omega", "minimal_v"), block.knot, want):
            assert np.array_equal(got, w), f"knot {name} differs by {np.abs(got - w).max():.2e}"
        before = integ.before


def test_every_block_reaches_the_per_block_hook_once():
    """on_block sees each block as it is written, in order: their states are the run's."""
    mech = dojo.load_scene("box")
    seen = []
    recorder = TrajectoryRecorder()
    summary = run_scene(mech, 300, recorder, on_block=lambda block: seen.append((block.k0, block.z.copy())))
    traj = recorder.trajectory(mech)
    assert [k for k, _ in seen] == sorted(k for k, _ in seen) and seen[0][0] == 0
    z = np.concatenate([z for _, z in seen])
    assert summary.steps == 300 and len(z) == 300
    assert np.array_equal(z, np.stack([traj.state(k) for k in range(1, 301)]))


@pytest.mark.parametrize("scene, sets", [("box", []), ("double_pendulum", ["integrator=rk4"]), ("quadruped", [])])
def test_a_run_file_read_back_is_the_trajectory_of_the_same_run(tmp_path, scene, sets):
    """`dojo simulate` and dojo.simulate are one run driver into two writers: the file read
    back as a Trajectory holds the in-memory run's arrays bit for bit; written back from
    that Trajectory (write_trajectory), a file reads back the same again. (quadruped: a PD
    run, its blocks stepped by the core's rollout with the law in it.)"""
    out = tmp_path / "run.h5"
    args = ["simulate", scene, "--steps", "120", "-q", "-o", str(out)]
    for s in sets:
        args += ["--set", s]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    mech = dojo.load_scene(scene, sets)
    memory = dojo.simulate(mech, steps=120)
    run = read_storage(out)
    _assert_same(run.trajectory, memory, scene)
    again = tmp_path / "again.h5"
    with StorageWriter(again, scene_yaml=run.scene_yaml, scene_name=scene, timestep=mech.timestep,
                       gravity=list(mech.gravity), solver_options={}, integrator=run.attrs["integrator"],
                       body_names=run.body_names, minimal_q_names=run.minimal_q_names,
                       minimal_v_names=run.minimal_v_names, input_dim=mech.nu, dojo_cli_version="0",
                       velocities="knot", momenta=lambda q, v, w: knot_momenta(mech, q, v, w)) as writer:
        write_trajectory(writer, memory)
    _assert_same(read_storage(again).trajectory, memory, scene)


def _assert_same(a, b, scene):
    for name in vars(b):
        u, v = getattr(a, name), getattr(b, name)
        if isinstance(v, list) or v is None:
            assert u == v, f"{scene}: {name}"
        else:
            assert np.asarray(u).shape == np.asarray(v).shape, f"{scene}: {name} shape"
            assert np.array_equal(u, v, equal_nan=True), f"{scene}: {name} differs by {np.nanmax(np.abs(u - v)):.2e}"
