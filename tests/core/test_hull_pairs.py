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
    GEOMETRY_FIELDS, _check_geometry_invariants, _check_geometry_jacobians, assert_close, qmul, random_quaternion, rotate,
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


def _check_jacobians(name, case):
    out = _check_geometry_jacobians(name, case, geometry=_geometry)
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


# ------------------------------------------------------------ shape pairs with a hull
def _shape(kind, **params):
    from dojo_cli.model.shapes import Shape

    return Shape(kind, params, (0.0, 0.0, 0.1), (1.0, 0.0, 0.0, 0.0))


def test_hull_pairs_compile_each_shapes_spheres_against_the_other():
    """sphere-hull 1, capsule-hull 2 + N, cylinder-hull 16 + N (8 fixed points per rim),
    box-hull 8 + N, hull-hull M + N contacts, in that order (body a's spheres against the
    hull, then the hull's vertices against body a's shape), every sphere against the hull
    carrying the hull's radius too; a point inside a hull's points is no vertex; a flat hull
    and a pyramid have no pair with a hull."""
    from dojo_cli.model.collisions import UnsupportedPair, body_pair_contacts

    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * 0.1
    hull = _shape("hull", vertices=np.vstack([corners, [[0.0, 0.0, 0.0]]]), radius=0.02)  # 8 vertices, 1 inside
    other = _shape("hull", vertices=corners[:6] * 2.0 + 0.01, radius=0.005)  # 6 vertices
    pairs = {
        "sphere": (_shape("sphere", radius=0.1), [("hull", 0.12)]),
        "capsule": (_shape("capsule", radius=0.05, height=0.3), [("hull", 0.07)] * 2 + [("capsule", 0.02)] * 8),
        "cylinder": (_shape("cylinder", radius=0.05, height=0.3), [("hull", 0.02)] * 16 + [("cylinder", 0.02)] * 8),
        "box": (_shape("box", size=(0.2, 0.3, 0.4)), [("hull", 0.02)] * 8 + [("box", 0.02)] * 8),
        "hull": (other, [("hull", 0.025)] * 6 + [("hull", 0.025)] * 8),
    }
    for name, (shape, expected) in pairs.items():
        for order in ((0, shape, 1, hull), (1, hull, 0, shape)):  # either body first
            made = body_pair_contacts(name, *order)
            assert [(c.kind, round(c.radius, 12)) for c in made] == expected, f"{name}: {[(c.kind, c.radius) for c in made]}"
            # the first contacts are body a's spheres against the hull (hull-hull: the first hull's)
            assert made[0].other == (order[2] if name == "hull" else 1), f"{name}: body a's spheres first"
            # the hull's frame is its body's: the vertices moved by its position_offset
            table_hull = next(c for c in made if c.other == 1).params["vertices"]
            assert np.allclose(table_hull.min(axis=0), corners.min(axis=0) + [0.0, 0.0, 0.1]), name
    with pytest.raises(UnsupportedPair, match="pyramid"):
        body_pair_contacts("p", 0, _shape("pyramid", width=0.1, height=0.2), 1, hull)
    with pytest.raises(UnsupportedPair, match="flat"):
        body_pair_contacts("f", 0, _shape("sphere", radius=0.1), 1, _shape("hull", vertices=corners[::2]))


def test_a_turned_box_meets_a_hull_as_its_own_hull():
    """A box turned in its body frame (not by quarter turns), which no pair takes on body b as a
    box: the hull's vertices meet it as the box's own hull, with the same distances as the
    box kind where the box sits axis-aligned."""
    from dojo_cli.model.collisions import body_pair_contacts
    from dojo_cli.model.shapes import Shape
    from dojo_cli.scene.importing.scene_data import contact_distance

    turn = [np.cos(0.3), 0.0, 0.0, np.sin(0.3)]
    box = Shape("box", {"size": (0.4, 0.3, 0.2)}, (0.0, 0.0, 0.0), tuple(turn))
    hull = _shape("hull", vertices=np.random.default_rng(3).normal(size=(12, 3)) * 0.1)
    made = body_pair_contacts("b", 0, box, 1, hull)
    turned = [c for c in made if c.other == 0]
    assert turned and {c.kind for c in turned} == {"hull"}, [c.kind for c in made]
    # the same pair with the box's body turned instead: the box kind, axis-aligned
    straight = [c for c in body_pair_contacts("s", 0, Shape("box", {"size": (0.4, 0.3, 0.2)}), 1, hull) if c.other == 0]
    assert {c.kind for c in straight} == {"box"}
    q_hull, x_hull = np.array([0.9, 0.1, -0.3, 0.2]) / np.linalg.norm([0.9, 0.1, -0.3, 0.2]), np.array([0.1, 0.2, 0.25])
    # body 0 (the box's) at the identity with the turned box == body 0 turned with a straight box,
    # the hull's body moved along: the same relative pose
    rot = np.asarray(turn)
    for a, b in zip(turned, straight):
        d_turned = contact_distance(a, (x_hull, q_hull), (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])))
        d_straight = contact_distance(b, (rotate(qmul(np.array([1.0, 0, 0, 0]), rot * [1, -1, -1, -1]), x_hull),
                                          qmul(rot * [1, -1, -1, -1], q_hull)), (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])))
        assert abs(d_turned - d_straight) < 1e-12, f"{d_turned} vs {d_straight}"


def test_a_hull_against_needs_its_vertices():
    """``against: {body, shape: hull}`` without ``vertices`` is refused at that field."""
    from dojo_cli.errors import SceneError
    from dojo_cli.scene.loader import spec_from_dict

    scene = {"name": "h", "bodies": [{"name": "a", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1}},
                                     {"name": "b", "mass": 1.0, "shape": {"type": "sphere", "radius": 0.1}}],
             "joints": [{"name": "f", "type": "floating", "parent": "origin", "child": "a"},
                        {"name": "g", "type": "floating", "parent": "origin", "child": "b"}],
             "contacts": [{"name": "c", "body": "a", "shape": "body", "against": {"body": "b", "shape": "hull"}}]}
    with pytest.raises(SceneError) as err:
        spec_from_dict(scene)
    assert any(p.field == "contacts.0.against.vertices" for p in err.value.problems), [str(p) for p in err.value.problems]
