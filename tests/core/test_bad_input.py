"""Bad input to the compiled core: a DojoError or a failed status, never a crash or NaN
reported as converged (issue 10, item 9)."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.errors import DojoError, InputError, SceneError
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.status import SolverStatus

SCENES = ["pendulum", "box", "pendulum_limit"]  # Newton, interior point with contacts, with limits


@pytest.mark.parametrize("scene", SCENES)
@pytest.mark.parametrize("where", ["position", "velocity", "orientation", "angular_velocity"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_state_is_a_failed_step(scene, where, bad):
    mech = dojo.load_scene(scene)
    z = dojo.initial_state(mech).copy()
    z[{"position": 0, "velocity": 3, "orientation": 7, "angular_velocity": 11}[where]] = bad
    z_next, result = solve_step(mech, z)
    assert result.status is SolverStatus.NON_FINITE, result.status
    assert not result.success and np.all(np.isnan(z_next)), "no state is reported for a step that was not solved"
    traj = dojo.simulate(mech, steps=3, z0=z)
    assert traj.status == ["non_finite"] * 3, traj.status


@pytest.mark.parametrize("scene", SCENES)
def test_non_finite_input_is_a_failed_step(scene):
    mech = dojo.load_scene(scene)
    u = np.zeros(mech.nu)
    if mech.nu:
        u[0] = np.nan
        _, result = solve_step(mech, dojo.initial_state(mech), u)
        assert result.status is SolverStatus.NON_FINITE
    f = np.zeros((mech.nb, 3))
    f[0, 2] = np.inf
    _, result = solve_step(mech, dojo.initial_state(mech), None, f_ext=f)
    assert result.status is SolverStatus.NON_FINITE


@pytest.mark.parametrize(
    "label", ["bodies.link.mass", "bodies.link.inertia.xx", "gravity.z", "joints.hinge.spring.0", "joints.hinge.damper.0"]
)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_parameter_is_a_scene_error(label, bad):
    mech = dojo.load_scene("pendulum")
    with pytest.raises(SceneError, match="not finite|must be"):
        dojo.with_parameters(mech, [label], [bad])


def test_contact_parameter_not_finite_is_a_scene_error():
    mech = dojo.load_scene("box")
    name = mech.contacts[0].name
    for label in (f"contacts.{name}.friction", f"contacts.{name}.radius", f"contacts.{name}.offset.x"):
        with pytest.raises(SceneError, match="not finite"):
            dojo.with_parameters(mech, [label], [np.nan])


def test_wrong_sizes_and_types_are_input_errors():
    mech = dojo.load_scene("pendulum")
    z = dojo.initial_state(mech)
    with pytest.raises(InputError, match="state must have 13 entries"):
        dojo.step(mech, z[:5])
    with pytest.raises(InputError, match="input must have 1 entries"):
        dojo.step(mech, z, [1.0, 2.0])
    with pytest.raises(InputError, match="not an array of numbers"):
        dojo.step(mech, z, ["a"])
    with pytest.raises(DojoError):
        dojo.maximal_gradients(mech, z[:3])


def test_the_core_rejects_inconsistent_models_with_a_message():
    from dojo_cli import _core

    model_input = _core.ModelInput()
    model_input.mass = [1.0]
    model_input.inertia = [1.0] * 8  # one short
    with pytest.raises(ValueError, match="ModelInput.inertia: expected 9 values, got 8"):
        _core.Model(model_input)
    model_input.inertia = [1.0] * 9
    model_input.parent, model_input.child = [5], [0]
    model_input.parent_vertex = model_input.child_vertex = [0.0] * 3
    model_input.orientation_offset = [1.0, 0.0, 0.0, 0.0]
    model_input.basis = [0.0] * 18
    model_input.constrained = [1] * 6
    with pytest.raises(ValueError, match="invalid body"):
        _core.Model(model_input)


@pytest.mark.parametrize("u", [1e300, -1e308])
def test_overflowing_input_is_never_success(u):
    """Candidates whose residual overflows to inf or NaN are never accepted (the core's
    infinity norm keeps a NaN, as numpy's max did), so the step fails with a finite state."""
    mech = dojo.load_scene("pendulum")
    z_next, result = solve_step(mech, dojo.initial_state(mech), [u])
    assert result.status is not SolverStatus.SUCCESS, result.status
    assert np.all(np.isfinite(z_next)) or result.status is SolverStatus.NON_FINITE
