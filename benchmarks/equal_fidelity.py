"""Equal fidelity: the Go1 on dojo_cli and on MuJoCo, simulated seconds per wall second at the
largest timestep each keeps within the same error of its own small-step reference (issue 28, item 3).

Usage:
    python benchmarks/equal_fidelity.py [--cases standing,drop] [--duration 2] [--repeat 5]
                                        [--steps 0.001,0.002,...] [--reference-step 0.0005]
                                        [--sims dojo,mujoco,mujoco_5ms,mujoco_2ms] [--quick] [--json FILE]

The cases (both start at rest in the pose of the built-in ``go1`` scene: hips 0, thighs 0.8,
calves -1.853, every leg joint under PD kp 200 to that pose, joint dampers 5):

- ``standing``: the trunk origin at 0.2738 m, the foot spheres touching the ground; the robot
  settles onto its PD within ~0.3 s and stands.
- ``drop``: the same robot 10 cm higher: it falls 0.1 m (0.14 s), lands on its four feet at
  1.4 m/s and the legs absorb the impact under their PD.

Fidelity. For each simulator and case, a reference run at ``--reference-step`` (0.5 ms), then a
run at every candidate step h (multiples of the reference step that divide the duration). A run
at h *passes* when, at every one of its knots t = k h over the run (``--duration``, 2 s), the
trunk's centre of mass is within POSITION_TOLERANCE (5 mm) of the reference's at the same t, the
trunk's orientation within ANGLE_TOLERANCE_DEG (1 degree; the angle of q_ref^-1 q_h), no foot
sphere is more than PENETRATION_TOLERANCE (2 mm) below the ground (z of the sphere's centre minus
its radius, at the knots), the state stays finite and, for dojo, every step converged (status
``success``). The reference itself must meet the penetration bound, or no h passes. A simulator's
*largest passing step* is the largest candidate h such that it and every smaller candidate pass
(a larger h that happens to pass after one that failed is printed but not taken).

Speed. At each simulator's largest passing step, ``--repeat`` runs of the whole duration in this
process, interleaved (dojo, MuJoCo, dojo, ...), each from the initial state: simulated seconds
per wall second = duration / the median wall time (``time.perf_counter``), and the same with CPU
time (``time.process_time``). The verdicts (dojo against MuJoCo's best setting) are on CPU time,
as benchmarks/core_speed.py's goals: both sides are single-threaded, and on a loaded machine
wall time also counts the waits for a core (two MuJoCo settings at the same step once measured
100 and 174 simulated seconds per wall second with the same CPU time). dojo:
``dojo.simulate(mech, steps=N)`` (the scene's PD controller evaluated by the core's rollout
before each step, a block of steps a call; every state recorded), as a user runs a scene. MuJoCo:
``mujoco.mj_step(model, data)`` in a Python loop recording nothing (~1 us of binding overhead
a step): MuJoCo's cost alone, the comparison least favourable to dojo.
The machine these numbers came from is a shared 2-core one (load average 10-20): absolute
numbers move 2-3x from run to run, the ratios measured in the same process hold better.

The MuJoCo model (``mujoco_go1``) is built from the same go1.urdf as the scene, with MuJoCo's own
URDF reader (MjSpec), so masses, centres of mass and inertias are the file's: checked against
dojo's bodies when the benchmark starts (``model sanity``, to 1e-12). Made to match the scene:
the URDF's fixed links fused into their parents (MuJoCo's ``fusestatic``; ours ``merge_fixed``);
a free joint on the root; the URDF's ``base`` link (1e-6 kg with an invalid, not positive definite
inertia 1e-6 everywhere, which MuJoCo refuses) kept with its diagonal, its off-diagonal 1e-6 moved
onto ``trunk``'s tensor so that the fused body has exactly dojo's inertia; joint dampers 5, joint
friction (URDF 0.2 N m, ``frictionloss``) off as in the scene, the URDF's effort limits off (the
scene's PD is not clamped); position actuators kp 200 to the standing pose (the scene's PD: kp 200,
kd 0); only the four foot spheres (r 0.02) collide, with a ground plane; friction 0.8; the
elliptic cone (dojo's nonlinear cone); ``implicitfast`` (the dampers implicit, as the scene's
``damper_form: implicit``; the PD stiffness explicit on both). What differs: MuJoCo's contacts
are soft (``solref``/``solimp``: a foot sinks into the ground in proportion to its load; ours are
hard, complementarity to the solver's tolerance), its joint limits are soft (none is reached
here), its integrator is semi-implicit Euler (ours variational).

Three MuJoCo contact settings: ``mujoco``, MuJoCo's defaults (solref 0.02 1, solimp 0.9 0.95
0.001), what a user gets; ``mujoco_5ms`` and ``mujoco_2ms``, solref 0.005 1 and 0.002 1 (stiffer
contacts: a standing foot sinks 0.3 mm and 0.06 mm instead of 2.4 mm). MuJoCo clamps the time
constant to at least 2 h (``mjENBL_REFSAFE``), so a stiffer contact needs a smaller step: a user
after the fidelity tunes solref, and the summary compares dojo with the best of the three.

What limits h, measured (2 s, reference 0.5 ms; benchmarks/README.md has the tables):

- dojo, standing: the error grows about linearly with h (0.23 mm at 10 ms, 1.1 mm at 50 ms, the
  feet on the ground to the solver's tolerance at every h); the limit is stability, not
  accuracy: at 62.5 ms the error jumps to 71 mm, at 80 ms the trunk height alternates with a
  growing amplitude (a period of two steps, as a stiffness evaluated at the knot gives past its
  stability bound: the PD torque comes from the knot's angle; the scene's joint springs in its
  place give the same numbers) and the interior point fails from step 8 (line search), the run
  diverges. A PD whose stiffness acts at the step's end removes that bound (measured with its
  linearisation, below and in benchmarks/README.md; not an option of the scene yet).
- dojo, drop: accuracy: 4.9 mm at 25 ms, 6.3 mm at 40 ms (the landing is resolved at the knots).
- dojo's cost per step: interior-point iterations fall with h (15 a step at 1 ms standing, 9 at
  10 ms, 7 at 50 ms, where a resting robot's state hardly changes in a step) at ~33 us of CPU
  each in the core: ~230 us a step (~310 us through dojo.simulate), against MuJoCo's ~15 us.
  Fewer iterations at rest (issue 28 item 2: a better interior-point start for resting
  contacts) and cheaper ones (item 2's closed-form elimination of the contact blocks) are what
  would put dojo ahead on standing. The PD controller used to cost ~90 us a step of Python
  beside the step's ~230 us (the run crossed into the core once a step); the core's rollout
  now evaluates it (core/maximal/pd_controller.h, benchmarks/pd_run_speed.py): 1.17x-1.28x
  the simulated seconds per CPU second of the same runs, the same to the bit.
- MuJoCo, default contacts: a standing foot sinks 2.3-2.4 mm at 0.5-1 ms, over the bound at
  every h (soft contacts: the depth is the load over the contact's stiffness), and a landing
  15 mm: no step passes. At 4 ms, with any of the three settings, the standing robot creeps
  backwards (the trunk 5-14 cm off its reference after 2 s) with its feet 3.5-10 mm deep.
- MuJoCo, 5 ms: standing passes up to 2.5 ms (0.55 mm, feet 0.9 mm deep); a landing sinks
  3.7 mm even at 0.5 ms: no drop step passes. 2 ms: standing passes up to 2.5 ms, the drop up
  to 1 ms (1.2 mm, feet 1.7 mm deep; 3.7 mm deep at 2 ms).

Result (commit 8af8442, load average 3.3 over the run's minute): against MuJoCo's defaults dojo
is ahead in both cases (no MuJoCo step passes); against MuJoCo's best setting it is behind in
both: 0.62x the simulated seconds per CPU second standing (dojo 50 ms against MuJoCo solref
5 ms at 2.5 ms), 0.70x in the drop (dojo 25 ms against solref 2 ms at 1 ms); at load 17-19,
0.55x and 0.60x. The goal of issue 28 (ahead on both) is not met. With the PD in the core's
rollout (load average 25-32, both checkouts run one after the other, --quick): 0.72x standing
and 0.79x in the drop, where the checkout before it measured 0.58x and 0.63x (dojo 212 against
167 and 97 against 77 simulated seconds per CPU second; MuJoCo the same within 2%).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # run from a checkout without installing
import bench_common  # noqa: E402

BLAS_THREADS = bench_common.pin_blas_threads(sys.argv)  # before numpy loads

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402

import numpy as np  # noqa: E402

import dojo_cli as dojo  # noqa: E402
from dojo_cli.math import quaternion as quat  # noqa: E402
from dojo_cli.scene import robots  # noqa: E402

try:
    import mujoco
except ImportError:  # the comparison needs it; dojo's own sweep runs without
    mujoco = None

# ----------------------------------------------------------------- the criterion (issue 28, item 3)
POSITION_TOLERANCE = 5e-3  # m, trunk centre of mass against the simulator's own reference
ANGLE_TOLERANCE_DEG = 1.0  # degrees, trunk orientation against the reference
PENETRATION_TOLERANCE = 2e-3  # m, the deepest any foot sphere may go below the ground
DURATION = 2.0  # s, each run
REFERENCE_STEP = 0.0005  # s, each simulator's own reference
# candidate steps: multiples of REFERENCE_STEP that divide DURATION
STEPS = (0.001, 0.002, 0.0025, 0.004, 0.005, 0.008, 0.01, 0.0125, 0.02, 0.025, 0.04, 0.05, 0.0625, 0.08, 0.1)
# --quick: the steps where the largest passing ones were (MuJoCo 1-2.5 ms, dojo 25-50 ms) and a
# few between; the same reference (a coarser one would make MuJoCo's 1 ms trivially pass)
QUICK_STEPS = (0.001, 0.002, 0.0025, 0.01, 0.025, 0.05)
QUICK_REFERENCE_STEP = REFERENCE_STEP

GO1_URDF = "go1_description/urdf/go1.urdf"
SCENE = "go1"
TRUNK = "trunk"  # dojo's name; MuJoCo's fused root keeps the URDF root's name, ``base``
STAND_HEIGHT = 0.2738264028  # m, the scene's trunk origin (feet touching the ground)
DROP_HEIGHT = 0.10  # m, the drop case's extra height
CASES = {"standing": 0.0, "drop": DROP_HEIGHT}
POSE = {"hip": 0.0, "thigh": 0.8, "calf": -1.853}  # the scene's targets and initial angles
KP = 200.0  # N m / rad, the scene's PD
DAMPER = 5.0  # N m s / rad, the scene's joint dampers
FRICTION = 0.8
MUJOCO_SETTINGS = {
    "mujoco": {"solref": None},  # MuJoCo's defaults: solref (0.02, 1), solimp (0.9, 0.95, 0.001)
    "mujoco_5ms": {"solref": (0.005, 1.0)},  # a 5 ms contact time constant
    "mujoco_2ms": {"solref": (0.002, 1.0)},  # 2 ms: clamped to 2 h above h = 1 ms (mjENBL_REFSAFE)
}
SIMS = ("dojo", *MUJOCO_SETTINGS)
MODEL_TOLERANCE = 1e-12  # kg, m, kg m^2: MuJoCo's fused bodies against dojo's merged ones


# ----------------------------------------------------------------- one run, either simulator
@dataclass
class Run:
    """One run of one simulator: the trunk at the knots t_k = k h, k = 0..N, and what the
    run cost. position: (N+1, 3) trunk centre of mass, world; orientation: (N+1, 4) trunk
    [w, x, y, z], body to world; lowest_foot: m, the lowest foot sphere's bottom over the run
    (negative: below the ground)."""

    sim: str
    case: str
    h: float
    position: np.ndarray
    orientation: np.ndarray
    lowest_foot: float
    wall: float
    cpu: float
    failed_steps: int = 0
    finite: bool = True
    iterations: np.ndarray | None = None


# --start warm|cold: dojo's runs with solver.warm_start true or false (default: the scene's, warm:
# each step's interior point starts from the previous converged step, docs/physics.md); the same
# criterion, the same reference step
START = {"warm_start": None}


def go1_mechanism(case: str, h: float):
    height = STAND_HEIGHT + CASES[case]
    overrides = {"timestep": h, "joints.floating_base.initial.position": [0.0, 0.0, height, 0.0, 0.0, 0.0]}
    if START["warm_start"] is not None:
        overrides["solver.warm_start"] = START["warm_start"]
    return dojo.load_scene(SCENE, overrides=overrides)


def lowest_foot_dojo(mech, x: np.ndarray, q: np.ndarray) -> float:
    """The lowest foot sphere's bottom over the knots: x (T, nb, 3), q (T, nb, 4)."""
    low = np.inf
    for c in mech.contacts:
        centre = x[:, c.body] + quat.rotate(q[:, c.body], np.broadcast_to(c.offset, x[:, c.body].shape))
        low = min(low, float(np.min(centre[:, 2])) - c.radius)
    return low


