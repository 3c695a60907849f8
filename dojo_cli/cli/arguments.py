"""The scene argument and ``--set`` option several commands take, and loading a scene from them."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

SceneArg = Annotated[str, typer.Argument(help="Scene YAML file, or the name of a built-in scene (see `dojo scenes`).")]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="Override a scene field: PATH=VALUE (e.g. bodies.0.mass=2, joints.hinge.spring=3). Repeatable."),
]


def load_scene_arguments(scene: str, overrides: list[str] | None):
    """The validated spec and the built mechanism of a SceneArg with its --set overrides."""
    # here, not at the top: the commands that take no scene do not import pydantic and the physics
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import load_scene_spec

    spec = load_scene_spec(scene, overrides or [])
    return spec, build_mechanism(spec)
