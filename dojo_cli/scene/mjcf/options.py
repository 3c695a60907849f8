"""How an MJCF model becomes a scene (``MjcfOptions``: ``dojo import-mjcf``'s flags), where
each MJCF joint's qpos and qvel go (``CoordinateMap``) and what the import gives back
(``MjcfImport``: the scene data, warnings, notes, merged bodies, contact geoms).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


DEFAULT_TIMESTEP = 0.002
"""MuJoCo's default ``<option timestep>`` (s)."""
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
DEFAULT_DENSITY = 1000.0
"""MuJoCo's default geom density (kg/m^3, water)."""
DEFAULT_FRICTION = 1.0
"""MuJoCo's default sliding friction of a geom."""
CONTACT_MODES = ("file", "none")


@dataclass
class MjcfOptions:
    """How an MJCF model becomes a scene.

    Attributes:
        keyframe: the ``<key>`` whose qpos, qvel and ctrl start the scene (None: qpos0 at rest).
        drop_unsupported: import without what cannot be mapped (one warning per kind)
            instead of refusing the file.
        contacts: "file" (MuJoCo's collision filter on the file's geoms) or "none".
        merge_fixed: merge bodies without joints into their parents (those without mass and
            inertia always: ``bodies._place``).
        meshes: keep mesh geoms as drawn meshes.
        split_joints: a body whose joints no Dojo joint is (hinges about different anchors
            or axes not orthogonal, hinges with armature, which universal and gimbal joints
            do not carry, slides and hinges in another order or about other axes than a Dojo
            joint's) becomes a chain of Dojo joints through light link bodies
            (LINK_MASS_FRACTION of the body's mass each), one per MJCF joint or per run of
            them a Dojo joint is exactly; else refused.
        split_hinges: the old name of split_joints (from when only hinges were split), still
            read: either turns it on, and both read the same after construction.
    """

    keyframe: str | None = None
    drop_unsupported: bool = False
    contacts: str = "file"
    merge_fixed: bool = False
    meshes: bool = True
    split_joints: bool = False
    split_hinges: bool = False

    def __post_init__(self) -> None:
        self.split_joints = self.split_hinges = bool(self.split_joints or self.split_hinges)


@dataclass
class CoordinateMap:
    """Where an MJCF joint's qpos and qvel go in the scene (for keyframes and comparisons).

    Attributes:
        joint: the MJCF joint's name; kind: its type.
        dojo_joint: the scene joint holding it; ref: its qpos0 (hinge, slide).
        coordinate: the Dojo coordinate index (hinge, slide) and sign, the minimal
            coordinate being ``sign * (qpos - ref)``.
        qpos_adr, dof_adr: its place in MuJoCo's qpos and qvel.
    """

    joint: str
    kind: str
    dojo_joint: str
    ref: float = 0.0
    coordinate: int = 0
    sign: float = 1.0
    qpos_adr: int = 0
    dof_adr: int = 0
    frame: np.ndarray | None = None  # (3, 3) ball/free: rotation of the Dojo joint frame in the body frame


@dataclass
class MjcfImport:
    """An MJCF model read into scene data.

    Attributes:
        scene: plain scene data (what a YAML file would hold), not yet validated.
        warnings: one line each.
        notes: what was done that the user should know (merged bodies, ctrlrange).
        coordinates: one CoordinateMap per MJCF joint, in MuJoCo's order.
        merged: MJCF bodies merged into their parents (name -> the scene body holding it).
        target_ranges: position and velocity actuators' ``ctrlrange`` (name -> (lower,
            upper)): their ctrl is the PD target, clamped at import (keyframes included).
        contact_geoms: the MJCF geom pair of each contact (name -> (its geom, the other geom:
            a world plane or the other body's geom)); unnamed geoms as ``<body>_geom<k>``,
            unnamed world planes as ``world_geom<k>``.
    """

    scene: dict
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coordinates: list[CoordinateMap] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    target_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    contact_geoms: dict[str, tuple[str, str]] = field(default_factory=dict)
