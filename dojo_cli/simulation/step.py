"""One step of Dojo's variational integrator in maximal coordinates.

Unknowns w = [per body (v25, w25) (6 nb); joint impulses lambda (nl)].
Residual (dojo_engine_notes.md 2.3, 3.3):
- body i: DEL(v25, w25) - sum_r Jg_r,i(z2)^T lambda_r - h sum_f Jf_f,i(z2)^T spring_f
          - h sum_f Ju_f,i(z2)^T u_f + h sum_f Jf_f,i^T c_f (Jf(z2) xi25)_f
- joint row r: g_r(z3) with x3 = x2 + h v25, q3 = q2 qmap(w25).
Constraint impulses act through the constraint Jacobian at the current
configuration and the constraints hold at the next one. Springs are the exact
gradient of 1/2 k (theta - theta0)^2 at z2 (Dojo applies the spring torque
directly, which is the gradient only for one rotational axis). Dampers are
Rayleigh dissipation on the joint velocity theta_dot = Jf(z2) xi25, linear in
the unknowns (Dojo differentiates the configuration backwards, an O(h)
difference).

The Newton matrix is
    [ M(w25) + h Jf^T C Jf    -Jg(z2)^T ]
    [ Jg(z3) dz3/dxi25          0       ]
assembled into a pattern fixed per mechanism.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.state import pack_maximal, unpack_maximal
from dojo_cli.physics.dynamics import momentum_left, momentum_right, momentum_right_jacobian
from dojo_cli.physics.kinematics import constraint_rows, input_rows, joint_kinematics, minimal_rows
from dojo_cli.solver.linear import MatrixPattern
from dojo_cli.solver.newton import newton
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverResult

# Dojo clips |w|^2 at 3.9/h^2 (the integrator map needs |w| < 2/h, notes 5.3 f).
_MAX_ANGULAR_SPEED_SQ = 3.9
# Regularisation of the joint-impulse diagonal (Dojo's REG, notes 1 and 3.3). Redundant
# constraints (a planar loop closed by revolute joints constrains out-of-plane motion
# twice) make the Newton matrix singular; with the Schur complement
# Jg A^-1 Jg^T ~ h W M^-1 W^T positive semidefinite, +REG I makes it definite without
# changing the residual, so the converged solution is unaffected.
CONSTRAINT_REGULARIZATION = 1e-10


class StepStructure:
    """Index maps and the Newton pattern of a mechanism's step (built once)."""

    def __init__(self, mech: Mechanism):
        nb, nl = mech.nb, mech.nl
        self.nv = 6 * nb
        self.n = self.nv + nl
        self.row_cols = mech.joint_columns[mech.row_joint]  # (nl,12)
        self.row_keep = self.row_cols >= 0
        self.free_cols = mech.joint_columns[mech.free_joint]  # (nf,12)
        self.free_keep = self.free_cols >= 0
        self.free_damped = np.flatnonzero(mech.damper != 0)

        rows, cols = [], []
        # 1. body diagonal blocks
        b = np.arange(nb)[:, None, None] * 6
        a = np.arange(6)
        rows.append(np.broadcast_to(b + a[None, :, None], (nb, 6, 6)).ravel())
        cols.append(np.broadcast_to(b + a[None, None, :], (nb, 6, 6)).ravel())
        # 2. damper blocks (12x12 per damped free coordinate)
        dc = self.free_cols[self.free_damped]  # (nd,12)
        dr_full = np.broadcast_to(dc[:, :, None], (len(dc), 12, 12))
        dc_full = np.broadcast_to(dc[:, None, :], (len(dc), 12, 12))
        self.damper_keep = ((dr_full >= 0) & (dc_full >= 0)).ravel()
        rows.append(dr_full.ravel()[self.damper_keep])
        cols.append(dc_full.ravel()[self.damper_keep])
        # 3. -Jg(z2)^T: body rows, lambda columns
        lam = self.nv + np.arange(nl)[:, None]
        lam_full = np.broadcast_to(lam, (nl, 12))
        rows.append(self.row_cols[self.row_keep])
        cols.append(lam_full[self.row_keep])
        # 4. Jg(z3) dz3/dxi: lambda rows, body columns
        rows.append(lam_full[self.row_keep])
        cols.append(self.row_cols[self.row_keep])
        # 5. regularisation on the lambda diagonal
        rows.append(self.nv + np.arange(nl))
        cols.append(self.nv + np.arange(nl))
        self.pattern = MatrixPattern(self.n, np.concatenate(rows), np.concatenate(cols))


def step_structure(mech: Mechanism) -> StepStructure:
    """The mechanism's step structure, computed on first use and kept."""
    cache = mech.__dict__.setdefault("_cache", {})
    if "step" not in cache:
        cache["step"] = StepStructure(mech)
    return cache["step"]


