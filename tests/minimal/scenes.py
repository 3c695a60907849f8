"""Test scenes of tests/minimal that are not built-in scenes."""

from pathlib import Path

# A chain through every joint with a swing rotation (orbital, prismatic_orbital,
# planar_orbital, free_orbital) or translations with a spherical rotation
# (cylindrical_free, planar_free): the tree joints whose motion subspace turns with q.
MINIMAL_JOINTS = str(Path(__file__).resolve().parents[1] / "data" / "scenes" / "minimal_joints.yaml")
