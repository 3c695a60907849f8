"""A run in memory: ``Trajectory`` (the datasets of a storage file as arrays), the writer
that fills one from a run, ``TrajectoryRecorder``, and its way to and from a storage file
(``trajectory_from_stored``, ``write_trajectory``).

The recorder takes what a storage file's writer takes (simulation.run.run_scene puts
simulation.knots.KnotRows in front of either): states with their velocities at the knots
and the midpoint ones beside them, the last state's knot velocities revised once its
successor is known. So ``dojo.simulate`` and ``dojo simulate`` hold the same numbers,
derived in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.energy import knot_momenta
from dojo_cli.simulation.integrators import STATUS_TEXT, StepBlock

if TYPE_CHECKING:  # (h5py is imported by runs that read or write a file only)
    from dojo_cli.io.storage import StoredRun

# A Trajectory's per-step extras and their storage datasets (io.storage.format).
_EXTRA_DATASETS = {
    "impulses": "impulses",
    "complementarity": "solver/complementarity",
    "contact_distance": "contacts/distance",
    "contact_normal_impulse": "contacts/normal_impulse",
    "contact_friction_impulse": "contacts/friction_impulse",
    "contact_slip": "contacts/slip",
}


@dataclass
class Trajectory:
    """A simulated run as arrays (the datasets of a storage file).

    Attributes:
        time: (T+1,); x: (T+1, nb, 3); q: (T+1, nb, 4);
        v, omega: (T+1, nb, 3) velocities at t_k (world linear, body angular), from the
            discrete Legendre transform at q_k (docs/physics.md);
        v_mid, omega_mid: (T+1, nb, 3) the integrator's midpoint velocities into state k
            (Dojo's layout, what ``state(k)`` holds and a step starts from);
        px, pq: (T+1, nb, 3) each body's momenta at t_k, world frame (Dojo's Storage.px,
            pq: m v and R(q) J omega, physics.energy.knot_momenta); None when read from a
            file written without them;
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
    px: np.ndarray | None = None
    pq: np.ndarray | None = None

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
        # kept as handed on, not copied (a closed-loop run hands one step a block): the
        # block's arrays and the knot rows are this run's own, and only the knot rows of the
        # last state are revised (revise_last_state)
        x, v, q, w = block.state_parts(mech.nb)
        kv, kw, kmv = knot
        self.knots.append([block.time, x, q, kv, kw, block.minimal_q, kmv, v, w])
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
        # Dojo's px, pq: from the final knot rows, in one core call (physics.energy.knot_momenta)
        px, pq = knot_momenta(mech, q.reshape(T + 1, nb, 4), v.reshape(T + 1, nb, 3), omega.reshape(T + 1, nb, 3))
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
            px=px,
            pq=pq,
            **contacts,
        )


def trajectory_from_stored(run: StoredRun) -> Trajectory:
    """A storage file's run (io.storage.read_storage) as a Trajectory: the same arrays a
    ``dojo.simulate`` of the same run holds. A file written before knot velocities (its v,
    omega are the midpoint ones) gives them as v_mid, omega_mid and v, omega alike."""
    v_mid, omega_mid = run.midpoint_velocities
    extras = {name: run.extras[path] for name, path in _EXTRA_DATASETS.items() if path in run.extras}
    return Trajectory(
        time=run.time, x=run.x, q=run.q, v=run.v, omega=run.omega, minimal_q=run.minimal_q, minimal_v=run.minimal_v,
        v_mid=v_mid, omega_mid=omega_mid, inputs=run.inputs, iterations=run.solver["iterations"].astype(int),
        residual=run.solver["residual"], status=[str(s) for s in run.solver["status"]], px=run.px, pq=run.pq,
        **extras,
    )


def write_trajectory(writer, traj: Trajectory) -> None:
    """Write a Trajectory's states and steps into a knot file's StorageWriter (opened by the
    caller, io.storage): the datasets ``dojo simulate`` writes for the same run."""
    writer.write_initial(traj.time[0], traj.x[0], traj.q[0], traj.v[0], traj.omega[0], traj.minimal_q[0],
                         traj.minimal_v[0], v_mid=traj.v_mid[0], omega_mid=traj.omega_mid[0])
    extra = {path: getattr(traj, name) for name, path in _EXTRA_DATASETS.items() if getattr(traj, name) is not None}
    writer.write_steps(traj.time[1:], traj.x[1:], traj.q[1:], traj.v[1:], traj.omega[1:], traj.minimal_q[1:],
                       traj.minimal_v[1:], traj.inputs, iterations=traj.iterations, residual=traj.residual,
                       status=traj.status, extra=extra, v_mid=traj.v_mid[1:], omega_mid=traj.omega_mid[1:])


__all__ = ["Trajectory", "TrajectoryRecorder", "trajectory_from_stored", "write_trajectory"]
