"""One step of Dojo's variational integrator in maximal coordinates.

Unknowns w = [per body (v25, w25) (6 nb) | joint impulses lambda (nl) |
joint-limit slacks s and impulses gamma (nlim each) | per contact s, gamma].
Residual (dojo_engine_notes.md 2.3, 3.3, 3.6, 4.2):
- body i: DEL(v25, w25) - sum_r Jg_r,i(z2)^T lambda_r - h sum_f Jf_f,i(z2)^T spring_f
          - h sum_f Ju_f,i(z2)^T u_f + h sum_f Jf_f,i^T c_f (Jf(z2) xi25)_f
          - sum_limits sigma Jf(z2)^T gamma - sum_contacts wrench(z3, gamma)
- joint row r: g_r(z3) with x3 = x2 + h v25, q3 = q2 qmap(w25);
- limit (bound b, sign sigma = +1 lower / -1 upper): s - sigma (theta(z3) - b) = 0, s gamma = kappa;
- contact: the model's constraint rows (distance, friction cone, tangential
  velocity at z3) and complementarity rows (contact.py).
Constraint impulses act through the constraint Jacobian at the current
configuration and the constraints hold at the next one; contact wrenches act
at the next configuration (Dojo's choices). Springs are the exact gradient of
1/2 k (theta - theta0)^2 at z2 (Dojo applies the spring torque directly, which is
the gradient only for one rotational axis). Dampers are Rayleigh dissipation on
the joint velocity theta_dot = Jf(z2) xi25, linear in the unknowns (Dojo
differentiates the configuration backwards, an O(h) difference).

Without contacts and limits the system is smooth and solved by Newton's
method; with them, by the interior-point method (solver.interior_point).
"""

from __future__ import annotations

import functools

import numpy as np

from dojo_cli import _core

from dojo_cli.math import quaternion as quat
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.state import pack_maximal, unpack_maximal
from dojo_cli.physics.contact import ContactEvaluation, ContactStructure, evaluate_contacts
from dojo_cli.physics.dynamics import momentum_left, momentum_right, momentum_right_jacobian
from dojo_cli.physics.integrator import chain_to_velocities, next_configuration, velocity_jacobians
from dojo_cli.physics.kinematics import constraint_rows, input_rows, joint_kinematics, minimal_rows
from dojo_cli.solver.interior_point import interior_point
from dojo_cli.solver.linear import MatrixPattern
from dojo_cli.solver.newton import newton
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverResult

# Dojo clips |w|^2 at 3.9/h^2 (the integrator map needs |w| < 2/h, notes 5.3 f).
_MAX_ANGULAR_SPEED_SQ = 3.9
# Regularisation of the joint-impulse diagonal (Dojo's REG, notes 1 and 3.3). Redundant
# constraints (a planar loop closed by revolute joints constrains out-of-plane motion
# twice) make the Newton matrix singular; with the Schur complement
# Jg A^-1 Jg^T ~ h W M^-1 W^T positive semidefinite, +REG I makes it definite without
# changing the residual, so the converged solution is unaffected.
CONSTRAINT_REGULARIZATION = 1e-10
# Interior-point starting values of joint-limit slacks and impulses (Dojo: reset to 1).
LIMIT_START = 1.0


class _Pattern:
    """Named blocks of (row, col) entries, assembled in a fixed order."""

    def __init__(self):
        self.names: list[str] = []
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []

    def add(self, name: str, rows, cols) -> None:
        rows, cols = np.broadcast_arrays(np.asarray(rows), np.asarray(cols))
        self.names.append(name)
        self.rows.append(rows.ravel())
        self.cols.append(cols.ravel())

    def build(self, n: int) -> MatrixPattern:
        return MatrixPattern(n, np.concatenate(self.rows), np.concatenate(self.cols))


