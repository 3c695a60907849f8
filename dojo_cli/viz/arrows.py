"""Arrows in the viewer (Dojo.jl's ``set_arrow!``): contact forces and body velocities.

A contact's force at state k is the impulse of the step that reached it over the step,
``(gn n + b1 t1 + b2 t2) / h``: the stored normal impulse ``gn`` and friction impulse
``(b1, b2)`` (N s, ``contacts/normal_impulse``, ``contacts/friction_impulse``, docs/storage.md)
in the contact's frame at that state (``physics.contact_queries.contact_geometry``: the
normal from the other shape towards body a, the tangents in the order of the friction
impulses), drawn from the contact point on body a (``point_a``). It is the force on body a;
the other body of a body-body pair feels its opposite. The first state has no step before
it: its arrows have zero length.

A body's velocity arrow starts at its centre of mass: its linear velocity (world frame, the
stored knot velocity).

Every arrow is one meshcat object of unit length along z (a shaft and a head, as
``set_arrow!`` draws it), placed by a transform (origin, and the rotation taking z to the
arrow) and stretched by the ``scale`` property (1, 1, length): the same two commands move it
in a live viewer and key it in a replay's animation. An arrow shorter than
MIN_ARROW_LENGTH is shrunk to nothing in every direction (hidden).
"""

from __future__ import annotations

from dataclasses import dataclass

import meshcat
import meshcat.geometry as g
import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.contact_queries import contact_geometry
from dojo_cli.viz.meshcat_scene import _material, _rotation_x_quarter, _segment, add_toggle, rotation_from_z_to

ARROW_ROOT = "dojo/arrows"
FORCE_COLOR = 0xE02020
VELOCITY_COLOR = 0x2060E0
# Force arrows: the mechanism's weight M |g| draws this long (m), whatever its mass, so that
# a robot's and a pebble's forces both read; STANDARD_GRAVITY stands in for a scene without
# gravity. The factor (m per N) is printed by `dojo replay` and kept in a page's dojo-info.
WEIGHT_ARROW_LENGTH = 0.5
STANDARD_GRAVITY = 9.81
# Velocity arrows: m of arrow per m/s (a body's path over the next VELOCITY_ARROW_SECONDS).
VELOCITY_ARROW_SECONDS = 0.1
# Shaft and head of the unit arrow (m across; the head is the last HEAD_FRACTION of it).
SHAFT_RADIUS = 0.008
HEAD_RADIUS = 0.02
HEAD_FRACTION = 0.2
# Shorter arrows (m) are hidden: a contact that does not touch, a body at rest.
MIN_ARROW_LENGTH = 1e-4
# The scale of a hidden arrow (three.js cannot invert a matrix of scale 0).
HIDDEN_SCALE = 1e-9
ARROW_KINDS = ("forces", "velocities")


def force_scale(mech: Mechanism) -> float:
    """Metres of force arrow per newton: the weight of the mechanism draws WEIGHT_ARROW_LENGTH."""
    gravity = float(np.linalg.norm(mech.gravity)) or STANDARD_GRAVITY
    mass = sum(float(b.mass) for b in mech.bodies)
    return WEIGHT_ARROW_LENGTH / (mass * gravity)


def contact_forces(mech: Mechanism, z: np.ndarray, normal_impulse, friction_impulse) -> tuple[np.ndarray, np.ndarray]:
    """Each contact's point and force on body a at a state (module docstring).

    Args:
        z: (13 nb,) maximal state the step reached.
        normal_impulse: (nc,) the step's normal impulses (N s), or None (no step: zero).
        friction_impulse: (nc, 2) its friction impulses in the tangent basis (N s), or None.

    Returns:
        (points (nc, 3), forces (nc, 3)), world frame (m, N).
    """
    nc = len(mech.contacts)
    points, forces = np.zeros((nc, 3)), np.zeros((nc, 3))
    for i, c in enumerate(mech.contacts):
        geometry = contact_geometry(mech, c, z)
        points[i] = geometry.point_a
        if normal_impulse is not None:
            impulse = normal_impulse[i] * geometry.normal + np.asarray(friction_impulse[i], float) @ geometry.tangent
            forces[i] = impulse / mech.timestep
    return points, forces


