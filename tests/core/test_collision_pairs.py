"""The collision pairs beyond a sphere on body a (core/maximal/collision.h) and the shape pairs
compiled into them (dojo_cli/model/collisions.py, the scene's ``collisions:`` block).

Independent checks: capsule-capsule and capsule-box distances against scipy's bounded
minimisation of the closest-point problem, every new pair's geometry Jacobians (16
columns) against central differences, a cylinder rolling on the ground (v = omega r) and
one standing on its end, and the names and exclusions of generated contacts. The
contact kernels' Jacobians of the new kinds are checked in test_contact_kernels.py
(KERNEL_CASES).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

import dojo_cli as dojo
from dojo_cli import _core as core
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from tests.core.test_contact_kernels import (
    _check_geometry_invariants, _check_geometry_jacobians, random_quaternion, rotate,
)

# scipy's L-BFGS-B on a smooth convex problem converges to ~1e-9 in the distance.
SCIPY_ATOL = 1e-7


def _geometry(case, parameters=True):
    return core.contact_geometry(case["kind"], case["xa"], case["qa"], case["offset"], case["radius"], case["xb"],
                                 case["qb"], np.asarray(case["shape"], float), parameters, shape_a=case["shape_a"])


def _check_jacobians(name, case):
    out = _check_geometry_jacobians(name, case, geometry=_geometry)
    _check_geometry_invariants(name, out)
    return out


def _segment_case(kind, seed, shape, spread=0.8):
    rng = np.random.default_rng(seed)
    xa, xb = spread * rng.normal(size=3), 0.2 * rng.normal(size=3)
    return dict(kind=kind, xa=xa, qa=random_quaternion(rng), offset=0.1 * rng.normal(size=3), radius=0.1,
                shape_a=np.concatenate([0.4 * rng.normal(size=3), [0.0]]), xb=xb, qb=random_quaternion(rng), shape=shape)


def _ends(case):
    centre = case["xa"] + rotate(case["qa"], case["offset"])
    half = rotate(case["qa"], case["shape_a"][:3])
    return centre - half, centre + half


CAPSULE_B = [0.1, -0.3, 0.2, -0.2, 0.4, 0.1, 0.15]
BOX_B = [0.05, 0.1, -0.1, 0.2, 0.3, 0.25]


@pytest.mark.parametrize("seed", range(6))
def test_capsule_capsule_distance_against_scipy(seed):
    """min over (s, t) in [0, 1]^2 of |P(s) - Q(t)|, minus both radii, by scipy; and the
    Jacobians of the pair against central differences."""
    case = _segment_case("segment_capsule", seed, CAPSULE_B)
    g = _check_jacobians(f"capsule-capsule {seed}", case)
    p1, p2 = _ends(case)
    q1, q2 = (case["xb"] + rotate(case["qb"], np.asarray(CAPSULE_B[k : k + 3])) for k in (0, 3))
    res = minimize(lambda st: np.sum((p1 + st[0] * (p2 - p1) - q1 - st[1] * (q2 - q1)) ** 2), [0.5, 0.5],
                   bounds=[(0, 1), (0, 1)], method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12})
    expected = np.sqrt(res.fun) - case["radius"] - CAPSULE_B[6]
    assert abs(g["distance"] - expected) < SCIPY_ATOL, f"seed {seed}: {g['distance']} vs scipy {expected}"


def test_capsule_capsule_parallel_takes_the_middle_of_the_overlap():
    """Parallel segments: the contact sits in the middle of their overlap, the normal between the axes."""
    case = dict(kind="segment_capsule", xa=np.array([0.0, 0.0, 0.5]), qa=np.array([1.0, 0, 0, 0]), offset=np.zeros(3),
                radius=0.1, shape_a=np.array([1.0, 0, 0, 0]), xb=np.zeros(3), qb=np.array([1.0, 0, 0, 0]),
                shape=[0.5, 0, 0, 3.0, 0, 0, 0.2])
    g = _geometry(case)
    assert np.isclose(g["distance"], 0.2, atol=1e-14), g["distance"]
    assert np.allclose(g["normal"], [0, 0, 1], atol=1e-14)
    assert np.allclose(g["point_a"], [0.75, 0, 0.4], atol=1e-14), g["point_a"]  # overlap x in [0.5, 1]


@pytest.mark.parametrize("seed", range(8))
def test_capsule_box_distance_against_scipy(seed):
    """Outside the box: min over s in [0, 1] and y in the box of |p(s) - y| (box coordinates),
    by scipy; and the Jacobians against central differences."""
    case = _segment_case("segment_box", seed, BOX_B, spread=1.0)
    p1, p2 = _ends(case)
    centre = case["xb"] + rotate(case["qb"], np.asarray(BOX_B[:3]))
    conj = case["qb"] * [1, -1, -1, -1]
    a, b, half = rotate(conj, p1 - centre), rotate(conj, p2 - centre), np.asarray(BOX_B[3:])
    res = minimize(lambda z: np.sum((a + z[0] * (b - a) - z[1:]) ** 2), np.zeros(4),
                   bounds=[(0, 1)] + [(-h, h) for h in half], method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-12})
    if res.fun < 1e-8:
        pytest.fail(f"seed {seed}: the segment meets the box; pick a seed that keeps it outside")
    g = _check_jacobians(f"capsule-box {seed}", case)
    expected = np.sqrt(res.fun) - case["radius"]
    assert abs(g["distance"] - expected) < SCIPY_ATOL, f"seed {seed}: {g['distance']} vs scipy {expected}"


def test_capsule_box_end_inside():
    """A segment with one end inside the box (and the other far out): the end, pushed out through its nearest face."""
    case = dict(kind="segment_box", xa=np.array([0.0, 0.0, 0.9]), qa=np.array([1.0, 0, 0, 0]), offset=np.zeros(3),
                radius=0.05, shape_a=np.array([0.0, 0.0, 0.5, 0.0]), xb=np.zeros(3), qb=np.array([1.0, 0, 0, 0]),
                shape=[0, 0, 0, 0.5, 0.5, 0.5])
    g = _check_jacobians("end inside", case)
    assert np.isclose(g["distance"], -0.1 - 0.05, atol=1e-14) and np.allclose(g["normal"], [0, 0, 1], atol=1e-14)


@pytest.mark.parametrize("tilt", [0.3, 1.2, np.pi / 2])
def test_circle_on_a_half_space(tilt):
    """A cap's rim tilted by ``tilt`` from level: its lowest point is rho sin(tilt) below the centre."""
    axis = np.array([np.sin(tilt), 0.0, np.cos(tilt)])
    q = np.array([0.9, 0.1, -0.3, 0.2])
    q /= np.linalg.norm(q)
    case = dict(kind="circle_halfspace", xa=np.array([0.2, -0.1, 0.7]), qa=q, offset=np.array([0.1, 0.0, -0.05]),
                radius=0.0, shape_a=np.concatenate([rotate(q * [1, -1, -1, -1], axis), [0.4]]), xb=np.zeros(3),
                qb=np.array([1.0, 0, 0, 0]), shape=[0, 0, 1, 0, 0, 0])
    g = _check_jacobians(f"circle tilt {tilt}", case)
    centre = case["xa"] + rotate(q, case["offset"])
    assert np.isclose(g["distance"], centre[2] - 0.4 * np.sin(tilt), atol=1e-14), g["distance"]


