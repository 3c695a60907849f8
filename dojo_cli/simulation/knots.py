"""The velocities at the knots of a run, computed as it goes, for a writer that stores them.

The integrator's state holds midpoint velocities (Dojo's layout); a storage file holds the
velocities at the knot times t_k as well (docs/physics.md, "Velocities at t0 and at the
knots"; docs/storage.md, "Which velocities"). Knot k needs the midpoint velocities on both
sides of it, so the last state of each block of the run loop can only be extrapolated (the
next step's impulses taken as the last one's), and is revised with the next block, or
exactly at the end of a normal run, when the loop takes one more step (not stored). The
physics is the core's (physics.energy.knot_velocities; the rk4 integrator's states carry
their knot velocities already, simulation.integrators.knot_identity): the writer only stores.
This is the one place a run's knot velocities (v, omega, minimal/v at t_k) are handed to its
writer, a storage file or ``dojo.simulate``'s Trajectory alike (simulation.run.run_scene):
derived here, or taken from the block when the integrator's one core call for it computed
them with the steps (``StepBlock.knot``: the same core functions on the same states).
"""

from __future__ import annotations

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.energy import knot_velocities
from dojo_cli.simulation.integrators import knot_identity


class KnotRows:
    """A RunWriter (simulation.run) in front of a knot file's writer (io.storage's
    StorageWriter with ``velocities="knot"``, simulation.trajectory's TrajectoryRecorder, or
    anything with their ``write_initial``, ``write_block`` and ``revise_last_state``): each
    state goes on with its velocities at the knot and the midpoint ones beside them.

    Args:
        mech: the mechanism of the run.
        writer: where the states go.
        exact: the states handed in carry their velocities at t_k already (the rk4
            integrator's), not midpoint velocities.
    """

    def __init__(self, mech: Mechanism, writer, exact: bool = False):
        self.mech = mech
        self.writer = writer
        self._knots = knot_identity if exact else knot_velocities
        self._last: tuple[np.ndarray, ...] | None = None  # x, q, v_mid, omega_mid of the last state handed on

    @property
    def rows(self):
        """The writer's own rows for a block's arrays (``TrajectoryRecorder.rows``), or None.
        The core's rollout writes a block's knot rows there as KnotRows would hand them on:
        the state before it (revised) and its states (the last extrapolated)."""
        return None if self._knots is not knot_velocities else getattr(self.writer, "rows", None)

    def write_initial(self, time: float, x, q, v, omega, minimal_q) -> None:
        """State 0 (``v``, ``omega``: midpoint velocities), its knot velocities extrapolated
        (no step yet: no impulse)."""
        x, q, v, omega = (np.asarray(a, dtype=float) for a in (x, q, v, omega))
        kv, kw, kmv = self._knots(self.mech, x[None], q[None], v[None], omega[None], True)
        self.writer.write_initial(time, x, q, kv[0], kw[0], minimal_q, kmv[0], v_mid=v, omega_mid=omega)
        self._last = (x, q, v, omega)

    def write_block(self, mech: Mechanism, block) -> None:
        """A block of steps (simulation.run.StepBlock) with its extras (joint impulses,
        complementarity, contacts, per-step gradients); the state before it revised."""
        x, v, q, w = block.state_parts(mech.nb)
        if block.knot is not None:  # computed by the core with the steps (the same functions)
            kv, kw, kmv = block.knot
        else:
            x0, q0, v0, w0 = self._last
            # the state before the block (extrapolated when handed on) and the block's own
            kv, kw, kmv = self._knots(mech, np.concatenate([x0[None], x]), np.concatenate([q0[None], q]),
                                      np.concatenate([v0[None], v]), np.concatenate([w0[None], w]), True)
        self.writer.revise_last_state(kv[0], kw[0], kmv[0])
        self.writer.write_block(mech, block, knot=(kv[1:], kw[1:], kmv[1:]))
        self._last = (x[-1].copy(), q[-1].copy(), v[-1].copy(), w[-1].copy())

    def set_final_midpoint(self, v, omega) -> None:
        """The midpoint velocities (nb, 3) of one step past the last state (not stored): that
        state's knot velocities exactly, instead of extrapolated."""
        x, q, v0, w0 = self._last
        kv, kw, kmv = self._knots(self.mech, x[None], q[None], np.stack([v0, np.asarray(v, dtype=float)]),
                                  np.stack([w0, np.asarray(omega, dtype=float)]), False)
        self.writer.revise_last_state(kv[0], kw[0], kmv[0])

    def set_final_knot(self, v, omega, minimal_v) -> None:
        """The last state's knot velocities (v, omega (nb, 3), minimal_v (nf,)) as the
        integrator computed them (after a step solved as substeps: the knot between a step
        of h/n and the one past the end, simulation.substeps.knot_between)."""
        self.writer.revise_last_state(np.asarray(v, dtype=float), np.asarray(omega, dtype=float),
                                      np.asarray(minimal_v, dtype=float))
