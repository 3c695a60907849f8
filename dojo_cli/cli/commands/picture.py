"""`dojo draw` and `dojo plot` (listed in dojo_cli.cli.app.COMMANDS).

Thin: parse the flags, load the scene or the run, call ``dojo_cli.viz.pictures``. The
pictures module (and with it matplotlib) is imported inside the commands, after the
flags are checked, and the storage reader (h5py) only by ``plot``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from dojo_cli.cli.shared import SceneArg, SetOpt, echo_err, load_scene_arguments, read_run, reports_errors
from dojo_cli.errors import InputError

# The flags' own defaults, kept here so --help can show them without importing matplotlib;
# dojo_cli.viz.pictures holds the same numbers (DEFAULT_SCENE_SIZE, DEFAULT_VIEW).
_SCENE_SIZE_TEXT = "800,600"
_VIEW_TEXT = "20,-60"
QUANTITY_NAMES = ("position", "minimal", "velocity", "inputs", "iterations", "residual", "distance")


def _pair(flag: str, text: str, kind, example: str) -> tuple:
    """``"A,B"`` as two numbers of ``kind`` (int or float), or InputError naming the flag."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        a, b = (kind(p) for p in parts)
    except ValueError:
        raise InputError(f"{flag}: expected two numbers separated by a comma (e.g. {example}), got {text!r}") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise InputError(f"{flag}: values must be finite, got {text!r}")
    return a, b


def _size(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    from dojo_cli.viz.pictures import MAX_PIXELS, MIN_PIXELS

    w, h = _pair("--size", text, int, "800,600")
    if not (MIN_PIXELS <= w <= MAX_PIXELS and MIN_PIXELS <= h <= MAX_PIXELS):
        raise InputError(f"--size: width and height must be {MIN_PIXELS}..{MAX_PIXELS} pixels, got {text!r}")
    return w, h


SizeOpt = Annotated[str | None, typer.Option("--size", help="Picture size W,H in pixels (default: 900 wide, 240 high per quantity, at least 400).")]


# ------------------------------------------------------------------------- draw
@reports_errors
def draw(
    scene: SceneArg,
    png: Annotated[Path | None, typer.Option("--png", help="PNG file to write (default: <scene name>.png).")] = None,
    overrides: SetOpt = None,
    view: Annotated[str, typer.Option("--view", help="Camera elevation,azimuth in degrees.")] = _VIEW_TEXT,
    size: Annotated[str, typer.Option("--size", help="Picture size W,H in pixels.")] = _SCENE_SIZE_TEXT,
    labels: Annotated[bool, typer.Option("--labels", help="Write body and joint names.")] = False,
) -> None:
    """Draw a scene's initial configuration: bodies, joints, contacts, ground (a PNG)."""
    elev_azim = _pair("--view", view, float, "20,-60")
    pixels = _size(size)
    spec, mech = load_scene_arguments(scene, overrides)
    out = png if png is not None else Path(f"{spec.name}.png")
    from dojo_cli.viz.pictures import draw_scene

    pic = draw_scene(mech, out, view=elev_azim, size=pixels, labels=labels, title=f"{spec.name}: initial configuration")
    for warning in pic.warnings:
        echo_err(f"warning: {warning}")
    typer.echo(
        f"wrote {out}: {spec.name}, {_count(len(pic.bodies), 'body', 'bodies')}, {_count(len(pic.joints), 'joint')}, "
        f"{_count(len(pic.contacts), 'contact')} "
        f"({pic.size[0]}x{pic.size[1]} px)"
    )


# ------------------------------------------------------------------------- plot
@reports_errors
def plot(
    # readable=False: read_storage reports an unreadable file (exit 3), not click (exit 2, a usage box)
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.", readable=False)],
    png: Annotated[Path | None, typer.Option("--png", help="PNG file to write (default: the run's name with .png).")] = None,
    quantity: Annotated[
        list[str] | None,
        typer.Option("--quantity", "-q", help=f"What to plot (repeat for stacked subplots): {', '.join(QUANTITY_NAMES)}. "
                     "Default: minimal (position when the run has no joints)."),
    ] = None,
    body: Annotated[list[str] | None, typer.Option("--body", help="Body of `position` (repeatable; default: all).")] = None,
    coordinate: Annotated[
        list[str] | None,
        typer.Option("--coordinate", help="Coordinate (hinge:r0) or joint (hinge) of `minimal`, `velocity`, `inputs` "
                     "(repeatable; default: all)."),
    ] = None,
    size: SizeOpt = None,
    csv: Annotated[Path | None, typer.Option("--csv", help="Also write the plotted series as CSV.")] = None,
) -> None:
    """Plot quantities of a run against time (a PNG; --csv writes the numbers)."""
    pixels = _size(size)
    for q in quantity or []:
        if q not in QUANTITY_NAMES:
            raise InputError(f"--quantity: unknown quantity {q!r} (choose from {', '.join(QUANTITY_NAMES)})")

    stored = read_run(run, "plot")  # validated: consistent lengths, widths matching the names
    quantities = list(quantity) if quantity else ["minimal" if stored.trajectory.minimal_q.shape[-1] else "position"]
    out = png if png is not None else run.with_suffix(".png")
    if out.resolve() == run.resolve():
        raise InputError(f"--png: {out} is the run itself")
    note = stored.status_note()
    if note:
        echo_err(f"warning: {note}; plotting the stored steps")
    if len(stored.trajectory.time) == 0:
        raise InputError(f"{run}: the run holds no state to plot (its writer stopped before the initial state)")
    from dojo_cli.viz.pictures import plot_run

    result = plot_run(stored, quantities, out, bodies=body, coordinates=coordinate, size=pixels, csv_path=csv)
    also = f"; series in {csv}" if csv is not None else ""
    typer.echo(f"wrote {out}: {', '.join(result.quantities)} ({len(result.series)} series, "
               f"{stored.steps_completed} steps){also}")


def _count(n: int, one: str, many: str | None = None) -> str:
    """'1 body', '3 bodies'."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
