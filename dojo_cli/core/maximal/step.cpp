// The step's residual, Newton matrix and Newton solver (step.h).
#include "step.h"

#include <algorithm>
#include <cmath>

#include "body_maps.h"
#include "dynamics.h"
#include "interior_point.h"
#include "kinematics.h"
#include "restitution.h"

namespace dojo {

Data::Data(const Model& m)
    : x2(3 * m.nb), v15(3 * m.nb), q2(4 * m.nb), w15(3 * m.nb), u(m.nf), u_act(m.nu), f_ext(3 * m.nb), tau_ext(3 * m.nb),
      constant(m.nv), jg2(12 * m.nl), jf2(12 * m.nf), rot2(9 * m.nb), contact_target(m.nc), w(m.n), r(m.n), delta(m.n), cand(m.n),
      rc(m.n), x3(3 * m.nb), q3(4 * m.nb), rot3(9 * m.nb), mw(9 * m.nb), matrix(m.blocks.structural_size),
      target(m.n), d_aff(m.n), rhs(m.n), soc_w(3 * m.soc_s.size()), soc_w_inv(3 * m.soc_s.size()),
      soc_lambda(m.soc_s.size()), contact_distance(m.nc), contact_normal_impulse(m.nc),
      contact_friction_impulse(2 * m.nc), contact_slip(2 * m.nc), z_next(13 * m.nb) {
  contact_active.assign(m.nc, 1);
  active_degree = m.degree;
  angle_ref.assign(m.nf, std::numeric_limits<double>::quiet_NaN());
  angle2.assign(m.nf, 0.0);
  qrel2.assign(4 * m.nj, 0.0);
  lock_d2.assign(3 * m.nj, 0.0);
  lock_q2.assign(4 * m.nj, 0.0);
  lu.init(m.blocks);
  lu_robust.init(m.blocks_robust);
}

bool factor_matrix(const Model& m, Data& d, bool robust) {
  d.lu_is_robust = robust || !d.lu.factor(m.blocks, d.matrix.data());
  const bool ok = !d.lu_is_robust || d.lu_robust.factor(m.blocks_robust, d.matrix.data());
  d.singular_node = ok ? -1 : d.lu_robust.failed_node();
  return ok;
}

void solve_factored(const Model& m, const Data& d, double* b, int nrhs, bool transpose) {
  if (d.lu_is_robust)
    d.lu_robust.solve(m.blocks_robust, b, nrhs, transpose);
  else
    d.lu.solve(m.blocks, b, nrhs, transpose);
}

namespace {

// Body b's state as the contact kernel reads it (x3, q3, v25, w25, mw); the world's is
// never read.
inline ContactBodyState contact_body_state(const Data& d, const double* w, int b) {
  if (b == kWorld) return ContactBodyState{nullptr, nullptr, nullptr, nullptr, nullptr};
  return ContactBodyState{&d.x3[3 * b], &d.q3[4 * b], w + 6 * b, w + 6 * b + 3, &d.mw[9 * b]};
}

}  // namespace

RestitutionBody restitution_body(const Data& d, int b) {
  if (b == kWorld) return RestitutionBody{nullptr, nullptr, nullptr, nullptr};
  return RestitutionBody{&d.x2[3 * b], &d.q2[4 * b], &d.v15[3 * b], &d.w15[3 * b]};
}

const ContactEval& evaluate_step_contact(const Model& m, Data& d, const double* w, int c, ContactOutput output) {
  const ContactParams& p = m.contacts[c];
  const int s0 = m.contact_start[c];
  evaluate_contact(p, m.h, contact_body_state(d, w, p.body), contact_body_state(d, w, p.other), w + s0,
                   w + s0 + contact_half_size(p.model), output, d.contact_eval);
  return d.contact_eval;
}

namespace {

// The configuration at z3 of every body from the unknowns.
void next_configuration(const Model& m, Data& d, const double* w, bool jacobians) {
  const double h = m.h;
  for (int b = 0; b < m.nb; ++b) {
    const double* xi = w + 6 * b;
    const Vec3<double> w25 = load3<double>(xi + 3);
    const Quat<double> q3 = multiply(load4<double>(&d.q2[4 * b]), integrator_map(w25, h));
    for (int k = 0; k < 3; ++k) d.x3[3 * b + k] = d.x2[3 * b + k] + h * xi[k];
    for (int k = 0; k < 4; ++k) d.q3[4 * b + k] = q3[k];
    const Mat3<double> r = rotation(q3);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) d.rot3[9 * b + 3 * i + k] = r[i][k];
    if (jacobians) {
      const Mat3<double> mw = integrator_map_jacobian(w25, h);
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) d.mw[9 * b + 3 * i + k] = mw[i][k];
    }
  }
}

