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


# The first capacity (state rows) of a recorder not told its run's length; it doubles as needed.
FIRST_ROWS = 64


class TrajectoryRecorder:
    """A knot writer in memory (the StorageWriter's ``write_initial``, ``write_block``,
    ``revise_last_state``) that builds a Trajectory (``dojo.simulate``).

    The run's largest arrays (states, knot velocities, minimal coordinates and rates, joint
    impulses) are the recorder's own from the start, one row a state (a step for the
    impulses), sized for ``steps`` when told and grown by doubling otherwise: ``rows`` hands
    the integrator the rows of the next block, which the core's rollout writes in place, so
    that a block's arrays are neither made nor copied (issue 28: on a loaded machine a fresh
    page of memory costs about 2 us, and a block's arrays were made twice, by the core and
    again by the joins at the end). The Trajectory's x, q, v_mid and omega_mid are views of
    the one state array, (T+1, nb, 13) in Dojo's layout.

    Args:
        steps: the run's length, if known (the arrays' size; more steps still fit).
    """

    def __init__(self, steps: int | None = None):
        self._capacity = (int(steps) if steps is not None else FIRST_ROWS - 1) + 1  # state rows
        self._written = 0  # state rows written (the initial state's included)
        self._arrays: dict[str, np.ndarray] = {}  # rows per state: time, states, knot_v, knot_omega, minimal_q, knot_minimal_v
        # each step's record, one row a step (capacity - 1 rows), grown as the states are: the
        # joint impulses (the rollout writes them in place: rows()), then the rest (inputs,
        # solver record, contacts, start record), made with the first block that has them and
        # copied in block by block, never joined at the end (a run of 10^4 steps with 6,092
        # contacts records 7 GB of contact and start rows; joining held them twice)
        self._steps: dict[str, np.ndarray] = {}
        self._missing: set[str] = set()  # per-step records some block did not have (None): not recorded

    @property
    def steps_written(self) -> int:
        """The steps recorded so far."""
        return max(self._written - 1, 0)

    def _grow(self, rows: int) -> None:
        """Room for ``rows`` state rows (doubling)."""
        if rows <= self._capacity:
            return
        self._capacity = max(rows, 2 * self._capacity)
        for name, a in self._arrays.items():
            grown = np.empty((self._capacity,) + a.shape[1:])
            grown[: self._written] = a[: self._written]
            self._arrays[name] = grown
        for name, a in self._steps.items():
            grown = np.empty((self._capacity - 1,) + a.shape[1:], dtype=a.dtype)
            grown[: self._written - 1] = a[: self._written - 1]
            self._steps[name] = grown

    def _impulse_rows(self, nl: int) -> np.ndarray:
        if "impulses" not in self._steps:
            self._steps["impulses"] = np.empty((self._capacity - 1, nl))
        return self._steps["impulses"]

    def rows(self, nl: int, n: int) -> dict[str, np.ndarray]:
        """The recorder's rows of the next ``n`` steps, for the core's rollout to write in place
        (its ``out``): states, minimal_q (n rows), impulses (n, nl), and the knot rows of the
        state before them and of theirs (n + 1 rows: the first revises the last state's)."""
        self._grow(self._written + n)
        i, a = self._written - 1, self._arrays
        return {"states": a["states"][i + 1 : i + 1 + n], "minimal_q": a["minimal_q"][i + 1 : i + 1 + n],
                "knot_v": a["knot_v"][i : i + 1 + n], "knot_omega": a["knot_omega"][i : i + 1 + n],
                "knot_minimal_v": a["knot_minimal_v"][i : i + 1 + n], "impulses": self._impulse_rows(nl)[i : i + n]}

    def write_initial(self, time, x, q, v, omega, minimal_q, minimal_v, *, v_mid, omega_mid) -> None:
        x, q, v_mid, omega_mid, v, omega = (np.asarray(a, dtype=float) for a in (x, q, v_mid, omega_mid, v, omega))
        nb, nf = len(x), np.size(minimal_q)
        cap = self._capacity
        self._arrays = {"time": np.empty(cap), "states": np.empty((cap, 13 * nb)), "knot_v": np.empty((cap, nb, 3)),
                        "knot_omega": np.empty((cap, nb, 3)), "minimal_q": np.empty((cap, nf)),
                        "knot_minimal_v": np.empty((cap, nf))}
        a = self._arrays
        a["time"][0] = time
        a["states"][0] = np.concatenate([x, v_mid, q, omega_mid], axis=-1).reshape(-1)
        a["knot_v"][0], a["knot_omega"][0] = v, omega
        a["minimal_q"][0], a["knot_minimal_v"][0] = minimal_q, minimal_v
        self._written = 1

    def write_block(self, mech: Mechanism, block: StepBlock, knot) -> None:
        kv, kw, kmv = knot
        n, i = block.n, self._written
        self._grow(i + n)
        a = self._arrays
        # each into its rows (a no-op for the arrays the rollout wrote there: rows())
        for name, values in (("time", block.time), ("states", block.z), ("minimal_q", block.minimal_q),
                             ("knot_v", kv), ("knot_omega", kw), ("knot_minimal_v", kmv)):
            _put(a[name][i : i + n], values)
        _put(self._impulse_rows(mech.nl)[i - 1 : i - 1 + n], block.impulses)
        for name in _STEP_RECORDS:
            self._put_step_record(name, getattr(block, name), i - 1, n)
        self._written = i + n

    def _put_step_record(self, name: str, values, row: int, n: int) -> None:
        """A block's per-step record ``name`` (n rows, or None: the integrator keeps none)
        into its rows from ``row``."""
        if name in self._missing:
            return
        if values is None:
            self._missing.add(name)
            self._steps.pop(name, None)
            return
        values = np.asarray(values)
        a = self._steps.get(name)
        if a is None:
            if row:  # an earlier block had none
                self._missing.add(name)
                return
            a = self._steps[name] = np.empty((self._capacity - 1,) + values.shape[1:], dtype=values.dtype)
        a[row : row + n] = values.reshape((n,) + a.shape[1:])

    def revise_last_state(self, v, omega, minimal_v) -> None:
        last, a = self._written - 1, self._arrays
        a["knot_v"][last], a["knot_omega"][last], a["knot_minimal_v"][last] = v, omega, minimal_v

    def trajectory(self, mech: Mechanism) -> Trajectory:
        """The recorded run."""
        nb, nf = mech.nb, mech.nf
        T = self._written - 1
        a = {name: values[: T + 1] for name, values in self._arrays.items()}
        states = a["states"].reshape(T + 1, nb, 13)
        x, v_mid, q, omega_mid = states[:, :, 0:3], states[:, :, 3:6], states[:, :, 6:10], states[:, :, 10:13]
        v, omega = a["knot_v"], a["knot_omega"]
        recorded = lambda name, shape: (  # noqa: E731
            self._steps[name][:T] if name in self._steps else np.zeros((0,) + shape)
        )
        # Dojo's px, pq: from the final knot rows, in one core call (physics.energy.knot_momenta)
        px, pq = knot_momenta(mech, q, v, omega)
        contacts = {}
        if mech.nc:
            contacts = {
                "contact_distance": recorded("contact_distance", (mech.nc,)),
                "contact_normal_impulse": recorded("contact_normal_impulse", (mech.nc,)),
                "contact_friction_impulse": recorded("contact_friction_impulse", (mech.nc, 2)),
                "contact_slip": recorded("contact_slip", (mech.nc, 2)),
            }
        if T and "substeps" in self._steps:
            contacts["substeps"] = recorded("substeps", ()).astype(np.int64)
        return Trajectory(
            time=a["time"],
            x=x,
            q=q,
            v=v,
            omega=omega,
            v_mid=v_mid,
            omega_mid=omega_mid,
            minimal_q=a["minimal_q"].reshape(T + 1, nf),
            minimal_v=a["knot_minimal_v"].reshape(T + 1, nf),
            inputs=recorded("inputs", (mech.nu,)).reshape(T, mech.nu),
            iterations=recorded("iterations", ()).astype(int),
            residual=recorded("residual", ()),
            status=STATUS_TEXT[recorded("status_code", ()).astype(int)].tolist() if T else [],
            impulses=recorded("impulses", (mech.nl,)).reshape(T, mech.nl),
            complementarity=recorded("complementarity", ()),
            px=px,
            pq=pq,
            solver_start=recorded("start", (0,)) if has_start_record(mech) and T and "start" in self._steps else None,
            **contacts,
        )


# A StepBlock's per-step records besides the states and joint impulses (TrajectoryRecorder).
_STEP_RECORDS = ("inputs", "iterations", "residual", "status_code", "complementarity", "contact_distance",
                 "contact_normal_impulse", "contact_friction_impulse", "contact_slip", "start", "substeps")


def _put(rows: np.ndarray, values) -> None:
    """values into rows, unless they are those rows already (written in place: rows())."""
    values = np.asarray(values, dtype=float)
    if values.size and values.__array_interface__["data"][0] == rows.__array_interface__["data"][0] \
            and values.strides == rows.strides:
        return
    rows[...] = values.reshape(rows.shape)


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
