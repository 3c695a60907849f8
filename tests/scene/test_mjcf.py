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
import math
from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
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


def _assert_poses(mech, m, d, tol: float, where: str, links: tuple[str, ...] = ()) -> None:
    """Every body's pose is MuJoCo's, but ``links`` (split_hinges' link bodies, not MuJoCo's)."""
    z = (mech.initial_t0 if mech.initial_t0 is not None else mech.initial).reshape(mech.nb, 13)
    for i, body in enumerate(mech.bodies):
        if body.name in links:
            continue
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body.name)
        assert k > 0, f"{where}: body {body.name} is not MuJoCo's"
        dx = np.abs(z[i, :3] - d.xipos[k]).max()
        dq = min(np.abs(z[i, 6:10] - d.xquat[k]).max(), np.abs(z[i, 6:10] + d.xquat[k]).max())
        assert dx < tol, f"{where}: body {body.name}: centre of mass off MuJoCo's xipos by {dx:.1e} m"
        assert dq < tol, f"{where}: body {body.name}: orientation off MuJoCo's xquat by {dq:.1e}"


def _assert_compiles_as_mujocos(result, path: Path, tol: float, where: str) -> None:
    """The imported file's bodies have the masses, inertias and poses at qpos0 of MuJoCo's
    compile of the same file (mj_forward)."""
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    _assert_mass_properties(result, m, tol, where)
    _assert_poses(_build(result, path), m, d, tol, where)


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
    is MuJoCo's own deepest floor contact (capsule against plane, the same geometry) below its
    contact surface, the geoms' margins (2 mm) above the floor: 3.8 cm."""
    (path,) = [p for p in gymnasium_assets() if p.name == "humanoidstandup.xml"]
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    depth = -min(c.dist - c.includemargin for c in d.contact[:d.ncon] if floor in (c.geom1, c.geom2))
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True, split_hinges=True))
    (root,) = [j for j in result.scene["joints"] if j["type"] == "floating"]
    assert root["initial"]["position"] == pytest.approx([0, 0, depth, 0, 0, 0], abs=1e-9)
    assert any(n.startswith("lifted 'torso' (free joint 'root') by 3.8 cm: 4 contacts") for n in result.notes), result.notes
    _lift_free_roots(result, m, d)
    # clear of the floor's contact surface (lifted onto it, MuJoCo detects no floor contact)
    below = min(mujoco.mj_geomDistance(m, d, floor, g, 1.0, None) - m.geom_margin[g] - m.geom_margin[floor]
                for g in range(m.ngeom) if g != floor and m.geom_contype[g] & m.geom_conaffinity[floor])
    assert below > -1e-9, f"{-below:.2e} m inside the floor's contact surface"
    # the hands inside the hips start as they are (MuJoCo pushes them apart), named in one warning
    # (their pairs' 2 mm margin dropped: the shapes overlap)
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


# ---------------------------------------------------------------- keyframes and overlaps

# A capsule standing clear of the floor at qpos0 (its bottom 0.3 m up); its keyframe lays it
# down with its axis along x, 2 cm inside the floor (centre at radius - 0.02)
KEYED_INTO_FLOOR = """<mujoco model="keyed">
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="log" pos="0 0 0.5">
      <freejoint name="root"/>
      <geom type="capsule" size="0.05 0.15"/>
    </body>
  </worldbody>
  <keyframe>
    <key name="sunk" qpos="0.1 0.2 0.03 0.7071067811865476 0 0.7071067811865476 0"/>
  </keyframe>
</mujoco>"""
KEYED_DEPTH = 0.02  # m: the key's capsule below the floor
KEYED_DROP = 0.5  # s: lifted onto the floor, it settles there
# MuJoCo's soft contact settles a few tenths of a mm inside its surface (its default solref
# 0.02 s; measured: ours 0.05000 m, MuJoCo's 0.04979 m); ours rests on it
KEYED_SAG_TOL = 1e-3  # m


def test_a_keyframe_inside_the_floor_is_lifted_out_and_rests_at_mujocos_height(tmp_path):
    """The overlap rules judge the pose the scene starts from: a keyframe that puts a free body
    2 cm into the floor (its qpos0 clear of it) is lifted by the 2 cm with a note; the drop
    then converges at every step and rests where MuJoCo's does from the same key
    (mj_resetDataKeyframe: its soft contact pushes the capsule out). Judged at qpos0 instead,
    the key starts 2 cm inside a hard contact, which the first step throws out at 4 m/s (the
    capsule flies 0.85 m high; a tree held in the floor by more contacts, HumanoidStandup's,
    gets no first step at all)."""
    path = _write(tmp_path, KEYED_INTO_FLOOR, "keyed.xml")
    result = read_mjcf(path, MjcfOptions(keyframe="sunk"))
    lifted = [n for n in result.notes if n.startswith("lifted 'log' (free joint 'root') by 2 cm")]
    assert lifted, result.notes
    (root,) = result.scene["joints"]
    # the key's displacement from qpos0 (0, 0, 0.5), lifted by the depth; its turn kept
    assert root["initial"]["position"][:3] == pytest.approx([0.1, 0.2, 0.03 - 0.5 + KEYED_DEPTH], abs=1e-12)
    mech = _build(result, path)
    traj = dojo.simulate(mech, steps=int(round(KEYED_DROP / mech.timestep)))
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "sunk"))
    for _ in range(int(round(KEYED_DROP / m.opt.timestep))):
        mujoco.mj_step(m, d)
    ours, theirs = traj.x[-1][0, 2], d.xipos[1, 2]
    assert abs(ours - theirs) < KEYED_SAG_TOL, f"ours at {ours:.5f} m, MuJoCo's at {theirs:.5f} m"


def test_a_keyframe_clear_of_the_floor_starts_at_the_key_though_qpos0_overlaps(tmp_path):
    """Gymnasium's HumanoidStandup starts 3.8 cm inside the floor's contact surface at qpos0
    (lifted at import, test above); a keyframe with its root 10 cm higher is clear, so nothing
    is lifted: every body starts exactly at MuJoCo's pose at the key (mj_kinematics). Judged
    at qpos0, the key would be lifted by those 3.8 cm for nothing."""
    (asset,) = [p for p in gymnasium_assets() if p.name == "humanoidstandup.xml"]
    m = mujoco.MjModel.from_xml_path(str(asset))
    qpos = m.qpos0.copy()
    qpos[2] += 0.1
    key = '  <keyframe><key name="up" qpos="' + " ".join(repr(float(v)) for v in qpos) + '"/></keyframe>\n</mujoco>'
    text = asset.read_text()
    path = _write(tmp_path, text[:text.rindex("</mujoco>")] + key, asset.name)
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True, split_hinges=True, keyframe="up"))
    assert not [n for n in result.notes if n.startswith("lifted")], result.notes
    (root,) = [j for j in result.scene["joints"] if j["type"] == "floating"]
    assert root["initial"]["position"] == pytest.approx([0, 0, 0.1, 0, 0, 0], abs=1e-12)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "up"))
    mujoco.mj_kinematics(m, d)
    _assert_poses(_only_real(_build(result, path), m), m, d, 1e-10, "keyframe 'up'")


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


def test_included_files_under_a_mujocoinclude_root_are_read_as_mujoco_reads_them(tmp_path):
    """MuJoCo discards an included file's top element whatever its tag: Meta-World's and
    Adroit's files include assets and bodies under <mujocoinclude> (MuJoCo 1.x and 2.x): the
    model imports with MuJoCo's masses and poses; the model file itself must still be <mujoco>."""
    _write(tmp_path, """<mujocoinclude>
  <default><geom density="500"/></default>
</mujocoinclude>
""", "defaults.xml")
    _write(tmp_path, """<mujocoinclude>
  <body name="arm" pos="0 0 1">
    <joint name="hinge" type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
  </body>
</mujocoinclude>
""", "arm.xml")
    path = _write(tmp_path, """<mujoco>
  <include file="defaults.xml"/>
  <worldbody>
    <include file="arm.xml"/>
  </worldbody>
</mujoco>
""")
    result = read_mjcf(path, MjcfOptions(), path.name)
    assert [b["name"] for b in result.scene["bodies"]] == ["arm"]
    _assert_compiles_as_mujocos(result, path, ROUNDOFF, "mujocoinclude")
    wrong = _write(tmp_path, "<mujocoinclude><worldbody/></mujocoinclude>\n", "top.xml")
    assert _problems(wrong) == ["top.xml:1: <mujocoinclude>: not an MJCF model (its root element must be <mujoco>)"]


