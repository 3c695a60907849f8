"""The state a run starts from, given velocities at t = 0: the Python face of the
core's initial_midpoint (dojo_cli/core/initial.h; docs/physics.md, "Velocities at t0
and at the knots").

The integrator's state holds midpoint velocities (the velocity over the interval before
a knot, Dojo's layout); a scene's velocities are at t = 0. ``midpoint_state`` finds the
midpoint velocities whose first regular step starts with the momentum of the t = 0
velocities, half of the first step's impulses (gravity, springs, dampers, inputs,
joint and contact impulses) counted over [0, h/2]. The regular step from the result is
then the run's first step, so the API (``dojo.initial_state``), the CLI and storage
agree: a storage file's ``v[0]`` is the velocity at t = 0, to the solver's tolerance.
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import from_core
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.controller import Controller, ExternalForce, external_wrench
from dojo_cli.simulation.step import core_options
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE

# A controller that reads the state (PD) sees the midpoint state: its first input is
# found with the state, alternating the two until the input no longer changes
# (its dependence on the state is O(h) per round).
INPUT_ROUNDS = 8
INPUT_TOLERANCE = 1e-13


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

    Raises:
        InitialStateError: the first step failed, or the condition was not met.
    """
    z_t0 = np.ascontiguousarray(z_t0, dtype=float).reshape(-1)
    options = core_options(opts or DOJO_DEFAULTS)
    f_ext = tau_ext = None
    if external:
        f_ext, tau_ext = external_wrench(mech, list(external), 0.0, z_t0.reshape(mech.nb, 13)[:, 6:10])
        f_ext, tau_ext = np.ascontiguousarray(f_ext, float).reshape(-1), np.ascontiguousarray(tau_ext, float).reshape(-1)
    data = _core.Data(mech.core)
    z, u = z_t0, None
    for _ in range(INPUT_ROUNDS):
        if controller is not None:
            u_new = np.ascontiguousarray(controller(mech, 0, z), dtype=float).reshape(-1)
            if u is not None and np.max(np.abs(u_new - u), initial=0.0) <= INPUT_TOLERANCE * max(1.0, np.max(np.abs(u), initial=0.0)):
                break
            u = u_new
        try:
            z, status, iterations, residual = _core.initial_midpoint(mech.core, data, z_t0, u, f_ext, tau_ext, options)
        except (ValueError, TypeError, RuntimeError) as exc:
            raise from_core(exc, "initial state") from None
        if status != 0:
            what = STATUS_FROM_CODE[status]
            raise InitialStateError(
                f"the velocities at t = 0 give no first step: the solver {what.message} "
                f"(momentum residual {residual:.3e} after {iterations} iterations); "
                "initial_velocity: midpoint takes them as Dojo's midpoint velocities instead"
            )
        if controller is None or type(controller) is Controller:
            break
    return z


__all__ = ["InitialStateError", "midpoint_state"]
