"""Every subset of skydy's six degrees of freedom is a joint (issue 29, skydy rows): the 40
that Dojo's joint types reach with one axis and the 24 that need a rotation axis of their own
(``[x, ry]``: a translation across the rotation axis), and held degrees of freedom at a
non-zero ``const_value``. Checked physically, each subset as it comes from ``dofs:`` in a scene:

- momentum: the subset's joint between two free-floating bodies (zero gravity, springs,
  dampers and inputs on the joint, the joint point off both centres of mass) conserves the
  total linear and angular momentum (Dojo's momentum test, notes 9.8), all 64 subsets;
- energy: a body hung from the world by the subset, zero gravity, no damping: the
  variational integrator keeps the mechanical energy (springs on) within its bounded
  oscillation, all 64;
- maximal vs minimal: Dojo's variational step and the tree's ABA give the same body
  accelerations to O(h) (tests/minimal/test_maximal_agreement.py's check; an implementation
  sharing none of the tree code), for the 24 new subsets with gravity and springs;
- Pinocchio: the 12 new subsets with one free rotation (a revolute with translations across
  its axis), as Pinocchio composite joints (prismatic ones, then the revolute), give the
  same M, C, ABA and RNEA at random states (tests/minimal/test_pinocchio.py's tolerances);
- step gradients: the implicit-function-theorem Jacobians of the step against finite
  differences (2e-9 to 2e-8 relative) for six of the new subsets with a held rotation.
"""

from __future__ import annotations

import itertools

import numpy as np
import pinocchio as pin
import pytest
import yaml

from dojo_cli import minimal
from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.physics.energy import knot_mechanics
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.dofs import DOF_NAMES, SHARED_AXIS, TABLE
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.model.controller import ConstantController
from dojo_cli.api import simulate
from dojo_cli.solver.options import SolverOptions
from tests.mechanisms import random_state

SUBSETS = sorted((sorted(key, key=DOF_NAMES.index) for key in TABLE), key=lambda s: (len(s), [DOF_NAMES.index(d) for d in s]))
NEW_SUBSETS = [s for s in SUBSETS if frozenset(s) not in SHARED_AXIS]
TIGHT = SolverOptions(rtol=1e-12, btol=1e-12)  # Dojo's momentum/energy tests use 1e-12
MOMENTUM_DRIFT = 1e-8  # Dojo's bound (notes 9.8)
# The variational integrator's energy error oscillates, O(h^2), without drift: over 2 s at
# h = 0.01 with these speeds (about 1 rad/s, 0.5 m/s) and springs of 4 the worst of the 64 is
# 2.1e-3 of the energy (a plain revolute's, rz); halving h divides it by 3.7 to 4.
ENERGY_TIME = 2.0
ENERGY_STEP = 0.01
SPRING = 4.0
# From knot 1: at knot 0 the two-rotation (orbital family) joints' stored velocity is off the
# step's by a constant energy (-3.4e-5 relative on [rx, ry], the same at h and h/2), a matter
# of the t = 0 velocities, not of the joint; from knot 1 on they keep it to O(h^2).
ENERGY_START = 1
ENERGY_OSCILLATION = 1e-2
ENERGY_ROUNDING = 1e-11  # the solver's tolerance 1e-12 on a 1 J energy
ENERGY_ORDER_RATIO = 3.0  # 4 for O(h^2), at most 2 for a first-order error


def _box(name: str, size, mass: float) -> dict:
    return {"name": name, "mass": mass, "shape": {"type": "box", "size": list(size)}}


def _scene(dofs: list[str], floating: bool, gravity=(0.0, 0.0, 0.0), const_values=None, spring=4.0, damper=0.0) -> dict:
    """One body (or a floating base and a body) on a joint with these free degrees of freedom,
    its point off the centres of mass so that translations and rotations couple."""
    bodies = [_box("b1", (0.3, 0.2, 0.6), 2.0)]
    joints = []
    parent = "origin"
    if floating:
        bodies.insert(0, _box("b0", (0.5, 0.4, 0.3), 5.0))
        joints.append({"name": "float", "type": "floating", "parent": "origin", "child": "b0"})
        parent = "b0"
    joint = {"name": "j", "dofs": list(dofs), "parent": parent, "child": "b1",
             "parent_vertex": [0.1, -0.05, 0.2], "child_vertex": [0.05, 0.1, 0.3]}
    if dofs:
        joint["spring"], joint["damper"] = spring, damper
    if const_values:
        joint["const_values"] = dict(const_values)
    joints.append(joint)
    return {"name": "skydy_" + "_".join(dofs or ["none"]), "timestep": 0.01, "gravity": list(gravity),
            "bodies": bodies, "joints": joints}


