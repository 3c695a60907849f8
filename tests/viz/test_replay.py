"""Replay: standalone HTML in a real headless Chromium, the meshcat server's scene tree, the CLI."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
import umsgpack
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.io.storage import StorageWriter, read_storage
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec_from_string
from dojo_cli.viz.meshcat_scene import decode_commands, replay_commands, transform

runner = CliRunner()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TRANSFORM_TOL = 1e-9


def simulate(tmp_path, scene, steps):
    out = tmp_path / f"{scene}.h5"
    res = runner.invoke(app, ["simulate", scene, "-o", str(out), "--steps", str(steps), "-q", "--force"])
    assert res.exit_code == 0, res.output
    return out


def screenshot(html, png, tmp_path):
    """Render a local page in headless Chromium with networking disabled (software WebGL)."""
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
        "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--proxy-server=127.0.0.1:9", f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=800,600", "--virtual-time-budget=4000", f"--screenshot={png}", f"file://{html}",
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    import matplotlib.image as mpimg

    return mpimg.imread(png)[..., :3]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed: .ci/run installs Debian's chromium package")
@pytest.mark.parametrize("scene,steps", [("pendulum", 100), ("box", 100)])
def test_html_export_renders_in_chromium(tmp_path, scene, steps):
    run = simulate(tmp_path, scene, steps)
    page = tmp_path / "anim.html"
    res = runner.invoke(app, ["replay", str(run), "--html", str(page), "--fps", "30", "--contacts"])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    # self-contained: nothing loaded from elsewhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "a resource outside the file"
    # the animation has one frame per 1/fps s of the run: 1 s at 30 fps -> 31 frames
    info = json.loads(re.search(r'<script id="dojo-info" type="application/json">(.*?)</script>', text).group(1))
    assert info["frames"] == 31
    anims = [c for c in decode_commands(text) if c["type"] == "set_animation"]
    assert len(anims) == 1
    times = {len(track["keys"]) for a in anims[0]["animations"] for track in a["clip"]["tracks"]}
    assert times == {31}, f"frames per track {times}"
    # a real browser draws it: not a blank page
    img = screenshot(page, tmp_path / "shot.png", tmp_path)
    blank = screenshot(_blank(tmp_path), tmp_path / "blank.png", tmp_path)
    assert img.shape[:2] == (600, 800)
    assert np.std(img) > 0.05 and np.abs(img - blank).mean() > 0.05, "the canvas is drawn"


def _blank(tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<html><body></body></html>")
    return page


def test_meshcat_server_scene_tree(tmp_path):
    """A meshcat server on loopback gets every body, and the transforms of a chosen frame
    equal the storage's (read back from the server's own tree via its static export)."""
    meshcat = pytest.importorskip("meshcat")
    stored = read_storage(simulate(tmp_path, "fourbar", 50))
    mech = build_mechanism(load_scene_spec_from_string(stored.scene_yaml))
    vis = meshcat.Visualizer()  # starts the server, bound to 127.0.0.1
    try:
        assert vis.url().startswith("http://127.0.0.1:"), vis.url()
        _, scene, _ = replay_commands(mech, stored.time, stored.x, stored.q, vis=vis, fps=30)
        k = 37
        scene.set_state(stored.x[k], stored.q[k])
        # the server's own export of its scene tree (its page quotes data URLs with ")
        tree = [umsgpack.unpackb(base64.b64decode(m)) for m in re.findall(r'base64,([A-Za-z0-9+/=]+)"', vis.static_html())]
        objects = {c["path"] for c in tree if c["type"] == "set_object"}
        transforms = {c["path"]: np.array(c["matrix"]).reshape(4, 4).T for c in tree if c["type"] == "set_transform"}
        for i, body in enumerate(mech.bodies):
            path = f"/meshcat/dojo/bodies/{body.name}"
            assert any(p.startswith(path + "/shape") for p in objects), f"no object for {body.name}"
            expected = transform(stored.x[k, i], stored.q[k, i])
            assert np.max(np.abs(transforms[path] - expected)) < TRANSFORM_TOL, body.name
    finally:
        proc = getattr(vis.window, "server_proc", None)
        if proc is not None:
            proc.kill()
            proc.wait(timeout=10)


def test_replay_cli_errors_and_interrupted_runs(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_text("nope")
    res = runner.invoke(app, ["replay", str(junk), "--html", str(tmp_path / "a.html")])
    assert res.exit_code == 3 and "junk.h5" in res.stderr
    res = runner.invoke(app, ["replay", str(simulate(tmp_path, "pendulum", 5)), "--html", str(tmp_path / "a.html"), "--camera", "1,2"])
    assert res.exit_code == 2 and "--camera" in res.stderr
    # an interrupted run: the writer stops after 7 steps
    full = read_storage(simulate(tmp_path, "pendulum", 20))
    part = tmp_path / "part.h5"
    with pytest.raises(KeyboardInterrupt):
        with StorageWriter(part, scene_yaml=full.scene_yaml, scene_name="pendulum", timestep=0.01, gravity=[0, 0, -9.81],
                           solver_options={}, integrator="x", body_names=full.body_names,
                           minimal_q_names=full.minimal_q_names, minimal_v_names=full.minimal_v_names,
                           input_dim=1, dojo_cli_version="test") as w:
            w.write_initial(0.0, full.x[0], full.q[0], full.v[0], full.omega[0], full.minimal_q[0], full.minimal_v[0])
            for k in range(1, 8):
                w.write_step(full.time[k], full.x[k], full.q[k], full.v[k], full.omega[k], full.minimal_q[k],
                             full.minimal_v[k], full.inputs[k - 1], iterations=1, residual=0.0, status="success")
            raise KeyboardInterrupt
    res = runner.invoke(app, ["replay", str(part), "--html", str(tmp_path / "p.html")])
    assert res.exit_code == 0, res.output
    assert "interrupted after 7 steps" in res.stderr
    assert (tmp_path / "p.html").stat().st_size > 100_000


def test_replay_serves_on_loopback(tmp_path):
    run = simulate(tmp_path, "pendulum", 10)
    res = runner.invoke(app, ["replay", str(run), "--no-wait", "--joints", "--frames"])
    assert res.exit_code == 0, res.output
    assert "meshcat: http://127.0.0.1:" in res.stdout


def test_replay_speed_camera_and_zoom(tmp_path):
    run = simulate(tmp_path, "pendulum", 100)  # 1 s
    page = tmp_path / "fast.html"
    res = runner.invoke(app, ["replay", str(run), "--html", str(page), "--fps", "30", "--speed", "2",
                              "--camera", "3,-2,1.5", "--zoom", "1.5"])
    assert res.exit_code == 0, res.output
    commands = decode_commands(page.read_text())
    anim = [c for c in commands if c["type"] == "set_animation"][0]
    assert len(anim["animations"][0]["clip"]["tracks"][0]["keys"]) == 16, "1 s at twice real time, 30 fps"
    props = {c["property"]: c["value"] for c in commands if c["type"] == "set_property"}
    assert props["position"] == [3.0, 1.5, 2.0] and props["zoom"] == 1.5, "z-up world -> meshcat's y-up camera"
