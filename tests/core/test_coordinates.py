"""The C++ coordinate conversions (dojo_cli/core/maximal/coordinates.h, coordinates.cpp).

- min -> max -> min round trips for every joint type, at random states and at zero
  (where the exponential map takes its series branch);
- the exact conversion Jacobians (analytic, one pass over the tree) against
  central finite differences of the C++ values, in the gradients' tangent coordinates
  [x, v, phi, w] per body with q -> q [sqrt(1 - |phi|^2), phi] (docs/formats.md);
- batched calls (leading axes) against per-state calls.
"""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli import _core
from dojo_cli.physics.coordinates import body_override_arrays
from tests.mechanisms import ALL_JOINT_TYPES, fourbar, random_minimal_state, snake, twister

# min -> max -> min: each conversion is exact up to rounding, the velocities are
# differences divided by h = 0.01 (rounding 1e-16 of positions ~1 becomes 1e-14).
ROUND_TRIP_TOL = 1e-11
# Central differences with step FD_STEP (m, rad, m/s, rad/s): truncation O(step^2) ~
# 1e-12 times third derivatives; rounding ~1e-16 |value| / step ~ 1e-10, and 1e-8 for
# velocities, which are divided by h = 0.01. Compared relative to max(1, max |J|).
FD_STEP = 1e-6
FD_RTOL = 1e-6
# Batched and per-state calls run the same code on the same numbers: bitwise equal.
BATCH_TOL = 0.0


def _builders():
    for joint_type in ALL_JOINT_TYPES:
        yield f"snake-{joint_type}", lambda jt=joint_type: snake(3, jt)
        yield f"twister-{joint_type}", lambda jt=joint_type: twister(3, jt)


BUILDERS = dict(_builders())


def _perturb_maximal(z: np.ndarray, nb: int, k: int, e: float) -> np.ndarray:
    """z moved by e along tangent coordinate k ([x, v, phi, w] per body)."""
    s = np.array(z, dtype=float).reshape(nb, 13)
    body, part = divmod(k, 12)
    block, axis = divmod(part, 3)
    if block == 2:
        phi = np.zeros(3)
        phi[axis] = e
        dq = np.concatenate([[np.sqrt(1.0 - phi @ phi)], phi])
        w, v = s[body, 6], s[body, 7:10]
        dw, dv = dq[0], dq[1:]
        s[body, 6:10] = np.concatenate([[w * dw - v @ dv], w * dv + dw * v + np.cross(v, dv)])
    else:
        s[body, (0, 3, None, 10)[block] + axis] += e
    return s.reshape(-1)


def _tangent_difference(z_plus: np.ndarray, z_minus: np.ndarray, z0: np.ndarray, nb: int) -> np.ndarray:
    """(z+ - z-) in tangent coordinates [x, v, phi, w] per body, phi = Vec(q0* q)."""
    out = []
    for b in range(nb):
        p, m, o = (a.reshape(nb, 13)[b] for a in (z_plus, z_minus, z0))
        q0c = o[6:10] * np.array([1.0, -1.0, -1.0, -1.0])

        def vec(q):  # Vec(q0* q)
            return q0c[0] * q[1:] + q[0] * q0c[1:] + np.cross(q0c[1:], q[1:])

        out.append(np.concatenate([p[0:6] - m[0:6], vec(p[6:10]) - vec(m[6:10]), p[10:13] - m[10:13]]))
    return np.concatenate(out)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(b), initial=0.0)))


def _states(mech, seed=3):
    """Minimal states to test at: zero (series branch of the exponential map) and random."""
    rng = np.random.default_rng(seed)
    return {"zero": np.zeros(2 * mech.nf), "random": random_minimal_state(mech, rng, coord_scale=0.8, rate_scale=2.0)}


@pytest.mark.parametrize("name", list(BUILDERS))
def test_min_max_min_round_trip(name):
    mech = BUILDERS[name]()
    for label, y in _states(mech).items():
        z = _core.minimal_to_maximal(mech.core, y)
        back = _core.maximal_to_minimal(mech.core, z)
        err = np.max(np.abs(back - y))
        assert err < ROUND_TRIP_TOL, f"{name} {label}: min->max->min error {err:.2e}"
        viol = np.max(_core.constraint_violation(mech.core, z), initial=0.0)
        assert viol < ROUND_TRIP_TOL, f"{name} {label}: constraint violation {viol:.2e}"


@pytest.mark.parametrize("name", list(BUILDERS))
def test_maximal_to_minimal_jacobian_against_finite_differences(name):
    mech = BUILDERS[name]()
    for label, y in _states(mech).items():
        z = _core.minimal_to_maximal(mech.core, y)
        jac = _core.maximal_to_minimal_jacobian(mech.core, z)
        assert jac.shape == (2 * mech.nf, 12 * mech.nb)
        fd = np.empty_like(jac)
        for k in range(12 * mech.nb):
            plus = _core.maximal_to_minimal(mech.core, _perturb_maximal(z, mech.nb, k, FD_STEP))
            minus = _core.maximal_to_minimal(mech.core, _perturb_maximal(z, mech.nb, k, -FD_STEP))
            fd[:, k] = (plus - minus) / (2 * FD_STEP)
        err = _relative(jac, fd)
        assert err < FD_RTOL, f"{name} {label}: dy/dz relative error {err:.2e}"