def test_a_msh_mesh_gives_mujocos_mass_and_a_damaged_one_its_line(tmp_path):
    """MuJoCo's binary .msh meshes (robosuite's objects, dm_control's fruit fly), which trimesh
    does not read: a body whose inertia comes from a .msh box has MuJoCo's mass, inertia and
    centre of mass; a truncated file is refused at the geom's line, naming the mesh and why."""
    from tests.viz.test_meshes import write_msh
    import trimesh

    box = trimesh.creation.box(extents=[0.1, 0.2, 0.3])
    box.apply_translation([0.05, 0.0, 0.1])
    write_msh(tmp_path / "box.msh", box.vertices, box.faces)
    path = _write(tmp_path, """<mujoco>
  <asset><mesh name="box" file="box.msh"/></asset>
  <worldbody>
    <body name="block" pos="0 0 1">
      <freejoint/>
      <geom type="mesh" mesh="box" density="800"/>
    </body>
  </worldbody>
</mujoco>
""")
    result = read_mjcf(path, MjcfOptions(), path.name)
    # the file holds float32 vertices: 2^-24 relative on each coordinate, three in a volume
    assert abs(result.scene["bodies"][0]["mass"] / (800 * 0.1 * 0.2 * 0.3) - 1) < 1e-6
    _assert_compiles_as_mujocos(result, path, MESH_FLOAT32, "msh box")
    (tmp_path / "box.msh").write_bytes((tmp_path / "box.msh").read_bytes()[:-4])
    lines = _problems(path)
    assert len(lines) == 1 and lines[0].startswith("model.xml:6: <geom>: cannot read mesh 'box'"), lines
    assert "bytes, where the header's counts" in lines[0], lines


def test_a_mesh_asset_takes_its_default_class_like_any_element(tmp_path):
    """<mesh class="c"> takes class c's <mesh> defaults (MuJoCo Menagerie's Robotiq 2F-85 gives
    every mesh scale="0.001 0.001 0.001" in its class: read at scale 1 the mount weighed 1.5e8
    kg and 455 of 500 limp steps failed): the scaled mesh's mass, inertia and pose are
    MuJoCo's; an unknown class is refused at the mesh's line."""
    from tests.viz.test_meshes import write_msh
    import trimesh

    box = trimesh.creation.box(extents=[100.0, 200.0, 300.0])  # millimetres
    write_msh(tmp_path / "box.msh", box.vertices, box.faces)
    text = """<mujoco>
  <default>
    <default class="mm"><mesh scale="0.001 0.001 0.001"/></default>
  </default>
  <asset><mesh name="box" class="CLASS" file="box.msh"/></asset>
  <worldbody>
    <body name="block" pos="0 0 1">
      <freejoint/>
      <geom type="mesh" mesh="box" density="800"/>
    </body>
  </worldbody>
</mujoco>
"""
    path = _write(tmp_path, text.replace("CLASS", "mm"))
    result = read_mjcf(path, MjcfOptions(), path.name)
    assert abs(result.scene["bodies"][0]["mass"] / (800 * 0.1 * 0.2 * 0.3) - 1) < 1e-6
    # MuJoCo stores the vertices in float32 after scaling (0.001 * 100 is not exact there):
    # 2^-24 relative on each coordinate, three in a volume
    _assert_compiles_as_mujocos(result, path, 3 * 2.0**-24, "mesh class scale")
    wrong = _write(tmp_path, text.replace("CLASS", "cm"))
    assert _problems(wrong) == ["model.xml:5: <mesh>: unknown default class 'cm'"]


def _channel_mesh() -> tuple[np.ndarray, np.ndarray]:
    """A U-channel (non-convex) prism: a 0.3 x 0.2 outline with a 0.1 x 0.17 notch, 0.1 deep,
    its triangles outward."""
    outline = np.array([(-0.15, -0.1), (0.15, -0.1), (0.15, 0.1), (0.05, 0.1), (0.05, -0.07), (-0.05, -0.07),
                        (-0.05, 0.1), (-0.15, 0.1)])  # counter-clockwise
    cap = np.array([(0, 5, 6), (0, 6, 7), (0, 1, 4), (0, 4, 5), (1, 2, 3), (1, 3, 4)])  # its triangles, counter-clockwise
    n = len(outline)
    vertices = np.vstack([np.column_stack([outline, np.full(n, -0.05)]), np.column_stack([outline, np.full(n, 0.05)])])
    sides = [t for i in range(n) for t in ((i, (i + 1) % n, n + (i + 1) % n), (i, n + (i + 1) % n, n + i))]
    faces = np.vstack([cap[:, ::-1], cap + n, sides])
    return vertices + [0.02, 0.0, 0.0], faces


@pytest.mark.parametrize("mode", ["legacy", "convex", "exact", "shell"])
def test_a_non_convex_meshs_mass_follows_its_inertia_rule_as_mujocos(tmp_path, mode):
    """MuJoCo derives a mesh geom's mass by the mesh's ``inertia`` (legacy by default: each
    tetrahedron counted positive; convex: the hull; exact: the solid; shell: the surface). On a
    U-channel, masses 4.10 (legacy), 4.20 (convex), 3.01 (exact) kg at 700 kg/m^3; each must be
    MuJoCo's (mass, inertia, centre of mass)."""
    from tests.viz.test_meshes import write_msh

    vertices, faces = _channel_mesh()
    write_msh(tmp_path / "channel.msh", vertices, faces, corners_per_face=False)
    attribute = "" if mode == "legacy" else f' inertia="{mode}"'
    path = _write(tmp_path, f"""<mujoco>
  <asset><mesh name="channel" file="channel.msh"{attribute}/></asset>
  <worldbody>
    <body name="channel" pos="0 0 1" euler="10 20 30">
      <freejoint/>
      <geom type="mesh" mesh="channel" density="700" euler="0 30 0"/>
    </body>
  </worldbody>
</mujoco>
""")
    result = read_mjcf(path, MjcfOptions(), path.name)
    _assert_compiles_as_mujocos(result, path, MESH_FLOAT32, f"channel, inertia {mode}")
    hull = 700 * 0.3 * 0.2 * 0.1
    if mode != "convex":  # the rule matters: the hull's mass is not the answer
        assert abs(result.scene["bodies"][0]["mass"] / hull - 1) > 0.02, mode


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
        "warning: ant.xml: 4 joints start outside their range, brought in over a time constant of 0.02 s (at "
        "least 2 steps), as MuJoCo's soft limits push them in: ankle_1 (0 not in [0.5236, 1.222]), ankle_2 (0 not in "
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


def test_slide_armature_is_kept_and_a_free_joints_refused(tmp_path):
    """A body on the world moved by two slides keeps their armature (the variational
    integrator's linear rotor); a free joint's armature (MuJoCo's acts on the angular velocity)
    is refused at its line, left out with --drop-unsupported (before, it was dropped silently)."""
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="puck" pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0" armature="0.3"/>
      <joint name="y" type="slide" axis="0 1 0" armature="0.4"/>
      <geom type="cylinder" size="0.1 0.05"/>
    </body>
    <body name="ball" pos="0.5 0 0.3">
      <joint name="loose" type="free" armature="0.01"/>
      <geom type="capsule" size="0.05 0.1"/>
    </body>
  </worldbody>
</mujoco>
""")
    assert _problems(path) == [
        "model.xml:10: joint 'loose': armature 0.01 of a free joint: rotor inertia on the angular velocity (MuJoCo's) "
        "is not our floating joint's rotation coordinates' (import without it: --drop-unsupported)"]
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name)
    assert [w.split(": ", 2)[2] for w in result.warnings] == [
        "rotor inertia (armature) of slides, balls and free joints left out (--drop-unsupported), 1 at model.xml:10"]
    puck = next(j for j in result.scene["joints"] if j["child"] == "puck")
    assert puck["type"] == "planar" and puck["armature"] == [0.3, 0.4]
    # the capsule against the puck's cylinder is a contact of the collision table
    pairs = [c for c in result.scene["contacts"] if isinstance(c["against"], dict) and "body" in c["against"]]
    assert [(c["shape"]["type"], c["against"]["shape"]) for c in pairs] == [("cylinder", "capsule")]
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    assert sorted(c.kind for c in mech.contacts if c.other >= 0) == ["cylinder", "cylinder", "segment_cylinder"]


# ---------------------------------------------------------------- several hinges on one body

HINGES = DATA / "hinges.xml"
# Seeded draws of the hinges.xml poses compared with MuJoCo's kinematics
POSE_DRAWS = 8


def _random_key(m, rng) -> tuple[np.ndarray, np.ndarray]:
    """A qpos inside every hinge's range (a gimbal's middle hinge inside +-(pi/2 - margin),
    where its angles are read), a random free-joint pose, and a random qvel."""
    from dojo_cli.scene.mjcf import GIMBAL_LOCK_MARGIN

    qpos = m.qpos0.copy()
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
            qpos[a:a + 3] += rng.uniform(-0.5, 0.5, 3)
            q = rng.normal(size=4)
            qpos[a + 3:a + 7] = q / np.linalg.norm(q)
        else:
            bound = np.pi / 2 - GIMBAL_LOCK_MARGIN
            lo, hi = m.jnt_range[j] if m.jnt_limited[j] else (-bound, bound)
            qpos[a] = rng.uniform(lo, hi)
    return qpos, rng.normal(size=m.nv)


def _key_file(tmp_path: Path, text: str, qpos: np.ndarray, qvel: np.ndarray, name: str) -> Path:
    text = text.replace(
        "</mujoco>", f'  <keyframe><key name="r" qpos="{" ".join(repr(float(v)) for v in qpos)}" qvel="{" ".join(repr(float(v)) for v in qvel)}"/>'
        "</keyframe>\n</mujoco>")
    return _write(tmp_path, text, name)


def _assert_keyed_kinematics(tmp_path: Path, text: str, name: str, links: tuple[str, ...]) -> None:
    """For POSE_DRAWS seeded random joint values and velocities (a keyframe of the model
    ``text``, imported with split_joints), every MuJoCo body's centre of mass, orientation and
    centre-of-mass velocity in the built scene's initial state equal MuJoCo's (mj_kinematics;
    velocities by a central difference of its positions along qvel); ``links`` are the
    import's link bodies, which MuJoCo does not have."""
    m = mujoco.MjModel.from_xml_string(text)
    rng = np.random.default_rng(0)
    for draw in range(POSE_DRAWS):
        qpos, qvel = _random_key(m, rng)
        path = _key_file(tmp_path, text, qpos, qvel, name)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_kinematics(m, d)
        keyed = read_mjcf(path, MjcfOptions(split_joints=True, keyframe="r"))
        mech = _build(keyed, path)
        assert {b.name for b in mech.bodies} - set(links) == {m.body(k).name for k in range(1, m.nbody)}, f"draw {draw}"
        _assert_poses(mech, m, d, 1e-10, f"draw {draw}", links=links)
        eps = 1e-6
        positions = []
        for sign in (1.0, -1.0):
            other = mujoco.MjData(m)
            other.qpos[:] = qpos
            mujoco.mj_integratePos(m, other.qpos, qvel, sign * eps)
            mujoco.mj_kinematics(m, other)
            positions.append(other.xipos.copy())
        velocity = (positions[0] - positions[1]) / (2 * eps)
        z = mech.initial_t0.reshape(mech.nb, 13)
        for i, body in enumerate(mech.bodies):
            k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body.name)
            if k > 0:
                dv = np.abs(z[i, 3:6] - velocity[k]).max()
                assert dv < VELOCITY_FD_TOL, f"draw {draw}: body {body.name}: velocity off MuJoCo's by {dv:.1e} m/s"


