"""Summaries of the per-step contact records of a run (``dojo contacts``).

Interior-point solutions are relaxed: a contact satisfies gn sn ~ kappa <= btol (in
the contact's unit when the tolerances are relative: ``contact_btol``),
so a contact the body does not touch still carries an impulse up to
btol / distance, and a touching one keeps a gap up to btol / gn. A contact is
therefore counted as touching at a step when its distance is below ``gap`` and
its normal impulse above btol / gap, the largest impulse an untouching contact
at that distance can carry. Among touching steps, a contact sticks when its slip
speed is below ``slip_tol``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

# Default thresholds (documented in the CLI help).
DEFAULT_GAP = 1e-2  # m
DEFAULT_SLIP_TOL = 1e-3  # m/s


@dataclass
class ContactSummary:
    """One contact over a run.

    Attributes:
        name: the contact; model: its model; friction: mu.
        min_distance: smallest signed distance (m); penetration: max(0, -min_distance).
        contact_fraction: fraction of steps touching; stick_fraction, slip_fraction:
            fractions of the touching steps sticking or slipping.
        max_cone_violation: largest |friction impulse| - mu gn (N s), 0 inside the cone.
        max_normal_impulse: largest gn (N s).
    """

    name: str
    model: str
    friction: float
    min_distance: float
    penetration: float
    contact_fraction: float
    stick_fraction: float
    slip_fraction: float
    max_cone_violation: float
    max_normal_impulse: float

    def to_dict(self) -> dict:
        return asdict(self)


def contact_btol(mech, btol: float, tolerances: str = "relative") -> np.ndarray:
    """(nc,) each contact's complementarity tolerance on gn sn in m N s: btol times the
    unit of its normal product row when the tolerances are relative (core/maximal/tolerances.h,
    the model's row_scale), btol itself when absolute."""
    if tolerances != "relative":
        return np.full(mech.nc, float(btol))
    start = np.asarray(mech.core.contact_start)[:-1]
    return float(btol) * np.asarray(mech.core.row_scale)[start]


def summarize_contacts(
    names, models, friction, distance, normal_impulse, friction_impulse, slip,
    btol: float, gap: float = DEFAULT_GAP, slip_tol: float = DEFAULT_SLIP_TOL,
) -> list[ContactSummary]:
    """Per-contact summaries.

    Args:
        names, models: (nc,) contact names and models; friction: (nc,) mu.
        distance, normal_impulse: (T, nc); friction_impulse, slip: (T, nc, 2).
        btol: the run's complementarity tolerance on gn sn (m N s), one for all contacts
            or (nc,) per contact (contact_btol).
    """
    distance = np.asarray(distance, float)
    gn = np.asarray(normal_impulse, float)
    # values beyond the float range (a damaged file's bytes) come out as inf, not as an overflow warning
    with np.errstate(over="ignore", invalid="ignore"):
        bt = np.linalg.norm(np.asarray(friction_impulse, float), axis=-1)
        speed = np.linalg.norm(np.asarray(slip, float), axis=-1)
        cone_excess = bt - np.asarray(friction, float) * gn
    touching = (distance < gap) & (gn > btol / gap)
    out = []
    for i, name in enumerate(names):
        t = touching[:, i]
        n_touch = int(t.sum())
        stick = int((t & (speed[:, i] < slip_tol)).sum())
        violation = 0.0 if models[i] == "impact" else float(np.max(cone_excess[:, i], initial=0.0))
        dmin = float(np.min(distance[:, i])) if len(distance) else float("nan")
        out.append(ContactSummary(
            name=str(name), model=str(models[i]), friction=float(friction[i]), min_distance=dmin,
            penetration=max(0.0, -dmin), contact_fraction=n_touch / max(len(distance), 1),
            stick_fraction=stick / n_touch if n_touch else 0.0,
            slip_fraction=(n_touch - stick) / n_touch if n_touch else 0.0,
            max_cone_violation=max(violation, 0.0), max_normal_impulse=float(np.max(gn[:, i], initial=0.0)),
        ))
    return out
