"""Which robots are legged, by structure (dojo_cli/scene/legs.py; issue 24 item 4).

The oracle is a person's reading of each file (the labels below: what each robot is, read
from its links, joints and meshes), over the whole of example-robot-data and Gymnasium's
MJCF models, a second collection the rule was not tuned on first. The rule reads neither
names nor collision geometry, so the labels cannot leak into it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from dojo_cli.scene import robots
from dojo_cli.scene.floating_base import _initial_poses as scene_poses
from dojo_cli.scene.legs import legs_of
from dojo_cli.scene.stand import StandReport, apply_standing_pose
from dojo_cli.scene.urdf import UrdfOptions, read_urdf
from dojo_cli.scene.urdf.initial_pose import _initial_poses

ROOT = robots.example_robot_data_root()
# example-robot-data is in the test extra: without it these checks fail, never skip (issue 25 item 8)
assert ROOT is not None, f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})"

# What each legged robot of the collection is (every other file is an arm, a hand, a
# wheeled base, a drone, a pendulum or a fixed-base torso; ur3.urdf describes no robot).
LEGGED = {
    # quadrupeds
    "a1", "anymal", "anymal-kinova", "b1", "b1-z1", "go1", "go2", "hyq_no_sensors", "laikago", "quadruped", "solo",
    "solo12",
    # legs ending in wheels: standing on held wheels is a stand
    "centauro",
    # bipeds and humanoids (human.urdf is written with y up; alexander and simple_humanoid_classical,
    # and human, have no collision elements; simple_humanoid only a trunk's)
    "bolt", "alexander_v1.lowerBodyOnly", "human", "simple_humanoid", "simple_humanoid_classical", "g1_29dof_rev_1_0",
    "g1_29dof_with_hand_rev_1_0", "icub", "icub_reduced", "romeo", "romeo_small", "romeo_laas_small", "talos_full_v2",
    "talos_full_v2_box", "talos_reduced", "talos_reduced_box", "talos_reduced_corrected",
}
NO_ROBOT = {"ur3"}  # a file with no <link> (refused at import)


def _classify(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the importer's notes
        result = read_urdf(path, UrdfOptions(floating=True, contacts="none", merge_fixed=True, meshes=False), str(path))
    apply_standing_pose(result.scene, result, path, str(path), StandReport("", []))  # as --stand does
    return legs_of(result.scene["joints"], _initial_poses(result))


def test_every_robot_of_the_collection_is_classified_by_its_structure():
    files = sorted((ROOT / "robots").rglob("*.urdf"))
    assert len(files) == 69, len(files)
    assert LEGGED <= {p.stem for p in files}, LEGGED - {p.stem for p in files}
    wrong = []
    for path in files:
        if path.stem in NO_ROBOT:
            continue
        legs = _classify(path)
        assert legs.reason.startswith("legged" if legs.legged else "not legged"), legs.reason
        if legs.legged != (path.stem in LEGGED):
            wrong.append(f"{path.stem}: {legs.reason}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("stem,feet,down", [
    ("human", {"left_foot", "right_foot"}, "-z"),  # as turned upright by the floating import (below)
    ("centauro", {"wheel_1", "wheel_2", "wheel_3", "wheel_4"}, "-z"),  # four legs ending in wheels
    ("simple_humanoid", {"l_ankle", "r_ankle"}, "-z"),  # its legs hang from a waist, not the trunk
])
def test_feet_are_the_ends_of_the_legs(stem, feet, down):
    legs = _classify(next((ROOT / "robots").rglob(f"{stem}.urdf")))
    assert legs.legged and set(legs.feet) == feet, legs.reason
    assert f"(down {down})" in legs.reason, legs.reason


@pytest.mark.parametrize("stem,why", [
    ("tiago_dual", "wheels or casters"),  # casters reached through two joints: they lift nothing
    ("tiago_pro", "wheels or casters"),
    ("baxter", "rests on its base"),  # two arms hanging below a pedestal
    ("talos_left_arm", "2 needed"),  # one chain hanging from its base
    ("allegro_left_hand", "lifted only"),  # fingers
])
def test_what_is_not_legged_says_why(stem, why):
    legs = _classify(next((ROOT / "robots").rglob(f"{stem}.urdf")))
    assert not legs.legged and why in legs.reason, legs.reason


# Gymnasium's MJCF models: the legged ones (hopper has one leg: it cannot stand still)
GYM_LEGGED = {"ant", "half_cheetah", "humanoid", "humanoidstandup", "walker2d", "walker2d_v5"}


def test_gymnasium_models_are_classified_by_the_same_rule():
    import gymnasium  # the test extra: the check must not be skipped
    from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf

    assets = Path(gymnasium.__file__).parent / "envs" / "mujoco" / "assets"
    files = sorted(assets.glob("*.xml"))
    assert GYM_LEGGED <= {p.stem for p in files}
    wrong = []
    for path in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scene = read_mjcf(path, MjcfOptions(drop_unsupported=True, split_hinges=True), path.name).scene
        for j in scene["joints"]:  # the pose: each joint at the point of its range nearest zero (as the URDF import)
            limits = j.get("limits")
            if limits and len(limits["lower"]) == 1 and "initial" not in j:
                j["initial"] = {"position": [float(np.clip(0.0, limits["lower"][0], limits["upper"][0]))]}
        poses = {k: v for k, v in scene_poses(scene["joints"]).items() if k != "origin"}
        legs = legs_of(scene["joints"], poses)
        if legs.legged != (path.stem in GYM_LEGGED):
            wrong.append(f"{path.stem}: {legs.reason}")
    assert not wrong, "\n".join(wrong)


def test_the_feet_rule_stands_human_on_its_feet():
    """`import-urdf human.urdf --floating --contacts feet`: human.urdf has no collision
    element and is written with y up. The feet rule once took its left hand (the lowest
    leaf along the file's z); now the contacts are the soles of its two feet, the robot
    is turned upright, and every other body is above them."""
    path = next((ROOT / "robots").rglob("human.urdf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = read_urdf(path, UrdfOptions(floating=True, contacts="feet", merge_fixed=True, meshes=False), str(path))
    contacts = result.scene["contacts"]
    assert {c["body"] for c in contacts} == {"left_foot", "right_foot"} and len(contacts) == 8, contacts
    assert any("its legs point along -y of the file" in w for w in result.warnings), result.warnings
    fixed = read_urdf(path, UrdfOptions(contacts="none", merge_fixed=True, meshes=False), str(path))
    legs = legs_of(fixed.scene["joints"], _initial_poses(fixed))  # the file's frame: y up (OpenSim's convention)
    assert legs.legged and "(down -y)" in legs.reason and "the file's z is not up" in legs.reason, legs.reason
    poses = _initial_poses(result)
    soles = np.array([poses[c["body"]][1] + poses[c["body"]][0] @ np.asarray(c["offset"]) for c in contacts])
    assert np.allclose(soles[:, 2], 0.0, atol=1e-12), soles[:, 2]  # flat soles on the ground
    heights = {b: p[2] for b, (_, p) in poses.items()}
    assert min(heights.values()) > 0.0 and heights["middle_head"] > 1.5, heights
    # each sole is the foot's inertia box's footprint: 21 cm long, 6 to 8 cm wide on human.urdf
    for foot in ("left_foot", "right_foot"):
        xy = soles[[c["body"] == foot for c in contacts], :2]
        sides = sorted(np.linalg.norm(xy[1:] - xy[0], axis=1))[:2]
        assert 0.05 < sides[0] < 0.1 and 0.18 < sides[1] < 0.25, sides
