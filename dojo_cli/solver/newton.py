"""Damped Newton's method on a square nonlinear system with a fixed pattern.

Used for steps without inequality constraints (joints and bodies only), where
the step is a smooth root-finding problem; Dojo solves the same system inside
its interior-point loop with the complementarity rows absent.

Each iteration: factorise the Newton matrix at w, take the full Newton step,
then backtrack by ``ls_scale`` (at most ``max_ls`` times) until the residual's
infinity norm decreases (Dojo's acceptance rule, notes 5.3 f). The problem may
project a candidate back into its domain (angular velocities below 2/h).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from dojo_cli.solver.linear import Factorization
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverResult, SolverStatus


class NewtonProblem(Protocol):
    """What the Newton solver needs from a problem."""

    def residual(self, w: np.ndarray) -> np.ndarray:
        """(n,) residual at w."""

    def factorize(self, w: np.ndarray) -> Factorization:
        """Factorisation of d residual / d w at w."""

    def project(self, w: np.ndarray) -> np.ndarray:
        """The candidate moved into the problem's domain (may return w)."""


def newton(problem: NewtonProblem, w0: np.ndarray, opts: SolverOptions, log=None) -> SolverResult:
    """Solve residual(w) = 0 from w0.

    Args:
        problem: residual, Newton matrix and projection.
        w0: (n,) starting point (warm start).
        opts: tolerances and line-search settings.
        log: optional callable receiving one dict per iteration (for --verbose).

    Returns:
        The final iterate, status, iteration count, residual norm and the last
        factorisation (of the Newton matrix at a point within one step of w).
    """
    w = problem.project(np.array(w0, dtype=float))
    r = problem.residual(w)
    rnorm = float(np.max(np.abs(r))) if r.size else 0.0
    factorization = None
    for it in range(opts.max_iter):
        if rnorm < opts.rtol:
            return SolverResult(w, SolverStatus.SUCCESS, it, rnorm, factorization)
        factorization = problem.factorize(w)
        delta = factorization.solve(-r)
        alpha = 1.0
        for _ in range(max(opts.max_ls, 1)):
            cand = problem.project(w + alpha * delta)
            rc = problem.residual(cand)
            rc_norm = float(np.max(np.abs(rc)))
            if rc_norm < rnorm:  # False for NaN: a non-finite candidate is never taken
                break
            alpha *= opts.ls_scale
        else:
            if log is not None:
                log({"iteration": it + 1, "residual": rnorm, "alpha": 0.0, "step": float(np.max(np.abs(delta)))})
            # Newton's direction is a descent direction of |r|^2; if no fraction of
            # it reduces the residual we are at the limit of floating point.
            return SolverResult(w, SolverStatus.LINE_SEARCH_FAILURE, it + 1, rnorm, factorization)
        w, r, rnorm = cand, rc, rc_norm
        if log is not None:
            log({"iteration": it + 1, "residual": rnorm, "alpha": alpha, "step": float(np.max(np.abs(delta)))})
    status = SolverStatus.SUCCESS if rnorm < opts.rtol else SolverStatus.MAX_ITERATIONS
    return SolverResult(w, status, opts.max_iter, rnorm, factorization)
