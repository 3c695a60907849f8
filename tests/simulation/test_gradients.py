"""Implicit-function-theorem gradients of a step against finite differences of the step.

Every Jacobian is compared with a four-point central difference of the solved step
(truncation O(e^4)) along random directions, which mix every column, so a wrong entry
anywhere shows. Where the step has inequalities (contacts, limits) two comparisons are
made:
- relaxed (kappa = 1e-4): the step re-solved on the central path s o gamma = kappa is a
  smooth map of the state, inputs and parameters, so its derivative must match the
  finite difference of that same map everywhere, in contact or not;
- unrelaxed (where the solver stopped, the default): the step is only piecewise smooth.
  For a body free of joint constraints it is smooth at generic states and checked
  directly. With joints, perturbing a constrained direction makes the joint pull the
  body back within one step; against a sticking contact that can only happen by
  slipping, a kink of the true map at the unperturbed state (the finite differences do
  not converge as e -> 0), which is why those scenes are checked relaxed.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import dojo_cli as dojo
from dojo_cli.analysis.gradient_check import four_point, tangent_difference
from dojo_cli.analysis.gradient_check import perturb_tangent as perturb
from dojo_cli.model.parameters import parameter_labels, parameter_values, with_parameters
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.scene.loader import builtin_scene_names
from dojo_cli.simulation.gradients import step_gradients
from dojo_cli.simulation.step import step
from tests import mechanisms as M

TIGHT = dojo.SolverOptions(rtol=1e-10, btol=1e-10)
KAPPA = 1e-3
FD = 1e-6
FD_RELAXED = 2e-7
TOL = 1e-5
ALL_JOINT_TYPES = [
    "fixed", "prismatic", "planar", "fixed_orientation", "revolute", "cylindrical", "planar_axis", "free_revolute",
    "orbital", "prismatic_orbital", "planar_orbital", "free_orbital", "spherical", "cylindrical_free", "planar_free",
    "universal", "gimbal",
]


def relative_error(analytic, numeric):
    return float(np.max(np.abs(analytic - numeric)) / max(1.0, np.max(np.abs(numeric))))


def next_state_fn(mech, kappa):
    if kappa is None:
        return lambda z, u: step(mech, z, u, TIGHT)
    return lambda z, u: step_gradients(mech, z, u, TIGHT, wrt=(), kappa=kappa).next_state


def check_state_and_input(mech, z, u, kappa, directions=3, seed=0, e=FD):
    """Largest relative errors of A and B along random directions."""
    rng = np.random.default_rng(seed)
    nb = mech.nb
    u = np.zeros(mech.nu) if u is None else u
    g = step_gradients(mech, z, u, TIGHT, wrt=("state", "input"), kappa=kappa)
    f = next_state_fn(mech, kappa)
    z_next = f(z, u)
    errors = []
    for _ in range(directions):
        d = rng.standard_normal(12 * nb)
        numeric = four_point(lambda t: tangent_difference(nb, z_next, f(perturb(nb, z, t * d), u)), e)
        errors.append(relative_error(g.A @ d, numeric))
    if mech.nu:
        for _ in range(min(directions, mech.nu)):
            du = rng.standard_normal(mech.nu)
            numeric = four_point(lambda t: tangent_difference(nb, z_next, f(z, u + t * du)), e)
            errors.append(relative_error(g.B @ du, numeric))
    return max(errors)


def check_minimal(mech, z, u, directions=3, seed=0):
    """Largest relative error of A_min, B_min (unrelaxed) along random minimal-coordinate directions:
    the perturbations a jointed mechanism can physically take."""
    rng = np.random.default_rng(seed)
    u = np.zeros(mech.nu) if u is None else u
    y = maximal_to_minimal(mech, z)
    g = dojo.step_gradients(mech, y, u, TIGHT, minimal=True)

    def f(yy, uu):
        return maximal_to_minimal(mech, step(mech, minimal_to_maximal(mech, yy), uu, TIGHT))

    errors = []
    for _ in range(directions):
        d = rng.standard_normal(y.size)
        errors.append(relative_error(g.A @ d, four_point(lambda e: f(y + e * d, u) - g.next_state, FD)))
        du = rng.standard_normal(mech.nu)
        errors.append(relative_error(g.B @ du, four_point(lambda e: f(y, u + e * du) - g.next_state, FD)))
    return max(errors)


def check_parameters(mech, z, u, kinds, kappa):
    """Largest relative error of the parameter Jacobian, column by column."""
    u = np.zeros(mech.nu) if u is None else u
    g = step_gradients(mech, z, u, TIGHT, wrt=("params",), params=kinds, kappa=kappa)
    labels = parameter_labels(mech, kinds)
    assert g.labels == labels
    values = parameter_values(mech, labels)
    base = next_state_fn(mech, kappa)(z, u)
    errors = {}
    for i, label in enumerate(labels):
        def f(e, i=i, label=label):
            other = with_parameters(mech, [label], [values[i] + e])
            return tangent_difference(mech.nb, base, next_state_fn(other, kappa)(z, u))

        errors[label] = relative_error(g.P[:, i], four_point(f, FD))
    return errors


def state_after(mech, seconds, z0=None):
    steps = max(1, int(round(seconds / mech.timestep)))
    z = dojo.initial_state(mech) if z0 is None else z0
    for _ in range(steps):
        z = step(mech, z, None, TIGHT)
    return z


def box_at_rest(mech, velocity=(0.0, 0.0, 0.0)):
    """The cube of contact_box settled on its bottom face, then given a midpoint velocity."""
    z = np.zeros(13)
    z[2] = 0.26
    z[6] = 1.0
    z = state_after(mech, 1.0, z)
    z[3:6] = velocity
    return z


# ------------------------------------------------------------ every built-in scene
@pytest.mark.parametrize("seconds", [0.1, 0.4])
@pytest.mark.parametrize("scene", builtin_scene_names())
def test_builtin_scene_gradients(scene, seconds):
    mech = dojo.load_scene(scene)  # the robot scenes' data is in the test extra: no skip
    z = state_after(mech, seconds)
    u = 0.1 * np.ones(mech.nu)
    directions = 3 if mech.nb <= 8 else 1  # the robots: one random direction each (they cost 10x)
    if mech.has_inequalities:
        # the relaxed contact is a stiff spring (~ gamma^2 / kappa): a smaller difference step
        err = check_state_and_input(mech, z, u, KAPPA, directions, e=FD_RELAXED)
        assert err < TOL, f"relaxed: relative error {err:.2e}"
    else:
        err = check_state_and_input(mech, z, u, None, directions)
        assert err < TOL, f"relative error {err:.2e}"


# ------------------------------------------------------------ every joint type
@pytest.mark.parametrize("joint_type", ALL_JOINT_TYPES)
@pytest.mark.parametrize("builder", [M.snake, M.twister], ids=["snake", "twister"])
def test_every_joint_type_with_springs_and_dampers(builder, joint_type):
    mech = builder(3, joint_type, gravity=(0, 0, -9.81), spring=2.0, damper=0.5)
    z = M.random_state(mech, seed=3)
    u = 0.3 * np.random.default_rng(1).standard_normal(mech.nu)
    err = check_state_and_input(mech, z, u, None, directions=3)
    assert err < TOL, f"relative error {err:.2e}"


def test_limits_and_fourbar_loop():
    # pendulum_limit after 1.5 s rests on its lower limit, pressed by gravity (a strictly
    # positive limit impulse: the step is smooth there)
    fourbar, fourbar_start = M.fourbar()
    for mech, seconds, z0 in ((dojo.load_scene("pendulum_limit"), 1.5, None), (fourbar, 0.4, fourbar_start)):
        z = state_after(mech, seconds, z0)
        u = 0.1 * np.ones(mech.nu)
        err = check_state_and_input(mech, z, u, KAPPA if mech.has_inequalities else None)
        assert err < TOL, f"{mech.name}: relative error {err:.2e}"
        err = check_minimal(mech, z, u)
        assert err < TOL, f"{mech.name} minimal: relative error {err:.2e}"


def test_exact_matrix_where_its_pivots_allow_and_the_regularised_one_in_a_loop():
    # The gradients factorise dr/dw without the joint-impulse regularisation when every
    # joint-impulse pivot is far above it (one solve and one refinement sweep per column);
    # the fourbar's loop makes that matrix singular (a pivot at rounding level), so it takes
    # the regularised matrix and refines against the exact one. Both against finite differences.
    fourbar, fourbar_start = M.fourbar()
    for mech, z0, exact in ((dojo.load_scene("npendulum"), None, True), (fourbar, fourbar_start, False)):
        z = state_after(mech, 0.2, z0)
        u = 0.1 * np.ones(mech.nu)
        step_gradients(mech, z, u, TIGHT)
        assert mech.core_data.lu_exact == exact, f"{mech.name}: lu_exact {mech.core_data.lu_exact}, expected {exact}"
        err = check_state_and_input(mech, z, u, None)
        assert err < TOL, f"{mech.name}: relative error {err:.2e}"


# ------------------------------------------------------------ contact models, pairs and parameters
CONTACT_PARAMS = ("mass", "inertia", "gravity", "friction", "radius", "offset")


@pytest.mark.parametrize("model", ["impact", "linear", "nonlinear"])
@pytest.mark.parametrize("kind", ["halfspace", "sphere", "capsule", "box"])
def test_contact_models_and_pairs(kind, model):
    """Flying (after 0.1 s) and resting (0.4 s): A, B and every parameter, relaxed and not. The
    ball on an obstacle starts 0.2 m above it, off-centre (at the origin it would start inside
    the obstacle, and come out over the recovery's time constant: test_contact_recovery.py)."""
    z0 = None
    if kind == "halfspace":
        mech = M.ball(model=model, mu=0.4, h=0.05, normal=(0.1, 0.0, 1.0))
    else:
        mech = M.ball_on(kind, model=model, mu=0.4)
        z0 = minimal_to_maximal(mech, np.zeros(mech.minimal_dimension())).reshape(mech.nb, 13)
        z0[1, 0:3] = [0.03, 0.02, 1.2]
        z0 = z0.ravel()
    for seconds in (0.1, 0.4):
        z = state_after(mech, seconds, z0)
        for kappa in (KAPPA, None):
            err = check_state_and_input(mech, z, None, kappa, directions=3)
            assert err < TOL, f"{seconds} s kappa {kappa}: state relative error {err:.2e}"
            errors = check_parameters(mech, z, None, CONTACT_PARAMS, kappa)
            worst = max(errors, key=errors.get)
            assert errors[worst] < TOL, f"{seconds} s kappa {kappa}: {worst} relative error {errors[worst]:.2e}"


@pytest.mark.parametrize("model", ["impact", "linear", "nonlinear"])
@pytest.mark.parametrize("kind", ["halfspace", "sphere", "capsule", "box"])
def test_restitution_gradients(kind, model):
    """A spinning ball about to hit (e = 0.7, h = 0.05): the step's target tau(z2)
    (core/maximal/restitution.h) enters A and the parameter Jacobian (restitution, and gravity,
    radius, offset through tau). Approach speeds 3 m/s (full restitution) and 0.7 m/s (on
    the threshold's smoothstep, v_th = |g| h = 0.49 m/s). The spin is one under which the
    nonlinear contact sticks in the unrelaxed step: where it slides, the finite differences
    of the hard step do not converge (e = 0 alike, 1e-3 .. 1 as the difference step changes),
    which is what the relaxed check is for."""
    if kind == "halfspace":
        mech, ball, top = M.ball(model=model, mu=0.4, h=0.05, normal=(0.1, 0.0, 1.0)), 0, 0.5
    else:
        mech, ball, top = M.ball_on(kind, model=model, mu=0.4), 1, 1.0
    mech = with_parameters(mech, ["contacts.c.restitution"], [0.7])
    for speed in (3.0, 0.7):
        z = minimal_to_maximal(mech, np.zeros(mech.minimal_dimension())).reshape(mech.nb, 13)
        z[ball, 0:6] = [0.03, 0.02, top + 0.02, 0.3, -0.2, -speed]
        z[ball, 10:13] = [3.0, 1.0, 0.0]
        z = z.ravel()
        g = step_gradients(mech, z, None, TIGHT, wrt=("params",), params=("restitution",))
        assert np.max(np.abs(g.P)) > 0.1, "restitution does not act: not an impact"
        for kappa in (None, KAPPA):
            err = check_state_and_input(mech, z, None, kappa, directions=3, e=FD_RELAXED if kappa else FD)
            assert err < TOL, f"{speed} m/s kappa {kappa}: state relative error {err:.2e}"
            errors = check_parameters(mech, z, None, ("restitution", "gravity", "radius", "offset", "mass"), kappa)
            worst = max(errors, key=errors.get)
            assert errors[worst] < TOL, f"{speed} m/s kappa {kappa}: {worst} relative error {errors[worst]:.2e}"


def test_parameters_sliding_box_every_model():
    """A box sliding on four corners: friction matters (dz'/dmu is not zero) and matches."""
    for model in ("linear", "nonlinear"):
        mech = M.contact_box(mu=0.3, model=model, corners="bottom")
        z = box_at_rest(mech, (2.0, 0.5, 0.0))  # sliding on its four bottom corners
        g = step_gradients(mech, z, None, TIGHT, wrt=("params",), params=("friction",))
        assert np.max(np.abs(g.P)) > 1e-3  # friction slows the box: a real derivative
        # relaxed only: four coplanar corners give four normal rows of rank three, so the
        # unrelaxed impulses are indeterminate and the step is not differentiable there
        # (radius is checked on the spheres of test_contact_models_and_pairs: here the corners
        # have radius 0, and the finite differences would need negative radii)
        errors = check_parameters(mech, z, None, ("friction", "mass", "gravity", "offset"), KAPPA)
        worst = max(errors, key=errors.get)
        assert errors[worst] < TOL, f"{model}: {worst} relative error {errors[worst]:.2e}"


@pytest.mark.parametrize("damper_form", ["midpoint", "implicit"])
def test_parameters_joints(damper_form):
    """Springs, dampers, masses, inertias and gravity of a jointed chain, in both damper forms."""
    mech = M.twister(3, "revolute", gravity=(0, 0, -9.81), spring=2.0, damper=0.5, damper_form=damper_form)
    z = M.random_state(mech, seed=5)
    u = np.array([0.2, -0.1, 0.3, 0.1, 0.0, 0.2, -0.3, 0.1][: mech.nu])
    errors = check_parameters(mech, z, u, ("mass", "inertia", "gravity", "spring", "damper"), None)
    worst = max(errors, key=errors.get)
    assert errors[worst] < TOL, f"{worst} relative error {errors[worst]:.2e}"
    err = check_state_and_input(mech, z, u, None, directions=3)
    assert err < TOL, f"state and input: relative error {err:.2e}"


# ------------------------------------------------------------ relaxation (smoothness control)
def test_relaxed_gradients_sit_on_the_central_path():
    mech = M.ball(model="nonlinear", mu=0.5)
    z = state_after(mech, 1.0, dojo.minimal_to_maximal(mech, np.array([0, 0, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0.0])))
    stiff = step_gradients(mech, z, None, TIGHT).A
    gaps = []
    for kappa in (1e-2, 1e-4, 1e-6, 1e-8):
        g = step_gradients(mech, z, None, TIGHT, kappa=kappa)
        assert g.kappa == pytest.approx(kappa, rel=1e-6)
        gaps.append(np.max(np.abs(g.A - stiff)))
    # smoothing: a resting box pushed down is pushed back; on the central path the
    # contact is soft (a spring of stiffness ~ gamma^2 / kappa), so the bias grows with
    # kappa and vanishes as kappa -> 0
    assert all(a > b for a, b in zip(gaps, gaps[1:])), gaps
    assert gaps[0] > 1.0 and gaps[-1] < 0.05 and gaps[-2] > 10 * gaps[-1], gaps


# ------------------------------------------------------------ minimal coordinates, cartpole
def cartpole_continuous(mech):
    """Textbook linearisation of the cart-pole at upright, state per joint [y, y_dot, theta, theta_dot].

    M(q) = [[M + m, -m l cos(th)], [-m l cos(th), m l^2 + I]], V = m g l cos(th), generalised forces
    (F, tau); at th = 0: M0 q_dd = [0, m g l th] + [F, tau].
    """
    big, m = mech.mass
    l = 0.5
    inertia = mech.inertia[1][0, 0]  # about the hinge axis x, at the centre of mass
    g = 9.81
    m0 = np.array([[big + m, -m * l], [-m * l, m * l * l + inertia]])
    m0inv = np.linalg.inv(m0)
    stiffness = np.array([[0.0, 0.0], [0.0, m * g * l]])
    acc = m0inv @ stiffness
    a = np.zeros((4, 4))
    a[0, 1] = a[2, 3] = 1.0
    a[1, [0, 2]] = acc[0]
    a[3, [0, 2]] = acc[1]
    b = np.zeros((4, 2))
    b[1] = m0inv[0]
    b[3] = m0inv[1]
    return a, b


def test_cartpole_minimal_gradients_match_the_textbook_linearisation():
    errors = []
    for h in (0.01, 0.001):
        mech = dojo.load_scene("cartpole", overrides={"timestep": h})
        y = np.zeros(4)
        am, bm = dojo.minimal_gradients(mech, y, np.zeros(2), TIGHT)
        ac, bc = cartpole_continuous(mech)
        # the discrete map is I + h A_c + O(h^2); B = h B_c + O(h^2)
        errors.append((np.max(np.abs((am - np.eye(4)) / h - ac)), np.max(np.abs(bm / h - bc))))
        assert errors[-1][0] < 0.05 * np.max(np.abs(ac)) and errors[-1][1] < 0.05 * np.max(np.abs(bc)), errors
    # first order in h: ten times smaller h, about ten times smaller difference
    assert errors[1][0] < 0.2 * errors[0][0]
    assert errors[1][1] < 0.2 * errors[0][1]


def test_cartpole_minimal_gradients_against_finite_differences():
    mech = dojo.load_scene("cartpole")
    y = np.array([0.1, -0.2, 0.4, 0.3])
    u = np.array([0.5, -0.2])
    am, bm = dojo.minimal_gradients(mech, y, u, TIGHT)

    def f(yy, uu):
        return maximal_to_minimal(mech, step(mech, minimal_to_maximal(mech, yy), uu, TIGHT))

    e = 1e-6
    numeric_a = np.column_stack([(f(y + e * d, u) - f(y - e * d, u)) / (2 * e) for d in np.eye(4)])
    numeric_b = np.column_stack([(f(y, u + e * d) - f(y, u - e * d)) / (2 * e) for d in np.eye(2)])
    assert relative_error(am, numeric_a) < 1e-6
    assert relative_error(bm, numeric_b) < 1e-6


# The minimal Jacobians come from one core call that solves only the minimal directions
# (dr/dz2 dz/dy, 2 nf right-hand sides) and maps the solved columns; the maximal ones solve
# all 12 nb and are mapped here. The same linear algebra on other columns: rounding apart.
MINIMAL_VS_MAXIMAL_TOL = 1e-9


@pytest.mark.parametrize("case", ["twister-spherical", "limited-pendulum-relaxed"])
def test_minimal_gradients_are_the_maximal_ones_through_the_maps(case):
    """A_min = dy'/dz' A dz/dy, B_min = dy'/dz' B, P_min = dy'/dz' P, with the maps' Jacobians
    and the maximal gradients taken separately (relaxed: at the relaxed step's result)."""
    from dojo_cli.simulation.gradients import (
        maximal_to_minimal_jacobian,
        minimal_step_gradients,
        minimal_to_maximal_jacobian,
    )

    if case == "twister-spherical":
        mech, kappa, kinds = M.twister(4, "spherical", gravity=(0, 0, -9.81), spring=0.3, damper=0.2), None, ("mass",)
        y = M.random_minimal_state(mech, np.random.default_rng(2), coord_scale=0.6, rate_scale=1.0)
    else:  # resting against its lower limit: the limit's slack and impulse in the solve
        mech, kappa, kinds = M.limited_pendulum(), KAPPA, ("damper",)
        y = np.array([np.pi / 4 + 1e-3, -0.5])
    u = np.random.default_rng(3).standard_normal(mech.nu)
    wrt = ("state", "input", "params")
    g_min = minimal_step_gradients(mech, y, u, TIGHT, wrt=wrt, params=kinds, kappa=kappa)
    z = minimal_to_maximal(mech, y)
    g_max = step_gradients(mech, z, u, TIGHT, wrt=wrt, params=kinds, kappa=kappa)
    O = maximal_to_minimal_jacobian(mech, g_max.next_state)
    S = minimal_to_maximal_jacobian(mech, y)
    for name, got, want in (("A", g_min.A, O @ g_max.A @ S), ("B", g_min.B, O @ g_max.B), ("P", g_min.P, O @ g_max.P),
                            ("next state", g_min.next_state, maximal_to_minimal(mech, g_max.next_state))):
        err = relative_error(got, want)
        assert err < MINIMAL_VS_MAXIMAL_TOL, f"{case}: {name} differs by {err:.2e}"
    assert g_min.result.status == g_max.result.status and g_min.result.iterations == g_max.result.iterations
    assert np.array_equal(g_min.result.w, g_max.result.w), "the solver's solution (before any relaxation)"
    assert g_min.kappa == pytest.approx(g_max.kappa, rel=1e-12)


def test_lqr_on_minimal_gradients_balances_the_cartpole():
    """Discrete LQR on (A_min, B_min) at upright, cart force only, closes the loop in simulation."""
    mech = dojo.load_scene("cartpole")
    am, bm = dojo.minimal_gradients(mech, np.zeros(4), np.zeros(2), TIGHT)
    b = bm[:, :1]
    q, r = np.diag([10.0, 1.0, 100.0, 1.0]), np.array([[0.1]])
    p = scipy.linalg.solve_discrete_are(am, b, q, r)
    gain = np.linalg.solve(r + b.T @ p @ b, b.T @ p @ am)

    def run(control: bool):
        z = minimal_to_maximal(mech, np.array([0.0, 0.0, 0.2, 0.0]))  # 0.2 rad from upright
        for _ in range(800):  # 8 s
            y = maximal_to_minimal(mech, z)
            y[2] = (y[2] + np.pi) % (2 * np.pi) - np.pi
            u = np.array([-(gain @ y)[0], 0.0]) if control else np.zeros(2)
            z = step(mech, z, u)
        y = maximal_to_minimal(mech, z)
        y[2] = (y[2] + np.pi) % (2 * np.pi) - np.pi
        return y

    balanced = run(True)
    assert abs(balanced[2]) < 1e-3 and abs(balanced[0]) < 1e-2, balanced
    fallen = run(False)
    assert abs(fallen[2]) > 0.5  # without the controller it falls: the test can fail


# ------------------------------------------------------------ system identification
def test_gradient_fit_recovers_friction_and_mass():
    """Gauss-Newton on a pushed, sliding block: trajectory sensitivities from A and P."""
    truth = {"bodies.box.mass": 1.3, "contacts.corner_pm.friction": 0.45, "contacts.corner_mm.friction": 0.45}

    def block(mass, mu):
        mech = dojo.load_scene("box2d")
        labels = ["bodies.box.mass"] + [f"contacts.{c.name}.friction" for c in mech.contacts]
        return with_parameters(mech, labels, [mass] + [mu] * len(mech.contacts))

    def pushes(k):
        return np.array([12.0 + 6.0 * np.sin(0.3 * k), 0.0, 0.0])  # along y, always above mu m g

    def rollout(mech, z0, steps, with_grad):
        """States and d(state)/d(mass, mu) by the chain rule dz_{k+1} = A dz_k + P."""
        labels = ["bodies.box.mass"] + [f"contacts.{c.name}.friction" for c in mech.contacts]
        z, dz = z0, np.zeros((12, 2))
        states, sens = [], []
        for k in range(steps):
            if with_grad:
                g = step_gradients(mech, z, pushes(k), TIGHT, wrt=("state", "params"), params=("mass", "friction"))
                p = np.column_stack([g.P[:, 0], g.P[:, 1:].sum(axis=1)])  # one shared mu
                dz = g.A @ dz + p
                z = g.next_state
            else:
                z = step(mech, z, pushes(k), TIGHT)
            states.append(z.reshape(13)[[1, 4]])  # y and v_y
            sens.append(dz[[1, 4]])
        assert labels[0] == "bodies.box.mass"
        return np.array(states), np.array(sens)

    rest = block(1.0, 0.5)
    z0 = state_after(rest, 1.5)  # settled on a face
    steps = 40
    data, _ = rollout(block(1.3, 0.45), z0, steps, False)
    theta = np.array([1.0, 0.3])
    for _ in range(8):
        pred, sens = rollout(block(*theta), z0, steps, True)
        r = (pred - data).reshape(-1)
        jac = sens.reshape(-1, 2)
        theta = theta - np.linalg.lstsq(jac, r, rcond=None)[0]
    assert theta[0] == pytest.approx(truth["bodies.box.mass"], rel=0.01)
    assert theta[1] == pytest.approx(truth["contacts.corner_pm.friction"], rel=0.01)
