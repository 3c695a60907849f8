"""The MJCF importer (dojo_cli.scene.mjcf) against MuJoCo's own compile of the same files.

Oracle: ``mujoco`` (the test extra) compiles each file; its body masses, inertias (body_inertia
in the iquat frame), centres of mass and orientations at qpos0 and at a keyframe (xipos,
xquat after mj_forward) must be ours (the built scene's bodies and initial state). The
features file (tests/scene/data/mjcf/features.xml) holds every frame form, nested default
classes, childclass, an include, a mesh, explicit inertials, slides with ref, a ball and a
free joint; the Gymnasium assets are the models users bring.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from dojo_cli.errors import SceneError
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.mjcf import MjcfOptions, joint_coordinates_from_qpos, read_mjcf

import mujoco  # noqa: E402  (the test extra: the oracle must not be skipped, issue 25 item 8)

DATA = Path(__file__).parent / "data" / "mjcf"
FEATURES = DATA / "features.xml"
# Same arithmetic in another order: relative roundoff on masses, inertias, positions
ROUNDOFF = 1e-12
# MuJoCo keeps mesh vertices in float32: a mesh's volume and inertia differ by ~1e-10 relative
MESH_FLOAT32 = 1e-8
# Velocities by a central difference of MuJoCo's positions along qvel (step 1e-6 s): O(1e-12)
VELOCITY_FD_TOL = 1e-8


def gymnasium_assets() -> list[Path]:
    import gymnasium  # the test extra (issue 25 item 8)

    return sorted((Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets").glob("*.xml"))


def _matrix(q):
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(q, float))
    return out.reshape(3, 3)


def _mujoco_inertia(m, k: int) -> np.ndarray:
    R = _matrix(m.body_iquat[k])
    return R @ np.diag(m.body_inertia[k]) @ R.T


def _build(result, file):
    return build_mechanism(spec_from_dict(copy.deepcopy(result.scene), file=str(file)))


def _assert_mass_properties(result, m, tol: float, where: str) -> None:
    for b in result.scene["bodies"]:
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b["name"])
        assert k > 0, f"{where}: body {b['name']} not in MuJoCo's model"
        dm = abs(b["mass"] - m.body_mass[k]) / m.body_mass[k]
        scale = np.abs(_mujoco_inertia(m, k)).max()
        dI = np.abs(np.asarray(b["inertia"]) - _mujoco_inertia(m, k)).max() / scale
        assert dm < tol, f"{where}: body {b['name']}: mass {b['mass']!r} vs MuJoCo {m.body_mass[k]!r} ({dm:.1e} relative)"
        assert dI < tol, f"{where}: body {b['name']}: inertia off by {dI:.1e} relative"


def _assert_poses(mech, m, d, tol: float, where: str) -> None:
    z = (mech.initial_t0 if mech.initial_t0 is not None else mech.initial).reshape(mech.nb, 13)
    for i, body in enumerate(mech.bodies):
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body.name)
        dx = np.abs(z[i, :3] - d.xipos[k]).max()
        dq = min(np.abs(z[i, 6:10] - d.xquat[k]).max(), np.abs(z[i, 6:10] + d.xquat[k]).max())
        assert dx < tol, f"{where}: body {body.name}: centre of mass off MuJoCo's xipos by {dx:.1e} m"
        assert dq < tol, f"{where}: body {body.name}: orientation off MuJoCo's xquat by {dq:.1e}"


def test_features_mass_properties_and_poses_equal_mujocos():
    m = mujoco.MjModel.from_xml_path(str(FEATURES))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    result = read_mjcf(FEATURES, MjcfOptions(drop_unsupported=True))
    # every body: 'base' holds the mesh (float32 in MuJoCo)
    _assert_mass_properties(result, m, MESH_FLOAT32, "qpos0")
    mech = _build(result, FEATURES)
    _assert_poses(mech, m, d, 1e-10, "qpos0")
    assert mech.timestep == 0.005 and list(mech.gravity) == [0.0, 0.5, -9.7]


def test_features_keyframe_poses_and_velocities_equal_mujocos():
    m = mujoco.MjModel.from_xml_path(str(FEATURES))
    d = mujoco.MjData(m)
    key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "bent")
    mujoco.mj_resetDataKeyframe(m, d, key)
    mujoco.mj_forward(m, d)
    result = read_mjcf(FEATURES, MjcfOptions(drop_unsupported=True, keyframe="bent"))
    mech = _build(result, FEATURES)
    _assert_poses(mech, m, d, 1e-10, "keyframe 'bent'")
    # centre-of-mass velocities: MuJoCo's positions along qvel, central difference
    eps = 1e-6
    positions = []
    for sign in (1.0, -1.0):
        qpos = d.qpos.copy()
        mujoco.mj_integratePos(m, qpos, d.qvel, sign * eps)
        other = mujoco.MjData(m)
        other.qpos[:] = qpos
        mujoco.mj_kinematics(m, other)
        positions.append(other.xipos.copy())
    velocity = (positions[0] - positions[1]) / (2 * eps)
    z = mech.initial_t0.reshape(mech.nb, 13)
    for i, body in enumerate(mech.bodies):
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body.name)
        dv = np.abs(z[i, 3:6] - velocity[k]).max()
        assert dv < VELOCITY_FD_TOL, f"body {body.name}: velocity off MuJoCo's by {dv:.1e} m/s"


def _lift_free_roots(result, m, d) -> None:
    """Move MuJoCo's free joints by our floating joints' initial displacement (the importer
    lifts a free tree that starts inside the floor) and recompute its kinematics."""
    joints = {j["name"]: j for j in result.scene["joints"]}
    for c in result.coordinates:
        if c.kind == "free" and "initial" in joints[c.dojo_joint]:
            d.qpos[c.qpos_adr:c.qpos_adr + 3] += joints[c.dojo_joint]["initial"]["position"][:3]
    mujoco.mj_forward(m, d)


def test_every_gymnasium_asset_imports_with_mujocos_masses_and_poses():
    assets = gymnasium_assets()
    assert len(assets) >= 13
    for path in assets:
        options = MjcfOptions(drop_unsupported=True, split_hinges=True)
        result = read_mjcf(path, options)
        m = mujoco.MjModel.from_xml_path(str(path))
        d = mujoco.MjData(m)
        _lift_free_roots(result, m, d)
        scene_bodies = {b["name"] for b in result.scene["bodies"]}
        real = [b for b in result.scene["bodies"] if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b["name"]) > 0]
        assert real, path.name
        trimmed = copy.copy(result)
        trimmed.scene = {**result.scene, "bodies": real}
        _assert_mass_properties(trimmed, m, 1e-12, path.name)
        mech = _build(result, path)
        assert {b.name for b in mech.bodies} == scene_bodies
        _assert_poses(_only_real(mech, m), m, d, 1e-12, path.name)


def test_humanoidstandup_is_lifted_clear_of_the_floor_by_mujocos_depth():
    """HumanoidStandup starts with its arms 3.6 cm inside the floor (MuJoCo's soft contacts
    push them out): the importer lifts its free root by the deepest floor contact, which
    is MuJoCo's own deepest floor contact (capsule against plane, the same geometry)."""
    (path,) = [p for p in gymnasium_assets() if p.name == "humanoidstandup.xml"]
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    depth = -min(c.dist for c in d.contact[:d.ncon] if floor in (c.geom1, c.geom2))
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True, split_hinges=True))
    (root,) = [j for j in result.scene["joints"] if j["type"] == "floating"]
    assert root["initial"]["position"] == pytest.approx([0, 0, depth, 0, 0, 0], abs=1e-9)
    assert any(n.startswith("lifted 'torso' (free joint 'root') by 3.6 cm: 4 contacts") for n in result.notes), result.notes
    _lift_free_roots(result, m, d)
    assert min(c.dist for c in d.contact[:d.ncon] if floor in (c.geom1, c.geom2)) > -1e-9, "clear of the floor"
    # the hands inside the hips start as they are (MuJoCo pushes them apart), named in one warning
    (overlaps,) = [w for w in result.warnings if "start inside another body" in w]
    assert "butt-right_hand 1.35 cm inside body 'right_lower_arm' (humanoidstandup.xml:39)" in overlaps, overlaps