def test_hinges_through_one_anchor_are_universal_and_gimbal_joints_with_mujocos_kinematics(tmp_path):
    """Two and three hinges through one anchor with orthogonal axes (the arm's are not along
    the body axes, one has a ref) are one universal or gimbal joint whose angles are MuJoCo's
    qpos - ref: for seeded random joint values and velocities, every body's centre of mass,
    orientation and centre-of-mass velocity equal MuJoCo's (mj_kinematics; velocities by a
    central difference along qvel). The ankles' hinges about two anchors are a revolute chain
    (split_hinges, split_joints' old name)."""
    result = read_mjcf(HINGES, MjcfOptions(split_hinges=True))
    joints = {j["name"]: j for j in result.scene["joints"]}
    assert joints["shoulder1_shoulder2"]["type"] == "universal"
    assert joints["shoulder1_shoulder2"]["axis_names"] == ["shoulder1", "shoulder2"]
    assert joints["hip_x_hip_z_hip_y"]["type"] == "gimbal"
    assert joints["hip_x_hip_z_hip_y"]["spring"] == [1.0, 1.0, 20.0]
    np.testing.assert_allclose(joints["shoulder1_shoulder2"]["spring_offset"], [-0.2, 0.3], rtol=0, atol=ROUNDOFF)
    assert {"ankle_y", "ankle_x"} <= set(joints) and joints["ankle_x"]["type"] == "revolute"
    assert result.scene["actuators"] == [{"name": "hip_z", "joint": "hip_x_hip_z_hip_y", "coordinate": 1, "gain": 40.0}]
    _assert_keyed_kinematics(tmp_path, HINGES.read_text(), "hinges_key.xml", links=("foot_ankle_y",))


# Slides and hinges in one body, in orders and about axes no Dojo joint has: Brax's
# prismaversal (a hinge then a slide) and more, Adroit's forearm and object (3 slides and 3
# hinges, armature; the object's hinges unlimited), dm_control's jumping ball's camera (a
# slide and a hinge about another axis, a turned body)
SEQUENCES = """<mujoco model="sequences">
  <option timestep="0.01"/>
  <worldbody>
    <body name="cart" pos="0.1 -0.2 1" euler="0 0 30">
      <joint name="cart_x" type="slide" axis="1 0 0" ref="0.05" range="-1 1"/>
      <joint name="cart_tilt" type="hinge" axis="0 1 0" pos="0.05 0 0.1" range="-60 60" damping="0.1"/>
      <joint name="cart_lift" type="slide" axis="0 0 1" range="-0.5 0.5" stiffness="20" springref="0.1"/>
      <joint name="cart_roll" type="hinge" axis="1 0 0" pos="0 0.03 -0.02" ref="10" armature="0.01"/>
      <geom type="box" size="0.1 0.05 0.03" pos="0.02 0 0"/>
      <body name="pole" pos="0 0 0.05">
        <joint name="pole_hinge" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.02"/>
      </body>
    </body>
    <body name="forearm" pos="0 -0.7 0.2" euler="-90 0 180">
      <inertial pos="0.001 -0.002 0.29" quat="0.982037 -0.0160006 0 -0.188007" mass="4" diaginertia="0.01 0.01 0.0075"/>
      <joint name="ARTx" type="slide" axis="1 0 0" range="-0.25 0.25" damping="20" armature="0.001"/>
      <joint name="ARTy" type="slide" axis="0 1 0" range="0 0.2" damping="20" armature="0.001"/>
      <joint name="ARTz" type="slide" axis="0 0 1" range="-0.3 0.5" damping="20" armature="0.001"/>
      <joint name="ARRx" type="hinge" axis="1 0 0" range="-43 43" damping="20" armature="0.001"/>
      <joint name="ARRy" type="hinge" axis="0 1 0" range="-43 43" damping="20" armature="0.001"/>
      <joint name="ARRz" type="hinge" axis="0 0 1" range="-43 43" damping="20" armature="0.001"/>
      <geom type="capsule" size="0.05 0.033" pos="0 0 0.29"/>
    </body>
    <body name="object" pos="0.3 0 0.4">
      <joint name="OBJTx" type="slide" axis="1 0 0"/>
      <joint name="OBJTy" type="slide" axis="0 1 0"/>
      <joint name="OBJTz" type="slide" axis="0 0 1"/>
      <joint name="OBJRx" type="hinge" axis="1 0 0"/>
      <joint name="OBJRy" type="hinge" axis="0 1 0"/>
      <joint name="OBJRz" type="hinge" axis="0 0 1"/>
      <geom type="sphere" size="0.035" pos="0.01 0 0"/>
    </body>
    <body name="probe" pos="-0.4 0.2 0.5">
      <joint name="probe_z" type="slide" axis="0 0 1" range="-0.1 0.1"/>
      <joint name="probe_x" type="hinge" axis="1 0 0" pos="0 0 0.05" range="-45 45"/>
      <joint name="probe_y" type="hinge" axis="0 1 0" pos="0 0 0.05" range="-45 45"/>
      <joint name="probe_w" type="hinge" axis="0 0 1" pos="0 0 0.05" range="-45 45"/>
      <geom type="box" size="0.02 0.03 0.04"/>
    </body>
    <body name="camera" pos="0 0.15 0.9" zaxis="0 -0.99503719021 0.09950371902">
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
      <joint name="camera_height" type="slide" axis="0 1 0" range="-0.5 0.5"/>
      <joint name="camera_tilt" type="hinge" axis="1 0 0" range="-20 20"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="lift" joint="cart_lift" gear="3"/>
    <motor name="wrist" joint="ARRy" gear="-2"/>
    <motor name="height" joint="camera_height" gear="5"/>
  </actuator>
</mujoco>
"""
# The link bodies split_joints puts between the joints of SEQUENCES' bodies
SEQUENCE_LINKS = ("cart_cart_x", "cart_cart_tilt", "cart_cart_lift", "forearm_ARTx_ARTy_ARTz", "forearm_ARRx",
                  "forearm_ARRy", "object_OBJTx_OBJTy_OBJTz", "object_OBJRx", "object_OBJRy", "probe_probe_z",
                  "camera_camera_height")


def test_slides_and_hinges_no_joint_is_are_refused_naming_why(tmp_path):
    """Without split_joints each body whose slides and hinges no Dojo joint is, is refused at
    its line naming why (and the flag that maps it)."""
    lines = _problems(_write(tmp_path, SEQUENCES))
    chain = "(a chain of joints through light links: --split-joints)"
    assert lines == [
        f"model.xml:4: body 'cart': joints cart_x (slide), cart_tilt (hinge), cart_lift (slide), cart_roll (hinge): MuJoCo "
        f"applies them in turn; no Dojo joint is that sequence: 2 slides and 2 hinges (a Dojo joint has slides, then at "
        f"most one hinge) {chain}",
        f"model.xml:15: body 'forearm': joints ARTx (slide), ARTy (slide), ARTz (slide), ARRx (hinge), ARRy (hinge), ARRz "
        f"(hinge): MuJoCo applies them in turn; no Dojo joint is that sequence: 3 slides and 3 hinges (a Dojo joint has "
        f"slides, then at most one hinge) {chain}",
        f"model.xml:25: body 'object': joints OBJTx (slide), OBJTy (slide), OBJTz (slide), OBJRx (hinge), OBJRy (hinge), "
        f"OBJRz (hinge): MuJoCo applies them in turn; no Dojo joint is that sequence: 3 slides and 3 hinges (a Dojo joint "
        f"has slides, then at most one hinge) {chain}",
        f"model.xml:34: body 'probe': joints probe_z (slide), probe_x (hinge), probe_y (hinge), probe_w (hinge): MuJoCo "
        f"applies them in turn; no Dojo joint is that sequence: 1 slide and 3 hinges (a Dojo joint has slides, then at "
        f"most one hinge) {chain}",
        f"model.xml:41: body 'camera': joints camera_height (slide), camera_tilt (hinge): MuJoCo applies them in turn; no "
        f"Dojo joint is that sequence: a slide and a hinge about another axis {chain}"], lines
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <body name="b">
      <joint name="h" type="hinge" axis="0 1 0"/>
      <joint name="s" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
