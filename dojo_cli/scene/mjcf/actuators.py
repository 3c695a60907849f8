"""Actuators: ``motor`` (an input on the joint's coordinate, its gear the gain, ``ctrlrange``
clamped), ``position`` and ``velocity`` (the scene's PD controller, MuJoCo's gains and targets).
"""

from __future__ import annotations

import numpy as np

from dojo_cli.scene.importing.messages import listed
from dojo_cli.scene.mjcf.options import MjcfImport
from dojo_cli.scene.mjcf.reader import _Reader


_ACTUATORS = ("motor", "position", "velocity", "general", "intvelocity", "damper", "cylinder", "muscle", "adhesion")


def _actuators(reader: _Reader, result: MjcfImport) -> tuple[list[dict], dict | None]:
    coords = {m.joint: m for m in result.coordinates}
    actuators: list[dict] = []
    kp: dict[str, list[float]] = {}
    kd: dict[str, list[float]] = {}
    targets: dict[str, list[float]] = {}
    velocity_targets: dict[str, list[float]] = {}
    ranged = []
    driven: set[tuple[str, int]] = set()
    for k, (el, file, cls) in enumerate(reader.actuators):
        a = reader.attrs(el, cls)
        name = a.get("name") or f"actuator{k}"
        element = f"actuator {name!r}"
        tag = el.tag
        if tag not in _ACTUATORS:
            reader.warn(file, el.sourceline, f"<{tag}>", "not an actuator; ignored")
            continue
        if tag not in ("motor", "position", "velocity") or "joint" not in a:
            target = next((t for t in ("tendon", "site", "body", "jointinparent") if t in a), "joint")
            reader.unsupported(file, el.sourceline, element, "actuators other than motor/position/velocity on a joint",
                               f"<{tag}> on a {target} is not supported (motor, position and velocity on a joint are)")
            continue
        joint = a["joint"]
        if joint not in coords:
            reader.problem(file, el.sourceline, element, f"unknown joint {joint!r}")
            continue
        m = coords[joint]
        if m.kind not in ("hinge", "slide"):
            reader.unsupported(file, el.sourceline, element, "actuators on ball or free joints",
                               f"on the {m.kind} joint {joint!r}: only hinge and slide joints")
            continue
        gear = reader.vec(a, "gear", 0, [1.0], el, file, element)
        g = float(gear[0]) if len(gear) else 1.0
        if (m.dojo_joint, m.coordinate) in driven:
            reader.unsupported(file, el.sourceline, element, "several actuators on one joint",
                               f"a second actuator on joint {joint!r}")
            continue
        driven.add((m.dojo_joint, m.coordinate))
        actuators.append({"name": name, "joint": m.dojo_joint, "coordinate": m.coordinate, "gain": m.sign * g})
        limited = a.get("ctrllimited", "auto")
        if reader.off("clampctrl"):
            limited = "false"  # <flag clampctrl="disable">: MuJoCo does not clamp ctrl
        if limited == "true" or (limited == "auto" and reader.autolimits and "ctrlrange" in a):
            lo, hi = (float(v) for v in reader.vec(a, "ctrlrange", 2, [-np.inf, np.inf], el, file, element))
            if not lo <= hi:
                reader.problem(file, el.sourceline, element, f"ctrlrange={a.get('ctrlrange')!r}: lower above upper")
            elif tag == "motor":
                # MuJoCo clips ctrl to ctrlrange before the gear: the input, clamped (ClampedInputs)
                actuators[-1]["ctrl_range"] = [lo, hi]
            else:
                result.target_ranges[name] = (lo, hi)  # the PD's target: clamped here
            ranged.append(name)
        if tag in ("position", "velocity"):
            kv = reader.real(a, "kv", 0.0, el, file, element)
            gain = reader.real(a, "kp", 1.0, el, file, element) if tag == "position" else 0.0
            damp = kv if tag == "position" else reader.real(a, "kv", 1.0, el, file, element)
            # MuJoCo: force = kp (ctrl - g q) - kv g qdot on the actuator length g q, torque g force:
            # a PD on the joint with kp g^2, kd kv g^2, target ctrl / g (ctrl 0: target 0)
            n = m.coordinate + 1
            for table, value in ((kp, gain * g * g), (kd, damp * g * g)):
                row = table.setdefault(m.dojo_joint, [])
                row.extend([0.0] * (n - len(row)))
                row[m.coordinate] = value
            for table in (targets, velocity_targets):
                row = table.setdefault(m.dojo_joint, [])
                row.extend([0.0] * (n - len(row)))
            # ctrl starts at 0, clipped to ctrlrange like any ctrl (MuJoCo clamps before use)
            lo, hi = result.target_ranges.get(name, (-np.inf, np.inf))
            start = min(max(0.0, lo), hi) / g
            (targets if tag == "position" else velocity_targets)[m.dojo_joint][m.coordinate] = start
    if ranged:
        result.notes.append(f"ctrlrange of {len(ranged)} actuators: motors' inputs are clamped to it (the actuator's "
                            "ctrl_range), position and velocity actuators' targets are clamped at import: "
                            + listed(ranged, 6))
    controller = None
    if kp or kd:
        # every coordinate of a driven joint needs a value
        controller = {"type": "pd", "kp": kp, "kd": kd, "targets": targets, "velocity_targets": velocity_targets}
    return actuators, controller
