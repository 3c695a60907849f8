"""dojo draw and dojo plot: PNGs of the right size, not blank, with the right numbers in them."""

from __future__ import annotations

import csv as csv_module

import h5py
import matplotlib.image as mpimg
import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.commands import picture as picture_commands
from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.viz import pictures
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
    assert np.array_equal(s.values, run.trajectory.minimal_q[:, 0]) and np.array_equal(s.time, run.trajectory.time)
    assert np.array_equal(plot.get("velocity").values, run.trajectory.minimal_v[:, 0])
    assert np.array_equal(plot.get("iterations").values, run.trajectory.iterations)


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
    z_col = next(i for i, h in enumerate(header) if h.endswith(".z"))
    stored_z = run.trajectory.x[:, 0, 2]
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
    assert np.array_equal(plot.series[0].values, run.trajectory.minimal_q[:, 1])
    res = runner.invoke(app, ["plot", str(run_path), "--png", str(tmp_path / "x.png"), "-q", "minimal", "--coordinate", "nope"])
    assert res.exit_code == 2 and "nope" in res.stderr
    a, b = tmp_path / "v1.png", tmp_path / "v2.png"
    assert runner.invoke(app, ["draw", "cartpole", "--png", str(a), "--view", "20,-60"]).exit_code == 0
    assert runner.invoke(app, ["draw", "cartpole", "--png", str(b), "--view", "80,10"]).exit_code == 0
    assert not np.array_equal(mpimg.imread(a), mpimg.imread(b)), "the view changes the picture"
    res = runner.invoke(app, ["draw", "cartpole", "--png", str(a), "--view", "oops"])
    assert res.exit_code == 2 and "--view" in res.stderr


# ------------------------------------------------------------------ draw: geometry

# The built-in pendulum's initial hinge angle (its scene file), rad.
PENDULUM_ANGLE = 0.7854
# Joint points are sums of a few products of unit-size numbers: float rounding only.
_GEOMETRY_TOL = 1e-12
# Markers are antialiased and may sit under a translucent face: look for the marker's
# colour within this many pixels of its projected position, up to this RGB distance.
_MARKER_SEARCH_PX = 6
_MARKER_COLOR_TOL = 0.2


def rgb(hex_colour):
    return np.array([int(hex_colour[k : k + 2], 16) / 255.0 for k in (1, 3, 5)])


def colour_distance_near(img, pixel, colour):
    """Smallest RGB distance to ``colour`` within _MARKER_SEARCH_PX of ``pixel`` (column, row)."""
    col, row = (round(float(v)) for v in pixel)
    r = _MARKER_SEARCH_PX
    patch = img[max(row - r, 0) : row + r + 1, max(col - r, 0) : col + r + 1, :3]
    return float(np.min(np.linalg.norm(patch - colour, axis=-1)))


def test_pendulum_marker_and_body_where_the_physics_puts_them(tmp_path):
    png = tmp_path / "p.png"
    pic = draw_scene(dojo.load_scene("pendulum"), png)
    img = not_blank(png, pictures.DEFAULT_SCENE_SIZE)
    hinge = pic.joints[0]
    assert np.allclose(hinge.position, [0.0, 0.0, 1.1], atol=_GEOMETRY_TOL), f"hinge drawn at {hinge.position}"
    # Independent of the state code: the link's top end (0.5 m above its centre along its
    # z axis) stays on the pivot, the link turned by the hinge angle about +x.
    t = PENDULUM_ANGLE
    expected = [0.0, 0.5 * np.sin(t), 1.1 - 0.5 * np.cos(t)]
    assert np.allclose(pic.bodies[0].position, expected, atol=_GEOMETRY_TOL), f"centre drawn at {pic.bodies[0].position}"
    red = rgb(pictures._FAMILY_STYLE["revolute"]["color"])
    d = colour_distance_near(img, hinge.pixel, red)
    assert d < _MARKER_COLOR_TOL, f"no revolute marker colour at the hinge's pixel {hinge.pixel} (distance {d:.2f})"
    far = colour_distance_near(img, pic.bodies[0].pixel, red)
    assert far > _MARKER_COLOR_TOL, f"revolute colour also at the link's centre (distance {far:.2f}): marker check is blind"
    assert np.hypot(*(hinge.pixel - pic.bodies[0].pixel)) > 50, "hinge and centre project to distinct pixels"


