"""The run loop of ``integrator: variational4``: a scene's steps into a RunWriter.

The integrator is the core's (core/maximal/variational4.h): Yoshida's triple jump of the
variational step, fourth order, symplectic and momentum-preserving, for joint-only scenes.
This module only drives it, as simulation.rk4_run drives the rk4 integrator: the states go
to the writer with their velocities at the knots (exact_knots: ``v_mid``, ``omega_mid``
hold the same values), the solver record is the three sub-steps' Newton iterations and
their largest residual, the joint impulses NaN (three sub-steps have three). A run starts
from the scene's velocities at t0 (or a stored knot, ``--from``). Open-loop inputs are
stepped by the core a block at a time; a PD controller reads the knot state once per step
(its input is held over the step, all three sub-steps).

Not supported, each with a clear error: contacts, joint limits, dampers (the negative
sub-step is the reversed positive one, exact only for forces that do not depend on
velocity), rotor inertia (armature), external forces, per-step gradients.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import InputError
from dojo_cli.model.compiled import model_input
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.controller import Controller
from dojo_cli.simulation.run import RunSummary, RunWriter, StepBlock, _is_open_loop, _open_loop_inputs, step_blocks
from dojo_cli.simulation.step import core_options
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions

# The storage attribute `integrator` of a variational4 run.
VARIATIONAL4_INTEGRATOR = "variational4"


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
    for j, joint in enumerate(mech.joints):
        if np.any(mech.damper[mech.joint_free_range[j]]):
            out.append(f"joints.{j}.damper: joint {joint.name!r}: dampers are not supported by the variational4 "
                       "integrator (its negative sub-step is the reversed step, exact only for forces that do not "
                       "depend on velocity; use integrator: variational)")
    if getattr(mech, "has_armature", False):
        out.append("armature: rotor inertia is not supported by the variational4 integrator")
    if external:
        out.append("external forces are not supported by the variational4 integrator")
    if gradients:
        out.append("--gradients: per-step gradients are the variational integrator's (not variational4's)")
    return out


def run_variational4(
    mech: Mechanism,
    steps: int,
    writer: RunWriter,
    *,
    opts: SolverOptions | None = None,
    controller: Controller | None = None,
    progress: Callable[[int], None] | None = None,
    knot: np.ndarray | None = None,
    start_step: int = 0,
    angles: np.ndarray | None = None,
) -> RunSummary:
    """Run ``steps`` steps of h = the scene's timestep into ``writer`` (exact knots).

    Args:
        mech: the mechanism (its scene's initial state at t0 unless knot).
        steps: number of steps.
        writer: receives the initial state, then blocks of steps (simulation.run.RunWriter).
        opts: solver options of the sub-steps (default: Dojo's).
        controller: the scene's input law (None: zero inputs).
        progress: called with the number of steps completed after each block.
        knot: (13 nb,) initial maximal state with its velocities at t0 (a stored run's knot).
        start_step: the initial state's step number: steps are numbered on from it.
        angles: (nf,) the initial state's minimal/q unwrapped through turns (a stored run's).

    Raises:
        InputError: the scene has something variational4 cannot run (variational4_problems).
    """
    problems = variational4_problems(mech)
    if problems:
        raise InputError("; ".join(problems))
    try:
        v4 = _core.Variational4(model_input(mech))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    options = core_options(opts or DOJO_DEFAULTS)
    h, nb, nf, nu = mech.timestep, mech.nb, mech.nf, mech.nu
    z_t0 = knot if knot is not None else getattr(mech, "initial_t0", None)
    if z_t0 is None:  # initial_velocity: midpoint: the scene's velocities, taken at t0
        z_t0 = mech.initial
    z_t0 = np.ascontiguousarray(z_t0, dtype=float).reshape(13 * nb)
    u0 = None
    if controller is not None:
        u0 = np.ascontiguousarray(controller(mech, start_step, z_t0), dtype=float).reshape(nu)
    z, status = v4.initial(z_t0, u0)
    if status != 0:
        raise InputError("the initial state (velocities at t0) has no variational4 midpoint state (not finite?)")
    summary = RunSummary()
    started = time.perf_counter()
    mq0 = np.asarray(_core.unwrapped_coordinates(mech.core, z_t0.reshape(1, -1))).reshape(nf)
    if angles is not None:
        mq0 = np.asarray(angles, dtype=float).reshape(nf)
    before = (z_t0, mq0)
    s0 = z_t0.reshape(nb, 13)
    writer.write_initial(start_step * h, s0[:, 0:3], s0[:, 6:10], s0[:, 3:6], s0[:, 10:13], mq0, np.zeros(nf))
    fast = _is_open_loop(controller)
    knot_state = z_t0
    for k_run, n in step_blocks(steps, fast):
        k = start_step + k_run
        if fast:
            inputs = _open_loop_inputs(mech, controller, k, n)
        else:
            inputs = np.asarray(controller(mech, k, knot_state), dtype=float).reshape(1, nu)
        flat = None if inputs is None or nu == 0 else np.ascontiguousarray(np.asarray(inputs, dtype=float)[:n].reshape(-1))
        z, knots, codes, iterations, residual = v4.run(z, n, flat, options)
        done = len(codes)
        if done:
            blk = _block(mech, k, h, np.asarray(knots), inputs, np.asarray(codes), np.asarray(iterations),
                         np.asarray(residual), before)
            writer.write_block(mech, blk)
            summary.add(blk)
            before = (np.ascontiguousarray(knots[done - 1]), blk.minimal_q[-1])
            knot_state = np.ascontiguousarray(knots[done - 1])
        if done < n or (done and codes[-1] != 0):
            break  # a sub-step failed: the run stops at its state (the record says which)
        if progress is not None:
            progress(k_run + n)
    summary.wall = time.perf_counter() - started
    return summary


def _block(mech: Mechanism, k0: int, h: float, z: np.ndarray, inputs, codes, iterations, residual, before) -> StepBlock:
    n = len(codes)
    mq = np.asarray(_core.unwrapped_coordinates(mech.core, np.ascontiguousarray(z[:n]), before[0],
                                                np.ascontiguousarray(before[1], dtype=float))).reshape(n, mech.nf)
    nc = mech.nc
    return StepBlock(
        k0=k0,
        time=(k0 + 1 + np.arange(n)) * h,
        z=z[:n],
        minimal_q=mq,
        minimal_v=np.zeros((n, mech.nf)),  # the knot writer computes them (simulation.knots, knot_identity)
        inputs=np.zeros((n, mech.nu)) if inputs is None else np.asarray(inputs, dtype=float)[:n].reshape(n, mech.nu),
        iterations=iterations.astype(np.int64),
        residual=residual.astype(float),
        status_code=codes.astype(np.int64),
        complementarity=np.zeros(n),
        impulses=np.full((n, mech.nl), np.nan),
        contact_distance=np.zeros((n, nc)),
        contact_normal_impulse=np.zeros((n, nc)),
        contact_friction_impulse=np.zeros((n, nc, 2)),
        contact_slip=np.zeros((n, nc, 2)),
    )