# core/maximal/collision.h: a circle within this sine of level takes a point of its cap's disc.
LEVEL_CIRCLE = 1e-3


def _circle_at_tilt(tilt, azimuth=2.0, rho=0.4):
    """A cap's rim on body a (tilted by ``tilt`` about a horizontal axis at ``azimuth``, not the
    direction of any fixed rim point) over the ground; its centre, and the exact lowest rim point."""
    d = np.array([np.cos(azimuth), np.sin(azimuth), 0.0])
    axis = np.cos(tilt) * np.array([0.0, 0.0, 1.0]) + np.sin(tilt) * d
    q = np.array([0.9, 0.1, -0.3, 0.2])
    q /= np.linalg.norm(q)
    case = dict(kind="circle_halfspace", xa=np.array([0.2, -0.1, 0.7]), qa=q, offset=np.array([0.1, 0.0, -0.05]),
                radius=0.0, shape_a=np.concatenate([rotate(q * [1, -1, -1, -1], axis), [rho]]), xb=np.zeros(3),
                qb=np.array([1.0, 0, 0, 0]), shape=[0, 0, 1, 0, 0, 0])
    centre = case["xa"] + rotate(q, case["offset"])
    level = np.array([0.0, 0.0, 1.0]) - axis[2] * axis  # n - (n.A) A, |level| = sin(tilt)
    lowest = centre - rho * level / np.linalg.norm(level) if tilt > 0 else centre
    return case, centre, lowest


