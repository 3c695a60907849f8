"""`dojo step` and `dojo gradients` (listed in dojo_cli.cli.app.COMMANDS).

Both start from a state chosen the same way (the scene's initial state, ``--state FILE``
or ``--from RUN.h5 --index K``) and inputs chosen the same way (``--input``,
``--input-file``, the stored inputs of that step, or the scene's controller). The
finite-difference check of ``dojo gradients --check`` is dojo_cli.analysis.gradient_check
(this module prints its table). Conventions: docs/gradients.md; file formats:
docs/storage.md.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import numpy as np
import typer

from dojo_cli import __version__
from dojo_cli.api import step_gradients as _api_step_gradients
from dojo_cli.cli.shared import FromOpt, IndexOpt, SceneArg, SetOpt, echo_err, load_scene_arguments, reports_errors
from dojo_cli.errors import InputError
from dojo_cli.io.gradient_files import GradientFile, write_gradient_file
from dojo_cli.io.labelled_files import check_output, write_text
from dojo_cli.io.state_files import (
    check_start_options, finite_vector, numbers_from_file, read_state_file, stored_start, vector_from,
)
from dojo_cli.model.parameters import PARAMETER_KINDS
from dojo_cli.model.state import unpack_maximal
from dojo_cli.physics.coordinates import maximal_to_minimal
from dojo_cli.scene.loader import dump_scene
from dojo_cli.model.controller import external_wrench
from dojo_cli.simulation.gradient_record import (
    input_labels,
    maximal_labels,
    minimal_labels,
)
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.step import solve_step

if TYPE_CHECKING:
    from dojo_cli.analysis.gradient_check import CheckReport

# Indirection so tests can substitute the gradient computation (a deliberately wrong
# Jacobian must make --check fail).
step_gradients = _api_step_gradients

# Quaternions in a --state file may be off unit length by this much (then normalised).
WRT_CHOICES = ("state", "input", "params")

StateOpt = Annotated[
    Optional[Path],
    typer.Option("--state", help="Start from this state: JSON {\"maximal\": [...]} or {\"minimal\": [...]}, "
                 "or a CSV/TXT/NPY list of 13*nb (maximal) or 2*nf (minimal) numbers. See docs/gradients.md."),
]
# readable=False: read_storage reports an unreadable file (exit 3), not click (exit 2, a usage box)
InputOpt = Annotated[
    Optional[list[str]],
    typer.Option("--input", "-u", help="Inputs: joint inputs in joint order (N, N m), or the scene's actuators in order; numbers separated by commas, or repeat the flag."),
]
InputFileOpt = Annotated[Optional[Path], typer.Option("--input-file", help="Inputs (as --input) from a JSON list/{\"input\": [...]} or CSV/NPY file.")]
MinimalOpt = Annotated[bool, typer.Option("--minimal", help="Minimal coordinates (per joint [coordinates; velocities]) instead of maximal.")]
AbortOpt = Annotated[bool, typer.Option("--abort-on-failure", help="Exit with code 1 when the solver does not converge.")]


# ------------------------------------------------------------------- states
@dataclass
class StartState:
    """Where a step starts.

    Attributes:
        z: (13 nb,) maximal state.
        y: (2 nf,) minimal state when the user gave one (used as is with --minimal), else None.
        k: step index (controller, time t = k h, external forces).
        stored_input: the inputs a --from run applied at step k, or None.
        source: a phrase for the report ("the scene's initial state", "state 12 of run.h5").
        warm_start: (nl,) joint impulses to start the solve from: a --from run's of step
            k - 1, the run's own warm start of step k (so the step is the run's to rounding).
        angles: (nf,) a --from run's minimal/q of state k: its revolute angles unwrapped
            through turns, where the run's step k measured its limits from.
        substeps: how many substeps a --from run solved its step k as (1: a plain step).
        start_record: a --from run's interior-point start record of step k - 1 (its
            solver/start row: the warm start, the restart scale), so the step starts as the
            run's step k did.
    """

    z: np.ndarray
    y: np.ndarray | None
    k: int
    stored_input: np.ndarray | None
    source: str
    warm_start: np.ndarray | None = None
    angles: np.ndarray | None = None
    substeps: int = 1
    start_record: np.ndarray | None = None


def resolve_state(mech, spec, state: Path | None, run: Path | None, index: int | None) -> StartState:
    """The start state from the options (InputError on any inconsistency)."""
    check_start_options(state, run, index)
    if state is not None:
        z, y = read_state_file(mech, state)
        return StartState(z, y, 0, None, f"the state in {state}")
    if run is not None:
        st = stored_start(run, index, mech, spec.name, lambda line: echo_err(f"warning: {line}"))
        return StartState(st.z, None, st.step, st.stored_input, st.source, st.warm_start, st.angles, st.substeps,
                          st.start_record)
    return StartState(initial_state(mech), None, 0, None, "the scene's initial state")


def resolve_input(mech, start: StartState, values: list[str] | None, file: Path | None) -> tuple[np.ndarray, str]:
    """(u (nu,), where it came from)."""
    nu = mech.nu
    if values and file is not None:
        raise InputError("--input and --input-file: give one of them, not both")
    if values:
        tokens = [t for v in values for t in re.split(r"[,\s]+", str(v).strip()) if t]
        try:
            u = np.array([float(t) for t in tokens])
        except ValueError:
            raise InputError(f"--input: expected numbers, got {' '.join(values)!r}") from None
        where = "--input"
    elif file is not None:
        arr, doc = numbers_from_file(file, "--input-file")
        if doc is not None:
            if "input" not in doc:
                raise InputError(f"--input-file {file}: expected a JSON list of numbers or an object with an 'input' list")
            arr = vector_from(doc["input"], f"--input-file {file}: 'input'")
        u, where = arr, f"--input-file {file}"
    elif start.stored_input is not None:
        return np.asarray(start.stored_input, dtype=float), "the inputs the run applied at this step"
    else:
        ctrl = getattr(mech, "controller", None)
        if ctrl is None:
            return np.zeros(nu), "zero"
        u = np.asarray(ctrl(mech, start.k, start.z), dtype=float).reshape(-1)
        return u, f"the scene's controller ({type(ctrl).__name__})"
    finite_vector(u, where)
    if u.size != nu:
        labels = ", ".join(input_labels(mech)) or "none"
        raise InputError(f"{where}: this scene has {nu} inputs ({labels}), got {u.size}")
    return u, where


def external_forces(mech, start: StartState):
    """(f_ext, tau_ext) of the scene's external forces at the step's time, or (None, None)."""
    external = getattr(mech, "external", None) or []
    if not external:
        return None, None
    q = start.z.reshape(mech.nb, 13)[:, 6:10]
    f, tau = external_wrench(mech, external, start.k * mech.timestep, q)
    if not np.any(f) and not np.any(tau):
        return None, None
    return f, tau


def _fmt(values) -> str:
    return "[" + ", ".join(f"{float(v):.6g}" for v in np.asarray(values).reshape(-1)) + "]"


def _write_json(path: Path, doc: dict) -> None:
    write_text(path, json.dumps(doc, indent=1))


# --------------------------------------------------------------------- step
@reports_errors
def step_command(
    scene: SceneArg,
    state: StateOpt = None,
    run: FromOpt = None,
    index: IndexOpt = None,
    inputs: InputOpt = None,
    input_file: InputFileOpt = None,
    minimal: MinimalOpt = False,
    overrides: SetOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON (the format --state reads).")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the result as JSON to this file.")] = None,
    abort_on_failure: AbortOpt = False,
) -> None:
    """One step of a scene: print or write the next state and the solver's record."""
    spec, mech = load_scene_arguments(scene, overrides)
    start = resolve_state(mech, spec, state, run, index)
    if start.substeps > 1:
        echo_err(f"warning: --index {index}: the run solved step {start.k} as {start.substeps} substeps of "
                 f"{mech.timestep / start.substeps:g} s (its full step failed; solver/substeps); this is the full step")
    u, u_source = resolve_input(mech, start, inputs, input_file)
    f_ext, tau_ext = external_forces(mech, start)
    z1, result = solve_step(mech, start.z, u, mech.default_options, f_ext, tau_ext, lam0=start.warm_start,
                            angles=start.angles, start_record=start.start_record)
    h = mech.timestep
    t0 = start.k * h
    y1 = maximal_to_minimal(mech, z1)
    x, v, q, w = unpack_maximal(z1, mech.nb)
    doc = {
        "scene": spec.name,
        "coordinates": "minimal" if minimal else "maximal",
        "from": start.source,
        "time": t0 + h,
        "start_time": t0,
        "input": u.tolist(),
        "input_source": u_source,
        "maximal": z1.tolist(),
        "minimal": y1.tolist(),
        "minimal_names": minimal_labels(mech),
        "bodies": {
            b.name: {"x": x[i].tolist(), "v": v[i].tolist(), "q": q[i].tolist(), "omega": w[i].tolist()}
            for i, b in enumerate(mech.bodies)
        },
        "solver": {
            "status": result.status.value,
            "iterations": int(result.iterations),
            "residual": float(result.residual),
            "complementarity": float(result.complementarity),
        },
    }
    if json_out:
        typer.echo(json.dumps(doc, indent=1))
    else:
        typer.echo(f"{spec.name}: one step of {h:g} s from {start.source}; input {_fmt(u)} ({u_source})")
        if f_ext is not None:
            typer.echo("external forces of the scene applied")
        if minimal:
            typer.echo(f"next state (t = {t0 + h:g} s), minimal coordinates:")
            width = max([len(n) for n in minimal_labels(mech)] + [10])
            for name, val in zip(minimal_labels(mech), y1):
                typer.echo(f"  {name:<{width}} {val: .9g}")
        else:
            typer.echo(f"next state (t = {t0 + h:g} s), maximal coordinates (x world frame; v, omega the midpoint velocities over the step, v world, omega body frame; q [w x y z]):")
            width = max([len(b.name) for b in mech.bodies] + [4])
            for i, b in enumerate(mech.bodies):
                typer.echo(f"  {b.name:<{width}} x {_fmt(x[i])}  v {_fmt(v[i])}  q {_fmt(q[i])}  omega {_fmt(w[i])}")
    if output is not None:
        _write_json(output, doc)
        if not json_out:
            typer.echo(f"wrote {output}")
    line = f"solver: {result.status.value} ({result.status.message}), {result.iterations} iterations, residual {result.residual:.3e}"
    if not json_out:
        typer.echo(line)
    if not result.success:
        echo_err(f"warning: {line}")
        if abort_on_failure:
            raise typer.Exit(1)


