"""The one run loop (simulation.run): its per-block hook, and the record a variational block
brings back from its one core call (rollout's minimal coordinates and knot velocities),
against the functions that derive them one by one."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.physics.energy import knot_velocities
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.integrators import Variational
from dojo_cli.simulation.run import run_scene
from dojo_cli.simulation.trajectory import TrajectoryRecorder


@pytest.mark.parametrize("scene", ["pendulum", "box", "pendulum_limit"])
def test_a_blocks_core_record_is_the_one_derived_step_by_step(scene):
    """rollout(theta=...) returns, with the steps, the unwrapped minimal coordinates and the
    knot velocities of the state before the block and its states (the last extrapolated):
    bit for bit what unwrapped_coordinates, knot_velocities and the exact velocity map give
    for those states (the same core functions, one crossing instead of four)."""
    mech = dojo.load_scene(scene)
    integ = Variational(mech, initial_state(mech), controller=mech.controller, opts=mech.default_options)
    before = integ.before
    for k in (0, 40):
        block, stop = integ.advance(k, 40)
        assert stop is None and block.n == 40 and block.knot is not None, scene
        z = np.ascontiguousarray(block.z)
        mq = _core.unwrapped_coordinates(mech.core, z, np.ascontiguousarray(before[0]), np.ascontiguousarray(before[1]))
        assert np.array_equal(block.minimal_q, np.asarray(mq).reshape(block.n, mech.nf)), f"{scene}: minimal_q"
        states = np.concatenate([before[0][None], z]).reshape(block.n + 1, mech.nb, 13)
        v, omega, rates = knot_velocities(mech, states[:, :, 0:3], states[:, :, 6:10], states[:, :, 3:6],
                                          states[:, :, 10:13], True)
        for name, got, want in zip(("v", "omega", "minimal_v"), block.knot, (v, omega, rates)):
            assert np.array_equal(got, want), f"{scene}: knot {name} differs by {np.abs(got - want).max():.2e}"
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