inline bool all_finite(const double* p, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

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

bool step_setup(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                const double* tau_ext) {
  const int nb = m.nb;
  if (!all_finite(z, 13 * nb) || (u && !all_finite(u, m.nu)) || (f_ext && !all_finite(f_ext, 3 * nb)) ||
      (tau_ext && !all_finite(tau_ext, 3 * nb)))
    return false;
  const double h = m.h;
  for (int b = 0; b < nb; ++b) {
    const double* s = z + 13 * b;
    for (int k = 0; k < 3; ++k) {
      d.x2[3 * b + k] = s[k];
      d.v15[3 * b + k] = s[3 + k];
      d.w15[3 * b + k] = s[10 + k];
      d.f_ext[3 * b + k] = f_ext ? f_ext[3 * b + k] : 0.0;
      d.tau_ext[3 * b + k] = tau_ext ? tau_ext[3 * b + k] : 0.0;
    }
    for (int k = 0; k < 4; ++k) d.q2[4 * b + k] = s[6 + k];
    const Mat3<double> r = rotation(load4<double>(&d.q2[4 * b]));
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) d.rot2[9 * b + 3 * i + k] = r[i][k];
  }
  // the actuators' inputs: joint actuators summed per free coordinate (gain included)
  std::fill(d.u.begin(), d.u.end(), 0.0);
  for (int a = 0; a < m.nu; ++a) {
    d.u_act[a] = u ? u[a] : 0.0;
    if (m.actuator_free[a] >= 0) d.u[m.actuator_free[a]] += m.actuator_gain[a] * d.u_act[a];
  }
  bool any_input = false;
  for (int f = 0; f < m.nf; ++f)
    if (d.u[f] != 0.0) any_input = true;

  // Kinematics at z2: constraint Jacobians (impulse maps), minimal-coordinate
  // Jacobians (springs, dampers, limits) and the constant impulses of springs and inputs.
  std::vector<double>& applied = d.delta;  // scratch (6 nb) until the solve starts
  std::fill(applied.begin(), applied.begin() + m.nv, 0.0);
  const bool need_minimal = m.has_springs || m.has_dampers || m.nlim > 0;
  JointKinematics<double> kin;
  JointRow<double> row;
  double gen[12];
  for (int j = 0; j < m.nj; ++j) {
    joint_kinematics_at(m, j, d.x2.data(), d.q2.data(), d.rot2.data(), kin);
    if (m.locked[j]) {  // the configuration the lock rows hold (kinematics.h lock_row)
      for (int k = 0; k < 3; ++k) d.lock_d2[3 * j + k] = kin.d[k];
      for (int k = 0; k < 4; ++k) d.lock_q2[4 * j + k] = kin.q_rel[k];
    }
    for (int r = m.joint_row_start[j]; r < m.joint_row_start[j + 1]; ++r) {
      if (m.row_lock[r])
        lock_impulse_row(m, j, m.row_slot[r], kin, row);
      else
        constraint_row(m, j, m.row_slot[r], kin, row);
      std::copy(row.jac, row.jac + 12, &d.jg2[12 * r]);
    }
    const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
    if (f0 == f1) continue;
    Vec3<double> rv{};
    if (need_minimal) rv = rotation_vector(kin.q_rel);
    for (int f = f0; f < f1; ++f) {
      if (m.angle_unwrapped[f] && m.joint_limit_start[j] < m.joint_limit_start[j + 1]) {
        // the unwrapped angle at z2 its limit rows measure from (kinematics.h limit_row)
        for (int k = 0; k < 4; ++k) d.qrel2[4 * j + k] = kin.q_rel[k];
        const double* b = &m.basis[18 * j + 3 * m.free_slot[f]];
        const Vec3<double> rc = rotation_vector(canonical_quaternion(kin.q_rel));
        const double c = b[0] * rc[0] + b[1] * rc[1] + b[2] * rc[2];
        const double ref = d.angle_ref[f];
        d.angle2[f] = std::isnan(ref) ? start_angle(c, b[0] * rv[0] + b[1] * rv[1] + b[2] * rv[2], m.free_lower[f], m.free_upper[f])
                                      : c + kTwoPi * std::round((ref - c) / kTwoPi);
      }
      std::fill(gen, gen + 12, 0.0);
      if (need_minimal) {
        coordinate_row(m, j, f, kin, rv, row);
        std::copy(row.jac, row.jac + 12, &d.jf2[12 * f]);
        const double spring_force = -m.spring[f] * (row.value - m.spring_offset[f]);
        for (int k = 0; k < 12; ++k) gen[k] += h * row.jac[k] * spring_force;
        // the midpoint damper's known half, -(h c / 2) Jf^T Jf xi15 (step.h)
        if (m.damper[f] != 0.0 && !m.damper_implicit[f]) {
          const double force = -damper_weight(m, f) * previous_rate(m, d, j, row.jac);
          for (int k = 0; k < 12; ++k) gen[k] += row.jac[k] * force;
        }
      }
      if (any_input) {
        input_row(m, j, m.free_slot[f], kin, row);
        for (int k = 0; k < 12; ++k) gen[k] += h * row.jac[k] * d.u[f];
      }
      scatter12(m, j, gen, 1.0, applied.data());
    }
  }
  // body actuators: the impulse h u [R(q2) F; M] of a force F and moment M fixed in the
  // body, at z2 as the joint inputs' h Ju(z2)^T u (model.h)
  for (int a : m.body_actuators) {
    const double ua = d.u_act[a];
    if (ua == 0.0) continue;
    const int b = m.actuator_body[a];
    const double* r = &d.rot2[9 * b];
    const double* f = &m.actuator_force[3 * a];
    for (int i = 0; i < 3; ++i) {
      applied[6 * b + i] += h * ua * (r[3 * i] * f[0] + r[3 * i + 1] * f[1] + r[3 * i + 2] * f[2]);
      applied[6 * b + 3 + i] += h * ua * m.actuator_moment[3 * a + i];
    }
  }
  // constant = momentum_left(v15, w15) + h (m g + F_ext; tau_ext) + applied
  double left[6];
  for (int b = 0; b < nb; ++b) {
    momentum(m.mass[b], body_inertia(m, b), load3<double>(&d.v15[3 * b]), load3<double>(&d.w15[3 * b]), h, -1.0,
             left);
    for (int k = 0; k < 3; ++k) {
      const double force = m.mass[b] * m.gravity[k] + d.f_ext[3 * b + k];
      d.constant[6 * b + k] = left[k] + h * force + applied[6 * b + k];
      d.constant[6 * b + 3 + k] = left[3 + k] + h * d.tau_ext[3 * b + k] + applied[6 * b + 3 + k];
    }
  }
  // restitution targets of the gap rows, from z2 (restitution.h)
  for (int c = 0; c < m.nc; ++c) {
    const ContactParams& p = m.contacts[c];
    d.contact_target[c] = m.has_restitution ? restitution_target(p, h, m.gravity, restitution_body(d, p.body),
                                                                 restitution_body(d, p.other))
                                            : 0.0;
  }
  return true;
}

