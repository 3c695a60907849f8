"""The run loop: a scene's steps into a writer, in blocks (the one loop of the library).

``run`` steps a mechanism with its controller and external forces, records every
step (state, minimal coordinates computed by the core for the whole block at once,
inputs, solver record, joint impulses, contacts, optionally each step's gradients)
and hands blocks of steps to a writer: the HDF5 StorageWriter (``dojo simulate``),
the in-memory TrajectoryRecorder (``dojo.simulate``), or anything with the same two
methods (a sweep's writer). It reports progress per block and stops cleanly on
Ctrl-C (the writer has every completed step) or, if asked, at the first failed step.

Open-loop runs (no controller, a constant or a scheduled one, no external forces,
no per-step gradients, no iteration log) are stepped by the core a block at a time
(one call per block, ``_core.rollout``); closed-loop ones (a PD or a Python
controller, external forces) cross into the core once per step, as the controller
must see each state. Blocks are sized to take about BLOCK_SECONDS, so a slow
mechanism still reports progress and reacts to Ctrl-C promptly.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SolverError, from_core
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.state import unpack_maximal
from dojo_cli.physics.coordinates import minimal_velocities
from dojo_cli.physics.energy import knot_velocities
from dojo_cli.simulation.controller import (
    ConstantController, Controller, ExternalForce, ScheduleController, external_wrench,
)
from dojo_cli.simulation.step import core_options, refuse_armature, singular_message, solve_step
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverStatus
from dojo_cli.solver.verbose import iteration_printer

# Aim for blocks of about this many seconds of stepping (progress and Ctrl-C latency).
BLOCK_SECONDS = 0.05
# First block, and the largest (memory of a block's arrays).
FIRST_BLOCK = 16
MAX_BLOCK = 4096
STATUS_TEXT = np.array([s.value for s in STATUS_FROM_CODE])
_SINGULAR = STATUS_FROM_CODE.index(SolverStatus.SINGULAR_MATRIX)

# The storage attribute `integrator` of a run: Dojo's variational integrator (this loop) or
# the Munthe-Kaas RK4 in minimal coordinates (simulation/rk4_run.py).
VARIATIONAL_INTEGRATOR = "dojo-variational-midpoint"
RK4_INTEGRATOR = "munthe-kaas-rk4"


@dataclass
class StepBlock:
    """Consecutive steps k0 .. k0 + n - 1 and the states they reach (arrays over steps).

    Attributes:
        k0: index of the first step.
        time: (n,) time of each reached state (s).
        z: (n, 13 nb) reached maximal states [x, v, q, w] per body.
        minimal_q, minimal_v: (n, nf) minimal coordinates and velocities of those states.
        inputs: (n, nu) inputs applied during each step.
        iterations, residual, status_code, complementarity: (n,) solver record.
        impulses: (n, nl) joint impulses.
        contact_distance, contact_normal_impulse: (n, nc); contact_friction_impulse,
            contact_slip: (n, nc, 2) (empty without contacts).
        gradients: per-step gradient datasets (``gradients/A`` (n, 12 nb, 12 nb), ...), if asked.
    """

    k0: int
    time: np.ndarray
    z: np.ndarray
    minimal_q: np.ndarray
    minimal_v: np.ndarray
    inputs: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    status_code: np.ndarray
    complementarity: np.ndarray
    impulses: np.ndarray
    contact_distance: np.ndarray
    contact_normal_impulse: np.ndarray
    contact_friction_impulse: np.ndarray
    contact_slip: np.ndarray
    gradients: dict[str, np.ndarray] = field(default_factory=dict)
    # (n,) per singular_matrix step the Newton-matrix node with the zero pivot (-1 otherwise)
    singular_node: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.time)

    @property
    def status(self) -> np.ndarray:
        """(n,) status strings (SolverStatus values)."""
        return STATUS_TEXT[self.status_code]

    def state_parts(self, nb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """x (n, nb, 3), v (n, nb, 3), q (n, nb, 4), omega (n, nb, 3) views of z."""
        s = self.z.reshape(self.n, nb, 13)
        return s[:, :, 0:3], s[:, :, 3:6], s[:, :, 6:10], s[:, :, 10:13]


class RunWriter(Protocol):
    """Where a run goes: the initial state, then blocks of steps (states in Dojo's layout,
    midpoint velocities). A writer may also have ``set_final_midpoint(v, omega)``: the
    midpoint velocities (nb, 3) of one step past the last state, which the run loop hands
    at the end of a run so that the last state's knot velocities are exact."""

    def write_initial(self, time: float, x, q, v, omega, minimal_q, minimal_v) -> None: ...

    def write_block(self, mech: Mechanism, block: StepBlock) -> None: ...


