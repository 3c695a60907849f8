"""Masses, centres of mass and inertias summed by the parallel-axis rule.

Both importers make one body of several parts (URDF links merged by fixed joints, MJCF
geoms by the density rule, MJCF bodies merged into their parents) and sum them here:
I = sum_i (I_i + m_i (|d_i|^2 1 - d_i d_i^T)), d_i the part's centre of mass from the
whole's (Steiner's theorem).
"""

from __future__ import annotations

import numpy as np


def parallel_axis(d: np.ndarray) -> np.ndarray:
    """(3, 3) |d|^2 1 - d d^T: the inertia per unit mass of a point at ``d`` (3,) about the origin."""
    return np.dot(d, d) * np.eye(3) - np.outer(d, d)


def combine(items: list[tuple[float, np.ndarray, np.ndarray]]) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, centre of mass (3,) and (3, 3) inertia about it of (mass, centre (3,),
    (3, 3) inertia about that centre) items, all in one frame; no mass: (0, 0, 0)."""
    mass = sum(m for m, _, _ in items)
    if mass <= 0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in items) / mass
    inertia = np.zeros((3, 3))
    for m, c, i in items:
        inertia += i + m * parallel_axis(c - com)
    return mass, com, inertia
