"""`dojo contacts`: per-contact summary of a stored run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli.cli.shared import echo_err, read_run, reports_errors
from dojo_cli.errors import InputError
from dojo_cli.io.labelled_files import write_text
from dojo_cli.scene.stored_run import run_mechanism
from dojo_cli.simulation.contact_report import DEFAULT_GAP, DEFAULT_SLIP_TOL, contact_btol, summarize_contacts


@reports_errors
def contacts(
    # readable=False: read_storage reports an unreadable file (exit 3), not click (exit 2, a usage box)
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.", readable=False)],
    gap: Annotated[float, typer.Option("--gap", help="A contact touches when closer than this (m) and carrying more than btol/gap.")] = DEFAULT_GAP,
    slip_tol: Annotated[float, typer.Option("--slip-tol", help="Touching contacts slower than this (m/s) stick.")] = DEFAULT_SLIP_TOL,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the summary as JSON.")] = None,
) -> None:
    """Per-contact summary of a run: penetration, time in contact, stick/slip, cone violation."""
    if not gap > 0 or not slip_tol > 0:
        raise InputError("--gap and --slip-tol: must be > 0")
    stored = read_run(run, "contacts")  # validated: every contact dataset present, as long as the run
    note = stored.status_note()
    if note:
        echo_err(f"warning: {note}")
    traj = stored.trajectory
    if traj.contact_distance is None:
        raise InputError(f"{run}: the run has no contact records ({stored.no_contacts_reason()})")
    spec, mech = run_mechanism(stored, controller=False)  # and its scene has those contacts
    btol = contact_btol(mech, spec.solver.btol, spec.solver.tolerances)
    rows = summarize_contacts(
        [c.name for c in spec.contacts], [c.model for c in spec.contacts], np.array([c.friction for c in spec.contacts]),
        traj.contact_distance, traj.contact_normal_impulse, traj.contact_friction_impulse, traj.contact_slip,
        btol=btol, gap=gap, slip_tol=slip_tol,
    )
    typer.echo(f"{run}: {spec.name}, {stored.steps_completed} steps, status {stored.status}")
    typer.echo(f"{'contact':<16}{'model':<10}{'min dist [m]':>13}{'penetr. [m]':>12}{'in contact':>11}{'stick':>7}{'slip':>7}{'cone viol.':>11}")
    for r in rows:
        typer.echo(
            f"{r.name:<16}{r.model:<10}{r.min_distance:>13.3e}{r.penetration:>12.2e}{r.contact_fraction:>11.1%}"
            f"{r.stick_fraction:>7.0%}{r.slip_fraction:>7.0%}{r.max_cone_violation:>11.2e}"
        )
    worst = max(rows, key=lambda r: r.penetration)
    typer.echo(f"max penetration {worst.penetration:.3e} m ({worst.name}); max cone violation "
               f"{max(r.max_cone_violation for r in rows):.3e} N s")
    if json_out is not None:
        write_text(json_out, json.dumps({"run": str(run), "status": stored.status, "contacts": [r.to_dict() for r in rows]}, indent=1))
        typer.echo(f"wrote {json_out}")
