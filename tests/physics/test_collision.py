"""Collision geometry: Jacobians against finite differences, Dojo's cases, analytic values.

Dojo's reference cases are from its test/collisions.jl (dojo_engine_notes.md 9.7).
Body a here is Dojo's contact *parent* (first id of ContactConstraint((model,
parent_id, child_id))), body b its child; both use normals from b towards a.
"""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.math import quaternion as quat
from dojo_cli.math.jet import Jet
from dojo_cli.physics.collision import (
    ContactGeometry,
    sphere_box,
    sphere_capsule,
    sphere_halfspace,
    sphere_sphere,
    tangent_basis,
)

FD = 1e-6  # central-difference step (m, rad)
RTOL = 1e-6  # Jacobian tolerance relative to max(1, largest entry)
FIELDS = ("distance", "normal", "tangent", "point_a", "point_b")
IDENTITY = quat.IDENTITY[None]
ZERO = np.zeros((1, 3))


# ------------------------------------------------------------------ helpers
def perturbed(x, q, t):
    """Poses (nc, 3), (nc, 4) moved by the tangent t = [dx, dtheta] (body-frame rotation)."""
    return x + t[:3], quat.multiply(q, np.broadcast_to(quat.quaternion_from_rotation_vector(t[3:]), q.shape))


def check_invariants(g: ContactGeometry):
    """Unit normal, orthonormal tangents with t2 = t1 x n, point_a - point_b = d n."""
    n, t = g.normal.value, g.tangent.value
    assert np.allclose(np.linalg.norm(n, axis=-1), 1.0, atol=1e-12)
    assert np.allclose(np.linalg.norm(t, axis=-1), 1.0, atol=1e-12)
    assert np.allclose(np.einsum("cij,cj->ci", t, n), 0.0, atol=1e-12)
    assert np.allclose(np.sum(t[:, 0] * t[:, 1], axis=-1), 0.0, atol=1e-12)
    assert np.allclose(np.cross(t[:, 0], n), t[:, 1], atol=1e-12)
    assert np.allclose(g.point_a.value - g.point_b.value, g.distance.value[:, None] * n, atol=1e-12)
    for field in FIELDS:
        jet = getattr(g, field)
        assert jet.jac.shape == jet.value.shape + (12,)
        assert np.all(np.isfinite(jet.value)) and np.all(np.isfinite(jet.jac))


def check_jacobians(fn, xa, qa, xb, qb):
    """fn(xa, qa, xb, qb) -> ContactGeometry; every field's Jacobian against central differences."""
    geometry = fn(xa, qa, xb, qb)
    check_invariants(geometry)
    numeric = {f: np.zeros(getattr(geometry, f).jac.shape) for f in FIELDS}
    for k in range(12):
        e = np.zeros(12)
        e[k] = FD
        plus = fn(*perturbed(xa, qa, e[:6]), *perturbed(xb, qb, e[6:]))
        minus = fn(*perturbed(xa, qa, -e[:6]), *perturbed(xb, qb, -e[6:]))
        for f in FIELDS:
            numeric[f][..., k] = (getattr(plus, f).value - getattr(minus, f).value) / (2 * FD)
    for f in FIELDS:
        jac = getattr(geometry, f).jac
        err = np.abs(jac - numeric[f])
        scale = max(1.0, np.max(np.abs(numeric[f]), initial=0.0))
        worst = np.unravel_index(np.argmax(err), err.shape) if err.size else ()
        assert np.max(err, initial=0.0) <= RTOL * scale, f"{f}: Jacobian error {np.max(err):.2e} at {worst}"
    return geometry


def random_quaternions(rng, nc):
    return quat.normalize(rng.normal(size=(nc, 4)))


def random_unit(rng, nc):
    v = rng.normal(size=(nc, 3))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def place_sphere(rng, centre):
    """Body a pose with a random offset whose sphere centre is at the given world points."""
    nc = centre.shape[0]
    qa = random_quaternions(rng, nc)
    offset = 0.4 * rng.normal(size=(nc, 3))
    return centre - quat.rotate(qa, offset), qa, offset


