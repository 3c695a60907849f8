"""Mechanisms built directly in Python for physics tests (Dojo's test set-ups)."""

from __future__ import annotations

import dataclasses

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


def pendulum(h=0.01, gravity=(0, 0, -9.81), spring=0.0, damper=0.0, length=1.0, damper_form="midpoint") -> Mechanism:
    """Dojo's pendulum: a 0.1 x 0.1 x L box hinged about X at its top, pivot at (L+0.1) z."""
    body = box_body("link", (0.1, 0.1, length))
    joint = Joint(
        "hinge", "revolute", ORIGIN, 0, axis=X, parent_vertex=(length + 0.1) * Z, child_vertex=0.5 * length * Z,
        spring=np.array([spring]), damper=np.array([damper]), damper_form=damper_form,
    )
    return Mechanism([body], [joint], h, gravity, name="pendulum")


def chain(n: int, joint_type: str, axes, h=0.01, gravity=(0, 0, 0), spring=0.0, damper=0.0, base="floating",
          damper_form="midpoint"):
    """Dojo's snake/twister: n boxes [1, 0.15, 0.1] along x, a floating base and
    ``joint_type`` joints between consecutive links with axes cycling through ``axes``."""
    bodies = [box_body(f"link{i}", (1.0, 0.15, 0.1)) for i in range(n)]
    joints = [Joint("base", base, ORIGIN, 0)]
    for i in range(1, n):
        joints.append(
            Joint(
                f"joint{i}", joint_type, i - 1, i, axis=np.asarray(axes[(i - 1) % len(axes)], float),
                parent_vertex=0.5 * X, child_vertex=-0.5 * X, spring=np.array([spring]), damper=np.array([damper]),
                damper_form=damper_form,
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


def slider(h=0.01, gravity=(0, 0, -9.81), spring=0.0, damper=0.0, damper_form="midpoint") -> Mechanism:
    """Dojo's slider: a 0.1 x 0.1 x 1 box of 1 kg on a prismatic joint along z."""
    body = box_body("box", (0.1, 0.1, 1.0))
    joint = Joint(
        "slide", "prismatic", ORIGIN, 0, axis=Z, child_vertex=0.5 * Z,
        spring=np.array([spring]), damper=np.array([damper]), damper_form=damper_form,
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


# ---------------------------------------------------------------- contacts
from dojo_cli.model.mechanism import Contact  # noqa: E402


def ground(name, body, offset=(0, 0, 0), radius=0.0, model="nonlinear", mu=0.5, normal=(0, 0, 1), point=(0, 0, 0)):
    n = np.asarray(normal, float)
    return Contact(name, body, model, mu, radius, np.asarray(offset, float), "halfspace", ORIGIN,
                   {"normal": n / np.linalg.norm(n), "point": np.asarray(point, float)})


def contact_box(h=0.01, mu=0.5, model="nonlinear", corners="all", gravity=(0, 0, -9.81), edge=0.5):
    """Dojo's block: a cube (edge 0.5, 1 kg) on a floating joint with corner contacts."""
    body = box_body("box", (edge, edge, edge))
    e = edge / 2
    zs = (-e, e) if corners == "all" else (-e,)
    offsets = [(x, y, z) for x in (-e, e) for y in (-e, e) for z in zs]
    contacts = [ground(f"c{i}", 0, o, 0.0, model, mu) for i, o in enumerate(offsets)]
    return Mechanism([body], [Joint("base", "floating", ORIGIN, 0)], h, gravity, name="box", contacts=contacts)


def ball(radius=0.5, mu=0.5, model="nonlinear", h=0.01, normal=(0, 0, 1), mass=1.0):
    """A uniform sphere on a floating joint touching a half-space through its centre's contact sphere."""
    shape = Shape("sphere", {"radius": radius})
    body = Body("ball", mass, body_inertia(shape, mass), shape)
    return Mechanism([body], [Joint("base", "floating", ORIGIN, 0)], h, (0, 0, -9.81), name="ball",
                     contacts=[ground("c", 0, radius=radius, model=model, mu=mu, normal=normal)])


def ball_on(kind, model="nonlinear", mu=0.5, h=0.05, params=None):
    """A fixed obstacle body (sphere r 0.5, capsule r 0.5 along y, or unit box) and a free ball r 0.5."""
    fixed = Body("obstacle", 1.0, np.eye(3) * 0.1)
    free = Body("ball", 1.0, np.eye(3) * 0.1)
    s = 0.5 ** 0.5
    offset = np.array([s, s, 0, 0]) if kind == "capsule" else quat_identity()
    joints = [Joint("fix", "fixed", ORIGIN, 0, orientation_offset=offset), Joint("base", "floating", ORIGIN, 1)]
    defaults = {
        "sphere": {"offset": np.zeros(3), "radius": 0.5},
        "capsule": {"end1": np.array([0, 0, -1.0]), "end2": np.array([0, 0, 1.0]), "radius": 0.5},
        "box": {"centre": np.zeros(3), "half_sizes": np.full(3, 0.5)},
    }
    c = Contact("c", 1, model, mu, 0.5, np.zeros(3), kind, 0, params or defaults[kind])
    return Mechanism([fixed, free], joints, h, (0, 0, -9.81), name=f"ball_on_{kind}", contacts=[c])


def quat_identity():
    return np.array([1.0, 0, 0, 0])


def limited_pendulum(h=0.01, lower=np.pi / 4, upper=np.pi):
    mech = pendulum(h=h)
    j = dataclasses.replace(mech.joints[0], limits=(np.array([lower]), np.array([upper])))
    return Mechanism(mech.bodies, [j], h, mech.gravity, name="pendulum_limit")


# ------------------------------------------------------- built-in contact scenes
# Every built-in scene with contacts of a kind the others lack (ground corners, a sphere on
# the ground, tilted planes, sphere/capsule/box obstacles, a spinning top), and the contact
# models to run them with ("mixed": impact, nonlinear and linear in turn).
CONTACT_SCENES = ("box", "sphere", "sliding_box", "incline", "ball_on_ball", "ball_on_capsule", "ball_on_box", "tippetop")
CONTACT_VARIANTS = ("impact", "nonlinear", "linear", "mixed")
_CONTACT_MODELS = ("impact", "nonlinear", "linear")


def contact_scene(scene: str, variant: str) -> Mechanism:
    """A built-in contact scene with every contact on one model (or mixed)."""
    import dojo_cli as dojo

    nc = dojo.load_scene(scene).nc
    models = [variant if variant != "mixed" else _CONTACT_MODELS[i % 3] for i in range(nc)]
    return dojo.load_scene(scene, [f"contacts.{i}.model={m}" for i, m in enumerate(models)])
