"""PinnZoo's dynamics and kinematics functions on the core's tree algorithms.

Each function is one call into the C++ core (dojo_cli/core/minimal/tree.h): CRBA for M, RNEA
for C and the inverse dynamics, ABA for the forward dynamics, Carpentier and Mansard's
analytical derivatives for the ``*_deriv`` functions. x = [q; v] (nx,) in the model's
nominal order; derivatives are with respect to the raw x (every configuration number,
a quaternion's four included, as PinnZoo), a quaternion being read as q/|q|, unless
``tangent=True`` (then with respect to [dq (nv, the joints' tangent, as Pinocchio's
derivatives); dv]). See docs/minimal.md.

Locked joints (``model.locked_joints``, Drake's Lock): ``forward_dynamics``, ``dynamics``
and their derivatives are those of the reduced system M_ff vdot_f = tau_f - C_f(q, v) over
the free velocities f, with a locked joint's velocities read as zero and its accelerations
zero (the core's ABA welds it); ``M_func``, ``C_func`` and ``inverse_dynamics`` stay the
tree's, and ``lock_forces`` gives the rows M vdot + C - tau the locks carry.
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.minimal.model import MinimalModel


def _vec(a) -> np.ndarray:
    # A vector passes as it is (the common case; the core only reads it): the core's argument
    # converts one of another dtype or a strided one itself, a copy as below (nanobind's
    # implicit conversion). Testing dtype and contiguity here too took twice as long (about
    # 0.11 against 0.06 us a call, some 3 % of M_func on Go1: benchmarks/README.md,
    # minimal_speed). Anything else (a list, a column) becomes a float vector here.
    if type(a) is np.ndarray and a.ndim == 1:
        return a
    return np.ascontiguousarray(a, dtype=float).reshape(-1)


def M_func(model: MinimalModel, x) -> np.ndarray:  # noqa: N802 (PinnZoo's name)
    """M(q) (nv, nv), the mass matrix (CRBA); x: (nx,) state (only q is read)."""
    return _core.tree_mass_matrix(model.tree, model.data, _vec(x))


def C_func(model: MinimalModel, x) -> np.ndarray:  # noqa: N802
    """C(x) (nv,): Coriolis, centrifugal and gravity (Pinocchio's nonLinearEffects).

    Springs, dampers and limits are not in it (``passive_forces``)."""
    return _core.tree_bias(model.tree, model.data, _vec(x))


def forward_dynamics(model: MinimalModel, x, tau) -> np.ndarray:
    """vdot (nv,) = M(x)^-1 (tau - C(x)), by ABA; tau: (nv,) generalized forces.

    With locked joints the reduced solve: vdot_f = M_ff^-1 (tau_f - C_f) with the locked
    velocities read as zero, and vdot = 0 on the locked entries (module doc)."""
    return _core.tree_forward_dynamics(model.tree, model.data, _vec(x), _vec(tau))


def lock_forces(model: MinimalModel, x, tau) -> np.ndarray:
    """(nv,) the generalized forces the locked joints carry, M vdot + C - tau on their rows
    at vdot = forward_dynamics(x, tau) (locked velocities read as zero); zero elsewhere.
    They hold the locked coordinates against gravity, the inputs and the free motion
    (Drake's Lock; the core's ABA, aba.cpp)."""
    return _core.tree_lock_forces(model.tree, model.data, _vec(x), _vec(tau))


def inverse_dynamics(model: MinimalModel, x, vdot) -> np.ndarray:
    """tau (nv,) = M(x) vdot + C(x), by RNEA."""
    return _core.tree_inverse_dynamics(model.tree, model.data, _vec(x), _vec(vdot))


def dynamics(model: MinimalModel, x, tau) -> np.ndarray:
    """[v; vdot] (2 nv,), PinnZoo's ``dynamics`` (not q' = E v: see velocity_kinematics);
    a locked joint's v entries are zero (read as zero, as forward_dynamics reads them)."""
    x = _vec(x)
    v = np.where(model.locked_v, 0.0, x[model.nq:])
    return np.concatenate([v, forward_dynamics(model, x, tau)])


