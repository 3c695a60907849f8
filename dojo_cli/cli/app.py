"""The ``dojo`` command line: thin commands over the library.

Only this package prints or exits. Library errors (the DojoError family) are
caught in ``main`` and printed one line per problem, ``file:line: field:
message``, with the error's exit code: 2 invalid input, 1 solver failure with
--abort-on-failure, 3 I/O. An interrupted simulation exits 130.
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli import __version__
from dojo_cli.errors import DojoError, InputError, SolverError, StorageError
from dojo_cli.io.storage import StorageWriter, read_storage
from dojo_cli.model.mechanism import CONTACT_HALF_SIZE
from dojo_cli.physics.energy import mechanics
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import (
    builtin_scene_names,
    builtin_scene_path,
    builtin_scene_text,
    dump_scene,
    load_scene_spec,
    load_scene_spec_from_string,
)
from dojo_cli.simulation.contact_report import DEFAULT_GAP, DEFAULT_SLIP_TOL, summarize_contacts
from dojo_cli.simulation.gradient_record import gradient_dataset_attrs, parse_gradient_wrt, step_gradient_record
from dojo_cli.simulation.simulate import iterate, state_record
from dojo_cli.solver.status import SolverStatus

app = typer.Typer(
    name="dojo",
    help="Differentiable rigid-body simulation with contact (Dojo's variational integrator), driven by YAML scenes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_INTERRUPTED = 130
INTEGRATOR = "dojo-variational-midpoint"

SceneArg = Annotated[str, typer.Argument(help="Scene YAML file, or the name of a built-in scene (see `dojo scenes`).")]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", help="Override a scene field: PATH=VALUE (e.g. bodies.0.mass=2, joints.hinge.spring=3). Repeatable."),
]


def _err(line: str) -> None:
    typer.echo(line, err=True)


def _reports_errors(command):
    """Print DojoError problems one per line and exit with the error's code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except DojoError as exc:
            for line in exc.lines():
                _err(line)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def _load(scene: str, overrides: list[str] | None):
    spec = load_scene_spec(scene, overrides or [])
    return spec, build_mechanism(spec)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"dojo_cli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """Differentiable rigid-body simulation with contact, driven by YAML scenes."""


# --------------------------------------------------------------------- simulate
@app.command()
@_reports_errors
def simulate(
    scene: SceneArg,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Storage file to write (default: <scene name>.h5).")] = None,
    steps: Annotated[Optional[int], typer.Option("--steps", help="Number of steps (overrides the scene).", min=1)] = None,
    duration: Annotated[Optional[float], typer.Option("--duration", help="Simulated time in s (overrides the scene).")] = None,
    overrides: SetOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no summary.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print the solver's iterations.")] = False,
    abort_on_failure: Annotated[bool, typer.Option("--abort-on-failure", help="Stop at the first step the solver fails (exit code 1).")] = False,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output file.")] = False,
    gradients: Annotated[bool, typer.Option("--gradients", help="Also store each step's Jacobians (gradients/A, gradients/B; see docs/storage.md).")] = False,
    gradients_wrt: Annotated[Optional[str], typer.Option("--gradients-wrt", help="Which Jacobians --gradients stores: state (A), input (B) or state,input (implies --gradients).")] = None,
) -> None:
    """Simulate a scene and write the trajectory to an HDF5 storage file."""
    if steps is not None and duration is not None:
        raise InputError("--steps and --duration: give one of them, not both")
    if duration is not None and not duration > 0:
        raise InputError(f"--duration: must be > 0, got {duration}")
    wrt = None
    if gradients or gradients_wrt is not None:
        try:
            wrt = parse_gradient_wrt(gradients_wrt or "state,input")
        except ValueError as exc:
            raise InputError(f"--gradients-wrt: {exc}") from None
    spec, mech = _load(scene, overrides)
    if wrt is not None and mech.external:
        raise InputError(f"--gradients: scene {spec.name!r} has external forces, which the gradients do not include yet")
    h = mech.timestep
    n = steps if steps is not None else (int(np.ceil(duration / h - 1e-9)) if duration is not None else mech.default_steps)
    if n is None:
        raise InputError(f"{scene}: the scene sets neither steps nor duration; pass --steps or --duration")
    out = output if output is not None else Path(f"{spec.name}.h5")
    if out.exists() and not force:
        raise StorageError(f"{out}: already exists (use --force to overwrite)")
    opts = mech.default_options.replace(verbose=verbose)
    log = _iteration_logger() if verbose else None

    started = time.perf_counter()
    failed_steps = 0
    iterations: list[int] = []
    writer = StorageWriter(
        out,
        scene_yaml=dump_scene(spec),
        scene_name=spec.name,
        timestep=h,
        gravity=list(mech.gravity),
        solver_options=opts.to_dict(),
        integrator=INTEGRATOR,
        body_names=[b.name for b in mech.bodies],
        minimal_q_names=mech.coordinate_names(),
        minimal_v_names=[f"{c}_dot" for c in mech.coordinate_names()],
        input_dim=mech.nf,
        dojo_cli_version=__version__,
        extra_attrs={"contact_names": [c.name for c in mech.contacts]} if mech.nc else None,
        dataset_attrs=gradient_dataset_attrs(mech, wrt) if wrt is not None else None,
    )
    progress = None
    try:
        with writer:
            s0 = state_record(mech, 0.0, mech.initial)
            writer.write_initial(s0.time, s0.x, s0.q, s0.v, s0.omega, s0.minimal_q, s0.minimal_v)
            progress = _progress(n, quiet)
            z_prev = mech.initial
            for rec in iterate(mech, n, mech.initial, mech.controller, opts, mech.external, abort_on_failure, log):
                s = rec.state
                extra = _step_extras(rec)
                if wrt is not None:
                    # Jacobians of the step just taken, at the state it started from (it is re-solved)
                    extra.update(step_gradient_record(mech, z_prev, rec.inputs, opts, wrt, s.z))
                z_prev = s.z
                writer.write_step(
                    s.time, s.x, s.q, s.v, s.omega, s.minimal_q, s.minimal_v, rec.inputs,
                    iterations=rec.iterations, residual=rec.residual, status=rec.status.value,
                    extra=extra,
                )
                iterations.append(rec.iterations)
                if rec.status is not SolverStatus.SUCCESS:
                    failed_steps += 1
                    if verbose:
                        _err(f"step {rec.k}: {rec.status.message} (residual {rec.residual:.3e})")
                if progress:
                    progress.advance()
    except SolverError as exc:
        _close(progress)
        _err(f"{out}: run stopped, status 'failed' after {writer.steps_completed} steps")
        raise exc
    except KeyboardInterrupt:
        _close(progress)
        _err(f"{out}: interrupted; the file keeps the {writer.steps_completed} completed steps (status 'interrupted')")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _close(progress)
    if not quiet:
        wall = time.perf_counter() - started
        med = int(np.median(iterations)) if iterations else 0
        conv = "all steps converged" if not failed_steps else f"{failed_steps} steps did NOT converge"
        typer.echo(
            f"wrote {out}: {n} steps of {h:g} s ({n * h:g} s simulated), {mech.nb} {'body' if mech.nb == 1 else 'bodies'}, "
            f"median {med} solver iterations, {conv}; {wall:.2f} s wall ({wall / max(n, 1) * 1e3:.2f} ms/step)"
        )
    if failed_steps and not quiet:
        _err(f"warning: {failed_steps} of {n} steps did not converge (see solver/status in {out})")


def _iteration_logger():
    """Dojo's verbose table: n, bvio, rvio, alpha, kappa (its mu), |res|inf, |step|inf."""
    state = {"header": False}

    def log(rec: dict) -> None:
        if rec["iteration"] == 1 or not state["header"]:
            _err(f"{'n':>4} {'bvio':>9} {'rvio':>9} {'alpha':>9} {'kappa':>9} {'|res|':>9} {'|step|':>9}")
            state["header"] = True
        _err(
            f"{rec['iteration']:>4} {rec.get('bvio', 0.0):>9.2e} {rec.get('rvio', rec['residual']):>9.2e} "
            f"{rec['alpha']:>9.2e} {rec.get('kappa', 0.0):>9.2e} {rec['residual']:>9.2e} {rec['step']:>9.2e}"
        )

    return log


