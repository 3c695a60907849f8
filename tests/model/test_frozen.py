"""A built Mechanism cannot change behind its compiled core: every edit raises.

Before the core, editing ``contact.friction`` on a built mechanism was silently
ignored by the step (the value had been copied into the step's structure); now the
dataclasses are frozen, the arrays read-only and Mechanism attributes unsettable,
and a new value means a new Mechanism (with_parameters, --set), whose physics does
change.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.simulation.initial import initial_state


def test_contact_friction_edit_raises_and_with_parameters_changes_the_physics():
    mech = dojo.load_scene("sliding_box")
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.contacts[0].friction = 0.1
    with pytest.raises(ValueError, match="read-only"):
        mech.contacts[0].offset[2] = 1.0
    with pytest.raises(TypeError):
        mech.contacts[0].params["normal"] = np.zeros(3)
    slippery = dojo.with_parameters(mech, ["contacts." + mech.contacts[0].name + ".friction"], [0.05])
    assert slippery.contacts[0].friction == 0.05 and mech.contacts[0].friction != 0.05
    a = dojo.simulate(mech, steps=30).x[-1]
    b = dojo.simulate(slippery, steps=30).x[-1]
    assert np.max(np.abs(a - b)) > 1e-3, "lower friction must change the slide"


@pytest.mark.parametrize("name", ["mass", "inertia", "gravity", "spring", "basis", "limit_bound"])
def test_mechanism_arrays_are_read_only(name):
    mech = dojo.load_scene("pendulum_limit")
    with pytest.raises(ValueError, match="read-only"):
        getattr(mech, name).reshape(-1)[0] = 1.0


def test_mechanism_attributes_cannot_be_set():
    mech = dojo.load_scene("pendulum")
    for name, value in (("timestep", 0.5), ("initial", np.zeros(13)), ("bodies", ()), ("core", None)):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(mech, name, value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.bodies[0].mass = 3.0
    with pytest.raises(ValueError, match="read-only"):
        mech.initial_t0[0] = 1.0


def test_with_run_setup_shares_the_core_and_keeps_the_original():
    mech = dojo.load_scene("pendulum")
    z = dojo.initial_state(mech)
    moved = mech.with_run_setup(initial=z * 0 + z, default_steps=7)
    assert moved.core is mech.core and moved.core_data is not mech.core_data
    assert moved.default_steps == 7 and mech.default_steps != 7
    with pytest.raises(TypeError, match="not run set-up fields"):
        mech.with_run_setup(mass=2.0)
