"""skydy's `dofs:` on a joint (issue 14 item 4): each subset with a Dojo joint maps to the type
and axis whose free coordinates are exactly those directions (checked on the built joint: a
small step of each free coordinate moves the child along / about exactly that joint-frame
axis); the others fail at file:line:dofs listing the subsets that have one."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from dojo_cli.errors import SceneError
from dojo_cli.model.joint_types import JointType, input_dimension
from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.dofs import DOF_NAMES, TABLE, dofs_to_joint
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


@pytest.mark.parametrize("dofs, jt, axis", [
    ([], JointType.FIXED, [0, 0, 1]),
    (["rz"], JointType.REVOLUTE, [0, 0, 1]),
    (["ry"], JointType.REVOLUTE, [0, 1, 0]),
    (["x"], JointType.PRISMATIC, [1, 0, 0]),
    (["x", "y", "rz"], JointType.PLANAR_AXIS, [0, 0, 1]),
    (["rz", "y", "x"], JointType.PLANAR_AXIS, [0, 0, 1]),
    (["y", "z"], JointType.PLANAR, [1, 0, 0]),
    (["x", "y", "z"], JointType.FIXED_ORIENTATION, [0, 0, 1]),
    (["z", "rz"], JointType.CYLINDRICAL, [0, 0, 1]),
    (["x", "y", "z", "rz"], JointType.FREE_REVOLUTE, [0, 0, 1]),
    (["rx", "ry", "rz"], JointType.SPHERICAL, [0, 0, 1]),
    (["rx", "ry"], JointType.ORBITAL, [0, 0, 1]),
    (list(DOF_NAMES), JointType.FLOATING, [0, 0, 1]),
])
def test_named_subsets(dofs, jt, axis):
    assert dofs_to_joint(dofs) == (jt, [float(a) for a in axis])


def _free_directions(jt: JointType, axis) -> frozenset[str]:
    """The joint-frame directions a built joint's free coordinates move the child along/about
    (each coordinate stepped by 1e-3 from zero, the child's position and rotation read back)."""
    text = SCENE.replace("    dofs: {dofs}\n", f"    type: {jt.value}\n    axis: {list(axis)}\n")
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
    for key, (jt, axis_name) in TABLE.items():
        jt2, axis = dofs_to_joint(sorted(key))
        assert jt2 == jt and input_dimension(jt) == len(key)
        if jt in (JointType.ORBITAL, JointType.PRISMATIC_ORBITAL, JointType.PLANAR_ORBITAL, JointType.FREE_ORBITAL,
                  JointType.SPHERICAL, JointType.CYLINDRICAL_FREE, JointType.PLANAR_FREE, JointType.FLOATING):
            # rotation vectors about two or three axes: the step about one axis is that axis
            pass
        assert _free_directions(jt, axis) == key, (sorted(key), jt, axis)


def test_the_table_is_every_subset_that_has_a_joint():
    # independently: translations T and rotations R (axis letters) each none, {a}, the two
    # others, or all three, for one common a
    def shapes(a):
        return [set(), {a}, {"x", "y", "z"} - {a}, {"x", "y", "z"}]

    expected = set()
    for subset in (frozenset(c) for r in range(7) for c in itertools.combinations(DOF_NAMES, r)):
        T = {d for d in subset if d in "xyz" and len(d) == 1}
        R = {d[1] for d in subset if d.startswith("r")}
        if any(T in shapes(a) and R in shapes(a) for a in "xyz"):
            expected.add(subset)
    assert set(TABLE) == expected
    assert len(expected) == 40


def test_a_subset_without_a_joint_names_file_line_field(tmp_path):
    with pytest.raises(SceneError) as info:
        _load(tmp_path, "[x, ry]")
    (p,) = info.value.problems
    assert p.field == "joints.0.dofs" and p.line == 10 and Path(p.file).name == "scene.yaml"
    assert p.message.startswith("[x, ry] has no Dojo joint")
    assert "revolute [rx] [ry] [rz]" in p.message and "planar_axis" in p.message and "[x, y, rz]" in p.message


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
