"""JAX bridge: a step and a rollout of the core as ``jax.custom_vjp`` functions.

``import dojo_cli.jax as djax`` (the optional extra ``pip install 'dojo_cli[jax]'``)::

    f = djax.rollout(mech)                 # f(z0 (13 nb,), U (T, nu)) -> Z (T, 13 nb)
    loss = lambda z0, U: jnp.sum(f(z0, U)[-1, :3] ** 2)
    g_z0, g_U = jax.grad(loss, argnums=(0, 1))(z0, U)

The values come from the C++ core (``jax.pure_callback``: the core runs on the host, once
per call, outside any trace); the reverse mode is ``dojo.rollout_vjp``'s (one transposed
solve a step on the step's own factorisation, docs/gradients.md "Rollouts"), so
``jax.grad`` through a contact rollout costs the rollout's VJP, not T x 12 nb columns.

Conventions:
- states are the raw maximal states [x, v, q, w] per body (13 nb, quaternions [w,x,y,z]);
  gradients with respect to them are the derivative on the unit sphere: the
  quaternion's gradient has no component along q (the step depends on unit quaternions
  only; rollout_gradients.raw_from_tangent_cotangent);
- float64 throughout: importing this module turns on ``jax_enable_x64`` (the solver's
  tolerances are far below float32's resolution);
- reverse mode only (``jax.grad``, ``jax.vjp``): ``jax.jvp`` of these functions is not
  defined (custom_vjp); use ``dojo.rollout_jvp`` for forward mode;
- the parameters (mass, friction, ...) are the mechanism's, held fixed: their gradient
  is ``dojo.rollout_vjp(..., params=...)``;
- ``kappa``: differentiate the relaxed run (each step on the central path s o gamma =
  kappa, docs/gradients.md), the smooth map to use for a loss through contact;
- a step that does not converge raises ``dojo.SolverError`` from the callback.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dojo_cli.model.mechanism import Mechanism
from dojo_cli.simulation.rollout_gradients import (
    raw_from_tangent_cotangent,
    rollout_jvp,
    rollout_vjp,
    tangent_from_raw_cotangent,
)
from dojo_cli.solver.options import SolverOptions

jax.config.update("jax_enable_x64", True)

__all__ = ["rollout", "step"]


def rollout(mech: Mechanism, opts: SolverOptions | None = None, kappa: float | None = None):
    """The rollout of a mechanism as a differentiable JAX function.

    Args:
        mech: the mechanism (its parameters held fixed).
        opts: solver options (default: the scene's).
        kappa: differentiate the relaxed run (None: where each solve stopped).

    Returns:
        f(z0, U) -> Z: z0 (13 nb,) the initial maximal state, U (T, nu) the inputs per step,
        Z (T, 13 nb) the states z_1 .. z_T; ``jax.grad``/``jax.vjp`` give dL/dz0 and dL/dU.
    """
    from dojo_cli.api import default_options

    opts = opts or default_options(mech)
    nz = 13 * mech.nb

    def states(z0, U):
        return rollout_jvp(mech, np.asarray(z0, dtype=float), np.asarray(U, dtype=float), opts=opts, kappa=kappa).states

    def cotangents(z0, U, Z, Zbar):
        z0, U, Z = (np.asarray(a, dtype=float) for a in (z0, U, Z))
        bar = tangent_from_raw_cotangent(mech, Z, np.asarray(Zbar, dtype=float))
        out = rollout_vjp(mech, z0, U, bar, opts=opts, kappa=kappa)
        return raw_from_tangent_cotangent(mech, z0, out.z0), out.inputs

    def host_states(z0, U):
        shape = jax.ShapeDtypeStruct((U.shape[0], nz), jnp.float64)
        return jax.pure_callback(states, shape, z0, U, vmap_method="sequential")

    @jax.custom_vjp
    def f(z0, U):
        return host_states(z0, U)

    def f_fwd(z0, U):
        Z = host_states(z0, U)
        return Z, (z0, U, Z)

    def f_bwd(res, Zbar):
        z0, U, Z = res
        shapes = (jax.ShapeDtypeStruct(z0.shape, jnp.float64), jax.ShapeDtypeStruct(U.shape, jnp.float64))
        return jax.pure_callback(cotangents, shapes, z0, U, Z, Zbar, vmap_method="sequential")

    f.defvjp(f_fwd, f_bwd)

    def checked(z0, U):
        z0 = jnp.asarray(z0, dtype=jnp.float64)
        U = jnp.asarray(U, dtype=jnp.float64)
        if z0.shape != (nz,):
            raise ValueError(f"z0: expected shape ({nz},) (13 per body), got {z0.shape}")
        if U.ndim != 2 or U.shape[1] != mech.nu or U.shape[0] < 1:
            raise ValueError(f"U: expected (T, {mech.nu}) inputs with T >= 1, got shape {U.shape}")
        return f(z0, U)

    return checked


def step(mech: Mechanism, opts: SolverOptions | None = None, kappa: float | None = None):
    """One step as a differentiable JAX function: f(z (13 nb,), u (nu,)) -> z' (13 nb,)
    (the rollout of one step; arguments as ``rollout``'s)."""
    run = rollout(mech, opts, kappa)

    def f(z, u):
        return run(z, jnp.reshape(jnp.asarray(u, dtype=jnp.float64), (1, mech.nu)))[0]

    return f
