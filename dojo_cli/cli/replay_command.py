"""`dojo replay`: a stored run in meshcat (served on loopback) or as a standalone HTML page."""

from __future__ import annotations

import time as _time
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli.app import _err, _reports_errors, app
from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.storage import read_storage
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec_from_string


def _camera(text: str | None):
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 3:
        raise InputError(f"--camera: expected x,y,z (three numbers), got {text!r}")
    return values


@app.command()
@_reports_errors
def replay(
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.")],
    html: Annotated[Optional[Path], typer.Option("--html", help="Write a standalone HTML animation instead of serving.")] = None,
    fps: Annotated[float, typer.Option("--fps", help="Frames per second of playback (frames are subsampled from the steps).")] = 60.0,
    speed: Annotated[float, typer.Option("--speed", help="Playback speed (2 = twice real time).")] = 1.0,
    contacts: Annotated[bool, typer.Option("--contacts", help="Show contact spheres.")] = False,
    joints: Annotated[bool, typer.Option("--joints", help="Show joint markers.")] = False,
    frames: Annotated[bool, typer.Option("--frames", help="Show body frames (triads).")] = False,
    camera: Annotated[Optional[str], typer.Option("--camera", help="Camera position x,y,z (world frame, m).")] = None,
    zoom: Annotated[Optional[float], typer.Option("--zoom", help="Camera zoom (1 = default).")] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the viewer in a browser.")] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", hidden=True, help="Serve, load, print the URL, stop (tests).")] = False,
) -> None:
    """Replay a run: meshcat in the browser (until Ctrl-C), or --html for a standalone page."""
    from dojo_cli.viz.meshcat_scene import decode_commands, replay_commands, standalone_html

    if not fps > 0 or not speed > 0:
        raise InputError("--fps and --speed: must be > 0")
    position = _camera(camera)
    stored = read_storage(run)
    spec = load_scene_spec_from_string(stored.scene_yaml, file=f"{run}:scene")
    mech = build_mechanism(spec)
    if stored.status != "complete":
        _err(f"note: {run}: the run was {stored.status} after {stored.steps_completed} steps; replaying what it holds")
    if stored.steps_completed < 1:
        raise InputError(f"{run}: the run holds no completed step")
    kwargs = dict(fps=fps, speed=speed, contacts=contacts, joints=joints, frames=frames, camera=position, zoom=zoom)
    if html is not None:
        vis, scene, idx = replay_commands(mech, stored.time, stored.x, stored.q, **kwargs)
        info = {"scene": spec.name, "frames": int(len(idx)), "fps": fps, "speed": speed, "status": stored.status}
        page = standalone_html(vis.window.commands, info)
        try:
            html.write_text(page, encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"{html}: cannot write ({exc.strerror or exc})") from None
        for missing in scene.missing_meshes:
            _err(f"warning: mesh {missing!r} not found or not .obj/.stl/.dae; drawn as a small box")
        typer.echo(f"wrote {html}: {len(idx)} frames at {fps:g} fps ({len(decode_commands(page))} meshcat commands)")
        return

    import meshcat  # starts meshcat's server on 127.0.0.1

    vis = meshcat.Visualizer()
    _, scene, idx = replay_commands(mech, stored.time, stored.x, stored.q, vis=vis, **kwargs)
    typer.echo(f"meshcat: {vis.url()}  ({len(idx)} frames at {fps:g} fps; Ctrl-C to stop)")
    if open_browser:
        vis.open()
    if no_wait:  # load, print the URL, stop this command's own server (tests, scripts)
        proc = getattr(vis.window, "server_proc", None)
        if proc is not None:
            proc.kill()
            proc.wait(timeout=10)
        return
    try:
        while True:
            _time.sleep(1.0)
    except KeyboardInterrupt:
        typer.echo("stopped")



