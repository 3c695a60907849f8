"""URDF import on a hand-written robot using every joint type: frames, mass properties,
joint data against an independent reading of the file (tests/urdf_reference.py), errors,
and scenes that say ``urdf:`` with overrides on top."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.collisions import lowest_height
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec_from_string, spec_from_dict
from dojo_cli.scene.urdf import UrdfOptions, read_urdf
from dojo_cli.simulation.initial import initial_state
from tests import urdf_reference as ref

DATA = Path(__file__).resolve().parents[1] / "data" / "urdf"
ROBOT = DATA / "robot.urdf"
PACKAGES = str(DATA / "packages")
# Poses and inertias are products of a few 4x4 transforms: rounding only.
_EXACT = 1e-12
runner = CliRunner()


def _import(**options):
    result = read_urdf(ROBOT, UrdfOptions(package_path=[PACKAGES], **options))
    return result, build_mechanism(spec_from_dict(result.scene))


def _body_poses(mech, z=None):
    z = (initial_state(mech) if z is None else z).reshape(mech.nb, 13)
    return {b.name: (z[i, :3], matrix_from_quaternion(z[i, 6:10])) for i, b in enumerate(mech.bodies)}


def _check_link_poses(result, mech, expected, z=None):
    bodies = _body_poses(mech, z)
    for link, (body, t_body_link) in result.link_bodies.items():
        x, rot = bodies[body]
        got_rot = rot @ t_body_link[:3, :3]
        got_pos = x + rot @ t_body_link[:3, 3]
        assert np.abs(got_rot - expected[link][:3, :3]).max() < _EXACT, f"{link}: orientation"
        assert np.abs(got_pos - expected[link][:3, 3]).max() < _EXACT, f"{link}: position {got_pos} != {expected[link][:3, 3]}"


def test_bodies_sit_at_link_centres_of_mass_with_the_urdf_inertia():
    result, mech = _import()
    links, joints = ref.read(ROBOT)
    poses = ref.forward_kinematics(links, joints)
    massive = [n for n, link in links.items() if link.mass > 0]
    assert mech.nb == len(massive) and sorted(b.name for b in mech.bodies) == sorted(massive)
    bodies = _body_poses(mech)
    for name in massive:
        body = mech.get_body(name)
        assert body.mass == links[name].mass
        assert np.abs(body.inertia - links[name].inertia).max() < _EXACT, f"{name}: inertia"
        x, rot = bodies[name]
        # the body frame: the link's orientation, at the link's centre of mass
        assert np.abs(rot - poses[name][:3, :3]).max() < _EXACT, f"{name}: body orientation"
        com = poses[name][:3, :3] @ links[name].com + poses[name][:3, 3]
        assert np.abs(x - com).max() < _EXACT, f"{name}: body position"
    _check_link_poses(result, mech, poses)


def test_joint_motions_match_the_urdf_kinematics():
    """Revolute about its axis in the joint frame, prismatic along it, continuous unlimited."""
    links, joints = ref.read(ROBOT)
    q = {"hinge": 0.3, "spin": -2.5, "slide": 0.05}
    scene = read_urdf(ROBOT, UrdfOptions(package_path=[PACKAGES]))
    for joint in scene.scene["joints"]:
        if joint["name"] in q:
            joint["initial"] = {"position": [q[joint["name"]]]}
    mech = build_mechanism(spec_from_dict(scene.scene))
    _check_link_poses(scene, mech, ref.forward_kinematics(links, joints, q))


def test_joint_types_limits_dampers_and_recorded_limits():
    result, mech = _import()
    _, joints = ref.read(ROBOT)
    scene_joints = {j["name"]: j for j in result.scene["joints"]}
    kinds = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed",
             "floating": "floating", "planar": "planar_axis"}
    for j in joints:
        if j.name in result.merged:
            continue
        got = mech.get_joint(j.name)
        assert got.type == kinds[j.type], j.name
        if j.type in ("revolute", "prismatic"):
            assert got.limits is not None and got.limits[0][0] == j.lower and got.limits[1][0] == j.upper, j.name
        elif j.type == "continuous":
            assert got.limits is None
        if j.type != "fixed":
            assert np.all(got.damper == j.damping), f"{j.name}: damper {got.damper} != {j.damping}"
        if j.effort is not None:
            assert scene_joints[j.name]["effort_limit"] == j.effort and scene_joints[j.name]["velocity_limit"] == j.velocity
    assert result.merged == ["tool_mount"], "the massless tool merges into the wheel"
    assert mech.get_joint(result.scene["joints"][0]["name"]).type == "fixed", "a fixed base without --floating"


def test_merged_fixed_joints_keep_mass_centre_and_inertia():
    links, joints = ref.read(ROBOT)
    mass, com, inertia = ref.system_mass_properties(links, ref.forward_kinematics(links, joints))
    result, mech = _import(merge_fixed=True)
    assert mech.nb == 6 and sorted(result.merged) == ["tool_mount", "weld"]
    bodies = _body_poses(mech)
    got_mass = sum(b.mass for b in mech.bodies)
    got_com = sum(b.mass * bodies[b.name][0] for b in mech.bodies) / got_mass
    got_inertia = np.zeros((3, 3))
    for b in mech.bodies:
        x, rot = bodies[b.name]
        r = x - got_com
        got_inertia += rot @ b.inertia @ rot.T + b.mass * (r @ r * np.eye(3) - np.outer(r, r))
    assert abs(got_mass - mass) < _EXACT and np.abs(got_com - com).max() < _EXACT
    assert np.abs(got_inertia - inertia).max() < _EXACT, "parallel-axis merge"
    _check_link_poses(result, mech, ref.forward_kinematics(links, joints))


def test_floating_base_with_collision_contacts_rests_on_the_ground():
    result, mech = _import(floating=True, contacts="collision", friction=0.3)
    assert mech.joints[0].type == "floating" and mech.joints[0].name == "floating_base"
    kinds = {c.name: c.kind for c in mech.contacts}
    # base box: 8 corners; arm capsule: 2 end spheres; wheel cylinder: its 2 rolling rims; foot sphere: 1
    assert len(kinds) == 8 + 2 + 2 + 1 and all(c.friction == 0.3 for c in mech.contacts)
    assert [k for n, k in kinds.items() if n.startswith("wheel")] == ["circle_halfspace"] * 2
    z = initial_state(mech).reshape(mech.nb, 13)
    lows = [lowest_height([c], matrix_from_quaternion(z[c.body, 6:10]), z[c.body, :3]) for c in mech.contacts]
    assert abs(min(lows)) < _EXACT, "the importer lifts a floating robot onto its lowest contact"


def test_visuals_meshes_and_colours():
    result, _ = _import()
    bodies = {b["name"]: b for b in result.scene["bodies"]}
    assert bodies["base"]["shape"]["type"] == "box" and bodies["base"]["shape"]["color"] == [0.1, 0.2, 0.8, 1.0]
    assert bodies["arm"]["shape"]["type"] == "capsule" and bodies["arm"]["shape"]["height"] == 0.3
    mesh = bodies["wheel"]["shape"]
    assert mesh["type"] == "mesh" and Path(mesh["file"]).is_file() and mesh["scale"] == 2.0
    # the foot has no visual: its collision sphere is drawn instead
    assert bodies["foot"]["shape"]["type"] == "sphere"


BAD = {
    "missing_link.urdf": (17, "joint 'hinge'", "child link 'forearm' is not defined"),
    "unknown_joint_type.urdf": (31, "joint 'spin'", "unknown joint type 'screw'"),
    "malformed.urdf": (85, "", "malformed XML"),
    "unresolved_mesh.urdf": (40, "link 'wheel' visual mesh", "package 'no_such_pkg' not found"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_urdfs_exit_2_naming_file_line_and_element(name, tmp_path):
    line, element, message = BAD[name]
    out = tmp_path / "robot.yaml"
    res = runner.invoke(app, ["import-urdf", str(DATA / name), "-o", str(out), "--package-path", PACKAGES])
    assert res.exit_code == 2, res.output
    assert f"{DATA / name}:{line}: {element}" in res.output and message in res.output, res.output
    assert "Traceback" not in res.output and not out.exists()


def test_missing_mesh_is_a_warning_and_the_scene_simulates(tmp_path):
    out = tmp_path / "robot.yaml"
    res = runner.invoke(app, ["import-urdf", str(DATA / "missing_mesh.urdf"), "-o", str(out), "--package-path", PACKAGES])
    assert res.exit_code == 0, res.output
    assert "warning:" in res.output and "missing.stl" in res.output
    traj = dojo.simulate(dojo.load_scene(str(out)), steps=3)
    assert set(traj.status) == {"success"}


def test_import_command_writes_a_loadable_scene_and_reports_limits(tmp_path):
    out = tmp_path / "robot.yaml"
    res = runner.invoke(app, ["import-urdf", str(ROBOT), "-o", str(out), "--package-path", PACKAGES, "--merge-fixed",
                              "--floating", "--contacts", "collision"])
    assert res.exit_code == 0, res.output
    assert "6 bodies" in res.output and "hinge" in res.output and "effort 10" in res.output and "velocity 3" in res.output
    mech = dojo.load_scene(str(out))
    assert mech.nb == 6 and mech.nc > 0
    assert runner.invoke(app, ["import-urdf", str(ROBOT), "-o", str(out), "--package-path", PACKAGES]).exit_code == 3


def test_import_command_takes_a_package_name(tmp_path):
    """`dojo import-urdf package://pkg/robot.urdf` reads the file the package path holds, as
    the URDF's own package:// meshes are found: the same robot as from its path; an unknown
    package is invalid input (2) with the folders searched."""
    packages = tmp_path / "share"
    shutil.copytree(DATA / "packages", packages)
    (packages / "robot_description").mkdir()
    shutil.copy(ROBOT, packages / "robot_description" / "robot.urdf")
    by_name, by_path = tmp_path / "by_name.yaml", tmp_path / "by_path.yaml"
    res = runner.invoke(app, ["import-urdf", "package://robot_description/robot.urdf", "-o", str(by_name),
                              "--package-path", str(packages), "--merge-fixed"])
    assert res.exit_code == 0, res.output
    assert runner.invoke(app, ["import-urdf", str(ROBOT), "-o", str(by_path), "--package-path", PACKAGES,
                               "--merge-fixed"]).exit_code == 0
    a, b = dojo.load_scene(str(by_name)), dojo.load_scene(str(by_path))
    assert [x.name for x in a.bodies] == [x.name for x in b.bodies]
    np.testing.assert_array_equal(a.mass, b.mass)
    np.testing.assert_array_equal(a.inertia, b.inertia)
    res = runner.invoke(app, ["import-urdf", "package://no_such_package/robot.urdf", "-o", str(tmp_path / "x.yaml")])
    assert res.exit_code == 2 and "package 'no_such_package' not found in the search path" in res.output


def _urdf_scene(tmp_path, body: str) -> Path:
    shutil.copy(ROBOT, tmp_path / "robot.urdf")
    shutil.copytree(DATA / "packages", tmp_path / "packages")
    path = tmp_path / "scene.yaml"
    path.write_text("urdf: robot.urdf\nimport: {package_path: packages, floating: true}\n" + body)
    return path


def test_urdf_scene_overrides_by_name_and_pattern(tmp_path):
    path = _urdf_scene(tmp_path, """name: mine
