"""Maximal <-> minimal coordinates (Dojo's minimal.jl, notes 9.3)."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.physics.coordinates import constraint_violation, maximal_to_minimal, minimal_to_maximal
from dojo_cli.model.mechanism import axis_basis
from tests.mechanisms import ALL_JOINT_TYPES, random_minimal_state, snake, twister

ROUND_TRIP_TOL = 1e-8  # Dojo's bound


@pytest.mark.parametrize("joint_type", ALL_JOINT_TYPES)
@pytest.mark.parametrize("build", [snake, twister], ids=["snake", "twister"])
def test_min_max_min_round_trip(build, joint_type):
    mech = build(5, joint_type)
    rng = np.random.default_rng(100)
    y = random_minimal_state(mech, rng, coord_scale=0.8, rate_scale=2.0)
    z = minimal_to_maximal(mech, y)
    back = maximal_to_minimal(mech, z)
    err = np.max(np.abs(back - y))
    assert err < ROUND_TRIP_TOL, f"min->max->min error {err:.2e}"
    again = minimal_to_maximal(mech, back)
    assert np.max(np.abs(again - z)) < ROUND_TRIP_TOL, "max->min->max round trip"


def test_constraints_hold_after_minimal_to_maximal():
    for jt in ALL_JOINT_TYPES:
        mech = twister(4, jt)
        z = minimal_to_maximal(mech, random_minimal_state(mech, np.random.default_rng(1)))
        viol = np.max(constraint_violation(mech, z))  # largest constraint row of every joint
        assert viol < 1e-12, f"{jt}: constraint violation {viol:.2e}"


@pytest.mark.parametrize("axis", [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1], [1, 1, 0], [0.3, -0.2, 0.9]])
def test_axis_basis_is_deterministic_and_right_handed(axis):
    b = axis_basis(np.array(axis, float))
    assert np.allclose(b @ b.T, np.eye(3), atol=1e-14), "orthonormal"
    assert np.isclose(np.linalg.det(b), 1.0), "right-handed"
    assert np.allclose(b[2], np.array(axis) / np.linalg.norm(axis)), "last row is the axis"


def test_axis_basis_cyclic_for_coordinate_axes():
    x, y, z = np.eye(3)
    assert np.allclose(axis_basis(x)[:2], [y, z])
    assert np.allclose(axis_basis(y)[:2], [z, x])
    assert np.allclose(axis_basis(z)[:2], [x, y])