def test_circle_lying_flat_has_a_continuous_contact_point():
    """Within LEVEL_CIRCLE of level the rim's contact point is a point of the cap's disc moving
    linearly with the tilt, from the centre (level) to the lowest rim point: continuous where
    the tilt crosses LEVEL_CIRCLE (a fixed rim point stood in before, 2 rho away from the
    lowest one on the other side: simple_humanoid's trunk on a 1 m cap stalled its step 62),
    at most rho LEVEL_CIRCLE / 4 above the lowest rim point, with exact Jacobians."""
    rho = 0.4
    _, centre, _ = _circle_at_tilt(0.0, rho=rho)
    g = _geometry(_circle_at_tilt(0.0, rho=rho)[0])
    np.testing.assert_allclose(g["point_a"], centre, atol=1e-14)  # level: the centre
    assert np.isclose(g["distance"], centre[2], atol=1e-14)
    s = np.arcsin(LEVEL_CIRCLE)
    below, above = (_geometry(_circle_at_tilt(t, rho=rho)[0], False) for t in (s * (1 - 1e-9), s * (1 + 1e-9)))
    jump = np.linalg.norm(np.asarray(above["point_a"]) - np.asarray(below["point_a"]))
    assert jump < 1e-8 * rho, f"the contact point jumps by {jump:.3g} m where the tilt crosses LEVEL_CIRCLE"
    for fraction in (0.1, 0.5, 0.9, 1.5):
        case, centre, lowest = _circle_at_tilt(np.arcsin(fraction * LEVEL_CIRCLE), rho=rho)
        g = _geometry(case, False)
        above_lowest = g["distance"] - lowest[2]
        assert -1e-12 <= above_lowest <= rho * LEVEL_CIRCLE / 4 * (1 + 1e-6), (fraction, above_lowest)
    for fraction in (0.3, 0.7):  # inside the disc's zone, the finite differences stay in it
        _check_jacobians(f"circle {fraction} of level", _circle_at_tilt(np.arcsin(fraction * LEVEL_CIRCLE), rho=rho)[0])


def _scene(bodies, contacts=(), collisions=None, **extra):
    joints = [{"name": f"free_{b['name']}", "type": "floating", "parent": "origin", "child": b["name"]} for b in bodies]
    data = {"name": "pairs", "timestep": 0.01, "bodies": bodies, "joints": joints, "contacts": list(contacts), **extra}
    if collisions is not None:
        data["collisions"] = collisions
    return build_mechanism(spec_from_dict(data))


