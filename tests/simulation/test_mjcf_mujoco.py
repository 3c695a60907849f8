"""Gymnasium's MJCF models side by side with MuJoCo (issue 24, item 8).

Contact-free models (inverted pendulum, inverted double pendulum, reacher, swimmer without
fluid) from a perturbed state (qpos0 plus a seeded offset, a seeded qvel): the centres of
mass after 1 s against MuJoCo's RK4 at h = 1e-4 (its error ~1e-13, far below ours). Both of
our integrators at h and h/2: the variational integrator is second order (ratio ~4), the
minimal-coordinate RK4 fourth order (ratio ~16). MuJoCo's joint limits are soft and ours
exact, so the states are chosen to stay clear of them (asserted on MuJoCo's trajectory) and
the limits are left out of both. Both keep the models' armature (the variational integrator
on hinges, core maximal/rotor.h; the minimal layer M += a), except the swimmer's root
slides, whose rotor term neither models (they turn with its hinge): zero in MuJoCo too.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.mjcf import MjcfOptions, joint_coordinates_from_qpos, read_mjcf

import gymnasium  # noqa: E402
import mujoco  # noqa: E402  (the test extra: the oracle must not be skipped, issue 25 item 8)

ASSETS = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
DURATION = 1.0  # s
REFERENCE_STEP = 1e-4  # s: MuJoCo's RK4 as the reference
VARIATIONAL_STEPS = (0.01, 0.005)  # s: ours at h and h/2
# Observed orders: the variational integrator's ratios 3.9-4.1, RK4's 15-16.5 (h = 0.01 -> 0.005)
SECOND_ORDER = (3.5, 4.5)
FOURTH_ORDER = (13.0, 19.0)
# Solver tolerance of the variational steps: far below the integrator's error at h = 5e-3
SOLVER_TOL = 1e-12
# (seeded offsets of the hinge/slide qpos in rad or m, of qvel in rad/s or m/s): small
# enough that no joint reaches its range within 1 s (asserted); RK4's h (and h/2), in its
# asymptotic range and above roundoff
CASES = {
    "inverted_pendulum": (0.01, 0.05, 0.005),
    "inverted_double_pendulum": (0.1, 0.5, 0.0025),
    "reacher": (0.1, 0.1, 0.02),
    "swimmer": (0.3, 1.0, 0.02),
}
VARIATIONAL_CASES = list(CASES)


def _mujoco_model(name: str, armature: bool):
    """MuJoCo's model without fluid; without armature, or with it but on slides that our
    minimal layer cannot give it (translations turning with a planar joint's rotation:
    the swimmer's root)."""
    spec = mujoco.MjSpec.from_file(str(ASSETS / f"{name}.xml"))
    spec.option.density = 0.0  # swimmer: no fluid (ours has none)
    spec.option.viscosity = 0.0
    m = spec.compile()
    if not armature:
        m.dof_armature[:] = 0.0
    else:
        for body in range(m.nbody):
            joints = range(m.body_jntadr[body], m.body_jntadr[body] + m.body_jntnum[body])
            kinds = [int(m.jnt_type[j]) for j in joints]
            if int(mujoco.mjtJoint.mjJNT_HINGE) in kinds and kinds.count(int(mujoco.mjtJoint.mjJNT_SLIDE)) > 1:
                for j in joints:
                    if int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_SLIDE):
                        m.dof_armature[m.jnt_dofadr[j]] = 0.0
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    return m


def _mujoco_reference(path, keyframe: int | None = None, ctrl=None):
    """MuJoCo's RK4 at REFERENCE_STEP over DURATION from the file (its keyframe, else its qpos0,
    with ctrl held): (model, data at the end)."""
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = REFERENCE_STEP
    d = mujoco.MjData(m)
    if keyframe is not None:
        mujoco.mj_resetDataKeyframe(m, d, keyframe)
    if ctrl is not None:
        d.ctrl[:] = ctrl
    for _ in range(int(round(DURATION / REFERENCE_STEP))):
        mujoco.mj_step(m, d)
    return m, d


def _start(m, dq: float, dv: float):
    rng = np.random.default_rng(0)
    qpos, qvel = m.qpos0.copy(), np.zeros(m.nv)
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_SLIDE), int(mujoco.mjtJoint.mjJNT_HINGE)):
            qpos[m.jnt_qposadr[j]] += dq * rng.uniform(-1, 1)
            qvel[m.jnt_dofadr[j]] = dv * rng.uniform(-1, 1)
    return qpos, qvel


