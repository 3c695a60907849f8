"""The C++ contact kernels (dojo_cli/core/maximal/collision.h, contact.h, contact.cpp).

Checks independent of any other implementation: the geometry Jacobians and the kernel's
Jacobians against central finite differences of the C++ values, the hand-chained
Jacobians against dual numbers through every operation (evaluate_contact_reference),
Dojo's reference collision cases (dojo_engine_notes.md 9.7), analytic values of every
collision pair (closest points, normals, distances inside and outside, ties and
degenerate cases), the residual-only path against the full one (bitwise), and a step's
contact records against each contact's kernel. The Newton-matrix blocks these
kernels fill are checked against finite differences of the whole step's residual in
tests/properties/test_contact_matrix.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core as core
from dojo_cli.simulation.step import solve_step
from tests.mechanisms import CONTACT_SCENES, CONTACT_VARIANTS, contact_scene

# Central differences: step (m, rad, m/s, rad/s) and tolerance relative to
# max(1, max |FD| of the field). Truncation O(step^2) ~ 1e-12 times the third
# derivatives, rounding ~1e-16 / step = 1e-10 times the values.
FD_STEP = 1e-6
FD_RTOL = 1e-6

# Hand-chained Jacobians against dual numbers through every operation: both exact,
# they differ by the rounding of differently ordered sums (a few ulps of the scale).
REFERENCE_RTOL = 1e-13

MODELS = ("impact", "nonlinear", "linear")
HALF = {"impact": 1, "nonlinear": 4, "linear": 6}
SHAPE_KEYS = {
    "halfspace": ("normal", "point"),
    "sphere": ("offset", "radius"),
    "capsule": ("end1", "end2", "radius"),
    "box": ("centre", "half_sizes"),
}
GEOMETRY_FIELDS = ("distance", "normal", "tangent", "point_a", "point_b")
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])
ZERO3 = np.zeros(3)
ZERO33 = np.zeros((3, 3))


# ------------------------------------------------------------ quaternions (test-local)
def qmul(p, q):
    """Hamilton product of [w, x, y, z] quaternions."""
    pw, pv, qw, qv = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def qexp(t):
    """exp(t / 2): the unit quaternion rotating by |t| about t."""
    a = np.linalg.norm(t)
    if a < 1e-12:
        return np.concatenate([[1.0], 0.5 * t])
    return np.concatenate([[np.cos(a / 2)], np.sin(a / 2) * t / a])


def rotate(q, v):
    return qmul(qmul(q, np.concatenate([[0.0], v])), q * [1, -1, -1, -1])[1:]


def random_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def integrator_map(w, h):
    """Dojo's qmap(w) = (h/2) [sqrt(4/h^2 - |w|^2), w] (notes 2.2)."""
    return 0.5 * h * np.concatenate([[np.sqrt(4.0 / h**2 - w @ w)], w])


def integrator_map_jacobian(w, h):
    """dt3/dw25 = (h^2/2) (s I + w w^T / s - [w]x), s = sqrt(4/h^2 - |w|^2)."""
    s = np.sqrt(4.0 / h**2 - w @ w)
    skew = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    return 0.5 * h**2 * (s * np.eye(3) + np.outer(w, w) / s - skew)


# ------------------------------------------------------------------ helpers
def assert_close(name, got, ref, rtol):
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    assert got.shape == ref.shape, f"{name}: shape {got.shape} != {ref.shape}"
    err = np.max(np.abs(got - ref), initial=0.0)
    scale = max(1.0, np.max(np.abs(ref), initial=0.0))
    assert err <= rtol * scale, f"{name}: error {err:.2e} (scale {scale:.2e})"
    return err / scale


def params_of(contact, other=None):
    """The kernel's params dict from a Mechanism's Contact."""
    shape = np.concatenate([np.ravel(np.asarray(contact.params[k], dtype=float)) for k in SHAPE_KEYS[contact.kind]])
    return dict(
        body=contact.body,
        other=contact.other if other is None else other,
        model=contact.model,
        kind=contact.kind,
        friction=contact.friction,
        radius=contact.radius,
        offset=np.asarray(contact.offset, dtype=float),
        shape=shape,
    )


def random_cone_point(rng, model):
    """(N,) strictly inside the model's cone: orthant entries > 0, SOC parts (u0 > |u1:|)."""
    n = HALF[model]
    u = rng.uniform(0.1, 2.0, n)
    if model == "nonlinear":
        u[2:4] = rng.normal(size=2)
        u[1] = np.linalg.norm(u[2:4]) + rng.uniform(0.1, 1.0)
    return u


def body_state(x, q, v, w, h):
    return dict(x=x, q=q, v=v, w=w, mw=integrator_map_jacobian(w, h))


def evaluate(params, h, a, b, s, gamma, output="jacobians", reference=False):
    return core.testing.evaluate_contact(
        params, h, a["x"], a["q"], a["v"], a["w"], a["mw"], b["x"], b["q"], b["v"], b["w"], b["mw"], s, gamma, output,
        reference=reference,
    )


WORLD = dict(x=ZERO3, q=IDENTITY, v=ZERO3, w=ZERO3, mw=ZERO33)


# ------------------------------------------------------------ collision pairs
def _place(rng, centre):
    """Body a's pose and offset putting its sphere centre at a world point."""
    qa = random_quaternion(rng)
    offset = 0.4 * rng.normal(size=3)
    return centre - rotate(qa, offset), qa, offset


def _pair(kind, xa, qa, offset, radius, xb, qb, shape):
    return dict(kind=kind, xa=xa, qa=qa, offset=offset, radius=radius, xb=xb, qb=qb, shape=np.asarray(shape, float))


def _capsule_pair(seed, along, gap, radius=0.3, short=False):
    rng = np.random.default_rng(seed)
    xb, qb = rng.normal(size=3), random_quaternion(rng)
    end1, end2 = 0.6 * rng.normal(size=3), 0.6 * rng.normal(size=3)
    if short:
        end2 = end1.copy()
    e1, e2 = xb + rotate(qb, end1), xb + rotate(qb, end2)
    axis = e2 - e1
    side = rng.normal(size=3)
    if not short:
        side -= (side @ axis) / (axis @ axis) * axis
    side /= np.linalg.norm(side)
    xa, qa, offset = _place(rng, e1 + along * axis + gap * side)
    return _pair("capsule", xa, qa, offset, radius, xb, qb, np.concatenate([end1, end2, [0.25]]))