def assert_same(g1: ContactGeometry, g2: ContactGeometry):
    for f in FIELDS:
        a, b = getattr(g1, f), getattr(g2, f)
        assert np.allclose(a.value, b.value, rtol=1e-14, atol=1e-14), f
        assert np.allclose(a.jac, b.jac, rtol=1e-14, atol=1e-14), f


def concat(geometries):
    return ContactGeometry(
        *[
            Jet(np.concatenate([getattr(g, f).value for g in geometries]), np.concatenate([getattr(g, f).jac for g in geometries]))
            for f in FIELDS
        ]
    )


# ------------------------------------------------------------ configurations
def halfspace_case(seed, nc=3):
    rng = np.random.default_rng(seed)
    xa, qa = rng.normal(size=(nc, 3)), random_quaternions(rng, nc)
    offset, radius = 0.4 * rng.normal(size=(nc, 3)), rng.uniform(0.0, 0.5, nc)
    normal, point = random_unit(rng, nc), rng.normal(size=(nc, 3))
    # xb, qb are unused by the half-space (body b columns must be zero)
    args = (rng.normal(size=(nc, 3)), random_quaternions(rng, nc))
    fn = lambda xa, qa, xb, qb: sphere_halfspace(xa, qa, offset, radius, normal, point)
    return fn, (xa, qa) + args


def sphere_case(seed, nc=3):
    rng = np.random.default_rng(seed)
    xa, qa, xb, qb = rng.normal(size=(nc, 3)), random_quaternions(rng, nc), rng.normal(size=(nc, 3)), random_quaternions(rng, nc)
    oa, ob = 0.4 * rng.normal(size=(nc, 3)), 0.4 * rng.normal(size=(nc, 3))
    ra, rb = rng.uniform(0.0, 0.8, nc), rng.uniform(0.0, 0.8, nc)  # some pairs overlap
    fn = lambda xa, qa, xb, qb: sphere_sphere(xa, qa, oa, ra, xb, qb, ob, rb)
    return fn, (xa, qa, xb, qb)


def capsule_case(seed, along, gap):
    """Sphere centre at segment parameter ``along`` (clamped outside [0, 1]) and ``gap`` off the axis."""
    rng = np.random.default_rng(seed)
    xb, qb = rng.normal(size=(1, 3)), random_quaternions(rng, 1)
    end1, end2 = 0.6 * rng.normal(size=(1, 3)), 0.6 * rng.normal(size=(1, 3))
    e1, e2 = xb + quat.rotate(qb, end1), xb + quat.rotate(qb, end2)
    axis = e2 - e1
    side = rng.normal(size=(1, 3))
    side -= np.sum(side * axis) / np.sum(axis * axis) * axis
    side /= np.linalg.norm(side)
    centre = e1 + along * axis + gap * side
    xa, qa, offset = place_sphere(rng, centre)
    ra, rb = 0.3, 0.25
    fn = lambda xa, qa, xb, qb: sphere_capsule(xa, qa, offset, ra, xb, qb, end1, end2, rb)
    return fn, (xa, qa, xb, qb), (e1, e2, centre)


