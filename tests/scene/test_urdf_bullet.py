"""URDFs of another collection, PyBullet's pybullet_data, read as Bullet's URDF reader reads
them (issue 24: "robots from other collections"): a base of mass 0 is fixed to the world,
``<limit lower="1" upper="-1">`` means no limit, ``type="spherical"`` is a ball joint, commas
separate numbers, a vector's numbers past the third are ignored, xacro's ``$(optenv)`` left
in a file is expanded as xacro does; files with nothing that moves (plane.urdf) or no rigid
body (torus_deform.urdf) are refused with the reason. Each reading has one warning or note
naming the elements and their lines. The physics of three of the files (copies in
tests/data/urdf/pybullet, zlib licence): the spherical-joint humanoid conserves energy, the
fixed-base kuka matches Pinocchio's reading of the same file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import UrdfOptions, read_urdf

DATA = Path(__file__).parents[1] / "data" / "urdf" / "pybullet"

_INERTIAL = '<inertial><mass value="{mass}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'


def _link(name: str, mass: float = 1.0, extra: str = "") -> str:
    return f'  <link name="{name}">{_INERTIAL.format(mass=mass, i=0.1 if mass else 0)}{extra}</link>\n'


def _joint(name: str, kind: str, parent: str, child: str, extra: str = "", origin: str = '<origin xyz="0 0 -0.5"/>') -> str:
    return f'  <joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>{origin}{extra}</joint>\n'


def _robot(*parts: str) -> str:
    return '<robot name="r">\n' + "".join(parts) + "</robot>\n"


def _read(tmp_path, text: str, **options):
    path = tmp_path / "robot.urdf"
    path.write_text(text, encoding="utf-8")
    return path, read_urdf(path, UrdfOptions(**options))


def _build(path, result):
    return build_mechanism(spec_from_dict(result.scene, file=str(path)))


# ------------------------------------------------------------- a base of mass 0


def test_a_massless_root_with_nothing_massive_fixed_to_it_is_fixed_to_the_world(tmp_path):
    """cartpole.urdf, pendulum5.urdf, kuka_iiwa/model.urdf: the root has no mass and carries
    the movable joints. In Bullet a base of mass 0 is static; --floating cannot float a body
    without mass (it was refused: "carries movable joints; give it an <inertial>"). It is the
    world: its joints hang from origin, no floating base, and a note says so with its line."""
    box = '<collision><geometry><box size="0.5 0.25 0.1"/></geometry></collision>'
    text = _robot(_link("world", 0.0), _link("cart", 1.0, box), _link("pole", 0.1),
                  _joint("slider", "prismatic", "world", "cart", '<axis xyz="1 0 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/>',
                         '<origin xyz="0 0 0"/>'),
                  _joint("hinge", "continuous", "cart", "pole", '<axis xyz="0 1 0"/>', '<origin xyz="0 0 0.5"/>'))
    path, result = _read(tmp_path, text, floating=True, contacts="collision")
    joints = result.scene["joints"]
    assert [(j["name"], j["type"], j["parent"]) for j in joints] == [("slider", "prismatic", "origin"), ("hinge", "revolute", "cart")]
    assert "world" in result.dropped and "floating" not in result.scene["description"]
    # the cart's box started half inside the ground (Bullet places the base where a script
    # loads it): the rail is raised by the box's half height, so that it touches
    assert np.allclose(joints[0]["parent_vertex"], [0, 0, 0.05], atol=1e-15)
    assert [w for w in result.warnings if "link 'world'" in w] == [
        f"note: {path}:2: link 'world': the root link has no mass and no link fixed to it has mass: it is fixed to the "
        "world, not floating (Bullet reads a base of mass 0 as static), and its joints slider hang from the world",
        f"note: {path}:2: link 'world': raised 0.05 m, so that its lowest contact touches the ground (it started below it)"]
    mech = _build(path, result)
    assert [b.name for b in mech.bodies] == ["cart", "pole"]
    # the cart rests on the ground under the rail, every step converged
    traj = dojo.simulate(mech, steps=50)
    assert set(traj.status) == {"success"}
    assert np.min(traj.contact_distance) > -CONTACT_DEPTH_TOL


@pytest.mark.parametrize("floating", [True, False], ids=["floating", "fixed"])
def test_a_file_where_no_link_has_mass_is_refused_as_static_scenery(tmp_path, floating):
    """plane.urdf, table.urdf, tray.urdf (12 files of pybullet_data): every link has mass 0,
    which Bullet loads as a static object. Nothing moves: refused with the reason (plane.urdf
    was told it "carries movable joints", with no joint in the file)."""
    text = _robot(_link("planeLink", 0.0, '<collision><origin xyz="0 0 -5"/><geometry><box size="200 200 10"/></geometry></collision>'))
    with pytest.raises(SceneError) as info:
        _read(tmp_path, text, floating=floating, contacts="collision")
    (problem,) = info.value.problems
    assert (problem.line, problem.field) == (2, "robot")
    assert problem.message.startswith("no link has mass (planeLink): the file describes static scenery (Bullet reads a base "
                                      "of mass 0 as fixed to the world), nothing that moves"), problem.message
    res = CliRunner().invoke(app, ["import-urdf", str(tmp_path / "robot.urdf"), "-o", str(tmp_path / "plane.yaml"), "--floating"])
    assert res.exit_code == 2 and res.stderr.startswith(f"{tmp_path / 'robot.urdf'}:2: robot: no link has mass"), res.output
    assert not (tmp_path / "plane.yaml").exists()


def test_a_deformable_is_refused_as_not_modelled(tmp_path):
    text = ('<robot name="torus">\n  <deformable name="torus">\n    <inertial><mass value="3"/></inertial>\n'
            '    <visual filename="torus.vtk"/>\n  </deformable>\n</robot>\n')
    with pytest.raises(SceneError) as info:
        _read(tmp_path, text)
    (problem,) = info.value.problems
    assert (problem.line, problem.field) == (1, "robot")
    assert problem.message == ("has no <link>, only a <deformable> (line 2): a deformable body, Bullet's extension, not "
                               "modelled (Dojo's bodies are rigid)")


# ------------------------------------------------------------- joints


def test_lower_above_upper_is_bullets_no_limit(tmp_path):
    """biped2d_pybullet.urdf's lower="1" upper="-1" (Bullet's default, and its applied limit
    needs lower <= upper): unlimited, one warning naming the joints and lines."""
    no_limit = '<axis xyz="1 0 0"/><limit lower="1" upper="-1" effort="0" velocity="0"/>'
    text = _robot(_link("base"), _link("a"), _link("b"), _link("c"),
                  _joint("x_to_world", "prismatic", "base", "a", no_limit),
                  _joint("z_to_x", "revolute", "a", "b", no_limit),
                  _joint("kept", "revolute", "b", "c", '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>'))
    path, result = _read(tmp_path, text)
    joints = {j["name"]: j for j in result.scene["joints"]}
    assert "limits" not in joints["x_to_world"] and "limits" not in joints["z_to_x"]
    assert joints["kept"]["limits"] == {"lower": [-1.0], "upper": [1.0]}
    assert [w for w in result.warnings if "lower > upper" in w] == [
        f"warning: {path}:6: robot: <limit> lower > upper in 2 places, Bullet's convention for a joint without position "
        "limits (its default is lower 0, upper -1): read as unlimited: joint 'x_to_world' [1, -1] (line 6), "
        "joint 'z_to_x' [1, -1] (line 7)"]


def test_a_spherical_joint_is_a_ball_joint_and_its_swing_twist_limit_is_named(tmp_path):
    """Bullet's type="spherical" (humanoid.urdf): Dojo's spherical joint, its coordinates the
    rotation vector. spherical_joint_limit.urdf's <limit lower upper twist> is Bullet's soft
    swing-twist limit, not modelled: one warning names the joint and its ranges."""
    path = DATA / "spherical_joint_limit.urdf"
    result = read_urdf(path, UrdfOptions())
    neck = result.scene["joints"][-1]
    assert neck["type"] == "spherical" and neck["parent"] == "chest" and "axis" not in neck and "limits" not in neck
    assert np.allclose(neck["parent_vertex"], [0, 0, 1]) and np.allclose(neck["child_vertex"], [0, 0, -0.3])
    assert result.warnings == [
        f"warning: {path}: robot: Bullet's swing-twist limit of a spherical joint (<limit lower upper twist>) not modelled "
        "on 1 joint (the joint turns freely): neck (swing 0.2, 0.8, twist 0.3)"]
    assert _build(path, result).nu == 3


def test_the_spherical_joint_humanoid_conserves_energy():
    """humanoid.urdf (8 spherical joints, 4 revolute) floating with every joint turning, no
    gravity and no contacts: the energy error of the variational integrator is second order
    (divided by ~4 when h halves), with no drift. The joint limits are left out: the knees
    and elbows start 0.01 rad inside a bound (the importer's pose), and a limit is an
    inelastic impact that takes energy (measured: 0.09 J of 2.9 J at the first step)."""
    path = DATA / "humanoid.urdf"
    errors = []
    for h in (HUMANOID_H, HUMANOID_H / 2):
        result = read_urdf(path, UrdfOptions(floating=True, merge_fixed=True))
        assert sum(j["type"] == "spherical" for j in result.scene["joints"]) == 8
        rng = np.random.default_rng(0)
        for joint in result.scene["joints"]:
            joint.pop("limits", None)
            joint.pop("initial", None)
            n = {"spherical": 3, "revolute": 1}.get(joint["type"])
            if n:
                joint["initial"] = {"velocity": rng.uniform(-1.0, 1.0, n).tolist()}
        result.scene.update(timestep=h, gravity=[0.0, 0.0, 0.0])
        mech = _build(path, result)
        traj = dojo.simulate(mech, steps=round(HUMANOID_SECONDS / h), opts=dojo.default_options(mech).replace(tolerances="absolute"))
        assert set(traj.status) == {"success"}
        energy = dojo.mechanical_energy(mech, traj)
        errors.append(float(np.max(np.abs(energy - energy[0]))) / float(np.max(dojo.mechanics(mech, traj).kinetic)))
    assert errors[0] < HUMANOID_ENERGY_TOL, f"energy error {errors[0]:.2e} of the largest kinetic energy"
    assert HUMANOID_ORDER_RATIO[0] < errors[0] / errors[1] < HUMANOID_ORDER_RATIO[1], f"errors {errors}: not second order"


# ------------------------------------------------------------- numbers


def test_commas_between_numbers_are_read_as_bullet_reads_them(tmp_path):
    """bicycle/bike.urdf: <origin xyz="0.07, 0, -0.69">; Bullet's atof stops at the comma."""
    text = _robot(_link("frame"), _link("wheel"),
                  _joint("axle", "continuous", "frame", "wheel", '<axis xyz="0, 1, 0"/>', '<origin xyz="0.07, 0, -0.69"/>'))
    path, result = _read(tmp_path, text)
    axle = result.scene["joints"][-1]
    assert np.allclose(axle["parent_vertex"], [0.07, 0, -0.69]) and axle["axis"] == [0.0, 1.0, 0.0]
    assert [w for w in result.warnings if "commas" in w] == [
        f"warning: {path}:4: robot: numbers separated by commas in 2 places, commas read as separators, as Bullet (its "
        "numbers stop at a comma) and yourdfpy read them: joint 'axle' <axis xyz> (line 4), joint 'axle' <origin xyz> (line 4)"]


def test_numbers_past_a_vectors_third_are_ignored_as_bullet_does(tmp_path):
    """microtaur.urdf's rpy="-3.14159 1.57079 0 0" and racecar_differential.urdf's mesh
    scale="1 1 1 1": Bullet reads a vector's first 3 numbers (urdfdom refuses them)."""
    (tmp_path / "m.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n")
    text = _robot(_link("base", 1.0, '<visual><geometry><mesh filename="m.obj" scale="2 2 2 2"/></geometry></visual>'), _link("leg"),
                  _joint("hip", "revolute", "base", "leg", '<limit lower="-1" upper="1" effort="1" velocity="1"/>',
                         '<origin rpy="-3.14159 1.57079 0 0" xyz="0 0 -0.1"/>'))
    path, result = _read(tmp_path, text)
    hip = result.scene["joints"][-1]
    reference = read_urdf(_write(tmp_path / "three.urdf", text.replace("1.57079 0 0", "1.57079 0").replace("2 2 2 2", "2 2 2")),
                          UrdfOptions())
    assert hip["orientation_offset"] == reference.scene["joints"][-1]["orientation_offset"]
    assert result.scene["bodies"][0]["shape"]["scale"] == 2.0
    assert [w for w in result.warnings if "more than 3" in w] == [
        f"warning: {path}:2: robot: more than 3 numbers where a vector has 3 in 2 places, the first 3 read and the rest "
        "ignored, as Bullet reads them (urdfdom refuses them): link 'base' visual <mesh scale> '2 2 2 2' (line 2), "
        "joint 'hip' <origin rpy> '-3.14159 1.57079 0 0' (line 4)"]


def test_a_number_followed_by_stray_punctuation_is_read_as_bullet_reads_it(tmp_path):
    """biped2d_pybullet.urdf:115: lower="-1.57." (atof reads -1.57); letters stay refused."""
    limit = '<axis xyz="0 1 0"/><limit effort="10.0" lower="-1.57." upper="1.57" velocity="1000.0"/>'
    text = _robot(_link("base"), _link("leg"), _joint("hip", "revolute", "base", "leg", limit))
    path, result = _read(tmp_path, text)
    assert result.scene["joints"][-1]["limits"] == {"lower": [-1.57], "upper": [1.57]}
    assert [w for w in result.warnings if "punctuation" in w] == [
        f"warning: {path}:4: robot: a number followed by stray punctuation in 1 place, read as Bullet reads it (C's atof: "
        "the number, up to what is not part of it): joint 'hip' <limit lower> '-1.57.' (line 4)"]
    with pytest.raises(SceneError) as info:
        _read(tmp_path, text.replace("-1.57.", "-1.57rad"))
    assert info.value.problems[0].line == 4 and "<limit> values must be numbers" in info.value.problems[0].message


def test_xacros_optenv_is_expanded_as_xacro_does(tmp_path, monkeypatch):
    """husky.urdf:97: <origin xyz="$(optenv HUSKY_IMU_XYZ 0.19 0 0.149)">: the environment
    variable's value, else the default (Bullet would read '$(optenv' as 0)."""
    text = _robot(_link("base"), _link("imu", 0.5),
                  _joint("imu_joint", "fixed", "base", "imu", "", '<origin rpy="0 0 0" xyz="$(optenv HUSKY_IMU_XYZ 0.19 0 0.149)"/>'))
    monkeypatch.delenv("HUSKY_IMU_XYZ", raising=False)
    path, result = _read(tmp_path, text)
    imu = result.scene["joints"][-1]
    assert np.allclose(imu["parent_vertex"], [0.19, 0, 0.149])
    assert [w for w in result.warnings if "xacro" in w] == [
        f"warning: {path}:4: robot: xacro substitutions $(optenv NAME default) / $(env NAME) left in the file in 1 place, "
        "expanded as xacro does (the environment variable's value, else the default): joint 'imu_joint' <origin xyz> = "
        "'0.19 0 0.149' (line 4)"]
    monkeypatch.setenv("HUSKY_IMU_XYZ", "1 2 3")
    _, result = _read(tmp_path, text)
    assert np.allclose(result.scene["joints"][-1]["parent_vertex"], [1, 2, 3])


def test_another_xacro_substitution_is_refused_naming_it(tmp_path):
    text = _robot(_link("base"), _link("arm"),
                  _joint("j", "fixed", "base", "arm", "", '<origin xyz="${arm_x} 0 0"/>'))
    with pytest.raises(SceneError) as info:
        _read(tmp_path, text)
    (problem,) = info.value.problems
    assert (problem.line, problem.field) == (4, "joint 'j'")
    assert problem.message == ("<origin xyz> must be numbers, got '${arm_x} 0 0': an unexpanded xacro substitution "
                               "'${arm_x}' (the file is a xacro source, not a URDF: run xacro on it, xacro FILE > robot.urdf)")


# ------------------------------------------------------------- helpers and tolerances

# The humanoid's energy error relative to its largest kinetic energy over 1 s at h = 0.01: the
# variational integrator's O(h^2) oscillation (measured 4.3e-6; 1.1e-6 at h / 2), with
# absolute tolerances; the ratio of the errors at h and h / 2 for second order is 4.
# A contact's deepest penetration in a converged step (m): the interior point's relaxation.
CONTACT_DEPTH_TOL = 1e-6
HUMANOID_H = 0.01
HUMANOID_SECONDS = 1.0
HUMANOID_ENERGY_TOL = 1e-5
HUMANOID_ORDER_RATIO = (3.0, 5.0)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
