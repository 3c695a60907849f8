"""Dojo.jl's API rows (docs/coverage.md): get_contact, get_node (origin, contacts),
root_to_leaves_ordering with its flags, the contact geometry queries get_sdf,
contact_location, contact_normal and contact_tangent, and add_external_force! semantics
(several forces on one body add)."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.math.quaternion import rotate


def test_get_contact_and_get_node():
    mech = dojo.load_scene("box")
    c = dojo.get_contact(mech, "corner_ppm")
    assert c.name == "corner_ppm" and dojo.get_contact(mech, 1) is c
    origin = dojo.get_node(mech, "origin")
    assert origin.name == "origin" and origin.index == -1
    assert dojo.get_node(mech, "corner_ppm") is c
    assert dojo.get_node(mech, "box") is mech.bodies[0]
    assert dojo.get_node(mech, "floating_base") is mech.joints[0]
    with pytest.raises(KeyError, match="not 'origin', a body, a joint or a contact"):
        dojo.get_node(mech, "corner")


def test_root_to_leaves_ordering_flags():
    """fourbar: a loop closed by j5. Each joint comes after its parent body and before its
    child; the loop joint is out by default and last with exclude_loop_joints=False."""
    mech = dojo.load_scene("fourbar")
    order = dojo.root_to_leaves_ordering(mech)
    every = dojo.root_to_leaves_ordering(mech, exclude_origin=False, exclude_loop_joints=False)
    loop = [mech.joints[j].name for j in mech.loop_joints]
    assert loop and not set(loop) & set(order)
    assert every == ["origin", *order, *loop]
    names = [j.name for j in mech.joints]
    for j in mech.tree_joints:
        joint = mech.joints[j]
        here = order.index(joint.name)
        assert order[here + 1] == mech.bodies[joint.child].name
        if joint.parent >= 0:
            assert order.index(mech.bodies[joint.parent].name) < here
    assert sorted(order) == sorted([b.name for b in mech.bodies] + [n for n in names if n not in loop])


def test_box_corner_sdf_location_normal_tangent():
    """A box corner (a point, radius 0) against the ground z = 0: the distance is the
    corner's height x + R(q) offset, along the tumble of the built-in toss."""
    mech = dojo.load_scene("box")
    traj = dojo.simulate(mech, steps=60)
    body = mech.bodies[0]
    for k in (0, 25, 60):
        z = traj.state(k)
        for i, c in enumerate(mech.contacts):
            corner = traj.x[k, c.body] + rotate(traj.q[k, c.body], c.offset)
            assert dojo.get_sdf(mech, c.name, z) == pytest.approx(corner[2] - c.radius, abs=1e-12)
            np.testing.assert_allclose(dojo.contact_location(mech, i, z), corner - c.radius * np.array([0, 0, 1.0]),
                                       atol=1e-12)
            np.testing.assert_array_equal(dojo.contact_normal(mech, c, z), [0.0, 0.0, 1.0])
            t = dojo.contact_tangent(mech, c, z)
            np.testing.assert_allclose(t @ t.T, np.eye(2), atol=1e-12)
            np.testing.assert_allclose(t @ [0.0, 0.0, 1.0], 0.0, atol=1e-12)
            # the same gap the step's complementarity holds >= 0 (stored per step)
            if k > 0:
                assert dojo.get_sdf(mech, c, z) == pytest.approx(traj.contact_distance[k - 1, i], abs=1e-9)
    assert body.name == "box"


def test_ball_on_box_sdf():
    """A ball (r = 0.5) above a unit box's top face (z = 0.5): sdf = z - 0.5 - r, normal +z,
    contact point at the ball's bottom; past an edge the normal points from the edge to the
    ball's centre."""
    mech = dojo.load_scene("ball_on_box")
    z = dojo.initial_state(mech)
    ball = mech.body_index("ball")
    g = dojo.contact_geometry(mech, "ball_block", z)
    centre = z.reshape(mech.nb, 13)[ball, 0:3]
    assert g.distance == pytest.approx(centre[2] - 0.5 - 0.5, abs=1e-12)
    np.testing.assert_allclose(g.normal, [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(g.point_a, centre - [0, 0, 0.5], atol=1e-12)
    np.testing.assert_allclose(g.point_b, [centre[0], centre[1], 0.5], atol=1e-12)
    # beside the top edge x = 0.5: the nearest point is on the edge (0.5, y, 0.5)
    state = z.reshape(mech.nb, 13).copy()
    state[ball, 0:3] = [0.9, 0.0, 0.8]
    g = dojo.contact_geometry(mech, "ball_block", state.reshape(-1))
    gap = np.array([0.4, 0.0, 0.3])
    assert g.distance == pytest.approx(np.linalg.norm(gap) - 0.5, abs=1e-12)
    np.testing.assert_allclose(g.normal, gap / np.linalg.norm(gap), atol=1e-12)


def test_add_external_force_semantics(tmp_path):
    """Dojo's add_external_force!: forces on one body add. Two forces (one in the body
    frame at a vertex, one in the world frame) give the run of their one summed wrench,
    and a free body in zero gravity under a constant world force F moves as F t^2 / (2 m)."""
    scene = """\
format: 1
name: pushed
timestep: 0.01
steps: 50
gravity: [0, 0, 0]
bodies:
  - {name: block, shape: {type: box, size: [0.2, 0.3, 0.4]}, mass: 2.0}
joints:
  - {name: free, type: floating, parent: origin, child: block}
external:
"""
    two = scene + ("  - {body: block, force: [1.0, 0, 0], vertex: [0, 0.1, 0], frame: body}\n"
                   "  - {body: block, force: [0, 0, 0.5], frame: world}\n")
    one = scene + ("  - {body: block, force: [1.0, 0, 0.5], torque: [0, 0, -0.1], frame: body}\n")
    (tmp_path / "two.yaml").write_text(two)
    (tmp_path / "one.yaml").write_text(one)
    a = dojo.simulate(dojo.load_scene(str(tmp_path / "two.yaml")))
    # p x F = (0, 0.1, 0) x (1, 0, 0) = (0, 0, -0.1): the summed wrench's torque; the world
    # force (0, 0, 0.5) is also (0, 0, 0.5) in the body frame only while the block has not
    # turned, so compare the first step, where both runs start from the same pose
    b = dojo.simulate(dojo.load_scene(str(tmp_path / "one.yaml")))
    np.testing.assert_allclose(a.state(1), b.state(1), atol=1e-12)
    pure = scene + "  - {body: block, force: [0.4, -0.2, 0.6], frame: world}\n"
    (tmp_path / "pure.yaml").write_text(pure)
    c = dojo.simulate(dojo.load_scene(str(tmp_path / "pure.yaml")))
    t = c.time
    np.testing.assert_allclose(c.x[:, 0], np.outer(t**2 / (2 * 2.0), [0.4, -0.2, 0.6]), atol=1e-9)
