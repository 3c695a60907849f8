"""The interior point's factorisation with the contacts eliminated in closed form
(dojo_cli/core/maximal/contact_elimination.h, factor.h ``factor_matrix_condensed``) against dense numpy,
its solves and their transposes (the gradients' reverse mode: gradients.cpp, factor_at_solution).

The systems are the Newton matrices the interior point factorises: at the converged unknowns of steps
of the box toss (in flight, at impact, sliding, at rest on four corners: loaded contacts with slacks
1e-5 to 1e-8 of their impulses, the most lopsided pivots the substitution divides by; beyond
kMaxSubstitutionGrowth the block LU takes the matrix, test_a_lopsided_pair_takes_the_block_lu), their second-order
cones' rows in Nesterov-Todd scaled form (the solve's) or raw (the gradients'), on every contact model
that has a closed form, and a pair of bodies in contact (the ball on the box: Schur complements on
both bodies and between them). A linear (pyramid) contact has none: the block LU of the whole matrix
solves (``condensed`` False), as before.

Tolerances:
- BACKWARD: the normwise backward error |b - A x|_inf / (|A|_inf |x|_inf + |b|_inf). The substitution's
  pivots are the matrix's own entries (-1, the slacks) and a pivoted 3x3 inverse: measured <= 7e-14 on
  these systems (the ball at rest on the box; the block LU of the whole matrix 4e-14 on the same system,
  <= 1.5e-14 elsewhere against the condensed path's <= 5e-15); 2e-13 still catches a dropped entry (an
  error of the entry's size in its row) by ten orders of magnitude.
- FORWARD_PER_COND: the error against numpy.linalg.solve (LAPACK's LU with partial pivoting) is at most
  cond(A) times both backward errors: measured <= 7e-16 cond(A); checked against 1e-14 cond(A).
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from tests.mechanisms import contact_scene

BACKWARD = 2e-13  # normwise backward error (see the module docstring)
FORWARD_PER_COND = 1e-14  # forward error / cond(A)
BOX_STEPS = (0, 40, 150, 260)  # in flight, first impacts, sliding, at rest on a face
# Landing on an edge: at the solution a corner's impulse is 3.7e8 times its slack, beyond
# contact_elimination.h's kMaxSubstitutionGrowth (1e8): the block LU factorises instead.
LOPSIDED_STEP = 121
ALL_MODELS = "mixed"  # tests.mechanisms.contact_scene: contacts cycling impact, nonlinear, linear


def converged_unknowns(mech, steps):
    """(state z2, converged unknowns w) of the listed steps of the scene's own run (the interior
    point's solution: the iterate its last matrices were factorised near)."""
    model, data, opts = mech.core, _core.Data(mech.core), _core.SolverOptions()
    # Dojo's start (cold): the steps and pivot sizes of the module docstring were measured on its
    # iterates; the warm start (the default) converges further at rest (steps 150 and 260), to
    # corners whose impulse is beyond kMaxSubstitutionGrowth times their slack: the block LU's
    # case, which test_a_lopsided_pair_takes_the_block_lu covers
    opts.warm_start = False
    z = np.ascontiguousarray(dojo.initial_state(mech), dtype=float)
    out = []
    for k in range(max(steps) + 1):
        status = _core.step(model, data, z, None, None, None, None, opts)
        assert status == 0, f"step {k}: status {status}"
        if k in steps:
            out.append((z.copy(), np.array(data.w)))
        z = np.array(data.z_next)
    return out


def check_solve(mech, z, w, scaled, seed, expect_condensed=True):
    """The solve of A x = b and of A^T x = b (the gradients' reverse mode) for a random b."""
    rng = np.random.default_rng(seed)
    b = rng.standard_normal(mech.core.n)
    for transpose in (False, True):
        got = _core.testing.condensed_solve(
            mech.core, _core.Data(mech.core), z, None, np.ascontiguousarray(w), b, scaled, transpose=transpose
        )
        what = "A^T x = b" if transpose else "A x = b"
        assert got["factored"], "the Newton matrix was not factorised"
        assert got["condensed"] == expect_condensed, f"condensed {got['condensed']}, expected {expect_condensed}"
        a, x = (got["matrix"].T if transpose else got["matrix"]), got["x"]
        backward = np.max(np.abs(b - a @ x)) / (np.max(np.sum(np.abs(a), axis=1)) * np.max(np.abs(x)) + np.max(np.abs(b)))
        assert backward < BACKWARD, f"{what}: backward error {backward:.2e}"
        reference = np.linalg.solve(a, b)
        forward = np.max(np.abs(x - reference)) / np.max(np.abs(reference))
        cond = np.linalg.cond(a, 1)
        assert forward < FORWARD_PER_COND * cond, f"{what}: forward error {forward:.2e} against cond(A) {cond:.1e}"


@pytest.mark.parametrize("scaled", [True, False], ids=["nesterov_todd", "raw"])
def test_box_toss_matrices(scaled):
    """The box's eight nonlinear contacts against the world, through the toss."""
    mech = dojo.load_scene("box")
    for k, (z, w) in zip(BOX_STEPS, converged_unknowns(mech, BOX_STEPS)):
        check_solve(mech, z, w, scaled, seed=k)


def test_a_lopsided_pair_takes_the_block_lu():
    """The substitution would divide a loaded corner's impulse by a slack 3.7e8 times smaller
    (kMaxSubstitutionGrowth): the whole matrix goes to the block LU, solved as well."""
    mech = dojo.load_scene("box")
    ((z, w),) = converged_unknowns(mech, (LOPSIDED_STEP,))
    check_solve(mech, z, w, True, seed=LOPSIDED_STEP, expect_condensed=False)


@pytest.mark.parametrize("variant", ["impact", "nonlinear"])
def test_two_bodies_in_contact(variant):
    """The ball resting on the box: a contact between two bodies (both bodies' blocks and their coupling)."""
    mech = contact_scene("ball_on_box", variant)
    assert any(c.other is not None and c.other >= 0 for c in mech.contacts), "a contact between two bodies"
    for k, (z, w) in enumerate(converged_unknowns(mech, (5, 60))):
        check_solve(mech, z, w, True, seed=k)


def test_a_linear_contact_takes_the_block_lu():
    """No closed form for the pyramid: the whole matrix through the block LU, solved as well."""
    mech = contact_scene("box", ALL_MODELS)
    for k, (z, w) in enumerate(converged_unknowns(mech, (0, 150))):
        check_solve(mech, z, w, True, seed=k, expect_condensed=False)