def run_dojo(case: str, h: float, duration: float) -> Run:
    mech = go1_mechanism(case, h)
    steps = int(round(duration / h))
    dojo.simulate(mech, steps=1)  # the core model built before timing
    traj, wall, cpu = timed_run(lambda: dojo.simulate(mech, steps=steps))
    trunk = mech.body_index(TRUNK)
    x, q = traj.x, traj.q
    return Run("dojo", case, h, x[:, trunk].copy(), q[:, trunk].copy(), lowest_foot_dojo(mech, x, q), wall, cpu,
               failed_steps=int(sum(s != "success" for s in traj.status)),
               finite=bool(np.isfinite(x).all() and np.isfinite(q).all()), iterations=np.asarray(traj.iterations))


def mujoco_go1(h: float, height: float = STAND_HEIGHT, solref=None):
    """The Go1 in MuJoCo from the scene's URDF (the module docstring says what matches and what
    differs). Returns (model, data) at the standing pose, at rest, forward-computed."""
    text = (robots.example_robot_data_root() / "robots" / GO1_URDF).read_text()
    text = re.sub(r"<visual>.*?</visual>", "", text, flags=re.S)
    # base: 1e-6 kg with inertia entries all 1e-6 (not positive definite; MuJoCo refuses it): keep
    # its diagonal there and move its off-diagonal 1e-6 onto trunk, whose tensor it is fused into
    base = 'ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"'
    trunk = 'ixy="-0.0002296769" ixz="-0.0002945293" iyy="0.063009565" iyz="-4.18731e-05"'
    if base not in text or trunk not in text:
        raise RuntimeError(f"{GO1_URDF}: base/trunk inertias are not the ones this script adapts")
    text = text.replace(base, 'ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"')
    text = text.replace(trunk, 'ixy="-0.0002286769" ixz="-0.0002935293" iyy="0.063009565" iyz="-4.08731e-05"')
    text = text.replace('<robot name="go1">', '<robot name="go1"><mujoco><compiler discardvisual="true" '
                        'fusestatic="false" balanceinertia="false"/></mujoco>', 1)
    spec = mujoco.MjSpec.from_string(text)
    root = spec.worldbody.first_body()
    root.add_freejoint(name="root")
    root.pos = [0.0, 0.0, height]
    spec.compiler.fusestatic = True  # now that the root has a joint, fuse the fixed links only
    spec.option.timestep = h
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    friction = [FRICTION, 0.005, 0.0001]  # sliding (MuJoCo's torsional, rolling defaults: condim 3 ignores them)
    for geom in spec.geoms:
        foot = geom.type == mujoco.mjtGeom.mjGEOM_SPHERE  # the URDF's only spheres are the feet
        geom.contype, geom.conaffinity, geom.friction = (1 if foot else 0), 0, friction
        if solref is not None:
            geom.solref = list(solref)
    ground = spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5.0, 5.0, 0.1])
    ground.contype, ground.conaffinity, ground.friction = 0, 1, friction
    if solref is not None:
        ground.solref = list(solref)
    for joint in spec.joints:
        if pose_part(joint.name) is None:
            continue
        joint.damping = DAMPER if np.ndim(joint.damping) == 0 else [DAMPER, 0.0, 0.0]  # MuJoCo 4: an array
        joint.frictionloss = 0.0
        joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE
        actuator = spec.add_actuator(name=joint.name, target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=KP)
    model = spec.compile()  # the collision-free geoms are discarded as visual (discardvisual)
    data = mujoco.MjData(model)
    for j in range(model.njnt):
        part = pose_part(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or "")
        if part is not None:
            data.qpos[model.jnt_qposadr[j]] = POSE[part]
    for a in range(model.nu):
        data.ctrl[a] = POSE[pose_part(mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a))]
    mujoco.mj_forward(model, data)
    return model, data


