"""skydy's way of naming a joint: ``dofs: [x, rz]`` instead of ``type`` (docs/scenes.md,
"Joints by degrees of freedom").

A joint's free degrees of freedom are a subset of ``x y z rx ry rz`` in its joint frame
(skydy's DOF indices 0..5). Each Dojo joint type is a translational element and a
rotational element sharing one unit axis ``a`` (docs/physics.md "Joints"): the free
translations are none, ``[a]``, the plane normal to ``a`` or all three; the free rotations
likewise. So a subset has a Dojo joint exactly when its translations and its rotations each
are one of those four with a common coordinate axis; ``dofs_to_joint`` returns that type and
axis (a coordinate axis), or raises ValueError listing the subsets that have one.

The joint's coordinates come in Dojo's order, not the order listed: translations first (for a
plane, the cyclic pair: normal x -> (y, z), normal y -> (z, x), normal z -> (x, y)), then
rotations in the same way.
"""

from __future__ import annotations

from typing import Any

from dojo_cli.model.joint_types import JointType, free_dimensions

DOF_NAMES = ("x", "y", "z", "rx", "ry", "rz")
AXES = ("x", "y", "z")
_UNIT = {"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0]}


def _free_set(n: int, axis: str) -> frozenset[str]:
    """The coordinate axes left free by an element with n free directions about ``axis``."""
    if n == 0:
        return frozenset()
    if n == 1:
        return frozenset({axis})
    if n == 2:
        return frozenset(set(AXES) - {axis})
    return frozenset(AXES)


def _table() -> dict[frozenset[str], tuple[JointType, str]]:
    """Every subset of DOF_NAMES that has a Dojo joint -> (type, axis name). An axis that
    does not matter (both elements none or all) is z, the scene default."""
    out: dict[frozenset[str], tuple[JointType, str]] = {}
    for jt in JointType:
        nt, nr = free_dimensions(jt)
        for axis in ("z", "x", "y"):
            key = frozenset(_free_set(nt, axis) | {"r" + a for a in _free_set(nr, axis)})
            out.setdefault(key, (jt, axis))
    return out


TABLE = _table()


def _text(subset) -> str:
    return "[" + ", ".join(sorted(subset, key=DOF_NAMES.index)) + "]"


def subsets_text() -> str:
    """The subsets that have a joint, grouped by type (for error messages and docs)."""
    groups: dict[JointType, list[str]] = {}
    for key, (jt, _) in sorted(TABLE.items(), key=lambda kv: (len(kv[0]), sorted(DOF_NAMES.index(d) for d in kv[0]))):
        groups.setdefault(jt, []).append(_text(key))
    return "; ".join(f"{jt.value} {' '.join(keys)}" for jt, keys in groups.items())


def dofs_to_joint(dofs: Any) -> tuple[JointType, list[float]]:
    """(Dojo joint type, its unit axis) of a list of skydy DOF names.

    Raises:
        ValueError: not a list of distinct names from DOF_NAMES, or a subset with no joint.
    """
    if not isinstance(dofs, (list, tuple)):
        raise ValueError(f"must be a list of degree-of-freedom names ({', '.join(DOF_NAMES)}), got {dofs!r}")
    bad = [d for d in dofs if not isinstance(d, str) or d not in DOF_NAMES]
    if bad:
        raise ValueError(f"unknown degree of freedom {bad[0]!r} (names: {', '.join(DOF_NAMES)}, in the joint frame)")
    if len(set(dofs)) != len(dofs):
        twice = next(d for d in dofs if list(dofs).count(d) > 1)
        raise ValueError(f"{twice!r} listed twice")
    key = frozenset(dofs)
    if key not in TABLE:
        raise ValueError(f"{_text(key)} has no Dojo joint (its free translations and rotations must each be none, "
                         f"one axis a, the plane normal to a, or all, with one a); the subsets that have one: {subsets_text()}")
    jt, axis = TABLE[key]
    return jt, list(_UNIT[axis])
