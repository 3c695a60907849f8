// The step's Newton matrix (newton_matrix.h).
#include "newton_matrix.h"

#include <algorithm>
#include <cmath>

#include "body_maps.h"
#include "dynamics.h"
#include "kinematics.h"
#include "residual.h"
#include "restitution.h"
#include "rotor.h"

namespace dojo {

namespace {

// Block access: block id -> (values, number of columns).
struct BlockRef {
  double* v;
  int cols;
  double& at(int i, int j) { return v[i * cols + j]; }
};
inline BlockRef block(const Model& m, Data& d, int id) {
  return BlockRef{d.matrix.data() + m.blocks.block_offset[id], m.blocks.size(m.blocks.block_col[id])};
}

}  // namespace

void step_matrix(const Model& m, Data& d, const double* w, double regularization, ContactZ3* contact_z3) {
  const double h = m.h;
  std::fill(d.matrix.begin(), d.matrix.end(), 0.0);
  // kinematics once per iterate: the residual at these unknowns left the configuration at
  // z3 and the rows' Jacobians (residual.h rows3_at); else they are evaluated here
  const bool kept = rows3_at(m, d, w);
  if (kept)
    integrator_map_jacobians(m, d, w);
  else
    next_configuration(m, d, w, true);
  double jac[36];
  for (int b = 0; b < m.nb; ++b) {
    momentum_jacobian(m.mass[b], body_inertia(m, b), load3<double>(w + 6 * b + 3), h, 1.0, jac);
    BlockRef blk = block(m, d, m.blk_body[b]);
    for (int i = 0; i < 36; ++i) blk.v[i] += jac[i];
  }
  // rotors: d right / d w25 over [parent, child] (rotor.h)
  for (int r = 0; r < m.nr; ++r) {
    const int j = m.rotor_joint[r], a = m.parent[j], c = m.child[j];
    if (m.rotor_linear[r]) {  // a n n^T on the child's linear block
      double lj[9];
      linear_rotor_jacobian(m, r, lj);
      BlockRef blk = block(m, d, m.blk_body[c]);
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) blk.at(i, k) += lj[3 * i + k];
      continue;
    }
    double rj[2][2][9];
    rotor_jacobian(m, r, a == kWorld ? nullptr : w + 6 * a + 3, w + 6 * c + 3, h, 1.0, rj);
    const int ids[2][2] = {{a == kWorld ? -1 : m.blk_body[a], a == kWorld ? -1 : m.blk_body_body[j]},
                           {a == kWorld ? -1 : m.blk_body_body_t[j], m.blk_body[c]}};
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) {
        if (ids[p][q] < 0) continue;
        BlockRef blk = block(m, d, ids[p][q]);
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < 3; ++k) blk.at(3 + i, 3 + k) += rj[p][q][3 * i + k];
      }
  }
  // dampers: damper_weight Jf Jf^T over [parent, child] (a constant matrix)
  for (int f : m.damped_free) {
    const int j = m.free_joint[f];
    const double* jf = &d.jf2[12 * f];
    const double c = damper_weight(m, f);
    const int a = m.parent[j], b = m.child[j];
    const int ids[2][2] = {{a == kWorld ? -1 : m.blk_body[a], m.blk_body_body[j]},
                           {m.blk_body_body_t[j], m.blk_body[b]}};
    for (int p = 0; p < 2; ++p)
      for (int q = 0; q < 2; ++q) {
        if (ids[p][q] < 0) continue;
        BlockRef blk = block(m, d, ids[p][q]);
        for (int i = 0; i < 6; ++i)
          for (int k = 0; k < 6; ++k) blk.at(i, k) += c * jf[6 * p + i] * jf[6 * q + k];
      }
  }
  JointKinematics<double> kin;
  JointRow<double> row;
  double chained[6];
  for (int j = 0; j < m.nj; ++j) {
    const int jn = m.joint_node[j];
    if (jn < 0) continue;
    const int r0 = m.joint_row_start[j], r1 = m.joint_row_start[j + 1];
    const int l0 = m.joint_limit_start[j], l1 = m.joint_limit_start[j + 1];
    const int bodies[2] = {m.parent[j], m.child[j]};
    // the rows' Jacobians at z3: those the residual at these unknowns kept, or from the
    // configuration it kept (residual.h deferred_joint_jacobians), or evaluated here
    const bool deferred = kept && deferred_joint_jacobians(m, j);
    if (deferred)
      joint_kinematics_jacobians(m, j, pose_of(d.x3.data(), d.q3.data(), d.rot3.data(), m.parent[j]),
                                 pose_of(d.x3.data(), d.q3.data(), d.rot3.data(), m.child[j]), d.kin3[j]);
    if (!kept) joint_kinematics_at(m, j, d.x3.data(), d.q3.data(), d.rot3.data(), kin);
    BlockRef diag = block(m, d, m.blk_joint_diag[j]);
    // the joint's blocks against its bodies, looked up once per joint (not per row: each
    // lookup is a chain of dependent loads the row's writes then wait on)
    BlockRef bj[2] = {{nullptr, 0}, {nullptr, 0}}, jb[2] = {{nullptr, 0}, {nullptr, 0}};
    for (int s = 0; s < 2; ++s) {
      if (bodies[s] == kWorld) continue;
      bj[s] = block(m, d, m.blk_body_joint[s][j]);
      jb[s] = block(m, d, m.blk_joint_body[s][j]);
    }
    for (int rr = r0; rr < r1; ++rr) {
      const int li = m.local_index[m.lam + rr];
      const double* jac3 = &d.jg3[12 * rr];
      if (!kept || deferred) {
        joint_row(m, j, rr, deferred ? d.kin3[j] : kin, d.lock_d2.data(), d.lock_q2.data(), row);
        jac3 = row.jac;
      }
      for (int s = 0; s < 2; ++s) {
        if (bodies[s] == kWorld) continue;
        // impulse map -Jg(z2)^T (body rows, lambda column)
        for (int k = 0; k < 6; ++k) bj[s].at(k, li) -= d.jg2[12 * rr + 6 * s + k];
        // constraint Jg(z3) dz3/dxi25 (lambda row, body columns)
        chain6(jac3 + 6 * s, &d.mw[9 * bodies[s]], h, chained);
        for (int k = 0; k < 6; ++k) jb[s].at(li, k) += chained[k];
      }
      diag.at(li, li) += regularization;
    }
    if (l0 == l1) continue;
    Vec3<double> rv{};
    if (!kept) rv = rotation_vector(kin.q_rel);
    for (int l = l0; l < l1; ++l) {
      const int f = m.limit_free[l];
      const int ls = m.local_index[m.lim_s + l], lg = m.local_index[m.lim_g + l];
      const double s = w[m.lim_s + l], g = w[m.lim_g + l], sign = m.limit_sign[l];
      diag.at(ls, ls) += g;  // d(s gamma)/ds
      diag.at(ls, lg) += s;  // d(s gamma)/dgamma
      diag.at(lg, ls) += 1.0;
      const double* jac3 = &d.jl3[12 * l];
      if (!kept) {
        limit_row(m, j, f, kin, rv, &d.qrel2[4 * j], d.angle2[f], row);
        jac3 = row.jac;
      }
      for (int side = 0; side < 2; ++side) {
        if (bodies[side] == kWorld) continue;
        chain6(jac3 + 6 * side, &d.mw[9 * bodies[side]], h, chained);
        for (int k = 0; k < 6; ++k) jb[side].at(lg, k) -= sign * chained[k];
        for (int k = 0; k < 6; ++k) bj[side].at(k, lg) -= sign * d.jf2[12 * f + 6 * side + k];
      }
    }
  }
  // joint friction (residual.h): its rows in the joint's node; the rate Jf(z2) xi25 is
  // linear in the body velocities (Jf at z2: no chain through z3)
  for (int k = 0; k < m.nfr; ++k) {
    const int f = m.friction_free[k], j = m.free_joint[f];
    const double* jf = &d.jf2[12 * f];
    const int bodies[2] = {m.parent[j], m.child[j]};
    BlockRef diag = block(m, d, m.blk_joint_diag[j]);
    int ls[2], lg[2];
    for (int i = 0; i < 2; ++i) {
      ls[i] = m.local_index[m.fr_s + 2 * k + i];
      lg[i] = m.local_index[m.fr_g + 2 * k + i];
      diag.at(ls[i], ls[i]) += w[m.fr_g + 2 * k + i];  // d(s v)/ds
      diag.at(ls[i], lg[i]) += w[m.fr_s + 2 * k + i];  // d(s v)/dv
      diag.at(lg[i], ls[i]) += 1.0;                    // s -+ ... - h F +- beta
    }
    const int lb = m.local_index[m.fr_b + k];
    diag.at(lg[0], lb) += 1.0;   // s+ - h F + beta
    diag.at(lg[1], lb) -= 1.0;   // s- - h F - beta
    diag.at(lb, lg[0]) += 1.0;   // Jf xi25 - v- + v+
    diag.at(lb, lg[1]) -= 1.0;
    for (int side = 0; side < 2; ++side) {
      if (bodies[side] == kWorld) continue;
      BlockRef jb = block(m, d, m.blk_joint_body[side][j]);
      BlockRef bj = block(m, d, m.blk_body_joint[side][j]);
      for (int c = 0; c < 6; ++c) {
        const double a = jf[6 * side + c];
        jb.at(lb, c) += a;
        bj.at(c, lb) -= a;  // body rows: -Jf^T beta
      }
    }
  }
  // contacts: local unknowns [s (N), gamma (N)]; complementarity rows at s, constraint
  // rows at gamma; the body rows subtract the wrench (contact.h's signs)
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) {  // left out of this solve: the identity on its unknowns
      BlockRef diag = block(m, d, m.blk_contact_diag[c]);
      for (int i = 0; i < diag.cols; ++i) diag.at(i, i) = 1.0;
      continue;
    }
    const ContactEval& ev = evaluate_step_contact(m, d, w, c, ContactOutput::Jacobians);
    const int n = ev.n;
    if (contact_z3) {
      std::copy(&ev.cons_z3[0][0], &ev.cons_z3[0][0] + 12 * n, &contact_z3[c].cons[0][0]);
      std::copy(&ev.wrench_z3[0][0], &ev.wrench_z3[0][0] + 144, &contact_z3[c].wrench[0][0]);
    }
    BlockRef diag = block(m, d, m.blk_contact_diag[c]);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < 2 * n; ++k) {
        diag.at(i, k) += ev.comp_jac[i][k];
        diag.at(n + i, k) += ev.cons_local[i][k];
      }
    const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
    for (int side = 0; side < 2; ++side) {
      const int b = bodies[side];
      if (b == kWorld) continue;
      BlockRef cb = block(m, d, m.blk_contact_body[side][c]);
      BlockRef bc = block(m, d, m.blk_body_contact[side][c]);
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < 6; ++k) {
          cb.at(n + i, k) += ev.cons_body[i][6 * side + k];
          bc.at(k, n + i) -= ev.wrench_gamma[6 * side + k][i];
        }
      for (int other = 0; other < 2; ++other) {
        if (bodies[other] == kWorld) continue;
        const int id = side == other ? m.blk_body[b] : m.blk_contact_ab[side][c];
        BlockRef bb = block(m, d, id);
        for (int i = 0; i < 6; ++i)
          for (int k = 0; k < 6; ++k) bb.at(i, k) -= ev.wrench_body[6 * side + i][6 * other + k];
      }
    }
  }
}

}  // namespace dojo
