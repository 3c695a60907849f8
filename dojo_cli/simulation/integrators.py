"""The integrators the run loop (simulation.run) drives: one strategy class each.

This is the seam for a new integrator. A strategy is made for one run (it holds the run's
state between blocks) and answers four things (``simulation.run.Integrator``):

- ``name``: the storage attribute ``integrator`` of its runs; ``exact_knots``: whether the
  states it hands on carry their velocities at t_k already (no knot velocities to derive);
- ``initial``: the run's first state (13 nb,) and its unwrapped minimal coordinates (nf,);
- ``fast``: whether it steps in blocks of many steps (sized by simulation.run.step_blocks)
  or one step per block (a controller that reads the state, a log, per-step gradients);
- ``advance(k, n)``: steps k .. k + n - 1 as a StepBlock (fewer when the run must stop),
  and the reason it cannot go on (None to go on);
- ``ahead(k)``: the midpoint velocities of step k, one past the last state (not stored),
  so that the last state's knot velocities are exact; None when there are none.

A strategy may also have ``rows``, which the loop sets from its writer (None, or the
writer's ``rows(nl, n)``: ``TrajectoryRecorder.rows``): arrays of the writer's own that a
block's core call writes in place instead of making new ones (``Variational``'s rollout).

``Variational`` is Dojo's variational integrator in maximal coordinates (core
maximal/step.h, ``_core.rollout`` a block at a time); ``Rk4`` the Munthe-Kaas RK4 in minimal
coordinates (core minimal/rk4.h). A third (say a fourth-order variational integrator) is one
more class here with these members, and one branch in ``simulation.run.integrator_for``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import InputError, from_core
from dojo_cli.model.controller import (
    ClampedInputs, ConstantController, Controller, ExternalForce, ScheduleController, core_law, external_wrench,
)
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.step import core_options, refuse_armature, solve_step
from dojo_cli.simulation.substeps import SubstepResult, Substeps, knot_between
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverStatus

# The storage attribute `integrator` of a run.
VARIATIONAL_INTEGRATOR = "dojo-variational-midpoint"
RK4_INTEGRATOR = "munthe-kaas-rk4"
VARIATIONAL4_INTEGRATOR = "variational4"
STATUS_TEXT = np.array([s.value for s in STATUS_FROM_CODE])
SINGULAR = STATUS_FROM_CODE.index(SolverStatus.SINGULAR_MATRIX)


@dataclass
class StepBlock:
    """Consecutive steps k0 .. k0 + n - 1 and the states they reach (arrays over steps):
    what an integrator hands the run loop, and the loop its writer.

    Attributes:
        k0: index of the first step.
        time: (n,) time of each reached state (s).
        z: (n, 13 nb) reached maximal states [x, v, q, w] per body (the integrator's
            velocities: midpoint ones, or the knot ones of an ``exact_knots`` integrator).
        minimal_q: (n, nf) minimal coordinates of those states, unwrapped through turns.
        inputs: (n, nu) inputs applied during each step.
        iterations, residual, status_code, complementarity: (n,) solver record.
        impulses: (n, nl) joint impulses.
        contact_distance, contact_normal_impulse: (n, nc); contact_friction_impulse,
            contact_slip: (n, nc, 2) (empty without contacts).
        gradients: per-step gradient datasets (``gradients/A`` (n, 12 nb, 12 nb), ...), if asked.
        singular_node: (n,) per singular_matrix step the Newton-matrix node with the zero
            pivot (-1 otherwise), or None.
        start: (n, 2 + nk) the interior point's start record after each step (core
            maximal/step.h, ``_core.start_record``), or None (an integrator without one).
        knot: (v (n+1, nb, 3), omega (n+1, nb, 3), minimal_v (n+1, nf)): the velocities at
            the knots of the state before the block and of its states, the last
            extrapolated, when the integrator computed them with the steps (the core's
            rollout); None: simulation.knots.KnotRows derives them.
        substeps: (n,) int, how many substeps each step was solved as (1: a plain step;
            simulation.substeps), or None (an integrator without the retry).
    """

    k0: int
    time: np.ndarray
    z: np.ndarray
    minimal_q: np.ndarray
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
    singular_node: np.ndarray | None = None
    start: np.ndarray | None = None
    knot: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    substeps: np.ndarray | None = None

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


def is_open_loop(controller: Controller | None) -> bool:
    """Inputs known before the run (none, constant, a schedule, or one of those clamped to
    the actuators' ranges): a block needs no state."""
    if type(controller) is ClampedInputs:
        return controller.inner is None or is_open_loop(controller.inner)
    return controller is None or type(controller) in (Controller, ConstantController, ScheduleController)


def open_loop_inputs(mech: Mechanism, controller: Controller | None, k0: int, n: int) -> np.ndarray | None:
    """(n, nu) inputs of steps k0.. for an open-loop controller, None for zero."""
    if controller is None or type(controller) is Controller:
        return None
    if isinstance(controller, ConstantController):
        return np.ascontiguousarray(np.broadcast_to(np.asarray(controller.u, float).reshape(1, -1), (n, mech.nu)))
    # a schedule reads its table only (clamped: ClampedInputs clips each row as a step would)
    rows = [controller(mech, k, None) for k in range(k0, k0 + n)]
    return np.ascontiguousarray(np.asarray(rows, dtype=float).reshape(n, mech.nu))


class Variational:
    """Dojo's variational integrator (maximal coordinates, midpoint velocities).

    Runs without external forces, per-step gradients or an iteration log are stepped by
    the core a block at a time (one ``_core.rollout`` per block) when their inputs are
    open-loop (no controller, a constant or a scheduled one) or a law the core evaluates
    itself before each step (a PD controller, clamped or not: model.controller.core_law);
    others cross into the core once per step, as their controller (Python) must see each
    state. A step that fails after all its restarts is solved again as substeps
    (simulation.substeps; a block's rollout stops at it, and goes on after it).

    Args:
        mech: the mechanism.
        z0: (13 nb,) the state the run starts from (midpoint velocities).
        controller: input law (None: zero inputs).
        opts: solver options (default: Dojo's).
        external: external forces.
        gradients: "state" and/or "input": each step's A and/or B, taken on the step's own
            solve (gradients/A, gradients/B, gradients/kappa). A step solved as substeps
            has its composed map's (simulation.substeps.SubstepChain: the chain rule through
            the re-expressions and each substep's own solve).
        log: receives one dict per solver iteration; steps one at a time.
        warm_start: (nl,) joint impulses the first solve starts from (default zeros).
        start_record: (2 + nk,) the interior point's start record of the step that reached
            z0 (a stored run's ``solver/start``, core maximal/step.h): the first step starts
            as that run's next step did (its warm start, its restart scale); None: from
            Dojo's point.
        angles: (nf,) z0's minimal coordinates unwrapped through turns (a stored run's),
            where the first step measures limits from (default: z0's own).
        abort_on_failure: a block stops at its first failed step (one that its substeps
            could not solve either).
        substeps: retry a failed step as substeps (simulation.substeps.SUBSTEP_COUNTS);
            False: a failed step is kept as it is.
        forced_substeps: {step: n}: steps solved as n substeps whatever their full step
            does (comparisons and tests of the variable-step integrator).
    """

    name = VARIATIONAL_INTEGRATOR
    exact_knots = False

    def __init__(self, mech: Mechanism, z0, *, controller: Controller | None = None, opts: SolverOptions | None = None,
                 external: list[ExternalForce] | tuple = (), gradients: tuple[str, ...] = (), log=None,
                 warm_start=None, angles=None, start_record=None, abort_on_failure: bool = False,
                 substeps: bool = True, forced_substeps: dict[int, int] | None = None):
        self.mech = mech
        self.opts = opts or DOJO_DEFAULTS
        self.controller, self.external, self.gradients, self.log = controller, tuple(external), tuple(gradients), log
        self.abort_on_failure = abort_on_failure
        z = np.array(z0, dtype=float).reshape(-1)
        if z.shape != (13 * mech.nb,):
            raise ValueError(f"initial state must have {13 * mech.nb} entries, got {z.size}")
        mq = np.asarray(_core.unwrapped_coordinates(mech.core, np.ascontiguousarray(z[None]))).reshape(mech.nf)
        refuse_armature(mech)
        self.data = _core.Data(mech.core)  # this run's scratch; its angle_ref carries the limits' winding
        if angles is not None:
            mq = np.asarray(angles, dtype=float).reshape(mech.nf).copy()
            self.data.angle_ref[:] = mq
        if start_record is not None:
            _core.restore_start(mech.core, self.data, np.ascontiguousarray(start_record, dtype=float), z)
        self.initial = (z, mq)
        self.z = z
        self.before = (z, mq)  # the state before the next block, its minimal coordinates
        self.lam = np.zeros(mech.nl) if warm_start is None else np.array(warm_start, dtype=float).reshape(mech.nl)
        # a state-feedback law the core's rollout evaluates in its loop (None: open loop, or Python's)
        self.law = None if is_open_loop(controller) else core_law(controller)
        self.fast = ((is_open_loop(controller) or self.law is not None) and not self.external and not self.gradients
                     and log is None)
        self.forced = {int(k): int(n) for k, n in (forced_substeps or {}).items()}
        self.retry = Substeps(mech, self.opts, self.external) if (substeps or self.forced) else None
        self.retry_failed = substeps
        self.h_prev = mech.timestep  # the length of the step that reached self.z (h/n after n substeps)
        # self.z is a state of h/carried: 1, or n after substeps whose end no step of h can start
        # from (simulation.substeps, "carried on"): the next step is solved as substeps too
        self.carried = 1
        self.last_failed = False  # the step that reached self.z failed (even as substeps)
        # where a block's rollout writes its arrays: the writer's own rows (simulation.run.run
        # sets it from a writer that has them, TrajectoryRecorder.rows), or None: new arrays
        self.rows = None
        self._block_start = -1  # the first step of the block advance() is making

    def advance(self, k: int, n: int) -> tuple[StepBlock, str | None]:
        if self.fast:
            parts: list[StepBlock] = []
            done = 0
            self._block_start = k  # (only a rollout that starts the block writes the writer's rows)
            while done < n:
                kk = k + done
                if self.carried > 1:
                    part = self._carried_step(kk, self._inputs(kk))
                elif kk in self.forced:
                    part = self._substep_block(kk, self._inputs(kk), 0, (self.forced[kk],))
                    if part is None:
                        part = self._rollout(kk, 1)
                else:
                    end = min([s for s in self.forced if kk < s < k + n], default=k + n)
                    part = self._rollout(kk, end - kk)
                parts.append(part)
                done += part.n
                if self.abort_on_failure and part.status_code[-1] != 0:
                    break
            block = concat_blocks(parts)
        else:
            block = self._closed_loop_step(k, self.z, self.lam, self.gradients, self.log)
        return block, None

    def _inputs(self, k: int):
        """(nu,) the inputs of step k from the current state (open-loop: the schedule's), None for zero."""
        if self.law is not None:
            return np.asarray(_core.pd_inputs(self.mech.core, self.law, self.z))
        inputs = open_loop_inputs(self.mech, self.controller, k, 1)
        return None if inputs is None else inputs[0]

    def _advanced(self, block: StepBlock) -> StepBlock:
        """The run's state moved past a block of steps."""
        self.z = block.z[-1].copy()
        self.before = (self.z, block.minimal_q[-1])
        self.h_prev = self.mech.timestep / int(block.substeps[-1])
        self.last_failed = bool(block.status_code[-1] != 0)
        return block

    def _first_knot(self, block: StepBlock) -> None:
        """A block of full steps after a step solved as substeps: its knot row 0 (the state
        before it) is the knot between a step of h/n and one of h (simulation.substeps.knot_between),
        not the even split of equal steps the core's record took."""
        if block.knot is None or self.h_prev == self.mech.timestep:
            return
        kv, kw, kmv = knot_between(self.mech.core, self.retry.scratch, self.before[0], block.z[0], self.h_prev)
        block.knot[0][0], block.knot[1][0], block.knot[2][0] = kv, kw, kmv

    def _rollout(self, k: int, n: int) -> StepBlock:
        """Steps k .. k + n - 1 in one core call, up to the first that fails; a failed step is
        solved again as substeps (the block then ends with it)."""
        mech = self.mech
        inputs = None if self.law is not None else open_loop_inputs(mech, self.controller, k, n)
        lam_before = self.lam.copy()
        try:
            # one crossing a block: the steps (a PD law evaluated before each), and the
            # record storage keeps beside them (unwrapped minimal coordinates, knot
            # velocities), computed in the core
            out = _core.rollout(mech.core, self.data, self.z, n, inputs, self.lam, core_options(self.opts),
                                self.abort_on_failure or self.retry_failed, np.ascontiguousarray(self.before[1], dtype=float),
                                self.law, self._rows(k, n))
        except (ValueError, TypeError, RuntimeError) as exc:
            raise from_core(exc, "run") from None
        n = out["steps"]
        if self.law is not None:
            inputs = out.pop("inputs")  # the law's inputs of each step
        elif inputs is None:
            inputs = np.zeros((n, mech.nu))
        knot = tuple(out.pop(name)[: n + 1] for name in ("knot_v", "knot_omega", "knot_minimal_v"))
        out = {key: value[:n] for key, value in out.items() if key != "steps"}
        before = self.before
        block = _variational_block(mech, k, out, inputs[:n], before)
        block.knot = knot
        block.substeps = np.ones(n, dtype=np.int64)
        self._first_knot(block)
        # (a step from a failed step's state is not retried: simulation.substeps, "Cost")
        if not (self.retry_failed and block.status_code[-1] != 0) or (n == 1 and self.last_failed):
            return self._advanced(block)
        # the last step failed: solved again as substeps from the state before it
        i = n - 1
        z, angles = (before if i == 0 else (block.z[i - 1], block.minimal_q[i - 1]))
        lam = lam_before if i == 0 else block.impulses[i - 1]
        failed_lam = self.lam.copy()
        self.z, self.before = np.array(z, dtype=float), (np.array(z, dtype=float), np.array(angles, dtype=float))
        if i > 0:
            self.h_prev = mech.timestep  # (the steps before it in the block are full steps)
        retried = self._substep_block(k + i, block.inputs[i], int(block.iterations[i]), None, lam=lam)
        if retried is None:  # the failed step stands (its state, impulses and angles are the run's)
            self.lam[:] = failed_lam
            return self._advanced(block)
        if i == 0:
            return retried
        return concat_blocks([slice_block(block, i), retried])

    def _rows(self, k: int, n: int) -> dict | None:
        """The writer's rows for a rollout of steps k .. k + n - 1 (``rows``), when it starts the
        block advance() is making: the writer's next rows are its first steps'. A later part of
        the block (after a step solved as substeps) gets new arrays, joined by concat_blocks."""
        if self.rows is None or k != self._block_start:
            return None
        return self.rows(self.mech.nl, n)

    def _substep_block(self, k: int, u, spent: int, counts, lam=None, gradients=()) -> StepBlock | None:
        """Step k from the run's state as substeps (simulation.substeps), with its composed
        map's derivatives when ``gradients`` asks; the run moves past it when it converged;
        None (nothing moved) when it did not."""
        z, angles = self.before
        lam = self.lam if lam is None else lam
        res = self.retry.solve(k, z, u, lam, angles, spent=spent, counts=counts, h_prev=self.h_prev, wrt=gradients,
                               carried=self.carried)
        if res is None:
            return None
        block = self._substep_record(k, z, angles, u, res)
        if gradients and res.gradients is None:
            # from or to a carried state (a state of h/n): no map between states of h to
            # differentiate; NaN, never the derivative of a map the run did not take
            self._put_gradients(block, *self._nan_gradients(gradients))
        elif gradients:
            g = res.gradients
            if g.singular_node != -1:
                # no derivative at a substep's solution (its Newton matrix there is singular):
                # as a full step's (_closed_loop_step), a failed step with NaN gradients
                block.status_code[0] = SINGULAR
                block.singular_node[0] = max(g.singular_node, -1)
            self._put_gradients(block, g.A, g.B, g.kappa)
        self.data.angle_ref[:] = res.angle_ref
        self.data.warm_valid = False
        # the start record after it: the next step starts cold (the substeps' solves were of
        # another model), and --from the next state does the same
        block.start = np.asarray(_core.start_record(self.mech.core, self.data))[None]
        self.lam[:] = res.lam
        self.carried = res.carry
        if res.carry == 1:
            return self._advanced(block)
        # a carried state (simulation.substeps): the run goes on from it; its record has no
        # midpoint velocities of a step of h (NaN), so nothing reads it as one
        reached = np.array(block.z[-1], dtype=float)
        block.z = block.z.copy()
        mid = block.z.reshape(block.n, self.mech.nb, 13)
        mid[-1, :, 3:6] = np.nan
        mid[-1, :, 10:13] = np.nan
        self._advanced(block)
        self.z = reached
        self.before = (reached, block.minimal_q[-1])
        return block

    def _carried_step(self, k: int, u, gradients=()) -> StepBlock:
        """Step k from a carried state (a state of h/n, simulation.substeps): solved as
        substeps; when no count converges from it the step fails with no state (NaN), as no
        step of h can start from it."""
        block = self._substep_block(k, u, 0, None, gradients=gradients)
        if block is not None:
            return block
        mech = self.mech
        u = np.zeros(mech.nu) if u is None else np.asarray(u, dtype=float).reshape(mech.nu)
        nan = np.nan
        out = {
            "states": np.full((1, 13 * mech.nb), nan),
            "minimal_q": np.full((1, mech.nf), nan),
            "iterations": np.zeros(1, dtype=np.int64),
            "residual": np.array([nan]),
            "status": np.array([STATUS_FROM_CODE.index(SolverStatus.MAX_ITERATIONS)]),
            "complementarity": np.array([nan]),
            "impulses": np.full((1, mech.nl), nan),
            "contact_distance": np.full((1, mech.nc), nan),
            "contact_normal_impulse": np.full((1, mech.nc), nan),
            "contact_friction_impulse": np.full((1, mech.nc, 2), nan),
            "contact_slip": np.full((1, mech.nc, 2), nan),
            "singular_node": np.array([-1]),
        }
        block = _variational_block(mech, k, out, u[None], self.before)
        block.start = np.asarray(_core.start_record(mech.core, self.data))[None]
        block.substeps = np.array([self.carried], dtype=np.int64)
        # no knot velocities at the carried state before it (no step from it converged) nor at its own
        block.knot = (np.full((2, mech.nb, 3), nan), np.full((2, mech.nb, 3), nan), np.full((2, mech.nf), nan))
        self.carried = 1
        self._advanced(block)
        self.h_prev = mech.timestep  # (no state: no step length for the next knot to share with)
        if gradients:
            self._put_gradients(block, *self._nan_gradients(gradients))
        return block

    def _substep_record(self, k: int, z, angles, u, res: SubstepResult) -> StepBlock:
        """The StepBlock of step k solved as substeps: the state at t + h, its record."""
        mech = self.mech
        u = np.zeros(mech.nu) if u is None else np.asarray(u, dtype=float).reshape(mech.nu)
        # the reached state's unwrapped coordinates and extrapolated knot velocities (at h);
        # the knot velocities of the state before it from the first substep (exact)
        rec = _core.run_record(mech.core, np.ascontiguousarray(res.out["states"]), np.ascontiguousarray(z, dtype=float),
                               np.ascontiguousarray(angles, dtype=float))
        out = dict(res.out, minimal_q=rec["minimal_q"])
        block = _variational_block(mech, k, out, u[None], (z, angles))
        kv, kw, kmv = (np.array(rec[name]) for name in ("knot_v", "knot_omega", "knot_minimal_v"))
        kv[0], kw[0], kmv[0] = res.knot0
        block.knot = (kv, kw, kmv)
        block.substeps = np.array([res.n], dtype=np.int64)
        return block

    def ahead(self, k: int):
        # one step past the end (not stored): the last state's outgoing midpoint velocities,
        # for its knot velocities (docs/physics.md); none when that step fails (or needs
        # substeps: its first substep's midpoint velocities are not those of a step of h).
        # After a step solved as substeps the knot is between a step of h/n and that one:
        # its knot velocities themselves (simulation.substeps.knot_between)
        if self.carried > 1:
            return self._carried_knot(k)
        state = (self.z, self.before, self.h_prev)
        block = self._closed_loop_step(k, self.z, self.lam.copy(), (), None, retry=False)
        self.z, self.before, self.h_prev = state
        if block.status_code[0] != 0:
            return None
        if self.h_prev != self.mech.timestep:
            return knot_between(self.mech.core, self.retry.scratch, self.z, block.z[0], self.h_prev)
        _, v_next, _, w_next = block.state_parts(self.mech.nb)
        return v_next[0], w_next[0]

    def _carried_knot(self, k: int):
        """The knot velocities of a carried last state (a state of h/n): between its step of
        h/n and the first substep of h/n past it (not stored; None when it fails)."""
        mech, n = self.mech, self.carried
        core, data = self.retry.model(n)
        u = None
        if self.controller is not None:
            u = np.ascontiguousarray(self.controller(mech, k, self.z), dtype=float).reshape(mech.nu)
        f_ext = tau_ext = None
        if self.external:
            f_ext, tau_ext = external_wrench(mech, list(self.external), k * mech.timestep,
                                             self.z.reshape(mech.nb, 13)[:, 6:10])
            f_ext, tau_ext = np.ascontiguousarray(f_ext).reshape(-1), np.ascontiguousarray(tau_ext).reshape(-1)
        data.angle_ref[:] = self.before[1]
        data.warm_valid = False
        lam = np.ascontiguousarray(self.lam / n)
        if _core.step(core, data, self.z, u, f_ext, tau_ext, lam, self.retry.opts) != 0:
            return None
        return knot_between(core, data, self.z, np.array(data.z_next), self.h_prev)

    def _closed_loop_step(self, k, z, lam, gradients, log, retry: bool = True) -> StepBlock:
        """One step whose inputs or forces depend on the state (or with gradients or a log)."""
        mech, data, controller = self.mech, self.data, self.controller
        h = mech.timestep
        u = np.zeros(mech.nu) if controller is None else np.asarray(controller(mech, k, z), dtype=float).reshape(-1)
        if retry and self.carried > 1:
            return self._carried_step(k, u, gradients)
        forced = self.forced.get(k) if retry else None
        if forced:
            block = self._substep_block(k, u, 0, (forced,), gradients=gradients)
            if block is not None:
                return block
        f_ext = tau_ext = None
        if self.external:
            f_ext, tau_ext = external_wrench(mech, list(self.external), k * h, z.reshape(mech.nb, 13)[:, 6:10])
        lam_before = lam.copy()
        z_next, result = solve_step(mech, z, u, self.opts, f_ext, tau_ext, lam0=lam, log=log, data=data)
        if retry and self.retry_failed and result.status is not SolverStatus.SUCCESS and not self.last_failed:
            # solved again as substeps from the same state (simulation.substeps)
            block = self._substep_block(k, u, result.iterations, None, lam=lam_before, gradients=gradients)
            if block is not None:
                lam[:] = self.lam
                return block
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
            "start": np.asarray(_core.start_record(mech.core, data))[None],
        }
        # the step's record (unwrapped minimal coordinates, knot velocities) in one core call
        record = _core.run_record(mech.core, np.ascontiguousarray(out["states"]),
                                  np.ascontiguousarray(self.before[0], dtype=float),
                                  np.ascontiguousarray(self.before[1], dtype=float))
        out["minimal_q"] = record["minimal_q"]
        block = _variational_block(mech, k, out, u[None], self.before)
        block.knot = (record["knot_v"], record["knot_omega"], record["knot_minimal_v"])
        block.substeps = np.ones(1, dtype=np.int64)
        self._first_knot(block)
        if gradients:
            # on this step's own solve (data still holds it): no re-solve
            try:
                A, B, _, kappa = _core.gradients(mech.core, data, "state" in gradients, "input" in gradients, [], -1.0)
            except RuntimeError:
                # the Newton matrix at the solution is exactly singular: no derivative there. The
                # step is a failed step (singular_matrix, naming the block), its gradients NaN.
                block.status_code[0] = SINGULAR
                block.singular_node[0] = data.singular_node
                A, B, kappa = self._nan_gradients(gradients)
            except (ValueError, TypeError) as exc:
                raise from_core(exc, f"gradients of step {k}") from None
            self._put_gradients(block, A, B, kappa)
        return self._advanced(block)

    def _nan_gradients(self, gradients):
        n = 12 * self.mech.nb
        A = np.full((n, n), np.nan) if "state" in gradients else None
        B = np.full((n, self.mech.nu), np.nan) if "input" in gradients else None
        return A, B, np.nan

    def _put_gradients(self, block: StepBlock, A, B, kappa) -> None:
        if A is not None:
            block.gradients["gradients/A"] = A[None]
        if B is not None:
            block.gradients["gradients/B"] = B.reshape(12 * self.mech.nb, self.mech.nu)[None]
        block.gradients["gradients/kappa"] = np.array([kappa])


