"""Keyframes: a ``<key>``'s qpos, qvel and ctrl as the scene's initial joint positions,
velocities and PD targets; and any MuJoCo qpos as the scene joints' minimal coordinates.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.mjcf.options import MjcfImport
from dojo_cli.scene.mjcf.reader import _Reader
from dojo_cli.scene.mjcf.rotations import _quaternion_multiply, rotation_vector_from_quaternion


def joint_coordinates_from_qpos(result: MjcfImport, qpos: np.ndarray, joints: list[dict]) -> dict[str, list[float]]:
    """Each scene joint's minimal coordinates at a MuJoCo qpos (the imported model's layout)."""
    sizes = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "planar": 2, "planar_axis": 3, "fixed_orientation": 3,
             "free_revolute": 4, "spherical": 3, "floating": 6, "fixed": 0, "universal": 2, "gimbal": 3}
    out = {j["name"]: [0.0] * sizes[j["type"]] for j in joints}
    for m in result.coordinates:
        values = out[m.dojo_joint]
        if m.kind in ("hinge", "slide"):
            values[m.coordinate] += m.sign * (float(qpos[m.qpos_adr]) - m.ref)
        elif m.kind == "ball":
            values[:] = plain_vector(rotation_vector_from_quaternion(qpos[m.qpos_adr:m.qpos_adr + 4]))
        else:  # free: the body origin's displacement from qpos0, and the rotation relative to the file's
            joint = next(j for j in joints if j["name"] == m.dojo_joint)
            q0 = np.asarray(joint["orientation_offset"], float)
            q0inv = q0 * np.array([1, -1, -1, -1])
            rel = _quaternion_multiply(q0inv, qpos[m.qpos_adr + 3:m.qpos_adr + 7])
            origin0 = np.asarray(joint["parent_vertex"], float)
            values[:3] = plain_vector(np.asarray(qpos[m.qpos_adr:m.qpos_adr + 3], float) - origin0)
            values[3:] = plain_vector(rotation_vector_from_quaternion(rel))
    return out


def _keyframe(reader: _Reader, name: str, scene: dict, result: MjcfImport) -> None:
    found = [(el, file) for el, file in reader.keys if el.get("name") == name]
    if not found:
        names = [el.get("name") or "(unnamed)" for el, _ in reader.keys]
        reader.problem(reader.file, None, "--keyframe", f"no <key name={name!r}> (keys: {', '.join(names) or 'none'})")
        return
    el, file = found[0]
    element = f"key {name!r}"
    nq = sum({"free": 7, "ball": 4}.get(m.kind, 1) for m in result.coordinates)
    nv = sum({"free": 6, "ball": 3}.get(m.kind, 1) for m in result.coordinates)
    qpos0 = []
    for m in result.coordinates:
        if m.kind in ("hinge", "slide"):
            qpos0.append(m.ref)
        elif m.kind == "ball":
            qpos0 += [1.0, 0.0, 0.0, 0.0]
        else:
            joint = next(j for j in scene["joints"] if j["name"] == m.dojo_joint)
            qpos0 += list(joint["parent_vertex"]) + list(joint["orientation_offset"])
    qpos = reader.numbers(el, file, "qpos", nq, qpos0, element)
    qvel = reader.numbers(el, file, "qvel", nv, [0.0] * nv, element)
    if qpos is None or qvel is None:
        return
    positions = joint_coordinates_from_qpos(result, qpos, scene["joints"])
    velocities = {j: [0.0] * len(v) for j, v in positions.items()}
    for m in result.coordinates:
        if m.kind in ("hinge", "slide"):
            velocities[m.dojo_joint][m.coordinate] += m.sign * float(qvel[m.dof_adr])
            continue
        # ball: qvel is the child's angular velocity relative to its parent, child frame; free: the
        # body origin's world velocity, then its angular velocity in its own frame. A spherical or
        # floating joint's initial rotation velocity is that relative angular velocity, child
        # frame (checked against MuJoCo's positions along qvel: tests/scene/test_mjcf.py)
        rates = np.asarray(qvel[m.dof_adr + (0 if m.kind == "ball" else 3):m.dof_adr + (3 if m.kind == "ball" else 6)], float)
        if m.kind == "ball":
            velocities[m.dojo_joint][:] = plain_vector(rates)
        else:
            velocities[m.dojo_joint][:] = plain_vector(np.concatenate([qvel[m.dof_adr:m.dof_adr + 3], rates]))
    for joint in scene["joints"]:
        if joint["type"] == "fixed":
            continue
        pos, vel = positions[joint["name"]], velocities[joint["name"]]
        if any(pos) or any(vel):
            joint["initial"] = {"position": pos, "velocity": vel}
    ctrl = reader.numbers(el, file, "ctrl", None, None, element)
    if ctrl is not None and ctrl.size:
        controller = scene.get("controller")
        if controller is None:
            reader.warn(file, el.sourceline, element, "ctrl is for motors: give it as inputs (it is not a state)")
        else:
            actuators = scene.get("actuators", [])
            if len(ctrl) != len(actuators):
                reader.problem(file, el.sourceline, element, f"ctrl has {len(ctrl)} values for {len(actuators)} actuators")
                return
            for value, act in zip(ctrl, actuators):
                if act["joint"] in controller["targets"]:
                    lo, hi = result.target_ranges.get(act["name"], (-np.inf, np.inf))
                    controller["targets"][act["joint"]][act["coordinate"]] = min(max(float(value), lo), hi) / act["gain"]
