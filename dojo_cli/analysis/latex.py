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
