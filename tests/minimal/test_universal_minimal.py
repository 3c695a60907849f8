"""Universal and gimbal joints in the minimal-coordinate layer: each is its two or three
revolute axes in sequence (tree joints through massless frames, dojo_cli/minimal/model.py),
its coordinates the joint's angles. Checked here: the conversions between the maximal state
and the minimal one, and the RK4 integrator's bodies (the frames carry none) through the
conservation of a free chain's energy and momentum. (Derivatives: test_functions.py; the
maximal step's accelerations: test_maximal_agreement.py; Pinocchio on human.urdf:
test_pinocchio.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.math.quaternion import matrix_from_quaternion
from tests.minimal.scenes import UNIVERSAL_JOINTS

ROUND_TRIP_TOL = 1e-10  # conversions through the core's kinematics, to rounding
ENERGY_TOL = 1e-8  # RK4 at dt = 2^-9 over 1 s on energies of order 1-10 J
MOMENTUM_TOL = 1e-7
LOOP_TOL = 1e-6  # joint rows at the solver's default (relative) tolerances, m and rad


def _state(model, seed):
    """A state with the angles inside their charts (|t| < pi, a gimbal's middle < pi/2)."""
    rng = np.random.default_rng(seed)
    x = minimal.randn_state(model, rng)
    for tj in model.joints:
        if tj.type in ("universal", "gimbal"):
            x[tj.q] = 0.6 * rng.uniform(-1, 1)
    x[model.nq:] *= 0.5
    return x


def test_names_and_sizes_are_the_angles():
    model = minimal.build_model(dojo.load_scene(UNIVERSAL_JOINTS))
    assert model.config_names[7:] == ["j1_a", "j1_b", "j2:t1", "j2:t2", "j2:t3", "j3:t1", "j3:t2"]
    assert (model.nq, model.nv) == (7 + 7, 6 + 7)
    frames = [tj.name for tj in model.joints if tj.frame]
    assert frames == ["j1_a", "j2:t1", "j2:t2", "j3:t1"], "a massless frame before each axis but the last"


def test_maximal_state_round_trip():
    """Bodies from a minimal state (the tree's forward kinematics), then the minimal state of
    those bodies (the maximal core's angles and their rates): the same state."""
    model = minimal.build_model(dojo.load_scene(UNIVERSAL_JOINTS))
    for seed in range(3):
        x = _state(model, seed)
        b = model.bodies_from_state(x)
        z = np.concatenate([b["x"], b["v"], b["q"], b["w"]], axis=1).reshape(-1)
        back = model.state_from_maximal(z)
        err = np.max(np.abs(minimal.state_error(model, back, x)))
        assert err < ROUND_TRIP_TOL, f"round trip error {err:.2e}"


def test_rk4_free_chain_keeps_energy_and_momentum():
    mech = dojo.load_scene(UNIVERSAL_JOINTS, overrides={"gravity": [0, 0, 0], "joints.1.spring": 0.0, "joints.2.spring": 0.0,
                                                         "joints.1.damper": 0.0, "joints.2.damper": 0.0, "joints.3.damper": 0.0})
    model = minimal.build_model(mech)
    integ = minimal.Rk4(model)
    x0 = _state(model, 4)
    ts, qs, vs = minimal.simulate(model, x0, 1.0, dt=2.0**-9)

    def mechanics(x):
        z = integ.bodies(x)
        energy = sum(0.5 * mech.mass[b] * z[b, 3:6] @ z[b, 3:6] + 0.5 * z[b, 10:13] @ mech.inertia[b] @ z[b, 10:13]
                     for b in range(mech.nb))
        p = np.sum(mech.mass[:, None] * z[:, 3:6], axis=0)
        L = sum(np.cross(z[b, 0:3], mech.mass[b] * z[b, 3:6])
                + matrix_from_quaternion(z[b, 6:10]) @ (mech.inertia[b] @ z[b, 10:13]) for b in range(mech.nb))
        return energy, np.concatenate([p, L])

    e0, m0 = mechanics(x0)
    e1, m1 = mechanics(np.concatenate([qs[-1], vs[-1]]))
    assert e0 > 0.1, "the chain moves"
    assert abs(e1 - e0) < ENERGY_TOL, f"energy drift {abs(e1 - e0):.2e}"
    assert np.max(np.abs(m1 - m0)) < MOMENTUM_TOL, f"momentum drift {np.max(np.abs(m1 - m0)):.2e}"


def test_rk4_refuses_a_universal_loop_closing_joint():
    """The RK4 loop solve holds Dojo's rotational rows, not the Hooke row: refused, naming
    the joint's line; the variational integrator (the maximal core's row) runs it."""
    import yaml

    from dojo_cli.errors import SceneError
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict

    from dojo_cli.math.quaternion import conjugate, multiply
    from dojo_cli.physics.coordinates import minimal_to_maximal

    with open(UNIVERSAL_JOINTS, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["joints"][0]["type"] = "fixed"  # b0 held: gravity swings the loop
    # closing b0 -> b3 where the tree puts b3 at rest (every coordinate zero): the loop holds
    tree = dojo.load_scene(UNIVERSAL_JOINTS, overrides={"joints.0.type": "fixed"})
    z = minimal_to_maximal(tree, np.zeros(2 * tree.nf)).reshape(tree.nb, 13)
    r0 = matrix_from_quaternion(z[0, 6:10])
    data["joints"].append({"name": "closing", "type": "universal", "parent": "b0", "child": "b3",
                           "parent_vertex": (r0.T @ (z[3, 0:3] - z[0, 0:3])).tolist(), "child_vertex": [0.0, 0.0, 0.0],
                           "orientation_offset": multiply(conjugate(z[0, 6:10]), z[3, 6:10]).tolist()})
    mech = build_mechanism(spec_from_dict(data, file=UNIVERSAL_JOINTS))
    model = minimal.build_model(mech)
    assert model.loop_joints == ["closing"]
    with pytest.raises(SceneError) as info:
        minimal.Rk4(model)
    (problem,) = info.value.problems
    assert problem.field == "joints.4.type" and "universal loop-closing joint" in problem.message
    traj = dojo.simulate(mech, steps=20)
    assert set(traj.status) == {"success"}, set(traj.status)
    from dojo_cli.physics.coordinates import constraint_violation

    worst = max(float(np.max(constraint_violation(mech, traj.state(k)))) for k in range(len(traj.time)))
    assert worst < LOOP_TOL, f"loop constraint violation {worst:.2e}"
    moved = float(np.max(np.abs(traj.x[-1] - traj.x[0])))
    assert moved > 1e-3, f"the loop hardly moved ({moved:.1e} m): not the case tested"
