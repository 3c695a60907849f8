"""Replay: the meshcat scene tree, the standalone page in a real headless Chromium, the
loopback meshcat server's stored tree, and `dojo replay` driven by CliRunner."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import umsgpack
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.io.storage import StorageWriter, read_storage
from dojo_cli.math.quaternion import quaternion_from_rotation_vector
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec, load_scene_spec_from_string
from dojo_cli.viz.meshcat_scene import (
    ReplayOptions,
    body_path,
    export_html,
    frame_indices,
    load_run,
    mechanism_from_run,
    pyramid_geometry,
    recording_visualizer,
    set_frame,
    set_scene,
    transform_from_pose,
    viewer_html,
)
from dojo_cli.viz.meshcat_server import LOOPBACK, start_server

runner = CliRunner()
CHROMIUM = "/usr/bin/chromium"
# Transforms travel as float64 through msgpack: they come back exactly; 1e-9 leaves room
# for nothing but a different construction.
TRANSFORM_TOL = 1e-9
# Float32 geometry (meshcat packs vertex arrays as float32).
VERTEX_TOL = 1e-6
# A screenshot "shows the scene" when this fraction of its pixels differs by more than
# PIXEL_DIFF (of full scale) from the empty viewer's: the pendulum link covers ~2 %.
PIXEL_DIFF = 0.1
SCENE_PIXEL_FRACTION = 0.005
# The first body is drawn in the palette's orange: its pixels (red > green > blue, red well
# above blue, whatever the shading) cover 0.7 % (pendulum link) and 2.3 % (box) of the
# screenshot at the default camera, and none of the empty viewer (sky, grid, axes).
BODY_PIXEL_FRACTION = 0.002
RUN_SECONDS = 1.0
STEPS = 100  # of the built-in scenes' 0.01 s timestep: RUN_SECONDS
CHROMIUM_TIMEOUT = 60.0  # s, a generous bound for one headless load (about 1 s here)


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Built-in runs of RUN_SECONDS: pendulum (a joint), box (contacts, tumbling)."""
    folder = tmp_path_factory.mktemp("runs")
    out = {}
    for scene in ("pendulum", "box"):
        out[scene] = folder / f"{scene}.h5"
        res = invoke("simulate", scene, "-o", out[scene], "--steps", STEPS, "-q")
        assert res.exit_code == 0, res.output
    return out


def decode_page(text: str) -> tuple[list[dict], dict]:
    """(meshcat commands, dojo-info) embedded in an exported page."""
    encoded = re.search(r'<script id="dojo-replay-commands" type="application/json">(.*?)</script>', text, re.S)
    info = re.search(r'<script id="dojo-info" type="application/json">(.*?)</script>', text, re.S)
    commands = [umsgpack.unpackb(base64.b64decode(c)) for c in json.loads(encoded.group(1))]
    return commands, json.loads(info.group(1))


