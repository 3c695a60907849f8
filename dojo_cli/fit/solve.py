"""The fit's solver: scipy's bounded trust-region least squares on the exact Jacobians,
multi-start, the Gauss-Newton covariance, and the fitted model's errors on whole recordings
(docs/fit.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dojo_cli.fit import metrics
from dojo_cli.fit.problem import FitProblem, Recording
from dojo_cli.fit.task import FitOptions, FitTask
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.initial import state_at_t0
from dojo_cli.api import simulate

# Singular values of the scaled Jacobian below this fraction of the largest are treated as
# zero in the covariance (a parameter the data does not determine gets an infinite error).
COVARIANCE_RCOND = 1e-10


@dataclass
class FitResult:
    """What a fit found.

    Attributes:
        status: ``converged``, ``max_evaluations`` or ``interrupted`` (Ctrl-C: the best
            iterate so far is kept).
        names: (p,) free parameter names; values: (p,) fitted values; initial: (p,).
        standard_errors: (p,) from the Gauss-Newton covariance s^2 (J^T J)^-1,
            s^2 = |r|^2 / (m - p) (inf where the data does not determine a parameter).
        correlations: (p, p).
        cost: 0.5 |r|^2 at the fit (plain squares, whatever the robust loss); initial_cost.
        residual_rms: sqrt(|r|^2 / m).
        evaluations: residual evaluations over every start; starts: list of (cost, values).
        mech: the fitted mechanism.
        train_errors, validation_errors: metrics.Errors per recording.
        wall_time: s.
        log: one dict per evaluation (start, evaluation, cost).
        starts_values: the fitted start-state offsets (fit_states), per segment and body
            [dx, dv, phi, dw].
    """

    status: str
    names: list[str]
    values: np.ndarray
    initial: np.ndarray
    standard_errors: np.ndarray
    correlations: np.ndarray
    cost: float
    initial_cost: float
    residual_rms: float
    evaluations: int
    starts: list
    mech: Mechanism
    train_errors: list = field(default_factory=list)
    validation_errors: list = field(default_factory=list)
    wall_time: float = 0.0
    log: list = field(default_factory=list)
    starts_values: np.ndarray = field(default_factory=lambda: np.zeros(0))


def covariance(J: np.ndarray, r: np.ndarray, nuisance: list[tuple[slice, slice]] | None = None, extra: int = 0
               ) -> tuple[np.ndarray, np.ndarray]:
    """(standard errors (p,), correlations (p, p)) of the Gauss-Newton covariance
    s^2 (J^T J)^+ with s^2 = |r|^2 / (m - p - extra) (pseudo-inverse: directions the data does
    not determine get infinite errors).

    Args:
        J: (m, p) Jacobian of the residuals in the parameters.
        r: (m,) residuals.
        nuisance: per block (rows, columns of a second matrix given as ``extra`` columns):
            not used here but by ``marginal_jacobian``; None.
        extra: further fitted values (the segments' start states) that took degrees of freedom.
    """
    m, p = J.shape
    s2 = float(r @ r) / max(m - p - extra, 1)
    scale = np.linalg.norm(J, axis=0)
    scale[scale == 0.0] = 1.0
    U, S, Vt = np.linalg.svd(J / scale, full_matrices=False)
    keep = S > COVARIANCE_RCOND * S[0] if len(S) else S > 0
    inv = (Vt[keep].T / S[keep] ** 2) @ Vt[keep]
    cov = s2 * inv / np.outer(scale, scale)
    err = np.sqrt(np.maximum(np.diag(cov), 0.0))
    null = np.abs(Vt[~keep]).max(axis=0) > 1e-8 if np.any(~keep) else np.zeros(p, bool)
    err[null] = np.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = cov / np.outer(err, err)
    corr[~np.isfinite(corr)] = np.nan
    np.fill_diagonal(corr, 1.0)
    return err, corr


def marginal_jacobian(problem: FitProblem, J) -> np.ndarray:
    """(m, p) the parameter columns of J with each segment's start-state columns projected
    out (the Schur complement: (J_p^T P J_p)^-1 is the parameters' block of (J^T J)^-1, P the
    projection off the state columns; each segment's state columns touch only its rows)."""
    p = len(problem.parameters.names)
    if not problem.fit_states:
        return np.asarray(J)
    dense = J[:, :p].toarray()
    ns = 12 * problem.mech.nb
    for index, rows in enumerate(problem.segment_rows()):
        block = J[rows, p + ns * index:p + ns * (index + 1)].toarray()
        Q, R = np.linalg.qr(block)
        rank = int(np.sum(np.abs(np.diag(R)) > COVARIANCE_RCOND * max(np.abs(np.diag(R)).max(), 1e-300)))
        Q = Q[:, :rank]
        dense[rows] -= Q @ (Q.T @ dense[rows])
    return dense


def simulate_recording(mech: Mechanism, rec: Recording, clearance: float, opts=None):
    """(x (T, nb, 3), q (T, nb, 4), failed steps) of a recording simulated from its first
    frames (metrics: ballistic start)."""
    free = metrics.free_flight_frames(mech, rec.x, rec.q, clearance)
    x0, v0, q0, w0 = metrics.ballistic_start(rec.time, rec.x, rec.q, mech.gravity, min(free, metrics.BALLISTIC_FRAMES))
    z, _ = state_at_t0(mech, np.concatenate([x0, q0], axis=1), np.concatenate([v0, w0], axis=1), opts)
    traj = simulate(mech, rec.frames - 1, z, None, opts or mech.default_options, external=())
    failed = int(sum(status != "success" for status in traj.status))
    return traj.x, traj.q, failed


def recording_errors(mech: Mechanism, recordings: list[Recording], width: float, clearance: float, opts=None):
    """metrics.Errors of each recording simulated from its first frames."""
    out = []
    for rec in recordings:
        x, q, failed = simulate_recording(mech, rec, clearance, opts)
        out.append(metrics.errors(mech, x, q, rec.x, rec.q, width, failed))
    return out


def solve(problem: FitProblem, options: FitOptions, progress=None) -> tuple[str, np.ndarray, list, int, list]:
    """Least squares from each start; returns (status, best values, starts' (cost, values),
    evaluations, log). Ctrl-C stops and keeps the best iterate seen."""
    from scipy.optimize import least_squares

    P = problem.parameters
    lower, upper = problem.bounds()
    first = problem.initial()
    starts = [first.copy()]
    rng = np.random.default_rng(options.seed)
    for _ in range(options.starts - 1):
        span = np.where(np.isfinite(P.upper - P.lower), P.upper - P.lower, np.maximum(np.abs(P.initial), 1.0))
        draw = first.copy()
        draw[:len(P.initial)] = np.clip(P.initial + options.spread * span * rng.uniform(-1.0, 1.0, len(P.initial)),
                                        P.lower, P.upper)
        starts.append(draw)
    best = {"cost": np.inf, "x": first.copy()}
    log: list[dict] = []
    results = []
    cache: dict[bytes, tuple] = {}

    def evaluate(theta, jacobian):
        key = theta.tobytes()
        hit = cache.get(key)
        if hit is not None and (hit[1] is not None or not jacobian):
            return hit
        out = problem.evaluate(theta, jacobian)
        cache.clear()
        cache[key] = out
        cost = 0.5 * float(out[0] @ out[0])
        if cost < best["cost"]:
            best.update(cost=cost, x=theta.copy())
        record = {"start": s, "evaluation": len(log) + 1, "cost": cost, "failed_steps": out[2],
                  "best_cost": best["cost"]}
        log.append(record)
        if progress is not None:
            progress(record)
        return out

    status = "converged"
    s = 0
    try:
        for s, x0 in enumerate(starts):
            sol = least_squares(
                lambda t: evaluate(t, False)[0], x0, jac=lambda t: evaluate(t, True)[1],
                bounds=(lower, upper), x_scale="jac", method="trf",
                tr_solver="lsmr" if problem.fit_states else "exact",
                loss="huber" if options.huber else "linear", f_scale=options.huber or 1.0,
                max_nfev=options.max_evaluations, ftol=options.tolerance, xtol=options.tolerance, gtol=options.tolerance,
            )
            results.append((0.5 * float(sol.fun @ sol.fun), sol.x[:len(P.initial)].copy()))
            if sol.status == 0:
                status = "max_evaluations"
    except KeyboardInterrupt:
        status = "interrupted"
    return status, best["x"], results, len(log), log


def fit(task: FitTask, progress=None) -> FitResult:
    """Fit a task's parameters to its training recordings; errors on train and validation."""
    started = time.monotonic()
    problem = FitProblem(task.mech, task.parameters, task.train, loss=task.loss, window=task.window,
                         rotation_weight=task.rotation_weight, opts=task.mech.default_options, kappa=task.kappa,
                         fit_states=task.fit_states, workers=task.options.workers)
    try:
        r0, _, _ = problem.evaluate(problem.initial(), jacobian=False)
        status, x, starts, evaluations, log = solve(problem, task.options, progress)
        r, J, _ = problem.evaluate(x, jacobian=True)
    finally:
        problem.close()
    p = len(task.parameters.names)
    err, corr = covariance(marginal_jacobian(problem, J), r, extra=problem.state_size)
    mech = problem.mechanism(x)
    result = FitResult(status=status, names=list(task.parameters.names), values=x[:p], initial=task.parameters.initial.copy(),
                       standard_errors=err, correlations=corr, cost=0.5 * float(r @ r), initial_cost=0.5 * float(r0 @ r0),
                       residual_rms=float(np.sqrt(r @ r / max(len(r), 1))), evaluations=evaluations, starts=starts,
                       mech=mech, log=log, starts_values=x[p:])
    result.train_errors = recording_errors(mech, task.train, task.width, task.clearance)
    result.validation_errors = recording_errors(mech, task.validation, task.width, task.clearance)
    result.wall_time = time.monotonic() - started
    return result