def _mujoco_run(m, qpos, qvel, h: float):
    """(MjData at DURATION, smallest distance of a limited joint to its range on the way)."""
    m.opt.timestep = h
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    margin = np.inf
    for _ in range(int(round(DURATION / h))):
        mujoco.mj_step(m, d)
        for j in np.flatnonzero(m.jnt_limited):
            q = d.qpos[m.jnt_qposadr[j]]
            margin = min(margin, q - m.jnt_range[j][0], m.jnt_range[j][1] - q)
    return d, margin


def _our_final_positions(result, qpos, qvel, h: float, integrator: str, armature: bool) -> np.ndarray:
    scene = copy.deepcopy(result.scene)
    scene.update(timestep=h, integrator=integrator)
    scene.pop("controller", None)
    positions = joint_coordinates_from_qpos(result, qpos, scene["joints"])
    velocities = {name: [0.0] * len(v) for name, v in positions.items()}
    for c in result.coordinates:
        velocities[c.dojo_joint][c.coordinate] += c.sign * qvel[c.dof_adr]
    for joint in scene["joints"]:
        joint.pop("limits", None)  # never reached (asserted on MuJoCo's run)
        if not armature:
            joint.pop("armature", None)
        if joint["type"] != "fixed":
            joint["initial"] = {"position": positions[joint["name"]], "velocity": velocities[joint["name"]]}
    mech = build_mechanism(spec_from_dict(scene, file=result.scene["name"]))
    opts = dojo.SolverOptions(rtol=SOLVER_TOL, btol=SOLVER_TOL) if integrator == "variational" else None
    traj = dojo.simulate(mech, steps=int(round(DURATION / h)), opts=opts)
    if integrator == "variational":
        assert all(s == "success" for s in traj.status), f"failed steps {sum(s != 'success' for s in traj.status)}"
    return traj.x[-1]


def _errors(name: str, integrator: str, armature: bool) -> list[float]:
    m = _mujoco_model(name, armature)
    dq, dv, rk4_step = CASES[name]
    qpos, qvel = _start(m, dq, dv)
    reference, margin = _mujoco_run(m, qpos, qvel, REFERENCE_STEP)
    assert margin > 0, f"{name}: the state reaches a joint limit (margin {margin:.3g}): choose a smaller one"
    options = MjcfOptions(drop_unsupported=True)
    result = read_mjcf(ASSETS / f"{name}.xml", options)
    if armature:
        # the armature the importer left out (contacts or limits need the variational
        # integrator); the limits go here, so the rk4 integrator takes it
        _restore_armature(result, m)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b["name"]) for b in result.scene["bodies"]]
    return [float(np.abs(_our_final_positions(result, qpos, qvel, h, integrator, armature) - reference.xipos[ids]).max())
            for h in (VARIATIONAL_STEPS if integrator == "variational" else (rk4_step, rk4_step / 2))]


def _restore_armature(result, m) -> None:
    sizes = {name: len(v) for name, v in joint_coordinates_from_qpos(result, m.qpos0, result.scene["joints"]).items()}
    for c in result.coordinates:
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, c.joint)
        a = float(m.dof_armature[m.jnt_dofadr[j]])
        if a:
            joint = next(x for x in result.scene["joints"] if x["name"] == c.dojo_joint)
            joint.setdefault("armature", [0.0] * sizes[joint["name"]])[c.coordinate] = a


@pytest.mark.parametrize("name", VARIATIONAL_CASES)
def test_variational_integrator_follows_mujoco_to_second_order(name):
    errors = _errors(name, "variational", armature=True)
    ratio = errors[0] / errors[1]
    assert SECOND_ORDER[0] < ratio < SECOND_ORDER[1], f"{name}: errors {errors[0]:.3e}, {errors[1]:.3e} m, ratio {ratio:.2f}"


@pytest.mark.parametrize("name", list(CASES))
def test_rk4_with_armature_follows_mujoco_to_fourth_order(name):
    errors = _errors(name, "rk4", armature=True)
    ratio = errors[0] / errors[1]
    assert FOURTH_ORDER[0] < ratio < FOURTH_ORDER[1], f"{name}: errors {errors[0]:.3e}, {errors[1]:.3e} m, ratio {ratio:.2f}"


