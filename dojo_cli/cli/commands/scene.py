"""`dojo check` (validate a scene and describe it) and `dojo scenes` (the built-in scenes)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli.cli.shared import SceneArg, SetOpt, load_scene_arguments, reports_errors
from dojo_cli.errors import InputError, StorageError
from dojo_cli.model.mechanism import CONTACT_HALF_SIZE
from dojo_cli.scene.loader import builtin_scene_groups, builtin_scene_names, builtin_scene_path, builtin_scene_text


@reports_errors
def check(scene: SceneArg, overrides: SetOpt = None) -> None:
    """Validate a scene and print its bodies, joints, contacts and dimensions."""
    spec, mech = load_scene_arguments(scene, overrides)
    typer.echo(f"scene {spec.name!r}: valid")
    typer.echo(f"  timestep {mech.timestep:g} s, gravity {list(map(float, mech.gravity))}, steps {mech.default_steps}")
    typer.echo(f"bodies ({mech.nb}):")
    for b in mech.bodies:
        diag = np.diag(b.inertia)
        typer.echo(f"  {b.name:<16} {b.shape.kind:<9} mass {b.mass:g} kg, inertia diag [{diag[0]:.4g}, {diag[1]:.4g}, {diag[2]:.4g}]")
    typer.echo(f"joints ({mech.nj}):")
    for i, j in enumerate(mech.joints):
        parent = "origin" if j.parent < 0 else mech.bodies[j.parent].name
        loop = " (closes a loop)" if i in mech.loop_joints else ""
        ft, fr = j.free
        limits = ""
        if j.limits is not None:
            limits = f", limits {list(map(float, j.limits[0]))} .. {list(map(float, j.limits[1]))}"
        typer.echo(
            f"  {j.name:<16} {j.type:<18} {parent} -> {mech.bodies[j.child].name}: "
            f"{ft} translational + {fr} rotational free{loop}{limits}{', locked' if j.locked else ''}"
        )
    typer.echo(f"contacts ({mech.nc}):")
    for c in mech.contacts:
        other = "a half-space" if c.other < 0 else f"the {c.kind} of body {mech.bodies[c.other].name!r}"
        typer.echo(
            f"  {c.name:<16} {c.model:<9} on {mech.bodies[c.body].name} against {other}, "
            f"friction {c.friction:g}, radius {c.radius:g}" + (f", restitution {c.restitution:g}" if c.restitution else "")
        )
    typer.echo("dimensions:")
    typer.echo(f"  maximal state {mech.maximal_dimension()} (13 per body), minimal state {mech.minimal_dimension()}")
    if mech.has_actuators:
        typer.echo(f"  inputs {mech.nu}: actuators {', '.join(mech.input_names())}, constraint rows {mech.nl}")
    else:
        typer.echo(f"  inputs {mech.input_dimension} per joint {mech.input_dimensions()}, constraint rows {mech.nl}")
    typer.echo(f"  joint-limit bounds {mech.nlim}, frictional joint coordinates {mech.core.nfr}, "
               f"contact unknowns {2 * sum(step_half_sizes(mech))}")
    typer.echo(f"  controller {spec.controller.type if spec.controller else 'none'}")


@reports_errors
def scenes(
    show: Annotated[Optional[str], typer.Option("--show", help="Print a built-in scene's YAML.")] = None,
    copy: Annotated[Optional[tuple[str, Path]], typer.Option("--copy", help="Copy a built-in scene into a folder: --copy NAME DIR.")] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite when copying.")] = False,
) -> None:
    """List the built-in scenes, print one (--show) or copy one (--copy NAME DIR)."""
    # grouped as the library's folders are (scenes/basics, scenes/contact, ...); a scene's
    # name is its file's stem, whatever its group
    names = builtin_scene_names()
    if show is not None:
        _known(show, names)
        typer.echo(builtin_scene_text(show), nl=False)
        return
    if copy and copy[0] is not None:
        name, folder = copy
        _known(name, names)
        if not folder.is_dir():
            raise StorageError(f"{folder}: not a folder")
        target = folder / f"{name}.yaml"
        if target.exists() and not force:
            raise StorageError(f"{target}: already exists (use --force to overwrite)")
        try:
            shutil.copyfile(builtin_scene_path(name), target)
        except OSError as exc:
            raise StorageError(f"{target}: cannot write ({exc.strerror or exc})") from None
        typer.echo(f"copied {name} to {target}")
        return
    for group, members in builtin_scene_groups().items():
        typer.echo(f"{group}:")
        for name in members:
            typer.echo(f"  {name:<24} {_first_comment(builtin_scene_text(name))}")


def step_half_sizes(mech) -> list[int]:
    """Slack (and impulse) unknowns per contact."""
    return [CONTACT_HALF_SIZE[c.model] for c in mech.contacts]


def _known(name: str, names: list[str]) -> None:
    if name not in names:
        raise InputError(f"no built-in scene {name!r} (built-in: {', '.join(names)})")


def _first_comment(text: str) -> str:
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            s = s.lstrip("#").strip()
            if s:
                return s
    return ""
