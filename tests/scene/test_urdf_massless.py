"""Massless links in a URDF (issue 24 item 2): a massless root that carries movable joints
is merged with the links fixed to it into the floating base; a subtree of massless links on
movable joints is dropped with its joints, with one note. (The robots themselves, anymal,
anymal-kinova and romeo, against Pinocchio: tests/minimal/test_pinocchio.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.errors import SceneError
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import UrdfOptions, read_urdf

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


def test_a_massless_root_with_nothing_massive_fixed_to_it_is_refused_with_its_line(tmp_path):
    text = ANYMAL_LIKE.replace('<mass value="10.0"/>', '<mass value="0"/>').replace('ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>\n  <link name="imu"',
                                                                                   'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>\n  <link name="imu"')
    with pytest.raises(SceneError) as info:
        _read(tmp_path, text)
    (problem,) = info.value.problems
    assert problem.line == 2 and problem.field == "link 'base'"
    assert problem.message.startswith("the root link has no mass and no link fixed to it has mass, but it carries movable joints")


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


def test_a_massless_link_carrying_mass_is_still_refused(tmp_path):
    # a chain of joints through a massless link is a multi-axis joint: not built yet
    text = ANYMAL_LIKE.replace("</robot>\n", _link("wrist", 0.0) + _link("hand", 1.0)
                               + _joint("w1", "continuous", "leg", "wrist", "0 0 -0.4") + _joint("w2", "continuous", "wrist", "hand", "0 0 0", "1 0 0")
                               + "</robot>\n")
    with pytest.raises(SceneError) as info:
        _read(tmp_path, text)
    (problem,) = info.value.problems
    assert problem.field == "link 'wrist'" and "has no mass but moves on joint 'w1' and carries links" in problem.message
    assert "(the joints w1, w2 through massless links make one multi-axis joint" in problem.message
