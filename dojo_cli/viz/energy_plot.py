"""A run's energy and momentum against time (``dojo energy --plot``)."""

from __future__ import annotations

import os

from dojo_cli.physics.energy import Mechanics
from dojo_cli.viz.figures import new_figure, save_png


def plot_energy(me: Mechanics, path: str | os.PathLike, name: str) -> None:
    """Write a PNG of three stacked plots sharing the time axis: kinetic, potential and
    mechanical energy; the linear momentum's components; the angular momentum's.

    Args:
        me: the run's energy and momentum (physics.energy.mechanics or knot_mechanics).
        path: PNG to write (overwritten).
        name: the scene's name, for the title.

    Raises:
        StorageError: the PNG cannot be written.
    """
    fig = new_figure(8, 9)
    axes = fig.subplots(3, 1, sharex=True)
    axes[0].plot(me.time, me.kinetic, label="kinetic")
    axes[0].plot(me.time, me.potential, label="potential")
    axes[0].plot(me.time, me.mechanical, label="mechanical", color="k")
    axes[0].set_ylabel("energy [J]")
    axes[0].legend(loc="best")
    axes[0].set_title(f"{name}: energy and momentum")
    for i, c in enumerate("xyz"):
        axes[1].plot(me.time, me.linear_momentum[:, i], label=f"p_{c}")
        axes[2].plot(me.time, me.angular_momentum[:, i], label=f"L_{c}")
    axes[1].set_ylabel("linear momentum [kg m/s]")
    axes[2].set_ylabel("angular momentum [kg m^2/s]")
    axes[1].legend(loc="best")
    axes[2].legend(loc="best")
    axes[2].set_xlabel("time [s]")
    fig.tight_layout()
    save_png(fig, path)
