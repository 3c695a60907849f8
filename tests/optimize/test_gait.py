"""The quadruped's reference gait (dojo_cli.optimize.gait) and the trot optimised on it
(configs/optimize/quadruped_trot.yaml): the plan's feet are where its joint angles put them,
and the optimum walks, on joint torques alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from dojo_cli.optimize.ilqr import solve
from dojo_cli.optimize.problem import rollout
from dojo_cli.optimize.task import load_task
from dojo_cli.physics.contact_queries import contact_location
from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.physics.coordinates import interleave_minimal

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "optimize"
# Inverse kinematics solves to 1e-12 m (minimal.ik.IK_TOLERANCE); the maximal state rebuilt
# from the angles carries that plus rounding.
FOOT_TOLERANCE = 1e-9
# A foot is off the ground when its contact point is this high (1 cm, a quarter of the lift).
LIFT_OFF = 0.01
# The acceptance numbers: the trunk above 0.2 m all the way.
TRUNK_LOWEST = 0.2


@pytest.fixture(scope="module")
def references():
    spec = importlib.util.spec_from_file_location("make_references", CONFIGS / "make_references.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trot(references):
    return references.quadruped_trot()


@pytest.fixture(scope="module")
def step(references):
    return references.humanoid_step()


@pytest.mark.parametrize("name, gait", [("quadruped_trot", "trot"), ("humanoid_step", "step")])
def test_the_committed_references_are_what_the_generator_writes(name, gait, request, tmp_path):
    path = tmp_path / f"{name}.csv"
    request.getfixturevalue(gait).write_csv(path)
    assert path.read_text() == (CONFIGS / f"{name}.csv").read_text(), "rerun configs/optimize/make_references.py"


def _planned_feet_error(mech, gait, feet) -> float:
    """The largest distance of a foot (contact point) from the plan, and of a foot's body
    from its column, over every knot: each knot's coordinates through the core's minimal ->
    maximal map."""
    cols = {n: i for i, n in enumerate(gait.names)}
    contacts = [c.name for c in mech.contacts]
    worst = 0.0
    for k in range(len(gait.time)):
        theta, rate = [], []
        for j, joint in enumerate(mech.joints):
            size = len(np.arange(mech.nf)[mech.joint_free_range[j]])
            if size == 1:
                theta.append(gait.table[k, cols[f"joints.{joint.name}"]])
                rate.append(gait.table[k, cols[f"joints.{joint.name}.velocity"]])
            elif size:
                theta += [gait.table[k, cols[f"joints.{joint.name}[{i}]"]] for i in range(size)]
                rate += [gait.table[k, cols[f"joints.{joint.name}.velocity[{i}]"]] for i in range(size)]
        z = minimal_to_maximal(mech, interleave_minimal(mech, np.array(theta), np.array(rate)))
        at = np.array([contact_location(mech, f, z) for f in feet])
        radius = np.array([mech.contacts[contacts.index(f)].radius for f in feet])
        planned = gait.feet[k] - radius[:, None] * [0.0, 0.0, 1.0]  # sphere centres -> ground points
        worst = max(worst, float(np.max(np.abs(at - planned))))
        for f in feet:  # the feet's bodies' columns (a task may track them) are those bodies' positions
            b = mech.contacts[contacts.index(f)].body
            col = [cols[f"bodies.{mech.bodies[b].name}.position[{i}]"] for i in range(3)]
            worst = max(worst, float(np.max(np.abs(gait.table[k, col] - z[13 * b: 13 * b + 3]))))
    return worst


def test_the_trots_feet_are_where_its_angles_put_them(references, trot):
    """Each knot's coordinates put every foot where the plan has it; stance feet stay put,
    swing feet rise, and the pairs alternate."""
    import dojo_cli as dojo

    mech = dojo.load_scene(references.QUADRUPED["scene"], overrides=references.QUADRUPED["overrides"])
    feet = [f for pair in references.TROT["pairs"] for f in pair]
    worst = _planned_feet_error(mech, trot, feet)
    assert worst < FOOT_TOLERANCE, f"feet {worst:.2e} m from the plan"
    lifted = trot.feet[:, :, 2] - trot.feet[0, :, 2]
    assert np.all(lifted[~trot.swing] == 0.0) and np.all(lifted[trot.swing] > 0.0)
    stance = ~trot.swing[1:] & ~trot.swing[:-1]
    moved = np.linalg.norm(np.diff(trot.feet, axis=0), axis=2)
    assert np.max(moved[stance]) < FOOT_TOLERANCE, "a stance foot slides in the plan"
    # the two feet of a pair swing together, never both pairs at once
    assert np.array_equal(trot.swing[:, 0], trot.swing[:, 1]) and np.array_equal(trot.swing[:, 2], trot.swing[:, 3])
    assert not np.any(trot.swing[:, 0] & trot.swing[:, 2])
    stride = references.TROT["stride"]
    assert trot.base[-1, 0] == pytest.approx((references.TROT["half_cycles"] - 1) * stride / 2, abs=1e-12)


def test_the_steps_soles_are_flat_where_its_angles_put_them(references, step):
    """The humanoid's step: every contact point of both soles where the plan has it at every
    knot (so the soles stay flat, posed whole by feet_ik); the stance sole never moves, the
    swing sole rises, lands the step's length ahead and stays; the crouched start (the task's
    set:) has every sole point on the ground."""
    import dojo_cli as dojo
    from dojo_cli.simulation.initial import initial_state

    mech = dojo.load_scene(references.HUMANOID["scene"], overrides=references.HUMANOID["overrides"])
    stance, swing = references.STEP["stance"], references.STEP["swing"]
    worst = _planned_feet_error(mech, step, [*stance, *swing])
    assert worst < FOOT_TOLERANCE, f"soles {worst:.2e} m from the plan"
    z0 = initial_state(mech)
    ground = max(abs(contact_location(mech, c, z0)[2]) for c in range(mech.nc))
    assert ground < FOOT_TOLERANCE, f"a sole point {ground:.2e} m off the ground at the start"
    n = len(stance)
    assert np.max(np.abs(step.feet[:, :n] - step.feet[0, :n])) == 0.0, "the stance sole moves"
    assert not step.swing[:, :n].any() and step.swing[:, n:].any()
    lifted = step.feet[:, n:, 2] - step.feet[0, n:, 2]
    assert np.all(lifted[step.swing[:, n:]] > 0.0) and np.all(lifted[~step.swing[:, n:]] == 0.0)
    ahead = step.feet[-1, n:, 0] - step.feet[0, n:, 0]
    assert np.allclose(ahead, references.STEP["length"], atol=1e-12), ahead


def test_the_quadruped_trots_forward_on_its_joint_torques():
    """configs/optimize/quadruped_trot.yaml, solved whole: the trunk advances more than a body
    length (hip to hip) and stays above 0.2 m, each foot leaves the ground, and the slack on
    the trunk is driven to zero: rolled out again without it, the robot walks the same."""
    task = load_task(CONFIGS / "quadruped_trot.yaml")
    p = task.problem
    result = solve(p, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    assert result.violation < task.options.constraint_tolerance
    # exact_stage: false: the relaxed gradients to the end, and the message says so
    assert {rec["kappa"] for rec in result.log} == {1e-3} and "relaxed gradient (kappa 0.001)" in result.message
    mech = p.mech
    hips = [mech.body_index(b) for b in ("FR_hip", "RR_hip")]
    body_length = abs(float(result.traj.Z[0, 13 * hips[0]] - result.traj.Z[0, 13 * hips[1]]))
    assert body_length > 0.3, f"hip to hip {body_length:.3f} m"

    free = result.traj.U.copy()
    free[:, list(p.slack)] = 0.0  # the joint torques alone
    walked = rollout(p, free)
    assert walked.failed_step is None
    assert np.max(np.abs(walked.Z - result.traj.Z)) < 1e-3, "the slack changes the motion"
    trunk = walked.Z[:, 0:3]
    advance = trunk[-1, 0] - trunk[0, 0]
    assert advance > body_length, f"the trunk advanced {advance:.3f} m, a body length is {body_length:.3f} m"
    assert trunk[:, 2].min() > TRUNK_LOWEST, f"the trunk went down to {trunk[:, 2].min():.3f} m"
    feet = np.array([[contact_location(mech, c, z)[2] for c in range(mech.nc)] for z in walked.Z])
    for c in range(mech.nc):
        assert feet[:, c].max() > LIFT_OFF, f"{mech.contacts[c].name} never left the ground"
    # steps, not a slide: each foot ends about a stride's worth ahead, as the trunk does
    ahead = np.array([contact_location(mech, c, walked.Z[-1])[0] - contact_location(mech, c, walked.Z[0])[0]
                      for c in range(mech.nc)])
    assert np.all(ahead > body_length), f"feet advanced {ahead}"


# The humanoid's step: the swing foot ahead by at least two thirds of the planned 0.15 m and
# down again (every sole point within 2 mm of the ground), the stance sole within 1 cm of
# where it stood, the pelvis upright within 0.1 rad and its height never down by more than 0.1 m.
STEP_REACHED = 0.1
SOLE_ON_GROUND = 0.002
SOLE_SLIP = 0.01
UPRIGHT = 0.1
PELVIS_DROP = 0.1
# Rolled out again without the slack (below 1e-4 N), the humanoid's motion moves by 2.4 mm over
# the 2 s (measured: a balance on one sole amplifies it); it must stay below 1 cm.
SLACK_FREE_DEVIATION = 0.01


@pytest.mark.long(8)
def test_the_humanoid_takes_a_step_on_its_joint_torques():
    """configs/optimize/humanoid_step.yaml, solved whole: the right foot leaves the ground and
    lands ahead, flat, the left sole stays, the pelvis moves forward upright; the slack on the
    pelvis is driven to zero and the joint torques alone do the same."""
    from dojo_cli.optimize.problem import orientation_residual

    task = load_task(CONFIGS / "humanoid_step.yaml")
    p = task.problem
    result = solve(p, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    assert result.violation < task.options.constraint_tolerance
    free = result.traj.U.copy()
    free[:, list(p.slack)] = 0.0  # the joint torques alone
    walked = rollout(p, free)
    assert walked.failed_step is None
    moved = np.max(np.abs(walked.Z - result.traj.Z))
    assert moved < SLACK_FREE_DEVIATION, f"without the slack the motion moves by {moved:.2e}"
    mech = p.mech
    names = [c.name for c in mech.contacts]
    left = [names.index(f"left_ankle_roll_link_{i}") for i in range(4)]
    right = [names.index(f"right_ankle_roll_link_{i}") for i in range(4)]
    soles = np.array([[contact_location(mech, c, z) for c in range(mech.nc)] for z in walked.Z])
    ahead = soles[-1, right, 0] - soles[0, right, 0]
    assert np.all(ahead > STEP_REACHED), f"the right sole moved {ahead} m"
    assert soles[:, right, 2].max() > LIFT_OFF, "the right foot never left the ground"
    assert np.all(np.abs(soles[-1, :, 2]) < SOLE_ON_GROUND), f"soles at the end {soles[-1, :, 2]}"
    slip = np.max(np.abs(soles[:, left, 0:2] - soles[0, left, 0:2]))
    assert slip < SOLE_SLIP, f"the left sole moved {slip:.3f} m"
    pelvis = walked.Z.reshape(len(walked.Z), mech.nb, 13)[:, 0]
    tilt = np.linalg.norm(orientation_residual(pelvis[:, 6:10], np.zeros(3))[0], axis=-1).max()
    assert tilt < UPRIGHT, f"the pelvis tilted {tilt:.3f} rad"
    assert pelvis[:, 2].min() > pelvis[0, 2] - PELVIS_DROP, f"the pelvis went down to {pelvis[:, 2].min():.3f} m"
    assert pelvis[-1, 0] - pelvis[0, 0] > STEP_REACHED / 2, "the pelvis moved forward over the feet"
