"""Joint kinematics for all joints at once, with Jacobians in body tangents.

For joint j between parent a (or the origin) and child b, at configurations
(x, q) of the bodies:
- translational displacement, parent frame (dojo_engine_notes.md 3.3):
  d = R(qa)^T (xb + R(qb) pb - xa) - pa
- relative rotation: q_rel = offset* qa* qb.
Jacobians are with respect to the 12 tangent coordinates [xa, ta, xb, tb]:
world-frame position increments and body-frame rotation increments
(q -> q exp(t/2)). With E = [-R(q_rel)^T R(offset)^T, I], a body rotation
increment moves q_rel by the right increment E @ [ta; tb].

Three row families are derived from these, each (nj, 6, ...) in the joint's
element bases (rows 0:3 translational, 3:6 rotational):
- constraint values c: basis @ d and basis @ Vec(q_rel) (Dojo's constraint);
- minimal coordinates m: basis @ d and basis @ log(q_rel) (rotation vector);
- input/torque rows: basis @ d and basis @ R(q_rel) E (a torque about the
  joint-frame axes acts on the parent and child as an equal and opposite pair,
  as Dojo's rotational input does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import Mechanism


_ORIGIN_X = np.zeros((1, 3))
_ORIGIN_Q = quat.IDENTITY[None]


@dataclass
class JointKinematics:
    """Joint quantities at one configuration (arrays over joints j).

    Attributes:
        d: (nj,3) translational displacement, parent frame.
        q_rel: (nj,4) relative rotation in the joint frame.
        jac_d: (nj,3,12) d(d)/d[xa, ta, xb, tb].
        jac_rel: (nj,3,12) right increment of q_rel per tangent (zero x columns).
        rot_rel: (nj,3,3) R(q_rel).
    """

    d: np.ndarray
    q_rel: np.ndarray
    jac_d: np.ndarray
    jac_rel: np.ndarray
    rot_rel: np.ndarray


def parent_child_poses(mech: Mechanism, x: np.ndarray, q: np.ndarray):
    """Poses of each joint's parent (origin = identity at 0) and child.

    Args:
        x: (nb,3) positions; q: (nb,4) orientations.

    Returns:
        xa (nj,3), qa (nj,4), xb (nj,3), qb (nj,4).
    """
    # Append the origin as an extra "body" at index nb so ORIGIN (-1) indexes it.
    xe = np.concatenate([x, _ORIGIN_X])
    qe = np.concatenate([q, _ORIGIN_Q])
    pa = mech.parent_padded
    return xe[pa], qe[pa], x[mech.child], q[mech.child]


def joint_kinematics(mech: Mechanism, x: np.ndarray, q: np.ndarray) -> JointKinematics:
    """Displacements, relative rotations and their tangent Jacobians for all joints.

    Args:
        mech: the mechanism.
        x: (nb,3) body positions, world frame.
        q: (nb,4) body orientations [w,x,y,z], body to world.
    """
    xa, qa, xb, qb = parent_child_poses(mech, x, q)
    rot = quat.matrix_from_quaternion(np.concatenate([q, _ORIGIN_Q]))  # (nb+1,3,3), one call
    return pose_kinematics(mech, xa, qa, xb, qb, rot[mech.parent_padded], rot[mech.child])


def pose_kinematics(mech: Mechanism, xa, qa, xb, qb, ra=None, rb=None) -> JointKinematics:
    """joint_kinematics from each joint's own parent and child poses.

    Every joint gets its own copy of its bodies' poses, so all joints can be
    perturbed at once (the complex-step second derivatives of
    simulation.gradients). Complex inputs stay complex.

    Args:
        xa, xb: (nj,3) parent and child positions; qa, qb: (nj,4) orientations.
        ra, rb: optional R(qa), R(qb) if already computed.
    """
    nj = mech.nj
    ra = quat.matrix_from_quaternion(qa) if ra is None else ra
    rb = quat.matrix_from_quaternion(qb) if rb is None else rb
    pa, pb = mech.parent_vertex, mech.child_vertex
    rb_pb = np.einsum("jik,jk->ji", rb, pb)
    world = xb + rb_pb - xa  # child joint point relative to the parent origin, world
    d = np.einsum("jki,jk->ji", ra, world) - pa

    dtype = np.result_type(d, ra, rb)
    jac_d = np.empty((nj, 3, 12), dtype=dtype)
    ra_t = np.swapaxes(ra, 1, 2)
    jac_d[:, :, 0:3] = -ra_t
    jac_d[:, :, 3:6] = quat.skew(d + pa)  # d/dta of R(qa exp(ta/2))^T w = [R^T w]x
    jac_d[:, :, 6:9] = ra_t
    jac_d[:, :, 9:12] = -ra_t @ rb @ quat.skew(pb)  # R(qb exp(tb/2)) pb ~ R(qb)(pb + tb x pb)

    off = mech.orientation_offset
    q_rel = quat.multiply(quat.conjugate(off), quat.multiply(quat.conjugate(qa), qb))
    rot_rel = quat.matrix_from_quaternion(q_rel)
    jac_rel = np.zeros((nj, 3, 12), dtype=np.result_type(rot_rel, float))
    jac_rel[:, :, 3:6] = -np.swapaxes(rot_rel, 1, 2) @ np.swapaxes(mech.offset_rotation, 1, 2)
    jac_rel[:, :, 9:12] = np.eye(3)
    return JointKinematics(d=d, q_rel=q_rel, jac_d=jac_d, jac_rel=jac_rel, rot_rel=rot_rel)


def constraint_rows(mech: Mechanism, kin: JointKinematics) -> tuple[np.ndarray, np.ndarray]:
    """Dojo's joint constraint in the element bases, all six rows per joint.

    Returns:
        c (nj,6): [basis_t d; basis_r Vec(q_rel)], zero when the joint holds.
        jac (nj,6,12): their tangent Jacobians; d Vec(q_rel) = (w I + [v]x)/2 dt.
    """
    bt, br = mech.basis[:, :3], mech.basis[:, 3:]
    vec = kin.q_rel[:, 1:]
    c = np.concatenate([np.einsum("jik,jk->ji", bt, kin.d), np.einsum("jik,jk->ji", br, vec)], axis=1)
    dvec = 0.5 * (kin.q_rel[:, 0, None, None] * np.eye(3) + quat.skew(vec))
    jac = np.concatenate([bt @ kin.jac_d, br @ dvec @ kin.jac_rel], axis=1)
    return c, jac


def minimal_rows(mech: Mechanism, kin: JointKinematics, jacobian: bool = True):
    """Minimal coordinates (all six basis rows per joint) and their Jacobians.

    Returns:
        m (nj,6): [basis_t d; basis_r log(q_rel)].
        jac (nj,6,12) or None: with d log(q_rel) = J_r^-1(log q_rel) dt.
    """
    bt, br = mech.basis[:, :3], mech.basis[:, 3:]
    rv = quat.rotation_vector_from_quaternion(kin.q_rel)
    m = np.concatenate([np.einsum("jik,jk->ji", bt, kin.d), np.einsum("jik,jk->ji", br, rv)], axis=1)
    if not jacobian:
        return m, None
    jac = np.concatenate([bt @ kin.jac_d, br @ quat.right_jacobian_inverse(rv) @ kin.jac_rel], axis=1)
    return m, jac


def input_rows(mech: Mechanism, kin: JointKinematics) -> np.ndarray:
    """Maps of joint inputs to body impulses per unit input and time, (nj,6,12).

    Translational rows: a force along a basis direction of the parent frame,
    applied at the child's joint point (so it produces the same torques as a
    constraint force of that size; Dojo halves them, notes 2.4). Rotational rows:
    a torque about a basis direction of the joint frame, acting with opposite
    signs on parent and child.
    """
    bt, br = mech.basis[:, :3], mech.basis[:, 3:]
    return np.concatenate([bt @ kin.jac_d, br @ kin.rot_rel @ kin.jac_rel], axis=1)