def test_override_moves_the_drawing(tmp_path):
    mech = dojo.load_scene("pendulum", ["joints.hinge.parent_vertex=[0, 0, 2]"])
    pic = draw_scene(mech, tmp_path / "p.png")
    t = PENDULUM_ANGLE
    assert np.allclose(pic.joint_positions[0], [0.0, 0.0, 2.0], atol=_GEOMETRY_TOL)
    assert np.allclose(pic.body_positions[0], [0.0, 0.5 * np.sin(t), 2.0 - 0.5 * np.cos(t)], atol=_GEOMETRY_TOL)


def test_fourbar_joints_close_the_loop(tmp_path):
    mech = dojo.load_scene("fourbar")
    png = tmp_path / "f.png"
    pic = draw_scene(mech, png, labels=True)
    img = not_blank(png)
    assert [j.name for j in pic.joints] == ["j1", "j2", "j3", "j4", "j5"]
    assert {j.family for j in pic.joints} == {"revolute"}
    # Every joint's point on its parent must be the child's joint point (revolute joints
    # hold all three translations), the loop joint j5 included.
    for j, drawn in zip(mech.joints, pic.joints):
        child = pic.bodies[j.child]
        child_point = child.position + child.rotation @ j.child_vertex
        assert np.allclose(drawn.position, child_point, atol=1e-6), f"{j.name}: parent point {drawn.position}, child {child_point}"
        assert np.allclose(np.abs(drawn.axis), [1.0, 0.0, 0.0], atol=_GEOMETRY_TOL), f"{j.name}: axis {drawn.axis}"
    p, a, c = (pic.joints[k].position for k in (0, 2, 4))
    b = pic.joints[3].position
    sides = [np.linalg.norm(u - v) for u, v in ((p, a), (a, c), (c, b), (b, p))]
    assert np.allclose(sides, 1.0, atol=1e-6), f"rhombus sides {sides}"
    red = rgb(pictures._FAMILY_STYLE["revolute"]["color"])
    for j in pic.joints:
        d = colour_distance_near(img, j.pixel, red)
        assert d < _MARKER_COLOR_TOL, f"{j.name}: no marker at pixel {j.pixel} (distance {d:.2f})"


ZOO = """\
name: zoo
timestep: 0.01
bodies:
  - {name: cube, mass: 1, shape: {type: box, size: [0.2, 0.2, 0.2], color: [0.6, 0.6, 0.6]}}
  - {name: ball, mass: 1, shape: {type: sphere, radius: 0.1, color: [0.6, 0.6, 0.6]}}
  - {name: can, mass: 1, shape: {type: cylinder, radius: 0.1, height: 0.3, position_offset: [0, 0, 0.1], color: [0.6, 0.6, 0.6]}}
  - {name: pill, mass: 1, shape: {type: capsule, radius: 0.05, height: 0.2, orientation_offset: [0.7071068, 0.7071068, 0, 0], color: [0.6, 0.6, 0.6]}}
  - {name: tip, mass: 1, shape: {type: pyramid, width: 0.2, height: 0.3, color: [0.6, 0.6, 0.6]}}
  - {name: part, mass: 1, inertia: [0.01, 0.01, 0.01], shape: {type: mesh, file: part.obj, scale: 2}}
  - {name: marker, mass: 1, inertia: [0.01, 0.01, 0.01], shape: {type: frame}}
joints:
  - {name: weld, type: fixed, parent: origin, child: cube, parent_vertex: [0, 0, 1]}
  - {name: slide, type: prismatic, parent: cube, child: ball, axis: [1, 0, 0], parent_vertex: [0.5, 0, 0]}
  - {name: knuckle, type: spherical, parent: cube, child: can, parent_vertex: [0, 0.5, 0]}
  - {name: hinge, type: revolute, parent: cube, child: pill, axis: [0, 1, 0], parent_vertex: [-0.5, 0, 0]}
  - {name: plane, type: planar, parent: cube, child: tip, parent_vertex: [0, -0.5, 0]}
  - {name: free, type: floating, parent: origin, child: part, initial: {position: [1, 1, 0.5, 0, 0, 0]}}
  - {name: twist, type: revolute, parent: cube, child: marker, parent_vertex: [0, 0, 0.5], orientation_offset: [0.7071067811865476, 0, 0.7071067811865476, 0]}
contacts:
  - {name: foot, body: ball, radius: 0.1, against: ground}
  - {name: heel, body: tip, radius: 0, offset: [0, 0, -0.075], against: {normal: [0, 0.2, 1], point: [0, 0, 0]}}
"""
# A 10 cm cube: 8 corners (index 1 + 4x + 2y + z), 12 triangles.
CUBE_OBJ = "".join(f"v {x} {y} {z}\n" for x in (-0.05, 0.05) for y in (-0.05, 0.05) for z in (-0.05, 0.05)) + "".join(
    f"f {a} {b} {c}\nf {a} {c} {d}\n"
    for a, b, c, d in ((1, 3, 4, 2), (5, 6, 8, 7), (1, 2, 6, 5), (3, 7, 8, 4), (1, 5, 7, 3), (2, 4, 8, 6))
)


