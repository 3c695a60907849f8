"""A sphere against a convex hull on body b (core/maximal/collision.h's ``sphere_hull``, the
kind ``hull``; the hull's compiled record in collision_hull.h) and the shape pairs compiled
from it (dojo_cli/model/collisions.py).

Independent checks: MuJoCo's own distance between a sphere and a mesh geom
(``mj_geomDistance``: GJK apart, EPA overlapping, its tolerance tightened far below ours) on
random poses, the closest point on a face, an edge and a vertex; the geometry Jacobians (16
columns) against central differences; a box's hull against the analytic ``box`` kind.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from dojo_cli import _core as core
from tests.core.test_contact_kernels import (
    FD_RTOL, FD_STEP, GEOMETRY_FIELDS, _check_geometry_invariants, assert_close, qexp, qmul, random_quaternion, rotate,
)

# MuJoCo's convex collision with its tolerance tightened to 1e-12 (ccd_iterations 500):
# measured 5e-13 in the distance and 3e-12 in the normal against ours; the tolerances
# are the cylinder pairs' (test_collision_pairs.py).
MUJOCO_CCD_TOLERANCE = 1e-12
MUJOCO_ATOL = 1e-8
MUJOCO_NORMAL_ATOL = 1e-6
SPHERE_RADIUS = 0.07  # m
# A point of the hull's boundary lies on a plane within this (m): one plane a face, two an
# edge, three or more a vertex (the feature the closest point is on).
ON_PLANE = 1e-9


def _hull_points(seed: int) -> np.ndarray:
    """A random convex hull's points (an ellipsoid's cloud: faces, edges and vertices of all sizes)."""
    return np.random.default_rng(100 + seed).normal(size=(24, 3)) * [0.3, 0.2, 0.15]


def _mujoco_sphere_and_mesh(points: np.ndarray):
    """MuJoCo's sphere (body a, mocap) and mesh (body b, mocap): the model, its data and the
    mesh's vertices as compiled (MuJoCo moves a mesh's frame to its inertial frame)."""
    import mujoco

    xml = f"""<mujoco><option ccd_tolerance="{MUJOCO_CCD_TOLERANCE}" ccd_iterations="500"/>
      <asset><mesh name="m" vertex="{' '.join(map(str, points.ravel().tolist()))}"/></asset><worldbody>
      <body name="a" mocap="true"><geom type="sphere" size="{SPHERE_RADIUS}"/></body>
      <body name="b" mocap="true"><geom type="mesh" mesh="m"/></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    start, count = model.mesh_vertadr[0], model.mesh_vertnum[0]
    return model, mujoco.MjData(model), np.asarray(model.mesh_vert[start:start + count], float)


def _geometry(case, parameters=True):
    return core.contact_geometry("hull", case["xa"], case["qa"], case["offset"], case["radius"], case["xb"],
                                 case["qb"], np.zeros(7), parameters, hull=case["hull"])


def _moved(case, e):
    out = dict(case)
    out["xa"], out["qa"] = case["xa"] + e[0:3], qmul(case["qa"], qexp(e[3:6]))
    out["xb"], out["qb"] = case["xb"] + e[6:9], qmul(case["qb"], qexp(e[9:12]))
    out["offset"], out["radius"] = case["offset"] + e[12:15], case["radius"] + e[15]
    return out


def _check_jacobians(name, case):
    out = _geometry(case)
    for k in range(16):
        e = np.zeros(16)
        e[k] = FD_STEP
        plus, minus = _geometry(_moved(case, e), False), _geometry(_moved(case, -e), False)
        for f in GEOMETRY_FIELDS:
            fd = (np.asarray(plus[f]) - np.asarray(minus[f])) / (2 * FD_STEP)
            assert_close(f"{name}: d {f} / d column {k}", np.asarray(out[f + "_jac"])[..., k], fd, FD_RTOL)
    _check_geometry_invariants(name, out)
    return out


def _feature(record, case, g) -> int:
    """How many of the hull's face planes hold b's contact point (1 a face, 2 an edge, 3+ a vertex)."""
    local = rotate(np.array([1.0, -1.0, -1.0, -1.0]) * case["qb"], np.asarray(g["point_b"]) - case["xb"])
    planes = record["planes"]
    return int(np.sum(np.abs(planes[:, :3] @ local - planes[:, 3]) < ON_PLANE))


