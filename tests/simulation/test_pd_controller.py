"""The PD controller in the core's run loop (core/maximal/pd_controller.h): the law against
its analytic value, and a PD-controlled run stepped a block at a time by the core's rollout
against the same run stepped one state at a time by the Python loop with the law written
out in numpy, as it was evaluated before it moved into the core: bit for bit, every dataset
of the run, failed steps, aborts and interrupted runs included. And an open-loop controller
clamped to the actuators' ranges, stepped a block at a time as open-loop ones are."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.errors import SolverError
from dojo_cli.model.controller import (
    ClampedInputs, ConstantController, Controller, PDController, ScheduleController, core_law,
)
from dojo_cli.physics.coordinates import interleave_minimal, minimal_to_maximal
from dojo_cli.scene import robots
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.stand import add_stand
from dojo_cli.scene.urdf import UrdfOptions, read_urdf
from dojo_cli.simulation.integrators import Rk4, Variational
from dojo_cli.simulation.run import run_scene
from dojo_cli.simulation.trajectory import TrajectoryRecorder

from tests.simulation.numpy_pd import NumpyPD

# The minimal coordinates and velocities of a state built from them come back to rounding
# (coordinates.h: the round trip min -> max -> min; rotation vectors, quaternions, a
# difference over h), so the law's value is compared at this relative tolerance.
LAW_RTOL = 1e-10
STEPS = 120  # 1.2 s at h = 0.01: the quadrupeds settle onto their PD and stand


def _go1_stand():
    """go1 as `dojo import-urdf go1.urdf --stand --contacts feet --merge-fixed` writes it."""
    root = robots.example_robot_data_root()
    assert root is not None, f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})"
    path = next((root / "robots").rglob("go1.urdf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the importer's notes (unmodelled friction, ...)
        result = read_urdf(path, UrdfOptions(floating=True, contacts="feet", merge_fixed=True, meshes=False))
    add_stand(result.scene, result, path, str(path))
    return build_mechanism(spec_from_dict(result.scene, file=str(path)))


def _assert_same_run(fast, slow, what):
    for name in vars(slow):
        a, b = getattr(fast, name), getattr(slow, name)
        if isinstance(b, np.ndarray):
            assert a.shape == b.shape, f"{what}: {name} shape {a.shape} vs {b.shape}"
            if a.dtype.kind == "f":
                assert np.array_equal(a, b, equal_nan=True), (
                    f"{what}: {name} differs by {np.nanmax(np.abs(a - b)):.2e}")
            else:
                assert np.array_equal(a, b), f"{what}: {name}"
        else:
            assert a == b, f"{what}: {name}"


def test_the_law_is_kp_kd_on_the_minimal_state():
    """At a state built from chosen coordinates theta and velocities theta_dot (hopper: a
    planar joint's two translations and angle, two revolute joints and a prismatic one), the
    core's law gives kp (target - theta) + kd (velocity_target - theta_dot); through an
    output map O, O tau; clamped, each input within its bounds."""
    mech = dojo.load_scene("hopper")
    rng = np.random.default_rng(0)
    nf = mech.nf
    theta, rate = rng.uniform(-0.5, 0.5, nf), rng.uniform(-2.0, 2.0, nf)
    z = minimal_to_maximal(mech, interleave_minimal(mech, theta, rate))
    kp, kd = rng.uniform(10.0, 100.0, nf), rng.uniform(0.5, 5.0, nf)
    target, velocity_target = rng.uniform(-0.5, 0.5, nf), rng.uniform(-1.0, 1.0, nf)
    tau = kp * (target - theta) + kd * (velocity_target - rate)

    u = PDController(kp, kd, target, velocity_target)(mech, 0, z)
    np.testing.assert_allclose(u, tau, rtol=LAW_RTOL, atol=LAW_RTOL * np.abs(tau).max(), err_msg="u = tau")

    output = np.diag(1.0 / rng.uniform(1.0, 4.0, nf))  # joint actuators of gains 1..4
    output[0, 1] = 0.5  # (and an input that mixes two coordinates: any map)
    pd = PDController(kp, kd, target, velocity_target, output)
    np.testing.assert_allclose(pd(mech, 0, z), output @ tau, rtol=LAW_RTOL, atol=LAW_RTOL * np.abs(tau).max(),
                               err_msg="u = O tau")

    bound = 0.5 * np.abs(output @ tau)
    clamped = ClampedInputs(pd, -bound, bound)(mech, 0, z)
    np.testing.assert_allclose(clamped, np.sign(output @ tau) * bound, rtol=LAW_RTOL, err_msg="u at its bounds")
    wide = ClampedInputs(pd, -np.inf * bound, 10 * bound)(mech, 0, z)
    np.testing.assert_allclose(wide, output @ tau, rtol=LAW_RTOL, atol=LAW_RTOL * np.abs(tau).max(),
                               err_msg="u inside its bounds")


def test_a_law_that_does_not_fit_the_model_is_refused_with_its_field():
    mech = dojo.load_scene("hopper")
    z = dojo.initial_state(mech)
    ones = np.ones(mech.nf)
    with pytest.raises(ValueError, match="PD controller kd: expected 6 values, got 5"):
        _core.pd_inputs(mech.core, _core.PDController(ones, ones[:5], ones, ones), z)
    with pytest.raises(ValueError, match="PD controller output: expected 36 values, got 12"):
        _core.pd_inputs(mech.core, _core.PDController(ones, ones, ones, ones, np.ones(12)), z)
    law = core_law(PDController(ones, ones, ones, ones))
    with pytest.raises(ValueError, match="give inputs or a controller, not both"):
        _core.rollout(mech.core, _core.Data(mech.core), z, 2, np.zeros((2, mech.nu)), None, _core.SolverOptions(),
                      False, None, law)


@pytest.mark.parametrize("scene", ["quadruped", "go1_stand", "clamped_hopper"])
def test_a_pd_run_in_the_core_is_the_per_step_run_bit_for_bit(scene):
    """The built-in quadruped (A1, PD on 12 joints), go1 as `import-urdf --stand` writes it
    and the hopper's PD clamped (ClampedInputs: the actuators' ctrl_range): the run the core
    steps a block at a time (its rollout evaluating the law) holds the same numbers as the run
    the Python loop steps one state at a time with the law in numpy, every dataset (states,
    minimal coordinates, knot velocities, inputs, solver record, contacts), bit for bit."""
    if scene == "go1_stand":
        mech = _go1_stand()
    elif scene == "clamped_hopper":
        hopper = dojo.load_scene("hopper")
        bound = np.full(hopper.nu, 2.0)  # (the hopper's PD asks up to ~9 N m at the start)
        mech = hopper.with_run_setup(controller=ClampedInputs(hopper.controller, -bound, bound))
    else:
        mech = dojo.load_scene(scene)
    assert core_law(mech.controller) is not None, f"{scene}: {type(mech.controller).__name__}"
    integ = Variational(mech, dojo.initial_state(mech), controller=mech.controller)
    assert integ.fast, f"{scene}: the PD run is not stepped a block at a time"
    fast = dojo.simulate(mech, steps=STEPS)
    slow = dojo.simulate(mech, steps=STEPS, controller=NumpyPD(mech.controller))
    assert set(fast.status) == {"success"}, f"{scene}: {sorted(set(fast.status))}"
    if scene == "clamped_hopper":
        assert np.max(np.abs(fast.inputs)) == 2.0, "the clamp is not reached"
    _assert_same_run(fast, slow, scene)


def test_failed_steps_and_aborts_of_a_pd_run_are_the_per_step_runs():
    """go1 at h = 80 ms, past its stability bound (benchmarks/equal_fidelity.py): the PD run
    diverges: step 8 is solved as 2 substeps whose end no step of h starts from (carried on,
    simulation.substeps), and the steps fail from step 9. The core's block run records the same failed
    steps as the per-step run; with abort_on_failure both stop at the same step, with the same
    message, the steps up to it written."""
    mech = dojo.load_scene("go1", ["timestep=0.08"])
    fast = dojo.simulate(mech, steps=12)
    slow = dojo.simulate(mech, steps=12, controller=NumpyPD(mech.controller))
    assert fast.status[0] == "success" and fast.status[-1] != "success", list(fast.status)
    _assert_same_run(fast, slow, "go1 at h = 0.08")
    messages, runs = [], []
    for controller in (mech.controller, NumpyPD(mech.controller)):
        recorder = TrajectoryRecorder()
        with pytest.raises(SolverError) as info:
            run_scene(mech, 12, recorder, controller=controller, abort_on_failure=True)
        messages.append(str(info.value))
        runs.append(recorder.trajectory(mech))
    assert messages[0] == messages[1], messages
    first_failed = int(np.flatnonzero(np.asarray(fast.status) != "success")[0])
    assert len(runs[0].status) == len(runs[1].status) == first_failed + 1, [len(r.status) for r in runs]
    for name in ("x", "q", "minimal_q", "inputs", "iterations", "residual"):
        assert np.array_equal(getattr(runs[0], name), getattr(runs[1], name), equal_nan=True), name


def test_an_interrupted_pd_run_keeps_every_step_of_its_blocks():
    """Ctrl-C in the middle of a PD run (raised from the per-block hook): the run handed the
    writer whole blocks, each step the same as the uninterrupted run's."""
    mech = dojo.load_scene("quadruped")
    full = dojo.simulate(mech, steps=STEPS)
    recorder, seen = TrajectoryRecorder(), []

    def stop_after_one(block):
        # after the first block: blocks grow with the run's speed (two can already hold all
        # 120 steps on an idle machine)
        seen.append(block.n)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_scene(mech, STEPS, recorder, on_block=stop_after_one)
    part = recorder.trajectory(mech)
    n = sum(seen)
    assert seen[0] > 1 and len(part.status) == n < STEPS, seen
    for name in ("x", "q", "v_mid", "omega_mid", "minimal_q", "inputs", "iterations", "residual", "status",
                 "contact_distance"):
        got, want = getattr(part, name), getattr(full, name)
        assert np.array_equal(got, want[: len(got)]), name


