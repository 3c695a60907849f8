"""The run loop of the rk4 integrator: a scene's steps into a RunWriter (storage file or memory).

``dojo simulate SCENE --integrator rk4`` (or ``integrator: rk4`` in the scene) steps the
scene's minimal-coordinate model with the core's Munthe-Kaas RK4 (core/rk4.h), the
scene's timestep as the step, and writes the same storage datasets as the variational
integrator: every body's x, q, v, omega at t_k from the core's forward kinematics of the
minimal state (exact knot velocities, so ``v_mid``, ``omega_mid`` hold the same values),
Dojo's minimal coordinates, the inputs; the solver record says ``success`` with 0
iterations and the joint impulses are NaN (RK4 has none). Open-loop runs (no controller,
a constant or a scheduled one) are stepped by the core a block at a time; a PD controller
reads the state once per step (its input is held over the step).

Not supported under rk4, each with a clear error: contacts (no soft contact model yet),
joint limits, external forces, springs or dampers on loop-closing joints, per-step gradients.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import InputError, SolverError
from dojo_cli.minimal.model import build_model
from dojo_cli.minimal.simulate import Rk4, normalize_state
from dojo_cli.minimal.states import init_state
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.controller import Controller
# the storage attribute `integrator` of each run, defined with the run loop (every run imports it)
from dojo_cli.simulation.run import RK4_INTEGRATOR, VARIATIONAL_INTEGRATOR  # noqa: F401
from dojo_cli.simulation.run import (
    RunSummary, RunWriter, StepBlock, _is_open_loop, _open_loop_inputs, step_blocks,
)


def rk4_problems(mech: Mechanism, external=(), gradients=()) -> list[str]:
    """What in a scene the rk4 integrator cannot run, one message each (empty: runnable)."""
    out = []
    for i, c in enumerate(mech.contacts):
        out.append(f"contacts.{i}: contact {c.name!r}: the rk4 integrator has no contact model (use integrator: variational)")
    limited = sorted({int(mech.free_joint[f]) for f in mech.limit_free})
    for j in limited:
        out.append(f"joints.{j}.limits: joint {mech.joints[j].name!r}: joint limits are not supported by the rk4 integrator")
    for j in mech.loop_joints:
        cols = mech.joint_free_range[j]
        if np.any(mech.spring[cols]) or np.any(mech.damper[cols]):
            out.append(f"joints.{j}: joint {mech.joints[j].name!r}: springs and dampers on a loop-closing joint are not "
                       "supported by the rk4 integrator")
    for i, a in enumerate(mech.actuators):
        if a.body >= 0:
            out.append(f"actuators.{i}: actuator {a.name!r}: body actuators are not supported by the rk4 integrator "
                       "(use integrator: variational)")
    if external:
        out.append("external forces are not supported by the rk4 integrator")
    if gradients:
        out.append("--gradients: per-step gradients are the variational integrator's (not rk4's)")
    return out


def knot_identity(mech: Mechanism, x, q, v_mid, omega_mid, extrapolate_last: bool = False):
    """The knot velocities of rk4 states (simulation.knots.KnotRows, exact): the velocities
    handed in are already those at t_k (v, omega as given; minimal/v their exact image
    J(q) [v; omega])."""
    n = len(x)
    v, omega = np.asarray(v_mid, float)[:n], np.asarray(omega_mid, float)[:n]
    z = np.concatenate([np.reshape(x, (n, mech.nb, 3)), v, np.reshape(q, (n, mech.nb, 4)), omega], axis=2)
    rates = _core.instantaneous_minimal_velocities(mech.core, np.ascontiguousarray(z.reshape(n, 13 * mech.nb)))
    return v, omega, np.asarray(rates).reshape(n, mech.nf)


def run_rk4(
    mech: Mechanism,
    steps: int,
    writer: RunWriter,
    *,
    x0: np.ndarray | None = None,
    controller: Controller | None = None,
    stabilization_gains="default",
    progress: Callable[[int], None] | None = None,
    knot: np.ndarray | None = None,
    start_step: int = 0,
    angles: np.ndarray | None = None,
) -> RunSummary:
    """Run ``steps`` RK4 steps of the scene's timestep into ``writer``.

    Args:
        mech: the mechanism (its scene's initial state unless x0).
        steps: number of steps.
        writer: receives the initial state, then blocks of steps (simulation.run.RunWriter).
        x0: (nx,) initial minimal state (default: ``minimal.init_state``).
        controller: the scene's input law (None: zero inputs).
        stabilization_gains: loop joints' Baumgarte gains (minimal.simulate).
        progress: called with the number of steps completed after each block.
        knot: (13 nb,) initial maximal state with its velocities at t0 (a stored run's
            knot: storage x, v, q, omega), instead of x0.
        start_step: the initial state's step number (simulation.run.run): steps are
            numbered on from it, at t = step h.
        angles: (nf,) the initial state's minimal/q unwrapped through turns (a stored run's),
            which the stored minimal/q continues from.

    Raises:
        InputError: the scene has something rk4 cannot run (rk4_problems).
        SolverError: the state stopped being finite (the steps before it are written).
    """
    problems = rk4_problems(mech)
    if problems:
        raise InputError("; ".join(problems))
    model = build_model(mech)
    integ = Rk4(model, stabilization_gains)
    if knot is not None:
        x0 = model.state_from_maximal(np.asarray(knot, dtype=float))
    x = normalize_state(model, init_state(model) if x0 is None else x0)
    q = np.ascontiguousarray(x[: model.nq])
    v = np.ascontiguousarray(x[model.nq:])
    h = mech.timestep
    nb, nf = mech.nb, mech.nf
    input_map = mech.input_map()  # (nf, nu)
    summary = RunSummary()
    started = time.perf_counter()
    z0 = integ.bodies(x)
    # minimal/q unwrapped through turns as the variational runs store it (docs/storage.md),
    # each block chained on the state before it
    z0_flat = np.ascontiguousarray(z0.reshape(1, 13 * nb))
    mq0 = np.asarray(_core.unwrapped_coordinates(mech.core, z0_flat)).reshape(nf)
    if angles is not None:
        mq0 = np.asarray(angles, dtype=float).reshape(nf)
    before = (z0_flat.reshape(-1), mq0)
    writer.write_initial(start_step * h, z0[:, 0:3], z0[:, 6:10], z0[:, 3:6], z0[:, 10:13],
                         mq0, np.zeros(nf))
    fast = _is_open_loop(controller)
    for k_run, n in step_blocks(steps, fast):
        k = start_step + k_run
        if fast:
            inputs = _open_loop_inputs(mech, controller, k, n)
        else:
            zk = integ.bodies(np.concatenate([q, v])).reshape(-1)
            inputs = np.asarray(controller(mech, k, zk), dtype=float).reshape(1, mech.nu)
        out_q = np.zeros((n, model.nq))
        out_v = np.zeros((n, model.nv))
        out_z = np.zeros((n, 13 * nb))
        # the core's rk4 takes one input per free coordinate: joint actuators map onto them
        # through their gains (input_map); body actuators are refused by rk4_problems
        free_inputs = None if inputs is None else np.ascontiguousarray(np.asarray(inputs, dtype=float) @ input_map.T)
        done = integ.run(q, v, k * h, h, n, out_q, out_v, out_z, row0=0, inputs=free_inputs)
        good = done
        if not (np.all(np.isfinite(out_q[:done])) and np.all(np.isfinite(out_v[:done]))):
            good = int(np.argmax(~(np.all(np.isfinite(out_q[:done]), axis=1) & np.all(np.isfinite(out_v[:done]), axis=1))))
        if good:
            blk = _block(mech, k, h, out_z[:good], inputs, good, before)
            writer.write_block(mech, blk)
            before = (np.ascontiguousarray(out_z[good - 1]), blk.minimal_q[-1])
            summary.steps += good
        if good < n:
            raise SolverError(f"step {k + good} (t = {(k + good) * h:.6g} s): the rk4 state is no longer finite "
                              f"(the timestep {h:g} s is too large for this scene?)")
        if progress is not None:
            progress(k_run + n)
    summary.iteration_counts = np.array([summary.steps], dtype=np.int64)
    summary.wall = time.perf_counter() - started
    return summary


def _block(mech: Mechanism, k0: int, h: float, z: np.ndarray, inputs, n: int, before) -> StepBlock:
    mq = np.asarray(_core.unwrapped_coordinates(mech.core, np.ascontiguousarray(z[:n]), before[0],
                                                np.ascontiguousarray(before[1], dtype=float))).reshape(n, mech.nf)
    nc = mech.nc
    return StepBlock(
        k0=k0,
        time=(k0 + 1 + np.arange(n)) * h,
        z=z,
        minimal_q=mq,
        minimal_v=np.zeros((n, mech.nf)),  # a knot file's writer front computes them (simulation.knots, knot_identity)
        inputs=np.zeros((n, mech.nu)) if inputs is None else np.asarray(inputs, dtype=float)[:n].reshape(n, mech.nu),
        iterations=np.zeros(n, dtype=np.int64),
        residual=np.zeros(n),
        status_code=np.zeros(n, dtype=np.int64),
        complementarity=np.zeros(n),
        impulses=np.full((n, mech.nl), np.nan),
        contact_distance=np.zeros((n, nc)),
        contact_normal_impulse=np.zeros((n, nc)),
        contact_friction_impulse=np.zeros((n, nc, 2)),
        contact_slip=np.zeros((n, nc, 2)),
    )
