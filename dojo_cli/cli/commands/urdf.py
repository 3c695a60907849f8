"""`dojo import-urdf`: a URDF robot description as an editable scene file."""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli.shared import check_import_target, reports_errors, write_imported_scene
from dojo_cli.errors import InputError
from dojo_cli.scene.urdf import DEFAULT_FRICTION, UrdfOptions, read_urdf


class ContactMode(str, Enum):
    feet = "feet"
    collision = "collision"
    none = "none"


class GeometryMode(str, Enum):
    visual = "visual"
    collision = "collision"


@reports_errors
def import_urdf(
    urdf: Annotated[Path, typer.Argument(help="The robot's URDF file, or a package:// name (package://example-robot-data/robots/go1_description/urdf/go1.urdf), found as the URDF's own package:// meshes are.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Scene YAML file to write.")],
    floating: Annotated[bool, typer.Option("--floating", help="Free-floating base (a floating joint to the world); else the root is fixed.")] = False,
    contacts: Annotated[ContactMode, typer.Option("--contacts", help="feet: spheres at the ends of the legs; collision: every collision element as its shape against the ground; none.")] = ContactMode.none,
    self_collision: Annotated[bool, typer.Option("--self-collision", help="With --contacts collision: the links' collision shapes also against each other (bodies not joined parent-child).")] = False,
    friction: Annotated[float, typer.Option("--friction", min=0.0, help="Friction coefficient of the contacts.")] = DEFAULT_FRICTION,
    floating_base: Annotated[Optional[str], typer.Option("--floating-base", metavar="LINK", help="Float the robot at this link's body: the joints on the way from the URDF's root are reversed (implies --floating).")] = None,
    merge_fixed: Annotated[bool, typer.Option("--merge-fixed", help="Merge links joined by fixed joints into one body (parallel-axis rule).")] = False,
    package_path: Annotated[Optional[list[Path]], typer.Option("--package-path", help="Folder holding ROS packages, for package:// names. Repeatable.")] = None,
    inertia_from_geometry: Annotated[bool, typer.Option("--inertia-from-geometry", help="Every link's inertia from its collision shapes (uniform density, the file's mass); without it only where the file's inertia is not positive definite.")] = False,
    no_meshes: Annotated[bool, typer.Option("--no-meshes", help="Leave visual meshes out (primitives and frames only).")] = False,
    geometry: Annotated[GeometryMode, typer.Option("--geometry", help="Draw the visual elements or the collision ones.")] = GeometryMode.visual,
    stand: Annotated[bool, typer.Option("--stand", help="A legged robot standing under a PD controller for 5 s: the SRDF's standing pose (else the import's), feet on the ground, gains from the link inertias; a robot whose support does not hold its centre of mass (two point feet) leaned onto its feet and balanced by an LQR (implies --floating).")] = False,
    srdf: Annotated[Optional[Path], typer.Option("--srdf", help="With --stand: the SRDF whose group state is the standing pose (default: ../srdf/STEM.srdf or STEM.srdf beside the URDF).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="Scene name (default: the robot's).")] = None,
    timestep: Annotated[Optional[float], typer.Option("--timestep", help="Timestep of the scene (s).")] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite the output file.")] = False,
) -> None:
    """Import a URDF as an editable scene: bodies at their centres of mass, joints with limits and dampers, contacts."""
    if self_collision and contacts != ContactMode.collision:
        raise InputError(f"--self-collision: needs --contacts collision (the links' collision shapes), got --contacts {contacts.value}")
    if stand and contacts == ContactMode.none:
        raise InputError("--stand: needs contacts with the ground (--contacts feet or collision)")
    if srdf is not None and not stand:
        raise InputError("--srdf: only with --stand (the SRDF's group state is the standing pose)")
    check_import_target(output, force, timestep)
    shown = _as_written(str(urdf))  # warnings name the file as the user wrote it, not its site-packages path
    urdf = _package_file(shown, package_path)
    options = UrdfOptions(
        floating=floating or floating_base is not None or stand, floating_base=floating_base, contacts=contacts.value, self_collision=self_collision, friction=friction, merge_fixed=merge_fixed,
        package_path=[str(p) for p in package_path or []], meshes=not no_meshes, geometry=geometry.value,
        inertia_from_geometry=inertia_from_geometry,
    )
    report = None
    if stand:
        from dojo_cli.optimize.balance import stand_import_balanced

        if srdf is not None and not srdf.is_file():
            raise InputError(f"--srdf: {srdf}: no such file")
        result, report = stand_import_balanced(urdf, options, shown, srdf=srdf, timestep=timestep)
    else:
        result = read_urdf(urdf, options, shown)
    flags = " ".join(f for f, on in (("--floating", floating), ("--stand", stand), ("--merge-fixed", merge_fixed), ("--no-meshes", no_meshes),
                                         ("--self-collision", self_collision),
                                         ("--inertia-from-geometry", inertia_from_geometry)) if on)
    header = (
        f"imported from {shown} by dojo import-urdf {flags} --contacts {contacts.value}\n"
        "# Bodies sit at their links' centres of mass (body frames oriented as the links); edit freely,\n"
        "# or keep the URDF and write a scene with `urdf:` and overrides (docs/urdf.md).\n"
    )
    mech = write_imported_scene(result, urdf, output, name=name, timestep=timestep, header=header)
    scene = result.scene
    total = sum(b.mass for b in mech.bodies)
    typer.echo(f"wrote {output}: {mech.nb} bodies, {mech.nj} joints, {mech.nc} contacts, {mech.nu} inputs, total mass {total:.6g} kg")
    if report is not None:
        margin = "no area (point or line feet)" if report.com_margin is None else f"{report.com_margin * 1e3:.0f} mm"
        typer.echo(f"  stand: {report.legs}")
        typer.echo(f"  stand: pose from {report.pose_source}; feet {', '.join(report.feet)}; base at {report.base_height:.4g} m; "
                   f"centre of mass inside the support polygon by {margin}")
        if report.balance:
            typer.echo("  stand: a linear (LQR) balance controller (the support does not hold the centre of mass: notes below); "
                       f"joint dampers 2 I omega (I the inertia the joint holds up, omega h = {_stand_omega_h()})")
        else:
            typer.echo("  stand: PD gains kp = I omega^2, damper = 2 I omega (critically damped; I the inertia the joint holds "
                       f"up, omega h = {_stand_omega_h()}): kp from {min(report.kp.values()):.3g} to {max(report.kp.values()):.3g}")
        for note in report.notes:
            typer.echo(f"  stand: {note}")
    if result.merged:
        typer.echo(f"  merged fixed joints ({len(result.merged)}): {', '.join(result.merged)}")
    if result.dropped:
        typer.echo(f"  dropped links ({len(result.dropped)}): {', '.join(result.dropped)}")
    limited = [j for j in scene["joints"] if "effort_limit" in j or "velocity_limit" in j or "limits" in j]
    if limited:
        typer.echo("  joint limits (position: enforced; effort, velocity: recorded, not enforced):")
        for j in limited:
            # a universal or gimbal joint has one of each per axis (human.urdf's hips)
            position = ("none" if "limits" not in j else ", ".join(
                f"[{lo:g}, {hi:g}]" for lo, hi in zip(j["limits"]["lower"], j["limits"]["upper"])))
            typer.echo(
                f"    {j['name']:<24} position {position:<22} effort {_per_axis(j.get('effort_limit', math.inf))}  "
                f"velocity {_per_axis(j.get('velocity_limit', math.inf))}"
            )


def _per_axis(value) -> str:
    """A joint's limit, one number or one per axis."""
    return ", ".join(f"{v:g}" for v in value) if isinstance(value, list) else f"{value:g}"


def _as_written(name: str) -> str:
    """The argument as the user wrote it: typer hands it over as a Path, which folds
    ``package://`` into ``package:/``; both spellings are read as ``package://``."""
    from dojo_cli.scene.robots import PACKAGE_SCHEME

    if name.startswith("package:/") and not name.startswith(PACKAGE_SCHEME):
        return PACKAGE_SCHEME + name[len("package:/"):]
    return name


def _package_file(name: str, package_path: list[Path] | None) -> Path:
    """The URDF a ``package://`` name names (``_as_written``), else the path itself."""
    from dojo_cli.scene.robots import PACKAGE_SCHEME, UnresolvedPackage, package_search_path, resolve_resource

    name = _as_written(name)
    if not name.startswith(PACKAGE_SCHEME):
        return Path(name)
    try:
        return resolve_resource(name, Path.cwd(), package_search_path(package_path))
    except UnresolvedPackage as exc:
        raise InputError(f"{name}: {exc.hint()}") from None


def _stand_omega_h() -> float:
    from dojo_cli.scene.stand import STAND_OMEGA_H

    return STAND_OMEGA_H
