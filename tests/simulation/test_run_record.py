"""A run's record in one pass (core maximal/run_record.h): the minimal coordinates and knot
velocities of ``dojo.simulate`` are, bit for bit, what the functions it stands for give state
by state (``_core.testing``: minimal_coordinates_and_velocities then unwrap_angles, and the
velocity map with every quantity at dual numbers), so that its speed-up changed no stored
number. The scenes cover each kind of coordinate the record treats apart: an angle unwrapped
through many turns, one against its limits, prismatic coordinates, universal and gimbal
angles, a floating base."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core

TEST_SCENES = Path(__file__).resolve().parents[1] / "data" / "scenes"
STEPS = 60

CASES = {
    # 25 rad/s: over two turns in 60 steps, each step unwrapped from the one before
    "spinning pendulum": ("pendulum", {"joints.0.initial.velocity": [25.0]}),
    "pendulum_limit": ("pendulum_limit", None),
    "cartpole": ("cartpole", None),
    "universal_joints": (str(TEST_SCENES / "universal_joints.yaml"), None),
}


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_record_is_bit_for_bit_the_per_state_functions(case):
    source, overrides = CASES[case]
    mech = dojo.load_scene(source, overrides)
    traj = dojo.simulate(mech, steps=STEPS)
    T, nb = traj.steps, mech.nb
    assert T == STEPS and all(s == "success" for s in traj.status), case
    states = np.ascontiguousarray(np.stack([traj.state(k) for k in range(1, T + 1)]))
    want_q = np.asarray(_core.testing.unwrapped_coordinates_by_state(
        mech.core, states, np.ascontiguousarray(traj.state(0)), np.ascontiguousarray(traj.minimal_q[0])))
    assert _same_bits(traj.minimal_q[1:], want_q), (
        f"{case}: minimal_q differs by {np.abs(traj.minimal_q[1:] - want_q).max():.2e}")
    # the knots: positions with their knot velocities, [x, v, q, omega] per body
    knots = np.ascontiguousarray(np.concatenate([traj.x, traj.v, traj.q, traj.omega], axis=2).reshape(T + 1, 13 * nb))
    want_v = np.asarray(_core.testing.instantaneous_minimal_velocities_dual(mech.core, knots))
    assert _same_bits(traj.minimal_v, want_v), f"{case}: minimal_v differs by {np.abs(traj.minimal_v - want_v).max():.2e}"
    if case == "spinning pendulum":  # (the unwrapping is exercised: the angle went round)
        assert traj.minimal_q[-1, 0] - traj.minimal_q[0, 0] > 2 * 2 * np.pi, traj.minimal_q[-1, 0]


@pytest.mark.parametrize("scene", ["pendulum_limit", "box"])
def test_a_recorder_not_told_the_length_grows_to_the_same_run(scene):
    """TrajectoryRecorder() (no length: its arrays double from FIRST_ROWS) and dojo.simulate's
    (sized for the run, the rollout writing each block into its rows) hold the same run,
    the per-step records too (inputs, solver record, the box's contacts and interior-point
    start record, copied in block by block rather than joined at the end)."""
    from dojo_cli.simulation.run import run_scene
    from dojo_cli.simulation.trajectory import FIRST_ROWS, TrajectoryRecorder

    mech = dojo.load_scene(scene)
    steps = 3 * FIRST_ROWS  # grown twice
    want = dojo.simulate(mech, steps=steps)
    recorder = TrajectoryRecorder()
    run_scene(mech, steps, recorder, opts=mech.default_options)
    got = recorder.trajectory(mech)
    assert sorted(got.datasets()) == sorted(want.datasets())
    if scene == "box":
        assert {"contacts/distance", "solver/start"} <= set(want.datasets())
    for name, values in want.datasets().items():
        assert np.array_equal(np.asarray(got.datasets()[name]), np.asarray(values)), name


def test_the_rollout_writes_a_callers_rows_in_place():
    """rollout(out=...): the given arrays are the ones returned, written (not copies); an array
    of another shape is refused, naming it."""
    mech = dojo.load_scene("pendulum")
    z0 = dojo.initial_state(mech)
    theta = np.asarray(_core.unwrapped_coordinates(mech.core, z0[None])).reshape(mech.nf)
    opts = _core.SolverOptions()
    k = 5
    rows = {"states": np.full((k, 13 * mech.nb), np.nan), "knot_v": np.full((k + 1, mech.nb, 3), np.nan)}
    out = _core.rollout(mech.core, _core.Data(mech.core), z0, k, None, np.zeros(mech.nl), opts, False, theta, None, rows)
    want = _core.rollout(mech.core, _core.Data(mech.core), z0, k, None, np.zeros(mech.nl), opts, False, theta, None)
    for name, given in rows.items():
        assert np.shares_memory(out[name], given), name
        assert np.array_equal(given, want[name]), name
    with pytest.raises(ValueError, match="out\\['states'\\]"):
        _core.rollout(mech.core, _core.Data(mech.core), z0, k, None, np.zeros(mech.nl), opts, False, theta, None,
                      {"states": np.zeros((k + 1, 13 * mech.nb))})
