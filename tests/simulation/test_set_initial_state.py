"""dojo.initial_state(mech, positions=..., velocities=...): a new initial state at t = 0 in a
loaded scene, without reloading it (issue 27, item 5).

Oracle: the same values written into the scene file (bodies' ``initial``) give the same run;
both go through the first-step solve of simulation.initial, so the runs agree to rounding.
"""

import numpy as np
import pytest

import dojo_cli as dojo

# Both runs solve the same equations from the same state; the scene's path builds the
# state through the minimal coordinates of the floating base (a rotation vector), which
# rounds the pose at 1e-16 and the solves amplify it little over a toss.
_RUN_TOLERANCE = 1e-9

_POSE = [0.3, -0.2, 0.9, 0.9238795325112867, 0.0, 0.3826834323650898, 0.0]   # 45 degrees about y
_VELOCITY = [1.5, -0.5, 2.0, 4.0, -3.0, 6.0]


def test_toss_from_set_state_is_the_scene_files_toss():
    mech = dojo.load_scene("box")
    z = dojo.initial_state(mech, positions={"box": _POSE}, velocities={"box": _VELOCITY})
    ours = dojo.simulate(mech, steps=150, z0=z)
    written = dojo.load_scene("box", {"bodies.box.initial": {
        "position": _POSE[:3], "orientation": _POSE[3:], "velocity": _VELOCITY[:3], "angular_velocity": _VELOCITY[3:]}})
    theirs = dojo.simulate(written, steps=150)
    assert np.max(np.abs(ours.x - theirs.x)) < _RUN_TOLERANCE, f"positions differ by {np.max(np.abs(ours.x - theirs.x)):.2e}"
    assert np.max(np.abs(ours.q - theirs.q)) < _RUN_TOLERANCE
    # the state holds the given velocities at t = 0 (the knot velocities of the run)
    assert np.allclose(ours.v[0, 0], _VELOCITY[:3], atol=1e-6), ours.v[0, 0]
    assert np.allclose(ours.omega[0, 0], _VELOCITY[3:], atol=1e-6), ours.omega[0, 0]
    # and the contact happens: the toss lands (not a free flight the test could pass by)
    assert np.min(theirs.x[:, 0, 2]) < 0.45


def test_array_form_and_bodies_left_out_keep_the_scene():
    mech = dojo.load_scene("box")
    as_map = dojo.initial_state(mech, positions={"box": _POSE}, velocities={"box": _VELOCITY})
    as_array = dojo.initial_state(mech, positions=np.array([_POSE]), velocities=np.array([_VELOCITY]))
    assert np.array_equal(as_map, as_array)
    only_velocity = dojo.initial_state(mech, velocities={"box": _VELOCITY}).reshape(-1, 13)
    assert np.allclose(only_velocity[0, 0:3], dojo.initial_state(mech).reshape(-1, 13)[0, 0:3])


@pytest.mark.parametrize("kwargs, message", [
    ({"positions": {"crate": _POSE}}, "unknown body 'crate'"),
    ({"positions": {"box": _POSE[:3]}}, "expected 7 numbers"),
    ({"velocities": np.zeros((2, 6))}, "one row per body"),
    ({"positions": {"box": [0, 0, 1, 2, 0, 0, 0]}}, "norm 2"),
])
def test_bad_values_name_the_problem(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dojo.initial_state(dojo.load_scene("box"), **kwargs)
