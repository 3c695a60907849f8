"""Dojo's behaviour cases without contact (behaviors.jl, mechanism.jl; notes 9.10, 9.11)."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.model.mechanism import ORIGIN, Body, Joint, Mechanism
from dojo_cli.model.shapes import Shape, body_inertia
from dojo_cli.physics.coordinates import constraint_violation, minimal_to_maximal
from dojo_cli.model.controller import ConstantController, ExternalForce, ScheduleController
from dojo_cli.api import simulate
from dojo_cli.solver.options import SolverOptions
from tests.mechanisms import fourbar

LOOP_TOL = 1e-5  # Dojo's four-bar bound


@pytest.mark.parametrize("h", [0.1, 0.05, 0.01, 0.005])
def test_fourbar_loop_closure(h):
    mech, z0 = fourbar(h=h, inner_angle=0.25)
    assert np.max(constraint_violation(mech, z0)) < 1e-12, "initial state closes the loop"
    rng = np.random.default_rng(0)
    steps = int(round(5.0 / h))
    # random inputs on the first two joints, as Dojo's test (rand, -rand, 0, 0, 0)
    table = np.column_stack([rng.random(steps), -rng.random(steps), np.zeros((steps, 3))])
    tr = simulate(mech, steps, z0, ScheduleController(table), SolverOptions(rtol=1e-8))
    assert set(tr.status) == {"success"}, set(tr.status)
    th = tr.minimal_q  # j1..j5, one coordinate each
    for name, err in {
        "theta3 - theta2": th[:, 2] - th[:, 1],
        "theta4 + theta2": th[:, 3] + th[:, 1],
        "theta5 + theta2": th[:, 4] + th[:, 1],
    }.items():
        assert np.max(np.abs(err)) < LOOP_TOL, f"{name}: {np.max(np.abs(err)):.2e}"


def dzhanibekov(omega):
    main = Body("main", 1.0, np.diag([3e-2, 1e-3, 1e-1]), Shape("capsule", {"radius": 0.1, "height": 1.0}))
    side_shape = Shape("capsule", {"radius": 0.05, "height": 0.35}, orientation_offset=(0.7071067811865476, 0, 0.7071067811865476, 0))
    side = Body("side", 0.5, body_inertia(side_shape, 0.5), side_shape)
    joints = [
        Joint("base", "floating", ORIGIN, 0),
        Joint("attach", "fixed", 0, 1, child_vertex=np.array([-0.25, 0, 0])),
    ]
    mech = Mechanism([main, side], joints, 0.01, (0, 0, 0), name="dzhanibekov")
    return mech, minimal_to_maximal(mech, np.r_[0, 0, 1, 0, 0, 0, 0, 0, 0, omega])


def test_dzhanibekov_flip():
    """Spin about the intermediate axis flips: the side body's x goes from +0.25 to below -0.05."""
    mech, z0 = dzhanibekov([15.0, 0.01, 0.0])
    tr = simulate(mech, 400, z0, opts=SolverOptions(rtol=1e-10))
    side_x = tr.x[:, 1, 0] - tr.x[:, 0, 0]
    assert side_x[0] == pytest.approx(0.25, abs=1e-12)
    assert np.min(side_x) < -0.05, f"no flip: min side x {np.min(side_x):.3f}"


def free_unit_box():
    body = Body("box", 1.0, np.eye(3), Shape("box", {"size": (1.0, 1.0, 1.0)}))
    mech = Mechanism([body], [Joint("free", "floating", ORIGIN, 0)], 0.01, (0, 0, 0))
    # rotated by pi/2 about z
    return mech, minimal_to_maximal(mech, np.r_[0, 0, 1, 0, 0, np.pi / 2, np.zeros(6)])


def test_external_force_body_frame():
    """Dojo: body-frame force [1,0,0] at vertex [0.5,0,0] on a box turned pi/2 about z for
    0.5 s: after 1 s v_y = 0.5 (1e-3)."""
    mech, z0 = free_unit_box()
    force = ExternalForce(0, np.array([1.0, 0, 0]), np.zeros(3), np.array([0.5, 0, 0]), "body", 0.0, 0.5 - 1e-9)
    tr = simulate(mech, 100, z0, external=[force], opts=SolverOptions(rtol=1e-10))
    assert tr.v[-1, 0] == pytest.approx([0, 0.5, 0], abs=1e-3), tr.v[-1, 0]


def test_external_torque():
    """Dojo: torque [1,0,0] (body frame) for 0.5 s on a unit-inertia box: w_x = 0.5."""
    mech, z0 = free_unit_box()
    torque = ExternalForce(0, np.zeros(3), np.array([1.0, 0, 0]), np.zeros(3), "body", 0.0, 0.5 - 1e-9)
    tr = simulate(mech, 100, z0, external=[torque], opts=SolverOptions(rtol=1e-10))
    assert tr.omega[-1, 0] == pytest.approx([0.5, 0, 0], abs=1e-3), tr.omega[-1, 0]


def test_inputs_are_forces():
    """A floating box with an upward input of m g on its base joint hovers (10 s)."""
    body = Body("box", 1.0, np.eye(3) / 6, Shape("box", {"size": (1.0, 1.0, 1.0)}))
    mech = Mechanism([body], [Joint("free", "floating", ORIGIN, 0)], 0.01, (0, 0, -9.81))
    z0 = minimal_to_maximal(mech, np.r_[0, 0, 1, np.zeros(9)])
    u = np.array([0, 0, 9.81, 0, 0, 0])
    tr = simulate(mech, 1000, z0, ConstantController(u), SolverOptions(rtol=1e-10))
    assert np.max(np.abs(tr.x[:, 0] - [0, 0, 1])) < 1e-8, np.max(np.abs(tr.x[:, 0] - [0, 0, 1]))


def test_translational_input_torque_matches_constraint_force():
    """A prismatic joint's input force acts at the child's joint point: pushing a free
    pendulum-like body sideways through an offset produces the lever-arm torque (Dojo halves it)."""
    from dojo_cli import _core

    body = Body("b", 1.0, np.eye(3))
    mech = Mechanism([body], [Joint("p", "prismatic", ORIGIN, 0, axis=np.array([1.0, 0, 0]), child_vertex=np.array([0, 0, 0.5]))], 0.01)
    z = np.r_[np.zeros(6), 1.0, np.zeros(6)]  # at the origin, identity orientation, at rest
    w = np.zeros(mech.core.n)
    data = _core.Data(mech.core)
    # the body rows of the step's residual hold -h Ju^T u: the impulse per unit force is
    # the change of the residual per unit input, divided by -h
    r0, r1 = (np.asarray(_core.testing.step_residual(mech.core, data, z, np.array([u]), w)) for u in (0.0, 1.0))
    row = (r0 - r1)[:6] / mech.timestep  # [force (world); torque (body frame)] on the child
    force, torque = row[:3], row[3:6]
    assert np.allclose(force, [1, 0, 0], atol=1e-12), force
    assert np.allclose(torque, np.cross([0, 0, 0.5], [1, 0, 0]), atol=1e-12), torque


def test_fourbar_redundant_loop_converges_at_default_options():
    """The planar loop's constraints are redundant (Newton matrix rank-deficient without
    regularisation); every step must still converge at Dojo's default options."""
    mech, z0 = fourbar(h=0.01)
    tr = simulate(mech, 500, z0)
    failed = [i for i, s in enumerate(tr.status) if s != "success"]
    assert not failed, f"{len(failed)} steps failed, first {failed[:3]}, residuals {tr.residual[failed[:3]]}"
