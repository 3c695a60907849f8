"""Gymnasium's walkers dropped limp (issue 24, item 8): the file's initial pose, zero velocity
and zero control, 2 s at the file's own timestep, with the files' armature (rotor inertia) and
contact margins (MuJoCo's contact surfaces, the geoms' margins summed); every step converges
and the whole-body centre of mass ends within 5 cm of MuJoCo's height (mj_step on the same
file: its soft contacts, its integrator). Measured (this test's solve): Hopper 0.1951 m vs
0.1912 m, Walker2d 0.2348 vs 0.2234, HalfCheetah 0.4482 vs 0.4227, Humanoid (--split-hinges)
0.1515 vs 0.1489, HumanoidStandup 0.0860 vs 0.0856 (lifted 3.8 cm onto the floor's contact
surface at import, where MuJoCo starts with its arms in the floor and pushes them out; its
hands start in its hips and come out over the contacts' recovery). The
Hopper starts balanced on an unstable equilibrium: MuJoCo's soft contact tips it at once, our
converged solve (rtol 1e-10) holds it upright for the 2 s, and this solve's tolerances tip it
down by 1.5 s (docs/mjcf.md): its check compares two fall times.

The Ant is compared from the joint angles its file gives as ``init_qpos`` (ankles at 1 rad,
inside their 30-70 degree ranges): 0.5760 m vs 0.5678 at every solver setting. From the file's
own qpos0 (ankles at 0, outside their ranges) the drop has no answer to compare with: both
simulators bring the ankles in, and their 1 kg m^2 rotors carry them across the whole range to
the 70 degree stop, where a hard limit stops them (ours: 0.6316 m, the feet held where they
land, 7.1 cm above MuJoCo's 0.5607) and MuJoCo's soft limit throws them back (73.3 degrees, then -1.07
rad/s), the reverse spin opening the legs while the feet hop and slide (friction saturated) to
55 degrees by 1 s. MuJoCo's own end height from that start spans 0.35 to 0.62 m under its
joint-limit solref alone (docs/mjcf.md, "The Ant's limp drop"); so that start is checked for
what hard limits and Coulomb friction require: the torso ends on the ankles' stops.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

import gymnasium  # noqa: E402
import mujoco  # noqa: E402  (the test extra: the oracle must not be skipped, issue 25 item 8)

ASSETS = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
DURATION = 2.0  # s
COM_HEIGHT_TOL = 0.05  # m: the budget for a limp drop against MuJoCo


@pytest.mark.parametrize("name", ["hopper", "walker2d", "half_cheetah", "humanoid", "humanoidstandup"])
def test_limp_drop_ends_at_mujocos_centre_of_mass_height(name):
    path = ASSETS / f"{name}.xml"
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True, split_hinges=True), path.name)
    scene = result.scene
    mech = build_mechanism(spec_from_dict(scene, file=str(path)))
    zero = np.zeros(mech.nu)
    # Dojo's absolute tolerances and its start (every step from Dojo's point), with which the
    # budget was measured
    opts = dojo.default_options(mech).replace(tolerances="absolute", warm_start=False)
    traj = dojo.simulate(mech, steps=int(round(DURATION / mech.timestep)), controller=lambda *_: zero, opts=opts)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{name}: {len(failed)} failed steps, the first {failed[0]}"

    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    for _ in range(int(round(DURATION / m.opt.timestep))):
        mujoco.mj_step(m, d)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b.name) for b in mech.bodies]
    keep = [i for i, k in enumerate(ids) if k > 0]  # split-hinge links are not MuJoCo's bodies
    masses = np.array([m.body_mass[ids[i]] for i in keep])
    ours = float(masses @ traj.x[-1][keep, 2] / masses.sum())
    theirs = float(masses @ d.xipos[[ids[i] for i in keep], 2] / masses.sum())
    assert abs(ours - theirs) < COM_HEIGHT_TOL, f"{name}: centre of mass at {ours:.4f} m, MuJoCo's at {theirs:.4f} m"


DATA = Path(__file__).parent.parent / "scene" / "data" / "mjcf"
# The ankles' stop pose: the default solve leaves the torso 4e-6 m from it (Dojo's absolute
# tolerances, looser for these 0.04 kg legs, stop the ankles 1 degree short: 2.4 mm lower)
STOP_POSE_TOL = 1e-4  # m


def _drop(path: Path, text: str, tmp: Path, options: MjcfOptions):
    """Our limp drop and MuJoCo's of the same file text (from options.keyframe, if given):
    (centre-of-mass heights at 2 s, ours and MuJoCo's, over MuJoCo's bodies; our failed steps;
    the scene's joint types)."""
    model = tmp / path.name
    model.write_text(text)
    result = read_mjcf(model, options, path.name)
    mech = build_mechanism(spec_from_dict(result.scene, file=str(model)))
    zero = np.zeros(mech.nu)
    traj = dojo.simulate(mech, steps=int(round(DURATION / mech.timestep)), controller=lambda *_: zero)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    m = mujoco.MjModel.from_xml_path(str(model))
    d = mujoco.MjData(m)
    if options.keyframe is not None:
        mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, options.keyframe))
    for _ in range(int(round(DURATION / m.opt.timestep))):
        mujoco.mj_step(m, d)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b.name) for b in mech.bodies]
    keep = [i for i, k in enumerate(ids) if k > 0]
    masses = np.array([m.body_mass[ids[i]] for i in keep])
    ours = float(masses @ traj.x[-1][keep, 2] / masses.sum())
    theirs = float(masses @ d.xipos[[ids[i] for i in keep], 2] / masses.sum())
    return ours, theirs, failed, sorted({j["type"] for j in result.scene["joints"]})