# ---------------------------------------------------------------- gradients
def parse_wrt(wrt: str, params: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(wrt, parameter kinds) from --wrt and --params (--params implies params)."""
    parts = [p.strip() for p in wrt.split(",") if p.strip()]
    bad = [p for p in parts if p not in WRT_CHOICES]
    if bad or not parts:
        raise InputError(f"--wrt: expected a comma-separated subset of {', '.join(WRT_CHOICES)}, got {wrt!r}")
    kinds: tuple[str, ...] = ()
    if params is not None:
        kinds = tuple(p.strip() for p in params.split(",") if p.strip())
        bad = [k for k in kinds if k not in PARAMETER_KINDS]
        if bad or not kinds:
            raise InputError(f"--params: unknown parameter kind(s) {', '.join(bad) or repr(params)}; expected some of {', '.join(PARAMETER_KINDS)}")
        if "params" not in parts:
            parts.append("params")
    elif "params" in parts:
        kinds = PARAMETER_KINDS
    return tuple(dict.fromkeys(parts)), kinds


def check_parameter_kinds(mech, scene: str, kinds: tuple[str, ...]) -> None:
    """Refuse a kind asked for by --params that the scene has no parameter of (``friction``
    on a scene without contacts), rather than leave its columns silently out of P.

    Raises:
        InputError: such a kind (exit code 2), listing the kinds the scene has.
    """
    from dojo_cli.model.parameters import parameter_labels

    missing = [kind for kind in kinds if not parameter_labels(mech, (kind,))]
    if missing:
        present = [kind for kind in PARAMETER_KINDS if parameter_labels(mech, (kind,))]
        raise InputError(f"--params: {scene} has no {' and no '.join(missing)} parameter "
                         f"(its kinds: {', '.join(present) or 'none'})")


def gradient_blocks(mech, g, minimal: bool) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """name -> (matrix, row labels, column labels) of the computed blocks."""
    rows = minimal_labels(mech) if minimal else maximal_labels(mech)
    out = {}
    if g.A is not None:
        out["A"] = (np.asarray(g.A), rows, rows)
    if g.B is not None:
        out["B"] = (np.asarray(g.B), rows, input_labels(mech))
    if g.P is not None:
        out["P"] = (np.asarray(g.P), rows, list(g.labels))
    return out


_BLOCK_MEANING = {"A": "d next state / d state", "B": "d next state / d input", "P": "d next state / d parameters"}


@reports_errors
def gradients_command(
    scene: SceneArg,
    state: StateOpt = None,
    run: FromOpt = None,
    index: IndexOpt = None,
    inputs: InputOpt = None,
    input_file: InputFileOpt = None,
    minimal: MinimalOpt = False,
    overrides: SetOpt = None,
    wrt: Annotated[str, typer.Option("--wrt", help="Derivatives to compute: comma-separated subset of state, input, params.")] = "state,input",
    params: Annotated[Optional[str], typer.Option("--params", help=f"Parameter kinds (implies --wrt params): comma-separated subset of {', '.join(PARAMETER_KINDS)}. Default with --wrt params: all.")] = None,
    kappa: Annotated[Optional[float], typer.Option("--kappa", help="Differentiate the relaxed step on the central path s o gamma = KAPPA (smoother, biased through contact).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the Jacobians with their labels: .h5, .json or .npz.")] = None,
    check: Annotated[bool, typer.Option("--check", help="Compare every block with central finite differences of the step (exit 1 above --check-tol).")] = False,
    check_tol: Annotated[float, typer.Option("--check-tol", help="Largest accepted relative error of --check.")] = 1e-5,
    check_eps: Annotated[float, typer.Option("--check-eps", help="Finite-difference step of --check (relative for inputs and parameters).")] = 1e-6,
    check_solver_tol: Annotated[float, typer.Option("--check-solver-tol", help="rtol = btol of the solver during --check.")] = 1e-10,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output file.")] = False,
    abort_on_failure: AbortOpt = False,
) -> None:
    """Jacobians of one step (implicit function theorem): A = d z'/d z, B = d z'/d u, P = d z'/d theta."""
    from dojo_cli.analysis.gradient_check import check_gradients

    wrt_parts, kinds = parse_wrt(wrt, params)
    if kappa is not None and not (math.isfinite(kappa) and kappa > 0):
        raise InputError(f"--kappa: must be a finite number > 0, got {kappa}")
    for flag, value in (("--check-tol", check_tol), ("--check-eps", check_eps), ("--check-solver-tol", check_solver_tol)):
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"{flag}: must be a finite number > 0, got {value}")
    check_output(output, force)
    spec, mech = load_scene_arguments(scene, overrides)
    if params is not None:
        check_parameter_kinds(mech, spec.name, kinds)
    start = resolve_state(mech, spec, state, run, index)
    if start.substeps > 1 and kappa is not None:
        raise InputError(
            f"--kappa: the run solved step {start.k} ({start.source}) as {start.substeps} substeps (its full step "
            "failed; solver/substeps): the relaxed map of substeps is not defined; leave --kappa out"
        )
    u, u_source = resolve_input(mech, start, inputs, input_file)
    f_ext, _ = external_forces(mech, start)
    if f_ext is not None:
        raise InputError(
            f"{spec.name}: the scene's external forces act at t = {start.k * mech.timestep:g} s; "
            "gradients do not include external forces yet"
        )
    opts = mech.default_options
    if check:
        opts = opts.replace(rtol=check_solver_tol, btol=check_solver_tol, max_iter=max(opts.max_iter, 100))
    x0 = (start.y if start.y is not None else maximal_to_minimal(mech, start.z)) if minimal else start.z
    # a step the run solved as substeps: the derivatives of the map it took, the substeps'
    # composed one (docs/physics.md "Substeps"), never the full step's
    substepped = {"substeps": start.substeps, "lam": start.warm_start} if start.substeps > 1 else {}
    g = step_gradients(mech, x0, u, opts, wrt=wrt_parts, params=kinds, kappa=kappa, minimal=minimal,
                       angles=None if minimal else start.angles, **substepped)
    blocks = gradient_blocks(mech, g, minimal)

    coords = "minimal coordinates (per joint [coordinates; velocities])" if minimal else "maximal tangent coordinates [x, v, phi, w] per body"
    how = (f" solved as {start.substeps} substeps of {mech.timestep / start.substeps:g} s, as the run did "
           "(solver/substeps)") if substepped else ""
    typer.echo(f"{spec.name}: gradients of one step of {mech.timestep:g} s{how} from {start.source}, {coords}")
    typer.echo(f"input {_fmt(u)} ({u_source})")
    res = g.result
    kappa_text = "no contacts or limits" if not mech.has_inequalities else ("relaxed (--kappa)" if kappa is not None else "where the solver stopped")
    typer.echo(
        f"solver: {res.status.value}, {res.iterations} iterations, residual {res.residual:.3e}; "
        f"kappa {g.kappa:.3e} ({kappa_text})"
    )
    if check:
        typer.echo(f"solver tolerances tightened for --check: rtol = btol = {check_solver_tol:g}")
    typer.echo(f"{'block':<6}{'shape':>14}{'max |.|':>12}{'norm':>12}  meaning")
    for name, (mat, _, cols) in blocks.items():
        shape = f"({mat.shape[0]}, {mat.shape[1]})"
        mx = float(np.max(np.abs(mat))) if mat.size else 0.0
        meaning = _BLOCK_MEANING[name]
        if name == "P":
            shown = ", ".join(cols[:3]) + (f", ... ({len(cols)} in all)" if len(cols) > 3 else "")
            meaning += f": {shown or 'none in this scene'}"
        typer.echo(f"{name:<6}{shape:>14}{mx:>12.4g}{np.linalg.norm(mat):>12.4g}  {meaning}")
    if output is not None:
        content = GradientFile(
            matrices={n: b[0] for n, b in blocks.items()},
            labels={n: (b[1], b[2]) for n, b in blocks.items()},
            vectors={"state": np.asarray(x0, dtype=float), "input": u, "next_state": np.asarray(g.next_state, dtype=float)},
            meta={
                "coordinates": "minimal" if minimal else "maximal",
                "state_labels": minimal_labels(mech) if minimal else [
                    f"{b.name}.{p}" for b in mech.bodies for p in ("x.0", "x.1", "x.2", "v.0", "v.1", "v.2",
                                                                    "q.w", "q.x", "q.y", "q.z", "w.0", "w.1", "w.2")],
                "scene_name": spec.name, "scene": dump_scene(spec), "source": start.source,
                "time": start.k * mech.timestep, "timestep": mech.timestep,
                "kappa": g.kappa, "kappa_requested": kappa,
                "solver_status": res.status.value, "solver_iterations": int(res.iterations),
                "solver_residual": float(res.residual), "solver_options": opts.to_dict(),
                "dojo_cli_version": __version__,
            },
        )
        write_gradient_file(output, content, overwrite=force)
        typer.echo(f"wrote {output}")
    failed = False
    if not res.success:
        echo_err(f"warning: the solver {res.status.message} (residual {res.residual:.3e}); the gradients are those of an unconverged step")
        failed = abort_on_failure
    if check:
        report = check_gradients(mech, x0, u, opts, blocks, minimal=minimal, kappa=kappa, eps=check_eps, kinds=kinds,
                                 substeps=start.substeps)
        ok = print_check(report, check_tol, mech, kappa)
        if not ok:
            raise typer.Exit(1)
    if failed:
        raise typer.Exit(1)


