"""A fit's recorded against simulated trajectories (``dojo fit --plot``, docs/fit.md)."""

from __future__ import annotations

import os

import numpy as np

from dojo_cli.viz.figures import new_figure, save_png


def plot_fit(series: list[dict], path: str | os.PathLike, title: str) -> None:
    """Write a PNG: per recording (a column), the recorded (solid) and simulated (dashed)
    positions x, y, z over time, and below the position error (percent of the width) and
    the rotation error (degrees) over time.

    Args:
        series: per recording a dict with ``name``, ``time`` (T,), ``x_rec``, ``x_sim``
            (T, 3) of the first body, ``position_error`` (T,) percent and
            ``rotation_error`` (T,) degrees.
        path: PNG to write (overwritten).
        title: the figure's title.

    Raises:
        StorageError: the PNG cannot be written.
    """
    n = max(len(series), 1)
    fig = new_figure(3.6 * n, 7)
    axes = np.asarray(fig.subplots(2, n, sharex="col", squeeze=False))
    colours = ("tab:blue", "tab:orange", "tab:green")
    for k, s in enumerate(series):
        top, bottom = axes[0, k], axes[1, k]
        for i, axis in enumerate("xyz"):
            top.plot(s["time"], s["x_rec"][:, i], color=colours[i], label=f"{axis} recorded")
            top.plot(s["time"], s["x_sim"][:, i], color=colours[i], linestyle="--", label=f"{axis} simulated")
        top.set_title(s["name"], fontsize=9)
        bottom.plot(s["time"], s["position_error"], color="tab:red", label="position error, % of width")
        twin = bottom.twinx()
        twin.plot(s["time"], s["rotation_error"], color="tab:purple", label="rotation error, deg")
        bottom.set_xlabel("time (s)")
        if k == 0:
            top.set_ylabel("position")
            top.legend(loc="best", fontsize=7, ncol=2)
            bottom.set_ylabel("position error (%)", color="tab:red")
        if k == n - 1:
            twin.set_ylabel("rotation error (deg)", color="tab:purple")
    fig.suptitle(title)
    fig.tight_layout()
    save_png(fig, path)
