"""An optimisation's convergence per iteration (``dojo optimize --plot``)."""

from __future__ import annotations

import os

import numpy as np

from dojo_cli.viz.figures import new_figure, save_png


def plot_convergence(log: list[dict], path: str | os.PathLike, name: str) -> None:
    """Write a PNG of three stacked plots sharing the iteration axis (log scales): the cost
    and the augmented objective, the constraint violation, and the projected gradient.

    Args:
        log: the solver's records (dojo_cli.optimize.ilqr.OptimizeResult.log).
        path: PNG to write (overwritten).
        name: the task's name, for the title.

    Raises:
        StorageError: the PNG cannot be written.
    """
    it = np.array([r["iteration"] for r in log], dtype=float)
    column = lambda key: np.array([r[key] for r in log], dtype=float)  # noqa: E731
    fig = new_figure(8, 8)
    axes = fig.subplots(3, 1, sharex=True)
    axes[0].semilogy(it, column("cost"), label="cost J")
    axes[0].semilogy(it, column("objective"), label="augmented objective", linestyle="--")
    axes[0].set_ylabel("cost")
    axes[0].legend(loc="best")
    axes[0].set_title(f"{name}: convergence")
    violation = column("violation")
    axes[1].semilogy(it, np.where(violation > 0, violation, np.nan))
    axes[1].set_ylabel("constraint violation")
    axes[2].semilogy(it, column("gradient"))
    axes[2].set_ylabel("projected gradient")
    axes[2].set_xlabel("iteration")
    fig.tight_layout()
    save_png(fig, path)
