"""`dojo energy`: kinetic, potential and mechanical energy and momentum of a stored run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli.cli.shared import echo_err, read_run, reports_errors
from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.labelled_files import write_text
from dojo_cli.io.storage import KNOT
from dojo_cli.physics.energy import conservation, knot_mechanics, mechanics
from dojo_cli.scene.stored_run import run_mechanism


@reports_errors
def energy(
    # readable=False: read_storage reports an unreadable file (exit 3), not click (exit 2, a usage box)
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.", readable=False)],
    csv: Annotated[Optional[Path], typer.Option("--csv", help="Write per-step energy and momentum as CSV.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the summary and series as JSON.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a PNG plot of energy and momentum against time.")] = None,
) -> None:
    """Kinetic, potential and mechanical energy and momentum of a run."""
    stored = read_run(run, "energy")  # validated: consistent lengths, widths matching the names
    note = stored.status_note()  # killed, interrupted, failed: said before anything else
    if note:
        echo_err(f"warning: {note}")
    # the controller is not needed (and a schedule's table may not have travelled with the file)
    spec, mech = run_mechanism(stored, controller=False)
    if stored.steps_completed < 1:
        raise InputError(f"{run}: the run has no completed step; energy needs at least one")
    traj = stored.trajectory
    if stored.velocities == KNOT:
        # velocities at every knot t_0..t_T (docs/physics.md): energy and momentum of each state
        me = knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega)
    else:
        # a file written before knot velocities: v, omega are midpoint velocities, whose
        # averaged transforms give the knots 0..T-1 (the last state has no outgoing step)
        me = mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega)
    summary = _energy_summary(me, conservation(mech, traj.inputs))
    typer.echo(f"{run}: {spec.name}, {len(me.time)} states (t = 0 .. {me.time[-1]:g} s), status {stored.status}")
    typer.echo(f"{'quantity':<22}{'initial':>14}{'final':>14}{'max drift':>14}{'rel drift':>12}")
    for key, row in summary.items():
        start = f"{key:<22}{row['initial']:>14.6g}{row['final']:>14.6g}"
        if row["conserved_drift"] is None:
            # kinetic energy, potential energy and what something external acts on are not
            # conserved: their change is the physics, not the integrator's error
            why = f" ({row['why']})" if row["why"] else ""
            typer.echo(f"{start}  not conserved{why}")
        else:
            typer.echo(f"{start}{row['conserved_drift']:>14.3e}{row['conserved_relative_drift']:>12.3e}"
                       f"{'  ' + row['conserved'] if row['conserved'] != 'yes' else ''}")
    if csv is not None:
        _write_csv(csv, me)
        typer.echo(f"wrote {csv}")
    if json_out is not None:
        _write_json(json_out, me, summary, stored)
        typer.echo(f"wrote {json_out}")
    if plot is not None:
        from dojo_cli.viz.energy_plot import plot_energy  # here: matplotlib only for --plot

        plot_energy(me, plot, spec.name)
        typer.echo(f"wrote {plot}")


def _energy_summary(me, conserved) -> dict:
    """Initial, final and largest drift of each quantity; momenta drift componentwise.

    ``max_drift``/``relative_drift`` are the measured change of every quantity;
    ``conserved_drift``/``conserved_relative_drift`` only that of a conserved quantity (or of
    its conserved components, ``conserved`` naming them), None for the others, with ``why``.
    """
    eye = np.eye(3)
    rows = {
        "kinetic [J]": (me.kinetic[:, None], None, "exchanged with the potential" if conserved.energy else ""),
        "potential [J]": (me.potential[:, None], None, "exchanged with the kinetic" if conserved.energy else ""),
        "mechanical [J]": (me.mechanical[:, None], np.ones((1, 1)) if conserved.energy else None, conserved.energy_reason),
        "linear momentum": (me.linear_momentum, conserved.linear, conserved.momentum_reason or "gravity"),
        "angular momentum": (me.angular_momentum, conserved.angular, conserved.momentum_reason or "gravity"),
    }
    out = {}
    for name, (series, basis, why) in rows.items():
        drift = float(np.max(np.abs(series - series[0])))
        size = np.linalg.norm(series, axis=1)
        scale = float(np.max(np.abs(series))) or 1.0
        kept = None if basis is None or basis.shape[1] == 0 else series @ basis
        kept_drift = None if kept is None else float(np.max(np.abs(kept - kept[0])))
        if kept is None:
            label = "no"
        elif basis.shape[1] == series.shape[1]:
            label, why = "yes", ""
        else:
            # the components along or across gravity (named by axis when gravity is along one)
            axes = [i for i in range(3) if np.any(np.all(np.isclose(np.abs(basis.T), eye[i]), axis=1))]
            named = ",".join("xyz"[i] for i in axes) if len(axes) == basis.shape[1] else None
            label = f"{named} only" if named else ("along gravity only" if basis.shape[1] == 1 else "across gravity only")
        out[name] = {
            "initial": float(size[0]) if series.shape[1] > 1 else float(series[0, 0]),
            "final": float(size[-1]) if series.shape[1] > 1 else float(series[-1, 0]),
            "max_drift": drift,
            "relative_drift": drift / scale,
            "conserved": label,
            "conserved_drift": kept_drift,
            "conserved_relative_drift": None if kept_drift is None else kept_drift / scale,
            "why": "" if kept is not None else why,
        }
    return out


def _write_csv(path: Path, me) -> None:
    header = "time,kinetic,potential,mechanical,px,py,pz,lx,ly,lz"
    data = np.column_stack([me.time, me.kinetic, me.potential, me.mechanical, me.linear_momentum, me.angular_momentum])
    try:
        np.savetxt(path, data, delimiter=",", header=header, comments="", fmt="%.17g")
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _write_json(path: Path, me, summary: dict, stored) -> None:
    doc = {
        "run": str(stored.path), "status": stored.status, "summary": summary,
        "time": me.time.tolist(), "kinetic": me.kinetic.tolist(), "potential": me.potential.tolist(),
        "mechanical": me.mechanical.tolist(), "linear_momentum": me.linear_momentum.tolist(),
        "angular_momentum": me.angular_momentum.tolist(),
    }
    write_text(path, json.dumps(doc, indent=1))

