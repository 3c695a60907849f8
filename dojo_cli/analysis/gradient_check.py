"""Finite-difference check of a step's Jacobians (`dojo gradients --check`, and the gradient tests).

The map differentiated is the one the gradients describe: the step from the state
(maximal tangent coordinates, or minimal coordinates) and inputs, for the mechanism
with its parameters; with ``--kappa`` the relaxed step (the step's solution moved onto
the central path s o gamma = kappa, simulation.gradients), whose derivative is what
``--kappa`` gradients are. Each column uses the 4-point central stencil

    f'(0) ~ (f(-2e) - 8 f(-e) + 8 f(e) - f(2e)) / (12 e)     (truncation O(e^4))

with e = eps for state coordinates and eps * max(1, |value|) for inputs and
parameters. Output differences are taken in the same coordinates as the Jacobian:
maximal states in tangent coordinates relative to the unperturbed next state
(dx, dv, Vec(q0* q), dw), minimal states by subtraction. A perturbed state attitude
is q -> q [sqrt(1 - e^2), e axis], the tangent convention of the gradients.

Relative error of a block (or a group of its columns): the largest entrywise
|J - F| / max(1, |F|): relative for entries above 1, absolute below. (A block-wide
scale would let the large entries hide errors in the small ones: the velocity rows of
A carry ~1/h from state perturbations off the joint constraints.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.errors import SolverError
from dojo_cli.math import quaternion as quat
from dojo_cli.model.parameters import (
    parameter_labels,
    parameter_values,
    with_parameters,
)
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.simulation import gradients as _grad
from dojo_cli.simulation.step import solve_step

STENCIL = ((-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0))  # (multiple of e, weight); divide by 12 e


@dataclass
class GroupError:
    block: str
    group: str
    columns: int
    error: float


@dataclass
class CheckReport:
    """Per-block and per-group relative errors, and how the finite differences went."""

    blocks: dict[str, float]
    groups: list[GroupError]
    evaluations: int
    unconverged: int
    notes: list[str]


def four_point(f, e: float):
    """Derivative at 0 of ``f`` (a function of one number, any array value) by the 4-point
    central stencil STENCIL: (f(-2e) - 8 f(-e) + 8 f(e) - f(2e)) / (12 e), truncation O(e^4)."""
    acc = 0.0
    for m, weight in STENCIL:
        acc = acc + weight * f(m * e)
    return acc / (12.0 * e)


def tangent_difference(nb: int, za: np.ndarray, zb: np.ndarray) -> np.ndarray:
    """zb relative to za in tangent coordinates [dx, dv, Vec(qa* qb), dw] per body, (12 nb,).

    Args:
        za, zb: (13 nb,) maximal states, per body [x, v, q, w], q [w,x,y,z] body to world.
    """
    a, b = za.reshape(nb, 13), zb.reshape(nb, 13)
    dphi = quat.multiply(quat.conjugate(a[:, 6:10]), b[:, 6:10])[:, 1:]
    return np.concatenate([b[:, 0:3] - a[:, 0:3], b[:, 3:6] - a[:, 3:6], dphi, b[:, 10:13] - a[:, 10:13]], axis=1).ravel()


def perturb_tangent(nb: int, z: np.ndarray, d: np.ndarray) -> np.ndarray:
    """z moved along the tangent vector d: x, v, w added; q -> q [sqrt(1 - |phi|^2), phi]
    (the tangent convention of the gradients).

    Args:
        z: (13 nb,) maximal state, per body [x, v, q, w].
        d: (12 nb,) tangent vector, per body [dx, dv, phi, dw].
    """
    s = np.asarray(z, dtype=float).reshape(nb, 13).copy()
    d = np.asarray(d, dtype=float).reshape(nb, 12)
    s[:, 0:3] += d[:, 0:3]
    s[:, 3:6] += d[:, 3:6]
    s[:, 10:13] += d[:, 9:12]
    phi = d[:, 6:9]
    s[:, 6:10] = quat.multiply(s[:, 6:10], np.concatenate([np.sqrt(1 - np.sum(phi**2, 1, keepdims=True)), phi], 1))
    return s.reshape(-1)


def perturb_maximal(z: np.ndarray, nb: int, k: int, e: float) -> np.ndarray:
    """z moved by e along tangent coordinate k ([x, v, phi, w] per body)."""
    s = np.asarray(z, dtype=float).reshape(nb, 13).copy()
    body, part = divmod(k, 12)
    block, axis = divmod(part, 3)
    if block == 2:
        dq = np.zeros(4)
        dq[0] = np.sqrt(1.0 - e * e)
        dq[1 + axis] = e
        s[body, 6:10] = quat.multiply(s[body, 6:10], dq)
    else:
        s[body, (0, 3, None, 10)[block] + axis] += e
    return s.reshape(-1)


class _StepMap:
    """The differentiated map: (mechanism, state, u) -> next state, counting evaluations."""

    def __init__(self, opts, minimal: bool, kappa: float | None, substeps: int = 1):
        self.opts, self.minimal, self.kappa, self.substeps = opts, minimal, kappa, substeps
        self.evaluations = 0
        self.unconverged = 0

    def __call__(self, mech, x, u) -> np.ndarray:
        z = minimal_to_maximal(mech, x) if self.minimal else x
        if self.substeps > 1:  # the step solved as substeps (simulation.substeps), the map differentiated
            try:
                z1 = _grad.substep_gradients(mech, z, u, self.substeps, self.opts, wrt=()).next_state
            except SolverError:
                z1 = np.full(13 * mech.nb, np.nan)
                self.unconverged += 1
            self.evaluations += 1
            return maximal_to_minimal(mech, z1) if self.minimal else z1
        if self.kappa is None:
            z1, result = solve_step(mech, z, u, self.opts)
        else:
            g = _grad.step_gradients(mech, z, u, self.opts, wrt=(), kappa=self.kappa)
            z1, result = g.next_state, g.result
        self.evaluations += 1
        if not result.success:
            self.unconverged += 1
        return maximal_to_minimal(mech, z1) if self.minimal else z1

    def difference(self, mech, base: np.ndarray, other: np.ndarray) -> np.ndarray:
        return other - base if self.minimal else tangent_difference(mech.nb, base, other)


def _column(fmap: _StepMap, mech, base, evaluate, e: float) -> np.ndarray:
    return four_point(lambda d: fmap.difference(mech, base, evaluate(d)), e)


def finite_difference_blocks(mech, x0, u, opts, names, minimal=False, kappa=None, eps=1e-6, kinds=(), substeps=1):
    """Finite-difference versions of the blocks ``names`` (A, B, P) of the step (``substeps``
    n > 1: of the step solved as n substeps). Returns (dict, map)."""
    fmap = _StepMap(opts, minimal, kappa, substeps)
    x0 = np.asarray(x0, dtype=float)
    u = np.asarray(u, dtype=float)
    base = fmap(mech, x0, u)
    out = {}
    if "A" in names:
        n = x0.size if minimal else 12 * mech.nb
        cols = []
        for k in range(n):
            if minimal:
                def at(d, k=k):
                    x = x0.copy()
                    x[k] += d
                    return fmap(mech, x, u)
            else:
                def at(d, k=k):
                    return fmap(mech, perturb_maximal(x0, mech.nb, k, d), u)
            cols.append(_column(fmap, mech, base, at, eps))
        out["A"] = np.stack(cols, axis=1)
    if "B" in names:
        cols = []
        for i in range(u.size):
            def at(d, i=i):
                uu = u.copy()
                uu[i] += d
                return fmap(mech, x0, uu)
            cols.append(_column(fmap, mech, base, at, eps * max(1.0, abs(u[i]))))
        out["B"] = np.stack(cols, axis=1) if cols else np.zeros((base.size if minimal else 12 * mech.nb, 0))
    if "P" in names:
        labels = parameter_labels(mech, kinds)
        values = parameter_values(mech, labels)
        cols = []
        for label, value in zip(labels, values):
            def at(d, label=label, value=value):
                return fmap(with_parameters(mech, [label], [value + d]), x0, u)
            cols.append(_column(fmap, mech, base, at, eps * max(1.0, abs(value))))
        out["P"] = np.stack(cols, axis=1) if cols else np.zeros((base.size if minimal else 12 * mech.nb, 0))
    return out, fmap


def _column_groups(name: str, cols: list[str], minimal: bool) -> dict[str, list[int]]:
    """Columns grouped: per body and part (maximal A), per joint (minimal A, B), per parameter (P)."""
    groups: dict[str, list[int]] = {}
    for i, label in enumerate(cols):
        if name == "P":
            parts = label.split(".")
            key = ".".join(parts[:-1]) if parts[-1] in ("x", "y", "z", "xx", "yy", "zz", "xy", "xz", "yz") or parts[-1].isdigit() else label
        elif name == "A" and not minimal:
            key = label.rsplit(".", 1)[0]
        else:
            key = label.split(":", 1)[0]
        groups.setdefault(key, []).append(i)
    return groups


def check_gradients(mech, x0, u, opts, blocks, minimal=False, kappa=None, eps=1e-6, kinds=(), substeps=1) -> CheckReport:
    """Compare ``blocks`` (name -> (matrix, rows, cols)) with finite differences (of the step
    solved as ``substeps`` substeps when n > 1)."""
    numeric, fmap = finite_difference_blocks(mech, x0, u, opts, tuple(blocks), minimal, kappa, eps, kinds, substeps)
    errors: dict[str, float] = {}
    groups: list[GroupError] = []
    for name, (mat, _, cols) in blocks.items():
        fd = numeric[name]
        rel = np.abs(np.asarray(mat) - fd) / np.maximum(1.0, np.abs(fd))
        errors[name] = float(np.max(rel)) if rel.size else 0.0
        for key, idx in _column_groups(name, cols, minimal).items():
            groups.append(GroupError(name, key, len(idx), float(np.max(rel[:, idx])) if rel.shape[0] else 0.0))
    notes = []
    if mech.has_inequalities:
        if kappa is None:
            notes.append(
                "the scene has contacts or joint limits: finite differences agree with the gradients only where "
                "the step is smooth (no contact or limit switching within the perturbation, not pinned at a cone "
                "boundary); where it is not, check the relaxed step instead with --kappa (e.g. --kappa 1e-4)"
            )
        else:
            notes.append(f"finite differences of the relaxed step (central path s o gamma = {kappa:g}), the map --kappa differentiates")
    return CheckReport(errors, groups, fmap.evaluations, fmap.unconverged, notes)
