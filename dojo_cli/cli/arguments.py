"""The scene argument and ``--set`` option several commands take, and loading a scene from them."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

# The command line as given (["dojo", "simulate", ...]), set by cli.app's group when it
# parses one (the click context does not keep the raw words); None outside the command line.
_given: list[str] | None = None


def set_command_line(words: list[str]) -> None:
    """Record the command line being run (cli.app's group, before parsing it)."""
    global _given
    _given = [str(w) for w in words]

SceneArg = Annotated[str, typer.Argument(help="Scene YAML file, or the name of a built-in scene (see `dojo scenes`).")]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="Override a scene field: PATH=VALUE (e.g. bodies.0.mass=2, joints.hinge.spring=3). Repeatable."),
]


ConfigOpt = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--config", "-c",
        help="Preset YAML merged into the scene before --set (scene < config < --set; e.g. configs/solver/accurate.yaml). Repeatable.",
        readable=False,  # the loader reports a missing preset as file: problem (exit 2)
    ),
]


def load_scene_arguments(scene: str, overrides: list[str] | None, configs: list[Path] | None = None):
    """The validated spec and the built mechanism of a SceneArg with its --config presets and
    --set overrides (in that order)."""
    return load_scene_spec_and_mechanism(scene, scene_overrides(overrides, configs))


def load_scene_spec_and_mechanism(scene: str, items: list):
    """The validated spec and the built mechanism of a scene with overrides (``scene_overrides``)."""
    # here, not at the top: the commands that take no scene do not import pydantic and the physics
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import load_scene_spec

    spec = load_scene_spec(scene, items)
    return spec, build_mechanism(spec)


def scene_overrides(overrides: list[str] | None, configs: list[Path] | None = None) -> list:
    """The presets' overrides (scene.presets.Override, with file and line), then --set's, in order."""
    from dojo_cli.scene.overrides import override_items
    from dojo_cli.scene.presets import read_preset

    items = [item for config in configs or [] for item in read_preset(config)]
    return items + override_items(overrides or [])


def command_line() -> str:
    """The command as given (``dojo simulate box --set ...``), shell-quoted: what a run records."""
    words = _given if _given is not None else ["dojo", *sys.argv[1:]]
    return shlex.join(words)


# Where runs go without -o (FORMATS.md: never overwriting), relative to the current directory.
OUTPUTS_FOLDER = Path("outputs")
# Most numbered names tried for a free default output (outputs/box-2.h5, ...).
_MAX_NUMBERED = 100_000


def default_output(scene: str, suffix: str = ".h5", overwrite: bool = False) -> Path:
    """The output of a run without -o: ``outputs/<stem>.h5``, or (unless ``overwrite``, --force)
    the first free ``outputs/<stem>-2.h5``, ``-3``, ... (the scene file's stem, a built-in's name)."""
    stem = Path(scene).stem if Path(scene).suffix in (".yaml", ".yml") else Path(scene).name
    stem = stem or "run"
    first = OUTPUTS_FOLDER / f"{stem}{suffix}"
    if overwrite or not first.exists():
        return first
    for n in range(2, _MAX_NUMBERED):
        candidate = OUTPUTS_FOLDER / f"{stem}-{n}{suffix}"
        if not candidate.exists():
            return candidate
    return first  # (then refused as existing, like -o)


def make_parent_folder(path: Path) -> None:
    """Create the folder a file goes in (and its parents).

    Raises:
        StorageError: it cannot be created (exit code 3).
    """
    from dojo_cli.errors import StorageError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{path}: cannot create the folder {path.parent}: {exc.strerror or exc}") from None
