"""The numbers of docs/mjcf.md, "The Ant's limp drop": Gymnasium's Ant dropped limp for 2 s,
MuJoCo under its own settings and variations of them, and ours, from the file's pose and
from starts inside the ankles' ranges.

Usage:
    python docs/ant_drop_study.py          # a few seconds; needs gymnasium and mujoco (the test extra)

Heights are the torso's (m), angles the front-left ankle's (degrees). What each MuJoCo row
changes is in its label; everything else is the file's (RK4, h = 0.01 s, joint-limit and
contact solref 0.02 s with damping ratio 1, margins 0.01 on every geom).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import dojo_cli as dojo
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

import gymnasium
import mujoco

ANT = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets" / "ant.xml"
DURATION = 2.0  # s
ANKLES = [8, 10, 12, 14]  # qpos addresses of ankle_1..4 (after the free joint's 7 and each hip)
ANKLE_SIGNS = np.array([1.0, -1.0, -1.0, 1.0])  # ankles 1 and 4 range over +30..70, 2 and 3 over -70..-30


def mujoco_drop(change=None, duration: float = DURATION, ankles_deg: float | None = None):
    """MuJoCo's limp drop of the file (changed by ``change(model)``): (torso z, ankle angle,
    the fraction of steps from 0.25 to 1 s with the front-left foot touching)."""
    m = mujoco.MjModel.from_xml_path(str(ANT))
    if change is not None:
        change(m)
    d = mujoco.MjData(m)
    if ankles_deg is not None:
        d.qpos[ANKLES] = np.radians(ankles_deg) * ANKLE_SIGNS
    foot = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "left_ankle_geom")
    touching = []
    for _ in range(int(round(duration / m.opt.timestep))):
        mujoco.mj_step(m, d)
        if 0.25 <= d.time <= 1.0:
            touching.append(any(foot in (c.geom1, c.geom2) for c in d.contact[:d.ncon]))
    return d.qpos[2], np.degrees(d.qpos[8]), np.mean(touching)


def our_drop(ankles_deg: float | None = None):
    """Our limp drop of the file (from its qpos0, or with the ankles at ``ankles_deg``):
    (torso z, ankle angle, failed steps)."""
    path, options = ANT, MjcfOptions(drop_unsupported=True)
    if ankles_deg is not None:
        m = mujoco.MjModel.from_xml_path(str(ANT))
        qpos = m.qpos0.copy()
        qpos[ANKLES] = np.radians(ankles_deg) * ANKLE_SIGNS
        key = f'<keyframe><key name="k" qpos="{" ".join(repr(float(v)) for v in qpos)}"/></keyframe></mujoco>'
        path = Path("ant_drop_study.xml").resolve()
        path.write_text(ANT.read_text().replace("</mujoco>", key))
        options = MjcfOptions(drop_unsupported=True, keyframe="k")
    result = read_mjcf(path, options, ANT.name)
    mech = build_mechanism(spec_from_dict(result.scene, file=str(path)))
    zero = np.zeros(mech.nu)
    traj = dojo.simulate(mech, steps=int(round(DURATION / mech.timestep)), controller=lambda *_: zero)
    if ankles_deg is not None:
        path.unlink()
    # minimal coordinates: the floating root's 6, then one per revolute joint in the scene's order
    ankle = 6 + [j.name for j in mech.joints if j.type == "revolute"].index("ankle_1")
    return traj.x[-1][0, 2], np.degrees(traj.minimal_q[-1][ankle]), sum(s != "success" for s in traj.status)


def _set(**values):
    def change(m):
        for key, value in values.items():
            target, _, field = key.partition("__")
            if target == "opt":
                setattr(m.opt, field, value)
            elif target == "jnt_solref":
                m.jnt_solref[1:, int(field)] = value
            elif target == "geom_margin":
                m.geom_margin[:] = value
    return change


def main() -> None:
    rows = [
        ("as the file says", None),
        ("joint-limit damping ratio 2", _set(jnt_solref__1=2.0)),
        ("joint-limit damping ratio 5", _set(jnt_solref__1=5.0)),
        ("joint-limit solref 0.005 s, h = 0.001", _set(jnt_solref__0=0.005, opt__timestep=0.001)),
        ("joint-limit solref 0.002 s, h = 0.0005", _set(jnt_solref__0=0.002, opt__timestep=0.0005)),
        ("h = 0.002", _set(opt__timestep=0.002)),
        ("h = 0.0005", _set(opt__timestep=0.0005)),
        ("Euler, h = 0.01", _set(opt__integrator=mujoco.mjtIntegrator.mjINT_EULER)),
        ("noslip_iterations 100", _set(opt__noslip_iterations=100)),
        ("elliptic cone, impratio 100", _set(opt__cone=mujoco.mjtCone.mjCONE_ELLIPTIC, opt__impratio=100.0)),
        ("every geom's margin 0", _set(geom_margin__=0.0)),
    ]
    print(f"{'MuJoCo, the file pose, 2 s':42s} {'torso z':>8s} {'ankle':>6s} {'touching':>9s}")
    for label, change in rows:
        z, ankle, touching = mujoco_drop(change)
        print(f"{label:42s} {z:8.4f} {ankle:6.1f} {touching:9.0%}")
    for seconds in (4.0, 8.0, 16.0):
        z, ankle, _ = mujoco_drop(duration=seconds)
        print(f"{f'as the file says, {seconds:g} s (creep)':42s} {z:8.4f} {ankle:6.1f}")
    print()
    print(f"{'start':30s} {'ours z':>8s} {'ankle':>6s} {'failed':>6s} {'MuJoCo z':>9s} {'ankle':>6s}")
    for ankles in (None, np.degrees(1.0), 50.0, 30.0):
        ours = our_drop(ankles)
        theirs = mujoco_drop(ankles_deg=ankles)
        label = "the file's qpos0 (ankles 0)" if ankles is None else f"ankles at {ankles:.1f} degrees"
        print(f"{label:30s} {ours[0]:8.4f} {ours[1]:6.1f} {ours[2]:6d} {theirs[0]:9.4f} {theirs[1]:6.1f}")


if __name__ == "__main__":
    main()