def _step_extras(rec) -> dict[str, np.ndarray]:
    """Per-step datasets beyond FORMATS.md's: joint impulses, complementarity, contacts."""
    extra = {"impulses": rec.impulses, "solver/complementarity": np.float64(rec.complementarity)}
    if rec.contacts is not None:
        c = rec.contacts
        extra.update({
            "contacts/distance": c.distance, "contacts/normal_impulse": c.normal_impulse,
            "contacts/friction_impulse": c.friction_impulse, "contacts/slip": c.slip,
        })
    return extra


class _Progress:
    def __init__(self, total: int):
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        self._p = Progress(
            TextColumn("simulating"), BarColumn(), TextColumn("{task.completed}/{task.total} steps"), TimeRemainingColumn(),
            transient=True,
        )
        self._task = self._p.add_task("sim", total=total)
        self._p.start()

    def advance(self) -> None:
        self._p.advance(self._task)

    def close(self) -> None:
        self._p.stop()


def _progress(total: int, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    return _Progress(total)


def _close(progress) -> None:
    if progress is not None:
        progress.close()


# ----------------------------------------------------------------------- energy
@app.command()
@_reports_errors
def energy(
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.")],
    csv: Annotated[Optional[Path], typer.Option("--csv", help="Write per-step energy and momentum as CSV.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the summary and series as JSON.")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Write a PNG plot of energy and momentum against time.")] = None,
) -> None:
    """Kinetic, potential and mechanical energy and momentum of a run."""
    stored = read_storage(run)
    spec = load_scene_spec_from_string(stored.scene_yaml, file=f"{run}:scene")
    mech = build_mechanism(spec, f"{run}:scene")
    if stored.steps_completed < 1:
        raise InputError(f"{run}: the run has no completed step; energy needs at least one")
    me = mechanics(mech, stored.time, stored.x, stored.q, stored.v, stored.omega)
    summary = _energy_summary(me)
    if stored.status != "complete":
        _err(f"warning: {run}: the run is {stored.status} after {stored.steps_completed} steps")
    typer.echo(f"{run}: {spec.name}, {len(me.time)} states (t = 0 .. {me.time[-1]:g} s), status {stored.status}")
    typer.echo(f"{'quantity':<22}{'initial':>14}{'final':>14}{'max drift':>14}{'rel drift':>12}")
    for key, row in summary.items():
        typer.echo(f"{key:<22}{row['initial']:>14.6g}{row['final']:>14.6g}{row['max_drift']:>14.3e}{row['relative_drift']:>12.3e}")
    if csv is not None:
        _write_csv(csv, me)
    if json_out is not None:
        _write_json(json_out, me, summary, stored)
    if plot is not None:
        _write_plot(plot, me, spec.name)


def _energy_summary(me) -> dict:
    """Initial, final and largest drift of each quantity; momenta drift componentwise."""
    rows = {
        "kinetic [J]": me.kinetic[:, None],
        "potential [J]": me.potential[:, None],
        "mechanical [J]": me.mechanical[:, None],
        "linear momentum": me.linear_momentum,
        "angular momentum": me.angular_momentum,
    }
    out = {}
    for name, series in rows.items():
        drift = float(np.max(np.abs(series - series[0])))
        size = np.linalg.norm(series, axis=1)
        out[name] = {
            "initial": float(size[0]) if series.shape[1] > 1 else float(series[0, 0]),
            "final": float(size[-1]) if series.shape[1] > 1 else float(series[-1, 0]),
            "max_drift": drift,
            "relative_drift": drift / (float(np.max(np.abs(series))) or 1.0),
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
    try:
        Path(path).write_text(json.dumps(doc, indent=1))
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None


def _write_plot(path: Path, me, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    axes[0].plot(me.time, me.kinetic, label="kinetic")
    axes[0].plot(me.time, me.potential, label="potential")
    axes[0].plot(me.time, me.mechanical, label="mechanical", color="k")
    axes[0].set_ylabel("energy [J]")
    axes[0].legend(loc="best")
    axes[0].set_title(f"{name}: energy and momentum")
    for i, c in enumerate("xyz"):
        axes[1].plot(me.time, me.linear_momentum[:, i], label=f"p_{c}")
        axes[2].plot(me.time, me.angular_momentum[:, i], label=f"L_{c}")
    axes[1].set_ylabel("linear momentum [kg m/s]")
    axes[2].set_ylabel("angular momentum [kg m^2/s]")
    axes[1].legend(loc="best")
    axes[2].legend(loc="best")
    axes[2].set_xlabel("time [s]")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)


# --------------------------------------------------------------------- contacts
@app.command()
@_reports_errors
def contacts(
    run: Annotated[Path, typer.Argument(help="Storage file written by `dojo simulate`.")],
    gap: Annotated[float, typer.Option("--gap", help="A contact touches when closer than this (m) and carrying more than btol/gap.")] = DEFAULT_GAP,
    slip_tol: Annotated[float, typer.Option("--slip-tol", help="Touching contacts slower than this (m/s) stick.")] = DEFAULT_SLIP_TOL,
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Write the summary as JSON.")] = None,
) -> None:
    """Per-contact summary of a run: penetration, time in contact, stick/slip, cone violation."""
    if not gap > 0 or not slip_tol > 0:
        raise InputError("--gap and --slip-tol: must be > 0")
    stored = read_storage(run)
    if "contacts/distance" not in stored.extras:
        raise InputError(f"{run}: the run has no contact records (its scene has no contacts)")
    spec = load_scene_spec_from_string(stored.scene_yaml, file=f"{run}:scene")
    e = stored.extras
    rows = summarize_contacts(
        [c.name for c in spec.contacts], [c.model for c in spec.contacts], np.array([c.friction for c in spec.contacts]),
        e["contacts/distance"], e["contacts/normal_impulse"], e["contacts/friction_impulse"], e["contacts/slip"],
        btol=float(spec.solver.btol), gap=gap, slip_tol=slip_tol,
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
        try:
            json_out.write_text(json.dumps({"run": str(run), "status": stored.status, "contacts": [r.to_dict() for r in rows]}, indent=1))
        except OSError as exc:
            raise StorageError(f"{json_out}: cannot write ({exc.strerror or exc})") from None


# ------------------------------------------------------------------------ check
@app.command()
@_reports_errors
def check(scene: SceneArg, overrides: SetOpt = None) -> None:
    """Validate a scene and print its bodies, joints, contacts and dimensions."""
    spec, mech = _load(scene, overrides)
    typer.echo(f"scene {spec.name!r}: valid")
    typer.echo(f"  timestep {mech.timestep:g} s, gravity {list(map(float, mech.gravity))}, steps {mech.default_steps}")
    typer.echo(f"bodies ({mech.nb}):")
    for b in mech.bodies:
        diag = np.diag(b.inertia)
        typer.echo(f"  {b.name:<16} {b.shape.kind:<9} mass {b.mass:g} kg, inertia diag [{diag[0]:.4g}, {diag[1]:.4g}, {diag[2]:.4g}]")
    typer.echo(f"joints ({mech.nj}):")
    for i, j in enumerate(mech.joints):
        parent = "origin" if j.parent < 0 else mech.bodies[j.parent].name
        loop = " (closes a loop)" if i in mech.loop_joints else ""
        ft, fr = j.free
        limits = ""
        if j.limits is not None:
            limits = f", limits {list(map(float, j.limits[0]))} .. {list(map(float, j.limits[1]))}"
        typer.echo(
            f"  {j.name:<16} {j.type:<18} {parent} -> {mech.bodies[j.child].name}: "
            f"{ft} translational + {fr} rotational free{loop}{limits}"
        )
    typer.echo(f"contacts ({mech.nc}):")
    for c in mech.contacts:
        other = "a half-space" if c.kind == "halfspace" else f"the {c.kind} of body {mech.bodies[c.other].name!r}"
        typer.echo(
            f"  {c.name:<16} {c.model:<9} on {mech.bodies[c.body].name} against {other}, "
            f"friction {c.friction:g}, radius {c.radius:g}"
        )
    typer.echo("dimensions:")
    typer.echo(f"  maximal state {mech.maximal_dimension()} (13 per body), minimal state {mech.minimal_dimension()}")
    typer.echo(f"  inputs {mech.input_dimension} per joint {mech.input_dimensions()}, constraint rows {mech.nl}")
    typer.echo(f"  joint-limit bounds {mech.nlim}, contact unknowns {2 * sum(step_half_sizes(mech))}")
    typer.echo(f"  controller {spec.controller.type if spec.controller else 'none'}")


# ----------------------------------------------------------------------- scenes
@app.command()
@_reports_errors
def scenes(
    show: Annotated[Optional[str], typer.Option("--show", help="Print a built-in scene's YAML.")] = None,
    copy: Annotated[Optional[tuple[str, Path]], typer.Option("--copy", help="Copy a built-in scene into a folder: --copy NAME DIR.")] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite when copying.")] = False,
) -> None:
    """List the built-in scenes, print one (--show) or copy one (--copy NAME DIR)."""
    names = builtin_scene_names()
    if show is not None:
        _known(show, names)
        typer.echo(builtin_scene_text(show), nl=False)
        return
    if copy and copy[0] is not None:
        name, folder = copy
        _known(name, names)
        if not folder.is_dir():
            raise StorageError(f"{folder}: not a folder")
        target = folder / f"{name}.yaml"
        if target.exists() and not force:
            raise StorageError(f"{target}: already exists (use --force to overwrite)")
        try:
            shutil.copyfile(builtin_scene_path(name), target)
        except OSError as exc:
            raise StorageError(f"{target}: cannot write ({exc.strerror or exc})") from None
        typer.echo(f"copied {name} to {target}")
        return
    for name in names:
        typer.echo(f"{name:<18} {_first_comment(builtin_scene_text(name))}")


def step_half_sizes(mech) -> list[int]:
    """Slack (and impulse) unknowns per contact."""
    return [CONTACT_HALF_SIZE[c.model] for c in mech.contacts]


def _known(name: str, names: list[str]) -> None:
    if name not in names:
        raise InputError(f"no built-in scene {name!r} (built-in: {', '.join(names)})")


def _first_comment(text: str) -> str:
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            s = s.lstrip("#").strip()
            if s:
                return s
    return ""


def main() -> None:
    """Entry point of the ``dojo`` command."""
    app()


# Commands defined in their own modules register themselves on ``app`` when imported.
from dojo_cli.cli import picture_commands, replay_command  # noqa: E402,F401
from dojo_cli.cli import urdf_command  # noqa: E402,F401
from dojo_cli.cli import gradient_commands  # noqa: E402,F401
