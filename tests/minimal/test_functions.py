"""PinnZoo's function checks (other_systems_notes.md 2.7) on our functions: derivatives
against central finite differences with PinnZoo's tolerances, E_T E = I, state_error and
apply_dx inverse to each other, kinematics consistency, and the order conversions."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.math.quaternion import matrix_from_quaternion
from tests.minimal.scenes import MINIMAL_JOINTS, SKYDY_SUBSETS, UNIVERSAL_JOINTS

# Models covering every joint kind: revolute and prismatic (the zoo), planar (box2d),
# spherical and floating (spherical_chain), a floating tree with fixed feet (quadruped_feet),
# the swing joints (orbital and its variants) and translations measured in the predecessor
# frame (cylindrical_free, planar_free), whose motion subspaces turn with q (MINIMAL_JOINTS),
# the built-in orbital chain on a floating base, and skydy's subsets with a rotation axis of
# their own (a revolute with translations across its axis, in the predecessor frame), and
# universal and gimbal joints (revolute tree joints in sequence through massless frames).
SCENES = ["pinnzoo_double_cartpole", "pinnzoo_rigid_body", "box2d", "spherical_chain", "quadruped_feet",
          MINIMAL_JOINTS, "orbital_chain", SKYDY_SUBSETS, UNIVERSAL_JOINTS]
# PinnZoo's tolerances (other_systems_notes.md 2.7), relative here to each quantity's scale
# (PinnZoo's are absolute on its own models, whose derivatives are of order one).
FD_TOL = {"forward_x": 5e-5, "forward_tau": 1e-8, "dynamics_x": 5e-5, "dynamics_tau": 5e-10,
          "inverse_x": 1e-4, "inverse_vdot": 1e-4, "jvp": 1e-6, "kinematics": 1e-6,
          "kinematics_velocity_jacobian": 2e-6, "force_jacobian": 5e-5, "error_jacobian": 1e-7}
EXACT = 1e-12  # identities that hold to rounding (E_T E = I, round trips, J E v)
FD_STEP = 1e-5  # central differences (fourth-order, five points): error ~ 1e-20 / h + h^4


def _fd(f, x, h=FD_STEP):
    """d f / dx (m, n) by the five-point central difference."""
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((-f(x + 2 * e) + 8 * f(x + e) - 8 * f(x - e) + f(x - 2 * e)) / (12 * h))
    return np.column_stack(cols)


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(b), initial=0.0)))


@functools.lru_cache(maxsize=None)
def _model(scene):
    return minimal.build_model(dojo.load_scene(scene))


def _case(scene, seed=3):
    model = _model(scene)
    rng = np.random.default_rng(seed)
    return model, minimal.randn_state(model, rng), rng.standard_normal(model.nv), rng


@pytest.mark.parametrize("scene", SCENES)
def test_dynamics_derivatives_match_finite_differences(scene):
    model, x, tau, rng = _case(scene)
    nv = model.nv
    dx, dtau = minimal.forward_dynamics_deriv(model, x, tau)
    errors = {
        "forward_x": _rel(dx, _fd(lambda y: minimal.forward_dynamics(model, y, tau), x)),
        "forward_tau": _rel(dtau, _fd(lambda t: minimal.forward_dynamics(model, x, t), tau)),
    }
    Dx, Dtau = minimal.dynamics_deriv(model, x, tau)
    errors["dynamics_x"] = _rel(Dx, _fd(lambda y: minimal.dynamics(model, y, tau), x))
    # linear in tau: the stencil is exact at any step, which sets only the rounding floor
    # (~ eps |vdot| cond(M) / step); a larger one keeps it below 5e-10 for the light links
    errors["dynamics_tau"] = _rel(Dtau, _fd(lambda t: minimal.dynamics(model, x, t), tau, h=1e-2))
    vdot = rng.standard_normal(nv)
    ix, ia = minimal.inverse_dynamics_deriv(model, x, vdot)
    errors["inverse_x"] = _rel(ix, _fd(lambda y: minimal.inverse_dynamics(model, y, vdot), x))
    errors["inverse_vdot"] = _rel(ia, _fd(lambda a: minimal.inverse_dynamics(model, x, a), vdot))
    bad = {k: f"{e:.1e}" for k, e in errors.items() if e > FD_TOL[k]}
    assert not bad, f"{scene}: derivative errors above PinnZoo's tolerances: {bad}"
    # dynamics = [v; forward_dynamics] and M = d tau / d vdot, M^-1 = d vdot / d tau
    assert np.allclose(minimal.dynamics(model, x, tau), np.concatenate([x[model.nq:], minimal.forward_dynamics(model, x, tau)]),
                       rtol=0, atol=EXACT)
    M = minimal.M_func(model, x)
    assert _rel(ia, M) < EXACT and _rel(dtau @ M, np.eye(nv)) < 1e-10
    assert np.all(np.linalg.eigvalsh(M) > 0), "M is positive definite"


@pytest.mark.parametrize("scene", SCENES)
def test_velocity_kinematics(scene):
    model, x, _, rng = _case(scene)
    q = x[: model.nq]
    E, ET = minimal.velocity_kinematics(model, x), minimal.velocity_kinematics_T(model, x)
    assert _rel(ET @ E, np.eye(model.nv)) < EXACT, "E_T E = I"
    v, qd = rng.standard_normal(model.nv), rng.standard_normal(model.nq)
    assert _rel(minimal.velocity_kinematics_jvp_deriv(model, x, v),
                _fd(lambda y: minimal.velocity_kinematics(model, y) @ v, x)) < FD_TOL["jvp"]
    assert _rel(minimal.velocity_kinematics_T_jvp_deriv(model, x, qd),
                _fd(lambda y: minimal.velocity_kinematics_T(model, y) @ qd, x)) < FD_TOL["jvp"]
    # E maps the tangent velocity onto the configuration's rate: q(t + s) = apply_dx(x, s [v; 0])
    s = 1e-6
    step = np.concatenate([x[model.nq:], np.zeros(model.nv)])
    qdot = (minimal.apply_dx(model, x, s * step)[: model.nq] - minimal.apply_dx(model, x, -s * step)[: model.nq]) / (2 * s)
    assert _rel(qdot, E @ x[model.nq:]) < 1e-8, "q' = E(q) v"
    del q


@pytest.mark.parametrize("scene", SCENES)
def test_state_error_and_apply_dx(scene):
    model, x, _, rng = _case(scene)
    x2 = minimal.randn_state(model, rng)
    dx = 0.3 * rng.standard_normal(2 * model.nv)
    assert _rel(minimal.state_error(model, minimal.apply_dx(model, x, dx), x), dx) < EXACT
    assert _rel(minimal.apply_dx(model, x, minimal.state_error(model, x2, x)), x2) < EXACT
    zero = np.zeros(2 * model.nv)
    assert _rel(minimal.error_jacobian(model, x), _fd(lambda d: minimal.apply_dx(model, x, d), zero)) < FD_TOL["error_jacobian"]
    assert _rel(minimal.error_jacobian_T(model, x), _fd(lambda y: minimal.state_error(model, y, x), x)) < FD_TOL["error_jacobian"]


@pytest.mark.parametrize("scene", SCENES)
def test_kinematics(scene):
    model, x, _, rng = _case(scene)
    J = minimal.kinematics_jacobian(model, x)
    assert _rel(J, _fd(lambda y: minimal.kinematics(model, y), x)) < FD_TOL["kinematics"]
    E = minimal.velocity_kinematics(model, x)
    assert _rel(minimal.kinematics_velocity(model, x), J[:, : model.nq] @ E @ x[model.nq:]) < EXACT
    KV = minimal.kinematics_velocity_jacobian(model, x)
    assert _rel(KV, _fd(lambda y: minimal.kinematics_velocity(model, y), x)) < FD_TOL["kinematics_velocity_jacobian"]
    lam = rng.standard_normal(3 * len(model.kinematics_points))
    force = minimal.kinematics_force_jacobian(model, x, lam)
    jtl = _fd(lambda y: minimal.kinematics_velocity_jacobian(model, y)[:, model.nq:].T @ lam, x)
    assert _rel(force, jtl) < FD_TOL["force_jacobian"]
    R = minimal.kinematics_rotation(model, x)
    assert R.shape == (len(model.kinematics_points), 3, 3) and np.allclose(R @ R.transpose(0, 2, 1), np.eye(3))


def test_quaternion_helpers():
    rng = np.random.default_rng(0)
    q1, q2 = (minimal.axis_angle_to_quat(rng.standard_normal(3)) for _ in range(2))
    from dojo_cli.math.quaternion import multiply
    assert np.allclose(minimal.L_mult(q1) @ q2, multiply(q1, q2)) and np.allclose(minimal.R_mult(q2) @ q1, multiply(q1, q2))
    assert np.allclose(minimal.quat_to_rot(q1), matrix_from_quaternion(q1))
    assert np.allclose(minimal.rot_to_quat(minimal.quat_to_rot(q1)), q1 * np.sign(q1[0]))
    w = rng.standard_normal(3)
    assert np.allclose(minimal.quat_to_axis_angle(minimal.axis_angle_to_quat(w)), w) or np.linalg.norm(w) > np.pi
    assert np.allclose(minimal.skew(w) @ q1[1:], np.cross(w, q1[1:]))
    assert np.allclose(minimal.attitude_jacobian(q1), minimal.L_mult(q1)[:, 1:])


def test_zoo_matches_the_analytic_models():
    """PinnZoo's zoo: pendulum, cartpole and rigid body against their textbook equations."""
    g, eps = 9.81, 1e-8  # eps: the scenes' stand-in for a point mass's zero inertia
    m = _model("pinnzoo_pendulum")
    th, thd = 0.7, -0.4
    x = np.array([th, thd])
    assert np.allclose(minimal.M_func(m, x), [[1.0 + eps]], rtol=0, atol=EXACT)
    assert np.allclose(minimal.C_func(m, x), [-g * np.sin(th)], rtol=0, atol=EXACT)
    assert np.allclose(minimal.kinematics(m, x), [0.0, -np.sin(th), np.cos(th)], atol=EXACT)
    m = _model("pinnzoo_cartpole")
    y, th, yd, thd = 0.3, 0.7, 0.2, -0.4
    x = np.array([y, th, yd, thd])
    M = [[2.0, -np.cos(th)], [-np.cos(th), 1.0 + eps]]
    C = [np.sin(th) * thd**2, -g * np.sin(th)]
    assert np.allclose(minimal.M_func(m, x), M, rtol=0, atol=EXACT)
    assert np.allclose(minimal.C_func(m, x), C, rtol=0, atol=EXACT)
    assert m.kinematics_points == ["pole"]  # the leaf body: the tip mass
    assert np.allclose(minimal.kinematics(m, x), [0.0, y - np.sin(th), np.cos(th)], atol=EXACT)
    m = _model("pinnzoo_rigid_body")
    rng = np.random.default_rng(0)
    x = minimal.randn_state(m, rng)
    v, w = x[7:10], x[10:13]
    R = matrix_from_quaternion(x[3:7])
    assert np.allclose(minimal.M_func(m, x), np.eye(6), rtol=0, atol=EXACT)
    assert np.allclose(minimal.C_func(m, x), np.concatenate([np.cross(w, v) + R.T @ [0, 0, g], np.cross(w, w)]), atol=EXACT)
    assert m.config_names == ["base:x", "base:y", "base:z", "base:qw", "base:qx", "base:qy", "base:qz"]
    assert m.velocity_names == ["base:vx", "base:vy", "base:vz", "base:wx", "base:wy", "base:wz"]
    assert np.allclose(minimal.init_state(m), minimal.zero_state(m))


