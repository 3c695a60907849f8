"""Contact margins (core/maximal/margins.h): a contact with a finite margin joins a
step's solve only within its margin of touching at the predicted configuration; a left-out
contact that the solution brings to touch joins and the step is solved again. At the
returned solution every left-out contact is separated, so the step is one of the whole
contact set's (to the solver's tolerance) and its derivatives are those of the solve with
that set."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import dojo_cli as dojo
from dojo_cli.simulation.gradients import step_gradients
from dojo_cli.simulation.step import solve_step
from tests import mechanisms as M
from dojo_cli.analysis.gradient_check import four_point, tangent_difference
from dojo_cli.analysis.gradient_check import perturb_tangent as perturb
from tests.simulation.test_gradients import TIGHT, box_at_rest, relative_error


def _with_margin(mech, margin):
    """The same mechanism with every contact's margin set."""
    contacts = [replace(c, margin=margin) for c in mech.contacts]
    return dojo.Mechanism(mech.bodies, mech.joints, mech.timestep, mech.gravity, name=mech.name, contacts=contacts)


def test_far_corners_are_left_out_and_the_step_is_the_whole_sets():
    full = M.contact_box()
    z = box_at_rest(full)  # on its bottom face: 4 corners loaded, 4 at 0.5 m
    near = _with_margin(full, 0.01)
    z_full, r_full = solve_step(full, z, opts=TIGHT)
    z_near, r_near = solve_step(near, z, opts=TIGHT)
    active = np.array(near.core_data.contact_active)
    tops = np.array([c.offset[2] > 0 for c in near.contacts])
    assert np.array_equal(active, ~tops) and near.core_data.solves == 1
    # the left-out corners carry no impulse; in the whole set's solve, kappa / 0.5 at most
    assert np.all(near.core_data.contact_normal_impulse[tops] == 0.0)
    assert np.abs(z_near - z_full).max() < 1e-9
    assert r_near.iterations <= r_full.iterations


def test_a_left_out_contact_that_touches_joins_and_the_step_is_solved_again():
    full = M.contact_box(corners="bottom")
    z = np.zeros(13)
    z[2], z[6] = 0.25 + 4e-4, 1.0  # at rest 0.4 mm above the ground: one step of gravity closes g h^2 = 1 mm
    touching = _with_margin(full, 0.0)
    z_full, _ = solve_step(full, z, opts=TIGHT)
    z_next, result = solve_step(touching, z, opts=TIGHT)
    assert touching.core_data.solves == 2 and all(touching.core_data.contact_active)
    assert result.status.name == "SUCCESS"
    assert np.abs(z_next - z_full).max() < 1e-9
    # it lands: the corners hold it at the ground instead of 0.6 mm under it
    assert abs(z_next[2] - 0.25) < 1e-6


def test_gradients_with_left_out_contacts_match_finite_differences():
    mech = _with_margin(M.contact_box(), 0.01)
    z = box_at_rest(mech, velocity=(0.3, 0.1, 0.0))  # sliding on its face, its top corners out
    nb = mech.nb
    g = step_gradients(mech, z, None, TIGHT, wrt=("state",), kappa=1e-3)
    assert np.count_nonzero(mech.core_data.contact_active) == 4

    def f(zz):
        return step_gradients(mech, zz, None, TIGHT, wrt=(), kappa=1e-3).next_state

    z_next = f(z)
    rng = np.random.default_rng(0)
    for _ in range(3):
        d = rng.standard_normal(12 * nb)
        numeric = four_point(lambda t: tangent_difference(nb, z_next, f(perturb(nb, z, t * d))), 2e-7)
        assert relative_error(g.A @ d, numeric) < 1e-5
