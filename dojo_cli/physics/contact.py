"""Contact models: impact, linearized (pyramidal) and nonlinear (second-order) cones.

Dojo's contact constraints (dojo_engine_notes.md 4.2), evaluated at the next
configuration z3 and velocity xi25. Per contact, unknowns s (slacks) and gamma
(impulses), each of half size N:
- impact (N = 1): gamma = (gn), s = (sn);
  rows: gn sn = kappa; d - sn = 0.
- nonlinear (N = 4): gamma = (gn, psi, b1, b2), s = (sn, e0, e1, e2);
  rows: gn sn = kappa; cone_product((psi, b), (e0, e1, e2)) = kappa (1, 0, 0);
        d - sn = 0; mu gn - psi = 0; vt - (e1, e2) = 0.
  (psi, b) and (e0, e1, e2) lie in second-order cones: |b| <= psi = mu gn and
  e0 >= |vt|; complementarity makes b oppose the sliding velocity (maximum dissipation).
- linear (N = 6): gamma = (gn, psi, b1..b4), s = (sn, s_psi, sb1..sb4), all >= 0;
  rows: gamma o s = kappa; d - sn = 0; mu gn - sum b - s_psi = 0;
        P vt + psi - sb = 0 with P = [[0, 1], [0, -1], [1, 0], [-1, 0]]
  (friction directions +t2, -t2, +t1, -t1).
The contact force on body a is f = n gn + T^T bt (bt = b, or P^T b for the
pyramid) at its contact point; body b receives -f at its own contact point.
d, n, T and the points come from physics.collision as Jets, so the Newton
matrix gets the exact derivatives of the wrench and of vt with respect to z3.
Residual rows of a contact: its complementarity rows sit at its s indices and its
constraint rows at its gamma indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.math.jet import Jet, body_pose, unrotate
from dojo_cli.math.cones import arrow, cone_product
from dojo_cli.math.quaternion import cross, matrix_from_quaternion, skew
from dojo_cli.model.mechanism import CONTACT_HALF_SIZE, ORIGIN, Mechanism
from dojo_cli.physics import collision
from dojo_cli.physics.integrator import chain_to_velocities

# Dojo's starting value of every cone variable after its initialisation shift
# (notes 5.3: neutral vectors shifted to 1.5 in the orthant, (1.5, 0, 0) in SOCs).
CONE_START = 1.5
# Pyramid friction directions in the tangent basis (+t2, -t2, +t1, -t1).
PYRAMID = np.array([[0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]])
# gamma -> force coefficients (gn, bt1, bt2) per model.
FORCE_MAP = {
    "impact": np.array([[1.0], [0.0], [0.0]]),
    "nonlinear": np.array([[1.0, 0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]),
    "linear": np.vstack([[1.0, 0, 0, 0, 0, 0], np.hstack([np.zeros((2, 2)), PYRAMID.T])]),
}
MODELS = ("impact", "nonlinear", "linear")
# Jacobian columns with parameters: [x_a, t_a, x_b, t_b] then the contact's offset (3) and radius.
PARAMETER_COLUMNS = 16


def _local_constant(model: str) -> np.ndarray:
    """d(constraint rows)/d[s, gamma] without the mu entry, (N, 2N)."""
    n = CONTACT_HALF_SIZE[model]
    m = np.zeros((n, 2 * n))
    m[0, 0] = -1.0  # d - sn
    if model == "nonlinear":
        m[1, n + 1] = -1.0  # mu gn - psi
        m[2, 2] = m[3, 3] = -1.0  # vt - (e1, e2)
    elif model == "linear":
        m[1, n + 2 : n + 6] = -1.0  # - sum b
        m[1, 1] = -1.0  # - s_psi
        m[2:6, n + 1] = 1.0  # + psi
        m[2:6, 2:6] = -np.eye(4)  # - sb
    return m


class ContactStructure:
    """Index layout and parameters of a mechanism's contacts (built once).

    Args:
        mech: the mechanism.
        start: index in w of the first contact unknown.
    """

    def __init__(self, mech: Mechanism, start: int):
        self.nc = mech.nc
        nb = mech.nb
        half = np.array([CONTACT_HALF_SIZE[c.model] for c in mech.contacts], dtype=int)
        base = start + np.concatenate([[0], np.cumsum(2 * half)[:-1]]) if self.nc else np.zeros(0, int)
        self.end = int(start + 2 * half.sum())
        self.half = half
        self.base = base
        self.rows = np.concatenate([b + np.arange(2 * n) for b, n in zip(base, half)]) if self.nc else np.zeros(0, int)
        self.body_a = np.array([c.body for c in mech.contacts], dtype=int)
        self.body_b = np.array([nb if c.other == ORIGIN else c.other for c in mech.contacts], dtype=int)
        self.mu = np.array([c.friction for c in mech.contacts], dtype=float)
        cols = np.full((self.nc, 12), -1, dtype=int)
        for i, c in enumerate(mech.contacts):
            cols[i, :6] = 6 * c.body + np.arange(6)
            if c.other != ORIGIN:
                cols[i, 6:] = 6 * c.other + np.arange(6)
        self.pair_cols = cols
        self.pair_keep = cols >= 0

        # model groups: contacts of one model, their s and gamma indices (k, N)
        self.groups = {}
        for model in MODELS:
            idx = np.array([i for i, c in enumerate(mech.contacts) if c.model == model], dtype=int)
            n = CONTACT_HALF_SIZE[model]
            s_idx = base[idx, None] + np.arange(n) if idx.size else np.zeros((0, n), int)
            self.groups[model] = (idx, s_idx, s_idx + n)

        # collision kind groups with stacked parameters
        self.kinds = {}
        for kind in ("halfspace", "sphere", "capsule", "box"):
            idx = [i for i, c in enumerate(mech.contacts) if c.kind == kind]
            if not idx:
                continue
            cs = [mech.contacts[i] for i in idx]
            params = {key: np.array([np.asarray(c.params[key], dtype=float) for c in cs]) for key in cs[0].params}
            self.kinds[kind] = (
                np.array(idx, dtype=int),
                np.array([c.offset for c in cs], dtype=float).reshape(len(cs), 3),
                np.array([c.radius for c in cs], dtype=float),
                params,
            )

        # constant part of each group's constraint-row Jacobian wrt [s, gamma] (mu set per step)
        self.local = {}
        for model, (idx, _, _) in self.groups.items():
            constant = _local_constant(model)
            local = np.broadcast_to(constant, (len(idx),) + constant.shape).copy()
            if model != "impact" and idx.size:
                local[:, 1, CONTACT_HALF_SIZE[model]] = self.mu[idx]  # mu gn
            self.local[model] = local

        # where each group's complementarity rows (at s) and constraint rows (at gamma)
        # sit in the contact residual vector (ordered as self.rows)
        self.positions = {}
        order = np.argsort(self.rows)
        for model, (idx, s_idx, g_idx) in self.groups.items():
            pos = lambda r: order[np.searchsorted(self.rows, r, sorter=order)]  # noqa: E731
            self.positions[model] = (pos(s_idx), pos(g_idx)) if idx.size else None

        # cone structure
        orth_s, orth_g, soc_s, soc_g = [], [], [], []
        for model, (idx, s_idx, g_idx) in self.groups.items():
            if not idx.size:
                continue
            if model == "nonlinear":
                orth_s.append(s_idx[:, 0])
                orth_g.append(g_idx[:, 0])
                soc_s.append(s_idx[:, 1:4])
                soc_g.append(g_idx[:, 1:4])
            else:
                orth_s.append(s_idx.ravel())
                orth_g.append(g_idx.ravel())
        self.orthant_s = np.concatenate(orth_s) if orth_s else np.zeros(0, int)
        self.orthant_g = np.concatenate(orth_g) if orth_g else np.zeros(0, int)
        self.soc_s = np.concatenate(soc_s) if soc_s else np.zeros((0, 3), int)
        self.soc_g = np.concatenate(soc_g) if soc_g else np.zeros((0, 3), int)

    # --------------------------------------------------------------- pattern
    def add_pattern(self, p) -> None:
        """Add the contact blocks to a step pattern (names prefixed ``contact_``)."""
        self._keep = {}
        for model in MODELS:
            idx, s_idx, g_idx = self.groups[model]
            n = CONTACT_HALF_SIZE[model]
            local = np.concatenate([s_idx, g_idx], axis=1)  # (k, 2N) columns
            # complementarity rows (at s) and constraint rows (at gamma) wrt [s, gamma]
            p.add(f"contact_comp_{model}", s_idx[:, :, None], local[:, None, :])
            p.add(f"contact_cons_{model}", g_idx[:, :, None], local[:, None, :])
            cols = self.pair_cols[idx]  # (k, 12)
            keep_rc = np.broadcast_to(cols[:, None, :] >= 0, (len(idx), n, 12))
            self._keep[f"contact_body_{model}"] = keep_rc
            p.add(
                f"contact_body_{model}",
                np.broadcast_to(g_idx[:, :, None], keep_rc.shape)[keep_rc],
                np.broadcast_to(cols[:, None, :], keep_rc.shape)[keep_rc],
            )
            keep_map = np.broadcast_to(cols[:, :, None] >= 0, (len(idx), 12, n))
            self._keep[f"contact_map_{model}"] = keep_map
            p.add(
                f"contact_map_{model}",
                np.broadcast_to(cols[:, :, None], keep_map.shape)[keep_map],
                np.broadcast_to(g_idx[:, None, :], keep_map.shape)[keep_map],
            )
        keep_bb = (self.pair_cols[:, :, None] >= 0) & (self.pair_cols[:, None, :] >= 0)
        self._keep["contact_body_body"] = keep_bb
        p.add(
            "contact_body_body",
            np.broadcast_to(self.pair_cols[:, :, None], keep_bb.shape)[keep_bb],
            np.broadcast_to(self.pair_cols[:, None, :], keep_bb.shape)[keep_bb],
        )

    def empty_blocks(self) -> dict[str, np.ndarray]:
        """Values of the contact blocks of a mechanism without contacts."""
        names = [f"contact_{kind}_{m}" for m in MODELS for kind in ("comp", "cons", "body", "map")]
        return {name: np.zeros(0) for name in names + ["contact_body_body"]}

    def initialize(self, w0: np.ndarray) -> None:
        """Dojo's starting point: orthant entries 1.5, second-order cones (1.5, 0, 0)."""
        for model, (idx, s_idx, g_idx) in self.groups.items():
            if not idx.size:
                continue
            w0[s_idx] = CONE_START
            w0[g_idx] = CONE_START
            if model == "nonlinear":
                w0[s_idx[:, 2:4]] = 0.0
                w0[g_idx[:, 2:4]] = 0.0


