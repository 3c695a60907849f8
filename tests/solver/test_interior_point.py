"""The core's interior-point solver (dojo_cli/core/maximal/interior_point.h): its cone algebra,
Nesterov-Todd scaling and cone step length as units, then its behaviour through the public
step on problems with known answers (a contact's complementarity problem, the projection
onto the friction cone), its statuses, and regressions."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverStatus
from tests.mechanisms import ball, contact_box, pendulum, random_state

G = 9.81
# The scaling's identities hold to rounding of the cone's scale (1e-9 leaves room for
# points within 1e-8 of the boundary, where W has entries ~1e4).
SCALING_TOL = 1e-9
# At rtol = btol = 1e-10 a contact's gap s and impulse gamma have s gamma <= btol: the one
# that should be zero is below btol / (the other, ~0.1 N s or 0.1 m) ~ 1e-9.
TIGHT = SolverOptions(rtol=1e-10, btol=1e-10)
COMPLEMENTARY_ZERO = 1e-8
# Friction cases at rtol = btol = 1e-8 (test_contact_behaviors' analytic comparisons); the
# relaxed cone leaves |b| short of mu gn by ~ btol / |slip|, 1e-8 relative here.
FRICTION = SolverOptions(rtol=1e-8, btol=1e-8)


def cone_points(m, margin_scales=(1e-8, 1.0, 100.0), seed=0):
    """Points strictly inside the cone, some within ~1e-8 of its boundary."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(m, 3))
    x[:, 0] = np.linalg.norm(x[:, 1:], axis=1) + rng.random(m) * rng.choice(margin_scales, m)
    return x


def cone_product(u, v):
    """The Jordan product of the second-order cone, (u.v, u0 v[1:] + v0 u[1:]) (definition)."""
    return np.r_[u @ v, u[0] * v[1:] + v[0] * u[1:]]


def arrow(u):
    """arrow(u) with arrow(u) v = cone_product(u, v)."""
    return np.array([[u[0], u[1], u[2]], [u[1], u[0], 0.0], [u[2], 0.0, u[0]]])


# ------------------------------------------------------------------ cone algebra
def test_nesterov_todd_scaling_identities():
    s, z = cone_points(300, seed=1), cone_points(300, seed=2)
    w, w_inv, lam = _core.testing.nesterov_todd(s, z)
    err = np.max(np.abs(w @ w_inv - np.eye(3)))
    assert err < SCALING_TOL, f"W W^-1 = I: error {err:.2e}"
    err = np.max(np.abs(w - np.swapaxes(w, 1, 2)))
    assert err < 1e-12, f"W symmetric: error {err:.2e}"
    ws = np.einsum("mij,mj->mi", w, s)
    err = np.max(np.abs(lam - ws) / np.abs(lam).max(axis=1, keepdims=True))
    assert err < SCALING_TOL, f"lambda = W s: relative error {err:.2e}"
    other = np.einsum("mij,mj->mi", w_inv, z)
    err = np.max(np.abs(lam - other) / np.abs(lam).max(axis=1, keepdims=True))
    assert err < SCALING_TOL, f"W s = W^-1 z: relative error {err:.2e}"
    err = np.max(np.abs(np.sum(lam * lam, 1) - np.sum(s * z, 1)) / np.sum(s * z, 1))
    assert err < SCALING_TOL, f"lambda.lambda = s.z: relative error {err:.2e}"
    margin = lam[:, 0] - np.linalg.norm(lam[:, 1:], axis=1)
    assert np.all(margin > 0), f"lambda inside the cone: margin {margin.min():.2e}"


def test_nesterov_todd_of_the_cone_identity():
    """s = z = e = (1, 0, 0): W = I, lambda = e."""
    e = np.array([[1.0, 0.0, 0.0]])
    w, w_inv, lam = _core.testing.nesterov_todd(e, e)
    assert np.allclose(w[0], np.eye(3), atol=1e-15) and np.allclose(w_inv[0], np.eye(3), atol=1e-15), w[0]
    assert np.allclose(lam, e, atol=1e-15), lam