BOX_HALF = np.array([0.3, 0.5, 0.7])
BOX_POINTS = {  # sphere centre in box coordinates
    "outside face +z": [0.1, -0.2, 1.1],
    "outside edge": [0.5, -0.8, 0.1],
    "outside corner": [-0.5, 0.65, -0.95],
    "inside near +x": [0.26, 0.1, -0.2],
    "inside near -x": [-0.22, 0.3, 0.1],
    "inside near +y": [0.05, 0.44, 0.2],
    "inside near -y": [0.05, -0.42, 0.2],
    "inside near +z": [-0.1, 0.1, 0.6],
    "inside near -z": [0.0, 0.05, -0.65],
}


def _box_pair(seed, local, half=BOX_HALF, radius=0.15):
    rng = np.random.default_rng(seed)
    xb, qb = rng.normal(size=3), random_quaternion(rng)
    centre_b = 0.3 * rng.normal(size=3)
    xa, qa, offset = _place(rng, xb + rotate(qb, centre_b + np.asarray(local, float)))
    return _pair("box", xa, qa, offset, radius, xb, qb, np.concatenate([centre_b, half]))


def _halfspace_pair(seed, normal=None, point=None):
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=3) if normal is None else np.asarray(normal, float)
    point = rng.normal(size=3) if point is None else np.asarray(point, float)
    return _pair("halfspace", rng.normal(size=3), random_quaternion(rng), 0.4 * rng.normal(size=3),
                 rng.uniform(0.0, 0.5), rng.normal(size=3), random_quaternion(rng), np.concatenate([normal, point]))


def _sphere_pair(seed, gap_direction=None, gap=None):
    rng = np.random.default_rng(seed)
    xb, qb, ob = rng.normal(size=3), random_quaternion(rng), 0.4 * rng.normal(size=3)
    cb = xb + rotate(qb, ob)
    if gap_direction is None:
        centre = cb + rng.normal(size=3)
    else:
        centre = cb + gap * np.asarray(gap_direction, float) / np.linalg.norm(gap_direction)
    xa, qa, offset = _place(rng, centre)
    return _pair("sphere", xa, qa, offset, rng.uniform(0.0, 0.8), xb, qb, np.concatenate([ob, [rng.uniform(0.0, 0.8)]]))


GEOMETRY_CASES = {
    **{f"halfspace random {s}": (lambda s=s: _halfspace_pair(s)) for s in range(3)},
    "halfspace ground": lambda: _halfspace_pair(7, [0, 0, 1], [0, 0, 0]),
    "halfspace normal +e_x (fallback)": lambda: _halfspace_pair(1, [1, 0, 0]),
    "halfspace normal -e_x (fallback)": lambda: _halfspace_pair(2, [-2, 0, 0]),
    "halfspace normal 5e-7 off e_x (fallback)": lambda: _halfspace_pair(3, [1, 5e-7, -1e-7]),
    "halfspace normal 2e-6 off e_x (no fallback)": lambda: _halfspace_pair(4, [1, 2e-6, 0]),
    **{f"sphere random {s}": (lambda s=s: _sphere_pair(s)) for s in range(3)},
    "sphere overlapping": lambda: _sphere_pair(5, [0.3, -0.2, 0.5], 0.2),
    "sphere coincident": lambda: _pair("sphere", np.array([0.1, 0.2, 0.3]), IDENTITY, ZERO3, 0.3,
                                       np.array([0.1, 0.2, 0.3]), IDENTITY, [0, 0, 0, 0.4]),
    "sphere normal 3e-7 off e_x (fallback)": lambda: _sphere_pair(7, [1, 3e-7, 0], 1.2),
    "sphere normal 3e-6 off -e_x (no fallback)": lambda: _sphere_pair(8, [-1, 0, 3e-6], 1.2),
    "capsule middle": lambda: _capsule_pair(0, 0.4, 0.9),
    "capsule near middle": lambda: _capsule_pair(1, 0.7, 0.2),
    "capsule end cap 1": lambda: _capsule_pair(2, -0.3, 0.8),
    "capsule end cap 2": lambda: _capsule_pair(3, 1.5, 0.6),
    "capsule end cap 1 overlapping": lambda: _capsule_pair(4, -0.2, 0.1),
    # exactly on the segment (|c - closest| = 0; a gap of rounding size would make the
    # distance Jacobian, (c - closest)/|c - closest| . d(c - closest), rounding noise)
    "capsule on segment": lambda: _pair("capsule", np.array([0, 0.5, 0]), IDENTITY, ZERO3, 0.2, ZERO3, IDENTITY,
                                        [0, 1, 0, 0, -1, 0, 0.3]),
    "capsule on segment along z": lambda: _pair("capsule", np.array([0, 0, -0.5]), IDENTITY, ZERO3, 0.2, ZERO3,
                                                IDENTITY, [0, 0, 1, 0, 0, -1, 0.3]),
    "capsule short segment": lambda: _capsule_pair(6, 0.0, 0.7, short=True),
    "capsule short segment, centre on it": lambda: _pair("capsule", np.array([0.3, 0, 0]), IDENTITY, ZERO3, 0.2,
                                                         ZERO3, IDENTITY, [0.3, 0, 0, 0.3, 0, 0, 0.3]),
    **{f"box {name}": (lambda p=p, s=s: _box_pair(s, p)) for s, (name, p) in enumerate(BOX_POINTS.items())},
    # exact ties (identity poses): the tie order +x, -x, +y, -y, +z, -z
    "box on the +x face": lambda: _pair("box", np.array([0.3, 0.1, 0.2]), IDENTITY, ZERO3, 0.15, ZERO3, IDENTITY,
                                        np.concatenate([ZERO3, BOX_HALF])),
    "box on the (-y, +z) edge": lambda: _pair("box", np.array([0.1, -0.5, 0.7]), IDENTITY, ZERO3, 0.15, ZERO3,
                                              IDENTITY, np.concatenate([ZERO3, BOX_HALF])),
    "box cube centre (all faces tied)": lambda: _pair("box", ZERO3, IDENTITY, ZERO3, 0.15, ZERO3, IDENTITY,
                                                      [0, 0, 0, 0.5, 0.5, 0.5]),
}
# Near e_x the tangents curve on the scale |e_x x n| ~ 1e-6 of the fallback's threshold,
# no larger than FD_STEP; these cases take NEAR_FALLBACK_STEP, which keeps the central
# difference on one side of the threshold and its truncation, (step / 3e-6)^2 of the
# tangents' derivatives (~1e5), below FD_RTOL; rounding is 1e-16 / step = 1e-7 of the values.
NEAR_FALLBACK = {
    "halfspace normal 5e-7 off e_x (fallback)",
    "sphere normal 3e-7 off e_x (fallback)",
    "sphere normal 3e-6 off -e_x (no fallback)",
}
NEAR_FALLBACK_STEP = 1e-9
# Cases at a point where the geometry is not differentiable (coincident centres, a centre
# on a capsule's axis, ties between box faces): the branch changes within any step, so
# their Jacobians are the documented choice, and the tests check their values, invariants
# and (coincident centres) the zero normal Jacobian.
NOT_SMOOTH = {
    "sphere coincident",
    "capsule on segment",
    "capsule on segment along z",
    "capsule short segment, centre on it",
    "box on the +x face",
    "box on the (-y, +z) edge",
    "box cube centre (all faces tied)",
}