class _PerStep(Controller):
    """Another controller's inputs, read one state at a time (a Controller subclass)."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, mech, k, z):
        return self.inner(mech, k, z)


@pytest.mark.parametrize("integrator", ["variational", "rk4"])
def test_a_clamped_open_loop_controller_is_stepped_a_block_at_a_time(integrator):
    """ClampedInputs around a constant or a scheduled controller (an MJCF motor's ctrlrange)
    needs no state: the run is stepped a block at a time, each row clipped as a step would
    clip it, the same run as one state at a time, bit for bit."""
    base = dojo.load_scene("double_pendulum", [f"integrator={integrator}"])
    rng = np.random.default_rng(1)
    table = rng.uniform(-3.0, 3.0, (50, base.nu))
    for inner in (ConstantController(np.array([2.5, -0.4])), ScheduleController(table, "hold")):
        clamped = ClampedInputs(inner, np.full(base.nu, -1.0), np.full(base.nu, 1.0))
        mech = base.with_run_setup(controller=clamped)
        if integrator == "rk4":
            assert Rk4(mech, controller=clamped).fast
        else:
            assert Variational(mech, dojo.initial_state(mech), controller=clamped).fast
        fast = dojo.simulate(mech, steps=80)
        slow = dojo.simulate(mech, steps=80, controller=_PerStep(clamped))
        assert np.max(np.abs(fast.inputs)) == 1.0, "the clamp is not reached"
        _assert_same_run(fast, slow, f"{integrator}, {type(inner).__name__}")
