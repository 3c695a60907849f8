"""import-urdf --contacts collision: each collision element becomes its shape against the
ground (tests/data/urdf/primitives.urdf has one of each kind), a mesh its reduced convex
hull, which holds the mesh to the stated error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh

import dojo_cli as dojo
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.collisions import reduced_hull
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import HULL_VERTICES, UrdfOptions, read_urdf

DATA = Path(__file__).resolve().parent.parent / "data" / "urdf"
PRIMITIVES = DATA / "primitives.urdf"
_SCALE = np.array([1.0, 0.6, 0.4])  # the mesh's scale in primitives.urdf
_ROUNDING = 1e-12


def _blob() -> np.ndarray:
    return np.asarray(trimesh.load(DATA / "meshes" / "blob.obj", force="mesh").vertices) * _SCALE


def _directions(n: int = 2000) -> np.ndarray:
    d = np.random.default_rng(0).normal(size=(n, 3))
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def test_each_collision_element_becomes_its_shape():
    result = read_urdf(PRIMITIVES, UrdfOptions(floating=True, contacts="collision", friction=0.4))
    contacts = result.scene["contacts"]
    assert [c["name"] for c in contacts] == [f"base_{k}" for k in range(6)]
    assert [c["shape"]["type"] for c in contacts] == ["box", "capsule", "sphere", "cylinder", "capsule", "hull"]
    assert contacts[3]["rim_points"] == 0, "a cylinder link: its rolling rims only"
    # the thin box (0.4 x 0.02 x 0.03) is the capsule around it: its corners on or inside it
    thin = contacts[1]["shape"]
    assert thin["height"] == 0.4 and abs(thin["radius"] - 0.5 * np.hypot(0.02, 0.03)) < _ROUNDING
    rot, centre = matrix_from_quaternion(np.array(thin["orientation_offset"])), np.array(thin["position_offset"])
    box_rot = matrix_from_quaternion(np.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0]))
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * [0.2, 0.01, 0.015]
    base_com = np.array(contacts[0]["shape"]["position_offset"])  # the box sits at the link origin
    local = (base_com + np.array([0.0, 0.15, -0.05]) + corners @ box_rot.T - centre) @ rot
    along = np.clip(local[:, 2], -0.2, 0.2)
    assert np.all(np.hypot(local[:, 0], local[:, 1]) ** 2 + (local[:, 2] - along) ** 2 <= thin["radius"] ** 2 + _ROUNDING)
    hull = contacts[5]["shape"]
    assert 4 <= len(hull["vertices"]) <= HULL_VERTICES < 162
    mech = build_mechanism(spec_from_dict(result.scene))
    assert mech.nc == 8 + 2 + 1 + 2 + 2 + len(hull["vertices"]) and all(c.friction == 0.4 for c in mech.contacts)
    assert {c.kind for c in mech.contacts} == {"halfspace", "circle_halfspace"}


def test_mesh_hull_holds_the_mesh_to_its_error():
    points = _blob()
    vertices, error = reduced_hull(points, HULL_VERTICES)
    assert len(vertices) == HULL_VERTICES
    assert all(np.any(np.all(v == points, axis=1)) for v in vertices), "vertices of the mesh"
    # the hull inflated by the error is lower than the mesh in every direction (its support
    # function is larger): against any plane it never lets the mesh through
    n = _directions()
    assert np.all((vertices @ n.T).max(axis=0) + error >= (points @ n.T).max(axis=0) - _ROUNDING)
    # and the error is the Hausdorff distance: some direction needs all of it (to sampling)
    gap = ((points @ n.T).max(axis=0) - (vertices @ n.T).max(axis=0)).max()
    assert 0.8 * error <= gap <= error + _ROUNDING
    # the stated size of the error (docs/urdf.md): 7.4 % of this ellipsoid's largest semi-axis
    assert 0 < error < 0.1 * 0.05 * _SCALE.max()
    # the importer's hull is this one, with the error as its radius
    shape = read_urdf(PRIMITIVES, UrdfOptions(floating=True, contacts="collision")).scene["contacts"][5]["shape"]
    assert np.allclose(shape["vertices"], vertices, rtol=0, atol=_ROUNDING) and abs(shape["radius"] - error) < _ROUNDING


@pytest.mark.parametrize("most", [8, 32])
def test_a_box_mesh_reduces_exactly(most):
    points = trimesh.creation.box((0.3, 0.1, 0.05)).vertices
    vertices, error = reduced_hull(points, most)
    assert len(vertices) == 8 and error == 0.0


def test_dropped_primitives_stay_above_the_ground():
    result = read_urdf(PRIMITIVES, UrdfOptions(floating=True, contacts="collision"))
    result.scene["joints"][0]["initial"]["position"][2] += 0.2
    result.scene["joints"][0]["initial"]["position"][3] = 0.4  # tilted: it lands on an edge and rolls
    mech = build_mechanism(spec_from_dict(result.scene))
    traj = dojo.simulate(mech, steps=100)
    assert set(traj.status) == {"success"}
    assert traj.contact_distance.min() > -1e-3 and traj.contact_normal_impulse[-1].sum() > 0


def test_self_collision_pairs_the_shapes_of_bodies_not_joined(tmp_path):
    robot, packages = DATA / "robot.urdf", str(DATA / "packages")
    result = read_urdf(robot, UrdfOptions(floating=True, contacts="collision", self_collision=True, package_path=[packages]))
    ground = [c for c in result.scene["contacts"] if c["against"] == "ground"]
    pairs = [c for c in result.scene["contacts"] if c["against"] != "ground"]
    joined = {frozenset((j["parent"], j["child"])) for j in result.scene["joints"]}
    # the collision table's body pairs (docs/physics.md) the import pairs: a cylinder meets spheres
    # and capsules only (its pairs with boxes and hulls, 24 contacts and more, multiply a robot's)
    table = {frozenset(p) for p in [("sphere",), ("capsule",), ("box",), ("sphere", "capsule"), ("sphere", "box"),
                                    ("capsule", "box"), ("sphere", "cylinder"), ("capsule", "cylinder")]}
    shapes = [(c["body"], c["shape"]["type"]) for c in ground]
    expected = sum(1 for i, (a, ka) in enumerate(shapes) for b, kb in shapes[i + 1:]
                   if a != b and frozenset((a, b)) not in joined and frozenset((ka, kb)) in table)
    assert pairs and len(pairs) == expected
    assert any("cylinder" in (c["shape"]["type"], c["against"]["shape"]) for c in pairs)
    for c in pairs:
        assert frozenset((c["body"], c["against"]["body"])) not in joined and c["body"] != c["against"]["body"]
        assert frozenset((c["shape"]["type"], c["against"]["shape"])) in table
    assert build_mechanism(spec_from_dict(result.scene)).nc > len(ground)
    from typer.testing import CliRunner

    from dojo_cli.cli.app import app

    res = CliRunner().invoke(app, ["import-urdf", str(robot), "-o", str(tmp_path / "r.yaml"), "--self-collision"])
    assert res.exit_code == 2 and "--self-collision: needs --contacts collision" in res.output


# A floating base (a 0.4 x 0.3 x 0.1 box) with an arm whose hand (the forearm's sphere of
# radius 0.05, 0.23 below the shoulder at (0.15, 0, 0.25)) reaches into the base box at the
# zero configuration, and a tail sphere on the base's far side. Pairs not joined
# parent-child: base-forearm (overlapping), upper-tail and forearm-tail (clear).
_OVERLAPPING = """<robot name="overlapping">
  <link name="base">
    <inertial><mass value="2"/><inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.4 0.3 0.1"/></geometry></collision>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><origin xyz="0.15 0 0.25"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/>
  </joint>
  <link name="upper">
    <inertial><origin xyz="0 0 0.1"/><mass value="0.5"/><inertia ixx="0.002" iyy="0.002" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.1"/><geometry><capsule radius="0.03" length="0.1"/></geometry></collision>
  </link>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="forearm"/><origin xyz="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/>
  </joint>
  <link name="forearm">
    <inertial><origin xyz="0 0 -0.12"/><mass value="0.5"/><inertia ixx="0.002" iyy="0.002" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 -0.23"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <joint name="tail_joint" type="revolute">
    <parent link="base"/><child link="tail"/><origin xyz="-0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="10"/>
  </joint>
  <link name="tail">
    <inertial><mass value="0.3"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