def pose_part(joint_name: str) -> str | None:
    return next((part for part in POSE if joint_name.endswith(f"_{part}_joint")), None)


def mujoco_body(model, name: str) -> int:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "base" if name == TRUNK else name)


def mujoco_loop(model, data, steps: int, trunk: int, feet: list[int], record: bool):
    """mj_step x steps; with record, the trunk and the lowest foot at every knot."""
    step = mujoco.mj_step
    if not record:
        for _ in range(steps):
            step(model, data)
        return None
    position, orientation = [data.xipos[trunk].copy()], [data.xquat[trunk].copy()]
    radius = model.geom_size[feet, 0]
    low = float(np.min(data.geom_xpos[feet, 2] - radius))
    for _ in range(steps):
        step(model, data)
        position.append(data.xipos[trunk].copy())
        orientation.append(data.xquat[trunk].copy())
        low = min(low, float(np.min(data.geom_xpos[feet, 2] - radius)))
    return np.array(position), np.array(orientation), low


def run_mujoco(sim: str, case: str, h: float, duration: float) -> Run:
    model, data = mujoco_go1(h, STAND_HEIGHT + CASES[case], **MUJOCO_SETTINGS[sim])
    steps = int(round(duration / h))
    trunk = mujoco_body(model, TRUNK)
    feet = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE]
    (position, orientation, low), wall, cpu = timed_run(lambda: mujoco_loop(model, data, steps, trunk, feet, True))
    finite = bool(np.isfinite(position).all() and np.isfinite(orientation).all())
    return Run(sim, case, h, position, orientation, low, wall, cpu, finite=finite)


