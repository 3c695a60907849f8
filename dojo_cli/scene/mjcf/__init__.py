"""Import MuJoCo MJCF models as scenes (plain scene data, validated by the loader).

What is read (MuJoCo's XML reference, https://mujoco.readthedocs.io/en/stable/XMLreference.html):
- ``<include file>`` (its top element's children take its place, ``<mujoco>`` or ``<mujocoinclude>``), ``<compiler>`` (``angle``,
  ``eulerseq``, ``inertiafromgeom``, ``inertiagrouprange``, ``coordinate`` local only, ``settotalmass``,
  ``autolimits``, ``meshdir``/``assetdir``), ``<option>`` (``timestep``, ``gravity``),
  ``<default>`` classes (nested, ``class``, ``childclass``), ``<asset><mesh>``,
  ``<worldbody>``'s body tree, ``<contact><exclude>``, ``<actuator>`` (motor, position,
  velocity) and ``<keyframe>``.
- Frames: ``pos`` with one of ``quat``, ``axisangle``, ``euler`` (``eulerseq``: lower case
  axes move with the frame, upper case stay), ``xyaxes``, ``zaxis``; ``fromto`` on geoms.

Bodies. A scene body is an MJCF body at its centre of mass with the MJCF body frame's
orientation (the engine's body frame is the centre of mass). Its mass and inertia come from
``<inertial>`` or, where the body has none (``inertiafromgeom`` auto) or always (true),
from its geoms by MuJoCo's density rule (uniform density, 1000 kg/m^3 by default, or the
geom's ``mass``): sphere, capsule (a cylinder and two hemispheres), cylinder, box,
ellipsoid and mesh (its convex hull), summed by the parallel-axis rule about the body's
centre of mass (MuJoCo's ``mjCBody::InertiaFromGeom``), then scaled by ``settotalmass``.

Joints. A body's joints (MuJoCo applies them in order, each about its own anchor and axis in
the body frame) become one Dojo joint between the body and its parent, coordinate zero at
the file's placement (``qpos0``; a joint's ``ref`` is its value there):

| MJCF joints of a body | Dojo joint |
|---|---|
| none | fixed (or merged into the parent: bodies without mass and inertia always, every body with ``merge_fixed``) |
| hinge | revolute about the hinge axis |
| slide | prismatic |
| 2 or 3 orthogonal slides | planar / fixed_orientation |
| 1, 2 or 3 orthogonal slides, then a hinge normal to them (or along the one slide) | cylindrical, planar_axis, free_revolute |
| ball | spherical (rotation vector of the ball's quaternion) |
| free | floating |
| 2 or 3 hinges through one anchor, axes mutually orthogonal | universal / gimbal (the hinges' angles) |

Other combinations (hinges about different anchors or axes that are not orthogonal, hinges
with armature, a slide after a hinge, slides and several hinges, a slide and a hinge about
another axis) are sequences no Dojo joint has; they are refused with the body's line, or,
with ``split_joints`` (``split_hinges``, its old name), a chain of Dojo joints through light
links, one per MJCF joint or per run of them one Dojo joint is (orthogonal slides;
orthogonal hinges through one point without armature), MuJoCo's coordinates kept.

``<option><flag>``: what it turns off (contact, constraint, limit, equality, frictionloss,
spring, damper, gravity, clampctrl, filterparent, actuation) is left out as MuJoCo leaves it out.

Contacts. MuJoCo's filter decides which geom pairs collide: ``(contype1 & conaffinity2) or
(contype2 & conaffinity1)``, not on the same body or weld, not parent and child (MuJoCo's
``filterparent``, the world exempt), not ``<exclude>``d; bodies without joints in the
world (props) are in the world's weld and collide with moving geoms only; the world's own
non-plane geoms that moving geoms collide with are one fixed body, WORLD_BODY. A moving geom against a world plane
is a shape contact against that half-space (``ground`` for the plane z = 0); a pair of
moving geoms is a shape contact against the other body's shape. ``friction`` is the larger
of the two geoms' sliding coefficients (MuJoCo's default mixing), ``condim`` 1 the impact
model (no friction), 3 the nonlinear cone (4 and 6, torsional and rolling friction, are
refused, or imported as 3 with drop_unsupported).

What cannot be mapped is refused, one problem per element (``file:line: element:
message``), or with ``drop_unsupported`` left out with one warning per kind: tendons,
equality constraints, sensors, explicit contact pairs, fluid forces (``<option density
viscosity>``), heightfields, actuators other than motor/position/velocity or on
tendons/sites, geom pairs the collision table lacks.

The modules, bottom to top (each imports only those above it; ``tests/test_project.py``):
``rotations``, ``options`` (``MjcfOptions``, ``CoordinateMap``, ``MjcfImport``), ``elements``
(the model as read), the reader's parts ``values``, ``defaults`` (includes and default
classes) and ``body_tree``, ``reader`` (the file's sections), ``mass``, ``contacts``,
``bodies``, ``joints``, ``actuators``, ``keyframes``, ``importer`` (``read_mjcf``). What
they share with the URDF importer is in ``dojo_cli.scene.importing``. This package's
``__init__`` only re-exports the public names.
"""

from __future__ import annotations

from dojo_cli.scene.importing.rotations import GIMBAL_LOCK_MARGIN
from dojo_cli.scene.mjcf.bodies import WORLD_BODY
from dojo_cli.scene.mjcf.contacts import CONTACT_MARGIN, ELLIPSOID_SAMPLES, HULL_VERTICES, PENETRATION_TOL
from dojo_cli.scene.mjcf.importer import read_mjcf
from dojo_cli.scene.mjcf.joints import AXIS_TOL, LINK_MASS_FRACTION
from dojo_cli.scene.mjcf.keyframes import joint_coordinates_from_qpos
from dojo_cli.scene.mjcf.mass import MASSLESS, MJEPS, geom_mass_properties, has_mass_and_inertia
from dojo_cli.scene.mjcf.options import (
    CONTACT_MODES, CoordinateMap, DEFAULT_DENSITY, DEFAULT_FRICTION, DEFAULT_GRAVITY, DEFAULT_TIMESTEP,
    MjcfImport, MjcfOptions,
)
from dojo_cli.scene.mjcf.reader import reader_problems_stop
from dojo_cli.scene.mjcf.rotations import rotation_vector_from_quaternion

__all__ = [
    "AXIS_TOL", "CONTACT_MARGIN", "CONTACT_MODES", "CoordinateMap", "DEFAULT_DENSITY", "DEFAULT_FRICTION",
    "DEFAULT_GRAVITY", "DEFAULT_TIMESTEP", "ELLIPSOID_SAMPLES", "GIMBAL_LOCK_MARGIN", "HULL_VERTICES",
    "LINK_MASS_FRACTION", "MASSLESS", "MJEPS", "MjcfImport", "MjcfOptions", "PENETRATION_TOL", "WORLD_BODY",
    "geom_mass_properties", "has_mass_and_inertia", "joint_coordinates_from_qpos", "read_mjcf", "reader_problems_stop",
    "rotation_vector_from_quaternion",
]