def _geometry(case, parameters=True):
    return core.contact_geometry(
        case["kind"], case["xa"], case["qa"], case["offset"], case["radius"], case["xb"], case["qb"], case["shape"],
        parameters,
    )


@pytest.mark.parametrize("name", list(GEOMETRY_CASES))
def test_geometry_12_and_16_columns_agree(name):
    """With the parameter columns (offset, radius) the pose columns and values are unchanged."""
    case = GEOMETRY_CASES[name]()
    out = _geometry(case, parameters=True)
    out12 = _geometry(case, parameters=False)
    for f in GEOMETRY_FIELDS:
        assert np.array_equal(out12[f], out[f]), f"{name}: {f} differs between 12 and 16 columns"
        assert np.array_equal(out12[f + "_jac"], out[f + "_jac"][..., :12]), f"{name}: {f}_jac 12 vs 16 columns"


def _geometry_values(case, geometry=None):
    g = (geometry or _geometry)(case, parameters=False)
    return {f: np.asarray(g[f], dtype=float) for f in GEOMETRY_FIELDS}


def _moved(case, e):
    """The case with the 16 coordinates [x_a, t_a, x_b, t_b, offset, radius] moved by e."""
    out = dict(case)
    out["xa"], out["qa"] = case["xa"] + e[0:3], qmul(case["qa"], qexp(e[3:6]))
    out["xb"], out["qb"] = case["xb"] + e[6:9], qmul(case["qb"], qexp(e[9:12]))
    out["offset"], out["radius"] = case["offset"] + e[12:15], case["radius"] + e[15]
    return out


def _check_geometry_jacobians(name, case, step=FD_STEP, geometry=None):
    """d/d[x_a, t_a, x_b, t_b, offset, radius] of every field against central differences;
    ``geometry(case, parameters)``: the core call of the case's kind (default ``_geometry``)."""
    geometry = geometry or _geometry
    out = geometry(case, parameters=True)
    for k in range(16):
        e = np.zeros(16)
        e[k] = step
        plus, minus = _geometry_values(_moved(case, e), geometry), _geometry_values(_moved(case, -e), geometry)
        for f in GEOMETRY_FIELDS:
            fd = (plus[f] - minus[f]) / (2 * step)
            assert_close(f"{name}: d {f} / d column {k}", np.asarray(out[f + "_jac"])[..., k], fd, FD_RTOL)
    return out


@pytest.mark.parametrize("name", [n for n in GEOMETRY_CASES if n not in NOT_SMOOTH])
def test_geometry_jacobians_match_finite_differences(name):
    """d/d[x_a, t_a, x_b, t_b, offset, radius] of every field against central differences."""
    _check_geometry_jacobians(name, GEOMETRY_CASES[name](), NEAR_FALLBACK_STEP if name in NEAR_FALLBACK else FD_STEP)


def _check_geometry_invariants(name, g):
    n, t = g["normal"], g["tangent"]
    assert abs(np.linalg.norm(n) - 1.0) < 1e-12, f"{name}: |n| = {np.linalg.norm(n)}"
    assert np.allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-12), f"{name}: |t| = {np.linalg.norm(t, axis=1)}"
    assert np.allclose(t @ n, 0.0, atol=1e-12) and abs(t[0] @ t[1]) < 1e-12, f"{name}: tangents not orthogonal"
    assert np.allclose(np.cross(t[0], n), t[1], atol=1e-12), f"{name}: t2 != t1 x n"
    assert np.allclose(g["point_a"] - g["point_b"], g["distance"] * n, atol=1e-12), f"{name}: pa - pb != d n"


@pytest.mark.parametrize("name", list(GEOMETRY_CASES))
def test_geometry_invariants(name):
    """Unit normal, orthonormal tangents with t2 = t1 x n, point_a - point_b = d n."""
    _check_geometry_invariants(name, _geometry(GEOMETRY_CASES[name]()))


def _simple(kind, xa, shape, radius=0.5, xb=ZERO3, qa=IDENTITY, qb=IDENTITY):
    return _geometry(_pair(kind, np.asarray(xa, float), qa, ZERO3, radius, np.asarray(xb, float), qb, shape))


