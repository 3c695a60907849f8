"""Test scenes of tests/minimal that are not built-in scenes."""

from pathlib import Path

# A chain through every joint with a swing rotation (orbital, prismatic_orbital,
# planar_orbital, free_orbital) or translations with a spherical rotation
# (cylindrical_free, planar_free): the tree joints whose motion subspace turns with q.
MINIMAL_JOINTS = str(Path(__file__).resolve().parents[1] / "data" / "scenes" / "minimal_joints.yaml")

# The 24 subsets of skydy's degrees of freedom with a rotation axis of their own (revolute
# rotations with translations across the axis: the tree measures those in the predecessor
# frame, a motion subspace that turns with q).
SKYDY_SUBSETS = str(Path(__file__).resolve().parents[1] / "data" / "scenes" / "skydy_subsets.yaml")

# Two of RBD's four-bars side by side: two loop-closing joints (joint4, b_joint4).
TWO_FOURBARS = str(Path(__file__).resolve().parents[1] / "data" / "scenes" / "rbd_two_fourbars.yaml")

# A floating body carrying universal (Hooke) and gimbal joints with slanted axes, orientation
# offsets, springs and dampers: each is two or three revolute tree joints in sequence.
UNIVERSAL_JOINTS = str(Path(__file__).resolve().parents[1] / "data" / "scenes" / "universal_joints.yaml")