@pytest.mark.parametrize("name", list(BUILDERS))
def test_minimal_to_maximal_jacobian_against_finite_differences(name):
    mech = BUILDERS[name]()
    for label, y in _states(mech).items():
        z = _core.minimal_to_maximal(mech.core, y)
        jac = _core.minimal_to_maximal_jacobian(mech.core, y)
        assert jac.shape == (12 * mech.nb, 2 * mech.nf)
        fd = np.empty_like(jac)
        for k in range(2 * mech.nf):
            e = np.zeros_like(y)
            e[k] = FD_STEP
            plus = _core.minimal_to_maximal(mech.core, y + e)
            minus = _core.minimal_to_maximal(mech.core, y - e)
            fd[:, k] = _tangent_difference(plus, minus, z, mech.nb) / (2 * FD_STEP)
        err = _relative(jac, fd)
        assert err < FD_RTOL, f"{name} {label}: dz/dy relative error {err:.2e}"


def test_minimal_to_maximal_jacobian_with_base_and_overrides():
    """Overridden parts are constants (zero derivative) and the body's descendants follow them."""
    mech, _ = fourbar()
    y = random_minimal_state(mech, np.random.default_rng(7))
    z_base = _core.minimal_to_maximal(mech.core, np.zeros(2 * mech.nf))
    overrides = {1: {"orientation": [0.9, 0.1, 0.0, 0.2], "angular_velocity": [0.1, 0.2, -0.3]}}
    flags, values = body_override_arrays(mech, overrides)
    z = _core.minimal_to_maximal(mech.core, y, z_base, flags, values)
    jac = _core.minimal_to_maximal_jacobian(mech.core, y, z_base, flags, values)
    fd = np.empty_like(jac)
    for k in range(2 * mech.nf):
        e = np.zeros_like(y)
        e[k] = FD_STEP
        plus = _core.minimal_to_maximal(mech.core, y + e, z_base, flags, values)
        minus = _core.minimal_to_maximal(mech.core, y - e, z_base, flags, values)
        fd[:, k] = _tangent_difference(plus, minus, z, mech.nb) / (2 * FD_STEP)
    err = _relative(jac, fd)
    assert err < FD_RTOL, f"dz/dy with overrides: relative error {err:.2e}"
    rot = jac.reshape(mech.nb, 12, -1)[1, 6:9]
    assert np.max(np.abs(rot)) == 0.0, "an overridden orientation does not move with y"


@pytest.mark.parametrize("name", ["twister-spherical", "snake-revolute", "twister-floating"])
def test_batched_calls_match_per_state_calls(name):
    mech = BUILDERS[name]()
    rng = np.random.default_rng(11)
    ys = np.array([random_minimal_state(mech, rng, coord_scale=0.8, rate_scale=2.0) for _ in range(5)])
    zs = _core.minimal_to_maximal(mech.core, ys)
    assert zs.shape == (5, 13 * mech.nb)
    one = np.array([_core.minimal_to_maximal(mech.core, y) for y in ys])
    assert np.max(np.abs(zs - one)) <= BATCH_TOL, "minimal_to_maximal"
    checks = {
        "maximal_to_minimal": (_core.maximal_to_minimal, (2 * mech.nf,)),
        "minimal_velocities": (_core.minimal_velocities, (mech.nf,)),
        "constraint_violation": (_core.constraint_violation, (mech.nj,)),
    }
    for field, (fn, shape) in checks.items():
        batch = fn(mech.core, zs)
        single = np.array([fn(mech.core, z) for z in zs])
        assert batch.shape == (5,) + shape, f"{field}: shape {batch.shape}"
        assert np.max(np.abs(batch - single)) <= BATCH_TOL, f"{field}: batched differs from per-state"
    s = zs.reshape(5, mech.nb, 13)
    x, q = np.ascontiguousarray(s[..., 0:3]), np.ascontiguousarray(s[..., 6:10])
    batch = _core.minimal_coordinates(mech.core, x, q)
    single = np.array([_core.minimal_coordinates(mech.core, x[t], q[t]) for t in range(5)])
    assert np.max(np.abs(batch - single)) <= BATCH_TOL, "minimal_coordinates: batched differs from per-state"
    # the coordinates and velocities are the two halves of each joint's minimal block
    y = _core.maximal_to_minimal(mech.core, zs)
    k = 0
    for j in range(mech.nj):
        n = mech.joint_free_range[j].stop - mech.joint_free_range[j].start
        assert np.array_equal(y[:, k : k + n], batch[:, mech.joint_free_range[j]]), f"joint {j} coordinates"
        assert np.array_equal(y[:, k + n : k + 2 * n], _core.minimal_velocities(mech.core, zs)[:, mech.joint_free_range[j]])
        k += 2 * n


def test_shape_errors_name_the_argument():
    mech = snake(2, "revolute")
    with pytest.raises(ValueError, match="z: expected shape"):
        _core.maximal_to_minimal(mech.core, np.zeros(13 * mech.nb + 1))
    with pytest.raises(ValueError, match="y: expected shape"):
        _core.minimal_to_maximal(mech.core, np.zeros(2 * mech.nf + 1))
