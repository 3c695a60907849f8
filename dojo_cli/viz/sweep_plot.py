"""A sweep's metric against one of its axes (``dojo sweep summarize --plot METRIC --vs AXIS``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dojo_cli.errors import InputError

# Columns of a manifest that are not axes (first and last columns, dojo_cli.sweep.manifest).
_NOT_AXES = ("run_id", "file", "status", "failed_steps", "wall_time", "error")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def plot_metric(rows: list[dict], columns: list[str], metric: str, axis: str, path: Path, title: str = "",
                axes: list[str] | None = None) -> int:
    """Draw ``metric`` against ``axis`` as a PNG, one line per combination of the other axes'
    values (runs without a number for either are left out). Returns the number of lines.

    Args:
        axes: the sweep's other axes (the manifest's columns.json); None: guessed, as the
            columns other than ``metric`` and ``axis`` whose values repeat across runs.

    Raises:
        InputError: no run has numbers for both columns.
        StorageError: the PNG cannot be written.
    """
    from dojo_cli.viz.figures import new_figure, save_png  # here: matplotlib only when plotting

    if axes is None:
        axes = [c for c in columns if c not in _NOT_AXES and c not in (metric, axis)
                and len({json.dumps(r.get(c), default=str) for r in rows}) > 1 and _is_axis(rows, c)]
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for row in rows:
        x, y = _number(row.get(axis)), _number(row.get(metric))
        if x is None or y is None or math.isnan(x) or math.isnan(y):
            continue
        key = tuple((name, json.dumps(row.get(name), default=str)) for name in axes)
        groups.setdefault(key, []).append((x, y))
    if not groups:
        raise InputError(f"--plot {metric} --vs {axis}: no run has numbers for both")
    fig = new_figure(7, 4.5)
    ax = fig.subplots()
    for key, points in sorted(groups.items()):
        points.sort()
        label = ", ".join(f"{name} = {value}" for name, value in key) or None
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xlabel(axis)
    ax.set_ylabel(metric)
    ax.set_title(f"{title}: {metric} against {axis}" if title else f"{metric} against {axis}", fontsize=10)
    if any(key for key in groups):
        ax.legend(loc="best", fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    save_png(fig, path)
    return len(groups)


def _is_axis(rows: list[dict], column: str) -> bool:
    """A column whose values repeat across runs (an axis of a grid), not a per-run measurement."""
    values = [json.dumps(r.get(column), default=str) for r in rows]
    return len(set(values)) < len(values)
