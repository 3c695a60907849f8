"""URDFs with values that would overflow or crash (issue 11, item 2): masses and inertias
that are NaN, infinite, negative or beyond the scene bound, and mesh names the file
system refuses. `dojo import-urdf` and scenes with `urdf:` report the URDF file, the line
and the element, exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.scene.loader import load_scene_spec_from_string

runner = CliRunner()
ROBOT = Path(__file__).resolve().parents[1] / "data" / "urdf" / "robot.urdf"

URDF = """\
<robot name="r">
  <link name="base">
    <inertial><mass value="{mass}"/><inertia ixx="{ixx}" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <visual><geometry><mesh filename="{mesh}"/></geometry></visual>
  </link>
  <link name="arm">
    <inertial><origin xyz="{com} 0 0"/><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
    <visual><geometry><box size="{box} 1 1"/></geometry></visual>
  </link>
  <joint name="j" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="{lower}" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"""
GOOD = {"mass": "1", "ixx": "1", "mesh": "m.stl", "com": "0", "box": "1", "lower": "-1"}

CASES = [
    ("mass-nan", {"mass": "nan"}, 2, "link 'base'", "<mass> must be a number, got nan"),
    ("mass-inf", {"mass": "inf"}, 2, "link 'base'", "<mass> must be finite, got inf"),
    ("mass-negative", {"mass": "-1"}, 2, "link 'base'", "<mass> must be >= 0, got -1"),
    ("mass-huge", {"mass": "1e300"}, 2, "link 'base'", "<mass> must be at most 1e+100 in magnitude, got 1e+300"),
    ("inertia-nan", {"ixx": "nan"}, 2, "link 'base'", "<inertia> must be a number, got nan"),
    ("inertia-inf", {"ixx": "-inf"}, 2, "link 'base'", "<inertia> must be finite, got -inf"),
    ("origin-nan", {"com": "nan"}, 6, "link 'arm'", "<inertial><origin> must be a number, got nan"),
    ("box-inf", {"box": "inf"}, 8, "link 'arm' visual", "<box> must be finite, got inf"),
    ("limit-nan", {"lower": "nan"}, 12, "joint 'j'", "<limit> must be a number, got nan"),
    ("mesh-past-path-max", {"mesh": "a" * 5000 + ".stl"}, 4, "link 'base' visual mesh",
     "filename must be a printable path of at most 4096 characters, got 'aaaa"),
    # each part longer than NAME_MAX (255): the file system refuses to look (ENAMETOOLONG)
    ("mesh-part-past-name-max", {"mesh": "/".join(["b" * 300] * 3) + ".stl"}, 4, "link 'base' visual mesh",
     "filename 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'... (906 characters): File name too long"),
    ("mesh-package-past-name-max", {"mesh": "package://" + "p" * 300 + "/m.stl"}, 4, "link 'base' visual mesh",
     "cannot resolve 'package://pppp"),
]


@pytest.mark.parametrize("case,values,line,element,message", CASES, ids=[c[0] for c in CASES])
def test_import_urdf_refuses_bad_values_naming_file_line_and_element(tmp_path, case, values, line, element, message):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**{**GOOD, **values}))
    out = tmp_path / "robot.yaml"
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert any(ln.startswith(f"{urdf}:{line}: {element}: {message}") for ln in res.stderr.splitlines()), res.stderr
    assert not out.exists()


def test_control_character_in_a_link_name_names_the_element(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**GOOD).replace('name="arm"', 'name="a&#10;rm"'))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 2
    assert res.stderr.splitlines()[0] == f"{urdf}:6: link 'a\\nrm': the name must be printable text (no control characters)"


def test_missing_name_attribute_names_the_element(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**GOOD).replace('<link name="arm">', "<link>"))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 2 and res.stderr.strip() == f"{urdf}:6: <link>: has no name attribute", res.output


def test_the_good_urdf_imports(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**GOOD))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("case,values,line,element,message", CASES[:2] + CASES[-2:-1], ids=["mass-nan", "mass-inf", "mesh"])
def test_urdf_scene_reports_the_urdf_element(tmp_path, case, values, line, element, message):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**{**GOOD, **values}))
    with pytest.raises(SceneError) as info:
        load_scene_spec_from_string("urdf: robot.urdf\nname: r\ntimestep: 0.01\n", "scene.yaml", tmp_path)
    assert any(str(p).startswith(f"{urdf}:{line}: {element}: {message}") for p in info.value.problems), info.value.problems


def test_urdf_key_the_file_system_refuses(tmp_path):
    name = "/".join(["u" * 300] * 2) + ".urdf"
    with pytest.raises(SceneError) as info:
        load_scene_spec_from_string(f"urdf: {name}\nname: r\ntimestep: 0.01\n", "scene.yaml", tmp_path)
    (problem,) = info.value.problems
    assert (problem.file, problem.line, problem.field) == ("scene.yaml", 1, "urdf")
    assert "File name too long" in problem.message


def test_import_urdf_output_name_the_file_system_refuses(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**GOOD))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / ("o" * 300 + ".yaml"))])
    assert res.exit_code == 3 and "cannot write (File name too long)" in res.stderr, res.output


def test_entity_declarations_are_refused(tmp_path):
    urdf = tmp_path / "robot.urdf"
    bomb = '<!DOCTYPE robot [<!ENTITY l0 "lol"><!ENTITY l1 "&l0;&l0;&l0;&l0;&l0;&l0;&l0;&l0;">]>\n'
    urdf.write_text(bomb + URDF.format(**GOOD).replace('name="arm"', 'name="&l1;"'))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == f"{urdf}: <!DOCTYPE>: XML entities are not supported (declared: '&l0;, &l1;')"


def test_dynamics_that_are_not_numbers(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**GOOD).replace("<axis", '<dynamics damping="nan nan nan"/><axis'))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (
        f"{urdf}:10: joint 'j': <dynamics> values must be numbers (could not convert string to float: 'nan nan nan')"
    )


def test_links_below_a_refused_link_are_not_walked(tmp_path):
    # the massless arm moves and carries the hand: one problem, not a KeyError on the hand
    urdf = tmp_path / "robot.urdf"
    text = URDF.format(**GOOD).replace('<mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>\n    <visual><geometry><box',
                                       '<mass value="0"/></inertial>\n    <visual><geometry><box')
    hand = ('  <link name="hand"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
            '</inertial></link>\n  <joint name="w" type="continuous"><parent link="arm"/><child link="hand"/>'
            '<origin xyz="0.1 0 0"/></joint>\n</robot>')
    urdf.write_text(text.replace("</robot>", hand))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == (
        f"{urdf}:6: link 'arm': has no mass but moves on joint 'j' and carries links; give it an <inertial> "
        "(the joints j, w through massless links are not one universal or gimbal joint: the origins of w are not at "
        "the previous joint's (not through one point))"
    )


def test_joints_listed_leaves_first_stand_on_the_ground_as_in_order(tmp_path):
    # a floating robot is lifted onto its lowest contact: that walk went root to leaves in
    # document order, and a URDF listing a child's joint first was a KeyError
    from lxml import etree

    root = etree.parse(str(ROBOT)).getroot()
    joints = root.findall("joint")
    for joint in joints:
        root.remove(joint)
    root.extend(reversed(joints))
    reversed_urdf = tmp_path / "reversed.urdf"
    reversed_urdf.write_bytes(etree.tostring(root))
    scenes = []
    for urdf in (ROBOT, reversed_urdf):
        out = tmp_path / f"{urdf.stem}.yaml"
        res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(out), "--floating", "--contacts", "collision",
                                  "--merge-fixed", "--package-path", str(ROBOT.parent / "packages")])
        assert res.exit_code == 0, res.output
        scenes.append(yaml.safe_load(out.read_text()))
    assert scenes[0]["joints"][0]["initial"] == scenes[1]["joints"][0]["initial"]


def test_axis_of_the_wrong_length(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(URDF.format(**GOOD).replace('<axis xyz="0 0 1"/>', '<axis xyz="1"/>'))
    res = runner.invoke(app, ["import-urdf", str(urdf), "-o", str(tmp_path / "robot.yaml")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == f"{urdf}:10: joint 'j': <axis xyz> must be 3 numbers, got 1"