def _nonlinear_contact_rows(seed):
    """A nonlinear-cone contact's complementarity rows and their Jacobian at random s, gamma."""
    rng = np.random.default_rng(seed)
    s, gamma = np.r_[rng.uniform(0.1, 2.0), cone_points(1, (1.0,), seed)[0]], np.r_[
        rng.uniform(0.1, 2.0), cone_points(1, (1.0,), seed + 1)[0]
    ]
    zero3, identity = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    a = (np.array([0.0, 0.0, 0.7]), identity, zero3, zero3, 0.01 * np.eye(3))
    world = (zero3, identity, zero3, zero3, np.zeros((3, 3)))
    out = _core.testing.evaluate_contact(
        dict(model="nonlinear", kind="halfspace", radius=0.5), 0.01, *a, *world, s, gamma, "jacobians"
    )
    return s, gamma, out["comp"], out["comp_jac"]


@pytest.mark.parametrize("seed", range(3))
def test_cone_complementarity_is_the_jordan_product(seed):
    """The nonlinear cone's complementarity rows are cone_product(gamma, s) of the cone parts
    (slack 1:4, impulse 1:4), linearised by arrow(gamma) d s + arrow(s) d gamma, and
    arrow(u) v = cone_product(u, v) = arrow(v) u."""
    s, gamma, comp, jac = _nonlinear_contact_rows(seed)
    assert np.allclose(comp[1:4], cone_product(gamma[1:4], s[1:4]), rtol=0, atol=1e-14), comp
    assert np.array_equal(jac[1:4, 1:4], arrow(gamma[1:4])), "d/ds = arrow(gamma)"
    assert np.array_equal(jac[1:4, 5:8], arrow(s[1:4])), "d/dgamma = arrow(s)"
    for u, v in ((gamma[1:4], s[1:4]), (s[1:4], gamma[1:4])):
        err = np.max(np.abs(arrow(u) @ v - comp[1:4]))
        assert err < 1e-14, f"arrow(u) v vs cone_product: {err:.2e}"
    assert comp[0] == gamma[0] * s[0] and jac[0, 0] == gamma[0] and jac[0, 4] == s[0], "orthant pair"


# --------------------------------------------------------------- cone step length
def _one_cone_problem():
    """A ball with one nonlinear-cone contact: one orthant pair and two second-order cones."""
    mech = ball(model="nonlinear")
    cones = _core.testing.cone_structure(mech.core)
    soc_s, soc_g = (np.array(cones[k], dtype=int).reshape(-1, 3) for k in ("soc_s", "soc_g"))
    assert len(cones["orthant_s"]) == 1 and soc_s.shape == (1, 3) and cones["degree"] == 2, cones
    w = np.zeros(mech.core.n)
    w[cones["orthant_s"] + cones["orthant_g"]] = 1.0
    w[soc_s[0]] = w[soc_g[0]] = [1.0, 0.0, 0.0]
    return mech, cones, soc_s[0], soc_g[0], w


@pytest.mark.parametrize("margins,tight", [((1e-3, 1.0, 100.0), 1e-7), ((1e-8,), 0.5)], ids=["interior", "near-boundary"])
def test_cone_step_matches_bisection(margins, tight):
    """The step to a second-order cone's boundary, taken as a fraction 0.95 of it (Dojo's
    tau_soc): never past it; tight (1e-7 relative) for ordinary points, and conservative
    (Dojo's 1e-14 guards) within ~1e-8 of the boundary. Either cone (slack or impulse)."""
    mech, _, soc_s, soc_g, w0 = _one_cone_problem()
    soc_fraction = 0.95
    x = cone_points(400, margins, seed=4)
    dx = np.random.default_rng(5).normal(size=(400, 3)) * 3
    for i in range(len(x)):
        block = soc_s if i % 2 else soc_g
        w, dw = w0.copy(), np.zeros_like(w0)
        w[block], dw[block] = x[i], dx[i]
        alpha = _core.testing.cone_step(mech.core, w, dw, 1.0)

        def inside(a, xi=x[i], di=dx[i]):
            return xi[0] + a * di[0] >= np.linalg.norm(xi[1:] + a * di[1:])

        if inside(1.0 / soc_fraction):
            assert alpha == pytest.approx(1.0), f"case {i}: the full step stays inside, alpha {alpha}"
            continue
        lo, hi = 0.0, 1.0 / soc_fraction
        for _ in range(100):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if inside(mid) else (lo, mid)
        expected = soc_fraction * lo
        assert expected * (1 - tight) - 1e-12 <= alpha <= expected + 1e-9, f"case {i}: alpha {alpha}, 0.95 x boundary {expected}"