def test_cylinder_rolls_on_its_side_and_stands_on_its_end():
    """On its side with a spin about its axis, a cylinder ends up rolling without slipping,
    v = omega r; standing on its end it stays where it is."""
    r, height = 0.2, 0.5
    side = [0.7071067811865476, 0.7071067811865476, 0.0, 0.0]  # its axis (z) along the world's -y
    mech = _scene([{"name": "wheel", "mass": 1.0, "shape": {"type": "cylinder", "radius": r, "height": height},
                    "initial": {"position": [0, 0, r], "orientation": side, "angular_velocity": [0, 0, 6.0]}}],
                  collisions={"mode": "ground", "friction": 0.8}, solver={"btol": 1e-6, "max_iter": 100})
    assert [c.name for c in mech.contacts][:2] == ["wheel/ground/0", "wheel/ground/1"]
    traj = dojo.simulate(mech, steps=100)
    assert set(traj.status) == {"success"}
    v, q, w = traj.v[-1, 0], traj.q[-1, 0], traj.omega[-1, 0]
    omega_world = rotate(q, w)
    assert abs(v[0] - omega_world[1] * r) < 1e-3 * abs(v[0]) + 1e-6, f"v {v}, omega {omega_world}: not rolling"
    assert abs(v[0]) > 0.1, "it rolls"
    assert abs(traj.x[-1, 0, 2] - r) < 1e-4, f"axis height {traj.x[-1, 0, 2]}"
    assert traj.contact_distance.min() > -1e-6, "into the ground"

    mech = _scene([{"name": "can", "mass": 1.0, "shape": {"type": "cylinder", "radius": r, "height": height},
                    "initial": {"position": [0, 0, 0.5 * height]}}], collisions={"mode": "ground"})
    traj = dojo.simulate(mech, steps=100)
    assert set(traj.status) == {"success"}
    assert np.abs(traj.x[-1, 0] - traj.x[0, 0]).max() < 1e-3 and np.abs(traj.omega[-1, 0]).max() < 1e-6


def test_collisions_all_names_and_exclusions():
    """mode all: every body on the ground (<body>/ground), every pair not joined parent-child
    (<a>/<b>, in body order), the excluded pairs and shape pairs without a table entry left out."""
    box = {"type": "box", "size": [0.2, 0.2, 0.2]}
    bodies = [{"name": n, "mass": 1.0, "shape": s, "initial": {"position": [i, 0, 1.0]}}
              for i, (n, s) in enumerate([("a", box), ("b", {"type": "sphere", "radius": 0.1}), ("c", box),
                                          ("d", {"type": "capsule", "radius": 0.05, "height": 0.2}),
                                          ("e", {"type": "cylinder", "radius": 0.1, "height": 0.1})])]
    joints = [{"name": "ja", "type": "floating", "parent": "origin", "child": "a"},
              {"name": "jb", "type": "spherical", "parent": "a", "child": "b", "parent_vertex": [1, 0, 0]},
              {"name": "jc", "type": "floating", "parent": "origin", "child": "c"},
              {"name": "jd", "type": "floating", "parent": "origin", "child": "d"},
              {"name": "je", "type": "floating", "parent": "origin", "child": "e"}]
    spec = spec_from_dict({"name": "all", "timestep": 0.01, "bodies": bodies, "joints": joints,
                           "collisions": {"mode": "all", "exclude": [["c", "d"], ["d", "ground"]]}})
    groups = {}
    for c in build_mechanism(spec).contacts:
        groups.setdefault(c.name.rsplit("/", 1)[0] if c.name.count("/") == 2 else c.name, []).append(c)
    expected = {"a/ground": 8, "b/ground": 1, "c/ground": 8, "e/ground": 8, "a/c": 16, "a/d": 3, "a/e": 24, "b/c": 1,
                "b/d": 1, "b/e": 1, "c/e": 24, "d/e": 3}
    assert {k: len(v) for k, v in groups.items()} == expected
    # a-b are parent and child; c-d and d-ground excluded; e (a cylinder) meets the sphere,
    # the capsule and the boxes (its rims' 8 + 8 points against a box, the box's corners against it)
    assert [c.kind for c in groups["d/e"]] == ["segment_cylinder", "cylinder", "cylinder"]
    assert [c.name for c in groups["b/c"]] == ["b/c"]
    assert [c.name for c in groups["a/d"]] == ["a/d/0", "a/d/1", "a/d/2"]
    assert groups["a/d"][0].kind == "segment_box" and groups["a/c"][0].kind == "corner_box"


