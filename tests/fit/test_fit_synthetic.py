"""`dojo fit` on synthetic data: recordings simulated with known parameters are fitted back
(issue 27, "How it is checked"), and the loss's Jacobian agrees with finite differences.

Oracle: the parameters the data was simulated with. Without noise the fit recovers them to
1e-6 (relative): the one-step residuals are exactly zero there, up to the solver's
tolerance, which the data and the fit share. With 1 mm of noise on the positions they are
recovered within the reported standard errors (the Gauss-Newton covariance).
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.fit.problem import FitProblem, Parameters, Recording
from dojo_cli.fit.solve import covariance, marginal_jacobian, solve
from dojo_cli.fit.task import FitOptions
from dojo_cli.math.quaternion import multiply, normalize, quaternion_from_rotation_vector

# The data and the fit solve their steps with the scene's tolerances (rtol 1e-8, btol 1e-6 in
# its units, scenes/contact/cube_toss.yaml): tighter absolute ones fail steps in these units
# (btol 1e-8: 5 of 420 steps of six tosses, 1e-10: 179), the scale problem of issue 27 item 5.
TIGHT: dict = {}
RECOVERY_RTOL = 1e-6
# The cost at the truth is the steps' own tolerance squared (measured 4e-12 of the start's).
COST_DROP = 1e-10
# Central differences of the residuals, relative step; the IFT derivative is taken where
# the solver stopped (btol 1e-6 from exact complementarity) and each differenced solve stops
# elsewhere: measured up to 2e-4 of a column's largest entry (docs/gradients.md).
FD_STEP = 1e-6
FD_TOLERANCE = 1e-3
# 1 mm in the scene's units (half widths of 52.4 mm).
NOISE = 1e-3 / 0.0524
# Reported standard errors: the true value within this many of them. The Gauss-Newton
# covariance assumes a smooth model; contact makes the residuals piecewise smooth, and the
# errors come out somewhat optimistic: with this seed the largest miss of the five
# parameters is 3.2 of them (docs/fit.md, "Standard errors"), so the band is 4, not 3.
SIGMAS = 4.0
STEPS = 70

TRUE = {"friction": 0.35, "restitution": 0.3, "inertia": 0.27}
CORNER_SHIFT = {"contacts.corner_ppp.offset.x": 0.93, "contacts.corner_pmp.offset.z": 1.04}


def _tosses(mech, count: int, seed: int) -> list[Recording]:
    """Recordings of tosses from random states, simulated with ``mech``."""
    rng = np.random.default_rng(seed)
    out, touched = [], set()
    for i in range(count):
        pose = np.concatenate([[0.0, 0.0, 2.5 + rng.uniform(0, 1)], normalize(rng.normal(size=4))])
        velocity = np.concatenate([rng.uniform(-15, 15, 2), [rng.uniform(-5, 5)], rng.uniform(-15, 15, 3)])
        z = dojo.initial_state(mech, positions=[pose], velocities=[velocity])
        traj = dojo.simulate(mech, steps=STEPS, z0=z)
        assert set(traj.status) == {"success"}
        assert np.min(traj.x[:, 0, 2]) < 1.2, "the toss reaches the table"
        out.append(Recording(f"toss{i}", traj.time, traj.x.copy(), traj.q.copy()))
        touched |= {c.name for k, c in enumerate(mech.contacts) if np.any(traj.contact_normal_impulse[:, k] > 0.0)}
    # a corner that never touches the table is not in the data: its offset cannot be recovered
    assert {label.split(".")[1] for label in CORNER_SHIFT} <= touched, touched
    return out


def _parameters(mech) -> Parameters:
    names = [c.name for c in mech.contacts]
    groups = [[f"contacts.{n}.friction" for n in names], [f"contacts.{n}.restitution" for n in names],
              [f"bodies.cube.inertia.{c}" for c in ("xx", "yy", "zz")]] + [[label] for label in CORNER_SHIFT]
    start = np.array([0.2, 0.1, 0.3, 1.0, 1.0])
    return Parameters(["friction", "restitution", "inertia"] + list(CORNER_SHIFT), groups,
                      np.array([0.0, 0.0, 0.05, 0.5, 0.5]), np.array([2.0, 1.0, 2.0, 1.5, 1.5]), start)


@pytest.fixture(scope="module")
def truth():
    mech = dojo.load_scene("cube_toss", TIGHT)
    true = np.array([TRUE["friction"], TRUE["restitution"], TRUE["inertia"]] + list(CORNER_SHIFT.values()))
    params = _parameters(mech)
    return mech, params, true, params.labels, params.expand(true)


def test_recovers_the_parameters_without_noise(truth):
    mech, params, true, labels, values = truth
    data_mech = dojo.with_parameters(mech, labels, values)
    problem = FitProblem(mech, params, _tosses(data_mech, 3, seed=1), loss="one_step", opts=mech.default_options)
    status, x, starts, evaluations, log = solve(problem, FitOptions(max_evaluations=40, tolerance=1e-14))
    error = np.abs(x - true) / np.abs(true)
    assert np.max(error) < RECOVERY_RTOL, dict(zip(params.names, error))
    assert log[-1]["best_cost"] < COST_DROP * log[0]["cost"], "the residual vanishes at the truth"


def test_noisy_data_within_the_reported_standard_errors(truth):
    """1 mm of noise on the positions (and as much, 0.019 rad, on the orientations: the
    rotation_weight of 1 unit makes both residuals the same size): multiple shooting over
    windows of 10 steps with the windows' start states fitted too, so the noise does not
    enter the states the steps start from (the one-step loss, whose states are differences
    of noisy poses, is biased far beyond its errors: friction 1.38 for 0.35)."""
    mech, params, true, labels, values = truth
    data_mech = dojo.with_parameters(mech, labels, values)
    tosses = _tosses(data_mech, 3, seed=2)
    rng = np.random.default_rng(3)
    for rec in tosses:
        rec.x += rng.normal(0.0, NOISE, rec.x.shape)
        turn = quaternion_from_rotation_vector(rng.normal(0.0, NOISE / 2.0, rec.x.shape))   # residual 2 vec(dq) ~ angle
        rec.q = multiply(rec.q, turn)
    problem = FitProblem(mech, params, tosses, loss="shooting", window=10, opts=mech.default_options, fit_states=True)
    status, x, starts, evaluations, log = solve(problem, FitOptions(max_evaluations=30))
    r, J, _ = problem.evaluate(x)
    err, corr = covariance(marginal_jacobian(problem, J), r, extra=problem.state_size)
    p = len(params.names)
    assert np.all(np.isfinite(err)) and np.all(err > 0)
    miss = np.abs(x[:p] - true) / err
    report = {n: f"{v:.4g} vs {t:.4g} (+- {e:.2g})" for n, v, t, e in zip(params.names, x, true, err)}
    assert np.max(miss) < SIGMAS, report
    # the errors are the noise's, not a loose bound: each under 20 % of its value (measured 5 to 12 %)
    assert np.all(err < 0.2 * np.abs(true)), report


@pytest.mark.parametrize("loss, window, depends", [
    ("one_step", 1, ("friction", "restitution", "inertia", "contacts.corner_ppp.offset.x", "contacts.corner_pmp.offset.z")),
    ("shooting", 5, ("friction", "inertia", "contacts.corner_ppp.offset.x", "contacts.corner_pmp.offset.z")),
])
def test_jacobian_agrees_with_finite_differences(truth, loss, window, depends):
    """Over the flight, the impacts and the tumble of two tosses (not their last frames,
    where the cube rests on four corners: four normal impulses for three constraints, the
    impulses and so their derivatives not unique), against central differences. Restitution
    acts only at the steps that predict an impact (core/maximal/restitution.h), which the
    shooting windows of these tosses do not start in: it is checked by the one-step loss."""
    mech, params, true, labels, values = truth
    data_mech = dojo.with_parameters(mech, labels, values)
    tosses = [Recording(r.name, r.time[:n], r.x[:n], r.q[:n])
              for seed, n in ((2, 35), (4, 45)) for r in _tosses(data_mech, 1, seed=seed)]
    problem = FitProblem(mech, params, tosses, loss=loss, window=window, opts=mech.default_options)
    theta = params.initial
    _, J, _ = problem.evaluate(theta)
    for j, name in enumerate(params.names):
        e = np.zeros_like(theta)
        e[j] = FD_STEP * max(1.0, abs(theta[j]))
        fd = (problem.evaluate(theta + e, False)[0] - problem.evaluate(theta - e, False)[0]) / (2 * e[j])
        scale = np.max(np.abs(fd))
        if name in depends:
            assert scale > 1e-3, f"{name}: the loss does not depend on it (max |dr/dp| {scale:.1e})"
        gap = np.max(np.abs(fd - J[:, j])) / max(scale, 1e-300)
        assert gap < FD_TOLERANCE, f"{name}: max |J - FD| = {gap:.2e} of max |FD| {scale:.2e}"


def test_mass_and_inertia_together_are_not_determined(truth):
    """Contacts and gravity scale with the mass: only I / m shows in the motion, so a fit of
    both reports standard errors far beyond the values and a correlation of 1 (fitted
    alone, the inertia's is small)."""
    mech, params, true, labels, values = truth
    tosses = _tosses(dojo.with_parameters(mech, labels, values), 1, seed=2)
    inertia = [f"bodies.cube.inertia.{c}" for c in ("xx", "yy", "zz")]
    both = Parameters(["mass", "inertia"], [["bodies.cube.mass"], inertia], np.array([0.01, 0.01]),
                      np.array([10.0, 10.0]), np.array([0.37, 0.27]))
    alone = Parameters(["inertia"], [inertia], np.array([0.01]), np.array([10.0]), np.array([0.27]))
    errors = {}
    for what, p in (("both", both), ("alone", alone)):
        r, J, _ = FitProblem(mech, p, tosses, loss="one_step", opts=mech.default_options).evaluate(p.initial)
        errors[what] = covariance(J, r)
    (err, corr), (err_alone, _) = errors["both"], errors["alone"]
    assert np.all(err > 100 * both.initial), f"standard errors {err} of values {both.initial}"
    assert abs(corr[0, 1]) > 0.999, corr
    assert err_alone[0] < 0.1 * alone.initial[0], err_alone


@pytest.mark.parametrize("loss, window, fit_states", [("one_step", 1, False), ("shooting", 8, True)])
def test_two_worker_processes_compute_the_same_numbers(truth, loss, window, fit_states):
    """The segments are independent given the parameters: split over two forked processes
    (solver.workers) the residuals and Jacobian are the serial ones, to the last bit."""
    mech, params, true, labels, values = truth
    tosses = [Recording(r.name, r.time[:40], r.x[:40], r.q[:40])
              for r in _tosses(dojo.with_parameters(mech, labels, values), 2, seed=2)]
    serial = FitProblem(mech, params, tosses, loss=loss, window=window, opts=mech.default_options, fit_states=fit_states)
    split = FitProblem(mech, params, tosses, loss=loss, window=window, opts=mech.default_options, fit_states=fit_states,
                       workers=2)
    theta = serial.initial() + 0.01
    try:
        r1, J1, f1 = serial.evaluate(theta)
        r2, J2, f2 = split.evaluate(theta)
        assert split._pool is not None, "the split problem used its workers"
    finally:
        split.close()
    J1, J2 = (J.toarray() if hasattr(J, "toarray") else J for J in (J1, J2))
    assert np.array_equal(r1, r2) and np.array_equal(J1, J2) and f1 == f2


def test_fitted_starts_inside_a_surface_are_residuals_with_exact_derivatives(truth):
    """With fit_states, each window's start state's contacts inside their surfaces are
    residuals (fit.problem.start_penetration: min(0, d), zero outside), so a noisy start is
    not left inside, where a step brings it out over the recovery's time constant, a motion
    the data does not have. Their Jacobian, in the start-state offsets and in the corners'
    offsets, against central differences of the residuals (closed-form geometry: to 1e-6)."""
    mech, params, true, labels, values = truth
    data_mech = dojo.with_parameters(mech, labels, values)
    (rec,) = _tosses(data_mech, 1, seed=2)
    rng = np.random.default_rng(3)
    rec.x += rng.normal(0.0, NOISE, rec.x.shape)
    problem = FitProblem(mech, params, [rec], loss="shooting", window=10, opts=mech.default_options, fit_states=True)
    theta = problem.initial()
    theta[:len(true)] = true
    r, J, _ = problem.evaluate(theta)
    rows = np.concatenate([np.arange(s.stop - mech.nc, s.stop) for s in problem.segment_rows()])
    inside = rows[r[rows] < 0.0]
    assert len(inside) >= 2, "no noisy start inside the table: nothing is checked"
    J = J.toarray()[inside]
    # the parameters, and every offset of the starts that are inside (12 per body)
    segments = sorted({k for k, s in enumerate(problem.segment_rows()) if ((inside >= s.start) & (inside < s.stop)).any()})
    starts = [len(true) + 12 * mech.nb * k + i for k in segments for i in range(12 * mech.nb)]
    assert np.abs(J[:, starts]).max() > 0.1, "the start offsets do not move the depths"
    for j in [*range(len(true)), *starts]:
        step = 1e-7
        up, down = theta.copy(), theta.copy()
        up[j] += step
        down[j] -= step
        numeric = (problem.evaluate(up, jacobian=False)[0][inside] - problem.evaluate(down, jacobian=False)[0][inside]) / (2 * step)
        assert np.abs(J[:, j] - numeric).max() < 1e-6 * max(1.0, np.abs(numeric).max()), f"column {j}"
