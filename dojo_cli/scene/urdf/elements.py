"""The URDF as read, before it becomes scene data: links (``_Link``: mass, centre of mass and
inertia in the link frame, visual and collision geometry) and joints (``_Joint``: type, ends,
origin, axis, limits, dynamics), each with its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Link:
    name: str
    line: int | None
    mass: float
    com: np.ndarray  # (3,) centre of mass, link frame
    inertia: np.ndarray  # (3, 3) about the centre of mass, link frame
    visuals: list = field(default_factory=list)  # (kind, params, (4,4) pose in link, rgba | None, line)
    collisions: list = field(default_factory=list)
    has_inertial: bool = False


@dataclass
class _Joint:
    name: str
    line: int | None
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None
    damping: float | list[float] = 0.0  # a planar joint's may be (x, y, theta)
    friction: float = 0.0
    mimic: str | None = None
    swing_twist: tuple[float, float, float] | None = None  # a spherical joint's Bullet limit (not modelled)