def test_every_shape_and_joint_family(tmp_path):
    scene = tmp_path / "zoo.yaml"
    scene.write_text(ZOO)
    (tmp_path / "part.obj").write_text(CUBE_OBJ)
    png = tmp_path / "zoo.png"
    pic = draw_scene(dojo.load_scene(str(scene)), png, labels=True, view=(30.0, 40.0))
    img = not_blank(png)
    assert pic.warnings == [], pic.warnings
    assert [b.kind for b in pic.bodies] == ["box", "sphere", "cylinder", "capsule", "pyramid", "mesh", "frame"]
    families = {j.name: j.family for j in pic.joints}
    assert families == {"weld": "fixed", "slide": "prismatic", "knuckle": "spherical", "hinge": "revolute",
                        "plane": "planar", "free": "floating", "twist": "revolute"}
    where = {j.name: j.position for j in pic.joints}
    for name, point in (("weld", [0, 0, 1]), ("slide", [0.5, 0, 1]), ("knuckle", [0, 0.5, 1]), ("twist", [0, 0, 1.5])):
        assert np.allclose(where[name], point, atol=_GEOMETRY_TOL), f"{name} drawn at {where[name]}"
    axes = {j.name: j.axis for j in pic.joints}
    assert np.allclose(axes["twist"], [1.0, 0.0, 0.0], atol=1e-12), "joint axis turned by its orientation_offset"
    assert np.allclose(axes["hinge"], [0.0, 1.0, 0.0], atol=1e-12)
    assert np.allclose(pic.bodies[5].position, [1.0, 1.0, 0.5], atol=_GEOMETRY_TOL), "floating body at its initial position"
    # shape offsets: the can's shape sits 0.1 m along its body's z axis
    can = pic.bodies[2]
    assert np.allclose(can.shape_position - can.position, can.rotation @ [0, 0, 0.1], atol=_GEOMETRY_TOL)
    assert pic.ground and len(pic.planes) == 1
    assert np.allclose(pic.planes[0][0], np.array([0, 0.2, 1]) / np.hypot(0.2, 1)), "the incline's unit normal"
    assert pic.limits[2, 0] <= 0.0 <= pic.limits[2, 1], "the ground is inside the drawing"
    spans = pic.limits[:, 1] - pic.limits[:, 0]
    assert np.allclose(spans, spans[0]), f"equal scaling: axis spans {spans}"
    for j in pic.joints:
        if j.family in ("revolute", "prismatic", "fixed"):
            colour = rgb(pictures._FAMILY_STYLE[j.family]["color"])
            d = colour_distance_near(img, j.pixel, colour)
            assert d < _MARKER_COLOR_TOL, f"{j.name} ({j.family}): no marker at {j.pixel} (distance {d:.2f})"


def test_unreadable_mesh_is_a_marker_and_a_warning(tmp_path):
    scene = tmp_path / "zoo.yaml"
    scene.write_text(ZOO)  # part.obj missing
    res = runner.invoke(app, ["draw", str(scene), "--png", str(tmp_path / "z.png")])
    assert res.exit_code == 0, res.output
    assert "warning" in res.stderr and "part.obj" in res.stderr, res.stderr
    not_blank(tmp_path / "z.png")


# --------------------------------------------------------------------- draw: CLI