</mujoco>
""", "prismaversal.xml")
    assert _problems(path) == [
        "prismaversal.xml:3: body 'b': joints h (hinge), s (slide): MuJoCo applies them in turn; no Dojo joint is that "
        "sequence: a slide after a hinge: the hinge turns the slide's axis, a Dojo joint translates in its parent's frame "
        f"and then turns {chain}"]


def test_a_chains_slide_armature_the_integrator_cannot_hold_is_refused_at_its_joint(tmp_path):
    """Armature on slides that a chain puts on a link (a planar joint below a turning body,
    in a model with contacts: no linear rotor, no rk4) is refused at each slide's own line,
    or left out with drop_unsupported; the chain's units are a planar and a universal joint."""
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="base" pos="0 0 1">
      <joint name="yaw" type="hinge" axis="0 0 1"/>
      <geom type="sphere" size="0.05"/>
      <body name="slider" pos="0.2 0 0">
        <joint name="sx" type="slide" axis="1 0 0" armature="0.1"/>
        <joint name="sy" type="slide" axis="0 1 0" armature="0.1"/>
        <joint name="h" type="hinge" axis="1 0 0"/>
        <joint name="h2" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.05"/>
      </body>
    </body>
  </worldbody>
</mujoco>
""")
    why = ("armature 0.1 of a slide joint: the variational integrator models rotor inertia on hinges and on the slides of "
           "a body on the world that does not turn, the rk4 integrator (no contacts or limits) also on other slides that "
           "do not turn (this model has 2 contacts) (import without it: --drop-unsupported)")
    assert _problems(path, split_joints=True) == [f"model.xml:8: joint 'sx': {why}", f"model.xml:9: joint 'sy': {why}"]
    result = read_mjcf(path, MjcfOptions(split_joints=True, drop_unsupported=True), path.name)
    assert [(j["name"], j["type"], j.get("armature")) for j in result.scene["joints"]] == [
        ("yaw", "revolute", None), ("sx_sy", "planar", None), ("h_h2", "universal", None)]


def test_slides_and_hinges_in_one_body_are_a_chain_with_mujocos_coordinates_and_kinematics(tmp_path):
    """With split_joints (and its old name split_hinges) a body's slides and hinges become a
    chain through light links: a run of orthogonal slides along the parent's axes one
    fixed_orientation joint, hinges through one anchor one gimbal (no armature, the middle
    range readable), else one joint each; each link LINK_MASS_FRACTION of its body's mass,
    the body's own on the last. Every MJCF joint's range, damping, armature, stiffness and
    spring rest (MuJoCo's compiled arrays: the oracle) are on its coordinate, sign kept, and
    its motor too; for seeded random keyframes every body's pose and velocity is MuJoCo's
    (mj_kinematics)."""
    from dojo_cli.scene.mjcf import LINK_MASS_FRACTION

    path = _write(tmp_path, SEQUENCES)
    result = read_mjcf(path, MjcfOptions(split_hinges=True), path.name)
    assert read_mjcf(path, MjcfOptions(split_joints=True), path.name).scene == result.scene
    joints = {j["name"]: j for j in result.scene["joints"]}
    assert {n: (j["type"], j["parent"], j["child"]) for n, j in joints.items() if n.startswith(("cart", "OBJ", "probe"))} == {
        "cart_x": ("prismatic", "origin", "cart_cart_x"), "cart_tilt": ("revolute", "cart_cart_x", "cart_cart_tilt"),
        "cart_lift": ("prismatic", "cart_cart_tilt", "cart_cart_lift"), "cart_roll": ("revolute", "cart_cart_lift", "cart"),
        "OBJTx_OBJTy_OBJTz": ("fixed_orientation", "origin", "object_OBJTx_OBJTy_OBJTz"),
        "OBJRx": ("revolute", "object_OBJTx_OBJTy_OBJTz", "object_OBJRx"),
        "OBJRy": ("revolute", "object_OBJRx", "object_OBJRy"), "OBJRz": ("revolute", "object_OBJRy", "object"),
        "probe_z": ("prismatic", "origin", "probe_probe_z"),
        "probe_x_probe_y_probe_w": ("gimbal", "probe_probe_z", "probe")}, joints
    assert [joints[n]["type"] for n in ("ARTx_ARTy_ARTz", "ARRx", "ARRy", "ARRz", "camera_height", "camera_tilt")] == [
        "fixed_orientation", "revolute", "revolute", "revolute", "prismatic", "revolute"]
    m = mujoco.MjModel.from_xml_string(SEQUENCES)
    bodies = {b["name"]: b for b in result.scene["bodies"]}
    for link in SEQUENCE_LINKS:
        owner = m.body(link.split("_")[0]).id
        assert bodies[link]["mass"] == pytest.approx(LINK_MASS_FRACTION * m.body_mass[owner], rel=ROUNDOFF), link
    for c in result.coordinates:
        j, k = m.joint(c.joint).id, c.coordinate
        joint = joints[c.dojo_joint]
        lo, hi = sorted(c.sign * (m.jnt_range[j] - m.qpos0[m.jnt_qposadr[j]]))
        limits = joint.get("limits", {"lower": [-math.inf] * 6, "upper": [math.inf] * 6})
        assert (limits["lower"][k], limits["upper"][k]) == pytest.approx((lo, hi) if m.jnt_limited[j] else (-math.inf, math.inf),
                                                                        abs=ROUNDOFF), c.joint
        dof = m.jnt_dofadr[j]
        rest = c.sign * (m.qpos_spring[m.jnt_qposadr[j]] - m.qpos0[m.jnt_qposadr[j]]) if m.jnt_stiffness[j] else 0.0
        for field, value in (("damper", m.dof_damping[dof]), ("armature", m.dof_armature[dof]), ("spring", m.jnt_stiffness[j]),
                             ("spring_offset", rest)):
            assert joint.get(field, [0.0] * 6)[k] == pytest.approx(value, abs=ROUNDOFF), f"{c.joint}: {field}"
    assert result.scene["actuators"] == [
        {"name": "lift", "joint": "cart_lift", "coordinate": 0, "gain": 3.0},
        {"name": "wrist", "joint": "ARRy", "coordinate": 0, "gain": -2.0},
        {"name": "height", "joint": "camera_height", "coordinate": 0, "gain": 5.0}]
    assert ("5 bodies are chains of joints through light links (--split-joints), each link 0.001 of its body's mass and "
            "inertia, which MuJoCo does not have between a body's joints (the motion changes by about that fraction): cart "
            "(3 links), forearm (3 links), object (3 links), probe (1 link), ...") in result.notes, result.notes
    _assert_keyed_kinematics(tmp_path, SEQUENCES, "sequences_key.xml", links=SEQUENCE_LINKS)


def test_hinges_that_no_joint_represents_are_refused_naming_why(tmp_path):
    """Without split_hinges the ankles (two anchors) are refused; hinges that are not
    orthogonal, and four hinges, too, each naming the cause; a gimbal's middle hinge without
    a range gets one inside +-(pi/2 - margin), with a note."""
    lines = _problems(HINGES)
    assert lines == [
        "hinges.xml:27: body 'foot': joints ankle_y (hinge), ankle_x (hinge): MuJoCo applies them in turn; no Dojo "
        "joint is that sequence: the hinges turn about different points (ankle_y at [0.0, 0.0, 0.08], ankle_x at "
        "[0.0, 0.0, 0.04] in the body frame): a universal or gimbal joint turns about one point (a chain of revolute "
        "joints through light links: --split-joints)"], lines
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <body name="a">
      <joint name="h1" type="hinge" axis="0 0 1"/>
      <joint name="h2" type="hinge" axis="1 0 1"/>
      <geom type="sphere" size="0.1"/>
    </body>
    <body name="b" pos="1 0 0">
      <joint name="k1" type="hinge" axis="0 0 1"/>
      <joint name="k2" type="hinge" axis="1 0 0"/>
      <joint name="k3" type="hinge" axis="0 1 0"/>
      <joint name="k4" type="hinge" axis="0 0 1"/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
</mujoco>
""")
    lines = _problems(path)
    assert lines == [
        "model.xml:3: body 'a': joints h1 (hinge), h2 (hinge): MuJoCo applies them in turn; no Dojo joint is that "
        "sequence: the axes of h1 and h2 are not orthogonal (cosine 0.7071): universal and gimbal joints turn about "
        "mutually orthogonal axes (a chain of revolute joints through light links: --split-joints)",
        "model.xml:8: body 'b': joints k1 (hinge), k2 (hinge), k3 (hinge), k4 (hinge): MuJoCo applies them in turn; no "
        "Dojo joint is that sequence: 4 hinges (a universal joint has 2 axes, a gimbal 3) (a chain of revolute joints "
        "through light links: --split-joints)"], lines
    result = read_mjcf(path, MjcfOptions(split_hinges=True), path.name)
    assert [j["type"] for j in result.scene["joints"]] == ["revolute"] * 6
    neck = {j["name"]: j for j in read_mjcf(HINGES, MjcfOptions(split_hinges=True)).scene["joints"]}["neck_z_neck_y_neck_x"]
    assert neck["type"] == "gimbal" and neck["limits"] == {"lower": [-math.inf, -1.5207963267948966, -math.inf],
                                                           "upper": [math.inf, 1.5207963267948966, math.inf]}


