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