class _only_real:
    """A mechanism's view with the bodies MuJoCo knows (split hinges add link bodies)."""

    def __init__(self, mech, m):
        keep = [i for i, b in enumerate(mech.bodies) if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b.name) > 0]
        z = (mech.initial_t0 if mech.initial_t0 is not None else mech.initial).reshape(mech.nb, 13)[keep]
        self.bodies = [mech.bodies[i] for i in keep]
        self.nb = len(keep)
        self.initial_t0 = z.reshape(-1)
        self.initial = self.initial_t0


# ---------------------------------------------------------------- refusals


def _write(tmp_path: Path, text: str, name: str = "model.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _problems(path: Path, **options) -> list[str]:
    with pytest.raises(SceneError) as info:
        read_mjcf(path, MjcfOptions(**options), path.name)
    return info.value.lines()


def test_unsupported_elements_are_refused_with_file_line_and_element(tmp_path):
    path = _write(tmp_path, """<mujoco model="m">
  <option density="1.2"/>
  <worldbody>
    <body name="a">
      <joint name="j" type="hinge"/>
      <geom type="sphere" size="0.1"/>
      <site name="s"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t" stiffness="10"><joint joint="j" coef="1"/></fixed>
  </tendon>
  <equality>
    <weld body1="a"/>
  </equality>
  <sensor>
    <accelerometer site="s"/>
  </sensor>
</mujoco>
""")
    lines = _problems(path)
    assert lines == [
        "model.xml:2: <option>: fluid forces (density=1.2) are not modelled (import without it: --drop-unsupported)",
        "model.xml:11: tendon 't': tendons are not supported (this one has stiffness) (import without it: --drop-unsupported)",
        "model.xml:13: <equality>: equality constraints are not supported (import without it: --drop-unsupported)",
        "model.xml:16: <sensor>: sensors are not supported (import without it: --drop-unsupported)",
    ], lines
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name)
    kinds = [w.split(": ", 2)[2] for w in result.warnings]
    assert kinds == [
        "fluid forces left out (--drop-unsupported), 1 at model.xml:2",
        "tendons left out (--drop-unsupported), 1 at model.xml:11",
        "equality constraints left out (--drop-unsupported), 1 at model.xml:13",
        "sensors left out (--drop-unsupported), 1 at model.xml:16",
    ], result.warnings


