"""dojo draw and dojo plot: PNGs of the right size, not blank, with the right numbers in them."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.viz.pictures import draw_scene, plot_run

runner = CliRunner()
# A blank white PNG has pixel standard deviation 0; a drawing has far more.
MIN_PIXEL_STD = 0.05


def not_blank(png, size=None):
    img = mpimg.imread(png)[..., :3]
    if size is not None:
        assert img.shape[1] == size[0] and img.shape[0] == size[1], img.shape
    assert np.std(img) > MIN_PIXEL_STD, f"image looks blank: std {np.std(img):.3f}"
    return img


def test_draw_pendulum_positions(tmp_path):
    mech = dojo.load_scene("pendulum")
    pic = draw_scene(mech, tmp_path / "p.png", size=(640, 480))
    not_blank(tmp_path / "p.png", (640, 480))
    assert np.allclose(pic.joint_positions[0], [0, 0, 1.1], atol=1e-12), "the hinge at its pivot"
    z = dojo.initial_state(mech).reshape(1, 13)
    assert np.allclose(pic.body_positions[0], z[0, :3], atol=1e-12), "the link where the initial state puts it"
    assert pic.joints[0].family == "revolute" and np.allclose(np.abs(pic.joints[0].axis), [1, 0, 0])


def test_draw_fourbar_and_contacts(tmp_path):
    pic = draw_scene(dojo.load_scene("fourbar"), tmp_path / "f.png")
    not_blank(tmp_path / "f.png")
    assert len(pic.joints) == 5, "five joint markers (the loop joint included)"
    box = draw_scene(dojo.load_scene("box"), tmp_path / "b.png")
    assert len(box.contacts) == 8 and box.ground
    corners = np.array([c.position for c in box.contacts])
    assert np.allclose(np.sort(corners[:, 2]), np.repeat([0.75, 1.25], 4)), "corners of the cube at z 1 +- 0.25"


def test_draw_cli(tmp_path):
    out = tmp_path / "d.png"
    res = runner.invoke(app, ["draw", "cartpole", "--png", str(out), "--size", "500,400", "--labels"])
    assert res.exit_code == 0, res.output
    not_blank(out, (500, 400))
    res = runner.invoke(app, ["draw", "no_such_scene", "--png", str(out)])
    assert res.exit_code == 2 and "no_such_scene" in res.stderr


def test_plot_numbers_are_the_stored_ones(tmp_path):
    run_path = tmp_path / "p.h5"
    assert runner.invoke(app, ["simulate", "pendulum", "-o", str(run_path), "--steps", "150", "-q"]).exit_code == 0
    run = read_storage(run_path)
    plot = plot_run(run, ["minimal", "velocity", "iterations"], tmp_path / "plot.png")
    not_blank(tmp_path / "plot.png")
    s = plot.get("minimal")
    assert np.array_equal(s.values, run.minimal_q[:, 0]) and np.array_equal(s.time, run.time)
    assert np.array_equal(plot.get("velocity").values, run.minimal_v[:, 0])
    assert np.array_equal(plot.get("iterations").values, run.solver["iterations"])


def test_plot_cli_csv_and_errors(tmp_path):
    run_path = tmp_path / "b.h5"
    assert runner.invoke(app, ["simulate", "box", "-o", str(run_path), "--steps", "60", "-q"]).exit_code == 0
    png, csv = tmp_path / "b.png", tmp_path / "b.csv"
    res = runner.invoke(app, ["plot", str(run_path), "--png", str(png), "-q", "position", "-q", "distance", "--csv", str(csv)])
    assert res.exit_code == 0, res.output
    not_blank(png)
    run = read_storage(run_path)
    header = csv.read_text().splitlines()[0].split(",")
    table = np.genfromtxt(csv, delimiter=",", skip_header=1)
    z_col = [i for i, h in enumerate(header) if h.endswith(".z")][0]
    stored_z = run.x[:, 0, 2]
    assert np.allclose(table[: len(stored_z), z_col], stored_z), "the CSV holds the stored heights"
    res = runner.invoke(app, ["plot", str(run_path), "--png", str(png), "-q", "energy"])
    assert res.exit_code == 2 and "position" in res.stderr, "unknown quantity names the choices"
    res = runner.invoke(app, ["plot", str(run_path), "--png", str(png), "-q", "position", "--body", "nobody"])
    assert res.exit_code == 2 and "nobody" in res.stderr
    junk = tmp_path / "junk.h5"
    junk.write_text("x")
    assert runner.invoke(app, ["plot", str(junk), "--png", str(png)]).exit_code == 3


def test_plot_coordinate_selection_and_draw_view(tmp_path):
    run_path = tmp_path / "c.h5"
    assert runner.invoke(app, ["simulate", "cartpole", "-o", str(run_path), "--steps", "30", "-q"]).exit_code == 0
    run = read_storage(run_path)
    names = run.minimal_q_names
    plot = plot_run(run, ["minimal"], tmp_path / "m.png", coordinates=[names[1]])
    assert [s.label for s in plot.series] == [names[1]]
    assert np.array_equal(plot.series[0].values, run.minimal_q[:, 1])
    res = runner.invoke(app, ["plot", str(run_path), "--png", str(tmp_path / "x.png"), "-q", "minimal", "--coordinate", "nope"])
    assert res.exit_code == 2 and "nope" in res.stderr
    a, b = tmp_path / "v1.png", tmp_path / "v2.png"
    assert runner.invoke(app, ["draw", "cartpole", "--png", str(a), "--view", "20,-60"]).exit_code == 0
    assert runner.invoke(app, ["draw", "cartpole", "--png", str(b), "--view", "80,10"]).exit_code == 0
    assert not np.array_equal(mpimg.imread(a), mpimg.imread(b)), "the view changes the picture"
    res = runner.invoke(app, ["draw", "cartpole", "--png", str(a), "--view", "oops"])
    assert res.exit_code == 2 and "--view" in res.stderr
