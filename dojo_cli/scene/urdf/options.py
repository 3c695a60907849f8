"""How a URDF becomes a scene (``UrdfOptions``: ``dojo import-urdf``'s flags, a scene's
``import:`` mapping) and what the import gives back (``UrdfImport``: the scene data, its
warnings and notes, which link is in which body).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError


URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
"""Joint types of the URDF specification (all are read)."""
BULLET_JOINT_TYPES = ("spherical",)
"""Joint types Bullet's URDF reader adds (pybullet_data's humanoids): a ball joint, Dojo's spherical."""
CONTACT_MODES = ("feet", "collision", "none")
GEOMETRY_MODES = ("visual", "collision")
DEFAULT_TIMESTEP = 0.01
"""Timestep of an imported scene (s), Dojo's default for its robots."""
DEFAULT_FRICTION = 0.5
"""Friction coefficient of imported contacts unless told (the scene format's default)."""
FLOATING_JOINT = "floating_base"
"""Name of the joint --floating adds (Dojo's name)."""
FIXED_BASE_JOINT = "fixed_base"
"""Name of the joint holding a fixed-base robot's root link to the world."""


@dataclass
class UrdfOptions:
    """How a URDF becomes a scene.

    Attributes:
        floating: attach the root body to the world by a floating joint (else fixed).
        contacts: "feet" (spheres at the ends of the legs), "collision" (every collision
            element as its shape against the ground) or "none".
        self_collision: with contacts "collision", the links' collision shapes also
            against each other (bodies not joined parent-child; sphere, capsule, box, cylinder against sphere and capsule).
        friction: Coulomb coefficient of those contacts.
        contact_model: impact, linear or nonlinear.
        merge_fixed: merge links joined by fixed joints into one body (massless
            links are merged whatever this says: they cannot be bodies).
        package_path: directories searched for ``package://`` names, first.
        meshes: keep visual meshes (False: draw primitives and frames only).
        geometry: draw the "visual" elements, or the "collision" ones.
        inertia_from_geometry: every link's inertia computed from its collision shapes
            (uniform density, the file's mass and centre of mass); without it, only the
            links whose file inertia is not positive definite (a note names each).
        floating_base: float the robot at this link's body (set_floating_base: the joints
            on the way from the URDF's root are reversed); implies ``floating``.
    """

    floating: bool = False
    contacts: str = "none"
    self_collision: bool = False
    friction: float = DEFAULT_FRICTION
    contact_model: str = "nonlinear"
    merge_fixed: bool = False
    package_path: list[str] = field(default_factory=list)
    meshes: bool = True
    geometry: str = "visual"
    inertia_from_geometry: bool = False
    floating_base: str | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], base_dir: Path | None, file: str, lines: Mapping[str, int], key: str) -> UrdfOptions:
        """Options from a scene's ``import:`` mapping (paths relative to ``base_dir``).

        Raises:
            SceneError: an unknown key or a bad value, at its line.
        """
        problems = []
        known = set(cls.__dataclass_fields__)
        options = cls()
        for name, value in (data or {}).items():
            path = f"{key}.{name}"
            line = lines.get(path, lines.get(key))
            if name not in known:
                problems.append(Problem(file, line, path, f"unknown import option (one of: {', '.join(sorted(known))})"))
                continue
            default = getattr(options, name)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    problems.append(Problem(file, line, path, f"must be true or false, got {value!r}"))
                    continue
            elif isinstance(default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                    problems.append(Problem(file, line, path, f"must be a number >= 0, got {value!r}"))
                    continue
                value = float(value)
            elif name == "floating_base":
                if not isinstance(value, str) or not value:
                    problems.append(Problem(file, line, path, f"must be a link's name, got {value!r}"))
                    continue
            elif isinstance(default, list):
                value = [value] if isinstance(value, str) else value
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    problems.append(Problem(file, line, path, f"must be a folder or a list of folders, got {value!r}"))
                    continue
                value = [str((base_dir or Path.cwd()) / Path(v).expanduser()) for v in value]
            setattr(options, name, value)
        problems += [
            Problem(file, lines.get(f"{key}.{name}", lines.get(key)), f"{key}.{name}", message)
            for name, message in options.problems()
        ]
        if problems:
            raise SceneError(problems)
        return options

    def problems(self) -> list[tuple[str, str]]:
        """(option, message) for each invalid choice."""
        out = []
        if self.contacts not in CONTACT_MODES:
            out.append(("contacts", f"must be one of {', '.join(CONTACT_MODES)}, got {self.contacts!r}"))
        elif self.self_collision and self.contacts != "collision":
            out.append(("self_collision", f"needs contacts: collision (the links' collision shapes), got contacts {self.contacts!r}"))
        if self.geometry not in GEOMETRY_MODES:
            out.append(("geometry", f"must be one of {', '.join(GEOMETRY_MODES)}, got {self.geometry!r}"))
        if self.contact_model not in ("impact", "linear", "nonlinear"):
            out.append(("contact_model", f"must be impact, linear or nonlinear, got {self.contact_model!r}"))
        return out


@dataclass
class UrdfImport:
    """A URDF read into scene data.

    Attributes:
        scene: plain scene data (what a YAML file would hold), not yet validated.
        warnings: one line each (``file:line: element: message``).
        link_bodies: URDF link -> (body name, (4, 4) link pose in the body frame).
        merged: URDF fixed joints merged away.
        dropped: URDF links left out (massless leaves, a massless root).
        scene_joints: the scene's joints (as in ``scene``), root to leaves.
        moved_into_range: scene joint -> its coordinates the import started inside their
            ranges ("name value"; _start_inside_limits), so that a pose set later (``dojo
            import-urdf --stand``'s SRDF pose) can revise the note that lists them.
    """

    scene: dict
    warnings: list[str] = field(default_factory=list)
    scene_joints: list[dict] = field(default_factory=list)
    moved_into_range: dict[str, list[str]] = field(default_factory=dict)
    link_bodies: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)
    merged: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
