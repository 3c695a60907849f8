"""The scene's inputs and passive forces as generalized forces (PinnZoo's B_func; the
springs and dampers C_func leaves out).

Without ``actuators``, a scene's inputs u (nu,) are Dojo's, per joint in scene order
(physics.md "Inputs"): a force along each free translation (parent frame, at the child's
joint point) and a torque about each free rotation axis of the joint frame. Their
generalized force is tau = B(x) u with, per joint, the translation block E_t^T =
T R_J^T T^T (the force seen in the successor frame; the identity unless the joint also
rotates, or measures its translations in the predecessor frame), 1 for a revolute angle,
R_J^T (times the orientation offset for a floating base) for a quaternion joint's torque,
and A(q)^T R_J^T [b1 b2] for a swing's (the torque u1 b1 + u2 b2 of the joint frame, seen
in the body frame, on the body angular velocity A(q) q' of the coordinates' rates). Inputs of loop-closing joints are not mapped (zero
columns).

With ``actuators`` (docs/scenes.md), a joint actuator is that joint-input column times its
gain, and a body actuator's column is the generalized force of its body-frame wrench,
J_b(q)^T [R f; (c + R p) x R f + R t] (the world Jacobian of the body's tree joint and its
ancestors, core tree_frame_wrench): for a force at a point, the point's Jacobian
transposed times R f; for a torque, the angular Jacobian transposed times R t.
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SceneError
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.minimal.dynamics import velocity_kinematics
from dojo_cli.minimal.model import ROT_QUATERNION, ROT_REVOLUTE, ROT_SWING, MinimalModel
from dojo_cli.minimal.quaternions import axis_angle_to_quat


def _state_dependent(model: MinimalModel) -> bool:
    mech = model.mech
    if any(a.body >= 0 for a in mech.actuators):
        return True
    driven = {int(mech.free_joint[f]) for f in mech.actuator_free if f >= 0}
    return any(tj.index in driven and (tj.rot in (ROT_QUATERNION, ROT_SWING) or (tj.rot == ROT_REVOLUTE and tj.n_trans > 1))
               for tj in model.joints)


def B_func(model: MinimalModel, x=None) -> np.ndarray:  # noqa: N802 (PinnZoo's name)
    """B (nv, nu) with tau = B u for the scene's inputs u (module doc): its joint inputs,
    or its actuators in order.

    Args:
        x: (nx,) state; needed only where the map turns with the configuration (a
            floating, spherical, planar or free_revolute joint, a body actuator).
    """
    mech = model.mech
    if x is None and _state_dependent(model):
        raise ValueError("B_func: this model's input map depends on the configuration (a floating, spherical or "
                         "planar joint, or a body actuator): pass x")
    if x is not None:
        x = np.asarray(x, dtype=float).reshape(-1)
        if x.size != model.nx:
            raise ValueError(f"state must have nx = {model.nx} entries, got {x.size}")
    B = _joint_input_map(model, x) @ mech.input_map()
    body = [a for a, act in enumerate(mech.actuators) if act.body >= 0]
    if body:
        joints, offsets, forces, torques = [], [], [], []
        for a in body:
            act = mech.actuators[a]
            k = model._joint_of_body.get(act.body)
            if k is None:
                raise SceneError(f"actuator {act.name!r}: body {mech.bodies[act.body].name!r} is not in the tree")
            joints.append(k)
            # the successor frame has the body's axes, its origin at the joint point: the body's
            # centre of mass is at com there
            offsets.append(np.asarray(act.point, dtype=float) + model.joints[k].com)
            forces.append(act.gain * (np.zeros(3) if act.force is None else np.asarray(act.force, dtype=float)))
            torques.append(act.gain * (np.zeros(3) if act.torque is None else np.asarray(act.torque, dtype=float)))
        B[:, body] = _core.tree_frame_wrenches(model.tree, model.data, x, joints, np.array(offsets).reshape(-1),
                                               np.array(forces).reshape(-1), np.array(torques).reshape(-1))
    return B


def _joint_input_map(model: MinimalModel, x) -> np.ndarray:
    """(nv, nf): the generalized force of a joint input per free coordinate (module doc)."""
    mech = model.mech
    B = np.zeros((model.nv, mech.nf))
    driven = {int(mech.free_joint[f]) for f in mech.actuator_free if f >= 0}
    E = velocity_kinematics(model, x) if x is not None else None
    for k, tj in enumerate(model.joints):
        cols = tj.free
        if cols.stop == cols.start or tj.index not in driven:
            continue
        r0, c0, nt = tj.v.start, cols.start, tj.n_trans
        if tj.rot != 0 and nt:
            Et = E[tj.q.start: tj.q.start + nt, tj.v.start: tj.v.start + nt]
            B[r0: r0 + nt, c0: c0 + nt] = Et.T
        else:
            B[r0: r0 + nt, c0: c0 + nt] = np.eye(nt)
        if tj.rot == ROT_REVOLUTE:
            B[r0 + nt, c0 + nt] = 1.0
        elif tj.rot == ROT_QUATERNION:
            q = np.asarray(x, dtype=float)[tj.q][nt:]
            RJ = matrix_from_quaternion(q / np.linalg.norm(q))
            off = matrix_from_quaternion(np.asarray(mech.joints[tj.index].orientation_offset, dtype=float))
            B[r0 + nt: r0 + nt + 3, c0 + nt: c0 + nt + 3] = RJ.T @ off if tj.floating else RJ.T
        elif tj.rot == ROT_SWING:
            qr = np.asarray(x, dtype=float)[tj.q][nt:]
            RJ = matrix_from_quaternion(axis_angle_to_quat(tj.swing_axes.T @ qr))
            B[r0 + nt: r0 + nt + 2, c0 + nt: c0 + nt + 2] = model.swing_jacobian(k, qr).T @ RJ.T @ tj.swing_axes.T
    return B


def passive_forces(model: MinimalModel, x) -> np.ndarray:
    """(nv,) generalized forces of the scene's joint springs and dampers, which C_func
    leaves out (one call into the core: core/minimal/tree_passive.cpp).

    Dojo's spring -k (theta - theta0) and damper -c theta_dot on each free coordinate
    theta (physics.md), mapped by the transpose of d theta_dot / dv: E_t^T for
    translations, 1 for a revolute angle, J_r^-1(theta)^T for a rotation vector
    theta = log(q_rel) (spherical and floating joints). As Dojo's, that rotation vector
    has its angle in [0, 2 pi), so it depends on the quaternion's sign: q and -q give
    different spring forces (the maximal model reads the sign of the bodies' quaternions).
    Dry joint friction (``friction``) is no force of the state (a set-valued law, which only
    the variational integrator's complementarity rows model): it is not in it, and the rk4
    integrator refuses a scene with it.

    Args:
        x: (nx,) state [q; v], nominal order.
    """
    x = np.ascontiguousarray(x, dtype=float).reshape(-1)
    if x.size != model.nx:
        raise ValueError(f"state must have nx = {model.nx} entries, got {x.size}")
    return _core.tree_passive_forces(model.tree, x)
