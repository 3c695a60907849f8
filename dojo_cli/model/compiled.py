"""Compile a Mechanism's arrays into the C++ core's frozen Model.

The Mechanism (model/mechanism.py) validates the description and chooses the
joint bases; this module hands its flat arrays to ``dojo_cli._core.Model``, whose
constructor derives the step's structure once (unknown layout, Newton block
pattern, elimination order, symbolic factorisation). Nothing here runs per step.
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import Problem, SceneError
from dojo_cli.math.quaternion import matrix_from_quaternion

# The core's enums by name -> code, read from the core, which defines them
# (core/maximal/contact_params.h, collision_kind.h).
CONTACT_MODEL_CODE = {name: code for code, name in enumerate(_core.CONTACT_MODELS)}
COLLISION_KIND_CODE = {name: code for code, name in enumerate(_core.COLLISION_KINDS)}
SHAPE_PARAMETERS = _core.SHAPE_SIZE  # per contact: the kind's parameters, padded
SHAPE_A_PARAMETERS = _core.SHAPE_A_SIZE  # per contact: body a's primitive beyond the sphere

# The real-valued ModelInput fields a user writes -> (what an entry belongs to, entries
# per owner, the scene field it comes from), so that a value the core would refuse is
# named as the scene names it (joints.0.axis, not ModelInput.basis). Read from the core's
# one field list (core/maximal/fields.h). Owners: the scene (None), "bodies", "joints",
# "free" (a joint's free coordinate), "limits", "contacts".
_SCENE_FIELDS = {
    f["name"]: (f["owner"] or None, f["width"], f["scene"])
    for f in _core.MODEL_INPUT_FIELDS
    if f["scene"] and f["type"] == "double"
}


def contact_shape_parameters(contact, hull_index: int | None = None) -> np.ndarray:
    """The 7 kind parameters of a contact (core/maximal/collision_kind.h's kShapeSize layout);
    a hull contact's are its hull's index among the model's (``hull_index``; 0 where the hull
    is handed over on its own, contact_hull())."""
    p = contact.params
    out = np.zeros(SHAPE_PARAMETERS)
    if contact.kind in ("halfspace", "circle_halfspace"):
        out[0:3], out[3:6] = p["normal"], p["point"]
    elif contact.kind == "sphere":
        out[0:3], out[3] = p["offset"], p["radius"]
    elif contact.kind in ("capsule", "segment_capsule", "cylinder", "segment_cylinder"):
        out[0:3], out[3:6], out[6] = p["end1"], p["end2"], p["radius"]
    elif contact.kind == "hull":
        out[0] = hull_index if hull_index is not None else 0.0  # the hull itself: ModelInput's hull_* fields
    else:
        out[0:3], out[3:6] = p["centre"], p["half_sizes"]
    return out


def contact_hull(contact) -> tuple[np.ndarray, np.ndarray] | None:
    """A hull contact's hull, (vertices (n, 3) in the other body's frame, triangles (m, 3)
    indices), as ``_core.contact_geometry(..., hull=)`` takes it; None for any other kind."""
    if contact.kind != "hull":
        return None
    return np.asarray(contact.params["vertices"], float).reshape(-1, 3), np.asarray(contact.params["triangles"]).reshape(-1, 3)


def _hull_store(contacts) -> tuple[list[int], list[float], list[int], list[int]]:
    """Each contact's hull index (-1: not a hull contact) and ModelInput's hull_vertices,
    hull_triangles (indices into hull_vertices) and hull_triangle_start, one entry per distinct hull."""
    index: dict[tuple[bytes, bytes], int] = {}
    of_contact, vertices, triangles, start = [], [], [], [0]
    for c in contacts:
        hull = contact_hull(c)
        if hull is None:
            of_contact.append(-1)
            continue
        key = (hull[0].tobytes(), hull[1].astype(np.int64).tobytes())
        if key not in index:
            index[key] = len(index)
            first = len(vertices) // 3
            vertices += hull[0].reshape(-1).tolist()
            triangles += (hull[1].astype(np.int64) + first).reshape(-1).tolist()
            start.append(len(triangles) // 3)
        of_contact.append(index[key])
    return of_contact, vertices, triangles, start if len(start) > 1 else []


def model_input(mech) -> _core.ModelInput:
    """The core's description of a mechanism (flat, row-major arrays)."""
    m = _core.ModelInput()
    m.timestep = mech.timestep
    m.gravity = [float(g) for g in mech.gravity]
    m.mass = mech.mass.tolist()
    m.inertia = mech.inertia.reshape(-1).tolist()
    m.parent = [int(p) for p in mech.parent]
    m.child = [int(c) for c in mech.child]
    m.parent_vertex = mech.parent_vertex.reshape(-1).tolist()
    m.child_vertex = mech.child_vertex.reshape(-1).tolist()
    m.orientation_offset = mech.orientation_offset.reshape(-1).tolist()
    m.basis = mech.basis.reshape(-1).tolist()
    m.constrained = mech.constrained.astype(int).reshape(-1).tolist()
    m.locked = [int(v) for v in mech.locked]
    m.joint_rotation = [int(v) for v in mech.joint_rotation]
    m.spring = mech.spring.tolist()
    m.damper = mech.damper.tolist()
    m.spring_offset = mech.spring_offset.tolist()
    m.damper_implicit = [int(v) for v in mech.damper_implicit]
    m.joint_friction = mech.joint_friction.tolist()
    rotors = rotor_coordinates(mech)
    linear = [int(mech.free_slot[f]) < 3 for f in rotors]  # translational slots are 0..2 (model.h basis)
    m.rotor_joint = [int(mech.free_joint[f]) for f in rotors]
    m.rotor_armature = [float(mech.armature[f]) for f in rotors]
    m.rotor_linear = [int(v) for v in linear]
    # an angular rotor's unit rotation axis in the child's frame (and the parent's below); a
    # linear rotor's: the translation's basis row, world frame (its parent is the world), so
    # that the rate n . v_c is the coordinate's rate exactly
    axes = [np.asarray(mech.basis[mech.free_joint[f], mech.free_slot[f]], float) if lin else
            np.asarray(mech.joints[mech.free_joint[f]].element_axes[1], float) for f, lin in zip(rotors, linear)]
    axes = [a if lin else a / np.linalg.norm(a) for a, lin in zip(axes, linear)]
    m.rotor_axis_child = [float(v) for a in axes for v in a]
    m.rotor_axis_parent = [float(v) for f, a, lin in zip(rotors, axes, linear)
                           for v in (np.zeros(3) if lin else
                                     matrix_from_quaternion(mech.joints[mech.free_joint[f]].orientation_offset) @ a)]
    m.limit_free = [int(f) for f in mech.limit_free]
    m.limit_sign = mech.limit_sign.tolist()
    m.limit_bound = mech.limit_bound.tolist()
    cs = mech.contacts
    m.contact_body = [int(c.body) for c in cs]
    m.contact_other = [int(c.other) for c in cs]  # ORIGIN (-1) is the core's kWorld
    m.contact_model = [CONTACT_MODEL_CODE[c.model] for c in cs]
    m.contact_kind = [COLLISION_KIND_CODE[c.kind] for c in cs]
    m.contact_friction = [float(c.friction) for c in cs]
    m.contact_radius = [float(c.radius) for c in cs]
    m.contact_offset = [float(v) for c in cs for v in np.asarray(c.offset, float).reshape(3)]
    hull_of, hull_vertices, hull_triangles, hull_triangle_start = _hull_store(cs)
    m.hull_vertices = hull_vertices
    m.hull_triangles = hull_triangles
    m.hull_triangle_start = hull_triangle_start
    m.contact_shape = [float(v) for c, k in zip(cs, hull_of) for v in contact_shape_parameters(c, k)]
    m.contact_restitution = [float(c.restitution) for c in cs]
    m.contact_shape_a = [float(v) for c in cs for v in np.asarray(c.shape_a, float).reshape(SHAPE_A_PARAMETERS)]
    m.contact_margin = [float(c.margin) for c in cs]
    acts = mech.actuators  # empty: one input per free coordinate (the core's default)
    m.actuator_free = [int(f) for f in mech.actuator_free] if acts else []
    m.actuator_body = [int(a.body) for a in acts]
    m.actuator_gain = [float(a.gain) for a in acts]

    def vec(v):
        return [0.0, 0.0, 0.0] if v is None else [float(x) for x in np.asarray(v, float).reshape(3)]

    m.actuator_force = [x for a in acts for x in vec(a.force)]
    m.actuator_point = [x for a in acts for x in vec(a.point)]
    m.actuator_torque = [x for a in acts for x in vec(a.torque)]
    return m