@dataclass
class ContactEvaluation:
    """Contact quantities at one iterate.

    Attributes:
        residual: values of the contact rows, in ``ContactStructure.rows`` order.
        body_impulse: (6 nb,) contact impulses on the bodies.
        distance: (nc,) signed distance at z3; normal_impulse: (nc,) gn;
        friction_impulse: (nc, 2) bt in the tangent basis; slip: (nc, 2) vt.
    """

    residual: np.ndarray
    body_impulse: np.ndarray
    distance: np.ndarray
    normal_impulse: np.ndarray
    friction_impulse: np.ndarray
    slip: np.ndarray
    _blocks: dict

    def matrix_blocks(self, mw_ext: np.ndarray, h: float, soc_jacobians=None) -> dict[str, np.ndarray]:
        """Newton-matrix values of the contact blocks, in the pattern's order.

        Args:
            mw_ext: (nb+1, 3, 3) dt3/dw25 per body (world block zero).
            h: timestep.
            soc_jacobians: optional (d/ds, d/dgamma) (ns, 3, 3) for the second-order-cone
                complementarity rows of the nonlinear contacts, in group order.
        """
        cs = self._blocks["cs"]
        a, b = self._blocks["a"], self._blocks["b"]
        out = {}
        for model in MODELS:
            idx = cs.groups[model][0]
            if model not in self._blocks["models"]:
                for kind in ("comp", "cons", "body", "map"):
                    out[f"contact_{kind}_{model}"] = np.zeros(0)
                continue
            comp_jac, local, (z3, direct), impulse_map = self._blocks["models"][model]
            if model == "nonlinear" and soc_jacobians is not None:
                n = CONTACT_HALF_SIZE[model]
                comp_jac = comp_jac.copy()
                comp_jac[:, 1:4, 1:4], comp_jac[:, 1:4, n + 1 : n + 4] = soc_jacobians
            body = chain_to_velocities(z3[..., :12], a[idx], b[idx], mw_ext, h) + direct
            out[f"contact_comp_{model}"] = comp_jac.ravel()
            out[f"contact_cons_{model}"] = local.ravel()
            out[f"contact_body_{model}"] = body[cs._keep[f"contact_body_{model}"]]
            out[f"contact_map_{model}"] = -impulse_map[cs._keep[f"contact_map_{model}"]]
        body_body = -chain_to_velocities(self._blocks["wrench_jac"][..., :12], a, b, mw_ext, h)
        out["contact_body_body"] = body_body[cs._keep["contact_body_body"]]
        return out