@pytest.mark.parametrize(
    "xb, normal, tangent",
    [
        ([0.0, 0.0, 2.0], [0, 0, -1], [[0, 1, 0], [-1, 0, 0]]),
        ([2.0, 0.0, 0.0], [-1, 0, 0], [[0, 0, 1], [0, -1, 0]]),  # the e_y fallback
        ([0.0, 2.0, 0.0], [0, -1, 0], [[0, 0, -1], [-1, 0, 0]]),
    ],
)
def test_dojo_sphere_sphere_axes(xb, normal, tangent):
    """Dojo's collisions.jl: a (parent) r 0.5 at the origin, b (child) r 0.5 at 2 along an axis."""
    g = _simple("sphere", ZERO3, [0, 0, 0, 0.5], xb=xb)
    axis = np.array(xb) / 2.0
    assert np.allclose(g["distance"], 1.0, atol=1e-12)
    assert np.allclose(g["point_a"], 0.5 * axis, atol=1e-12)
    assert np.allclose(g["point_b"], 1.5 * axis, atol=1e-12)
    assert np.allclose(g["normal"], normal, atol=1e-12)
    assert np.allclose(g["tangent"], tangent, atol=1e-12)


def test_dojo_sphere_sphere_diagonal():
    """Dojo's child at [2, 2, 2]; its tangent rows are ours times |e_x x n| (Dojo does not normalise)."""
    g = _simple("sphere", ZERO3, [0, 0, 0, 0.5], xb=[2.0, 2.0, 2.0])
    assert np.allclose(g["distance"], 2.4641016, atol=1e-4)
    assert np.allclose(g["point_a"], 0.288675, atol=1e-4)
    assert np.allclose(g["point_b"], 1.711324, atol=1e-4)
    assert np.allclose(g["normal"], -0.57735, atol=1e-4)
    dojo_rows = np.array([[0.0, 0.57735, -0.57735], [-0.66666, 0.33333, 0.33333]])
    assert np.allclose(np.linalg.norm(np.cross([1.0, 0, 0], g["normal"])) * g["tangent"], dojo_rows, atol=1e-4)


@pytest.mark.parametrize("kind, shape", [("capsule", [0, 1, 0, 0, -1, 0, 0.5]), ("box", [0, 0, 0, 0.5, 0.5, 0.5])])
def test_dojo_sphere_capsule_and_box(kind, shape):
    """Dojo: sphere r 0.5 (a) at [0, 0, 2] above a capsule (segment (0, +-1, 0), r 0.5) or a unit box (b)."""
    g = _simple(kind, [0.0, 0.0, 2.0], shape)
    assert np.allclose(g["distance"], 1.0, atol=1e-12)
    assert np.allclose(g["normal"], [0, 0, 1], atol=1e-12)
    assert np.allclose(g["point_a"], [0, 0, 1.5], atol=1e-12)
    assert np.allclose(g["point_b"], [0, 0, 0.5], atol=1e-12)
    assert np.allclose(g["tangent"], [[0, -1, 0], [-1, 0, 0]], atol=1e-12)


def test_tangent_fallback():
    """Normals within 1e-6 of +-e_x take e_y x n; just outside they keep e_x x n."""
    cases = {(1.0, 0.0): [[0, 0, -1], [0, -1, 0]], (-1.0, 0.0): [[0, 0, 1], [0, -1, 0]], (1.0, 1e-7): [[0, 0, -1], [0, -1, 0]]}
    for (nx, ny), tangent in cases.items():
        g = _simple("halfspace", [0, 0, 1.0], [nx, ny, 0, 0, 0, 0])
        assert np.allclose(g["tangent"], tangent, atol=1e-6), f"n = ({nx}, {ny}): {g['tangent']}"
    g = _simple("halfspace", [0, 0, 1.0], [1.0, 2e-6, 0, 0, 0, 0])
    assert np.allclose(g["tangent"][0], [0, 0, 1], atol=1e-9), f"no fallback: t1 = {g['tangent'][0]}"


def test_sphere_coincident_centres():
    """Coincident centres: normal world +z (zero Jacobian), distance -(ra + rb)."""
    g = _geometry(GEOMETRY_CASES["sphere coincident"]())
    case = GEOMETRY_CASES["sphere coincident"]()
    assert np.allclose(g["distance"], -(case["radius"] + case["shape"][3]), atol=1e-12)
    assert np.array_equal(g["normal"], [0.0, 0.0, 1.0]) and not np.any(g["normal_jac"])


@pytest.mark.parametrize(
    "end1, end2, normal",
    [
        ([0, 1, 0], [0, -1, 0], [0, 0, 1]),  # +z is perpendicular to the segment
        ([0, 0, 1], [0, 0, -1], [1, 0, 0]),  # segment along z: +x
        ([0, 1, 1], [0, -1, -1], [0, -0.5**0.5, 0.5**0.5]),  # +z made perpendicular
        ([0.3, 0, 0], [0.3, 0, 0], [0, 0, 1]),  # zero-length segment: a sphere
    ],
)
def test_capsule_centre_on_segment(end1, end2, normal):
    end1, end2 = np.array(end1, float), np.array(end2, float)
    centre = 0.25 * end1 + 0.75 * end2
    g = _simple("capsule", centre, np.concatenate([end1, end2, [0.3]]), radius=0.2)
    assert np.allclose(g["distance"], -0.5, atol=1e-12)
    assert np.allclose(g["normal"], normal, atol=1e-12)
    assert np.allclose(g["point_b"], centre + 0.3 * np.array(normal), atol=1e-12)


@pytest.mark.parametrize(
    "local, half, normal, depth",
    [
        ([0.2, 0.1, 0.2], [0.3, 0.5, 0.7], [1, 0, 0], 0.1),
        ([-0.25, 0.1, 0.2], [0.3, 0.5, 0.7], [-1, 0, 0], 0.05),
        ([0.05, 0.44, 0.2], [0.3, 0.5, 0.7], [0, 1, 0], 0.06),
        ([0.05, -0.42, 0.2], [0.3, 0.5, 0.7], [0, -1, 0], 0.08),
        ([0.0, 0.1, 0.6], [0.3, 0.5, 0.7], [0, 0, 1], 0.1),
        ([0.0, 0.1, -0.65], [0.3, 0.5, 0.7], [0, 0, -1], 0.05),
        ([0.3, 0.1, 0.2], [0.3, 0.5, 0.7], [1, 0, 0], 0.0),  # on the +x face
        ([0.1, -0.5, 0.7], [0.3, 0.5, 0.7], [0, -1, 0], 0.0),  # on the (-y, +z) edge: first tied face
        ([0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1, 0, 0], 0.5),  # cube centre: all tied, +x first
    ],
)
def test_box_centre_inside_pushed_out_through_the_nearest_face(local, half, normal, depth):
    g = _simple("box", local, np.concatenate([ZERO3, half]), radius=0.2)
    assert np.allclose(g["distance"], -depth - 0.2, atol=1e-12)
    assert np.allclose(g["normal"], normal, atol=1e-12)
    assert np.allclose(g["point_b"], np.array(local) + depth * np.array(normal), atol=1e-12)


