"""`dojo simulate`: run a scene and write its trajectory to an HDF5 storage file as it goes.

An interrupted simulation (Ctrl-C) keeps the completed steps and exits 130. With ``--view``
the run is also shown in meshcat as it is computed (viz.live.LiveView on the run loop's
hooks, the loopback server of `dojo replay`), and the viewer stays up after the run until
Ctrl-C (exit 130) or until its browser window is closed. Closing the window during the run
stops the run as Ctrl-C does (viz.live.ViewerWatch): the file ``interrupted``, exit 130.
"""

from __future__ import annotations

import math
import signal
import sys
import time
import webbrowser
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli.shared import (
    ConfigOpt,
    FromOpt,
    IndexOpt,
    SceneArg,
    SetOpt,
    command_line,
    default_output,
    echo_err,
    load_scene_spec_and_mechanism,
    make_parent_folder,
    reports_errors,
    scene_overrides,
)
from dojo_cli.simulation.step import singular_message
from dojo_cli.cli.signals import signal_number, stop_requests
from dojo_cli.errors import InputError, SolverError, StorageError
from dojo_cli.simulation.run_file import check_run, plan_run, write_run
from dojo_cli.scene.loader import dump_scene
from dojo_cli.scene.schema import MAX_STEPS

# Every step was taken but some did not converge (docs/storage.md, status complete_with_failures).
EXIT_COMPLETE_WITH_FAILURES = 4
# A run writes its buffered steps to the file once this many seconds have passed since
# the last write (checked after every block of steps): a killed process loses at most the
# steps of the last FLUSH_SECONDS of computing, plus the block in progress (one step of a
# closed-loop run, at most run.BLOCK_SECONDS of an open-loop one); a step slower than this
# is written as soon as it is done. Ctrl-C, signals and solver failures lose nothing.
# Cost, measured (docs/storage.md): about 5 ms a write, 3-5 % of a fast run's time.
FLUSH_SECONDS = 0.1
# How often the viewer's serving loop after a --view run wakes up to notice Ctrl-C (s).
_SERVE_POLL = 0.5


