"""Per-step solver status and record."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from dojo_cli import _core


class SolverStatus(str, Enum):
    """Outcome of one step's solve."""

    SUCCESS = "success"
    MAX_ITERATIONS = "max_iterations"
    LINE_SEARCH_FAILURE = "line_search_failure"
    NON_FINITE = "non_finite"
    SINGULAR_MATRIX = "singular_matrix"
    DIVERGED = "diverged"

    @property
    def message(self) -> str:
        """A sentence for users."""
        return {
            SolverStatus.SUCCESS: "converged",
            SolverStatus.MAX_ITERATIONS: "did not converge within max_iter iterations",
            SolverStatus.LINE_SEARCH_FAILURE: "the line search found no step that reduces the residual",
            SolverStatus.NON_FINITE: "was given a state, input or force that is not finite (NaN or infinite)",
            SolverStatus.SINGULAR_MATRIX: "could not factorise the Newton matrix (a zero or non-finite pivot)",
            SolverStatus.DIVERGED: "converged to a state beyond the scene's bounds (the step diverged: too stiff for the timestep?)",
        }[self]


@dataclass(frozen=True)
class SolverResult:
    """The solution of one step and how it was reached.

    Attributes:
        w: (n,) final unknowns.
        status: the outcome.
        iterations: Newton iterations taken.
        residual: infinity norm of the final residual (the larger of rvio and bvio).
        complementarity: final complementarity violation bvio (0 without inequalities).
    """

    w: np.ndarray
    status: SolverStatus
    iterations: int
    residual: float
    complementarity: float = 0.0

    @property
    def success(self) -> bool:
        return self.status is SolverStatus.SUCCESS


# The core's status codes (core/maximal/data.h SolverStatus), in order: read from the core.
STATUS_FROM_CODE = tuple(SolverStatus(name) for name in _core.SOLVER_STATUSES)
