"""The interior-point solver on problems with known answers, its cone algebra, and regressions."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.math.cones import arrow, cone_product
from dojo_cli.solver.interior_point import interior_point, nesterov_todd, soc_step
from dojo_cli.solver.linear import DenseFactorization
from dojo_cli.solver.options import SolverOptions

def cone_points(m, margin_scales=(1e-8, 1.0, 100.0), seed=0):
    """Points strictly inside the cone, some within ~1e-8 of its boundary."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 3))
    x[:, 0] = np.linalg.norm(x[:, 1:], axis=1) + rng.random(m) * rng.choice(margin_scales, m)
    return x


def test_nesterov_todd_scaling_identities():
    s, z = cone_points(300, seed=1), cone_points(300, seed=2)
    w, w_inv, lam = nesterov_todd(s, z)
    assert np.max(np.abs(w @ w_inv - np.eye(3))) < 1e-9, "W W^-1 = I"
    assert np.max(np.abs(w - np.swapaxes(w, 1, 2))) < 1e-12, "W symmetric"
    other = np.einsum("mij,mj->mi", w_inv, z)
    assert np.max(np.abs(lam - other) / np.abs(lam).max(axis=1, keepdims=True)) < 1e-9, "W s = W^-1 z"
    assert np.max(np.abs(np.sum(lam * lam, 1) - np.sum(s * z, 1)) / np.sum(s * z, 1)) < 1e-9, "lambda.lambda = s.z"


def test_arrow_is_the_cone_product():
    rng = np.random.default_rng(3)
    u, v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    assert np.allclose(np.einsum("mij,mj->mi", arrow(u), v), cone_product(u, v))


@pytest.mark.parametrize("margins,tight", [((1e-3, 1.0, 100.0), 1e-7), ((1e-8,), 0.5)], ids=["interior", "near-boundary"])
def test_soc_step_matches_bisection(margins, tight):
    """The step to the cone's boundary: never past it; tight (1e-7 relative) for ordinary
    points, and conservative (Dojo's 1e-14 guards) within ~1e-8 of the boundary."""
    x = cone_points(400, margins, seed=4)
    dx = np.random.default_rng(5).normal(size=(400, 3)) * 3
    for i in range(len(x)):
        alpha = soc_step(x[i : i + 1], dx[i : i + 1], 1.0)
        def inside(a, xi=x[i], di=dx[i]):
            return xi[0] + a * di[0] >= np.linalg.norm(xi[1:] + a * di[1:])

        lo, hi = 0.0, 1.0
        if inside(1.0):
            assert alpha == pytest.approx(1.0)
            continue
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if inside(mid) else (lo, mid)
        assert lo * (1 - tight) - 1e-12 <= alpha <= lo + 1e-9, (alpha, lo)


class LCP:
    """x >= 0, y = M x + q >= 0, x o y = 0 as a cone problem: w = [x, y]."""

    def __init__(self, m, q):
        n = len(q)
        self.m, self.q, self.n = m, q, n
        self.orthant_s, self.orthant_g = np.arange(n, 2 * n), np.arange(n)  # s = y, gamma = x
        self.orthant_rows = self.orthant_s
        self.soc_s = self.soc_g = self.soc_rows = np.zeros((0, 3), int)
        self.equality_rows = np.arange(n)
        self.degree = n

    def residual(self, w):
        x, y = w[: self.n], w[self.n :]
        return np.r_[y - self.m @ x - self.q, x * y]

    def factorize(self, w, soc_jacobians=None):
        n = self.n
        x, y = w[:n], w[n:]
        a = np.block([[-self.m, np.eye(n)], [np.diag(y), np.diag(x)]])
        return DenseFactorization(a)

    def project(self, w):
        return w


def test_lcp_solution():
    m = np.array([[2.0, 1.0], [1.0, 3.0]])
    q = np.array([-1.0, 2.0])  # solution: x = (0.5, 0), y = (0, 2.5)
    res = interior_point(LCP(m, q), np.ones(4), SolverOptions(rtol=1e-10, btol=1e-10))
    assert res.success, res.status
    assert np.allclose(res.w, [0.5, 0, 0, 2.5], atol=1e-8), res.w


class SOCProjection:
    """z = p + s, z in the cone, s in the cone, z o s = 0: z is the projection of p onto
    the second-order cone (the dual cone of -p's polar decomposition)."""

    orthant_s = orthant_g = orthant_rows = np.zeros(0, int)
    soc_s, soc_g, soc_rows = np.array([[3, 4, 5]]), np.array([[0, 1, 2]]), np.array([[3, 4, 5]])
    equality_rows = np.arange(3)
    degree = 1

    def __init__(self, p):
        self.p = p

    def residual(self, w):
        z, s = w[:3], w[3:]
        return np.r_[z - self.p - s, cone_product(z, s)]

    def factorize(self, w, soc_jacobians=None):
        z, s = w[:3], w[3:]
        dz, ds = (arrow(s), arrow(z)) if soc_jacobians is None else (soc_jacobians[1][0], soc_jacobians[0][0])
        return DenseFactorization(np.block([[np.eye(3), -np.eye(3)], [dz, ds]]))

    def project(self, w):
        return w


@pytest.mark.parametrize("p", [[1.0, 2.0, 0.0], [-1.0, 0.3, -0.4], [0.5, -3.0, 4.0], [2.0, 0.1, 0.1]])
def test_projection_onto_second_order_cone(p):
    p = np.array(p)
    t, v = p[0], p[1:]
    nv = np.linalg.norm(v)
    if nv <= t:
        exact = p
    elif nv <= -t:
        exact = np.zeros(3)
    else:
        exact = 0.5 * (t + nv) * np.r_[1.0, v / nv]
    w0 = np.r_[1.5, 0, 0, 1.5, 0, 0]
    res = interior_point(SOCProjection(p), w0, SolverOptions(rtol=1e-10, btol=1e-10))
    assert res.success, res.status
    assert np.allclose(res.w[:3], exact, atol=1e-6), (res.w[:3], exact)


@pytest.mark.parametrize(
    "scene,overrides",
    [
        # a sphere started sliding (it must switch to rolling): jammed with a cone variable
        # pinned to its boundary before the one-shot centring and Nesterov-Todd scaling
        ("sphere", ["joints.0.initial.velocity=[1,0,0,0,0,0]"]),
        ("snake", ["joints.2.initial.position=[0,0,0]", "joints.4.initial.position=[0,0,0]"]),
    ],
)
def test_formerly_jamming_scenes_converge(scene, overrides):
    traj = dojo.simulate(dojo.load_scene(scene, overrides=overrides))
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"steps {failed[:5]} failed"


def test_tight_tolerances_never_produce_nan():
    """At rtol = btol = 1e-10 the complementarity of a resting box can stall near 1e-8
    (floating point); the solver must report that, not accept a NaN candidate (it did:
    NaN compares false, so the backtracking test let it through)."""
    mech = dojo.load_scene("box")
    traj = dojo.simulate(mech, steps=100, opts=SolverOptions(rtol=1e-10, btol=1e-10))
    assert np.all(np.isfinite(traj.x)) and np.all(np.isfinite(traj.q)), "finite states"
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert len(failed) <= 3, f"{len(failed)} steps failed"
    assert all(traj.residual[k] < 1e-6 for k in failed), "failures stop close to the tolerance"
