"""PinnZoo's second-order products (issue 29): kinematics_hvp, kinematics_jacobianTvp,
kinematics_force_hvp, kinematics_force_hTvp, inverse_dynamics_hvp and inverse_dynamics_hTvp,
computed exactly in the core by dual numbers (core/minimal/tree_second_order.cpp), against
central finite differences of the first-order functions they differentiate
(kinematics_jacobian, kinematics_force_jacobian, inverse_dynamics_deriv) at random states,
and against the pendulum's closed form."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from tests.minimal.scenes import MINIMAL_JOINTS
from tests.minimal.test_functions import EXACT, _fd, _rel

# Five-point differences of exact first derivatives: truncation ~h^4 and rounding ~1e-16/h
# relative to quantities up to ~3e3; measured 1.4e-10 at most over these cases.
_FD_SECOND_TOLERANCE = 1e-8  # finite-difference error of a first-order function's Jacobian
# For d tau/dx along vdot (affine in vdot: no truncation error) and M(q) lam (entries up to 13
# on Go1: rounding 1e-16 |M| / h reaches 1.4e-9 at the default step), a larger step: the
# truncation h^4 ~ 1e-12 stays far below the tolerance and the rounding drops 100 times.
_LARGE_STEP = 1e-3

# Go1 with its feet as kinematics points (PinnZoo's Go1 kinematics), a floating chain of
# spherical joints (quaternions in every joint), and the joints whose motion subspace turns
# with q (swings, translations in the predecessor frame).
CASES = {"go1": ("go1", ["FR_foot", "FL_foot", "RR_foot", "RL_foot"]),
         "spherical_chain": ("spherical_chain", None),
         "minimal_joints": (MINIMAL_JOINTS, None)}


@functools.lru_cache(maxsize=None)
def _model(case):
    scene, points = CASES[case]
    return minimal.build_model(dojo.load_scene(scene), kinematics_points=points)


def _state(case, seed):
    model = _model(case)
    rng = np.random.default_rng(seed)
    x = minimal.randn_state(model, rng)
    lam = rng.standard_normal(3 * len(model.kinematics_points))
    return model, x, lam, rng


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_kinematics_hvp_and_jacobianTvp(case, seed):
    model, x, lam, rng = _state(case, seed)
    dx = rng.standard_normal(model.nx)
    hvp = minimal.kinematics_hvp(model, x, dx)
    assert hvp.shape == (3 * len(model.kinematics_points), model.nx)
    assert _rel(hvp, _fd(lambda y: minimal.kinematics_jacobian(model, y) @ dx, x)) < _FD_SECOND_TOLERANCE
    # J^T lam is the gradient over v of the forces' power lam . (J v); its x derivative is
    # kinematics_force_jacobian
    jtl = minimal.kinematics_jacobianTvp(model, x, lam)
    power = _fd(lambda y: np.atleast_1d(lam @ minimal.kinematics_velocity(model, y)), x)[0, model.nq:]
    assert jtl.shape == (model.nv,) and _rel(jtl, power) < _FD_SECOND_TOLERANCE
    force = minimal.kinematics_force_jacobian(model, x, lam)
    assert _rel(force, _fd(lambda y: minimal.kinematics_jacobianTvp(model, y, lam), x)) < _FD_SECOND_TOLERANCE


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_kinematics_force_hvp_and_hTvp(case, seed):
    model, x, lam, rng = _state(case, seed)
    F = functools.partial(minimal.kinematics_force_jacobian, model)  # (x, lam) -> (nv, nx)
    mult = rng.standard_normal(model.nx)
    dx, dlam = minimal.kinematics_force_hvp(model, x, lam, mult)
    assert dx.shape == (model.nv, model.nx) and dlam.shape == (model.nv, lam.size)
    assert _rel(dx, _fd(lambda y: F(y, lam) @ mult, x)) < _FD_SECOND_TOLERANCE
    assert _rel(dlam, _fd(lambda l: F(x, l) @ mult, lam)) < _FD_SECOND_TOLERANCE
    mult = rng.standard_normal(model.nv)
    hx, hlam = minimal.kinematics_force_hTvp(model, x, lam, mult)
    assert hx.shape == (model.nx, model.nx) and hlam.shape == (model.nx, lam.size)
    assert _rel(hx, _fd(lambda y: F(y, lam).T @ mult, x)) < _FD_SECOND_TOLERANCE
    assert _rel(hlam, _fd(lambda l: F(x, l).T @ mult, lam)) < _FD_SECOND_TOLERANCE
    # F^T mult is the gradient of lam . J(q) mult: its x derivative is a Hessian
    assert _rel(hx, hx.T) < EXACT


def test_kinematics_hvp_of_the_pendulum_is_its_closed_form():
    # the tip at [0, -sin th, cos th]: J dx = dth [0, -cos th, -sin th], whose th derivative is
    # dth [0, sin th, -cos th] (the v column is zero)
    model = minimal.build_model(dojo.load_scene("pinnzoo_pendulum"))
    th, dth = 0.7, -1.3
    hvp = minimal.kinematics_hvp(model, np.array([th, 0.4]), np.array([dth, 2.0]))
    expected = np.array([[0.0, 0.0], [np.sin(th) * dth, 0.0], [-np.cos(th) * dth, 0.0]])
    assert np.allclose(hvp, expected, rtol=0, atol=EXACT)


@pytest.mark.parametrize("case", list(CASES))
def test_inverse_dynamics_hvp_and_hTvp(case):
    model, x, _, rng = _state(case, 2)
    vdot = rng.standard_normal(model.nv)
    dtau_dx = lambda y, a: minimal.inverse_dynamics_deriv(model, y, a)[0]  # noqa: E731 (nv, nx)
    lam = rng.standard_normal(model.nx)
    hx, ha = minimal.inverse_dynamics_hvp(model, x, vdot, lam)
    assert hx.shape == (model.nv, model.nx) and ha.shape == (model.nv, model.nv)
    assert _rel(hx, _fd(lambda y: dtau_dx(y, vdot) @ lam, x)) < _FD_SECOND_TOLERANCE
    assert _rel(ha, _fd(lambda a: dtau_dx(x, a) @ lam, vdot, h=_LARGE_STEP)) < _FD_SECOND_TOLERANCE
    lam = rng.standard_normal(model.nv)
    gx, gm = minimal.inverse_dynamics_hTvp(model, x, vdot, lam)
    assert gx.shape == (model.nx, model.nx) and gm.shape == (model.nv, model.nx)
    assert _rel(gx, _fd(lambda y: dtau_dx(y, vdot).T @ lam, x)) < _FD_SECOND_TOLERANCE
    assert _rel(gx, gx.T) < EXACT  # the Hessian of lam . tau
    M = lambda y: minimal.inverse_dynamics_deriv(model, y, vdot)[1]  # noqa: E731 d tau/d vdot (nv, nv)
    assert _rel(gm, _fd(lambda y: M(y).T @ lam, x, h=_LARGE_STEP)) < _FD_SECOND_TOLERANCE