HALF = np.array([0.3, 0.5, 0.7])
# name: (sphere centre in box coordinates, expected closest box point, expected local normal)
BOX_REGIONS = {
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


def box_case(seed, local):
    rng = np.random.default_rng(seed)
    xb, qb = rng.normal(size=(1, 3)), random_quaternions(rng, 1)
    centre_b = 0.3 * rng.normal(size=(1, 3))
    centre = xb + quat.rotate(qb, centre_b + np.asarray(local, dtype=float)[None])
    xa, qa, offset = place_sphere(rng, centre)
    ra = 0.15
    fn = lambda xa, qa, xb, qb: sphere_box(xa, qa, offset, ra, xb, qb, centre_b, HALF)
    return fn, (xa, qa, xb, qb), (centre_b, ra)


# --------------------------------------------------- 1. Jacobians vs finite differences
@pytest.mark.parametrize("seed", range(4))
def test_sphere_halfspace_jacobians(seed):
    fn, poses = halfspace_case(seed)
    g = check_jacobians(fn, *poses)
    for f in FIELDS:
        assert np.all(getattr(g, f).jac[..., 6:] == 0.0), f  # body b plays no part
    assert np.all(g.normal.jac == 0.0) and np.all(g.tangent.jac == 0.0)


def test_sphere_halfspace_ground_jacobians():
    rng = np.random.default_rng(7)
    xa, qa = rng.normal(size=(2, 3)), random_quaternions(rng, 2)
    offset = np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0]])
    radius = np.array([0.25, 0.0])  # a sphere and a point
    fn = lambda xa, qa, xb, qb: sphere_halfspace(xa, qa, offset, radius, [0.0, 0.0, 1.0], [0.0, 0.0, 0.0])
    g = check_jacobians(fn, xa, qa, xa, qa)
    centre = xa + quat.rotate(qa, offset)
    assert np.allclose(g.distance.value, centre[:, 2] - radius)
    assert np.allclose(g.point_b.value, centre * [1.0, 1.0, 0.0])


@pytest.mark.parametrize("seed", range(4))
def test_sphere_sphere_jacobians(seed):
    fn, poses = sphere_case(seed)
    check_jacobians(fn, *poses)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "along, gap, clamp",
    [(0.4, 0.9, None), (0.7, 0.2, None), (-0.3, 0.8, "end1"), (1.5, 0.6, "end2"), (-0.2, 0.1, "end1")],
)
def test_sphere_capsule_jacobians(seed, along, gap, clamp):
    fn, poses, (e1, e2, centre) = capsule_case(seed, along, gap)
    g = check_jacobians(fn, *poses)
    closest = {None: e1 + along * (e2 - e1), "end1": e1, "end2": e2}[clamp]
    expected = np.linalg.norm(centre - closest) - 0.3 - 0.25
    assert np.allclose(g.distance.value, expected)
    assert np.allclose(g.point_b.value, closest + 0.25 * g.normal.value)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("region", list(BOX_REGIONS))
def test_sphere_box_jacobians(seed, region):
    local, closest, direction = (np.asarray(v, dtype=float) for v in BOX_REGIONS[region])
    fn, poses, (centre_b, ra) = box_case(seed, local)
    g = check_jacobians(fn, *poses)
    xb, qb = poses[2], poses[3]
    gap = np.linalg.norm(local - closest)
    inside = region.startswith("inside")
    assert np.allclose(g.distance.value, (-gap if inside else gap) - ra)
    assert np.allclose(g.normal.value, quat.rotate(qb, direction / np.linalg.norm(direction)))
    assert np.allclose(g.point_b.value, xb + quat.rotate(qb, centre_b + closest))


def test_tangent_basis_jacobian():
    """tangent_basis on its own, for a normal that moves with both bodies (away from the fallback)."""

    def fn(xa, qa, xb, qb):
        g = sphere_sphere(xa, qa, [0.1, 0.2, 0.3], 0.1, xb, qb, [-0.3, 0.0, 0.2], 0.2)
        return g

    rng = np.random.default_rng(3)
    check_jacobians(fn, rng.normal(size=(2, 3)), random_quaternions(rng, 2), rng.normal(size=(2, 3)), random_quaternions(rng, 2))