def slice_block(block: StepBlock, i: int) -> StepBlock:
    """The first i steps of a block: its per-step arrays and knot rows cut at step i (the
    last kept state's knot row then extrapolated as the block's own were)."""
    def cut(a):
        return None if a is None else a[:i]

    knot = None if block.knot is None else tuple(a[: i + 1] for a in block.knot)
    return StepBlock(
        k0=block.k0, time=block.time[:i], z=block.z[:i], minimal_q=block.minimal_q[:i], inputs=block.inputs[:i],
        iterations=block.iterations[:i], residual=block.residual[:i], status_code=block.status_code[:i],
        complementarity=block.complementarity[:i], impulses=block.impulses[:i], contact_distance=block.contact_distance[:i],
        contact_normal_impulse=block.contact_normal_impulse[:i], contact_friction_impulse=block.contact_friction_impulse[:i],
        contact_slip=block.contact_slip[:i], gradients={key: value[:i] for key, value in block.gradients.items()},
        singular_node=cut(block.singular_node), knot=knot, substeps=cut(block.substeps), start=cut(block.start),
    )


def concat_blocks(blocks: list[StepBlock]) -> StepBlock:
    """Consecutive blocks as one: per-step arrays joined, and the knot rows of each block's
    first state (the state before it, exact) replacing the last, extrapolated row of the one
    before."""
    if len(blocks) == 1:
        return blocks[0]
    first = blocks[0]

    def cat(name):
        parts = [getattr(b, name) for b in blocks]
        return None if any(p is None for p in parts) else np.concatenate(parts)

    knot = None
    if all(b.knot is not None for b in blocks):
        knot = tuple(np.concatenate([blocks[0].knot[j][:-1]] + [b.knot[j][:-1] for b in blocks[1:-1]]
                                    + [blocks[-1].knot[j]]) for j in range(3))
    keys = set().union(*(b.gradients for b in blocks))
    gradients = {key: np.concatenate([b.gradients[key] for b in blocks]) for key in keys
                 if all(key in b.gradients for b in blocks)}
    return StepBlock(
        k0=first.k0, time=cat("time"), z=cat("z"), minimal_q=cat("minimal_q"), inputs=cat("inputs"),
        iterations=cat("iterations"), residual=cat("residual"), status_code=cat("status_code"),
        complementarity=cat("complementarity"), impulses=cat("impulses"), contact_distance=cat("contact_distance"),
        contact_normal_impulse=cat("contact_normal_impulse"), contact_friction_impulse=cat("contact_friction_impulse"),
        contact_slip=cat("contact_slip"), gradients=gradients, singular_node=cat("singular_node"), knot=knot,
        substeps=cat("substeps"), start=cat("start"),
    )