void step_residual(const Model& m, Data& d, const double* w, double* r) {
  const double h = m.h;
  const int nb = m.nb;
  next_configuration(m, d, w, false);
  double* body = r;  // rows 0 .. 6 nb
  double right[6];
  for (int b = 0; b < nb; ++b) {
    momentum(m.mass[b], body_inertia(m, b), load3<double>(w + 6 * b), load3<double>(w + 6 * b + 3), h, 1.0, right);
    for (int k = 0; k < 6; ++k) body[6 * b + k] = right[k] - d.constant[6 * b + k];
  }
  // joint impulses through the constraint Jacobians at z2, constraints at z3
  JointKinematics<double> kin;
  JointRow<double> row;
  for (int j = 0; j < m.nj; ++j) {
    const int r0 = m.joint_row_start[j], r1 = m.joint_row_start[j + 1];
    const int l0 = m.joint_limit_start[j], l1 = m.joint_limit_start[j + 1];
    if (r0 == r1 && l0 == l1) continue;
    joint_kinematics_at(m, j, d.x3.data(), d.q3.data(), d.rot3.data(), kin);
    for (int rr = r0; rr < r1; ++rr) {
      joint_row(m, j, rr, kin, d.lock_d2.data(), d.lock_q2.data(), row);
      r[m.lam + rr] = row.value;
      scatter12(m, j, &d.jg2[12 * rr], -w[m.lam + rr], body);
    }
    if (l0 == l1) continue;
    const Vec3<double> rv = rotation_vector(kin.q_rel);
    for (int l = l0; l < l1; ++l) {
      const int f = m.limit_free[l];
      limit_row(m, j, f, kin, rv, &d.qrel2[4 * j], d.angle2[f], row);
      const double s = w[m.lim_s + l], g = w[m.lim_g + l];
      r[m.lim_s + l] = s * g;
      r[m.lim_g + l] = s - m.limit_sign[l] * (row.value - m.limit_bound[l]);
      // impulse sigma Jf(z2)^T gamma on the limited coordinate
      scatter12(m, j, &d.jf2[12 * f], -m.limit_sign[l] * g, body);
    }
  }
  // dampers: their part on the unknowns, damper_weight Jf(z2)^T Jf(z2) xi25 (step.h)
  for (int f : m.damped_free) {
    const int j = m.free_joint[f];
    const double* jf = &d.jf2[12 * f];
    const double rate = dot12(m, j, jf, w);
    scatter12(m, j, jf, damper_weight(m, f) * rate, body);
  }
  // contacts: their rows, and the body residual minus their wrenches (at z3)
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) {  // left out of this solve: rows 0 = 0 (its unknowns stay 0)
      std::fill(r + m.contact_start[c], r + m.contact_start[c + 1], 0.0);
      continue;
    }
    const ContactEval& ev = evaluate_step_contact(m, d, w, c, ContactOutput::Residual);
    const int s0 = m.contact_start[c], g0 = s0 + ev.n;
    for (int k = 0; k < ev.n; ++k) {
      r[s0 + k] = ev.comp[k];
      r[g0 + k] = ev.cons[k];
    }
    r[g0] -= d.contact_target[c];  // the gap row d - tau - s (restitution.h; tau = 0 without)
    const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
    for (int side = 0; side < 2; ++side) {
      if (bodies[side] == kWorld) continue;
      for (int k = 0; k < 6; ++k) body[6 * bodies[side] + k] -= ev.wrench[6 * side + k];
    }
  }
}

