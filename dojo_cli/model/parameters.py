"""Named physical parameters of a Mechanism: read them, and rebuild with new values.

Labels are dotted paths like the scene's (``bodies.box.mass``,
``bodies.box.inertia.xy``, ``gravity.z``, ``joints.hinge.spring.0``,
``contacts.foot.friction``, ``contacts.foot.radius``, ``contacts.foot.offset.x``,
``contacts.foot.restitution``). A kind (``mass``, ``inertia``, ``gravity``, ``spring``,
``damper``, ``friction``, ``radius``, ``offset``, ``restitution``) expands to one label per instance, in body, joint or
contact order. ``joints.hinge.locked`` (1 locked, 0 not; Drake's Lock / Unlock) is read
and set here too, but is no kind: it is not differentiable. Parameter gradients (simulation.gradients) use the same labels, so a
fit can read values, step along the gradient and rebuild (``with_parameters``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dojo_cli.model.mechanism import Mechanism

PARAMETER_KINDS = ("mass", "inertia", "gravity", "spring", "damper", "friction", "radius", "offset", "restitution")
INERTIA_COMPONENTS = ("xx", "yy", "zz", "xy", "xz", "yz")
_INERTIA_INDEX = {"xx": (0, 0), "yy": (1, 1), "zz": (2, 2), "xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}
_AXES = {"x": 0, "y": 1, "z": 2}


def _free_slots(mech: Mechanism) -> list[tuple[int, int]]:
    """(joint, index among that joint's free coordinates) per free coordinate."""
    out = []
    for f in range(mech.nf):
        j = int(mech.free_joint[f])
        out.append((j, f - mech.joint_free_range[j].start))
    return out


def parameter_labels(mech: Mechanism, kinds) -> list[str]:
    """Labels of the parameter kinds, in order (see the module docstring)."""
    labels: list[str] = []
    for kind in kinds:
        bodies = [b.name for b in mech.bodies]
        contacts = [c.name for c in mech.contacts]
        if kind == "mass":
            labels += [f"bodies.{n}.mass" for n in bodies]
        elif kind == "inertia":
            labels += [f"bodies.{n}.inertia.{c}" for n in bodies for c in INERTIA_COMPONENTS]
        elif kind == "gravity":
            labels += ["gravity.x", "gravity.y", "gravity.z"]
        elif kind in ("spring", "damper"):
            labels += [f"joints.{mech.joints[j].name}.{kind}.{i}" for j, i in _free_slots(mech)]
        elif kind == "friction":
            labels += [f"contacts.{n}.friction" for n in contacts]
        elif kind == "radius":
            labels += [f"contacts.{n}.radius" for n in contacts]
        elif kind == "offset":
            labels += [f"contacts.{n}.offset.{c}" for n in contacts for c in "xyz"]
        elif kind == "restitution":
            labels += [f"contacts.{n}.restitution" for n in contacts]
        else:
            raise ValueError(f"unknown parameter kind {kind!r}; expected one of {', '.join(PARAMETER_KINDS)}")
    return labels


def _parse(mech: Mechanism, label: str):
    parts = label.split(".")
    try:
        if parts[0] == "gravity" and len(parts) == 2:
            return ("gravity", _AXES[parts[1]])
        if parts[0] == "bodies":
            i = mech.body_index(parts[1]) if hasattr(mech, "body_index") else [b.name for b in mech.bodies].index(parts[1])
            if parts[2:] == ["mass"]:
                return ("mass", i)
            if parts[2] == "inertia" and len(parts) == 4:
                return ("inertia", i, _INERTIA_INDEX[parts[3]])
        if parts[0] == "joints" and parts[2:] == ["locked"]:
            return ("locked", [jt.name for jt in mech.joints].index(parts[1]))
        if parts[0] == "joints" and parts[2] in ("spring", "damper") and len(parts) == 4:
            j = [jt.name for jt in mech.joints].index(parts[1])
            k = int(parts[3])
            r = mech.joint_free_range[j]
            if not 0 <= k < r.stop - r.start:
                raise ValueError
            return (parts[2], mech.joint_free_range[j].start + k)
        if parts[0] == "contacts":
            c = [ct.name for ct in mech.contacts].index(parts[1])
            if parts[2:] in (["friction"], ["radius"], ["restitution"]):
                return (parts[2], c)
            if parts[2] == "offset" and len(parts) == 4:
                return ("offset", c, _AXES[parts[3]])
    except (ValueError, KeyError, IndexError):
        pass
    raise ValueError(f"unknown parameter {label!r} (see dojo_cli.model.parameters for the label forms)")


def parameter_values(mech: Mechanism, labels) -> np.ndarray:
    """Current values of the labelled parameters."""
    out = []
    for label in labels:
        key = _parse(mech, label)
        kind = key[0]
        if kind == "gravity":
            out.append(mech.gravity[key[1]])
        elif kind == "mass":
            out.append(mech.mass[key[1]])
        elif kind == "inertia":
            out.append(mech.inertia[key[1]][key[2]])
        elif kind in ("spring", "damper"):
            out.append(getattr(mech, kind)[key[1]])
        elif kind == "locked":
            out.append(float(mech.joints[key[1]].locked))
        elif kind == "offset":
            out.append(np.asarray(mech.contacts[key[1]].offset, dtype=float)[key[2]])
        else:
            out.append(getattr(mech.contacts[key[1]], kind))
    return np.array(out, dtype=float)


def with_parameters(mech: Mechanism, labels, values) -> Mechanism:
    """A new Mechanism equal to ``mech`` but for the labelled parameters set to ``values``."""
    bodies = [replace(b, inertia=np.array(b.inertia, dtype=float)) for b in mech.bodies]
    contacts = [replace(c, offset=np.array(c.offset, dtype=float)) for c in mech.contacts]
    joints = list(mech.joints)
    gravity = mech.gravity.copy()
    spring, damper = mech.spring.copy(), mech.damper.copy()
    touched_joints = False
    locked: dict[int, bool] = {}
    for label, value in zip(labels, np.asarray(values, dtype=float).reshape(-1)):
        key = _parse(mech, label)
        kind = key[0]
        if kind == "locked":
            if value not in (0.0, 1.0):
                raise ValueError(f"{label}: expected 1 (locked) or 0 (unlocked), got {value:g}")
            locked[key[1]] = bool(value)
        elif kind == "gravity":
            gravity[key[1]] = value
        elif kind == "mass":
            bodies[key[1]] = replace(bodies[key[1]], mass=float(value))
        elif kind == "inertia":
            r, c = key[2]
            bodies[key[1]].inertia[r, c] = bodies[key[1]].inertia[c, r] = value
        elif kind in ("spring", "damper"):
            (spring if kind == "spring" else damper)[key[1]] = value
            touched_joints = True
        elif kind == "offset":
            contacts[key[1]].offset[key[2]] = value
        else:
            contacts[key[1]] = replace(contacts[key[1]], **{kind: float(value)})
    if touched_joints:
        joints = [
            replace(
                jt,
                spring=spring[mech.joint_free_range[j]].copy(),
                damper=damper[mech.joint_free_range[j]].copy(),
            )
            for j, jt in enumerate(mech.joints)
        ]
    for j, value in locked.items():  # a new Model: the lock rows are part of the step's structure
        joints[j] = replace(joints[j], locked=value)
    out = Mechanism(bodies, joints, timestep=mech.timestep, gravity=gravity, name=mech.name, contacts=contacts,
                    actuators=list(mech.actuators))
    # what a scene attached (initial state, solver options, controller, ...) carries over
    return out.with_run_setup(**mech.run_setup())