@reports_errors
def simulate(
    scene: SceneArg,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Storage file to write (default: outputs/<scene>.h5, or the first free outputs/<scene>-2.h5, ...; folders are created).")] = None,
    steps: Annotated[Optional[int], typer.Option("--steps", help="Number of steps (overrides the scene).", min=1)] = None,
    duration: Annotated[Optional[float], typer.Option("--duration", help="Simulated time in s (overrides the scene).")] = None,
    overrides: SetOpt = None,
    configs: ConfigOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print the solver's iterations.")] = False,
    abort_on_failure: Annotated[bool, typer.Option("--abort-on-failure", help="Stop at the first step the solver fails (exit code 1).")] = False,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output file.")] = False,
    gradients: Annotated[bool, typer.Option("--gradients", help="Also store each step's Jacobians (gradients/A, gradients/B; see docs/storage.md).")] = False,
    gradients_wrt: Annotated[Optional[str], typer.Option("--gradients-wrt", help="Which Jacobians --gradients stores: state (A), input (B) or state,input (implies --gradients).")] = None,
    momenta: Annotated[bool, typer.Option("--momenta/--no-momenta", help="Store each body's linear and angular momenta at the knots, world frame (px, pq: Dojo's Storage.px, pq; docs/storage.md); --no-momenta leaves them out (a file 20 % smaller).")] = True,
    integrator: Annotated[Optional[str], typer.Option("--integrator", help="variational (Dojo's, the default), variational4 (its fourth-order composition, joint-only scenes) or rk4 (Munthe-Kaas RK4 in minimal coordinates); overrides the scene's `integrator`.")] = None,
    start_run: FromOpt = None,
    index: IndexOpt = None,
    view: Annotated[bool, typer.Option("--view", help="Show the run in meshcat (served on 127.0.0.1) as it is computed, with contact points and force arrows; closing the viewer's window stops the run as Ctrl-C does, and after the run the viewer stays up until Ctrl-C or until its window is closed.")] = False,
    view_rate: Annotated[float, typer.Option("--view-rate", help="--view's pace: simulated seconds per wall second (1 = real time; 0 = as fast as the run goes).")] = 1.0,
    open_browser: Annotated[bool, typer.Option("--open", help="--view: open the viewer in a browser.")] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", hidden=True, help="--view: stop the viewer when the run ends (tests, scripts).")] = False,
) -> None:
    """Simulate a scene and write the trajectory to an HDF5 storage file."""
    # --from RUN.h5 --index K: the run starts from state K of an earlier run instead of the
    # scene's initial state and goes on from its time; the scene may differ from the earlier
    # run's (a joint locked or unlocked, a parameter), its bodies may not; --steps, --duration
    # and the scene's own count from there (docs/storage.md, "Continuing a run").
    if steps is not None and duration is not None:
        raise InputError("--steps and --duration: give one of them, not both")
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        raise InputError(f"--duration: must be a finite number > 0, got {duration}")
    wrt = None
    if gradients or gradients_wrt is not None:
        # here: a run without --gradients does not import the gradient code
        from dojo_cli.simulation.gradient_record import parse_gradient_wrt

        try:
            wrt = parse_gradient_wrt(gradients_wrt or "state,input")
        except ValueError as exc:
            raise InputError(f"--gradients-wrt: {exc}") from None
    if integrator is not None and integrator not in ("variational", "variational4", "rk4"):
        raise InputError(f"--integrator: {integrator!r} is not an integrator (variational, variational4, rk4)")
    if index is not None and start_run is None:
        raise InputError("--index needs --from RUN.h5")
    if view:
        from dojo_cli.viz.live import check_view_rate  # (meshcat is imported by --view runs only)

        check_view_rate(view_rate)
    elif open_browser or view_rate != 1.0:
        raise InputError(f"{'--open' if open_browser else '--view-rate'}: only with --view")
    items = scene_overrides(overrides, configs)
    spec, mech = load_scene_spec_and_mechanism(scene, items)
    if integrator is not None and integrator != spec.integrator:
        spec = spec.replace(integrator=integrator)
        mech = mech.with_run_setup(integrator=integrator)  # (the run driver runs the mechanism's)
    use_rk4 = spec.integrator == "rk4"
    check_run(mech, scene, spec.name, spec.integrator, wrt)
    h = mech.timestep
    n = _run_steps(mech, scene, steps, duration)
    out = output if output is not None else default_output(scene, overwrite=force)
    plan = plan_run(mech, out, n, scene_name=spec.name, integrator=spec.integrator, gradients=tuple(wrt or ()),
                    start_run=start_run, index=index, overwrite=force, warn=lambda line: echo_err(f"warning: {line}"),
                    momenta=momenta)
    start = plan.start
    make_parent_folder(out)
    opts = mech.default_options.replace(verbose=verbose)

    server = _start_viewer(open_browser) if view else None
    watch = _viewer_watch(server) if view else None
    try:
        summary, writer = _write(plan, mech, spec, items, opts, force, abort_on_failure, verbose, quiet, n, out, server,
                                 view_rate, watch)
    except BaseException:  # a stopped run stops its viewer too
        if server is not None:
            server.close()
        raise
    if server is not None and no_wait:
        server.close()
    if not quiet:
        conv = "all steps converged" if not summary.failed_steps else f"{summary.failed_steps} steps did NOT converge"
        how = "Munthe-Kaas RK4" if use_rk4 else f"median {summary.median_iterations} solver iterations, {conv}"
        origin = f" from {start.source}" if start is not None else ""
        typer.echo(
            f"wrote {out}: {n} steps of {h:g} s ({n * h:g} s simulated{origin}), {mech.nb} {'body' if mech.nb == 1 else 'bodies'}, "
            f"{how}; "
            f"{summary.wall:.2f} s wall ({summary.wall / max(n, 1) * 1e3:.3f} ms/step)"
        )
        if writer.compaction_note:  # complete, but left as written (uncompressed)
            echo_err(f"note: {out}: {writer.compaction_note}")
    if summary.substepped_steps:
        # said even with -q: the run's time grid is the scene's, but these steps are not
        k0 = start.step if start is not None else 0
        k, count = summary.first_substepped
        echo_err(
            f"{out}: note: {summary.substepped_steps} of {n} steps failed at h = {h:g} s and were solved as substeps, "
            f"the first at step {k - k0} (t = {k * h:.6g} s) as {count} substeps of {h / count:g} s (see solver/substeps)"
            + ("; their gradients/A, gradients/B are those of the substeps' composed map" if wrt else "")
        )
    if summary.failed_steps:
        # said even with -q (it silences progress, not failures), and a distinct exit code;
        # steps numbered as in the file, times as on its time axis (a continued run's go on)
        k0 = start.step if start is not None else 0
        echo_err(
            f"{out}: {summary.failed_steps} of {n} steps did not converge, the first at step {writer.first_failed_step} "
            f"(t = {(k0 + writer.first_failed_step) * h:.6g} s); status 'complete_with_failures' (see solver/status)"
        )
        if summary.first_singular is not None:
            k, node = summary.first_singular
            echo_err(f"{out}: step {k - k0} (t = {k * h:.6g} s): {singular_message(mech, node)}")
    if server is not None and not no_wait:
        _serve_until_stopped(server, watch)
    if summary.failed_steps:
        raise typer.Exit(EXIT_COMPLETE_WITH_FAILURES)


