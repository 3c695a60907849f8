"""Shape inertias against numerical integration over a voxel grid (an independent oracle)."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.model.shapes import Shape, body_inertia, central_inertia

GRID = 161  # voxels per axis over tight bounds: the midpoint rule's error here is below 0.5%
VOXEL_TOL = 5e-3


def voxel_inertia(inside, bounds):
    """Inertia (unit mass) about the centroid of the solid {p : inside(p)} by the midpoint rule.

    Args:
        bounds: (3, 2) per-axis [low, high] enclosing the solid tightly (resolution).
    """
    axes = [lo + (np.arange(GRID) + 0.5) / GRID * (hi - lo) for lo, hi in bounds]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    mask = inside(x, y, z)
    p = np.stack([x[mask], y[mask], z[mask]], axis=1)
    p -= p.mean(axis=0)
    n = len(p)
    r2 = np.sum(p * p, axis=1)
    return (np.eye(3) * r2.sum() - p.T @ p) / n


SOLIDS = {
    "box": (Shape("box", {"size": (0.4, 0.6, 1.0)}), lambda x, y, z: (abs(x) <= 0.2) & (abs(y) <= 0.3) & (abs(z) <= 0.5), [(-0.2, 0.2), (-0.3, 0.3), (-0.5, 0.5)]),
    "sphere": (Shape("sphere", {"radius": 0.5}), lambda x, y, z: x**2 + y**2 + z**2 <= 0.25, [(-0.5, 0.5)] * 3),
    "cylinder": (Shape("cylinder", {"radius": 0.3, "height": 1.0}), lambda x, y, z: (x**2 + y**2 <= 0.09) & (abs(z) <= 0.5), [(-0.3, 0.3), (-0.3, 0.3), (-0.5, 0.5)]),
    "capsule": (
        Shape("capsule", {"radius": 0.2, "height": 0.6}),
        lambda x, y, z: x**2 + y**2 + np.maximum(abs(z) - 0.3, 0) ** 2 <= 0.04,
        [(-0.2, 0.2), (-0.2, 0.2), (-0.5, 0.5)],
    ),
    "pyramid": (
        Shape("pyramid", {"width": 0.8, "height": 0.9}),
        # square base of side w at z = -h/4, apex at 3h/4 (centroid at the origin)
        lambda x, y, z: (z >= -0.225) & (z <= 0.675) & (np.maximum(abs(x), abs(y)) <= 0.4 * (0.675 - z) / 0.9),
        [(-0.4, 0.4), (-0.4, 0.4), (-0.225, 0.675)],
    ),
}


@pytest.mark.parametrize("kind", list(SOLIDS))
def test_inertia_matches_integration(kind):
    shape, inside, bounds = SOLIDS[kind]
    exact = central_inertia(shape, 1.0)
    numeric = voxel_inertia(inside, bounds)
    err = np.max(np.abs(exact - numeric)) / np.max(np.abs(numeric))
    assert err < VOXEL_TOL, f"{kind}: relative error {err:.2e}\nformula\n{exact}\nintegrated\n{numeric}"


def test_cylinder_is_textbook_not_dojo():
    j = central_inertia(Shape("cylinder", {"radius": 0.1, "height": 1.0}), 2.0)
    assert j[0, 0] == pytest.approx(2.0 * (3 * 0.01 + 1.0) / 12)  # m (3 r^2 + h^2) / 12
    assert j[2, 2] == pytest.approx(2.0 * 0.01 / 2)


def test_orientation_offset_rotates_inertia():
    s = 0.5 ** 0.5
    upright = Shape("capsule", {"radius": 0.1, "height": 1.0})
    sideways = Shape("capsule", {"radius": 0.1, "height": 1.0}, orientation_offset=(s, s, 0.0, 0.0))  # pi/2 about x
    a, b = body_inertia(upright, 1.0), body_inertia(sideways, 1.0)
    assert b[1, 1] == pytest.approx(a[2, 2]) and b[2, 2] == pytest.approx(a[1, 1]) and b[0, 0] == pytest.approx(a[0, 0])


def test_shapes_without_volume_have_no_default_inertia():
    assert central_inertia(Shape("frame"), 1.0) is None
    assert central_inertia(Shape("mesh", {"file": "x.obj"}), 1.0) is None


# ------------------------------------------------------- combined shapes and scale (issue 29)
ROD = Shape("cylinder", {"radius": 0.03, "height": 0.4}, (0.0, 0.0, 0.0), (2**-0.5, 0.0, 2**-0.5, 0.0))  # along x
BELLS = [Shape("sphere", {"radius": 0.1}, (x, 0.0, 0.0)) for x in (-0.3, 0.3)]


def test_combined_inertia_matches_integration():
    """Dojo's CombinedShapes with a composite inertia: a dumbbell (two spheres on a rod along x,
    touching, not overlapping) against the voxel integral of the union, one density."""
    dumbbell = Shape("combined", {"parts": (BELLS[0], ROD, BELLS[1])})

    def inside(x, y, z):
        ball = ((x + 0.3) ** 2 + y**2 + z**2 <= 0.01) | ((x - 0.3) ** 2 + y**2 + z**2 <= 0.01)
        return ball | ((y**2 + z**2 <= 0.03**2) & (abs(x) <= 0.2))

    expected = voxel_inertia(inside, [(-0.4, 0.4), (-0.1, 0.1), (-0.1, 0.1)])
    np.testing.assert_allclose(central_inertia(dumbbell, 1.0), expected, rtol=VOXEL_TOL, atol=1e-6)


def test_combined_boxes_make_the_bigger_box():
    """Two unit cubes side by side are the 2 x 1 x 1 box (exact: the parallel-axis theorem);
    one part alone is the part; the combined frame's offsets turn the whole."""
    halves = Shape("combined", {"parts": tuple(Shape("box", {"size": (1.0, 1.0, 1.0)}, (x, 0.0, 0.0)) for x in (-0.5, 0.5))})
    np.testing.assert_allclose(central_inertia(halves, 6.0), central_inertia(Shape("box", {"size": (2.0, 1.0, 1.0)}), 6.0),
                               rtol=1e-14)
    single = Shape("combined", {"parts": (SOLIDS["capsule"][0],)})
    np.testing.assert_allclose(central_inertia(single, 2.0), central_inertia(SOLIDS["capsule"][0], 2.0), rtol=1e-14)
    turned = Shape("combined", halves.params, orientation_offset=(2**-0.5, 0.0, 0.0, 2**-0.5))  # x -> y
    np.testing.assert_allclose(body_inertia(turned, 6.0), body_inertia(Shape("box", {"size": (1.0, 2.0, 1.0)}), 6.0),
                               atol=1e-14)