def test_init_state_is_the_scenes_initial_state():
    m = _model("double_pendulum")
    assert np.allclose(minimal.init_state(m), [0.7854, 0.5, 0.0, 0.0], atol=1e-12)
    m = _model("box2d")  # planar: [y, z, angle], velocities [vy, vz, w] in the body frame
    x = minimal.init_state(m)
    assert np.allclose(x[:3], [0.0, 1.0, 0.0], atol=1e-12) and np.allclose(x[3:], [1.0, 0.0, 3.0], atol=0.05)


@pytest.mark.parametrize("scene", ["quadruped_feet", "box2d", "spherical_chain"])
def test_change_order_round_trips(scene):
    model, x, tau, rng = _case(scene)
    minimal.register_order(model, "reversed", model.config_names[::-1], model.velocity_names[::-1])
    M = minimal.M_func(model, x)
    for order in ("pinocchio", "mujoco", "reversed"):
        for kind, vec in (("config", x[: model.nq]), ("velocity", x[model.nq:]), ("state", x),
                          ("error_state", rng.standard_normal(2 * model.nv)), ("torque", tau)):
            there = minimal.change_order(model, vec, "nominal", order, kind=kind, q=x[: model.nq])
            back = minimal.change_order(model, there, order, "nominal", kind=kind, q=x[: model.nq])
            assert _rel(back, vec) < EXACT, f"{order} {kind}"
        Mo = minimal.change_order(model, M, "nominal", order, kind="velocity", q=x[: model.nq])
        # a quadratic form is the same in every order: v^T M v
        vo = minimal.change_order(model, x[model.nq:], "nominal", order, kind="velocity", q=x[: model.nq])
        assert abs(vo @ Mo @ vo - x[model.nq:] @ M @ x[model.nq:]) < 1e-10