def _with_world(x3, q3):
    """Positions (nb+1,3) and orientations (nb+1,4) with the world appended as body nb."""
    return np.vstack([x3, np.zeros((1, 3))]), np.vstack([q3, [[1.0, 0.0, 0.0, 0.0]]])


def _parameter_columns(g, qa) -> None:
    """Append d/d(offset_a (3), radius_a) to a kind's geometry Jets (in place, 16 columns).

    Every collision function sees body a only through its sphere centre
    c = x_a + R(q_a) offset_a (collision._sphere_centre) and the radius, which enters
    as distance - radius and point_a = c - radius n. So d/d offset_a = (d/d x_a) R(q_a),
    d distance/d radius = -1, d point_a/d radius = -n, and the rest do not depend on it.
    """
    rot = matrix_from_quaternion(qa)  # (k, 3, 3)
    for name in ("distance", "normal", "tangent", "point_a", "point_b"):
        jet = getattr(g, name)
        shape = jet.value.shape  # (k, ...)
        lead = jet.jac[..., 0:3].reshape(shape[0], -1, 3)
        d_offset = (lead @ rot).reshape(shape + (3,))
        d_radius = np.zeros(shape + (1,))
        if name == "distance":
            d_radius[..., 0] = -1.0
        elif name == "point_a":
            d_radius[..., 0] = -g.normal.value
        setattr(g, name, Jet(jet.value, np.concatenate([jet.jac, d_offset, d_radius], axis=-1)))