def run(sim: str, case: str, h: float, duration: float) -> Run:
    return run_dojo(case, h, duration) if sim == "dojo" else run_mujoco(sim, case, h, duration)


def time_once(sim: str, case: str, h: float, duration: float) -> tuple[float, float]:
    """(wall s, CPU s) of one whole run as a user runs it: dojo.simulate (every state recorded),
    or mj_step in a Python loop recording nothing (MuJoCo's cost alone)."""
    if sim == "dojo":
        one = run_dojo(case, h, duration)
        return one.wall, one.cpu
    model, data = mujoco_go1(h, STAND_HEIGHT + CASES[case], **MUJOCO_SETTINGS[sim])
    _, wall, cpu = timed_run(lambda: mujoco_loop(model, data, int(round(duration / h)), 0, [], False))
    return wall, cpu


def time_dojo_step_loop(case: str, h: float, duration: float) -> tuple[float, float]:
    """(wall s, CPU s) of the run as ``u = controller(mech, k, z); z = dojo.step(mech, z, u)``
    in a Python loop: the steps and the PD without dojo.simulate's per-step record."""
    mech = go1_mechanism(case, h)
    z0, controller, step = dojo.initial_state(mech), mech.controller, dojo.step

    def loop():
        z = z0
        for k in range(int(round(duration / h))):
            z = step(mech, z, controller(mech, k, z))
        return z

    _, wall, cpu = timed_run(loop)
    return wall, cpu