def test_draw_default_name_and_summary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["draw", "box", "--set", "bodies.0.initial.position=[0, 0, 2]"])
    assert res.exit_code == 0, res.output
    assert "wrote pendulum.png" not in res.stdout and "box.png" in res.stdout and "8 contacts" in res.stdout
    not_blank(tmp_path / "box.png", pictures.DEFAULT_SCENE_SIZE)


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["draw", "nope"], 2, "no such scene file or built-in scene 'nope'"),
        (["draw", "pendulum", "--size", "10,10"], 2, "--size"),
        (["draw", "pendulum", "--size", "800"], 2, "--size"),
        (["draw", "pendulum", "--view", "up,left"], 2, "--view"),
        (["draw", "pendulum", "--set", "bodies.0.mass=-1"], 2, "bodies.0.mass"),
        (["draw", "pendulum", "--png", "no/such/dir/p.png"], 3, "no/such/dir/p.png"),
    ],
)
def test_draw_invalid_input(tmp_path, monkeypatch, args, code, needle):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, args)
    assert res.exit_code == code, f"exit {res.exit_code}: {res.output}"
    assert needle in res.stderr and "Traceback" not in res.output, res.stderr


# ------------------------------------------------------------------------- plot


@pytest.fixture(scope="module")
def pendulum_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("run") / "pendulum.h5"
    res = runner.invoke(app, ["simulate", "pendulum", "-o", str(path), "--steps", "40", "-q"])
    assert res.exit_code == 0, res.output
    return path


def read_csv_columns(path):
    with open(path, newline="") as fh:
        rows = list(csv_module.reader(fh))
    return {name: [row[k] for row in rows[1:]] for k, name in enumerate(rows[0])}


def test_plot_cli_minimal_equals_the_dataset(pendulum_run, tmp_path):
    png, table = tmp_path / "m.png", tmp_path / "m.csv"
    res = runner.invoke(app, ["plot", str(pendulum_run), "--png", str(png), "--quantity", "minimal",
                              "--coordinate", "hinge", "--csv", str(table)])
    assert res.exit_code == 0, res.output
    not_blank(png, pictures.default_plot_size(1))
    with h5py.File(pendulum_run) as f:  # the oracle: the file itself, not read_storage
        stored_q, stored_t = f["minimal/q"][:, 0], f["time"][...]
    cols = read_csv_columns(table)
    assert list(cols) == ["time", "minimal/hinge:r0"]
    assert np.array_equal(np.array(cols["minimal/hinge:r0"], float), stored_q), "the CSV holds the stored angles exactly"
    assert np.array_equal(np.array(cols["time"], float), stored_t)


def test_plot_stacked_series_and_their_times(pendulum_run, tmp_path):
    run = read_storage(pendulum_run)
    quantities = ["position", "inputs", "iterations", "residual", "velocity"]
    plot = plot_run(run, quantities, tmp_path / "s.png", bodies=["link"], csv_path=tmp_path / "s.csv")
    not_blank(tmp_path / "s.png", pictures.default_plot_size(len(quantities)))
    assert plot.quantities == quantities
    for k, c in enumerate("xyz"):
        s = plot.get("position", f"link.{c}")
        assert np.array_equal(s.values, run.trajectory.x[:, 0, k]) and np.array_equal(s.time, run.trajectory.time)
    assert np.array_equal(plot.get("inputs").values, run.trajectory.inputs[:, 0])
    assert np.array_equal(plot.get("inputs").time, run.trajectory.time[:-1]), "inputs act from the start of their step"
    for q in ("iterations", "residual"):
        s = plot.get(q)
        assert np.array_equal(s.values, getattr(run.trajectory, q)) and np.array_equal(s.time, run.trajectory.time[1:]), f"{q}: end of step"
    cols = read_csv_columns(tmp_path / "s.csv")
    assert cols["iterations"][0] == "" and cols["inputs/hinge:r0"][-1] == "", "per-step series leave their missing row empty"
    assert [int(v) for v in cols["iterations"][1:]] == run.trajectory.iterations.tolist()
    assert np.array_equal(np.array(cols["residual"][1:], float), run.trajectory.residual)


