"""Dojo's visualize(color=, name=), set_light! and set_surface! in the replay (docs/replay.md):
what lands in meshcat's scene tree, through the command line and the Python API."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.io.storage import read_storage
from dojo_cli.viz.meshcat_scene import (
    BODY_PALETTE, VIEWER_SCRIPT, ReplayOptions, export_html, load_run, mechanism_from_run, recording_visualizer,
)
from dojo_cli.viz.scenery import DOJO_AMBIENT, DOJO_FILL, DOJO_POINT, SURFACE_NODE, Light, Surface, set_light
from tests.cli.test_cli import invoke
from tests.viz.test_replay import buffer_geometry_arrays, decode_page


def _hex(rgb) -> int:
    return (round(255 * rgb[0]) << 16) | (round(255 * rgb[1]) << 8) | round(255 * rgb[2])


@pytest.fixture(scope="module")
def double_pendulum_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "dp.h5"
    res = invoke("simulate", "double_pendulum", "-o", out, "--steps", 10, "-q")
    assert res.exit_code == 0, res.output
    return out


def _body_objects(commands, root):
    return [c for c in commands if c["type"] == "set_object" and c["path"].startswith(f"{root}/bodies/")]


def test_replay_colour_and_name_overrides(double_pendulum_run, tmp_path):
    """Dojo's visualize(color=, name=): --color paints every body's shape in that colour (two
    bodies that the palette draws in two colours), --name hangs the whole replay, bodies,
    world and animation tracks, from /meshcat/NAME instead of /meshcat."""
    page = tmp_path / "p.html"
    res = invoke("replay", double_pendulum_run, "--html", page)
    assert res.exit_code == 0, res.output
    commands, _ = decode_page(page.read_text(encoding="utf-8"))
    plain = {c["object"]["materials"][0]["color"] for c in _body_objects(commands, "/meshcat/dojo")}
    assert plain == {BODY_PALETTE[0], BODY_PALETTE[1]}, plain

    res = invoke("replay", double_pendulum_run, "--html", page, "--color", "0.2,0.4,0.6,0.5", "--name", "robot")
    assert res.exit_code == 0, res.output
    commands, _ = decode_page(page.read_text(encoding="utf-8"))
    bodies = _body_objects(commands, "/meshcat/robot/dojo")
    assert len(bodies) == 2
    for c in bodies:
        material = c["object"]["materials"][0]
        assert material["color"] == _hex((0.2, 0.4, 0.6)) and material["opacity"] == 0.5, c["path"]
    paths = [c["path"] for c in commands if "path" in c and c["path"].startswith("/meshcat/")]
    assert all(p.startswith("/meshcat/robot/") for p in paths), sorted({p for p in paths if not p.startswith("/meshcat/robot/")})
    assert any(p == "/meshcat/robot/dojo/world/ground" for p in paths)
    (anim,) = [c for c in commands if c["type"] == "set_animation"]
    assert {a["path"] for a in anim["animations"]} == {"/meshcat/robot/dojo/bodies/link1", "/meshcat/robot/dojo/bodies/link2"}

    # the Python API: the same options
    run = read_storage(double_pendulum_run)
    api_page = tmp_path / "api.html"
    export_html(run, api_page, options=ReplayOptions(color=(0.2, 0.4, 0.6, 0.5), name="robot"))
    api = decode_page(api_page.read_text(encoding="utf-8"))[0]
    assert [(c["type"], c.get("path")) for c in api] == [(c["type"], c.get("path")) for c in commands]
    colour = lambda objects: [(c["object"]["materials"][0]["color"], c["object"]["materials"][0]["opacity"])  # noqa: E731
                              for c in objects]
    assert colour(_body_objects(api, "/meshcat/robot/dojo")) == colour(bodies)

    for flag, value in (("--color", "1,2,3"), ("--color", "red"), ("--name", "a/b"), ("--name", "")):
        res = invoke("replay", double_pendulum_run, "--html", page, flag, value)
        assert res.exit_code == 2 and flag in res.stderr, (flag, value, res.output)


def _default_lights() -> set[str]:
    """The lights meshcat's viewer puts in its scene (its script's add_default_scene_elements)."""
    import re

    script = VIEWER_SCRIPT.read_text(encoding="utf-8")
    return set(re.findall(r'set_object\(\["Lights","(\w+)"\]', script))


def test_set_light_sets_the_viewers_own_lights(double_pendulum_run, tmp_path):
    """Dojo's set_light!: the intensities of the ambient, fill and one point light that
    meshcat's viewer creates (the names are the viewer script's own), Dojo's defaults with
    'dojo', the negative side's point light with direction=negative."""
    assert {"AmbientLight", "FillLight", "PointLightPositiveX", "PointLightNegativeX"} <= _default_lights()
    vis, recorder = recording_visualizer()
    set_light(vis)
    props = {(c["path"], c["property"]): c["value"] for c in recorder.decoded() if c["type"] == "set_property"}
    assert props == {
        ("/Lights/AmbientLight/<object>", "intensity"): DOJO_AMBIENT,
        ("/Lights/FillLight/<object>", "intensity"): DOJO_FILL,
        ("/Lights/PointLightPositiveX/<object>", "intensity"): DOJO_POINT,
        ("/Lights/PointLightPositiveX/<object>", "castShadow"): True,
    }
    page = tmp_path / "l.html"
    res = invoke("replay", double_pendulum_run, "--html", page, "--light", "ambient=0.5,direction=negative,shadow=false")
    assert res.exit_code == 0, res.output
    commands, _ = decode_page(page.read_text(encoding="utf-8"))
    props = {(c["path"], c["property"]): c["value"] for c in commands if c["type"] == "set_property"
             and c["path"].startswith("/Lights/")}
    assert props[("/Lights/AmbientLight/<object>", "intensity")] == 0.5
    assert props[("/Lights/PointLightNegativeX/<object>", "intensity")] == DOJO_POINT
    assert props[("/Lights/PointLightNegativeX/<object>", "castShadow")] is False
    assert not any(p[0].startswith("/Lights/PointLightPositiveX") for p in props)
    for bad in ("ambient=-1", "direction=up", "glow=1", "ambient=a"):
        res = invoke("replay", double_pendulum_run, "--html", page, "--light", bad)
        assert res.exit_code == 2 and "--light" in res.stderr, (bad, res.output)
    with pytest.raises(dojo.DojoError, match="ambient"):
        set_light(vis, Light(ambient=float("nan")))


