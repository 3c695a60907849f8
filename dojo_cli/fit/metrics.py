"""Whole recordings simulated from their first frames, and the errors users of recorded-motion
data sets report (docs/fit.md, "Metrics").

The initial state is estimated from the first frames by a ballistic fit (free flight before
the first contact): x(t) = x0 + v0 t + g t^2 / 2 by least squares with the scene's gravity,
and q(t) = q0 exp(r0 + w0 t) (constant body-frame angular velocity: torque-free motion of a
body whose inertia is isotropic, and a first-order estimate otherwise). Those are the
velocities at t = 0, which ``dojo.initial_state`` turns into the integrator's state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.math.quaternion import conjugate, multiply, quaternion_from_rotation_vector
from dojo_cli.model.mechanism import Mechanism

# Frames of free flight the ballistic fit uses at most (148 Hz: 34 ms), and at least.
BALLISTIC_FRAMES = 5
MIN_BALLISTIC_FRAMES = 2


def rotation_vector_from_quaternion(q: np.ndarray) -> np.ndarray:
    """(..., 3) rotation vectors (angle times unit axis) of unit quaternions (..., 4) [w, x, y, z]."""
    q = np.asarray(q, dtype=float)
    q = q * np.where(q[..., :1] < 0.0, -1.0, 1.0)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    scale = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)
    return q[..., 1:] * scale


def rotation_angle(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """(...,) geodesic angle between orientations, rad."""
    d = np.abs(np.sum(np.asarray(q1) * np.asarray(q2), axis=-1))
    return 2.0 * np.arccos(np.clip(d, 0.0, 1.0))


def ballistic_start(time: np.ndarray, x: np.ndarray, q: np.ndarray, gravity: np.ndarray, frames: int):
    """Pose and velocities at time[0] from a ballistic fit of the first ``frames`` frames.

    Args:
        time: (T,) s; x: (T, nb, 3); q: (T, nb, 4); gravity: (3,) world.
        frames: how many leading frames are in free flight.

    Returns:
        x0 (nb, 3), v0 (nb, 3) world, q0 (nb, 4), w0 (nb, 3) body frame.
    """
    n = max(MIN_BALLISTIC_FRAMES, min(frames, len(time)))
    t = time[:n] - time[0]
    basis = np.stack([np.ones(n), t], axis=1)
    target = x[:n] - 0.5 * gravity[None, None, :] * (t ** 2)[:, None, None]
    coef = np.linalg.lstsq(basis, target.reshape(n, -1), rcond=None)[0].reshape(2, *x.shape[1:])
    rel = rotation_vector_from_quaternion(multiply(conjugate(q[:1]), q[:n]))
    rcoef = np.linalg.lstsq(basis, rel.reshape(n, -1), rcond=None)[0].reshape(2, *x.shape[1:])
    q0 = multiply(q[0], quaternion_from_rotation_vector(rcoef[0]))
    return coef[0], coef[1], q0, rcoef[1]


def free_flight_frames(mech: Mechanism, x: np.ndarray, q: np.ndarray, clearance: float) -> int:
    """How many leading frames have every contact point farther than ``clearance`` from its
    half-space (the frames a ballistic fit may use)."""
    from dojo_cli.math.quaternion import rotate

    heights = np.full(len(x), np.inf)
    for c in mech.contacts:
        if c.kind != "halfspace":
            continue
        p = x[:, c.body] + rotate(q[:, c.body], np.broadcast_to(np.asarray(c.offset, float), (len(x), 3)))
        n, a = np.asarray(c.params["normal"], float), np.asarray(c.params["point"], float)
        heights = np.minimum(heights, (p - a) @ n - c.radius)
    inside = np.nonzero(heights <= clearance)[0]
    return int(inside[0]) if len(inside) else len(x)


@dataclass
class Errors:
    """A simulated recording against the recorded one.

    Attributes:
        position: mean over frames of |x_sim - x_rec| / width, percent (all bodies).
        rotation: mean over frames of the geodesic angle, degrees.
        final_position, final_rotation: the same at the last frame.
        penetration: mean over frames of the deepest contact point's depth below its
            half-space in the simulation, scene length units.
        failed_steps: steps that did not converge.
    """

    position: float
    rotation: float
    final_position: float
    final_rotation: float
    penetration: float
    failed_steps: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def penetration_depths(mech: Mechanism, x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(T,) depth of the deepest contact point under its half-space (0 when none is)."""
    from dojo_cli.math.quaternion import rotate

    depth = np.zeros(len(x))
    for c in mech.contacts:
        if c.kind != "halfspace":
            continue
        p = x[:, c.body] + rotate(q[:, c.body], np.broadcast_to(np.asarray(c.offset, float), (len(x), 3)))
        n, a = np.asarray(c.params["normal"], float), np.asarray(c.params["point"], float)
        depth = np.maximum(depth, -((p - a) @ n - c.radius))
    return depth


def errors(mech: Mechanism, x_sim, q_sim, x_rec, q_rec, width: float, failed: int = 0) -> Errors:
    """Errors of a simulated recording (arrays (T, nb, 3) and (T, nb, 4))."""
    pos = np.linalg.norm(x_sim - x_rec, axis=-1) / width * 100.0
    rot = np.degrees(rotation_angle(q_sim, q_rec))
    return Errors(position=float(pos.mean()), rotation=float(rot.mean()), final_position=float(pos[-1].mean()),
                  final_rotation=float(rot[-1].mean()), penetration=float(penetration_depths(mech, x_sim, q_sim).mean()),
                  failed_steps=int(failed))
