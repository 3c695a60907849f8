"""PinnZoo's inverse_kinematics, nearest_ik, fix_joint_limits, change_order! and
ConversionIndices (docs/minimal.md), on the Go1 (PinnZoo's zoo robot) with its four feet."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.minimal import ik

FEET = ["FR_foot", "FL_foot", "RR_foot", "RL_foot"]


@pytest.fixture(scope="module")
def go1():
    mech = dojo.load_scene("go1")
    return minimal.build_model(mech, kinematics_points=FEET)


def random_pose(model, seed):
    """The Go1 lying at its initial base pose with joint angles drawn inside their limits."""
    rng = np.random.default_rng(seed)
    x = minimal.init_state(model)
    for i, lower, upper, _ in ik._scalar_coordinates(model):
        x[i] = rng.uniform(lower, upper)
    return x, rng


def test_ik_coordinates_are_the_legs(go1):
    assert len(minimal.ik_coordinates(go1)) == 12
    assert all(n.endswith(("hip_joint", "thigh_joint", "calf_joint")) for n in minimal.ik_coordinates(go1))


@pytest.mark.parametrize("seed", range(6))
def test_inverse_kinematics_reaches_the_feet(go1, seed):
    """Both branches put the feet on their targets (to 1e-10 m) with the base held; starting at
    the true angles, branch 0 returns them exactly; the branches differ (two knee solutions)."""
    x, _ = random_pose(go1, seed)
    feet = minimal.kinematics(go1, x)
    start = minimal.init_state(go1)
    rows = [go1.config_names.index(n) for n in minimal.ik_coordinates(go1)]
    sol = minimal.inverse_kinematics(go1, start, feet)
    assert not np.isnan(sol[:, 1]).any()
    for branch in (0, 1):
        if np.isnan(sol[:, branch]).any():
            continue  # a chain that did not converge from this start reports NaN, never a wrong angle
        y = start.copy()
        y[rows] = sol[:, branch]
        np.testing.assert_allclose(minimal.kinematics(go1, y), feet, atol=1e-10)
        np.testing.assert_array_equal(y[:7], start[:7])  # the base pose is held
    assert np.nanmax(np.abs(sol[:, 0] - sol[:, 1])) > 0.1
    at_truth = minimal.inverse_kinematics(go1, x, feet)
    np.testing.assert_allclose(at_truth[:, 0], x[rows], atol=1e-12)


def test_nearest_ik_recovers_the_pose(go1):
    for seed in range(20):
        x, rng = random_pose(go1, seed)
        feet = minimal.kinematics(go1, x)
        nudged = x.copy()
        nudged[7:19] += 0.01 * rng.standard_normal(12)
        np.testing.assert_allclose(minimal.nearest_ik(go1, nudged, feet), x, atol=1e-9)
        q = minimal.nearest_ik(go1, nudged[: go1.nq], feet)  # a configuration in, a configuration out
        assert q.shape == (go1.nq,)


def test_nearest_ik_obeys_limits_or_refuses(go1):
    """A foot straight below the hip at full leg length is reachable only with the knee
    straight, outside the calf's range [-2.818, -0.888]: refused within limits, solved without."""
    x = minimal.init_state(go1)
    y = x.copy()
    y[7:19] = 0.0  # straight legs
    feet = minimal.kinematics(go1, y)
    with pytest.raises(ValueError, match="within the joint limits"):
        minimal.nearest_ik(go1, x, feet)
    free = minimal.nearest_ik(go1, x, feet, obey_limits=False)
    np.testing.assert_allclose(minimal.kinematics(go1, free), feet, atol=1e-9)


def test_fix_joint_limits_wraps_and_clamps(go1):
    x, _ = random_pose(go1, 3)
    q = x[: go1.nq].copy()
    turned = q.copy()
    turned[7:19] += 2 * math.pi * np.array([1, -1, 2, 0, 1, -3, 1, 1, 0, -1, 2, 1])
    np.testing.assert_allclose(minimal.fix_joint_limits(go1, turned), q, atol=1e-12)
    calf = go1.config_names.index("FR_calf_joint")
    bad = q.copy()
    bad[calf] = 0.0  # the calf's range [-2.818, -0.888] holds no 2 pi k
    with pytest.raises(ValueError, match="FR_calf_joint = 0 is outside its limits"):
        minimal.fix_joint_limits(go1, bad)
    clamped = minimal.fix_joint_limits(go1, bad, supress_error=True)  # PinnZoo's spelling
    assert clamped[calf] == pytest.approx(-0.888)
    np.testing.assert_array_equal(np.delete(clamped, calf), np.delete(q, calf))


def test_conversion_indices_and_inplace_orders(go1):
    x = minimal.randn_state(go1, np.random.default_rng(1))
    ci = minimal.conversion_indices(go1, "nominal", "pinocchio")
    np.testing.assert_array_equal(x[ci.state], minimal.change_order(go1, x, "nominal", "pinocchio", kind="state"))
    q, v = x[: go1.nq].copy(), x[go1.nq:].copy()
    np.testing.assert_array_equal(q[ci.config], minimal.change_order(go1, q, "nominal", "pinocchio", kind="config"))
    back = minimal.conversion_indices(go1, "pinocchio", "nominal")
    np.testing.assert_array_equal(q[ci.config][back.config], q)
    same = minimal.change_order_inplace(go1, v, "nominal", "pinocchio", kind="velocity")
    assert same is v
    np.testing.assert_array_equal(v, x[go1.nq:][ci.velocity])
    arrays = [x.copy(), np.eye(go1.nv)]
    minimal.change_orders_inplace(go1, arrays, "nominal", "pinocchio", kind=None)
    np.testing.assert_array_equal(arrays[0], x[ci.state])
    with pytest.raises(ValueError, match="not a permutation"):
        minimal.conversion_indices(go1, "nominal", "mujoco")
    with pytest.raises(TypeError, match="float numpy array"):
        minimal.change_order_inplace(go1, list(q), "nominal", "pinocchio")


def test_change_orders_is_change_order_on_each(go1):
    """PinnZoo's change_orders: each array of the list converted by its own size (a state, a
    velocity, a mass matrix), the inputs left as they were, and back again."""
    x = minimal.randn_state(go1, np.random.default_rng(2))
    v, M = x[go1.nq:].copy(), minimal.M_func(go1, x)
    inputs = [x.copy(), v.copy(), M.copy()]
    out = minimal.change_orders(go1, inputs, "nominal", "pinocchio")
    ci = minimal.conversion_indices(go1, "nominal", "pinocchio")
    np.testing.assert_array_equal(out[0], x[ci.state])
    np.testing.assert_array_equal(out[1], v[ci.velocity])
    np.testing.assert_array_equal(out[2], M[np.ix_(ci.velocity, ci.velocity)])
    for before, after in zip((x, v, M), inputs):
        np.testing.assert_array_equal(after, before)  # not in place: change_orders! is the one that is
    back = minimal.change_orders(go1, out, "pinocchio", "nominal")
    for b, a in zip(back, (x, v, M)):
        np.testing.assert_array_equal(b, a)