def test_cone_step_stays_inside_tiny_cones():
    """A cone vector of size ~1e-7 (a sticking contact's slip cone at kappa ~ 1e-8): its
    Jordan determinant (~1e-15) is below Dojo's absolute guard 1e-14, and Dojo's rule then
    returns steps that leave the cone (most random directions here). The solver's step
    (stay_inside) is, in those cases, the rule applied scale-invariantly: the step of the
    same cone scaled to size 1, strictly inside; elsewhere Dojo's step."""
    mech, _, soc_s, _, w0 = _one_cone_problem()
    x = cone_points(300, (1e-3, 1.0), seed=7)
    dx = np.random.default_rng(8).normal(size=(300, 3)) * 3
    scale = 1e-7
    left = 0
    for i in range(len(x)):
        w, dw = w0.copy(), np.zeros_like(w0)
        w[soc_s], dw[soc_s] = x[i] * scale, dx[i] * scale
        dojo_alpha = _core.testing.cone_step(mech.core, w, dw, 1.0)
        y = x[i] + dojo_alpha * dx[i]
        leaves = not (y[0] > np.linalg.norm(y[1:]))
        left += leaves
        alpha = _core.testing.cone_step(mech.core, w, dw, 1.0, stay_inside=True)
        y = x[i] + alpha * dx[i]
        assert y[0] > np.linalg.norm(y[1:]), f"case {i}: the step leaves the cone (alpha {alpha})"
        if not leaves:  # Dojo's step (inside, if conservative) is kept
            assert alpha == dojo_alpha, f"case {i}: {alpha} vs Dojo's {dojo_alpha}"
            continue
        w[soc_s], dw[soc_s] = x[i], dx[i]
        unit = _core.testing.cone_step(mech.core, w, dw, 1.0)
        # the guards, relative after scaling, move alpha by ~1e-14 / det (det >= ~1e-6 here)
        assert alpha == pytest.approx(unit, rel=1e-7), f"case {i}: {alpha} vs {unit} at size 1"
    assert left > len(x) // 2, f"Dojo's rule left the cone in {left} of {len(x)} cases only: the test lost its point"


def test_orthant_step_is_the_fraction_to_the_boundary():
    """Orthant pairs: alpha = min(1, tau x / -dx) over the decreasing entries (Dojo's rule),
    and the whole step is the smallest over every cone."""
    mech, cones, soc_s, _, w = _one_cone_problem()
    i_s, i_g = cones["orthant_s"][0], cones["orthant_g"][0]
    w[i_s], w[i_g] = 0.4, 2.0
    for tau in (0.95, 0.99, 1.0):
        dw = np.zeros_like(w)
        dw[i_s], dw[i_g] = -1.0, -1.0
        assert _core.testing.cone_step(mech.core, w, dw, tau) == pytest.approx(tau * 0.4, rel=1e-15), f"tau {tau}"
        dw[soc_s] = [-10.0, 0.0, 0.0]  # reaches its boundary at 0.1: 0.95 x 0.1 (tau_soc <= 0.95)
        assert _core.testing.cone_step(mech.core, w, dw, tau) == pytest.approx(min(tau, 0.95) * 0.1, rel=1e-9), f"tau {tau}"
    dw = np.zeros_like(w)
    dw[i_s] = 5.0  # increasing entries never limit the step
    assert _core.testing.cone_step(mech.core, w, dw, 0.95) == 1.0


def test_complementarity_measure_and_violations():
    """nu = sum s.gamma / degree over orthant pairs and cones; (rvio, bvio) are the infinity
    norms of the equality and complementarity rows, NaN propagating."""
    mech, cones, soc_s, soc_g, _ = _one_cone_problem()
    rng = np.random.default_rng(6)
    w = rng.uniform(0.1, 2.0, mech.core.n)
    pairs = np.dot(w[cones["orthant_s"]], w[cones["orthant_g"]]) + np.dot(w[soc_s], w[soc_g])
    nu = _core.testing.complementarity_measure(mech.core, w)
    assert nu == pytest.approx(pairs / cones["degree"], rel=1e-15), nu
    comp = np.array(cones["is_complementarity"], dtype=bool)
    assert set(np.flatnonzero(comp)) == set(cones["orthant_s"]) | set(soc_s), "complementarity rows sit at the slacks"
    r = rng.normal(size=mech.core.n)
    rvio, bvio = _core.testing.violations(mech.core, r, relative=False)
    assert rvio == np.max(np.abs(r[~comp])) and bvio == np.max(np.abs(r[comp])), (rvio, bvio)
    # relative (the default tolerances): each row in its unit (core/maximal/tolerances.h)
    scaled = np.abs(r) / np.asarray(mech.core.row_scale)
    rvio, bvio = _core.testing.violations(mech.core, r)
    assert rvio == np.max(scaled[~comp]) and bvio == np.max(scaled[comp]), (rvio, bvio)
    r[0] = np.nan
    assert all(np.isnan(v) for v in _core.testing.violations(mech.core, r)), "a NaN residual is never converged"
    assert all(np.isnan(v) for v in _core.testing.violations(mech.core, r, relative=False))


