"""The sixteen Dojo joint types, each a translational and a rotational element, and
the two multi-axis joints a URDF writes as chains of revolute joints.

Dojo composes every joint from a translational element constraining ``nt``
of the three relative translations and a rotational element constraining ``nr``
of the three relative rotations (dojo_engine_notes.md section 3.4). The free
coordinates are ``3 - nt`` translations then ``3 - nr`` rotations.

``universal`` (Hooke's joint: two orthogonal axes through one point) and ``gimbal``
(three) are not Dojo's: their rotation is R(a1, t1) R(a2, t2) [R(a3, t3)], their
coordinates the axes' angles (core/maximal/euler_joints.h). They hold the joint point
(nt = 3); the universal joint constrains one rotation (a1 . R a2 = a1 . a2), the gimbal none.
"""

from __future__ import annotations

from enum import Enum


class JointType(str, Enum):
    """Joint type names as written in scene files."""

    FIXED = "fixed"
    PRISMATIC = "prismatic"
    PLANAR = "planar"
    FIXED_ORIENTATION = "fixed_orientation"
    REVOLUTE = "revolute"
    CYLINDRICAL = "cylindrical"
    PLANAR_AXIS = "planar_axis"
    FREE_REVOLUTE = "free_revolute"
    ORBITAL = "orbital"
    PRISMATIC_ORBITAL = "prismatic_orbital"
    PLANAR_ORBITAL = "planar_orbital"
    FREE_ORBITAL = "free_orbital"
    SPHERICAL = "spherical"
    CYLINDRICAL_FREE = "cylindrical_free"
    PLANAR_FREE = "planar_free"
    FLOATING = "floating"
    UNIVERSAL = "universal"
    GIMBAL = "gimbal"


# (constrained translations, constrained rotations) per type, Dojo's prototypes.jl.
CONSTRAINED: dict[JointType, tuple[int, int]] = {
    JointType.FIXED: (3, 3),
    JointType.PRISMATIC: (2, 3),
    JointType.PLANAR: (1, 3),
    JointType.FIXED_ORIENTATION: (0, 3),
    JointType.REVOLUTE: (3, 2),
    JointType.CYLINDRICAL: (2, 2),
    JointType.PLANAR_AXIS: (1, 2),
    JointType.FREE_REVOLUTE: (0, 2),
    JointType.ORBITAL: (3, 1),
    JointType.PRISMATIC_ORBITAL: (2, 1),
    JointType.PLANAR_ORBITAL: (1, 1),
    JointType.FREE_ORBITAL: (0, 1),
    JointType.SPHERICAL: (3, 0),
    JointType.CYLINDRICAL_FREE: (2, 0),
    JointType.PLANAR_FREE: (1, 0),
    JointType.FLOATING: (0, 0),
    JointType.UNIVERSAL: (3, 1),
    JointType.GIMBAL: (3, 0),
}

# Joints whose rotations are the angles of a chain of axes (core JointRotation, read from
# _core.JOINT_ROTATIONS by name): the type -> its number of axes.
AXES_JOINTS: dict[JointType, int] = {JointType.UNIVERSAL: 2, JointType.GIMBAL: 3}
# Dojo's own types (prototypes.jl): the rest
DOJO_JOINT_TYPES = tuple(t for t in JointType if t not in AXES_JOINTS)


def free_dimensions(joint_type: JointType | str) -> tuple[int, int]:
    """(free translations, free rotations) of a joint type."""
    nt, nr = CONSTRAINED[JointType(joint_type)]
    return 3 - nt, 3 - nr


def input_dimension(joint_type: JointType | str) -> int:
    """Number of free coordinates (= inputs) of a joint type."""
    ft, fr = free_dimensions(joint_type)
    return ft + fr
