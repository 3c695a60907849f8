"""Forward and reverse mode through a whole rollout (issue 26 item 5, issue 28 item 1).

A rollout z_0 -> z_1 -> ... -> z_T under inputs u_0 .. u_{T-1} (and the model's
parameters theta) is a composition of steps z_{k+1} = f(z_k, u_k, theta), each one the
solution of the step's equations r(w; z_k, u_k, theta) = 0. Its derivatives chain the
steps' implicit-function-theorem derivatives (simulation/gradients.py), without ever
forming a step's A or B:

- forward mode (``rollout_jvp``): dz_{k+1} = A_k dz_k + B_k du_k + P_k dtheta, one solve
  with dr/dw per step, right after the step (its factorisation at the solution);
- reverse mode (``rollout_vjp``): with the cotangent zbar_{k+1} of z_{k+1} (the loss's
  own plus what later states pass back), zbar_k = A_k^T zbar_{k+1}, ubar_k = B_k^T zbar_{k+1},
  thetabar += P_k^T zbar_{k+1}: one transposed solve (dr/dw)^T y = T^T zbar_{k+1} per step,
  then products with dr/dz, dr/du, dr/dtheta. The forward pass records each step's
  solution (its unknowns, contact set and unwrapped angles); the backward pass restores
  it, refactorises dr/dw there once and solves the transposed system with it.

Coordinates are the gradients' (docs/gradients.md): tangents per body [x, v, phi, w]
(12 nb), q -> q [sqrt(1 - |phi|^2), phi]. ``tangent_from_raw_cotangent`` and
``raw_from_tangent_cotangent`` convert cotangents of raw states (13 nb, the quaternion's
four numbers) for callers that differentiate raw arrays (dojo_cli.jax).

Contact and joint limits: each step is an interior-point solve, so the rollout is only
piecewise smooth. With ``kappa`` the run is the relaxed one: every step moved onto the
central path s o gamma = kappa and the run continuing from that relaxed step, a smooth
map whose exact derivative these are (finite differences of the same relaxed run agree).
Without it the derivatives are taken where each solve stopped (its final central-path
value, about the complementarity tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SolverError, from_core
from dojo_cli.math.quaternion import conjugate, multiply
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels
from dojo_cli.simulation.step import core_options, refuse_armature
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE


@dataclass
class RolloutTangents:
    """A rollout and its forward-mode derivative.

    Attributes:
        states: (T, 13 nb) the states z_1 .. z_T the steps reach.
        tangents: (T, 12 nb) dz_1 .. dz_T, tangent coordinates [x, v, phi, w] per body.
    """

    states: np.ndarray
    tangents: np.ndarray


@dataclass
class RolloutCotangents:
    """A rollout and its reverse-mode derivative.

    Attributes:
        states: (T, 13 nb) the states z_1 .. z_T the steps reach.
        z0: (12 nb,) the cotangent of the initial state, tangent coordinates.
        inputs: (T, nu) the cotangents of the inputs.
        params: (p,) the cotangent of the parameters (``labels`` names them).
    """

    states: np.ndarray
    z0: np.ndarray
    inputs: np.ndarray
    params: np.ndarray
    labels: list[str]


def _setup(mech: Mechanism, z0, U, params):
    refuse_armature(mech)  # as every step does (simulation/step.py)
    unknown = [kind for kind in params if kind not in PARAMETER_KINDS]
    if unknown:
        raise ValueError(f"unknown parameter kind {unknown[0]!r}; expected one of {', '.join(PARAMETER_KINDS)}")
    z0 = np.ascontiguousarray(z0, dtype=float).reshape(-1)
    if z0.size != 13 * mech.nb:
        raise ValueError(f"z0: expected {13 * mech.nb} values (13 per body), got {z0.size}")
    U = np.ascontiguousarray(U, dtype=float)
    if U.ndim != 2 or U.shape[1] != mech.nu or U.shape[0] < 1:
        raise ValueError(f"U: expected (T, {mech.nu}) inputs with T >= 1, got shape {U.shape}")
    return z0, U, [PARAMETER_KINDS.index(kind) for kind in params]


def _check_status(status, what: str) -> None:
    bad = np.flatnonzero(np.asarray(status) != 0)
    if bad.size:
        k = int(bad[0])
        raise SolverError(f"{what}: step {k} did not converge ({STATUS_FROM_CODE[int(status[k])].value}); "
                          "its derivative is not defined")


def rollout_jvp(mech: Mechanism, z0, U, dz0=None, dU=None, dparams=None, params=(), opts: SolverOptions | None = None,
                kappa: float | None = None) -> RolloutTangents:
    """Forward mode through the rollout of inputs U from z0: the states and their tangents.

    Args:
        z0: (13 nb,) initial maximal state [x, v, q, w] per body.
        U: (T, nu) inputs per step.
        dz0: (12 nb,) tangent of z0 [x, v, phi, w] per body (None: zero).
        dU: (T, nu) tangents of the inputs (None: zero).
        dparams: (p,) tangent of the parameters of the kinds ``params`` (labels:
            dojo.parameter_labels(mech, params)).
        kappa: differentiate the relaxed run (module docstring), None: where each solve stopped.

    Raises:
        SolverError: a step did not converge.
    """
    z0, U, codes = _setup(mech, z0, U, params)
    T = U.shape[0]
    nt = 12 * mech.nb
    p = len(parameter_labels(mech, params)) if codes else 0
    dz0 = np.zeros(nt) if dz0 is None else np.ascontiguousarray(dz0, dtype=float).reshape(-1)
    dU = None if dU is None else np.ascontiguousarray(dU, dtype=float).reshape(T, mech.nu)
    dp = None if dparams is None or p == 0 else np.ascontiguousarray(dparams, dtype=float).reshape(-1)
    try:
        out = _core.rollout_jvp(mech.core, _core.Data(mech.core), z0, T, U, np.zeros(mech.nl),
                                core_options(opts or DOJO_DEFAULTS), -1.0 if kappa is None else float(kappa), codes,
                                dz0, dU, dp)
    except (ValueError, TypeError) as exc:
        raise from_core(exc, "rollout_jvp") from None
    _check_status(out["status"], "rollout_jvp")
    return RolloutTangents(states=out["states"], tangents=out["tangents"])


def rollout_vjp(mech: Mechanism, z0, U, cotangents, params=(), opts: SolverOptions | None = None,
                kappa: float | None = None) -> RolloutCotangents:
    """Reverse mode through the rollout of inputs U from z0: the gradient of a loss.

    Args:
        z0: (13 nb,) initial maximal state [x, v, q, w] per body.
        U: (T, nu) inputs per step.
        cotangents: (T, 12 nb) dL/dz_1 .. dL/dz_T of a loss L of the states the steps reach,
            tangent coordinates [x, v, phi, w] per body (tangent_from_raw_cotangent
            converts a gradient with respect to the raw 13 nb numbers).
        params: parameter kinds to return the cotangent of.
        kappa: differentiate the relaxed run (module docstring), None: where each solve stopped.

    Returns:
        RolloutCotangents: dL/dz0 (tangent), dL/dU (T, nu), dL/dtheta (p,).

    Raises:
        SolverError: a step did not converge.
    """
    z0, U, codes = _setup(mech, z0, U, params)
    T = U.shape[0]
    bar = np.ascontiguousarray(cotangents, dtype=float).reshape(T, 12 * mech.nb)
    try:
        out = _core.rollout_vjp(mech.core, _core.Data(mech.core), z0, T, U, np.zeros(mech.nl),
                                core_options(opts or DOJO_DEFAULTS), -1.0 if kappa is None else float(kappa), codes,
                                bar)
    except (ValueError, TypeError) as exc:
        raise from_core(exc, "rollout_vjp") from None
    _check_status(out["status"], "rollout_vjp")
    labels = parameter_labels(mech, params) if codes else []
    return RolloutCotangents(states=out["states"], z0=out["z0"], inputs=out["inputs"], params=out["params"],
                             labels=labels)


# ------------------------------------------------- raw states <-> tangent coordinates
def tangent_from_raw_cotangent(mech: Mechanism, z, g) -> np.ndarray:
    """(..., 12 nb) cotangents in tangent coordinates of gradients g (..., 13 nb) taken
    with respect to the raw states z (..., 13 nb): with q -> q [sqrt(1 - |phi|^2), phi],
    dq/dphi_i = q (x) e_i, so gbar_phi = Vec(q* (x) g_q)."""
    z = np.asarray(z, dtype=float)
    g = np.asarray(g, dtype=float)
    zs = z.reshape(z.shape[:-1] + (mech.nb, 13))
    gs = g.reshape(g.shape[:-1] + (mech.nb, 13))
    out = np.empty(g.shape[:-1] + (mech.nb, 12))
    out[..., 0:6] = gs[..., 0:6]
    out[..., 6:9] = multiply(conjugate(zs[..., 6:10]), gs[..., 6:10])[..., 1:]
    out[..., 9:12] = gs[..., 10:13]
    return out.reshape(g.shape[:-1] + (12 * mech.nb,))


def raw_from_tangent_cotangent(mech: Mechanism, z, gbar) -> np.ndarray:
    """(..., 13 nb) gradients with respect to raw states z (..., 13 nb) of cotangents gbar
    (..., 12 nb) in tangent coordinates: g_q = q (x) [0, gbar_phi], the gradient on the unit
    sphere (no component along q: the step depends on unit quaternions only)."""
    z = np.asarray(z, dtype=float)
    gbar = np.asarray(gbar, dtype=float)
    zs = z.reshape(z.shape[:-1] + (mech.nb, 13))
    gs = gbar.reshape(gbar.shape[:-1] + (mech.nb, 12))
    out = np.empty(gbar.shape[:-1] + (mech.nb, 13))
    out[..., 0:6] = gs[..., 0:6]
    pure = np.concatenate([np.zeros(gs.shape[:-1] + (1,)), gs[..., 6:9]], axis=-1)
    out[..., 6:10] = multiply(zs[..., 6:10], pure)
    out[..., 10:13] = gs[..., 9:12]
    return out.reshape(gbar.shape[:-1] + (13 * mech.nb,))