def test_change_order_conventions():
    model, x, _, _ = _case("pinnzoo_rigid_body")
    xp = minimal.change_order(model, x, "nominal", "pinocchio", kind="state")
    assert np.allclose(xp[3:7], np.concatenate([x[4:7], x[3:4]])), "Pinocchio: quaternion scalar last"
    xm = minimal.change_order(model, x, "nominal", "mujoco")  # nx = 13: a state, by its length
    R = matrix_from_quaternion(x[3:7] / np.linalg.norm(x[3:7]))
    assert np.allclose(xm[7:10], R @ x[7:10]) and np.allclose(xm[10:], x[10:]), "MuJoCo: linear velocity in the world"
    with pytest.raises(ValueError, match="needs the configuration"):
        minimal.change_order(model, x[7:], "nominal", "mujoco", kind="velocity")
    with pytest.raises(ValueError, match="permutation"):
        minimal.register_order(model, "bad", ["nope"], model.velocity_names)
    with pytest.raises(ValueError, match="unknown order"):
        minimal.change_order(model, x, "nominal", "drake")


def test_bad_input_is_a_clear_error():
    model, x, tau, _ = _case("pinnzoo_double_cartpole")
    with pytest.raises(ValueError, match="x: expected 6 entries, got 5"):
        minimal.M_func(model, x[:5])
    with pytest.raises(ValueError, match="tau: expected 3 entries"):
        minimal.forward_dynamics(model, x, tau[:2])
    with pytest.raises(dojo.SceneError, match="kinematics point 'nope'"):
        minimal.build_model(dojo.load_scene("pinnzoo_cartpole"), kinematics_points=["nope"])


def test_any_vector_form_gives_the_same_numbers():
    # The functions hand a 1-D array to the core as it is and let its argument convert a
    # strided or non-float one (dynamics._vec): the results must be those of the same numbers
    # as a contiguous float vector, and a list or a column gives them too.
    model, x, tau, _ = _case("spherical_chain")
    xi = np.round(4 * x)  # integers, exactly representable
    strided = np.zeros((x.size, 2))
    strided[:, 0] = x
    for args, same in [((strided[:, 0], tau), (x, tau)), ((x, np.repeat(tau, 2)[::2]), (x, tau)),
                       ((xi.astype(np.int64), tau.astype(np.float32)), (xi, tau.astype(np.float32).astype(float))),
                       ((list(x), tau.tolist()), (x, tau)), ((x[:, None], tau[None, :]), (x, tau))]:
        assert np.array_equal(minimal.M_func(model, args[0]), minimal.M_func(model, same[0]))
        assert np.array_equal(minimal.C_func(model, args[0]), minimal.C_func(model, same[0]))
        assert np.array_equal(minimal.forward_dynamics(model, *args), minimal.forward_dynamics(model, *same))
        assert np.array_equal(minimal.inverse_dynamics(model, *args), minimal.inverse_dynamics(model, *same))