def _variational_block(mech: Mechanism, k0: int, out: dict, inputs: np.ndarray, before) -> StepBlock:
    """A StepBlock of the core's step record ``out`` (rollout's arrays over the block's steps),
    its minimal coordinates unwrapped on from ``before`` (the state before it, its angles)."""
    n = len(out["states"])
    mq = out.get("minimal_q")  # (rollout computes them with the steps)
    if mq is None:
        states = np.ascontiguousarray(out["states"], dtype=float).reshape(n, 13 * mech.nb)
        mq = _core.unwrapped_coordinates(mech.core, states, np.ascontiguousarray(before[0], dtype=float),
                                         np.ascontiguousarray(before[1], dtype=float))
    return StepBlock(
        k0=k0,
        time=(k0 + 1 + np.arange(n)) * mech.timestep,
        z=out["states"],
        minimal_q=np.asarray(mq).reshape(n, mech.nf),
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
        start=out.get("start"),
    )


def _inputs_problems(integrator: str, external=(), gradients=()) -> list[str]:
    """The refusals the joint-only integrators (rk4, variational4) share: external forces
    (their steps take joint inputs only) and per-step gradients (the implicit-function
    derivatives are those of the variational step, simulation.gradients)."""
    out = []
    if external:
        out.append(f"external forces are not supported by the {integrator} integrator")
    if gradients:
        out.append(f"--gradients: per-step gradients are the variational integrator's (not {integrator}'s)")
    return out


