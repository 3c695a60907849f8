"""Springs and dampers against continuous time (issue 12, item 6).

The midpoint damper (the default) splits each step's impulse between its two ends, so the
step stays second order: the error against scipy's DOP853 on the same equations (rtol
1e-12) falls 4x per halving of h. The implicit form (L-stable, for stiff damping at large
steps) is first order: 2x. The step starts from midpoint velocities (Dojo's state), so each
run starts from the reference's configurations at t = -h and 0 (start_state): a start that
is itself first order would hide the order of the step.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dojo_cli as dojo
from dojo_cli.model.mechanism import ORIGIN, Joint, Mechanism
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.math.quaternion import conjugate, multiply
from dojo_cli.solver.options import SolverOptions
from tests.mechanisms import X, box_body, pendulum, slider

OPTS = SolverOptions(rtol=1e-12, max_iter=50)
HALVINGS = [4e-3, 2e-3, 1e-3, 5e-4]  # h: three halvings


def reference(f, y0, times):
    """DOP853 at rtol 1e-12 through `times` (which may start below 0)."""
    sol = solve_ivp(f, (0.0, times[0]), y0, method="DOP853", rtol=1e-12, atol=1e-14) if times[0] < 0 else None
    start = sol.y[:, -1] if sol is not None else y0
    out = solve_ivp(f, (times[0], times[-1]), start, method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
    return out.y


def start_state(mech, coords_before, coords_now):
    """The maximal state at t = 0 whose midpoint velocities carry the configuration at t = -h
    to the one at t = 0 exactly: v15 = (x0 - x_-1) / h, qmap(w15) = q_-1^* q0. A single
    joint: its minimal state is [coordinates; rates]."""
    zero = np.zeros(len(coords_now))
    before = minimal_to_maximal(mech, np.r_[coords_before, zero]).reshape(mech.nb, 13)
    now = minimal_to_maximal(mech, np.r_[coords_now, zero]).reshape(mech.nb, 13)
    h = mech.timestep
    for b in range(mech.nb):
        now[b, 3:6] = (now[b, 0:3] - before[b, 0:3]) / h
        # qmap(w) = (h/2) [sqrt(4/h^2 - |w|^2), w]: its vector part is h w / 2
        now[b, 10:13] = 2.0 / h * multiply(conjugate(before[b, 6:10]), now[b, 6:10])[1:]
    return now.reshape(-1)


def coordinate_error(mech, f, y0):
    """Largest |coordinate - reference| at every knot over 1 s from the reference state y0
    (coordinates, rates) at t = 0."""
    h, n = mech.timestep, len(y0) // 2
    steps = int(round(1.0 / h))
    ref = reference(f, np.asarray(y0, float), np.arange(-1, steps + 1) * h)[:n]
    z = start_state(mech, ref[:, 0], ref[:, 1])
    worst = 0.0
    for k in range(steps):
        z = dojo.step(mech, z, opts=OPTS)
        # a single joint: the minimal state is [coordinates; rates]
        worst = max(worst, np.abs(maximal_to_minimal(mech, z)[:n] - ref[:, k + 2]).max())
    return worst


def ratios(errors):
    return [errors[i] / errors[i + 1] for i in range(len(errors) - 1)]


# ------------------------------------------------------------ the damped planar body
K = np.array([20.0, 0.0, 0.0])  # a spring on y only
C = np.array([1.5, 0.8, 0.3])  # per-coordinate damping (y, z, rotation about x)
G = 9.81


def planar_body(h, form):
    """A 1 kg box on a planar_axis joint about X at its centre: coordinates (y, z, rx)
    (docs/physics.md, in-plane basis), each with its own damper."""
    body = box_body("b", (0.2, 0.4, 0.6), 1.0)
    joint = Joint("p", "planar_axis", ORIGIN, 0, axis=X, spring=K, damper=C, damper_form=form)
    return Mechanism([body], [joint], h, (0, 0, -G))


def planar_equations(mech):
    """m y'' = -k y - c y', m z'' = -m g - c z', J theta'' = -c theta' (decoupled: the joint
    point is the centre of mass)."""
    inertia = np.array([mech.mass[0], mech.mass[0], mech.inertia[0, 0, 0]])
    force = np.array([0.0, -mech.mass[0] * G, 0.0])

    def f(t, s):
        return np.r_[s[3:], (force - K * s[:3] - C * s[3:]) / inertia]

    return f


PLANAR_START = [0.3, 0.0, 0.5, 0.0, 2.0, 3.0]


@pytest.mark.parametrize("form, order", [("midpoint", 4.0), ("implicit", 2.0)])
def test_damped_planar_body_order(form, order):
    errors = []
    for h in HALVINGS:
        mech = planar_body(h, form)
        errors.append(coordinate_error(mech, planar_equations(mech), PLANAR_START))
    for r in ratios(errors):
        assert abs(r - order) < 0.1 * order, f"{form}: errors {errors}, ratios {ratios(errors)} (expected {order})"
    if form == "midpoint":
        assert errors[2] < 5e-6, f"h = 1e-3: {errors[2]:.2e}"


# ------------------------------------------------------------ spring-mass and damped pendulum
def test_damped_spring_mass_order():
    k, c = 40.0, 0.7
    errors = []
    for h in HALVINGS[:3]:
        mech = slider(h=h, gravity=(0, 0, 0), spring=k, damper=c)
        m = mech.mass[0]
        errors.append(coordinate_error(mech, lambda t, s: [s[1], (-k * s[0] - c * s[1]) / m], [0.2, -1.0]))
    for r in ratios(errors):
        assert abs(r - 4.0) < 0.4, f"errors {errors}, ratios {ratios(errors)}"


def test_damped_pendulum_order():
    """Dojo's pendulum (a 0.1 x 0.1 x 1 box hinged about X at its top end) with a damper:
    J_p theta'' = -m g (L/2) sin(theta) - c theta', J_p about the hinge."""
    c, length = 0.3, 1.0
    errors = []
    for h in HALVINGS[:3]:
        mech = pendulum(h=h, damper=c, length=length)
        m = mech.mass[0]
        jp = mech.inertia[0, 0, 0] + m * (length / 2) ** 2
        f = lambda t, s: [s[1], (-m * G * length / 2 * np.sin(s[0]) - c * s[1]) / jp]  # noqa: E731
        errors.append(coordinate_error(mech, f, [1.2, 0.5]))
    for r in ratios(errors):
        assert abs(r - 4.0) < 0.4, f"errors {errors}, ratios {ratios(errors)}"


def test_undamped_spring_energy_bounded_second_order():
    """A spring-mass over 200 periods: the energy error stays bounded (no drift) and O(h^2)."""
    k = 40.0
    spread = []
    for h in (4e-3, 2e-3):
        mech = slider(h=h, gravity=(0, 0, -G), spring=k)
        z0 = minimal_to_maximal(mech, np.array([0.2, 0.0]))
        traj = dojo.simulate(mech, int(round(200.0 / h)), z0, opts=OPTS)
        energy = dojo.mechanical_energy(mech, traj)
        half = len(energy) // 2
        first, second = np.ptp(energy[:half]), np.ptp(energy[half:])
        assert second < 1.05 * first, f"h = {h}: energy spread grows ({first:.3e} then {second:.3e})"
        spread.append(np.ptp(energy))
    assert abs(spread[0] / spread[1] - 4.0) < 0.4, f"energy spreads {spread}"
