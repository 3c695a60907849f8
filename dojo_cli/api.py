"""The Python API: ``import dojo_cli as dojo`` re-exports these.

Thin functions over the layers below, with scene-aware defaults: a Mechanism
loaded from a scene carries its initial state, solver options, controller,
external forces and number of steps, and these functions use them unless told
otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics import energy as _energy
from dojo_cli.physics.coordinates import maximal_to_minimal as _max_to_min
from dojo_cli.physics.coordinates import minimal_to_maximal as _min_to_max
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec
from dojo_cli.model.parameters import parameter_labels, parameter_values  # noqa: F401 (re-exported)
from dojo_cli.model.parameters import with_parameters as _with_parameters
from dojo_cli.errors import InputError
from dojo_cli.model.controller import Controller, ExternalForce
from dojo_cli.model.trajectory import Trajectory
from dojo_cli.simulation import gradients as _grad
from dojo_cli.simulation import rollout_gradients as _rgrad
from dojo_cli.simulation.integrators import integrator_problems
from dojo_cli.simulation.run import run_scene
from dojo_cli.simulation.trajectory import TrajectoryRecorder
from dojo_cli.simulation.initial import initial_state as _initial_state
from dojo_cli.simulation.step import step as _step
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions


def load_scene(source: str, overrides: Mapping[str, Any] | Sequence[str] | None = None) -> Mechanism:
    """Load a scene file or built-in scene and build its Mechanism.

    Args:
        source: a YAML path or the name of a built-in scene (``dojo scenes``).
        overrides: dotted-path overrides, e.g. ``{"joints.0.spring": 3.0}`` or
            ``["bodies.0.mass=2"]`` (the same as ``--set`` on the command line).

    Raises:
        SceneError: the scene is invalid (every problem with file, line, field).
    """
    spec = load_scene_spec(source, overrides)
    return build_mechanism(spec)


def initial_state(mech: Mechanism, positions=None, velocities=None, opts: SolverOptions | None = None) -> np.ndarray:
    """The scene's initial maximal state (13 nb,), per body [x, v, q, w], in the integrator's
    layout: x and q at t = 0, but v and w are **midpoint** velocities (over [-h, 0], Dojo's
    v15, w15), what ``dojo.step`` starts from; not the velocities at t = 0. A pendulum released
    from rest holds half a step's worth of its acceleration here, alpha h / 2 in size (omega
    0.052 rad/s for the built-in pendulum at h = 0.01), while its velocity at t = 0 is 0.

    The knot (t = 0) velocities are ``dojo.simulate(mech, steps=1).v[0]`` and ``.omega[0]`` (a
    trajectory's ``v``, ``omega`` are at the knots t_k, its ``v_mid``, ``omega_mid`` the
    midpoint ones), equal to the scene's given initial velocities to the solver's tolerance
    (docs/physics.md, "Velocities at t0 and at the knots").

    A new initial state without reloading the scene: ``positions`` (per body [x, y, z, qw,
    qx, qy, qz], world, body to world) and ``velocities`` (per body at t = 0, [vx, vy, vz]
    world and [wx, wy, wz] body frame), each an (nb, 7) / (nb, 6) array or a mapping
    {body name: values}; bodies left out keep the scene's. The velocities are turned into
    the integrator's midpoint ones exactly as a scene file's are (the first-step solve,
    simulation.initial.state_at_t0, with ``opts``, default the scene's), so
    ``dojo.simulate(mech, z0=dojo.initial_state(mech, positions=..., velocities=...))`` is
    the run of a scene file written with those values. Bodies joined by joints must be
    given consistent poses (a free body, a floating base: any).

    Loading a scene does not solve: the midpoint state is solved here (or when a run
    starts) the first time it is asked for (simulation.initial.initial_state).

    Raises:
        SolverError: the velocities at t = 0 give no first step at the scene's timestep
            (naming the scene's fields they came from).
    """
    if positions is not None or velocities is not None:
        from dojo_cli.simulation.initial import state_at_t0

        return state_at_t0(mech, positions, velocities, opts or default_options(mech))[0]
    return _initial_state(mech)


def with_parameters(mech: Mechanism, labels, values) -> Mechanism:
    """A new Mechanism equal to ``mech`` but for the labelled parameters set to ``values``
    (model.parameters.with_parameters). The run set-up carries over, the initial state
    included: a scene whose velocities are given at t = 0 keeps the midpoint state solved for
    the original parameters (``initial_state(mech)``, solved here if it was not yet), so a
    run of the new mechanism starts from the same state as one of the original.
    """
    out = _with_parameters(mech, labels, values)
    if mech.initial is None and mech.initial_t0 is not None:
        out = out.with_run_setup(initial=_initial_state(mech), initial_t0=mech.initial_t0)
    return out


def default_options(mech: Mechanism) -> SolverOptions:
    """The scene's solver options (Dojo's defaults for a mechanism built in Python)."""
    return getattr(mech, "default_options", None) or DOJO_DEFAULTS


def step(mech: Mechanism, z, u=None, opts: SolverOptions | None = None, f_ext=None, tau_ext=None) -> np.ndarray:
    """One step: the next maximal state [x3, v25, q3, w25] per body, (13 nb,).

    Args:
        mech: the mechanism.
        z: (13 nb,) current maximal state.
        u: (nu,) joint inputs in joint order (N, N m), held over the step; None = zero.
        opts: solver options (default: the scene's).
        f_ext: (nb,3) external forces at the centres of mass, world frame.
        tau_ext: (nb,3) external torques, body frame.
    """
    return _step(mech, z, u, opts or default_options(mech), f_ext, tau_ext)


def simulate(
    mech: Mechanism,
    steps: int | None = None,
    z0=None,
    controller: Controller | None = None,
    opts: SolverOptions | None = None,
    abort_on_failure: bool = False,
    from_run: str | os.PathLike | None = None,
    index: int = -1,
    external: Sequence[ExternalForce] | None = None,
) -> Trajectory:
    """Simulate and return the storage datasets as arrays.

    Args:
        mech: the mechanism.
        steps: number of steps (default: the scene's steps or duration).
        z0: (13 nb,) initial state (default: the scene's).
        controller: input law (default: the scene's controller).
        opts: solver options (default: the scene's).
        abort_on_failure: raise SolverError at the first failed step.
        from_run, index: go on from state ``index`` (negative: from the end) of a stored
            run, as ``dojo simulate --from RUN --index K`` (docs/storage.md, "Continuing a
            run"): the variational integrator starts from the knot's midpoint state with the
            run's warm start and unwrapped angles, so the steps are the run's own next ones
            to the solver's tolerance; rk4 from the knot. Steps and times are numbered on
            from the knot. The run's status (killed, interrupted, failed), another scene's
            name or another timestep are warned about (``UserWarning``); a run of other
            bodies, or a knot time that is not a whole number of timesteps, is an InputError.
            Not with z0.
        external: external forces (model.controller.ExternalForce; default: the scene's).

    A scene with ``integrator: rk4`` is run by the rk4 integrator (simulation.integrators.Rk4)
    from its own initial state (z0 and opts are the variational integrator's: not accepted);
    the trajectory's v, omega, v_mid, omega_mid are then the velocities at t_k.

    The run is the one run driver's (simulation.run.run_scene), the one ``dojo simulate``
    writes to a file, into memory (simulation.trajectory.TrajectoryRecorder). A variational
    step that fails after all its restarts is solved again as substeps of h/n (docs/physics.md
    "Substeps"): its status is ``success`` and ``Trajectory.substeps`` holds its count.
    """
    if steps is None:
        steps = getattr(mech, "default_steps", None)
        if steps is None:
            raise ValueError("steps not given and the scene sets neither steps nor duration")
    start = None
    if from_run is not None:
        import warnings
        from pathlib import Path

        from dojo_cli.io.state_files import stored_start

        if z0 is not None:
            raise InputError("simulate: give z0 or from_run, not both")
        start = stored_start(Path(from_run), int(index), mech, mech.name,
                             lambda line: warnings.warn(line, stacklevel=4), whole_steps=True)
    problems = integrator_problems(mech, mech.integrator, mech.external if external is None else external)
    if mech.integrator == "rk4" and (z0 is not None or opts is not None):
        problems.append("z0 and opts belong to the variational integrator (rk4 starts from the scene's "
                        "state or from_run; minimal.simulate takes any x0)")
    if problems:
        raise InputError(f"scene {mech.name!r} (integrator: {mech.integrator}): " + "; ".join(problems))
    recorder = TrajectoryRecorder(int(steps))
    run_scene(mech, int(steps), recorder, z0=z0, controller=controller, opts=opts or default_options(mech),
              external=external, abort_on_failure=abort_on_failure, start=start)
    return recorder.trajectory(mech)


def maximal_to_minimal(mech: Mechanism, z) -> np.ndarray:
    """Minimal state (2 nf,), per joint [coordinates; velocities], of a maximal state."""
    return _max_to_min(mech, z)


def minimal_to_maximal(mech: Mechanism, y) -> np.ndarray:
    """Maximal state (13 nb,) of a minimal state (2 nf,)."""
    return _min_to_max(mech, y)


def input_dimensions(mech: Mechanism) -> list[int]:
    """Inputs per joint, in joint order."""
    return mech.input_dimensions()


def maximal_dimension(mech: Mechanism, attitude_jacobian: bool = False) -> int:
    """13 nb (or 12 nb in tangent coordinates)."""
    return mech.maximal_dimension(attitude_jacobian)


def minimal_dimension(mech: Mechanism) -> int:
    """2 x free coordinates."""
    return mech.minimal_dimension()


def root_to_leaves_ordering(mech: Mechanism, exclude_origin: bool = True, exclude_loop_joints: bool = True) -> list[str]:
    """Node names from the origin to the leaves (Dojo's flags; Mechanism.root_to_leaves_ordering)."""
    return mech.root_to_leaves_ordering(exclude_origin=exclude_origin, exclude_loop_joints=exclude_loop_joints)


def get_body(mech: Mechanism, name):
    """A body by name or index."""
    return mech.get_body(name)


def get_joint(mech: Mechanism, name):
    """A joint by name or index."""
    return mech.get_joint(name)


def get_node(mech: Mechanism, name):
    """A node by name: "origin", a body, a joint or a contact (Dojo's get_node)."""
    return mech.get_node(name)


def get_contact(mech: Mechanism, name):
    """A contact by name or index (Dojo's get_contact)."""
    return mech.get_contact(name)


def mechanics(mech: Mechanism, traj: Trajectory) -> _energy.Mechanics:
    """Energy and momentum at every knot t_0..t_T of a trajectory (T+1 values for T steps).

    From the knot velocities ``traj.v``, ``traj.omega`` (p = m v, L = J omega; docs/physics.md,
    "Energy and momentum"), the same states and numbers as ``dojo energy`` of the run's file.
    For Dojo's momentum from the midpoint velocities (states 0..T-1 only: the last state has no
    outgoing step) use ``physics.energy.mechanics(mech, traj.time, traj.x, traj.q, traj.v_mid,
    traj.omega_mid)``.
    """
    return _energy.knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega)


def kinetic_energy(mech: Mechanism, traj: Trajectory) -> np.ndarray:
    """(T+1,) kinetic energy at the knots t_0..t_T, J (from the knot velocities, see
    ``mechanics``), with the joints' rotor inertia's at the coordinates' rates."""
    return mechanics(mech, traj).kinetic


def potential_energy(mech: Mechanism, traj: Trajectory) -> np.ndarray:
    """(T+1,) gravity plus spring potential energy at the knots t_0..t_T, J."""
    return _energy.potential_energy(mech, traj.x, traj.q)


def mechanical_energy(mech: Mechanism, traj: Trajectory) -> np.ndarray:
    """(T+1,) kinetic plus potential energy at the knots t_0..t_T, J: one value per state,
    as ``dojo energy`` reports (knot energies, not the midpoint-velocity ones of states 0..T-1)."""
    return mechanics(mech, traj).mechanical


def momentum(mech: Mechanism, traj: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """(T+1,3) linear momentum and (T+1,3) angular momentum about the origin at the knots
    t_0..t_T, world frame (from the knot velocities, see ``mechanics``)."""
    me = mechanics(mech, traj)
    return me.linear_momentum, me.angular_momentum


def maximal_gradients(mech: Mechanism, z, u=None, opts: SolverOptions | None = None, kappa: float | None = None):
    """(A, B) of one step from maximal state z: A = dz'/dz (12 nb, 12 nb), B = dz'/du (12 nb, nu).

    Exact derivatives of the solved step by the implicit function theorem, evaluated at
    the state the step starts from; tangent coordinates [x, v, phi, w] per body
    (docs/formats.md). ``kappa``: differentiate on the central path s o gamma = kappa
    instead of where the solver stopped (smoother, biased gradients through contact).
    """
    return _grad.maximal_gradients(mech, z, u, opts or default_options(mech), kappa)


def minimal_gradients(mech: Mechanism, y, u=None, opts: SolverOptions | None = None, kappa: float | None = None):
    """(A_min (2nf, 2nf), B_min (2nf, nu)) of one step from minimal state y."""
    return _grad.minimal_gradients(mech, y, u, opts or default_options(mech), kappa)


def parameter_gradients(
    mech: Mechanism, z, u=None, names=_grad.PARAMETER_KINDS, opts: SolverOptions | None = None, kappa: float | None = None
):
    """(dz'/dtheta (12 nb, p), labels) for parameter kinds ``names`` (mass, inertia, gravity,
    spring, damper, friction, radius, offset, restitution); see dojo_cli.model.parameters for the labels."""
    return _grad.parameter_gradients(mech, z, u, names, opts or default_options(mech), kappa)


def rollout_jvp(
    mech: Mechanism, z0, U, dz0=None, dU=None, dparams=None, params=(), opts: SolverOptions | None = None,
    kappa: float | None = None,
) -> _rgrad.RolloutTangents:
    """Forward mode through a whole rollout: the states z_1 .. z_T of inputs U (T, nu) from z0
    and their tangents (T, 12 nb) along dz0 (12 nb, tangent [x, v, phi, w] per body), dU (T, nu)
    and dparams (the parameters of the kinds ``params``); docs/gradients.md, "Rollouts"."""
    return _rgrad.rollout_jvp(mech, z0, U, dz0, dU, dparams, params, opts or default_options(mech), kappa)


def rollout_vjp(
    mech: Mechanism, z0, U, cotangents, params=(), opts: SolverOptions | None = None, kappa: float | None = None
) -> _rgrad.RolloutCotangents:
    """Reverse mode through a whole rollout: given dL/dz_1 .. dL/dz_T (T, 12 nb, tangent
    coordinates) of a loss of the states the inputs U (T, nu) reach from z0, the gradients
    dL/dz0 (12 nb), dL/dU (T, nu) and dL/dtheta for the parameter kinds ``params``; one
    transposed solve per step (docs/gradients.md, "Rollouts")."""
    return _rgrad.rollout_vjp(mech, z0, U, cotangents, params, opts or default_options(mech), kappa)


def step_gradients(
    mech: Mechanism, z, u=None, opts: SolverOptions | None = None, wrt=("state", "input"), params=(),
    kappa: float | None = None, minimal: bool = False, angles=None, substeps: int = 1, lam=None,
) -> _grad.StepGradients:
    """One step and the derivatives asked for (``wrt``: state, input, params) in one solve.
    ``angles`` (maximal coordinates only): the unwrapped minimal coordinates at z, for
    revolute limits of joints wound past +-pi (docs/physics.md). ``substeps`` n > 1: the
    step solved as n substeps of h/n, as a run solves a step whose full step failed, and the
    derivatives of that composed map (``lam``: the run's warm start; docs/physics.md
    "Substeps"; no ``kappa``)."""
    if substeps > 1:
        if kappa is not None:
            raise ValueError("kappa: the relaxed map of a step solved as substeps is not defined")
        if minimal and angles is not None:
            raise ValueError("angles: with maximal coordinates only")
        return _grad.substep_gradients(mech, z, u, substeps, opts or default_options(mech), wrt=wrt, params=params,
                                       angles=angles, lam=lam, minimal=minimal)
    if minimal:
        if angles is not None:
            raise ValueError("angles: with maximal coordinates only")
        return _grad.minimal_step_gradients(mech, z, u, opts or default_options(mech), wrt=wrt, params=params, kappa=kappa)
    return _grad.step_gradients(mech, z, u, opts or default_options(mech), wrt=wrt, params=params, kappa=kappa, angles=angles)


def optimize(task, progress=None):
    """Optimise a task's inputs (iterative LQR on the exact step gradients; docs/optimize.md).

    Args:
        task: a task file's path (``configs/optimize/cartpole_swingup.yaml``) or a
            ``dojo_cli.optimize.task.Task``.
        progress: called with each iteration's log record (a dict).

    Returns:
        dojo_cli.optimize.ilqr.OptimizeResult: status, the optimal trajectory (``traj``:
        inputs U, maximal states Z, minimal coordinates MQ, MV), feedback gains K, cost,
        violation, gradient, the log; ``result.task`` is the task (for
        ``dojo_cli.optimize.results.write_results``).

    Raises:
        SceneError: the task or its scene is invalid (file, line, field).
    """
    from dojo_cli.optimize.ilqr import solve
    from dojo_cli.optimize.task import Task, load_task

    loaded = task if isinstance(task, Task) else load_task(task)
    result = solve(loaded.problem, loaded.initial_guess, loaded.options, progress)
    result.task = loaded
    return result


def fit(task, progress=None):
    """Fit a scene's parameters to recorded motion (docs/fit.md).

    Args:
        task: a fit file's path (``configs/fit/cube_tosses.yaml``) or a
            ``dojo_cli.fit.task.FitTask``.
        progress: called with each evaluation's log record (a dict).

    Returns:
        dojo_cli.fit.solve.FitResult: status, names, values, standard errors, correlations,
        costs, the fitted mechanism (``mech``), per-recording errors on the training and
        validation recordings; ``result.task`` is the task (for
        ``dojo_cli.fit.results.write_results``).

    Raises:
        SceneError: the fit file, its scene or its data is invalid (file, line, field; a data
            file's problems with its row).
    """
    from dojo_cli.fit.solve import fit as _fit
    from dojo_cli.fit.task import FitTask, load_fit

    loaded = task if isinstance(task, FitTask) else load_fit(task)
    result = _fit(loaded, progress)
    result.task = loaded
    return result