def integrator_problems(mech: Mechanism, integrator: str, external=(), gradients=()) -> list[str]:
    """What in a scene ``integrator`` (the scene's name of it) cannot run, one message each
    (empty: runnable; the variational integrator runs every scene)."""
    if integrator == "rk4":
        return rk4_problems(mech, external, gradients)
    if integrator == "variational4":
        return variational4_problems(mech, external, gradients)
    return []


def _friction_problems(mech: Mechanism, integrator: str, why: str) -> list[str]:
    """One refusal per joint with dry friction (core/maximal/residual.h: complementarity rows
    only the variational integrator's interior point solves)."""
    friction = getattr(mech, "joint_friction", None)
    if friction is None:
        return []
    return [f"joints.{j}.friction: joint {joint.name!r}: dry joint friction is not supported by the {integrator} "
            f"integrator ({why}; use integrator: variational)"
            for j, joint in enumerate(mech.joints) if np.any(friction[mech.joint_free_range[j]] > 0)]


def rk4_problems(mech: Mechanism, external=(), gradients=()) -> list[str]:
    """What in a scene the rk4 integrator cannot run, one message each (empty: runnable)."""
    out = []
    for i, c in enumerate(mech.contacts):
        out.append(f"contacts.{i}: contact {c.name!r}: the rk4 integrator has no contact model (use integrator: variational)")
    limited = sorted({int(mech.free_joint[f]) for f in mech.limit_free})
    for j in limited:
        out.append(f"joints.{j}.limits: joint {mech.joints[j].name!r}: joint limits are not supported by the rk4 integrator")
    out += _friction_problems(mech, "rk4", "it has no complementarity to hold a joint still")
    for j in mech.loop_joints:
        cols = mech.joint_free_range[j]
        if np.any(mech.spring[cols]) or np.any(mech.damper[cols]):
            out.append(f"joints.{j}: joint {mech.joints[j].name!r}: springs and dampers on a loop-closing joint are not "
                       "supported by the rk4 integrator")
    for i, a in enumerate(mech.actuators):
        if a.body >= 0:
            out.append(f"actuators.{i}: actuator {a.name!r}: body actuators are not supported by the rk4 integrator "
                       "(use integrator: variational)")
    return out + _inputs_problems("rk4", external, gradients)