# ------------------------------------------------------- known answers, through the step
def _ball_at(mech, height, v=(0.0, 0.0, 0.0)):
    z = np.zeros(13)
    z[2], z[3:6], z[6] = height, v, 1.0
    return z


@pytest.mark.parametrize("model", ["impact", "linear", "nonlinear"])
def test_contact_complementarity_both_branches(model):
    """One orthant pair: a ball resting on the ground takes the impulse m g h with zero gap
    and stays; a ball 0.1 above it takes none and falls freely (v25 = -g h)."""
    mech = ball(model=model, radius=0.5, mass=2.0)
    h = mech.timestep
    z, result = solve_step(mech, _ball_at(mech, 0.5), opts=TIGHT)
    assert result.success, result.status
    data = mech.core_data
    # the relaxed gap s ~ btol / gamma lets the ball rise by s: v25 = s / h, gamma = m (g h + v25)
    assert abs(data.contact_distance[0]) < COMPLEMENTARY_ZERO, f"gap {data.contact_distance[0]:.2e}"
    assert np.max(np.abs(z[3:6])) < COMPLEMENTARY_ZERO / h, f"resting ball moves: v25 {z[3:6]}"
    impulse = data.contact_normal_impulse[0]
    assert impulse == pytest.approx(2.0 * G * h, abs=2.0 * COMPLEMENTARY_ZERO / h), f"impulse {impulse} vs m g h"
    z, result = solve_step(mech, _ball_at(mech, 0.6), opts=TIGHT)
    assert result.success, result.status
    assert abs(mech.core_data.contact_normal_impulse[0]) < COMPLEMENTARY_ZERO, mech.core_data.contact_normal_impulse
    # the relaxed impulse ~ btol / 0.1 m changes v25 by less than COMPLEMENTARY_ZERO
    assert z[3:6] == pytest.approx([0.0, 0.0, -G * h], abs=COMPLEMENTARY_ZERO), z[3:6]
    gap = mech.core_data.contact_distance[0]
    assert gap == pytest.approx(0.1 - G * h * h, abs=COMPLEMENTARY_ZERO * h), f"gap {gap} after free fall"


def test_friction_is_the_projection_onto_the_cone():
    """The nonlinear cone's friction impulse is the projection onto {|b| <= mu gn}: a sliding
    box's friction is on the boundary, |b| = mu gn, opposite to the slip; a box pushed by
    less than mu m g sticks, with b strictly inside the cone and balancing the push."""
    mu, h = 0.3, 0.01
    mech = contact_box(h=h, mu=mu, corners="bottom")
    d = np.array([np.cos(0.4), np.sin(0.4), 0.0])
    rest = np.r_[0, 0, 0.25, 0, 0, 0, 1.0, 0, 0, 0, 0, 0, 0]
    sliding = rest.copy()
    sliding[3:6] = 2.0 * d
    _, result = solve_step(mech, sliding, opts=FRICTION)
    assert result.success, result.status
    data = mech.core_data
    gn, b, slip = data.contact_normal_impulse, data.contact_friction_impulse, data.contact_slip
    assert np.all(gn > 0.1 * G * h / 4), gn
    on_boundary = np.abs(np.linalg.norm(b, axis=1) / (mu * gn) - 1)
    assert on_boundary.max() < 1e-6, f"|b| / (mu gn) - 1: {on_boundary}"
    opposite = np.einsum("ci,ci->c", b / np.linalg.norm(b, axis=1, keepdims=True),
                         slip / np.linalg.norm(slip, axis=1, keepdims=True))
    assert np.allclose(opposite, -1.0, atol=1e-9), f"cos(friction, slip) {opposite}"

    push = 0.5 * mu * G  # half of what sliding needs (1 kg)
    z, result = solve_step(mech, rest, opts=FRICTION, f_ext=np.r_[push * d])
    assert result.success, result.status
    gn, b = data.contact_normal_impulse, data.contact_friction_impulse
    inside = np.linalg.norm(b, axis=1) / (mu * gn)
    assert inside.max() < 0.9, f"|b| / (mu gn) {inside}: sticking friction is inside the cone"
    # friction cancels the push: the box keeps less than 1e-3 of the push's velocity h f / m
    # (what is left is the relaxed cone's slip, ~ btol / (mu gn - |b|))
    speed = np.linalg.norm(z[3:5])
    assert speed < 1e-3 * push * h, f"pushed box slides: |v25| {speed:.2e} vs {push * h:.2e} without friction"
    slip = np.max(np.linalg.norm(data.contact_slip, axis=1))
    assert slip < 1e-3 * push * h, f"contact slip {slip:.2e}"