def _mechanism(scene: dict):
    return build_mechanism(spec_from_dict(yaml.safe_load(yaml.safe_dump(scene))))


def _run(mech, steps, z0, controller=None):
    tr = simulate(mech, steps, z0, controller, TIGHT)
    assert set(tr.status) == {"success"}, f"{mech.name}: solver failed: {set(tr.status)}"
    return knot_mechanics(mech, tr.time, tr.x, tr.q, tr.v, tr.omega)


def test_every_subset_has_a_joint_and_the_new_ones_a_rotation_axis_of_their_own():
    assert len(SUBSETS) == 64 and len(NEW_SUBSETS) == 24
    for dofs in SUBSETS:
        mech = _mechanism(_scene(dofs, floating=False))
        joint = mech.joints[0]
        assert mech.nf == len(dofs), dofs
        assert (joint.rotation_axis is not None) == (frozenset(dofs) in NEW_SUBSETS_SET), dofs


NEW_SUBSETS_SET = {frozenset(s) for s in NEW_SUBSETS}


@pytest.mark.parametrize("dofs", SUBSETS, ids=["_".join(s) or "none" for s in SUBSETS])
def test_momentum_is_conserved_across_the_joint(dofs):
    mech = _mechanism(_scene(dofs, floating=True, damper=1.0))
    z0 = random_state(mech, seed=1, coord_scale=0.3, rate_scale=1.0)
    u = np.r_[np.zeros(6), 0.1 * np.ones(mech.nf - 6)]
    me = _run(mech, 60, z0, ConstantController(u))
    for name, series in (("linear", me.linear_momentum), ("angular", me.angular_momentum)):
        d = float(np.max(np.abs(series - series[0])))
        assert d < MOMENTUM_DRIFT, f"{dofs}: {name} momentum drift {d:.2e}"


def _energy_error(dofs, h: float) -> float:
    scene = _scene(dofs, floating=False, spring=SPRING)
    scene["timestep"] = h
    mech = _mechanism(scene)
    z0 = random_state(mech, seed=2, coord_scale=0.3, rate_scale=1.0)
    e = _run(mech, round(ENERGY_TIME / h), z0).mechanical[ENERGY_START:]
    return float(np.max(np.abs(e - e[0])) / np.mean(np.abs(e)))


def test_energy_is_kept_by_every_subset_on_the_world_to_second_order():
    """The energy error of the variational integrator is an O(h^2) oscillation, not a drift:
    halving h divides it by about 4 (a first-order or drifting method: by 2 or less)."""
    bad = {}
    for dofs in SUBSETS[1:]:  # (the fixed joint moves nothing)
        coarse, fine = _energy_error(dofs, ENERGY_STEP), _energy_error(dofs, ENERGY_STEP / 2)
        if coarse < ENERGY_ROUNDING:
            continue  # exact (pure translations: the kinetic energy of a constant velocity)
        if not (coarse < ENERGY_OSCILLATION and coarse > ENERGY_ORDER_RATIO * fine):
            bad["_".join(dofs)] = f"{coarse:.1e} at h, {fine:.1e} at h/2"
    assert not bad, f"energy error not a small O(h^2) oscillation: {bad}"


# Held degrees of freedom (skydy's const_value) on some of the new subsets: the held
# translation moves the joint point, the held rotations turn the joint frame.
CONST_VALUES = {("x", "ry"): {"y": 0.1, "rx": 0.3}, ("x", "y", "rx"): {"z": -0.2, "ry": 0.25, "rz": -0.4},
                ("z", "rx", "ry"): {"x": 0.05, "rz": 0.5}}