def timed_run(fn):
    """(fn's result, wall s, CPU s) of one call: the garbage collected first, then off."""
    gc.collect()
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t0, time.process_time() - c0
    finally:
        gc.enable()


# ----------------------------------------------------------------- the fidelity measure
def trunk_errors(run_h: Run, reference: Run) -> tuple[float, float]:
    """(largest trunk position error m, largest orientation error degrees) of a run against
    its reference, at the run's knots t = k h (the reference's every (h / h_ref)-th knot)."""
    stride = int(round(run_h.h / reference.h))
    if abs(stride * reference.h - run_h.h) > 1e-12 * run_h.h:
        raise ValueError(f"step {run_h.h:g} is not a multiple of the reference step {reference.h:g}")
    position, orientation = reference.position[::stride], reference.orientation[::stride]
    if len(position) != len(run_h.position):
        raise ValueError(f"the runs cover different times: {len(run_h.position)} knots at h = {run_h.h:g}, "
                         f"{len(position)} of the reference's")
    dp = np.linalg.norm(run_h.position - position, axis=1)
    # the angle of q_ref^-1 q_h: 2 atan2(|vector part|, |scalar part|) (q and -q are one rotation)
    rel = quat.multiply(quat.conjugate(orientation), run_h.orientation)
    angle = 2.0 * np.arctan2(np.linalg.norm(rel[:, 1:], axis=1), np.abs(rel[:, 0]))
    if not (np.isfinite(dp).all() and np.isfinite(angle).all()):
        return float("inf"), float("inf")
    return float(dp.max()), float(np.degrees(angle.max()))


@dataclass
class Verdict:
    h: float
    position_error: float
    angle_error_deg: float
    lowest_foot: float
    failed_steps: int
    finite: bool
    passed: bool
    why: str
    us_per_step_cpu: float
    iterations_mean: float | None = None
    iterations_max: int | None = None


def judge(run_h: Run, reference: Run) -> Verdict:
    dp, angle = trunk_errors(run_h, reference)
    why = []
    if not run_h.finite:
        why.append("not finite")
    if run_h.failed_steps:
        why.append(f"{run_h.failed_steps} failed steps")
    if dp > POSITION_TOLERANCE:
        why.append(f"position {dp * 1e3:.3g} mm")
    if angle > ANGLE_TOLERANCE_DEG:
        why.append(f"angle {angle:.3g} deg")
    if run_h.lowest_foot < -PENETRATION_TOLERANCE:
        why.append(f"foot {-run_h.lowest_foot * 1e3:.3g} mm deep")
    if reference.lowest_foot < -PENETRATION_TOLERANCE:
        why.append("reference's foot too deep")
    steps = len(run_h.position) - 1
    it = run_h.iterations
    return Verdict(run_h.h, dp, angle, run_h.lowest_foot, run_h.failed_steps, run_h.finite, not why,
                   "; ".join(why), 1e6 * run_h.cpu / steps,
                   None if it is None else float(np.mean(it)), None if it is None else int(np.max(it)))


def largest_passing(verdicts: list[Verdict]) -> Verdict | None:
    """The largest h such that it and every smaller candidate pass."""
    best = None
    for v in sorted(verdicts, key=lambda v: v.h):
        if not v.passed:
            break
        best = v
    return best


# ----------------------------------------------------------------- the benchmark
@dataclass
class Result:
    sim: str
    case: str
    reference_lowest_foot: float
    sweep: list = field(default_factory=list)
    h: float | None = None
    wall: list = field(default_factory=list)
    cpu: list = field(default_factory=list)
    sim_per_wall: float | None = None  # simulated seconds per wall second, median
    sim_per_cpu: float | None = None
    # dojo only: the same run as dojo.step in a Python loop with the PD called per step (what
    # dojo.simulate costs beyond the steps: the record of every state)
    loop_cpu: list = field(default_factory=list)
    loop_sim_per_cpu: float | None = None


