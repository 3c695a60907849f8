"""Locked joints in the minimal-coordinate layer (Drake's Lock; docs/minimal.md "Locked joints").

A locked tree joint is welded at its coordinates: the core's ABA solves the reduced system
M_ff vdot_f = tau_f - C_f(q, v) with the locked velocities read as zero and vdot_l = 0, and
the derivatives are those of that solve. The checks:
1. a double pendulum with its elbow locked, run by the rk4 integrator (``integrator: rk4``),
   moves as an independent single compound pendulum (inertia about the shoulder by hand,
   integrated by scipy) and as the variational integrator's locked run (to its second-order
   accuracy, checked by halving the step); the elbow angle stays constant to round-off;
2. forward dynamics, dynamics and their derivatives (raw and tangent) against finite
   differences with locked joints of every kind; the reduced solve against a dense solve of
   M_ff; the lock forces against the inverse dynamics;
3. a four-bar with one tree joint locked is rigid: the rk4 loop solve keeps it still;
4. a locked loop-closing joint is refused (file, line, field).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dojo_cli
import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.errors import SceneError
from tests.minimal.scenes import MINIMAL_JOINTS
from tests.minimal.test_functions import FD_TOL, _fd, _rel

ELBOW_SCENE = """\
format: 1
name: locked_elbow
timestep: 0.01
steps: 300
gravity: [0, 0, -9.81]
integrator: rk4
bodies:
  - {name: upper, shape: {type: box, size: [0.1, 0.1, 1.0]}, mass: 1.0}
  - {name: lower, shape: {type: box, size: [0.1, 0.1, 1.0]}, mass: 0.7}
joints:
  - {name: shoulder, type: revolute, parent: origin, child: upper, axis: [1, 0, 0], child_vertex: [0, 0, 0.5],
     initial: {position: [0.4], velocity: [1.0]}}
  - {name: elbow, type: revolute, parent: upper, child: lower, axis: [1, 0, 0], parent_vertex: [0, 0, -0.5],
     child_vertex: [0, 0, 0.5], locked: true, initial: {position: [0.7], velocity: [1.5]}}