def test_invalid_models_name_file_line_and_element(tmp_path):
    broken = _write(tmp_path, "<mujoco>\n  <worldbody>\n    <body>\n  </worldbody>\n</mujoco>\n", "broken.xml")
    assert _problems(broken)[0].startswith("broken.xml:4: malformed XML: Opening and ending tag mismatch")
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <body name="a">
      <joint name="screw" type="helical"/>
      <geom type="box" size="0.1 0.1"/>
    </body>
    <body name="b">
      <geom class="nope" type="sphere" size="1"/>
      <joint name="h" type="hinge" axis="0 0 0"/>
    </body>
    <body name="c">
      <joint name="h1" type="hinge"/>
      <joint name="h2" type="hinge" axis="1 0 0"/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
  <include file="missing.xml"/>
</mujoco>
""")
    lines = _problems(path)
    assert "model.xml:4: joint 'screw': unknown joint type 'helical' (one of: free, ball, slide, hinge)" in lines
    assert "model.xml:5: <geom>: size [0.1, 0.1, 0.0]: a box needs 3 sizes > 0" in lines
    assert "model.xml:8: <geom>: unknown default class 'nope'" in lines
    assert "model.xml:9: joint 'h': axis must not be zero" in lines
    assert "model.xml:17: <include file='missing.xml'>: no such file" in lines


def test_a_missing_file_is_an_io_error(tmp_path):
    from dojo_cli.errors import SceneFileError

    with pytest.raises(SceneFileError) as info:
        read_mjcf(tmp_path / "nothing.xml")
    assert info.value.exit_code == 3


def test_tendons_that_exert_no_force_are_left_out_with_a_note():
    humanoid = next(p for p in gymnasium_assets() if p.name == "humanoid.xml")
    result = read_mjcf(humanoid, MjcfOptions(split_hinges=True), humanoid.name)  # no --drop-unsupported needed
    assert [w for w in result.warnings if "tendon" in w] == []
    assert ("2 tendons left out: no limit, spring, damper, friction or actuator, so no force (left_hipknee, right_hipknee)"
            in result.notes)


def test_joints_starting_outside_their_range_are_named_in_one_warning():
    ant = next(p for p in gymnasium_assets() if p.name == "ant.xml")
    result = read_mjcf(ant, MjcfOptions(), ant.name)
    assert result.warnings == [
        "warning: ant.xml: 4 joints start outside their range, where the first step puts them on the bound (MuJoCo's "
        "soft limits push them in over a few steps): ankle_1 (0 not in [0.5236, 1.222]), ankle_2 (0 not in "
        "[-1.222, -0.5236]), ankle_3 (0 not in [-1.222, -0.5236]), ankle_4 (0 not in [0.5236, 1.222])"]


# ---------------------------------------------------------------- joints


def test_planar_root_maps_mujoco_coordinates_with_refs_and_signs():
    """Hopper's rootx, rootz (ref 1.25), rooty: one planar_axis joint whose coordinates are
    MuJoCo's qpos minus ref, in Dojo's in-plane order (normal y: (z, x), then the angle)."""
    hopper = next(p for p in gymnasium_assets() if p.name == "hopper.xml")
    result = read_mjcf(hopper, MjcfOptions(drop_unsupported=True))
    root = result.scene["joints"][0]
    assert (root["name"], root["type"], root["axis"]) == ("rootx_rootz_rooty", "planar_axis", [0.0, 1.0, 0.0])
    qpos = np.array([0.3, 1.1, -0.2, -0.5, -0.6, 0.1])
    coords = joint_coordinates_from_qpos(result, qpos, result.scene["joints"])
    np.testing.assert_allclose(coords["rootx_rootz_rooty"], [1.1 - 1.25, 0.3, -0.2], rtol=0, atol=ROUNDOFF)
    # thigh_joint's axis is -y: Dojo's revolute about -y, the same sign as MuJoCo's angle
    assert result.scene["joints"][1]["axis"] == [0.0, -1.0, 0.0]
    np.testing.assert_allclose(coords["thigh_joint"], [-0.5], rtol=0, atol=ROUNDOFF)


SERVO_WITH_CTRLRANGE = """<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body name="forearm" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="servo" joint="shoulder" kp="20" gear="2" ctrlrange="0.2 0.5"/>
    <position name="free" joint="elbow" kp="5"/>
  </actuator>
  <keyframe>
    <key name="far" qpos="0 0" ctrl="0.8 0.8"/>
  </keyframe>