def test_tangent_basis_fallback():
    """Normals along +-e_x take e_y x n (Dojo's fallback)."""
    n = Jet.constant(np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1e-7, 0.0]]), 12)
    t = tangent_basis(n).value
    assert np.allclose(t[0], [[0, 0, -1], [0, -1, 0]])
    assert np.allclose(t[1], [[0, 0, 1], [0, -1, 0]])
    assert np.allclose(t[2], [[0, -1, 0], [-1, 0, 0]])
    assert np.allclose(t[3], t[0], atol=1e-6)  # |e_x x n| = 1e-7 < 1e-6: fallback too
    assert tangent_basis(Jet.constant(np.zeros((0, 3)), 12)).jac.shape == (0, 2, 3, 12)


# ----------------------------------------------------------------- 2. Dojo's cases
@pytest.mark.parametrize(
    "xb, normal, tangent",
    [
        ([0.0, 0.0, 2.0], [0, 0, -1], [[0, 1, 0], [-1, 0, 0]]),
        ([2.0, 0.0, 0.0], [-1, 0, 0], [[0, 0, 1], [0, -1, 0]]),
        ([0.0, 2.0, 0.0], [0, -1, 0], [[0, 0, -1], [-1, 0, 0]]),
    ],
)
def test_dojo_sphere_sphere_axes(xb, normal, tangent):
    """Dojo: parent (body 1, = a) r 0.5 at the origin, child (body 2, = b) r 0.5 at 2 along an axis.

    Dojo's normal normalize(c_parent - c_child) points child -> parent, as ours (b -> a).
    """
    g = sphere_sphere(ZERO, IDENTITY, ZERO, 0.5, np.array([xb]), IDENTITY, ZERO, 0.5)
    axis = np.array(xb) / 2.0
    assert np.allclose(g.distance.value, [1.0], atol=1e-6)
    assert np.allclose(g.point_a.value, [0.5 * axis], atol=1e-6)
    assert np.allclose(g.point_b.value, [1.5 * axis], atol=1e-6)
    assert np.allclose(g.normal.value, [normal], atol=1e-6)
    assert np.allclose(g.tangent.value, [tangent], atol=1e-6)


def test_dojo_sphere_sphere_diagonal():
    """Dojo: child at [2, 2, 2].

    Dojo's tangent rows are not normalised (t1 = e_x x n has length sqrt(1 - n_x^2)
    = 0.816 here, and t2 = t1 x n the same length); ours are unit. Same directions:
    |e_x x n| * ours reproduces Dojo's rows.
    """
    g = sphere_sphere(ZERO, IDENTITY, ZERO, 0.5, np.array([[2.0, 2.0, 2.0]]), IDENTITY, ZERO, 0.5)
    ones = np.ones(3)
    assert np.allclose(g.distance.value, [2.4641016], atol=1e-4)
    assert np.allclose(g.point_a.value, [0.288675 * ones], atol=1e-4)
    assert np.allclose(g.point_b.value, [1.711324 * ones], atol=1e-4)
    assert np.allclose(g.normal.value, [-0.57735 * ones], atol=1e-4)
    dojo_rows = np.array([[0.0, 0.57735, -0.57735], [-0.66666, 0.33333, 0.33333]])
    dojo_length = np.linalg.norm(np.cross([1.0, 0.0, 0.0], g.normal.value[0]))
    assert np.allclose(dojo_length * g.tangent.value[0], dojo_rows, atol=1e-4)
    assert np.allclose(g.tangent.value[0], dojo_rows / np.linalg.norm(dojo_rows, axis=-1, keepdims=True), atol=1e-4)


def test_dojo_sphere_capsule():
    """Dojo: the contact is ContactConstraint((model, sphere.id, capsule.id)): the sphere is the
    parent (= a), the capsule (segment (0, +-1, 0), r 0.5, at the origin) the child (= b).
    The sphere r 0.5 at [0, 0, 2] (its start) sits 1 above the capsule; normal capsule -> sphere."""
    g = sphere_capsule(np.array([[0.0, 0.0, 2.0]]), IDENTITY, ZERO, 0.5, ZERO, IDENTITY, [0, 1, 0], [0, -1, 0], 0.5)
    assert np.allclose(g.distance.value, [1.0])
    assert np.allclose(g.normal.value, [[0, 0, 1]])
    assert np.allclose(g.point_a.value, [[0, 0, 1.5]])
    assert np.allclose(g.point_b.value, [[0, 0, 0.5]])
    assert np.allclose(g.tangent.value, [[[0, -1, 0], [-1, 0, 0]]])  # Dojo's final tangent