def test_dm_control_humanoid_with_gimbal_and_universal_joints_drops_as_mujocos(tmp_path):
    """dm_control's humanoid (its hips and abdomen gimbals, its shoulders universal joints, its
    ankles revolute chains: their hinges are 4 cm apart), its armature set to zero in both
    (universal and gimbal joints carry none; with it, --split-hinges makes every body a chain):
    every step converges and the centre of mass ends within 5 cm of MuJoCo's at 2 s (measured
    0.3500 m vs 0.3543 m; with the armature, all chains, 0.3502 vs 0.3455)."""
    path = DATA / "dmc_humanoid.xml"
    text = path.read_text().replace('armature=".01"', 'armature="0"')
    ours, theirs, failed, types = _drop(path, text, tmp_path, MjcfOptions(drop_unsupported=True, split_hinges=True))
    assert {"gimbal", "universal", "revolute"} <= set(types), types
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    assert abs(ours - theirs) < COM_HEIGHT_TOL, f"centre of mass at {ours:.4f} m, MuJoCo's at {theirs:.4f} m"


def test_dm_control_walker_starting_on_its_knee_limits_drops_as_mujocos(tmp_path):
    """dm_control's walker starts with its knees on their upper bound and its feet on the floor
    (the initial state's solve had stalled there, simulation/initial.py INNER_BTOL): every step
    converges and the centre of mass ends within 5 cm of MuJoCo's (measured 0.2177 m vs 0.2173 m)."""
    path = DATA / "dmc_walker.xml"
    ours, theirs, failed, _ = _drop(path, path.read_text(), tmp_path, MjcfOptions(drop_unsupported=True))
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    assert abs(ours - theirs) < COM_HEIGHT_TOL, f"centre of mass at {ours:.4f} m, MuJoCo's at {theirs:.4f} m"


def test_ant_started_inside_its_joint_ranges_drops_as_mujocos(tmp_path):
    """Gymnasium's Ant from its file's ``init_qpos`` joint angles (ankles at +-1 rad, inside
    their ranges; the torso where qpos0 puts it): every step converges and the centre of mass
    ends within 5 cm of MuJoCo's (measured 0.5760 m vs 0.5678: our feet hold where they land,
    MuJoCo's creep outward under static friction, its ankles 57.3 -> 55.8 degrees in 2 s)."""
    path = ASSETS / "ant.xml"
    m = mujoco.MjModel.from_xml_path(str(path))
    qpos = m.qpos0.copy()
    qpos[7:] = m.numeric("init_qpos").data[7:]
    key = f'  <keyframe><key name="inside" qpos="{" ".join(repr(float(v)) for v in qpos)}"/></keyframe>\n</mujoco>'
    text = path.read_text().replace("</mujoco>", key)
    ours, theirs, failed, _ = _drop(path, text, tmp_path, MjcfOptions(drop_unsupported=True, keyframe="inside"))
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    assert abs(ours - theirs) < COM_HEIGHT_TOL, f"centre of mass at {ours:.4f} m, MuJoCo's at {theirs:.4f} m"


def test_ant_from_its_files_pose_ends_on_its_ankle_stops():
    """From the file's qpos0 (ankles at 0, outside their 30-70 degree ranges) the limit brings
    the ankles in and their rotors carry them to the 70 degree stop, where hard limits hold
    them; the feet land there and Coulomb friction (mu 1) holds them: the torso ends at the
    height of that pose on the contact surface, margin + capsule radius + leg length sin(70
    degrees) (0.6316 m), every step converged. MuJoCo's soft limit throws the ankles back from
    73 degrees and its Ant ends 7 cm lower (module docstring)."""
    path = ASSETS / "ant.xml"
    result = read_mjcf(path, MjcfOptions(drop_unsupported=True), path.name)
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    zero = np.zeros(mech.nu)
    traj = dojo.simulate(mech, steps=int(round(DURATION / mech.timestep)), controller=lambda *_: zero)
    failed = [k for k, s in enumerate(traj.status) if s != "success"]
    assert not failed, f"{len(failed)} failed steps, the first {failed[0]}"
    m = mujoco.MjModel.from_xml_path(str(path))
    foot = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "left_ankle_geom")
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    stop = m.jnt_range[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "ankle_1"), 1]
    radius, half_length = m.geom_size[foot, :2]
    # the ankle axis lies in the torso's horizontal plane; the lower leg falls from it at the stop
    pose = m.geom_margin[foot] + m.geom_margin[floor] + radius + 2 * half_length * np.sin(stop)
    torso = traj.x[-1][[b.name for b in mech.bodies].index("torso"), 2]
    assert abs(torso - pose) < STOP_POSE_TOL, f"torso at {torso:.4f} m, the ankle-stop pose at {pose:.4f} m"
