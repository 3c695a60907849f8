"""`dojo replay`: a stored run in meshcat (served on 127.0.0.1 only) or as a standalone HTML page."""

from __future__ import annotations

import time
import webbrowser
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli.shared import echo_err, read_run, reports_errors
from dojo_cli.cli.signals import ignore_stop_signals, signal_number
from dojo_cli.errors import InputError

# meshcat (zmq, tornado, IPython) is imported when replay runs, not by every dojo command.
DEFAULT_FPS = 60.0
# How often the serving loop wakes up to notice Ctrl-C (s).
_SERVE_POLL = 0.5


def _camera(text: str | None) -> tuple[float, float, float] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3:
        raise InputError(f"--camera: expected x,y,z (three numbers, world frame, m), got {text!r}")
    return values


def _color(text: str | None, flag: str = "--floor-color") -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) not in (3, 4):
        raise InputError(f"{flag}: expected r,g,b or r,g,b,a (numbers in 0..1), got {text!r}")
    return values


def _surface(expression: str | None, limits: str | None, color: str | None):
    """viz.scenery.Surface of --surface, --surface-limits, --surface-color (None without --surface)."""
    from dojo_cli.viz.scenery import SURFACE_COLOR, Surface

    if expression is None:
        if limits is not None or color is not None:
            raise InputError("--surface-limits, --surface-color: need --surface (the expression z = f(x, y))")
        return None
    lims = None
    if limits is not None:
        try:
            lims = tuple(float(v) for v in limits.split(","))
        except ValueError:
            lims = ()
        if len(lims) != 4:
            raise InputError(f"--surface-limits: expected x0,x1,y0,y1 (m), got {limits!r}")
    return Surface(expression, xlims=None if lims is None else lims[:2], ylims=None if lims is None else lims[2:],
                   color=_color(color, "--surface-color") or SURFACE_COLOR)


def _say_scales(result, options) -> None:
    """The arrows' scales (viz.arrows), so that a length can be read as a force or a speed."""
    from dojo_cli.viz.arrows import VELOCITY_ARROW_SECONDS, WEIGHT_ARROW_LENGTH

    if result.force_scale is not None:
        typer.echo(f"force arrows: {result.force_scale:.4g} m/N (the mechanism's weight draws {WEIGHT_ARROW_LENGTH:g} m)")
    if "velocities" in options.arrows:
        typer.echo(f"velocity arrows: {VELOCITY_ARROW_SECONDS:g} m per m/s")


