"""The minimal-coordinate functions against Pinocchio (the independent oracle), with
PinnZoo's tolerances (other_systems_notes.md 2.7): M, C, forward dynamics (ABA),
inverse dynamics (RNEA) and the tangent derivatives of RNEA and ABA, at init_state
and at random states of every tree built-in scene and of the URDF robots.

Scenes: Pinocchio's model is built joint by joint from the scene's tree
(tests/minimal/pinocchio_reference.py, Pinocchio's own joint models and algorithms).
URDF robots: Pinocchio reads the URDF file itself (pin.buildModelFromUrdf), and
``change_order(..., "pinocchio")`` is what lines our vectors up with its own.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.scene import robots
from dojo_cli.scene.loader import builtin_scene_names

import pinocchio as pin  # noqa: E402  (the test extra: the independent oracle must not be skipped)
from tests.minimal import pinocchio_reference as ref  # noqa: E402

# PinnZoo's tolerances (other_systems_notes.md 2.7), relative to each quantity's scale.
M_TOL = 1e-12
C_TOL = 1e-12
ABA_TOL = 1e-9
RNEA_TOL = 1e-12
# Tangent derivatives against Pinocchio's analytical ones: both are exact, so rounding
# only; ABA's pass through M^-1, whose conditioning (1e4 on the chains) costs digits.
RNEA_DERIV_TOL = 1e-11
ABA_DERIV_TOL = 1e-8
RANDOM_STATES = 20
# Scenes whose tree has a joint Pinocchio has no model of: a swing (orbital joints: two
# rotation-vector coordinates, no twist, a motion subspace J_r(phi) [b1 b2] that turns with
# q). Pinocchio's joints with two rotations (a composite of two revolutes, a universal
# joint) move on other coordinates, so their M, C and derivatives are other functions;
# these scenes are checked against the maximal model instead (test_maximal_agreement, an
# implementation that shares none of the tree code) and by finite differences
# (test_functions). fourbar and twister have their orbital joints as loop closures.
NO_PINOCCHIO_JOINT = {"orbital_chain"}
URDF_SCENES = {"quadruped": "a1_description/urdf/a1.urdf", "go1": "go1_description/urdf/go1.urdf",
               "solo12": "solo_description/robots/solo12.urdf", "panda": "panda_description/urdf/panda.urdf",
               "humanoid": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
               "pinnzoo_go2": "go2_description/urdf/go2.urdf"}
TREE_SCENES = sorted(set(builtin_scene_names()) - NO_PINOCCHIO_JOINT - set(URDF_SCENES))


@functools.lru_cache(maxsize=None)
def _model(scene: str) -> minimal.MinimalModel:
    return minimal.build_model(dojo.load_scene(scene))


def _states(model, seed=0, within_limits=False):
    """The initial state and RANDOM_STATES random ones; ``within_limits``: each coordinate
    clamped into its joint's range (PinnZoo's fix_joint_limits), where an imported robot
    lives. A gimbal's coordinates are singular at a middle angle of +-pi/2 (its outer axes
    align: Pinocchio's mass matrix is singular there too), and its importer keeps the range
    0.05 rad inside; a free N(0, 1) draw lands near the singularity (one of human's states
    had cond(M) = 5e8, where no algorithm agrees with another to 1e-9)."""
    rng = np.random.default_rng(seed)
    yield minimal.init_state(model)
    for _ in range(RANDOM_STATES):
        x = minimal.randn_state(model, rng)
        yield minimal.fix_joint_limits(model, x, suppress_error=True) if within_limits else x


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(b), initial=0.0)))


def _compare(model, pm, q_of, v_of, perm, derivatives=True, within_limits=False):
    """Worst relative errors over the states: {quantity: error}."""
    pd = pm.createData()
    inv = np.argsort(perm)
    rng = np.random.default_rng(1)
    worst = dict.fromkeys(("M", "C", "ABA", "RNEA", "dRNEA", "dABA"), 0.0)
    nv = model.nv
    for x in _states(model, within_limits=within_limits):
        q, v = q_of(x), v_of(x)
        tau, a = rng.standard_normal(nv), rng.standard_normal(nv)
        Mp = pin.crba(pm, pd, q)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        got = {
            "M": (minimal.M_func(model, x)[np.ix_(perm, perm)], Mp),
            "C": (minimal.C_func(model, x)[perm], pin.nonLinearEffects(pm, pd, q, v).copy()),
            "ABA": (minimal.forward_dynamics(model, x, tau[inv])[perm], pin.aba(pm, pd, q, v, tau).copy()),
            "RNEA": (minimal.inverse_dynamics(model, x, a[inv])[perm], pin.rnea(pm, pd, q, v, a).copy()),
        }
        if derivatives:
            dq, dv, _ = (np.array(t) for t in pin.computeRNEADerivatives(pm, pd, q, v, a))
            D, _ = minimal.inverse_dynamics_deriv(model, x, a[inv], tangent=True)
            got["dRNEA"] = (np.hstack([D[:, :nv][np.ix_(perm, perm)], D[:, nv:][np.ix_(perm, perm)]]), np.hstack([dq, dv]))
            pin.computeABADerivatives(pm, pd, q, v, tau)
            F, _ = minimal.forward_dynamics_deriv(model, x, tau[inv], tangent=True)
            got["dABA"] = (np.hstack([F[:, :nv][np.ix_(perm, perm)], F[:, nv:][np.ix_(perm, perm)]]),
                           np.hstack([pd.ddq_dq, pd.ddq_dv]))
        for key, (ours, theirs) in got.items():
            worst[key] = max(worst[key], _rel(ours, theirs))
    return worst


def _check(worst, scene):
    tol = {"M": M_TOL, "C": C_TOL, "ABA": ABA_TOL, "RNEA": RNEA_TOL, "dRNEA": RNEA_DERIV_TOL, "dABA": ABA_DERIV_TOL}
    bad = {k: f"{e:.1e} > {tol[k]:.0e}" for k, e in worst.items() if e > tol[k]}
    assert not bad, f"{scene}: {bad}"


@pytest.mark.parametrize("scene", TREE_SCENES)
def test_scene_matches_pinocchio(scene):
    model = _model(scene)
    pm, info = ref.build(model)
    q_of, v_of, perm = ref.converters(model, pm, info)
    _check(_compare(model, pm, q_of, v_of, perm), scene)


@pytest.mark.parametrize("scene", sorted(URDF_SCENES))
def test_urdf_robot_matches_pinocchio_from_the_urdf(scene):
    """Pinocchio reads the URDF; our pinocchio order names its joints as it does."""
    model = _model(scene)
    path = robots.example_robot_data_root() / "robots" / URDF_SCENES[scene]
    _check_against_urdf(model, path, scene, derivatives=scene in ("go1", "panda"))


# Robots with massless links (issue 24 item 2), imported by read_urdf: a massless root merged
# with its fixed subtree into the floating base (anymal, anymal-kinova: "base" at 1e-6 kg over
# "base_inertia"; romeo: "base_link"), massless subtrees dropped with their joints (romeo's
# fingers, three massless links each; Pinocchio's joints there have a singular mass matrix and
# are locked at zero in its model, as the importer drops them).
MASSLESS_LINK_ROBOTS = {"anymal": "anymal_b_simple_description/robots/anymal.urdf",
                        "anymal-kinova": "anymal_b_simple_description/robots/anymal-kinova.urdf",
                        "romeo": "romeo_description/urdf/romeo.urdf",
                        # two- and three-axis joints written as revolute chains through massless
                        # links: universal and gimbal joints (core/maximal/euler_joints.h), each a
                        # chain of revolute tree joints, its angles Pinocchio's revolute angles
                        "human": "human_description/robots/human.urdf"}


@pytest.mark.parametrize("robot", sorted(MASSLESS_LINK_ROBOTS))
def test_massless_link_robot_matches_pinocchio_from_the_urdf(robot):
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    path = robots.example_robot_data_root() / "robots" / MASSLESS_LINK_ROBOTS[robot]
    result = read_urdf(path, UrdfOptions(floating=True, meshes=False))
    model = minimal.build_model(build_mechanism(spec_from_dict(result.scene, file=str(path))))
    _check_against_urdf(model, path, robot, derivatives=False, within_limits=True)


def _check_against_urdf(model, path, scene, derivatives, within_limits=False):
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if model.is_floating \
        else pin.buildModelFromUrdf(str(path))
    # joints the scene leaves out (massless leaves) are locked at zero, as the importer drops them
    ours = set(model.velocity_names)
    locked = [pm.getJointId(n) for n in pm.names[1:] if n not in ours and n != "root_joint"]
    if locked:
        pm = pin.buildReducedModel(pm, locked, pin.neutral(pm))
    cq, cv, _ = minimal.order_names(model, "pinocchio")
    names = [n for n in pm.names[1:] if n != "root_joint"]
    assert [n for n in cv if ":" not in n] == names, "pinocchio order: the joints as Pinocchio numbers them"
    assert pm.nq == model.nq and pm.nv == model.nv

    def q_of(x):
        return minimal.change_order(model, x, "nominal", "pinocchio", kind="state")[: model.nq]

    def v_of(x):
        return minimal.change_order(model, x, "nominal", "pinocchio", kind="state")[model.nq:]

    perm = np.array([model.velocity_names.index(n) for n in cv])
    _check(_compare(model, pm, q_of, v_of, perm, derivatives=derivatives, within_limits=within_limits), scene)


# PyBullet's collection (tests/data/urdf/pybullet, tests/scene/test_urdf_bullet.py): the kuka
# arm's root link has mass 0, which Bullet reads as fixed to the world; imported with
# --floating it is a fixed-base arm, as Pinocchio reads the file without a free flyer.
PYBULLET_DATA = Path(__file__).parents[1] / "data" / "urdf" / "pybullet"


def test_bullets_massless_base_kuka_matches_pinocchio_from_the_urdf():
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    path = PYBULLET_DATA / "kuka_iiwa_model.urdf"
    result = read_urdf(path, UrdfOptions(floating=True, meshes=False))
    model = minimal.build_model(build_mechanism(spec_from_dict(result.scene, file=str(path))))
    assert not model.is_floating and model.nq == 7
    _check_against_urdf(model, path, "kuka_iiwa", derivatives=True, within_limits=True)


def test_bullets_spherical_joint_humanoid_matches_pinocchio():
    """humanoid.urdf's 8 spherical joints (Bullet's type="spherical", which urdfdom and so
    Pinocchio's URDF reader do not know): Pinocchio's model built joint by joint from the
    tree, JointModelSpherical for each."""
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    path = PYBULLET_DATA / "humanoid.urdf"
    result = read_urdf(path, UrdfOptions(floating=True, merge_fixed=True))
    model = minimal.build_model(build_mechanism(spec_from_dict(result.scene, file=str(path))))
    pm, info = ref.build(model)
    assert sum(kind == "spherical" for _, kind in info.values()) == 8
    q_of, v_of, perm = ref.converters(model, pm, info)
    _check(_compare(model, pm, q_of, v_of, perm), "humanoid.urdf")