def test_dojo_sphere_box():
    """Dojo: as the capsule, sphere = parent = a, unit box (widths 1, half sizes 0.5) = child = b."""
    g = sphere_box(np.array([[0.0, 0.0, 2.0]]), IDENTITY, ZERO, 0.5, ZERO, IDENTITY, ZERO, [0.5, 0.5, 0.5])
    assert np.allclose(g.distance.value, [1.0])
    assert np.allclose(g.normal.value, [[0, 0, 1]])
    assert np.allclose(g.point_a.value, [[0, 0, 1.5]])
    assert np.allclose(g.point_b.value, [[0, 0, 0.5]])
    assert np.allclose(g.tangent.value, [[[0, -1, 0], [-1, 0, 0]]])


# -------------------------------------------------------- 3. tilted half-space
def test_tilted_halfspace_analytic():
    s, c = np.sin(0.3), np.cos(0.3)
    normal, point = np.array([0.0, -s, c]), np.array([0.0, 0.0, 0.2])
    quarter_z = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])  # 90 deg about z
    xa = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.2], [0.5, -1.0, 0.1]])
    qa = np.array([quat.IDENTITY, quat.IDENTITY, quarter_z])
    offset = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # last: R offset = [0, 1, 0]
    radius = np.array([0.5, 0.1, 0.2])
    centre = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.2], [0.5, 0.0, 0.1]])
    expected = np.array([-2 * s + 2.8 * c - 0.5, -0.1, 0.0 * s - 0.1 * c - 0.2])  # n.(c - p) - r
    g = sphere_halfspace(xa, qa, offset, radius, normal, point)
    check_invariants(g)
    assert np.allclose(g.distance.value, expected)
    assert np.allclose(g.normal.value, np.broadcast_to(normal, (3, 3)))
    assert np.allclose(g.point_a.value, centre - radius[:, None] * normal)
    assert np.allclose(g.point_b.value, centre - (expected + radius)[:, None] * normal)
    assert np.allclose(np.sum((g.point_b.value - point) * normal, axis=-1), 0.0)  # on the plane
    # normal perpendicular to e_x: t1 = e_x x n = [0, -c, -s], t2 = t1 x n = -e_x
    assert np.allclose(g.tangent.value, np.broadcast_to([[0.0, -c, -s], [-1.0, 0.0, 0.0]], (3, 2, 3)))
    # d distance / d x_a = n; / d t_a = offset x R^T n (zero for a zero offset); none from b
    assert np.allclose(g.distance.jac[:, :3], normal)
    assert np.allclose(g.distance.jac[0, 3:], 0.0)
    assert np.allclose(g.distance.jac[2, 3:6], np.cross([1.0, 0.0, 0.0], quat.rotate(quat.conjugate(quarter_z), normal)))


# ------------------------------------------------------------ degenerate cases
def test_sphere_sphere_coincident_centres():
    rng = np.random.default_rng(0)
    qa, qb = random_quaternions(rng, 1), random_quaternions(rng, 1)
    oa, ob = np.array([[0.1, 0.2, 0.3]]), np.array([[-0.2, 0.1, 0.0]])
    xa = np.array([[1.0, 2.0, 3.0]])
    xb = xa + quat.rotate(qa, oa) - quat.rotate(qb, ob)
    g = sphere_sphere(xa, qa, oa, 0.3, xb, qb, ob, 0.4)
    check_invariants(g)
    assert np.allclose(g.distance.value, [-0.7])
    assert np.allclose(g.normal.value, [[0, 0, 1]])  # documented choice: world +z
    assert np.all(g.normal.jac == 0.0)