def forward_dynamics_deriv(model: MinimalModel, x, tau, tangent: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(d vdot/dx (nv, nx), d vdot/dtau = M^-1 (nv, nv)); with locked joints those of the
    reduced solve: zero locked rows, zero columns for the locked velocities, and d vdot/dtau
    = M_ff^-1 on the free rows and columns (zero elsewhere)."""
    return _core.tree_forward_dynamics_deriv(model.tree, model.data, _vec(x), _vec(tau), not tangent)


def inverse_dynamics_deriv(model: MinimalModel, x, vdot, tangent: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(d tau/dx (nv, nx), d tau/d vdot = M (nv, nv))."""
    return _core.tree_inverse_dynamics_deriv(model.tree, model.data, _vec(x), _vec(vdot), not tangent)


def dynamics_deriv(model: MinimalModel, x, tau, tangent: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(d[v; vdot]/dx (2 nv, nx), d[v; vdot]/dtau (2 nv, nv))."""
    return _core.tree_dynamics_deriv(model.tree, model.data, _vec(x), _vec(tau), not tangent)


def velocity_kinematics(model: MinimalModel, x) -> np.ndarray:
    """E(q) (nq, nv) with q' = E(q) v (x: (nq,) or (nx,); quaternions used as given)."""
    return _core.tree_velocity_kinematics(model.tree, _vec(x))


def velocity_kinematics_T(model: MinimalModel, x) -> np.ndarray:  # noqa: N802
    """E_T(q) (nv, nq) with v = E_T(q) q'; E_T E = I for unit quaternions (E_T != E^T)."""
    return _core.tree_velocity_kinematics_T(model.tree, _vec(x))


def velocity_kinematics_jvp_deriv(model: MinimalModel, x, v) -> np.ndarray:
    """d(E(x) v)/dx (nq, nx)."""
    return _core.tree_velocity_kinematics_jvp_deriv(model.tree, _vec(x), _vec(v))


def velocity_kinematics_T_jvp_deriv(model: MinimalModel, x, qdot) -> np.ndarray:  # noqa: N802
    """d(E_T(x) qdot)/dx (nv, nx)."""
    return _core.tree_velocity_kinematics_T_jvp_deriv(model.tree, _vec(x), _vec(qdot))


def kinematics(model: MinimalModel, x) -> np.ndarray:
    """World positions of ``model.kinematics_points``, flat (3 np,)."""
    return _core.tree_kinematics(model.tree, model.data, _vec(x), "positions", None).reshape(-1)


def kinematics_rotation(model: MinimalModel, x) -> np.ndarray:
    """(np, 3, 3) rotation matrices (body to world) of the points' bodies."""
    return _core.tree_kinematics(model.tree, model.data, _vec(x), "rotations", None)


def kinematics_jacobian(model: MinimalModel, x) -> np.ndarray:
    """d kinematics/dx (3 np, nx), raw x (the v block is zero)."""
    return _core.tree_kinematics(model.tree, model.data, _vec(x), "jacobian", None)


def kinematics_velocity(model: MinimalModel, x) -> np.ndarray:
    """World velocities of the points (3 np,) = J_q E v."""
    return _core.tree_kinematics(model.tree, model.data, _vec(x), "velocities", None).reshape(-1)


def kinematics_velocity_jacobian(model: MinimalModel, x) -> np.ndarray:
    """d kinematics_velocity/dx (3 np, nx) = [d(J_q E v)/dq, J_q E]."""
    return _core.tree_kinematics(model.tree, model.data, _vec(x), "velocity_jacobian", None)


def kinematics_force_jacobian(model: MinimalModel, x, lam) -> np.ndarray:
    """d(J^T lam)/dx (nv, nx), J = d kinematics_velocity/dv; lam: (3 np,) world forces."""
    return _core.tree_kinematics(model.tree, model.data, _vec(x), "force_jacobian", _vec(lam))


# ---- PinnZoo's second-order products (exact: dual numbers through the core's point kinematics,
# core/minimal/tree_second_order.cpp; derivatives with respect to the raw x, their v rows and
# columns zero since the points' positions and J do not depend on v)

def kinematics_jacobianTvp(model: MinimalModel, x, lam) -> np.ndarray:  # noqa: N802 (PinnZoo's name)
    """J(x)^T lam (nv,), J = d kinematics_velocity/dv (3 np, nv): the generalized force of the
    world forces lam (3 np,) at the points (kinematics_force_jacobian is its x derivative)."""
    jac = _core.tree_kinematics(model.tree, model.data, _vec(x), "jacobian_tangent", None)
    return jac.T @ _vec(lam)


def kinematics_hvp(model: MinimalModel, x, dx) -> np.ndarray:
    """d(kinematics_jacobian(x) dx)/dx (3 np, nx), dx: (nx,): the kinematics' second
    derivative along dx (only its q part counts)."""
    return _core.tree_kinematics_hvp(model.tree, model.data, _vec(x), _vec(dx))


def kinematics_force_hvp(model: MinimalModel, x, lam, mult) -> tuple[np.ndarray, np.ndarray]:
    """(d(F mult)/dx (nv, nx), d(F mult)/dlam (nv, 3 np)) with F = kinematics_force_jacobian(x,
    lam) (nv, nx) and mult: (nx,) (only its q part counts: F's v columns are zero)."""
    return _core.tree_kinematics_force_hvp(model.tree, model.data, _vec(x), _vec(lam), _vec(mult))


def kinematics_force_hTvp(model: MinimalModel, x, lam, mult) -> tuple[np.ndarray, np.ndarray]:  # noqa: N802
    """(d(F^T mult)/dx (nx, nx), d(F^T mult)/dlam (nx, 3 np)) with F = kinematics_force_jacobian(x,
    lam) and mult: (nv,). F^T mult is the x gradient of lam . J(x) mult, so the first is its
    Hessian (symmetric) and the second (d(J mult)/dx)^T."""
    return _core.tree_kinematics_force_hTvp(model.tree, model.data, _vec(x), _vec(lam), _vec(mult))


def inverse_dynamics_hvp(model: MinimalModel, x, vdot, lam) -> tuple[np.ndarray, np.ndarray]:
    """(d((dtau/dx) lam)/dx (nv, nx), d((dtau/dx) lam)/dvdot (nv, nv)) with dtau/dx the first
    output of inverse_dynamics_deriv and lam: (nx,). (d tau/d vdot = M(q) gives nothing more
    in vdot: PinnZoo's note.)"""
    return _core.tree_inverse_dynamics_hvp(model.tree, model.data, _vec(x), _vec(vdot), _vec(lam))


def inverse_dynamics_hTvp(model: MinimalModel, x, vdot, lam) -> tuple[np.ndarray, np.ndarray]:  # noqa: N802
    """(d((dtau/dx)^T lam)/dx (nx, nx), d((dtau/dvdot)^T lam)/dx = d(M lam)/dx (nv, nx)), lam:
    (nv,). The first is the Hessian of lam . tau over x (symmetric)."""
    return _core.tree_inverse_dynamics_hTvp(model.tree, model.data, _vec(x), _vec(vdot), _vec(lam))