def knot_identity(mech: Mechanism, x, q, v_mid, omega_mid, extrapolate_last: bool = False):
    """The knot velocities of rk4 states (simulation.knots.KnotRows, exact): the velocities
    handed in are already those at t_k (v, omega as given; minimal/v their exact image
    J(q) [v; omega])."""
    n = len(x)
    v, omega = np.asarray(v_mid, float)[:n], np.asarray(omega_mid, float)[:n]
    z = np.concatenate([np.reshape(x, (n, mech.nb, 3)), v, np.reshape(q, (n, mech.nb, 4)), omega], axis=2)
    rates = _core.instantaneous_minimal_velocities(mech.core, np.ascontiguousarray(z.reshape(n, 13 * mech.nb)))
    return v, omega, np.asarray(rates).reshape(n, mech.nf)


def joint_only_block(mech: Mechanism, k0: int, z: np.ndarray, minimal_q: np.ndarray, inputs, iterations: np.ndarray,
                     residual: np.ndarray, status_code: np.ndarray, knot=None) -> StepBlock:
    """The StepBlock of an integrator without contacts or joint impulses (rk4, variational4):
    the n steps' states and record, no complementarity, NaN joint impulses (their steps have
    none, or several sub-steps' worth), empty contact datasets."""
    n, nc = len(status_code), mech.nc
    return StepBlock(
        k0=k0,
        time=(k0 + 1 + np.arange(n)) * mech.timestep,
        z=z,
        minimal_q=minimal_q,
        inputs=np.zeros((n, mech.nu)) if inputs is None else np.asarray(inputs, dtype=float)[:n].reshape(n, mech.nu),
        iterations=iterations,
        residual=residual,
        status_code=status_code,
        complementarity=np.zeros(n),
        impulses=np.full((n, mech.nl), np.nan),
        contact_distance=np.zeros((n, nc)),
        contact_normal_impulse=np.zeros((n, nc)),
        contact_friction_impulse=np.zeros((n, nc, 2)),
        contact_slip=np.zeros((n, nc, 2)),
        knot=knot,
    )


