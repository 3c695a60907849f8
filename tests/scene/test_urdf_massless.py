"""Massless links in a URDF (issue 24 item 2): a massless root that carries movable joints
is merged with the links fixed to it into the floating base; a subtree of massless links on
movable joints is dropped with its joints, with one note; two or three revolute joints
through massless links and one point, with orthogonal axes, are one universal or gimbal
joint. (The robots themselves, anymal, anymal-kinova, romeo and human, against Pinocchio:
tests/minimal/test_pinocchio.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.errors import SceneError
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import GIMBAL_LOCK_MARGIN, UrdfOptions, read_urdf

_INERTIAL = '<inertial><origin xyz="{com}"/><mass value="{mass}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'


def _link(name: str, mass: float, com: str = "0 0 0", inertia: float = 0.1) -> str:
    return f'  <link name="{name}">{_INERTIAL.format(com=com, mass=mass, i=inertia if mass else 0)}</link>\n'


def _joint(name: str, kind: str, parent: str, child: str, xyz: str = "0 0 0", axis: str = "0 0 1") -> str:
    return (f'  <joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}"/><axis xyz="{axis}"/></joint>\n')


# anymal's layout: the root "base" has no mass (1e-6 kg), the trunk's mass is on
# "base_inertia" fixed below it, and the legs hang from "base" itself
ANYMAL_LIKE = ('<robot name="r">\n' + _link("base", 1e-6) + _link("base_inertia", 10.0, "0.1 0 0")
               + _link("imu", 0.0) + _link("leg", 1.0, "0 0 -0.2")
               + _joint("fix", "fixed", "base", "base_inertia") + _joint("fix_imu", "fixed", "base_inertia", "imu", "0.2 0 0")
               + _joint("hip", "continuous", "base", "leg", "0.3 0 0", "0 1 0") + "</robot>\n")


def _read(tmp_path, text: str, **options):
    path = tmp_path / "robot.urdf"
    path.write_text(text, encoding="utf-8")
    result = read_urdf(path, UrdfOptions(floating=True, **options))
    return path, result


def test_a_massless_root_with_movable_joints_becomes_the_floating_base_with_its_fixed_links(tmp_path):
    path, result = _read(tmp_path, ANYMAL_LIKE)
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    assert [b.name for b in mech.bodies] == ["base_inertia", "leg"]
    assert abs(mech.bodies[0].mass - (10.0 + 1e-6)) < 1e-12, "the root group's mass: every link fixed to the root"
    floating, hip = result.scene["joints"]
    assert floating["type"] == "floating" and floating["child"] == "base_inertia"
    # the merged body's frame is the root link's: the body's centre of mass sits at the
    # mass-weighted mean of base (0) and base_inertia (0.1, 0, 0)
    assert np.allclose(floating["child_vertex"], [-(10.0 * 0.1) / (10.0 + 1e-6), 0, 0], atol=1e-15)
    assert hip["parent"] == "base_inertia" and np.allclose(np.array(hip["parent_vertex"]) - floating["child_vertex"], [0.3, 0, 0])
    notes = [w for w in result.warnings if "root link has no mass" in w]
    assert notes == [f"note: {path}:2: link 'base': the root link has no mass; merged with the links fixed to it "
                     "(base_inertia, imu) into one body, the floating base, which carries its joints hip"]


def test_a_massless_root_with_nothing_massive_fixed_to_it_is_fixed_to_the_world(tmp_path):
    """It was refused ("carries movable joints; give it an <inertial>"); Bullet reads a base
    of mass 0 as static, and so does the importer now (tests/scene/test_urdf_bullet.py)."""
    text = ANYMAL_LIKE.replace('<mass value="10.0"/>', '<mass value="0"/>').replace('ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>\n  <link name="imu"',
                                                                                   'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>\n  <link name="imu"')
    path, result = _read(tmp_path, text)
    assert [(j["name"], j["parent"]) for j in result.scene["joints"]] == [("hip", "origin")]
    assert [w for w in result.warnings if "root link" in w][0].startswith(f"note: {path}:2: link 'base': the root link has no mass "
                                                                          "and no link fixed to it has mass: it is fixed to the world")


def test_a_massless_subtree_on_movable_joints_is_dropped_with_its_joints_and_one_note(tmp_path):
    # a finger of three massless links (romeo's hands): frames that move nothing
    text = ANYMAL_LIKE.replace("</robot>\n", _link("f1", 0.0) + _link("f2", 0.0) + _link("f3", 0.0)
                               + _joint("j1", "revolute", "leg", "f1", "0 0 -0.4").replace("/><axis", '/><limit lower="-1" upper="1" effort="1" velocity="1"/><axis')
                               + _joint("j2", "continuous", "f1", "f2", "0.02 0 0") + _joint("j3", "continuous", "f2", "f3", "0.02 0 0")
                               + "</robot>\n")
    path, result = _read(tmp_path, text)
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    assert [j.name for j in mech.joints] == ["floating_base", "hip"]
    assert {"f1", "f2", "f3"} <= set(result.dropped)
    notes = [w for w in result.warnings if "have no mass; dropped" in w]
    assert notes == [f"note: {path}:9: link 'f1': it and the 2 links below it have no mass; dropped with their joints (j1, j2, j3)"]


def _wrist(second_origin: str = "0 0 0", second_axis: str = "1 0 0", rpy: str = "0 0 0", third: bool = False) -> str:
    """A leg carrying a hand through a massless wrist: w1 (z) then w2 (and w3 through a
    second massless link), the hand's centre of mass off every axis."""
    joints = (_joint("w1", "revolute", "leg", "wrist", "0 0 -0.4").replace("/><axis", '/><limit lower="-0.5" upper="0.7" effort="3" velocity="1"/><axis')
              + _joint("w2", "continuous", "wrist", "wrist2" if third else "hand", second_origin, second_axis).replace('<origin xyz', f'<origin rpy="{rpy}" xyz'))
    links = _link("wrist", 0.0) + _link("hand", 1.0, "0.03 0.02 -0.1")
    if third:
        links += _link("wrist2", 0.0)
        joints += _joint("w3", "revolute", "wrist2", "hand", "0 0 0", "0 1 0").replace("/><axis", '/><limit lower="-2" upper="2" effort="1" velocity="1"/><axis')
    return ANYMAL_LIKE.replace("</robot>\n", links + joints + "</robot>\n")