def test_bad_collision_input_names_the_field():
    """An unknown body in an exclusion, a restitution out of [0, 1], a contact shape pair
    without a table entry: errors naming the field."""
    from dojo_cli.errors import SceneError

    bodies = [{"name": "a", "mass": 1.0, "shape": {"type": "cylinder", "radius": 0.1, "height": 0.1}},
              {"name": "b", "mass": 1.0, "shape": {"type": "pyramid", "width": 1.0, "height": 1.0}}]
    for collisions, contacts, field in [
        ({"mode": "all", "exclude": [["a", "nobody"]]}, [], "collisions.exclude.0.1"),
        ({"mode": "all", "restitution": 1.5}, [], "collisions.restitution"),
        (None, [{"name": "k", "body": "a", "shape": "body", "against": {"body": "b", "shape": "body"}}], "contacts.0.shape"),
        (None, [{"name": "k", "body": "a", "shape": "body", "radius": 0.1}], "contacts.0.radius"),
    ]:
        with pytest.raises(SceneError) as err:
            _scene(bodies, contacts, collisions)
        assert any(p.field == field for p in err.value.problems), [str(p) for p in err.value.problems]


# ------------------------------------------------------------ cylinders on body b
# MuJoCo (the test extra) as the oracle of the sphere- and capsule-cylinder pairs: its convex
# collision (GJK for the distance, EPA for a penetration) with its tolerance tightened far
# below ours; the geometry matches to the tolerance of its iterations.
MUJOCO_CCD_TOLERANCE = 1e-12
MUJOCO_ATOL = 1e-8
# Its normal comes from the GJK simplex, accurate to ~1e-7 (measured 4e-10 to 1.1e-7)
MUJOCO_NORMAL_ATOL = 1e-6
CYLINDER_RADIUS, CYLINDER_HALF = 0.2, 0.25  # m
CYLINDER_B = [0.0, 0.0, -CYLINDER_HALF, 0.0, 0.0, CYLINDER_HALF, CYLINDER_RADIUS]  # caps' centres, radius


def _mujoco_pair(kind_a: str, size_a: str):
    """A MuJoCo model of two free bodies: body a's geom (sphere or capsule) and a cylinder, both
    at their body's origin; margins wide enough that separated geoms report their distance."""
    import mujoco

    xml = f"""<mujoco><option gravity="0 0 0" ccd_tolerance="{MUJOCO_CCD_TOLERANCE}" ccd_iterations="500"/><worldbody>
      <body name="a"><freejoint/><geom type="{kind_a}" size="{size_a}" margin="10"/></body>
      <body name="b"><freejoint/><geom type="cylinder" size="{CYLINDER_RADIUS} {CYLINDER_HALF}" margin="10"/></body>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    return m, mujoco.MjData(m)


def _mujoco_contact(model, data, xa, qa, xb, qb):
    """(distance, normal from the cylinder towards body a) of MuJoCo's one contact."""
    import mujoco

    data.qpos[:] = np.concatenate([xa, qa, xb, qb])
    mujoco.mj_forward(model, data)
    assert data.ncon == 1, f"MuJoCo found {data.ncon} contacts"
    c = data.contact[0]
    normal = np.asarray(c.frame[:3])  # MuJoCo's points from geom 1 (body a's) to geom 2
    return float(c.dist), -normal if tuple(c.geom) == (0, 1) else normal


def _cylinder_poses(seed: int, spread: float):
    rng = np.random.default_rng(seed)
    return spread * rng.normal(size=3), random_quaternion(rng), 0.1 * rng.normal(size=3), random_quaternion(rng)


