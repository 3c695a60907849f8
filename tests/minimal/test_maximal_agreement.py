"""Maximal and minimal coordinates agree (issue 13; RigidBodyDynamics.jl's maximal-coordinates
test, other_systems_notes.md 1.9): from the same state and inputs, the body accelerations of
Dojo's variational step at a small timestep h, (v25 - v15)/h, match those of the tree's ABA
to O(h). This checks build_model's frames, B_func (the scene's inputs) and passive_forces
(springs and dampers) against the maximal core, an implementation that shares none of the
tree code.

The maximal state is built from the tree trajectory through t: positions at t, and the
midpoint velocities over [t - h, t] from the configurations at t - h and t (a second-order
step back), so that the step's difference quotient estimates the acceleration at t.
"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.minimal.quaternions import L_mult
from tests.minimal.scenes import MINIMAL_JOINTS, UNIVERSAL_JOINTS

# (scene, overrides): every joint kind in the tree (revolute, prismatic, planar, spherical,
# floating; the swing joints orbital, prismatic_orbital, planar_orbital, free_orbital and
# cylindrical_free, planar_free in MINIMAL_JOINTS and orbital_chain), springs and dampers on
# each kind; contacts removed (not part of the tree dynamics).
CASES = [
    ("pinnzoo_double_pendulum", {}),
    ("pinnzoo_cartpole", {}),
    ("pinnzoo_rigid_body", {"joints.0.spring": 2.0, "joints.0.damper": 0.3}),
    ("box2d", {"contacts": []}),
    ("spherical_chain", {"joints.0.damper": 0.05, "joints.1.damper": 0.05}),
    ("npendulum", {"joints.0.spring": 3.0, "joints.1.damper": 0.5}),
    # actuators (docs/scenes.md): PinnZoo's rotors, and joint and body actuators on a chain
    ("pinnzoo_quadrotor", {}),
    (MINIMAL_JOINTS, {}),
    # universal and gimbal joints: the maximal element (core/maximal/euler_joints.h, inputs as
    # the angles' generalized forces) against revolute tree joints in sequence
    (UNIVERSAL_JOINTS, {}),
    ("orbital_chain", {"gravity": [0, 0, -9.81], "joints.2.damper": 0.2}),
    ("npendulum", {"actuators": [
        {"name": "elbow", "joint": "joint2", "gain": 2.0},
        {"name": "push", "body": "link3", "force": [0, 1, 0.5], "point": [0, 0.02, -0.5], "torque": [1, 0, 0]},
        {"name": "spin", "body": "link5", "torque": [0.3, 0.2, 1.0], "gain": 0.5},
    ]}),
]
STEPS = (1e-3, 1e-4)
# The error is O(h): below this constant times h (relative to the accelerations' scale). Its
# size comes from Dojo's implicit dampers (evaluated at the next velocities): on the chain's
# light links (0.0027 kg m^2 about their long axis, c = 0.05) the damping rate c / I ~ 19/s.
ORDER_CONSTANT = 100.0
# Dividing h by 10 divides the error by at least 5 (O(h)), above the noise floor of
# (v25 - v15) / h: the solver's residual and the positions' rounding, divided by h twice.
ORDER_RATIO = 0.2
NOISE = 1e-4
# The solver's tolerance enters (v25 - v15)/h divided by h.
SOLVER = dict(rtol=1e-13, btol=1e-13, max_iter=100)
FD_STEP = 1e-6  # central differences of the tree's body velocities along the motion


def _state(model, rng):
    x = minimal.randn_state(model, rng)
    x[model.nq:] *= 0.5
    for tj in model.joints:
        if tj.rot == 2 and not tj.floating:
            # moderate relative rotations: Dojo's spring acts on log(q_rel) in [0, 2 pi), which
            # depends on the quaternion's sign beyond pi
            x[tj.q.start + tj.n_trans: tj.q.stop] = minimal.axis_angle_to_quat(0.5 * rng.standard_normal(3))
        elif tj.rot == 3:  # a swing: moderate too (its spring acts on log(q_rel) as well)
            x[tj.q.start + tj.n_trans: tj.q.stop] = 0.5 * rng.standard_normal(2)
        elif tj.type in ("universal", "gimbal"):
            # inside the angles' chart (a gimbal's middle angle in [-pi/2, pi/2], the others
            # in (-pi, pi]), where the maximal model reads the same angles
            x[tj.q] = 0.5 * rng.standard_normal(1)
    return x


def _step_back(model, x, vdot, h):
    """Tangent step to x(t - h) to O(h^3): -h v + h^2/2 vdot, plus h^2/2 w x v for
    translations turned by the joint's rotation (their E_t changes along the motion)."""
    v = x[model.nq:]
    d = -h * v + 0.5 * h * h * vdot
    for tj in model.joints:
        if tj.n_trans and tj.rot and not tj.trans_pred:  # (predecessor-frame translations: q_t' = v_t)
            vv, nt = v[tj.v], tj.n_trans
            w = vv[nt:] if tj.rot == 2 else vv[nt] * tj.axis
            d[tj.v.start: tj.v.start + nt] += 0.5 * h * h * (tj.directions @ np.cross(w, tj.directions.T @ vv[:nt]))
    return np.concatenate([d, np.zeros(model.nv)])