@pytest.mark.parametrize(
    "end1, end2, normal",
    [
        ([0, 1, 0], [0, -1, 0], [0, 0, 1]),  # +z is perpendicular to the segment
        ([0, 0, 1], [0, 0, -1], [1, 0, 0]),  # segment along z: +x
        ([0, 1, 1], [0, -1, -1], [0, -0.5**0.5, 0.5**0.5]),  # +z made perpendicular
        ([0.3, 0, 0], [0.3, 0, 0], [0, 0, 1]),  # zero-length segment: a sphere
    ],
)
def test_sphere_capsule_centre_on_segment(end1, end2, normal):
    end1, end2 = np.array([end1], dtype=float), np.array([end2], dtype=float)
    centre = 0.25 * end1 + 0.75 * end2
    g = sphere_capsule(centre, IDENTITY, ZERO, 0.2, ZERO, IDENTITY, end1, end2, 0.3)
    check_invariants(g)
    assert np.allclose(g.distance.value, [-0.5])
    assert np.allclose(g.normal.value, [normal])
    assert np.allclose(g.point_b.value, centre + 0.3 * np.array([normal]))


def test_sphere_capsule_short_segment_is_a_sphere():
    rng = np.random.default_rng(2)
    xa, qa, xb, qb = rng.normal(size=(1, 3)), random_quaternions(rng, 1), rng.normal(size=(1, 3)), random_quaternions(rng, 1)
    end = np.array([[0.1, -0.2, 0.3]])
    g1 = sphere_capsule(xa, qa, ZERO, 0.2, xb, qb, end, end, 0.3)
    g2 = sphere_sphere(xa, qa, ZERO, 0.2, xb, qb, end, 0.3)
    assert_same(g1, g2)


@pytest.mark.parametrize(
    "local, normal",
    [
        ([0.3, 0.1, 0.2], [1, 0, 0]),  # on the +x face
        ([0.1, -0.5, 0.7], [0, -1, 0]),  # on the (-y, +z) edge: first of the tied faces
        ([0.0, 0.0, 0.0], [1, 0, 0]),  # cube centre in a cube: all tied, +x first
    ],
)
def test_sphere_box_centre_on_surface_or_tied(local, normal):
    half = [0.3, 0.5, 0.7] if local != [0.0, 0.0, 0.0] else [0.5, 0.5, 0.5]
    local = np.array([local], dtype=float)
    g = sphere_box(local, IDENTITY, ZERO, 0.2, ZERO, IDENTITY, ZERO, half)
    check_invariants(g)
    depth = 0.5 if np.all(local == 0.0) else 0.0
    assert np.allclose(g.distance.value, [-depth - 0.2])
    assert np.allclose(g.normal.value, [normal])


def test_sphere_box_continuous_across_the_surface():
    """Distance is continuous from outside to inside through a face (Dojo's stays at -r inside)."""
    heights = np.array([0.71, 0.7, 0.69, 0.55])  # last: +z still the nearest face (depth 0.15 < 0.2 to +x)
    local = np.stack([np.full(4, 0.1), np.full(4, -0.2), heights], axis=-1)
    g = sphere_box(local, np.broadcast_to(quat.IDENTITY, (4, 4)), ZERO, 0.1, np.zeros((4, 3)), np.broadcast_to(quat.IDENTITY, (4, 4)), ZERO, HALF)
    assert np.allclose(g.distance.value, heights - 0.7 - 0.1)
    assert np.allclose(g.normal.value, [0, 0, 1])


