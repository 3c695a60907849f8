"""`dojo analyze`: skydy's analysis of a scene without contacts, numerically (docs/analysis.md).

Equilibria (--equilibria), the linearisation at a point (--at), its eigenvalues, stability,
Kalman controllability rank and Lie-bracket accessibility rank, the mass matrix and bias
there, and with --discrete the variational step's own A, B: computed by
dojo_cli.analysis.report.analyze_scene, printed here as tables, --json, -o (the
dynamics-file containers of `dojo dynamics`) and --latex.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from dojo_cli.cli.shared import SceneArg, SetOpt, load_scene_arguments, printable, reports_errors
from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.dynamics_files import DynamicsFile, dynamics_document, write_dynamics_file
from dojo_cli.io.labelled_files import check_output, write_text

DIGITS = 6


def _fmt(v: float) -> str:
    return f"{v:.{DIGITS}g}"


def _eig_text(eig) -> str:
    out = []
    for e in np.asarray(eig, dtype=complex):
        out.append(_fmt(e.real) if abs(e.imag) == 0 else f"{_fmt(e.real)}{'+' if e.imag >= 0 else '-'}{_fmt(abs(e.imag))}i")
    return "[" + ", ".join(out) + "]"


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
    symbolic: Annotated[bool, typer.Option("--symbolic", help="The equations of motion, the equilibria and the linearisation about each as sympy expressions in the scene's parameters (joint-only scenes up to 4 coordinates; needs the symbolic extra); -o takes .json or .txt, --latex writes them as LaTeX.")] = False,
) -> None:
    """Equilibria, linearisation, stability and controllability of a scene without contacts."""
    from dojo_cli import analysis, minimal
    from dojo_cli.analysis.report import analyze_scene
    from dojo_cli.scene.loader import dump_scene

    if symbolic:
        _symbolic(scene, overrides, at=at, discrete=discrete, starts=starts, json_out=json_out, output=output,
                  latex=latex, force=force)
        return
    check_output(output, force)
    if latex is not None and latex.exists() and not force:
        raise StorageError(f"{latex}: already exists (use --force to overwrite)")
    spec, mech = load_scene_arguments(scene, overrides)
    if at is None and not equilibria_flag:
        at = "initial"
    result = analyze_scene(mech, spec.name, find_equilibria=equilibria_flag, at=at, discrete=discrete,
                           accessibility=not no_accessibility, starts=starts, seed=int(getattr(spec, "seed", 0) or 0))
    model, lin = result.model, result.linearization
    vectors, matrices, doc_meta = result.vectors, result.matrices, result.meta
    lines: list[str] = []
    if model.locked_joints:
        q0 = minimal.init_state(model)[: model.nq]
        held = ", ".join(f"{n} = {_fmt(v)}" for n, v, h in zip(model.config_names, q0, model.locked_q) if h)
        lines.append(f"locked joints {', '.join(model.locked_joints)}: coordinates held (the equilibria at the initial "
                     f"pose's {held}); A, B, M, bias, B_tau, eigenvalues and ranks are of the other "
                     f"{2 * int(np.sum(~model.locked_v))} states")
    eq_list = doc_meta.get("equilibria", [])
    if result.equilibria is not None:
        for k, (e, e_lin) in enumerate(result.equilibria):
            q_text = ", ".join(f"{n} = {_fmt(v)}" for n, v in zip(model.config_names, e.x[: model.nq]))
            lines.append(f"equilibrium {k}: {q_text}; {e_lin.stability}; "
                         f"eigenvalues {_eig_text(e_lin.eigenvalues)}"
                         + (f"; one of a {e.family}-dimensional family (the same energy and eigenvalues)" if e.family else ""))
        if result.equilibria and result.equilibria[0][0].free:
            lines.append(f"  not isolated: every value of {', '.join(result.equilibria[0][0].free)} (held at the initial pose)")
    if lin is not None:
        sn = lin.state_names
        lines.append(f"at {result.point}: x = " + ", ".join(f"{n} = {_fmt(v)}" for n, v in zip(vectors['x'][1], lin.x)))
        lines.append(f"  eigenvalues of A: {_eig_text(lin.eigenvalues)}")
        lines.append(f"  verdict: {lin.stability}")
        lines.append(f"  controllability (Kalman) rank {lin.controllability_rank} of {len(sn)}"
                     f" ({'controllable' if lin.controllability_rank == len(sn) else 'not controllable'}; "
                     f"relative SVD tolerance {analysis.CONTROLLABILITY_TOL:g})")
        if lin.accessibility_rank is not None:
            lines.append(f"  accessibility (Lie brackets, depth {lin.accessibility_depth}) rank {lin.accessibility_rank} of {len(sn)}"
                         f" ({'accessible' if lin.accessibility_rank == len(sn) else 'not accessible'}; "
                         f"relative tolerance {analysis.ACCESSIBILITY_TOL:g})")
        d = result.discrete
        if d is not None:
            lines.append(f"  discrete (variational step, h = {_fmt(mech.timestep)}): eigenvalues {_eig_text(d.eigenvalues)}; "
                         f"{d.stability}; controllability rank {d.controllability_rank} of {d.A.shape[0]}")
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

            from dojo_cli.cli.commands.tables import print_matrix

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

        write_text(latex, latex_fragment(spec.name, model, lin, eq_list, matrices))
        if not json_out:
            typer.echo(f"wrote {latex}")


SYMBOLIC_SUFFIXES = (".json", ".txt")


def _symbolic(scene, overrides, *, at, discrete, starts, json_out, output, latex, force) -> None:
    """`dojo analyze --symbolic` (docs/analysis.md "Symbolic equations"): derive, find the
    equilibria, check against the core, print or write."""
    for flag, given in (("--at", at is not None), ("--discrete", discrete)):
        if given:
            raise InputError(f"{flag}: not with --symbolic (the symbolic linearisation is about each equilibrium; "
                             "use the numeric dojo analyze for a point or the discrete step)")
    if output is not None:
        if output.suffix.lower() not in SYMBOLIC_SUFFIXES:
            raise InputError(f"--output {output}: with --symbolic use .json or .txt")
        if output.exists() and not force:
            raise StorageError(f"{output}: already exists (use --force to overwrite)")
    if latex is not None and latex.exists() and not force:
        raise StorageError(f"{latex}: already exists (use --force to overwrite)")
    from dojo_cli.analysis import symbolic

    spec, mech = load_scene_arguments(scene, overrides)
    eqs = symbolic.derive(mech, spec.name)
    symbolic.equilibria(eqs, starts=starts, seed=int(getattr(spec, "seed", 0) or 0))
    checked = symbolic.check(eqs)
    header = (f"{spec.name}: symbolic equations of motion (sympy), nq = {len(eqs.q)}, nv = {len(eqs.v)}; "
              f"{len(eqs.equilibria)} equilibri{'um' if len(eqs.equilibria) == 1 else 'a'}")
    lines = [header, *symbolic.text_lines(eqs, checked)]
    if json_out:
        typer.echo(json.dumps(symbolic.document(eqs, checked), indent=1))
    else:
        for line in lines:
            typer.echo(printable(line))
    for path, text in ((output, None), (latex, "latex")):
        if path is None:
            continue
        if text == "latex":
            from dojo_cli.analysis.latex import symbolic_fragment

            content = symbolic_fragment(eqs, checked)
        elif path.suffix.lower() == ".json":
            content = json.dumps(symbolic.document(eqs, checked), indent=1) + "\n"
        else:
            content = "\n".join(lines) + "\n"
        write_text(path, content)
        if not json_out:
            typer.echo(f"wrote {path}")
    if not checked["ok"]:  # a derivation that disagrees with the core is a bug, never a result
        typer.echo(f"dojo analyze --symbolic: the expressions differ from the core's numbers by more than "
                   f"{checked['tolerance']:g} (see the check line); please report it", err=True)
        raise typer.Exit(1)