def _geometry(cs: ContactStructure, xe, qe, parameters: bool = False):
    """Per-contact distance, normal, tangent and points (Jets) at z3.

    Jacobian columns [x_a, t_a, x_b, t_b] (12), then with ``parameters`` the
    contact's own [offset (3), radius (1)] (16 columns).

    Args:
        xe, qe: (nb+1, 3), (nb+1, 4) next configuration with the world appended (_with_world).
    """
    nc = cs.nc
    cols = PARAMETER_COLUMNS if parameters else 12
    d = Jet(np.zeros(nc), np.zeros((nc, cols)))
    n = Jet(np.zeros((nc, 3)), np.zeros((nc, 3, cols)))
    t = Jet(np.zeros((nc, 2, 3)), np.zeros((nc, 2, 3, cols)))
    pa = Jet(np.zeros((nc, 3)), np.zeros((nc, 3, cols)))
    pb = Jet(np.zeros((nc, 3)), np.zeros((nc, 3, cols)))
    for kind, (idx, offset, radius, params) in cs.kinds.items():
        a, b = cs.body_a[idx], cs.body_b[idx]
        xa, qa, xb, qb = xe[a], qe[a], xe[b], qe[b]
        if kind == "halfspace":
            g = collision.sphere_halfspace(xa, qa, offset, radius, params["normal"], params["point"])
        elif kind == "sphere":
            g = collision.sphere_sphere(xa, qa, offset, radius, xb, qb, params["offset"], params["radius"])
        elif kind == "capsule":
            g = collision.sphere_capsule(xa, qa, offset, radius, xb, qb, params["end1"], params["end2"], params["radius"])
        else:
            g = collision.sphere_box(xa, qa, offset, radius, xb, qb, params["centre"], params["half_sizes"])
        if parameters:
            _parameter_columns(g, qa)
        for full, part in ((d, g.distance), (n, g.normal), (t, g.tangent), (pa, g.point_a), (pb, g.point_b)):
            full.value[idx] = part.value
            full.jac[idx] = part.jac
    return d, n, t, pa, pb