POSITION_SERVO = """<mujoco model="servo">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.1" armature="0.02"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    </body>
  </worldbody>
  <actuator>
    <position name="servo" joint="shoulder" kp="20" gear="2"/>
  </actuator>
  <keyframe>
    <key name="start" qpos="0.3" qvel="-1" ctrl="0.8"/>
  </keyframe>
</mujoco>
"""


def test_position_actuator_follows_mujoco_to_second_order(tmp_path):
    """A position servo (kp, gear 2) holding an arm against gravity from a keyframe: the PD the
    importer makes (kp g^2, target ctrl / g) against MuJoCo's actuator (force kp (ctrl - g q),
    torque g force), both with the hinge's damping and armature."""
    path = tmp_path / "servo.xml"
    path.write_text(POSITION_SERVO)
    m, d = _mujoco_reference(path, keyframe=0)
    errors = []
    for h in VARIATIONAL_STEPS:
        result = read_mjcf(path, MjcfOptions(keyframe="start"))
        scene = copy.deepcopy(result.scene)
        assert scene["controller"] == {"type": "pd", "kp": {"shoulder": [80.0]}, "kd": {"shoulder": [0.0]},
                                       "targets": {"shoulder": [0.4]}, "velocity_targets": {"shoulder": [0.0]}}
        scene["timestep"] = h
        mech = build_mechanism(spec_from_dict(scene, file=str(path)))
        traj = dojo.simulate(mech, steps=int(round(DURATION / h)), opts=dojo.SolverOptions(rtol=SOLVER_TOL, btol=SOLVER_TOL))
        errors.append(float(np.abs(traj.x[-1][0] - d.xipos[1]).max()))
    ratio = errors[0] / errors[1]
    assert SECOND_ORDER[0] < ratio < SECOND_ORDER[1], f"errors {errors[0]:.3e}, {errors[1]:.3e} m, ratio {ratio:.2f}"


MOTOR_WITH_CTRLRANGE = """<mujoco model="motor">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" damping="0.1" armature="0.02"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="torque" joint="shoulder" gear="2" ctrlrange="-0.25 0.15"/>
  </actuator>
</mujoco>
"""
# Controls beyond the range: MuJoCo clips ctrl to ctrlrange before the gear (0.15 N m x 2 is
# about a third of the arm's gravity torque at the start, so the arm falls, slowed)
MOTOR_CTRL = 3.0
MOTOR_CTRL_CLAMPED = 0.15


def test_motor_ctrlrange_clamps_the_input_as_mujoco_does(tmp_path):
    """A motor's ctrlrange is the actuator's ctrl_range: a constant input of 3 acts as 0.15
    (the same trajectory bit for bit), and follows MuJoCo given ctrl = 3 to second order."""
    path = tmp_path / "motor.xml"
    path.write_text(MOTOR_WITH_CTRLRANGE)
    m, d = _mujoco_reference(path, ctrl=[MOTOR_CTRL])
    result = read_mjcf(path, MjcfOptions())
    assert result.scene["actuators"] == [{"name": "torque", "joint": "shoulder", "coordinate": 0, "gain": 2.0,
                                          "ctrl_range": [-0.25, 0.15]}]

    def run(h: float, u: float, clamp: bool = True):
        scene = copy.deepcopy(result.scene)
        scene["timestep"] = h
        if not clamp:
            del scene["actuators"][0]["ctrl_range"]
        scene["controller"] = {"type": "constant", "inputs": {"torque": [u]}}
        mech = build_mechanism(spec_from_dict(scene, file=str(path)))
        return dojo.simulate(mech, steps=int(round(DURATION / h)), opts=dojo.SolverOptions(rtol=SOLVER_TOL, btol=SOLVER_TOL))

    errors = []
    for h in VARIATIONAL_STEPS:
        traj = run(h, MOTOR_CTRL)
        assert np.array_equal(traj.x, run(h, MOTOR_CTRL_CLAMPED).x), "the input is clamped to ctrl_range"
        assert np.array_equal(traj.inputs[:, 0], np.full(len(traj.inputs), MOTOR_CTRL_CLAMPED)), "the clamped input is stored"
        errors.append(float(np.abs(traj.x[-1][0] - d.xipos[1]).max()))
    ratio = errors[0] / errors[1]
    assert SECOND_ORDER[0] < ratio < SECOND_ORDER[1], f"errors {errors[0]:.3e}, {errors[1]:.3e} m, ratio {ratio:.2f}"
    # and without the clamp the arm goes elsewhere (the check can fail)
    assert np.abs(run(VARIATIONAL_STEPS[1], MOTOR_CTRL, clamp=False).x[-1][0] - d.xipos[1]).max() > 100 * errors[1]


