"""In-memory simulation: the run loop (simulation.run) recorded as a Trajectory."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.controller import Controller, ExternalForce
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.run import TrajectoryRecorder, run
from dojo_cli.solver.options import SolverOptions


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


def simulate(
    mech: Mechanism,
    steps: int,
    z0: np.ndarray | None = None,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    external: list[ExternalForce] | None = None,
    abort_on_failure: bool = False,
) -> Trajectory:
    """Simulate ``steps`` steps from z0 (default: the mechanism's initial state) in memory.

    The library's run loop (simulation.run) into a TrajectoryRecorder.
    """
    if z0 is None:
        z0 = initial_state(mech)
    recorder = TrajectoryRecorder()
    run(mech, steps, recorder, z0=z0, controller=controller, opts=opts, external=external or (),
        abort_on_failure=abort_on_failure)
    return recorder.trajectory(mech)
