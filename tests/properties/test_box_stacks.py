"""Boxes on boxes (issue 12, item 4): box-box contacts are each box's corners against the
other box (core/maximal/collision.h, corner_box; docs/physics.md, "Collision table")."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict

# The interior point's relaxed complementarity keeps a resting contact ~ btol / impulse
# apart (docs/physics.md, "Contacts"); up a stack of unit boxes at the default btol = 1e-4
# those gaps add to ~7 mm. 1e-6 makes them micrometres, so that what is measured is the
# contacts' holding, not the relaxation.
BTOL = 1e-6
PENETRATION_TOL = 1e-6  # m: the equality residual (rtol 1e-6) allows this order


def _floating_boxes(bodies, collisions, steps_scene=None):
    scene = {
        "name": "boxes", "timestep": 0.01, "solver": {"btol": BTOL},
        "bodies": bodies,
        "joints": [{"name": f"free_{b['name']}", "type": "floating", "parent": "origin", "child": b["name"]} for b in bodies],
        "collisions": collisions,
    }
    return build_mechanism(spec_from_dict(scene))


def test_a_stack_of_five_boxes_stands_for_ten_seconds():
    names = [f"box{i}" for i in range(5)]
    bodies = [{"name": n, "mass": 1.0, "shape": {"type": "box", "size": [1, 1, 1]},
               "initial": {"position": [0, 0, 0.5 + i]}} for i, n in enumerate(names)]
    # neighbours touch; the others and the upper boxes' ground contacts are left out
    exclude = [[names[i], names[j]] for i in range(5) for j in range(i + 2, 5)] + [[n, "ground"] for n in names[1:]]
    mech = _floating_boxes(bodies, {"mode": "all", "friction": 0.5, "exclude": exclude})
    assert mech.nc == 8 + 4 * 16
    traj = dojo.simulate(mech, steps=1000)
    assert set(traj.status) == {"success"}
    drift = np.abs(traj.x - traj.x[0]).max()
    assert drift < 1e-3, f"the stack moved {drift:.3g} m"
    assert traj.contact_distance.min() > -PENETRATION_TOL
    # upright: every box keeps the identity orientation (up to sign)
    assert np.abs(np.abs(traj.q[:, :, 0]) - 1.0).max() < 1e-9


@pytest.mark.parametrize("model", ["nonlinear", "impact"])
def test_a_box_dropped_corner_first_on_another_comes_to_rest(model):
    """A unit box, turned so that a corner points (nearly) down, falls 0.1 m onto a 4 x 4 x 1
    table box resting on the ground, lands on that corner, topples and comes to rest on a
    face, on the table: upright, still, not in it."""
    tilt = 0.85 * np.arccos(1.0 / np.sqrt(3.0))  # a little short of corner-down, so it topples
    axis = np.array([1.0, -1.0, 0.0]) / np.sqrt(2.0)
    q0 = [np.cos(tilt / 2), *(np.sin(tilt / 2) * axis)]
    bodies = [
        {"name": "table", "mass": 10.0, "shape": {"type": "box", "size": [4, 4, 1]}, "initial": {"position": [0, 0, 0.5]}},
        {"name": "box", "mass": 1.0, "shape": {"type": "box", "size": [1, 1, 1]},
         "initial": {"position": [0.1, 0.05, 1.0 + np.sqrt(3.0) / 2 + 0.1], "orientation": q0}},
    ]
    mech = _floating_boxes(bodies, {"mode": "all", "model": model, "friction": 0.5})
    traj = dojo.simulate(mech, steps=500)
    assert set(traj.status) == {"success"}
    box = 1
    first_touch = int(np.argmax(traj.contact_distance[:, mech.nc // 2:].min(axis=1) < 1e-3))
    assert first_touch > 0, "it fell before touching"
    assert abs(traj.x[-1, box, 2] - 1.5) < 1e-4, "resting on a face on the table (centre 0.5 m above its top)"
    assert abs(abs(traj.q[-1, box, 0]) - 1.0) < 1e-6 or np.sort(np.abs(traj.q[-1, box]))[-2] > 0.7, "a face down"
    assert np.abs(traj.v[-20:, box]).max() < 1e-5 and np.abs(traj.omega[-20:, box]).max() < 1e-5, "at rest"
    assert traj.contact_distance.min() > -PENETRATION_TOL
