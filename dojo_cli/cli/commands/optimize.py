"""`dojo optimize`: trajectory optimisation of a task file (docs/optimize.md)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli import signals
from dojo_cli.cli.shared import command_line, default_output, echo_err, make_parent_folder, reports_errors
from dojo_cli.errors import InputError, SolverError

_HEADER = f"{'iter':>5} {'cost':>13} {'violation':>10} {'gradient':>10} {'step':>8} {'reg':>8} {'kappa':>8} {'time s':>8}"


def _progress_line(rec: dict) -> str:
    kappa = "exact" if rec["kappa"] < 0 else f"{rec['kappa']:.0e}"
    return (f"{rec['iteration']:>5d} {rec['cost']:>13.6e} {rec['violation']:>10.2e} {rec['gradient']:>10.2e} "
            f"{rec['step']:>8.3g} {rec['regularization']:>8.1e} {kappa:>8} {rec['wall_time']:>8.2f}")


@reports_errors
def optimize(
    task: Annotated[Path, typer.Argument(help="Task file (YAML): scene, horizon, costs, constraints, solver.", readable=False)],
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Storage file of the optimal run (default outputs/<task>.h5).")] = None,
    csv: Annotated[Optional[Path], typer.Option("--csv", help="Schedule CSV of the optimal inputs (default beside -o: <out>.inputs.csv).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No per-iteration progress lines.")] = False,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a PNG of cost, violation and gradient per iteration.")] = None,
) -> None:
    """Optimise a task's inputs (iLQR on the exact step gradients) and write the optimal run."""
    from dojo_cli.optimize.ilqr import solve
    from dojo_cli.optimize.results import schedule_path, write_results
    from dojo_cli.optimize.task import load_task

    loaded = load_task(task)
    out = default_output(str(task), overwrite=force) if out is None else out
    schedule = schedule_path(out) if csv is None else csv
    for path in (out, schedule):
        if path.exists() and not force:
            raise InputError(f"{path}: exists (--force overwrites it)")
    if not quiet:
        typer.echo(f"{task}: {loaded.problem.mech.name}, {loaded.problem.horizon} steps, "
                   f"{loaded.problem.representation} coordinates, {loaded.problem.nu} inputs")
        typer.echo(_HEADER)
    result = solve(loaded.problem, loaded.initial_guess, loaded.options,
                   None if quiet else lambda rec: typer.echo(_progress_line(rec)))
    if result.status == "diverged":
        raise SolverError(f"{task}: the optimisation diverged: {result.message}")
    interrupted = result.status == "interrupted"
    if interrupted:
        signals.ignore_stop_signals()  # writing the best iterate: a second Ctrl-C changes nothing
    make_parent_folder(out)
    make_parent_folder(schedule)
    written = write_results(loaded, result, out, schedule, overwrite=True, command_line=command_line())
    if plot is not None:
        from dojo_cli.viz.convergence_plot import plot_convergence  # here: matplotlib only for --plot

        plot_convergence(result.log, plot, task.stem)
    split = ", ".join(f"{k} {v:.2f} s" for k, v in result.timing.items())
    typer.echo(f"{result.status}: {result.message}; cost {result.cost:.6g}, {result.iterations} iterations, "
               f"{result.seconds:.2f} s ({split})")
    typer.echo(f"wrote {written.storage} (the optimal run, gains in optimize/gains) and {written.schedule} (its inputs)"
               + (f", {plot}" if plot is not None else ""))
    if interrupted:
        signum = signals.pending() or signal.SIGINT  # (SIGTERM and SIGHUP stop it as Ctrl-C does)
        echo_err(f"dojo: interrupted by {signal.Signals(signum).name}; the best iterate so far was written "
                 "(optimize.best_iterate = true)")
        raise typer.Exit(128 + signum)
    if result.status != "converged":
        echo_err(f"warning: not converged ({result.status}): {result.message}")
        raise typer.Exit(1)