@pytest.mark.parametrize("name", [n for n in GEOMETRY_CASES if n.startswith("halfspace")])
def test_halfspace_has_no_body_b_columns(name):
    """A half-space belongs to the world: no field depends on body b, and the normal and
    tangents are constant."""
    g = _geometry(GEOMETRY_CASES[name]())
    for f in GEOMETRY_FIELDS:
        assert not np.any(np.asarray(g[f + "_jac"])[..., 6:12]), f"{name}: {f} depends on body b"
    assert not np.any(g["normal_jac"]) and not np.any(g["tangent_jac"]), f"{name}: the plane's frame moves"


@pytest.mark.parametrize("offset, radius", [([0.1, -0.2, 0.3], 0.25), ([0.0, 0.0, 0.0], 0.0)], ids=["sphere", "point"])
def test_ground_distance_and_points(offset, radius):
    """On the ground (normal +z through the origin) d = centre_z - r, point_b is the centre's
    foot on the plane and point_a the sphere's lowest point."""
    rng = np.random.default_rng(7)
    case = _pair("halfspace", rng.normal(size=3), random_quaternion(rng), np.array(offset), radius, ZERO3, IDENTITY,
                 [0, 0, 1, 0, 0, 0])
    g = _check_geometry_jacobians("ground", case)
    centre = case["xa"] + rotate(case["qa"], case["offset"])
    assert np.isclose(g["distance"], centre[2] - radius, rtol=0, atol=1e-14), g["distance"]
    assert np.allclose(g["point_b"], centre * [1, 1, 0], atol=1e-14), g["point_b"]
    assert np.allclose(g["point_a"], centre - [0, 0, radius], atol=1e-14), g["point_a"]


def test_tilted_halfspace_analytic():
    """A plane with normal (0, -sin 0.3, cos 0.3) through (0, 0, 0.2): d = n.(c - p) - r, the
    points on the sphere and on the plane, the tangents, and d distance / d pose."""
    s, c = np.sin(0.3), np.cos(0.3)
    normal, point = np.array([0.0, -s, c]), np.array([0.0, 0.0, 0.2])
    quarter_z = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])  # 90 deg about z
    cases = [  # xa, qa, offset, radius, centre, expected distance
        ([1.0, 2.0, 3.0], IDENTITY, ZERO3, 0.5, [1.0, 2.0, 3.0], -2 * s + 2.8 * c - 0.5),
        ([0.0, 0.0, 0.2], IDENTITY, ZERO3, 0.1, [0.0, 0.0, 0.2], -0.1),
        ([0.5, -1.0, 0.1], quarter_z, [1.0, 0.0, 0.0], 0.2, [0.5, 0.0, 0.1], -0.1 * c - 0.2),  # R offset = e_y
    ]
    for xa, qa, offset, radius, centre, expected in cases:
        g = _geometry(_pair("halfspace", np.array(xa), qa, np.array(offset), radius, ZERO3, IDENTITY,
                            np.concatenate([normal, point])))
        tag = f"centre {centre}"
        _check_geometry_invariants(tag, g)
        assert np.isclose(g["distance"], expected, rtol=0, atol=1e-14), f"{tag}: d {g['distance']} vs {expected}"
        assert np.allclose(g["normal"], normal, atol=1e-15), tag
        assert np.allclose(g["point_a"], np.array(centre) - radius * normal, atol=1e-14), tag
        assert np.allclose(g["point_b"], np.array(centre) - (expected + radius) * normal, atol=1e-14), tag
        assert abs((g["point_b"] - point) @ normal) < 1e-14, f"{tag}: point_b off the plane"
        # normal perpendicular to e_x: t1 = e_x x n = (0, -c, -s), t2 = t1 x n = -e_x
        assert np.allclose(g["tangent"], [[0.0, -c, -s], [-1.0, 0.0, 0.0]], atol=1e-15), tag
        # d distance / d x_a = n; / d t_a = offset x R(q_a)^T n (body-frame rotation)
        lever = np.cross(offset, rotate(qa * [1, -1, -1, -1], normal))
        assert np.allclose(g["distance_jac"][:3], normal, atol=1e-15), tag
        assert np.allclose(g["distance_jac"][3:6], lever, atol=1e-15), f"{tag}: {g['distance_jac'][3:6]} vs {lever}"


CAPSULE_CLAMPS = [(0.4, 0.9, None), (0.7, 0.2, None), (-0.3, 0.8, "end1"), (1.5, 0.6, "end2"), (-0.2, 0.1, "end1")]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("along, gap, clamp", CAPSULE_CLAMPS)
def test_capsule_closest_point_on_the_segment(seed, along, gap, clamp):
    """The sphere centre at segment parameter ``along`` and ``gap`` off the axis: the closest
    axis point is there, or the end it is clamped to; d = |c - closest| - ra - rb."""
    case = _capsule_pair(seed, along, gap)
    g = _check_geometry_jacobians(f"capsule along {along}", case)
    xb, qb, shape = case["xb"], case["qb"], case["shape"]
    e1, e2 = xb + rotate(qb, shape[0:3]), xb + rotate(qb, shape[3:6])
    closest = {None: e1 + along * (e2 - e1), "end1": e1, "end2": e2}[clamp]
    centre = case["xa"] + rotate(case["qa"], case["offset"])
    expected = np.linalg.norm(centre - closest) - case["radius"] - shape[6]
    assert np.isclose(g["distance"], expected, rtol=0, atol=1e-12), f"d {g['distance']} vs {expected}"
    assert np.allclose(g["point_b"], closest + shape[6] * g["normal"], atol=1e-12), "point_b on the capsule's surface"


