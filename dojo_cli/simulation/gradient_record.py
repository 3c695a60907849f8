"""Row and column labels of step Jacobians, and the per-step Jacobians a run stores.

``dojo simulate --gradients`` stores, for every step k, the Jacobians of the step
from state k (docs/storage.md): ``gradients/A`` (12 nb, 12 nb) and ``gradients/B``
(12 nb, nu) in tangent coordinates [x, v, phi, w] per body, plus
``gradients/kappa`` (where on the central path they were taken). They are taken on
the step's own solve (simulation.run), so they are exactly the derivatives of the
stored step.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.coordinates import interleave_minimal

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
    """One per input: ``hinge:r0`` (inputs on the free coordinates), or the actuators' names."""
    return list(mech.input_names())


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
