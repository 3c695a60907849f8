"""What the importer tells about a URDF (issue 24, item 3): one warning per kind of element
it does not model, naming the joints; files named as the user wrote them; a robot without
a name is named after its file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
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
    result = read_urdf(path, UrdfOptions())
    warnings = result.warnings
    mimic = [w for w in warnings if "<mimic>" in w]
    assert mimic == [f"warning: {path}: robot: <mimic> not modelled on 2 joints (each joint moves on its own): "
                     "j2 (of j0), j5 (of j1)"], warnings
    assert len(warnings) == 1, warnings
    # Coulomb joint friction is modelled (issue 24): no warning, the joints carry it
    assert {j["name"]: j.get("friction") for j in result.scene["joints"] if j["name"] != "fixed_base"} == {
        "j0": 0.2, "j1": 0.2, "j2": None, "j3": 0.2, "j4": None, "j5": None}


def test_the_command_names_the_file_as_given_and_a_scene_as_it_wrote_it(tmp_path, monkeypatch):
    (tmp_path / "robots").mkdir()
    (tmp_path / "robots" / "chain.urdf").write_text(_chain([""] + ['<mimic joint="j0"/>'] * 3))
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["import-urdf", "robots/chain.urdf", "-o", "chain.yaml"])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == ["warning: robots/chain.urdf: robot: <mimic> not modelled on 3 joints (each joint "
                                       "moves on its own): j1 (of j0), j2 (of j0), j3 (of j0)"], res.stderr
    # a scene on the URDF: problems name the URDF as the scene wrote it, not the resolved path
    (tmp_path / "robots" / "bad.urdf").write_text(_chain([""]).replace('lower="-1"', 'lower="x"'))
    (tmp_path / "scene.yaml").write_text("urdf: robots/bad.urdf\n")
    res = runner.invoke(app, ["check", "scene.yaml"])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("robots/bad.urdf:"), res.stderr
    assert str(tmp_path) not in res.stderr, res.stderr


def test_a_robot_without_a_name_is_named_after_its_file(tmp_path):
    """A <robot> without a name was refused ('has no name attribute'); it is named after its
    file. (example-robot-data's ur3.urdf has no name and no link either: still refused, for
    having no link.)"""
    path = tmp_path / "arm.urdf"
    path.write_text(_chain([""], robot=""))
    result = read_urdf(path, UrdfOptions())
    assert result.scene["name"] == "arm"
    assert result.warnings == [f"note: {path}:1: <robot>: has no name attribute; the scene is named 'arm' after the file"]
    assert dojo.simulate(dojo.load_scene(_scene(tmp_path, "arm.urdf")), steps=2).status == ["success"] * 2


def test_a_file_without_links_is_refused_as_describing_no_robot(tmp_path):
    """example-robot-data's ur3.urdf is xacro's output for a file of macros never called: an
    empty <robot>. Nothing to simulate (urdfdom and Pinocchio refuse it too); the message
    says so, with the xacro reason when the file declares xacro's namespace."""
    path = tmp_path / "ur3.urdf"
    path.write_text('<?xml version="1.0"?>\n<!-- by xacro -->\n<robot xmlns:xacro="http://wiki.ros.org/xacro">\n</robot>\n')
    with pytest.raises(SceneError) as info:
        read_urdf(path, UrdfOptions())
    (problem,) = info.value.problems
    assert problem.line == 3 and problem.field == "robot", str(problem)
    assert "describes no robot" in problem.message and "xacro" in problem.message, str(problem)
    res = CliRunner().invoke(app, ["import-urdf", str(path), "-o", str(tmp_path / "s.yaml")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output


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


# ------------------------------------------------------- lenient reading (item 4)
_CLEAN = _chain(['<dynamics damping="0.1"/>'])


@pytest.mark.parametrize("case,text,what", [
    ("version-0.0", '<?xml version="0.0"?>\n' + _CLEAN, "an XML declaration not at the start or not of version 1.0"),
    ("declaration-after-comment", '<!-- generated -->\n<?xml version="1.0" encoding="utf-8"?>\n' + _CLEAN,
     "an XML declaration not at the start or not of version 1.0"),
    ("trailing-content", _CLEAN + '<robot name="second"/>\ntrailing words\n', "content after the root element"),
    ("both", '<!-- x -->\n<?xml version="1.0"?>\n' + _CLEAN + "</robot>\n",
     "an XML declaration not at the start or not of version 1.0"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "")
def test_xml_that_reference_loaders_accept_is_read_with_one_warning(tmp_path, case, text, what):
    clean = tmp_path / "clean.urdf"
    clean.write_text(_CLEAN)
    path = tmp_path / "lenient.urdf"
    path.write_text(text)
    result = read_urdf(path, UrdfOptions())
    warnings = [w for w in result.warnings if "read leniently" in w]
    assert len(warnings) == 1 and what in warnings[0], result.warnings
    assert warnings[0].startswith(f"warning: {path}:"), warnings
    assert result.scene["bodies"] == read_urdf(clean, UrdfOptions()).scene["bodies"]
    assert result.scene["joints"] == read_urdf(clean, UrdfOptions()).scene["joints"]


def test_malformed_xml_is_still_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.urdf"
    text = '<?xml version="0.0"?>\n' + _CLEAN.replace("</robot>", "</rob>")
    path.write_text(text)
    with pytest.raises(SceneError) as info:
        read_urdf(path, UrdfOptions())
    (problem,) = info.value.problems
    assert problem.line == text.count("\n") and "malformed XML" in problem.message, str(problem)


def test_visuals_of_size_zero_are_skipped_with_one_note(tmp_path):
    text = _chain([""]).replace(
        '<link name="base">', '<link name="base"><visual><geometry><sphere radius="0"/></geometry></visual>'
        '<visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual>').replace(
        '<link name="l0">', '<link name="l0"><visual><geometry><cylinder radius="0.1" length="0"/></geometry></visual>')
    path = tmp_path / "zero.urdf"
    path.write_text(text)
    result = read_urdf(path, UrdfOptions())
    bodies = {b["name"]: b for b in result.scene["bodies"]}
    assert bodies["base"]["shape"]["type"] == "box" and "visuals" not in bodies["base"]
    assert bodies["l0"]["shape"] == {"type": "frame"}
    assert result.warnings == [f"note: {path}: robot: 2 visuals of size 0 skipped (nothing to draw): "
                               "link 'base' (line 2), link 'l0' (line 3)"], result.warnings
    dojo.load_scene(_scene(tmp_path, "zero.urdf"))  # and it loads


# ---------------------------------------------- inertia from geometry (item 4)
_BOX = (0.2, 0.1, 0.4)
_MASS = 3.0


def _box_link(inertia: str) -> str:
    return _chain([""]).replace(
        '<link name="l0"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>',
        f'<link name="l0">\n<inertial><origin xyz="0 0 0.3"/><mass value="{_MASS}"/><inertia {inertia}/></inertial>'
        f'<collision><origin xyz="0 0 0.3" rpy="0 0 1.5707963267948966"/><geometry><box size="{" ".join(map(str, _BOX))}"/></geometry></collision>'
        '<collision><origin xyz="0 0 0.3"/><geometry><capsule radius="0.05" length="0.2"/></geometry></collision>')


def _expected_box_and_capsule() -> np.ndarray:
    """The two shapes' inertia about their common centre, mass shared by volume: the box's
    by its formula (turned a quarter about z: x and y swap), the capsule's by integrating
    its density over a fine grid (an independent check of the half-sphere terms)."""
    a, b, c = _BOX
    box_volume = a * b * c
    r, h = 0.05, 0.2
    n = 200
    xs = (np.arange(n) + 0.5) / n * 2 * r - r
    zs = (np.arange(2 * n) + 0.5) / (2 * n) * (h + 2 * r) - (h / 2 + r)
    x, y, z = np.meshgrid(xs, xs, zs, indexing="ij")
    inside = x**2 + y**2 + np.maximum(np.abs(z) - h / 2, 0.0) ** 2 <= r * r
    cell = (2 * r / n) ** 2 * (h + 2 * r) / (2 * n)
    capsule_volume = inside.sum() * cell
    density = _MASS / (box_volume + capsule_volume)
    px, py, pz = x[inside], y[inside], z[inside]
    capsule = density * cell * np.array([[np.sum(py**2 + pz**2), 0, 0], [0, np.sum(px**2 + pz**2), 0], [0, 0, np.sum(px**2 + py**2)]])
    box = density * box_volume / 12.0 * np.diag([a * a + c * c, b * b + c * c, a * a + b * b])
    return box + capsule


def test_an_inertia_that_is_not_positive_definite_is_computed_from_the_collision_shapes(tmp_path):
    path = tmp_path / "bad_inertia.urdf"
    path.write_text(_box_link('ixx="1e-3" iyy="1e-3" izz="-1e-3" ixy="0" ixz="0" iyz="0"'))
    result = read_urdf(path, UrdfOptions())
    body = next(b for b in result.scene["bodies"] if b["name"] == "l0")
    got = np.asarray(body["inertia"])
    expected = _expected_box_and_capsule()
    # the grid's discretisation: ~1e-3 relative on the capsule's part
    assert np.abs(got - expected).max() < 2e-3 * np.abs(expected).max(), (got, expected)
    notes = [w for w in result.warnings if "not positive definite" in w]
    assert len(notes) == 1 and notes[0].startswith(f"note: {path}:3: link 'l0': inertia eigenvalues"), result.warnings
    mech = dojo.load_scene(_scene(tmp_path, "bad_inertia.urdf"))
    assert np.allclose(mech.get_body("l0").inertia, got, rtol=0, atol=1e-15)


def test_inertia_from_geometry_on_every_link(tmp_path):
    path = tmp_path / "good_inertia.urdf"
    path.write_text(_box_link('ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"'))
    kept = next(b for b in read_urdf(path, UrdfOptions()).scene["bodies"] if b["name"] == "l0")
    assert np.allclose(kept["inertia"], 0.1 * np.eye(3)), "a positive definite file inertia is kept"
    computed = next(b for b in read_urdf(path, UrdfOptions(inertia_from_geometry=True)).scene["bodies"] if b["name"] == "l0")
    expected = _expected_box_and_capsule()
    assert np.abs(np.asarray(computed["inertia"]) - expected).max() < 2e-3 * np.abs(expected).max()
    out = tmp_path / "robot.yaml"
    res = runner.invoke(app, ["import-urdf", str(path), "-o", str(out), "--inertia-from-geometry"])
    assert res.exit_code == 0, res.output
    assert np.allclose(dojo.load_scene(str(out)).get_body("l0").inertia, computed["inertia"], rtol=1e-12, atol=0)
