"""The MJCF model as read, before it becomes scene data: bodies (``_Body``: frame at qpos0,
joints, geoms, inertial; then mass properties, world frame and the scene body carrying it),
joints (``_Joint``) and geoms (``_Geom``), each with its file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Geom:
    name: str
    line: int | None
    file: str
    type: str
    size: np.ndarray
    pos: np.ndarray  # (3,) in the MJCF body frame
    rot: np.ndarray  # (3, 3) in the MJCF body frame
    density: float
    mass: float | None
    friction: float
    contype: int
    conaffinity: int
    condim: int
    rgba: list[float] | None
    margin: float = 0.0  # MuJoCo's contact margin (m): a pair acts within the sum of its geoms' margins
    mesh: str | None = None
    points: np.ndarray | None = None  # mesh vertices (scaled), mesh frame
    faces: np.ndarray | None = None  # mesh triangles (indices into points; None: the hull's)
    mesh_inertia: str = "legacy"  # the mesh's ``inertia`` (MuJoCo's mass rule for it)
    group: int = 0  # its mass counts where compiler inertiagrouprange holds the group


@dataclass
class _Joint:
    name: str
    line: int | None
    file: str
    type: str
    pos: np.ndarray
    axis: np.ndarray
    ref: float
    springref: float
    stiffness: float
    damping: float
    armature: float
    frictionloss: float
    limited: bool
    range: tuple[float, float]


@dataclass
class _Body:
    name: str
    line: int | None
    file: str
    parent: int  # -1: the world
    pos: np.ndarray  # frame relative to the parent's frame, at qpos0
    rot: np.ndarray
    joints: list[_Joint] = field(default_factory=list)
    geoms: list[_Geom] = field(default_factory=list)
    inertial: tuple[float, np.ndarray, np.ndarray] | None = None  # mass, com, (3,3) inertia in body frame
    # computed
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    world_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    world_rot: np.ndarray = field(default_factory=lambda: np.eye(3))
    host: int = -2  # the scene body carrying it (itself, or the one it merged into); -1 world
    host_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))  # its frame in the host's MJCF frame
    host_rot: np.ndarray = field(default_factory=lambda: np.eye(3))