# A joint's parent index for the world (dojo_cli.model.mechanism.ORIGIN, the core's kWorld;
# mechanism imports this module).
_WORLD = -1


def rotor_coordinates(mech) -> list[int]:
    """Free coordinates whose rotor inertia the variational integrator models (core
    maximal/rotor.h), with a nonzero armature: the rotation of a joint with exactly one free
    rotation (revolute, cylindrical, planar_axis, free_revolute), and a translation of a
    joint from the world whose rate is the child's velocity along it
    (``linear_rotor_applies``)."""
    out = []
    armature = getattr(mech, "armature", None)
    if armature is None:
        return out
    for f in np.flatnonzero(np.asarray(armature) != 0):
        j = int(mech.free_joint[f])
        joint = mech.joints[j]
        n_trans, n_rot = joint.free
        if int(mech.free_slot[f]) >= 3:  # rotational slots are 3..5 (model.h basis)
            if n_rot == 1:
                out.append(int(f))
        elif linear_rotor_applies(int(mech.parent[j]) == _WORLD, n_rot, mech.child_vertex[j]):
            out.append(int(f))
    return out


def linear_rotor_applies(parent_is_world: bool, free_rotations: int, child_vertex) -> bool:
    """Whether the variational integrator models a translation's armature (core maximal/rotor.h,
    linear rotors): its joint's parent is the world and the child does not turn (no free
    rotation) or its anchor is its centre of mass (child_vertex 0), so that the
    coordinate's rate is the child's velocity along a fixed axis."""
    return parent_is_world and (free_rotations == 0 or not np.any(np.asarray(child_vertex, float) != 0.0))