def _new_subsets_scene(path) -> str:
    """Each of the 24 new subsets hanging a body from the world, gravity and springs on."""
    bodies, joints = [], []
    for k, dofs in enumerate(NEW_SUBSETS):
        scene = _scene(dofs, floating=False, const_values=CONST_VALUES.get(tuple(dofs)), spring=2.0, damper=0.1)
        body, joint = scene["bodies"][0], scene["joints"][0]
        body["name"], joint["name"], joint["child"] = f"b{k}", f"j{k}_{'_'.join(dofs)}", f"b{k}"
        bodies.append(body)
        joints.append(joint)
    path.write_text(yaml.safe_dump({"name": "skydy_new_subsets", "timestep": 0.01, "gravity": [0, 0, -9.81],
                                    "bodies": bodies, "joints": joints}), encoding="utf-8")
    return str(path)


def test_new_subsets_variational_accelerations_match_the_tree(tmp_path):
    from tests.minimal.test_maximal_agreement import NOISE, ORDER_CONSTANT, ORDER_RATIO, STEPS, _acceleration_error

    from tests.minimal.scenes import SKYDY_SUBSETS

    scene = _new_subsets_scene(tmp_path / "skydy.yaml")
    # the committed scene (tests/minimal's derivative checks use it) is this one
    assert yaml.safe_load(open(SKYDY_SUBSETS, encoding="utf-8")) == {"format": 1, **yaml.safe_load(open(scene, encoding="utf-8"))}
    errors = [_acceleration_error(scene, {}, h) for h in STEPS]
    for h, e in zip(STEPS, errors):
        assert e <= ORDER_CONSTANT * h, f"h={h:g}: relative acceleration error {e:.2e} > {ORDER_CONSTANT} h"
    assert errors[1] <= ORDER_RATIO * errors[0] + NOISE, f"not O(h): errors {errors[0]:.2e}, {errors[1]:.2e}"


def test_held_values_place_the_joint_frame(tmp_path):
    """At zero free coordinates the child sits where the held values put it: translations
    along the parent body frame's axes from the joint point, rotations R_x R_y R_z."""
    from dojo_cli.math.quaternion import matrix_from_quaternion

    held = {"y": 0.1, "z": -0.3, "rx": 0.3, "ry": -0.2, "rz": 0.5}
    mech = _mechanism(_scene(["x"], floating=False, const_values=held))
    z = minimal_to_maximal(mech, np.zeros(2))
    rot = matrix_from_quaternion(z[6:10])

    def r(axis, angle):
        c, s_ = np.cos(angle), np.sin(angle)
        i, j = [(1, 2), (2, 0), (0, 1)][axis]
        m = np.eye(3)
        m[i, i] = m[j, j] = c
        m[i, j], m[j, i] = -s_, s_
        return m

    expected = r(0, 0.3) @ r(1, -0.2) @ r(2, 0.5)
    assert np.allclose(rot, expected, atol=1e-14)
    joint_point = z[0:3] + rot @ np.array([0.05, 0.1, 0.3])
    assert np.allclose(joint_point, [0.1, -0.05 + 0.1, 0.2 - 0.3], atol=1e-14)
    # the free coordinate still moves along x, and its value is the distance moved
    z1 = minimal_to_maximal(mech, np.array([0.2, 0.0]))
    assert np.allclose(z1[0:3] - z[0:3], [0.2, 0, 0], atol=1e-14)


# Step gradients (implicit function theorem) of the new subsets against finite differences of
# the solved step (tests/simulation/test_gradients.py's check, random directions mixing every
# column), on a chain: a floating base, then the subset's joint, with springs, dampers, inputs,
# gravity and a held rotation; one subset of each type family with a rotation axis of its own.
GRADIENT_SUBSETS = [["x", "ry"], ["x", "y", "rx"], ["z", "rx", "rz"], ["x", "z", "rx", "ry"], ["y", "z", "rx", "rz"],
                    ["y", "rx"]]