@pytest.mark.parametrize("seed", range(2))
def test_sphere_against_a_hull_matches_mujoco(seed):
    """Random poses of a sphere about a random hull, apart (the closest point on a face, an edge
    or a vertex: each is met) and overlapping (out through the face of least depth, which is
    EPA's least translation for a sphere's centre inside): MuJoCo's distance and normal, and
    Jacobians that match central differences."""
    import mujoco

    model, data, vertices = _mujoco_sphere_and_mesh(_hull_points(seed))
    hull = (vertices, ConvexHull(vertices).simplices)
    record = core.testing.compile_hull(*hull)
    rng = np.random.default_rng(seed)
    features = {"face": 0, "edge": 0, "vertex": 0, "inside": 0}
    for k in range(40):
        xa, xb, qb = 0.3 * rng.normal(size=3), 0.05 * rng.normal(size=3), random_quaternion(rng)
        data.mocap_pos[:] = [xa, xb]
        data.mocap_quat[1] = qb
        mujoco.mj_forward(model, data)
        fromto = np.zeros(6)
        distance = mujoco.mj_geomDistance(model, data, 0, 1, 10.0, fromto)
        # body b at the mesh geom's frame (MuJoCo's vertices are in it)
        geom_q = np.zeros(4)
        mujoco.mju_mat2Quat(geom_q, data.geom_xmat[1])
        case = dict(xa=xa, qa=np.array([1.0, 0.0, 0.0, 0.0]), offset=np.zeros(3), radius=SPHERE_RADIUS,
                    xb=data.geom_xpos[1].copy(), qb=geom_q, hull=hull)
        name = f"seed {seed} pose {k}"
        g = _check_jacobians(name, case) if k % 4 == 0 else _geometry(case)
        assert abs(g["distance"] - distance) < MUJOCO_ATOL, f"{name}: {g['distance']} vs MuJoCo {distance}"
        between = fromto[:3] - fromto[3:]  # MuJoCo's from the sphere's point to the mesh's
        normal = np.sign(distance) * between / np.linalg.norm(between)  # crossed when overlapping
        error = np.abs(np.asarray(g["normal"]) - normal).max()
        assert error < MUJOCO_NORMAL_ATOL, f"{name}: normal {g['normal']} vs MuJoCo {normal}: {error:.1e}"
        if g["distance"] + SPHERE_RADIUS <= 0.0:
            features["inside"] += 1
        else:
            features[{1: "face", 2: "edge"}.get(_feature(record, case, g), "vertex")] += 1
    assert all(features.values()), f"some case was never met: {features}"


def test_a_box_hull_is_the_box():
    """A box's 12 triangles compile to its 6 faces and 12 edges (coplanar triangles merged, the
    faces' diagonals left out), and the sphere against it gives the analytic ``box`` kind's
    geometry (apart: a face, an edge, a vertex; inside: the nearest face) with its Jacobians."""
    half = np.array([0.2, 0.3, 0.25])
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
    hull = (corners, ConvexHull(corners).simplices)
    record = core.testing.compile_hull(*hull)
    assert (len(record["planes"]), len(record["edges"]), len(record["triangles"])) == (6, 12, 12), record
    rng = np.random.default_rng(7)
    for centre in ([0.5, 0.05, -0.02], [0.4, 0.5, 0.1], [0.35, -0.45, 0.4], [0.05, 0.1, -0.12]):
        qb = random_quaternion(rng)
        xb = 0.1 * rng.normal(size=3)
        case = dict(xa=xb + rotate(qb, np.asarray(centre)), qa=random_quaternion(rng), offset=np.zeros(3),
                    radius=0.05, xb=xb, qb=qb, hull=hull)
        g = _check_jacobians(f"box hull at {centre}", case)
        box = core.contact_geometry("box", case["xa"], case["qa"], case["offset"], case["radius"], xb, qb,
                                    np.concatenate([np.zeros(3), half]), True)
        for f in GEOMETRY_FIELDS:
            assert_close(f"box hull at {centre}: {f}", np.asarray(g[f]), np.asarray(box[f]), 1e-12)
            assert_close(f"box hull at {centre}: d {f}", np.asarray(g[f + "_jac"]), np.asarray(box[f + "_jac"]), 1e-9)


def test_a_hull_that_is_not_convex_is_refused():
    """Triangles of a non-convex solid (a vertex pushed in) are refused with the reason."""
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    triangles = ConvexHull(corners).simplices
    dented = corners.copy()
    dented[7] *= 0.2  # the (+, +, +) corner pushed towards the centre
    with pytest.raises(ValueError, match="not convex"):
        core.testing.compile_hull(dented, triangles)
    with pytest.raises(ValueError, match="out of range"):
        core.testing.compile_hull(corners, triangles + 8)
