"""A run in memory: ``Trajectory`` (the datasets of a storage file as arrays) and the
writer that fills one, ``TrajectoryRecorder``.

The recorder takes what a storage file's writer takes (simulation.run.run_scene puts
simulation.knots.KnotRows in front of either): states with their velocities at the knots
and the midpoint ones beside them, the last state's knot velocities revised once its
successor is known. So ``dojo.simulate`` and ``dojo simulate`` hold the same numbers,
derived in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.integrators import STATUS_TEXT, StepBlock


@dataclass
class Trajectory:
    """A simulated run as arrays (the datasets of a storage file).

    Attributes:
        time: (T+1,); x: (T+1, nb, 3); q: (T+1, nb, 4);
        v, omega: (T+1, nb, 3) velocities at t_k (world linear, body angular), from the
            discrete Legendre transform at q_k (docs/physics.md);
        v_mid, omega_mid: (T+1, nb, 3) the integrator's midpoint velocities into state k
            (Dojo's layout, what ``state(k)`` holds and a step starts from);
        minimal_q, minimal_v: (T+1, nf) (minimal_v at t_k); inputs: (T, nu);
        iterations (T,), residual (T,), status (T,) solver record;
        impulses: (T, nl) joint impulses of each step.
        complementarity: (T,) final complementarity violation of each step.
        contact_distance, contact_normal_impulse: (T, nc); contact_friction_impulse,
            contact_slip: (T, nc, 2); None without contacts.
    """

    time: np.ndarray
    x: np.ndarray
    q: np.ndarray
    v: np.ndarray
    omega: np.ndarray
    minimal_q: np.ndarray
    minimal_v: np.ndarray
    v_mid: np.ndarray
    omega_mid: np.ndarray
    inputs: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    status: list[str] = field(default_factory=list)
    impulses: np.ndarray | None = None
    complementarity: np.ndarray | None = None
    contact_distance: np.ndarray | None = None
    contact_normal_impulse: np.ndarray | None = None
    contact_friction_impulse: np.ndarray | None = None
    contact_slip: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return len(self.inputs)

    def state(self, k: int) -> np.ndarray:
        """Maximal state (13 nb,) at entry k, in Dojo's layout [x, v15, q, w15] per body."""
        return np.concatenate([self.x[k], self.v_mid[k], self.q[k], self.omega_mid[k]], axis=1).reshape(-1)


class TrajectoryRecorder:
    """A knot writer in memory (the StorageWriter's ``write_initial``, ``write_block``,
    ``revise_last_state``) that builds a Trajectory (``dojo.simulate``)."""

    def __init__(self):
        self.knots: list[list[np.ndarray]] = []  # per state row block: [time, x, q, v, omega, mq, mv, v_mid, omega_mid]
        self.blocks: list[StepBlock] = []

    def write_initial(self, time, x, q, v, omega, minimal_q, minimal_v, *, v_mid, omega_mid) -> None:
        self.knots.append([np.array([time], dtype=float)] + [np.array(a, dtype=float)[None] for a in
                                                             (x, q, v, omega, minimal_q, minimal_v, v_mid, omega_mid)])

    def write_block(self, mech: Mechanism, block: StepBlock, knot) -> None:
        x, v, q, w = block.state_parts(mech.nb)
        kv, kw, kmv = knot
        self.knots.append([np.asarray(block.time, dtype=float)] + [np.array(a, dtype=float) for a in
                                                                   (x, q, kv, kw, block.minimal_q, kmv, v, w)])
        self.blocks.append(block)

    def revise_last_state(self, v, omega, minimal_v) -> None:
        last = self.knots[-1]
        last[3][-1], last[4][-1], last[6][-1] = v, omega, minimal_v

    def trajectory(self, mech: Mechanism) -> Trajectory:
        """The recorded run."""
        nb, nf = mech.nb, mech.nf
        time, x, q, v, omega, mq, mv, v_mid, omega_mid = (np.concatenate(parts) for parts in zip(*self.knots))
        cat = lambda name, shape: (  # noqa: E731
            np.concatenate([getattr(b, name) for b in self.blocks]) if self.blocks else np.zeros((0,) + shape)
        )
        T = len(time) - 1
        contacts = {}
        if mech.nc:
            contacts = {
                "contact_distance": cat("contact_distance", (mech.nc,)),
                "contact_normal_impulse": cat("contact_normal_impulse", (mech.nc,)),
                "contact_friction_impulse": cat("contact_friction_impulse", (mech.nc, 2)),
                "contact_slip": cat("contact_slip", (mech.nc, 2)),
            }
        return Trajectory(
            time=time,
            x=x.reshape(T + 1, nb, 3),
            q=q.reshape(T + 1, nb, 4),
            v=v.reshape(T + 1, nb, 3),
            omega=omega.reshape(T + 1, nb, 3),
            v_mid=v_mid.reshape(T + 1, nb, 3),
            omega_mid=omega_mid.reshape(T + 1, nb, 3),
            minimal_q=mq.reshape(T + 1, nf),
            minimal_v=mv.reshape(T + 1, nf),
            inputs=cat("inputs", (mech.nu,)).reshape(T, mech.nu),
            iterations=cat("iterations", ()).astype(int),
            residual=cat("residual", ()),
            status=[str(t) for t in (STATUS_TEXT[cat("status_code", ()).astype(int)] if T else [])],
            impulses=cat("impulses", (mech.nl,)).reshape(T, mech.nl),
            complementarity=cat("complementarity", ()),
            **contacts,
        )


__all__ = ["Trajectory", "TrajectoryRecorder"]