def model_sanity() -> list[dict]:
    """MuJoCo's fused Go1 against dojo's merged one, body by body, at the initial pose:
    mass, centre of mass (world) and inertia about it (world)."""
    mech = go1_mechanism("standing", 0.01)
    z0 = dojo.initial_state(mech)
    model, data = mujoco_go1(0.01)
    worst = {"mass": 0.0, "com": 0.0, "inertia": 0.0}
    for i, body in enumerate(mech.bodies):
        b = mujoco_body(model, body.name)
        x, q = z0[13 * i:13 * i + 3], z0[13 * i + 6:13 * i + 10]
        rot = quat.matrix_from_quaternion(q)
        rot_mj = data.ximat[b].reshape(3, 3)
        inertia = rot @ mech.inertia[i] @ rot.T
        inertia_mj = rot_mj @ np.diag(model.body_inertia[b]) @ rot_mj.T
        worst["mass"] = max(worst["mass"], abs(model.body_mass[b] - mech.mass[i]))
        worst["com"] = max(worst["com"], float(np.abs(data.xipos[b] - x).max()))
        worst["inertia"] = max(worst["inertia"], float(np.abs(inertia_mj - inertia).max()))
    out = [{"check": f"{k}: largest difference over the {mech.nb} bodies", "value": v, "limit": MODEL_TOLERANCE,
            "ok": v <= MODEL_TOLERANCE} for k, v in worst.items()]
    out.append({"check": "bodies", "value": model.nbody - 1, "limit": mech.nb, "ok": model.nbody - 1 == mech.nb})
    return out


def sweep(sim: str, case: str, steps, reference_step: float, duration: float, log) -> Result:
    reference = run(sim, case, reference_step, duration)
    result = Result(sim, case, reference.lowest_foot)
    log(f"  {sim:<12} {case:<9} reference h = {reference_step:g}: {reference.wall:.1f} s, lowest foot "
        f"{reference.lowest_foot * 1e3:+.3f} mm")
    for h in steps:
        verdict = judge(run(sim, case, h, duration), reference)
        result.sweep.append(verdict)
        log(f"  {sim:<12} {case:<9} h = {h:<7g} position {verdict.position_error * 1e3:10.3f} mm, angle "
            f"{verdict.angle_error_deg:8.3f} deg, lowest foot {verdict.lowest_foot * 1e3:+9.3f} mm"
            + (f", iterations {verdict.iterations_mean:.1f} (max {verdict.iterations_max})"
               if verdict.iterations_mean is not None else "")
            + f", {verdict.us_per_step_cpu:,.0f} us/step: {'pass' if verdict.passed else verdict.why}")
    best = largest_passing(result.sweep)
    result.h = None if best is None else best.h
    return result


def time_at_largest(results: list[Result], duration: float, repeat: int) -> None:
    """Interleaved repetitions of each result's run at its largest passing step; medians."""
    todo = [r for r in results if r.h is not None]
    for _ in range(repeat):
        for r in todo:
            wall, cpu = time_once(r.sim, r.case, r.h, duration)
            r.wall.append(wall)
            r.cpu.append(cpu)
            if r.sim == "dojo":
                r.loop_cpu.append(time_dojo_step_loop(r.case, r.h, duration)[1])
    for r in todo:
        r.sim_per_wall = duration / statistics.median(r.wall)
        r.sim_per_cpu = duration / statistics.median(r.cpu)
        if r.loop_cpu:
            r.loop_sim_per_cpu = duration / statistics.median(r.loop_cpu)


def check_steps(steps, reference_step: float, duration: float) -> None:
    for h in (*steps, reference_step):
        n, k = duration / h, h / reference_step
        if abs(n - round(n)) > 1e-9 or abs(k - round(k)) > 1e-9:
            raise SystemExit(f"step {h:g}: must divide the duration {duration:g} and be a multiple of the "
                             f"reference step {reference_step:g}")