def buffer_geometry_arrays(geometry: dict) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3) float32, faces (m, 3)) of a meshcat BufferGeometry as sent."""
    data = geometry["data"]
    position, index = data["attributes"]["position"], data["index"]
    assert position["type"] == "Float32Array" and position["itemSize"] == 3 and index["type"] == "Uint32Array"
    vertices = np.frombuffer(position["array"].data, np.float32).reshape(-1, 3)
    return vertices, np.frombuffer(index["array"].data, np.uint32).reshape(-1, 3)


def animation_frames(commands: list[dict]) -> set[int]:
    """Keyframes per track of the (single) set_animation command."""
    (anim,) = [c for c in commands if c["type"] == "set_animation"]
    return {len(track["keys"]) for a in anim["animations"] for track in a["clip"]["tracks"]}


def expected_frames(seconds: float, fps: float, speed: float) -> int:
    return math.floor(seconds * fps / speed + 1e-9) + 1


def write_run(path: Path, scene_yaml: str, x: np.ndarray, q: np.ndarray, stop: str | None = None) -> Path:
    """A storage file holding states x (T+1, nb, 3), q (T+1, nb, 4) of a scene, written by
    the storage writer; ``stop="interrupt"`` ends it the way Ctrl-C in `dojo simulate` does."""
    nb = x.shape[1]
    spec = load_scene_spec_from_string(scene_yaml)
    mech = build_mechanism(spec)
    writer = StorageWriter(
        path, scene_yaml=scene_yaml, scene_name=spec.name, timestep=spec.timestep, gravity=list(spec.gravity),
        solver_options={}, integrator="test", body_names=[b.name for b in mech.bodies],
        minimal_q_names=mech.coordinate_names(), minimal_v_names=mech.coordinate_names(),
        input_dim=mech.nf, dojo_cli_version="test",
    )
    zeros3, zf = np.zeros((nb, 3)), np.zeros(mech.nf)
    try:
        with writer:
            writer.write_initial(0.0, x[0], q[0], zeros3, zeros3, zf, zf)
            for k in range(1, len(x)):
                writer.write_step(k * spec.timestep, x[k], q[k], zeros3, zeros3, zf, zf, zf,
                                  iterations=1, residual=0.0, status="success")
            if stop == "interrupt":
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    return path


# ------------------------------------------------------------------ library


def test_transform_from_pose_against_hand_rotations():
    # 90 degrees about z: x -> y, y -> -x; [w, x, y, z] order
    q = np.array([math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)])
    t = transform_from_pose([1.0, 2.0, 3.0], q)
    expected = np.array([[0.0, -1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 1.0, 3.0], [0.0, 0.0, 0.0, 1.0]])
    assert np.max(np.abs(t - expected)) < 1e-15, f"transform\n{t}"
    # batched, and -q is the same rotation
    rng = np.random.default_rng(0)
    qs = quaternion_from_rotation_vector(rng.normal(size=(5, 3)))
    xs = rng.normal(size=(5, 3))
    ts = transform_from_pose(xs, qs)
    assert ts.shape == (5, 4, 4)
    assert np.allclose(ts, transform_from_pose(xs, -qs), atol=1e-15), "q and -q"
    for r in ts[:, :3, :3]:
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-12) and np.linalg.det(r) == pytest.approx(1.0)


def test_frame_indices_sample_speed_over_fps():
    time = np.arange(101) * 0.01  # 1 s
    idx = frame_indices(time, fps=30.0, speed=2.0)  # a frame every 2/30 s of simulated time
    assert len(idx) == expected_frames(1.0, 30.0, 2.0) == 16
    assert np.array_equal(idx, np.rint(np.arange(16) * 2.0 / 30.0 / 0.01).astype(int)), idx
    assert len(frame_indices(time, 60.0, 1.0)) == 61 and frame_indices(time, 60.0, 1.0)[-1] == 100
    assert np.array_equal(frame_indices(time[:1], 60.0, 1.0), [0]), "a run of one state"


SHAPES_SCENE = """\
name: shapes
timestep: 0.01
bodies:
  - {name: b_box, mass: 1, shape: {type: box, size: [0.2, 0.3, 0.4], position_offset: [0.1, 0, 0], color: [1, 0, 0]}}
  - {name: b_sphere, mass: 1, shape: {type: sphere, radius: 0.1, color: [0, 1, 0, 0.5]}}
  - {name: b_cyl, mass: 1, shape: {type: cylinder, radius: 0.05, height: 0.5, orientation_offset: [0.7071068, 0.7071068, 0, 0]}}
  - {name: b_capsule, mass: 1, shape: {type: capsule, radius: 0.05, height: 0.3}}
  - {name: b_pyramid, mass: 1, shape: {type: pyramid, width: 0.4, height: 0.6}}
  - {name: b_mesh, mass: 1, inertia: [1, 1, 1], shape: {type: mesh, file: tri.obj, scale: [2, 3, 4]}}
  - {name: b_missing, mass: 1, inertia: [1, 1, 1], shape: {type: mesh, file: gone.stl}}
  - {name: b_frame, mass: 1, inertia: [1, 1, 1], shape: {type: frame}}
joints:
  - {name: j0, type: floating, parent: origin, child: b_box}
  - {name: j1, type: floating, parent: origin, child: b_sphere}
  - {name: j2, type: floating, parent: origin, child: b_cyl}
  - {name: j3, type: floating, parent: origin, child: b_capsule}
  - {name: j4, type: floating, parent: origin, child: b_pyramid}
  - {name: j5, type: floating, parent: origin, child: b_mesh}
  - {name: j6, type: floating, parent: origin, child: b_missing}
  - {name: j7, type: revolute, parent: b_box, child: b_frame, axis: [1, 0, 0], parent_vertex: [0, 0, 0.3]}
contacts:
  - {name: on_slope, body: b_sphere, radius: 0.1, against: {normal: [0, -0.6, 0.8], point: [0, 0, 0.5]}}
  - {name: on_ground, body: b_box, offset: [0.1, 0.15, -0.2]}
  - {name: on_ball, body: b_box, against: {body: b_sphere, shape: sphere, radius: 0.1}}