</robot>
"""


def _box_distance(point, half) -> float:
    """Signed distance of a point from an axis-aligned box centred at the origin."""
    excess = np.abs(point) - half
    outside = np.linalg.norm(np.maximum(excess, 0.0))
    return float(outside if outside > 0.0 else excess.max())


def test_self_collision_leaves_out_pairs_overlapping_at_the_zero_configuration(tmp_path):
    path = tmp_path / "overlapping.urdf"
    path.write_text(_OVERLAPPING)
    result = read_urdf(path, UrdfOptions(floating=True, contacts="collision", self_collision=True, meshes=False))
    pairs = {frozenset((c["body"], c["against"]["body"])) for c in result.scene["contacts"] if c["against"] != "ground"}
    # candidates (not parent-child): base-forearm, upper-tail, forearm-tail; base-forearm overlaps
    assert pairs == {frozenset(("upper", "tail")), frozenset(("forearm", "tail"))}
    assert any("1 pairs that overlap or touch at the zero configuration" in w and "base-forearm" in w
               for w in result.warnings)
    # the left-out pair does overlap at the zero configuration: the hand's sphere, from the
    # URDF's numbers (shoulder at (0.15, 0, 0.25), the sphere 0.23 below it), reaches 0.08
    # into the base box (half sizes 0.2, 0.15, 0.05 about the base origin)
    hand = np.array([0.15, 0.0, 0.25 - 0.23])
    assert _box_distance(hand, np.array([0.2, 0.15, 0.05])) - 0.05 == pytest.approx(-0.08, abs=1e-12)
    # and the robot imported with --self-collision falls, lands and settles with every step solved
    mech = build_mechanism(spec_from_dict(result.scene))
    traj = dojo.simulate(mech, steps=150)
    assert set(traj.status) == {"success"}
    assert traj.contact_distance.min() > -1e-3
    base = mech.body_index("base")
    assert traj.contact_normal_impulse[-1].sum() > 0 and abs(traj.v[-1, base]).max() < 0.05