# ---------------------------------------------------------------- 4. vectorisation
def _mixed_cases():
    """name -> (function of (xa, qa, xb, qb) per contact index list, poses with nc = 3)."""
    rng = np.random.default_rng(11)
    cases = {}

    # half-space: ground, tilted plane, plane with normal along e_x (tangent fallback)
    normal = np.array([[0, 0, 1.0], [0, -np.sin(0.3), np.cos(0.3)], [1.0, 0, 0]])
    point = rng.normal(size=(3, 3))
    radius = np.array([0.2, 0.0, 0.4])
    offset = rng.normal(size=(3, 3))
    cases["halfspace"] = (lambda i, xa, qa, xb, qb: sphere_halfspace(xa, qa, offset[i], radius[i], normal[i], point[i]), None)

    # spheres: separated, along x (tangent fallback), coincident centres
    xb = np.array([[0.3, 0.2, 2.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    ra, rb = np.array([0.5, 0.2, 0.3]), np.array([0.5, 0.1, 0.4])
    poses = (np.zeros((3, 3)), np.broadcast_to(quat.IDENTITY, (3, 4)), xb, np.broadcast_to(quat.IDENTITY, (3, 4)))
    cases["sphere"] = (lambda i, xa, qa, xb, qb: sphere_sphere(xa, qa, ZERO, ra[i], xb, qb, ZERO, rb[i]), poses)

    # capsule: closest in the middle, clamped at end 1, clamped at end 2
    end1, end2 = np.array([[0, 1.0, 0]] * 3), np.array([[0, -1.0, 0], [0.2, -0.5, 0.1], [0, -1.0, 0.3]])
    xa = np.array([[0.1, 0.2, 1.0], [0.0, 2.0, 0.5], [0.4, -3.0, 0.0]])
    cases["capsule"] = (lambda i, xa, qa, xb, qb: sphere_capsule(xa, qa, ZERO, 0.3, xb, qb, end1[i], end2[i], 0.2), (xa,) + poses[1:])

    # box: outside face, corner, inside
    xa = np.array([[0.1, 0.0, 1.2], [0.5, 0.7, -0.9], [0.0, 0.1, 0.55]])
    centre_b = rng.normal(size=(3, 3)) * 0.1
    cases["box"] = (lambda i, xa, qa, xb, qb: sphere_box(xa, qa, ZERO, 0.1, xb, qb, centre_b[i], HALF), (xa,) + poses[1:])
    return cases


@pytest.mark.parametrize("kind", ["halfspace", "sphere", "capsule", "box"])
def test_vectorised_equals_single(kind):
    fn, poses = _mixed_cases()[kind]
    if poses is None:
        rng = np.random.default_rng(5)
        poses = (rng.normal(size=(3, 3)), random_quaternions(rng, 3), rng.normal(size=(3, 3)), random_quaternions(rng, 3))
    batched = fn(slice(None), *poses)
    check_invariants(batched)
    singles = [fn(slice(i, i + 1), *(p[i : i + 1] for p in poses)) for i in range(3)]
    assert_same(batched, concat(singles))


def test_no_contacts():
    e3, e4 = np.zeros((0, 3)), np.zeros((0, 4))
    for g in [
        sphere_halfspace(e3, e4, e3, np.zeros(0), e3, e3),
        sphere_halfspace(e3, e4, [0, 0, 0], 0.5, [0, 0, 1], [0, 0, 0]),
        sphere_sphere(e3, e4, e3, np.zeros(0), e3, e4, e3, np.zeros(0)),
        sphere_capsule(e3, e4, e3, 0.1, e3, e4, [0, 1, 0], [0, -1, 0], 0.2),
        sphere_box(e3, e4, e3, 0.1, e3, e4, [0, 0, 0], [0.5, 0.5, 0.5]),
    ]:
        assert g.distance.value.shape == (0,) and g.distance.jac.shape == (0, 12)
        assert g.normal.jac.shape == (0, 3, 12) and g.point_a.jac.shape == (0, 3, 12) and g.point_b.jac.shape == (0, 3, 12)
        assert g.tangent.value.shape == (0, 2, 3) and g.tangent.jac.shape == (0, 2, 3, 12)