class Rk4:
    """The Munthe-Kaas RK4 in minimal coordinates (core minimal/rk4.h), the scene's timestep
    as the step: every body's x, q, v, omega at t_k from the core's forward kinematics of the
    minimal state (exact knot velocities), Dojo's minimal coordinates, the inputs; the
    solver record says success with 0 iterations and the joint impulses are NaN (RK4 has
    none). Open-loop runs are stepped by the core a block at a time; a PD controller reads
    the state once per step (its input is held over the step).

    Args:
        mech: the mechanism (its scene's initial state unless x0 or knot).
        controller: the scene's input law (None: zero inputs).
        stabilization_gains: loop joints' Baumgarte gains (minimal.simulate).
        x0: (nx,) initial minimal state (default: ``minimal.init_state``).
        knot: (13 nb,) initial maximal state with its velocities at t0 (a stored run's
            knot: storage x, v, q, omega), instead of x0.
        angles: (nf,) the initial state's minimal/q unwrapped through turns (a stored run's),
            which the stored minimal/q continues from.

    Raises:
        InputError: the scene has something rk4 cannot run (rk4_problems).
    """

    name = RK4_INTEGRATOR
    exact_knots = True

    def __init__(self, mech: Mechanism, *, controller: Controller | None = None, stabilization_gains="default",
                 x0=None, knot=None, angles=None):
        # (the minimal-coordinate modules are imported by rk4 runs only: start-up time)
        from dojo_cli.minimal.model import build_model
        from dojo_cli.minimal.simulate import Rk4 as Rk4Core
        from dojo_cli.minimal.simulate import normalize_state
        from dojo_cli.minimal.states import init_state

        problems = rk4_problems(mech)
        if problems:
            raise InputError("; ".join(problems))
        self.mech, self.controller = mech, controller
        self.model = model = build_model(mech)
        self.integ = Rk4Core(model, stabilization_gains)
        if knot is not None:
            x0 = model.state_from_maximal(np.asarray(knot, dtype=float))
        x = normalize_state(model, init_state(model) if x0 is None else x0)
        self.q = np.ascontiguousarray(x[: model.nq])
        self.v = np.ascontiguousarray(x[model.nq:])
        self.input_map = mech.input_map()  # (nf, nu)
        # minimal/q unwrapped through turns as the variational runs store it (docs/storage.md),
        # each block chained on the state before it
        z0 = np.ascontiguousarray(self.integ.bodies(x).reshape(1, 13 * mech.nb))
        mq0 = np.asarray(_core.unwrapped_coordinates(mech.core, z0)).reshape(mech.nf)
        if angles is not None:
            mq0 = np.asarray(angles, dtype=float).reshape(mech.nf)
        self.initial = (z0.reshape(-1), mq0)
        self.before = (z0.reshape(-1), mq0)
        self.fast = is_open_loop(controller)

    def advance(self, k: int, n: int) -> tuple[StepBlock | None, str | None]:
        mech, model, integ = self.mech, self.model, self.integ
        h = mech.timestep
        if self.fast:
            inputs = open_loop_inputs(mech, self.controller, k, n)
        else:
            zk = integ.bodies(np.concatenate([self.q, self.v])).reshape(-1)
            inputs = np.asarray(self.controller(mech, k, zk), dtype=float).reshape(1, mech.nu)
        out_q = np.zeros((n, model.nq))
        out_v = np.zeros((n, model.nv))
        out_z = np.zeros((n, 13 * mech.nb))
        # the core's rk4 takes one input per free coordinate: joint actuators map onto them
        # through their gains (input_map); body actuators are refused by rk4_problems
        free_inputs = None if inputs is None else np.ascontiguousarray(np.asarray(inputs, dtype=float) @ self.input_map.T)
        # one crossing a block: the steps, the bodies' states and the record storage keeps
        # beside them (unwrapped minimal coordinates, minimal velocities), computed in the core
        record = {}
        done = _core.rk4_run(model.tree, integ.tree_data, integ.core, integ.data, self.q, self.v, float(k * h), float(h),
                             int(n), free_inputs, out_q, out_v, out_z, 0, None, mech.core,
                             np.ascontiguousarray(self.before[0], dtype=float),
                             np.ascontiguousarray(self.before[1], dtype=float), record)
        good = done
        if not (np.all(np.isfinite(out_q[:done])) and np.all(np.isfinite(out_v[:done]))):
            good = int(np.argmax(~(np.all(np.isfinite(out_q[:done]), axis=1) & np.all(np.isfinite(out_v[:done]), axis=1))))
        block = None
        if good:
            block = self._block(k, out_z[:good], inputs, good, record)
            self.before = (np.ascontiguousarray(out_z[good - 1]), block.minimal_q[-1])
        stop = None
        if good < n:
            stop = (f"step {k + good} (t = {(k + good) * h:.6g} s): the rk4 state is no longer finite "
                    f"(the timestep {h:g} s is too large for this scene?)")
        return block, stop

    def ahead(self, k: int):
        return None  # the states carry their knot velocities already

    def _block(self, k0: int, z: np.ndarray, inputs, n: int, record: dict) -> StepBlock:
        mech = self.mech
        # the record's rows of the n good steps (each row depends on the rows before it only)
        mq = np.asarray(record["minimal_q"])[:n].reshape(n, mech.nf)
        knot = (record["knot_v"][: n + 1], record["knot_omega"][: n + 1], record["knot_minimal_v"][: n + 1])
        return joint_only_block(mech, k0, z, mq, inputs, np.zeros(n, dtype=np.int64), np.zeros(n),
                                np.zeros(n, dtype=np.int64), knot)


