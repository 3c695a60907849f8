"""A run in memory: ``Trajectory``, the one shape of a run (issue 25, item 4).

A run is states over time of a mechanism plus what each step recorded, whoever made it:
``dojo.simulate`` builds one (simulation.trajectory.TrajectoryRecorder), the storage
reader reads one from a file (io.storage.read_storage gives it as ``StoredRun.trajectory``,
beside the file's own metadata), ``simulation.trajectory.write_trajectory`` writes one
into a file. Its arrays are the datasets of a storage file (``DATASETS`` names which), so
the same run holds the same numbers in memory and on disk.

It lives beside ``model.state`` (the maximal state layout its ``state(k)`` follows),
below ``io`` and ``simulation``, so that both can make one; it is plain arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Each field of a Trajectory and the storage dataset it is (io.storage.format has the
# layout). The extras after ``status`` are None in a run that has none (no contacts, or a
# file written without them).
DATASETS: dict[str, str] = {
    "time": "time",
    "x": "x",
    "q": "q",
    "v": "v",
    "omega": "omega",
    "minimal_q": "minimal/q",
    "minimal_v": "minimal/v",
    "v_mid": "v_mid",
    "omega_mid": "omega_mid",
    "px": "px",
    "pq": "pq",
    "inputs": "inputs",
    "iterations": "solver/iterations",
    "residual": "solver/residual",
    "status": "solver/status",
    "impulses": "impulses",
    "complementarity": "solver/complementarity",
    "contact_distance": "contacts/distance",
    "contact_normal_impulse": "contacts/normal_impulse",
    "contact_friction_impulse": "contacts/friction_impulse",
    "contact_slip": "contacts/slip",
    "substeps": "solver/substeps",
    "solver_start": "solver/start",
}
# The per-step extras: optional fields, datasets a file may lack.
EXTRA_FIELDS = ("impulses", "complementarity", "contact_distance", "contact_normal_impulse",
                "contact_friction_impulse", "contact_slip", "substeps", "solver_start")


def has_start_record(mech) -> bool:
    """Whether a run of the mechanism keeps the interior point's start record
    (``solver/start``): a model with contacts, joint limits or joint friction, the steps an
    interior point solves."""
    return mech.nc > 0 or mech.core.nlim > 0 or mech.core.nfr > 0


@dataclass
class Trajectory:
    """A simulated run as arrays (the datasets of a storage file).

    Attributes:
        time: (T+1,); x: (T+1, nb, 3); q: (T+1, nb, 4) (in a run of ``dojo.simulate``, x,
            q, v_mid and omega_mid are views of one array of its states, (T+1, nb, 13));
        v, omega: (T+1, nb, 3) velocities at t_k (world linear, body angular), from the
            discrete Legendre transform at q_k (docs/physics.md); in a run read from a file
            written before knot velocities (``StoredRun.velocities == "midpoint"``) they are
            the midpoint ones, the same arrays as v_mid, omega_mid;
        v_mid, omega_mid: (T+1, nb, 3) the integrator's midpoint velocities into state k
            (Dojo's layout, what ``state(k)`` holds and a step starts from);
        px, pq: (T+1, nb, 3) each body's momenta at t_k, world frame (Dojo's Storage.px,
            pq: m v and R(q) J omega, physics.energy.knot_momenta); None when read from a
            file written without them;
        minimal_q, minimal_v: (T+1, nf) (minimal_v at t_k); inputs: (T, nu);
        iterations (T,) int, residual (T,), status (T,) str: the solver record;
        impulses: (T, nl) joint impulses of each step.
        complementarity: (T,) final complementarity violation of each step.
        contact_distance, contact_normal_impulse: (T, nc); contact_friction_impulse,
            contact_slip: (T, nc, 2); None without contacts.
        substeps: (T,) int, how many substeps each step was solved as (1: a plain step;
            docs/physics.md "Substeps"); None for the integrators without the retry and
            files written before it.
        solver_start: (T, 2 + nk) the interior point's start record after each step (core
            maximal/step.h: [warm_valid, impulse_scale, the warm start's cones]), what a run
            continued from state k + 1 starts its first step from; None without contacts
            and joint limits, or from a file written without it.
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
    solver_start: np.ndarray | None = None
    px: np.ndarray | None = None
    pq: np.ndarray | None = None
    substeps: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return len(self.inputs)

    def state(self, k: int) -> np.ndarray:
        """Maximal state (13 nb,) at entry k, in Dojo's layout [x, v15, q, w15] per body
        (model.state; the state a step starts from: a restart reproduces the run's next step)."""
        return np.concatenate([self.x[k], self.v_mid[k], self.q[k], self.omega_mid[k]], axis=1).reshape(-1)

    def datasets(self) -> dict[str, np.ndarray | list[str]]:
        """Every array present, by its storage dataset's name (``DATASETS``)."""
        return {path: getattr(self, name) for name, path in DATASETS.items() if getattr(self, name) is not None}


__all__ = ["DATASETS", "EXTRA_FIELDS", "Trajectory"]
