"""benchmarks/hard_step.py (issue 24 item 1): its reading of a failed step is only as good as
its names for the step's rows, so they are checked against the equations they name
(core/maximal/contact.h, the limits' complementarity): at the iterate a solve left, the row
it calls a contact's "gn sn" holds that contact's normal slack times its impulse, "mu gn -
psi" the friction bound, "cone product 0" the friction cone's inner product, and a limit's
"s gamma row" its slack times its impulse. A layout read wrongly names other rows, whose
values differ."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.scene import robots
from dojo_cli.simulation.step import solve_step

# example-robot-data is in the test extra: without it these checks fail, never skip (issue 25 item 8)
assert robots.example_robot_data_root() is not None, \
    f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})"

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "hard_step.py"
EXACT = 1e-12  # a residual row against its own equation: rounding only


@pytest.fixture(scope="module")
def hs():
    """The benchmark as a module (benchmarks/ is no package); os.environ and sys.path restored."""
    saved_environ, saved_path = dict(os.environ), list(sys.path)
    spec = importlib.util.spec_from_file_location("hard_step", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        os.environ.clear()
        os.environ.update(saved_environ)
        sys.path[:] = saved_path
    return module


def test_row_names_match_the_equations_they_name(hs):
    """solo dropped limp, its step 20 (feet on the ground, 16 joint limits): every unknown gets
    one name, and the named contact and limit rows hold their equations at the solve's iterate."""
    mech = hs.import_robot("solo")
    traj = dojo.simulate(mech, steps=20)
    _, result = solve_step(mech, traj.state(20), lam0=traj.impulses[19], opts=dojo.default_options(mech))
    data = mech.core_data
    w, r = np.asarray(data.w), np.asarray(data.residual_vector)
    rows = hs.Rows(mech)
    names = [rows.name(i) for i in range(mech.core.n)]
    assert len(set(names)) == len(names), "two unknowns share a name"
    assert rows.row_joint, "the joint rows of solo (revolute and floating joints) are named"
    by_name = {name: i for i, name in enumerate(names)}
    checked = 0
    for c, contact in enumerate(mech.contacts):
        s0 = rows.contact_start[c]
        if w[s0] == 0.0:
            continue  # not in the solve (margins.h)
        sn, e, gn, psi, b = w[s0], w[s0 + 1 : s0 + 4], w[s0 + 4], w[s0 + 5], w[s0 + 6 : s0 + 8]
        prefix = f"contact {contact.name} on {rows.body(contact.body)}: "
        assert abs(r[by_name[prefix + "gn sn"]] - sn * gn) <= EXACT
        assert abs(r[by_name[prefix + "mu gn - psi"]] - (contact.friction * gn - psi)) <= EXACT
        assert abs(r[by_name[prefix + "cone product 0"]] - (e[0] * psi + e[1:] @ b)) <= EXACT
        checked += 1
    assert checked > 0, "no contact in the solve at step 20: not the case tested"
    for limit in range(mech.core.nlim):
        s, g = w[rows.lim_s + limit], w[rows.lim_g + limit]
        row = next(i for i, name in enumerate(names) if name.startswith(f"limit {limit} of ") and "s gamma" in name)
        assert abs(r[row] - s * g) <= EXACT, names[row]
    # the log splits into attempts whose iterations add up to the step's
    assert sum(len(a) for a in hs.attempts(np.asarray(data.log))) == result.iterations
