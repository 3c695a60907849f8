"""The run loop and the run driver: a scene's steps into a writer, in blocks (the one loop
of the library, for every integrator).

``run_scene`` is the one driver, used by ``dojo simulate`` (into the HDF5 StorageWriter,
simulation.run_file), ``dojo.simulate`` (into the in-memory TrajectoryRecorder,
simulation.trajectory), sweeps and optimised runs: it makes the scene's integrator
(``integrator_for``: a strategy of simulation.integrators) from the scene's initial state
or a stored start, puts the knot velocities in front of the writer (simulation.knots:
the one place they are derived), and runs ``run``.

``run`` is the one loop: it hands the writer the initial state, then asks the integrator
for blocks of steps (``Integrator.advance``) and hands each on, reports progress and calls
``on_start`` with the first state and ``on_block`` per block (a live viewer's hooks), stops cleanly on Ctrl-C (the writer has
every completed block) or, if asked, at the first failed step. Blocks are sized to take
about BLOCK_SECONDS (step_blocks), so a slow mechanism still reports progress and reacts
to Ctrl-C promptly; an integrator that must see each state steps one at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SolverError
from dojo_cli.model.controller import Controller, ExternalForce
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.state import unpack_maximal
from dojo_cli.physics.coordinates import minimal_velocities
from dojo_cli.simulation.initial import initial_state
# the storage attribute `integrator` of each run, the block the integrators hand on
from dojo_cli.simulation.integrators import (  # noqa: F401 (re-exported: every run imports them from here)
    RK4_INTEGRATOR, SINGULAR, VARIATIONAL4_INTEGRATOR, VARIATIONAL_INTEGRATOR, Rk4, StepBlock, Variational, Variational4,
)
from dojo_cli.simulation.knots import KnotRows
from dojo_cli.simulation.step import singular_message
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverStatus
from dojo_cli.solver.verbose import iteration_printer

if TYPE_CHECKING:  # (state_files is read only by runs that start from a stored one)
    from dojo_cli.io.state_files import StoredStart

# Aim for blocks of about this many seconds of stepping (progress and Ctrl-C latency).
BLOCK_SECONDS = 0.05
# First block, and the largest (memory of a block's arrays).
FIRST_BLOCK = 16
MAX_BLOCK = 4096


class Integrator(Protocol):
    """A run's integrator (the strategy the loop drives; simulation.integrators says what
    each member means and holds the two there are)."""

    name: str
    exact_knots: bool
    initial: tuple[np.ndarray, np.ndarray]
    fast: bool

    def advance(self, k: int, n: int) -> tuple[StepBlock | None, str | None]: ...

    def ahead(self, k: int) -> tuple[np.ndarray, ...] | None: ...


class RunWriter(Protocol):
    """Where the loop's run goes: the initial state, then blocks of steps, in the
    integrator's velocities (midpoint ones, or the knot ones of an ``exact_knots``
    integrator). A writer may also have ``set_final_midpoint(v, omega)``: the midpoint
    velocities (nb, 3) of one step past the last state, which the loop hands at the end of
    a run so that the last state's knot velocities are exact (simulation.knots.KnotRows,
    which ``run_scene`` puts in front of a storage file or a TrajectoryRecorder), and then
    ``set_final_knot(v, omega, minimal_v)``: those knot velocities themselves, when the
    integrator computed them (after a step solved as substeps, simulation.substeps)."""

    def write_initial(self, time: float, x, q, v, omega, minimal_q) -> None: ...

    def write_block(self, mech: Mechanism, block: StepBlock) -> None: ...


@dataclass
class RunSummary:
    """How a run went.

    Attributes:
        steps: steps completed; failed_steps: of which the solver failed; substepped_steps:
            of which a failed full step was solved again as substeps (converged).
        iteration_counts: histogram of solver iterations per step (index = iterations).
        wall: seconds.
    """

    steps: int = 0
    failed_steps: int = 0
    substepped_steps: int = 0  # steps that failed and were solved again as substeps (simulation.substeps)
    first_substepped: tuple[int, int] | None = None  # (step, substep count) of the first
    iteration_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    wall: float = 0.0
    first_singular: tuple[int, int] | None = None  # (step, Newton-matrix node) of the first singular matrix

    def add(self, block: StepBlock) -> None:
        if self.first_singular is None and block.singular_node is not None:
            hits = np.flatnonzero(block.status_code == SINGULAR)
            if hits.size:
                self.first_singular = (block.k0 + int(hits[0]), int(block.singular_node[hits[0]]))
        self.steps += block.n
        self.failed_steps += int(np.count_nonzero(block.status_code))
        if block.substeps is not None:
            hits = np.flatnonzero(block.substeps > 1)
            self.substepped_steps += int(hits.size)
            if hits.size and self.first_substepped is None:
                self.first_substepped = (block.k0 + int(hits[0]), int(block.substeps[hits[0]]))
        counts = np.bincount(block.iterations, minlength=len(self.iteration_counts))
        counts[: len(self.iteration_counts)] += self.iteration_counts
        self.iteration_counts = counts

    @property
    def median_iterations(self) -> int:
        if not self.steps:
            return 0
        return int(np.searchsorted(np.cumsum(self.iteration_counts), (self.steps + 1) // 2))


def minimal_state(mech: Mechanism, z: np.ndarray, before: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Minimal coordinates and velocities (T, nf) of states (T, 13 nb), one core call each.

    Angle coordinates (a joint's only rotation) are unwrapped through turns as the steps
    measure them (``_core.unwrapped_coordinates``, docs/storage.md): from ``before`` =
    (the state before z[0], its minimal coordinates), or as a run's first state. The
    velocities are the backward differences of midpoint states (physics.coordinates).
    """
    z = np.ascontiguousarray(z, dtype=float).reshape(-1, 13 * mech.nb)
    if before is None:
        q = _core.unwrapped_coordinates(mech.core, z)
    else:
        q = _core.unwrapped_coordinates(mech.core, z, np.ascontiguousarray(before[0], dtype=float),
                                        np.ascontiguousarray(before[1], dtype=float))
    v = minimal_velocities(mech, z)
    return np.asarray(q).reshape(len(z), mech.nf), np.asarray(v).reshape(len(z), mech.nf)


