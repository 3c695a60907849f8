"""Making and writing the one shape of a run (``model.trajectory.Trajectory``): the writer
that fills one from a run, ``TrajectoryRecorder``, and its way into a storage file,
``write_trajectory`` (the storage reader reads one back: ``io.storage.read_storage(path).trajectory``).

The recorder takes what a storage file's writer takes (simulation.run.run_scene puts
simulation.knots.KnotRows in front of either): states with their velocities at the knots
and the midpoint ones beside them, the last state's knot velocities revised once its
successor is known. So ``dojo.simulate`` and ``dojo simulate`` hold the same numbers,
derived in one place.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.trajectory import DATASETS, EXTRA_FIELDS, Trajectory, has_start_record
from dojo_cli.physics.energy import knot_momenta
from dojo_cli.simulation.integrators import STATUS_TEXT, StepBlock


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
        if self.blocks and all(b.substeps is not None for b in self.blocks):
            contacts["substeps"] = cat("substeps", ()).astype(np.int64)
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
            solver_start=(cat("start", (0,)) if has_start_record(mech) and self.blocks
                          and all(b.start is not None for b in self.blocks) else None),
            **contacts,
        )


def write_trajectory(writer, traj: Trajectory) -> None:
    """Write a Trajectory's states and steps into a knot file's StorageWriter (opened by the
    caller, io.storage): the datasets ``dojo simulate`` writes for the same run."""
    writer.write_initial(traj.time[0], traj.x[0], traj.q[0], traj.v[0], traj.omega[0], traj.minimal_q[0],
                         traj.minimal_v[0], v_mid=traj.v_mid[0], omega_mid=traj.omega_mid[0])
    extra = {DATASETS[name]: getattr(traj, name) for name in EXTRA_FIELDS if getattr(traj, name) is not None}
    writer.write_steps(traj.time[1:], traj.x[1:], traj.q[1:], traj.v[1:], traj.omega[1:], traj.minimal_q[1:],
                       traj.minimal_v[1:], traj.inputs, iterations=traj.iterations, residual=traj.residual,
                       status=traj.status, extra=extra, v_mid=traj.v_mid[1:], omega_mid=traj.omega_mid[1:])


__all__ = ["TrajectoryRecorder", "write_trajectory"]