def evaluate_contacts(
    mech: Mechanism, cs: ContactStructure, w, x3, q3, v25, w25, parameters: bool = False
) -> ContactEvaluation:
    """Residual rows, body impulses and matrix data of all contacts at an iterate.

    Args:
        w: (n,) unknowns; x3 (nb,3), q3 (nb,4): next configuration; v25, w25 (nb,3).
        parameters: also carry derivatives with respect to each contact's sphere
            offset and radius (Jacobian columns 12:16; for parameter gradients).
    """
    nb = mech.nb
    nc = cs.nc
    cols = PARAMETER_COLUMNS if parameters else 12
    xe, qe = _with_world(x3, q3)
    d, n, t, pa, pb = _geometry(cs, xe, qe, parameters)
    a, b = cs.body_a, cs.body_b
    world_b = b == nb
    ve = np.vstack([v25, np.zeros((1, 3))])
    we = np.vstack([w25, np.zeros((1, 3))])
    pos_a, rot_a, rotate_a = body_pose(xe[a], qe[a], 0, cols)
    pos_b, rot_b, rotate_b = body_pose(xe[b], qe[b], 6, cols)
    # the world as body b: no columns
    pos_b.jac[world_b] = 0.0
    ra = pa - pos_a
    rb = pb - pos_b

    # relative velocity of the contact points: v + (R w) x r, as a Jet in z3
    wa_world = rotate_a(we[a])
    wb_world = rotate_b(we[b])
    wb_world.jac[world_b] = 0.0
    dv = (wa_world.cross(ra) + ve[a]) - (wb_world.cross(rb) + ve[b])
    vt_value = np.einsum("cij,cj->ci", t.value, dv.value)
    vt_jac = np.einsum("cijk,cj->cik", t.jac, dv.value) + np.einsum("cij,cjk->cik", t.value, dv.jac)
    # direct dependence on xi25 = (va, wa, vb, wb): d(R w x r)/dw = -[r]x R
    direct = np.zeros((nc, 3, 12))
    direct[:, :, 0:3] = np.eye(3)
    direct[:, :, 3:6] = -skew(ra.value) @ rot_a
    direct[:, :, 6:9] = -np.eye(3)
    direct[:, :, 9:12] = skew(rb.value) @ rot_b
    direct[world_b, :, 6:12] = 0.0
    vt_direct = np.einsum("cij,cjk->cik", t.value, direct)

    # force coefficients (gn, bt1, bt2) per contact from the gamma unknowns
    coef = np.zeros((nc, 3))
    for model, (idx, _, g_idx) in cs.groups.items():
        if idx.size:
            coef[idx] = w[g_idx] @ FORCE_MAP[model].T
    force = n * coef[:, 0:1] + Jet(
        np.einsum("ck,ckj->cj", coef[:, 1:], t.value), np.einsum("ck,ckjm->cjm", coef[:, 1:], t.jac)
    )
    wrench = _wrench(force, ra, rb, rot_a, rot_b, world_b)  # (nc, 12) Jet in z3
    body_impulse = np.bincount(cs.pair_cols[cs.pair_keep], weights=wrench.value[cs.pair_keep], minlength=6 * nb)

    # generalised directions of unit n, t1, t2 (the impulse map per force coefficient)
    dirs = np.stack([n.value, t.value[:, 0], t.value[:, 1]], axis=1)  # (nc, 3, 3)
    unit = np.zeros((nc, 12, 3))
    for k in range(3):
        u = dirs[:, k]
        unit[:, 0:3, k] = u
        unit[:, 3:6, k] = np.einsum("cji,cj->ci", rot_a, cross(ra.value, u))
        unit[:, 6:9, k] = -u
        unit[:, 9:12, k] = -np.einsum("cji,cj->ci", rot_b, cross(rb.value, u))
    unit[world_b, 6:12] = 0.0

    residual = np.empty(len(cs.rows))
    blocks: dict[str, np.ndarray] = {}
    for model, (idx, s_idx, g_idx) in cs.groups.items():
        if not idx.size:
            continue
        comp, cons, comp_jac, cons_body = _model_rows(
            model, w[s_idx], w[g_idx], d.value[idx], cs.mu[idx], vt_value[idx]
        )
        comp_pos, cons_pos = cs.positions[model]
        residual[comp_pos] = comp
        residual[cons_pos] = cons
        blocks[model] = (comp_jac, cs.local[model], cons_body(d.jac[idx], vt_jac[idx], vt_direct[idx]), unit[idx] @ FORCE_MAP[model])

    ev = ContactEvaluation(
        residual=residual,
        body_impulse=body_impulse,
        distance=d.value.copy(),
        normal_impulse=coef[:, 0].copy(),
        friction_impulse=coef[:, 1:].copy(),
        slip=vt_value.copy(),
        _blocks={"models": blocks, "wrench_jac": wrench.jac, "a": np.where(a == nb, nb, a), "b": b, "cs": cs},
    )
    return ev