def step_blocks(steps: int, adaptive: bool) -> Iterator[tuple[int, int]]:
    """The blocks (k0, n) of a run of ``steps`` steps, in order: one step each, or (adaptive)
    sized to take about BLOCK_SECONDS each, from FIRST_BLOCK up to MAX_BLOCK steps.

    Each block is timed from its yield to the next request, so the time the caller spends
    stepping, writing and reporting it sizes the next. The caller completes every block
    handed out, or stops (raises) inside it.
    """
    block = FIRST_BLOCK if adaptive else 1
    k = 0
    while k < steps:
        n = min(block, steps - k)
        tick = time.perf_counter()
        yield k, n
        k += n
        if adaptive:
            elapsed = max(time.perf_counter() - tick, 1e-6)
            block = int(min(MAX_BLOCK, max(1, n * BLOCK_SECONDS / elapsed)))


def run(
    mech: Mechanism,
    steps: int,
    writer: RunWriter,
    integrator: Integrator,
    *,
    start_step: int = 0,
    abort_on_failure: bool = False,
    progress: Callable[[int], None] | None = None,
    on_block: Callable[[StepBlock], None] | None = None,
    on_start: Callable[[float, np.ndarray], None] | None = None,
) -> RunSummary:
    """Run ``steps`` steps of ``integrator`` into ``writer`` (the one loop).

    Args:
        mech: the mechanism.
        steps: number of steps.
        writer: receives the initial state, then blocks of steps (RunWriter).
        integrator: the run's integrator, made for it (simulation.integrators), from the
            state it starts at.
        start_step: the number of the initial state's step: the run's steps are
            start_step, start_step + 1, ... at t = step h (the controller's step, the
            external forces' time, the stored time axis). A run continued from knot K of
            another (``dojo simulate --from``) starts at that knot's step.
        abort_on_failure: stop after the first failed step (written) and raise SolverError.
        progress: called with the number of steps completed after each block.
        on_block: called with each block once it is written (a live viewer's frames).
        on_start: called with the first state's time and state (13 nb,) once it is written
            (a live viewer's first frame: blocks hold only the states they reach).

    Returns:
        The run's summary. KeyboardInterrupt propagates after the completed steps
        were handed to the writer (a block is written whole or not at all).

    Raises:
        SolverError: a failed step with ``abort_on_failure``, or an integrator that cannot
            go on (the rk4 state no longer finite); the steps before it are written.
    """
    h = mech.timestep
    summary = RunSummary()
    started = time.perf_counter()
    z0, mq0 = integrator.initial
    x, v, q, w = unpack_maximal(z0, mech.nb)
    writer.write_initial(start_step * h, x, q, v, w, mq0)
    if hasattr(integrator, "rows"):  # a block's arrays written straight into the writer's (TrajectoryRecorder.rows)
        integrator.rows = getattr(writer, "rows", None)
    if on_start is not None:
        on_start(start_step * h, z0)
    for k_run, n in step_blocks(steps, integrator.fast):
        block, stop = integrator.advance(start_step + k_run, n)
        done = 0 if block is None else block.n
        if done:
            writer.write_block(mech, block)
            summary.add(block)
            if on_block is not None:
                on_block(block)
        if stop is not None:
            raise SolverError(stop)
        if progress is not None:
            progress(k_run + done)
        failed = np.flatnonzero(block.status_code) if done else ()
        if abort_on_failure and len(failed):
            raise SolverError(_failure(mech, block, int(failed[0])))
    final = getattr(writer, "set_final_midpoint", None)
    if final is not None:
        ahead = integrator.ahead(start_step + steps)
        if ahead is not None and len(ahead) == 3:  # the last state's knot velocities themselves
            writer.set_final_knot(*ahead)
        elif ahead is not None:
            final(*ahead)
    summary.wall = time.perf_counter() - started
    return summary


