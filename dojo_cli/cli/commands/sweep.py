"""`dojo sweep SWEEP.yaml`: many runs of a scene over a grid of parameters, with a manifest;
`dojo sweep summarize DIR`: the manifest as a table, CSV, Parquet, and a plot.

``dojo sweep FILE`` is ``dojo sweep run FILE`` (a group whose default command is ``run``).
The library does the work (dojo_cli.sweep); this module parses, shows progress and exits.
"""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from dojo_cli.cli.shared import command_line, echo_err, printable, reports_errors
from dojo_cli.cli.signals import stop_requests
from dojo_cli.errors import InputError, StorageError

# A sweep that ends with failed runs exits with this code (as `dojo simulate` does for a run
# with failed steps: the work is done, and some of it did not go as asked).
EXIT_SOME_FAILED = 4
# Widest cell in the printed table (longer values, like lists, are shortened).
_CELL_WIDTH = 24


class _DefaultRun(TyperGroup):
    """``dojo sweep FILE ...`` runs ``dojo sweep run FILE ...``: anything that is not a
    subcommand's name (or -h/--help) goes to ``run``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


sweep = typer.Typer(
    cls=_DefaultRun,
    help="Run a scene over a grid of parameters (locally or on Dask) and summarize the runs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        return os.cpu_count() or 1


@sweep.command("run")
@reports_errors
def run_command(
    sweep_file: Annotated[Path, typer.Argument(metavar="SWEEP.yaml", help="The sweep file (scene, set, grid, zip, random, metrics, output).", readable=False)],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Folder of the runs and the manifest (default: the file's output:, else outputs/sweeps/<file stem>).")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", "-w", help="Local worker processes (default: one per CPU); 0 runs in this process.", min=0)] = None,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Address of a running Dask scheduler (tcp://HOST:8786) to run the tasks on instead.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")] = False,
    recompute: Annotated[bool, typer.Option("--recompute", help="Evaluate the metrics again on every complete run's file; simulate nothing.")] = False,
) -> None:
    """Run a sweep file's runs (skipping those already complete) and write the manifest."""
    from dojo_cli.sweep.execute import run_sweep
    from dojo_cli.sweep.plan import load_sweep

    if workers is not None and scheduler is not None:
        raise InputError("--workers and --scheduler: give one of them, not both")
    plan = load_sweep(sweep_file)
    folder = output if output is not None else (plan.output or Path("outputs") / "sweeps" / sweep_file.stem)
    bar = None if quiet or not sys.stderr.isatty() else _Bar(len(plan.runs))
    with stop_requests() as stop:
        try:
            outcome = run_sweep(
                plan, folder, workers=_default_workers() if workers is None else workers, scheduler=scheduler,
                stop=lambda: stop.signum is not None, report=bar.update if bar else None, command_line=command_line(),
                recompute=recompute,
            )
        finally:
            if bar is not None:
                bar.close()
    pending = sum(r["status"] == "pending" for r in outcome.rows)
    interrupted = sum(r["status"] == "interrupted" for r in outcome.rows)
    if not quiet:
        typer.echo(
            f"{folder}: {len(outcome.rows)} runs: {outcome.ran} run now, {outcome.reused} already complete, "
            f"{outcome.failed} failed; manifest {folder / 'manifest.csv'}"
        )
    for row in outcome.rows:
        if row["status"] == "failed":
            echo_err(f"{folder}: run {row['run_id']} failed: {row.get('error') or 'no reason given'}")
    if outcome.stopped:
        import signal as signal_module

        signum = stop.signum or signal_module.SIGINT
        echo_err(
            f"{folder}: stopped by {signal_module.Signals(signum).name}: {interrupted} runs interrupted, {pending} not "
            "started (the manifest says which); run the same command again to finish the sweep"
        )
        raise typer.Exit(128 + signum)
    if outcome.failed:
        raise typer.Exit(EXIT_SOME_FAILED)


class _Bar:
    """The progress bar: runs done of total, how many failed, time left."""

    def __init__(self, total: int):
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self._p = Progress(
            TextColumn("sweep"), BarColumn(), TextColumn("{task.completed}/{task.total} runs"),
            TextColumn("{task.fields[failed]} failed"), TimeRemainingColumn(), transient=True,
        )
        self._task = self._p.add_task("sweep", total=total, failed=0)
        self._p.start()

    def update(self, progress) -> None:
        self._p.update(self._task, completed=progress.done, failed=progress.failed)

    def close(self) -> None:
        self._p.stop()


@sweep.command("summarize")
@reports_errors
def summarize_command(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="A sweep's folder (holding manifest.csv).", readable=False)],
    csv: Annotated[Optional[Path], typer.Option("--csv", help="Also write the manifest as CSV to this file.")] = None,
    parquet: Annotated[Optional[Path], typer.Option("--parquet", help="Also write the manifest as Parquet to this file.")] = None,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Plot this metric (a manifest column) ...")] = None,
    vs: Annotated[Optional[str], typer.Option("--vs", help="... against this axis (its path, e.g. contacts.*.friction); one line per value of the other axes.")] = None,
    png: Annotated[Optional[Path], typer.Option("--png", help="The plot's file (default: DIR/<metric>_vs_<axis>.png).")] = None,
) -> None:
    """Print a sweep's manifest as a table; write it as CSV or Parquet; plot a metric against an axis."""
    from dojo_cli.sweep import manifest

    source = folder / manifest.CSV_NAME if folder.is_dir() else folder
    if not source.exists():
        raise StorageError(f"{folder}: no manifest here ({manifest.CSV_NAME}; is it a sweep's folder?)")
    names, rows = manifest.read_csv(source)
    if (plot is None) != (vs is None):
        raise InputError("--plot and --vs: give both (--plot METRIC --vs AXIS)")
    for option, column in (("--plot", plot), ("--vs", vs)):
        if column is not None and column not in names:
            raise InputError(f"{option}: no column {column!r} in {source} (columns: {', '.join(names)})")
    _print_table(names, rows)
    if csv is not None:
        manifest.write_csv(csv, rows, names)
        typer.echo(f"wrote {csv}")
    if parquet is not None:
        manifest.write_parquet(parquet, rows, names)
        typer.echo(f"wrote {parquet}")
    if plot is not None:
        target = png if png is not None else (source.parent / f"{_file_part(plot)}_vs_{_file_part(vs)}.png")
        from dojo_cli.viz.sweep_plot import plot_metric

        kinds = manifest.read_column_kinds(source.parent)
        axes = [a for a in kinds[0] if a != vs] if kinds is not None else None
        lines = plot_metric(rows, names, plot, vs, target, title=str(source.parent), axes=axes)
        typer.echo(f"wrote {target}: {plot} against {vs}, {lines} line{'s' if lines != 1 else ''}")


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name.replace("*", "all")).strip("_") or "column"


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        text = "nan" if math.isnan(value) else f"{value:.6g}"
    else:
        text = str(value)
    text = printable(text)
    return text if len(text) <= _CELL_WIDTH else text[: _CELL_WIDTH - 3] + "..."


def _print_table(names: list[str], rows: list[dict]) -> None:
    """The rows as aligned columns (numbers shortened to 6 digits here; the files keep them all)."""
    shown = [[_shown(row.get(name)) for name in names] for row in rows]
    widths = [max([len(printable(name))] + [len(r[i]) for r in shown]) for i, name in enumerate(names)]
    typer.echo("  ".join(printable(name).ljust(w) for name, w in zip(names, widths)).rstrip())
    for r in shown:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row.get("status"))] = counts.get(str(row.get("status")), 0) + 1
    typer.echo(f"{len(rows)} runs: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