BOX_REGIONS = {  # sphere centre in box coordinates, the closest box point, the local normal direction
    "face +z": ([0.1, -0.2, 1.1], [0.1, -0.2, 0.7], [0, 0, 1]),
    "face -x": ([-0.55, 0.2, 0.3], [-0.3, 0.2, 0.3], [-1, 0, 0]),
    "edge +x -y": ([0.5, -0.8, 0.1], [0.3, -0.5, 0.1], [0.2, -0.3, 0]),
    "corner - + -": ([-0.5, 0.65, -0.95], [-0.3, 0.5, -0.7], [-0.2, 0.15, -0.25]),
    "inside near +x": ([0.26, 0.1, -0.2], [0.3, 0.1, -0.2], [1, 0, 0]),
    "inside near -x": ([-0.22, 0.3, 0.1], [-0.3, 0.3, 0.1], [-1, 0, 0]),
    "inside near -y": ([0.05, -0.42, 0.2], [0.05, -0.5, 0.2], [0, -1, 0]),
    "inside near +z": ([-0.1, 0.1, 0.6], [-0.1, 0.1, 0.7], [0, 0, 1]),
    "inside near -z": ([0.0, 0.05, -0.65], [0.0, 0.05, -0.7], [0, 0, -1]),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("region", list(BOX_REGIONS))
def test_box_closest_point_and_normal(seed, region):
    """A rotated, offset box: the closest point on a face, edge or corner (outside) or on the
    nearest face (inside), the normal from it, d = +-|c - closest| - r."""
    local, closest, direction = (np.asarray(v, dtype=float) for v in BOX_REGIONS[region])
    case = _box_pair(seed, local)
    g = _check_geometry_jacobians(f"box {region}", case)
    xb, qb, centre_b = case["xb"], case["qb"], case["shape"][0:3]
    gap = np.linalg.norm(local - closest)
    expected = (-gap if region.startswith("inside") else gap) - case["radius"]
    assert np.isclose(g["distance"], expected, rtol=0, atol=1e-12), f"d {g['distance']} vs {expected}"
    assert np.allclose(g["normal"], rotate(qb, direction / np.linalg.norm(direction)), atol=1e-12), g["normal"]
    assert np.allclose(g["point_b"], xb + rotate(qb, centre_b + closest), atol=1e-12), g["point_b"]


def test_box_continuous_across_the_surface():
    """Distance is continuous from outside to inside through a face (Dojo's stays at -r inside)."""
    for height in (0.71, 0.7, 0.69, 0.55):  # last: +z still the nearest face (0.15 < 0.2 to +x)
        g = _simple("box", [0.1, -0.2, height], np.concatenate([ZERO3, BOX_HALF]), radius=0.1)
        assert np.isclose(g["distance"], height - 0.7 - 0.1, rtol=0, atol=1e-14), f"height {height}: {g['distance']}"
        assert np.allclose(g["normal"], [0, 0, 1], atol=1e-15), f"height {height}: normal {g['normal']}"


def test_capsule_short_segment_is_a_sphere():
    """A capsule whose ends coincide is the sphere at that end, values and Jacobians."""
    rng = np.random.default_rng(2)
    xa, qa, xb, qb = rng.normal(size=3), random_quaternion(rng), rng.normal(size=3), random_quaternion(rng)
    end = np.array([0.1, -0.2, 0.3])
    capsule = _geometry(_pair("capsule", xa, qa, ZERO3, 0.2, xb, qb, np.concatenate([end, end, [0.3]])))
    sphere = _geometry(_pair("sphere", xa, qa, ZERO3, 0.2, xb, qb, np.concatenate([end, [0.3]])))
    for key, value in sphere.items():
        assert_close(f"capsule vs sphere: {key}", capsule[key], value, 1e-14)


# ------------------------------------------------------- a step's contact records
@pytest.mark.parametrize("steps", [30, 120], ids=["early", "in contact"])
@pytest.mark.parametrize("variant", CONTACT_VARIANTS)
@pytest.mark.parametrize("scene", CONTACT_SCENES)
def test_step_records_are_each_contacts_kernel(scene, variant, steps):
    """After a step (from the scene's state after 30 steps, some contacts still open, or 120,
    most touching), each contact's record (distance, normal and friction impulses, slip) is
    its kernel's at the solution: x3, q3, v25, w25 of the next state and the contact's own
    slacks and impulses."""
    mech = contact_scene(scene, variant)
    h = mech.timestep
    z = dojo.simulate(mech, steps=steps).state(steps)
    z3, _ = solve_step(mech, z)
    data = mech.core_data
    w, start = np.asarray(data.w), core.testing.cone_structure(mech.core)["contact_start"]
    bodies = z3.reshape(mech.nb, 13)

    def state_of(b):
        return WORLD if b < 0 else body_state(bodies[b, 0:3], bodies[b, 6:10], bodies[b, 3:6], bodies[b, 10:13], h)

    for c, contact in enumerate(mech.contacts):
        n = HALF[contact.model]
        s, gamma = w[start[c] : start[c] + n], w[start[c] + n : start[c] + 2 * n]
        out = evaluate(params_of(contact), h, state_of(contact.body), state_of(contact.other), s, gamma, "residual")
        tag = f"{scene}/{variant} contact {contact.name}"
        assert_close(f"{tag}: distance", data.contact_distance[c], out["distance"], 1e-12)
        assert_close(f"{tag}: normal impulse", data.contact_normal_impulse[c], out["normal_impulse"], 1e-12)
        assert_close(f"{tag}: friction impulse", data.contact_friction_impulse[c], out["friction_impulse"], 1e-12)
        assert_close(f"{tag}: slip", data.contact_slip[c], out["slip"], 1e-12)


def test_no_contacts_no_records():
    """A mechanism without contacts steps with empty contact records and no cone variables."""
    mech = dojo.load_scene("pendulum")
    solve_step(mech, dojo.initial_state(mech))
    data = mech.core_data
    assert data.contact_distance.shape == (0,) and data.contact_slip.shape == (0, 2), data.contact_slip.shape
    cones = core.testing.cone_structure(mech.core)
    assert cones["degree"] == 0 and cones["contact_start"] == [mech.core.n], cones


# ------------------------------------------------------------ the kernel
KERNEL_CASES = {
    "ground": lambda rng: dict(kind="halfspace", other=-1, shape=[0, 0, 1, 0, 0, 0]),
    "tilted half-space": lambda rng: dict(kind="halfspace", other=-1, shape=[0.1, -0.3, 0.9, 0.1, 0.2, -0.3]),
    "sphere": lambda rng: dict(kind="sphere", other=1, shape=[0.1, -0.2, 0.05, 0.4]),
    "capsule": lambda rng: dict(kind="capsule", other=1, shape=[0.1, -0.3, 0.2, -0.2, 0.4, 0.1, 0.3]),
    "box": lambda rng: dict(kind="box", other=1, shape=[0.05, 0.1, -0.1, 0.3, 0.4, 0.5]),
    # body a carries a segment (half-vector shape_a) or a cap's rim (axis, radius)
    "segment-capsule": lambda rng: dict(kind="segment_capsule", other=1, shape_a=[0.3, -0.1, 0.2, 0.0],
                                        shape=[0.1, -0.3, 0.2, -0.2, 0.4, 0.1, 0.3]),
    # (a box small enough that the segment stays outside it: inside, the deepest segment
    # point lies where two faces are equally deep, a documented non-smooth point)
    "segment-box": lambda rng: dict(kind="segment_box", other=1, shape_a=[0.3, -0.1, 0.2, 0.0],
                                    shape=[0.05, 0.1, -0.1, 0.1, 0.15, 0.12]),
    "circle-ground": lambda rng: dict(kind="circle_halfspace", other=-1, shape_a=[0.6, 0.0, 0.8, 0.3],
                                      shape=[0, 0, 1, 0, 0, 0]),
    "corner-box": lambda rng: dict(kind="corner_box", other=1, shape_a=[-0.2, 0.1, 0.3, 0.25, 0.2, 0.3],
                                   shape=[0.05, 0.1, -0.1, 0.3, 0.4, 0.5]),
    # a cylinder (its caps' centres and radius), small enough that the segment stays outside it
    "sphere-cylinder": lambda rng: dict(kind="cylinder", other=1, shape=[0.05, 0.1, -0.2, -0.05, 0.2, 0.1, 0.3]),
    "segment-cylinder": lambda rng: dict(kind="segment_cylinder", other=1, shape_a=[0.3, -0.1, 0.2, 0.0],
                                         shape=[0.05, 0.1, -0.15, 0.0, 0.15, -0.05, 0.1]),
    # a convex hull (its vertices and scipy's triangles, in b's frame; tests/core/test_hull_pairs.py)
    "sphere-hull": lambda rng: dict(kind="hull", other=1, hull=_kernel_hull()),
}


def _kernel_hull():
    from scipy.spatial import ConvexHull

    points = np.random.default_rng(5).normal(size=(16, 3)) * [0.3, 0.25, 0.2]
    return points, ConvexHull(points).simplices


def _kernel_case(name, model, seed):
    """A contact, z2 and xi25 of both bodies, s and gamma; body a's sphere near b's shape."""
    rng = np.random.default_rng(seed)
    params = dict(body=0, model=model, friction=0.7, radius=0.25, offset=[0.1, -0.2, 0.15], **KERNEL_CASES[name](rng))
    h = 0.01
    xb, qb = 0.2 * rng.normal(size=3), random_quaternion(rng)
    qa = random_quaternion(rng)
    near = xb + 0.6 * rng.normal(size=3) if params["other"] >= 0 else 0.3 * rng.normal(size=3)
    xa = near - rotate(qa, np.asarray(params["offset"]))
    xi = np.concatenate([rng.normal(size=3), 5 * rng.normal(size=3), rng.normal(size=3), 5 * rng.normal(size=3)])
    if params["other"] < 0:
        xi[6:] = 0.0
    return params, h, (xa, qa, xb, qb), xi, random_cone_point(rng, model), random_cone_point(rng, model)


def _kernel(params, h, z2, xi, s, gamma, output="jacobians", reference=False):
    """evaluate_contact at z3 = (x2 + h v25, q2 qmap(w25)) for both bodies."""
    xa, qa, xb, qb = z2
    a = body_state(xa + h * xi[0:3], qmul(qa, integrator_map(xi[3:6], h)), xi[0:3], xi[3:6], h)
    if params["other"] < 0:
        b = WORLD
    else:
        b = body_state(xb + h * xi[6:9], qmul(qb, integrator_map(xi[9:12], h)), xi[6:9], xi[9:12], h)
    return evaluate(params, h, a, b, s, gamma, output, reference)


def _fd(f, x, k):
    e = np.zeros_like(x)
    e[k] = FD_STEP
    plus, minus = f(x + e), f(x - e)
    return {name: (plus[name] - minus[name]) / (2 * FD_STEP) for name in ("comp", "cons", "wrench")}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_kernel_jacobians_match_finite_differences(name, model):
    """cons_body, wrench_body (through z3 and directly), comp_jac, cons_local, wrench_gamma,
    cons_z3, wrench_z3 and the parameter columns against central differences of comp, cons, wrench."""
    for seed in range(3):
        params, h, z2, xi, s, gamma = _kernel_case(name, model, seed)
        n = HALF[model]
        out = _kernel(params, h, z2, xi, s, gamma, "parameters")
        tag = f"{name}/{model} seed {seed}"
        columns = range(12) if params["other"] >= 0 else range(6)
        for k in columns:  # body velocities xi25 = (v_a, w_a, v_b, w_b)
            fd = _fd(lambda x: _kernel(params, h, z2, x, s, gamma, "residual"), xi, k)
            assert_close(f"{tag}: cons_body[:, {k}]", out["cons_body"][:, k], fd["cons"], FD_RTOL)
            assert_close(f"{tag}: wrench_body[:, {k}]", out["wrench_body"][:, k], fd["wrench"], FD_RTOL)
        for k in range(2 * n):  # [s, gamma]
            sg = np.concatenate([s, gamma])
            fd = _fd(lambda x: _kernel(params, h, z2, xi, x[:n], x[n:], "residual"), sg, k)
            assert_close(f"{tag}: comp_jac[:, {k}]", out["comp_jac"][:, k], fd["comp"], FD_RTOL)
            assert_close(f"{tag}: cons_local[:, {k}]", out["cons_local"][:, k], fd["cons"], FD_RTOL)
            if k >= n:
                assert_close(f"{tag}: wrench_gamma[:, {k - n}]", out["wrench_gamma"][:, k - n], fd["wrench"], FD_RTOL)
        # z3 at fixed xi25: move the next configuration itself
        xa, qa, xb, qb = z2
        a3 = (xa + h * xi[0:3], qmul(qa, integrator_map(xi[3:6], h)))
        b3 = (xb + h * xi[6:9], qmul(qb, integrator_map(xi[9:12], h)))

        def at_z3(e, p=params):
            a = body_state(a3[0] + e[0:3], qmul(a3[1], qexp(e[3:6])), xi[0:3], xi[3:6], h)
            b = WORLD if p["other"] < 0 else body_state(b3[0] + e[6:9], qmul(b3[1], qexp(e[9:12])), xi[6:9], xi[9:12], h)
            return evaluate(p, h, a, b, s, gamma, "residual")

        for k in columns:
            fd = _fd(at_z3, np.zeros(12), k)
            assert_close(f"{tag}: cons_z3[:, {k}]", out["cons_z3"][:, k], fd["cons"], FD_RTOL)
            assert_close(f"{tag}: wrench_z3[:, {k}]", out["wrench_z3"][:, k], fd["wrench"], FD_RTOL)
        for k in range(4):  # the sphere's offset and radius

            def at_parameters(p4):
                p = dict(params, offset=p4[:3], radius=p4[3])
                return at_z3(np.zeros(12), p)

            fd = _fd(at_parameters, np.concatenate([params["offset"], [params["radius"]]]), k)
            assert_close(f"{tag}: cons_parameters[:, {k}]", out["cons_parameters"][:, k], fd["cons"], FD_RTOL)
            assert_close(f"{tag}: wrench_parameters[:, {k}]", out["wrench_parameters"][:, k], fd["wrench"], FD_RTOL)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_hand_chained_jacobians_match_all_dual_reference(name, model):
    """evaluate_contact's hand-chained Jacobians against dual numbers through every operation."""
    for seed in range(4):
        params, h, z2, xi, s, gamma = _kernel_case(name, model, 20 + seed)
        fast = _kernel(params, h, z2, xi, s, gamma, "parameters")
        ref = _kernel(params, h, z2, xi, s, gamma, "parameters", reference=True)
        for key, value in ref.items():
            if key in ("comp", "cons", "wrench", "distance", "normal_impulse", "friction_impulse", "slip"):
                assert np.array_equal(fast[key], value), f"{name}/{model} seed {seed}: {key} values differ"
            else:
                assert_close(f"{name}/{model} seed {seed}: {key}", fast[key], value, REFERENCE_RTOL)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", list(KERNEL_CASES))
def test_residual_path_equals_derivative_path(name, model):
    """The residual-only path (plain doubles) gives bitwise the values of the dual-number paths."""
    params, h, z2, xi, s, gamma = _kernel_case(name, model, 11)
    res = _kernel(params, h, z2, xi, s, gamma, "residual")
    jac = _kernel(params, h, z2, xi, s, gamma, "jacobians")
    par = _kernel(params, h, z2, xi, s, gamma, "parameters")
    for key in ("comp", "cons", "wrench", "distance", "normal_impulse", "friction_impulse", "slip"):
        assert np.array_equal(res[key], jac[key]), f"{name}/{model}: {key} differs with jacobians"
        assert np.array_equal(res[key], par[key]), f"{name}/{model}: {key} differs with parameters"
    for key in ("comp_jac", "cons_local", "cons_body", "wrench_gamma", "wrench_body", "cons_z3", "wrench_z3"):
        assert np.array_equal(jac[key], par[key]), f"{name}/{model}: {key} differs with parameters"


@pytest.mark.parametrize("model", MODELS)
def test_world_has_no_columns(model):
    """Against the world, every body-b column and the wrench's b half are zero."""
    params, h, z2, xi, s, gamma = _kernel_case("ground", model, 3)
    out = _kernel(params, h, z2, xi, s, gamma, "parameters")
    for key in ("cons_body", "cons_z3"):
        assert not np.any(out[key][:, 6:]), key
    for key in ("wrench_body", "wrench_z3"):
        assert not np.any(out[key][6:]) and not np.any(out[key][:, 6:]), key
    assert not np.any(out["wrench"][6:]) and not np.any(out["wrench_gamma"][6:])


def test_resting_ball_on_the_ground():
    """Analytic: a ball of radius r at height z with impulse gn: d = z - r, wrench (0, 0, gn) and no torque."""
    params = dict(body=0, model="nonlinear", kind="halfspace", other=-1, friction=0.5, radius=0.5, offset=ZERO3,
                  shape=[0, 0, 1, 0, 0, 0])
    a = dict(x=np.array([0.3, -0.2, 0.6]), q=IDENTITY, v=ZERO3, w=ZERO3, mw=0.01 * np.eye(3))
    s, gamma = np.array([0.1, 1.0, 0.0, 0.0]), np.array([2.0, 1.0, 0.0, 0.0])
    out = evaluate(params, 0.01, a, WORLD, s, gamma)
    assert np.isclose(out["distance"], 0.1, atol=1e-15)
    assert np.allclose(out["wrench"], [0, 0, 2.0] + [0] * 9, atol=1e-15)
    assert np.allclose(out["cons"], [0.0, 0.5 * 2.0 - 1.0, 0.0, 0.0], atol=1e-15)
    assert np.allclose(out["comp"], [0.2, 1.0, 0.0, 0.0], atol=1e-15)


@pytest.mark.parametrize("model, s", [("impact", [1.5]), ("nonlinear", [1.5, 1.5, 0, 0]), ("linear", [1.5] * 6)])
def test_contact_starting_point(model, s):
    """Dojo's starting point (notes 5.3): 1.5 in the orthant, (1.5, 0, 0) in the second-order cones."""
    s0, g0 = core.testing.contact_starting_point(model)
    assert core.testing.contact_half_size(model) == HALF[model]
    assert np.array_equal(s0, s) and np.array_equal(g0, s)
