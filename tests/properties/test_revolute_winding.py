"""Revolute limits of any size (issue 12, item 7b): the limit row measures the angle on
the canonical quaternion, unwrapped to the branch nearest the run's previous angle
(core/kinematics.h limit_row), so a joint winds through several turns and stops at
its bound."""

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.simulation.controller import ConstantController

SCENE = {
    "format": 1, "name": "wind", "timestep": 0.01, "gravity": [0, 0, -9.81], "duration": 3.0, "seed": 0,
    "bodies": [{"name": "bar", "shape": {"type": "box", "size": [0.5, 0.1, 0.1]}, "mass": 1.0}],
    "joints": [{
        "name": "hinge", "type": "revolute", "parent": "origin", "child": "bar", "axis": [0, 0, 1],
        "parent_vertex": [0, 0, 0], "child_vertex": [0, 0, 0],
        "limits": {"lower": [-10.0], "upper": [10.0]}, "initial": {"position": [0.0], "velocity": [0.0]},
    }],
}


@pytest.mark.parametrize("upper", [10.0, 4.0])
def test_a_driven_hinge_winds_past_pi_and_stops_at_its_upper_limit(tmp_path, upper):
    import yaml

    path = tmp_path / "wind.yaml"
    path.write_text(yaml.safe_dump(SCENE))
    mech = dojo.load_scene(str(path), [f"joints.0.limits.upper=[{upper}]"])
    # 0.1 N m about a vertical axis (gravity does no work): the joint spins up and winds
    tr = dojo.simulate(mech, 300, controller=ConstantController(np.array([0.1])))
    assert set(tr.status) == {"success"}
    theta = np.unwrap(tr.minimal_q[:, 0])
    # it reaches the bound on the right branch (4 rad, not 4 - 2 pi) and stays there
    assert theta.max() == pytest.approx(upper, abs=1e-3)
    assert theta[-50:].min() > upper - 0.1