def variational4_problems(mech: Mechanism, external=(), gradients=()) -> list[str]:
    """What in a scene the variational4 integrator cannot run, one message each (empty: runnable)."""
    out = []
    if mech.contacts:
        names = ", ".join(repr(c.name) for c in mech.contacts[:3]) + (", ..." if mech.nc > 3 else "")
        out.append(f"contacts.0: {mech.nc} contact(s) ({names}): the variational4 integrator is for joint-only "
                   "scenes (use integrator: variational)")
    for j in sorted({int(mech.free_joint[f]) for f in mech.limit_free}):
        out.append(f"joints.{j}.limits: joint {mech.joints[j].name!r}: joint limits are not supported by the "
                   "variational4 integrator (use integrator: variational)")
    out += _friction_problems(mech, "variational4", "its negative sub-step is the reversed step, which friction "
                                                   "does not have")
    for j, joint in enumerate(mech.joints):
        if np.any(mech.damper[mech.joint_free_range[j]]):
            out.append(f"joints.{j}.damper: joint {joint.name!r}: dampers are not supported by the variational4 "
                       "integrator (its negative sub-step is the reversed step, exact only for forces that do not "
                       "depend on velocity; use integrator: variational)")
    if getattr(mech, "has_armature", False):
        out.append("armature: rotor inertia is not supported by the variational4 integrator")
    return out + _inputs_problems("variational4", external, gradients)