solver: {rtol: 1.0e-10, btol: 1.0e-10}
"""
ELBOW = 0.7
# rk4 at h = 0.01 against the compound pendulum integrated by DOP853 at rtol 1e-12: the
# fourth-order global error over 3 s (measured 2.5e-8 rad in the angle, 5.7e-8 rad/s in the rate)
RK4_VS_EXACT = 2e-7
# the variational integrator is second order: measured 2.4e-4 rad at h = 0.01 and 6.0e-5
# at h = 0.005 against the compound pendulum (ratio 4.0)
VARIATIONAL_VS_EXACT = 1e-3
# a locked revolute angle: the rk4 step adds exactly zero to it (v_l = 0 and vdot_l = 0 at
# every stage); through the stored maximal states it comes back within round-off (6.7e-16)
ROUND_OFF = 1e-14
# the reduced solve by ABA against a dense Cholesky of M_ff, and the lock forces against
# the inverse dynamics (relative; measured at most 2e-12)
SAME = 1e-10


def _rx(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def compound_pendulum(times: np.ndarray, theta0: float, rate0: float) -> np.ndarray:
    """(T, 2) shoulder angle and rate of the two links welded at the elbow angle: one rigid
    body turning about the shoulder's x axis, I theta'' = -m g r_y(theta) with r = R_x(theta) c
    the composite centre of mass (upper link's frame at theta = 0) and I about the pivot."""
    m1, m2, g = 1.0, 0.7, 9.81
    # a 0.1 x 0.1 x 1 box about its centre, x axis: m (0.1^2 + 1^2) / 12
    i1, i2 = m1 * (0.01 + 1.0) / 12, m2 * (0.01 + 1.0) / 12
    c1 = np.array([0.0, 0.0, -0.5])                                # upper centre: half a link below the shoulder
    c2 = np.array([0.0, 0.0, -1.0]) + _rx(ELBOW) @ [0.0, 0.0, -0.5]  # lower centre: past the elbow, turned
    inertia = i1 + m1 * (c1[1] ** 2 + c1[2] ** 2) + i2 + m2 * (c2[1] ** 2 + c2[2] ** 2)  # parallel axes
    c = (m1 * c1 + m2 * c2) / (m1 + m2)

    def rate(_t, y):
        r = _rx(y[0]) @ c
        return [y[1], -(m1 + m2) * g * r[1] / inertia]

    sol = solve_ivp(rate, (0.0, float(times[-1])), [theta0, rate0], method="DOP853", rtol=1e-12, atol=1e-12,
                    t_eval=times)
    return sol.y.T


@pytest.fixture
def elbow_scene(tmp_path):
    path = tmp_path / "locked_elbow.yaml"
    path.write_text(ELBOW_SCENE)
    return str(path)


# ------------------------------------------------------------------ 1. the locked elbow
def test_locked_elbow_rk4_moves_as_a_compound_pendulum_and_as_the_variational_run(elbow_scene):
    mech = dojo.load_scene(elbow_scene)
    rk4 = dojo.simulate(mech)  # integrator: rk4
    assert rk4.minimal_q.shape == (301, 2)
    # the lock zeroed the elbow's initial velocity (1.5 rad/s in the scene) and holds it
    elbow = rk4.minimal_q[:, 1]
    assert np.abs(elbow - ELBOW).max() < ROUND_OFF, f"elbow drift {np.abs(elbow - ELBOW).max():.2e}"
    assert np.abs(rk4.minimal_v[:, 1]).max() < ROUND_OFF, f"elbow rate {np.abs(rk4.minimal_v[:, 1]).max():.2e}"
    exact = compound_pendulum(rk4.time, 0.4, 1.0)
    assert np.ptp(exact[:, 0]) > 1.0, "the pendulum must swing for the comparison to mean anything"
    err = np.abs(rk4.minimal_q[:, 0] - exact[:, 0]).max()
    err_rate = np.abs(rk4.minimal_v[:, 0] - exact[:, 1]).max()
    assert err < RK4_VS_EXACT and err_rate < RK4_VS_EXACT, f"rk4 vs compound pendulum: {err:.2e} rad, {err_rate:.2e} rad/s"
    # the variational integrator's locked run (lock rows in the step): second order
    errors = []
    for h, steps in ((0.01, 300), (0.005, 600)):
        var = dojo.load_scene(elbow_scene, overrides={"integrator": "variational", "timestep": h, "steps": steps})
        traj = dojo.simulate(var)
        errors.append(np.abs(traj.minimal_q[:, 0] - compound_pendulum(traj.time, 0.4, 1.0)[:, 0]).max())
        assert np.abs(traj.minimal_q[:, 1] - ELBOW).max() < 1e-10
    assert errors[0] < VARIATIONAL_VS_EXACT, f"variational vs compound pendulum {errors[0]:.2e}"
    assert 3.5 < errors[0] / errors[1] < 4.5, f"variational errors {errors} are not second order"
    gap = np.abs(rk4.x - dojo.simulate(dojo.load_scene(elbow_scene, overrides={"integrator": "variational"})).x).max()
    assert gap < VARIATIONAL_VS_EXACT, f"rk4 vs variational body positions {gap:.2e} m"


def test_minimal_simulate_holds_the_locked_angle_exactly(elbow_scene):
    model = minimal.build_model(dojo.load_scene(elbow_scene))
    assert model.locked_joints == ["elbow"] and list(model.locked_v) == [False, True]
    x0 = np.array([0.4, ELBOW, 1.0, 1.5])  # a moving elbow: Lock zeroes its velocity
    ts, qs, vs = minimal.simulate(model, x0, 1.0, dt=1e-3)
    assert np.all(qs[:, 1] == ELBOW) and np.all(vs[:, 1] == 0.0), "the locked angle and rate must not change at all"
    err = np.abs(qs[:, 0] - compound_pendulum(ts, 0.4, 1.0)[:, 0]).max()
    assert err < 1e-10, f"rk4 at dt = 1e-3 vs compound pendulum {err:.2e}"  # measured 6e-12
    # the integrator's dynamics are the reduced forward dynamics
    integ = minimal.Rk4(model)
    assert np.allclose(integ.dynamics(x0), minimal.forward_dynamics(model, x0, np.zeros(2)), rtol=0, atol=1e-12)
    assert integ.dynamics(x0)[1] == 0.0


# ------------------------------------------------------------------ 2. derivatives
# (scene, joints to lock): revolute and prismatic, spherical, a floating base welded to the
# world with a locked knee, swing and predecessor-frame joints, orbital, everything locked
CASES = [
    ("double_pendulum", ["joint2"]),
    ("pinnzoo_double_cartpole", ["pole1_joint"]),
    ("spherical_chain", ["joint3"]),
    ("quadruped_feet", ["floating_base", "fl_knee"]),
    (MINIMAL_JOINTS, ["j1", "j4"]),
    ("orbital_chain", ["joint2"]),
    ("box2d", ["planar_base"]),
]


def _locked_model(scene, names):
    return minimal.build_model(dojo.load_scene(scene, overrides={f"joints.{n}.locked": True for n in names}))


@pytest.mark.parametrize("scene,names", CASES, ids=[c[0] if c[0] != MINIMAL_JOINTS else "minimal_joints" for c in CASES])
def test_reduced_dynamics_derivatives_match_finite_differences(scene, names):
    model = _locked_model(scene, names)
    assert model.locked_joints == names
    rng = np.random.default_rng(3)
    x, tau = minimal.randn_state(model, rng), rng.standard_normal(model.nv)  # locked joints moving too: read as zero
    dx, dtau = minimal.forward_dynamics_deriv(model, x, tau)
    dxt, _ = minimal.forward_dynamics_deriv(model, x, tau, tangent=True)
    Dx, Dtau = minimal.dynamics_deriv(model, x, tau)
    zero = np.zeros(2 * model.nv)
    # tau enters linearly: a large step sets only the rounding floor (test_functions)
    errors = {
        "forward_x": _rel(dx, _fd(lambda y: minimal.forward_dynamics(model, y, tau), x)),
        "forward_tau": _rel(dtau, _fd(lambda t: minimal.forward_dynamics(model, x, t), tau, h=1e-2)),
        "forward_tangent": _rel(dxt, _fd(lambda d: minimal.forward_dynamics(model, minimal.apply_dx(model, x, d), tau), zero)),
        "dynamics_x": _rel(Dx, _fd(lambda y: minimal.dynamics(model, y, tau), x)),
        "dynamics_tau": _rel(Dtau, _fd(lambda t: minimal.dynamics(model, x, t), tau, h=1e-2)),
    }
    tol = {**FD_TOL, "forward_tangent": FD_TOL["forward_x"]}
    bad = {k: f"{e:.1e}" for k, e in errors.items() if e > tol[k]}
    assert not bad, f"{names} locked: derivative errors above PinnZoo's tolerances: {bad}"  # measured <= 9e-8
    # the locked rows are zero, and so are the columns of the locked velocities (read as zero)
    lv = model.locked_v
    assert np.all(dx[lv] == 0.0) and np.all(dx[:, model.nq:][:, lv] == 0.0) and np.all(dxt[:, model.nv:][:, lv] == 0.0)
    assert np.all(dtau[lv] == 0.0) and np.all(dtau[:, lv] == 0.0)


@pytest.mark.parametrize("scene,names", CASES[:5], ids=[c[0] if c[0] != MINIMAL_JOINTS else "minimal_joints" for c in CASES[:5]])
def test_reduced_solve_and_lock_forces(scene, names):
    model = _locked_model(scene, names)
    rng = np.random.default_rng(5)
    x, tau = minimal.randn_state(model, rng), rng.standard_normal(model.nv)
    free, lv = ~model.locked_v, model.locked_v
    held = x.copy()
    held[model.nq:][lv] = 0.0
    # a dense solve of M_ff vdot_f = tau_f - C_f(q, v with v_l = 0): the weld in ABA is that solve
    M, C = minimal.M_func(model, x), minimal.C_func(model, held)
    expected = np.zeros(model.nv)
    expected[free] = np.linalg.solve(M[np.ix_(free, free)], (tau - C)[free])
    vdot = minimal.forward_dynamics(model, x, tau)
    assert _rel(vdot, expected) < SAME, f"reduced solve off by {_rel(vdot, expected):.1e}"
    assert np.all(vdot[lv] == 0.0)
    # the locks carry the rest of the equations of motion: M vdot + C = tau + lambda
    lam = minimal.lock_forces(model, x, tau)
    residual = minimal.inverse_dynamics(model, held, vdot) - tau
    assert _rel(lam, np.where(lv, residual, 0.0)) < SAME, f"lock forces off by {_rel(lam, np.where(lv, residual, 0.0)):.1e}"
    assert np.abs(residual[free]).max() < SAME * max(1.0, np.abs(tau).max())


# ------------------------------------------------------------------ 3. loops
@pytest.mark.parametrize("joint", ["joint1", "joint2", "joint3"])
def test_fourbar_with_a_locked_tree_joint_is_rigid_under_rk4(joint):
    # one tree joint of the one-DOF loop locked: the other two move only as the loop allows,
    # i.e. not at all (the loop solve's Schur complement K_f M_ff^-1 K_f^T on the free columns)
    model = minimal.build_model(dojo.load_scene("rbd_fourbar", overrides={f"joints.{joint}.locked": True}))
    x0 = minimal.init_state(model)
    ts, qs, vs = minimal.simulate(model, x0, 2.0, dt=1e-3)
    moved = np.abs(qs - qs[0]).max()
    assert moved < ROUND_OFF and np.abs(vs).max() < ROUND_OFF, f"locked four-bar moved {moved:.2e} rad"
    assert minimal.loop_joint_errors(model, np.concatenate([qs[-1], vs[-1]])).max() < 1e-12
    free = minimal.build_model(dojo.load_scene("rbd_fourbar"))
    assert np.ptp(minimal.simulate(free, x0, 1.0, dt=1e-3)[1], axis=0).min() > 0.1, "unlocked, the four-bar moves"


def test_a_locked_loop_joint_is_refused(tmp_path):
    text = (Path(dojo_cli.__file__).parents[1] / "scenes" / "basics" / "rbd_fourbar.yaml").read_text()
    path = tmp_path / "fourbar.yaml"
    path.write_text(text.replace("  - name: joint4", "  - locked: true\n    name: joint4"))
    with pytest.raises(SceneError, match=r"fourbar.yaml:\d+: joints\.3\.locked: joint 'joint4' is a locked loop-closing joint"):
        minimal.build_model(dojo.load_scene(str(path)))
