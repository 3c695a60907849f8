"""Pinocchio as the independent oracle: a pin.Model built from a MinimalModel's tree
description (joint by joint, Pinocchio's own joint models), and the conversions of
our vectors into its order. For URDF robots the tests also build Pinocchio's model
from the URDF file itself (tests/minimal/test_pinocchio.py)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from dojo_cli.minimal.model import ROT_NONE, ROT_QUATERNION, ROT_REVOLUTE, MinimalModel


def _inertia(model: MinimalModel, tj) -> pin.Inertia:
    mech = model.mech
    if tj.frame:  # a massless frame between a universal or gimbal joint's axes
        return pin.Inertia.Zero()
    return pin.Inertia(float(mech.mass[tj.body]), np.array(tj.com), np.array(mech.inertia[tj.body]))


def build(model: MinimalModel) -> tuple[pin.Model, dict]:
    """(pin model, {tree joint name: (pin joint id or None for fixed, kind)})."""
    pm = pin.Model()
    pm.gravity.linear = np.array(model.gravity)
    frames: dict[int, tuple[int, pin.SE3]] = {}
    info = {}
    # depth first: Pinocchio needs each subtree's velocities contiguous (its CRBA fills
    # blocks of nvSubtree columns)
    children: dict[int, list[int]] = {}
    for k, tj in enumerate(model.joints):
        children.setdefault(tj.parent, []).append(k)
    walk: list[int] = []

    def visit(k: int) -> None:
        walk.append(k)
        for c in children.get(k, []):
            visit(c)

    for root in children.get(-1, []):
        visit(root)
    for k in walk:
        tj = model.joints[k]
        parent_id, Fp = (0, pin.SE3.Identity()) if tj.parent < 0 else frames[tj.parent]
        placement = Fp * pin.SE3(np.array(tj.placement_rotation), np.array(tj.placement_translation))
        F = pin.SE3.Identity()
        nt, rot = tj.n_trans, tj.rot
        kind = "plain"
        if nt == 0 and rot == ROT_NONE:
            F = placement
            pm.appendBodyToJoint(parent_id, F.act(_inertia(model, tj)), pin.SE3.Identity())
            frames[k] = (parent_id, F)
            info[tj.name] = (None, "fixed")
            continue
        if tj.floating:
            jm, kind = pin.JointModelFreeFlyer(), "floating"
        elif nt == 0 and rot == ROT_REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(np.array(tj.axis))
        elif nt == 0 and rot == ROT_QUATERNION:
            jm, kind = pin.JointModelSpherical(), "spherical"
        elif nt == 2 and rot == ROT_REVOLUTE and not tj.trans_pred:
            d1, d2 = tj.directions
            n = np.cross(d1, d2)
            assert np.allclose(n, tj.axis), "planar joint with a left-handed plane basis"
            Rv = np.column_stack([d1, d2, n])
            placement = placement * pin.SE3(Rv, np.zeros(3))
            F = pin.SE3(Rv.T, np.zeros(3))
            jm, kind = pin.JointModelPlanar(), "planar"
        elif rot == ROT_NONE or (rot == ROT_REVOLUTE and (nt == 1 or tj.trans_pred)):
            # translations then the rotation; with translations in the predecessor frame
            # (trans_pred: skydy's [x, ry], [x, y, rx]) a composite's velocities are their rates
            jm = pin.JointModelComposite()
            for d in tj.directions:
                jm.addJoint(pin.JointModelPrismaticUnaligned(np.array(d)))
            if rot == ROT_REVOLUTE:
                jm.addJoint(pin.JointModelRevoluteUnaligned(np.array(tj.axis)))
        else:
            raise NotImplementedError(f"no Pinocchio joint for {tj.name}")
        jid = pm.addJoint(parent_id, jm, placement, tj.name)
        pm.appendBodyToJoint(jid, F.act(_inertia(model, tj)), pin.SE3.Identity())
        frames[k] = (jid, F)
        info[tj.name] = (jid, kind)
    return pm, info


def converters(model: MinimalModel, pm: pin.Model, info: dict):
    """(q_of(x) -> pin q, v_of(x) -> pin v, perm) with perm[i] = our velocity index of pin's i."""
    joints = {tj.name: tj for tj in model.joints}
    perm = np.zeros(pm.nv, dtype=int)
    for name, (jid, kind) in info.items():
        if jid is None:
            continue
        tj = joints[name]
        iv = pm.joints[jid].idx_v
        perm[iv: iv + pm.joints[jid].nv] = np.arange(tj.v.start, tj.v.stop)

    def q_of(x):
        out = np.zeros(pm.nq)
        for name, (jid, kind) in info.items():
            if jid is None:
                continue
            q = np.asarray(x)[joints[name].q]
            iq = pm.joints[jid].idx_q
            if kind == "floating":
                val = np.concatenate([q[:3], q[4:7], q[3:4]])
            elif kind == "spherical":
                val = np.concatenate([q[1:4], q[0:1]])
            elif kind == "planar":
                val = np.array([q[0], q[1], np.cos(q[2]), np.sin(q[2])])
            else:
                val = q
            out[iq: iq + pm.joints[jid].nq] = val
        return out

    def v_of(x):
        return np.asarray(x)[model.nq:][perm]

    return q_of, v_of, perm