class Variational4:
    """``integrator: variational4``: the core's fourth-order symmetric composition of the
    variational step (core/maximal/variational4.h: Suzuki's five stages by default), symplectic
    and momentum-preserving, for joint-only scenes. The states it hands on carry their
    velocities at the knots (exact_knots); the solver record is the sub-steps' Newton
    iterations and their largest residual; the joint impulses are NaN (the sub-steps have
    several). A run starts from the scene's velocities at t0 (or a stored knot, ``--from``, or
    ``knot`` given); open-loop inputs are stepped by the core a block at a time, a PD
    controller reads the knot state once per step (its input held over the step's sub-steps).

    Not supported, each refused with its field (variational4_problems): contacts, joint
    limits, dampers (the negative sub-step is the reversed positive one, exact only for forces
    that do not depend on velocity), rotor inertia, external forces, per-step gradients.

    Args:
        mech: the mechanism.
        controller: the scene's input law (None: zero inputs).
        opts: solver options of the sub-steps (default: Dojo's).
        knot: (13 nb,) initial maximal state with its velocities at t0 (default: the scene's).
        angles: (nf,) the initial state's minimal/q unwrapped through turns (a stored run's).

    Raises:
        InputError: the scene has something variational4 cannot run.
    """

    name = VARIATIONAL4_INTEGRATOR
    exact_knots = True

    def __init__(self, mech: Mechanism, *, controller: Controller | None = None, opts: SolverOptions | None = None,
                 knot=None, angles=None):
        from dojo_cli.model.compiled import model_input

        problems = variational4_problems(mech)
        if problems:
            raise InputError("; ".join(problems))
        try:
            self.core = _core.Variational4(model_input(mech))
        except ValueError as exc:
            raise InputError(str(exc)) from None
        self.mech, self.controller = mech, controller
        self.options = core_options(opts or DOJO_DEFAULTS)
        nb, nf, nu = mech.nb, mech.nf, mech.nu
        z_t0 = knot if knot is not None else getattr(mech, "initial_t0", None)
        if z_t0 is None:  # initial_velocity: midpoint: the scene's velocities, taken at t0
            from dojo_cli.simulation.initial import initial_state

            z_t0 = initial_state(mech)
        z_t0 = np.ascontiguousarray(z_t0, dtype=float).reshape(13 * nb)
        u0 = None
        if controller is not None:
            u0 = np.ascontiguousarray(controller(mech, 0, z_t0), dtype=float).reshape(nu)
        self.z, status = self.core.initial(z_t0, u0)
        if status != 0:
            raise InputError("the initial state (velocities at t0) has no variational4 midpoint state (not finite?)")
        mq0 = np.asarray(_core.unwrapped_coordinates(mech.core, z_t0.reshape(1, -1))).reshape(nf)
        if angles is not None:
            mq0 = np.asarray(angles, dtype=float).reshape(nf)
        self.initial = (z_t0, mq0)
        self.before = (z_t0, mq0)
        self.knot_state = z_t0
        self.fast = is_open_loop(controller)

    def advance(self, k: int, n: int) -> tuple[StepBlock | None, str | None]:
        mech = self.mech
        if self.fast:
            inputs = open_loop_inputs(mech, self.controller, k, n)
        else:
            inputs = np.asarray(self.controller(mech, k, self.knot_state), dtype=float).reshape(1, mech.nu)
        flat = None if inputs is None or mech.nu == 0 else \
            np.ascontiguousarray(np.asarray(inputs, dtype=float)[:n].reshape(-1))
        self.z, knots, codes, iterations, residual = self.core.run(self.z, n, flat, self.options)
        knots, codes = np.asarray(knots), np.asarray(codes)
        done = len(codes)
        block = None
        if done:
            block = self._block(k, knots, inputs, codes, np.asarray(iterations), np.asarray(residual))
            self.before = (np.ascontiguousarray(knots[done - 1]), block.minimal_q[-1])
            self.knot_state = np.ascontiguousarray(knots[done - 1])
        stop = None
        if done < n or (done and codes[-1] != 0):
            stop = f"step {k + done - 1} (t = {(k + done) * mech.timestep:.6g} s): a variational4 sub-step failed"
        return block, stop

    def ahead(self, k: int):
        return None  # the states carry their knot velocities already

    def _block(self, k0: int, z: np.ndarray, inputs, codes, iterations, residual) -> StepBlock:
        mech = self.mech
        n = len(codes)
        mq = np.asarray(_core.unwrapped_coordinates(mech.core, np.ascontiguousarray(z[:n]), self.before[0],
                                                    np.ascontiguousarray(self.before[1], dtype=float))).reshape(n, mech.nf)
        return joint_only_block(mech, k0, z[:n], mq, inputs, iterations.astype(np.int64), residual.astype(float),
                                codes.astype(np.int64))


__all__ = ["RK4_INTEGRATOR", "VARIATIONAL4_INTEGRATOR", "VARIATIONAL_INTEGRATOR", "Rk4", "StepBlock", "Variational",
           "Variational4", "integrator_problems", "knot_identity", "rk4_problems", "variational4_problems"]