def test_armature_on_a_universal_or_gimbal_joint_is_refused_or_kept_on_a_chain(tmp_path):
    """The universal and gimbal joints carry no rotor inertia: hinges with armature are refused
    (naming the joints), left out with drop_unsupported, or kept on a revolute chain with
    split_hinges (each revolute joint's rotor, core maximal/rotor.h)."""
    text = HINGES.read_text().replace('<joint type="hinge" damping="0.2"', '<joint type="hinge" armature="0.01" damping="0.2"')
    path = _write(tmp_path, text, "arm.xml")
    lines = _problems(path, drop_unsupported=False, split_hinges=False)
    assert ("arm.xml:18: joint 'shoulder1': armature of shoulder1, shoulder2: the universal or gimbal joint shoulder1, "
            "shoulder2 carries no rotor inertia (keep it on a chain of revolute joints through light links: "
            "--split-joints) (import without it: --drop-unsupported)") in lines, lines
    chained = read_mjcf(path, MjcfOptions(split_hinges=True))
    types = {j["name"]: j["type"] for j in chained.scene["joints"]}
    assert types["shoulder1"] == types["shoulder2"] == types["hip_x"] == types["neck_x"] == "revolute", types
    assert all(j.get("armature") == [0.01] for j in chained.scene["joints"] if j["type"] == "revolute")
    foot = text[text.index('        <body name="foot"'):text.index("      </body>\n      <body name=\"head\"")]
    no_ankles = _write(tmp_path, text.replace(foot, ""), "no_ankles.xml")
    dropped = read_mjcf(no_ankles, MjcfOptions(drop_unsupported=True), no_ankles.name)
    types = {j["name"]: j["type"] for j in dropped.scene["joints"] if j["type"] != "floating"}
    assert types == {"shoulder1_shoulder2": "universal", "hip_x_hip_z_hip_y": "gimbal", "neck_z_neck_y_neck_x": "gimbal"}, types
    assert not any("armature" in j for j in dropped.scene["joints"])
    assert any("rotor inertia (armature) of hinges joined into a universal or gimbal joint left out" in w
               for w in dropped.warnings), dropped.warnings


# ---------------------------------------------------------------- contacts and <option><flag>

STATIC_PROPS = """<mujoco model="props">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <geom name="wall" type="plane" pos="0.6 0 0" zaxis="-1 0 1" size="1 1 0.1"/>
    <geom name="rail" type="capsule" fromto="-0.5 0 0.2 0.5 0 0.2" size="0.02"/>
    <body name="slot" pos="-0.3 0 0.035" euler="0 20 0">
      <geom name="slot_0" type="box" size="0.02 0.01 0.035"/>
      <geom name="slot_1" type="box" pos="0.05 0 0" size="0.02 0.01 0.035"/>
    </body>
    <body name="cup" pos="0.3 0 0.1">
      <geom name="cup_0" type="capsule" fromto="-0.03 0 0.06 -0.03 0 -0.015" size="0.008"/>
      <geom name="cup_1" type="capsule" fromto="-0.03 0 -0.015 0.03 0 -0.015" size="0.008"/>
    </body>
    <body name="arm" pos="0 0 0.4">
      <joint name="shoulder" axis="0 1 0"/>
      <geom name="upper" type="capsule" fromto="0 0 0 0 0 0.2" size="0.02"/>
      <body name="hand" pos="0 0 0.2">
        <joint name="wrist" axis="0 1 0"/>
        <geom name="palm" type="capsule" fromto="0 0 0 0.05 0 0" size="0.01"/>
      </body>
    </body>
    <body name="ball" pos="0.3 0 0.3">
      <freejoint/>
      <geom name="ball" type="sphere" size="0.02"/>
    </body>
  </worldbody>
</mujoco>
"""


# A ball dropped 6 cm onto a rail settles within this time (s), to this of touching (m: the
# contact is hard, the solver's complementarity tolerance leaves at most this)
RAIL_DROP = 1.0
RAIL_REST_TOL = 1e-5


def _mujoco_candidate_pairs(path: Path) -> set[frozenset]:
    """The geom pairs MuJoCo's collision filter passes: every contact mj_collision finds with
    every geom's margin 10 m (so that distance does not filter any pair), by geom name. The
    margin is set before the compile: static bodies' bounding volumes are computed there."""
    spec = mujoco.MjSpec.from_file(str(path))
    for g in spec.geoms:
        g.margin = 10.0
    m = spec.compile()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    name = lambda g: mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
    return {frozenset((name(c.geom1), name(c.geom2))) for c in d.contact[:d.ncon]}


def test_contact_pairs_are_mujocos_and_static_props_do_not_touch_the_world(tmp_path):
    """The imported contacts are exactly the geom pairs MuJoCo's filter passes (contype,
    conaffinity, one weld, filterparent): bodies with no joints in the world (dm_control's
    manipulator's slot and cup) are in the world's weld, so neither their geoms against the
    floor and walls nor against each other (they touch the floor: a contact on a body held by a
    weld made the manipulator's steps fail, 800 iterations each), but the moving geoms against
    them."""
    path = _write(tmp_path, STATIC_PROPS, "props.xml")
    result = read_mjcf(path, MjcfOptions())
    ours = {frozenset(pair) for pair in result.contact_geoms.values()}
    assert len(ours) == len(result.contact_geoms), "one contact per geom pair"
    theirs = _mujoco_candidate_pairs(path)
    assert ours == theirs, f"ours only: {ours - theirs}; MuJoCo's only: {theirs - ours}"
    assert frozenset(("slot_0", "floor")) not in ours and frozenset(("palm", "cup_1")) in ours
    assert frozenset(("rail", "ball")) in ours and frozenset(("rail", "floor")) not in ours


def test_a_ball_dropped_on_a_static_world_capsule_rests_on_it(tmp_path):
    """The world's own non-plane geoms (a rail) are a body fixed to the world whose shapes the
    moving bodies meet: the ball dropped on the rail (without the arm and props) comes to rest
    on it, its centre at the rail's axis height plus both radii."""
    text = STATIC_PROPS
    for name in ("slot", "cup", "arm"):
        start = text.index(f'    <body name="{name}"')
        end = text.index("    <body name=", start + 10) if name != "arm" else text.index('    <body name="ball"')
        text = text[:start] + text[end:]
    path = _write(tmp_path, text, "rail.xml")
    result = read_mjcf(path, MjcfOptions())
    assert [b["name"] for b in result.scene["bodies"]] == ["ball", "world"]
    mech = _build(result, path)
    traj = dojo.simulate(mech, steps=int(round(RAIL_DROP / mech.timestep)))
    assert all(s == "success" for s in traj.status)
    rest = 0.2 + 0.02 + 0.02
    z = traj.x[-1][[b.name for b in mech.bodies].index("ball"), 2]
    assert abs(z - rest) < RAIL_REST_TOL, f"ball at {z:.6f} m, the rail's top at {rest} m"


MARGINS = """<mujoco model="margins">
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" margin="0.01"/>
    <geom name="rail" type="capsule" fromto="-0.5 0.5 0.2 0.5 0.5 0.2" size="0.02" margin="0.005"/>
    <body name="on_floor" pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.02" margin="0.02"/>
    </body>
    <body name="on_rail" pos="0 0.5 0.3">
      <freejoint/>
      <geom type="sphere" size="0.02" margin="0.02"/>
    </body>
  </worldbody>
</mujoco>"""
# MuJoCo's soft contacts settle a few tenths of a mm inside their surface (0.37 mm for these
# balls at its default solref 0.02 s); ours rest on it
MUJOCO_SAG_TOL = 1e-3  # m
MARGIN_DROP = 0.5  # s: both balls land and settle


def test_geom_margins_move_the_contact_surface_out_as_mujocos(tmp_path):
    """MuJoCo's contact of two geoms pushes within the sum of their margins (includemargin):
    a ball with margin 0.02 rests 3 cm above a floor with 0.01, and 2.5 cm above a rail with
    0.005. The import moves the plane out by the pair's margin and grows a rounded shape's
    radius by it; both balls come to rest where MuJoCo's do (without: 3 and 2.5 cm lower)."""
    path = _write(tmp_path, MARGINS, "margins.xml")
    result = read_mjcf(path, MjcfOptions())
    mech = _build(result, path)
    traj = dojo.simulate(mech, steps=int(round(MARGIN_DROP / mech.timestep)))
    assert all(s == "success" for s in traj.status)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    for _ in range(int(round(MARGIN_DROP / m.opt.timestep))):
        mujoco.mj_step(m, d)
    for name in ("on_floor", "on_rail"):
        ours = traj.x[-1][[b.name for b in mech.bodies].index(name), 2]
        theirs = d.xipos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name), 2]
        assert abs(ours - theirs) < MUJOCO_SAG_TOL, f"{name}: ours at {ours:.5f} m, MuJoCo's at {theirs:.5f} m"