@pytest.mark.parametrize("seed", range(12))
def test_capsule_and_sphere_against_a_cylinder_match_mujoco(seed):
    """Random poses, apart and overlapping (the closest point of the cylinder on its side, a cap
    or a rim): a capsule's segment_cylinder contact (the segment point of least signed
    distance) and a sphere's cylinder contact give MuJoCo's distance and normal, and their
    Jacobians match central differences. A segment that meets the cylinder is left out of
    both: its deepest point (ours, as segment_box's) is not the least translation that
    separates the shapes (MuJoCo's EPA), and it may sit on a kink of the signed distance."""
    half, radius = 0.3, 0.1
    xa, qa, xb, qb = _cylinder_poses(seed, spread=0.35)
    capsule = dict(kind="segment_cylinder", xa=xa, qa=qa, offset=np.zeros(3), radius=radius,
                   shape_a=np.array([0.0, 0.0, half, 0.0]), xb=xb, qb=qb, shape=CYLINDER_B)
    sphere = dict(capsule, kind="cylinder", shape_a=np.zeros(4), radius=0.15)
    for name, case, mujoco_geom in (("capsule", capsule, ("capsule", f"{radius} {half}")),
                                    ("sphere", sphere, ("sphere", "0.15"))):
        if name == "capsule" and _geometry(case, False)["distance"] <= -radius:
            continue
        g = _check_jacobians(f"{name}-cylinder {seed}", case)
        distance, normal = _mujoco_contact(*_mujoco_pair(*mujoco_geom), xa, qa, xb, qb)
        assert abs(g["distance"] - distance) < MUJOCO_ATOL, f"{name} seed {seed}: {g['distance']} vs MuJoCo {distance}"
        error = np.abs(np.asarray(g["normal"]) - normal).max()
        assert error < MUJOCO_NORMAL_ATOL, f"{name} seed {seed}: normal {g['normal']} vs MuJoCo {normal}: {error:.1e}"


def test_capsule_dropped_across_a_cylinder_rests_on_its_top():
    """A capsule dropped across a horizontal cylinder fixed to the world (a log) comes to rest
    with its axis at the cylinder's top plus its radius, every step converged and no deeper
    than the solver's tolerance: the segment_cylinder contact and the end spheres, in a step."""
    rod_radius, log_radius, log_height = 0.05, 0.2, 0.5
    along_x, along_y = [0.7071067811865476, 0.0, 0.7071067811865476, 0.0], [0.7071067811865476, -0.7071067811865476, 0, 0]
    bodies = [{"name": "log", "mass": 5.0, "shape": {"type": "cylinder", "radius": log_radius, "height": 1.0,
                                                     "orientation_offset": along_y}},
              {"name": "rod", "mass": 0.5, "shape": {"type": "capsule", "radius": rod_radius, "height": 0.6,
                                                     "orientation_offset": along_x},
               "initial": {"position": [0.0, 0.1, 0.85]}}]
    scene = {"name": "log", "timestep": 0.01, "bodies": bodies,
             "joints": [{"name": "held", "type": "fixed", "parent": "origin", "child": "log",
                         "parent_vertex": [0.0, 0.0, log_height]},
                        {"name": "free", "type": "floating", "parent": "origin", "child": "rod"}],
             "contacts": [{"name": "rest", "body": "rod", "shape": "body", "against": {"body": "log", "shape": "body"},
                           "friction": 0.5}]}
    mech = build_mechanism(spec_from_dict(scene))
    assert [c.kind for c in mech.contacts] == ["segment_cylinder", "cylinder", "cylinder"]
    traj = dojo.simulate(mech, steps=100, opts=dojo.SolverOptions(rtol=1e-10, btol=1e-10))
    assert set(traj.status) == {"success"}, f"failed steps {sum(s != 'success' for s in traj.status)}"
    rest = log_height + log_radius + rod_radius
    assert abs(traj.x[-1, 1, 2] - rest) < 1e-6, f"rests at {traj.x[-1, 1, 2]:.6f} m, its top at {rest} m"
    assert np.abs(traj.v[-1, 1]).max() < 1e-6, f"still moving: {traj.v[-1, 1]}"
    assert traj.contact_distance.min() > -1e-6, f"{traj.contact_distance.min():.2e} m into the log"
