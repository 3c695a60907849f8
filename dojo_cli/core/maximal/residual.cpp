// The step's residual (residual.h).
#include "residual.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "body_maps.h"
#include "dynamics.h"
#include "kinematics.h"
#include "restitution.h"
#include "rotor.h"

namespace dojo {

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

// The configuration at z3 of every body from the unknowns.
void next_configuration(const Model& m, Data& d, const double* w, bool jacobians) {
  const double h = m.h;
  d.rows3_valid = false;  // the rows' Jacobians step_residual kept belong to another configuration
  for (int b = 0; b < m.nb; ++b) {
    const double* xi = w + 6 * b;
    const Vec3<double> w25 = load3<double>(xi + 3);
    const Quat<double> q3 = multiply(load4<double>(&d.q2[4 * b]), integrator_map(w25, h));
    for (int k = 0; k < 3; ++k) d.x3[3 * b + k] = d.x2[3 * b + k] + h * xi[k];
    for (int k = 0; k < 4; ++k) d.q3[4 * b + k] = q3[k];
    const Mat3<double> r = rotation(q3);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) d.rot3[9 * b + 3 * i + k] = r[i][k];
  }
  if (jacobians) integrator_map_jacobians(m, d, w);
}

void integrator_map_jacobians(const Model& m, Data& d, const double* w) {
  for (int b = 0; b < m.nb; ++b) {
    const Mat3<double> mw = integrator_map_jacobian(load3<double>(w + 6 * b + 3), m.h);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) d.mw[9 * b + 3 * i + k] = mw[i][k];
  }
}

bool rows3_at(const Model& m, const Data& d, const double* w) {
  // bit for bit: the same unknowns give the same configuration and rows
  return d.rows3_valid && std::memcmp(w, d.rows3_w.data(), sizeof(double) * static_cast<size_t>(m.nv)) == 0;
}