"""


def _commands_by_path(recorder) -> tuple[dict, dict]:
    objects, transforms = {}, {}
    for c in recorder.decoded():
        if c["type"] == "set_object":
            objects[c["path"]] = c["object"]
        elif c["type"] == "set_transform":
            transforms[c["path"]] = np.array(c["matrix"]).reshape(4, 4).T  # meshcat sends column-major
    return objects, transforms


def test_scene_tree_draws_every_shape_with_offsets_colours_and_surfaces(tmp_path):
    (tmp_path / "tri.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    spec = load_scene_spec_from_string(SHAPES_SCENE, base_dir=tmp_path)
    mech = build_mechanism(spec)
    vis, recorder = recording_visualizer()
    warnings = set_scene(vis, mech, ReplayOptions(contacts=True, joints=True, frames=True), base_dir=tmp_path)
    objects, transforms = _commands_by_path(recorder)
    root = "/meshcat/dojo/bodies"
    parts = {
        "b_box": ["box"], "b_sphere": ["sphere"], "b_cyl": ["cylinder"],
        "b_capsule": ["cylinder", "cap_top", "cap_bottom"], "b_pyramid": ["pyramid"], "b_mesh": ["mesh"],
        "b_missing": ["placeholder"], "b_frame": ["triad"],
    }
    for body, names in parts.items():
        for name in names:
            assert f"{root}/{body}/shape/{name}" in objects, f"{body}: no {name}"
        shape = next(b.shape for b in mech.bodies if b.name == body)
        offset = transform_from_pose(shape.position_offset, shape.orientation_offset)
        assert np.max(np.abs(transforms[f"{root}/{body}/shape"] - offset)) < TRANSFORM_TOL, f"{body}: shape offset"
        assert f"{root}/{body}/frame" in objects, f"{body}: --frames triad"
    # the cylinder's axis (three.js y) is turned onto the shape's z axis
    assert np.allclose(transforms[f"{root}/b_cyl/shape/cylinder"][:3, :3] @ [0, 1, 0], [0, 0, 1])
    assert np.allclose(transforms[f"{root}/b_capsule/shape/cap_top"][:3, 3], [0, 0, 0.15])
    # mesh file content and scale; the missing one is a warning and a placeholder
    geometry = objects[f"{root}/b_mesh/shape/mesh"]["geometries"][0]
    assert geometry["type"] == "BufferGeometry"
    vertices, faces = buffer_geometry_arrays(geometry)
    assert np.array_equal(vertices[faces], [[[0, 0, 0], [1, 0, 0], [0, 1, 0]]]), "the file's triangle, unscaled"
    assert np.allclose(np.diag(transforms[f"{root}/b_mesh/shape/mesh"]), [2, 3, 4, 1])
    assert len(warnings) == 1 and "gone.stl" in warnings[0] and "placeholder" in warnings[0], warnings
    # colours: RGB and RGBA (opacity) from the scene
    box_material = objects[f"{root}/b_box/shape/box"]["materials"][0]
    assert box_material["color"] == 0xFF0000 and box_material["opacity"] == 1.0
    sphere_material = objects[f"{root}/b_sphere/shape/sphere"]["materials"][0]
    assert sphere_material["color"] == 0x00FF00 and sphere_material["opacity"] == 0.5 and sphere_material["transparent"]
    # ground: top face at z = 0; the slope: top face through its point, along its normal
    ground = transforms["/meshcat/dojo/world/ground"]
    assert np.allclose(ground[:3, :3], np.eye(3)) and ground[:2, 3] @ ground[:2, 3] == 0
    assert ground[2, 3] + 0.5 * objects["/meshcat/dojo/world/ground"]["geometries"][0]["depth"] == pytest.approx(0, abs=1e-15)
    slope = transforms["/meshcat/dojo/world/halfspace0"]
    n = np.array([0, -0.6, 0.8])
    thickness = objects["/meshcat/dojo/world/halfspace0"]["geometries"][0]["depth"]
    assert np.allclose(slope[:3, 2], n, atol=1e-12), "slab z axis along the normal"
    assert np.allclose(slope[:3, 3] + 0.5 * thickness * n, [0, 0, 0.5], atol=1e-12), "top face through the point"
    assert "/meshcat/dojo/world/halfspace1" not in objects, "the ground contact adds no surface"
    assert objects["/meshcat/dojo/world/ground"]["materials"][0]["opacity"] == 1.0, "a contact touches the ground"
    # markers: contact spheres at their offsets, the other body's collision sphere, joint points
    assert np.allclose(transforms["/meshcat/dojo/contacts/b_box/on_ground"][:3, 3], [0.1, 0.15, -0.2])
    assert "/meshcat/dojo/contacts/b_sphere/on_ball_sphere" in objects
    assert np.allclose(transforms[f"{root}/b_box/joints/j7_parent"][:3, 3], [0, 0, 0.3])
    assert "/meshcat/dojo/joints/j0" in objects and f"{root}/b_frame/joints/j7" in objects


def test_contacts_and_each_arrow_kind_toggle_as_one_node(runs):
    """meshcat's GUI has a visibility checkbox per node of the scene tree: every contact marker
    is under dojo/contacts (none under a body's node), every force arrow under
    dojo/arrows/forces, every velocity arrow under dojo/arrows/velocities; the markers' nodes
    are keyed with their bodies' poses, frame by frame."""
    run = read_storage(runs["box"])
    mech = mechanism_from_run(run)
    vis, recorder = recording_visualizer()
    load_run(vis, mech, run, ReplayOptions(fps=30.0, contacts=True, arrows=("forces", "velocities")))
    commands = recorder.decoded()
    objects = [c["path"] for c in commands if c["type"] == "set_object"]
    under = lambda root: [p for p in objects if p.startswith(f"/meshcat/dojo/{root}/")]  # noqa: E731
    assert len(under("contacts")) == len(mech.contacts) == 8
    assert not [p for p in under("bodies") if "/contacts/" in p], "no contact marker under a body"
    assert len(under("arrows/forces")) == 2 * len(mech.contacts) and len(under("arrows/velocities")) == 2 * mech.nb
    assert len(under("contacts")) + len(under("arrows")) + len(under("bodies")) + len(under("world")) == len(objects)
    (anim,) = [c for c in commands if c["type"] == "set_animation"]
    clips = {a["path"]: {t["name"]: t["keys"] for t in a["clip"]["tracks"]} for a in anim["animations"]}
    body, markers = clips["/meshcat/" + body_path("box")], clips["/meshcat/dojo/contacts/box"]
    assert markers == body, "the markers' node is keyed with the box's pose at every frame"


def test_ground_without_ground_contacts_is_see_through():
    vis, recorder = recording_visualizer()
    set_scene(vis, build_mechanism(load_scene_spec("pendulum")))
    objects, _ = _commands_by_path(recorder)
    material = objects["/meshcat/dojo/world/ground"]["materials"][0]
    assert material["opacity"] < 1.0 and material["transparent"], material


def test_pyramid_mesh_centroid_and_outward_faces():
    geometry = pyramid_geometry(0.4, 0.6)
    v, f = geometry.vertices.astype(float), geometry.faces
    assert v[:4, 2] == pytest.approx([-0.15] * 4) and v[4] == pytest.approx([0, 0, 0.45]), "base at -h/4, apex 3h/4"
    for face in f:
        a, b, c = v[face]
        normal = np.cross(b - a, c - a)
        assert normal @ ((a + b + c) / 3) > 0, f"face {face} winds inwards"
    # volume by the divergence theorem equals w^2 h / 3 (a closed, consistently wound surface)
    volume = sum(np.dot(v[i], np.cross(v[j], v[k])) for i, j, k in f) / 6
    assert volume == pytest.approx(0.4**2 * 0.6 / 3, rel=VERTEX_TOL)


def test_mesh_files_resolve_against_the_run_folder(tmp_path, monkeypatch):
    """A run replays from the file alone: relative mesh paths are looked up next to it."""
    scene = SHAPES_SCENE
    (tmp_path / "tri.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    mech = build_mechanism(load_scene_spec_from_string(scene, base_dir=tmp_path))
    x = np.zeros((3, mech.nb, 3))
    q = np.tile([1.0, 0, 0, 0], (3, mech.nb, 1))
    run = read_storage(write_run(tmp_path / "shapes.h5", scene, x, q))
    monkeypatch.chdir("/")  # not the run's folder
    vis, recorder = recording_visualizer()
    replay = load_run(vis, mechanism_from_run(run), run, ReplayOptions(fps=50.0))
    objects, _ = _commands_by_path(recorder)
    assert "/meshcat/dojo/bodies/b_mesh/shape/mesh" in objects
    assert [w for w in replay.warnings if "gone.stl" in w] and len(replay.warnings) == 1, replay.warnings


def test_camera_position_is_converted_to_meshcats_y_up_frame():
    vis, recorder = recording_visualizer()
    mech = build_mechanism(load_scene_spec_from_string(SHAPES_SCENE.replace("tri.obj", "gone.obj")))
    set_scene(vis, mech, ReplayOptions(camera=(3.0, -2.0, 1.5), zoom=1.5))
    props = {c["property"]: c["value"] for c in recorder.decoded()
             if c["type"] == "set_property" and c["path"] == "/Cameras/default/rotated/<object>"}
    # meshcat's camera node is turned +90 degrees about x: world (x, y, z) is (x, z, -y) there
    assert props == {"position": [3.0, 1.5, 2.0], "zoom": 1.5}


# ------------------------------------------------------------------ standalone page in Chromium


def _chromium(url: str, profile: Path, *, screenshot: Path | None = None) -> subprocess.Popen:
    """Headless Chromium on a local page, networking off: every host unresolvable and
    every request sent to a proxy that does not exist; software WebGL (SwiftShader)."""
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-unsafe-swiftshader", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
        f"--user-data-dir={profile}", "--window-size=800,600", "--virtual-time-budget=5000",
    ]
    args += [f"--screenshot={screenshot}"] if screenshot is not None else ["--dump-dom"]
    return subprocess.Popen(args + [url], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=profile.parent)


def _finish(proc: subprocess.Popen) -> str:
    try:
        out, _ = proc.communicate(timeout=CHROMIUM_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode == 0, f"chromium exit code {proc.returncode}"
    return out.decode("utf-8", "replace")


def _image(png: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    return mpimg.imread(png)[..., :3]  # floats in [0, 1]


def _orange(image: np.ndarray) -> np.ndarray:
    """Pixels of the palette's first colour under any shading (BODY_PALETTE[0], orange)."""
    r, g, b = image[..., 0], image[..., 1], image[..., 2]
    return (r - b > 0.35) & (r > g) & (g > b)


# What an exported page may not contain: a reference to anything outside the file.
_EXTERNAL = re.compile(
    r"""(src|href|action)\s*=\s*["']?\s*(https?:|//)|//cdn|url\(\s*["']?(https?:|//)|@import|\bimport\s*\(""", re.IGNORECASE
)


@pytest.mark.parametrize("scene", ["pendulum", "box"])
def test_html_export_is_standalone_and_plays_in_headless_chromium(runs, scene, tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium not installed: {CHROMIUM} is absent (.ci/run installs Debian's chromium)")
    fps, speed = 30.0, 1.0
    run = read_storage(runs[scene])
    page = tmp_path / f"{scene}.html"
    replay = export_html(run, page, fps=fps, speed=speed)
    frames = expected_frames(RUN_SECONDS, fps, speed)
    assert replay.frame_count == frames and replay.warnings == []

    text = page.read_text(encoding="utf-8")
    assert not _EXTERNAL.search(text), f"external reference: {_EXTERNAL.search(text).group(0)!r}"
    commands, info = decode_page(text)
    assert animation_frames(commands) == {frames}, "keyframes per track"
    assert info["frames"] == frames and info["status"] == "complete"
    # each keyframe is the stored pose of the state it samples (three.js quaternions are
    # [x, y, z, w]: meshcat converts our matrices; compare as rotations of a vector)
    (anim,) = [c for c in commands if c["type"] == "set_animation"]
    track = {t["name"]: t["keys"] for t in anim["animations"][0]["clip"]["tracks"]}
    k, f = info["states"][-1], frames - 1
    assert np.allclose(track[".position"][f]["value"], run.trajectory.x[k, 0], atol=1e-12)
    qx, qy, qz, qw = track[".quaternion"][f]["value"]
    expected = transform_from_pose(run.trajectory.x[k, 0], run.trajectory.q[k, 0])[:3, :3]
    assert np.allclose(transform_from_pose(np.zeros(3), [qw, qx, qy, qz])[:3, :3], expected, atol=1e-9)

    # a bare viewer (no commands) is the "nothing drawn" reference
    empty = tmp_path / "empty.html"
    empty.write_text(viewer_html([]), encoding="utf-8")
    url = page.resolve().as_uri()
    procs = {
        "dom": _chromium(url, tmp_path / "profile-dom"),
        "shot": _chromium(url, tmp_path / "profile-shot", screenshot=tmp_path / "shot.png"),
        "empty": _chromium(empty.resolve().as_uri(), tmp_path / "profile-empty", screenshot=tmp_path / "empty.png"),
    }
    dom = _finish(procs["dom"])
    for key in ("shot", "empty"):
        _finish(procs[key])
    state = json.loads(re.search(r'<pre id="dojo-viewer-state"[^>]*>(.*?)</pre>', dom, re.S).group(1))
    assert state["webgl"] is True, state
    assert state["applied"] == len(commands), "the page applied every command"
    assert state["frames"] == frames, f"the viewer loaded {state['frames']} frames, expected {frames}"
    assert state["tracks"] == run.trajectory.x.shape[1], "one animation clip per body"
    assert state["duration"] == pytest.approx((frames - 1) / fps)

    shot, blank = _image(tmp_path / "shot.png"), _image(tmp_path / "empty.png")
    assert shot.shape == (600, 800, 3)
    assert shot.std() > 0.05, f"a uniform page (pixel std {shot.std():.3f})"
    changed = float(np.mean(np.abs(shot - blank).max(axis=-1) > PIXEL_DIFF))
    assert changed > SCENE_PIXEL_FRACTION, f"only {changed:.2%} of the pixels differ from the empty viewer"
    body = float(np.mean(_orange(shot)))
    assert body > BODY_PIXEL_FRACTION, f"the body covers {body:.2%} of the screenshot"
    assert np.mean(_orange(blank)) < 0.1 * BODY_PIXEL_FRACTION, "the empty viewer has no orange"


# ------------------------------------------------------------------ the meshcat server


def _listening_addresses(pid: int) -> set[str]:
    """Local addresses of the TCP sockets process ``pid`` listens on (Linux /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    addresses = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # state 0A: LISTEN
                raw = fields[1].split(":")[0]
                if width == 8:
                    addresses.add(".".join(str(int(raw[i:i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    addresses.add(raw)
    return addresses


def test_meshcat_server_listens_on_loopback_and_holds_the_stored_transforms(runs):
    """Bodies and frame-k transforms read back from the server's own scene tree (its
    get_scene export, the same tree it replays to every browser that connects)."""
    run = read_storage(runs["box"])
    mech = mechanism_from_run(run)
    with start_server() as server:
        assert server.web_url.startswith(f"http://{LOOPBACK}:") and server.zmq_url.startswith(f"tcp://{LOOPBACK}:")
        if Path(f"/proc/{server.process.pid}/net/tcp").exists():
            assert _listening_addresses(server.process.pid) == {LOOPBACK}, "the server listens beyond loopback"
        vis = server.visualizer
        replay = load_run(vis, mech, run, ReplayOptions(fps=30.0, contacts=True))
        assert replay.frame_count == expected_frames(RUN_SECONDS, 30.0, 1.0)
        k = 37
        sent = set_frame(vis, mech, run.trajectory, k)
        page = vis.static_html()
        process = server.process
    assert process.poll() is not None, "the server stopped"

    tree = [umsgpack.unpackb(base64.b64decode(m)) for m in re.findall(r'base64,([A-Za-z0-9+/=]+)"', page)]
    objects = {c["path"] for c in tree if c["type"] == "set_object"}
    transforms = {c["path"]: np.array(c["matrix"]).reshape(4, 4).T for c in tree if c["type"] == "set_transform"}
    assert "/meshcat/dojo/world/ground" in objects
    for b, body in enumerate(mech.bodies):
        path = "/meshcat/" + body_path(body.name)
        assert any(p.startswith(path + "/shape/") for p in objects), f"no shape object for {body.name}"
        expected = transform_from_pose(run.trajectory.x[k, b], run.trajectory.q[k, b])
        error = np.max(np.abs(transforms[path] - expected))
        assert error < TRANSFORM_TOL, f"{body.name}: transform off by {error:.2e}"
        assert np.max(np.abs(sent[b] - expected)) < TRANSFORM_TOL
    assert sum(p.startswith("/meshcat/dojo/contacts/box/") for p in objects) == 8, "eight corner spheres"


# ------------------------------------------------------------------ dojo replay


def test_replay_html_cli_writes_a_page(runs, tmp_path):
    page = tmp_path / "anim.html"
    res = invoke("replay", runs["pendulum"], "--html", page, "--fps", 30, "--speed", 2, "--joints", "--frames")
    assert res.exit_code == 0, res.output
    assert f"wrote {page}" in res.stdout and "16 frames" in res.stdout, res.stdout
    commands, info = decode_page(page.read_text(encoding="utf-8"))
    assert animation_frames(commands) == {expected_frames(RUN_SECONDS, 30.0, 2.0)} and info["speed"] == 2.0


def test_replay_cli_input_and_storage_errors(runs, tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    res = invoke("replay", junk, "--html", tmp_path / "a.html")
    assert res.exit_code == 3 and "junk.h5" in res.stderr and "Traceback" not in res.output, res.output
    res = invoke("replay", tmp_path / "absent.h5", "--html", tmp_path / "a.html")
    assert res.exit_code == 3 and "no such file" in res.stderr, res.output
    res = invoke("replay", runs["pendulum"], "--html", tmp_path / "a.html", "--camera", "1,2")
    assert res.exit_code == 2 and "--camera" in res.stderr, res.output
    res = invoke("replay", runs["pendulum"], "--html", tmp_path / "a.html", "--fps", 0)
    assert res.exit_code == 2 and "--fps" in res.stderr, res.output
    res = invoke("replay", runs["pendulum"], "--html", tmp_path / "no-such-folder" / "a.html")
    assert res.exit_code == 3 and "cannot write" in res.stderr, res.output


def test_replay_of_an_interrupted_run_says_so(tmp_path):
    run = read_storage(write_run(
        tmp_path / "part.h5", SHAPES_SCENE.replace("tri.obj", "gone.obj"),
        np.zeros((8, 8, 3)) + np.arange(8)[:, None, None] * 0.01, np.tile([1.0, 0, 0, 0], (8, 8, 1)), stop="interrupt",
    ))
    assert run.status == "interrupted" and run.steps_completed == 7
    page = tmp_path / "part.html"
    res = invoke("replay", run.path, "--html", page)
    assert res.exit_code == 0, res.output
    assert "interrupted after 7 steps" in res.stderr, res.stderr
    assert "gone.obj" in res.stderr and "placeholder" in res.stderr, "the missing meshes are warnings"
    commands, info = decode_page(page.read_text(encoding="utf-8"))
    assert info["status"] == "interrupted" and info["steps_completed"] == 7
    assert animation_frames(commands) == {expected_frames(0.07, 60.0, 1.0)}


def test_replay_serves_on_loopback_without_blocking(runs):
    res = invoke("replay", runs["pendulum"], "--no-wait", "--contacts", "--joints", "--frames", "--camera", "2,2,1")
    assert res.exit_code == 0, res.output
    url = re.search(r"meshcat: (\S+)", res.stdout)
    assert url and url.group(1).startswith(f"http://{LOOPBACK}:"), res.stdout
    assert "61 frames at 60 fps" in res.stdout


def test_replay_ctrl_c_while_the_scene_is_sent_exits_130_as_while_serving(runs, monkeypatch):
    """One user action, one exit code (issue 30): Ctrl-C while load_run sends the scene exits
    130 and says "stopped", as Ctrl-C while serving does (tests/test_readme.py)."""
    import dojo_cli.viz.meshcat_scene as meshcat_scene

    def interrupted_load(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(meshcat_scene, "load_run", interrupted_load)
    res = invoke("replay", runs["pendulum"], "--no-wait")
    assert res.exit_code == 130 and "stopped" in res.stdout, res.output


# ------------------------------------------------------------------ the page's player bar

# A scrubbed frame's pose against the stored state: keyframe times are float32 in three.js,
# so a frame time lands a hair off its key (the pose is interpolated by ~1e-7 of a step).
SCRUB_POSITION_TOL = 1e-5


def test_the_pages_player_plays_pauses_scrubs_and_sets_the_speed_offline(runs, tmp_path):
    """The standalone page's bar, driven in headless Chromium as a user would (the button
    clicked, the slider dragged, the speed picked; networking off, the page from file://):
    pause holds the picture; the slider shows the stored state of the frame it is dragged
    to and the simulated time; the speed is the animation's time scale; play goes on from
    the scrubbed time, and from the start once at the end."""
    from tests.viz.browser import Chromium, chromium_missing

    if why := chromium_missing():
        pytest.skip(why)
    fps = 30.0
    run = read_storage(runs["box"])
    page = tmp_path / "box.html"
    export_html(run, page, fps=fps)
    _, info = decode_page(page.read_text(encoding="utf-8"))
    frames = info["frames"]
    duration = (frames - 1) / fps
    browser = Chromium(page.resolve().as_uri(), tmp_path / "profile")
    try:
        browser.wait_for("window.dojoPlayer !== undefined")
        assert browser.evaluate("document.getElementById('dojo-player').hidden") is False
        assert browser.evaluate("parseFloat(document.getElementById('dojo-time').max)") == pytest.approx(duration)
        now = "dojoPlayer.now()"

        # it plays once on load (1 s): at its end the bar stays at the end, with the picture
        browser.wait_for("!viewer.animator.playing", timeout=CHROMIUM_TIMEOUT)
        browser.wait_for(f"parseFloat(document.getElementById('dojo-time').value) === {duration!r}")
        assert browser.evaluate("document.getElementById('dojo-play').getAttribute('aria-label')") == "play"
        # (a click and what it did read in one evaluation: a loaded machine may take a second
        # between two, and the clip lasts one)
        click = "(function () { document.getElementById('dojo-play').click(); return [viewer.animator.playing, dojoPlayer.now()]; })()"
        playing, at = browser.evaluate(click)
        assert playing is True and at < 0.5 * duration, f"play at the end starts again from the start, not {at}"
        playing, paused = browser.evaluate(click)
        assert playing is False
        time.sleep(0.3)
        assert browser.evaluate(now) == paused, "paused: the time holds"

        f = frames // 2
        a = f / fps
        browser.evaluate(f"var s = document.getElementById('dojo-time'); s.value = '{a!r}'; "
                         "s.dispatchEvent(new Event('input')); 1")
        position = browser.evaluate("viewer.scene_tree.find(['meshcat', 'dojo', 'bodies', 'box']).object.position.toArray()")
        k = info["states"][f]
        assert np.max(np.abs(np.array(position) - run.trajectory.x[k, 0])) < SCRUB_POSITION_TOL, (position, run.trajectory.x[k, 0])
        clock = browser.evaluate("document.getElementById('dojo-clock').textContent")
        assert clock == f"t = {run.trajectory.time[0] + a * info['speed']:.3f} s", clock

        browser.evaluate("var v = document.getElementById('dojo-speed'); v.value = '2'; "
                         "v.dispatchEvent(new Event('change')); 1")
        assert browser.evaluate("viewer.animator.mixer.timeScale") == 2.0
        playing, at = browser.evaluate(click)
        assert playing is True and a - 1e-9 <= at < a + 0.5 * duration, f"play goes on from the scrubbed time, not {at}"
        browser.wait_for(f"dojoPlayer.now() > {a + 0.05!r}", timeout=CHROMIUM_TIMEOUT)
    finally:
        browser.quit()


def test_the_panels_checkboxes_hide_the_contacts_and_each_arrow_kind(runs, tmp_path):
    """meshcat's panel of the page gets three checkboxes at its top level, "contacts", "force
    arrows" and "velocity arrows"; clicking one hides its whole subtree (no mesh under it is
    drawn) and unticks that node's own checkbox in the scene tree; clicking again shows it."""
    from tests.viz.browser import Chromium, chromium_missing

    if why := chromium_missing():
        pytest.skip(why)
    page = tmp_path / "box.html"
    export_html(read_storage(runs["box"]), page, options=ReplayOptions(fps=30.0, contacts=True, arrows=("forces", "velocities")))
    browser = Chromium(page.resolve().as_uri(), tmp_path / "profile")
    try:
        browser.wait_for("window.dojoPlayer !== undefined")
        assert {"contacts", "force arrows", "velocity arrows"} <= set(browser.evaluate("Object.keys(viewer.gui_controllers)"))
        for label, path in [("contacts", "contacts"), ("force arrows", "arrows/forces"), ("velocity arrows", "arrows/velocities")]:
            segments = json.dumps(["meshcat", "dojo", *path.split("/")])
            state = (f"(function () {{ var node = viewer.scene_tree.find({segments}), shown = 0;"
                     " node.object.traverseVisible(function (o) { if (o.isMesh) shown++; });"
                     " return [node.object.visible, node.vis_controller.domElement.querySelector('input').checked, shown]; })()")
            click = f"viewer.gui_controllers[{json.dumps(label)}].domElement.querySelector('input').click(); 1"
            visible, ticked, shown = browser.evaluate(state)
            assert visible and ticked and shown > 0, (label, visible, ticked, shown)
            browser.evaluate(click)
            assert browser.evaluate(state) == [False, False, 0], f"{label}: unticked, nothing under {path} drawn"
            browser.evaluate(click)
            assert browser.evaluate(state) == [True, True, shown], f"{label}: ticked again"
    finally:
        browser.quit()
