"""Contacts that start a step inside their surface (core maximal/recovery.h, the gap target of
restitution.h; docs/physics.md, "Contacts that start inside"): the gap row allows the step to
end with the penetration of the critically damped recurrence that brings a joint into its
range (test_limit_recovery.py), so a body that starts inside another comes out over MuJoCo's
soft-contact time constant instead of within one step. Before, gym-xarm's peg_in_box box,
3.25 cm inside its table at h = 1 ms, left at 32.5 m/s and was 28 m up after 1 s (MuJoCo:
on the table, 0.574 m; now 0.5741). Outside its surface a contact is Dojo's, unchanged (the
goldens)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.simulation.step import step
from tests.properties.test_limit_recovery import RECOVERY_BAND, RECOVERY_STEPS, RECOVERY_TIME, allowed_violation
from tests.simulation.test_gradients import KAPPA, TIGHT, TOL, check_state_and_input

DEPTH = 0.03  # m: the cube's bottom face starts this far inside the ground
HALF = 0.25  # m: the built-in box's half edge
# Depths solved at TIGHT's tolerances (1e-10): the held penetration to rounding of the step's rows
DEPTH_TOL = 1e-8


def sunk_box(timestep: float = 0.002, tilt=(0.0, 0.0, 0.0)):
    """The built-in cube (0.5 m, 1 kg, 8 corner contacts, mu 0.8) at rest with its centre
    DEPTH lower than resting on a face (turned by the rotation vector ``tilt``)."""
    return dojo.load_scene("box", {"timestep": timestep, "joints.0.initial.position": [0, 0, HALF - DEPTH, *tilt],
                                   "joints.0.initial.velocity": [0, 0, 0, 0, 0, 0]})


def test_a_box_inside_the_ground_comes_out_as_the_recurrence_allows():
    """Gravity presses the cube into the ground, so its bottom corners' rows hold it where the
    recurrence allows: the depth after each step is the recurrence's from the depth and rate
    before it (from rest: (2 a - a^2) e first) until T, and never more after; it rises from rest
    never faster than the recurrence's fastest, DEPTH / (e T) (0.55 m/s, MuJoCo's 0.57; 15 m/s
    in one step before), and rests on the ground after 10 T, every step converged."""
    mech = sunk_box()
    h = mech.timestep
    T = max(RECOVERY_TIME, RECOVERY_STEPS * h)
    z = dojo.initial_state(mech)
    depth = DEPTH
    for k in range(1, int(round(10 * T / h)) + 1):
        # the penetration's rate over the last step: the state's midpoint velocity, down (the
        # initial state's is the t = 0 solve's, -0.10 m/s: its knot velocity is zero)
        want = allowed_violation(depth, -z[5], h)
        z = step(mech, z, None, TIGHT)
        got = HALF - z[2]
        # held where the recurrence allows while it closes slower than the cube would fall out
        # (past its peak rate, T, it slows faster than gravity does, and the rows let go)
        assert got <= want + DEPTH_TOL, f"step {k}: depth {got:.10f}, above the recurrence's {want:.10f}"
        if k * h <= T:
            assert abs(got - want) < DEPTH_TOL, f"step {k}: depth {got:.10f}, the recurrence's {want:.10f}"
        speed = (depth - got) / h
        # the continuous recurrence's peak, or the last two bands closed in a step
        fastest = max(DEPTH / (math.e * T), 2 * RECOVERY_BAND / h)
        assert speed < fastest, f"step {k}: out at {speed:.3f} m/s, the recurrence's fastest {fastest:.3f}"
        depth = got
    assert abs(z[2] - HALF) < DEPTH_TOL and np.abs(z[3:6]).max() < 1e-6, z[:6]


def test_a_run_from_inside_converges_and_never_launches():
    """The built-in cube's run from 3 cm inside, at h = 10 ms and 2 ms: every step converges, it
    does not leave the ground (no kick; MuJoCo's soft contact neither), and it ends resting on a
    face."""
    for h in (0.01, 0.002):
        _run_from_inside(h)


def _run_from_inside(h: float) -> None:
    mech = sunk_box(h)
    traj = dojo.simulate(mech, steps=int(round(0.6 / h)))
    assert all(s == "success" for s in traj.status), traj.status
    assert traj.x[:, 0, 2].max() <= HALF + 1e-3  # (the default tolerances rest it 0.1 mm up)
    assert abs(traj.x[-1, 0, 2] - HALF) < 1e-3 and np.abs(traj.v_mid[-1]).max() < 1e-3


@pytest.mark.parametrize("tilt,kappa", [([0.02, -0.03, 0.0], KAPPA), ([0.0, 0.0, 0.0], KAPPA), ([0.0, 0.0, 0.0], None)])
def test_gradients_of_a_step_from_inside_match_finite_differences(tilt, kappa):
    """A of a step from inside the ground (each bottom corner's allowed penetration depends on
    the state through its distance and rate at z2: gradients.cpp, the gap target's jacobian)
    against four-point central differences, the first two steps (from rest, then rising):
    relaxed, tilted (four corners at different depths) and level; where the solver stopped,
    level (tilted, the corners' friction turns the cube as it rises, where the solver's map
    is not smooth to the differences' resolution, with or without the recovery: a level cube
    sliding on the ground has 2e-4 there)."""
    mech = sunk_box(0.002, tilt)
    z = dojo.initial_state(mech)
    for _ in range(2):
        err = check_state_and_input(mech, z, None, kappa)
        assert err < TOL, f"relative error {err:.2e}"
        z = step(mech, z, None, TIGHT)
        assert z[2] < HALF - 0.01  # still inside: the recovery is in the step