SLIDE_CART = """<mujoco model="cart">
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="cart" pos="0 0 1">
      <joint name="rail" type="slide" axis="1 0 0" armature="0.8" stiffness="4" damping="0.05"/>
      <geom type="box" size="0.2 0.1 0.05" pos="0.03 0 0" contype="0" conaffinity="0"/>
      <body name="pole" pos="0.05 0 0">
        <joint name="hinge" type="hinge" axis="0 1 0" armature="0.02"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.6" size="0.03" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <keyframe>
    <key name="start" qpos="0.1 0.4" qvel="-0.5 1.5"/>
  </keyframe>
</mujoco>
"""


def test_slide_armature_follows_mujoco_to_second_order(tmp_path):
    """A cart on a slide from the world with armature (a rotor of 0.8 kg on 1.2 kg), a spring and
    a damper, carrying a pole on a hinge with armature, from a keyframe: the importer keeps the
    slide's armature for the variational integrator (its linear rotor, core maximal/rotor.h),
    which follows MuJoCo's RK4 to second order; without the rotor it does not."""
    path = tmp_path / "cart.xml"
    path.write_text(SLIDE_CART)
    m, d = _mujoco_reference(path, keyframe=0)
    result = read_mjcf(path, MjcfOptions(keyframe="start"))
    assert result.scene.get("integrator", "variational") == "variational"
    assert [j.get("armature") for j in result.scene["joints"]] == [[0.8], [0.02]]

    def run(h: float, rotor: bool = True) -> float:
        scene = copy.deepcopy(result.scene)
        scene["timestep"] = h
        if not rotor:
            del scene["joints"][0]["armature"]
        mech = build_mechanism(spec_from_dict(scene, file=str(path)))
        traj = dojo.simulate(mech, steps=int(round(DURATION / h)), opts=dojo.SolverOptions(rtol=SOLVER_TOL, btol=SOLVER_TOL))
        assert set(traj.status) == {"success"}
        return float(np.abs(traj.x[-1] - d.xipos[1:]).max())

    errors = [run(h) for h in VARIATIONAL_STEPS]
    ratio = errors[0] / errors[1]
    assert SECOND_ORDER[0] < ratio < SECOND_ORDER[1], f"errors {errors[0]:.3e}, {errors[1]:.3e} m, ratio {ratio:.2f}"
    assert run(VARIATIONAL_STEPS[1], rotor=False) > 100 * errors[1], "the slide's rotor is really there"


# An arm turned by a hinge, then sliding along its turned x axis, then twisting about another
# anchor (brax's prismaversal, with more): no Dojo joint, a chain through two light links
# with split_joints. {swing}, {reach}, {twist}: where the linked copy opens its bodies;
# {rotor}: the slide's armature.
ARM_SEQUENCE = """<mujoco model="arm">
  <option timestep="0.01"/>
  <worldbody>
    <body name="{root}" pos="0 0 1" euler="0 0 20">
      {swing}<joint name="swing" type="hinge" axis="0 1 0" pos="0 0 0.1" damping="0.05" armature="0.01"/>
      {reach}<joint name="reach" type="slide" axis="1 0 0" stiffness="30" springref="0.2" damping="0.1" armature="{rotor}"/>
      {twist}<joint name="twist" type="hinge" axis="1 0 0" pos="0.05 0 0" stiffness="2"/>
      <geom type="box" size="0.15 0.04 0.02" pos="0.1 0.02 0"/>
    {close}</body>
  </worldbody>
  <keyframe><key name="start" qpos="0.4 0.1 -0.3" qvel="1 -0.5 2"/></keyframe>
</mujoco>
"""
# The links' 1e-3 of the arm's mass (LINK_MASS_FRACTION) move its centre of mass, 0.1-0.3 m
# from the axes, by about 1e-3 m in 1 s of swinging (measured between MuJoCo's two models, the
# largest over ARM_SAMPLES: 1.25e-3 m without the slide's rotor, 1.18e-3 m with it)
LINK_COST = 2e-3  # m
# Where the arm's centre of mass is compared (s): every sample, as the end alone can sit
# where the error's components cancel (RK4: 4.2 at the end, 16.8 over these)
ARM_SAMPLES = (0.2, 0.4, 0.6, 0.8, 1.0)


