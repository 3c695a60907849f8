"""Locked joints (issue 14, Drake's Lock): ``locked: true`` holds a joint's free coordinates.

A locked joint adds one lock row per free coordinate to the joint impulses, holding the
joint where each step starts (core/maximal/kinematics.h lock_row). The checks:
1. a planar_axis body under gravity and a constant input stays put (coordinates constant
   to the solver's tolerance, velocities zero) over many steps;
2. a double pendulum with its elbow locked moves as the independent model with a fixed
   elbow at the same pose (bodies' states to solver tolerance), its energy conserved as
   the fixed version's;
3. lock and unlock mid-run (new models, state carried over);
4. the step's gradients (maximal, every joint type locked; minimal) against finite
   differences;
5. contacts with a locked joint (a floating base with a locked arm dropped on the ground);
6. errors and records: a non-boolean ``locked``, a bad with_parameters value; the rk4 integrator
   holds the joint too (the minimal layer's own checks: tests/minimal/test_locked_minimal.py).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import ORIGIN, Joint, Mechanism
from dojo_cli.model.parameters import parameter_values, with_parameters
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.simulation.step import step
from tests import mechanisms as M
from tests.simulation.test_gradients import TOL, check_minimal, check_state_and_input

# tight solver tolerances: the lock rows then hold to ~1e-12 per step
TIGHT = dojo.SolverOptions(rtol=1e-10, btol=1e-10)
# coordinates of a locked joint: each step's lock residual is below rtol (1e-10), and the
# drift is their sum over the run (measured 3e-13 over 500 steps)
LOCK_DRIFT = 1e-10
# a locked mechanism against the fixed-joint one: the same equations up to the lock rows'
# basis, both solved to rtol 1e-10 (measured 2e-12 over 300 steps)
SAME_MOTION = 1e-8
# energy drift of the variational integrator at h = 0.01 over 3 s (bounded oscillation,
# measured 2e-4 J for both the locked and the fixed elbow)
ENERGY_DRIFT = 2e-3
runner = CliRunner()

PLANAR_SCENE = """\
format: 1
name: planar_locked
timestep: 0.01
steps: 500
gravity: [0, -9.81, 0]
bodies:
  - name: block
    shape: {type: box, size: [0.3, 0.5, 0.2]}
    mass: 2.0
joints:
  - name: base
    type: planar_axis
    parent: origin
    child: block
    axis: [0, 0, 1]
    locked: true
    initial: {position: [0.1, -0.2, 0.3], velocity: [1.0, -0.5, 4.0]}
