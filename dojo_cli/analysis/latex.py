"""`dojo analyze --latex`: the numeric equations of motion and matrices as a LaTeX fragment
(for \\input in a document with amsmath; skydy's ``as_latex`` sections, numerically and without
its number clean-up, which corrupts numbers: other_systems_notes.md 4.7)."""

from __future__ import annotations

import numpy as np

DIGITS = 6


def _num(v: float) -> str:
    text = f"{float(v):.{DIGITS}g}"
    if "e" in text:
        mant, _, exp = text.partition("e")
        text = f"{mant} \\times 10^{{{int(exp)}}}"
    return text


def _name(text: str) -> str:
    """A coordinate name as LaTeX text (underscores and colons escaped)."""
    return "\\mathrm{" + text.replace("\\", "").replace("_", "\\_").replace(":", "{:}") + "}"


def _matrix(mat: np.ndarray) -> str:
    mat = np.atleast_2d(np.asarray(mat, dtype=float))
    rows = [" & ".join(_num(v) for v in row) for row in mat]
    return "\\begin{bmatrix}" + " \\\\ ".join(rows) + "\\end{bmatrix}"


def _complex(e) -> str:
    re_, im = float(e[0]), float(e[1])
    if im == 0.0:
        return _num(re_)
    return f"{_num(re_)} {'+' if im > 0 else '-'} {_num(abs(im))}\\,i"


def latex_fragment(scene_name: str, model, lin, equilibria: list[dict], matrices: dict) -> str:
    """The fragment: coordinates, M(q*) vdot + b(q*, v*) = B u at the point, A and B, the
    eigenvalues and verdicts, the equilibria."""
    esc = scene_name.replace("_", "\\_")
    out = [f"% dojo analyze {scene_name}: numeric equations of motion (generated)", f"\\subsection*{{{esc}}}"]
    q_names = ", ".join(_name(n) for n in model.config_names)
    out.append(f"Coordinates $q = ({q_names})$, velocities $v$ ({model.nv}).")
    locked = [n for n, h in zip(model.config_names, model.locked_q) if h]
    if locked:  # Drake's Lock: the matrices below are the free coordinates' (docs/analysis.md)
        out.append("Held by locked joints: $" + ", ".join(_name(n) for n in locked)
                   + "$; the equations below are those of the other coordinates.")
    if lin is not None:
        out.append("\\paragraph{Equations of motion at the point} $M(q^*)\\,\\dot v + b(q^*, v^*) = B_\\tau\\,u$ with")
        out.append("\\[ M = " + _matrix(lin.M) + ",\\quad b = " + _matrix(lin.bias.reshape(-1, 1))
                   + ",\\quad B_\\tau = " + _matrix(lin.input_map.reshape(lin.M.shape[0], len(lin.input_names))) + " \\]")
        out.append("\\paragraph{Linearisation} $\\dot{\\delta x} = A\\,\\delta x + B\\,u$, $\\delta x = ("
                   + ", ".join(_name(n) for n in lin.state_names) + ")$:")
        out.append("\\[ A = " + _matrix(lin.A) + ",\\quad B = " + _matrix(lin.B) + " \\]")
        eig = ", ".join(_complex((e.real, e.imag)) for e in lin.eigenvalues)
        out.append(f"Eigenvalues: ${eig}$; {'stable' if lin.stable else 'unstable'} ({lin.stability}). "
                   f"Controllability rank {lin.controllability_rank} of {lin.A.shape[0]}"
                   + (f", accessibility rank {lin.accessibility_rank}" if lin.accessibility_rank is not None else "") + ".")
        if "A_discrete" in matrices:
            out.append("\\paragraph{Variational step} $x_{k+1} = A_d x_k + B_d u_k$:")
            out.append("\\[ A_d = " + _matrix(matrices["A_discrete"][0]) + ",\\quad B_d = "
                       + _matrix(matrices["B_discrete"][0]) + " \\]")
    if equilibria:
        out.append("\\paragraph{Equilibria} ($v = 0$, $u = 0$)")
        out.append("\\begin{enumerate}")
        for e in equilibria:
            q = ", ".join(f"{_name(n)} = {_num(v)}" for n, v in zip(model.config_names, e["q"]))
            eig = ", ".join(_complex(p) for p in e["eigenvalues"])
            out.append(f"  \\item ${q}$: {'stable' if e['stable'] else 'unstable'}, eigenvalues ${eig}$")
        out.append("\\end{enumerate}")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ symbolic (dojo analyze --symbolic)
_PARAMETER_LETTER = {"mass": "m", "parent_vertex": "p", "child_vertex": "c", "spring": "k", "damper": "d",
                     "spring_offset": "\\theta^0", "armature": "a"}


def _tex_text(text: str) -> str:
    return text.replace("\\", "").replace("_", "\\_").replace(":", "{:}")


