"""`dojo import-mjcf`: a MuJoCo MJCF model as an editable scene file."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli.shared import check_import_target, reports_errors, write_imported_scene
from dojo_cli.scene.mjcf import MjcfOptions, read_mjcf


class ContactMode(str, Enum):
    file = "file"
    none = "none"


@reports_errors
def import_mjcf(
    model: Annotated[Path, typer.Argument(help="The MJCF (MuJoCo XML) model file.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Scene YAML file to write.")],
    keyframe: Annotated[Optional[str], typer.Option("--keyframe", help="Start from this <key> (qpos, qvel, ctrl); default: qpos0 at rest.")] = None,
    drop_unsupported: Annotated[bool, typer.Option("--drop-unsupported", help="Import without what cannot be mapped (tendons, fluid forces, ...): one warning per kind; else refused.")] = False,
    contacts: Annotated[ContactMode, typer.Option("--contacts", help="file: the geom pairs MuJoCo's contype/conaffinity filter lets collide; none.")] = ContactMode.file,
    merge_fixed: Annotated[bool, typer.Option("--merge-fixed", help="Merge bodies without joints into their parents (parallel-axis rule).")] = False,
    split_joints: Annotated[bool, typer.Option("--split-joints", "--split-hinges", help="A body whose joints no Dojo joint is (hinges about different anchors, axes not orthogonal or with armature; slides and hinges in another order): a chain of Dojo joints through light link bodies (else refused). --split-hinges is its old name.")] = False,
    no_meshes: Annotated[bool, typer.Option("--no-meshes", help="Leave mesh geoms out of the drawing.")] = False,
    name: Annotated[Optional[str], typer.Option("--name", help="Scene name (default: the model's).")] = None,
    timestep: Annotated[Optional[float], typer.Option("--timestep", help="Timestep of the scene (s); default: the model's <option timestep>.")] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite the output file.")] = False,
) -> None:
    """Import a MuJoCo MJCF model as an editable scene: bodies, joints, contacts, actuators, keyframes."""
    check_import_target(output, force, timestep)
    options = MjcfOptions(keyframe=keyframe, drop_unsupported=drop_unsupported, contacts=contacts.value,
                          merge_fixed=merge_fixed, meshes=not no_meshes, split_joints=split_joints)
    result = read_mjcf(model, options, str(model))
    flags = " ".join(f for f, on in ((f"--keyframe {keyframe}", keyframe is not None), ("--drop-unsupported", drop_unsupported),
                                      ("--merge-fixed", merge_fixed), ("--split-joints", split_joints),
                                      ("--no-meshes", no_meshes)) if on)
    header = (
        f"imported from {model} by dojo import-mjcf {flags} --contacts {contacts.value}\n"
        "# Bodies sit at their centres of mass, oriented as the MJCF bodies; joint coordinates are zero at the\n"
        "# file's placement (qpos0). See docs/mjcf.md.\n"
    )
    mech = write_imported_scene(result, model, output, name=name, timestep=timestep, header=header)
    scene = result.scene
    total = sum(b.mass for b in mech.bodies)
    typer.echo(f"wrote {output}: {mech.nb} bodies, {mech.nj} joints, {mech.nc} contacts, {mech.nu} inputs, "
               f"total mass {total:.6g} kg, timestep {scene['timestep']:g} s"
               + (", integrator rk4 (rotor inertia)" if scene.get("integrator") == "rk4" else ""))
    if result.merged:
        typer.echo(f"  merged bodies ({len(result.merged)}): "
                   + ", ".join(f"{b} -> {h}" for b, h in result.merged.items()))
    for note in result.notes:
        typer.echo(f"  note: {note}")