# ------------------------------------------------------------------------ statuses
def test_statuses_and_solver_record():
    """success with both violations below tolerance (and the record equal to the residual at
    the solution); max_iterations when stopped early; non_finite for a NaN state."""
    mech = contact_box(corners="bottom")
    z = np.r_[0, 0, 0.25, 0.5, 0, 0, 1.0, 0, 0, 0, 0, 0, 0]
    _, result = solve_step(mech, z, opts=TIGHT)
    assert result.status is SolverStatus.SUCCESS and result.iterations > 1, (result.status, result.iterations)
    r = np.asarray(_core.testing.step_residual(mech.core, _core.Data(mech.core), z, None, result.w))
    rvio, bvio = _core.testing.violations(mech.core, r)
    assert rvio < TIGHT.rtol and bvio < TIGHT.btol, (rvio, bvio)
    assert result.complementarity == pytest.approx(bvio, rel=1e-12, abs=1e-300), (result.complementarity, bvio)
    assert result.residual == pytest.approx(max(rvio, bvio), rel=1e-12, abs=1e-300), (result.residual, rvio, bvio)

    # stopped early, the solve restarts from the other starting impulse scales (core/step.h,
    # "Restarts"), each with max_iter iterations, then from all four again with the line
    # search's filter, then once more with the filter and the re-centring of jammed cones,
    # then with Gondzio's centrality correctors too (3 + 4 + 4 + 4 restarts); the record
    # counts them all
    _, result = solve_step(mech, z, opts=TIGHT.replace(max_iter=2))
    restarts = mech.core_data.restarts
    assert result.status is SolverStatus.MAX_ITERATIONS and result.iterations == 2 * (1 + restarts) and restarts == 3 + 4 + 4 + 4, (
        result.status, result.iterations, restarts)
    # the solver log holds every attempt's iterations (each attempt starts again at 1)
    log = np.asarray(mech.core_data.log)
    assert len(log) == result.iterations and list(log[:, 0]) == [1, 2] * (1 + restarts), log[:, 0]
    # the failed step ends at the attempt that came closest, and its record is that attempt's
    r = np.asarray(_core.testing.step_residual(mech.core, _core.Data(mech.core), z, None, result.w))
    rvio, bvio = _core.testing.violations(mech.core, r)
    assert result.residual == pytest.approx(max(rvio, bvio), rel=1e-12), (result.residual, rvio, bvio)
    assert result.complementarity == pytest.approx(bvio, rel=1e-12), (result.complementarity, bvio)

    for m, state in ((mech, z), (pendulum(), random_state(pendulum(), seed=1))):
        bad = state.copy()
        bad[0] = np.nan
        _, result = solve_step(m, bad)
        assert result.status is SolverStatus.NON_FINITE, f"{m.name}: {result.status}"

    smooth = pendulum()
    _, result = solve_step(smooth, random_state(smooth, seed=2), opts=TIGHT)
    assert result.status is SolverStatus.SUCCESS and result.residual < TIGHT.rtol, (result.status, result.residual)


# ---------------------------------------------------------------------- regressions
@pytest.mark.parametrize(
    "scene,overrides",
    [
        # a sphere started sliding (it must switch to rolling): jammed with a cone variable
        # pinned to its boundary before the one-shot centring and Nesterov-Todd scaling
        # (from Dojo's midpoint velocities); from velocities at t0 its step 1 stopped at
        # max_iterations until the recovery that drops Mehrotra's second-order term
        ("sphere", ["joints.0.initial.velocity=[1,0,0,0,0,0]", "initial_velocity=midpoint"]),
        ("sphere", ["joints.0.initial.velocity=[1,0,0,0,0,0]", "initial_velocity=t0"]),
        ("snake", ["joints.2.initial.position=[0,0,0]", "joints.4.initial.position=[0,0,0]"]),
    ],
)
def test_formerly_jamming_scenes_converge(scene, overrides):
    traj = dojo.simulate(dojo.load_scene(scene, overrides=overrides))
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"steps {failed[:5]} failed"


