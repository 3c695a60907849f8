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

A step that fails after all its restarts is solved again as substeps, as a run's is
(simulation.substeps: n = 2, 4, 8, 16 substeps of h/n): the rollout goes on from its result,
and the derivatives pass through its composed map (``SubstepChain``: the chain rule through
the re-expressions and each substep's own solve). The rollout is then the core's call per
stretch of full steps (``_core.rollout_jvp``, ``_core.rollout_vjp``) with the substepped steps
between them; reverse mode goes back over the stretches with the cotangent each later one
passed back. A rollout without such a step is one core call, as before. With ``kappa`` a
failed step is not retried (the relaxed map of substeps is not defined here): it stops the
rollout as a step that fails at every count does.

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
from dojo_cli.simulation.substeps import SubstepGradients, Substeps
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


def _check_status(status, what: str, k0: int = 0) -> None:
    bad = np.flatnonzero(np.asarray(status) != 0)
    if bad.size:
        k = int(bad[0])
        raise SolverError(f"{what}: step {k0 + k} did not converge ({STATUS_FROM_CODE[int(status[k])].value}); "
                          "its derivative is not defined")


@dataclass
class _Stretch:
    """Full steps k0 .. k0 + n - 1 of a rollout in one core call, from z (13 nb,) with the
    warm start lam (nl,) and the unwrapped angles (nf,) the call starts from (None: the
    Data's own), as reverse mode replays them."""

    k0: int
    n: int
    z: np.ndarray
    lam: np.ndarray
    angles: np.ndarray | None


@dataclass
class _Substepped:
    """Step i of a rollout solved as substeps (simulation.substeps), its derivatives."""

    i: int
    gradients: SubstepGradients


def _stretch_data(mech: Mechanism, angles):
    data = _core.Data(mech.core)
    if angles is not None:
        data.angle_ref[:] = angles
    return data


def _forward(mech: Mechanism, z0, U, opts, kappa, codes, dz0, dU, dp, what: str, forced=None):
    """The rollout forward with its tangents: stretches of full steps (``_core.rollout_jvp``)
    and, between them, the failed steps solved again as substeps (module docstring); the
    steps of ``forced`` ({step: n}) are solved as n substeps whatever their full step does.
    Returns (states (T, 13 nb), tangents (T, 12 nb), pieces: _Stretch and _Substepped in order)."""
    T, nb = U.shape[0], mech.nb
    states, tangents = np.zeros((T, 13 * nb)), np.zeros((T, 12 * nb))
    core_opts = core_options(opts)
    forced = forced or {}
    pieces: list = []
    z, dz, lam, k0 = z0, dz0, np.zeros(mech.nl), 0
    angles = None  # the unwrapped angles at z (None: a fresh start, the core's start_angle)
    retry = None
    while k0 < T:
        end = min([f for f in forced if f >= k0], default=T)
        counts = None  # the retry's
        if end > k0:
            data = _stretch_data(mech, angles)
            stretch = _Stretch(k0, 0, z, lam.copy(), angles)
            try:
                out = _core.rollout_jvp(mech.core, data, z, end - k0, np.ascontiguousarray(U[k0:end]), lam, core_opts,
                                        -1.0 if kappa is None else float(kappa), codes, dz,
                                        None if dU is None else np.ascontiguousarray(dU[k0:end]), dp)
            except (ValueError, TypeError) as exc:
                raise from_core(exc, what) from None
            n = int(out["steps"])
            status = np.asarray(out["status"][:n])
            failed = bool(status[-1] != 0)
            done = n - 1 if failed else n
            if done:
                states[k0:k0 + done], tangents[k0:k0 + done] = out["states"][:done], out["tangents"][:done]
                stretch.n = done
                pieces.append(stretch)
                z, dz = states[k0 + done - 1], tangents[k0 + done - 1]
            angles = np.array(data.angle_ref)  # at z (a failed step leaves them where it started)
            k0 += done
            if not failed:
                continue
            if kappa is not None:
                _check_status(status, what, k0 - done)
        else:
            counts = (forced[end],)
        # step k0 (failed after all its restarts, or forced): solved as substeps from z
        i = k0
        retry = retry or Substeps(mech, opts)
        res = retry.solve(i, z, U[i], np.zeros(mech.nl), np.full(mech.nf, np.nan) if angles is None else angles,
                          counts=counts, wrt=("state", "input", "params"), kinds=codes)
        if res is None:
            raise SolverError(f"{what}: step {i} did not converge, nor as substeps; its derivative is not defined")
        g = res.gradients
        if g.singular_node != -1:
            raise SolverError(f"{what}: step {i}, solved as {res.n} substeps: the Newton matrix of a substep is "
                              "singular at its solution; its derivative is not defined")
        pieces.append(_Substepped(i, g))
        states[i] = res.out["states"][0]
        tangents[i] = g.A @ dz + (0.0 if dU is None else g.B @ dU[i]) + (0.0 if dp is None else g.P @ dp)
        z, dz, lam, angles, k0 = states[i], tangents[i], res.lam.copy(), res.angle_ref.copy(), i + 1
    return states, tangents, pieces


def rollout_jvp(mech: Mechanism, z0, U, dz0=None, dU=None, dparams=None, params=(), opts: SolverOptions | None = None,
                kappa: float | None = None, *, forced_substeps: dict[int, int] | None = None) -> RolloutTangents:
    """Forward mode through the rollout of inputs U from z0: the states and their tangents.

    Args:
        z0: (13 nb,) initial maximal state [x, v, q, w] per body.
        U: (T, nu) inputs per step.
        dz0: (12 nb,) tangent of z0 [x, v, phi, w] per body (None: zero).
        dU: (T, nu) tangents of the inputs (None: zero).
        dparams: (p,) tangent of the parameters of the kinds ``params`` (labels:
            dojo.parameter_labels(mech, params)).
        kappa: differentiate the relaxed run (module docstring), None: where each solve stopped.
        forced_substeps: {step: n}: steps solved as n substeps whatever their full step does
            (as simulation.integrators.Variational's: tests of the substeps' derivatives).

    Raises:
        SolverError: a step did not converge (nor as substeps).
    """
    z0, U, codes = _setup(mech, z0, U, params)
    T = U.shape[0]
    nt = 12 * mech.nb
    p = len(parameter_labels(mech, params)) if codes else 0
    dz0 = np.zeros(nt) if dz0 is None else np.ascontiguousarray(dz0, dtype=float).reshape(-1)
    dU = None if dU is None else np.ascontiguousarray(dU, dtype=float).reshape(T, mech.nu)
    dp = None if dparams is None or p == 0 else np.ascontiguousarray(dparams, dtype=float).reshape(-1)
    states, tangents, _ = _forward(mech, z0, U, opts or DOJO_DEFAULTS, kappa, codes, dz0, dU, dp, "rollout_jvp",
                                   forced_substeps)
    return RolloutTangents(states=states, tangents=tangents)


def rollout_vjp(mech: Mechanism, z0, U, cotangents, params=(), opts: SolverOptions | None = None,
                kappa: float | None = None, *, forced_substeps: dict[int, int] | None = None) -> RolloutCotangents:
    """Reverse mode through the rollout of inputs U from z0: the gradient of a loss.

    Args:
        z0: (13 nb,) initial maximal state [x, v, q, w] per body.
        U: (T, nu) inputs per step.
        cotangents: (T, 12 nb) dL/dz_1 .. dL/dz_T of a loss L of the states the steps reach,
            tangent coordinates [x, v, phi, w] per body (tangent_from_raw_cotangent
            converts a gradient with respect to the raw 13 nb numbers).
        params: parameter kinds to return the cotangent of.
        kappa: differentiate the relaxed run (module docstring), None: where each solve stopped.
        forced_substeps: {step: n}: steps solved as n substeps (rollout_jvp).

    Returns:
        RolloutCotangents: dL/dz0 (tangent), dL/dU (T, nu), dL/dtheta (p,).

    Raises:
        SolverError: a step did not converge (nor as substeps).
    """
    z0, U, codes = _setup(mech, z0, U, params)
    T = U.shape[0]
    bar = np.ascontiguousarray(cotangents, dtype=float).reshape(T, 12 * mech.nb)
    opts = opts or DOJO_DEFAULTS
    labels = parameter_labels(mech, params) if codes else []
    if not forced_substeps:
        out = _vjp_stretch(mech, _Stretch(0, T, z0, np.zeros(mech.nl), None), U, opts, kappa, codes, bar)
        status = np.asarray(out["status"][: out["steps"]])
        if status[-1] == 0 or kappa is not None:
            _check_status(status, "rollout_vjp")
            return RolloutCotangents(states=out["states"], z0=out["z0"], inputs=out["inputs"], params=out["params"],
                                     labels=labels)
    # a step failed (or is forced): the rollout with it solved as substeps (module docstring),
    # forward once with its pieces, then backward over them from the last
    nt, p = 12 * mech.nb, len(labels)
    states, _, pieces = _forward(mech, z0, U, opts, kappa, codes, np.zeros(nt), None, None, "rollout_vjp",
                                 forced_substeps)
    carry, u_bar, p_bar = np.zeros(nt), np.zeros((T, mech.nu)), np.zeros(p)
    for piece in reversed(pieces):
        if isinstance(piece, _Substepped):
            g, i = piece.gradients, piece.i
            b = bar[i] + carry
            u_bar[i] = g.B.T @ b
            if p:
                p_bar += g.P.T @ b
            carry = g.A.T @ b
            continue
        k0, n = piece.k0, piece.n
        cot = bar[k0:k0 + n].copy()
        cot[-1] += carry
        out = _vjp_stretch(mech, piece, U, opts, kappa, codes, cot)
        _check_status(out["status"][: out["steps"]], "rollout_vjp", k0)
        u_bar[k0:k0 + n] = out["inputs"]
        if p:
            p_bar += out["params"]
        carry = np.asarray(out["z0"])
    return RolloutCotangents(states=states, z0=carry, inputs=u_bar, params=p_bar, labels=labels)


def _vjp_stretch(mech: Mechanism, piece: _Stretch, U, opts, kappa, codes, cotangents) -> dict:
    """``_core.rollout_vjp`` over a stretch of full steps, started as the forward pass started it."""
    k0, n = piece.k0, piece.n
    try:
        return _core.rollout_vjp(mech.core, _stretch_data(mech, piece.angles), piece.z, n,
                                 np.ascontiguousarray(U[k0:k0 + n]), piece.lam.copy(), core_options(opts),
                                 -1.0 if kappa is None else float(kappa), codes, np.ascontiguousarray(cotangents))
    except (ValueError, TypeError) as exc:
        raise from_core(exc, "rollout_vjp") from None


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