ARMATURE_MESSAGE = ("the variational integrator models rotor inertia (armature) on the rotation of a joint with one "
                    "free rotation (revolute, cylindrical, planar_axis, free_revolute) and on the translations of a "
                    "joint from the world whose child does not turn or is held at its centre of mass; on other "
                    "translations and on 2-3 rotation joints the minimal-coordinate layer may (integrator: rk4)")


def unsupported_armature(mech) -> list[int]:
    """Joints with an armature the variational integrator does not model (core maximal/rotor.h)."""
    if not getattr(mech, "has_armature", False):
        return []
    modelled = set(rotor_coordinates(mech))
    bad = {int(mech.free_joint[f]) for f in np.flatnonzero(np.asarray(mech.armature) != 0) if int(f) not in modelled}
    return sorted(bad)


def compile_model(mech) -> _core.Model:
    """The frozen core Model of a mechanism.

    Raises:
        SceneError: the core rejects the description (a value that is not finite, an
            index out of range); the problem names the scene field where it can.
    """
    m = model_input(mech)
    problem = _non_finite_field(mech, m)
    if problem is not None:
        raise SceneError(problem)
    try:
        return _core.Model(m)
    except (ValueError, TypeError) as exc:
        raise SceneError(f"mechanism {mech.name!r}: {exc}") from None
    except MemoryError:
        # the Newton matrix's block structure (core model.cpp: its elimination orders) grows with
        # the contacts on one body; thousands of pairs on a body exhaust memory at compile time
        raise SceneError(f"mechanism {mech.name!r}: {_too_large(mech)}") from None


def _too_large(mech) -> str:
    """Why a model did not fit in memory when compiled: its contacts, the most on one body."""
    per_body: dict[int, int] = {}
    for c in mech.contacts:
        for b in (c.body, c.other):
            if b >= 0:
                per_body[b] = per_body.get(b, 0) + 1
    text = (f"the compiled model did not fit in memory ({mech.nb} bodies, {mech.nc} contacts; the Newton matrix's "
            "block structure grows with the contacts on each body)")
    if per_body:
        most = sorted(per_body.items(), key=lambda kv: -kv[1])[:3]
        text += "; the most on one body: " + ", ".join(f"{mech.bodies[b].name!r} {n}" for b, n in most)
        text += "; fewer contacts (collisions: exclude pairs, fewer hull points) make it smaller"
    return text


def _non_finite_field(mech, m: _core.ModelInput) -> Problem | None:
    """The first value the core would refuse as not finite, named by its scene field."""
    for attribute, (owner, width, name) in _SCENE_FIELDS.items():
        values = np.asarray(getattr(m, attribute), dtype=float).reshape(-1)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size == 0:
            continue
        k = int(bad[0]) // width
        if owner is None:
            path = name
        elif owner == "free":
            path = f"joints.{int(mech.free_joint[k])}.{name}"
        elif owner == "limits":
            path = f"joints.{int(mech.free_joint[mech.limit_free[k]])}.{name}"
        else:
            path = f"{owner}.{k}.{name}"
        return Problem(f"mechanism {mech.name!r}", None, path, f"not finite (the core's ModelInput.{attribute} has {values[bad[0]]})")
    return None
