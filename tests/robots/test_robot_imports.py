"""Real robot descriptions from example-robot-data import faithfully: counts, masses,
inertias, limits, dampers and zero-configuration link poses against an independent
reading of each URDF (tests/urdf_reference.py)."""

from __future__ import annotations


import numpy as np
import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.scene import robots
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict
from dojo_cli.scene.urdf import MASSLESS, UrdfOptions, read_urdf
from dojo_cli.simulation.initial import initial_state
from tests import urdf_reference as ref

ROOT = robots.example_robot_data_root()
ROBOTS = {
    "a1": "a1_description/urdf/a1.urdf",
    "go1": "go1_description/urdf/go1.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
}
# Rounding only: a few 4x4 products and sums of 30 parallel-axis terms.
_EXACT = 1e-12
_MOVABLE = ("revolute", "continuous", "prismatic", "planar", "floating")
runner = CliRunner()


def _load(name, **options):
    path = ROOT / "robots" / ROBOTS[name]
    result = read_urdf(path, UrdfOptions(floating=True, **options))
    return path, result, build_mechanism(spec_from_dict(result.scene))


def _computed_inertias(name) -> dict[str, np.ndarray]:
    """link -> the inertia the importer computed from its collision shapes (a file inertia
    that is not positive definite: talos's force-torque sensor links have zeros), each
    checked not positive definite in the reference reading; from the unmerged import, where
    such a link is its own body (its body frame is the link frame)."""
    path, result, mech = _load(name, meshes=False)
    links, _ = ref.read(path)
    out = {}
    for note in result.warnings:
        if note.startswith("note:") and "are not positive definite; computed from" in note:
            link = note.split("link '")[1].split("'")[0]
            assert np.linalg.eigvalsh(links[link].inertia).min() <= 1e-9 * max(np.abs(links[link].inertia).max(), 1e-300), link
            out[link] = mech.get_body(link).inertia
            assert np.linalg.eigvalsh(out[link]).min() > 0, link
    return out


def _initial_positions(result) -> dict[str, float]:
    """The joint positions the importer starts from (zero unless a range excludes it)."""
    return {j["name"]: j["initial"]["position"][0] for j in result.scene["joints"]
            if j.get("initial") and j["type"] in ("revolute", "prismatic")}


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_links_bodies_inertias_and_poses(name):
    path, result, mech = _load(name, meshes=False)
    links, joints = ref.read(path)
    poses = ref.forward_kinematics(links, joints, _initial_positions(result))
    computed = _computed_inertias(name)
    movable = [j for j in joints if j.type in _MOVABLE]
    assert sum(1 for j in mech.joints if j.type != "fixed") == len(movable) + 1, "movable joints + floating base"
    assert abs(sum(b.mass for b in mech.bodies) - sum(l.mass for l in links.values())) < _EXACT, "total mass"
    z = initial_state(mech).reshape(mech.nb, 13)
    lift = np.zeros(3)
    members = {}
    for link, (body, _) in result.link_bodies.items():
        members.setdefault(body, []).append(link)
    for link, (body, t_body_link) in result.link_bodies.items():
        i = mech.body_index(body)
        rot = matrix_from_quaternion(z[i, 6:10])
        assert np.abs(rot @ t_body_link[:3, :3] - poses[link][:3, :3]).max() < _EXACT, f"{link}: orientation"
        assert np.abs(z[i, :3] + rot @ t_body_link[:3, 3] - poses[link][:3, 3] - lift).max() < _EXACT, f"{link}: position"
        if members[body] == [link] and link not in computed:
            # a link that is its own body: the URDF's mass and inertia, rotated into the link frame
            b = mech.get_body(body)
            assert abs(b.mass - links[link].mass) < _EXACT and np.abs(b.inertia - links[link].inertia).max() < _EXACT, link


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_merged_robot_keeps_mass_properties_limits_and_dampers(name):
    path, result, mech = _load(name, meshes=False, merge_fixed=True)
    links, joints = ref.read(path)
    for link, inertia in _computed_inertias(name).items():
        links[link].inertia = inertia  # what the importer computed for a file inertia that is not positive definite
    mass, com, inertia = ref.system_mass_properties(links, ref.forward_kinematics(links, joints, _initial_positions(result)))
    z = initial_state(mech).reshape(mech.nb, 13)
    got_com = sum(b.mass * z[i, :3] for i, b in enumerate(mech.bodies)) / mass
    got = np.zeros((3, 3))
    for i, b in enumerate(mech.bodies):
        rot = matrix_from_quaternion(z[i, 6:10])
        r = z[i, :3] - got_com
        got += rot @ b.inertia @ rot.T + b.mass * (r @ r * np.eye(3) - np.outer(r, r))
    assert abs(sum(b.mass for b in mech.bodies) - mass) < _EXACT
    assert np.abs(got_com - com).max() < _EXACT and np.abs(got - inertia).max() < 1e-10 * max(1.0, np.abs(inertia).max())
    assert mech.nb == 1 + sum(1 for j in joints if j.type in _MOVABLE and links[j.child].mass > MASSLESS)
    for j in joints:
        if j.type not in ("revolute", "prismatic", "continuous"):
            continue
        got = mech.get_joint(j.name)
        assert np.all(got.damper == j.damping), f"{j.name}: damper"
        # every bound kept, revolute ones beyond +-pi included (docs/physics.md, "Revolute limits of any size")
        lower = j.lower if j.lower is not None else -np.inf
        upper = j.upper if j.upper is not None else np.inf
        if j.type == "continuous" or (np.isinf(lower) and np.isinf(upper)):
            assert got.limits is None or (np.isinf(got.limits[0][0]) and np.isinf(got.limits[1][0])), j.name
        else:
            assert got.limits[0][0] == lower and got.limits[1][0] == upper, f"{j.name}: limits {got.limits}"
        scene_joint = next(s for s in result.scene["joints"] if s["name"] == j.name)
        assert scene_joint.get("effort_limit") == j.effort and scene_joint.get("velocity_limit") == j.velocity, j.name