timestep: 0.02
joints:
  - {name: hinge, damper: 3.0, limits: {lower: [-0.5], upper: [0.5]}}
  - {name: "s*", spring: 1.5}
  - {name: table, remove: true}
  - {name: glue, type: fixed, parent: arm, child: payload}
bodies:
  - {name: puck, remove: true}
  - {name: arm, mass: 0.75}
  - {name: payload, mass: 1.0, shape: {type: sphere, radius: 0.05}}
""")
    mech = dojo.load_scene(str(path), overrides={"joints.spin.damper": 0.4})
    assert mech.name == "mine" and mech.timestep == 0.02
    hinge = mech.get_joint("hinge")
    assert hinge.damper[0] == 3.0 and hinge.limits[0][0] == -0.5 and hinge.limits[1][0] == 0.5
    assert mech.get_joint("spin").spring[0] == 1.5 and mech.get_joint("slide").spring[0] == 1.5
    assert mech.get_joint("spin").damper[0] == 0.4, "--set reaches imported joints"
    assert "puck" not in [b.name for b in mech.bodies] and "table" not in [j.name for j in mech.joints]
    assert mech.get_body("arm").mass == 0.75 and mech.get_body("payload").mass == 1.0


def test_urdf_scene_problems_point_at_their_lines(tmp_path):
    path = _urdf_scene(tmp_path, """name: mine
