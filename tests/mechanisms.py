"""Mechanisms built directly in Python for physics tests (Dojo's test set-ups)."""

from __future__ import annotations

import numpy as np

from dojo_cli.model.joint_types import JointType
from dojo_cli.model.mechanism import ORIGIN, Body, Joint, Mechanism
from dojo_cli.model.shapes import Shape, body_inertia
from dojo_cli.physics.coordinates import minimal_to_maximal

X, Y, Z = np.eye(3)
ALL_JOINT_TYPES = [t.value for t in JointType]
# Dojo's loops over "every joint type" skip floating (it has no constraint).
CONSTRAINED_JOINT_TYPES = [t for t in ALL_JOINT_TYPES if t != "floating"]


def box_body(name: str, size, mass: float = 1.0) -> Body:
    shape = Shape("box", {"size": tuple(size)})
    return Body(name, mass, body_inertia(shape, mass), shape)


def pendulum(h=0.01, gravity=(0, 0, -9.81), spring=0.0, damper=0.0, length=1.0) -> Mechanism:
    """Dojo's pendulum: a 0.1 x 0.1 x L box hinged about X at its top, pivot at (L+0.1) z."""
    body = box_body("link", (0.1, 0.1, length))
    joint = Joint(
        "hinge", "revolute", ORIGIN, 0, axis=X, parent_vertex=(length + 0.1) * Z, child_vertex=0.5 * length * Z,
        spring=np.array([spring]), damper=np.array([damper]),
    )
    return Mechanism([body], [joint], h, gravity, name="pendulum")


def chain(n: int, joint_type: str, axes, h=0.01, gravity=(0, 0, 0), spring=0.0, damper=0.0, base="floating"):
    """Dojo's snake/twister: n boxes [1, 0.15, 0.1] along x, a floating base and
    ``joint_type`` joints between consecutive links with axes cycling through ``axes``."""
    bodies = [box_body(f"link{i}", (1.0, 0.15, 0.1)) for i in range(n)]
    joints = [Joint("base", base, ORIGIN, 0)]
    for i in range(1, n):
        joints.append(
            Joint(
                f"joint{i}", joint_type, i - 1, i, axis=np.asarray(axes[(i - 1) % len(axes)], float),
                parent_vertex=0.5 * X, child_vertex=-0.5 * X, spring=np.array([spring]), damper=np.array([damper]),
            )
        )
    return Mechanism(bodies, joints, h, gravity, name=f"chain-{joint_type}")


def snake(n, joint_type, **kw):
    return chain(n, joint_type, [X], **kw)


def twister(n, joint_type, **kw):
    return chain(n, joint_type, [Z, X, Y], **kw)


def random_minimal_state(mech: Mechanism, rng, coord_scale=0.3, rate_scale=0.5) -> np.ndarray:
    """A minimal state with random joint coordinates and velocities (per joint [coords; velocities])."""
    out = []
    for r in mech.joint_free_range:
        n = r.stop - r.start
        out.append(coord_scale * rng.uniform(-1, 1, n))
        out.append(rate_scale * rng.uniform(-1, 1, n))
    return np.concatenate(out) if out else np.zeros(0)


def random_state(mech: Mechanism, seed=0, **kw) -> np.ndarray:
    """Maximal state from a random minimal state."""
    return minimal_to_maximal(mech, random_minimal_state(mech, np.random.default_rng(seed), **kw))


def slider(h=0.01, gravity=(0, 0, -9.81), spring=0.0, damper=0.0) -> Mechanism:
    """Dojo's slider: a 0.1 x 0.1 x 1 box of 1 kg on a prismatic joint along z."""
    body = box_body("box", (0.1, 0.1, 1.0))
    joint = Joint(
        "slide", "prismatic", ORIGIN, 0, axis=Z, child_vertex=0.5 * Z,
        spring=np.array([spring]), damper=np.array([damper]),
    )
    return Mechanism([body], [joint], h, gravity, name="slider")


def fourbar(h=0.01, gravity=(0, 0, -9.81), base_angle=np.pi / 4, inner_angle=np.pi / 4, damper=0.0):
    """Closed-loop parallelogram in the y-z plane (the built-in fourbar scene):
    j1 origin->link1, j2 link1->link2 (same top pivot), j3 link1->link3, j4 link2->link4,
    loop joint j5 link3->link4. Identities: theta3 = theta2, theta4 = theta5 = -theta2."""
    bodies = [box_body(f"link{i}", (0.1, 0.1, 1.0)) for i in range(1, 5)]
    top, bottom = 0.5 * Z, -0.5 * Z
    d = np.array([damper])
    joints = [
        Joint("j1", "revolute", ORIGIN, 0, axis=X, child_vertex=top, damper=d),
        Joint("j2", "revolute", 0, 1, axis=X, parent_vertex=top, child_vertex=top, damper=d),
        Joint("j3", "revolute", 0, 2, axis=X, parent_vertex=bottom, child_vertex=top, damper=d),
        Joint("j4", "revolute", 1, 3, axis=X, parent_vertex=bottom, child_vertex=top, damper=d),
        Joint("j5", "revolute", 2, 3, axis=X, parent_vertex=bottom, child_vertex=bottom, damper=d),
    ]
    mech = Mechanism(bodies, joints, h, gravity, name="fourbar")
    y = np.array([base_angle, 0, inner_angle, 0, inner_angle, 0, -inner_angle, 0, -inner_angle, 0])
    return mech, minimal_to_maximal(mech, y)