STRAIGHT_TWISTER = ["joints.1.initial.position=[0]", "joints.4.initial.position=[0]"]


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # the scene's own drop (velocities at t0): failed steps 44 and 51
        ["initial_velocity=midpoint"],  # failed step 49
        # other drop heights (the chain's lowest points 0.3 to 0.6 m up), midpoint
        # velocities: failed steps 25, 42 and 53
        ["initial_velocity=midpoint", "joints.0.initial.position=[-2.0,0,0.35,0,0,0]"],
        ["initial_velocity=midpoint", "joints.0.initial.position=[-2.0,0,0.5,0,0,0]"],
        ["initial_velocity=midpoint", "joints.0.initial.position=[-2.0,0,0.65,0,0,0]"],
    ],
    ids=["t0", "midpoint", "midpoint-0.35", "midpoint-0.5", "midpoint-0.65"],
)
def test_twister_dropped_straight_converges_every_step(overrides):
    """The twister with joints 2 and 5 straight lands with its contacts collinear: several
    sliding contacts share a normal load the equations do not fix, and a contact passes
    between sliding and sticking, so the Newton matrix is nearly singular along a twist of
    the chain about its axis. Mehrotra's second-order term, quadratic in the blown-up
    affine direction, then stalled the solve (alpha ~ 1e-5) or made it wander; and a
    sticking contact's tiny slip cone was stepped out of (Dojo's absolute guards). With
    the recovery (second-order term dropped after two no-progress events) and the
    scale-invariant cone step, every step converges: both violations below the scene's
    tolerances. The physics: the chain lands straight and lies on its contact spheres
    (centre line at their radius, no penetration) rolling sideways as one log.

    Measured, and held here, with the tolerances in SI units (tolerances: absolute, as when
    the safeguards were written). The relative default is 20-100x tighter on this chain
    (1 kg links, contact products in units of 0.05 m N s): there, 2 of these 5 drops
    (midpoint, midpoint-0.65) still stall one step each at a cone product of 1e-4 to 4e-4
    relative, 1-4x btol (docs/physics.md, "Solver tolerances")."""
    mech = dojo.load_scene("twister", overrides=STRAIGHT_TWISTER + overrides + ["solver.tolerances=absolute"])
    opts = SolverOptions(tolerances="absolute")
    traj = dojo.simulate(mech)
    assert traj.steps == 300
    failed = [(k, s, traj.residual[k]) for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"failed steps (step, status, residual): {failed[:5]}"
    # success means rvio < rtol and bvio < btol; the record agrees
    assert np.max(traj.complementarity) < opts.btol, np.max(traj.complementarity)
    assert np.max(traj.residual) < opts.btol, np.max(traj.residual)
    radius = 0.05
    assert np.min(traj.contact_distance) > -1e-6, f"penetration {np.min(traj.contact_distance):.2e} m"
    z_end = traj.x[-1][:, 2]
    assert np.all(np.abs(z_end - radius) < 1e-3), f"links' centre heights at the end {z_end}"
    speed = np.linalg.norm(traj.v[-1][:, :2], axis=1)
    assert np.ptp(speed) < 0.01 * np.max(speed) + 1e-6, f"links' speeds at the end {speed}: not one rigid log"


def test_tight_tolerances_never_produce_nan():
    """At rtol = btol = 1e-10 the complementarity of a resting box can stall near 1e-8
    (floating point); the solver must report that, not accept a NaN candidate (it did:
    NaN compares false, so the backtracking test let it through). In SI units (tolerances:
    absolute), the numbers of this docstring."""
    mech = dojo.load_scene("box")
    traj = dojo.simulate(mech, steps=100, opts=SolverOptions(rtol=1e-10, btol=1e-10, tolerances="absolute"))
    assert np.all(np.isfinite(traj.x)) and np.all(np.isfinite(traj.q)), "finite states"
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert len(failed) <= 3, f"{len(failed)} steps failed"
    assert all(traj.residual[k] < 1e-6 for k in failed), "failures stop close to the tolerance"