timestep: 0.01
joints:
  - {name: "nothing_*", damper: 1.0}
  - {name: hinge, damper: -1.0}
""")
    with pytest.raises(SceneError) as info:
        dojo.load_scene(str(path))
    lines = [str(p) for p in info.value.problems]
    assert any(":6: joints.0.name: the pattern 'nothing_*' matches no imported joint" in line for line in lines), lines
    path.write_text(path.read_text().replace('  - {name: "nothing_*", damper: 1.0}\n', ""))
    with pytest.raises(SceneError) as info:
        dojo.load_scene(str(path))
    assert any(f"{path}:6: joints." in str(p) and "damper" in str(p) for p in info.value.problems), info.value.problems


def test_urdf_scene_bad_import_option_and_missing_file(tmp_path):
    text = "urdf: nowhere.urdf\nname: x\ntimestep: 0.01\n"
    with pytest.raises(SceneError, match="no such URDF file"):
        load_scene_spec_from_string(text, "s.yaml", tmp_path)
    with pytest.raises(SceneError, match="s.yaml:2: import.contacts: must be one of"):
        load_scene_spec_from_string("urdf: x.urdf\nimport: {contacts: hands}\n", "s.yaml", tmp_path)


_WINDING = """<robot name="winder">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
    <inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="wheel"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="5" velocity="10"/></joint>
  <joint name="spin" type="continuous"><parent link="arm"/><child link="wheel"/><origin xyz="0.4 0 0"/><axis xyz="0 0 1"/></joint>
