"""Contact behaviour: Dojo's cases (notes 9.7, 9.10, 9.11) and analytic friction cases,
through the public simulation and step; contact records (distance, impulses, slip) are
those the core leaves in mech.core_data after each step."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.api import simulate
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.options import SolverOptions
from tests.mechanisms import ball, ball_on, contact_box, limited_pendulum

G = 9.81
# Dojo's box-toss and collision tests, and the analytic comparisons (contact gap ~ btol /
# impulse), in SI units as Dojo states them (tolerances: absolute; the relative default is
# checked in tests/solver/test_tolerances.py)
# Dojo's test options, and its start (every step from Dojo's point): test_box_toss_comes_to_rest
# is Dojo's test with its bound |v| < 1e-8; a warm-started run rests to within the solver's
# tolerance too, 2e-8 to 2e-7 m/s (rtol |g| h), not below Dojo's bound
DOJO_EPS = SolverOptions(rtol=1e-6, btol=1e-6, tolerances="absolute", warm_start=False)
TIGHT = SolverOptions(rtol=1e-8, btol=1e-8, tolerances="absolute")


def run(mech, steps, y0, opts, **kw):
    tr = simulate(mech, steps, minimal_to_maximal(mech, np.asarray(y0, float)), opts=opts, **kw)
    assert set(tr.status) == {"success"}, f"solver failures: {set(tr.status)}"
    return tr


@pytest.mark.parametrize("h", [0.1, 0.05, 0.01, 0.005])
def test_box_toss_comes_to_rest(h):
    """Dojo: block with mu 0.1 tossed with spin comes to rest, |v| < 1e-8, height 0.25 (1e-3)."""
    mech = contact_box(h=h, mu=0.1)
    tr = run(mech, int(round(5.0 / h)), np.r_[0, 0, 0.75, 0, 0, 0, 1, 1.5, 1, np.array([5, 4, 2]) * h], DOJO_EPS)
    v = max(np.abs(tr.v[-1]).max(), np.abs(tr.omega[-1]).max())
    assert v < 1e-8, f"not at rest: |v| = {v:.2e}"
    assert abs(tr.x[-1, 0, 2] - 0.25) < 1e-3, f"height {tr.x[-1, 0, 2]:.6f}"
    assert np.median(tr.iterations) <= 15, f"median iterations {np.median(tr.iterations)}"


@pytest.mark.parametrize("phi", [0.0, np.pi / 6, np.pi / 4])
def test_sliding_box_stops_at_coulomb_distance(phi):
    """Nonlinear cone: a box sliding at v0 stops after v0^2 / (2 mu g) in its own direction,
    whatever that direction (the issue's bound is 1 %; measured ~4e-7)."""
    mu, v0, h = 0.3, 2.0, 0.01
    mech = contact_box(h=h, mu=mu, corners="bottom")
    d = np.array([np.cos(phi), np.sin(phi), 0.0])
    vm = v0 + mu * G * h / 2  # midpoint velocity before t = 0 consistent with v(0) = v0
    tr = run(mech, 150, np.r_[0, 0, 0.25, 0, 0, 0, vm * d, 0, 0, 0], TIGHT)
    travel = tr.x[-1, 0, :2] - tr.x[0, 0, :2]
    exact = v0**2 / (2 * mu * G)
    assert abs(np.linalg.norm(travel) / exact - 1) < 1e-3, f"distance {np.linalg.norm(travel):.5f} vs {exact:.5f}"
    assert abs(np.arctan2(travel[1], travel[0]) - phi) < 1e-6, "friction opposes the sliding direction"
    assert np.max(np.abs(tr.v[-1])) < 1e-8, "stopped"


def test_linear_cone_is_anisotropic():
    """The pyramid (4 directions) stops a box sliding at 30 degrees late and deflects it."""
    mu, v0, h, phi = 0.3, 2.0, 0.01, np.pi / 6
    mech = contact_box(h=h, mu=mu, model="linear", corners="bottom")
    d = np.array([np.cos(phi), np.sin(phi), 0.0])
    tr = run(mech, 150, np.r_[0, 0, 0.25, 0, 0, 0, (v0 + mu * G * h / 2) * d, 0, 0, 0], TIGHT)
    travel = tr.x[-1, 0, :2]
    exact = v0**2 / (2 * mu * G)
    assert np.linalg.norm(travel) > 1.1 * exact, "the pyramid's friction is weaker off its axes"
    assert abs(np.arctan2(travel[1], travel[0]) - phi) > 0.05, "and not opposite to the motion"
    along_axis = run(contact_box(h=h, mu=mu, model="linear", corners="bottom"), 150,
                     np.r_[0, 0, 0.25, 0, 0, 0, v0 + mu * G * h / 2, 0, 0, 0, 0, 0], TIGHT)
    assert abs(np.linalg.norm(along_axis.x[-1, 0, :2]) / exact - 1) < 1e-3, "exact along a pyramid axis"


THETA = 0.3
STICK_MU = np.tan(THETA) * 2 / 7  # 0.0883: rolling without slipping needs mu above this


@pytest.mark.parametrize("mu", [0.5, 0.1, 0.08, 0.05])
def test_sphere_on_incline(mu):
    """Above mu = tan(theta) 2/7 a sphere rolls, a = 5/7 g sin(theta), and its contact point
    sticks; below it slides, a = g (sin(theta) - mu cos(theta))."""
    r, h = 0.25, 0.01
    n = np.array([0.0, -np.sin(THETA), np.cos(THETA)])
    downhill = np.array([0.0, -np.cos(THETA), -np.sin(THETA)])
    rolls = mu > STICK_MU
    expected = 5 / 7 * G * np.sin(THETA) if rolls else G * (np.sin(THETA) - mu * np.cos(THETA))
    mech = ball(radius=r, mu=mu, h=h, normal=n)
    tr = simulate(mech, 100, minimal_to_maximal(mech, np.r_[r * n, 0, 0, 0, -expected * h / 2 * downhill, 0, 0, 0]), opts=TIGHT)
    assert set(tr.status) == {"success"}
    s = (tr.x[:, 0] - tr.x[0, 0]) @ downhill
    a = 2 * np.polyfit(tr.time, s, 2)[0]
    assert abs(a / expected - 1) < 1e-3, f"acceleration {a:.5f} vs {expected:.5f} ({'roll' if rolls else 'slide'})"
    assert np.max(np.abs(tr.x[:, 0] @ n - r)) < 1e-6, "stays on the plane"
    _, result = solve_step(mech, tr.state(50), opts=TIGHT)
    assert result.success, result.status
    slip = np.linalg.norm(mech.core_data.contact_slip)
    # rolling: the relaxed cone leaves a slip ~ kappa / (mu gn), 3e-6 m/s at mu = 0.1
    assert (slip < 1e-4) if rolls else (slip > 0.1), f"contact slip speed {slip:.2e}"


def test_joint_limit_pendulum_settles_at_limit():
    """Dojo: pendulum with limits [pi/4, pi] from 0.4 pi settles at its limit pi/4 (1e-3)."""
    mech = limited_pendulum(h=0.01)
    tr = run(mech, 100, [0.4 * np.pi, 0.0], SolverOptions(rtol=1e-5, btol=1e-5))
    assert abs(tr.minimal_q[-1, 0] - np.pi / 4) < 1e-3, f"final angle {tr.minimal_q[-1, 0]:.5f}"
    assert np.min(tr.minimal_q[:, 0]) > np.pi / 4 - 1e-3, "never passes the limit"


@pytest.mark.parametrize("model", ["nonlinear", "linear", "impact"])
def test_ball_rests_on_ball(model):
    """Dojo's sphere-sphere drop (h 0.1, 2 s): the ball rests on top at [0, 0, 1] (1e-4)."""
    mech = ball_on("sphere", model=model, h=0.1)
    tr = run(mech, 20, np.r_[0, 0, 2, 0, 0, 0, np.zeros(6)], DOJO_EPS)
    assert np.max(np.abs(tr.x[-1, 1] - [0, 0, 1])) < 1e-4, tr.x[-1, 1]


@pytest.mark.parametrize(
    "kind,start,velocity",
    [("capsule", (0, 0, 2), 0), ("capsule", (0.2, 0.5, 2), 0), ("box", (0, 0, 2), 0), ("box", (0.3, 0.2, 2), 0),
     ("box", (0, 0, -2), 10), ("box", (2, 0, 0.3), 0)],
)
def test_ball_never_penetrates_capsule_or_box(kind, start, velocity):
    """Dojo's capsule and box cases (h 0.05, 1 s): no step ends penetrating; a ball dropped
    on top rests on it."""
    mech = ball_on(kind, h=0.05)
    tr = run(mech, 20, np.r_[start, 0, 0, 0, 0, 0, velocity, 0, 0, 0], DOJO_EPS)
    # each step's record holds the distance at the configuration it ends in
    d = tr.contact_distance[:, 0]
    assert d.min() > -1e-6, f"penetration {d.min():.2e} at the end of step {np.argmin(d)}"
    if start[:2] == (0, 0) and velocity == 0:
        assert np.max(np.abs(tr.x[-1, 1] - [0, 0, 1])) < 1e-3, f"rests on top: {tr.x[-1, 1]}"