class StepStructure:
    """Index maps and the Newton pattern of a mechanism's step (built once)."""

    def __init__(self, mech: Mechanism):
        nb, nl, nlim = mech.nb, mech.nl, mech.nlim
        self.nv = 6 * nb
        self.row_cols = mech.joint_columns[mech.row_joint]  # (nl,12)
        self.row_keep = self.row_cols >= 0
        self.free_cols = mech.joint_columns[mech.free_joint]  # (nf,12)
        self.free_keep = self.free_cols >= 0
        self.free_damped = np.flatnonzero(mech.damper != 0)
        # parent/child body indices with the world as index nb (a zero block)
        self.row_a = np.where(mech.parent[mech.row_joint] < 0, nb, mech.parent[mech.row_joint])
        self.row_b = mech.child[mech.row_joint]

        # unknown layout
        self.lam = self.nv + np.arange(nl)
        self.lim_s = self.nv + nl + np.arange(nlim)
        self.lim_g = self.lim_s + nlim
        self.contacts = ContactStructure(mech, start=self.nv + nl + 2 * nlim)
        self.n = self.contacts.end
        self.lim_cols = mech.joint_columns[mech.free_joint[mech.limit_free]] if nlim else np.zeros((0, 12), int)
        self.lim_keep = self.lim_cols >= 0
        fj = mech.free_joint[mech.limit_free]
        self.lim_a = np.where(mech.parent[fj] < 0, nb, mech.parent[fj]) if nlim else np.zeros(0, int)
        self.lim_b = mech.child[fj] if nlim else np.zeros(0, int)

        p = _Pattern()
        # body diagonal blocks
        b = np.arange(nb)[:, None, None] * 6
        a = np.arange(6)
        p.add("body", b + a[None, :, None], b + a[None, None, :])
        # damper blocks (12x12 per damped free coordinate)
        dc = self.free_cols[self.free_damped]
        dr_full = np.broadcast_to(dc[:, :, None], (len(dc), 12, 12))
        dc_full = np.broadcast_to(dc[:, None, :], (len(dc), 12, 12))
        self.damper_keep = ((dr_full >= 0) & (dc_full >= 0)).ravel()
        p.add("damper", dr_full.ravel()[self.damper_keep], dc_full.ravel()[self.damper_keep])
        # -Jg(z2)^T (body rows, lambda columns) and Jg(z3) dz3/dxi (lambda rows, body columns)
        lam_full = np.broadcast_to(self.lam[:, None], (nl, 12))
        p.add("impulse_map", self.row_cols[self.row_keep], lam_full[self.row_keep])
        p.add("constraint", lam_full[self.row_keep], self.row_cols[self.row_keep])
        p.add("regularization", self.lam, self.lam)
        # joint limits: comp rows (at s) wrt s, gamma; constraint rows (at gamma) wrt s and bodies;
        # body rows wrt gamma
        p.add("limit_comp_s", self.lim_s, self.lim_s)
        p.add("limit_comp_g", self.lim_s, self.lim_g)
        p.add("limit_cons_s", self.lim_g, self.lim_s)
        lg_full = np.broadcast_to(self.lim_g[:, None], (nlim, 12))
        p.add("limit_cons_body", lg_full[self.lim_keep], self.lim_cols[self.lim_keep])
        p.add("limit_map", self.lim_cols[self.lim_keep], lg_full[self.lim_keep])
        self.contacts.add_pattern(p)
        self.block_names = p.names
        self.pattern = p.build(self.n)

        # cone structure for the interior-point solver
        self.orthant_s = np.concatenate([self.lim_s, self.contacts.orthant_s])
        self.orthant_g = np.concatenate([self.lim_g, self.contacts.orthant_g])
        self.orthant_rows = self.orthant_s.copy()  # complementarity rows sit at the s indices
        self.soc_s = self.contacts.soc_s
        self.soc_g = self.contacts.soc_g
        self.soc_rows = self.soc_s.copy()
        comp = np.zeros(self.n, dtype=bool)
        comp[self.orthant_rows] = True
        comp[self.soc_rows.ravel()] = True
        self.equality_rows = np.flatnonzero(~comp)
        self.degree = len(self.orthant_s) + len(self.soc_s)


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
        s = self.s
        # the cone structure, as the interior-point solver reads it
        self.orthant_s, self.orthant_g, self.orthant_rows = s.orthant_s, s.orthant_g, s.orthant_rows
        self.soc_s, self.soc_g, self.soc_rows = s.soc_s, s.soc_g, s.soc_rows
        self.equality_rows, self.degree = s.equality_rows, s.degree
        h = mech.timestep
        nb = mech.nb
        self.x2, self.v15, self.q2, self.w15 = unpack_maximal(z, nb)
        u = np.zeros(mech.nf) if u is None else np.asarray(u, dtype=float).reshape(-1)
        if u.shape != (mech.nf,):
            raise ValueError(f"input must have {mech.nf} entries (one per free coordinate), got {u.size}")
        self.u = u

        kin2 = joint_kinematics(mech, self.x2, self.q2)
        self.kin2 = kin2  # kept for the gradients' maps at z2 (simulation.gradients)
        _, jc2 = constraint_rows(mech, kin2)
        self.jg2 = jc2[mech.row_joint, mech.row_slot]  # (nl,12)

        # Impulses constant over the solve: inputs, springs, gravity, external wrench.
        gen = np.zeros((mech.nf, 12))
        jf2 = None
        if mech.has_springs or mech.has_dampers or mech.nlim:
            m2, jm2 = minimal_rows(mech, kin2)
            jf2 = jm2[mech.free_joint, mech.free_slot]  # (nf,12)
            spring_force = -mech.spring * (m2[mech.free_joint, mech.free_slot] - mech.spring_offset)
            gen += h * jf2 * spring_force[:, None]
        if np.any(u):
            ju2 = input_rows(mech, kin2)[mech.free_joint, mech.free_slot]
            gen += h * ju2 * u[:, None]
        applied = _scatter(s.free_cols, s.free_keep, gen, s.nv).reshape(nb, 6)
        wrench = np.zeros((nb, 6))
        wrench[:, :3] = mech.mass[:, None] * mech.gravity
        if f_ext is not None:
            wrench[:, :3] += np.asarray(f_ext, dtype=float).reshape(nb, 3)
        if tau_ext is not None:
            wrench[:, 3:] += np.asarray(tau_ext, dtype=float).reshape(nb, 3)
        self.constant = (momentum_left(mech, self.v15, self.w15) + h * wrench + applied).reshape(-1)

        # Damping: impulse -h Jf^T C Jf xi, constant matrix (Rayleigh on theta_dot).
        d = s.free_damped
        if d.size:
            self.jf_damped = jf2[d]
            self.damper_blocks = (h * mech.damper[d, None, None] * jf2[d, :, None] * jf2[d, None, :]).ravel()[
                s.damper_keep
            ]
        else:
            self.jf_damped = np.zeros((0, 12))
            self.damper_blocks = np.zeros(0)
        self.neg_jg2t = -self.jg2[s.row_keep]
        # Joint limits: impulse sigma Jf(z2)^T gamma on the limited coordinate.
        if mech.nlim:
            self.lim_map2 = mech.limit_sign[:, None] * jf2[mech.limit_free]  # (nlim,12)
        else:
            self.lim_map2 = np.zeros((0, 12))
        self._cache_w: np.ndarray | None = None

    # ------------------------------------------------------------ evaluation
    def split(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """v25 (nb,3), w25 (nb,3), lambda (nl,)."""
        xi = w[: self.s.nv].reshape(self.mech.nb, 6)
        return xi[:, :3], xi[:, 3:], w[self.s.lam]

    def next_configuration(self, v25: np.ndarray, w25: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x3 = x2 + h v25, q3 = q2 qmap(w25) (notes 2.2)."""
        return next_configuration(self.x2, self.q2, v25, w25, self.mech.timestep)

    def _evaluate(self, w: np.ndarray):
        if self._cache_w is not None and np.array_equal(w, self._cache_w):
            return self._cache
        mech, s = self.mech, self.s
        h = mech.timestep
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
            damp = h * mech.damper[s.free_damped, None] * rate[:, None] * self.jf_damped
            body += _scatter(cols, cols >= 0, damp, s.nv)
        res[s.lam] = c3[mech.row_joint, mech.row_slot]
        jm3 = None
        if mech.nlim:
            m3, jm3_all = minimal_rows(mech, kin3)
            theta = m3[mech.free_joint, mech.free_slot][mech.limit_free]
            jm3 = jm3_all[mech.free_joint, mech.free_slot][mech.limit_free] * mech.limit_sign[:, None]
            sl, gl = w[s.lim_s], w[s.lim_g]
            res[s.lim_s] = sl * gl
            res[s.lim_g] = sl - mech.limit_sign * (theta - mech.limit_bound)
            body -= _scatter(s.lim_cols, s.lim_keep, self.lim_map2 * gl[:, None], s.nv)
        contact = None
        if mech.nc:
            contact = evaluate_contacts(mech, s.contacts, w, x3, q3, v25, w25)
            body -= contact.body_impulse
            res[s.contacts.rows] = contact.residual
        res[: s.nv] = body
        self._cache_w = w.copy()
        self._cache = (res, jc3, w25, jm3, contact)
        return self._cache

    def residual(self, w: np.ndarray) -> np.ndarray:
        """(n,) residual at w (complementarity rows with kappa = 0)."""
        return self._evaluate(w)[0]

    def matrix_values(self, w: np.ndarray, soc_jacobians=None) -> np.ndarray:
        """Newton matrix slot values at w.

        Args:
            soc_jacobians: optional (d/ds, d/dgamma), each (ns, 3, 3), replacing the
                rows of the second-order-cone complementarity (scaled linearisation).
        """
        mech, s = self.mech, self.s
        _, jc3, w25, jm3, contact = self._evaluate(w)
        h = mech.timestep
        mw_ext = velocity_jacobians(w25, h)
        jg3 = jc3[mech.row_joint, mech.row_slot]  # (nl,12) wrt [xa, ta, xb, tb] at z3
        chained = chain_to_velocities(jg3, s.row_a, s.row_b, mw_ext, h)
        blocks = {
            "body": momentum_right_jacobian(mech, w25).ravel(),
            "damper": self.damper_blocks,
            "impulse_map": self.neg_jg2t,
            "constraint": chained[s.row_keep],
            "regularization": np.full(mech.nl, CONSTRAINT_REGULARIZATION),
        }
        if mech.nlim:
            sl, gl = w[s.lim_s], w[s.lim_g]
            blocks["limit_comp_s"] = gl
            blocks["limit_comp_g"] = sl
            blocks["limit_cons_s"] = np.ones(mech.nlim)
            blocks["limit_cons_body"] = -chain_to_velocities(jm3, s.lim_a, s.lim_b, mw_ext, h)[s.lim_keep]
            blocks["limit_map"] = -self.lim_map2[s.lim_keep]
        else:
            for name in ("limit_comp_s", "limit_comp_g", "limit_cons_s", "limit_cons_body", "limit_map"):
                blocks[name] = np.zeros(0)
        if mech.nc:
            blocks.update(contact.matrix_blocks(mw_ext, h, soc_jacobians))
        else:
            blocks.update(s.contacts.empty_blocks())
        values = np.concatenate([blocks[name] for name in s.block_names])
        return s.pattern.assemble(values)

    def factorize(self, w: np.ndarray, soc_jacobians=None):
        """Factorisation of the Newton matrix at w (see matrix_values)."""
        return self.s.pattern.factorize(self.matrix_values(w, soc_jacobians))

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
        """Warm start: previous midpoint velocities, lambda0 (or zero); cone
        variables at Dojo's starting values, strictly inside their cones."""
        s = self.s
        w0 = np.zeros(s.n)
        w0[: s.nv] = np.concatenate([self.v15, self.w15], axis=1).reshape(-1)
        if lam0 is not None:
            w0[s.lam] = lam0
        w0[s.lim_s] = LIMIT_START
        w0[s.lim_g] = LIMIT_START
        s.contacts.initialize(w0)
        return w0

    def next_state(self, w: np.ndarray) -> np.ndarray:
        """[x3, v25, q3, w25] per body, (13 nb,)."""
        v25, w25, _ = self.split(w)
        x3, q3 = self.next_configuration(v25, w25)
        return pack_maximal(x3, v25, quat.normalize(q3), w25)

    def contact_record(self, w: np.ndarray) -> ContactEvaluation | None:
        """Contact quantities at the solution (distance, impulses, slip), or None."""
        return self._evaluate(w)[4]


@functools.lru_cache(maxsize=64)
def core_options(opts: SolverOptions) -> _core.SolverOptions:
    """The core's copy of a (frozen, hashable) SolverOptions, converted once."""
    out = _core.SolverOptions()
    for name in ("rtol", "btol", "max_iter", "max_ls", "ls_scale", "undercut", "no_progress_max", "no_progress_undercut"):
        setattr(out, name, getattr(opts, name))
    return out


def _vector(a, size: int, what: str) -> np.ndarray | None:
    """a as a contiguous float64 vector of ``size`` entries, or None."""
    if a is None:
        return None
    out = np.ascontiguousarray(a, dtype=float).reshape(-1)
    if out.size != size:
        raise ValueError(f"{what} must have {size} entries, got {out.size}")
    return out


def core_step(
    mech: Mechanism, z, u, opts: SolverOptions, f_ext=None, tau_ext=None, lam0=None, log=None
) -> tuple[np.ndarray, SolverResult]:
    """One step in the C++ core (one call); returns (next state, solver result)."""
    data = mech.core_data
    code = _core.step(
        mech.core, data, _vector(z, 13 * mech.nb, "state"), _vector(u, mech.nf, "input"),
        _vector(f_ext, 3 * mech.nb, "f_ext"), _vector(tau_ext, 3 * mech.nb, "tau_ext"),
        _vector(lam0, mech.nl, "lambda0"), core_options(opts),
    )
    if log is not None:
        inequalities = mech.has_inequalities
        for it, res, bvio, alpha, kappa, step_norm, rvio in data.log:
            rec = {"iteration": int(it), "residual": res, "alpha": alpha, "step": step_norm}
            if inequalities:
                rec.update(bvio=bvio, rvio=rvio, kappa=kappa)
            log(rec)
    result = SolverResult(data.w.copy(), STATUS_FROM_CODE[code], data.iterations, data.residual, None, data.complementarity)
    return data.z_next.copy(), result


def solve_step(
    mech: Mechanism, z, u=None, opts: SolverOptions | None = None, f_ext=None, tau_ext=None, lam0=None, log=None
) -> tuple[np.ndarray, SolverResult]:
    """Solve one step in the C++ core; returns (next state, solver result).

    The contact records of the solution are in ``mech.core_data`` (contact_distance,
    contact_normal_impulse, contact_friction_impulse, contact_slip) until the next step.
    """
    return core_step(mech, z, u, opts or SolverOptions(), f_ext, tau_ext, lam0, log)


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
