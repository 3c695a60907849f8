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


def test_the_committed_reference_is_what_the_generator_writes(trot, tmp_path):
    path = tmp_path / "trot.csv"
    trot.write_csv(path)
    assert path.read_text() == (CONFIGS / "quadruped_trot.csv").read_text(), "rerun configs/optimize/make_references.py"


def test_the_plans_feet_are_where_its_angles_put_them(references, trot):
    """Each knot's coordinates, through the core's minimal -> maximal map, put every foot
    where the plan has it; stance feet stay put, swing feet rise, and the pairs alternate."""
    import dojo_cli as dojo

    mech = dojo.load_scene(references.QUADRUPED["scene"], overrides=references.QUADRUPED["overrides"])
    feet = [f for pair in references.TROT["pairs"] for f in pair]
    cols = {n: i for i, n in enumerate(trot.names)}
    worst = 0.0
    for k in range(len(trot.time)):
        theta, rate = [], []
        for joint in mech.joints:
            n = mech.joint_free_range[mech.joints.index(joint)]
            size = len(np.arange(mech.nf)[n])
            names = [f"joints.{joint.name}"] if size == 1 else [f"joints.{joint.name}[{i}]" for i in range(size)]
            theta += [trot.table[k, cols[c]] for c in names]
            rate += [trot.table[k, cols[c.replace(joint.name, joint.name + ".velocity", 1) if size == 1
                                    else f"joints.{joint.name}.velocity[{c[-2]}]"]] for c in names]
        z = minimal_to_maximal(mech, interleave_minimal(mech, np.array(theta), np.array(rate)))
        at = np.array([contact_location(mech, f, z) for f in feet])
        planned = trot.feet[k] - [0.0, 0.0, mech.contacts[0].radius]  # sphere centres -> ground points
        worst = max(worst, float(np.max(np.abs(at - planned))))
        for f in feet:  # the feet's bodies' columns (a task may track them) are those bodies' positions
            b = mech.contacts[[c.name for c in mech.contacts].index(f)].body
            col = [cols[f"bodies.{mech.bodies[b].name}.position[{i}]"] for i in range(3)]
            worst = max(worst, float(np.max(np.abs(trot.table[k, col] - z[13 * b: 13 * b + 3]))))
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