def _arm_samples(path: Path) -> np.ndarray:
    """(len(ARM_SAMPLES), 3) MuJoCo's RK4 at REFERENCE_STEP from the key: the arm's centre of mass."""
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = REFERENCE_STEP
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    arm = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "arm")
    out, t = [], 0
    for sample in ARM_SAMPLES:
        while t < int(round(sample / REFERENCE_STEP)):
            mujoco.mj_step(m, d)
            t += 1
        out.append(d.xipos[arm].copy())
    return np.array(out)


@pytest.mark.parametrize("integrator, rotor, order", [("variational", 0.0, SECOND_ORDER), ("rk4", 0.05, FOURTH_ORDER)])
def test_a_joint_chain_follows_mujoco_to_its_integrators_order(tmp_path, integrator, rotor, order):
    """A hinge, a slide along the turned body and a hinge about another anchor in one body
    (springs, dampers, the hinge's armature), from a keyframe, as the chain split_joints
    makes: against MuJoCo's RK4 on the same chain written as nested bodies with the links'
    masses (the model we simulate), the variational integrator is second order; with armature
    on the slide, on a link, which only the rk4 integrator holds (the importer chooses it: no
    contacts or limits), fourth order. The links themselves move the arm by LINK_COST at most
    from MuJoCo's one body (measured between MuJoCo's two models: what the links cost)."""
    path = tmp_path / "arm.xml"
    path.write_text(ARM_SEQUENCE.format(root="arm", swing="", reach="", twist="", close="", rotor=rotor))
    result = read_mjcf(path, MjcfOptions(split_joints=True, keyframe="start"))
    assert [(j["name"], j["type"], j["child"]) for j in result.scene["joints"]] == [
        ("swing", "revolute", "arm_swing"), ("reach", "prismatic", "arm_reach"), ("twist", "revolute", "arm")]
    assert result.scene.get("integrator", "variational") == integrator
    bodies = {b["name"]: b for b in result.scene["bodies"]}

    def inertial(link: str, anchor: str) -> str:
        b = bodies[link]
        i = " ".join(repr(v) for v in b["inertia"])
        return f'<inertial pos="{anchor}" mass="{b["mass"]!r}" diaginertia="{i}"/>\n      '

    linked = tmp_path / "arm_linked.xml"
    linked.write_text(ARM_SEQUENCE.format(
        root="arm_swing", swing=inertial("arm_swing", "0 0 0.1"), rotor=rotor,
        reach='<body name="arm_reach">' + inertial("arm_reach", "0 0 0"), twist='<body name="arm">', close="</body></body>"))
    reference = _arm_samples(linked)
    cost = float(np.abs(reference - _arm_samples(path)).max())
    assert cost < LINK_COST, f"the links move the arm by {cost:.2e} m"

    def run(h: float) -> float:
        scene = copy.deepcopy(result.scene)
        scene["timestep"] = h
        mech = build_mechanism(spec_from_dict(scene, file=str(path)))
        opts = dojo.SolverOptions(rtol=SOLVER_TOL, btol=SOLVER_TOL) if integrator == "variational" else None
        traj = dojo.simulate(mech, steps=int(round(DURATION / h)), opts=opts)
        if integrator == "variational":
            assert set(traj.status) == {"success"}
        arm = [b.name for b in mech.bodies].index("arm")
        ours = np.array([traj.x[int(round(t / h))][arm] for t in ARM_SAMPLES])
        return float(np.abs(ours - reference).max())

    errors = [run(h) for h in VARIATIONAL_STEPS]
    ratio = errors[0] / errors[1]
    assert order[0] < ratio < order[1], f"errors {errors[0]:.3e}, {errors[1]:.3e} m, ratio {ratio:.2f}"
