"""Forward and reverse mode through whole rollouts (dojo.rollout_jvp, dojo.rollout_vjp).

Three independent checks:
- finite differences of the rollout itself (four-point central stencil) along random
  directions of the initial state, the inputs and the parameters: smooth scenes to
  ROLLOUT_FD_TOL; contact scenes relaxed (kappa: every step moved onto the central path
  and the run continued from it, a smooth map, so the finite differences of that same
  relaxed run converge);
- the chain rule by hand: the per-step Jacobians A_k, B_k of dojo.step_gradients at each
  state of the run, multiplied out, must give the same products (no finite-difference
  noise, so a tight tolerance);
- duality: <vjp(c), d> = <c, jvp(d)> for random c, d.
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.analysis.gradient_check import four_point, perturb_tangent, tangent_difference
from dojo_cli.model.parameters import parameter_labels, parameter_values, with_parameters
from dojo_cli.simulation.rollout_gradients import raw_from_tangent_cotangent, tangent_from_raw_cotangent
from tests import mechanisms as M

# From Dojo's start: the products are compared with dojo.step_gradients at each state, which is
# stateless (every step from Dojo's point); a warm-started run's steps are other solutions to
# the same tolerance, whose unrelaxed Jacobians (kappa None) differ by ~1e-8 at the box's contacts
TIGHT = dojo.SolverOptions(rtol=1e-10, btol=1e-10, warm_start=False)
FD = 1e-6  # four-point stencil step: truncation ~e^4, rounding ~1e-16 / e
ROLLOUT_FD_TOL = 1e-6  # the bar for smooth scenes (relative, max(1, |FD|))
RELAXED_FD_TOL = 1e-5  # relaxed contact runs: the relaxation's own Newton tolerance (kRelaxTolerance) amplified over the run
KAPPA = 1e-3
CHAIN_TOL = 1e-9  # the same products formed two ways (floating point over T steps)
DUALITY_TOL = 1e-10


def relative_error(analytic, numeric) -> float:
    analytic, numeric = np.asarray(analytic), np.asarray(numeric)
    return float(np.max(np.abs(analytic - numeric)) / max(1.0, np.max(np.abs(numeric))))


def run_states(mech, z0, U, kappa=None):
    """(T, 13 nb) the states of the rollout (the same forward pass the derivatives take)."""
    return dojo.rollout_jvp(mech, z0, U, opts=TIGHT, kappa=kappa).states


def differences(mech, base, states):
    return np.stack([tangent_difference(mech.nb, a, b) for a, b in zip(base, states)])


def scene_case(name, steps, seconds=0.0):
    mech = dojo.load_scene(name)
    z0 = dojo.initial_state(mech)
    if seconds:
        z0 = dojo.simulate(mech, steps=int(round(seconds / mech.timestep)), z0=z0, opts=TIGHT).state(-1)
    rng = np.random.default_rng(1)
    U = 0.1 * rng.standard_normal((steps, mech.nu))
    return mech, z0, U


def check_against_finite_differences(mech, z0, U, kappa, tol, params=(), seed=0):
    """JVP and VJP against the four-point difference of the rollout along one random
    direction of (z0, U, theta); the loss for the VJP is <c, states> with random c."""
    rng = np.random.default_rng(seed)
    T, nt = U.shape[0], 12 * mech.nb
    dz0 = rng.standard_normal(nt)
    dU = rng.standard_normal(U.shape)
    labels = parameter_labels(mech, params) if params else []
    values = parameter_values(mech, labels) if params else np.zeros(0)
    dp = rng.standard_normal(len(labels))
    base = run_states(mech, z0, U, kappa)

    def moved(e):
        other = with_parameters(mech, labels, values + e * dp) if labels else mech
        return differences(mech, base, run_states(other, perturb_tangent(mech.nb, z0, e * dz0), U + e * dU, kappa))

    numeric = four_point(moved, FD)
    jvp = dojo.rollout_jvp(mech, z0, U, dz0, dU, dp, params=params, opts=TIGHT, kappa=kappa)
    c = rng.standard_normal((T, nt))
    vjp = dojo.rollout_vjp(mech, z0, U, c, params=params, opts=TIGHT, kappa=kappa)
    directional = vjp.z0 @ dz0 + np.sum(vjp.inputs * dU) + (vjp.params @ dp if labels else 0.0)
    return relative_error(jvp.tangents, numeric), abs(directional - np.sum(c * numeric)) / max(1.0, abs(np.sum(c * numeric)))


@pytest.mark.parametrize("name,steps", [("pendulum", 40), ("double_pendulum", 30), ("cartpole", 30)])
def test_smooth_scenes_against_finite_differences(name, steps):
    mech, z0, U = scene_case(name, steps)
    params = ("mass", "damper") if name == "cartpole" else ("mass",)
    jvp_err, vjp_err = check_against_finite_differences(mech, z0, U, None, ROLLOUT_FD_TOL, params=params)
    assert jvp_err < ROLLOUT_FD_TOL, f"{name}: JVP vs finite differences of the rollout {jvp_err:.2e}"
    assert vjp_err < ROLLOUT_FD_TOL, f"{name}: VJP vs finite differences of the rollout {vjp_err:.2e}"


def test_contact_rollout_relaxed_against_finite_differences():
    """The box toss through its landing (contacts switching on), relaxed at KAPPA."""
    mech, z0, U = scene_case("box", 40, seconds=0.3)
    jvp_err, vjp_err = check_against_finite_differences(mech, z0, U, KAPPA, RELAXED_FD_TOL, params=("friction",))
    assert jvp_err < RELAXED_FD_TOL, f"box (kappa {KAPPA}): JVP vs finite differences {jvp_err:.2e}"
    assert vjp_err < RELAXED_FD_TOL, f"box (kappa {KAPPA}): VJP vs finite differences {vjp_err:.2e}"


@pytest.mark.parametrize("name,kappa", [("box", None), ("box", KAPPA), ("npendulum", None)])
def test_products_equal_the_step_jacobians_chained(name, kappa):
    """The VJP and JVP of a run equal the per-step A_k, B_k (dojo.step_gradients at each
    state of the same run) multiplied out: the same derivative formed two ways."""
    mech, z0, U = scene_case(name, 15, seconds=1.0 if name == "box" else 0.0)
    rng = np.random.default_rng(2)
    T, nt = U.shape[0], 12 * mech.nb
    jvp_zero = dojo.rollout_jvp(mech, z0, U, opts=TIGHT, kappa=kappa)
    Z = np.concatenate([z0[None], jvp_zero.states])
    As, Bs = [], []
    for k in range(T):
        g = dojo.step_gradients(mech, Z[k], U[k], TIGHT, kappa=kappa)
        assert np.allclose(g.next_state, Z[k + 1], atol=1e-9), f"step {k}: the run's state is not the step's"
        As.append(g.A)
        Bs.append(g.B)
    dz0, dU = rng.standard_normal(nt), rng.standard_normal(U.shape)
    dz, by_hand = dz0, []
    for k in range(T):
        dz = As[k] @ dz + Bs[k] @ dU[k]
        by_hand.append(dz)
    jvp = dojo.rollout_jvp(mech, z0, U, dz0, dU, opts=TIGHT, kappa=kappa)
    err = relative_error(jvp.tangents, np.array(by_hand))
    assert err < CHAIN_TOL, f"{name}: JVP vs chained A_k, B_k {err:.2e}"
    c = rng.standard_normal((T, nt))
    bar, ubar = c[-1].copy(), np.zeros_like(U)
    for k in range(T - 1, -1, -1):
        ubar[k] = Bs[k].T @ bar
        bar = As[k].T @ bar + (c[k - 1] if k > 0 else 0.0)
    vjp = dojo.rollout_vjp(mech, z0, U, c, opts=TIGHT, kappa=kappa)
    assert relative_error(vjp.z0, bar) < CHAIN_TOL, f"{name}: VJP z0 vs chained A_k^T {relative_error(vjp.z0, bar):.2e}"
    assert relative_error(vjp.inputs, ubar) < CHAIN_TOL, f"{name}: VJP inputs vs chained B_k^T"


def chained_products(mech, z0, U, dz0, dU, c):
    """(JVP tangents, VJP z0 and input cotangents) by hand: the per-step A_k, B_k of
    dojo.step_gradients (twelve-wide dual numbers) at each state of the run, multiplied out."""
    Z = np.concatenate([z0[None], dojo.rollout_jvp(mech, z0, U, opts=TIGHT).states])
    steps = [dojo.step_gradients(mech, Z[k], U[k], TIGHT) for k in range(U.shape[0])]
    dz, tangents = dz0, []
    for g, du in zip(steps, dU):
        dz = g.A @ dz + g.B @ du
        tangents.append(dz)
    bar, ubar = c[-1].copy(), np.zeros_like(U)
    for k in range(len(steps) - 1, -1, -1):
        ubar[k] = steps[k].B.T @ bar
        bar = steps[k].A.T @ bar + (c[k - 1] if k > 0 else 0.0)
    return np.array(tangents), bar, ubar


def check_joint_terms(mech, z0, T, seed, label, inputs=True):
    """JVP and VJP of a run of T random inputs (or zero) against the step Jacobians chained."""
    rng = np.random.default_rng(seed)
    nt = 12 * mech.nb
    U = rng.standard_normal((T, mech.nu)) if inputs else np.zeros((T, mech.nu))
    dz0, dU, c = rng.standard_normal(nt), rng.standard_normal(U.shape), rng.standard_normal((T, nt))
    tangents, bar, ubar = chained_products(mech, z0, U, dz0, dU, c)
    jvp = dojo.rollout_jvp(mech, z0, U, dz0, dU, opts=TIGHT)
    vjp = dojo.rollout_vjp(mech, z0, U, c, opts=TIGHT)
    err = relative_error(jvp.tangents, tangents)
    assert err < CHAIN_TOL, f"{label}: JVP vs chained A_k, B_k {err:.2e}"
    err = relative_error(vjp.z0, bar)
    assert err < CHAIN_TOL, f"{label}: VJP z0 vs chained A_k^T {err:.2e}"
    err = relative_error(vjp.inputs, ubar)
    assert err < CHAIN_TOL, f"{label}: VJP inputs vs chained B_k^T {err:.2e}"


@pytest.mark.parametrize("lock", [False, True])
def test_products_of_every_joint_term_equal_the_step_jacobians_chained(lock):
    """The forward mode takes the joints' impulse maps along its direction (one dual number,
    gradients.cpp subtract_joint_direction), the reverse mode in one backward sweep
    (subtract_joint_transpose), the step Jacobians A_k, B_k entry by entry (twelve-wide
    duals): a twister of spherical joints with springs, midpoint dampers and inputs, and
    with one joint locked (its lock rows' reference at z2)."""
    import dataclasses

    from dojo_cli.model.mechanism import Mechanism

    mech = M.twister(3, "spherical", gravity=(0, 0, -9.81), spring=0.4, damper=0.3)
    if lock:
        joints = [dataclasses.replace(j, locked=j.name == "joint2") for j in mech.joints]
        mech = Mechanism(list(mech.bodies), joints, mech.timestep, mech.gravity, name="twister-locked")
    z0 = M.random_state(mech, seed=5, coord_scale=0.5, rate_scale=1.0)
    check_joint_terms(mech, z0, 8, 4, f"locked {lock}")


# Every joint type's rows (translational, Dojo's quaternion rows, the universal and gimbal
# joints' angles), with springs, midpoint dampers and inputs on every free coordinate.
JOINT_TYPES = ["prismatic", "planar", "revolute", "cylindrical", "orbital", "spherical", "cylindrical_free",
               "universal", "gimbal"]


@pytest.mark.parametrize("terms", ["springs", "springs+inputs", "dampers+inputs"])
@pytest.mark.parametrize("joint_type", JOINT_TYPES)
def test_products_of_each_joint_type_equal_the_step_jacobians_chained(joint_type, terms):
    """Two links on a floating base, a tilted joint of each type between them (off its
    axes' coordinate planes, at a random state): the JVP and VJP of a short run against the
    step Jacobians chained. With springs the joint's terms are a gradient (the reverse
    mode's forward pass, gradients.cpp joint_terms_are_gradient), with random inputs too
    but for a quaternion joint's rotational input rows (add_rotational_input_adjoint); with
    midpoint dampers they are not (the reverse mode's tape)."""
    from dojo_cli.model.joint_types import CONSTRAINED, JointType
    from dojo_cli.model.mechanism import Joint, Mechanism

    axes = np.array([[0.0, 0.6, 0.8], [1.0, 0.0, 0.0], [0.0, 0.8, -0.6]])
    links = [M.box_body(f"link{i}", (1.0, 0.15, 0.1)) for i in range(2)]
    angle = {"universal": {"axes": axes[:2]}, "gimbal": {"axes": axes}}.get(joint_type, {"axis": axes[0]})
    nf = 6 - sum(CONSTRAINED[JointType(joint_type)])
    joint = Joint("joint1", joint_type, 0, 1, parent_vertex=0.5 * M.X, child_vertex=-0.5 * M.X,
                  spring=np.full(nf, 0.4), damper=np.full(nf, 0.3 if terms.startswith("dampers") else 0.0), **angle)
    mech = Mechanism(links, [Joint("base", "floating", M.ORIGIN, 0), joint], 0.01, (0, 0, -9.81), name=joint_type)
    z0 = M.random_state(mech, seed=6, coord_scale=0.5, rate_scale=1.0)
    check_joint_terms(mech, z0, 3, 7, f"{joint_type} with {terms}", inputs=terms.endswith("inputs"))


@pytest.mark.parametrize("name,kappa,seconds,inputs", [("box", KAPPA, 0.5, True), ("npendulum", None, 0.0, True),
                                                       ("npendulum", None, 0.0, False)])
def test_jvp_and_vjp_are_adjoint(name, kappa, seconds, inputs):
    """<c, J d> = <J^T c, d>: the contact box relaxed, and the chain under random inputs
    and none (its joints' terms a gradient, with and without the revolute joints' input
    rows: the reverse mode's forward pass)."""
    mech, z0, U = scene_case(name, 20, seconds=seconds)
    if not inputs:
        U = np.zeros_like(U)
    rng = np.random.default_rng(3)
    nt = 12 * mech.nb
    dz0, dU, c = rng.standard_normal(nt), rng.standard_normal(U.shape), rng.standard_normal((U.shape[0], nt))
    jvp = dojo.rollout_jvp(mech, z0, U, dz0, dU, opts=TIGHT, kappa=kappa)
    vjp = dojo.rollout_vjp(mech, z0, U, c, opts=TIGHT, kappa=kappa)
    lhs, rhs = np.sum(c * jvp.tangents), vjp.z0 @ dz0 + np.sum(vjp.inputs * dU)
    assert abs(lhs - rhs) < DUALITY_TOL * max(1.0, abs(lhs)), f"<c, J d> = {lhs:.12g}, <J^T c, d> = {rhs:.12g}"


def test_raw_cotangents_round_trip_on_the_unit_sphere():
    """A gradient with respect to raw states, converted to tangent coordinates and back, keeps
    its tangent part and loses only the component along q (which no step sees)."""
    mech = dojo.load_scene("box")
    rng = np.random.default_rng(4)
    z = dojo.initial_state(mech)
    z[6:10] = rng.standard_normal(4)
    z[6:10] /= np.linalg.norm(z[6:10])
    g = rng.standard_normal(13)
    back = raw_from_tangent_cotangent(mech, z, tangent_from_raw_cotangent(mech, z, g))
    q = z[6:10]
    radial = g[6:10] - q * (q @ g[6:10])
    assert np.allclose(back[6:10], radial, atol=1e-14), "the quaternion's gradient projected on the sphere's tangent"
    assert np.allclose(back[[0, 1, 2, 3, 4, 5, 10, 11, 12]], g[[0, 1, 2, 3, 4, 5, 10, 11, 12]])


def test_bad_arguments_and_failed_steps_raise():
    mech = dojo.load_scene("pendulum")
    z0 = dojo.initial_state(mech)
    with pytest.raises(ValueError, match="U: expected"):
        dojo.rollout_vjp(mech, z0, np.zeros((3, mech.nu + 1)), np.zeros((3, 12 * mech.nb)))
    with pytest.raises(ValueError, match="unknown parameter kind"):
        dojo.rollout_jvp(mech, z0, np.zeros((3, mech.nu)), params=("nope",))
    with pytest.raises(dojo.SolverError, match="step 0 did not converge"):
        dojo.rollout_vjp(mech, z0, np.full((3, mech.nu), 1e12), np.zeros((3, 12 * mech.nb)))


# The same products through two factorisations of dr/dw, each solve refined to rounding:
# measured <= 4e-15 relative over the toss (its tumble multiplies the cotangents by ~5e3).
CLOSED_FORM_TOL = 1e-11


def test_closed_form_contact_elimination_equals_the_block_lu():
    """The box's whole toss at the default (warm-started) solutions, which the gradients take
    with the contacts eliminated in closed form where their growth allows (gradients.cpp,
    factor_at_solution; resting corners at 1.8e8 to 3e13 times their slack): the VJP (state,
    inputs, mass and friction), the JVP and one step's A, B equal those of the robust order's
    block LU (Data.gradients_condensed False, the path before), and the closed form ran; with no
    refinement sweep allowed every solve falls back to the block LU mid-way (the path a solve
    that does not reach the block LU's backward error takes), with the same results."""
    from dojo_cli import _core
    from dojo_cli.simulation.step import core_options

    mech = dojo.load_scene("box")
    z0 = dojo.initial_state(mech)
    opts = core_options(dojo.default_options(mech))
    T, nt = 500, 12 * mech.nb
    rng = np.random.default_rng(5)
    U, c = 0.1 * rng.standard_normal((T, mech.nu)), rng.standard_normal((T, nt))
    dz0, dU = rng.standard_normal(nt), rng.standard_normal((T, mech.nu))
    kinds = [0, 5]  # mass, friction (dojo_cli.model.parameters.PARAMETER_KINDS)
    # (Data.gradients_condensed, its refinement sweeps, whether the last factorisation is the closed form)
    variants = {"closed form": (True, None, True), "fallback": (True, 0, False), "block LU": (False, None, False)}

    def data(condensed, sweeps):
        d = _core.Data(mech.core)
        d.gradients_condensed = condensed
        if sweeps is not None:
            d.gradients_condensed_sweeps = sweeps
        return d

    runs = {}
    for name, (condensed, sweeps, closed_form) in variants.items():
        d = data(condensed, sweeps)
        vjp = _core.rollout_vjp(mech.core, d, z0, T, U, np.zeros(mech.nl), opts, -1.0, kinds, c)
        assert vjp["steps"] == T and not np.any(vjp["status"]), "the toss did not converge"
        # the last backward step is step 0, from the toss's start
        assert d.lu_is_condensed == closed_form, f"{name}: closed form {d.lu_is_condensed}"
        d = data(condensed, sweeps)
        jvp = _core.rollout_jvp(mech.core, d, z0, T, U, np.zeros(mech.nl), opts, -1.0, [], dz0, dU, None)
        d = data(condensed, sweeps)
        assert _core.step(mech.core, d, np.asarray(vjp["states"][299]), None, None, None, None, opts) == 0
        A, B, _, _ = _core.gradients(mech.core, d)
        assert d.lu_is_condensed == closed_form, f"{name}: the resting step's A, B: closed form {d.lu_is_condensed}"
        runs[name] = (vjp["z0"], vjp["inputs"], vjp["params"], jvp["tangents"], A, B)
    products = ("VJP z0", "VJP inputs", "VJP mass and friction", "JVP", "A", "B")
    for name in ("closed form", "fallback"):
        for product, got, ref in zip(products, runs[name], runs["block LU"]):
            err = np.max(np.abs(np.asarray(got) - ref)) / np.max(np.abs(ref))
            assert err < CLOSED_FORM_TOL, f"{product}: {name} vs block LU {err:.2e}"