def _bodies(model, x):
    """Body states with quaternion signs following the tree (q_child = q_parent offset q_joint):
    Dojo's springs and dampers act on log(q_rel) with the angle in [0, 2 pi), which depends on
    the quaternion's sign, so each joint's q_rel must be its own quaternion, not its negative."""
    b = model.bodies_from_state(x)
    for tj in model.joints:
        if tj.rot not in (2, 3):
            continue
        qa = np.array([1.0, 0, 0, 0]) if tj.parent < 0 else b["q"][model.joints[tj.parent].body]
        off = np.asarray(model.mech.joints[tj.index].orientation_offset, dtype=float)
        rel = L_mult(off).T @ L_mult(qa).T @ b["q"][tj.body]
        ours = x[tj.q][tj.n_trans:]
        if tj.rot == 3:  # a swing's q_rel is exp(phi / 2), phi = b1 q1 + b2 q2
            ours = minimal.axis_angle_to_quat(tj.swing_axes.T @ ours)
        if tj.floating:  # a floating joint's quaternion includes the offset
            ours = L_mult(off).T @ ours
        if rel @ ours < 0:
            b["q"][tj.body] *= -1
    return b


def _acceleration_error(scene, overrides, h, seed=0):
    mech = dojo.load_scene(scene, overrides={**overrides, "timestep": h})
    model = minimal.build_model(mech)
    rng = np.random.default_rng(seed)
    x = _state(model, rng)
    u = rng.standard_normal(model.nu)
    vdot = minimal.forward_dynamics(model, x, minimal.B_func(model, x) @ u + minimal.passive_forces(model, x))
    motion = np.concatenate([x[model.nq:], vdot])
    plus = model.bodies_from_state(minimal.apply_dx(model, x, FD_STEP * motion))
    minus = model.bodies_from_state(minimal.apply_dx(model, x, -FD_STEP * motion))
    a_lin = (plus["v"] - minus["v"]) / (2 * FD_STEP)
    a_ang = (plus["w"] - minus["w"]) / (2 * FD_STEP)
    now = _bodies(model, x)
    before = model.bodies_from_state(minimal.apply_dx(model, x, _step_back(model, x, vdot, h)))
    before["q"] *= np.sign(np.sum(before["q"] * now["q"], axis=1))[:, None]  # the same sign as at t
    v15 = (now["x"] - before["x"]) / h
    w15 = np.array([(2.0 / h) * (L_mult(q1).T @ q2)[1:] for q1, q2 in zip(before["q"], now["q"])])
    z = np.concatenate([now["x"], v15, now["q"], w15], axis=1).reshape(-1)
    z3 = dojo.step(mech, z, u, opts=dojo.SolverOptions(**SOLVER)).reshape(mech.nb, 13)
    err = max(np.abs((z3[:, 3:6] - v15) / h - a_lin).max(), np.abs((z3[:, 10:13] - w15) / h - a_ang).max())
    return err / max(1.0, np.abs(a_lin).max(), np.abs(a_ang).max())


@pytest.mark.parametrize("scene, overrides", CASES,
                         ids=[c[0].rsplit("/", 1)[-1] + ("_actuators" if "actuators" in c[1] else "") for c in CASES])
def test_variational_step_accelerations_match_aba(scene, overrides):
    errors = [_acceleration_error(scene, overrides, h) for h in STEPS]
    for h, e in zip(STEPS, errors):
        assert e <= ORDER_CONSTANT * h, f"{scene}: h={h:g}: relative acceleration error {e:.2e} > {ORDER_CONSTANT} h"
    assert errors[1] <= ORDER_RATIO * errors[0] + NOISE, f"{scene}: not O(h): errors {errors[0]:.2e}, {errors[1]:.2e}"


@pytest.mark.parametrize("scene", [MINIMAL_JOINTS, "orbital_chain"], ids=["minimal_joints", "orbital_chain"])
def test_swing_and_predecessor_frame_coordinates_are_dojos_minimal_coordinates(scene):
    """A swing's q (b1.log(q_rel), b2.log(q_rel)) and the translations of cylindrical_free,
    planar_free and the orbitals are Dojo's own free coordinates (storage's minimal/q), and
    their velocities are those coordinates' rates (the maximal model's, by central differences
    along the motion); state_from_maximal inverts the tree's bodies."""
    from dojo_cli.physics.coordinates import minimal_coordinates

    mech = dojo.load_scene(scene)
    model = minimal.build_model(mech)
    rng = np.random.default_rng(4)
    x = minimal.randn_state(model, rng)
    for tj in model.joints:
        if tj.rot == 3:
            x[tj.q.start + tj.n_trans: tj.q.stop] = rng.uniform(-1.2, 1.2, 2)

    def theta(t):
        b = model.bodies_from_state(minimal.apply_dx(model, x, np.concatenate([t * x[model.nq:], np.zeros(model.nv)])))
        return minimal_coordinates(mech, b["x"], b["q"])

    rates = (theta(FD_STEP) - theta(-FD_STEP)) / (2 * FD_STEP)
    now = theta(0.0)
    checked = 0
    for tj in model.joints:
        if tj.rot != 3 and not tj.trans_pred:
            continue
        cols = mech.joint_free_range[tj.index]
        n = tj.n_trans if tj.rot == 2 else len(x[tj.q])  # a quaternion's own coordinates differ (rotation vector)
        assert np.allclose(now[cols][:n], x[tj.q][:n], rtol=0, atol=1e-12), tj.name
        assert np.allclose(rates[cols][:n], x[model.nq:][tj.v][:n], rtol=0, atol=1e-8), tj.name
        checked += 1
    assert checked >= 4
    b = model.bodies_from_state(x)
    z = np.concatenate([b["x"], b["v"], b["q"], b["w"]], axis=1).reshape(-1)
    assert np.max(np.abs(minimal.state_error(model, model.state_from_maximal(z), x))) < 1e-12