def _surface_arrays(commands, root="/meshcat/dojo"):
    (obj,) = [c["object"] for c in commands if c["type"] == "set_object" and c["path"] == f"{root}/{SURFACE_NODE}"]
    vertices, faces = buffer_geometry_arrays(obj["geometries"][0])
    return vertices.astype(float), faces.astype(int), obj["materials"][0]


def test_set_surface_draws_the_height_field(double_pendulum_run):
    """Dojo's set_surface!: z = f(x, y) sampled on an n x n grid over the limits, every vertex
    on the function (float32), two triangles a cell facing up; as an expression or a Python
    callable, which give the same mesh."""
    run = read_storage(double_pendulum_run)
    mech = mechanism_from_run(run)
    expression = "0.1*sin(2*x)*cos(y) - 0.05"
    got = []
    for f in (expression, lambda x, y: 0.1 * np.sin(2 * x) * np.cos(y) - 0.05):
        vis, recorder = recording_visualizer()
        surface = Surface(f, xlims=(-1.0, 1.0), ylims=(-2.0, 3.0), color=(0.1, 0.2, 0.3), n=21)
        load_run(vis, mech, run, ReplayOptions(surface=surface), play=False)
        vertices, faces, material = _surface_arrays(recorder.decoded())
        got.append((vertices, faces))
        assert vertices.shape == (21 * 21, 3) and faces.shape == (2 * 20 * 20, 3)
        x, y, z = vertices.T
        np.testing.assert_allclose(z, 0.1 * np.sin(2 * x) * np.cos(y) - 0.05, atol=1e-6)  # float32
        assert (x.min(), x.max(), y.min(), y.max()) == pytest.approx((-1.0, 1.0, -2.0, 3.0), abs=1e-6)
        a, b, c = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
        assert (np.cross(b - a, c - a)[:, 2] > 0).all(), "every triangle faces up"
        assert material["color"] == _hex((0.1, 0.2, 0.3))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])


def test_surface_from_the_command_line(double_pendulum_run, tmp_path):
    """--surface EXPR with --surface-limits and --surface-color; refused (exit 2, naming the
    flag): what is not an expression in x and y (no names beyond them, no attributes, no
    calls but numpy's elementary functions), a function not finite on the domain."""
    page = tmp_path / "s.html"
    res = invoke("replay", double_pendulum_run, "--html", page, "--surface", "0.2*exp(-(x**2 + y**2))",
                 "--surface-limits", "-1,1,-1,1", "--surface-color", "0.3,0.6,0.3,0.8", "--name", "terrain")
    assert res.exit_code == 0, res.output
    commands, _ = decode_page(page.read_text(encoding="utf-8"))
    (obj,) = [c["object"] for c in commands if c["type"] == "set_object" and c["path"] == f"/meshcat/terrain/dojo/{SURFACE_NODE}"]
    assert obj["materials"][0]["color"] == _hex((0.3, 0.6, 0.3)) and obj["materials"][0]["opacity"] == 0.8
    for bad, what in (("__import__('os').system('true')", "not allowed"), ("x.real", "not allowed"),
                      ("z + 1", "not allowed"), ("log(x)", "not finite"), ("sin(", "not an expression"),
                      ("open('f')", "not allowed")):
        res = invoke("replay", double_pendulum_run, "--html", page, "--surface", bad, "--surface-limits", "-1,1,-1,1")
        assert res.exit_code == 2 and "--surface" in res.stderr and what in res.stderr, (bad, res.output)
    res = invoke("replay", double_pendulum_run, "--html", page, "--surface-limits", "-1,1,-1,1")
    assert res.exit_code == 2 and "need --surface" in res.stderr, res.output
    res = invoke("replay", double_pendulum_run, "--html", page, "--surface", "x", "--surface-limits", "1,-1,0,1")
    assert res.exit_code == 2 and "--surface-limits" in res.stderr, res.output
