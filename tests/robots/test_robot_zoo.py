"""Robots users bring (issue 24): example-robot-data URDFs imported as
``dojo import-urdf URDF --floating --contacts collision --merge-fixed`` and dropped limp.

A representative set of the hard cases of benchmarks/robot_zoo.py (which runs all 69 for
2 s): light links (a 0.1 kg pendulum base, fingers, feet of 2-3 kg quadrupeds and a 1.3 kg biped),
hands, arms lying on the ground. Each runs through the moments its steps failed before
the interior point's restarts (core/maximal/step.h, "Restarts": the first failures came at
steps 8 to 61), and every step must converge with no contact deeper than 5 mm.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.scene import robots
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import UrdfOptions, read_urdf
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.status import SolverStatus

ROOT = robots.example_robot_data_root()
# example-robot-data is in the test extra: without it these checks fail, never skip (issue 25 item 8)
assert ROOT is not None, f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})"

PENETRATION = 5e-3  # the bound: no contact more than 5 mm inside the ground (m)

# (file stem, steps): each past the step where it failed before the restarts (in brackets:
# the first failed step / failed steps of 200 in benchmarks/robot_zoo.py before)
CASES = [
    ("double_pendulum", 45),  # 0.1 kg base, 96 hull contacts (31 / 77)
    ("finger_edu", 45),  # a finger on light links (17 / 154)
    ("quadruped", 130),  # a 2.8 kg quadruped with light lower legs (120 / 78)
    ("solo", 40),  # a 2.2 kg quadruped, light feet (16 / 151)
    ("bolt", 30),  # biped with light feet (13 / 140)
    ("ur3_robot", 30),  # arm lying on the ground (13 / 140)
    ("ur10_robot", 40),  # a heavier arm (30 / 6)
    ("allegro_left_hand", 20),  # a hand (0 / 3)
    ("allegro_right_hand", 30),  # the other hand (0 / 24, 367 mm deep)
    ("anymal-kinova", 60),  # massless root merged with its fixed links, an arm on it (refused at import before)
    ("z1", 3),  # an arm at rest on its base cylinder: step 0 cycled from every scale until its rim point became continuous
    ("b1-z1", 45),  # a 61 kg quadruped with an arm: a foot's stick-slip switch jammed steps 40-43 (40 / 4)
    ("simple_humanoid", 70),  # a 27 kg trunk lying on a 1 m cylinder's cap: its rim point jumped (62 / 2)
]
# Not here: the robots whose import alone takes longer than this file's budget (g1, talos:
# 20-150 s before the hull cache). alex_sake_hands (1 s) is below, for its step 30.


def _mechanism(stem: str, joint_friction: bool = True):
    """The robot as imported; without joint_friction, its joints' dry friction (URDF
    <dynamics friction>, modelled since issue 24) left out: the solver's hard steps below were
    found on the robots without it, and with it they are other steps."""
    path = next((ROOT / "robots").rglob(f"{stem}.urdf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the importer's notes (<mimic>, ...)
        result = read_urdf(path, UrdfOptions(floating=True, contacts="collision", merge_fixed=True, meshes=False))
        if not joint_friction:
            for joint in result.scene["joints"]:
                joint.pop("friction", None)
        return build_mechanism(spec_from_dict(result.scene, file=str(path)))


@pytest.mark.parametrize("stem,steps", CASES, ids=[c[0] for c in CASES])
def test_limp_drop_converges_every_step_without_penetration(stem, steps):
    mech = _mechanism(stem)
    traj = dojo.simulate(mech, steps=steps)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{stem}: {len(failed)} failed steps, first {failed[:1]} ({traj.status[failed[0]]})"
    deepest = -float(np.min(traj.contact_distance))
    assert deepest < PENETRATION, f"{stem}: a contact {deepest * 1e3:.2f} mm inside the ground"


def test_a_restarted_step_is_a_solution_of_the_step():
    """double_pendulum's step 31 stalls from Dojo's starting point (impulses 1.5 N s on a
    0.1 kg body); the restart's answer satisfies the step's equations and complementarity
    to the solver's tolerances, and a stateless step starts from Dojo's point again. The
    case is the absolute tolerances' (tolerances: absolute): at the relative default the
    same step converges from Dojo's point (12 iterations), no restart to test."""
    mech = _mechanism("double_pendulum")
    # the hard step was found on Dojo's path (every step from Dojo's point): a warm-started
    # drop reaches another state at step 31 (a limp drop is chaotic), one that converges
    opts = dojo.default_options(mech).replace(tolerances="absolute", warm_start=False)
    traj = dojo.simulate(mech, steps=31, opts=opts)
    z = traj.state(31)
    _, result = solve_step(mech, z, lam0=traj.impulses[30], opts=opts)
    data = mech.core_data
    assert result.status is SolverStatus.SUCCESS, result.status
    assert data.restarts >= 1, f"step 31 converged from Dojo's start ({result.iterations} iterations): not the case tested"
    assert result.iterations > opts.max_iter, "the record counts the failed attempt's iterations"
    rvio, bvio = _core.testing.violations(mech.core, np.asarray(data.residual_vector), relative=False)
    assert rvio < opts.rtol and bvio < opts.btol, (rvio, bvio)
    # a stateless step starts from Dojo's point, whatever the last one converged from
    data.impulse_scale = 1e-2
    _, result = solve_step(mech, traj.state(5), lam0=traj.impulses[4], opts=opts)
    assert result.status is SolverStatus.SUCCESS and data.restarts == 0 and data.impulse_scale == 1.0, (
        result.status, data.restarts, data.impulse_scale)


