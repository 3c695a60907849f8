"""Newton matrix against central finite differences of the residual (Dojo's jacobian.jl),
both from the C++ core (``_core.testing.step_matrix_dense``, ``_core.testing.step_residual``)."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli import _core
from dojo_cli.model.controller import ConstantController
from dojo_cli.api import simulate
from tests.mechanisms import (CONSTRAINED_JOINT_TYPES, contact_scene, limited_pendulum, pendulum, random_state, slider, snake,
                             twister)

FD_STEP = 1e-6  # central differences: truncation ~1e-12, rounding ~1e-10
FD_TOL = 1e-6  # relative to the largest entry
ITERATE_SPREAD = 0.1  # random offset of the iterate from the step's starting point


class StepSystem:
    """The nonlinear system of one step from state z with inputs u, evaluated by the core.

    Unknowns w (n,) in the layout of dojo_cli/core/maximal/model.h: per body (v25, w25), joint
    impulses, limit slacks and impulses, per contact slacks and impulses.
    """

    def __init__(self, mech, z, u=None):
        self.model = mech.core
        self.data = _core.Data(mech.core)
        self.z = np.ascontiguousarray(z, dtype=float)
        self.u = None if u is None else np.ascontiguousarray(u, dtype=float)
        self.n = mech.core.n

    def initial_guess(self) -> np.ndarray:
        """The step's own starting point (warm start from z, cone variables inside their cones)."""
        return np.asarray(_core.testing.step_initial_guess(self.model, self.data, self.z))

    def residual(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(_core.testing.step_residual(self.model, self.data, self.z, self.u, np.ascontiguousarray(w)))

    def assert_interior(self, w: np.ndarray) -> None:
        """Every cone variable of w strictly inside its cone (orthant > 0, u0 > |u1:|)."""
        cones = _core.testing.cone_structure(self.model)
        orthant = w[np.array(cones["orthant_s"] + cones["orthant_g"], dtype=int)]
        assert np.all(orthant > 0), f"orthant variable {orthant.min():.2e} <= 0"
        for name in ("soc_s", "soc_g"):
            u = w[np.array(cones[name], dtype=int).reshape(-1, 3)]
            margin = u[:, 0] - np.linalg.norm(u[:, 1:], axis=1)
            assert np.all(margin > 0), f"{name}: second-order-cone margin {margin.min():.2e} <= 0"

    def matrix(self, w: np.ndarray) -> np.ndarray:
        dense = _core.testing.step_matrix_dense(self.model, self.data, self.z, self.u, np.ascontiguousarray(w))
        return np.asarray(dense).reshape(self.n, self.n)


def fd_jacobian(system: StepSystem, w: np.ndarray) -> np.ndarray:
    n = w.size
    out = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = FD_STEP
        out[:, i] = (system.residual(w + e) - system.residual(w - e)) / (2 * FD_STEP)
    return out


def check(mech, z, u=None, seed=0):
    """The Newton matrix at a random interior iterate near the step's starting point
    against central differences of the residual."""
    system = StepSystem(mech, z, u)
    rng = np.random.default_rng(seed)
    w = system.initial_guess() + ITERATE_SPREAD * rng.standard_normal(system.n)
    system.assert_interior(w)
    analytic = system.matrix(w)
    numeric = fd_jacobian(system, w)
    err = np.max(np.abs(analytic - numeric)) / max(1.0, np.max(np.abs(numeric)))
    worst = np.unravel_index(np.argmax(np.abs(analytic - numeric)), analytic.shape)
    assert err < FD_TOL, f"Newton matrix vs finite differences: relative error {err:.2e} at (row, column) {worst}"


@pytest.mark.parametrize("joint_type", CONSTRAINED_JOINT_TYPES)
@pytest.mark.parametrize("build", [snake, twister], ids=["snake", "twister"])
def test_every_joint_type(build, joint_type):
    mech = build(3, joint_type, spring=1.0, damper=0.2, gravity=(0, 0, -9.81))
    z = random_state(mech, seed=3)
    u = 0.1 * np.ones(mech.nu)
    # evaluate "flying" after 0.1 s of simulation, as Dojo's test does
    tr = simulate(mech, 10, z, ConstantController(u))
    check(mech, tr.state(10), u)


@pytest.mark.parametrize("damper_form", ["midpoint", "implicit"])
@pytest.mark.parametrize("build", [pendulum, slider], ids=["pendulum", "slider"])
def test_simple(build, damper_form):
    mech = build(spring=2.0, damper=0.3, damper_form=damper_form)
    check(mech, random_state(mech, seed=4), np.array([0.1]))


def test_starting_point_is_the_warm_start():
    """The iterate the checks start from: previous midpoint velocities, zero joint impulses."""
    mech = twister(3, "revolute")
    z = random_state(mech, seed=5)
    w0 = StepSystem(mech, z).initial_guess()
    s = z.reshape(mech.nb, 13)
    assert np.array_equal(w0[: 6 * mech.nb].reshape(mech.nb, 6), np.c_[s[:, 3:6], s[:, 10:13]]), "v15, w15"
    assert not np.any(w0[6 * mech.nb :]), "joint impulses start at zero"


def _locked_snake():
    import dataclasses

    from dojo_cli.model.mechanism import Mechanism

    mech = snake(3, "spherical", spring=1.0, damper=0.2, gravity=(0, 0, -9.81))
    joints = [dataclasses.replace(j, locked=i == 1) for i, j in enumerate(mech.joints)]
    return Mechanism(mech.bodies, joints, mech.timestep, mech.gravity, name="locked_snake")


@pytest.mark.parametrize("build", [lambda: twister(3, "revolute", spring=1.0, damper=0.2), limited_pendulum,
                                   _locked_snake, lambda: contact_scene("box", "mixed")],
                         ids=["twister", "limits", "lock", "contacts"])
def test_matrix_reuses_the_residuals_kinematics_bit_for_bit(build):
    """Kinematics once per iterate (residual.h rows3_at): the Newton matrix at the unknowns
    the residual was just evaluated at reads the residual's configuration and rows at z3
    instead of evaluating them again (the twister's and the locked snake's joints: the
    Jacobians completed from the configuration the residual kept, residual.h
    deferred_joint_jacobians; the limited pendulum's: the rows it kept whole); it is the same
    matrix to the bit as one evaluated afresh, and a residual at other unknowns is not reused."""
    mech = build()
    system = StepSystem(mech, random_state(mech, seed=6) if mech.nc == 0 else np.asarray(simulate(mech, 5).state(5)))
    rng = np.random.default_rng(7)
    w = system.initial_guess() + ITERATE_SPREAD * rng.standard_normal(system.n)
    other = w + ITERATE_SPREAD * rng.standard_normal(system.n)
    fresh = system.matrix(w)
    dense = lambda at: np.asarray(_core.testing.step_matrix_dense(  # noqa: E731
        system.model, system.data, system.z, system.u, np.ascontiguousarray(w), np.ascontiguousarray(at))).reshape(fresh.shape)
    reused = dense(w)
    assert _core.testing.rows3_at(system.model, system.data, np.ascontiguousarray(w)), "the matrix after the residual at w reused its rows"
    assert np.array_equal(reused.view(np.uint64), fresh.view(np.uint64)), \
        f"reused rows: max |difference| {np.max(np.abs(reused - fresh)):.2e}"
    elsewhere = dense(other)
    assert np.array_equal(elsewhere.view(np.uint64), fresh.view(np.uint64)), "a residual at other unknowns moved the matrix"
    assert np.any(system.residual(other) != system.residual(w)), "the two iterates differ"