SLID_ON_TABLE = """<mujoco model="slid">
  <default><geom margin="0.002"/></default>
  <worldbody>
    <geom name="table" type="plane" pos="0 0 -0.3" size="1 1 0.1"/>
    <body name="puck" pos="0 0 -0.25">
      <joint name="px" type="slide" axis="1 0 0" damping="0.5"/>
      <joint name="py" type="slide" axis="0 1 0" damping="0.5"/>
      <geom name="puck" type="cylinder" size="0.05 0.05"/>
    </body>
  </worldbody>
</mujoco>"""
SLID_STEPS = 20


def test_a_body_its_joints_hold_inside_its_margin_starts_on_its_contact_surface(tmp_path):
    """Gymnasium's Pusher: its object, on two slides (no vertical motion), stands on the table,
    4 mm inside the pair's margins. MuJoCo's soft contact presses against the slides; a hard
    contact 4 mm inside its surface that the joints hold there gives no step (every step of
    the Pusher failed). A contact that starts within its margin starts with its surface where
    the shapes are, named in a note: every step converges and the puck stays on the table."""
    _puck_starts_on_its_contact_surface(tmp_path, SLID_ON_TABLE, "slid.xml", MjcfOptions())


def _puck_starts_on_its_contact_surface(tmp_path, text: str, name: str, options: MjcfOptions) -> np.ndarray:
    """Import a puck on slides that starts inside its margin band: the note names it, every
    step converges, and the puck stays where it started. Its start position."""
    path = _write(tmp_path, text, name)
    result = read_mjcf(path, options)
    assert any(n.startswith("1 contact starts within the geoms' margin of touching") and "puck" in n
               for n in result.notes), result.notes
    mech = _build(result, path)
    traj = dojo.simulate(mech, steps=SLID_STEPS)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    puck = [b.name for b in mech.bodies].index("puck")
    assert np.abs(traj.x[-1][puck] - traj.x[0][puck]).max() < RAIL_REST_TOL, f"puck moved to {traj.x[-1][puck]}"
    return traj.x[0][puck]


# The puck of SLID_ON_TABLE on its two slides, at qpos0 beside a table (a world box): its key
# slides it over the table, standing on it 4 mm inside the pair's margins
SLID_ONTO_TABLE = """<mujoco model="slid_onto">
  <default><geom margin="0.002"/></default>
  <worldbody>
    <geom name="table" type="box" pos="1 0 -0.35" size="0.5 0.5 0.05"/>
    <body name="puck" pos="0 0 -0.25">
      <joint name="px" type="slide" axis="1 0 0" damping="0.5"/>
      <joint name="py" type="slide" axis="0 1 0" damping="0.5"/>
      <geom name="puck" type="sphere" size="0.05"/>
    </body>
  </worldbody>
  <keyframe><key name="over" qpos="1 0.1"/></keyframe>
</mujoco>"""


def test_a_keyframe_inside_its_margin_starts_on_its_contact_surface(tmp_path):
    """The margin rule judges the keyframe's pose too: the key slides the puck onto the table,
    where its slides hold it 4 mm inside the pair's margins (qpos0 beside the table touches
    nothing); its contact starts where the shapes are, with the note, and every step converges
    with the puck at rest on the table. Judged at qpos0 (the contact 4 mm inside its surface,
    held there), 8 of these 20 steps fail and the puck is thrown 6.7 m along its slide."""
    start = _puck_starts_on_its_contact_surface(tmp_path, SLID_ONTO_TABLE, "slid_onto.xml", MjcfOptions(keyframe="over"))
    assert start == pytest.approx([1.0, 0.1, -0.25], abs=1e-12)


# ---------------------------------------------------------------- pairs the joints hold inside each other

# dm_control's model_with_ball_joints.xml, named: a post welded to the world (no joint) and two
# capsules on ball joints; the arm's capsule and the post's meet at the shoulder, each holding
# the shoulder's anchor 1 cm inside (their radius), so no motion separates them. MuJoCo keeps
# the pair (filterparent spares the world's weld) and its soft contact presses through the
# anchor for ever, moving nothing (its run with the pair excluded is the same to 1e-14 m)
HELD_AT_A_BALL_JOINT = """<mujoco model="held">
  <option timestep="0.002"/>
  <default>
    <geom type="capsule" size="0.01"/>
    <joint type="ball" damping="0.005"/>
  </default>
  <worldbody>
    <body name="post">
      <geom name="post" fromto="0 0 0 0 0 0.1"/>
      <body name="arm" pos="0 0 0.1">
        <joint name="shoulder"/>
        <geom name="arm" fromto="0 0 0 0 0.1 0.1"/>
        <body name="forearm" pos="0 0.1 0.1">
          <joint name="elbow"/>
          <geom name="forearm" fromto="0 0 0 0 0.1 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""
HELD_SWING = 0.3  # s: the two capsules swing down 0.27 m
# MuJoCo's Euler step is first order: the oracle is its run at 1/HELD_ORACLE_SUBSTEPS of the
# step (at its own step it differs from ours by 2 mm after 0.3 s, at 1/10 by 0.21 mm, at
# 1/40 by 0.065 mm: its own error shrinking); ours is second order at the file's step
HELD_ORACLE_SUBSTEPS = 40
HELD_SWING_TOL = 2e-4  # m


def test_a_pair_its_joints_hold_inside_each_other_is_left_out_and_swings_as_mujocos(tmp_path):
    """Capsules that meet at a ball joint both hold its anchor inside: no motion separates
    them, and a hard contact between them gives no step (every step of dm_control's
    model_with_ball_joints.xml failed). The pair is left out, named in one warning with its
    file and line; the pair that can separate (post-forearm) stays. Every step converges and
    the capsules swing as MuJoCo's do (its contact presses through the anchor, no torque)."""
    path = _write(tmp_path, HELD_AT_A_BALL_JOINT, "held.xml")
    result = read_mjcf(path, MjcfOptions())
    (held,) = [w for w in result.warnings if "no motion separates them" in w]
    assert "post-arm 1 cm deep at joint 'shoulder' (held.xml:9)" in held, held
    assert sorted(c["name"] for c in result.scene["contacts"]) == ["post-forearm"]
    assert not [w for w in result.warnings if "start inside another body" in w], result.warnings
    mech = _build(result, path)
    steps = int(round(HELD_SWING / mech.timestep))
    traj = dojo.simulate(mech, steps=steps)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    m.opt.timestep /= HELD_ORACLE_SUBSTEPS
    names = [b.name for b in mech.bodies]
    worst = 0.0
    for k in range(steps):
        for _ in range(HELD_ORACLE_SUBSTEPS):
            mujoco.mj_step(m, d)
        for name in ("arm", "forearm"):
            theirs = d.xipos[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)]
            worst = max(worst, float(np.abs(traj.x[k + 1][names.index(name)] - theirs).max()))
    assert d.ncon == 1 and d.contact[0].dist < -0.019, "MuJoCo keeps the pair 2 cm inside"
    assert worst < HELD_SWING_TOL, f"{worst:.2e} m from MuJoCo's bodies"


# A lever on a hinge at the world's origin, resting on a stop (a world sphere) under it; it
# starts 1 cm inside the stop, away from the hinge's axis: a turn of the hinge separates them
LEVER_INTO_STOP = """<mujoco model="lever">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="stop" type="sphere" pos="0.2 0 -0.04" size="0.04"/>
    <body name="lever">
      <joint name="pivot" type="hinge" axis="0 1 0" damping="0.5"/>
      <geom name="lever" type="capsule" fromto="0 0 0 0.3 0 0" size="0.01"/>
    </body>
  </worldbody>
</mujoco>"""
LEVER_REST = 0.5  # s: pushed out, it falls back onto the stop and rests there
# the lever's centre of mass on its 7.5 mm way out against MuJoCo's (measured 3.3e-4 m at most,
# ours ahead: MuJoCo's soft contact has its impedance and its reference on the acceleration,
# ours the recurrence on the penetration)
LEVER_OUT_TOL = 5e-4  # m