def parameter_latex(label: str) -> str:
    """A parameter label's mathematical name: ``bodies.pole.mass`` -> m_{pole},
    ``bodies.pole.inertia.yy`` -> I_{pole,yy}, ``gravity.z`` -> g_z,
    ``joints.hinge.child_vertex.z`` -> c_{hinge,z} (the joint point in the child),
    ``parent_vertex`` p, ``spring`` k, ``damper`` d, ``spring_offset`` theta^0, ``armature`` a."""
    parts = label.split(".")
    if parts[0] == "gravity":
        return f"g_{{{parts[1]}}}"
    owner = "\\mathrm{" + _tex_text(parts[1]) + "}"
    if parts[0] == "bodies" and parts[2] == "inertia":
        return f"I_{{{owner},{parts[3]}}}"
    letter = _PARAMETER_LETTER.get(parts[2], "\\mathrm{" + _tex_text(parts[2]) + "}")
    sub = ",".join([owner] + parts[3:])
    return f"{letter}_{{{sub}}}"


def coordinate_latex(name: str) -> str:
    """A coordinate or velocity name: ``hinge`` -> \\mathrm{hinge}, ``hinge:dot`` -> its dot."""
    if name.endswith(":dot"):
        return "\\dot{" + _name(name[: -len(":dot")]) + "}"
    return _name(name)


def symbolic_fragment(eqs, checked: dict | None = None) -> str:
    """The symbolic equations (dojo_cli.analysis.symbolic) as a LaTeX fragment: the symbols
    with their scene labels and values, M, C, G, tau_passive, B (and E when it is not the
    identity), each equilibrium with A and B (or its blocks)."""
    import sympy as sp

    names = {s: parameter_latex(label) for label, s in eqs.parameters.items()}
    names.update({s: coordinate_latex(str(s)) for s in [*eqs.q, *eqs.v]})
    names.update({s: _name(str(s)) for s in eqs.u})

    def tex(mat) -> str:
        return sp.latex(mat, symbol_names=names, mat_delim="[", mat_str="matrix")

    esc = eqs.scene_name.replace("_", "\\_")
    out = [f"% dojo analyze {eqs.scene_name} --symbolic: equations of motion in the scene's parameters (generated)",
           f"\\subsection*{{{esc}: symbolic equations of motion}}",
           "$q = (" + ", ".join(coordinate_latex(str(s)) for s in eqs.q) + ")$, $v = ("
           + ", ".join(coordinate_latex(str(s)) for s in eqs.v) + ")$"
           + (", $u = (" + ", ".join(_name(str(s)) for s in eqs.u) + ")$." if eqs.u else ".")]
    used = eqs.used_parameters()
    if used:
        out.append("\\begin{tabular}{lll} symbol & scene parameter & value \\\\ \\hline")
        for label in used:
            value = eqs.values[eqs.parameters[label]]
            out.append(f"${parameter_latex(label)}$ & \\texttt{{{_tex_text(label)}}} & {_num(value)} \\\\")
        out.append("\\end{tabular}")
    out.append("\\[ M(q)\\,\\dot v + C(q, v) + G(q) = \\tau_{\\mathrm{passive}}(q, v) + B(q)\\,u,"
               "\\qquad \\dot q = E(q)\\,v \\]")
    for label, mat in (("M", eqs.M), ("C", eqs.C), ("G", eqs.G), ("\\tau_{\\mathrm{passive}}", eqs.tau_passive),
                       ("B", eqs.B), ("E", eqs.E)):
        if label == "E" and mat == sp.eye(mat.shape[0]):
            out.append("$E = I$ ($\\dot q = v$).")
            continue
        out.append(f"\\[ {label} = {tex(mat)} \\]")
    if eqs.equilibria:
        out.append("\\paragraph{Equilibria} ($v = 0$, $u = 0$) and the linearisation "
                   "$\\dot{\\delta x} = A\\,\\delta x + B\\,u$ about each, $\\delta x = ("
                   + ", ".join(_name(n) for n in eqs.state_names) + ")$:")
        out.append("\\begin{enumerate}")
        for e in eqs.equilibria:
            coords = ", ".join(
                (f"{coordinate_latex(str(s))}\\ \\mathrm{{any}}" if str(s) in e.free else
                 f"{coordinate_latex(str(s))} = {sp.latex(v, symbol_names=names) if e.exact or not v.is_Number else _num(v)}")
                for s, v in zip(eqs.q, e.q))
            kind = "" if e.exact else " (numeric: no closed form; the linearisation at the scene's values)"
            out.append(f"  \\item ${coords}${kind}:")
            if e.lin["A"] is not None:
                out.append(f"  \\[ A = {tex(e.lin['A'])},\\quad B = {tex(e.lin['B'])} \\]")
            else:
                out.append("  $A = \\begin{bmatrix} 0 & I \\\\ -M_*^{-1} K_* & -M_*^{-1} D_* \\end{bmatrix}$, "
                           "$B = \\begin{bmatrix} 0 \\\\ M_*^{-1} B_* \\end{bmatrix}$ with")
                out.append(f"  \\[ M_* = {tex(e.lin['M'])},\\quad K_* = {tex(e.lin['K'])},\\quad "
                           f"D_* = {tex(e.lin['D'])},\\quad B_* = {tex(e.lin['B_tau'])} \\]")
        out.append("\\end{enumerate}")
    if checked is not None:
        out.append(f"Checked at the scene's values against the core: largest relative difference "
                   f"${_num(checked['dynamics'])}$ (M, C + G, $\\tau$, B, E at {checked['states']} states)"
                   + (f", ${_num(checked['linearization'])}$ (A, B at {checked['equilibria']} equilibria)."
                      if checked["linearization"] is not None else "."))
    return "\n".join(out) + "\n"
