"""Import URDF robot descriptions as scenes (plain scene data, validated by the loader).

Parsing. lxml reads the file strictly (malformed XML is refused with its line, never
recovered from silently) and this module reads the numbers from the elements itself:
origins as 4x4 transforms (rpy as fixed-axis roll, pitch, yaw, URDF's convention, with
yourdfpy's arithmetic, so scenes are the same to the bit as when yourdfpy parsed them),
inertials, limits, dynamics, geometry (with the ``<capsule radius length>`` extension
Dojo's walkers use) and materials. Every problem names ``file:line`` and the element
(``joint 'knee'``); joints naming links that do not exist, several roots and loops are
refused. No mesh is opened to read a URDF (physics needs none), so importing it costs
no trimesh: only ``--contacts collision`` reads meshes, for their convex hulls, which
are cached by the mesh file's content (``dojo_cli.scene.hull_cache``).

Frames. The engine's body frame is the centre of mass. A body here has the
orientation of its *reference link* (the link at the top of the group of links
it stands for) and its origin at the group's centre of mass; each URDF link
records its pose in its body (``T_body_link``), so joint points, shapes and
contact spheres are placed through that one transform:
- inertia: the URDF inertia is about the inertial origin in the inertial frame;
  ``R I R^T`` rotates it into the link frame; merged links add by the parallel-axis
  rule about the group's centre of mass;
- joint: ``parent_vertex`` = the joint origin in the parent body, ``child_vertex``
  = the child link origin in the child body, ``orientation_offset`` = the joint
  origin's rotation in the parent body. Rotational axes are in that joint frame
  (URDF's axis frame). Translational axes (prismatic, planar) are measured in the
  parent body frame by the engine, so they are rotated by the joint origin.

Joint types: revolute and continuous -> revolute (continuous without limits),
prismatic -> prismatic, fixed -> fixed (or merged), floating -> floating, Bullet's
spherical -> spherical, planar -> planar_axis (two translations in the plane and the rotation about its
normal, as Drake, Pinocchio and RigidBodyDynamics.jl read it; Dojo maps it to its
translation-only Planar). Two or three revolute joints through massless links with one
child each, all through one point (the later origins without translation) and with
mutually orthogonal axes, onto a link with mass, are one universal or gimbal joint
(human.urdf's wrists and hips: ``_multi_axis_chain``), its angles the chain's revolute
angles and named after its joints (``axis_names``).

Bullet's readings (PyBullet's pybullet_data relies on them; docs/urdf.md "Bullet's
conventions"), each with one warning per kind: a base of mass 0 is fixed to the world,
lower > upper is no limit, commas separate numbers, a vector's numbers past the third are
ignored; xacro's ``$(optenv)`` left in a file is expanded as xacro does.

The modules, bottom to top (each imports only those above it; ``tests/test_project.py``):
``values`` (attribute text), ``transforms``, ``options`` (``UrdfOptions``, ``UrdfImport``),
``inertia``, ``elements`` (links and joints as read), the reader's parts ``link_reader`` and
``joint_reader``, ``reader`` (the file into links and joints), ``tree`` (links into bodies),
``bodies``, ``joints``, ``initial_pose``, ``contacts``, ``importer`` (``read_urdf``).
What they share with the MJCF importer is in ``dojo_cli.scene.importing``. This package's
``__init__`` only re-exports the public names.
"""

from __future__ import annotations

from dojo_cli.scene.importing.rotations import GIMBAL_LOCK_MARGIN
from dojo_cli.scene.urdf.contacts import CONTACT_MARGIN, FOOT_HEIGHT_TOL, HULL_VERTICES, THIN_BOX_RATIO
from dojo_cli.scene.urdf.importer import read_urdf
from dojo_cli.scene.urdf.inertia import INERTIA_EIGENVALUE_FLOOR, MASSLESS
from dojo_cli.scene.urdf.initial_pose import LIMIT_INSET_FRACTION, LIMIT_INSET_MAX, range_note
from dojo_cli.scene.urdf.joints import UNMODELLED_FRICTION, UNMODELLED_MIMIC, UNMODELLED_SWING_TWIST
from dojo_cli.scene.urdf.options import (
    BULLET_JOINT_TYPES, CONTACT_MODES, DEFAULT_FRICTION, DEFAULT_TIMESTEP, FIXED_BASE_JOINT, FLOATING_JOINT,
    GEOMETRY_MODES, URDF_JOINT_TYPES, UrdfImport, UrdfOptions,
)
from dojo_cli.scene.urdf.reader import UNMODELLED_LISTED, note_text
from dojo_cli.scene.urdf.tree import AXIS_TOL
from dojo_cli.scene.urdf.values import (
    LENIENT_COMMAS, LENIENT_EXTRA_NUMBERS, LENIENT_NO_LIMIT, LENIENT_NUMBER_END, LENIENT_XACRO_ENV,
)

__all__ = [
    "AXIS_TOL", "BULLET_JOINT_TYPES", "CONTACT_MARGIN", "CONTACT_MODES", "DEFAULT_FRICTION", "DEFAULT_TIMESTEP",
    "FIXED_BASE_JOINT", "FLOATING_JOINT", "FOOT_HEIGHT_TOL", "GEOMETRY_MODES", "GIMBAL_LOCK_MARGIN",
    "HULL_VERTICES", "INERTIA_EIGENVALUE_FLOOR", "LENIENT_COMMAS", "LENIENT_EXTRA_NUMBERS", "LENIENT_NO_LIMIT",
    "LENIENT_NUMBER_END", "LENIENT_XACRO_ENV", "LIMIT_INSET_FRACTION", "LIMIT_INSET_MAX", "MASSLESS",
    "THIN_BOX_RATIO", "UNMODELLED_FRICTION", "UNMODELLED_LISTED", "UNMODELLED_MIMIC", "UNMODELLED_SWING_TWIST",
    "URDF_JOINT_TYPES", "UrdfImport", "UrdfOptions", "note_text", "range_note", "read_urdf",
]