# Group rows `dojo gradients --check` prints per block before only the worst are shown.
MAX_GROUP_ROWS = 12


def print_check(report: CheckReport, tol: float, mech, kappa) -> bool:
    """Print the table; True when every block is within ``tol``."""
    typer.echo(
        f"finite-difference check: 4-point central differences, {report.evaluations} step solves; "
        f"relative error = max over entries of |J - FD| / max(1, |FD|)"
    )
    for note in report.notes:
        typer.echo(f"note: {note}")
    if report.unconverged:
        typer.echo(f"warning: {report.unconverged} of {report.evaluations} finite-difference solves did not converge")
    typer.echo(f"{'block':<6}{'columns':<28}{'n':>5}{'rel. error':>12}  result")
    ok = True
    for name, err in report.blocks.items():
        passed = err <= tol
        ok &= passed
        typer.echo(f"{name:<6}{'(all)':<28}{'':>5}{err:>12.2e}  {'ok' if passed else 'FAIL'}")
        rows = [g for g in report.groups if g.block == name]
        shown = rows
        if len(rows) > MAX_GROUP_ROWS:
            shown = sorted(rows, key=lambda g: -g.error)[:MAX_GROUP_ROWS // 2]
        for g in shown:
            typer.echo(f"{'':<6}{g.group:<28}{g.columns:>5}{g.error:>12.2e}  {'ok' if g.error <= tol else 'FAIL'}")
        if len(shown) < len(rows):
            rest = max(g.error for g in rows if g not in shown)
            typer.echo(f"{'':<6}... {len(rows) - len(shown)} more groups, largest error {rest:.2e}")
    typer.echo(f"check {'passed' if ok else 'FAILED'}: tolerance {tol:g}")
    return ok