bool step_setup(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                const double* tau_ext) {
  const int nb = m.nb;
  d.rows3_valid = false;  // the rows at z3 depend on z2 (x3 = x2 + h v25, the lock and limit references)
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
  const bool need_minimal = m.has_springs || m.has_dampers || m.nlim > 0 || m.nfr > 0;
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
    double theta2[6] = {};  // the joint's coordinates at z2 its limits measure (at most six)
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
        // limit_row's value at z3 = z2: the unwrapped angle, or the minimal coordinate
        theta2[f - f0] = m.angle_unwrapped[f] ? d.angle2[f] : row.value;
        const double spring_force = -m.spring[f] * (row.value - m.spring_offset[f]);
        for (int k = 0; k < 12; ++k) gen[k] += h * row.jac[k] * spring_force;
        // the midpoint damper's known half, -(h c / 2) Jf^T Jf xi15 (residual.h)
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
    // the violations the limit rows allow at z3 (residual.h, limit_target)
    for (int l = m.joint_limit_start[j]; l < m.joint_limit_start[j + 1]; ++l)
      d.limit_target[l] = limit_target(m.limit_sign[l], m.limit_bound[l], theta2[m.limit_free[l] - f0],
                                       previous_rate(m, d, j, &d.jf2[12 * m.limit_free[l]]), h);
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
  // rotors: their left momenta at w15 join the known side (rotor.h)
  for (int r = 0; r < m.nr; ++r) {
    const int j = m.rotor_joint[r], a = m.parent[j], c = m.child[j];
    double out_p[3] = {0.0, 0.0, 0.0}, out_c[3];  // (out_p unset for a world parent: GCC's -Wmaybe-uninitialized)
    if (m.rotor_linear[r]) {  // the linear rows of the child (its parent is the world)
      linear_rotor_momentum(m, r, &d.v15[3 * c], out_c);
      for (int k = 0; k < 3; ++k) d.constant[6 * c + k] += out_c[k];
      continue;
    }
    rotor_momenta(m, r, a == kWorld ? nullptr : &d.w15[3 * a], &d.w15[3 * c], h, -1.0, out_p, out_c);
    for (int k = 0; k < 3; ++k) {
      if (a != kWorld) d.constant[6 * a + 3 + k] += out_p[k];
      d.constant[6 * c + 3 + k] += out_c[k];
    }
  }
  // the gap rows' targets, from z2 (restitution.h): restitution, or the recovery of a
  // contact that starts inside its surface (recovery.h)
  for (int c = 0; c < m.nc; ++c) {
    const ContactParams& p = m.contacts[c];
    d.contact_target[c] = restitution_target(p, h, m.gravity, restitution_body(d, p.body), restitution_body(d, p.other));
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
  // rotors: their right momenta at w25 (rotor.h)
  for (int rotor = 0; rotor < m.nr; ++rotor) {
    const int j = m.rotor_joint[rotor], a = m.parent[j], c = m.child[j];
    double out_p[3] = {0.0, 0.0, 0.0}, out_c[3];  // (out_p unset for a world parent: GCC's -Wmaybe-uninitialized)
    if (m.rotor_linear[rotor]) {
      linear_rotor_momentum(m, rotor, w + 6 * c, out_c);
      for (int k = 0; k < 3; ++k) body[6 * c + k] += out_c[k];
      continue;
    }
    rotor_momenta(m, rotor, a == kWorld ? nullptr : w + 6 * a + 3, w + 6 * c + 3, h, 1.0, out_p, out_c);
    for (int k = 0; k < 3; ++k) {
      if (a != kWorld) body[6 * a + 3 + k] += out_p[k];
      body[6 * c + 3 + k] += out_c[k];
    }
  }
  // joint impulses through the constraint Jacobians at z2, constraints at z3
  JointKinematics<double> kin;
  JointRow<double> row;
  for (int j = 0; j < m.nj; ++j) {
    const int r0 = m.joint_row_start[j], r1 = m.joint_row_start[j + 1];
    const int l0 = m.joint_limit_start[j], l1 = m.joint_limit_start[j + 1];
    if (r0 == r1 && l0 == l1) continue;
    if (deferred_joint_jacobians(m, j)) {  // the configuration and values; step_matrix the Jacobians
      JointKinematics<double>& k3 = d.kin3[j];
      joint_configuration(m, j, pose_of(d.x3.data(), d.q3.data(), d.rot3.data(), m.parent[j]),
                          pose_of(d.x3.data(), d.q3.data(), d.rot3.data(), m.child[j]), k3);
      for (int rr = r0; rr < r1; ++rr) {
        r[m.lam + rr] = joint_row_value(m, j, rr, k3, d.lock_d2.data(), d.lock_q2.data());
        scatter12(m, j, &d.jg2[12 * rr], -w[m.lam + rr], body);
      }
      continue;
    }
    joint_kinematics_at(m, j, d.x3.data(), d.q3.data(), d.rot3.data(), kin);
    for (int rr = r0; rr < r1; ++rr) {
      joint_row(m, j, rr, kin, d.lock_d2.data(), d.lock_q2.data(), row);
      r[m.lam + rr] = row.value;
      std::copy(row.jac, row.jac + 12, &d.jg3[12 * rr]);  // for step_matrix at these unknowns
      scatter12(m, j, &d.jg2[12 * rr], -w[m.lam + rr], body);
    }
    if (l0 == l1) continue;
    const Vec3<double> rv = rotation_vector(kin.q_rel);
    for (int l = l0; l < l1; ++l) {
      const int f = m.limit_free[l];
      limit_row(m, j, f, kin, rv, &d.qrel2[4 * j], d.angle2[f], row);
      std::copy(row.jac, row.jac + 12, &d.jl3[12 * l]);
      const double s = w[m.lim_s + l], g = w[m.lim_g + l];
      r[m.lim_s + l] = s * g;
      r[m.lim_g + l] = s - m.limit_sign[l] * (row.value - m.limit_bound[l]) - d.limit_target[l];
      // impulse sigma Jf(z2)^T gamma on the limited coordinate
      scatter12(m, j, &d.jf2[12 * f], -m.limit_sign[l] * g, body);
    }
  }
  // the configuration and rows at z3 of these unknowns, kept for step_matrix
  std::copy(w, w + m.nv, d.rows3_w.begin());
  d.rows3_valid = true;
  // dampers: their part on the unknowns, damper_weight Jf(z2)^T Jf(z2) xi25 (residual.h)
  for (int f : m.damped_free) {
    const int j = m.free_joint[f];
    const double* jf = &d.jf2[12 * f];
    const double rate = dot12(m, j, jf, w);
    scatter12(m, j, jf, damper_weight(m, f) * rate, body);
  }
  // joint friction: its rows, and the impulse Jf(z2)^T beta (residual.h)
  for (int k = 0; k < m.nfr; ++k) {
    const int f = m.friction_free[k], j = m.free_joint[f];
    const double* jf = &d.jf2[12 * f];
    const double* s = w + m.fr_s + 2 * k;  // s+, s-
    const double* v = w + m.fr_g + 2 * k;  // v+, v-
    const double beta = w[m.fr_b + k], bound = h * m.joint_friction[f];
    r[m.fr_s + 2 * k] = s[0] * v[0];
    r[m.fr_s + 2 * k + 1] = s[1] * v[1];
    r[m.fr_g + 2 * k] = s[0] - bound + beta;
    r[m.fr_g + 2 * k + 1] = s[1] - bound - beta;
    r[m.fr_b + k] = dot12(m, j, jf, w) - v[1] + v[0];
    scatter12(m, j, jf, -beta, body);
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

}  // namespace dojo