</robot>
"""


def test_revolute_bounds_beyond_pi_are_kept_and_reached_through_turns(tmp_path):
    """A URDF revolute joint with limits +-10 rad keeps them (the importer once left out
    bounds beyond +-pi), and a torque winds it through a turn and a half onto its upper
    bound (docs/physics.md, "Revolute limits of any size") with every step converging;
    the continuous joint beyond it winds freely, its stored angle continuous."""
    path = tmp_path / "winder.urdf"
    path.write_text(_WINDING)
    result = read_urdf(path, UrdfOptions())
    mech = build_mechanism(spec_from_dict(dict(result.scene, gravity=[0.0, 0.0, 0.0])))
    hinge, spin = mech.get_joint("hinge"), mech.get_joint("spin")
    assert hinge.limits[0][0] == -10.0 and hinge.limits[1][0] == 10.0
    assert spin.limits is None
    assert mech.coordinate_names() == ["hinge:r0", "spin:r0"]
    f_hinge = 0
    u = np.zeros(2)
    u[f_hinge] = 1.0
    tr = dojo.simulate(mech, 400, controller=dojo.ConstantController(u))
    assert set(tr.status) == {"success"}
    theta = tr.minimal_q[:, f_hinge]
    assert np.abs(np.diff(theta)).max() < 0.5  # unwrapped: no jump of 2 pi
    assert theta.max() == pytest.approx(10.0, abs=1e-3) and theta.max() <= 10.0 + 1e-5
    assert np.abs(np.diff(tr.minimal_q[:, 1 - f_hinge])).max() < 0.5