def arrow_pose(origin: np.ndarray, vector: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The transform (4, 4) of a unit arrow from ``origin`` (3,) along ``vector`` (3,), and its
    ``scale`` property [1, 1, length] (all HIDDEN_SCALE below MIN_ARROW_LENGTH)."""
    length = float(np.linalg.norm(vector))
    pose = np.eye(4)
    pose[:3, 3] = origin
    if length < MIN_ARROW_LENGTH:
        return pose, [HIDDEN_SCALE] * 3
    pose[:3, :3] = rotation_from_z_to(vector)
    return pose, [1.0, 1.0, length]


def arrow_object(color: int) -> list[tuple[str, object, np.ndarray]]:
    """The parts of a unit arrow along z from the origin: (name, meshcat object, local transform)."""
    material = _material(color)
    shaft_length = 1.0 - HEAD_FRACTION
    shaft = _rotation_x_quarter()
    shaft[2, 3] = 0.5 * shaft_length
    head = _rotation_x_quarter()
    head[2, 3] = shaft_length + 0.5 * HEAD_FRACTION
    # three.js cylinders run along y, radiusTop at +y (+z once turned): a cone ends at the tip
    return [
        ("shaft", g.Mesh(g.Cylinder(shaft_length, SHAFT_RADIUS), material), shaft),
        ("head", g.Mesh(g.Cylinder(HEAD_FRACTION, radiusTop=0.0, radiusBottom=HEAD_RADIUS), material), head),
    ]


@dataclass(frozen=True)
class ArrowSet:
    """The arrows a viewer draws: node paths and how each state's arrows are computed."""

    forces: bool
    velocities: bool
    force_scale: float
    velocity_scale: float = VELOCITY_ARROW_SECONDS

    def paths(self, mech: Mechanism) -> list[str]:
        out = []
        if self.forces:
            out += [f"{ARROW_ROOT}/forces/{_segment(c.name)}" for c in mech.contacts]
        if self.velocities:
            out += [f"{ARROW_ROOT}/velocities/{_segment(b.name)}" for b in mech.bodies]
        return out

    def draw(self, vis: meshcat.Visualizer, mech: Mechanism) -> None:
        """Put the arrow objects in the scene (hidden until a state places them)."""
        paths = self.paths(mech)
        colors = [FORCE_COLOR] * (len(mech.contacts) if self.forces else 0) + [VELOCITY_COLOR] * len(paths)
        for path, color in zip(paths, colors):
            for name, obj, local in arrow_object(color):
                vis[path][name].set_object(obj)
                vis[path][name].set_transform(local)
        if self.forces and mech.contacts:
            add_toggle(vis, "force arrows", f"{ARROW_ROOT}/forces")
        if self.velocities:
            add_toggle(vis, "velocity arrows", f"{ARROW_ROOT}/velocities")

    def vectors(self, mech: Mechanism, z: np.ndarray, normal_impulse=None, friction_impulse=None,
                v: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(origins (n, 3), arrows (n, 3)) of one state, in the order of ``paths`` (m, scaled).

        Args:
            z: (13 nb,) the state; normal_impulse, friction_impulse: the step that reached it
                (contact_forces); v: (nb, 3) linear velocities to draw (default: z's).
        """
        origins, arrows = [], []
        if self.forces and mech.contacts:
            points, forces = contact_forces(mech, z, normal_impulse, friction_impulse)
            origins.append(points)
            arrows.append(forces * self.force_scale)
        if self.velocities:
            s = np.asarray(z, float).reshape(mech.nb, 13)
            origins.append(s[:, 0:3])
            arrows.append((s[:, 3:6] if v is None else np.asarray(v, float)) * self.velocity_scale)
        if not origins:
            return np.zeros((0, 3)), np.zeros((0, 3))
        return np.concatenate(origins), np.concatenate(arrows)

    def place(self, vis: meshcat.Visualizer, mech: Mechanism, origins: np.ndarray, arrows: np.ndarray) -> None:
        """Move the arrows to one state (a live viewer, a replay's first frame)."""
        for path, origin, arrow in zip(self.paths(mech), origins, arrows):
            pose, scale = arrow_pose(origin, arrow)
            vis[path].set_transform(pose)
            vis[path].set_property("scale", scale)

    def key(self, frame, mech: Mechanism, origins: np.ndarray, arrows: np.ndarray) -> None:
        """Key the arrows of one state into an animation frame (meshcat's AnimationFrameVisualizer)."""
        for path, origin, arrow in zip(self.paths(mech), origins, arrows):
            pose, scale = arrow_pose(origin, arrow)
            frame[path].set_transform(pose)
            frame[path].set_property("scale", "vector3", scale)


def arrow_set(mech: Mechanism, kinds: tuple[str, ...] | list[str]) -> ArrowSet | None:
    """The ArrowSet of ``kinds`` (ARROW_KINDS), or None for none."""
    if not kinds:
        return None
    return ArrowSet(forces="forces" in kinds, velocities="velocities" in kinds, force_scale=force_scale(mech))
