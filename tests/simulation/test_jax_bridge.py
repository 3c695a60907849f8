"""The JAX bridge (dojo_cli.jax): jax.grad through the core's step and rollout against
finite differences of the rollout (and the quaternion's gradient on the unit sphere)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import dojo_cli as dojo
import dojo_cli.jax as djax
from dojo_cli.analysis.gradient_check import four_point
from dojo_cli.math.quaternion import multiply

TIGHT = dojo.SolverOptions(rtol=1e-10, btol=1e-10)
FD = 1e-6  # four-point stencil: truncation ~e^4, rounding ~1e-16 / e
SMOOTH_TOL = 1e-6  # the bar on smooth scenes (relative, max(1, |FD|))
RELAXED_TOL = 1e-6  # the relaxed contact run is smooth too (kappa below)
KAPPA = 1e-3
WEIGHT_SEED = 0


def rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b))))


def loss_fn(run, nz, T):
    """A loss of every state: sum_k <c_k, z_k> + |z_T|^2 / 2 with fixed random weights c."""
    c = np.random.default_rng(WEIGHT_SEED).standard_normal((T, nz))

    def loss(z0, U):
        Z = run(z0, U)
        return jnp.sum(c * Z) + 0.5 * jnp.sum(Z[-1] ** 2)

    return loss


def check_gradient(mech, z0, U, kappa, seed=1):
    """jax.grad of the loss against finite differences along a random input direction and
    a random tangent direction of z0 (x, v, w added; q -> q [sqrt(1 - |phi|^2), phi])."""
    run = djax.rollout(mech, TIGHT, kappa)
    loss = loss_fn(run, 13 * mech.nb, U.shape[0])
    g_z0, g_U = jax.grad(loss, argnums=(0, 1))(jnp.asarray(z0), jnp.asarray(U))
    rng = np.random.default_rng(seed)
    dU = rng.standard_normal(U.shape)
    d = rng.standard_normal((mech.nb, 12))

    def moved(e):
        s = z0.reshape(mech.nb, 13).copy()
        s[:, 0:6] += e * d[:, 0:6]
        s[:, 10:13] += e * d[:, 9:12]
        phi = e * d[:, 6:9]
        s[:, 6:10] = multiply(s[:, 6:10], np.concatenate([np.sqrt(1 - np.sum(phi**2, axis=1, keepdims=True)), phi], axis=1))
        return s.ravel()

    fd_U = four_point(lambda e: float(loss(z0, U + e * dU)), FD)
    fd_z = four_point(lambda e: float(loss(moved(e), U)), FD)
    # the raw gradient along the tangent direction: dq/dphi = q (x) [0, phi]
    q = z0.reshape(mech.nb, 13)[:, 6:10]
    dq = multiply(q, np.concatenate([np.zeros((mech.nb, 1)), d[:, 6:9]], axis=1))
    dz = np.concatenate([d[:, 0:6], dq, d[:, 9:12]], axis=1).ravel()
    return rel(np.sum(np.asarray(g_U) * dU), fd_U), rel(np.asarray(g_z0) @ dz, fd_z)


def test_rollout_gradient_on_a_smooth_scene():
    mech = dojo.load_scene("double_pendulum")
    z0 = dojo.initial_state(mech)
    U = 0.1 * np.random.default_rng(2).standard_normal((25, mech.nu))
    err_u, err_z = check_gradient(mech, z0, U, None)
    assert err_u < SMOOTH_TOL, f"dL/dU vs finite differences {err_u:.2e}"
    assert err_z < SMOOTH_TOL, f"dL/dz0 vs finite differences {err_z:.2e}"


def test_rollout_gradient_through_contact_relaxed():
    """The box toss through its landing (impacts, then sliding), relaxed at KAPPA."""
    mech = dojo.load_scene("box")
    z0 = dojo.simulate(mech, steps=30, opts=TIGHT).state(-1)
    U = np.zeros((40, mech.nu))
    err_u, err_z = check_gradient(mech, z0, U, KAPPA)
    assert err_u < RELAXED_TOL, f"box (kappa {KAPPA}): dL/dU vs finite differences {err_u:.2e}"
    assert err_z < RELAXED_TOL, f"box (kappa {KAPPA}): dL/dz0 vs finite differences {err_z:.2e}"


def test_step_and_rollout_agree_and_jit():
    mech = dojo.load_scene("cartpole")
    z = dojo.initial_state(mech)
    u = np.array([0.3] * mech.nu)
    step = djax.step(mech, TIGHT)
    z1 = np.asarray(jax.jit(step)(z, u))
    assert np.allclose(z1, dojo.step(mech, z, u, TIGHT), atol=1e-12), "djax.step is dojo.step"
    # the step's vjp is A^T, B^T of dojo.step_gradients (tangent coordinates, x rows here)
    _, vjp = jax.vjp(step, jnp.asarray(z), jnp.asarray(u))
    bar = np.zeros(13 * mech.nb)
    bar[0] = 1.0  # d z'[0] (body 0's x)
    _, g_u = vjp(jnp.asarray(bar))
    g = dojo.step_gradients(mech, z, u, TIGHT)
    assert rel(g_u, g.B[0]) < 1e-12, f"vjp's input row {np.asarray(g_u)} vs B's {g.B[0]}"