def _failure(mech: Mechanism, block: StepBlock, i: int) -> str:
    """What went wrong at step i of a block (abort_on_failure's message)."""
    k = block.k0 + i
    status = STATUS_FROM_CODE[int(block.status_code[i])]
    why = status.message
    if status is SolverStatus.SINGULAR_MATRIX and block.singular_node is not None:
        why = f"could not factorise the Newton matrix ({singular_message(mech, int(block.singular_node[i]))})"
    return f"step {k} (t = {k * mech.timestep:.6g} s): the solver {why} (residual {block.residual[i]:.3e})"


def integrator_for(
    mech: Mechanism,
    *,
    z0: np.ndarray | None = None,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    external: list[ExternalForce] | tuple = (),
    gradients: tuple[str, ...] = (),
    log=None,
    start: StoredStart | None = None,
    abort_on_failure: bool = False,
) -> Integrator:
    """The scene's integrator (``mech.integrator``: "variational", "variational4" or "rk4") made for a run
    from ``z0`` (variational only), ``start`` (a stored run's knot: the variational
    integrator takes its midpoint state, warm start and unwrapped angles, so the steps are
    the first run's to the solver's tolerance; rk4 takes the knot's velocities) or the
    scene's initial state (simulation.initial.initial_state; rk4: minimal.init_state)."""
    if mech.integrator == "rk4":
        if start is None:
            return Rk4(mech, controller=controller)
        return Rk4(mech, controller=controller, knot=start.knot, angles=start.angles)
    if mech.integrator == "variational4":  # z0, a stored knot: states with their velocities at t0
        if start is None:
            return Variational4(mech, controller=controller, opts=opts, knot=z0)
        return Variational4(mech, controller=controller, opts=opts, knot=start.knot, angles=start.angles)
    kwargs = {}
    if start is not None:
        kwargs = dict(warm_start=start.warm_start, angles=start.angles, start_record=start.start_record)
        z0 = start.z
    elif z0 is None:
        z0 = initial_state(mech)
    return Variational(mech, z0, controller=controller, opts=opts, external=external, gradients=gradients, log=log,
                       abort_on_failure=abort_on_failure, **kwargs)


def run_scene(
    mech: Mechanism,
    steps: int,
    writer,
    *,
    z0: np.ndarray | None = None,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    external: list[ExternalForce] | tuple | None = None,
    gradients: tuple[str, ...] = (),
    abort_on_failure: bool = False,
    log=None,
    progress: Callable[[int], None] | None = None,
    start: StoredStart | None = None,
    on_block: Callable[[StepBlock], None] | None = None,
    on_start: Callable[[float, np.ndarray], None] | None = None,
) -> RunSummary:
    """``steps`` steps of the scene's integrator into ``writer`` (the one run driver).

    ``writer`` takes states with their velocities at the knots (a StorageWriter of a knot
    file, a TrajectoryRecorder): the loop's states go through simulation.knots.KnotRows.

    Args:
        mech: the mechanism (a scene's: its integrator, initial state, controller, forces).
        steps: number of steps.
        writer: a knot writer (``write_initial(..., v_mid=, omega_mid=)``, ``write_block(mech,
            block, knot=)``, ``revise_last_state``).
        z0: (13 nb,) initial state in Dojo's layout (default: the scene's); not with ``start``.
        controller: input law (default: the scene's; a Controller() for zero inputs).
        opts: solver options (default: Dojo's); external: forces (default: the scene's).
        gradients: "state" and/or "input": each step's A and/or B (variational only).
        abort_on_failure: stop after the first failed step and raise SolverError.
        log: receives one dict per solver iteration (--verbose); None with ``opts.verbose``:
            Dojo's iteration table on stderr (solver.verbose).
        progress: called with the number of steps completed after each block.
        start: a stored run's knot to go on from (io.state_files.StoredStart, ``--from``).
        on_block: called with each block once written; on_start: with the first state
            (simulation.run.run).
    """
    controller = mech.controller if controller is None else controller
    external = tuple(mech.external if external is None else external)
    if log is None and opts is not None and opts.verbose and mech.integrator == "variational":
        log = iteration_printer()
    integrator = integrator_for(mech, z0=z0, controller=controller, opts=opts, external=external,
                                gradients=tuple(gradients), log=log, start=start, abort_on_failure=abort_on_failure)
    return run(mech, steps, KnotRows(mech, writer, exact=integrator.exact_knots), integrator,
               start_step=0 if start is None else start.step, abort_on_failure=abort_on_failure, progress=progress,
               on_block=on_block, on_start=on_start)


__all__ = ["Integrator", "RunSummary", "RunWriter", "StepBlock", "integrator_for", "minimal_state", "run", "run_scene"]
