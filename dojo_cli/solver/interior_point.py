"""Primal-dual interior-point method with Mehrotra predictor-corrector steps.

Dojo's ``mehrotra!`` (dojo_engine_notes.md 5.3) for a nonlinear complementarity
problem whose unknowns include pairs (s, gamma) in cones:
- positive orthant pairs: s_i >= 0, gamma_i >= 0, complementarity s_i gamma_i = kappa;
- second-order cones of dimension 3: s, gamma in {(u0, u1, u2): u0 >= |(u1, u2)|},
  complementarity cone_product(gamma, s) = kappa (1, 0, 0), with
  cone_product(u, w) = (u.w, u0 w[1:] + w0 u[1:]).
The problem's residual holds those products with kappa = 0; this module
subtracts the centering target.

Each iteration:
1. affine (predictor) direction: Newton on the residual with kappa = 0;
2. the affine step length in the cones (fraction to the boundary 0.95);
3. centering: nu = sum s.gamma / degree, nu_aff the same after the affine step,
   sigma = clamp(nu_aff / nu, 0, 1)^3, kappa = max(sigma nu, btol / undercut);
4. corrector: the same factorisation solves for the residual with target kappa
   plus the affine second-order term (ds_aff o dgamma_aff). Dojo's corrector
   adds kappa e to a residual that already subtracted the previous iteration's
   kappa, so it aims at kappa_prev + kappa_new; here the residual is always
   evaluated with kappa = 0 and the target subtracted once, so it aims at kappa.
5. cone step length with tau = max(0.95, 1 - max(rvio, bvio)^2) (at most 0.95 for
   second-order cones), then
   backtracking by ``ls_scale`` (at most ``max_ls`` times) until the candidate
   does not increase both the equality violation rvio and the complementarity
   violation bvio;
6. progress bookkeeping: after ``no_progress_max`` iterations without a 20 %
   decrease of an unconverged violation, undercut *= no_progress_undercut.
Converged when rvio < rtol and bvio < btol (raw products, kappa not subtracted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from dojo_cli.math.cones import arrow, cone_product
from dojo_cli.solver.linear import Factorization
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverResult, SolverStatus

# Fraction to the boundary of the affine step (Dojo's tau_ort = tau_soc = 0.95).
AFFINE_FRACTION = 0.95
# Lower bound of the corrector's fraction to the boundary (Dojo: max(0.95, 1 - viol^2)).
MIN_FRACTION = 0.95
# Fraction to the boundary of second-order cones (Dojo's tau_soc = min(tau, 0.95)).
SOC_FRACTION = 0.95
# A step shorter than this was cut by a cone boundary; after this many in a row the
# next iteration centres (sigma = 1), once. Dojo has no such safeguard and can jam
# with a cone variable pinned to its boundary.
SHORT_STEP = 0.1
SHORT_STEPS_BEFORE_CENTERING = 1
# A violation must shrink by this factor to count as progress (Dojo: 20 %).
PROGRESS_FACTOR = 0.8
# Guards of the second-order-cone step length (CVXOPT 8.2 as in Dojo).
_SOC_J_FLOOR = 1e-25
_SOC_EPS = 1e-14


class ConeProblem(Protocol):
    """What the interior-point solver needs.

    Attributes:
        orthant_s, orthant_g: (no,) indices in w of paired orthant variables.
        orthant_rows: (no,) residual rows holding s_i gamma_i.
        soc_s, soc_g: (ns, 3) indices in w of second-order-cone blocks.
        soc_rows: (ns, 3) residual rows holding cone_product(gamma, s).
        equality_rows: (ne,) all other residual rows.
        degree: cone degree (orthant pairs + SOC blocks), for the centering average.
    """

    orthant_s: np.ndarray
    orthant_g: np.ndarray
    orthant_rows: np.ndarray
    soc_s: np.ndarray
    soc_g: np.ndarray
    soc_rows: np.ndarray
    equality_rows: np.ndarray
    degree: int

    def residual(self, w: np.ndarray) -> np.ndarray: ...

    def factorize(self, w: np.ndarray, soc_jacobians=None) -> Factorization:
        """soc_jacobians: (d/ds, d/dgamma) of the SOC complementarity rows, each
        (ns, 3, 3), replacing the raw arrow matrices (Nesterov-Todd scaling)."""
        ...

    def project(self, w: np.ndarray) -> np.ndarray: ...


_J_SIGN = np.array([1.0, -1.0, -1.0])
# Relative floor of Jordan determinants in the scaling (det / x0^2 below it is rounding).
_DET_FLOOR = 1e-30
_TINY = 1e-300  # absolute floor, for a cone vector that is exactly zero
_J = np.diag(_J_SIGN)


def _det(x: np.ndarray) -> np.ndarray:
    """x0^2 - |x[1:]|^2 over the last axis (the SOC's Jordan determinant)."""
    return x[..., 0] ** 2 - np.sum(x[..., 1:] ** 2, axis=-1)


def nesterov_todd(s: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nesterov-Todd scaling of second-order-cone pairs.

    With the quadratic representation P(x) = 2 x x^T - det(x) J, the scaling point
    w satisfies P(w) z = s; W = P(w)^(-1/2) then gives W s = W^-1 z = lambda with
    lambda.lambda = s.z. Closed form: w = (det s / det z)^(1/4) w_hat, w_hat the
    det-1 normalisation of s/sqrt(det s) + J z/sqrt(det z), and P(w)^(1/2) =
    (det s / det z)^(1/4) P(u) with u = sqrt(w_hat) = (w0 + 1, w[1:]) / sqrt(2 (w0 + 1))
    (Nesterov and Todd 1998; Vandenberghe, "The CVXOPT linear and quadratic cone
    program solvers", 2010, section 4).

    Args:
        s, z: (m, 3) points strictly inside the cone.

    Returns:
        W (m,3,3), W^-1 (m,3,3), lambda (m,3).
    """
    # Points within rounding of the boundary can have det <= 0 at very tight tolerances;
    # a relative floor keeps the scaling finite (it only matters where det ~ 1e-30 x0^2).
    ds = np.maximum(_det(s), np.maximum(_DET_FLOOR * s[:, 0] ** 2, _TINY))
    dz = np.maximum(_det(z), np.maximum(_DET_FLOOR * z[:, 0] ** 2, _TINY))
    sb = s / np.sqrt(ds)[:, None]
    zb = z / np.sqrt(dz)[:, None]
    wt = sb + _J_SIGN * zb
    wh = wt / np.sqrt(np.maximum(_det(wt), np.maximum(_DET_FLOOR * wt[:, 0] ** 2, _TINY)))[:, None]
    u = np.concatenate([wh[:, :1] + 1.0, wh[:, 1:]], axis=1) / np.sqrt(2.0 * (wh[:, 0] + 1.0))[:, None]
    beta = (ds / dz) ** 0.25
    w_inv = beta[:, None, None] * (2.0 * u[:, :, None] * u[:, None, :] - _J)
    ju = u * _J_SIGN
    w = (1.0 / beta)[:, None, None] * (2.0 * ju[:, :, None] * ju[:, None, :] - _J)
    lam = np.einsum("mij,mj->mi", w, s)
    return w, w_inv, lam


def scaled_linearization(problem: ConeProblem, w: np.ndarray, r: np.ndarray):
    """Residual and second-order-cone Jacobians for a Nesterov-Todd scaled Newton step.

    The rows cone_product(gamma, s) = kappa e become lambda o (W ds + W^-1 dgamma) =
    kappa e - lambda o lambda, so their residual is replaced by lambda o lambda (kappa
    = 0; the caller subtracts its target) and their Jacobian by (arrow(lambda) W,
    arrow(lambda) W^-1).

    Returns:
        (residual copy with the SOC rows scaled, (d/ds, d/dgamma) or None, (W, W^-1) or (None, None)).
    """
    rn = r.copy()
    if not problem.soc_s.size:
        return rn, None, (None, None)
    w_s, w_inv, lam = nesterov_todd(w[problem.soc_s], w[problem.soc_g])
    arrow_lam = arrow(lam)
    rn[problem.soc_rows] = cone_product(lam, lam)
    return rn, (arrow_lam @ w_s, arrow_lam @ w_inv), (w_s, w_inv)


def orthant_step(x: np.ndarray, dx: np.ndarray, tau: float) -> float:
    """Largest alpha <= 1 keeping x + alpha dx >= (1 - tau) x (Dojo's positive orthant rule)."""
    neg = dx < 0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, np.min(-tau * x[neg] / dx[neg])))


def soc_step(x: np.ndarray, dx: np.ndarray, tau: float) -> float:
    """Step length to the boundary of second-order cones (CVXOPT section 8.2, Dojo's rule).

    Args:
        x: (m, 3) points inside the cones; dx: (m, 3) directions.
    """
    if x.size == 0:
        return 1.0
    x0, xb = x[:, 0], x[:, 1:]
    d0, db = dx[:, 0], dx[:, 1:]
    jn = np.maximum(x0 * x0 - np.sum(xb * xb, axis=1), _SOC_J_FLOOR) + _SOC_EPS
    sj = np.sqrt(jn)
    c = x0 * d0 - np.sum(xb * db, axis=1) + _SOC_EPS
    rho_s = c / jn
    rho_v = db / sj[:, None] - ((c / sj + d0) / (x0 / sj + 1.0))[:, None] * xb / jn[:, None]
    gap = np.linalg.norm(rho_v, axis=1) - rho_s
    pos = gap > 0
    if not np.any(pos):
        return 1.0
    return float(min(1.0, np.min(tau / gap[pos])))


def cone_step(problem: ConeProblem, w: np.ndarray, dw: np.ndarray, tau: float) -> float:
    """Largest step keeping every cone variable strictly inside its cone.

    The second-order cones use min(tau, SOC_FRACTION): going 1 - 1e-6 of the way
    to their boundary (the orthant's tau near convergence) pins them there and
    jams the iteration (Dojo's tau_soc = min(tau, 0.95)).
    """
    alpha = 1.0
    if problem.orthant_s.size:
        idx = np.concatenate([problem.orthant_s, problem.orthant_g])
        alpha = min(alpha, orthant_step(w[idx], dw[idx], tau))
    if problem.soc_s.size:
        for idx in (problem.soc_s, problem.soc_g):
            alpha = min(alpha, soc_step(w[idx], dw[idx], min(tau, SOC_FRACTION)))
    return alpha


def complementarity(problem: ConeProblem, w: np.ndarray) -> float:
    """Mean duality measure nu = sum s.gamma / degree."""
    total = float(np.dot(w[problem.orthant_s], w[problem.orthant_g]))
    if problem.soc_s.size:
        total += float(np.sum(w[problem.soc_s] * w[problem.soc_g]))
    return total / max(problem.degree, 1)


def violations(problem: ConeProblem, r: np.ndarray) -> tuple[float, float]:
    """(rvio, bvio): infinity norms of the equality and complementarity rows (kappa = 0)."""
    rvio = float(np.max(np.abs(r[problem.equality_rows]), initial=0.0))
    comp = np.concatenate([r[problem.orthant_rows], r[problem.soc_rows].ravel()])
    bvio = float(np.max(np.abs(comp), initial=0.0))
    return rvio, bvio


def interior_point(
    problem: ConeProblem, w0: np.ndarray, opts: SolverOptions, log: Callable[[dict], None] | None = None
) -> SolverResult:
    """Solve the complementarity problem from w0 (cone variables strictly inside).

    Returns:
        The final iterate, status, iterations, the larger of the final rvio and
        bvio, and the last factorisation.
    """
    w = problem.project(np.array(w0, dtype=float))
    target = np.zeros_like(w)  # e: 1 on orthant rows, (1, 0, 0) on SOC rows
    target[problem.orthant_rows] = 1.0
    if problem.soc_rows.size:
        target[problem.soc_rows[:, 0]] = 1.0
    undercut = opts.undercut
    no_progress = 0
    short_steps = 0
    factorization = None
    line_search_failed = False
    r = problem.residual(w)
    rvio, bvio = violations(problem, r)
    for it in range(opts.max_iter):
        if rvio < opts.rtol and bvio < opts.btol:
            return SolverResult(w, SolverStatus.SUCCESS, it, max(rvio, bvio), factorization, bvio)
        # Second-order cones are linearised in Nesterov-Todd scaled form: the rows
        # cone_product(gamma, s) = kappa e become lambda o (W ds + W^-1 dgamma) =
        # kappa e - lambda o lambda; the raw (AHO-like) linearisation can drive a cone
        # variable onto its boundary and jam. The residual used for convergence stays raw.
        rn, soc_jac, (w_s, w_inv) = scaled_linearization(problem, w, r)
        factorization = problem.factorize(w, soc_jac) if soc_jac is not None else problem.factorize(w)

        # 1-2. affine direction and its step length
        d_aff = factorization.solve(-rn)
        a_aff = cone_step(problem, w, d_aff, AFFINE_FRACTION)

        # 3. centering; after a step cut short by a cone boundary, a pure centering
        # step (sigma = 1) pulls the iterate back towards the central path (the raw
        # cone-product complementarity has no Nesterov-Todd scaling to keep it there)
        nu = complementarity(problem, w)
        nu_aff = complementarity(problem, w + a_aff * d_aff)
        sigma = float(np.clip(nu_aff / (nu + 1e-20), 0.0, 1.0)) ** 3
        centering = short_steps >= SHORT_STEPS_BEFORE_CENTERING
        if centering:
            sigma = 1.0
        kappa = max(sigma * nu, opts.btol / undercut)

        # 4. corrector: target kappa, plus the affine second-order term (scaled for SOCs)
        rhs = rn - kappa * target
        rhs[problem.orthant_rows] += d_aff[problem.orthant_s] * d_aff[problem.orthant_g]
        if problem.soc_rows.size:
            ds_scaled = np.einsum("mij,mj->mi", w_s, d_aff[problem.soc_s])
            dz_scaled = np.einsum("mij,mj->mi", w_inv, d_aff[problem.soc_g])
            rhs[problem.soc_rows] += cone_product(ds_scaled, dz_scaled)
        delta = factorization.solve(-rhs)

        # 5. cone step length and backtracking
        tau = max(MIN_FRACTION, 1.0 - max(rvio, bvio) ** 2)
        alpha = cone_step(problem, w, delta, tau)
        line_search_failed = True
        for _ in range(max(opts.max_ls, 1)):
            cand = problem.project(w + alpha * delta)
            rc = problem.residual(cand)
            rvio_c, bvio_c = violations(problem, rc)
            # a non-finite candidate is never accepted (NaN compares false, so the test
            # below alone would let it through)
            if np.isfinite(rvio_c) and np.isfinite(bvio_c) and not (rvio_c > rvio and bvio_c > bvio):
                line_search_failed = False
                break
            alpha *= opts.ls_scale
        # Dojo accepts the last candidate even when backtracking ran out; the
        # status records it if the solve then ends unconverged. A non-finite one is
        # never taken: the solve stops with the last finite iterate.
        if not (np.isfinite(rvio_c) and np.isfinite(bvio_c)):
            status = SolverStatus.LINE_SEARCH_FAILURE
            return SolverResult(w, status, it + 1, max(rvio, bvio), factorization, bvio)

        # 6. progress bookkeeping
        progress = (rvio >= opts.rtol and rvio_c < PROGRESS_FACTOR * rvio) or (
            bvio >= opts.btol and bvio_c < PROGRESS_FACTOR * bvio
        )
        no_progress = max(no_progress - 1, 0) if progress else no_progress + 1
        if no_progress >= opts.no_progress_max:
            undercut *= opts.no_progress_undercut
            no_progress = 0
        if log is not None:
            log({
                "iteration": it + 1, "bvio": bvio_c, "rvio": rvio_c, "alpha": alpha, "kappa": kappa,
                "residual": float(np.max(np.abs(rc))), "step": float(np.max(np.abs(delta))),
            })
        # one centring step at a time: it is followed by a normal (Mehrotra) iteration
        short_steps = 0 if centering else (short_steps + 1 if alpha < SHORT_STEP else 0)
        w, r, rvio, bvio = cand, rc, rvio_c, bvio_c
    if rvio < opts.rtol and bvio < opts.btol:
        return SolverResult(w, SolverStatus.SUCCESS, opts.max_iter, max(rvio, bvio), factorization, bvio)
    status = SolverStatus.LINE_SEARCH_FAILURE if line_search_failed else SolverStatus.MAX_ITERATIONS
    return SolverResult(w, status, opts.max_iter, max(rvio, bvio), factorization, bvio)
