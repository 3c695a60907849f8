"""Off-screen matplotlib figures and their PNG files: the one way every picture is made and written.

``dojo draw``, ``dojo plot``, ``dojo energy --plot`` and ``dojo sweep summarize --plot``
draw on a ``Figure`` with matplotlib's Agg canvas directly (no pyplot: no display, no
global backend switch, nothing to close) and write it with ``save_png``: a PNG at the
path as given, whatever its suffix (the options promise a PNG), or a StorageError.
"""

from __future__ import annotations

import os

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dojo_cli.errors import StorageError

# Pixels per inch of the written PNGs: a W x H pixel request is a W/DPI x H/DPI inch figure.
DPI = 100


def new_figure(width: float, height: float, **kwargs) -> Figure:
    """A figure of ``width`` x ``height`` inches (DPI pixels each) on an Agg canvas.

    Args:
        kwargs: more Figure arguments (``layout="constrained"``, ...).
    """
    fig = Figure(figsize=(width, height), dpi=DPI, **kwargs)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path: str | os.PathLike) -> None:
    """Write the figure as a PNG of exactly its pixel size at ``path`` (no suffix added).

    Raises:
        StorageError: the file cannot be written.
    """
    try:
        fig.savefig(path, dpi=DPI, format="png")
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None