@pytest.mark.parametrize("third", [False, True], ids=["universal", "gimbal"])
def test_revolute_joints_through_massless_links_and_one_point_are_one_universal_or_gimbal_joint(tmp_path, third):
    path, result = _read(tmp_path, _wrist(rpy="0 0 0.3", third=third))
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    assert [b.name for b in mech.bodies] == ["base_inertia", "leg", "hand"], "the massless links are no bodies"
    joint = result.scene["joints"][-1]
    assert joint["type"] == ("gimbal" if third else "universal") and joint["name"] == "w1"
    assert joint["axis_names"] == (["w1", "w2", "w3"] if third else ["w1", "w2"])
    assert {"wrist"} <= set(result.dropped)
    # the chain's limits per axis (a continuous joint: none), in the chain's order; a gimbal's
    # middle angle inside +-pi/2, where the chain's other two axes align (with a note)
    middle = np.pi / 2 - GIMBAL_LOCK_MARGIN if third else np.inf
    assert joint["limits"] == {"lower": [-0.5, -middle] + ([-2.0] if third else []), "upper": [0.7, middle] + ([2.0] if third else [])}
    assert sum("clipped to +-" in w for w in result.warnings) == int(third)
    # axes in the last joint's frame: w2's origin turns 0.3 about z, so w1's z stays z and
    # w2's x is x there; the joint frame is the leg's turned by that rpy
    assert np.allclose(joint["axes"][:2], [[0, 0, 1], [1, 0, 0]], atol=1e-15)
    assert np.allclose(joint["orientation_offset"], [np.cos(0.15), 0, 0, np.sin(0.15)], atol=1e-15)


@pytest.mark.parametrize("change,reason", [
    ({"second_origin": "0.02 0 0"}, "the origins of w2 are not at the previous joint's (not through one point)"),
    ({"second_axis": "1 0 0.2"}, "their axes are not mutually orthogonal"),
], ids=["offset", "oblique"])
def test_a_chain_that_is_no_universal_joint_is_refused_with_why(tmp_path, change, reason):
    with pytest.raises(SceneError) as info:
        _read(tmp_path, _wrist(**change))
    (problem,) = info.value.problems
    assert problem.field == "link 'wrist'" and "has no mass but moves on joint 'w1' and carries links" in problem.message
    assert f"(the joints w1, w2 through massless links are not one universal or gimbal joint: {reason})" in problem.message
