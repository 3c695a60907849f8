"""skydy's `dofs:` on a joint (issue 14 item 4, issue 29): each of the 64 subsets maps to the
type, axis and (for the 24 whose translations and rotations share no axis) rotation axis
whose free coordinates are exactly those directions (checked on the built joint: a small
step of each free coordinate moves the child along / about exactly that joint-frame axis);
bad lists and held values fail at file:line:field. (Their physics: tests/properties/
test_skydy_subsets.py.)"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from dojo_cli.errors import SceneError
from dojo_cli.model.joint_types import JointType, input_dimension
from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.dofs import DOF_NAMES, SHARED_AXIS, TABLE, dofs_to_joint
from dojo_cli.scene.loader import load_scene_spec

SCENE = """\
name: dofs
timestep: 0.01
gravity: [0, 0, 0]
bodies:
  - name: b
    mass: 1.0
    inertia: [1.0, 1.0, 1.0]
joints:
  - name: j
    dofs: {dofs}
    parent: origin
    child: b
"""


def _load(tmp_path: Path, dofs: str):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.format(dofs=dofs), encoding="utf-8")
    return build_mechanism(load_scene_spec(path))


@pytest.mark.parametrize("dofs, jt, axis, rotation_axis", [
    ([], JointType.FIXED, [0, 0, 1], None),
    (["rz"], JointType.REVOLUTE, [0, 0, 1], None),
    (["ry"], JointType.REVOLUTE, [0, 1, 0], None),
    (["x"], JointType.PRISMATIC, [1, 0, 0], None),
    (["x", "y", "rz"], JointType.PLANAR_AXIS, [0, 0, 1], None),
    (["rz", "y", "x"], JointType.PLANAR_AXIS, [0, 0, 1], None),
    (["y", "z"], JointType.PLANAR, [1, 0, 0], None),
    (["x", "y", "z"], JointType.FIXED_ORIENTATION, [0, 0, 1], None),
    (["z", "rz"], JointType.CYLINDRICAL, [0, 0, 1], None),
    (["x", "y", "z", "rz"], JointType.FREE_REVOLUTE, [0, 0, 1], None),
    (["rx", "ry", "rz"], JointType.SPHERICAL, [0, 0, 1], None),
    (["rx", "ry"], JointType.ORBITAL, [0, 0, 1], None),
    (list(DOF_NAMES), JointType.FLOATING, [0, 0, 1], None),
    # the 24 with an axis each: the translational element's, then the rotational one's
    (["x", "ry"], JointType.CYLINDRICAL, [1, 0, 0], [0, 1, 0]),
    (["x", "rz"], JointType.CYLINDRICAL, [1, 0, 0], [0, 0, 1]),
    (["x", "y", "rx"], JointType.PLANAR_AXIS, [0, 0, 1], [1, 0, 0]),
    (["z", "rx", "rz"], JointType.PRISMATIC_ORBITAL, [0, 0, 1], [0, 1, 0]),
    (["x", "z", "rx", "ry"], JointType.PLANAR_ORBITAL, [0, 1, 0], [0, 0, 1]),
])
def test_named_subsets(dofs, jt, axis, rotation_axis):
    expected_rotation = None if rotation_axis is None else [float(a) for a in rotation_axis]
    assert dofs_to_joint(dofs) == (jt, [float(a) for a in axis], expected_rotation)


def _free_directions(jt: JointType, axis, rotation_axis=None) -> frozenset[str]:
    """The joint-frame directions a built joint's free coordinates move the child along/about
    (each coordinate stepped by 1e-3 from zero, the child's position and rotation read back)."""
    given = f"    type: {jt.value}\n    axis: {list(axis)}\n"
    if rotation_axis is not None:
        given += f"    rotation_axis: {list(rotation_axis)}\n"
    text = SCENE.replace("    dofs: {dofs}\n", given)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "scene.yaml"
        path.write_text(text, encoding="utf-8")
        mech = build_mechanism(load_scene_spec(path))
    n = input_dimension(jt)
    out = set()
    for k in range(n):
        y = np.zeros(2 * n)
        y[k] = 1e-3
        z = minimal_to_maximal(mech, y)
        p, q = z[0:3], z[6:10]
        moved = [DOF_NAMES[i] for i in range(3) if abs(p[i]) > 1e-6] + \
                [DOF_NAMES[3 + i] for i in range(3) if abs(q[1 + i]) > 1e-6]
        assert len(moved) == 1, (jt, axis, k, moved)
        # positive coordinate, positive direction (right-hand rule for rotations)
        value = p[DOF_NAMES.index(moved[0])] if moved[0] in "xyz" else q[1 + DOF_NAMES.index(moved[0]) - 3]
        assert value > 0
        out.add(moved[0])
    return frozenset(out)


def test_every_subset_maps_to_a_joint_with_exactly_those_directions():
    assert len(TABLE) == 64
    for key in TABLE:
        jt, axis, rotation_axis = dofs_to_joint(sorted(key))
        assert input_dimension(jt) == len(key)
        assert _free_directions(jt, axis, rotation_axis) == key, (sorted(key), jt, axis, rotation_axis)


def test_the_shared_axis_subsets_are_dojos_forty():
    # independently: translations T and rotations R (axis letters) each none, {a}, the two
    # others, or all three, for one common a; these keep the joints they had (no rotation axis)
    def shapes(a):
        return [set(), {a}, {"x", "y", "z"} - {a}, {"x", "y", "z"}]

    expected = set()
    for subset in (frozenset(c) for r in range(7) for c in itertools.combinations(DOF_NAMES, r)):
        T = {d for d in subset if d in "xyz" and len(d) == 1}
        R = {d[1] for d in subset if d.startswith("r")}
        if any(T in shapes(a) and R in shapes(a) for a in "xyz"):
            expected.add(subset)
    assert set(SHARED_AXIS) == expected
    assert len(expected) == 40
    assert all((TABLE[key][2] is None) == (key in expected) for key in TABLE)


def test_a_subset_across_axes_builds_with_its_rotation_axis(tmp_path):
    mech = _load(tmp_path, "[x, ry]")
    joint = mech.joints[0]
    assert joint.type == JointType.CYLINDRICAL
    assert np.allclose(joint.axis, [1, 0, 0]) and np.allclose(joint.rotation_axis, [0, 1, 0])


@pytest.mark.parametrize("extra, field, message", [
    ("    const_values: {y: 0.1, rw: 1}\n", "joints.0.const_values", "unknown degree of freedom 'rw'"),
    ("    const_values: {x: 0.1}\n", "joints.0.const_values", "'x' is free (listed in dofs)"),
    ("    rotation_axis: [0, 1, 0]\n", "joints.0.dofs", "give either dofs or rotation_axis, not both"),
])
def test_bad_held_values_and_axes_name_the_field(tmp_path, extra, field, message):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.format(dofs="[x, ry]").replace("    parent: origin", extra + "    parent: origin"))
    with pytest.raises(SceneError) as info:
        build_mechanism(load_scene_spec(path))
    assert any(p.field == field and message in p.message for p in info.value.problems), info.value.problems


