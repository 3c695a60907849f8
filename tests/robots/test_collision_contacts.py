"""A limp laikago imported with --contacts collision, dropped from its standing height,
keeps every URDF collision element above the ground (read from the URDF's XML here, not
from the compiled contacts), with a contact count and solver effort close to feet-only."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
from scipy.spatial.transform import Rotation

import dojo_cli as dojo
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.collisions import lowest_height
from dojo_cli.scene import robots
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import THIN_BOX_RATIO, UrdfOptions, read_urdf
from dojo_cli.simulation.initial import initial_state

ROOT = robots.example_robot_data_root()
_STEPS = 150  # 1.5 s at h = 0.01: the drop, the collapse and the robot at rest
_BELOW = 1e-3  # the bound: no collision element more than 1 mm under the ground


def _run(contacts):
    path = ROOT / "robots/laikago_description/urdf/laikago.urdf"
    result = read_urdf(path, UrdfOptions(floating=True, contacts=contacts, meshes=False))
    # The drop as measured for issue 12: every joint from zero (the calves outside their range
    # [-2.775, -0.611], snapped onto it by the first steps). The importer now starts them 0.01
    # rad inside (issue 24); from there, with --contacts collision, steps 103-104 of this drop
    # end at max_iterations as the thighs fold: a solver case left to issue 24's item 1.
    for joint in result.scene["joints"][1:]:
        joint.pop("initial", None)
    mech = build_mechanism(spec_from_dict(result.scene))
    # standing on its lowest contact in that pose (the importer lifted it in its own)
    z = initial_state(mech).reshape(mech.nb, 13)
    lowest = min(lowest_height([c], matrix_from_quaternion(z[c.body, 6:10]), z[c.body, :3]) for c in mech.contacts)
    result.scene["joints"][0]["initial"]["position"][2] -= lowest
    mech = build_mechanism(spec_from_dict(result.scene))
    traj = dojo.simulate(mech, steps=_STEPS)
    assert set(traj.status) == {"success"}, f"{contacts}: {set(traj.status)}"
    return path, result, mech, traj


def _elements(path):
    """(link, kind, attributes, (4, 4) pose in the link) of each <collision> (URDF rpy: fixed axes x, y, z)."""
    out = []
    for link in ET.parse(path).getroot().iter("link"):
        for collision in link.iter("collision"):
            origin = collision.find("origin")
            pose = np.eye(4)
            if origin is not None:
                pose[:3, :3] = Rotation.from_euler("xyz", [float(v) for v in origin.get("rpy", "0 0 0").split()]).as_matrix()
                pose[:3, 3] = [float(v) for v in origin.get("xyz", "0 0 0").split()]
            geometry = collision.find("geometry")[0]
            out.append((link.get("name"), geometry.tag, geometry.attrib, pose))
    return out


def _lowest(kind, attrs, pose):
    """World height of an element's lowest point at a world pose."""
    rot, centre = pose[:3, :3], pose[:3, 3]
    if kind == "sphere":
        return centre[2] - float(attrs["radius"])
    if kind == "box":
        half = 0.5 * np.array([float(v) for v in attrs["size"].split()])
        return centre[2] - np.abs(rot[2]) @ half
    assert kind == "cylinder", kind
    axis, r, h = rot[:, 2], float(attrs["radius"]), 0.5 * float(attrs["length"])
    return centre[2] - abs(axis[2]) * h - r * np.sqrt(max(0.0, 1.0 - axis[2] ** 2))


def _lows(elements, result, mech, traj):
    """(steps + 1,) the lowest collision element's height at each state of a run."""
    lows = np.full(len(traj.x), np.inf)
    for link, kind, attrs, element_pose in elements:
        body, t_body_link = result.link_bodies[link]
        i = mech.body_index(body)
        for k in range(len(traj.x)):
            world = np.eye(4)
            world[:3, :3], world[:3, 3] = matrix_from_quaternion(traj.q[k, i]), traj.x[k, i]
            lows[k] = min(lows[k], _lowest(kind, attrs, world @ t_body_link @ element_pose))
    return lows


def test_limp_laikago_keeps_every_collision_element_above_the_ground():
    path, result, mech, traj = _run("collision")
    _, feet_result, feet_mech, feet = _run("feet")
    elements = _elements(path)
    # one contact per element: sphere 1, cylinder 2 (its rims), box 8, thin box 2 (a capsule)
    expected = 0
    for _, kind, attrs, _ in elements:
        size = sorted(float(v) for v in attrs.get("size", "0 0 0").split())
        expected += {"sphere": 1, "cylinder": 2}.get(kind) or (2 if size[2] >= THIN_BOX_RATIO * size[1] else 8)
    assert mech.nc == expected == 44
    lows = _lows(elements, result, mech, traj)
    assert abs(lows[0]) < 1e-12, "dropped from its standing height: the lowest element on the ground"
    assert lows.min() > -_BELOW, f"an element {-lows.min() * 1e3:.2f} mm under the ground"
    assert traj.contact_distance.min() > -_BELOW
    trunk = mech.body_index("trunk")
    # it collapses onto its trunk and legs, which stay up; with feet-only contacts its other
    # elements go through the floor (the trunk ends 1 cm up, on its folded legs, since the
    # calves come into their range over a time constant instead of in the first step)
    feet_lows = _lows(elements, feet_result, feet_mech, feet)
    assert traj.x[-1, trunk, 2] > 0.05, f"trunk at {traj.x[-1, trunk, 2]:.3f} m"
    assert feet_lows.min() < -0.05, f"feet only: lowest element {feet_lows.min():.3f} m"
    # the step's cost: the solver effort (a structural proxy of the wall time, which
    # benchmarks/urdf_collision_speed.py measures: 1.8x feet-only with the import's contact
    # margins, 4x without); the margins keep the contacts far from the ground out of the
    # solves, so the iterations are those of feet-only
    assert all(np.isfinite(c.margin) for c in mech.contacts), "the import's contact margins"
    assert traj.iterations.mean() < 1.1 * feet.iterations.mean(), (traj.iterations.mean(), feet.iterations.mean())
