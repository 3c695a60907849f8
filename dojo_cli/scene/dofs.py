"""skydy's way of naming a joint: ``dofs: [x, rz]`` instead of ``type`` (docs/scenes.md,
"Joints by degrees of freedom"), and ``const_values`` for the ones it leaves out.

A joint's free degrees of freedom are a subset of ``x y z rx ry rz`` in its joint frame
(skydy's DOF indices 0..5). Each Dojo joint type is a translational element and a
rotational element (docs/physics.md "Joints"): the free translations are none, ``[a]``,
the plane normal to ``a`` or all three; the free rotations likewise about their own axis
``b``. Dojo gives both elements one axis (``a = b``), which reaches 40 of the 64 subsets;
a joint's ``rotation_axis`` gives the rotational element its own, and every subset has a
joint: ``dofs_to_joint`` returns the type, ``axis`` (the translational element's, or the
rotational one's when the translations are none or all) and ``rotation_axis`` (None where
one axis serves both, so the 40 keep their former joints exactly).

The joint's coordinates come in Dojo's order, not the order listed: translations first (for a
plane, the cyclic pair: normal x -> (y, z), normal y -> (z, x), normal z -> (x, y)), then
rotations in the same way.

``const_values`` (skydy's ``DOF(idx, free=False, const_value=c)``): the degrees of freedom
left out are held at zero, or at these values. A held translation moves the joint point in
the parent body frame (where the joint's translations are measured: skydy's ``add_dof`` is
in the input link's frame); held rotations turn the joint frame, ``orientation_offset``
times R_x(c_rx) R_y(c_ry) R_z(c_rz), so the free rotations act after them, about the turned
axes (``held_frame``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dojo_cli.math.quaternion import multiply as quaternion_multiply
from dojo_cli.model.joint_types import DOJO_JOINT_TYPES, JointType, free_dimensions

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


def _element(free: frozenset[str]) -> tuple[int, str | None]:
    """(free directions, axis) of one element from its free coordinate axes: the axis is
    the free one (one free), the normal of the free plane (two), none (zero or three)."""
    if len(free) == 1:
        return 1, next(iter(free))
    if len(free) == 2:
        return 2, next(a for a in AXES if a not in free)
    return len(free), None


def _table() -> dict[frozenset[str], tuple[JointType, str, str | None]]:
    """Every subset of DOF_NAMES -> (type, axis name, rotation axis name or None).

    Subsets with one axis for both elements come first, as Dojo's joint types have them
    (an axis that does not matter, both elements none or all, is z, the scene default);
    the others get the translational element's axis and a rotation axis of their own.
    """
    out: dict[frozenset[str], tuple[JointType, str, str | None]] = {}
    for jt in DOJO_JOINT_TYPES:
        nt, nr = free_dimensions(jt)
        for axis in ("z", "x", "y"):
            key = frozenset(_free_set(nt, axis) | {"r" + a for a in _free_set(nr, axis)})
            out.setdefault(key, (jt, axis, None))
    by_dimensions = {free_dimensions(jt): jt for jt in DOJO_JOINT_TYPES}
    for r in range(len(DOF_NAMES) + 1):
        for subset in itertools.combinations(DOF_NAMES, r):
            key = frozenset(subset)
            if key in out:
                continue
            nt, ta = _element(frozenset(d for d in key if len(d) == 1))
            nr, ra = _element(frozenset(d[1] for d in key if len(d) == 2))
            # both elements have an axis here (else a common axis would exist), and they differ
            out[key] = (by_dimensions[(nt, nr)], ta, ra)
    return out


TABLE = _table()
SHARED_AXIS = frozenset(key for key, (_, _, rotation) in TABLE.items() if rotation is None)
"""The 40 subsets Dojo's joint types reach with one axis."""


def _text(subset) -> str:
    return "[" + ", ".join(sorted(subset, key=DOF_NAMES.index)) + "]"


def subsets_text() -> str:
    """The subsets, grouped by type (for docs)."""
    groups: dict[JointType, list[str]] = {}
    for key, (jt, _, _) in sorted(TABLE.items(), key=lambda kv: (len(kv[0]), sorted(DOF_NAMES.index(d) for d in kv[0]))):
        groups.setdefault(jt, []).append(_text(key))
    return "; ".join(f"{jt.value} {' '.join(keys)}" for jt, keys in groups.items())


def _check_names(dofs: Any) -> None:
    if not isinstance(dofs, (list, tuple)):
        raise ValueError(f"must be a list of degree-of-freedom names ({', '.join(DOF_NAMES)}), got {dofs!r}")
    bad = [d for d in dofs if not isinstance(d, str) or d not in DOF_NAMES]
    if bad:
        raise ValueError(f"unknown degree of freedom {bad[0]!r} (names: {', '.join(DOF_NAMES)}, in the joint frame)")
    if len(set(dofs)) != len(dofs):
        twice = next(d for d in dofs if list(dofs).count(d) > 1)
        raise ValueError(f"{twice!r} listed twice")


def dofs_to_joint(dofs: Any) -> tuple[JointType, list[float], list[float] | None]:
    """(Dojo joint type, its unit axis, the rotational element's own unit axis or None) of a
    list of skydy DOF names.

    Raises:
        ValueError: not a list of distinct names from DOF_NAMES.
    """
    _check_names(dofs)
    jt, axis, rotation = TABLE[frozenset(dofs)]
    return jt, list(_UNIT[axis]), None if rotation is None else list(_UNIT[rotation])


def check_const_values(dofs: Any, const_values: Any) -> None:
    """Raise ValueError unless ``const_values`` (or None) maps held DOF names to values:
    names of DOF_NAMES, none of them free (listed in ``dofs``)."""
    if const_values is None or not isinstance(dofs, (list, tuple)):
        return  # the dofs' own check reports a bad list; the schema a non-mapping
    if not isinstance(const_values, dict):
        return
    for name in const_values:
        if name not in DOF_NAMES:
            raise ValueError(f"unknown degree of freedom {name!r} (names: {', '.join(DOF_NAMES)}, in the joint frame)")
        if name in dofs:
            raise ValueError(f"{name!r} is free (listed in dofs): only a held degree of freedom has a constant value")


def held_frame(const_values: dict[str, float], parent_vertex, orientation_offset) -> tuple[np.ndarray, np.ndarray]:
    """(parent_vertex (3,), orientation_offset (4,) [w,x,y,z]) of a joint whose held degrees
    of freedom sit at ``const_values`` (module docstring): the vertex moved by the held
    translations (parent body frame), the offset times R_x R_y R_z of the held rotations."""
    vertex = np.array(parent_vertex, dtype=float)
    offset = np.array(orientation_offset, dtype=float)
    for k, axis in enumerate(AXES):
        vertex[k] += float(const_values.get(axis, 0.0))
    for axis in AXES:
        angle = float(const_values.get("r" + axis, 0.0))
        if angle:
            u = np.array(_UNIT[axis])
            offset = quaternion_multiply(offset, np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * u]))
    return vertex, offset / np.linalg.norm(offset)
