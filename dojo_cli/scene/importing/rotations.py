"""Rotations the importers (and the scene tools beside them: a floating base moved, a robot
stood) compute from an axis and an angle, and the one rule by which both importers read a
gimbal's middle angle."""

from __future__ import annotations

import math

import numpy as np

# A gimbal's middle angle is read in [-pi/2, pi/2] (core/maximal/euler_joints.h): at +-pi/2
# its first and last axes align, its angles are singular and so is the chain's own mass
# matrix (Pinocchio's of the same URDF too). A range for it beyond that (human.urdf's
# shoulders, up to pi; an MJCF hinge without a range) is clipped this far inside, with a
# note: one rule for both importers.
GIMBAL_LOCK_MARGIN = 0.05


def rotation_about(axis, angle: float) -> np.ndarray:
    """(3, 3) rotation by ``angle`` (rad) about the unit ``axis`` (3,): Rodrigues' formula,
    R = 1 + sin(angle) K + (1 - cos(angle)) K^2, K the cross-product matrix of the axis."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)
