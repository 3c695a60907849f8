"""Benchmark: the A1 quadruped standing (built-in scene `quadruped`), dojo_cli against MuJoCo.

Usage:
    python benchmarks/quadruped.py [--seconds T] [--timestep H] [--json FILE]

dojo_cli: the built-in scene (13 bodies, 12 revolute joints with limits and
implicit dampers, a floating base, 4 foot contacts, PD on every leg joint), run for
T seconds at timestep H; reported: wall time per step (best of 2), median and max
solver iterations, trunk height range and the lowest foot distance.

MuJoCo (when ``import mujoco`` works): the *same URDF file* (example-robot-data's
a1.urdf) loaded by MuJoCo's own URDF reader (visual meshes discarded: MuJoCo reads no
.dae; the collision primitives are kept), then given a free joint on its root, a
ground plane, the same joint limits, dampers 5 and position actuators kp 200 at the
same standing pose, friction 0.8, and stepped with ``mj_step`` for the same time.
Different contact models (MuJoCo's soft contacts against our hard ones), so only
the time ratio and that both stand are comparable. The ratio is measured in the
same run, on the same machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dojo_cli as dojo  # noqa: E402
from dojo_cli.scene import robots  # noqa: E402

A1 = "a1_description/urdf/a1.urdf"
POSE = {"hip": 0.0, "thigh": 0.9, "calf": -1.425}
LIMITS = {"hip": (-0.5, 0.5), "thigh": (-0.5, 1.5), "calf": (-2.5, -1.0)}
HEIGHT = 0.3173867819787  # trunk origin of the built-in scene


def run_dojo(seconds: float, h: float) -> dict:
    mech = dojo.load_scene("quadruped", overrides={"timestep": h})
    steps = int(round(seconds / h))
    best, traj = np.inf, None
    for _ in range(2):
        start = time.perf_counter()
        traj = dojo.simulate(mech, steps=steps)
        best = min(best, (time.perf_counter() - start) / steps)
    z = traj.x[:, mech.body_index("trunk"), 2]
    return {
        "steps": steps, "ms_per_step": best * 1e3, "iterations_median": float(np.median(traj.iterations)),
        "iterations_max": int(traj.iterations.max()), "failed_steps": int(sum(s != "success" for s in traj.status)),
        "trunk_height_range_mm": float(np.ptp(z) * 1e3), "trunk_height_end": float(z[-1]),
        "min_contact_distance": float(traj.contact_distance.min()),
    }


def mujoco_model(urdf: Path, h: float):
    import mujoco

    text = urdf.read_text()
    text = re.sub(r"<visual>.*?</visual>", "", text, flags=re.S)
    text = text.replace("<robot name=\"a1\">", "<robot name=\"a1\"><mujoco><compiler discardvisual=\"true\" fusestatic=\"false\"/></mujoco>", 1)
    model = mujoco.MjModel.from_xml_string(text)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a1.xml"
        mujoco.mj_saveLastXML(str(path), model)
        root = ET.parse(path).getroot()
    world = root.find("worldbody")
    trunk = world.find("body")
    ET.SubElement(world, "geom", {"type": "plane", "size": "5 5 0.1", "friction": "0.8"})
    trunk.insert(0, ET.Element("freejoint", {"name": "root"}))
    trunk.set("pos", f"0 0 {HEIGHT}")
    option = root.find("option") if root.find("option") is not None else ET.SubElement(root, "option")
    option.set("timestep", str(h))
    option.set("integrator", "implicitfast")
    actuators = ET.SubElement(root, "actuator")
    for joint in root.iter("joint"):
        name = joint.get("name", "")
        part = next((k for k in POSE if name.endswith(f"_{k}_joint")), None)
        if part is None:
            continue
        joint.set("damping", "5")
        joint.set("limited", "true")
        joint.set("range", f"{LIMITS[part][0]} {LIMITS[part][1]}")
        ET.SubElement(actuators, "position", {"joint": name, "kp": "200"})
    for geom in root.iter("geom"):
        geom.set("friction", "0.8")
    model = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    data = mujoco.MjData(model)
    for j in range(model.njnt):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or ""
        part = next((k for k in POSE if name.endswith(f"_{k}_joint")), None)
        if part is not None:
            data.qpos[model.jnt_qposadr[j]] = POSE[part]
    for a in range(model.nu):
        data.ctrl[a] = data.qpos[model.jnt_qposadr[model.actuator_trnid[a, 0]]]
    return mujoco, model, data


def run_mujoco(seconds: float, h: float) -> dict | None:
    try:
        mujoco, model, data = mujoco_model(robots.example_robot_data_root() / "robots" / A1, h)
    except ImportError:
        return None
    steps = int(round(seconds / h))
    qpos0, ctrl = data.qpos.copy(), data.ctrl.copy()
    best, heights = np.inf, []
    for _ in range(3):
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.ctrl[:] = qpos0, ctrl
        heights = []
        start = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(model, data)
            heights.append(data.qpos[2])
        best = min(best, (time.perf_counter() - start) / steps)
    return {"steps": steps, "ms_per_step": best * 1e3, "trunk_height_range_mm": float(np.ptp(heights) * 1e3),
            "trunk_height_end": float(heights[-1]), "nbody": model.nbody - 1, "version": mujoco.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--timestep", type=float, default=0.01)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if robots.example_robot_data_root() is None:
        sys.exit(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
    ours = run_dojo(args.seconds, args.timestep)
    print(f"dojo_cli  quadruped h={args.timestep:g}: {ours['ms_per_step']:.2f} ms/step, iterations median "
          f"{ours['iterations_median']:g} max {ours['iterations_max']}, failed {ours['failed_steps']}, trunk height range "
          f"{ours['trunk_height_range_mm']:.2f} mm (end {ours['trunk_height_end']:.4f} m), lowest foot {ours['min_contact_distance']:.1e} m")
    theirs = run_mujoco(args.seconds, args.timestep)
    result = {"dojo_cli": ours, "mujoco": theirs}
    if theirs is None:
        print("mujoco    not installed (pip install -e '.[bench]'): no ratio")
    else:
        ratio = ours["ms_per_step"] / theirs["ms_per_step"]
        result["ratio"] = ratio
        print(f"mujoco {theirs['version']} same URDF: {theirs['ms_per_step'] * 1e3:.1f} us/step, trunk height range "
              f"{theirs['trunk_height_range_mm']:.2f} mm (end {theirs['trunk_height_end']:.4f} m)")
        print(f"ratio dojo_cli / mujoco: {ratio:.0f}x slower per step (same run)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