void step_contact_records(const Model& m, Data& d, const double* w) {
  if (m.nc == 0) return;
  next_configuration(m, d, w, false);
  for (int c = 0; c < m.nc; ++c) {
    const ContactEval& ev = evaluate_step_contact(m, d, w, c, ContactOutput::Residual);
    d.contact_distance[c] = ev.distance;
    d.contact_normal_impulse[c] = ev.normal_impulse;
    for (int k = 0; k < 2; ++k) {
      d.contact_friction_impulse[2 * c + k] = ev.friction_impulse[k];
      d.contact_slip[2 * c + k] = ev.slip[k];
    }
  }
}

void step_matrix(const Model& m, Data& d, const double* w) {
  const double h = m.h;
  std::fill(d.matrix.begin(), d.matrix.end(), 0.0);
  next_configuration(m, d, w, true);
  double jac[36];
  for (int b = 0; b < m.nb; ++b) {
    momentum_jacobian(m.mass[b], body_inertia(m, b), load3<double>(w + 6 * b + 3), h, 1.0, jac);
    BlockRef blk = block(m, d, m.blk_body[b]);
    for (int i = 0; i < 36; ++i) blk.v[i] += jac[i];
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
    joint_kinematics_at(m, j, d.x3.data(), d.q3.data(), d.rot3.data(), kin);
    BlockRef diag = block(m, d, m.blk_joint_diag[j]);
    for (int rr = r0; rr < r1; ++rr) {
      const int li = m.local_index[m.lam + rr];
      joint_row(m, j, rr, kin, d.lock_d2.data(), d.lock_q2.data(), row);
      for (int s = 0; s < 2; ++s) {
        if (bodies[s] == kWorld) continue;
        // impulse map -Jg(z2)^T (body rows, lambda column)
        BlockRef bj = block(m, d, m.blk_body_joint[s][j]);
        for (int k = 0; k < 6; ++k) bj.at(k, li) -= d.jg2[12 * rr + 6 * s + k];
        // constraint Jg(z3) dz3/dxi25 (lambda row, body columns)
        chain6(row.jac + 6 * s, &d.mw[9 * bodies[s]], h, chained);
        BlockRef jb = block(m, d, m.blk_joint_body[s][j]);
        for (int k = 0; k < 6; ++k) jb.at(li, k) += chained[k];
      }
      diag.at(li, li) += kConstraintRegularization;
    }
    if (l0 == l1) continue;
    const Vec3<double> rv = rotation_vector(kin.q_rel);
    for (int l = l0; l < l1; ++l) {
      const int f = m.limit_free[l];
      const int ls = m.local_index[m.lim_s + l], lg = m.local_index[m.lim_g + l];
      const double s = w[m.lim_s + l], g = w[m.lim_g + l], sign = m.limit_sign[l];
      diag.at(ls, ls) += g;  // d(s gamma)/ds
      diag.at(ls, lg) += s;  // d(s gamma)/dgamma
      diag.at(lg, ls) += 1.0;
      limit_row(m, j, f, kin, rv, &d.qrel2[4 * j], d.angle2[f], row);
      for (int side = 0; side < 2; ++side) {
        if (bodies[side] == kWorld) continue;
        chain6(row.jac + 6 * side, &d.mw[9 * bodies[side]], h, chained);
        BlockRef jb = block(m, d, m.blk_joint_body[side][j]);
        for (int k = 0; k < 6; ++k) jb.at(lg, k) -= sign * chained[k];
        BlockRef bj = block(m, d, m.blk_body_joint[side][j]);
        for (int k = 0; k < 6; ++k) bj.at(k, lg) -= sign * d.jf2[12 * f + 6 * side + k];
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

void step_project(const Model& m, double* w) {
  const double limit = kMaxAngularSpeedSq / (m.h * m.h);
  for (int b = 0; b < m.nb; ++b) {
    double* wb = w + 6 * b + 3;
    const double sq = wb[0] * wb[0] + wb[1] * wb[1] + wb[2] * wb[2];
    if (sq > limit) {
      // Dojo's clipping scales by limit / |w|^2 (not its square root)
      const double scale = limit / std::max(sq, 1e-300);
      for (int k = 0; k < 3; ++k) wb[k] *= scale;
    }
  }
}

namespace {
// A limit whose bound lies farther than this from the angle at z2 (rad) starts with its
// slack at that distance (Dojo's start, s = gamma = 1, is kept below it: the goldens pin it).
// From s = 1 the first Newton step asks the joint to close the gap s - distance at once; a
// revolute bound several radians away (possible since angles unwrap) then throws the
// iterate far off and the solve stalls. kFarLimit is below the smallest gap that stalled
// in tests/properties/test_revolute_winding.py and above every gap of the built-in scenes.
constexpr double kFarLimit = 4.0;
}  // namespace

void step_initial_guess(const Model& m, Data& d, const double* lambda0) {
  std::fill(d.w.begin(), d.w.end(), 0.0);
  for (int b = 0; b < m.nb; ++b)
    for (int k = 0; k < 3; ++k) {
      d.w[6 * b + k] = d.v15[3 * b + k];
      d.w[6 * b + 3 + k] = d.w15[3 * b + k];
    }
  if (lambda0)
    for (int r = 0; r < m.nl; ++r) d.w[m.lam + r] = lambda0[r];
  for (int l = 0; l < m.nlim; ++l) {
    d.w[m.lim_s + l] = kLimitStart;
    d.w[m.lim_g + l] = kLimitStart;
    // a far angle bound (kFarLimit): s at its distance, gamma such that s gamma stays
    // Dojo's starting complementarity (1)
    const int f = m.limit_free[l];
    const double far = m.angle_unwrapped[f] ? m.limit_sign[l] * (d.angle2[f] - m.limit_bound[l]) : 0.0;
    if (far > kFarLimit) {
      d.w[m.lim_s + l] = far;
      d.w[m.lim_g + l] = kLimitStart * kLimitStart / far;
    }
  }
  // contacts: Dojo's starting point (contact.h)
  for (int c = 0; c < m.nc; ++c) {
    const int s0 = m.contact_start[c];
    if (d.contact_active[c])
      contact_starting_point(m.contacts[c].model, &d.w[s0], &d.w[s0 + contact_half_size(m.contacts[c].model)]);
  }
}

void select_contacts(const Model& m, Data& d) {
  std::fill(d.contact_active.begin(), d.contact_active.end(), uint8_t{1});
  d.active_degree = m.degree;
  if (!m.has_margins) return;
  // the predicted configuration: the initial guess holds xi25 = xi15
  next_configuration(m, d, d.w.data(), false);
  bool any_out = false;
  for (int c = 0; c < m.nc; ++c) {
    if (!std::isfinite(m.contacts[c].margin)) continue;
    const ContactEval& ev = evaluate_step_contact(m, d, d.w.data(), c, ContactOutput::Residual);
    if (ev.distance > m.contacts[c].margin) {
      d.contact_active[c] = 0;
      any_out = true;
    }
  }
  if (any_out) leave_out_contacts(m, d);
}

void leave_out_contacts(const Model& m, Data& d) {
  int degree = 0;
  for (int c : m.orthant_contact) degree += (c < 0 || d.contact_active[c]) ? 1 : 0;
  for (int c : m.soc_contact) degree += d.contact_active[c] ? 1 : 0;
  d.active_degree = degree;
  for (int c = 0; c < m.nc; ++c)
    if (!d.contact_active[c]) std::fill(d.w.begin() + m.contact_start[c], d.w.begin() + m.contact_start[c + 1], 0.0);
}

bool admit_touching_contacts(const Model& m, Data& d) {
  bool any = false;
  for (int c = 0; c < m.nc; ++c)
    if (!d.contact_active[c] && !(d.contact_distance[c] > 0.0)) {
      d.contact_active[c] = 1;
      any = true;
    }
  return any;
}

void step_next_state(const Model& m, Data& d, const double* w) {
  const double h = m.h;
  for (int b = 0; b < m.nb; ++b) {
    const double* xi = w + 6 * b;
    const Vec3<double> w25 = load3<double>(xi + 3);
    Quat<double> q3 = multiply(load4<double>(&d.q2[4 * b]), integrator_map(w25, h));
    const double norm = std::sqrt(q3[0] * q3[0] + q3[1] * q3[1] + q3[2] * q3[2] + q3[3] * q3[3]);
    double* z = &d.z_next[13 * b];
    for (int k = 0; k < 3; ++k) {
      z[k] = d.x2[3 * b + k] + h * xi[k];
      z[3 + k] = xi[k];
      z[10 + k] = xi[3 + k];
    }
    for (int k = 0; k < 4; ++k) z[6 + k] = q3[k] / norm;
  }
}

namespace {
void log_line(Data& d, int it, double res, double alpha, double step) {
  if (d.log_rows * kLogColumns >= static_cast<int>(d.log.size())) return;
  double* line = &d.log[kLogColumns * d.log_rows++];
  line[kLogIteration] = it;
  line[kLogResidual] = res;
  line[kLogComplementarity] = 0.0;
  line[kLogAlpha] = alpha;
  line[kLogKappa] = 0.0;
  line[kLogStep] = step;
  line[kLogRvio] = res;
}
}  // namespace

SolverStatus newton(const Model& m, Data& d, const SolverOptions& opts) {
  const int n = m.n;
  double* w = d.w.data();
  step_project(m, w);
  step_residual(m, d, w, d.r.data());
  double rnorm = inf_norm(d.r.data(), n);
  for (int it = 0; it < opts.max_iter; ++it) {
    if (rnorm < opts.rtol) {
      d.iterations = it;
      d.residual = rnorm;
      return SolverStatus::Success;
    }
    step_matrix(m, d, w);
    if (!factor_matrix(m, d)) {
      d.iterations = it + 1;
      d.residual = rnorm;
      return SolverStatus::SingularMatrix;
    }
    for (int i = 0; i < n; ++i) d.delta[i] = -d.r[i];
    solve_factored(m, d, d.delta.data());
    const double step_norm = inf_norm(d.delta.data(), n);
    double alpha = 1.0;
    double rc_norm = 0.0;
    bool accepted = false;
    for (int ls = 0; ls < std::max(opts.max_ls, 1); ++ls) {
      for (int i = 0; i < n; ++i) d.cand[i] = w[i] + alpha * d.delta[i];
      step_project(m, d.cand.data());
      step_residual(m, d, d.cand.data(), d.rc.data());
      rc_norm = inf_norm(d.rc.data(), n);
      if (rc_norm < rnorm) {  // false for NaN: a non-finite candidate is never taken
        accepted = true;
        break;
      }
      alpha *= opts.ls_scale;
    }
    if (!accepted) {
      // Newton's direction is a descent direction of |r|^2; if no fraction of it
      // reduces the residual we are at the limit of floating point.
      log_line(d, it + 1, rnorm, 0.0, step_norm);
      d.iterations = it + 1;
      d.residual = rnorm;
      return SolverStatus::LineSearchFailure;
    }
    d.w.swap(d.cand);
    d.r.swap(d.rc);
    w = d.w.data();
    rnorm = rc_norm;
    log_line(d, it + 1, rnorm, alpha, step_norm);
  }
  d.iterations = opts.max_iter;
  d.residual = rnorm;
  return rnorm < opts.rtol ? SolverStatus::Success : SolverStatus::MaxIterations;
}

SolverStatus step(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                  const double* tau_ext, const double* lambda0, const SolverOptions& opts) {
  d.log.resize(static_cast<size_t>(opts.max_iter + 1) * kLogColumns);  // grows once per larger max_iter
  d.log_rows = 0;
  d.iterations = 0;
  d.complementarity = 0.0;
  d.singular_node = -1;
  if (!step_setup(m, d, z, u, f_ext, tau_ext)) {
    d.residual = std::numeric_limits<double>::quiet_NaN();
    std::fill(d.z_next.begin(), d.z_next.end(), std::numeric_limits<double>::quiet_NaN());
    d.status = SolverStatus::NonFinite;
    return d.status;
  }
  // the contacts within their margins at the predicted configuration; after the solve,
  // any left-out contact that the solution brings to touch (distance <= 0) joins and
  // the step is solved again from the start, so the left-out contacts are separated at
  // the solution (step.h, "Contact margins")
  std::fill(d.contact_active.begin(), d.contact_active.end(), uint8_t{1});
  step_initial_guess(m, d, lambda0);
  select_contacts(m, d);
  int iterations = 0;
  for (d.solves = 1;; ++d.solves) {
    d.status = (m.nlim > 0 || m.nc > 0) ? interior_point(m, d, opts) : newton(m, d, opts);
    iterations += d.iterations;
    if (!m.has_margins) break;
    step_contact_records(m, d, d.w.data());
    if (!admit_touching_contacts(m, d)) break;
    step_initial_guess(m, d, lambda0);
    leave_out_contacts(m, d);
  }
  d.iterations = iterations;
  step_next_state(m, d, d.w.data());
  // a "converged" step must also land on a finite state within the model's bounds
  if (d.status == SolverStatus::Success) {
    const double v_bound = m.state_bound / m.h;
    for (int b = 0; b < m.nb && d.status == SolverStatus::Success; ++b)
      for (int k = 0; k < 13; ++k) {
        const double x = d.z_next[13 * b + k];
        if (!std::isfinite(x)) {
          d.status = SolverStatus::NonFinite;
          break;
        }
        const double bound = k < 3 ? m.state_bound : (k < 6 ? v_bound : std::numeric_limits<double>::infinity());
        if (std::fabs(x) > bound) {
          d.status = SolverStatus::Diverged;
          break;
        }
      }
  }
  // (with margins the solve loop has recorded them at this solution already)
  if (!m.has_margins) step_contact_records(m, d, d.w.data());
  return d.status;
}

namespace {
// Pose of body b in a state z (13 nb,), or the world's.
Pose<double> state_pose(const double* z, int b) {
  if (b == kWorld) return world_pose<double>();
  const double* s = z + 13 * b;
  Pose<double> p;
  p.x = load3<double>(s);
  p.q = load4<double>(s + 6);
  p.r = rotation(p.q);
  return p;
}

// Joint j's canonical angle (kinematics.h) of coordinate f and q_rel in state z.
double canonical_angle(const Model& m, int j, int f, const double* z, Quat<double>& q_rel) {
  JointKinematics<double> kin;
  joint_kinematics(m, j, state_pose(z, m.parent[j]), state_pose(z, m.child[j]), kin);
  q_rel = kin.q_rel;
  const double* b = &m.basis[18 * j + 3 * m.free_slot[f]];
  const Vec3<double> rc = rotation_vector(canonical_quaternion(kin.q_rel));
  return b[0] * rc[0] + b[1] * rc[1] + b[2] * rc[2];
}
}  // namespace

void advance_angles(const Model& m, Data& d) {
  const double* z3 = d.z_next.data();
  if (!all_finite(z3, 13 * m.nb)) return;
  for (int j = 0; j < m.nj; ++j) {
    if (m.joint_limit_start[j] == m.joint_limit_start[j + 1]) continue;
    for (int f = m.joint_free_start[j]; f < m.joint_free_start[j + 1]; ++f) {
      if (!m.angle_unwrapped[f]) continue;
      Quat<double> q3;
      const double c = canonical_angle(m, j, f, z3, q3);
      d.angle_ref[f] = c + angle_branch(&m.basis[18 * j + 3 * m.free_slot[f]], q3, c, &d.qrel2[4 * j], d.angle2[f]);
    }
  }
}

void unwrap_angles(const Model& m, const double* z, const double* z_prev, const double* theta_prev, double* theta) {
  for (int f = 0; f < m.nf; ++f) {
    if (!m.angle_unwrapped[f]) continue;
    const int j = m.free_joint[f];
    const double* b = &m.basis[18 * j + 3 * m.free_slot[f]];
    Quat<double> q;
    const double c = canonical_angle(m, j, f, z, q);
    if (z_prev) {
      Quat<double> q_prev;
      const double c_prev = canonical_angle(m, j, f, z_prev, q_prev);
      // theta_prev snapped to its branch, as a step snaps Data.angle_ref (step_setup)
      const double theta1 = c_prev + kTwoPi * std::round((theta_prev[f] - c_prev) / kTwoPi);
      theta[f] = c + angle_branch(b, q, c, q_prev.q, theta1);
    } else {
      const Vec3<double> rv = rotation_vector(q);
      theta[f] = start_angle(c, b[0] * rv[0] + b[1] * rv[1] + b[2] * rv[2], m.free_lower[f], m.free_upper[f]);
    }
  }
}

int rollout(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
            const SolverOptions& opts, bool stop_on_failure, const RolloutRecord& out) {
  const int nb = m.nb;
  const double* current = z;
  bool warm = lambda != nullptr;
  for (int i = 0; i < k; ++i) {
    const SolverStatus status =
        step(m, d, current, inputs ? inputs + static_cast<size_t>(i) * m.nu : nullptr, nullptr, nullptr,
             warm ? lambda : nullptr, opts);
    if (lambda) {
      for (int r = 0; r < m.nl; ++r) lambda[r] = d.w[m.lam + r];
      warm = true;
    }
    double* row = out.states ? out.states + static_cast<size_t>(i) * 13 * nb : nullptr;
    if (row) std::copy(d.z_next.begin(), d.z_next.end(), row);
    if (out.iterations) out.iterations[i] = d.iterations;
    if (out.residual) out.residual[i] = d.residual;
    if (out.status) out.status[i] = static_cast<int>(status);
    if (out.complementarity) out.complementarity[i] = d.complementarity;
    if (out.singular_node) out.singular_node[i] = status == SolverStatus::SingularMatrix ? d.singular_node : -1;
    if (out.impulses)
      for (int r = 0; r < m.nl; ++r) out.impulses[static_cast<size_t>(i) * m.nl + r] = d.w[m.lam + r];
    const size_t c0 = static_cast<size_t>(i) * m.nc;
    for (int c = 0; c < m.nc; ++c) {
      if (out.contact_distance) out.contact_distance[c0 + c] = d.contact_distance[c];
      if (out.contact_normal_impulse) out.contact_normal_impulse[c0 + c] = d.contact_normal_impulse[c];
      for (int j = 0; j < 2; ++j) {
        if (out.contact_friction_impulse) out.contact_friction_impulse[2 * (c0 + c) + j] = d.contact_friction_impulse[2 * c + j];
        if (out.contact_slip) out.contact_slip[2 * (c0 + c) + j] = d.contact_slip[2 * c + j];
      }
    }
    advance_angles(m, d);
    if (status != SolverStatus::Success && stop_on_failure) return i + 1;
    // the next step starts from this one's result (its setup reads the state before
    // anything overwrites d.z_next)
    current = row ? row : d.z_next.data();
  }
  return k;
}

}  // namespace dojo