def _write(plan, mech, spec, items, opts, force, abort_on_failure, verbose, quiet, n, out, server, view_rate, watch):
    """The run into its file, with the progress bar, stop requests and the live view, and the
    messages of a run that stopped; returns (the summary, the finished writer)."""
    progress = None
    writer = None

    def opened(w) -> None:
        nonlocal writer, progress
        writer = w
        progress = _progress(n, quiet)

    try:
        # Stop signals are only recorded from before the file is created until it is
        # finished (dojo_cli.cli.signals): a file never exists without its attributes, and
        # the run stops between whole blocks.
        with stop_requests() as stop:
            def check() -> None:
                stop.check()  # a signal stops the run here, between whole blocks
                if watch is not None:
                    watch.check()  # and so does closing the viewer (ViewerClosed)

            live = None
            if server is not None:
                from dojo_cli.viz.live import LiveView

                live = LiveView(server.visualizer, mech, rate=view_rate, ground=spec.ground.half_space(), stop_check=check)

            def advance(k: int) -> None:
                if progress is not None:
                    progress.update(k)
                check()

            # (a signal that arrived while the file was being created is taken at the
            # first block boundary, once the initial state is in the file)
            summary = write_run(
                plan, mech, scene_yaml=dump_scene(spec), scene_name=spec.name, opts=opts, flush_interval=FLUSH_SECONDS,
                overwrite=force, on_writer=opened, overrides={item.path: item.value for item in items},
                command_line=command_line(), abort_on_failure=abort_on_failure,
                log=_iteration_logger() if verbose else None, progress=advance,
                stop_requested=lambda: stop.signum is not None,  # a stop skips the final compression
                on_start=None if live is None else live.start, on_block=None if live is None else live.block,
            )
    except StorageError:
        # the file cannot be created, another run is writing it, or a write failed (disk
        # full): the writer has finished the file and the message says what it keeps
        _close(progress)
        raise
    except SolverError:
        _close(progress)
        echo_err(f"{out}: run stopped, status 'failed' after {writer.steps_completed} steps")
        raise
    except KeyboardInterrupt as exc:
        # (stop_requests now ignores further signals: a second Ctrl-C changes nothing)
        _close(progress)
        if writer is None:  # before the file was created: the command line's one line (cli.app)
            raise
        signum = signal_number(exc)
        why = "the viewer was closed" if _viewer_closed(exc, watch) else f"interrupted by {signal.Signals(signum).name}"
        echo_err(f"{out}: {why}; the file keeps the {writer.steps_completed} completed steps (status 'interrupted')")
        raise typer.Exit(128 + signum) from None
    _close(progress)
    return summary, writer