def test_combined_centroid_off_the_origin_is_refused():
    lopsided = Shape("combined", {"parts": (BELLS[0], ROD)})
    with pytest.raises(ValueError, match="the parts' centroid is at .* not at its origin"):
        central_inertia(lopsided, 1.0)


def scene_body(tmp_path, shape: str, name="s.yaml"):
    import dojo_cli as dojo

    text = f"""\
format: 1
name: shapes
timestep: 0.01
steps: 150
gravity: [0, 0, -9.81]
bodies:
  - name: b
    mass: 2.0
    shape: {shape}
joints:
  - {{name: free, type: floating, parent: origin, child: b, initial: {{position: [0, 0, 0.3, 0, 0, 0]}}}}
collisions: {{mode: ground}}
"""
    (tmp_path / name).write_text(text)
    return dojo.load_scene(str(tmp_path / name))


def test_scale_multiplies_the_dimensions(tmp_path):
    scaled = scene_body(tmp_path, "{type: box, size: [1, 1, 1], scale: [0.2, 0.3, 0.4]}")
    plain = scene_body(tmp_path, "{type: box, size: [0.2, 0.3, 0.4]}", "p.yaml")
    np.testing.assert_allclose(scaled.bodies[0].inertia, plain.bodies[0].inertia, rtol=1e-15)
    assert scaled.bodies[0].shape.params["size"] == pytest.approx((0.2, 0.3, 0.4))
    cylinder = scene_body(tmp_path, "{type: cylinder, radius: 1, height: 1, scale: [0.1, 0.1, 0.5]}", "c.yaml")
    np.testing.assert_allclose(cylinder.bodies[0].inertia,
                               central_inertia(Shape("cylinder", {"radius": 0.1, "height": 0.5}), 2.0), rtol=1e-15)


@pytest.mark.parametrize("shape, message", [
    ("{type: sphere, radius: 1, scale: [1, 1, 2]}", "bodies.0.shape.scale: a sphere takes one scale"),
    ("{type: capsule, radius: 1, height: 1, scale: [1, 2, 1]}", "bodies.0.shape.scale: a capsule takes the same scale"),
    ("{type: box, size: [1, 1, 1], scale: [1, -1, 1]}", "bodies.0.shape"),
    ("{type: combined, shapes: []}", "bodies.0.shape"),
    ("{type: combined, shapes: [{type: mesh, file: a.obj}]}", "bodies.0.shape"),
])
def test_bad_scales_and_combinations(tmp_path, shape, message):
    from dojo_cli.errors import SceneError

    with pytest.raises(SceneError, match=message.replace(".", r"\.")):
        scene_body(tmp_path, shape)


def test_combined_body_rests_on_its_lowest_part(tmp_path):
    """A T of two boxes dropped onto the ground (collisions from each part): it comes to rest
    on the lower box's bottom face, its centre of mass at the analytic height."""
    import dojo_cli as dojo

    # stem 0.1 x 0.1 x 0.4 (volume 0.004) under a 0.4 x 0.1 x 0.1 bar (0.004): equal masses,
    # the centroid at the origin when the stem's centre is at z = -0.125 and the bar's at 0.125
    mech = scene_body(tmp_path, "{type: combined, shapes: [{type: box, size: [0.1, 0.1, 0.4], position_offset: "
                                "[0, 0, -0.125]}, {type: box, size: [0.4, 0.1, 0.1], position_offset: [0, 0, 0.125]}]}")
    traj = dojo.simulate(mech)
    assert set(traj.status) == {"success"}
    # the stem's bottom face is 0.125 + 0.2 = 0.325 below the centre of mass
    assert traj.x[-1, 0, 2] == pytest.approx(0.325, abs=2e-4)


def test_combined_shape_parts_for_the_replay():
    """The replay draws a combined shape as its parts, each placed by its offsets in the
    combined frame (viz.meshcat_scene.shape_parts)."""
    from dojo_cli.viz.meshcat_scene import shape_parts

    dumbbell = Shape("combined", {"parts": (BELLS[0], ROD, BELLS[1])})
    parts, warnings = shape_parts(dumbbell, None)
    assert not warnings
    assert [name for name, _, _ in parts] == ["part0_sphere", "part1_cylinder", "part2_sphere"]
    np.testing.assert_allclose(parts[0][2][:3, 3], [-0.3, 0, 0])
    np.testing.assert_allclose(parts[2][2][:3, 3], [0.3, 0, 0])
    # the rod: meshcat's cylinder is along y; turned onto z (its own frame), then by the part's
    # offset onto x
    np.testing.assert_allclose(parts[1][2][:3, :3] @ [0, 1, 0], [1, 0, 0], atol=1e-12)