def test_a_pair_a_step_can_separate_stays_and_is_pushed_apart(tmp_path):
    """The lever starts 1 cm inside its stop, but its hinge's axis runs outside the stop: the
    pair stays (named in the overlap warning) and the contact eases the lever out over the
    recovery's time constant (core maximal/recovery.h), along MuJoCo's path out under its
    solref's 20 ms (the lever's centre of mass within 0.5 mm of MuJoCo's over the first 20
    steps; before, a hard contact separated them in one step and threw the lever up 2.3 cm),
    every step converges, and the lever rests on the stop where MuJoCo's does, to its soft
    contact's sag."""
    path = _write(tmp_path, LEVER_INTO_STOP, "lever.xml")
    result = read_mjcf(path, MjcfOptions())
    (overlaps,) = [w for w in result.warnings if "start inside another body" in w]
    assert "lever-stop 1 cm inside body 'world'" in overlaps, overlaps
    assert not [w for w in result.warnings if "no motion separates them" in w], result.warnings
    mech = _build(result, path)
    traj = dojo.simulate(mech, steps=int(round(LEVER_REST / mech.timestep)))
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    path_out = []
    for _ in range(int(round(LEVER_REST / m.opt.timestep))):
        mujoco.mj_step(m, d)
        path_out.append(d.xipos[1, 2])
    out = np.abs(traj.x[1:21, 0, 2] - path_out[:20]).max()
    assert out < LEVER_OUT_TOL, f"the lever's way out {out:.2e} m from MuJoCo's"
    assert traj.x[:, 0, 2].max() < max(path_out) + MUJOCO_SAG_TOL, "thrown up"
    ours, theirs = traj.x[-1][0], d.xipos[1]
    assert np.abs(ours - theirs).max() < MUJOCO_SAG_TOL, f"ours at {ours}, MuJoCo's at {theirs}"


# The lever of LEVER_INTO_STOP pinched between two stops, 1 cm inside each: every turn of its
# hinge presses it further into one of them, so a hard contact's first step finds no pose
# (MuJoCo's soft contacts hold it pinched where it is)
LEVER_PINCHED = """<mujoco model="pinched">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="upper" type="sphere" pos="0.2 0 0.025" size="0.025"/>
    <geom name="lower" type="sphere" pos="0.2 0 -0.025" size="0.025"/>
    <body name="lever">
      <joint name="pivot" type="hinge" axis="0 1 0" damping="0.5"/>
      <geom name="lever" type="capsule" fromto="0 0 0 0.3 0 0" size="0.01"/>
    </body>
  </worldbody>
</mujoco>"""
PINCHED_SWING = 0.3  # s: without the pairs the lever sinks on its damped hinge (its centre 1.3 cm)
# the lever alone is a damped pendulum: MuJoCo's first-order step at 1/HELD_ORACLE_SUBSTEPS of
# ours is the oracle, as for the ball joints above (measured 9e-6 m apart)
PINCHED_SWING_TOL = 5e-5  # m


def test_overlaps_a_later_step_cannot_take_out_are_refused_or_left_out(tmp_path):
    """The lever 1 cm inside its stop on a hinge whose range leaves it 0.4 mm of travel at the
    stop: the first step asks only 0.1 mm of the way out (the contacts' recovery, core
    maximal/recovery.h) and converges, the later ones ask more than the range gives. The import
    follows the overlaps out over 10 time constants (dm_control's CMU humanoid V2020: hip and
    thigh capsules 1.3 cm inside each other, 5 steps converged, then 51 of 55 failed), so it
    refuses the pair naming the step that fails, or leaves it out, after which every step
    converges."""
    stuck = LEVER_INTO_STOP.replace('<joint name="pivot" type="hinge" axis="0 1 0" damping="0.5"/>',
                                    '<joint name="pivot" type="hinge" axis="0 1 0" damping="0.5" limited="true" '
                                    'range="-0.002 0.002" ref="0"/>')
    assert stuck != LEVER_INTO_STOP
    path = _write(tmp_path, '<mujoco model="lever">\n  <compiler angle="radian"/>' + stuck.split('<mujoco model="lever">', 1)[1],
                  "stuck.xml")
    (problem,) = _problems(path)
    assert "1 contact start inside another body by more than 5 mm" in problem and "of their way out fails" in problem, problem
    assert "the first step" not in problem, problem
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True))
    assert any("left out (--drop-unsupported): 1 contact start inside" in w for w in result.warnings), result.warnings
    traj = dojo.simulate(_build(result, path), steps=100)
    assert set(traj.status) == {"success"}


def test_overlaps_the_first_step_cannot_take_out_are_refused_or_left_out(tmp_path):
    """A scene whose first step does not converge from its initial overlaps is told at import,
    not run through failed steps (every step of dm_control's Jaco, robot_arm.xml, folded
    through itself at qpos0, failed): the import refuses it naming the pairs, their depths and
    lines; with --drop-unsupported it leaves them out (MoveIt's rule for a robot's links in
    collision at its default pose) with one warning, every step converges, and the lever
    swings as MuJoCo's does without the stops."""
    path = _write(tmp_path, LEVER_PINCHED, "pinched.xml")
    (problem,) = _problems(path)
    assert "pinched.xml: contacts: 2 contacts start inside another body by more than 5 mm" in problem, problem
    assert "the first step from it fails" in problem and "lever-upper 1 cm inside body 'world' (pinched.xml:8)" in problem
    assert "(--keyframe)" in problem and "(--drop-unsupported)" in problem
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True))
    (left_out,) = [w for w in result.warnings if "left out (--drop-unsupported): 2 contacts start inside" in w]
    assert "lever-lower 1 cm inside body 'world' (pinched.xml:8)" in left_out, left_out
    assert "contacts" not in result.scene
    mech = _build(result, path)
    steps = int(round(PINCHED_SWING / mech.timestep))
    traj = dojo.simulate(mech, steps=steps)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    spec = mujoco.MjSpec.from_file(str(path))
    for g in spec.geoms:
        if g.name in ("upper", "lower"):
            g.contype = g.conaffinity = 0
    m = spec.compile()
    d = mujoco.MjData(m)
    m.opt.timestep /= HELD_ORACLE_SUBSTEPS
    worst = 0.0
    for k in range(steps):
        for _ in range(HELD_ORACLE_SUBSTEPS):
            mujoco.mj_step(m, d)
        worst = max(worst, float(np.abs(traj.x[k + 1][0] - d.xipos[1]).max()))
    assert worst < PINCHED_SWING_TOL, f"{worst:.2e} m from MuJoCo's lever"


def test_option_flags_turn_off_what_mujoco_turns_off(tmp_path):
    """<option><flag>: contact, limit, equality, spring, damper, frictionloss, gravity and
    clampctrl disabled act as in MuJoCo (its compile of the same file sets those bits);
    constraint disables contacts, limits, equality and dry friction at once; a flag whose
    physics is not read is named in a warning."""
    text = """<mujoco>
  <option>
    <flag {flags}/>
  </option>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="a" pos="0 0 0.05">
      <joint name="h" type="hinge" axis="0 1 0" range="-0.1 0.1" stiffness="3" damping="0.5" frictionloss="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
    </body>
  </worldbody>
  <equality>
    <joint joint1="h"/>
  </equality>
  <actuator>
    <motor joint="h" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""
    flags = ('contact="disable" limit="disable" equality="disable" spring="disable" damper="disable" '
             'frictionloss="disable" gravity="disable" clampctrl="disable"')
    path = _write(tmp_path, text.format(flags=flags), "flags.xml")
    m = mujoco.MjModel.from_xml_path(str(path))
    bits = mujoco.mjtDisableBit
    for bit in (bits.mjDSBL_CONTACT, bits.mjDSBL_LIMIT, bits.mjDSBL_EQUALITY, bits.mjDSBL_SPRING, bits.mjDSBL_DAMPER,
                bits.mjDSBL_FRICTIONLOSS, bits.mjDSBL_GRAVITY, bits.mjDSBL_CLAMPCTRL):
        assert m.opt.disableflags & int(bit), f"MuJoCo reads {bit.name} from the file"
    result = read_mjcf(path, MjcfOptions(), path.name)
    scene = result.scene
    (joint,) = scene["joints"]
    assert "contacts" not in scene and scene["gravity"] == [0.0, 0.0, 0.0]
    assert not {"limits", "spring", "damper", "friction"} & set(joint), joint
    assert "ctrl_range" not in scene["actuators"][0] and result.warnings == [], result.warnings

    path = _write(tmp_path, text.format(flags='constraint="disable" override="enable"'), "constraint.xml")
    result = read_mjcf(path, MjcfOptions(), path.name)
    (joint,) = result.scene["joints"]
    assert "contacts" not in result.scene and "limits" not in joint and joint["spring"] == [3.0]
    assert "friction" not in joint, joint  # constraint="disable" turns dry friction off too (mjDSBL_CONSTRAINT)
    assert result.warnings == ["warning: constraint.xml:3: <flag>: override='enable' is not read (the import is as "
                               "with override=disable)"], result.warnings
    path = _write(tmp_path, text.format(flags=""), "none.xml")
    assert "model.xml" not in _problems(path)[0] and "equality constraints are not supported" in " ".join(_problems(path))


def test_a_model_without_bodies_is_refused_at_its_worldbody(tmp_path):
    """dm_control's lqr.xml is a template whose bodies its Python code adds."""
    path = _write(tmp_path, """<mujoco model="template">
  <option timestep="0.03"/>
  <worldbody>
    <geom name="floor" size="4 1 0.2" type="plane"/>
  </worldbody>
</mujoco>
""", "template.xml")
    assert _problems(path) == ["template.xml:3: <worldbody>: no <body>: the model has nothing that moves, and a scene "
                               "needs a body (a template whose bodies code adds cannot be imported as it is)"]


