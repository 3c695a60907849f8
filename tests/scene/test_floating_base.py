"""set_floating_base (Dojo's name) re-roots a scene at another body: the same free-floating
robot rooted at two different links moves the same way (issue 24, item 3)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.floating_base import set_floating_base
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import UrdfOptions, read_urdf
from dojo_cli.simulation.initial import initial_state

runner = CliRunner()

# A free chain with every reversible joint type, off-centre masses, turned joint frames and
# springs, so that its links swing against each other: base -revolute- arm -revolute (oblique,
# turned frame)- forearm -prismatic- slider -fixed- weight.
_URDF = """<robot name="chain">
  <link name="base"><inertial><origin xyz="0.02 0 0.01"/><mass value="2"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0.001" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0.15 0 0" rpy="0 0.2 0"/><mass value="1"/>
    <inertia ixx="0.001" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="forearm"><inertial><origin xyz="0.1 0.02 0"/><mass value="0.7"/>
    <inertia ixx="0.001" iyy="0.006" izz="0.006" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="slider"><inertial><mass value="0.4"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="weight"><inertial><origin xyz="0 0 0.03"/><mass value="0.3"/>
    <inertia ixx="0.0005" iyy="0.0005" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0.1 0.05 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="elbow" type="revolute"><parent link="arm"/><child link="forearm"/><origin xyz="0.3 0 0" rpy="0.3 -0.2 0.5"/>
    <axis xyz="0 1 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="forearm"/><child link="slider"/><origin xyz="0.2 0 0" rpy="0 0.4 0"/>
    <axis xyz="1 0 0.5"/><limit lower="-0.5" upper="0.5" effort="1" velocity="1"/></joint>
  <joint name="weld" type="fixed"><parent link="slider"/><child link="weight"/><origin xyz="0.05 0 0" rpy="0.1 0 0"/></joint>
</robot>
"""
_INITIAL = {"shoulder": 0.4, "elbow": -0.7, "slide": 0.08}
_SPRINGS = {"shoulder": 2.0, "elbow": 1.5, "slide": 30.0}
_STEPS = 60
# tight solver tolerances: the two runs solve different (equivalent) equations, so they agree
# to the solver's tolerance, not to rounding
_OPTS = dict(rtol=1e-11, btol=1e-10)
_AGREE = 1e-7


def _scene(tmp_path, gravity) -> dict:
    path = tmp_path / "chain.urdf"
    path.write_text(_URDF)
    scene = read_urdf(path, UrdfOptions(floating=True)).scene
    for joint in scene["joints"]:
        if joint["name"] in _INITIAL:
            joint["initial"] = {"position": [_INITIAL[joint["name"]]]}
            joint["spring"] = _SPRINGS[joint["name"]]
    scene["gravity"] = gravity
    return scene


def _run(scene) -> tuple:
    mech = build_mechanism(spec_from_dict(scene))
    traj = dojo.simulate(mech, steps=_STEPS, opts=dojo.SolverOptions(**_OPTS))
    assert set(traj.status) == {"success"}, set(traj.status)
    return mech, traj


@pytest.mark.parametrize("gravity", [[0.0, 0.0, 0.0], [0.0, 0.0, -9.81]], ids=["no-gravity", "free-fall"])
@pytest.mark.parametrize("root", ["forearm", "weight"])
def test_the_same_robot_rooted_at_two_links_moves_the_same(tmp_path, root, gravity):
    scene = _scene(tmp_path, gravity)
    rerooted = set_floating_base(scene, root)
    assert rerooted["joints"][0]["child"] == root and rerooted["joints"][0]["type"] == "floating"
    assert scene["joints"][0]["child"] == "base", "the given scene is left as it was"
    mech_a, a = _run(scene)
    mech_b, b = _run(rerooted)
    for body in [bd.name for bd in mech_a.bodies]:
        i, k = mech_a.body_index(body), mech_b.body_index(body)
        dx = np.abs(a.x[:, i] - b.x[:, k]).max()
        dr = max(np.abs(matrix_from_quaternion(a.q[n, i]) - matrix_from_quaternion(b.q[n, k])).max() for n in range(_STEPS + 1))
        assert dx < _AGREE and dr < _AGREE, f"{body}: position {dx:.2e}, orientation {dr:.2e} apart (rooted at {root})"
    # the links swing against each other (not a trivially rigid motion)
    rel = [np.abs(a.minimal_q[:, f] - a.minimal_q[0, f]).max() for f in range(a.minimal_q.shape[1])]
    assert max(rel) > 0.05, rel


def test_joints_on_the_path_are_reversed_and_the_others_kept(tmp_path):
    scene = _scene(tmp_path, [0.0, 0.0, 0.0])
    rerooted = set_floating_base(scene, "forearm")
    joints = {j["name"]: j for j in rerooted["joints"]}
    assert (joints["shoulder"]["parent"], joints["shoulder"]["child"]) == ("arm", "base")
    assert (joints["elbow"]["parent"], joints["elbow"]["child"]) == ("forearm", "arm")
    assert (joints["slide"]["parent"], joints["slide"]["child"]) == ("forearm", "slider"), "off the path: kept"
    assert joints["elbow"]["limits"] == next(j for j in scene["joints"] if j["name"] == "elbow")["limits"]
    assert "fixed_base" not in joints and len(rerooted["joints"]) == len(scene["joints"])


def test_refusals(tmp_path):
    scene = _scene(tmp_path, [0.0, 0.0, 0.0])
    with pytest.raises(SceneError, match="no body 'hand' to float"):
        set_floating_base(scene, "hand")
    planar = dict(scene, joints=[dict(j, type="spherical") if j["name"] == "shoulder" else j for j in scene["joints"]])
    with pytest.raises(SceneError, match="a spherical joint on the way to 'arm' cannot be reversed"):
        set_floating_base(planar, "arm")


def test_import_urdf_floating_base_option(tmp_path):
    path = tmp_path / "chain.urdf"
    path.write_text(_URDF)
    out = tmp_path / "chain.yaml"
    res = runner.invoke(app, ["import-urdf", str(path), "--floating-base", "forearm", "-o", str(out)])
    assert res.exit_code == 0, res.output
    written = yaml.safe_load(out.read_text())
    assert written["joints"][0] == set_floating_base(read_urdf(path, UrdfOptions(floating=True)).scene, "forearm")["joints"][0]
    assert dojo.load_scene(str(out)).joints[0].type == "floating"
    bad = runner.invoke(app, ["import-urdf", str(path), "--floating-base", "hand", "-o", str(tmp_path / "x.yaml")])
    assert bad.exit_code == 2 and f"{path}: floating_base: no link 'hand' in the robot" in bad.stderr, bad.output


def test_a_urdf_scene_floats_at_a_link(tmp_path):
    """``import: {floating_base: LINK}`` in a scene on a URDF: the same scene as the function's."""
    path = tmp_path / "chain.urdf"
    path.write_text(_URDF)
    scene = tmp_path / "scene.yaml"
    scene.write_text("urdf: chain.urdf\nimport: {floating_base: weight}\n")
    mech = dojo.load_scene(str(scene))
    expected = build_mechanism(spec_from_dict(set_floating_base(read_urdf(path, UrdfOptions(floating=True)).scene, "weight")))
    assert np.array_equal(initial_state(mech), initial_state(expected))
    assert [j.name for j in mech.joints] == [j.name for j in expected.joints]
    scene.write_text("urdf: chain.urdf\nimport: {floating_base: 3}\n")
    with pytest.raises(SceneError, match="import.floating_base: must be a link's name, got 3"):
        dojo.load_scene(str(scene))