@reports_errors
def replay(
    # readable=False: read_storage reports an unreadable file (exit 3), not click (exit 2, a usage box)
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.", readable=False)],
    html: Annotated[
        Optional[Path], typer.Option("--html", help="Write a standalone HTML animation (no server, no network) instead.")
    ] = None,
    fps: Annotated[
        float, typer.Option("--fps", help="Animation frames per second (frames sample the states every speed/fps s).")
    ] = DEFAULT_FPS,
    speed: Annotated[float, typer.Option("--speed", help="Playback speed (2 = twice real time).")] = 1.0,
    contacts: Annotated[bool, typer.Option("--contacts", help="Show contact spheres, other bodies' collision shapes.")] = False,
    joints: Annotated[bool, typer.Option("--joints", help="Show joint points on both sides of every joint.")] = False,
    frames: Annotated[bool, typer.Option("--frames", help="Show body frames (triads at the centres of mass).")] = False,
    arrows: Annotated[
        Optional[str], typer.Option("--arrows", help="Arrows to draw, comma-separated: forces (contact forces), velocities (bodies' linear velocities).")
    ] = None,
    floor_size: Annotated[
        Optional[float], typer.Option("--floor-size", help="Edge of the floor drawn on the scene's ground plane (m). Default: sized to the run.")
    ] = None,
    floor_color: Annotated[
        Optional[str], typer.Option("--floor-color", help="The floor's colour r,g,b or r,g,b,a (0..1). Default: grey, see-through when nothing touches it.")
    ] = None,
    camera: Annotated[
        Optional[str], typer.Option("--camera", help="Camera position x,y,z (world, m), looking at the origin. Default: framed.")
    ] = None,
    zoom: Annotated[Optional[float], typer.Option("--zoom", help="Camera zoom (1 = meshcat's default).")] = None,
    color: Annotated[
        Optional[str], typer.Option("--color", help="Every body's colour r,g,b or r,g,b,a (0..1), Dojo's visualize(color=). Default: each shape's own.")
    ] = None,
    name: Annotated[
        Optional[str], typer.Option("--name", help="The scene-tree node the replay hangs from (/meshcat/NAME/dojo/...), Dojo's visualize(name=).")
    ] = None,
    light: Annotated[
        Optional[str], typer.Option("--light", help="Lights as Dojo's set_light!: 'dojo' (its defaults) or key=value pairs of ambient, fill, point, direction (positive|negative), shadow.")
    ] = None,
    surface: Annotated[
        Optional[str], typer.Option("--surface", help="Draw the surface z = f(x, y), an expression in x and y such as '0.1*sin(x)*cos(y)', Dojo's set_surface!.")
    ] = None,
    surface_limits: Annotated[
        Optional[str], typer.Option("--surface-limits", help="The surface's domain x0,x1,y0,y1 (m). Default: the floor's.")
    ] = None,
    surface_color: Annotated[
        Optional[str], typer.Option("--surface-color", help="The surface's colour r,g,b or r,g,b,a (0..1).")
    ] = None,
    loop: Annotated[bool, typer.Option("--loop", help="Repeat the animation forever.")] = False,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the viewer (or the --html page) in a browser.")] = False,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", hidden=True, help="Serve, load, print the URL, then stop the server (tests, scripts).")
    ] = False,
) -> None:
    """Replay a run in meshcat in the browser (until Ctrl-C), or write it as a standalone HTML page (--html)."""
    from dojo_cli.viz.meshcat_scene import ReplayOptions, export_html, load_run, mechanism_from_run, status_note
    from dojo_cli.viz.meshcat_server import start_server

    from dojo_cli.viz.scenery import light_from_text

    kinds = tuple(a.strip() for a in arrows.split(",") if a.strip()) if arrows is not None else ()
    options = ReplayOptions(fps=fps, speed=speed, contacts=contacts, joints=joints, frames=frames,
                            camera=_camera(camera), zoom=zoom, loop=loop, arrows=kinds,
                            floor_size=floor_size, floor_color=_color(floor_color),
                            color=_color(color, "--color"), name=name,
                            light=None if light is None else light_from_text(light),
                            surface=_surface(surface, surface_limits, surface_color))
    options.check()
    stored = read_run(run, "replay")  # validated: consistent lengths, widths matching the names
    note = status_note(stored)  # killed, interrupted, failed: said before anything else
    if note:
        echo_err(f"note: {note}")
    mech = mechanism_from_run(stored)  # and checked against the run's own scene

    if html is not None:
        result = export_html(stored, html, mech=mech, options=options)
        for line in result.warnings:
            echo_err(line)
        _say_scales(result, options)
        typer.echo(f"wrote {html}: {result.frame_count} frames at {fps:g} fps, speed {speed:g} "
                   f"(t = 0 .. {stored.trajectory.time[-1]:g} s, {stored.status})")
        if open_browser:
            webbrowser.open(html.resolve().as_uri(), new=2)
        return

    # Ctrl-C is how a served replay ends: wherever it lands (starting the server, sending the
    # scene and the animation, serving) it says "stopped" and exits 128 + N, 130 for Ctrl-C,
    # as a stopped run does (one user action, one exit code; docs/replay.md).
    try:
        with start_server() as server:
            result = load_run(server.visualizer, mech, stored, options)
            for line in result.warnings:
                echo_err(line)
            _say_scales(result, options)
            typer.echo(f"meshcat: {server.web_url}  ({result.frame_count} frames at {fps:g} fps, speed {speed:g}; Ctrl-C to stop)")
            if open_browser:
                webbrowser.open(server.web_url, new=2)
            if no_wait:
                return
            while server.process.poll() is None:
                time.sleep(_SERVE_POLL)
            echo_err(f"the meshcat server stopped (exit code {server.process.returncode})")
    except KeyboardInterrupt as exc:
        ignore_stop_signals()  # a second Ctrl-C while the server stops changes nothing
        typer.echo("stopped")
        raise typer.Exit(128 + signal_number(exc)) from None
