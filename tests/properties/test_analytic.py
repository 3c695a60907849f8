"""Analytic solutions and convergence order."""

from __future__ import annotations

import numpy as np
from scipy.special import ellipk

from dojo_cli.model.mechanism import ORIGIN, Body, Joint, Mechanism
from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.physics.energy import body_momenta
from dojo_cli.api import simulate
from dojo_cli.solver.options import SolverOptions
from tests.mechanisms import pendulum, slider

TIGHT = SolverOptions(rtol=1e-12)


def crossing_times(t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Times where s changes sign from - to +, linearly interpolated."""
    i = np.flatnonzero((s[:-1] < 0) & (s[1:] >= 0))
    return t[i] - s[i] * (t[i + 1] - t[i]) / (s[i + 1] - s[i])


def pendulum_period_error(h: float, theta0: float) -> float:
    mech = pendulum(h=h)
    # midpoint velocity of the interval before t = 0 consistent with rest at t = 0:
    # theta_dot(-h/2) = +h/2 * (m g d / I) sin(theta0) (theta_ddot = -(m g d/I) sin theta)
    body = mech.bodies[0]
    d, m, g = 0.5, body.mass, 9.81
    inertia_pivot = body.inertia[0, 0] + m * d * d
    w2 = m * g * d / inertia_pivot
    z0 = minimal_to_maximal(mech, np.array([theta0, 0.5 * h * w2 * np.sin(theta0)]))
    steps = int(round(12.0 / h))
    tr = simulate(mech, steps, z0, opts=TIGHT)
    theta = tr.minimal_q[:, 0]
    period = np.mean(np.diff(crossing_times(tr.time, theta)))
    exact = 4.0 / np.sqrt(w2) * ellipk(np.sin(theta0 / 2) ** 2)  # scipy's ellipk takes m = k^2
    return abs(period - exact) / exact


def test_large_amplitude_pendulum_period():
    """Physical pendulum released at 2.5 rad: T = 4 sqrt(I/(m g d)) K(sin(theta0/2))."""
    err = pendulum_period_error(0.005, 2.5)
    assert err < 1e-3, f"period relative error {err:.2e}"


def test_harmonic_slider_frequency_and_peaks():
    """Dojo's Slider 1 (no gravity, k = 10, z0 = 0.5): peak height and velocity within 1e-4,
    and the period 2 pi sqrt(m/k) within 1e-4."""
    k, z0, h = 10.0, 0.5, 0.01
    mech = slider(h=h, gravity=(0, 0, 0), spring=k)
    tr = simulate(mech, 500, minimal_to_maximal(mech, np.array([z0, 0.0])), opts=TIGHT)
    z = tr.minimal_q[:, 0]
    p, _ = body_momenta(mech, tr.v_mid, tr.omega_mid)
    vz = p[:, 0, 2] / mech.mass[0]  # Legendre-transform velocity at the states
    assert abs(np.max(z) - z0) < 1e-4, f"peak height error {abs(np.max(z) - z0):.2e}"
    assert abs(np.max(np.abs(vz)) - z0 * np.sqrt(k)) < 1e-4, f"peak velocity {np.max(np.abs(vz)):.6f}"
    period = np.mean(np.diff(crossing_times(tr.time, z)))
    exact = 2 * np.pi / np.sqrt(k)
    assert abs(period - exact) / exact < 1e-4, f"period {period:.6f} vs {exact:.6f}"


def test_free_fall_exact():
    """With the midpoint velocity v(-h/2) = v0 - g h/2, positions on the grid are exact."""
    h = 0.01
    shape_free = Body("ball", 2.0, np.eye(3) * 0.1)
    mech = Mechanism([shape_free], [Joint("free", "floating", ORIGIN, 0)], h, (0, 0, -9.81))
    g = mech.gravity
    v0 = np.array([1.0, -0.5, 3.0])
    y = np.r_[0, 0, 10, 0, 0, 0, v0 - 0.5 * h * g, 0, 0, 0]
    tr = simulate(mech, 200, minimal_to_maximal(mech, y), opts=TIGHT)
    t = tr.time[:, None]
    exact = np.array([0, 0, 10.0]) + v0 * t + 0.5 * g * t**2
    err = np.max(np.abs(tr.x[:, 0] - exact))
    assert err < 1e-10, f"free-fall position error {err:.2e}"


def test_symmetric_top_precession_rate():
    """Torque-free symmetric top (I1 = I2): the body-frame angular velocity's transverse part
    rotates at (I3 - I1)/I1 * w3."""
    i1, i3, w3, h = 0.1, 0.3, 5.0, 0.001
    mech = Mechanism([Body("top", 1.0, np.diag([i1, i1, i3]))], [Joint("free", "floating", ORIGIN, 0)], h, (0, 0, 0))
    z0 = minimal_to_maximal(mech, np.r_[0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0, w3])
    tr = simulate(mech, 3000, z0, opts=TIGHT)
    _, spin = body_momenta(mech, tr.v_mid, tr.omega_mid)
    phase = np.unwrap(np.arctan2(spin[:, 0, 1], spin[:, 0, 0]))
    rate = np.polyfit(tr.time[: len(phase)], phase, 1)[0]
    exact = (i3 - i1) / i1 * w3
    assert abs(rate - exact) / exact < 1e-4, f"precession rate {rate:.6f} vs {exact:.6f}"


def test_second_order_convergence():
    """Pendulum angle at t = 1 s against a fine-step reference: error ratio ~4 per halving."""
    theta0 = 1.0

    def angle_at_1s(h):
        mech = pendulum(h=h)
        body = mech.bodies[0]
        w2 = body.mass * 9.81 * 0.5 / (body.inertia[0, 0] + body.mass * 0.25)
        z0 = minimal_to_maximal(mech, np.array([theta0, 0.5 * h * w2 * np.sin(theta0)]))
        tr = simulate(mech, int(round(1.0 / h)), z0, opts=TIGHT)
        return tr.minimal_q[-1, 0]

    reference = angle_at_1s(0.0005)
    errors = [abs(angle_at_1s(h) - reference) for h in (0.02, 0.01, 0.005)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(orders > 1.8), f"observed orders {orders} (errors {errors})"
