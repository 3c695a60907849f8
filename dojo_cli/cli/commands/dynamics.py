"""`dojo dynamics`: a scene's minimal-coordinate dynamics at one state (docs/minimal.md,
"Command line").

M, C, the springs' and dampers' generalized forces, forward and inverse dynamics, E, the
locked joints' lock forces (minimal.lock_forces) and, with ``--derivatives``, the
derivative blocks, each computed by dojo_cli.minimal (one call into the core per quantity)
in the nominal order and then converted to ``--order`` by ``minimal.change_order``, every
vector and matrix labelled with that order's names.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli import __version__
from dojo_cli.cli.shared import FromOpt, IndexOpt, SceneArg, SetOpt, echo_err, load_scene_arguments, printable, reports_errors
from dojo_cli.cli.commands.tables import number_table, number_text, print_matrix
from dojo_cli.errors import InputError
from dojo_cli.io.dynamics_files import DynamicsFile, dynamics_document, write_dynamics_file
from dojo_cli.io.labelled_files import check_output
from dojo_cli.io.state_files import check_start_options, names_shown, read_minimal_state_file, stored_knot, vector_from

StateOpt = Annotated[
    Optional[Path],
    typer.Option("--state", help="The state x = [q; v] in --order: JSON (a list, or {\"q\": ..., \"v\": ...} as lists or "
                 "name: value objects; the output of --json too), NPZ (arrays q and v, or x), CSV/TXT (nx numbers) or "
                 "a `dojo dynamics -o` file. Default: the scene's initial state.", readable=False),
]
TauOpt = Annotated[
    Optional[list[str]],
    typer.Option("--tau", help="Generalized forces for the forward dynamics, in --order: nv numbers (commas or repeated), "
                 "or NAME=VALUE pairs (the others zero). Default: zero."),
]
VdotOpt = Annotated[
    Optional[list[str]],
    typer.Option("--vdot", help="Accelerations for the inverse dynamics, as --tau (velocity names). Default: zero."),
]


# ------------------------------------------------------------------ parsing
def parse_named_values(values: list[str] | None, names: list[str], what: str, kind: str) -> np.ndarray:
    """(n,) from ``--tau``/``--vdot`` values: n numbers, or NAME=VALUE pairs (others zero).

    Args:
        names: the entries' names in the chosen order; kind: "torque" or "velocity" (for messages).
    """
    n = len(names)
    if not values:
        return np.zeros(n)
    tokens = [t for v in values for t in re.split(r"[,\s]+", str(v).strip()) if t]
    pairs = [t for t in tokens if "=" in t]
    if pairs and len(pairs) != len(tokens):
        raise InputError(f"{what}: give either {n} numbers or NAME=VALUE pairs, not both")
    if not pairs:
        try:
            out = np.array([float(t) for t in tokens])
        except ValueError:
            raise InputError(f"{what}: expected numbers or NAME=VALUE pairs, got {' '.join(values)!r}") from None
        if out.size != n:
            raise InputError(f"{what}: {out.size} values; this model has nv = {n} {kind} entries ({names_shown(names)})")
        return vector_from(out, what)
    out = np.zeros(n)
    where = {name: k for k, name in enumerate(names)}
    seen = set()
    for token in tokens:
        name, _, text = token.rpartition("=")  # names may hold ':' (floating_base:vx), never '='
        if name not in where:
            raise InputError(f"{what}: unknown {kind} name {name!r} (known: {names_shown(names)})")
        if name in seen:
            raise InputError(f"{what}: {name!r} given twice")
        seen.add(name)
        try:
            out[where[name]] = float(text)
        except ValueError:
            raise InputError(f"{what}: {name}: expected a number, got {text!r}") from None
    return vector_from(out, what)


def state_from_run(mech, model, spec, run: Path, index: int | None) -> tuple[np.ndarray, str, float]:
    """(x nominal, source phrase, time) of the state stored at knot ``index`` of ``run``.

    The bodies' stored poses and velocities at t_k (a knot file; docs/storage.md) become
    the minimal state as init_state makes it from the scene's (``state_from_maximal``).
    """
    from dojo_cli.io.storage import KNOT

    stored, k = stored_knot(run, index, [b.name for b in mech.bodies], lambda line: echo_err(f"warning: {line}"), "knots")
    if stored.attrs.get("scene_name") != spec.name:
        echo_err(f"warning: --from {run}: written by scene {stored.attrs.get('scene_name')!r}, evaluating scene {spec.name!r}")
    if stored.velocities != KNOT:
        echo_err(f"warning: --from {run}: an older file with midpoint velocities; they are taken as the velocities at t_k")
    traj = stored.trajectory
    z = np.concatenate([traj.x[k], traj.v[k], traj.q[k], traj.omega[k]], axis=1).reshape(-1)
    if not np.all(np.isfinite(z)):
        raise InputError(f"--index {index}: knot {k} of {run} is not finite; pick an earlier one")
    return model.state_from_maximal(z), f"knot {k} of {run} (t = {traj.time[k]:g} s)", float(traj.time[k])


# --------------------------------------------------------------- computing
def evaluate(model, x: np.ndarray, tau: np.ndarray, vdot: np.ndarray, derivatives: bool, tangent: bool) -> dict:
    """Every quantity in the nominal order: name -> array (the minimal functions, nothing else)."""
    from dojo_cli import minimal

    out = {
        "q": x[: model.nq], "v": x[model.nq:],
        "M": minimal.M_func(model, x), "C": minimal.C_func(model, x),
        "passive": minimal.passive_forces(model, x),
        "tau": tau, "forward_dynamics": minimal.forward_dynamics(model, x, tau),
        "vdot": vdot, "inverse_dynamics": minimal.inverse_dynamics(model, x, vdot),
        "E": minimal.velocity_kinematics(model, x),
    }
    if model.locked_joints:  # Drake's Lock: what the locks carry, M vdot + C - tau on their rows
        out["lock_forces"] = minimal.lock_forces(model, x, tau)
    if derivatives:
        out["forward_dynamics_dx"], out["forward_dynamics_dtau"] = minimal.forward_dynamics_deriv(model, x, tau, tangent)
        out["inverse_dynamics_dx"], out["inverse_dynamics_dvdot"] = minimal.inverse_dynamics_deriv(model, x, vdot, tangent)
    return out


# (kind of the rows, kind of the columns) of each quantity, change_order's kinds
KINDS = {
    "q": "config", "v": "velocity", "C": "torque", "passive": "torque", "tau": "torque", "lock_forces": "torque",
    "forward_dynamics": "velocity", "vdot": "velocity", "inverse_dynamics": "torque",
    "M": ("torque", "velocity"), "E": ("config", "velocity"),
    "forward_dynamics_dx": ("velocity", "state"), "forward_dynamics_dtau": ("velocity", "torque"),
    "inverse_dynamics_dx": ("torque", "state"), "inverse_dynamics_dvdot": ("torque", "velocity"),
}
MEANING = {
    "q": "configuration", "v": "velocity", "C": "Coriolis, centrifugal and gravity (M vdot + C = tau)",
    "passive": "springs and dampers (not in C)", "tau": "--tau", "forward_dynamics": "vdot = M^-1 (tau - C)",
    "vdot": "--vdot", "inverse_dynamics": "tau = M vdot + C", "M": "mass matrix", "E": "qdot = E v",
    "lock_forces": "locked joints' forces M FD(tau) + C - tau (zero on free rows)",
    "forward_dynamics_dx": "d vdot / dx", "forward_dynamics_dtau": "d vdot / d tau = M^-1",
    "inverse_dynamics_dx": "d tau / dx", "inverse_dynamics_dvdot": "d tau / d vdot = M",
}


def in_order(model, nominal: dict, order: str, tangent: bool) -> tuple[dict, dict]:
    """(arrays converted to ``order``, name -> labels (names) or (row names, column names))."""
    from dojo_cli import minimal

    cq, cv, ct = minimal.order_names(model, order)
    q = nominal["q"]
    state_cols = [f"dq:{n}" for n in cv] + [f"v:{n}" for n in cv] if tangent else [f"q:{n}" for n in cq] + [f"v:{n}" for n in cv]
    label = {"config": cq, "velocity": cv, "torque": ct, "state": state_cols}
    values, labels = {}, {}
    for name, value in nominal.items():
        kind = KINDS[name]
        if isinstance(kind, tuple) and kind[1] == "state" and tangent:
            kind = (kind[0], "error_state")
        values[name] = minimal.change_order(model, value, "nominal", order, kind=kind, q=q)
        if isinstance(kind, tuple):
            labels[name] = (label[kind[0]], label["state" if kind[1] == "error_state" else kind[1]])
        else:
            labels[name] = label[kind]
    return values, labels


# ----------------------------------------------------------------- printing
def _vec_text(values) -> str:
    return "[" + ", ".join(number_text(v) for v in values) + "]"


def _print_tables(console, values: dict, labels: dict, matrices: list[str], locked: set[str] = frozenset()) -> None:
    """The configuration, the velocity-space vectors in two tables, the lock forces (the rows
    named in ``locked``, the locked joints' torque names: the same in every order), then the
    matrices."""
    t = number_table("configuration", ["name", "q"])
    for name, val in zip(labels["q"], values["q"]):
        t.add_row(printable(name), number_text(val))
    console.print(t)
    groups = (
        ("velocities and accelerations", [("v", "v"), ("vdot", "vdot (--vdot)"), ("forward_dynamics", "FD(tau)")]),
        ("generalized forces: M vdot + C = tau", [("C", "C"), ("passive", "passive"), ("tau", "tau (--tau)"),
                                                  ("inverse_dynamics", "ID(vdot)")]),
    )
    for title, cols in groups:
        names = labels[cols[0][0]]
        t = number_table(title, ["name"] + [h for _, h in cols])
        for i, name in enumerate(names):
            t.add_row(printable(name), *(number_text(values[c][i]) for c, _ in cols))
        console.print(t)
    if locked:  # the locked rows only: what each lock carries at FD(tau)
        t = number_table("lock forces", ["name", "M FD + C - tau"])
        for name, val in zip(labels["lock_forces"], values["lock_forces"]):
            if name in locked:
                t.add_row(printable(name), number_text(val))
        console.print(t)
    for name in matrices:
        print_matrix(console, f"{name}: {MEANING[name]}", values[name], *labels[name])


# ------------------------------------------------------------------ command
@reports_errors
def dynamics(
    scene: SceneArg,
    state: StateOpt = None,
    run: FromOpt = None,
    index: IndexOpt = None,
    tau_values: TauOpt = None,
    vdot_values: VdotOpt = None,
    order: Annotated[str, typer.Option("--order", help="Order (and convention) of every vector and matrix: nominal, pinocchio or mujoco.")] = "nominal",
    derivatives: Annotated[bool, typer.Option("--derivatives", help="Also the derivatives of the forward and inverse dynamics (w.r.t. x, tau, vdot).")] = False,
    tangent: Annotated[bool, typer.Option("--tangent", help="Derivatives w.r.t. the tangent state [dq; v] (Pinocchio's) instead of the raw x.")] = False,
    overrides: SetOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON (every digit) instead of tables.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the result with its names: .h5, .json or .npz.")] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output file.")] = False,
) -> None:
    """Minimal-coordinate dynamics at one state: M, C, forward and inverse dynamics, E (and derivatives)."""
    from dojo_cli import minimal
    from dojo_cli.minimal.orders import BUILTIN_ORDERS
    from dojo_cli.scene.loader import dump_scene

    if order not in BUILTIN_ORDERS:
        raise InputError(f"--order: must be one of {', '.join(BUILTIN_ORDERS)}, got {order!r}")
    if tangent and not derivatives:
        raise InputError("--tangent: only with --derivatives")
    check_start_options(state, run, index)
    check_output(output, force)
    spec, mech = load_scene_arguments(scene, overrides)
    model = minimal.build_model(mech)
    if model.loop_joints:
        echo_err(f"warning: {spec.name}: loop-closing joints {', '.join(model.loop_joints)} are not part of the tree dynamics")
    time = None
    if state is not None:
        x, file_order = read_minimal_state_file(model, state, order)
        source = f"the state in {state}" + (f" ({file_order} order)" if file_order != order else "")
    elif run is not None:
        x, source, time = state_from_run(mech, model, spec, run, index)
    else:
        x, source = minimal.init_state(model), "the scene's initial state"
    q = x[: model.nq]
    _, cv, ct = minimal.order_names(model, order)
    tau = minimal.change_order(model, parse_named_values(tau_values, ct, "--tau", "torque"), order, "nominal", kind="torque", q=q)
    vdot = minimal.change_order(model, parse_named_values(vdot_values, cv, "--vdot", "velocity"), order, "nominal", kind="velocity", q=q)
    try:
        nominal = evaluate(model, x, tau, vdot, derivatives, tangent)
    except (ValueError, RuntimeError) as exc:  # the core's refusals (a singular mass matrix)
        raise InputError(f"{spec.name}: {exc}") from None
    values, labels = in_order(model, nominal, order, tangent)
    vectors = {n: (values[n], labels[n]) for n in values if values[n].ndim == 1}
    matrices = {n: (values[n], *labels[n]) for n in values if values[n].ndim == 2}
    meta = {
        "scene_name": spec.name, "order": order, "source": source, "time": time,
        "nq": model.nq, "nv": model.nv, "derivatives": derivatives,
        "derivative_columns": ("tangent [dq; v]" if tangent else "raw x = [q; v]") if derivatives else None,
        "loop_joints": model.loop_joints, "locked_joints": model.locked_joints, "dojo_cli_version": __version__,
    }
    content = DynamicsFile(vectors, matrices, meta)
    if json_out:
        typer.echo(json.dumps(dynamics_document(content), indent=1, default=float))
    else:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=False)
        typer.echo(printable(f"{spec.name}: minimal-coordinate dynamics at {source}, {order} order "
                             f"(nq = {model.nq}, nv = {model.nv}); gravity {_vec_text(model.gravity)} m/s^2; "
                             "contacts and joint limits are not included"
                             + (f"; locked (held): {', '.join(model.locked_joints)}, so FD(tau) is the reduced "
                                "solve (their velocities read as zero)" if model.locked_joints else "")))
        shown = ["M", "E"] + ([n for n in matrices if n not in ("M", "E")] if derivatives else [])
        held = {n for n, h in zip(model.torque_names, model.locked_v) if h}
        _print_tables(console, values, labels, shown, held)
    if output is not None:
        write_dynamics_file(output, DynamicsFile(vectors, matrices, {**meta, "scene": dump_scene(spec)}), overwrite=force)
        if not json_out:
            typer.echo(f"wrote {output}")

