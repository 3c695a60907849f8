"""The minimal-coordinate model of a scene: its tree joints compiled into the core's TreeModel.

PinnZoo's conventions (docs/minimal.md): q = [x y z qw qx qy qz] for a floating base
(position of the base frame in the world, quaternion body to world) and v = [v; w], both
in the base's body frame; M(x) vdot + C(x) = tau; q' = E(q) v. Every tree joint j of the
scene becomes one tree joint of the core (dojo_cli/core/minimal/tree.h):

- its successor frame sits at the joint point of the child (``child_vertex`` in the child
  body) with the child's orientation; for a URDF scene that is the child link's frame (the
  importer places bodies so), as Pinocchio and PinnZoo have it;
- its predecessor frame sits at ``parent_vertex`` in the parent body, turned by
  ``orientation_offset`` (Dojo's joint frame), except for a floating joint, whose
  predecessor frame is the parent body (the world) itself, so that its q is the pose
  of the successor frame in the world;
- coordinates: the joint's free translations (Dojo's, parent frame, the same numbers),
  then its rotation: a revolute angle (Dojo's, the same number), a quaternion (the
  rotation relative to the predecessor frame, where Dojo uses a rotation vector), or a
  swing's two coordinates (two free rotations: orbital and its variants), Dojo's
  b1.log(q_rel), b2.log(q_rel) themselves (R_J = exp([q1 b1 + q2 b2]x), no twist about
  the axis: Dojo's constraint b3.Vec(q_rel) = 0);
- a universal or gimbal joint (R(a1, t1) R(a2, t2) [R(a3, t3)], core/maximal/euler_joints.h)
  is its two or three revolute axes in sequence, as the URDF's chain through massless links
  it stands for (and Pinocchio's model of that file): one revolute tree joint per axis, each
  named after its angle (the joint's ``axis_names``), the frames between them without mass,
  the last one's successor frame the child's; the angles are Dojo's coordinates themselves;
- velocities: the successor frame's velocity relative to the predecessor frame, in
  the successor frame (body frame): a floating base's [v; w], a planar joint's
  [vx vy wz] (as Pinocchio's and RigidBodyDynamics.jl's planar joints); a swing's are
  its coordinates' rates (body angular velocity J_r(phi) [b1 b2] v). Translations that do
  not turn into themselves under the joint's rotation (a spherical or swing rotation with
  one or two translations: cylindrical_free, planar_free, prismatic_orbital,
  planar_orbital, free_orbital) are measured in the predecessor frame with their rates as
  velocities (``trans_pred``). Those joints' motion subspaces depend on q (core tree.h).

Every joint type is supported. Loop-closing joints are kept by name (``loop_joints``) and
are not part of the tree dynamics. A locked tree joint (Drake's Lock) is held: the core's
forward dynamics and its derivatives solve the reduced system over the other coordinates
(core tree.h TreeInput.locked); a locked loop-closing joint is refused (its free directions
would need lock rows in the rk4 loop solve, which holds only the constrained ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import Problem, SceneError
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.joint_types import AXES_JOINTS, JointType
from dojo_cli.model.mechanism import ORIGIN, Mechanism, axis_names
from dojo_cli.minimal.quaternions import quat_to_axis_angle, rot_to_quat

# Rotation kinds of the core's tree joints (tree.h TreeRotation).
ROT_NONE, ROT_REVOLUTE, ROT_QUATERNION, ROT_SWING = 0, 1, 2, 3
# (Python side) a universal or gimbal scene joint: one revolute tree joint per axis
ROT_AXES = -1
# configuration and velocity sizes of each rotation kind
ROT_NQ, ROT_NV = (0, 1, 4, 2), (0, 1, 3, 2)
# Tolerance on the invariance of a joint's translation directions under its rotation
# (axis parallel or perpendicular to them): a scene's axes are unit vectors to rounding.
_INVARIANCE_TOL = 1e-9


@dataclass(frozen=True)
class TreeJoint:
    """One joint of the tree (Python-side description, the glue's bookkeeping).

    Attributes:
        name: the scene joint's name; index: its index in the scene.
        type: Dojo joint type; parent: parent tree-joint index (model order) or -1.
        body: index of the child body (scene order).
        n_trans: free translations; directions: (n_trans, 3) rows, predecessor frame.
        rot: ROT_NONE, ROT_REVOLUTE, ROT_QUATERNION or ROT_SWING; axis: (3,) revolute axis.
        swing_axes: (2, 3) the free rotation axes b1, b2 of a swing (predecessor frame), else zeros.
        trans_pred: translations measured in the predecessor frame, their velocities the
            coordinates' rates (module doc); else in the successor frame.
        placement_rotation: (3, 3) predecessor frame in the parent tree frame;
        placement_translation: (3,) its origin there.
        com: (3,) the child's centre of mass in the successor frame (= -child_vertex).
        q: slice of q; v: slice of v (nominal order).
        floating: a floating joint (its predecessor is the parent body frame).
        free: the scene's free coordinates this tree joint carries (Mechanism.joint_free_range of
            its joint, or one angle of a universal or gimbal joint's, one tree joint per axis).
        frame: a massless frame between the axes of a universal or gimbal joint (no body;
            ``body`` is -1).
    """

    name: str
    index: int
    type: JointType
    parent: int
    body: int
    n_trans: int
    directions: np.ndarray
    rot: int
    axis: np.ndarray
    swing_axes: np.ndarray
    trans_pred: bool
    placement_rotation: np.ndarray
    placement_translation: np.ndarray
    com: np.ndarray
    q: slice
    v: slice
    floating: bool
    free: slice
    frame: bool = False


def _coordinate_names(joint, n_trans: int, rot: int, floating: bool) -> tuple[list[str], list[str]]:
    """PinnZoo-style names: a one-coordinate joint is named after itself; otherwise
    ``joint:coordinate`` (floating x y z qw qx qy qz / vx vy vz wx wy wz; planar
    x y qz / vx vy wz; spherical qw qx qy qz / wx wy wz)."""
    name = joint.name
    nq = n_trans + ROT_NQ[rot]
    if nq == 1:
        return [name], [name]
    jt = JointType(joint.type)
    if jt in (JointType.CYLINDRICAL, JointType.CYLINDRICAL_FREE, JointType.PRISMATIC_ORBITAL):
        trans = ["z"]
    else:
        trans = ["x", "y", "z"][:n_trans]
    q = list(trans)
    v = [f"v{t}" for t in trans]
    if rot == ROT_REVOLUTE:
        q.append("qz")
        v.append("wz")
    elif rot == ROT_QUATERNION:
        q += ["qw", "qx", "qy", "qz"]
        v += ["wx", "wy", "wz"]
    elif rot == ROT_SWING:
        q += ["r0", "r1"]
        v += ["dr0", "dr1"]
    return [f"{name}:{c}" for c in q], [f"{name}:{c}" for c in v]


def _nominal_order(mech: Mechanism) -> list[int]:
    """Scene joint order with the floating base(s) to the world first (PinnZoo's nominal order)."""
    tree = set(mech.tree_joints)
    first = [j for j in range(mech.nj) if j in tree and mech.joints[j].type == JointType.FLOATING
             and mech.parent[j] == ORIGIN]
    return first + [j for j in range(mech.nj) if j in tree and j not in first]


class MinimalModel:
    """A scene's tree in minimal coordinates (PinnZoo's model): sizes, names, orders and
    the core's compiled TreeModel. Immutable after construction except for
    ``register_order``.

    Attributes:
        mech: the Mechanism it was built from.
        nq, nv, nx (= nq + nv), nu (the scene's inputs): sizes.
        is_floating: whether the first joint is a floating base to the world.
        config_names, velocity_names, torque_names: PinnZoo's StateOrder of the nominal order.
        kinematics_points: names of the points ``kinematics`` reports (contacts, bodies).
        joints: the TreeJoint list, parents before children.
        loop_joints: names of the loop-closing joints (not in the tree dynamics).
        locked_joints: names of the locked tree joints (Drake's Lock: their velocities are
            held at zero and their coordinates where they are; the forward dynamics solve
            the reduced system over the others, docs/minimal.md "Locked joints").
        locked_q: (nq,) bool, the locked joints' configuration entries; locked_v: (nv,) bool,
            their velocity (and tangent) entries.
        gravity: (3,) m/s^2.
    """

    def __init__(self, mech: Mechanism, kinematics_points: list[str] | None = None):
        _refuse_locked_loop_joints(mech)
        self.mech = mech
        self.gravity = np.array(mech.gravity, dtype=float)
        order = _nominal_order(mech)
        # q/v offsets in the nominal order
        joints_info = {}
        for j in mech.tree_joints:
            joint = mech.joints[j]
            ft, fr = joint.free
            # a universal or gimbal joint: fr revolute angles (one tree joint each, below)
            joints_info[j] = (ft, ROT_AXES if JointType(joint.type) in AXES_JOINTS else
                              (ROT_NONE, ROT_REVOLUTE, ROT_SWING, ROT_QUATERNION)[fr])
        nq_of = {j: ft + (mech.joints[j].input_dimension if rot == ROT_AXES else ROT_NQ[rot])
                 for j, (ft, rot) in joints_info.items()}
        nv_of = dict(nq_of)
        nv_of.update({j: ft + ROT_NV[rot] for j, (ft, rot) in joints_info.items() if rot != ROT_AXES})
        q_start, v_start, iq, iv = {}, {}, 0, 0
        config_names, velocity_names = [], []
        for j in order:
            q_start[j], v_start[j] = iq, iv
            iq += nq_of[j]
            iv += nv_of[j]
            ft, rot = joints_info[j]
            if rot == ROT_AXES:  # its angles, each named as its tree joint
                config_names += axis_names(mech.joints[j])
                velocity_names += axis_names(mech.joints[j])
                continue
            cn, vn = _coordinate_names(mech.joints[j], ft, rot, mech.joints[j].type == JointType.FLOATING)
            config_names += cn
            velocity_names += vn
        self.nq, self.nv = iq, iv
        self.nx = self.nq + self.nv
        self.nu = mech.nu
        self.config_names = config_names
        self.velocity_names = velocity_names
        self.torque_names = list(velocity_names)

        # tree joints in the core's order (root to leaves), with their frames
        model_index: dict[int, int] = {}  # scene joint -> the tree joint whose successor frame is its child's
        tree_joint_of_body = {int(mech.child[j]): j for j in mech.tree_joints}
        joints: list[TreeJoint] = []
        for j in mech.tree_joints:
            joint = mech.joints[j]
            ft, rot = joints_info[j]
            if rot == ROT_AXES:
                parent_body = int(mech.parent[j])
                parent_joint = -1 if parent_body == ORIGIN else model_index[tree_joint_of_body[parent_body]]
                joints += _axes_tree_joints(mech, j, parent_joint, len(joints), q_start[j], v_start[j])
                model_index[j] = len(joints) - 1  # the child's frame: the last axis's successor
                continue
            floating = JointType(joint.type) == JointType.FLOATING
            basis = mech.basis[j]
            free = ~mech.constrained[j]
            off = matrix_from_quaternion(np.asarray(joint.orientation_offset, dtype=float))
            parent_body = int(mech.parent[j])
            parent_joint = -1 if parent_body == ORIGIN else model_index[tree_joint_of_body[parent_body]]
            # the parent tree frame is the parent's successor frame: its body frame shifted by
            # the parent's child_vertex (the body's centre of mass is at -child_vertex there)
            parent_com_shift = np.zeros(3) if parent_body == ORIGIN else \
                -np.asarray(mech.child_vertex[tree_joint_of_body[parent_body]], dtype=float)
            if floating:
                rot_p, trans_p = np.eye(3), parent_com_shift.copy()
                directions = basis[:3][free[:3]]  # identity rows: the parent frame's axes
            else:
                rot_p = off
                trans_p = parent_com_shift + np.asarray(joint.parent_vertex, dtype=float)
                directions = basis[:3][free[:3]] @ off  # rows R_off^T b: parent-frame directions in the joint frame
            axis = basis[3:][free[3:]][0] if rot == ROT_REVOLUTE else np.zeros(3)
            swing_axes = np.array(basis[3:][free[3:]], dtype=float) if rot == ROT_SWING else np.zeros((2, 3))
            # translations that do not turn into themselves under the rotation (a spherical or
            # swing rotation with one or two translations): measured in the predecessor frame
            trans_pred = ft > 0 and (rot == ROT_SWING or (rot == ROT_QUATERNION and ft in (1, 2)))
            if rot == ROT_REVOLUTE and ft in (1, 2):
                # translations that a revolute's rotation turns into themselves (along its axis,
                # or a plane normal to it: Dojo's one-axis joints) keep a constant motion
                # subspace; others (skydy's [x, ry] with its own rotation_axis, a tilted
                # orientation_offset) are measured in the predecessor frame, as for a swing
                dots = np.abs(directions @ axis)
                invariant = np.all(dots > 1 - _INVARIANCE_TOL) if ft == 1 else np.all(dots < _INVARIANCE_TOL)
                trans_pred = not invariant
            joints.append(TreeJoint(
                name=joint.name, index=j, type=JointType(joint.type), parent=parent_joint, body=int(mech.child[j]),
                n_trans=ft, directions=np.array(directions, dtype=float).reshape(ft, 3), rot=rot,
                axis=np.array(axis, dtype=float), swing_axes=swing_axes, trans_pred=bool(trans_pred),
                placement_rotation=rot_p, placement_translation=trans_p,
                com=-np.asarray(joint.child_vertex, dtype=float),
                q=slice(q_start[j], q_start[j] + nq_of[j]), v=slice(v_start[j], v_start[j] + nv_of[j]),
                floating=floating, free=mech.joint_free_range[j],
            ))
            model_index[j] = len(joints) - 1
        self.joints = joints
        self.loop_joints = [mech.joints[j].name for j in mech.loop_joints]
        self.is_floating = bool(order) and mech.joints[order[0]].type == JointType.FLOATING \
            and mech.parent[order[0]] == ORIGIN
        self._joint_of_body = {tj.body: k for k, tj in enumerate(joints) if not tj.frame}
        # locked joints (Drake's Lock, docs/minimal.md "Locked joints"): held coordinates
        self.locked_joints = [tj.name for tj in joints if mech.joints[tj.index].locked and tj.v.stop > tj.v.start]
        self.locked_v = np.zeros(self.nv, dtype=bool)
        self.locked_q = np.zeros(self.nq, dtype=bool)
        for tj in joints:
            if tj.name in self.locked_joints:
                self.locked_v[tj.v] = True
                self.locked_q[tj.q] = True

        # kinematics points: every contact point and every leaf body by default
        self.kinematics_points, point_joint, point_offset = [], [], []
        names = kinematics_points if kinematics_points is not None else self._default_points()
        for name in names:
            k, offset = self._point(name)
            self.kinematics_points.append(name)
            point_joint.append(k)
            point_offset.append(offset)

        ti = _core.TreeInput()
        ti.gravity = [float(g) for g in self.gravity]
        ti.parent = [tj.parent for tj in joints]
        ti.n_trans = [tj.n_trans for tj in joints]
        dirs = np.zeros((len(joints), 3, 3))
        for k, tj in enumerate(joints):
            dirs[k, : tj.n_trans] = tj.directions
        ti.trans_dirs = dirs.reshape(-1).tolist()
        ti.rot_kind = [tj.rot for tj in joints]
        ti.axis = np.array([tj.axis for tj in joints]).reshape(-1).tolist()
        ti.placement_rotation = np.array([_quaternion_of(tj.placement_rotation) for tj in joints]).reshape(-1).tolist()
        ti.placement_translation = np.array([tj.placement_translation for tj in joints]).reshape(-1).tolist()
        ti.mass = [0.0 if tj.frame else float(mech.mass[tj.body]) for tj in joints]
        ti.com = np.array([tj.com for tj in joints]).reshape(-1).tolist()
        ti.inertia = np.array([np.zeros((3, 3)) if tj.frame else mech.inertia[tj.body] for tj in joints]).reshape(-1).tolist()
        ti.idx_q = [tj.q.start for tj in joints]
        ti.idx_v = [tj.v.start for tj in joints]
        ti.nq, ti.nv = self.nq, self.nv
        ti.point_joint = point_joint
        ti.point_offset = np.array(point_offset, dtype=float).reshape(-1).tolist()
        # springs and dampers: the scene's, per free coordinate (a tree joint's free coordinates
        # are its velocities, translations then rotation), measured in Dojo's joint frame
        # (tree.h TreeInput), which differs from the predecessor frame for a floating joint only
        spring, damper, spring_offset = np.zeros(self.nv), np.zeros(self.nv), np.zeros(self.nv)
        frame_p, frame_q = np.zeros((len(joints), 3)), np.tile([1.0, 0.0, 0.0, 0.0], (len(joints), 1))
        for k, tj in enumerate(joints):
            cols = tj.free
            spring[tj.v], damper[tj.v], spring_offset[tj.v] = mech.spring[cols], mech.damper[cols], mech.spring_offset[cols]
            if tj.floating:
                frame_p[k] = mech.joints[tj.index].parent_vertex
                frame_q[k] = mech.joints[tj.index].orientation_offset
        ti.spring, ti.damper, ti.spring_offset = spring.tolist(), damper.tolist(), spring_offset.tolist()
        ti.armature = _tree_armature(mech, joints, self.nv).tolist()
        ti.joint_frame_translation = frame_p.reshape(-1).tolist()
        ti.joint_frame_rotation = frame_q.reshape(-1).tolist()
        ti.trans_pred = [int(tj.trans_pred) for tj in joints]
        ti.swing_axes = np.array([tj.swing_axes for tj in joints]).reshape(-1).tolist()
        # locked joints (Drake's Lock): the core's forward dynamics solve the reduced system
        ti.locked = [int(mech.joints[tj.index].locked) for tj in joints]
        self.tree = _core.TreeModel(ti)
        self.data = _core.TreeData(self.tree)
        self.orders: dict[str, tuple[list[str], list[str], list[str]]] = {}

    # ------------------------------------------------------------------ points
    def _default_points(self) -> list[str]:
        names = [c.name for c in self.mech.contacts if c.body in self._joint_of_body]
        has_child = {tj.parent for tj in self.joints}
        names += [self.mech.bodies[tj.body].name for k, tj in enumerate(self.joints) if k not in has_child]
        return names

    def _point(self, name: str) -> tuple[int, np.ndarray]:
        """(tree joint, offset in its successor frame) of a contact or body name."""
        for c in self.mech.contacts:
            if c.name == name:
                k = self._joint_of_body.get(c.body)
                if k is None:
                    break
                return k, np.asarray(c.offset, dtype=float) + self.joints[k].com
        for b, body in enumerate(self.mech.bodies):
            if body.name == name and b in self._joint_of_body:
                k = self._joint_of_body[b]
                return k, self.joints[k].com.copy()
        known = [c.name for c in self.mech.contacts] + [b.name for b in self.mech.bodies]
        raise SceneError(f"kinematics point {name!r}: no contact or tree body of that name (known: {', '.join(known)})")

    def __repr__(self) -> str:
        return (f"MinimalModel({self.mech.name!r}, nq={self.nq}, nv={self.nv}, nu={self.nu}, "
                f"floating={self.is_floating}, points={len(self.kinematics_points)})")

    # -------------------------------------------------------------- maximal
    def state_from_maximal(self, z) -> np.ndarray:
        """The minimal state x (nx,) of a maximal state z (13 nb,) [x, v, q, w] per body.

        Coordinates from the bodies' relative poses; velocities from their relative
        twists (the maximal state's velocities taken as those at the same instant).
        """
        z = np.asarray(z, dtype=float).reshape(self.mech.nb, 13)
        xq = np.zeros(self.nq)
        xv = np.zeros(self.nv)
        frames = {}  # tree joint -> (R, p, w_world, v_origin_world) of its successor frame
        axes = None  # a universal or gimbal joint's angles and their rates at the same instant (the core's)
        for k, tj in enumerate(self.joints):
            if JointType(tj.type) in AXES_JOINTS:
                if axes is None:
                    flat = np.ascontiguousarray(z.reshape(-1))
                    theta = np.asarray(_core.maximal_to_minimal(self.mech.core, flat)).reshape(-1)
                    rates = np.asarray(_core.instantaneous_minimal_velocities(self.mech.core, flat)).reshape(-1)
                    axes = (theta, rates)
                f = tj.free.start
                j0 = self.mech.joint_free_range[tj.index].start
                # maximal_to_minimal's layout: per joint [coordinates; velocities] from 2 * its first free
                xq[tj.q] = axes[0][2 * j0 + (f - j0)]
                xv[tj.v] = axes[1][f]
                if tj.frame:
                    continue
                s = z[tj.body]
                Rb = matrix_from_quaternion(s[6:10])
                p_s = s[0:3] - Rb @ tj.com
                frames[k] = (Rb, p_s, Rb @ s[10:13], s[3:6] + np.cross(Rb @ s[10:13], p_s - s[0:3]))
                continue
            s = z[tj.body]
            Rb = matrix_from_quaternion(s[6:10])
            p_s = s[0:3] - Rb @ tj.com  # successor origin: the child's joint point
            w_b = Rb @ s[10:13]
            v_s = s[3:6] + np.cross(w_b, p_s - s[0:3])
            if tj.parent < 0:
                Rl, pl, wl, vl = np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)
            else:
                Rl, pl, wl, vl = frames[tj.parent]
            R_p = Rl @ tj.placement_rotation
            p_p = pl + Rl @ tj.placement_translation
            v_p = vl + np.cross(wl, p_p - pl)
            R_j = R_p.T @ Rb
            p_j = R_p.T @ (p_s - p_p)
            frames[k] = (Rb, p_s, w_b, v_s)
            q = xq[tj.q]
            q[: tj.n_trans] = tj.directions @ p_j
            if tj.rot == ROT_REVOLUTE:
                q[tj.n_trans] = float(np.dot(tj.axis, quat_to_axis_angle(rot_to_quat(R_j))))
            elif tj.rot == ROT_QUATERNION:
                q[tj.n_trans:] = rot_to_quat(R_j)
            elif tj.rot == ROT_SWING:
                phi = quat_to_axis_angle(rot_to_quat(R_j))  # log, angle in [0, pi]
                q[tj.n_trans:] = tj.swing_axes @ phi
            # relative twist in the successor frame, projected on S (orthonormal columns)
            lin = Rb.T @ (v_s - v_p - np.cross(wl, p_s - p_p))
            ang = Rb.T @ (w_b - wl)
            v = xv[tj.v]
            v[: tj.n_trans] = tj.directions @ (R_j @ lin if tj.trans_pred else lin)
            if tj.rot == ROT_REVOLUTE:
                v[tj.n_trans] = float(np.dot(tj.axis, ang))
            elif tj.rot == ROT_QUATERNION:
                v[tj.n_trans:] = ang
            elif tj.rot == ROT_SWING:
                # w = A(q) q' (A = J_r(phi) [b1 b2], the core's): q' solves it (exactly for a swing's w)
                A = self.swing_jacobian(k, q[tj.n_trans:])
                v[tj.n_trans:] = np.linalg.lstsq(A, ang, rcond=None)[0]
        return np.concatenate([xq, xv])

    def swing_jacobian(self, k: int, qr) -> np.ndarray:
        """A (3, 2) = J_r(phi) [b1 b2] of swing tree joint k at its coordinates qr (2,): its
        body angular velocity per coordinate rate (core tree_swing_jacobian)."""
        return np.asarray(_core.tree_swing_jacobian(self.tree, int(k), np.ascontiguousarray(qr, dtype=float)))

    def bodies_from_state(self, x) -> dict[str, np.ndarray]:
        """Body centres of mass and velocities of a minimal state x (nx,), from the core's
        forward kinematics: ``x`` (nb, 3) positions (world), ``q`` (nb, 4) orientations,
        ``v`` (nb, 3) centre-of-mass velocities (world), ``w`` (nb, 3) angular velocities
        (body frame); bodies in scene order (bodies off the tree stay at zero)."""
        R, p, twist = _core.tree_placements(self.tree, self.data, np.ascontiguousarray(x, dtype=float))
        nb = self.mech.nb
        out = {"x": np.zeros((nb, 3)), "q": np.tile([1.0, 0, 0, 0], (nb, 1)), "v": np.zeros((nb, 3)), "w": np.zeros((nb, 3))}
        for k, tj in enumerate(self.joints):
            if tj.frame:
                continue
            c = p[k] + R[k] @ tj.com
            out["x"][tj.body] = c
            out["q"][tj.body] = rot_to_quat(R[k])
            out["v"][tj.body] = twist[k, :3] + np.cross(twist[k, 3:], c)
            out["w"][tj.body] = R[k].T @ twist[k, 3:]
        return out


def _axes_tree_joints(mech: Mechanism, j: int, parent_joint: int, first: int, q0: int, v0: int) -> list[TreeJoint]:
    """The revolute tree joints of universal or gimbal joint j, one per axis (module doc):
    R(a1, t1) R(a2, t2) [R(a3, t3)] in the joint frame, each axis in the frame the ones
    before it turned (the same numbers: the rotational basis rows, core euler_joints.h)."""
    joint = mech.joints[j]
    n = joint.input_dimension
    names = axis_names(joint)
    parent_body = int(mech.parent[j])
    # the parent tree frame is the parent's successor frame (its body frame shifted by -com)
    shift = np.zeros(3) if parent_body == ORIGIN else \
        -np.asarray(mech.child_vertex[mech.tree_joint_of_body[parent_body]], dtype=float)
    off = matrix_from_quaternion(np.asarray(joint.orientation_offset, dtype=float))
    free = mech.joint_free_range[j]
    out = []
    for i in range(n):
        last = i == n - 1
        out.append(TreeJoint(
            name=names[i], index=j, type=JointType(joint.type), parent=parent_joint if i == 0 else first + i - 1,
            body=int(mech.child[j]) if last else -1, n_trans=0, directions=np.zeros((0, 3)), rot=ROT_REVOLUTE,
            axis=np.array(mech.basis[j, 3 + i], dtype=float), swing_axes=np.zeros((2, 3)), trans_pred=False,
            placement_rotation=off if i == 0 else np.eye(3),
            placement_translation=(shift + np.asarray(joint.parent_vertex, dtype=float)) if i == 0 else np.zeros(3),
            com=-np.asarray(joint.child_vertex, dtype=float) if last else np.zeros(3),
            q=slice(q0 + i, q0 + i + 1), v=slice(v0 + i, v0 + i + 1), floating=False,
            free=slice(free.start + i, free.start + i + 1), frame=not last,
        ))
    return out


def _quaternion_of(R: np.ndarray) -> np.ndarray:
    return rot_to_quat(R)


def _tree_armature(mech: Mechanism, joints: list[TreeJoint], nv: int) -> np.ndarray:
    """(nv,) rotor inertia per velocity entry (tree.h TreeInput.armature).

    The kinetic energy 1/2 a theta_dot^2 of a coordinate is 1/2 a v_k^2 where the velocity
    entry is the coordinate's rate: a revolute rotation (v = theta_dot), translations whose
    rate map E_t = T R_J T^T is the identity (no rotation, a translation along the rotation
    axis, or translations measured in the predecessor frame). Elsewhere it is refused: on
    the rotations of a 2- or 3-rotation joint and on a loop-closing joint (no such entry),
    and on translations that turn with the joint's rotation (planar_axis, free_revolute):
    there v_t is the rate in the turning frame, and d/dt (a theta_dot_t) = a (vdot_t + psi_dot
    x v_t) has a Coriolis term beyond M += a.

    Raises:
        SceneError: naming the joint's ``armature`` field.
    """
    out = np.zeros(nv)
    if not mech.has_armature:
        return out
    source = getattr(mech, "source", None)
    problems = []

    def refuse(index: int, message: str) -> None:
        field = f"joints.{index}.armature"
        if source is not None:
            problems.append(source.problem(field, message))
        else:
            problems.append(Problem(f"mechanism {mech.name!r}", None, field, message))

    tree = {tj.index for tj in joints}
    for i in mech.loop_joints:
        if i not in tree and np.any(mech.armature[mech.joint_free_range[i]] != 0):
            refuse(i, "rotor inertia on a loop-closing joint is not modelled (the tree's mass matrix has no entry for it)")
    for tj in joints:
        a = mech.armature[tj.free]
        if not np.any(a != 0):
            continue
        nt = tj.n_trans
        rotations = a[nt:]
        if np.any(rotations != 0) and tj.rot != ROT_REVOLUTE:
            refuse(tj.index, f"rotor inertia on the rotations of a {JointType(tj.type).value} joint is not modelled "
                             "(only on a revolute rotation and on translations)")
            continue
        turning = tj.rot != ROT_NONE and not tj.trans_pred and nt > 1
        if turning and np.any(a[:nt] != 0):
            refuse(tj.index, f"rotor inertia on the translations of a {JointType(tj.type).value} joint, which turn with its "
                             "rotation, is not modelled (its Coriolis term); only on its rotation")
            continue
        out[tj.v] = a
    if problems:
        raise SceneError(problems)
    return out


def _refuse_locked_loop_joints(mech: Mechanism) -> None:
    """A locked loop-closing joint: the rk4 loop solve holds a loop joint's constrained
    directions only (rk4.h), so the lock of its free ones has no rows there; refused.

    Raises:
        SceneError: naming every such joint (file, line and field when the scene is known).
    """
    locked = [j for j in mech.loop_joints if mech.joints[j].locked and mech.joints[j].input_dimension > 0]
    if not locked:
        return
    source = getattr(mech, "source", None)
    problems = []
    for i in locked:
        name = mech.joints[i].name
        message = (f"joint {name!r} is a locked loop-closing joint; the minimal-coordinate layer (the rk4 integrator, "
                   f"dojo dynamics, dojo analyze, dojo_cli.minimal) locks tree joints only: lock a tree joint of the "
                   f"loop instead, use the variational integrator, or unlock it (--set joints.{name}.locked=false)")
        if source is not None:
            problems.append(source.problem(f"joints.{i}.locked", message))
        else:
            problems.append(Problem(f"mechanism {mech.name!r}", None, f"joints.{i}.locked", message))
    raise SceneError(problems)


def build_model(mech: Mechanism, kinematics_points: list[str] | None = None) -> MinimalModel:
    """The minimal-coordinate model of a scene (``mech`` from ``dojo.load_scene``).

    Args:
        mech: the mechanism.
        kinematics_points: names of contacts or bodies whose positions ``kinematics``
            reports (default: every contact point, then every leaf body).

    Raises:
        SceneError: a kinematics point is unknown, or a loop-closing joint is locked.
    """
    return MinimalModel(mech, kinematics_points)
