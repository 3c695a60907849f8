"""`dojo fit`: system identification of a scene's parameters from recorded motion (docs/fit.md)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli import signals
from dojo_cli.cli.shared import default_output, echo_err, make_parent_folder, reports_errors
from dojo_cli.errors import InputError

_HEADER = f"{'start':>5} {'eval':>5} {'cost':>13} {'best':>13} {'failed':>6}"


def _progress_line(rec: dict) -> str:
    return f"{rec['start']:>5d} {rec['evaluation']:>5d} {rec['cost']:>13.6e} {rec['best_cost']:>13.6e} {rec['failed_steps']:>6d}"


@reports_errors
def fit(
    task: Annotated[Path, typer.Argument(help="Fit file (YAML): scene, parameters, data, loss, solver.", readable=False)],
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Output stem: OUT.yaml (fitted scene), OUT.json and OUT.txt (report) (default outputs/<fit>).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No per-evaluation progress lines.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a PNG of recorded against simulated validation trajectories and their errors over time.")] = None,
) -> None:
    """Fit a scene's parameters to recorded motion (least squares on the exact step gradients)."""
    from dojo_cli.fit.results import write_results
    from dojo_cli.fit.solve import fit as run_fit
    from dojo_cli.fit.task import load_fit

    loaded = load_fit(task)
    stem = default_output(str(task), suffix=".yaml", overwrite=force).with_suffix("") if out is None else out.with_suffix("")
    targets = [stem.with_suffix(s) for s in (".yaml", ".json", ".txt")]
    for path in targets + ([plot] if plot is not None else []):
        if path.exists() and not force:
            raise InputError(f"{path}: exists (--force overwrites it)")
    if not quiet:
        p = loaded.parameters
        typer.echo(f"{task}: {len(p.names)} parameters ({len(p.labels)} scene values), {len(loaded.train)} training and "
                   f"{len(loaded.validation)} validation recordings, loss {loaded.loss}"
                   + (f" over {loaded.window} steps" if loaded.loss == "shooting" else ""))
        typer.echo(_HEADER)
    result = run_fit(loaded, None if quiet else lambda rec: typer.echo(_progress_line(rec)))
    interrupted = result.status == "interrupted"
    if interrupted:
        signals.ignore_stop_signals()  # writing the best iterate: a second Ctrl-C changes nothing
    make_parent_folder(stem)
    written = write_results(loaded, result, stem)
    if plot is not None:
        from dojo_cli.fit.results import plot_series
        from dojo_cli.viz.fit_plot import plot_fit  # here: matplotlib only for --plot

        make_parent_folder(plot)
        plot_fit(plot_series(loaded, result), plot, f"{task.stem}: recorded (solid) and fitted model (dashed)")
        written.append(plot)
    typer.echo(written[2].read_text(encoding="utf-8"), nl=False)
    typer.echo("wrote " + ", ".join(str(p) for p in written))
    if interrupted:
        signum = signals.pending() or signal.SIGINT
        echo_err(f"dojo: interrupted by {signal.Signals(signum).name}; the best iterate so far was written")
        raise typer.Exit(128 + signum)
    if result.status != "converged":
        echo_err(f"warning: not converged ({result.status}): the evaluation limit was reached (solver.max_evaluations)")
