"""Recorded motion for a fit: our storage files and motion-capture tables (NPZ, CSV, HDF5)
with named columns, mapped to the scene's bodies by name (docs/fit.md, "Data").

Every problem is a DataError naming the file, the row (1-based frame of the file's table or
of the trajectory) and the cause; the task reader reports it at the data field's line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dojo_cli.fit.problem import Recording
from dojo_cli.io.motion_tables import TableError, read_csv_table, read_hdf5_motion, read_npz_table
from dojo_cli.math.quaternion import conjugate, multiply

QUATERNION_ORDERS = ("wxyz", "xyzw")
# A recorded quaternion is unit length to this (float32 storage and rounding in tables
# leave ~1e-6; an order mismatch or a column of another quantity is far off).
UNIT_TOLERANCE = 1e-3
# Largest rotation between consecutive frames a recording may show, rad. Half a turn per
# frame (at 148 Hz, 465 rad/s) is beyond any tossed object: columns of another quantity,
# frames out of order. (A permuted or conjugated quaternion order keeps both the norms and
# the angles between frames: those are caught only where they make a norm non-unit.)
MAX_FRAME_ROTATION = 0.5 * np.pi
# Equal frame periods to this relative tolerance.
PERIOD_TOLERANCE = 1e-6


class DataError(TableError):
    """A data file that cannot be used: ``file``, ``row`` (1-based, or None) and the cause."""


@dataclass
class BodyColumns:
    """Which columns hold one body: position (3 names) and orientation (4 names, in ``order``)."""

    position: list[str]
    orientation: list[str]
    order: str = "wxyz"


def read_recordings(path: Path, label: str, bodies: dict[str, BodyColumns], body_order: list[str],
                    timestep: float, time_column: str | None = None) -> list[Recording]:
    """The trajectories of one data file, bodies in the scene's order ``body_order``.

    Args:
        path: the file (.npz, .csv, .h5/.hdf5: a storage file or a table of datasets).
        label: the file as the task names it (for messages).
        bodies: columns per body name (tables only; a storage file has its own names).
        body_order: the scene's bodies the recordings cover, in scene order.
        timestep: the scene's timestep; the frame period must equal it.
        time_column: the name of the time column (s), or None: the file's ``dt`` or the
            timestep.

    Raises:
        DataError: missing columns, unknown bodies, NaN rows, non-unit or order-mismatched
            quaternions, a frame period that is not the scene's.
    """
    suffix = path.suffix.lower()
    ranges, dt = None, None
    if suffix == ".npz":
        cols, ranges, dt = read_npz_table(path)
    elif suffix == ".csv":
        cols = read_csv_table(path)
    elif suffix in (".h5", ".hdf5"):
        cols, stored = read_hdf5_motion(path, body_order)
        if cols is None:
            t, x, q = stored
            return [_checked(label, 0, t, x, q, timestep, "wxyz")]
    else:
        raise DataError(label, None, f"unknown data format {suffix!r} (expected .npz, .csv, .h5)")
    n = len(next(iter(cols.values()))) if cols else 0
    needed = [time_column] if time_column else []
    for b in body_order:
        needed += bodies[b].position + bodies[b].orientation
    missing = [c for c in needed if c not in cols]
    if missing:
        raise DataError(label, None, f"no column {missing[0]!r} (columns: {', '.join(cols)})")
    table = np.stack([cols[c] for c in needed], axis=1) if needed else np.zeros((n, 0))
    bad = np.nonzero(~np.all(np.isfinite(table), axis=1))[0]
    if len(bad):
        r = int(bad[0])
        col = needed[int(np.nonzero(~np.isfinite(table[r]))[0][0])]
        raise DataError(label, r + 1, f"column {col!r} is not finite ({table[r, needed.index(col)]})")
    if ranges is None:
        ranges = [np.arange(n)]
    out = []
    for k, rows in enumerate(ranges):
        x = np.stack([np.stack([cols[c][rows] for c in bodies[b].position], axis=-1) for b in body_order], axis=1)
        q = np.stack([np.stack([cols[c][rows] for c in bodies[b].orientation], axis=-1) for b in body_order], axis=1)
        order = bodies[body_order[0]].order
        if order == "xyzw":
            q = q[..., [3, 0, 1, 2]]
        if time_column:
            t = cols[time_column][rows]
        else:
            t = np.arange(len(rows)) * (dt if dt is not None else timestep)
        out.append(_checked(label, k, t, x, q, timestep, order, first_row=int(rows[0]) if len(rows) else 0))
    return out


def _checked(label: str, k: int, t, x, q, timestep: float, order: str, first_row: int = 0) -> Recording:
    """A recording with its quaternions checked and made sign-continuous."""
    if len(t) < 3:
        raise DataError(label, first_row + 1, f"trajectory {k} has {len(t)} frames; a fit needs 3 at least")
    period = np.diff(t)
    off = np.nonzero(np.abs(period - timestep) > PERIOD_TOLERANCE * timestep)[0]
    if len(off):
        r = int(off[0]) + 1
        raise DataError(label, first_row + r + 1, f"frame period {period[r - 1]:.6g} s, the scene's timestep is "
                                                  f"{timestep:.6g} s (set: {{timestep: ...}} to match the data)")
    norms = np.linalg.norm(q, axis=-1)
    bad = np.argwhere(np.abs(norms - 1.0) > UNIT_TOLERANCE)
    if len(bad):
        r, b = (int(v) for v in bad[0])
        raise DataError(label, first_row + r + 1, f"orientation of body {b} has norm {norms[r, b]:.4g}, not 1: "
                                                  f"not a unit quaternion in the order {order} (quaternion_order)")
    q = q / norms[..., None]
    q = q.copy()
    for i in range(1, len(q)):  # q and -q are the same rotation: keep the recording continuous
        flip = np.sum(q[i] * q[i - 1], axis=-1) < 0.0
        q[i, flip] *= -1.0
    step = multiply(conjugate(q[:-1]), q[1:])
    angle = 2.0 * np.arccos(np.clip(np.abs(step[..., 0]), 0.0, 1.0))
    jump = np.argwhere(angle > MAX_FRAME_ROTATION)
    if len(jump):
        r, b = (int(v) for v in jump[0])
        raise DataError(label, first_row + r + 2, f"orientation of body {b} turns {np.degrees(angle[r, b]):.0f} degrees "
                                                  f"in one frame: not a continuous recording (orientation columns, frame order)")
    return Recording(name=f"{label}#{k}", time=np.asarray(t, float) - float(t[0]), x=np.asarray(x, float), q=q)