def test_filter_sweep_ends_a_cycling_solve():
    """go2's step 36 (dropped limp) does not converge under Dojo's acceptance from any
    starting scale of the first sweep (50 iterations each, the steps cut to alpha ~ 0.3 by
    the cones, the violations traded back and forth around 1e-4); from Dojo's start again
    with the second sweep's filter (core/maximal/interior_point.h, step 5) it converges
    in 41 iterations, after the first sweep's three restarts, to a solution of the step's
    equations to Dojo's absolute tolerances, and the residual the solve leaves is the one
    at the step it kept. (The case was z1's step 0, which cycled, until the rim contact of
    a cylinder standing on its cap became continuous, core/maximal/collision.h
    kLevelCircle: z1's cycle came from its base's rim point jumping between iterates, and
    z1 now runs without a restart.)"""
    mech = _mechanism("go2")
    opts = dojo.default_options(mech).replace(warm_start=False)  # the cycle is on Dojo's path (as above)
    traj = dojo.simulate(mech, steps=36, opts=opts)
    assert all(s == "success" for s in traj.status)
    z = traj.state(36)
    _, result = solve_step(mech, z, lam0=traj.impulses[35], opts=opts)
    data = mech.core_data
    assert result.status is SolverStatus.SUCCESS, result.status
    assert data.restarts > 3, f"converged in the first sweep ({data.restarts} restarts): not the case tested"
    residual = np.asarray(data.residual_vector)
    np.testing.assert_allclose(
        residual, _core.testing.step_residual(mech.core, data, z, None, np.asarray(data.w)), rtol=0, atol=1e-12)
    rvio, bvio = _core.testing.violations(mech.core, residual, relative=False)
    assert rvio < opts.rtol and bvio < opts.btol, (rvio, bvio)


def test_recentring_ends_a_jammed_solve():
    """b1-z1's step 40 (relative tolerances): the foot RL_foot switches from sliding to
    sticking, its friction impulse on its cone's boundary and its slip cone shrinking to
    the apex; that one cone cuts every step to alpha ~ 5e-4, and the other feet's friction
    cannot align with their slip (cone products 2x btol) from any starting scale, with or
    without the filter. The third sweep re-centres the jammed cone (core/maximal/
    interior_point.h, recentre_jams): the step converges, after both earlier sweeps'
    seven restarts, to a solution of the step's equations to Dojo's absolute tolerances
    (the relative default's fallback, core/maximal/tolerances.h: in the rows' units the
    cone products stay 1.6x btol), and the residual the solve leaves is the one at the
    step it kept."""
    mech = _mechanism("b1-z1", joint_friction=False)  # (with its joints' friction, step 40 converges at once)
    opts = dojo.default_options(mech)
    traj = dojo.simulate(mech, steps=40, opts=opts)
    assert all(s == "success" for s in traj.status)
    _, result = solve_step(mech, traj.state(40), lam0=traj.impulses[39], opts=opts)
    data = mech.core_data
    assert result.status is SolverStatus.SUCCESS, result.status
    assert data.restarts > 7, f"converged in the first two sweeps ({data.restarts} restarts): not the case tested"
    residual = np.asarray(data.residual_vector)
    np.testing.assert_allclose(
        residual, _core.testing.step_residual(mech.core, data, traj.state(40), None, np.asarray(data.w)), rtol=0, atol=1e-12)
    rvio, bvio = _core.testing.violations(mech.core, residual, relative=False)
    assert rvio < opts.rtol and bvio < opts.btol, (rvio, bvio)


# human.urdf's joints (issue 24 item 2): 6 gimbals and 7 universal joints, each a chain of
# revolute joints through massless links. It has no <collision> elements, so the issue's
# flags give no contacts: it falls freely, and in uniform gravity no joint moves (a force
# the new joints made up would move them).
HUMAN_STILL = 1e-6  # rad: joint motion over the free fall at Dojo's tight tolerances (measured 4.7e-8)


