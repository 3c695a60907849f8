"""Derivatives of a step by the implicit function theorem (groundwork for issue 4).

At the step's solution w*, r(w*; theta) = 0, so dw*/dtheta = -(dr/dw)^-1 dr/dtheta.
dr/dw is the Newton matrix at w* itself (the solver's last factorisation is one
step behind, and its second-order-cone rows are Nesterov-Todd scaled, so it is
refactorised here with the raw rows). The next state's tangent coordinates are
Dojo's, per body [x, v, phi, w] with q -> q [sqrt(1 - |phi|^2), phi]:
dx3 = h dv25 and dphi3 = (1/2) dtheta3 = (1/2) integrator_map_jacobian(w25) dw25.

Only the input Jacobian B = dz'/du is here so far: dr/du is -h (input rows at
z2)^T on the body rows. The state Jacobian A needs dr/dz2, i.e. second
derivatives of the joint kinematics (the impulse maps are evaluated at z2); see
the notes of issue 4.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.kinematics import input_rows, joint_kinematics
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.options import SolverOptions


def next_state_tangent(mech: Mechanism, dw: np.ndarray, w25: np.ndarray) -> np.ndarray:
    """Map derivatives of the unknowns to derivatives of the next state in tangent coordinates.

    Args:
        dw: (n, k) derivatives of the unknowns (bodies' v25, w25 first).
        w25: (nb, 3) midpoint angular velocities at the solution.

    Returns:
        (12 nb, k): per body [dx3, dv25, dphi3, dw25].
    """
    h = mech.timestep
    nb = mech.nb
    k = dw.shape[1]
    xi = dw[: 6 * nb].reshape(nb, 6, k)
    dv, dom = xi[:, :3], xi[:, 3:]
    dphi = 0.5 * np.einsum("bij,bjk->bik", quat.integrator_map_jacobian(w25, h), dom)
    return np.concatenate([h * dv, dv, dphi, dom], axis=1).reshape(12 * nb, k)


def input_jacobian(mech: Mechanism, z, u=None, opts: SolverOptions | None = None) -> tuple[np.ndarray, np.ndarray]:
    """B = dz'/du of one step, by the implicit function theorem.

    Args:
        mech: the mechanism.
        z: (13 nb,) state the step starts from.
        u: (nu,) inputs (default zero).
        opts: solver options (tight tolerances give the derivative of the unrelaxed step).

    Returns:
        (next state (13 nb,), B (12 nb, nu)) with Dojo's tangent coordinates per body.
    """
    opts = opts or SolverOptions()
    z_next, result, problem = solve_step(mech, z, u, opts)
    s = problem.s
    kin2 = joint_kinematics(mech, problem.x2, problem.q2)
    ju2 = input_rows(mech, kin2)[mech.free_joint, mech.free_slot]  # (nf, 12) impulse per unit input / h
    # dr/du on the body rows: the residual subtracts h ju2^T u
    dr_du = np.zeros((s.n, mech.nf))
    for f in range(mech.nf):
        cols = s.free_cols[f]
        keep = cols >= 0
        dr_du[cols[keep], f] -= mech.timestep * ju2[f, keep]
    factorization = problem.factorize(result.w)  # raw Jacobian at the solution
    dw = factorization.solve(-dr_du)
    _, w25, _ = problem.split(result.w)
    return z_next, next_state_tangent(mech, dw, w25)