def test_a_tendon_an_equality_constraint_holds_is_not_inert(tmp_path):
    """dm_control's quadruped couples its knees and ankles by tendons that only an
    <equality><tendon> holds: such a tendon exerts force, so it is refused (or left out with a
    warning), not left out as inert with a note."""
    path = _write(tmp_path, """<mujoco>
  <worldbody>
    <body name="a">
      <joint name="j1" type="hinge"/>
      <geom type="sphere" size="0.1"/>
      <body name="b" pos="0 0 -0.3">
        <joint name="j2" type="hinge"/>
        <geom type="sphere" size="0.1"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="coupling"><joint joint="j1" coef="1"/><joint joint="j2" coef="-1"/></fixed>
  </tendon>
  <equality>
    <tendon tendon1="coupling"/>
  </equality>
</mujoco>
""", "coupled.xml")
    assert _problems(path) == [
        "coupled.xml:13: tendon 'coupling': tendons are not supported (this one has an equality constraint) (import without "
        "it: --drop-unsupported)",
        "coupled.xml:15: <equality>: equality constraints are not supported (import without it: --drop-unsupported)"]


# Meta-World's objects (a free body without geoms whose welded child holds them and the mass),
# a point mass on a hinge whose welded child has volume, Fetch's point masses (diaginertia 0)
# welded to its moving base: MuJoCo compiles all three (mjCModel::CheckBodyMassInertia). The
# moving geoms collide with the floor only (box-box pairs are not in the collision table)
MASS_IN_WELDS = """<mujoco model="welds">
  <option timestep="0.002"/>
  <default><geom contype="1" conaffinity="0"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="3 3 0.1" contype="0" conaffinity="1"/>
    <body name="block" pos="0 0 0.3">
      <freejoint/>
      <body name="block_geoms" pos="0.01 0 0.02" euler="0 0 30">
        <geom type="box" size="0.02 0.03 0.02" mass="0.1"/>
        <body name="block_knob" pos="0 0.01 0.03"><geom type="sphere" size="0.01"/></body>
      </body>
    </body>
    <body name="pendulum" pos="1 0 1">
      <joint name="swing" type="hinge" axis="0 1 0"/>
      <inertial pos="0.2 0 0" mass="0.5" diaginertia="0 0 0"/>
      <body name="bob" pos="0.3 0 0.05" euler="10 20 30">
        <geom type="box" size="0.05 0.02 0.04"/>
        <body name="tag" pos="0 0 0.06"><inertial pos="0.01 0 0" mass="0.2" diaginertia="0 0 0"/></body>
      </body>
    </body>
    <body name="base" pos="-1 0 0.2">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.05"/>
      <body name="estop" pos="0.05 0.05 0.06" quat="0.7071 0.7071 0 0">
        <inertial pos="0.002 -0.003 0.007" mass="0.2" diaginertia="0 0 0"/>
      </body>
    </body>
    <body name="shelf_tag" pos="2 0 0.5"><inertial pos="0 0 0" mass="1" diaginertia="0 0 0"/></body>
  </worldbody>
</mujoco>"""
# The pendulum's centre of mass after its swing against MuJoCo's (RK4 at 0.1 ms): our 2 ms
# steps' error, 1.3e-5 m measured (the bob's own inertia, 0.5% of the swing's, moves it by ~1e-3)
SWING_TOL = 1e-4  # m
SWING_TIME = 0.3  # s


def _mujoco_composite(m, d, ks: list[int]) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and world-frame inertia of MuJoCo's bodies ``ks`` as one rigid body,
    summed from MuJoCo's own body_mass, xipos, ximat and body_inertia (parallel-axis rule)."""
    masses = np.array([m.body_mass[k] for k in ks])
    com = sum(m.body_mass[k] * d.xipos[k] for k in ks) / masses.sum()
    inertia = np.zeros((3, 3))
    for k in ks:
        R = d.ximat[k].reshape(3, 3)
        r = d.xipos[k] - com
        inertia += R @ np.diag(m.body_inertia[k]) @ R.T + m.body_mass[k] * (r @ r * np.eye(3) - np.outer(r, r))
    return masses.sum(), com, inertia


def test_bodies_welded_to_a_moving_body_without_mass_or_inertia_are_merged_into_it_as_mujocos_composite(tmp_path):
    path = _write(tmp_path, MASS_IN_WELDS, "welds.xml")
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    result = read_mjcf(path, MjcfOptions(), path.name)
    assert result.merged == {"block_geoms": "block", "block_knob": "block", "tag": "pendulum", "bob": "pendulum",
                             "estop": "base", "shelf_tag": "world"}, result.merged
    assert any("'block' has no mass and moves on joints: the bodies welded to it (block_geoms, block_knob)" in n
               for n in result.notes), result.notes
    assert any("point masses: tag, estop" in n for n in result.notes), result.notes
    mech = _build(result, path)
    z = (mech.initial_t0 if mech.initial_t0 is not None else mech.initial).reshape(mech.nb, 13)
    scene = {b["name"]: b for b in result.scene["bodies"]}
    for i, body in enumerate(mech.bodies):
        ks = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in [body.name] + [b for b, h in result.merged.items() if h == body.name]]
        mass, com, inertia = _mujoco_composite(m, d, ks)
        R = _matrix(z[i, 6:10])
        ours = R @ np.asarray(scene[body.name]["inertia"]) @ R.T
        assert abs(scene[body.name]["mass"] - mass) < ROUNDOFF * mass, body.name
        assert np.abs(z[i, :3] - com).max() < ROUNDOFF, body.name
        assert np.abs(ours - inertia).max() < ROUNDOFF * np.abs(inertia).max(), (body.name, ours, inertia)
        if body.name != "base":  # its welded subtree is all of its subtree
            assert abs(mass - m.body_subtreemass[ks[0]]) < ROUNDOFF * mass
    # the pendulum (a point mass on a hinge, its welded bob) swings as MuJoCo's
    traj = dojo.simulate(mech, steps=int(round(SWING_TIME / mech.timestep)))
    assert all(s == "success" for s in traj.status)
    m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-4
    mujoco.mj_resetData(m, d)
    mujoco.mj_step(m, d, int(round(SWING_TIME / m.opt.timestep)))
    k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "pendulum")
    ours = traj.x[-1][[b.name for b in mech.bodies].index("pendulum")]
    assert np.abs(ours - d.subtree_com[k]).max() < SWING_TOL, (ours, d.subtree_com[k])


def test_a_moving_body_without_mass_or_inertia_in_its_weld_is_refused_as_mujoco_refuses_it(tmp_path):
    cases = {
        "point.xml": """<mujoco>
  <worldbody>
    <body name="a">
      <joint type="hinge"/>
      <inertial pos="0.1 0 0" mass="1" diaginertia="0 0 0"/>
      <body name="b"><inertial pos="0 0.1 0" mass="1" diaginertia="0 0 0"/></body>
    </body>
  </worldbody>
</mujoco>""",
        "rod.xml": """<mujoco>
  <worldbody>
    <body name="a">
      <joint type="hinge"/>
      <inertial pos="0.1 0 0" mass="1" diaginertia="0 1 1"/>
    </body>
  </worldbody>
</mujoco>""",
        "moving_child.xml": """<mujoco>
  <worldbody>
    <body name="a">
      <joint type="hinge"/>
      <body name="b"><joint type="hinge"/><geom size="0.1"/></body>
    </body>
  </worldbody>
</mujoco>""",
    }
    expected = {
        "point.xml": "point.xml:3: body 'a': has mass 1 but principal inertias [0, 0, 0] (a point mass or a rod), moves on joints",
        "rod.xml": "rod.xml:3: body 'a': has mass 1 but principal inertias [0, 1, 1] (a point mass or a rod), moves on joints",
        "moving_child.xml": "moving_child.xml:3: body 'a': has no mass, moves on joints",
    }
    for name, text in cases.items():
        path = _write(tmp_path, text, name)
        with pytest.raises(ValueError, match="mass and inertia of moving bodies must be larger than mjMINVAL"):
            mujoco.MjModel.from_xml_path(str(path))
        lines = _problems(path)
        assert len(lines) == 1 and lines[0].startswith(expected[name]), lines
        assert lines[0].endswith("MuJoCo refuses it too (\"mass and inertia of moving bodies must be larger than mjMINVAL\")")


def test_only_geoms_of_the_inertiagrouprange_give_mass_as_mujocos(tmp_path):
    """Meta-World's and the Franka kitchen's files draw with group-1 meshes and collide with
    group-4 shapes, ``inertiagrouprange="4 5"``: only the latter give the bodies mass."""
    path = _write(tmp_path, """<mujoco>
  <compiler inertiagrouprange="4 5"/>
  <worldbody>
    <body name="cup" pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.2" group="1" contype="0" conaffinity="0"/>
      <geom type="box" size="0.02 0.03 0.04" pos="0.01 0 0" group="4"/>
      <geom type="capsule" size="0.01 0.05" pos="0 0.02 0" euler="30 0 0" group="5" mass="0.3"/>
      <body name="lid" pos="0 0 0.05">
        <joint type="hinge" axis="1 0 0"/>
        <geom type="cylinder" size="0.03 0.005" group="4"/>
        <geom type="sphere" size="0.5" group="0" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>""", "groups.xml")
    m = mujoco.MjModel.from_xml_path(str(path))
    result = read_mjcf(path, MjcfOptions(), path.name)
    _assert_mass_properties(result, m, ROUNDOFF, "groups.xml")