@pytest.mark.parametrize("name", sorted(ROBOTS))
def test_initial_pose_is_inside_every_joint_range(name):
    """Each limited joint starts inside its URDF range: at zero where the range holds zero
    strictly inside, else 1 % of the range (at most 0.01) in from the bound nearest zero;
    one note lists the joints moved (go1's calves, [-2.818, -0.888], started at 0 before)."""
    path, result, mech = _load(name, meshes=False, merge_fixed=True)
    _, joints = ref.read(path)
    q = _initial_positions(result)
    moved = []
    for j in joints:
        if j.type not in ("revolute", "prismatic") or j.lower is None or j.upper is None or j.lower == j.upper:
            continue
        got = q.get(j.name, 0.0)
        assert j.lower < got < j.upper or (j.lower < 0.0 < j.upper and got == 0.0), f"{j.name}: {got} outside [{j.lower}, {j.upper}]"
        if j.lower < 0.0 < j.upper:
            assert got == 0.0, f"{j.name}: zero is inside its range, started at {got}"
        else:
            nearest = j.lower if j.lower >= 0.0 else j.upper
            assert abs(got - nearest) == pytest.approx(min(0.01 * (j.upper - j.lower), 0.01), rel=1e-12), j.name
            moved.append(j.name)
    # (the engine starts from them: test_links_bodies_inertias_and_poses compares its initial
    # link poses with the reference's forward kinematics at these positions)
    notes = [w for w in result.warnings if w.startswith("note:") and "start inside their ranges" in w]
    if moved:
        assert len(notes) == 1 and all(f"{name} " in notes[0] for name in moved), notes
    else:
        assert not notes, notes
    if name == "go1":
        assert sorted(moved) == sorted(f"{leg}_calf_joint" for leg in ("FR", "FL", "RR", "RL"))


def test_feet_of_the_quadrupeds_and_the_humanoid():
    for name, count in (("a1", 4), ("go1", 4), ("solo12", 4), ("g1", 8)):
        _, result, mech = _load(name, meshes=False, merge_fixed=True, contacts="feet", friction=0.8)
        assert mech.nc == count, f"{name}: {[c.name for c in mech.contacts]}"
        z = initial_state(mech).reshape(mech.nb, 13)
        lows = [(z[c.body, :3] + matrix_from_quaternion(z[c.body, 6:10]) @ c.offset)[2] - c.radius for c in mech.contacts]
        # zero configuration: legs straight down, every foot on the ground at once
        assert max(lows) < 1e-9 and min(lows) > -1e-12, f"{name}: foot heights {lows}"


def test_import_command_on_a_real_robot(tmp_path):
    out = tmp_path / "a1.yaml"
    res = runner.invoke(app, ["import-urdf", str(ROOT / "robots" / ROBOTS["a1"]), "--floating", "--merge-fixed",
                              "--contacts", "feet", "--friction", "0.8", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "13 bodies" in res.output and "FR_calf_joint" in res.output and "effort 33.5" in res.output
    assert "root link has no mass; merged into 'trunk'" in res.output


def test_without_the_extra_robot_scenes_are_marked_and_fail_cleanly(monkeypatch):
    """Simulated absence of example-robot-data: listed as unavailable, exit 2 with the install command."""
    monkeypatch.setattr(robots, "example_robot_data_root", lambda: None)
    monkeypatch.delenv("DOJO_PACKAGE_PATH", raising=False)
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    listing = runner.invoke(app, ["scenes"])
    assert listing.exit_code == 0
    line = next(l for l in listing.output.splitlines() if l.startswith("  quadruped "))
    assert "[unavailable:" in line and robots.ROBOTS_EXTRA_INSTALL in line, line
    assert "[unavailable" not in next(l for l in listing.output.splitlines() if l.startswith("  pendulum "))
    res = runner.invoke(app, ["simulate", "quadruped", "--steps", "1"])
    assert res.exit_code == 2 and robots.ROBOTS_EXTRA_INSTALL in res.output and "Traceback" not in res.output, res.output
