"""What the importer tells about a URDF (issue 24, item 3): one warning per kind of element
it does not model, naming the joints; files named as the user wrote them; a robot without
a name is named after its file."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.scene.urdf import UrdfOptions, read_urdf

runner = CliRunner()

_LINK = '<link name="{name}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
_JOINT = ('<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/><axis xyz="0 0 1"/>'
          '<limit lower="-1" upper="1" effort="1" velocity="1"/>{extra}</joint>')


def _chain(extras: list[str], robot: str = ' name="chain"') -> str:
    """A base and one link per extra, each on a revolute joint j<k> carrying that extra."""
    links = [_LINK.format(name="base")] + [_LINK.format(name=f"l{k}") for k in range(len(extras))]
    joints = [_JOINT.format(name=f"j{k}", parent="base" if k == 0 else f"l{k - 1}", child=f"l{k}", extra=extra)
              for k, extra in enumerate(extras)]
    return f"<robot{robot}>\n" + "\n".join(links + joints) + "\n</robot>\n"


def test_one_warning_per_unmodelled_kind_naming_the_joints(tmp_path):
    friction = '<dynamics damping="0.1" friction="0.2"/>'
    path = tmp_path / "chain.urdf"
    path.write_text(_chain([friction, friction, '<mimic joint="j0"/>', friction, "", '<mimic joint="j1" multiplier="2"/>']))
    warnings = read_urdf(path, UrdfOptions()).warnings
    coulomb = [w for w in warnings if "Coulomb joint friction" in w]
    mimic = [w for w in warnings if "<mimic>" in w]
    assert coulomb == [f"warning: {path}: robot: Coulomb joint friction (<dynamics friction>) not modelled on 3 joints "
                       "(ignored): j0, j1, j3"], warnings
    assert mimic == [f"warning: {path}: robot: <mimic> not modelled on 2 joints (each joint moves on its own): "
                     "j2 (of j0), j5 (of j1)"], warnings
    assert len(warnings) == 2, warnings


def test_the_command_names_the_file_as_given_and_a_scene_as_it_wrote_it(tmp_path, monkeypatch):
    friction = '<dynamics friction="0.2"/>'
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "chain.urdf").write_text(_chain([friction] * 4))
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["import-urdf", "robots/chain.urdf", "-o", "chain.yaml"])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == ["warning: robots/chain.urdf: robot: Coulomb joint friction (<dynamics friction>) "
                                       "not modelled on 4 joints (ignored): j0, j1, j2, j3"], res.stderr
    # a scene on the URDF: problems name the URDF as the scene wrote it, not the resolved path
    (tmp_path / "robots" / "bad.urdf").write_text(_chain([""]).replace('lower="-1"', 'lower="x"'))
    (tmp_path / "scene.yaml").write_text("urdf: robots/bad.urdf\n")
    res = runner.invoke(app, ["check", "scene.yaml"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("robots/bad.urdf:"), res.stderr
    assert str(tmp_path) not in res.stderr, res.stderr


def test_a_robot_without_a_name_is_named_after_its_file(tmp_path):
    """example-robot-data's ur3.urdf has no robot name (Pinocchio reads it): it was refused."""
    path = tmp_path / "arm.urdf"
    path.write_text(_chain([""], robot=""))
    result = read_urdf(path, UrdfOptions())
    assert result.scene["name"] == "arm"
    assert result.warnings == [f"note: {path}:1: <robot>: has no name attribute; the scene is named 'arm' after the file"]
    assert dojo.simulate(dojo.load_scene(_scene(tmp_path, "arm.urdf")), steps=2).status == ["success"] * 2


def _scene(folder: Path, urdf: str) -> str:
    path = folder / "scene.yaml"
    path.write_text(f"urdf: {urdf}\n")
    return str(path)


def test_a_uniformly_mirrored_mesh_keeps_its_scale_per_axis(tmp_path):
    """A uniform negative mesh scale (tiago_dual.urdf's right arm, "-1 -1 -1") was written as
    the scalar -1, which the scene refuses (a uniform scale is > 0): tiago_dual was refused.
    It stays per axis, the scene's form of a mirror; a positive uniform scale is one number."""
    (tmp_path / "m.stl").write_text("solid m\nendsolid m\n")
    text = _chain([""]).replace(
        '<link name="l0">', '<link name="l0"><visual><geometry><mesh filename="m.stl" scale="-1 -1 -1"/></geometry></visual>'
    ).replace('<link name="base">', '<link name="base"><visual><geometry><mesh filename="m.stl" scale="2 2 2"/></geometry></visual>')
    path = tmp_path / "mirror.urdf"
    path.write_text(text)
    bodies = {b["name"]: b for b in read_urdf(path, UrdfOptions()).scene["bodies"]}
    assert bodies["l0"]["shape"]["scale"] == [-1.0, -1.0, -1.0] and bodies["base"]["shape"]["scale"] == 2.0
    mech = dojo.load_scene(_scene(tmp_path, "mirror.urdf"))
    assert [b.name for b in mech.bodies] == ["base", "l0"]