def test_held_values_without_dofs_are_an_error(tmp_path):
    path = tmp_path / "scene.yaml"
    text = SCENE.format(dofs="[x]").replace("    dofs: [x]\n", "    type: prismatic\n    const_values: {y: 0.1}\n")
    path.write_text(text)
    with pytest.raises(SceneError) as info:
        build_mechanism(load_scene_spec(path))
    (p,) = info.value.problems
    assert p.field == "joints.0.const_values" and p.line == 11 and "goes with dofs" in p.message


@pytest.mark.parametrize("dofs, message", [
    ("[x, w]", "unknown degree of freedom 'w'"),
    ("[x, x]", "'x' listed twice"),
    ("x", "must be a list of degree-of-freedom names"),
])
def test_bad_dofs(tmp_path, dofs, message):
    with pytest.raises(SceneError) as info:
        _load(tmp_path, dofs)
    (p,) = info.value.problems
    assert p.field == "joints.0.dofs" and message in p.message


def test_dofs_with_type_is_an_error(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE.format(dofs="[rz]").replace("    parent: origin", "    type: revolute\n    parent: origin"))
    with pytest.raises(SceneError) as info:
        build_mechanism(load_scene_spec(path))
    assert any(p.field == "joints.0.dofs" and "not both" in p.message for p in info.value.problems)


def test_dofs_scene_equals_the_typed_scene(tmp_path):
    mech = _load(tmp_path, "[x, y, rz]")
    assert mech.joints[0].type == JointType.PLANAR_AXIS
    assert np.allclose(mech.joints[0].axis, [0, 0, 1])