controller: {type: constant, inputs: {base: [3.0, 1.0, 0.5]}}
solver: {rtol: 1.0e-10, btol: 1.0e-10}
"""


def locked(mech: Mechanism, names, name=None) -> Mechanism:
    """The same mechanism with the named joints locked (an independent Model)."""
    joints = [dataclasses.replace(j, locked=j.name in names) for j in mech.joints]
    return Mechanism(list(mech.bodies), joints, mech.timestep, mech.gravity, name=name or mech.name + "-locked",
                     contacts=list(mech.contacts))


def double_pendulum(elbow_type="revolute", elbow_angle=0.0, h=0.01) -> Mechanism:
    """Two 1 m links hinged about x; a fixed elbow carries the angle in its orientation offset."""
    links = [M.box_body("upper", (0.1, 0.1, 1.0)), M.box_body("lower", (0.1, 0.1, 1.0), mass=0.7)]
    offset = quat.quaternion_from_rotation_vector(elbow_angle * M.X) if elbow_type == "fixed" else np.array([1.0, 0, 0, 0])
    joints = [
        Joint("shoulder", "revolute", ORIGIN, 0, axis=M.X, child_vertex=0.5 * M.Z),
        Joint("elbow", elbow_type, 0, 1, axis=M.X, parent_vertex=-0.5 * M.Z, child_vertex=0.5 * M.Z,
              orientation_offset=offset),
    ]
    return Mechanism(links, joints, h, (0, 0, -9.81), name=f"double-pendulum-{elbow_type}")


def rollout(mech, z, steps, opts=TIGHT):
    out = [z]
    for _ in range(steps):
        z = step(mech, z, None, opts)
        out.append(z)
    return np.array(out)


def elbow_angle(mech, states):
    """(T,) elbow angle and rate (minimal coordinates of the second joint)."""
    y = np.array([maximal_to_minimal(mech, z) for z in states])
    return y[:, 2], y[:, 3]


# ------------------------------------------------------------------ 1. planar body
def test_locked_planar_body_stays_put_under_gravity_and_input(tmp_path):
    path = tmp_path / "planar_locked.yaml"
    path.write_text(PLANAR_SCENE)
    mech = dojo.load_scene(str(path))
    assert mech.joint("base").is_locked()
    traj = dojo.simulate(mech)
    assert traj.steps == 500 and all(s == "success" for s in traj.status), set(traj.status)
    drift = np.abs(traj.minimal_q - [0.1, -0.2, 0.3]).max()
    assert drift < LOCK_DRIFT, f"coordinate drift {drift:.2e}"
    speed = np.abs(traj.minimal_v).max()
    assert speed < LOCK_DRIFT / mech.timestep, f"largest velocity {speed:.2e}"
    # the lock carries gravity and the input: impulses h (m g - u) along y, -h u_x, and
    # twice the torque impulse on the rotation (the row is Vec(q), half the angle)
    h = mech.timestep
    last = traj.impulses[-1][-3:]
    expected = [-h * 3.0, h * (2.0 * 9.81 - 1.0), -2 * h * 0.5]
    assert np.allclose(last, expected, atol=1e-9), f"lock impulses {last}, expected {expected}"
    # unlocked, the same scene moves (the check above can fail)
    free = dojo.load_scene(str(path), overrides={"joints.base.locked": False})
    moved = np.abs(dojo.simulate(free, steps=50).minimal_q[-1] - [0.1, -0.2, 0.3]).max()
    assert moved > 0.1, f"the unlocked body moved only {moved:.2e}"


# ------------------------------------------------------------------ 2. locked vs fixed
def test_locked_elbow_moves_as_a_fixed_elbow():
    angle = 0.7
    lock = locked(double_pendulum(), ["elbow"])
    fixed = double_pendulum("fixed", angle)
    # the elbow moving at the start: a lock from the start zeroes it (Drake's Lock)
    z0 = minimal_to_maximal(lock, np.array([0.4, 0.0, angle, 0.0]))
    a, b = rollout(lock, z0, 300), rollout(fixed, z0, 300)
    gap = np.abs(a - b).max()
    assert gap < SAME_MOTION, f"locked vs fixed elbow: largest state difference {gap:.2e}"
    theta, rate = elbow_angle(lock, a)
    assert np.abs(theta - angle).max() < LOCK_DRIFT, f"elbow drift {np.abs(theta - angle).max():.2e}"
    assert np.abs(rate).max() < LOCK_DRIFT / lock.timestep
    shoulder = np.array([maximal_to_minimal(lock, z)[0] for z in a])
    assert np.ptp(shoulder) > 0.5, "the pendulum must swing for the comparison to mean anything"
    energies = []
    for mech, states in ((lock, a), (fixed, b)):
        traj = dojo.simulate(mech, steps=300, z0=z0, opts=TIGHT)
        assert np.abs(traj.x - states.reshape(301, mech.nb, 13)[:, :, 0:3]).max() < SAME_MOTION
        e = dojo.mechanical_energy(mech, traj)
        energies.append(np.ptp(e))
    assert energies[0] < ENERGY_DRIFT, f"locked elbow: energy varies by {energies[0]:.2e} J"
    assert abs(energies[0] - energies[1]) < 1e-6, f"energy variation locked {energies[0]:.3e} vs fixed {energies[1]:.3e}"


# ------------------------------------------------------------------ 3. lock / unlock mid-run
def test_lock_and_unlock_mid_run():
    free = double_pendulum()
    z0 = minimal_to_maximal(free, np.array([0.4, 0.0, 0.3, 1.5]))
    moving = rollout(free, z0, 40)
    # lock at step 40 (a new model, the state carried over): the elbow stops at once
    lock = with_parameters(free, ["joints.elbow.locked"], [1.0])
    assert parameter_values(lock, ["joints.elbow.locked"])[0] == 1.0 and lock.joint("elbow").is_locked()
    held = rollout(lock, moving[-1], 60)
    theta, rate = elbow_angle(lock, held[1:])
    assert np.abs(theta - theta[0]).max() < LOCK_DRIFT, f"locked elbow drift {np.abs(theta - theta[0]).max():.2e}"
    assert np.abs(rate).max() < LOCK_DRIFT / lock.timestep, f"locked elbow rate {np.abs(rate).max():.2e}"
    assert abs(elbow_angle(free, moving[-2:])[1][-1]) > 0.1, "the elbow must be moving when it is locked"
    # unlock (with_parameters again): the same as the unlocked model run from that state
    unlocked = with_parameters(lock, ["joints.elbow.locked"], [0.0])
    after, reference = rollout(unlocked, held[-1], 60), rollout(free, held[-1], 60)
    gap = np.abs(after - reference).max()
    assert gap < 1e-12, f"unlocked vs never locked from the same state: {gap:.2e}"
    theta = elbow_angle(free, after)[0]
    assert np.ptp(theta) > 0.05, f"the unlocked elbow must move again, moved {np.ptp(theta):.2e}"


# ------------------------------------------------------------------ 4. gradients
@pytest.mark.parametrize("joint_type", ["revolute", "prismatic", "planar_axis", "spherical", "cylindrical", "floating"])
def test_gradients_with_a_locked_joint(joint_type):
    # a moving state (random velocities on the locked joint too: the first step stops it)
    mech = locked(M.twister(3, joint_type, gravity=(0, 0, -9.81), spring=2.0, damper=0.5), ["joint1", "base"])
    z = M.random_state(mech, seed=3)
    u = 0.3 * np.random.default_rng(1).standard_normal(mech.nu)
    err = check_state_and_input(mech, z, u, None, directions=3)
    assert err < TOL, f"maximal: relative error {err:.2e}"


def test_minimal_gradients_with_a_locked_joint():
    mech = locked(double_pendulum(), ["elbow"])
    z = rollout(mech, minimal_to_maximal(mech, np.array([0.4, 0.2, 0.7, 0.0])), 5)[-1]
    err = check_minimal(mech, z, np.array([0.1, 0.3]))
    assert err < TOL, f"minimal: relative error {err:.2e}"


# ------------------------------------------------------------------ 5. contacts
def test_locked_arm_robot_lands_on_the_ground():
    base = M.box_body("base", (0.4, 0.4, 0.2), mass=2.0)
    arm = M.box_body("arm", (0.05, 0.05, 0.5), mass=0.3)
    corners = [(x, y, -0.1) for x in (-0.2, 0.2) for y in (-0.2, 0.2)]
    contacts = [M.ground(f"c{i}", 0, o) for i, o in enumerate(corners)] + [M.ground("tip", 1, (0, 0, 0.25))]
    joints = [Joint("float", "floating", ORIGIN, 0),
              Joint("shoulder", "revolute", 0, 1, axis=M.X, parent_vertex=(0, 0, 0.1), child_vertex=(0, 0, -0.25))]
    mech = Mechanism([base, arm], joints, 0.01, (0, 0, -9.81), name="robot", contacts=contacts)
    lock = locked(mech, ["shoulder"])
    angle = 1.2  # the arm tilted: its tip is not the lowest point, the base corners land
    y0 = np.array([0, 0, 0.5, 0, 0, 0.1, 0, 0, 0, 0.3, 0, 0, angle, 2.0])  # base falling and spinning, arm turning
    z0 = minimal_to_maximal(lock, y0)
    traj = dojo.simulate(lock, steps=150, z0=z0, opts=dojo.SolverOptions(rtol=1e-8, btol=1e-8))
    assert all(s == "success" for s in traj.status), set(traj.status)
    theta = traj.minimal_q[1:, 6]
    assert np.abs(theta - angle).max() < 1e-6, f"locked arm drift {np.abs(theta - angle).max():.2e}"
    assert np.abs(traj.minimal_v[1:, 6]).max() < 1e-4
    depth = -traj.contact_distance.min()
    assert depth < 1e-6, f"penetration {depth:.2e} m"
    assert traj.contact_normal_impulse[-1, :4].sum() > 0.5 * 2.3 * 9.81 * 0.01, "the base must rest on its corners"
    assert abs(traj.x[-1, 0, 2] - 0.1) < 1e-3, f"base height {traj.x[-1, 0, 2]:.4f}"
    # the arm not locked falls over: the lock is what keeps it
    free = dojo.simulate(mech, steps=150, z0=z0, opts=dojo.SolverOptions(rtol=1e-8, btol=1e-8))
    assert np.abs(free.minimal_q[-1, 6] - angle) > 0.1


# ------------------------------------------------------------------ 6. errors and records
def test_locked_errors_and_records(tmp_path):
    path = tmp_path / "planar_locked.yaml"
    path.write_text(PLANAR_SCENE)
    bad = tmp_path / "bad.yaml"
    bad.write_text(PLANAR_SCENE.replace("locked: true", "locked: maybe"))
    result = runner.invoke(app, ["check", str(bad)])
    assert result.exit_code == 2 and "bad.yaml:16: joints.0.locked: input should be a valid boolean" in result.output, result.output
    # the minimal-coordinate layer holds it too (tests/minimal/test_locked_minimal.py): rk4 keeps
    # the coordinates exactly, whatever the gravity and the input
    rk4 = tmp_path / "rk4.h5"
    result = runner.invoke(app, ["simulate", str(path), "--integrator", "rk4", "--steps", "50", "-o", str(rk4)])
    assert result.exit_code == 0, result.output
    stored = read_storage(rk4)
    assert stored.attrs["integrator"] == "munthe-kaas-rk4" and stored.trajectory.minimal_q.shape == (51, 3)
    drift = np.abs(stored.trajectory.minimal_q - [0.1, -0.2, 0.3]).max()
    assert drift < 1e-14, f"rk4 coordinate drift {drift:.2e}"
    # dojo dynamics reports what the lock carries: gravity held up (m g along +y, in the body
    # frame at qz = 0.3, the minimal layer's planar velocities) minus the generalized forces
    result = runner.invoke(app, ["dynamics", str(path), "--tau", "3,1,0.5", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    mg, qz = 2.0 * 9.81, 0.3
    expected = [mg * np.sin(qz) - 3.0, mg * np.cos(qz) - 1.0, -0.5]
    assert doc["locked_joints"] == ["base"] and np.allclose(doc["forward_dynamics"]["data"], 0.0, atol=0)
    assert np.allclose(doc["lock_forces"]["data"], expected, rtol=0, atol=1e-12), doc["lock_forces"]
    out = tmp_path / "run.h5"
    result = runner.invoke(app, ["simulate", str(path), "--steps", "20", "-o", str(out)])
    assert result.exit_code == 0, result.output
    info = runner.invoke(app, ["info", str(out)])
    assert "locked joints   base" in info.output, info.output
    check = runner.invoke(app, ["check", str(path)])
    assert "rotational free, locked" in check.output, check.output
    unlocked = runner.invoke(app, ["check", str(path), "--set", "joints.base.locked=false"])
    assert unlocked.exit_code == 0 and "locked" not in unlocked.output.split("joints (1):")[1].split("\n")[1]
    mech = dojo.load_scene(str(path))
    with pytest.raises(ValueError, match="expected 1 .locked. or 0 .unlocked., got 0.5"):
        with_parameters(mech, ["joints.base.locked"], [0.5])
    assert minimal.build_model(mech).locked_joints == ["base"]
