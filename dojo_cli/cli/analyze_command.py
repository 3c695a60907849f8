"""`dojo analyze`: skydy's analysis of a scene without contacts, numerically (docs/analysis.md).

Equilibria (--equilibria), the linearisation at a point (--at), its eigenvalues, stability,
Kalman controllability rank and Lie-bracket accessibility rank, the mass matrix and bias
there, and with --discrete the variational step's own A, B (dojo_cli.analysis). Output as
tables, --json, -o (the dynamics-file containers of `dojo dynamics`) and --latex.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli import __version__
from dojo_cli.cli.shared import SceneArg, SetOpt, load_scene_arguments, printable, reports_errors
from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.dynamics_files import DynamicsFile, dynamics_document, write_dynamics_file
from dojo_cli.io.labelled_files import check_output

DIGITS = 6


def _eig_pairs(eig) -> list[list[float]]:
    return [[float(e.real), float(e.imag)] for e in np.asarray(eig, dtype=complex)]


def _fmt(v: float) -> str:
    return f"{v:.{DIGITS}g}"


def _eig_text(eig) -> str:
    out = []
    for e in np.asarray(eig, dtype=complex):
        out.append(_fmt(e.real) if abs(e.imag) == 0 else f"{_fmt(e.real)}{'+' if e.imag >= 0 else '-'}{_fmt(abs(e.imag))}i")
    return "[" + ", ".join(out) + "]"


def _point(at: str, model, mech, eqs_fn):
    """(x, phrase, equilibrium index or None) of an --at value."""
    from dojo_cli import minimal

    if at == "initial":
        return minimal.init_state(model), "the scene's initial state", None
    if at == "equilibrium" or at.startswith("equilibrium:"):
        text = at.partition(":")[2] or "0"
        try:
            k = int(text)
        except ValueError:
            raise InputError(f"--at {at}: expected equilibrium:K with K an integer, got {text!r}") from None
        eqs = eqs_fn()
        if not -len(eqs) <= k < len(eqs):
            raise InputError(f"--at {at}: {len(eqs)} equilibri{'um' if len(eqs) == 1 else 'a'} found (K in 0..{len(eqs) - 1})")
        return eqs[k].x.copy(), f"equilibrium {k % len(eqs)}", k % len(eqs)
    path = Path(at)
    if not path.exists():
        raise InputError(f"--at {at}: not initial, equilibrium[:K] or an existing state file")
    from dojo_cli.io.state_files import read_state_file

    try:
        z, _ = read_state_file(mech, path)
    except InputError as exc:
        raise InputError(str(exc).replace("--state", "--at", 1)) from None
    return model.state_from_maximal(z), f"the state in {path}", None


@reports_errors
def analyze(
    scene: SceneArg,
    equilibria_flag: Annotated[bool, typer.Option("--equilibria", help="Find the unforced equilibria (Newton from the initial pose and a seeded multistart), each with its stability.")] = False,
    at: Annotated[Optional[str], typer.Option("--at", help="Linearise at: initial, equilibrium[:K] (K-th of --equilibria's list) or a state file (`dojo step -o` JSON). Default: initial, unless only --equilibria is asked.")] = None,
    discrete: Annotated[bool, typer.Option("--discrete", help="Also the variational step's own A, B at the scene's timestep (minimal coordinates), stable when every |eigenvalue| <= 1.")] = False,
    starts: Annotated[Optional[int], typer.Option("--starts", help="Random Newton starts for --equilibria besides the initial pose (default 8 + 8 nv, at most 64), seeded by the scene's seed.", min=0, max=10000)] = None,
    no_accessibility: Annotated[bool, typer.Option("--no-accessibility", help="Skip the Lie-bracket accessibility rank.")] = False,
    overrides: SetOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON (every digit) instead of tables.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the result with its names: .h5, .json or .npz.")] = None,
    latex: Annotated[Optional[Path], typer.Option("--latex", help="Write the numeric equations of motion and matrices as a LaTeX fragment.")] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Overwrite existing output files.")] = False,
) -> None:
    """Equilibria, linearisation, stability and controllability of a scene without contacts."""
    from dojo_cli import analysis, minimal
    from dojo_cli.scene.loader import dump_scene

    check_output(output, force)
    if latex is not None and latex.exists() and not force:
        raise StorageError(f"{latex}: already exists (use --force to overwrite)")
    spec, mech = load_scene_arguments(scene, overrides)
    if mech.nc:
        names = ", ".join(str(getattr(c, "name", "") or f"#{i}") for i, c in enumerate(mech.contacts))
        raise InputError(f"{spec.name}: has contacts ({names}); dojo analyze takes scenes without contacts "
                         "(remove them, e.g. --set contacts=[])")
    model = minimal.build_model(mech)
    if model.loop_joints:
        raise InputError(f"{spec.name}: loop-closing joints ({', '.join(model.loop_joints)}) are not part of the tree dynamics dojo analyze uses")
    seed = int(getattr(spec, "seed", 0) or 0)
    cache: dict = {}

    def eqs():
        if "eq" not in cache:
            cache["eq"] = analysis.equilibria(model, starts=starts, seed=seed)
        return cache["eq"]

    if at is None and not equilibria_flag:
        at = "initial"
    doc_meta: dict = {
        "scene_name": spec.name, "nq": model.nq, "nv": model.nv,
        "state_names": analysis.state_names(model), "input_names": list(mech.input_names()),
        "config_names": list(model.config_names), "dojo_cli_version": __version__,
        "controllability_tol": analysis.CONTROLLABILITY_TOL, "accessibility_tol": analysis.ACCESSIBILITY_TOL,
        "eigen_tol": analysis.EIGEN_TOL,
        # locked joints (Drake's Lock): their coordinates are held, the analysis is of the others
        "locked_joints": list(model.locked_joints), "locked": analysis.locked_names(model),
    }
    vectors: dict = {}
    matrices: dict = {}
    lines: list[str] = []
    if model.locked_joints:
        q0 = minimal.init_state(model)[: model.nq]
        held = ", ".join(f"{n} = {_fmt(v)}" for n, v, h in zip(model.config_names, q0, model.locked_q) if h)
        lines.append(f"locked joints {', '.join(model.locked_joints)}: coordinates held (the equilibria at the initial "
                     f"pose's {held}); A, B, M, bias, B_tau, eigenvalues and ranks are of the other "
                     f"{2 * int(np.sum(~model.locked_v))} states")
    eq_list = []
    if equilibria_flag:
        for k, e in enumerate(eqs()):
            lin = analysis.linearize(model, e.x, accessibility=False)
            eq_list.append({"q": e.x[: model.nq].tolist(), "stable": bool(lin.stable), "stability": lin.stability,
                            "eigenvalues": _eig_pairs(lin.eigenvalues), "potential_energy": e.potential,
                            "residual": e.residual, "free": e.free, "family_dimension": e.family})
            q_text = ", ".join(f"{n} = {_fmt(v)}" for n, v in zip(model.config_names, e.x[: model.nq]))
            lines.append(f"equilibrium {k}: {q_text}; {lin.stability}; "
                         f"eigenvalues {_eig_text(lin.eigenvalues)}"
                         + (f"; one of a {e.family}-dimensional family (the same energy and eigenvalues)" if e.family else ""))
        if eqs() and eqs()[0].free:
            lines.append(f"  not isolated: every value of {', '.join(eqs()[0].free)} (held at the initial pose)")
        doc_meta["equilibria"] = eq_list
    lin = None
    if at is not None:
        x, phrase, _ = _point(at, model, mech, eqs)
        try:
            lin = analysis.linearize(model, x, accessibility=not no_accessibility)
        except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
            raise InputError(f"{spec.name}: {exc}") from None
        sn, un = lin.state_names, lin.input_names
        vn = list(lin.velocity_names)  # the free velocities (all of them without locked joints)
        vectors["x"] = (lin.x, list(model.config_names) + analysis.velocity_state_names(model))
        vectors["bias"] = (lin.bias, vn)
        matrices["A"] = (lin.A, sn, sn)
        matrices["B"] = (lin.B, sn, un)
        matrices["M"] = (lin.M, vn, vn)
        matrices["B_tau"] = (lin.input_map.reshape(len(vn), len(un)), vn, un)
        doc_meta.update({
            "at": phrase, "eigenvalues": _eig_pairs(lin.eigenvalues), "stable": bool(lin.stable), "stability": lin.stability,
            "controllability_rank": lin.controllability_rank, "accessibility_rank": lin.accessibility_rank,
            "accessibility_depth": lin.accessibility_depth, "n_states": len(sn),
        })
        lines.append(f"at {phrase}: x = " + ", ".join(f"{n} = {_fmt(v)}" for n, v in zip(vectors['x'][1], lin.x)))
        lines.append(f"  eigenvalues of A: {_eig_text(lin.eigenvalues)}")
        lines.append(f"  verdict: {lin.stability}")
        lines.append(f"  controllability (Kalman) rank {lin.controllability_rank} of {len(sn)}"
                     f" ({'controllable' if lin.controllability_rank == len(sn) else 'not controllable'}; "
                     f"relative SVD tolerance {analysis.CONTROLLABILITY_TOL:g})")
        if lin.accessibility_rank is not None:
            lines.append(f"  accessibility (Lie brackets, depth {lin.accessibility_depth}) rank {lin.accessibility_rank} of {len(sn)}"
                         f" ({'accessible' if lin.accessibility_rank == len(sn) else 'not accessible'}; "
                         f"relative tolerance {analysis.ACCESSIBILITY_TOL:g})")
        if discrete:
            try:
                Ad, Bd, dn, dun = analysis.discrete_linearization(model, x)
            except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
                raise InputError(f"{spec.name}: {exc}") from None
            eig_d = np.linalg.eigvals(Ad)
            stable_d, why_d = analysis.stability(Ad, discrete=True)
            rank_d = analysis.controllability_rank(Ad, Bd)
            matrices["A_discrete"] = (Ad, dn, dn)
            matrices["B_discrete"] = (Bd, dn, list(dun))
            doc_meta.update({"timestep": float(mech.timestep), "discrete_eigenvalues": _eig_pairs(eig_d),
                             "discrete_stable": bool(stable_d), "discrete_stability": why_d,
                             "discrete_controllability_rank": rank_d})
            lines.append(f"  discrete (variational step, h = {_fmt(mech.timestep)}): eigenvalues {_eig_text(eig_d)}; "
                         f"{why_d}; controllability rank {rank_d} of {Ad.shape[0]}")
    content = DynamicsFile(vectors, matrices, doc_meta)
    if json_out:
        typer.echo(json.dumps(dynamics_document(content), indent=1, default=float))
    else:
        typer.echo(printable(f"{spec.name}: nq = {model.nq}, nv = {model.nv}, inputs {', '.join(mech.input_names()) or 'none'}; "
                             f"gravity {list(map(float, model.gravity))} m/s^2"))
        for line in lines:
            typer.echo(printable(line))
        if lin is not None:
            from rich.console import Console

            from dojo_cli.cli.tables import print_matrix

            console = Console(highlight=False, soft_wrap=False)
            for name, (mat, rows, cols) in matrices.items():
                print_matrix(console, name, mat, rows, cols)
    if output is not None:
        write_dynamics_file(output, DynamicsFile(vectors, matrices, {**doc_meta, "format_kind": "analysis", "scene": dump_scene(spec)}),
                            overwrite=force)
        if not json_out:
            typer.echo(f"wrote {output}")
    if latex is not None:
        from dojo_cli.analysis.latex import latex_fragment

        text = latex_fragment(spec.name, model, lin, eq_list, matrices)
        try:
            latex.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"{latex}: cannot write ({exc.strerror or exc})") from None
        if not json_out:
            typer.echo(f"wrote {latex}")