def test_plot_quantities_match_the_library():
    assert picture_commands.QUANTITY_NAMES == pictures.QUANTITIES


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["-q", "energy"], "unknown quantity 'energy' (choose from position, minimal, velocity, inputs, iterations, residual, distance)"),
        (["-q", "position", "--body", "bob"], "no body 'bob' (choose from link)"),
        (["-q", "velocity", "--coordinate", "knee"], "no coordinate 'knee' (choose from hinge:r0"),
        (["-q", "minimal", "--body", "link"], "applies to the quantity 'position'"),
        (["-q", "distance"], "no contact records"),
        (["--size", "0,0"], "--size"),
    ],
)
def test_plot_invalid_input(pendulum_run, tmp_path, extra, needle):
    res = runner.invoke(app, ["plot", str(pendulum_run), "--png", str(tmp_path / "x.png"), *extra])
    assert res.exit_code == 2, f"exit {res.exit_code}: {res.output}"
    assert needle in res.stderr, res.stderr
    assert not (tmp_path / "x.png").exists(), "nothing written on invalid input"


def test_plot_files_that_are_not_runs(tmp_path):
    text = tmp_path / "notes.h5"
    text.write_text("not hdf5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["data"] = np.zeros(3)
    # a well-formed HDF5 file that is not a dojo file is exit 2; a damaged or missing one exit 3
    for path, needle, code in ((text, "not an HDF5 file", 3), (other, "not a dojo storage file", 2), (tmp_path / "gone.h5", "no such file", 3)):
        res = runner.invoke(app, ["plot", str(path), "--png", str(tmp_path / "x.png")])
        assert res.exit_code == code and needle in res.stderr, f"{path.name}: exit {res.exit_code}: {res.stderr}"


def test_plot_incomplete_run_plots_and_warns(pendulum_run, tmp_path):
    partial = tmp_path / "partial.h5"
    partial.write_bytes(pendulum_run.read_bytes())
    with h5py.File(partial, "r+") as f:
        f.attrs["status"] = "interrupted"
    res = runner.invoke(app, ["plot", str(partial)])  # default: minimal, next to the run
    assert res.exit_code == 0, res.output
    assert "warning" in res.stderr and "interrupted" in res.stderr, res.stderr
    not_blank(tmp_path / "partial.png")


def test_draw_scene_onto_a_given_axes(tmp_path):
    """skydy's Connection.draw(ax=...): draw_scene(..., ax=) draws on the caller's 3D Axes,
    where the physics puts the bodies, and leaves the caller's figure (its other Axes, size
    and suptitle) as it was."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from mpl_toolkits.mplot3d.art3d import Path3DCollection, Poly3DCollection

    from dojo_cli.errors import InputError

    fig = Figure(figsize=(8, 4), dpi=100)
    FigureCanvasAgg(fig)
    side = fig.add_subplot(1, 2, 1)
    side.plot([0, 1], [0, 1])
    ax = fig.add_subplot(1, 2, 2, projection="3d")
    fig.suptitle("the caller's figure")
    mech = dojo.load_scene("pendulum")
    pic = draw_scene(mech, ax=ax)
    assert pic.ax is ax and pic.path is None and pic.size == (800, 400)
    assert fig.axes == [side, ax], "no Axes added, none replaced"
    assert fig.get_suptitle() == "the caller's figure" and ax.get_title() == "pendulum"
    assert len(side.lines) == 1 and not side.collections, "the other Axes untouched"
    # the link's box faces and the centre-of-mass marker land on the given Axes, at the physics' pose
    assert any(isinstance(c, Poly3DCollection) for c in ax.collections)
    z0 = dojo.initial_state(mech).reshape(1, 13)[0, :3]
    markers = [np.array(c._offsets3d, dtype=float).T for c in ax.collections if isinstance(c, Path3DCollection)]
    assert any(m.shape == (1, 3) and np.allclose(m[0], z0, atol=1e-12) for m in markers), "the centre marker at x0"
    assert np.allclose(pic.body_positions[0], z0, atol=1e-12)
    # pixel positions are in the right half of the figure, where the 3D Axes is
    col, row = pic.bodies[0].pixel
    assert 400 < col < 800 and 0 < row < 400, pic.bodies[0].pixel
    # with a path as well, the caller's whole figure is written
    png = tmp_path / "both.png"
    draw_scene(dojo.load_scene("cartpole"), png, ax=fig.add_subplot(2, 2, 2, projection="3d"))
    not_blank(png, (800, 400))
    with pytest.raises(InputError, match="projection='3d'"):
        draw_scene(mech, ax=side)
    with pytest.raises(InputError, match="give a PNG path"):
        draw_scene(mech)
