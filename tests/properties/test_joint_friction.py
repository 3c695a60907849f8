"""Dry (Coulomb) joint friction (issue 24; core maximal/residual.h, docs/physics.md "Joints"):
maximal dissipation on a free coordinate's rate, |impulse| <= h F, a box-constrained
complementarity problem (Dojo's linearised friction cone in one dimension, mu gamma = h F).

Analytic: a slider pushed below F stays (its velocity zero to the solver's tolerance), above
F accelerates at (u - F) / m exactly; a pendulum released where gravity's torque is below F
stays, one released higher comes to rest where |torque| <= F having lost exactly the
friction work F |path|. Oracle: MuJoCo's frictionloss, a soft constraint that sticks
differently but slides with its force at the bound F exactly, so while the joints slide the
trajectories agree to our integrator's second order. Gradients against finite differences,
sliding and sticking. A scene without friction is the scene it was (the goldens)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

import dojo_cli as dojo
from dojo_cli.errors import SceneError
from dojo_cli.physics.coordinates import maximal_to_minimal
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.mjcf import joint_coordinates_from_qpos, read_mjcf
from dojo_cli.simulation.integrators import integrator_problems
from dojo_cli.simulation.step import step
from tests.simulation.test_gradients import KAPPA, TIGHT, check_state_and_input

import mujoco  # noqa: E402  (the test extra: the oracle must not be skipped, issue 25 item 8)

# Solved at TIGHT (1e-10): a sticking coordinate's rate is kappa (1 / s- - 1 / s+), ~1e-11 m/s here
STICK_TOL = 1e-8
# The analytic slider: the exact discrete motion v_k = k h a, x_k = h^2 a k (k + 1) / 2, to the solver's tolerance
SLIDE_TOL = 1e-8
# Energy lost against the friction work over a pendulum's swings to rest: the variational
# integrator's energy error at h = 2 ms, at rest at both ends (measured 4.4e-6 relative)
WORK_TOL = 1e-4
# Gradients against four-point finite differences (tests/simulation/test_gradients.py)
GRADIENT_TOL = 1e-5


def _load(tmp_path: Path, scene: dict):
    path = tmp_path / f"{scene['name']}.yaml"
    path.write_text(yaml.safe_dump(scene))
    return dojo.load_scene(str(path))


def slider(tmp_path: Path, friction: float, mass: float = 2.0, timestep: float = 0.01):
    """A block on a prismatic rail along x from the world, gravity across it."""
    return _load(tmp_path, {
        "format": 1, "name": "slider", "timestep": timestep, "gravity": [0, 0, -9.81],
        "bodies": [{"name": "block", "shape": {"type": "box", "size": [0.2, 0.2, 0.2]}, "mass": mass}],
        "joints": [{"name": "rail", "type": "prismatic", "parent": "origin", "child": "block", "axis": [1, 0, 0],
                    "friction": friction, "initial": {"position": [0.0], "velocity": [0.0]}}],
    })


def pendulum(tmp_path: Path, friction: float, angle: float, timestep: float = 0.002):
    """A 1 kg, 0.5 m bar on a hinge about y at its end, horizontal at angle 0: gravity's
    torque at the hinge is m g (L / 2) |cos(angle)| = 2.4525 |cos(angle)| N m."""
    return _load(tmp_path, {
        "format": 1, "name": "pendulum", "timestep": timestep, "gravity": [0, 0, -9.81],
        "bodies": [{"name": "bar", "shape": {"type": "box", "size": [0.5, 0.02, 0.02]}, "mass": 1.0}],
        "joints": [{"name": "hinge", "type": "revolute", "parent": "origin", "child": "bar", "axis": [0, 1, 0],
                    "child_vertex": [-0.25, 0, 0], "friction": friction,
                    "initial": {"position": [angle], "velocity": [0.0]}}],
    })


def chain(tmp_path: Path, friction: tuple[float, float]):
    """Two 0.4 m links on hinges about y, moving (the gradients' scene)."""
    links = [{"name": f"l{i}", "shape": {"type": "box", "size": [0.4, 0.05, 0.05]}, "mass": 1.0} for i in (1, 2)]
    return _load(tmp_path, {
        "format": 1, "name": "chain", "timestep": 0.01, "gravity": [0, 0, -9.81], "bodies": links,
        "joints": [{"name": "j1", "type": "revolute", "parent": "origin", "child": "l1", "axis": [0, 1, 0],
                    "child_vertex": [-0.2, 0, 0], "friction": friction[0], "initial": {"position": [0.6], "velocity": [1.0]}},
                   {"name": "j2", "type": "revolute", "parent": "l1", "child": "l2", "axis": [0, 1, 0],
                    "parent_vertex": [0.2, 0, 0], "child_vertex": [-0.2, 0, 0], "friction": friction[1],
                    "initial": {"position": [-0.3], "velocity": [0.5]}}],
    })


def test_a_slider_pushed_below_its_friction_stays_and_above_it_accelerates_at_u_minus_f_over_m(tmp_path):
    """F = 3 N on a 2 kg block: u = 2 N (and -2 N) holds it still, exactly to the solver's
    tolerance; u = 5 N moves it at a = (u - F) / m = 1 m/s^2, u = -5 N at -1 m/s^2, the
    discrete motion v_k = k h a, x_k = h^2 a k (k + 1) / 2 of the variational step."""
    mech = slider(tmp_path, 3.0)
    h, steps = mech.timestep, 20
    assert mech.core.nfr == 1
    for u in (2.0, -2.0, 5.0, -5.0):
        a = np.sign(u) * max(abs(u) - 3.0, 0.0) / 2.0
        z = dojo.initial_state(mech)
        for k in range(1, steps + 1):
            z = step(mech, z, np.array([u]), TIGHT)
            x, v = maximal_to_minimal(mech, z)
            tol = STICK_TOL if a == 0 else SLIDE_TOL
            assert abs(v - k * h * a) < tol, f"u = {u}, step {k}: v = {v:.3e}, expected {k * h * a:.6f}"
            assert abs(x - h * h * a * k * (k + 1) / 2) < tol, f"u = {u}, step {k}: x = {x:.3e}"


def test_a_pendulum_below_its_friction_stays_and_one_above_it_stops_having_lost_the_friction_work(tmp_path):
    """F = 1 N m: released at -1.3 rad (gravity's torque 0.65 N m) the bar stays; released
    horizontal (2.45 N m) it swings, slows and stops for good where gravity's torque is within
    F, having lost exactly the work F times the angle it travelled (energy from the state: at
    rest, m g z of the centre of mass)."""
    held = pendulum(tmp_path, 1.0, -1.3)
    z = dojo.initial_state(held)
    for _ in range(50):
        z = step(held, z, None, TIGHT)
    angle, rate = maximal_to_minimal(held, z)
    assert abs(angle + 1.3) < STICK_TOL and abs(rate) < STICK_TOL, (angle, rate)

    mech = pendulum(tmp_path, 1.0, 0.0)
    traj = dojo.simulate(mech, steps=1500, opts=TIGHT)
    assert all(s == "success" for s in traj.status)
    angles = np.asarray(traj.minimal_q)[:, 0]
    moving = np.flatnonzero(np.abs(np.diff(angles)) > STICK_TOL)
    assert 0 < moving[-1] < len(angles) - 200, "the bar must come to rest for good within the run"
    rest = angles[-1]
    assert 2.4525 * abs(np.cos(rest)) <= 1.0 + 1e-6, f"at rest at {rest:.6f} rad gravity's torque exceeds F"
    work = 1.0 * np.abs(np.diff(angles)).sum()
    lost = 1.0 * 9.81 * (traj.x[0][0, 2] - traj.x[-1][0, 2])
    assert abs(lost - work) < WORK_TOL * work, f"energy lost {lost:.6f} J, friction work {work:.6f} J"
    assert rest > np.pi / 2 and work > rest, "the bar swings past its lowest point and back before it stops"


ARM = """<mujoco model="arm">
  <option timestep="0.001" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="l1" pos="0 0 1">
      <joint name="a" type="hinge" axis="0 1 0" frictionloss="0.4"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
      <body name="l2" pos="0.3 0 0">
        <joint name="b" type="hinge" axis="0 1 0" frictionloss="0.15"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.025" mass="0.5"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
# MuJoCo's RK4 as the reference (its error far below ours), over a time both joints slide
ARM_REFERENCE_STEP = 1e-4
ARM_DURATION = 0.1
ARM_QPOS, ARM_QVEL = (0.3, -0.5), (2.0, 3.0)
# Ours at h and h/2: second order (measured errors 2.66e-6 and 6.6e-7 m, ratio 4.0), and the
# friction matters far beyond that (without it ~1e-3 m)
SECOND_ORDER = (3.5, 4.5)
ARM_TOL = 1e-5


def test_an_arm_with_frictionloss_follows_mujoco_while_its_joints_slide(tmp_path):
    """A two-link arm (frictionloss 0.4 and 0.15 N m) thrown from a pose: while both joints
    slide (asserted on MuJoCo's run) MuJoCo's friction force is at its bound, as ours, so the
    centres of mass after 0.1 s agree to our second order (h = 2 ms, 1 ms); the same arm
    without friction is far off (the mapping is not a no-op)."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM)
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = ARM_REFERENCE_STEP
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = ARM_QPOS, ARM_QVEL
    for _ in range(int(round(ARM_DURATION / ARM_REFERENCE_STEP))):
        mujoco.mj_step(m, d)
        assert np.all(np.abs(d.qvel) > 0.1), f"a joint stops sticking at t = {d.time:.4f}: not the sliding case"
    result = read_mjcf(path)
    assert [j.get("friction") for j in result.scene["joints"]] == [[0.4], [0.15]] and result.warnings == []

    def ours(h: float, friction: bool) -> np.ndarray:
        scene = copy.deepcopy(result.scene)
        scene["timestep"] = h
        positions = joint_coordinates_from_qpos(result, np.array(ARM_QPOS), scene["joints"])
        velocities = {name: [0.0] * len(v) for name, v in positions.items()}
        for c in result.coordinates:
            velocities[c.dojo_joint][c.coordinate] += c.sign * ARM_QVEL[c.dof_adr]
        for joint in scene["joints"]:
            joint["initial"] = {"position": positions[joint["name"]], "velocity": velocities[joint["name"]]}
            if not friction:
                joint.pop("friction")
        traj = dojo.simulate(build_mechanism(spec_from_dict(scene, file=str(path))),
                             steps=int(round(ARM_DURATION / h)), opts=TIGHT)
        assert all(s == "success" for s in traj.status)
        return np.abs(traj.x[-1] - d.xipos[1:3]).max()

    errors = [ours(h, True) for h in (0.002, 0.001)]
    assert errors[0] < ARM_TOL and SECOND_ORDER[0] < errors[0] / errors[1] < SECOND_ORDER[1], errors
    assert ours(0.001, False) > 100 * errors[1]


@pytest.mark.parametrize("friction", [(0.3, 0.2), (0.3, 5.0), (50.0, 50.0)], ids=["sliding", "one-sticking", "sticking"])
def test_step_gradients_with_joint_friction_match_finite_differences(tmp_path, friction):
    """A and B of a step of the moving chain against four-point differences, at the solver's
    stop and on the central path: both joints sliding, the second sticking (5 N m holds it
    against its 0.5 rad/s), both sticking."""
    mech = chain(tmp_path, friction)
    z = dojo.initial_state(mech)
    for _ in range(3):
        z = step(mech, z, None, TIGHT)
    u = np.array([0.1, -0.1])
    for kappa in (None, KAPPA):
        error = check_state_and_input(mech, z, u, kappa)
        assert error < GRADIENT_TOL, f"kappa {kappa}: relative error {error:.2e}"


def test_joint_friction_is_per_coordinate_non_negative_and_refused_where_it_cannot_run(tmp_path):
    """A negative value or a count that is not the joint's names the field; the integrators
    without complementarity (rk4, variational4) refuse the scene naming each joint."""
    mech = chain(tmp_path, (0.3, 0.0))
    scene = yaml.safe_load((tmp_path / "chain.yaml").read_text())
    for value, message in ((-0.5, ">= 0"), ([0.1, 0.2], "1 value")):
        bad = copy.deepcopy(scene)
        bad["joints"][0]["friction"] = value
        with pytest.raises(SceneError) as info:
            build_mechanism(spec_from_dict(bad, file="chain.yaml"))
        text = str(info.value)
        assert "chain.yaml" in text and "joints.0.friction" in text and message in text, text
    for integrator in ("rk4", "variational4"):
        (problem,) = integrator_problems(mech, integrator)
        assert problem.startswith("joints.0.friction: joint 'j1': dry joint friction is not supported"), problem
    assert integrator_problems(chain(tmp_path, (0.0, 0.0)), "rk4") == []


def test_rollout_products_with_joint_friction_equal_the_step_jacobians_chained():
    """The forward mode (one dual direction) and the reverse mode (a joint with friction is
    taped: its rate rows are outputs of their own, gradients.cpp joint_terms_are_gradient)
    against the step Jacobians chained, on a twister of spherical joints with friction on
    every rotation-vector coordinate (three frictional coordinates a joint), springs and
    dampers, its middle joint's friction large enough to stick."""
    import dataclasses

    from dojo_cli.model.mechanism import Mechanism
    from tests import mechanisms as M
    from tests.simulation.test_rollout_gradients import check_joint_terms

    base = M.twister(3, "spherical", gravity=(0, 0, -9.81), spring=0.4, damper=0.3)
    joints = [dataclasses.replace(j, friction=np.full(3, 5.0 if j.name == "joint2" else 0.05))
              if j.input_dimension == 3 else j for j in base.joints]
    mech = Mechanism(list(base.bodies), joints, base.timestep, base.gravity, name="twister-friction")
    assert mech.core.nfr == 3 * sum(j.input_dimension == 3 for j in base.joints) >= 6
    z0 = M.random_state(mech, seed=5, coord_scale=0.5, rate_scale=1.0)
    check_joint_terms(mech, z0, 6, 4, "friction")


def test_the_newton_matrix_of_the_friction_rows_is_the_residuals_derivative(tmp_path):
    """The friction rows' entries of the step's Newton matrix (newton_matrix.cpp) against
    central differences of the residual, at a random interior iterate of the moving chain's
    step (both joints frictional)."""
    from dojo_cli import _core
    from tests.properties.test_newton_matrix import FD_TOL, StepSystem, fd_jacobian

    mech = chain(tmp_path, (0.3, 5.0))
    system = StepSystem(mech, dojo.initial_state(mech), np.array([0.1, -0.1]))
    rng = np.random.default_rng(0)
    w = system.initial_guess() + 0.1 * rng.standard_normal(system.n)
    cones = _core.testing.cone_structure(mech.core)
    orthant = np.array(cones["orthant_s"] + cones["orthant_g"], dtype=int)
    assert orthant.size == 4 * mech.core.nfr
    w[orthant] = np.abs(w[orthant]) + 1e-2  # inside the cones (the impulses' start, h F / 3, is below the spread)
    analytic, numeric = system.matrix(w), fd_jacobian(system, w)
    err = np.max(np.abs(analytic - numeric)) / max(1.0, np.max(np.abs(numeric)))
    assert err < FD_TOL, f"relative error {err:.2e} at {np.unravel_index(np.argmax(np.abs(analytic - numeric)), analytic.shape)}"