def summary_rows(results: list[Result]) -> list[list[str]]:
    head = ["case", "simulator", "largest h", "position err", "angle err", "lowest foot", "iterations",
            "sim s / wall s", "sim s / CPU s", "dojo / it (CPU, wall)"]
    rows = [head]
    for case in dict.fromkeys(r.case for r in results):
        here = [r for r in results if r.case == case]
        ours = next((r for r in here if r.sim == "dojo"), None)
        for r in here:
            v = next((v for v in r.sweep if v.h == r.h), None)
            ahead = "-"
            if r.sim != "dojo" and ours is not None:
                if ours.sim_per_wall and r.sim_per_wall:
                    ahead = f"{ours.sim_per_cpu / r.sim_per_cpu:.2f}x, {ours.sim_per_wall / r.sim_per_wall:.2f}x"
                elif ours.sim_per_wall and r.h is None:
                    ahead = "yes (MuJoCo: no step passes)"
                elif r.sim_per_wall and ours.h is None:
                    ahead = "no (dojo: no step passes)"
            if v is None:
                rows.append([case, r.sim, "none", "-", "-", "-", "-", "-", "-", ahead])
                continue
            it = "-" if v.iterations_mean is None else f"{v.iterations_mean:.1f} (max {v.iterations_max})"
            rows.append([case, r.sim, f"{r.h:g} s", f"{v.position_error * 1e3:.2f} mm", f"{v.angle_error_deg:.3f} deg",
                         f"{v.lowest_foot * 1e3:+.2f} mm", it, f"{r.sim_per_wall:.1f}", f"{r.sim_per_cpu:.1f}", ahead])
    return rows


def best_mujoco(results: list[Result]) -> list[dict]:
    """Per case, dojo against the MuJoCo setting with the most simulated seconds per CPU second
    among those with a passing step (CPU time: on the loaded machine two settings at the same
    step measured 100 and 174 simulated seconds per wall second with the same CPU time)."""
    out = []
    for case in dict.fromkeys(r.case for r in results):
        ours = next((r for r in results if r.case == case and r.sim == "dojo"), None)
        theirs = [r for r in results if r.case == case and r.sim != "dojo" and r.sim_per_wall]
        best = max(theirs, key=lambda r: r.sim_per_cpu, default=None)
        row = {"case": case, "dojo_h": None if ours is None else ours.h, "mujoco_setting": None, "mujoco_h": None,
               "ratio_wall": None, "ratio_cpu": None}
        if best is not None:
            row.update(mujoco_setting=best.sim, mujoco_h=best.h)
        if best is not None and ours is not None and ours.sim_per_wall:
            row.update(ratio_wall=ours.sim_per_wall / best.sim_per_wall, ratio_cpu=ours.sim_per_cpu / best.sim_per_cpu)
        out.append(row)
    return out


def print_rows(rows: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in rows) for i in range(len(rows[0]))]
    for k, line in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def measure(cases, sims, steps, reference_step: float, duration: float, repeat: int, log=print) -> list[Result]:
    """The sweep of every simulator and case, then the timed runs at each largest passing step."""
    results = []
    log("\nSweep (one run per step; us/step is CPU time):")
    for case in cases:
        for sim in sims:
            results.append(sweep(sim, case, steps, reference_step, duration, log))
    log(f"\nTiming: {repeat} interleaved runs of {duration:g} s at each largest passing step")
    time_at_largest(results, duration, repeat)
    return results


