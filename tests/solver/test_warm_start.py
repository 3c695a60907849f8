"""The interior point's warm start (core/maximal/step.h, "Warm start"): a run's next step starts
its contacts and limits from the previous converged step, moved off the cones' boundaries.

What it must do: fewer iterations where contacts and limits rest (the point of it); the same
problem (the run stays within the solver's tolerance of the converged run:
tests/test_goldens.py, test_warm_start_keeps_the_golden_runs_within_solver_tolerance); never
a step that Dojo's start would have solved left unsolved (a warm attempt that fails is solved
again from Dojo's start, exactly as without the warm start); and only for a step that
continues the last converged step of the same Data (a stateless dojo.step, a fresh Data, a
different state, warm_start: false all start at Dojo's point, bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.step import solve_step
from tests.mechanisms import limited_pendulum

# Iterations a step at rest takes: measured 1 warm-started (box, quadruped_feet, the pendulum
# on its limit) against 6-7 from Dojo's start; 2 leaves room for a step that needs one more.
RESTING_ITERATIONS = 2


def run(mech, steps: int, warm: bool, opts=None):
    """A run's steps in its own Data, as the run loop takes them (the previous step's joint
    impulses, the unwrapped angles carried): (states (steps, 13 nb), iterations, statuses,
    warm-started flags, fallback flags, the joint impulses each step started from (steps, nl))."""
    opts = (opts or mech.default_options).replace(warm_start=warm)
    z = np.asarray(initial_state(mech), float).reshape(-1)
    data = _core.Data(mech.core)
    lam = np.zeros(mech.nl)
    states, iterations, status, started, fell_back, impulses = [], [], [], [], [], []
    for k in range(steps):
        impulses.append(lam.copy())
        u = None if mech.controller is None else np.asarray(mech.controller(mech, k, z), float).reshape(-1)
        z, result = solve_step(mech, z, u, opts, lam0=lam, data=data)
        lam[:] = result.w[6 * mech.nb : 6 * mech.nb + mech.nl]
        _core.advance_angles(mech.core, data)
        states.append(z)
        iterations.append(result.iterations)
        status.append(result.status.value)
        started.append(data.warm_started)
        fell_back.append(data.warm_fell_back)
    return np.array(states), np.array(iterations), status, np.array(started), np.array(fell_back), np.array(impulses)


@pytest.mark.parametrize("scene", ["box", "quadruped_feet", "pendulum_limit"])
def test_resting_contacts_and_limits_converge_in_few_iterations(scene):
    """The box on a face (4 corners loaded, 4 in the air), the quadruped on its four feet and
    the pendulum resting on its limit: over the last 100 of 300 steps each warm-started step
    takes at most RESTING_ITERATIONS iterations, Dojo's start 6-7; they rest where Dojo's
    start rests them (heights within 2e-5 m, the relaxed contact's gap at btol), as still."""
    mech = dojo.load_scene(scene)
    cold, cold_it, cold_status, *_ = run(mech, 300, warm=False)
    warm, warm_it, warm_status, started, _, _ = run(mech, 300, warm=True)
    assert set(warm_status) == {"success"} and set(cold_status) == {"success"}, f"{scene}: {set(warm_status)}"
    assert started[1:].all() and not started[0], f"{scene}: warm-started steps {np.flatnonzero(started)[:5]}..."
    assert warm_it[-100:].max() <= RESTING_ITERATIONS, (
        f"{scene}: at rest, warm-started steps take up to {warm_it[-100:].max()} iterations "
        f"(mean {warm_it[-100:].mean():.2f}); Dojo's start {cold_it[-100:].mean():.2f}"
    )
    assert cold_it[-100:].min() > 2 * RESTING_ITERATIONS, f"{scene}: Dojo's start takes {cold_it[-100:].min()}"
    nb = mech.nb
    heights = np.abs(warm.reshape(-1, nb, 13)[-1, :, 2] - cold.reshape(-1, nb, 13)[-1, :, 2])
    assert heights.max() < 2e-5, f"{scene}: resting heights differ by {heights.max():.3e} m"
    # a converged step's velocities are within rtol V of the exact step's (V = |g| h,
    # core/maximal/tolerances.h): at rest, the warm run is as still as Dojo's
    bound = mech.default_options.rtol * 9.81 * mech.timestep
    speed = [np.abs(x.reshape(-1, nb, 13)[-1, :, 3:6]).max() for x in (cold, warm)]
    assert speed[1] < speed[0] + bound, f"{scene}: at rest {speed[1]:.3e} m/s warm-started, {speed[0]:.3e} m/s cold"


def assert_steps_are_dojos_start(mech, states, iterations, impulses, steps, opts):
    """Each of `steps` of a warm run is the step Dojo's start gives from the same state, bit for
    bit (a fresh Data with the run's unwrapped angles and joint impulses); the cold solves'
    iterations."""
    cold_iterations = []
    z0 = np.asarray(initial_state(mech), float).reshape(-1)
    for k in steps:
        z = z0 if k == 0 else states[k - 1]
        data = _core.Data(mech.core)
        cold, result = solve_step(mech, z, None, opts.replace(warm_start=False), lam0=impulses[k], data=data,
                                  angles=np.asarray(_core.unwrapped_coordinates(mech.core, z[None])).reshape(-1))
        assert np.array_equal(cold, states[k]), f"step {k}: differs from Dojo's start by {np.abs(cold - states[k]).max():.3e}"
        cold_iterations.append(result.iterations)
    return np.array(cold_iterations)


def test_a_failed_warm_attempt_is_solved_from_dojos_start():
    """The snake's links landing (steps 29-32 of the built-in scene) with max_iter = 10 are steps
    whose warm attempt does not converge within max_iter: each such step is then the step
    Dojo's start gives from the same state, bit for bit, and no step of the run fails."""
    mech = dojo.load_scene("snake", overrides={"solver.max_iter": 10})
    states, iterations, status, _, fell_back, impulses = run(mech, 40, warm=True)
    assert set(status) == {"success"}, f"statuses {set(status)}"
    steps = np.flatnonzero(fell_back)
    assert steps.size, "no warm attempt of the snake's landing fell back: find a scene whose warm attempt fails"
    cold = assert_steps_are_dojos_start(mech, states, iterations, impulses, steps, mech.default_options)
    # the warm attempt's iterations come first
    assert np.all(iterations[steps] > cold), f"fallbacks: {iterations[steps]} iterations, the cold solves alone {cold}"


def test_a_contact_joining_the_solve_starts_the_step_cold():
    """With contact margins (margins.h) the box's corners join the solve as they come within
    1 cm of the ground: a step whose solve holds a contact the previous step's did not has no
    warm values for it, and a contact at Dojo's point beside warm ones far closer to the
    boundary jams the first iterations (step.h, "Warm start"), so the whole step starts at
    Dojo's point: it is not warm-started, and is bit for bit the step from Dojo's start."""
    mech = dojo.load_scene("box", overrides={"contacts.*.margin": 0.01})
    states, iterations, status, started, _, impulses = run(mech, 60, warm=True)
    assert set(status) == {"success"}, f"statuses {set(status)}"
    steps = np.flatnonzero(~started[1:]) + 1
    assert steps.size, "no contact joined the box's solve: pick a larger margin"
    assert started[1:].sum() > steps.size, f"warm-started steps {started[1:].sum()}, cold {steps.size}"
    cold = assert_steps_are_dojos_start(mech, states, iterations, impulses, steps, mech.default_options)
    assert np.array_equal(iterations[steps], cold), f"{iterations[steps]} iterations, the cold solves alone {cold}"


def test_only_a_step_continuing_the_last_converged_one_starts_warm():
    """A step from any other state than the one the Data's last converged step reached starts
    at Dojo's point; so do dojo.step (stateless, the mechanism's Data), a fresh Data and
    warm_start: false. Each is bit for bit the step from Dojo's start."""
    mech = limited_pendulum()
    opts = dojo.SolverOptions(warm_start=True)
    z0 = np.asarray(initial_state(mech), float).reshape(-1)
    fresh = _core.Data(mech.core)
    z1, _ = solve_step(mech, z0, opts=opts, data=fresh)
    reference, _ = solve_step(mech, z1, opts=opts, data=_core.Data(mech.core))  # cold: a fresh Data
    assert not fresh.warm_started

    data = _core.Data(mech.core)
    solve_step(mech, z0, opts=opts, data=data)
    z1_warm, _ = solve_step(mech, z1, opts=opts, data=data)  # continues: warm
    assert data.warm_started and data.warm_valid

    other = z1.copy()
    other[3] += 1e-12  # not the state the last step reached
    data = _core.Data(mech.core)
    solve_step(mech, z0, opts=opts, data=data)
    solve_step(mech, other, opts=opts, data=data)
    assert not data.warm_started

    data = _core.Data(mech.core)
    solve_step(mech, z0, opts=opts, data=data)
    off, _ = solve_step(mech, z1, opts=opts.replace(warm_start=False), data=data)
    assert not data.warm_started and np.array_equal(off, reference), "warm_start: false is Dojo's start"

    dojo.step(mech, z0, opts=opts)  # the mechanism's Data now holds z1 as its last state
    assert np.array_equal(dojo.step(mech, z1, opts=opts), reference), "dojo.step is stateless"
    assert not mech.core_data.warm_started

    assert not np.array_equal(z1_warm, reference), "the warm start changed nothing: was it taken?"


def test_warm_start_is_the_default_and_a_scene_solver_option():
    """A run's steps start warm by default (dojo.simulate's own loop, the core's rollout), and
    solver: warm_start: false in a scene starts every step at Dojo's point (issue 28)."""
    assert dojo.SolverOptions().warm_start is True
    traj = dojo.simulate(dojo.load_scene("box"), steps=300)
    assert max(traj.iterations[-100:]) <= RESTING_ITERATIONS, "the default does not start warm"
    mech = dojo.load_scene("box", overrides={"solver.warm_start": False})
    assert mech.default_options.warm_start is False
    traj = dojo.simulate(mech, steps=300)
    assert min(traj.iterations[-100:]) > RESTING_ITERATIONS, "warm_start: false starts warm"


def test_the_start_record_keeps_only_what_the_next_step_starts_from():
    """core/maximal/step.cpp keep_needed_cones: the box resting on a face after 300 steps; its
    start record holds the four loaded corners' impulses (normal and friction cone, what the
    next step starts from) with their slacks zero, and the four corners in the air their gaps
    and slip slacks with their impulses zero: values the warm start replaces whatever the
    step's target (an orthant pair starts bit for bit as from the solution; a cone vector
    wholly at its apex's rounding level on the cone's axis). The next step from the record is
    the run's (--from, bit for bit: tests/cli/test_simulate_from.py)."""
    mech = dojo.load_scene("box")
    traj = dojo.simulate(mech, steps=300)
    record = traj.solver_start[-1]
    assert record[0] == 1.0, "the next step does not start warm"
    cones = record[2:].reshape(mech.nc, 2, 4)  # per contact: slacks [sn, soc s (3)], impulses [gn, soc gamma (3)]
    loaded = traj.contact_normal_impulse[-1] > 1e-3  # N s: the box's weight per corner is 0.0245
    assert loaded.sum() == 4, traj.contact_normal_impulse[-1]
    assert np.all(cones[loaded][:, 0] == 0.0) and np.all(cones[loaded][:, 1, :2] > 0.0), cones[loaded]
    assert np.all(cones[~loaded][:, 1] == 0.0) and np.all(cones[~loaded][:, 0, :2] > 0.0), cones[~loaded]