def _start_viewer(open_browser: bool):
    """The loopback meshcat server of a --view run, its URL printed (and opened)."""
    from dojo_cli.viz.meshcat_server import start_server

    server = start_server()
    typer.echo(f"meshcat: {server.web_url}  (live view; Ctrl-C or closing the viewer's window stops the run)")
    if open_browser:
        webbrowser.open(server.web_url, new=2)
    return server


def _viewer_watch(server):
    """Whether the viewer's window is still open (viz.live.ViewerWatch); says when one connects."""
    from dojo_cli.viz.live import ViewerWatch

    return ViewerWatch(server.presence, on_connect=lambda: typer.echo("viewer connected (closing its window stops the run)"))


def _viewer_closed(exc: BaseException, watch) -> bool:
    """Whether a run stopped because its viewer was closed (viz.live.ViewerClosed)."""
    if watch is None:
        return False
    from dojo_cli.viz.live import ViewerClosed  # (meshcat is imported by --view runs only)

    return isinstance(exc, ViewerClosed)


def _serve_until_stopped(server, watch) -> None:
    """After a --view run: keep the viewer up until Ctrl-C (exit 128 + N, as a replay's) or
    until its window is closed (the run's own exit code)."""
    typer.echo("the viewer shows the last state; Ctrl-C or closing its window stops it")
    try:
        while server.process.poll() is None:
            if watch.closed():
                typer.echo("the viewer was closed")
                return
            time.sleep(_SERVE_POLL)
        echo_err(f"the meshcat server stopped (exit code {server.process.returncode})")
    except KeyboardInterrupt as exc:
        typer.echo("stopped")
        raise typer.Exit(128 + signal_number(exc)) from None
    finally:
        server.close()


def _run_steps(mech, scene: str, steps: int | None, duration: float | None) -> int:
    """The steps of the run: --steps, --duration over the timestep (rounded up), or the scene's."""
    h = mech.timestep
    n = steps if steps is not None else (duration / h if duration is not None else mech.default_steps)
    if n is None:
        raise InputError(f"{scene}: the scene sets neither steps nor duration; pass --steps or --duration")
    if duration is not None:
        # checked after the division: a finite duration over a tiny timestep can still be too many steps
        if not n <= MAX_STEPS:
            raise InputError(f"--duration: {duration:g} s at timestep {h:g} s is {n:.3g} steps, more than {MAX_STEPS:.0e}")
        n = int(math.ceil(n - 1e-9))
    if n > MAX_STEPS:
        raise InputError(f"--steps: {n} steps, more than {MAX_STEPS:.0e}")
    return n


def _iteration_logger():
    """Dojo's verbose table on stderr (dojo_cli.solver.verbose): n, bvio, rvio, alpha, kappa, |res|, |step|."""
    from dojo_cli.solver.verbose import iteration_printer

    return iteration_printer(echo_err)


class _Progress:
    def __init__(self, total: int):
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self._p = Progress(
            TextColumn("simulating"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"), TimeRemainingColumn(),
            transient=True,
        )
        self._task = self._p.add_task("sim", total=total)
        self._p.start()

    def update(self, completed: int) -> None:
        self._p.update(self._task, completed=completed)

    def close(self) -> None:
        self._p.stop()


def _progress(total: int, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    return _Progress(total)


def _close(progress) -> None:
    if progress is not None:
        progress.close()