@dataclass
class RunSummary:
    """How a run went.

    Attributes:
        steps: steps completed; failed_steps: of which the solver failed.
        iteration_counts: histogram of solver iterations per step (index = iterations).
        wall: seconds.
    """

    steps: int = 0
    failed_steps: int = 0
    iteration_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    wall: float = 0.0
    first_singular: tuple[int, int] | None = None  # (step, Newton-matrix node) of the first singular matrix

    def add(self, block: StepBlock) -> None:
        if self.first_singular is None and block.singular_node is not None:
            hits = np.flatnonzero(block.status_code == _SINGULAR)
            if hits.size:
                self.first_singular = (block.k0 + int(hits[0]), int(block.singular_node[hits[0]]))
        self.steps += block.n
        self.failed_steps += int(np.count_nonzero(block.status_code))
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
    (the state before z[0], its minimal coordinates), or as a run's first state.
    """
    z = np.ascontiguousarray(z, dtype=float).reshape(-1, 13 * mech.nb)
    if before is None:
        q = _core.unwrapped_coordinates(mech.core, z)
    else:
        q = _core.unwrapped_coordinates(mech.core, z, np.ascontiguousarray(before[0], dtype=float),
                                        np.ascontiguousarray(before[1], dtype=float))
    v = minimal_velocities(mech, z)
    return np.asarray(q).reshape(len(z), mech.nf), np.asarray(v).reshape(len(z), mech.nf)


def _open_loop_inputs(mech: Mechanism, controller: Controller | None, k0: int, n: int) -> np.ndarray | None:
    """(n, nu) inputs of steps k0.. for an open-loop controller, None for zero."""
    if controller is None or type(controller) is Controller:
        return None
    if isinstance(controller, ConstantController):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(controller.u, float).reshape(1, -1), (n, mech.nu)))
    rows = [controller(mech, k, None) for k in range(k0, k0 + n)]  # a schedule reads its table only
    return np.ascontiguousarray(np.asarray(rows, dtype=float).reshape(n, mech.nu))


def _is_open_loop(controller: Controller | None) -> bool:
    return controller is None or type(controller) in (Controller, ConstantController, ScheduleController)


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
    *,
    z0: np.ndarray | None = None,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    external: list[ExternalForce] | tuple = (),
    gradients: tuple[str, ...] = (),
    abort_on_failure: bool = False,
    progress: Callable[[int], None] | None = None,
    log: Callable[[dict], None] | None = None,
    start_step: int = 0,
    warm_start: np.ndarray | None = None,
    angles: np.ndarray | None = None,
) -> RunSummary:
    """Run ``steps`` steps from z0 into ``writer``.

    Args:
        mech: the mechanism.
        steps: number of steps.
        writer: receives the initial state, then blocks of steps (RunWriter).
        z0: (13 nb,) initial state (default: the scene's).
        controller: input law (None: zero inputs).
        opts: solver options (default: Dojo's).
        external: external forces (ExternalForce).
        gradients: "state" and/or "input": store each step's A and/or B, taken on the
            step's own solve (gradients/A, gradients/B, gradients/kappa).
        abort_on_failure: stop after the first failed step (written) and raise SolverError.
        progress: called with the number of steps completed after each block.
        log: receives one dict per solver iteration (--verbose); steps one at a time.
            None with ``opts.verbose``: Dojo's iteration table on stderr (solver.verbose).
        start_step: the number of z0's step: the run's steps are start_step,
            start_step + 1, ... at t = step h (the controller's step, the external forces'
            time, the stored time axis). A run continued from knot K of another (``dojo
            simulate --from``) starts at that knot's step, so that its steps are the ones the
            first run would have taken.
        warm_start: (nl,) joint impulses the first solve starts from (default zeros): a
            continued run's of the step that reached z0, as the first run's next solve had.
        angles: (nf,) z0's minimal coordinates with its revolute angles unwrapped through
            turns (a stored run's minimal/q): where the first step measures limits from and
            the stored minimal/q continues from (default: z0's, as a run's first state).

    Returns:
        The run's summary. KeyboardInterrupt propagates after the completed steps
        were handed to the writer (a block is written whole or not at all).
    """
    opts = opts or DOJO_DEFAULTS
    if log is None and opts.verbose:
        log = iteration_printer()
    z = np.array(mech.initial if z0 is None else z0, dtype=float).reshape(-1)
    if z.shape != (13 * mech.nb,):
        raise ValueError(f"initial state must have {13 * mech.nb} entries, got {z.size}")
    h = mech.timestep
    summary = RunSummary()
    started = time.perf_counter()
    mq, mv = minimal_state(mech, z[None])
    refuse_armature(mech)
    data = _core.Data(mech.core)  # this run's scratch; its angle_ref carries the limits' winding
    if angles is not None:
        mq[0] = np.asarray(angles, dtype=float).reshape(mech.nf)
        data.angle_ref[:] = mq[0]
    x, v, q, w = unpack_maximal(z, mech.nb)
    writer.write_initial(start_step * h, x, q, v, w, mq[0], mv[0])
    before = (z, mq[0])  # the state before the next block, its minimal coordinates
    lam = np.zeros(mech.nl) if warm_start is None else np.array(warm_start, dtype=float).reshape(mech.nl)
    fast = _is_open_loop(controller) and not external and not gradients and log is None
    for k_run, n in step_blocks(steps, fast):
        k = start_step + k_run
        if fast:
            inputs = _open_loop_inputs(mech, controller, k, n)
            try:
                out = _core.rollout(mech.core, data, z, n, inputs, lam, core_options(opts), abort_on_failure)
            except (ValueError, TypeError, RuntimeError) as exc:
                raise from_core(exc, "run") from None
            n = out["steps"]
            if inputs is None:
                inputs = np.zeros((n, mech.nu))
            out = {key: value[:n] for key, value in out.items() if key != "steps"}
            result = _block(mech, k, h, out, inputs[:n], before)
        else:
            result = _closed_loop_step(mech, data, k, z, lam, controller, opts, external, gradients, log, before)
        writer.write_block(mech, result)
        summary.add(result)
        z = result.z[-1].copy()
        before = (z, result.minimal_q[-1])
        if progress is not None:
            progress(k_run + result.n)
        failed = np.flatnonzero(result.status_code)
        if abort_on_failure and failed.size:
            kf = result.k0 + int(failed[0])
            status = STATUS_FROM_CODE[int(result.status_code[failed[0]])]
            why = status.message
            if status is SolverStatus.SINGULAR_MATRIX and result.singular_node is not None:
                why = f"could not factorise the Newton matrix ({singular_message(mech, int(result.singular_node[failed[0]]))})"
            raise SolverError(f"step {kf} (t = {kf * h:.6g} s): the solver {why} (residual {result.residual[failed[0]]:.3e})")
    final = getattr(writer, "set_final_midpoint", None)
    if final is not None:
        # one step past the end (not stored): the last state's outgoing midpoint
        # velocities, for its knot velocities (docs/physics.md)
        ahead = _closed_loop_step(mech, data, start_step + steps, z, lam.copy(), controller, opts, external, (), None, before)
        if ahead.status_code[0] == 0:
            _, v_next, _, w_next = ahead.state_parts(mech.nb)
            final(v_next[0], w_next[0])
    summary.wall = time.perf_counter() - started
    return summary


def _block(mech: Mechanism, k0: int, h: float, out: dict, inputs: np.ndarray, before) -> StepBlock:
    n = len(out["states"])
    mq, mv = minimal_state(mech, out["states"], before)
    return StepBlock(
        k0=k0,
        time=(k0 + 1 + np.arange(n)) * h,
        z=out["states"],
        minimal_q=mq,
        minimal_v=mv,
        inputs=np.asarray(inputs, dtype=float).reshape(n, mech.nu),
        iterations=out["iterations"],
        residual=out["residual"],
        status_code=out["status"],
        complementarity=out["complementarity"],
        impulses=out["impulses"],
        contact_distance=out["contact_distance"],
        contact_normal_impulse=out["contact_normal_impulse"],
        contact_friction_impulse=out["contact_friction_impulse"],
        contact_slip=out["contact_slip"],
        singular_node=out.get("singular_node"),
    )


def _closed_loop_step(mech, data, k, z, lam, controller, opts, external, gradients, log, before) -> StepBlock:
    """One step whose inputs or forces depend on the state (or with gradients or a log)."""
    h = mech.timestep
    u = np.zeros(mech.nu) if controller is None else np.asarray(controller(mech, k, z), dtype=float).reshape(-1)
    f_ext = tau_ext = None
    if external:
        f_ext, tau_ext = external_wrench(mech, list(external), k * h, z.reshape(mech.nb, 13)[:, 6:10])
    z_next, result = solve_step(mech, z, u, opts, f_ext, tau_ext, lam0=lam, log=log, data=data)
    lam[:] = result.w[6 * mech.nb : 6 * mech.nb + mech.nl]
    _core.advance_angles(mech.core, data)  # where the next step's limit rows measure from
    out = {
        "states": z_next[None],
        "iterations": np.array([result.iterations]),
        "residual": np.array([result.residual]),
        "status": np.array([STATUS_FROM_CODE.index(result.status)]),
        "complementarity": np.array([result.complementarity]),
        "impulses": lam.copy()[None],
        "contact_distance": data.contact_distance.copy()[None],
        "contact_normal_impulse": data.contact_normal_impulse.copy()[None],
        "contact_friction_impulse": data.contact_friction_impulse.copy()[None],
        "contact_slip": data.contact_slip.copy()[None],
        "singular_node": np.array([data.singular_node]),
    }
    block = _block(mech, k, h, out, u[None], before)
    if gradients:
        # on this step's own solve (data still holds it): no re-solve
        try:
            A, B, _, kappa = _core.gradients(mech.core, data, "state" in gradients, "input" in gradients, [], -1.0)
        except RuntimeError:
            # the Newton matrix at the solution is exactly singular: no derivative there. The
            # step is a failed step (singular_matrix, naming the block), its gradients NaN.
            block.status_code[0] = _SINGULAR
            block.singular_node[0] = data.singular_node
            nan = np.full((12 * mech.nb, 12 * mech.nb), np.nan)
            A = nan if "state" in gradients else None
            B = np.full((12 * mech.nb, mech.nu), np.nan) if "input" in gradients else None
            kappa = np.nan
        except (ValueError, TypeError) as exc:
            raise from_core(exc, f"gradients of step {k}") from None
        if A is not None:
            block.gradients["gradients/A"] = A[None]
        if B is not None:
            block.gradients["gradients/B"] = B.reshape(12 * mech.nb, mech.nu)[None]
        block.gradients["gradients/kappa"] = np.array([kappa])
    return block


class TrajectoryRecorder:
    """A RunWriter that keeps the run in memory and builds a Trajectory (dojo.simulate)."""

    def __init__(self, exact_knots: bool = False):
        # exact_knots: the states handed in carry the velocities at t_k already (the rk4
        # integrator's), not midpoint velocities
        self.exact_knots = exact_knots
        self.initial = None
        self.blocks: list[StepBlock] = []
        self.final_midpoint = None

    def set_final_midpoint(self, v, omega) -> None:
        self.final_midpoint = (np.asarray(v, float), np.asarray(omega, float))

    def write_initial(self, time, x, q, v, omega, minimal_q, minimal_v) -> None:
        self.initial = (time, x, q, v, omega, minimal_q, minimal_v)

    def write_block(self, mech: Mechanism, block: StepBlock) -> None:
        self.blocks.append(block)

    def trajectory(self, mech: Mechanism):
        """The recorded run as a simulation.simulate.Trajectory."""
        from dojo_cli.simulation.simulate import Trajectory

        t0, x0, q0, v0, w0, mq0, mv0 = self.initial
        nb, nf = mech.nb, mech.nf
        cat = lambda name, shape: (  # noqa: E731
            np.concatenate([getattr(b, name) for b in self.blocks]) if self.blocks else np.zeros((0,) + shape)
        )
        z = cat("z", (13 * nb,))
        s = z.reshape(len(z), nb, 13)
        T = len(z)
        contacts = {}
        if mech.nc:
            contacts = {
                "contact_distance": cat("contact_distance", (mech.nc,)),
                "contact_normal_impulse": cat("contact_normal_impulse", (mech.nc,)),
                "contact_friction_impulse": cat("contact_friction_impulse", (mech.nc, 2)),
                "contact_slip": cat("contact_slip", (mech.nc, 2)),
            }
        x = np.concatenate([x0[None], s[:, :, 0:3]])
        q = np.concatenate([q0[None], s[:, :, 6:10]])
        v_mid = np.concatenate([v0[None], s[:, :, 3:6]])
        omega_mid = np.concatenate([w0[None], s[:, :, 10:13]])
        final = self.final_midpoint
        if self.exact_knots:
            from dojo_cli.simulation.rk4_run import knot_identity

            v, omega, minimal_v = knot_identity(mech, x, q, v_mid, omega_mid)
        elif final is None:
            v, omega, minimal_v = knot_velocities(mech, x, q, v_mid, omega_mid, extrapolate_last=True)
        else:
            v, omega, minimal_v = knot_velocities(
                mech, x, q, np.concatenate([v_mid, final[0][None]]), np.concatenate([omega_mid, final[1][None]])
            )
        return Trajectory(
            time=np.concatenate([[t0], cat("time", ())]),
            x=x,
            q=q,
            v=v,
            omega=omega,
            v_mid=v_mid,
            omega_mid=omega_mid,
            minimal_q=np.concatenate([np.reshape(mq0, (1, nf)), cat("minimal_q", (nf,))]),
            minimal_v=minimal_v,
            inputs=cat("inputs", (mech.nu,)).reshape(T, mech.nu),
            iterations=cat("iterations", ()).astype(int),
            residual=cat("residual", ()),
            status=[str(t) for t in (STATUS_TEXT[cat("status_code", ()).astype(int)] if T else [])],
            impulses=cat("impulses", (mech.nl,)).reshape(T, mech.nl),
            complementarity=cat("complementarity", ()),
            **contacts,
        )


__all__ = ["RunSummary", "RunWriter", "StepBlock", "TrajectoryRecorder", "minimal_state", "run"]
