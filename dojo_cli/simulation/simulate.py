"""Simulation loop: steps a mechanism and records what storage files hold."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from dojo_cli.errors import SolverError
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.state import unpack_maximal
from dojo_cli.physics.coordinates import minimal_coordinates, minimal_velocities
from dojo_cli.simulation.controller import Controller, ExternalForce, external_wrench
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverStatus


@dataclass
class StateRecord:
    """One stored state: x (nb,3), q (nb,4), v (nb,3), omega (nb,3), minimal q and v (nf,)."""

    time: float
    z: np.ndarray
    x: np.ndarray
    q: np.ndarray
    v: np.ndarray
    omega: np.ndarray
    minimal_q: np.ndarray
    minimal_v: np.ndarray


@dataclass
class StepRecord:
    """One step: the inputs applied, the solver record and the state reached."""

    k: int
    inputs: np.ndarray
    iterations: int
    residual: float
    status: SolverStatus
    state: StateRecord
    impulses: np.ndarray
    complementarity: float = 0.0
    contacts: ContactRecord | None = None


@dataclass
class ContactRecord:
    """Per-contact quantities of one step at its solution (arrays over contacts).

    Attributes:
        distance: (nc,) signed distance at the step's end configuration (m).
        normal_impulse: (nc,) normal impulse (N s).
        friction_impulse: (nc, 2) friction impulse in the contact's tangent basis (N s).
        slip: (nc, 2) tangential velocity of the contact point relative to the other body (m/s).
    """

    distance: np.ndarray
    normal_impulse: np.ndarray
    friction_impulse: np.ndarray
    slip: np.ndarray


@dataclass
class Trajectory:
    """A simulated run as arrays (the datasets of a storage file).

    Attributes:
        time: (T+1,); x, v, omega: (T+1, nb, 3); q: (T+1, nb, 4);
        minimal_q, minimal_v: (T+1, nf); inputs: (T, nu);
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
        """Maximal state (13 nb,) at entry k."""
        return np.concatenate([self.x[k], self.v[k], self.q[k], self.omega[k]], axis=1).reshape(-1)


def state_record(mech: Mechanism, t: float, z: np.ndarray) -> StateRecord:
    """Everything stored about a state."""
    x, v, q, w = unpack_maximal(z, mech.nb)
    return StateRecord(t, z, x, q, v, w, minimal_coordinates(mech, x, q), minimal_velocities(mech, z))


def iterate(
    mech: Mechanism,
    steps: int,
    z0: np.ndarray,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    external: list[ExternalForce] | None = None,
    abort_on_failure: bool = False,
    log: Callable[[dict], None] | None = None,
) -> Iterator[StepRecord]:
    """Yield one StepRecord per step (the caller may stop early).

    Raises:
        SolverError: a step failed and ``abort_on_failure`` is set (raised after
            the failed step's record has been yielded, so it can be stored).
    """
    opts = opts or SolverOptions()
    controller = controller or Controller()
    external = external or []
    h = mech.timestep
    z = np.asarray(z0, dtype=float)
    lam = None
    for k in range(steps):
        t = k * h
        u = np.asarray(controller(mech, k, z), dtype=float).reshape(-1)
        f_ext = tau_ext = None
        if external:
            f_ext, tau_ext = external_wrench(mech, external, t, z.reshape(mech.nb, 13)[:, 6:10])
        z, result = solve_step(mech, z, u, opts, f_ext, tau_ext, lam0=lam, log=log)
        lam = result.w[6 * mech.nb : 6 * mech.nb + mech.nl]  # joint impulses (warm start)
        contacts = None
        if mech.nc:
            data = mech.core_data
            contacts = ContactRecord(
                data.contact_distance.copy(), data.contact_normal_impulse.copy(),
                data.contact_friction_impulse.copy(), data.contact_slip.copy(),
            )
        yield StepRecord(
            k, u, result.iterations, result.residual, result.status, state_record(mech, t + h, z), lam,
            result.complementarity, contacts,
        )
        if abort_on_failure and not result.success:
            raise SolverError(f"step {k} (t = {t:.6g} s): the solver {result.status.message} (residual {result.residual:.3e})")


def simulate(
    mech: Mechanism,
    steps: int,
    z0: np.ndarray | None = None,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    external: list[ExternalForce] | None = None,
    abort_on_failure: bool = False,
) -> Trajectory:
    """Simulate ``steps`` steps from z0 (default: the mechanism's initial state)."""
    if z0 is None:
        z0 = getattr(mech, "initial", None)
        if z0 is None:
            raise ValueError("no initial state: pass z0 or build the mechanism from a scene")
    first = state_record(mech, 0.0, np.asarray(z0, dtype=float))
    states = [first]
    records: list[StepRecord] = []
    for rec in iterate(mech, steps, z0, controller, opts, external, abort_on_failure):
        records.append(rec)
        states.append(rec.state)
    return Trajectory(
        time=np.array([s.time for s in states]),
        x=np.array([s.x for s in states]),
        q=np.array([s.q for s in states]),
        v=np.array([s.v for s in states]),
        omega=np.array([s.omega for s in states]),
        minimal_q=np.array([s.minimal_q for s in states]).reshape(len(states), mech.nf),
        minimal_v=np.array([s.minimal_v for s in states]).reshape(len(states), mech.nf),
        inputs=np.array([r.inputs for r in records]).reshape(len(records), mech.nf),
        iterations=np.array([r.iterations for r in records], dtype=int),
        residual=np.array([r.residual for r in records]),
        status=[r.status.value for r in records],
        impulses=np.array([r.impulses for r in records]).reshape(len(records), mech.nl),
        complementarity=np.array([r.complementarity for r in records]),
        **_contact_arrays(mech, records),
    )


def _contact_arrays(mech: Mechanism, records: list[StepRecord]) -> dict:
    if not mech.nc:
        return {}
    T, nc = len(records), mech.nc
    return {
        "contact_distance": np.array([r.contacts.distance for r in records]).reshape(T, nc),
        "contact_normal_impulse": np.array([r.contacts.normal_impulse for r in records]).reshape(T, nc),
        "contact_friction_impulse": np.array([r.contacts.friction_impulse for r in records]).reshape(T, nc, 2),
        "contact_slip": np.array([r.contacts.slip for r in records]).reshape(T, nc, 2),
    }
