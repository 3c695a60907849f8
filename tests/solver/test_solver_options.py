"""Dojo's SolverOptions, each shown to change what the solver does as Dojo documents it.

The solver's record of each iteration (``solve_step``'s log: the accepted step length alpha,
the centring target kappa, the violations) shows the options at work:
- ``ls_scale``: backtracking multiplies the step length by it (core/maximal/newton.cpp and
  interior_point.cpp step 5), so every accepted alpha is a power of it;
- ``max_ls``: at most that many candidates per iteration; too few and the line search fails;
- ``max_iter``: the iteration cap;
- ``undercut``: the centring target is kappa = max(sigma nu, btol / undercut)
  (interior_point.h step 3): undercut = 1 holds it at btol;
- ``no_progress_max`` / ``no_progress_undercut``: after no_progress_max iterations without
  a 20 % decrease, undercut *= no_progress_undercut (step 6): the floor btol / undercut drops
  by that factor, which frees a solve that the floor held at bvio = btol;
- ``verbose``: the iterations printed on stderr, one line each (dojo_cli/solver/verbose.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverStatus

# A pendulum step that needs backtracking: h = 0.2 s and 40 rad/s, so the discrete
# Euler-Lagrange equation is far from linear and the full Newton step increases the residual.
BACKTRACK_TIMESTEP = 0.2
BACKTRACK_RATE = 40.0
# The box falling onto the ground, step 30 of its run: its contacts are in the solve.
BOX_STEP = 30
# A violation must shrink by this factor to count as progress (Dojo's 20 %).
PROGRESS = 0.8
# Powers of ls_scale are exact in binary only for 0.5; a product of a few factors is exact to
# a few ulps.
POWER_TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def newton_case():
    mech = dojo.load_scene("pendulum", overrides={"timestep": BACKTRACK_TIMESTEP})
    z = dojo.minimal_to_maximal(mech, np.array([0.0, BACKTRACK_RATE]))
    return mech, z


@pytest.fixture(scope="module")
def contact_case():
    mech = dojo.load_scene("box")
    traj = dojo.simulate(mech, steps=BOX_STEP)
    return mech, traj.state(BOX_STEP)


def solve(mech, z, **options):
    """(next state, result, the first solve's iteration records) with these options, with
    Dojo's absolute (SI) meaning of rtol and btol unless told otherwise: the thresholds these
    tests compare with (btol, btol / undercut) are Dojo's numbers; the relative default scales
    them per row (docs/physics.md, "Solver tolerances"; tests/solver/test_tolerances.py)."""
    options.setdefault("tolerances", "absolute")
    records: list[dict] = []
    z_next, result = solve_step(mech, z, None, SolverOptions(**options), log=records.append)
    first = [records[0]]
    for rec in records[1:]:
        if rec["iteration"] == 1:  # a restart of the interior point (core/maximal/step.h)
            break
        first.append(rec)
    return z_next, result, first


def is_power(alpha: float, base: float) -> bool:
    k = round(math.log(alpha) / math.log(base))
    return k >= 0 and abs(alpha - base**k) <= POWER_TOLERANCE


def test_defaults_are_dojos():
    """Dojo's documented defaults (SolverOptions, docs/src/api.md)."""
    assert SolverOptions() == SolverOptions(rtol=1e-6, btol=1e-4, ls_scale=0.5, max_iter=50, max_ls=10,
                                            undercut=math.inf, no_progress_max=3, no_progress_undercut=10.0,
                                            verbose=False)


@pytest.mark.parametrize("ls_scale", [0.5, 0.3])
def test_ls_scale_is_the_backtracking_factor(newton_case, ls_scale):
    mech, z = newton_case
    z_next, result, records = solve(mech, z, ls_scale=ls_scale)
    assert result.status is SolverStatus.SUCCESS
    alphas = [r["alpha"] for r in records]
    assert min(alphas) < 1.0, "the case must backtrack"
    assert all(is_power(a, ls_scale) for a in alphas), f"alphas {alphas} are not powers of {ls_scale}"


def test_max_ls_caps_the_backtracking(newton_case):
    """The first iteration needs alpha = 1/4 (three candidates: 1, 1/2, 1/4): with two the line
    search fails there; with three the solve is the default one, record for record."""
    mech, z = newton_case
    z_default, _, default = solve(mech, z)
    assert default[0]["alpha"] == 0.25
    _, cut, records = solve(mech, z, max_ls=2)
    assert cut.status is SolverStatus.LINE_SEARCH_FAILURE and len(records) == 1
    z_three, enough, records = solve(mech, z, max_ls=3)
    assert enough.status is SolverStatus.SUCCESS
    assert records == default and np.array_equal(z_three, z_default)


def test_max_iter_caps_the_iterations(newton_case):
    mech, z = newton_case
    _, full, records = solve(mech, z)
    assert full.status is SolverStatus.SUCCESS and full.iterations == len(records) > 3
    _, capped, records = solve(mech, z, max_iter=3)
    assert capped.status is SolverStatus.MAX_ITERATIONS and capped.iterations == 3 and len(records) == 3


def test_undercut_floors_the_centring_target(contact_case):
    """Dojo's default undercut = inf lets kappa go to zero (kappa < btol/100 at the end); with
    undercut = 1 it never goes below btol, and the solve still converges. (The floor is
    btol / undercut in the complementarity rows' smallest unit, core/maximal/tolerances.h:
    these cases use absolute tolerances, where that unit is 1.)"""
    mech, z = contact_case
    btol = SolverOptions().btol
    _, result, records = solve(mech, z)
    assert result.status is SolverStatus.SUCCESS and min(r["kappa"] for r in records) < btol / 100
    _, result, records = solve(mech, z, tolerances="absolute", undercut=1.0, no_progress_max=1000)
    kappas = [r["kappa"] for r in records]
    assert min(kappas) >= btol, kappas
    assert sum(k == btol for k in kappas) >= 3, "the floor is reached and held"
    _, result, records = solve(mech, z, tolerances="absolute", undercut=2.0, no_progress_max=1000)
    assert min(r["kappa"] for r in records) >= btol / 2


@pytest.mark.parametrize("no_progress_max, no_progress_undercut", [(2, 10.0), (3, 10.0), (3, 100.0), (5, 10.0)])
def test_no_progress_rescales_the_target(contact_case, no_progress_max, no_progress_undercut):
    """Held at kappa = btol (undercut = 1) the complementarity stops at bvio = btol, which is not
    below btol: no progress. After no_progress_max such iterations the floor drops to
    btol / no_progress_undercut and the solve converges; without the rescaling it never does."""
    mech, z = contact_case
    btol = SolverOptions().btol
    _, stuck, records = solve(mech, z, tolerances="absolute", undercut=1.0, no_progress_max=1000)
    assert stuck.status is not SolverStatus.SUCCESS and len(records) == SolverOptions().max_iter
    # Dojo's bookkeeping on the stuck solve's record (the same path until the rescaling):
    # progress is a 20 % decrease of an unconverged violation; the counter goes up without
    # progress, down with it, and fires at no_progress_max (iteration 1 starts far away)
    opts = SolverOptions(tolerances="absolute")
    count, fires = 0, None
    for i in range(1, len(records)):
        prev, rec = records[i - 1], records[i]
        progress = (prev["rvio"] >= opts.rtol and rec["rvio"] < PROGRESS * prev["rvio"]) or \
                   (prev["bvio"] >= opts.btol and rec["bvio"] < PROGRESS * prev["bvio"])
        count = max(count - 1, 0) if progress else count + 1
        if count >= no_progress_max:
            fires = i
            break
    assert fires is not None
    _, result, records = solve(mech, z, tolerances="absolute", undercut=1.0, no_progress_max=no_progress_max,
                               no_progress_undercut=no_progress_undercut)
    assert result.status is SolverStatus.SUCCESS
    kappas = [r["kappa"] for r in records]
    dropped = next(i for i, k in enumerate(kappas) if k < btol)
    assert kappas[dropped] == pytest.approx(btol / no_progress_undercut, rel=1e-12)
    assert dropped == fires + 1, (fires, dropped, kappas)  # the next iteration aims lower


def test_verbose_prints_the_iterations(newton_case, contact_case, capsys):
    """SolverOptions(verbose=True): dojo.step and dojo.simulate print Dojo's iteration table on
    stderr, one line per iteration with the numbers of the solver's record; stdout stays empty."""
    mech, z = contact_case
    _, _, records = solve(mech, z)
    capsys.readouterr()
    z_next = dojo.step(mech, z, opts=SolverOptions(verbose=True, tolerances="absolute"))
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].split() == ["n", "bvio", "rvio", "alpha", "kappa", "|res|", "|step|"]
    assert len(lines) == 1 + len(records)
    for line, rec in zip(lines[1:], records):
        n, bvio, rvio, alpha, kappa, res, step = line.split()
        assert int(n) == rec["iteration"]
        for text, value in ((bvio, rec["bvio"]), (rvio, rec["rvio"]), (alpha, rec["alpha"]),
                            (kappa, rec["kappa"]), (res, rec["residual"]), (step, rec["step"])):
            assert float(text) == pytest.approx(value, rel=5e-3, abs=1e-300)  # printed to 3 digits
    np.testing.assert_array_equal(z_next, dojo.step(mech, z, opts=SolverOptions(tolerances="absolute")))  # printing changes nothing
    # a run: one table per step
    dojo.simulate(mech, steps=3, z0=z, opts=SolverOptions(verbose=True))
    out, err = capsys.readouterr()
    assert out == "" and err.count("kappa") == 3
    dojo.simulate(mech, steps=3, z0=z)
    assert capsys.readouterr() == ("", ""), "quiet without verbose"