@pytest.mark.parametrize("dofs", GRADIENT_SUBSETS, ids=["_".join(s) for s in GRADIENT_SUBSETS])
def test_new_subsets_step_gradients_match_finite_differences(dofs):
    from tests.simulation.test_gradients import TOL, check_state_and_input

    held = {next(d for d in ("rz", "ry", "rx") if d not in dofs): 0.3}
    mech = _mechanism(_scene(dofs, floating=True, gravity=(0, 0, -9.81), const_values=held, spring=2.0, damper=0.5))
    z = random_state(mech, seed=3)
    u = 0.3 * np.random.default_rng(1).standard_normal(mech.nu)
    assert mech.joints[1].rotation_axis is not None, f"{dofs} is one of Dojo's forty"
    err = check_state_and_input(mech, z, u, None, directions=3)
    assert err < TOL, f"{dofs}: relative error {err:.2e}"


def test_new_subsets_with_one_rotation_match_pinocchio(tmp_path):
    from tests.minimal import pinocchio_reference as ref
    from tests.minimal.test_pinocchio import _check, _compare

    one_rotation = [s for s in NEW_SUBSETS if sum(len(d) == 2 for d in s) == 1]
    assert len(one_rotation) == 12
    bodies, joints = [], []
    for k, dofs in enumerate(one_rotation):
        scene = _scene(dofs, floating=False, const_values=CONST_VALUES.get(tuple(dofs)))
        body, joint = scene["bodies"][0], scene["joints"][0]
        body["name"], joint["name"], joint["child"] = f"b{k}", f"j{k}", f"b{k}"
        joint.pop("spring"), joint.pop("damper")  # (Pinocchio's dynamics have no springs)
        bodies.append(body)
        joints.append(joint)
    model = minimal.build_model(_mechanism({"name": "one_rotation", "timestep": 0.01, "gravity": [0, 0, -9.81],
                                            "bodies": bodies, "joints": joints}))
    assert sum(tj.trans_pred for tj in model.joints) == 12, "translations across the axis: the predecessor frame's"
    pm, info = ref.build(model)
    q_of, v_of, perm = ref.converters(model, pm, info)
    # values against Pinocchio's algorithms; the derivatives against central differences of
    # Pinocchio's rnea and aba, not its analytical derivatives: those of a composite joint
    # differ from its own rnea's differences (by 22 in computeRNEADerivatives' dq here,
    # Pinocchio 4.1.0), ours agree with them to 2e-9
    _check(_compare(model, pm, q_of, v_of, perm, derivatives=False), "skydy one-rotation subsets")
    pd = pm.createData()
    rng = np.random.default_rng(5)
    inv = np.argsort(perm)
    worst = {"dRNEA": 0.0, "dABA": 0.0}
    for _ in range(3):
        x = minimal.randn_state(model, rng)
        q, v = q_of(x), v_of(x)
        a, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        D, _ = minimal.inverse_dynamics_deriv(model, x, a[inv], tangent=True)
        F, _ = minimal.forward_dynamics_deriv(model, x, tau[inv], tangent=True)
        for key, ours, f in (("dRNEA", D, lambda qq, vv: pin.rnea(pm, pd, qq, vv, a)),
                             ("dABA", F, lambda qq, vv: pin.aba(pm, pd, qq, vv, tau))):
            fd = np.column_stack(
                [(f(q + PIN_FD * e, v) - f(q - PIN_FD * e, v)) / (2 * PIN_FD) for e in np.eye(pm.nq)]
                + [(f(q, v + PIN_FD * e) - f(q, v - PIN_FD * e)) / (2 * PIN_FD) for e in np.eye(pm.nv)])
            mine = np.hstack([ours[:, :model.nv][np.ix_(perm, perm)], ours[:, model.nv:][np.ix_(perm, perm)]])
            worst[key] = max(worst[key], float(np.abs(mine - fd).max() / max(1.0, np.abs(fd).max())))
    assert max(worst.values()) < PIN_FD_TOL, f"derivatives against Pinocchio's differences: {worst}"


PIN_FD = 1e-6  # central differences of Pinocchio's functions
PIN_FD_TOL = 1e-6  # their truncation (h^2 ~ 1e-12 times third derivatives) and rounding (1e-16 / h)
