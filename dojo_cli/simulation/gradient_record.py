"""Row and column labels of step Jacobians, and the per-step Jacobians a run stores.

``dojo simulate --gradients`` stores, for every step k, the Jacobians of the step
from state k (docs/storage.md): ``gradients/A`` (12 nb, 12 nb) and ``gradients/B``
(12 nb, nu) in tangent coordinates [x, v, phi, w] per body, plus
``gradients/kappa`` (where on the central path they were taken) and
``gradients/mismatch`` (how far the gradient's own solve of the step landed from the
stored next state, tangent infinity norm: the gradients re-solve the step from
state k without the simulation's warm start, so they agree to the solver tolerance).
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.coordinates import interleave_minimal
from dojo_cli.simulation import gradients as _grad
from dojo_cli.solver.options import SolverOptions

GRADIENT_WRT = ("state", "input")


def maximal_labels(mech: Mechanism) -> list[str]:
    """Tangent coordinates, per body [x, v, phi, w]: ``link.x.0`` .. ``link.w.2``."""
    return [f"{b.name}.{part}.{i}" for b in mech.bodies for part in ("x", "v", "phi", "w") for i in range(3)]


def minimal_labels(mech: Mechanism) -> list[str]:
    """Minimal state entries, per joint [coordinates; velocities]: ``hinge:r0``, ``hinge:r0_dot``."""
    names = mech.coordinate_names()
    out = interleave_minimal(mech, np.array(names, dtype=object), np.array([f"{n}_dot" for n in names], dtype=object))
    return [str(n) for n in out]


def input_labels(mech: Mechanism) -> list[str]:
    """One per input (inputs act on the free coordinates): ``hinge:r0``."""
    return list(mech.coordinate_names())


def parse_gradient_wrt(text: str) -> tuple[str, ...]:
    """``state,input`` -> ("state", "input"); ValueError on anything else."""
    parts = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not parts or any(p not in GRADIENT_WRT for p in parts):
        raise ValueError(f"expected a comma-separated subset of {', '.join(GRADIENT_WRT)}, got {text!r}")
    return parts


def gradient_dataset_attrs(mech: Mechanism, wrt=GRADIENT_WRT) -> dict[str, dict]:
    """Attributes (row/column labels) of the stored gradient datasets."""
    rows = maximal_labels(mech)
    out = {}
    if "state" in wrt:
        out["gradients/A"] = {"rows": rows, "cols": rows, "meaning": "d z[k+1] / d z[k], tangent coordinates"}
    if "input" in wrt:
        out["gradients/B"] = {"rows": rows, "cols": input_labels(mech), "meaning": "d z[k+1] / d u[k]"}
    return out


def _tangent_gap(nb: int, za: np.ndarray, zb: np.ndarray) -> float:
    a, b = za.reshape(nb, 13), zb.reshape(nb, 13)
    dphi = quat.multiply(quat.conjugate(a[:, 6:10]), b[:, 6:10])[:, 1:]
    parts = [b[:, 0:3] - a[:, 0:3], b[:, 3:6] - a[:, 3:6], dphi, b[:, 10:13] - a[:, 10:13]]
    return float(max(np.max(np.abs(p)) for p in parts)) if nb else 0.0


def step_gradient_record(
    mech: Mechanism, z: np.ndarray, u: np.ndarray, opts: SolverOptions, wrt=GRADIENT_WRT, z_next: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The per-step gradient datasets of the step from z with inputs u (storage extras).

    Args:
        z_next: the stored next state, to record ``gradients/mismatch`` (NaN if None).
    """
    g = _grad.step_gradients(mech, z, u, opts, wrt=tuple(wrt))
    out: dict[str, np.ndarray] = {}
    if g.A is not None:
        out["gradients/A"] = np.asarray(g.A, dtype=float)
    if g.B is not None:
        out["gradients/B"] = np.asarray(g.B, dtype=float).reshape(12 * mech.nb, mech.nf)
    out["gradients/kappa"] = np.float64(g.kappa)
    gap = np.nan if z_next is None else _tangent_gap(mech.nb, np.asarray(z_next, float), np.asarray(g.next_state, float))
    out["gradients/mismatch"] = np.float64(gap)
    return out
