"""`dojo dynamics`: a scene's minimal-coordinate dynamics at one state (docs/minimal.md,
"Command line").

M, C, the springs' and dampers' generalized forces, forward and inverse dynamics, E and,
with ``--derivatives``, the derivative blocks, each computed by dojo_cli.minimal (one
call into the core per quantity) in the nominal order and then converted to ``--order``
by ``minimal.change_order``, every vector and matrix labelled with that order's names.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer

from dojo_cli import __version__
from dojo_cli.cli.shared import SceneArg, SetOpt, echo_err, load_scene_arguments, printable, reports_errors
from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.dynamics_files import SUFFIXES, DynamicsFile, dynamics_document, read_dynamics_file, write_dynamics_file
from dojo_cli.io.state_files import NonFinite, check_state_file, read_json, read_plain_numbers, stored_knot

ORDERS = ("nominal", "pinocchio", "mujoco")
# A quaternion of a --state file may be off unit length by this much (then normalised);
# beyond it the file is taken for a mistake (PinnZoo's states are unit quaternions).
QUAT_TOL = 1e-6
# Printed numbers: significant digits (--json and -o keep every digit).
DIGITS = 6

StateOpt = Annotated[
    Optional[Path],
    typer.Option("--state", help="The state x = [q; v] in --order: JSON (a list, or {\"q\": ..., \"v\": ...} as lists or "
                 "name: value objects; the output of --json too), NPZ (arrays q and v, or x), CSV/TXT (nx numbers) or "
                 "a `dojo dynamics -o` file. Default: the scene's initial state.", readable=False),
]
FromOpt = Annotated[Optional[Path], typer.Option("--from", help="Take the state stored at knot --index K of this run (storage file).", readable=False)]
IndexOpt = Annotated[Optional[int], typer.Option("--index", help="Knot K in the --from run (0 = initial; negative counts from the end).")]
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
def _finite_vector(values, what: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{what}: expected a list of numbers") from None
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what}: contains non-finite numbers (NaN or infinity)")
    return arr


def _names_shown(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


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
            raise InputError(f"{what}: {out.size} values; this model has nv = {n} {kind} entries ({_names_shown(names)})")
        return _finite_vector(out, what)
    out = np.zeros(n)
    where = {name: k for k, name in enumerate(names)}
    seen = set()
    for token in tokens:
        name, _, text = token.rpartition("=")  # names may hold ':' (floating_base:vx), never '='
        if name not in where:
            raise InputError(f"{what}: unknown {kind} name {name!r} (known: {_names_shown(names)})")
        if name in seen:
            raise InputError(f"{what}: {name!r} given twice")
        seen.add(name)
        try:
            out[where[name]] = float(text)
        except ValueError:
            raise InputError(f"{what}: {name}: expected a number, got {text!r}") from None
    return _finite_vector(out, what)


def _vector_by_names(value: Any, names: list[str], what: str) -> np.ndarray:
    """A vector given as a list (in ``names``' order), {"names": [...], "data": [...]} or {name: number}."""
    n = len(names)
    if isinstance(value, dict) and "data" in value and "names" in value:
        given = value["names"]
        data = _finite_vector(value["data"], what)
        if not isinstance(given, list) or len(given) != data.size:
            raise InputError(f"{what}: 'names' and 'data' must be lists of the same length")
        value = dict(zip((str(g) for g in given), data.tolist()))
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise InputError(f"{what}: unknown name {unknown[0]!r} (known: {_names_shown(names)})")
        missing = [k for k in names if k not in value]
        if missing:
            raise InputError(f"{what}: no value for {_names_shown(missing, 6)} (every one of the {n} names is needed)")
        return _finite_vector([value[k] for k in names], what)
    if not isinstance(value, (list, np.ndarray)) or (isinstance(value, list) and not all(_is_number(t) for t in value)):
        raise InputError(f"{what}: expected a list of {n} numbers, {{name: number}} or {{\"names\": [...], \"data\": [...]}}")
    arr = _finite_vector(value, what)
    if arr.size != n:
        raise InputError(f"{what}: {arr.size} numbers; expected {n} ({_names_shown(names)})")
    return arr


def read_state(model, path: Path, order: str) -> tuple[np.ndarray, str]:
    """(x in the order of the file, that order) from a --state file (formats: StateOpt).

    A file that says its order (a `dojo dynamics` output, a JSON object with "order") is
    read in it; otherwise in ``order``.
    """
    from dojo_cli import minimal

    check_state_file(path, "--state")
    what = f"--state {path}"
    suffix = path.suffix.lower()
    file_order = order
    q = v = x = None
    cq, cv, _ = minimal.order_names(model, order)
    try:
        if suffix == ".json":
            doc = read_json(path, "--state")  # NaN and Infinity come back as NonFinite
            if isinstance(doc, dict):
                file_order = doc.get("order", order)
                if file_order not in ORDERS:
                    raise InputError(f"{what}: 'order': must be one of {', '.join(ORDERS)}, got {str(file_order)[:40]!r}")
                cq, cv, _ = minimal.order_names(model, file_order)
                if "x" in doc:
                    x = doc["x"]
                elif "q" in doc and "v" in doc:
                    q, v = doc["q"], doc["v"]
                else:
                    raise InputError(f"{what}: expected a JSON list of nx = {model.nx} numbers or an object with 'q' and 'v'")
                if any(isinstance(t, NonFinite) for t in _leaves([x, q, v])):
                    raise InputError(f"{what}: contains non-finite numbers (NaN or infinity)")
            else:
                x = doc
        elif suffix in (".h5", ".hdf5"):
            content = read_dynamics_file(path)
            file_order = content.meta.get("order", order)
            cq, cv, _ = minimal.order_names(model, file_order if file_order in ORDERS else order)
            q, v = (content.vectors.get(k) for k in ("q", "v"))
            if q is None or v is None:
                raise InputError(f"{what}: no 'q' and 'v' vectors (not written by `dojo dynamics -o`?)")
            q, v = {"names": q[1], "data": q[0].tolist()}, {"names": v[1], "data": v[0].tolist()}
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            if "meta" in arrays:
                meta = json.loads(str(arrays["meta"]))
                file_order = meta.get("order", order) if isinstance(meta, dict) else order
                if file_order not in ORDERS:
                    raise InputError(f"{what}: meta 'order': must be one of {', '.join(ORDERS)}")
                cq, cv, _ = minimal.order_names(model, file_order)
            if "x" in arrays:
                x = arrays["x"]
            elif "q" in arrays and "v" in arrays:
                q, v = arrays["q"], arrays["v"]
                if "q_names" in arrays and "v_names" in arrays:
                    q = {"names": [str(n) for n in arrays["q_names"]], "data": np.asarray(q, dtype=float).tolist()}
                    v = {"names": [str(n) for n in arrays["v_names"]], "data": np.asarray(v, dtype=float).tolist()}
            else:
                raise InputError(f"{what}: expected arrays 'q' and 'v' (or 'x'); it has {', '.join(sorted(arrays)) or 'none'}")
            for a in (x, q, v):
                if isinstance(a, np.ndarray) and a.dtype.kind not in "iuf":
                    raise InputError(f"{what}: holds {a.dtype} values, not real numbers")
        else:
            x = read_plain_numbers(path)
    except InputError:
        raise
    except StorageError as exc:
        raise InputError(f"--state {exc}") from None
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise InputError(f"{what}: cannot read numbers ({exc})") from None
    if x is not None:
        if isinstance(x, list):
            for i, t in enumerate(x):
                if isinstance(t, NonFinite):
                    raise InputError(f"{what}: entry [{i}]: must be a finite number, got {t}")
                if not _is_number(t):
                    raise InputError(f"{what}: entry [{i}]: must be a number, got {json.dumps(t)[:40] if not isinstance(t, str) else repr(t[:40])}")
        elif not isinstance(x, np.ndarray):
            raise InputError(f"{what}: expected a JSON list of nx = {model.nx} numbers or an object with 'q' and 'v'")
        arr = _finite_vector(x, what)
        if arr.size != model.nx:
            raise InputError(
                f"{what}: {arr.size} numbers; a state x = [q; v] of this model has nx = {model.nx} "
                f"(nq = {model.nq}: {_names_shown(cq, 8)}; nv = {model.nv}: {_names_shown(cv, 8)})"
            )
        return arr, file_order
    return np.concatenate([_vector_by_names(q, cq, f"{what}: 'q'"), _vector_by_names(v, cv, f"{what}: 'v'")]), file_order


def _is_number(t) -> bool:
    return isinstance(t, (int, float)) and not isinstance(t, bool)


def _leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def checked_quaternions(model, x: np.ndarray, what: str) -> np.ndarray:
    """x (nominal order) with its quaternions normalised; InputError when one is far from unit length."""
    from dojo_cli.minimal.model import ROT_QUATERNION

    x = x.copy()
    for tj in model.joints:
        if tj.rot != ROT_QUATERNION:
            continue
        s = slice(tj.q.start + tj.n_trans, tj.q.stop)
        norm = float(np.linalg.norm(x[s]))
        if abs(norm - 1.0) > QUAT_TOL:
            names = ", ".join(model.config_names[s])
            raise InputError(f"{what}: joint {tj.name!r}: [{names}] must be a unit quaternion, |q| = {norm:.9g}")
        x[s] /= norm
    return x


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
    z = np.concatenate([stored.x[k], stored.v[k], stored.q[k], stored.omega[k]], axis=1).reshape(-1)
    if not np.all(np.isfinite(z)):
        raise InputError(f"--index {index}: knot {k} of {run} is not finite; pick an earlier one")
    return model.state_from_maximal(z), f"knot {k} of {run} (t = {stored.time[k]:g} s)", float(stored.time[k])


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
    if derivatives:
        out["forward_dynamics_dx"], out["forward_dynamics_dtau"] = minimal.forward_dynamics_deriv(model, x, tau, tangent)
        out["inverse_dynamics_dx"], out["inverse_dynamics_dvdot"] = minimal.inverse_dynamics_deriv(model, x, vdot, tangent)
    return out


# (kind of the rows, kind of the columns) of each quantity, change_order's kinds
KINDS = {
    "q": "config", "v": "velocity", "C": "torque", "passive": "torque", "tau": "torque",
    "forward_dynamics": "velocity", "vdot": "velocity", "inverse_dynamics": "torque",
    "M": ("torque", "velocity"), "E": ("config", "velocity"),
    "forward_dynamics_dx": ("velocity", "state"), "forward_dynamics_dtau": ("velocity", "torque"),
    "inverse_dynamics_dx": ("torque", "state"), "inverse_dynamics_dvdot": ("torque", "velocity"),
}
MEANING = {
    "q": "configuration", "v": "velocity", "C": "Coriolis, centrifugal and gravity (M vdot + C = tau)",
    "passive": "springs and dampers (not in C)", "tau": "--tau", "forward_dynamics": "vdot = M^-1 (tau - C)",
    "vdot": "--vdot", "inverse_dynamics": "tau = M vdot + C", "M": "mass matrix", "E": "qdot = E v",
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
def _fmt(value: float) -> str:
    return f"{value + 0.0:.{DIGITS}g}"  # + 0.0: no "-0"


def _vec_text(values) -> str:
    return "[" + ", ".join(_fmt(v) for v in values) + "]"


def _table(title: str, head: list[str]):
    from rich import box
    from rich.table import Table

    t = Table(title=printable(title), box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column(head[0], no_wrap=True, overflow="fold")
    for h in head[1:]:
        t.add_column(h, justify="right", no_wrap=True, overflow="fold", min_width=DIGITS + 6)
    return t


def _print_tables(console, values: dict, labels: dict, matrices: list[str]) -> None:
    """The configuration, the velocity-space vectors in two tables, then the matrices."""
    t = _table("configuration", ["name", "q"])
    for name, val in zip(labels["q"], values["q"]):
        t.add_row(printable(name), _fmt(val))
    console.print(t)
    groups = (
        ("velocities and accelerations", [("v", "v"), ("vdot", "vdot (--vdot)"), ("forward_dynamics", "FD(tau)")]),
        ("generalized forces: M vdot + C = tau", [("C", "C"), ("passive", "passive"), ("tau", "tau (--tau)"),
                                                  ("inverse_dynamics", "ID(vdot)")]),
    )
    for title, cols in groups:
        names = labels[cols[0][0]]
        t = _table(title, ["name"] + [h for _, h in cols])
        for i, name in enumerate(names):
            t.add_row(printable(name), *(_fmt(values[c][i]) for c, _ in cols))
        console.print(t)
    for name in matrices:
        _print_matrix(console, f"{name}: {MEANING[name]}", values[name], *labels[name])


def _print_matrix(console, title: str, mat: np.ndarray, rows: list[str], cols: list[str]) -> None:
    """A labelled matrix in blocks of columns that fit the console's width."""
    row_w = max([len(r) for r in rows] + [4])
    widths = [max(len(c), DIGITS + 6) for c in cols]
    room = max(console.width - row_w - 4, 1)
    start = 0
    while start < len(cols) or start == 0:
        end, used = start, 0
        while end < len(cols) and (end == start or used + widths[end] + 3 <= room):
            used += widths[end] + 3
            end += 1
        part = "" if start == 0 and end == len(cols) else f" (columns {start + 1}..{end} of {len(cols)})"
        t = _table(title + part, [""] + cols[start:end])
        for i, r in enumerate(rows):
            t.add_row(printable(r), *(_fmt(v) for v in mat[i, start:end]))
        console.print(t)
        if end >= len(cols):
            break
        start = end


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
    from dojo_cli.scene.loader import dump_scene

    if order not in ORDERS:
        raise InputError(f"--order: must be one of {', '.join(ORDERS)}, got {order!r}")
    if tangent and not derivatives:
        raise InputError("--tangent: only with --derivatives")
    if state is not None and run is not None:
        raise InputError("--state and --from: give one of them, not both")
    if index is not None and run is None:
        raise InputError("--index needs --from RUN.h5")
    if output is not None:
        if output.suffix.lower() not in SUFFIXES:
            raise InputError(f"--output {output}: unknown file type; use .h5, .json or .npz")
        if output.exists() and not force:
            raise StorageError(f"{output}: already exists (use --force to overwrite)")
    spec, mech = load_scene_arguments(scene, overrides)
    model = minimal.build_model(mech)
    if model.loop_joints:
        echo_err(f"warning: {spec.name}: loop-closing joints {', '.join(model.loop_joints)} are not part of the tree dynamics")
    time = None
    if state is not None:
        x_file, file_order = read_state(model, state, order)
        if file_order == "mujoco" or order == "mujoco":
            q_nominal = x_file[: model.nq]  # the mujoco and nominal orders share the configuration
        else:
            q_nominal = None
        x = minimal.change_order(model, x_file, file_order, "nominal", kind="state", q=q_nominal)
        x = checked_quaternions(model, x, f"--state {state}")
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
        "loop_joints": model.loop_joints, "dojo_cli_version": __version__,
    }
    content = DynamicsFile(vectors, matrices, meta)
    if json_out:
        typer.echo(json.dumps(dynamics_document(content), indent=1, default=float))
    else:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=False)
        typer.echo(printable(f"{spec.name}: minimal-coordinate dynamics at {source}, {order} order "
                             f"(nq = {model.nq}, nv = {model.nv}); gravity {_vec_text(model.gravity)} m/s^2; "
                             "contacts and joint limits are not included"))
        shown = ["M", "E"] + ([n for n in matrices if n not in ("M", "E")] if derivatives else [])
        _print_tables(console, values, labels, shown)
    if output is not None:
        write_dynamics_file(output, DynamicsFile(vectors, matrices, {**meta, "scene": dump_scene(spec)}), overwrite=force)
        if not json_out:
            typer.echo(f"wrote {output}")