</mujoco>
"""


def test_position_actuators_targets_are_clamped_to_ctrlrange(tmp_path):
    """A position actuator's ctrl is its target: clipped to ctrlrange as MuJoCo clips ctrl,
    both the starting ctrl 0 (to 0.2) and a keyframe's 0.8 (to 0.5); target = ctrl / gear."""
    path = _write(tmp_path, SERVO_WITH_CTRLRANGE)
    start = read_mjcf(path, MjcfOptions()).scene["controller"]["targets"]
    assert start == {"shoulder": [0.1], "elbow": [0.0]}
    keyed = read_mjcf(path, MjcfOptions(keyframe="far")).scene["controller"]["targets"]
    assert keyed == {"shoulder": [0.25], "elbow": [0.8]}
    assert all("ctrl_range" not in a for a in read_mjcf(path, MjcfOptions()).scene["actuators"]), "targets, not inputs"
    # an actuator's ctrl_range is checked like any field, at its line
    text = (tmp_path / "bad.yaml")
    text.write_text("name: bad\ntimestep: 0.01\nbodies:\n  - {name: b, mass: 1, shape: {type: sphere, radius: 0.1}}\n"
                    "joints:\n  - {name: j, type: revolute, parent: origin, child: b}\n"
                    "actuators:\n  - {name: a, joint: j, ctrl_range: [1, -1]}\n")
    from dojo_cli.scene.loader import load_scene_spec

    with pytest.raises(SceneError) as info:
        load_scene_spec(text)
    assert any("bad.yaml:8: actuators.0.ctrl_range: lower 1 is above upper -1" in line for line in info.value.lines()), info.value.lines()


def test_torsional_and_rolling_friction_are_refused_at_the_geoms_line(tmp_path):
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="ball" pos="0 0 0.1">
      <freejoint/>
      <geom name="rolling" type="sphere" size="0.1" condim="6"/>
      <geom name="spinning" type="sphere" size="0.05" pos="0.1 0 0" condim="4"/>
    </body>
  </worldbody>
</mujoco>
""")
    assert _problems(path) == [
        "model.xml:6: geom 'rolling': condim 6: torsional and rolling friction are not modelled (condim 1, "
        "frictionless, and 3, the sliding friction cone, are) (import without it: --drop-unsupported)",
        "model.xml:7: geom 'spinning': condim 4: torsional and rolling friction are not modelled (condim 1, "
        "frictionless, and 3, the sliding friction cone, are) (import without it: --drop-unsupported)",
    ]
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name)
    assert [w.split(": ", 2)[2] for w in result.warnings] == [
        "torsional and rolling friction (condim 4, 6) left out (--drop-unsupported), 2 at model.xml:6, model.xml:7"]
    assert {c["model"] for c in result.scene["contacts"]} == {"nonlinear"}, "imported with the sliding cone"