def test_human_with_universal_and_gimbal_joints_drops_limp():
    mech = _mechanism("human")
    kinds = [str(getattr(j.type, "value", j.type)) for j in mech.joints]
    assert (kinds.count("gimbal"), kinds.count("universal"), kinds.count("revolute")) == (6, 7, 4), kinds
    assert mech.nc == 0, "human.urdf has no <collision> elements"
    traj = dojo.simulate(mech, steps=200)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"human: {len(failed)} failed steps, first {failed[:1]}"
    tight = dojo.simulate(mech, steps=200, opts=dojo.SolverOptions(rtol=1e-12, btol=1e-12))
    q = np.asarray(tight.minimal_q)[:, 6:]
    moved = float(np.max(np.abs(q - q[0])))
    assert moved < HUMAN_STILL, f"joints moved {moved:.2e} rad in free fall"
    assert abs(tight.v[-1, 0, 2] + 9.81 * 2.0) < 1e-9, "the body falls at g"


# Steps that failed every attempt of the first three sweeps (core/maximal/step.h,
# "Restarts"): light wrist and gripper links (0.08-0.5 kg) lying on many hull-vertex
# contacts, whose badly centred friction cones cut every step to alpha ~ 1e-2. Their
# states (tests/data/robot_hard_steps.npz: the state before the step and the last step's
# impulses, the warm start, from the limp drop at the relative tolerances) are solved
# as one step each.
HARD_STEPS = Path(__file__).parent.parent / "data" / "robot_hard_steps.npz"
# Restarts of the first three sweeps (step.h, kImpulseScales' four scales: the three
# other than the first's, then all four twice): a step converging after these was solved
# in the fourth sweep.
THREE_SWEEPS = 3 + 4 + 4


@pytest.mark.parametrize("stem", ["talos_full_v2", "g1_29dof_with_hand_rev_1_0"])
def test_centrality_correctors_solve_steps_on_light_links(stem):
    """talos_full_v2's step 66 and g1 with hands' step 73 (dropped limp): every attempt of
    the first three sweeps ends unconverged, the steps cut by the cones of a 0.1-0.5 kg
    wrist or gripper resting on its hull's vertices and the complementarity shrinking ~5 %
    an iteration. The fourth sweep's Gondzio centrality correctors (core/maximal/
    interior_point.h, centrality_correctors) aim the badly centred products back into a
    band around the centring target: the step converges, to a solution of the step's
    equations and complementarity to Dojo's absolute tolerances, and the residual the
    solve leaves is the one at the step it kept."""
    saved = np.load(HARD_STEPS)
    z, lam0, k = saved[f"{stem}/state"], saved[f"{stem}/impulses"], int(saved[f"{stem}/step"])
    mech = _mechanism(stem, joint_friction=False)  # the states of the drops without joint friction
    opts = dojo.default_options(mech)
    _, result = solve_step(mech, z, lam0=lam0, opts=opts)
    data = mech.core_data
    assert result.status is SolverStatus.SUCCESS, f"{stem} step {k}: {result.status}"
    assert data.restarts > THREE_SWEEPS, f"converged in the first three sweeps ({data.restarts} restarts): not the case tested"
    residual = np.asarray(data.residual_vector)
    np.testing.assert_allclose(
        residual, _core.testing.step_residual(mech.core, data, z, None, np.asarray(data.w)), rtol=0, atol=1e-12)
    rvio, bvio = _core.testing.violations(mech.core, residual, relative=False)
    assert rvio < opts.rtol and bvio < opts.btol, (rvio, bvio)


def test_a_step_the_interior_point_fails_is_solved_as_substeps():
    """alex_sake_hands dropped limp (24 bodies, 960 hull contacts), step 30: a gripper's
    light links under contact loads hundreds of times their weight; the interior point fails
    the step from every restart (the Newton direction asks for spins past sqrt(2)/h, the fold
    of the discrete rotational momentum, and the cones cut every step short). At h/2 the fold
    is twice as far: the run solves the step as substeps (simulation.substeps), every step
    converges, and no contact goes deeper than 5 mm."""
    mech = _mechanism("alex_sake_hands")
    traj = dojo.simulate(mech, steps=31)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, first {failed[:1]} ({traj.status[failed[0]]})"
    deepest = -float(np.min(traj.contact_distance))
    assert deepest < PENETRATION, f"a contact {deepest * 1e3:.2f} mm inside the ground"
    substepped = np.flatnonzero(traj.substeps > 1)
    assert list(substepped) == [30], f"steps solved as substeps: {list(substepped)} (the case tested is step 30)"
    # the case: the full step alone fails, whatever the restarts
    _, result = solve_step(mech, traj.state(30), lam0=traj.impulses[29], angles=traj.minimal_q[30])
    assert result.status is not SolverStatus.SUCCESS, "step 30 converges as a full step: not the case tested"