def _wrench(force: Jet, ra: Jet, rb: Jet, rot_a, rot_b, world_b) -> Jet:
    """[f; R_a^T (ra x f); -f; R_b^T (rb x -f)] as a (nc, 12) Jet."""
    ta = unrotate(rot_a, 0, ra.cross(force))
    tb = unrotate(rot_b, 6, rb.cross(-force))
    value = np.concatenate([force.value, ta.value, -force.value, tb.value], axis=1)
    jac = np.concatenate([force.jac, ta.jac, -force.jac, tb.jac], axis=1)
    value[world_b, 6:] = 0.0
    jac[world_b, 6:] = 0.0
    return Jet(value, jac)


def _model_rows(model, s, g, d, mu, vt):
    """Residual rows and local Jacobians of one model group.

    Returns:
        comp (k, N), cons (k, N), comp_jac (k, N, 2N) wrt [s, gamma],
        cons_body(dJ, vtJ, vt_direct) -> (k, N, 12) body Jacobian (before chaining
        the z3 parts; see ContactEvaluation.matrix_blocks).
    """
    k, n = s.shape
    comp_jac = np.zeros((k, n, 2 * n))
    if model == "impact":
        comp = g * s
        cons = (d - s[:, 0])[:, None]
        comp_jac[:, 0, 0] = g[:, 0]
        comp_jac[:, 0, 1] = s[:, 0]
    elif model == "nonlinear":
        psi_b, eta = g[:, 1:4], s[:, 1:4]
        comp = np.concatenate([(g[:, 0] * s[:, 0])[:, None], cone_product(psi_b, eta)], axis=1)
        cons = np.column_stack([d - s[:, 0], mu * g[:, 0] - g[:, 1], vt - s[:, 2:4]])
        comp_jac[:, 0, 0] = g[:, 0]
        comp_jac[:, 0, n] = s[:, 0]
        comp_jac[:, 1:4, 1:4] = arrow(psi_b)  # d/d eta
        comp_jac[:, 1:4, n + 1 : n + 4] = arrow(eta)  # d/d (psi, b)
    else:
        comp = g * s
        cons = np.column_stack([d - s[:, 0], mu * g[:, 0] - g[:, 2:].sum(axis=1) - s[:, 1], vt @ PYRAMID.T + g[:, 1:2] - s[:, 2:]])
        idx = np.arange(n)
        comp_jac[:, idx, idx] = g
        comp_jac[:, idx, n + idx] = s

    def cons_body(d_jac, vt_jac, vt_direct):
        """(k, N, 12) wrt z3 (chained later) and the direct xi part, as a pair."""
        z3 = np.zeros((k, n, d_jac.shape[-1]))
        direct = np.zeros((k, n, 12))
        z3[:, 0] = d_jac
        if model == "nonlinear":
            z3[:, 2:4] = vt_jac
            direct[:, 2:4] = vt_direct
        elif model == "linear":
            z3[:, 2:6] = np.einsum("pj,cjk->cpk", PYRAMID, vt_jac)
            direct[:, 2:6] = np.einsum("pj,cjk->cpk", PYRAMID, vt_direct)
        return z3, direct

    return comp, cons, comp_jac, cons_body