def print_summary(results: list[Result]) -> tuple[list[list[str]], list[dict]]:
    """Print the equal-fidelity table and the verdicts; returns (table rows, best_mujoco)."""
    print("\nEqual fidelity (median of the timed runs; 'dojo / it' = dojo's simulated seconds per CPU second, and per\n"
          "wall second, over the simulator's; the verdicts are on CPU time: both sides run on one thread, and on a\n"
          "loaded machine wall time also counts the time a process waited for a core)")
    rows = summary_rows(results)
    print_rows(rows)
    for r in results:
        if r.loop_sim_per_cpu:
            print(f"{r.case}, dojo as dojo.step in a Python loop (no per-step record): "
                  f"{r.loop_sim_per_cpu:.1f} sim s / CPU s against dojo.simulate's {r.sim_per_cpu:.1f}")
    for r in results:
        if r.h is None and r.sweep:
            smallest = min(r.sweep, key=lambda v: v.h)
            print(f"{r.case}, {r.sim}: no step passes; at the smallest, {smallest.h:g} s: {smallest.why}")
    best = best_mujoco(results)
    for b in best:
        if b["ratio_wall"] is not None:
            verdict = "ahead" if b["ratio_cpu"] > 1 else "behind"
            print(f"{b['case']}: dojo at {b['dojo_h']:g} s against MuJoCo's best ({b['mujoco_setting']} at "
                  f"{b['mujoco_h']:g} s): {b['ratio_cpu']:.2f}x the simulated seconds per CPU second "
                  f"({b['ratio_wall']:.2f}x per wall second): {verdict}")
        elif b["mujoco_setting"] is None and b["dojo_h"] is not None:
            print(f"{b['case']}: no MuJoCo setting passes at any step; dojo passes up to {b['dojo_h']:g} s")
        else:
            print(f"{b['case']}: dojo passes at no step")
    return rows, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {', '.join(CASES)}")
    ap.add_argument("--sims", default=",".join(SIMS), help=f"comma-separated subset of {', '.join(SIMS)}")
    ap.add_argument("--steps", help="candidate steps, comma-separated (default: "
                    + ",".join(f"{h:g}" for h in STEPS) + ")")
    ap.add_argument("--reference-step", type=float,
                    help=f"each simulator's reference step (default {REFERENCE_STEP:g})")
    ap.add_argument("--duration", type=float, default=DURATION,
                    help=f"simulated seconds per run (default {DURATION:g})")
    ap.add_argument("--repeat", type=int, help="timed runs at the largest passing step (default 5; --quick 3)")
    ap.add_argument("--quick", action="store_true",
                    help=f"reference step {QUICK_REFERENCE_STEP:g}, steps {','.join(f'{h:g}' for h in QUICK_STEPS)}, "
                         "3 timed runs")
    ap.add_argument("--json", type=Path, help="also write every number to this JSON file")
    ap.add_argument("--start", choices=("warm", "cold"), default=None,
                    help="dojo with solver.warm_start true or false (default: the scene's, warm)")
    ap.add_argument("--blas-threads", default="1", help="BLAS threads (default 1; 0 = leave the environment alone)")
    args = ap.parse_args(argv)
    START["warm_start"] = None if args.start is None else args.start == "warm"
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    sims = [s.strip() for s in args.sims.split(",") if s.strip()]
    if bad := [c for c in cases if c not in CASES] + [s for s in sims if s not in SIMS]:
        ap.error(f"unknown case or simulator: {', '.join(bad)}")
    if robots.example_robot_data_root() is None:
        sys.exit(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
    if mujoco is None:
        print("MuJoCo is not installed (pip install -e '.[bench]'): dojo only, no ratios")
        sims = [s for s in sims if s == "dojo"]
    steps = tuple(float(s) for s in args.steps.split(",")) if args.steps else (QUICK_STEPS if args.quick else STEPS)
    reference_step = args.reference_step or (QUICK_REFERENCE_STEP if args.quick else REFERENCE_STEP)
    repeat = args.repeat or (3 if args.quick else 5)
    check_steps(steps, reference_step, args.duration)

    limit, blas_text = bench_common.blas_limit(BLAS_THREADS)
    load0 = os.getloadavg()
    date = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    print(f"dojo_cli {dojo.__version__} vs MuJoCo {mujoco.__version__ if mujoco else '-'}, {date}; "
          f"{os.cpu_count()} CPUs, load average {load0[0]:.1f}; BLAS threads {blas_text}")
    print("dojo: solver.warm_start " + ({None: "the scene's (default: on)", "warm": "on (--start warm)",
                                         "cold": "off (--start cold)"}[args.start]))
    print(f"Go1 ({', '.join(cases)}), {args.duration:g} s; a step passes within {POSITION_TOLERANCE * 1e3:g} mm and "
          f"{ANGLE_TOLERANCE_DEG:g} degree of its own h = {reference_step:g} reference with no foot more than "
          f"{PENETRATION_TOLERANCE * 1e3:g} mm deep")
    sanity = model_sanity() if mujoco is not None and any(s != "dojo" for s in sims) else []
    for c in sanity:
        print(f"  model sanity {'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['value']:.3g} (limit {c['limit']:g})")
    started = time.perf_counter()
    with limit:
        results = measure(cases, sims, steps, reference_step, args.duration, repeat, print)
    load1 = os.getloadavg()
    rows, best = print_summary(results)
    print(f"\ntotal {time.perf_counter() - started:.0f} s; load average {load0[0]:.1f} at the start, {load1[0]:.1f} "
          "at the end (a shared machine: absolute rates vary 2-3x between runs, the same-process ratios less)")
    if args.json:
        doc = {"meta": {"date": date, "dojo_cli": dojo.__version__, "mujoco": mujoco.__version__ if mujoco else None,
                        "python": platform.python_version(), "cpus": os.cpu_count(), "blas_threads": blas_text,
                        "loadavg_start": load0, "loadavg_end": load1, "duration": args.duration,
                        "reference_step": reference_step, "steps": list(steps), "repeat": repeat,
                        "position_tolerance": POSITION_TOLERANCE, "angle_tolerance_deg": ANGLE_TOLERANCE_DEG,
                        "penetration_tolerance": PENETRATION_TOLERANCE,
                        "mujoco_settings": {k: v for k, v in MUJOCO_SETTINGS.items() if k in sims}},
               "model_sanity": sanity, "table": rows, "against_best_mujoco": best,
               "results": [asdict(r) for r in results]}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(c["ok"] for c in sanity) else 1


if __name__ == "__main__":
    sys.exit(main())