def _scatter(cols: np.ndarray, keep: np.ndarray, vals: np.ndarray, size: int) -> np.ndarray:
    """Sum per-row 12-vectors into body unknowns (origin columns dropped)."""
    return np.bincount(cols[keep], weights=vals[keep], minlength=size)


class StepProblem:
    """The nonlinear system of one step, from state z2 with inputs u.

    Args:
        mech: the mechanism.
        z: (13 nb,) maximal state [x2, v15, q2, w15] per body.
        u: (nu,) joint inputs (forces N, torques N m), held over the step.
        f_ext: (nb,3) external forces, world frame, or None.
        tau_ext: (nb,3) external torques, body frame, or None.
    """

    def __init__(self, mech: Mechanism, z, u=None, f_ext=None, tau_ext=None):
        self.mech = mech
        self.s = step_structure(mech)
        h = mech.timestep
        nb = mech.nb
        self.x2, self.v15, self.q2, self.w15 = unpack_maximal(z, nb)
        u = np.zeros(mech.nf) if u is None else np.asarray(u, dtype=float).reshape(-1)
        if u.shape != (mech.nf,):
            raise ValueError(f"input must have {mech.nf} entries (one per free coordinate), got {u.size}")
        self.u = u

        kin2 = joint_kinematics(mech, self.x2, self.q2)
        _, jc2 = constraint_rows(mech, kin2)
        self.jg2 = jc2[mech.row_joint, mech.row_slot]  # (nl,12)
        # Impulses constant over the solve: inputs, springs, gravity, external wrench.
        gen = np.zeros((mech.nf, 12))
        jf2 = None
        if mech.has_springs or mech.has_dampers:
            m2, jm2 = minimal_rows(mech, kin2)
            jf2 = jm2[mech.free_joint, mech.free_slot]  # (nf,12)
            spring_force = -mech.spring * (m2[mech.free_joint, mech.free_slot] - mech.spring_offset)
            gen += h * jf2 * spring_force[:, None]
        if np.any(u):
            ju2 = input_rows(mech, kin2)[mech.free_joint, mech.free_slot]
            gen += h * ju2 * u[:, None]
        applied = _scatter(self.s.free_cols, self.s.free_keep, gen, self.s.nv).reshape(nb, 6)
        wrench = np.zeros((nb, 6))
        wrench[:, :3] = mech.mass[:, None] * mech.gravity
        if f_ext is not None:
            wrench[:, :3] += np.asarray(f_ext, dtype=float).reshape(nb, 3)
        if tau_ext is not None:
            wrench[:, 3:] += np.asarray(tau_ext, dtype=float).reshape(nb, 3)
        self.constant = (momentum_left(mech, self.v15, self.w15) + h * wrench + applied).reshape(-1)

        # Damping: impulse -h Jf^T C Jf xi, constant matrix (Rayleigh on theta_dot).
        d = self.s.free_damped
        if d.size:
            self.jf_damped = jf2[d]
            self.damper_blocks = (h * mech.damper[d, None, None] * jf2[d, :, None] * jf2[d, None, :]).ravel()[
                self.s.damper_keep
            ]
        else:
            self.jf_damped = np.zeros((0, 12))
            self.damper_blocks = np.zeros(0)
        self.neg_jg2t = -self.jg2[self.s.row_keep]
        self._cache_w: np.ndarray | None = None

    # ------------------------------------------------------------ evaluation
    def split(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """v25 (nb,3), w25 (nb,3), lambda (nl,)."""
        xi = w[: self.s.nv].reshape(self.mech.nb, 6)
        return xi[:, :3], xi[:, 3:], w[self.s.nv :]

    def next_configuration(self, v25: np.ndarray, w25: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x3 = x2 + h v25, q3 = q2 qmap(w25) (notes 2.2)."""
        h = self.mech.timestep
        return self.x2 + h * v25, quat.multiply(self.q2, quat.integrator_map(w25, h))

    def _evaluate(self, w: np.ndarray):
        if self._cache_w is not None and np.array_equal(w, self._cache_w):
            return self._cache
        mech, s = self.mech, self.s
        v25, w25, lam = self.split(w)
        x3, q3 = self.next_configuration(v25, w25)
        kin3 = joint_kinematics(mech, x3, q3)
        c3, jc3 = constraint_rows(mech, kin3)
        res = np.empty(s.n)
        body = momentum_right(mech, v25, w25).reshape(-1) - self.constant
        body -= _scatter(s.row_cols, s.row_keep, self.jg2 * lam[:, None], s.nv)
        if self.damper_blocks.size:
            xi = w[: s.nv]
            cols = s.free_cols[s.free_damped]
            rate = np.einsum("fk,fk->f", self.jf_damped, np.where(cols >= 0, xi[cols], 0.0))
            h = mech.timestep
            damp = h * mech.damper[s.free_damped, None] * rate[:, None] * self.jf_damped
            body += _scatter(cols, cols >= 0, damp, s.nv)
        res[: s.nv] = body
        res[s.nv :] = c3[mech.row_joint, mech.row_slot]
        self._cache_w = w.copy()
        self._cache = (res, jc3, w25)
        return self._cache

    def residual(self, w: np.ndarray) -> np.ndarray:
        """(n,) residual at w."""
        return self._evaluate(w)[0]

    def matrix_values(self, w: np.ndarray) -> np.ndarray:
        """Newton matrix slot values at w."""
        mech, s = self.mech, self.s
        _, jc3, w25 = self._evaluate(w)
        h = mech.timestep
        jg3 = jc3[mech.row_joint, mech.row_slot]  # (nl,12) wrt [xa, ta, xb, tb] at z3
        # chain through dz3/dxi25: dx3/dv = h I, dtheta3/dw = integrator_map_jacobian
        mw = quat.integrator_map_jacobian(w25, h)  # (nb,3,3)
        mw_ext = np.concatenate([mw, np.zeros((1, 3, 3))])  # origin -> zero block
        pa = np.where(mech.parent[mech.row_joint] < 0, mech.nb, mech.parent[mech.row_joint])
        cb = mech.child[mech.row_joint]
        chained = np.empty_like(jg3)
        chained[:, 0:3] = h * jg3[:, 0:3]
        chained[:, 3:6] = np.einsum("rk,rkj->rj", jg3[:, 3:6], mw_ext[pa])
        chained[:, 6:9] = h * jg3[:, 6:9]
        chained[:, 9:12] = np.einsum("rk,rkj->rj", jg3[:, 9:12], mw_ext[cb])
        values = np.concatenate(
            [
                momentum_right_jacobian(mech, w25).ravel(),
                self.damper_blocks,
                self.neg_jg2t,
                chained[s.row_keep],
                np.full(mech.nl, CONSTRAINT_REGULARIZATION),
            ]
        )
        return s.pattern.assemble(values)

    def factorize(self, w: np.ndarray):
        """Factorisation of the Newton matrix at w."""
        return self.s.pattern.factorize(self.matrix_values(w))

    def project(self, w: np.ndarray) -> np.ndarray:
        """Scale angular velocities into |w| < 2/h (Dojo's clipping)."""
        h = self.mech.timestep
        _, w25, _ = self.split(w)
        sq = np.sum(w25 * w25, axis=1)
        limit = _MAX_ANGULAR_SPEED_SQ / h**2
        if np.all(sq <= limit):
            return w
        w = w.copy()
        xi = w[: self.s.nv].reshape(self.mech.nb, 6)
        scale = np.where(sq > limit, limit / np.maximum(sq, 1e-300), 1.0)
        xi[:, 3:] *= scale[:, None]
        return w

    def initial_guess(self, lam0: np.ndarray | None = None) -> np.ndarray:
        """Warm start: the previous midpoint velocities, and lambda0 (or zero)."""
        w0 = np.zeros(self.s.n)
        w0[: self.s.nv] = np.concatenate([self.v15, self.w15], axis=1).reshape(-1)
        if lam0 is not None:
            w0[self.s.nv :] = lam0
        return w0

    def next_state(self, w: np.ndarray) -> np.ndarray:
        """[x3, v25, q3, w25] per body, (13 nb,)."""
        v25, w25, _ = self.split(w)
        x3, q3 = self.next_configuration(v25, w25)
        return pack_maximal(x3, v25, quat.normalize(q3), w25)


def solve_step(
    mech: Mechanism, z, u=None, opts: SolverOptions | None = None, f_ext=None, tau_ext=None, lam0=None, log=None
) -> tuple[np.ndarray, SolverResult, StepProblem]:
    """Solve one step; returns (next state, solver result, the problem)."""
    opts = opts or SolverOptions()
    problem = StepProblem(mech, z, u, f_ext, tau_ext)
    result = newton(problem, problem.initial_guess(lam0), opts, log=log)
    return problem.next_state(result.w), result, problem


def step(mech: Mechanism, z, u=None, opts: SolverOptions | None = None, f_ext=None, tau_ext=None) -> np.ndarray:
    """The next maximal state [x3, v25, q3, w25] per body, (13 nb,).

    Args:
        mech: the mechanism.
        z: (13 nb,) maximal state [x2, v15, q2, w15] per body.
        u: (nu,) joint inputs in joint order (forces N, torques N m), or None for zero.
        opts: solver options (defaults: Dojo's).
        f_ext: (nb,3) external forces on the centres of mass, world frame.
        tau_ext: (nb,3) external torques, body frame.
    """
    return solve_step(mech, z, u, opts, f_ext, tau_ext)[0]
