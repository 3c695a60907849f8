"""``read_mjcf``: an MJCF file into scene data, its stages in order (read, mass properties,
bodies, joints, contacts, actuators, keyframe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.scene.importing.messages import listed
from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.mjcf.actuators import _actuators
from dojo_cli.scene.mjcf.bodies import _bodies, _place, _world_body
from dojo_cli.scene.mjcf.contacts import _contacts, _place_initial_overlaps
from dojo_cli.scene.mjcf.joints import _armature_integrator, _joints, _warn_outside_limits
from dojo_cli.scene.mjcf.keyframes import _keyframe
from dojo_cli.scene.mjcf.mass import _mass_properties
from dojo_cli.scene.mjcf.options import MjcfImport, MjcfOptions
from dojo_cli.scene.mjcf.reader import _Reader, reader_problems_stop


def read_mjcf(path: str | Path, options: MjcfOptions | None = None, shown: str | None = None) -> MjcfImport:
    """Read an MJCF file into scene data.

    Args:
        path: the model's XML file.
        options: how to import it.
        shown: the file name used in messages (default: ``path``).

    Raises:
        SceneFileError: the file cannot be read (exit code 3).
        SceneError: one problem per element that is invalid or cannot be mapped.
    """
    options = options or MjcfOptions()
    path = Path(path)
    reader = _Reader(path, shown or str(path), options)
    reader.read()
    reader_problems_stop(reader)
    result = MjcfImport(scene={})
    _mass_properties(reader)
    _place(reader, options, result)
    if options.contacts == "file" and not reader.off("constraint", "contact"):
        _world_body(reader, result)
    if not any(b.host == i for i, b in enumerate(reader.bodies)):
        file, line = reader.worldbody or (reader.file, None)
        what = "no <body>" if not reader.bodies else "only bodies without mass and inertia fixed to the world"
        reader.problem(file, line, "<worldbody>", f"{what}: the model has nothing that moves, and a scene needs a body "
                       "(a template whose bodies code adds cannot be imported as it is)")
    reader_problems_stop(reader)
    joints, coordinates = _joints(reader, result)
    result.coordinates = coordinates
    bodies = _bodies(reader, options) + reader.links
    contacts = _contacts(reader, options) if options.contacts == "file" and not reader.off("constraint", "contact") else []
    actuators, controller = _actuators(reader, result) if not reader.off("actuation") else ([], None)
    if reader.off("actuation") and reader.actuators:
        result.notes.append(f"<flag actuation=\"disable\">: the {len(reader.actuators)} actuators exert no force, left out")
    scene: dict[str, Any] = {
        "name": reader.model,
        "description": f"imported from {Path(path).name} by dojo import-mjcf",
        "timestep": float(reader.timestep),
        "gravity": plain_vector(np.zeros(3) if reader.off("gravity") else reader.gravity),
        "bodies": bodies,
        "joints": joints,
    }
    _armature_integrator(reader, scene, joints, contacts, coordinates)
    if contacts:
        scene["contacts"] = contacts
    if actuators:
        scene["actuators"] = actuators
    if controller:
        scene["controller"] = controller
    if options.keyframe is not None:
        _keyframe(reader, options.keyframe, scene, result)
    reader_problems_stop(reader)
    if contacts:
        # judged at the pose the scene starts from: the keyframe's when one is given (a key may
        # put a body into the floor that qpos0 holds clear of it, or the other way round)
        _place_initial_overlaps(reader, scene, result)
        reader_problems_stop(reader)  # overlaps the first step cannot take out (without --drop-unsupported)
    for kind, places in reader.dropped.items():
        reader.warnings.append(f"warning: {reader.file}: {kind} left out (--drop-unsupported), {len(places)} at "
                               + listed(places, 4))
    _warn_outside_limits(reader, scene)
    result.notes.extend(reader.notes)
    result.contact_geoms = {c["name"]: reader.contact_geoms[c["name"]] for c in contacts}
    if reader.inert_tendons:
        result.notes.append(f"{len(reader.inert_tendons)} tendons left out: no limit, spring, damper, friction or actuator, "
                            f"so no force ({', '.join(reader.inert_tendons)})")
    result.scene = scene
    result.warnings = reader.warnings
    return result
