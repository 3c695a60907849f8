"""The box-constrained quadratic program of a backward-pass step (box-DDP).

    minimise 1/2 x' H x + q' x   subject to   lower <= x <= upper

by projected Newton (Tassa, Mansard, Todorov, "Control-limited differential dynamic
programming", ICRA 2014; Bertsekas 1982, projected Newton): the Newton step on the free
inputs (those not held at a bound by a gradient pointing outwards), projected onto the
box, with an Armijo line search. The free set and the Cholesky factor of H on it give
the feedback gains: clamped inputs get no feedback.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Iterations of projected Newton (Tassa's maxIter); the QPs are tiny (nu inputs).
MAX_ITERATIONS = 100
# Converged when the free gradient is this small (Tassa's minGrad, relative to |q|) ...
MIN_GRADIENT = 1e-13
# ... or a step improves the value by less than this, relative (Tassa's minRelImprove).
MIN_RELATIVE_IMPROVEMENT = 1e-14
# Armijo's sufficient-decrease fraction and the line search's step factor (Tassa: 0.1, 0.6).
ARMIJO = 0.1
STEP_FACTOR = 0.6
MIN_STEP = 1e-22


class NotPositiveDefinite(ArithmeticError):
    """H on the free inputs has no Cholesky factor: the backward pass needs more regularisation."""


@dataclass
class BoxQPResult:
    """x: (n,) the minimiser; free: (n,) bool, inputs not held at a bound; H_free: H on the
    free inputs (positive definite), None when no input is free."""

    x: np.ndarray
    free: np.ndarray
    H_free: np.ndarray | None


def _clamped(x, g, lower, upper) -> np.ndarray:
    # held at a bound by a gradient pointing out of the box (an input with lower == upper always)
    return ((x <= lower) & (g >= 0)) | ((x >= upper) & (g <= 0))


def _checked(H: np.ndarray) -> np.ndarray:
    """H itself once it has a Cholesky factor (the test of positive definiteness)."""
    try:
        np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        raise NotPositiveDefinite() from None
    return H


def solve_box_qp(H: np.ndarray, q: np.ndarray, lower: np.ndarray, upper: np.ndarray, x0: np.ndarray | None = None) -> BoxQPResult:
    """Minimise 1/2 x' H x + q' x on lower <= x <= upper (module docstring).

    Args:
        H: (n, n) symmetric; positive definite on the free inputs (else NotPositiveDefinite).
        q: (n,); lower, upper: (n,) bounds (+-inf for none); x0: (n,) warm start.
    """
    n = len(q)
    # inputs with lower == upper are held whatever the gradient; the Newton step of the
    # others, if it stays in the box, is the answer (the common case, one factorisation)
    held = lower >= upper
    x = np.where(held, lower, 0.0)
    free = ~held
    if not free.any():
        return BoxQPResult(x=x, free=free, H_free=None)
    H_free = _checked(H[free][:, free])
    x_free = -np.linalg.solve(H_free, q[free] + H[free][:, held] @ x[held])
    if np.all(x_free >= lower[free]) and np.all(x_free <= upper[free]):
        x[free] = x_free
        return BoxQPResult(x=x, free=free, H_free=H_free)
    # projected Newton from the warm start
    x = np.clip(np.zeros(n) if x0 is None else x0, lower, upper)
    value = lambda v: 0.5 * v @ H @ v + q @ v  # noqa: E731
    f = value(x)
    for _ in range(MAX_ITERATIONS):
        g = q + H @ x
        free = ~_clamped(x, g, lower, upper)
        if not free.any():
            break
        H_free = _checked(H[free][:, free])
        if np.linalg.norm(g[free]) <= MIN_GRADIENT * max(1.0, np.linalg.norm(q)):
            break
        # Newton step on the free inputs, the clamped ones held
        step = np.zeros(n)
        step[free] = -np.linalg.solve(H_free, g[free])
        t = 1.0
        while t >= MIN_STEP:
            x_new = np.clip(x + t * step, lower, upper)
            f_new = value(x_new)
            if f_new - f <= ARMIJO * (g @ (x_new - x)):
                break
            t *= STEP_FACTOR
        else:
            break
        improvement = f - f_new
        x, f = x_new, f_new
        if improvement <= MIN_RELATIVE_IMPROVEMENT * max(1.0, abs(f)):
            break
    g = q + H @ x
    free = ~_clamped(x, g, lower, upper)
    return BoxQPResult(x=x, free=free, H_free=_checked(H[free][:, free]) if free.any() else None)
