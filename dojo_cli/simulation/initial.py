"""The state a run starts from, given velocities at t = 0: the Python face of the
core's initial_midpoint (dojo_cli/core/maximal/initial.h; docs/physics.md, "Velocities at t0
and at the knots").

The integrator's state holds midpoint velocities (the velocity over the interval before
a knot, Dojo's layout); a scene's velocities are at t = 0. ``midpoint_state`` finds the
midpoint velocities whose first regular step starts with the momentum of the t = 0
velocities, half of the first step's impulses (gravity, springs, dampers, inputs,
joint and contact impulses) counted over [0, h/2]. The regular step from the result is
then the run's first step, so the API (``dojo.initial_state``), the CLI and storage
agree: a storage file's ``v[0]`` is the velocity at t = 0, to the solver's tolerance.

``initial_state`` is where a run (or ``dojo.initial_state``) gets its state: the scene
builder never solves, so a scene whose velocities are given at t = 0 has its midpoint
state found here, the first time it is asked for, and a failure is the run's error
(SolverError, naming the scene's fields the state came from).
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SolverError, from_core
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.controller import Controller, ExternalForce, external_wrench
from dojo_cli.physics.coordinates import minimal_to_maximal
from dojo_cli.simulation.step import core_options, refuse_armature
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverStatus

# A controller that reads the state (PD) sees the midpoint state: its first input is
# found with the state, alternating the two until the input no longer changes
# (its dependence on the state is O(h) per round).
INPUT_ROUNDS = 8
INPUT_TOLERANCE = 1e-13
# Equality tolerance of the steps solved to find the state (at most the run's rtol).
INNER_RTOL = 1e-10
# A solve that stalls (the steps are not accurate enough for the solver's rtol) is kept
# when its momentum residual is below this fraction of the momenta at hand (the larger of
# the initial momenta and one step's weight m |g| h).
STALL_TOLERANCE = 1e-3
# A solve that stalls above that is solved again with the steps' complementarity to this
# (btol). Where a constraint is weakly active (a joint on its limit carrying almost no load,
# a foot just touching: dm_control's walker starts with its knees on their upper bound and
# its feet on the floor), the step's solution is only accurate to about the square root of
# its complementarity, so F(y) jumps by that much between neighbouring y and Newton stalls
# there: at the run's btol = 1e-4 the walker's momentum residual stays at 4.9e-4 N s (F
# changes by 3e-4 N s for a 1e-8 change of y); at 1e-12 it converges to 4.5e-14 N s in 7
# iterations. Only a stalled solve is redone, so every state that solved before is unchanged.
INNER_BTOL = 1e-12
# A given orientation is a unit quaternion to this (it is then renormalised), as a scene's.
UNIT_QUATERNION_TOLERANCE = 1e-6


class InitialStateError(ValueError):
    """The velocities at t = 0 could not be turned into the first midpoint velocities."""


def midpoint_state(
    mech: Mechanism,
    z_t0: np.ndarray,
    controller: Controller | None = None,
    external: list[ExternalForce] | tuple = (),
    opts: SolverOptions | None = None,
) -> np.ndarray:
    """The state [x, v15, q, w15] per body (13 nb,) whose first step starts at z_t0.

    Args:
        mech: the mechanism.
        z_t0: (13 nb,) per body [x, v(0), q, w(0)]: velocities at t = 0 (world linear,
            body angular).
        controller: the run's input law (its input of step 0 is used; None: zero).
        external: the run's external forces (at t = 0).
        opts: solver options of the run (the condition holds to their rtol).

    When the first step does not solve at all (the solver fails from the velocities at
    t0), the state holds those velocities as midpoint ones: the run's first step then
    fails the same way and reports it.

    Raises:
        InitialStateError: the first steps solved but the condition was not met.
    """
    z_t0 = np.ascontiguousarray(z_t0, dtype=float).reshape(-1)
    opts = opts or DOJO_DEFAULTS
    # the steps of the solve as accurate as a step sensibly gets: the state is computed
    # once, and the run's first step starts from it whatever its own tolerance
    options = core_options(opts.replace(rtol=min(opts.rtol, INNER_RTOL)))
    f_ext = tau_ext = None
    if external:
        f_ext, tau_ext = external_wrench(mech, list(external), 0.0, z_t0.reshape(mech.nb, 13)[:, 6:10])
        f_ext, tau_ext = np.ascontiguousarray(f_ext, float).reshape(-1), np.ascontiguousarray(tau_ext, float).reshape(-1)
    refuse_armature(mech)
    data = _core.Data(mech.core)
    stall = STALL_TOLERANCE * _momentum_scale(mech, z_t0)

    def solve(core_opts, u):
        try:
            return _core.initial_midpoint(mech.core, data, z_t0, u, f_ext, tau_ext, core_opts)
        except (ValueError, TypeError, RuntimeError) as exc:
            raise from_core(exc, "initial state") from None

    z, u = z_t0, None
    for _ in range(INPUT_ROUNDS):
        if controller is not None:
            u_new = np.ascontiguousarray(controller(mech, 0, z), dtype=float).reshape(-1)
            if u is not None and np.max(np.abs(u_new - u), initial=0.0) <= INPUT_TOLERANCE * max(1.0, np.max(np.abs(u), initial=0.0)):
                break
            u = u_new
        z, status, iterations, residual = solve(options, u)
        if status != 0 and iterations == 0:
            # the first step itself does not solve from the velocities at t0 (too few
            # iterations, a stiff scene): the run's first step will fail the same way and
            # report it; start from those velocities rather than refuse the scene
            return np.asarray(z, dtype=float)
        if status != 0 and residual > stall and opts.btol > INNER_BTOL:
            # stalled above the steps' accuracy at the run's btol: again with the steps'
            # complementarity solved tightly (INNER_BTOL), kept if it does better
            tight = solve(core_options(opts.replace(rtol=min(opts.rtol, INNER_RTOL), btol=INNER_BTOL)), u)
            if (tight[1] == 0 or tight[2] > 0) and tight[3] < residual:
                z, status, iterations, residual = tight
        if status != 0 and residual <= stall:
            # stalled at the level of the steps' own accuracy (contacts: the interior
            # point's relaxation): the condition holds far better than the O(h) of
            # Dojo's convention, and the run's first step is no more accurate itself
            status = 0
        if status != 0:
            what = STATUS_FROM_CODE[status]
            cause = (f"the solve stalled after {iterations} iterations at momentum residual {residual:.3e} N s "
                     f"(above {stall:.3e}: the first step's solution changes by about that much between neighbouring "
                     "velocities)" if what is SolverStatus.LINE_SEARCH_FAILURE else
                     f"the solver {what.message} (momentum residual {residual:.3e} after {iterations} iterations)")
            raise InitialStateError(
                f"the velocities at t = 0 give no first step: {cause}; "
                "initial_velocity: midpoint takes them as Dojo's midpoint velocities instead"
            )
        if controller is None or type(controller) is Controller:
            break
    return z


def initial_state(mech: Mechanism) -> np.ndarray:
    """The scene's initial maximal state (13 nb,) in the integrator's layout [x, v15, q, w15]
    per body: the built ``initial`` when the scene gives it without a solve, else the
    midpoint state of ``initial_t0`` (``midpoint_state`` with the scene's controller,
    external forces and solver options), solved once per mechanism and kept on it; a
    mechanism built in Python without an initial state starts at zero minimal coordinates.

    Raises:
        SolverError: the velocities at t = 0 give no first step at the scene's timestep,
            naming the scene's fields they came from (file, line; ``--set`` when an
            override set them).
    """
    if mech.initial is not None:
        return np.array(mech.initial, dtype=float)
    if mech.initial_t0 is None:
        return minimal_to_maximal(mech, np.zeros(mech.minimal_dimension()))
    cached = mech.__dict__.get("_initial_state")  # (with_run_setup drops it with the set-up it came from)
    if cached is None:
        opts = mech.default_options or DOJO_DEFAULTS
        try:
            cached = midpoint_state(mech, mech.initial_t0, mech.controller, mech.external, opts)
        except InitialStateError as exc:
            message = _with_step(mech, mech.initial_t0, str(exc))
            source = mech.source
            if source is None:
                raise SolverError(f"mechanism {mech.name!r}: initial state: {message}") from None
            raise SolverError(str(source.derived_problem(list(mech.initial_sources or ("timestep",)), message))) from None
        cached.flags.writeable = False
        mech.__dict__["_initial_state"] = cached
    return np.array(cached, dtype=float)


def _with_step(mech: Mechanism, z: np.ndarray, message: str) -> str:
    """An initial-state problem with the step it was solved at and how far the fastest body
    turns and moves in it (angular velocity in the body frame; its norm is the rate)."""
    h = float(mech.timestep)
    state = np.asarray(z, dtype=float).reshape(mech.nb, 13)
    turn = float(np.max(np.linalg.norm(state[:, 10:13], axis=1))) * h
    move = float(np.max(np.linalg.norm(state[:, 3:6], axis=1))) * h
    return (f"at timestep {h:g} s (the fastest body turns {turn:.3g} rad and moves {move:.3g} m in one step), "
            f"{message}, or take a smaller timestep")


def _momentum_scale(mech: Mechanism, z_t0: np.ndarray) -> float:
    """The largest of the bodies' momenta at t0 (N s, N m s) and one step's weight impulse."""
    s = z_t0.reshape(mech.nb, 13)
    g = float(np.linalg.norm(mech.gravity)) * mech.timestep
    scale = 0.0
    for b, body in enumerate(mech.bodies):
        angular = np.asarray(body.inertia, dtype=float) @ s[b, 10:13]
        scale = max(scale, body.mass * float(np.max(np.abs(s[b, 3:6]))), float(np.max(np.abs(angular))), body.mass * g)
    return scale


def state_at_t0(
    mech: Mechanism,
    positions=None,
    velocities=None,
    opts: SolverOptions | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A loaded scene's initial state with new body poses and velocities at t = 0.

    Args:
        mech: the mechanism (a scene's: its t = 0 state, controller and forces are used).
        positions: new poses, (nb, 7) per body [x, y, z, qw, qx, qy, qz] (world, body to
            world), or a mapping {body name: (7,)}; bodies left out keep the scene's.
        velocities: new velocities at t = 0, (nb, 6) per body [vx, vy, vz] (world) and
            [wx, wy, wz] (body frame), or a mapping {body name: (6,)}; bodies left out keep
            the scene's.
        opts: solver options of the first-step solve (default Dojo's).

    Returns:
        (z, z_t0): the integrator's state (13 nb,) per body [x, v15, q, w15] (midpoint
        velocities, what a run starts from; midpoint_state) and the same pose with the
        velocities at t = 0. A scene with ``initial_velocity: midpoint`` takes the
        velocities as midpoint ones (z = z_t0), as its own initial values are.

    Raises:
        ValueError: a wrong shape, an unknown body, a quaternion that is not unit length.
        InitialStateError: the velocities give no first step.
    """
    base = getattr(mech, "initial_t0", None)
    midpoint = base is None
    if base is None:
        base = getattr(mech, "initial", None)
    z = np.array(base if base is not None else np.zeros(13 * mech.nb), dtype=float).reshape(mech.nb, 13)
    for values, size, parts in ((positions, 7, ((0, 3, 0), (6, 10, 3))), (velocities, 6, ((3, 6, 0), (10, 13, 3)))):
        for b, row in _body_rows(mech, values, size).items():
            for start, stop, at in parts:
                z[b, start:stop] = row[at:at + stop - start]
    norms = np.linalg.norm(z[:, 6:10], axis=1)
    bad = np.nonzero(np.abs(norms - 1.0) > UNIT_QUATERNION_TOLERANCE)[0]
    if len(bad):
        b = int(bad[0])
        raise ValueError(f"positions: body {mech.bodies[b].name!r}: orientation has norm {norms[b]:.6g}, "
                         "not 1 ([qw, qx, qy, qz], scalar first)")
    z[:, 6:10] /= norms[:, None]
    z_t0 = z.reshape(-1)
    if midpoint:
        return z_t0.copy(), z_t0
    z_mid = midpoint_state(mech, z_t0, getattr(mech, "controller", None), getattr(mech, "external", None) or (), opts)
    return z_mid, z_t0


def _body_rows(mech: Mechanism, values, size: int) -> dict[int, np.ndarray]:
    """{body index: (size,) row} of per-body values given as (nb, size) or {name: (size,)}."""
    if values is None:
        return {}
    names = [b.name for b in mech.bodies]
    if isinstance(values, dict):
        out = {}
        for name, row in values.items():
            if name not in names:
                raise ValueError(f"unknown body {name!r} (bodies: {', '.join(names)})")
            row = np.asarray(row, dtype=float).reshape(-1)
            if row.shape != (size,):
                raise ValueError(f"body {name!r}: expected {size} numbers, got {row.size}")
            out[names.index(name)] = row
        return out
    arr = np.asarray(values, dtype=float)
    if arr.shape not in ((mech.nb, size), (mech.nb * size,)):
        raise ValueError(f"expected ({mech.nb}, {size}) values (one row per body), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite")
    return dict(enumerate(arr.reshape(mech.nb, size)))


__all__ = ["InitialStateError", "initial_state", "midpoint_state", "state_at_t0"]
