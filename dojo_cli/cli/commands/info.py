"""`dojo info RUN.h5`: what a run is (status, steps, failed steps, wall time, overrides, final
state), as text or JSON; `--get EXPR` prints one number, for shell scripts.

The expressions are dojo_cli.sweep.metrics's, the same as a sweep's metrics.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dojo_cli.cli.shared import echo_err, printable, read_run, reports_errors


@reports_errors
def info(
    # readable=False: read_storage reports an unreadable file (exit 3), not click (exit 2, a usage box)
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate` or `dojo sweep`.", readable=False)],
    get: Annotated[Optional[list[str]], typer.Option("--get", "-g", help="Print the number an expression gives, e.g. 'x[-1, box, 0]', energy_drift (see `dojo sweep`'s metrics). Repeatable: one line each.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as one JSON object.")] = False,
) -> None:
    """Status, steps, wall time, overrides and final state of a run; --get EXPR prints one number."""
    from dojo_cli.sweep.metrics import RunData, evaluate, parse_expression

    expressions = [parse_expression(text) for text in get or []]  # malformed: exit 2 before reading
    stored = read_run(run, "info")
    note = stored.status_note()
    if note:
        echo_err(f"warning: {note}")
    if expressions:
        data = RunData(stored)
        values = [evaluate(data, expression) for expression in expressions]
        if as_json:
            typer.echo(json.dumps({e.text: _json_number(v) for e, v in zip(expressions, values)}))
        else:
            for value in values:
                typer.echo(repr(value) if isinstance(value, float) else str(value))
        return
    summary = _summary(stored)
    if as_json:
        typer.echo(json.dumps(summary, indent=1, default=_json_number))
        return
    _print_summary(summary)


def _json_number(value: Any) -> Any:
    """Numbers for JSON: NaN and infinities as null (JSON has none)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _floats(values) -> list:
    return [_json_number(float(v)) for v in values]


def _summary(stored) -> dict[str, Any]:
    attrs = stored.attrs
    t = stored.steps_completed
    final: dict[str, Any] = {}
    traj = stored.trajectory
    if len(traj.time):
        final["time"] = float(traj.time[-1])
        final["bodies"] = {
            name: {
                "x": _floats(traj.x[-1, i]), "q": _floats(traj.q[-1, i]),
                "v": _floats(traj.v[-1, i]), "omega": _floats(traj.omega[-1, i]),
            }
            for i, name in enumerate(stored.body_names)
        }
        final["minimal"] = {
            "q": dict(zip(stored.minimal_q_names, _floats(traj.minimal_q[-1]))),
            "v": dict(zip(stored.minimal_v_names, _floats(traj.minimal_v[-1]))),
        }
    failed = attrs.get("failed_steps")
    return {
        "file": str(stored.path),
        "scene_name": attrs.get("scene_name"),
        "status": stored.status,
        "status_message": attrs.get("status_message"),
        "steps": t,
        "timestep": stored.timestep,
        "simulated_time": t * stored.timestep,
        "failed_steps": failed if isinstance(failed, int) else None,
        "first_failed_step": attrs.get("first_failed_step"),
        "wall_time": attrs.get("wall_time"),
        "overrides": attrs.get("overrides", {}),
        "command_line": attrs.get("command_line"),
        "scene_hash": attrs.get("scene_hash"),
        "dojo_cli_version": attrs.get("dojo_cli_version"),
        "created": attrs.get("created"),
        **({"joint_limits": attrs["joint_limits"]} if attrs.get("joint_limits") else {}),
        **({"random_initial": attrs["random_initial"]} if attrs.get("random_initial") else {}),
        **({"locked_joints": attrs["locked_joints"]} if attrs.get("locked_joints") else {}),
        **({"started_from": attrs["started_from"]} if isinstance(attrs.get("started_from"), dict) else {}),
        "final_state": final,
    }


def _vector(values: list) -> str:
    return "[" + ", ".join("nan" if v is None else f"{v:.6g}" for v in values) + "]"


def _print_summary(s: dict[str, Any]) -> None:
    def line(label: str, value: Any) -> None:
        typer.echo(printable(f"{label:<16}{value}"))

    typer.echo(printable(f"{s['file']}: scene {s['scene_name']}"))
    line("status", s["status"] + (f" ({s['status_message']})" if s.get("status_message") else ""))
    line("steps", f"{s['steps']} of {s['timestep']:g} s ({s['simulated_time']:g} s simulated)")
    origin = s.get("started_from")
    if origin:  # dojo simulate --from: a run continued from a state of another
        line("started from", f"state {origin.get('index')} of {origin.get('file')} (t = {origin.get('time', 0.0):g} s)")
    failed = s["failed_steps"]
    first = s.get("first_failed_step")
    at = f", the first at step {first}" if isinstance(first, int) and first >= 0 else ""
    line("failed steps", "unknown" if failed is None else f"{failed}{at}")
    wall = s["wall_time"]
    line("wall time", f"{wall:.3f} s" if isinstance(wall, (int, float)) else "not recorded")
    overrides = s["overrides"] or {}
    line("overrides", ", ".join(f"{k}={json.dumps(v)}" for k, v in overrides.items()) if overrides else "none")
    if s.get("command_line"):
        line("command", s["command_line"])
    if s.get("scene_hash"):
        line("scene hash", s["scene_hash"])
    line("created", f"{s['created']} by dojo_cli {s['dojo_cli_version']}")
    for joint, limits in (s.get("joint_limits") or {}).items():  # Drake's three pairs (docs/planar.md)
        line("joint limits", f"{joint}: " + "; ".join(f"{kind} {_vector(v['lower'])} .. {_vector(v['upper'])}"
                                                      for kind, v in limits.items()))
    if s.get("locked_joints"):  # Drake's Lock: velocities held at zero (docs/scenes.md)
        line("locked joints", ", ".join(s["locked_joints"]))
    for joint, drawn in (s.get("random_initial") or {}).items():
        line("random initial", f"{joint}: " + ", ".join(f"{k} {v:.6g}" for k, v in drawn.items()))
    final = s["final_state"]
    if not final:
        typer.echo("no state stored")
        return
    typer.echo(f"final state (t = {final['time']:g} s):")
    for name, body in final["bodies"].items():
        typer.echo(printable(f"  {name}: x {_vector(body['x'])}  q {_vector(body['q'])}  v {_vector(body['v'])}  "
                             f"omega {_vector(body['omega'])}"))
    if final["minimal"]["q"]:
        typer.echo(printable("  minimal q: " + ", ".join(f"{k} {'nan' if v is None else format(v, '.6g')}"
                                                          for k, v in final["minimal"]["q"].items())))
