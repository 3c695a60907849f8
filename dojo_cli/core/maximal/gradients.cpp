// Gradients of a step (gradients.h).
#include "gradients.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "body_maps.h"
#include "contact_elimination.h"
#include "coordinates.h"
#include "math/dual.h"
#include "math/reverse.h"
#include "dynamics.h"
#include "interior_point.h"
#include "kinematics.h"
#include "factor.h"
#include "newton_matrix.h"
#include "residual.h"
#include "rotor.h"
#include "step.h"

namespace dojo {

int parameter_count(const Model& m, ParameterKind kind) {
  switch (kind) {
    case ParameterKind::Mass: return m.nb;
    case ParameterKind::Inertia: return 6 * m.nb;
    case ParameterKind::Gravity: return 3;
    case ParameterKind::Spring:
    case ParameterKind::Damper: return m.nf;
    case ParameterKind::Friction:
    case ParameterKind::Radius: return m.nc;
    case ParameterKind::Offset: return 3 * m.nc;
    case ParameterKind::Restitution: return m.nc;
  }
  throw std::invalid_argument("unknown parameter kind");
}

int parameter_columns(const Model& m, const std::vector<int>& kinds) {
  int p = 0;
  for (int kind : kinds) p += parameter_count(m, static_cast<ParameterKind>(kind));
  return p;
}

namespace {

using D12 = Dual<double, 12>;
using D1 = Dual<double, 1>;

// A dense n x k column-major matrix view.
struct Columns {
  double* v;
  int n;
  double& at(int row, int col) { return v[static_cast<size_t>(col) * n + row]; }
};

// The same writes applied at once to a product with dr/dz2, in the order they are made:
// each write of v at (row, column) calls apply(row, column, v) (a write `-= v` applies -v).
// dr/dz2 is sparse (a body's own rows, its joints' and contacts' rows: ~20 nonzeros a
// column, against n ~ 10 nb rows), so the products with it (step_jvp, step_vjp, a state
// map) are taken entry by entry, not through an n x 12 nb dense matrix (for the 20-link
// chain, 220 x 240 zeroed and summed per step, more than the step). (They went through a
// list of the entries before, summed in the same order: the same sums, bit for bit, without
// the list: a push_back per write cost a sixth of a chain VJP step.)
template <class Apply>
struct Product {
  Apply apply;
  struct Write {
    Apply& apply;
    int row, col;
    void operator+=(double v) const { apply(row, col, v); }
    void operator-=(double v) const { apply(row, col, -v); }
  };
  Write at(int row, int col) { return Write{apply, row, col}; }
};
template <class Apply>
Product<Apply> product(Apply apply) {
  return Product<Apply>{apply};
}

// State tangent column of body b: part 0 x, 1 v, 2 phi, 3 w.
inline int state_col(int b, int part, int axis) { return 12 * b + 3 * part + axis; }

// Pose of body b at z2 as a function of its 6 tangents [x, t] (x + dx, q exp(t/2)), at
// scalar D: seed(value, k) makes tangent k's coordinate (k 0..2 the position, value x2;
// 3..5 the rotation, value 0) with its derivative seeds (duals) or as a recorded input (Rev).
template <class D, class Seed>
Pose<D> seeded_pose(const Data& d, int b, Seed seed) {
  if (b == kWorld) return world_pose<D>();
  Pose<D> p;
  for (int k = 0; k < 3; ++k) p.x[k] = seed(d.x2[3 * b + k], k);
  const Vec3<D> t{{seed(0.0, 3), seed(0.0, 4), seed(0.0, 5)}};
  p.q = perturb_right(load4<D>(&d.q2[4 * b]), t);  // q exp(t/2) = q [1, t/2] to first order
  p.r = rotation(p.q);
  return p;
}

// rows += jac (wrt [xa, ta, xb, tb] at z3) chained to [x2, phi2] of the joint's or
// pair's bodies: dx3/dx2 = I, dt3/dphi2 = chain (2 R(qmap(w25))^T per body).
template <class Out>
void add_z3(Out& out, int row, const double* jac, int a, int b, const std::vector<double>& chain) {
  const int bodies[2] = {a, b};
  for (int s = 0; s < 2; ++s) {
    const int body = bodies[s];
    if (body == kWorld) continue;
    const double* j = jac + 6 * s;
    const double* c = &chain[9 * body];
    for (int k = 0; k < 3; ++k) {
      out.at(row, state_col(body, 0, k)) += j[k];
      out.at(row, state_col(body, 2, k)) += j[3] * c[k] + j[4] * c[3 + k] + j[5] * c[6 + k];
    }
  }
}

// Per-free-coordinate sum of the constant impulses on the coordinate through Jf(z2):
// sigma gamma over its limits, and its dry friction's beta (residual.h).
void limit_impulses(const Model& m, const double* w, std::vector<double>& out) {
  out.assign(m.nf, 0.0);
  for (int l = 0; l < m.nlim; ++l) out[m.limit_free[l]] += m.limit_sign[l] * w[m.lim_g + l];
  for (int k = 0; k < m.nfr; ++k) out[m.friction_free[k]] += w[m.fr_b + k];
}

// Most rows a joint has (three translational, three rotational).
constexpr int kMaxJointRows = 6;
// The joint's terms beside F (joint_state_terms): its lock rows' values at [0, kMaxJointRows),
// its k-th frictional coordinate's rate Jf(z2) xi25 at kMaxJointRows + k.
constexpr int kJointOutputs = 2 * kMaxJointRows;

// Which optional terms the joints' impulse maps carry (joint_state_terms).
struct JointTermFlags {
  bool minimal;    // springs, dampers or limits: the minimal-coordinate rows
  bool any_input;  // a nonzero joint input
};
JointTermFlags joint_term_flags(const Model& m, const Data& d) {
  JointTermFlags flags{m.has_springs || m.has_dampers || m.nlim > 0 || m.nfr > 0, false};
  for (int f = 0; f < m.nf; ++f) flags.any_input = flags.any_input || d.u[f] != 0.0;
  return flags;
}

// Joint j's part of dr/dz2, as dual numbers whose derivatives are along the seeds of its
// poses pa, pb at z2 (its 12 tangents [xa, ta, xb, tb]: dr/dz2's entries; or one
// direction: a product dr/dz2 dz2, step_jvp):
// - F (12): the joint's part of its bodies' residual rows (parent 0:6, child 6:12),
//     F = -Jc^T lambda + Jm^T (h k (m - m0) + w_c Jm (xi25 [+ xi15]) - sigma gamma) - Ju^T h u
//   (w_c = damper_weight, xi15 in the midpoint form: residual.h);
// - lock (its rows, in order; a locked joint's lock rows only): their value
//   g(z3; d2(z2), q2(z2)), whose reference is the joint's configuration at z2 (the z3 part
//   is state_residual_jacobian's); then, at kMaxJointRows + k, the rate Jf(z2) xi25 of its
//   k-th frictional coordinate, which its friction row carries (residual.h).
template <class D>
void joint_state_terms(const Model& m, const Data& d, const double* w, int j, const Pose<D>& pa, const Pose<D>& pb,
                       const std::vector<double>& limit, const JointTermFlags& flags, D* F, D* lock) {
  const double h = m.h;
  const int a = m.parent[j], b = m.child[j];
  JointKinematics<D> kin;
  JointRow<D> row;
  joint_kinematics(m, j, pa, pb, kin);
  for (int k = 0; k < 12; ++k) F[k] = D(0.0);
  for (int rr = m.joint_row_start[j]; rr < m.joint_row_start[j + 1]; ++rr) {
    if (m.row_lock[rr])
      lock_impulse_row(m, j, m.row_slot[rr], kin, row);
    else
      constraint_row(m, j, m.row_slot[rr], kin, row);
    const double lam = w[m.lam + rr];
    for (int k = 0; k < 12; ++k) F[k] -= row.jac[k] * lam;
  }
  if (m.locked[j]) {
    JointKinematics<double> k3;
    joint_kinematics_at(m, j, d.x3.data(), d.q3.data(), d.rot3.data(), k3);
    Vec3<D> d3;
    Quat<D> q3;
    for (int k = 0; k < 3; ++k) d3[k] = D(k3.d[k]);
    for (int k = 0; k < 4; ++k) q3[k] = D(k3.q_rel[k]);
    for (int rr = m.joint_row_start[j]; rr < m.joint_row_start[j + 1]; ++rr)
      if (m.row_lock[rr]) lock[rr - m.joint_row_start[j]] = lock_value(m, j, m.row_slot[rr], d3, q3, kin.d, kin.q_rel);
  }
  const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
  if (f0 < f1 && flags.minimal) {
    const Vec3<D> rv = rotation_vector(kin.q_rel);
    double xi[12], xi15[12];
    for (int s = 0; s < 2; ++s) {
      const int body = s == 0 ? a : b;
      for (int k = 0; k < 6; ++k) xi[6 * s + k] = body == kWorld ? 0.0 : w[6 * body + k];
      for (int k = 0; k < 3; ++k) {
        xi15[6 * s + k] = body == kWorld ? 0.0 : d.v15[3 * body + k];
        xi15[6 * s + 3 + k] = body == kWorld ? 0.0 : d.w15[3 * body + k];
      }
    }
    for (int f = f0; f < f1; ++f) {
      coordinate_row(m, j, f, kin, rv, row);
      const bool midpoint = !m.damper_implicit[f];
      D rate(0.0);
      for (int k = 0; k < 12; ++k) rate += row.jac[k] * (midpoint ? xi[k] + xi15[k] : xi[k]);
      const D coef = (h * m.spring[f]) * (row.value - m.spring_offset[f]) + damper_weight(m, f) * rate - limit[f];
      for (int k = 0; k < 12; ++k) F[k] += row.jac[k] * coef;
    }
    // the frictional coordinates' rates Jf(z2) xi25 (Jf from coordinate_row again: k in
    // joint order follows f, so one pass each)
    for (int k = m.joint_friction_start[j]; k < m.joint_friction_start[j + 1]; ++k) {
      coordinate_row(m, j, m.friction_free[k], kin, rv, row);
      D rate(0.0);
      for (int i = 0; i < 12; ++i) rate += row.jac[i] * xi[i];
      lock[kMaxJointRows + k - m.joint_friction_start[j]] = rate;
    }
  }
  if (flags.any_input)
    for (int f = f0; f < f1; ++f) {
      input_row(m, j, m.free_slot[f], kin, row);
      for (int k = 0; k < 12; ++k) F[k] -= row.jac[k] * (h * d.u[f]);
    }
}

// The joints' impulse-map terms at scalar D, joint by joint: pose_of(body, side) gives the
// pose at z2 of the joint's parent (side 0) or child (side 1) (seeded_pose), use(j, F, lock)
// takes joint j's terms (joint_state_terms). The one loop of the three passes over them:
// twelve-wide duals (dr/dz2's entries), one dual direction (step_jvp), reverse (step_vjp).
//
// With `select`, only the joints j with select[j] (the reverse mode's two kinds).
template <class D, class PoseOf, class Use>
void joint_terms(const Model& m, const Data& d, const double* w, PoseOf pose_of, Use use,
                 const uint8_t* select = nullptr) {
  std::vector<double> limit;
  limit_impulses(m, w, limit);
  const JointTermFlags flags = joint_term_flags(m, d);
  D F[12], lock[kJointOutputs];
  for (int j = 0; j < m.nj; ++j) {
    if (select && !select[j]) continue;
    const Pose<D> pa = pose_of(m.parent[j], 0);
    const Pose<D> pb = pose_of(m.child[j], 1);
    joint_state_terms(m, d, w, j, pa, pb, limit, flags, F, lock);
    use(j, F, lock);
  }
}

// The residual rows joint j's terms fill, fn(row, term) in this order: its lock rows
// (lock[rr - r0] on row lam + rr), then its bodies' rows (F[6 rs + i] on row 6 body + i;
// the world has none).
template <class D, class Fn>
void for_each_term_row(const Model& m, int j, const D* F, const D* lock, Fn fn) {
  if (m.locked[j])
    for (int rr = m.joint_row_start[j]; rr < m.joint_row_start[j + 1]; ++rr)
      if (m.row_lock[rr]) fn(m.lam + rr, lock[rr - m.joint_row_start[j]]);
  // friction rows Jf xi25 - v- + v+ (residual.h)
  for (int k = m.joint_friction_start[j]; k < m.joint_friction_start[j + 1]; ++k)
    fn(m.fr_b + k, lock[kMaxJointRows + k - m.joint_friction_start[j]]);
  const int bodies[2] = {m.parent[j], m.child[j]};
  for (int rs = 0; rs < 2; ++rs) {
    if (bodies[rs] == kWorld) continue;
    for (int i = 0; i < 6; ++i) fn(6 * bodies[rs] + i, F[6 * rs + i]);
  }
}

// Joint j's 12 tangents [xa, ta, xb, tb] as state columns, fn(tangent, column, factor):
// x -> x, t -> phi with d/dphi = 2 d/dt (the world has no columns).
template <class Fn>
void for_each_term_column(const Model& m, int j, Fn fn) {
  const int bodies[2] = {m.parent[j], m.child[j]};
  for (int part = 0; part < 4; ++part) {
    const int body = bodies[part / 2];
    if (body == kWorld) continue;
    const bool rot = part % 2 == 1;
    for (int k = 0; k < 3; ++k) fn(3 * part + k, state_col(body, rot ? 2 : 0, k), rot ? 2.0 : 1.0);
  }
}

// The limit row's -tau_l(z2, xi15) (residual.h, limit_target) in dr/dz2: tau_l from the
// coordinate at z2 and its rate Jf(z2) xi15, differentiated along the joint's 12 pose
// tangents at z2 with dual numbers (the rate's Jf turns with the pose) and along xi15,
// where it is linear, by one dual direction in the rate.
template <class Out>
void add_limit_target(const Model& m, const Data& d, int j, int l, Out& out) {
  const int f = m.limit_free[l];
  const double sigma = m.limit_sign[l], bound = m.limit_bound[l];
  const int bodies[2] = {m.parent[j], m.child[j]};
  double xi15[12];
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 3; ++k) {
      xi15[6 * s + k] = bodies[s] == kWorld ? 0.0 : d.v15[3 * bodies[s] + k];
      xi15[6 * s + 3 + k] = bodies[s] == kWorld ? 0.0 : d.w15[3 * bodies[s] + k];
    }
  JointKinematics<D12> kin;
  JointRow<D12> row;
  joint_kinematics(m, j, seeded_pose<D12>(d, bodies[0], [](double v, int k) { return D12::variable(v, k); }),
                   seeded_pose<D12>(d, bodies[1], [](double v, int k) { return D12::variable(v, 6 + k); }), kin);
  coordinate_row(m, j, f, kin, rotation_vector(kin.q_rel), row);
  // the limit's coordinate: an unwrapped angle differs from the row's value by a constant
  D12 theta = row.value;
  if (m.angle_unwrapped[f]) theta = theta + (d.angle2[f] - value(theta));
  D12 rate(0.0);
  for (int k = 0; k < 12; ++k) rate += row.jac[k] * xi15[k];
  const D12 tau = limit_target(sigma, bound, theta, rate, m.h);
  for_each_term_column(m, j, [&](int t, int col, double factor) { out.at(m.lim_g + l, col) -= factor * tau.d[t]; });
  // d tau / d rate (0 where clamped), times d rate / d xi15 = Jf(z2)
  D1 rate1(value(rate));
  rate1.d[0] = 1.0;
  const D1 tau1 = limit_target(sigma, bound, D1(value(theta)), rate1, m.h);
  for (int s = 0; s < 2; ++s) {
    if (bodies[s] == kWorld) continue;
    for (int k = 0; k < 3; ++k) {
      out.at(m.lim_g + l, state_col(bodies[s], 1, k)) -= tau1.d[0] * value(row.jac[6 * s + k]);
      out.at(m.lim_g + l, state_col(bodies[s], 3, k)) -= tau1.d[0] * value(row.jac[6 * s + 3 + k]);
    }
  }
}

// dr/dz2 (n x 12 nb: Columns, column-major, or a Product with it) at the solution w;
// without `joints`, all but the joints' impulse maps and lock references (what
// joint_state_terms gives: step_jvp takes them along its direction). With contact_z3, the
// contacts' derivatives at z3 that step_matrix left at the same w (factor_at_solution) are
// read instead of evaluating the contacts again (the same numbers).
template <class Out>
void state_residual_jacobian(const Model& m, Data& d, const double* w, Out out, bool joints = true,
                             const ContactZ3* contact_z3 = nullptr) {
  const double h = m.h;
  // previous momenta: the body residual is momentum_right - momentum_left - ...
  double jac[36];
  for (int b = 0; b < m.nb; ++b) {
    momentum_jacobian(m.mass[b], body_inertia(m, b), load3<double>(&d.w15[3 * b]), h, -1.0, jac);
    for (int i = 0; i < 6; ++i)
      for (int k = 0; k < 3; ++k) {
        out.at(6 * b + i, state_col(b, 1, k)) -= jac[6 * i + k];
        out.at(6 * b + i, state_col(b, 3, k)) -= jac[6 * i + 3 + k];
      }
  }
  // the rotors' left momenta at w15 (rotor.h): coupled over [parent, child]
  for (int r = 0; r < m.nr; ++r) {
    const int j = m.rotor_joint[r];
    const int bodies[2] = {m.parent[j], m.child[j]};
    if (m.rotor_linear[r]) {  // -a n n^T in the child's v15 columns
      double lj[9];
      linear_rotor_jacobian(m, r, lj);
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) out.at(6 * bodies[1] + i, state_col(bodies[1], 1, k)) -= lj[3 * i + k];
      continue;
    }
    double rj[2][2][9];
    rotor_jacobian(m, r, bodies[0] == kWorld ? nullptr : &d.w15[3 * bodies[0]], &d.w15[3 * bodies[1]], h, -1.0, rj);
    for (int side = 0; side < 2; ++side)
      for (int other = 0; other < 2; ++other) {
        if (bodies[side] == kWorld || bodies[other] == kWorld) continue;
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < 3; ++k) out.at(6 * bodies[side] + 3 + i, state_col(bodies[other], 3, k)) -= rj[side][other][3 * i + k];
      }
  }

  // impulse maps at z2: the joint's part of the body residual (joint_state_terms),
  // differentiated along the joint's 12 tangents with dual numbers
  if (joints)
    joint_terms<D12>(
        m, d, w,
        [&](int body, int side) {
          return seeded_pose<D12>(d, body, [side](double v, int k) { return D12::variable(v, 6 * side + k); });
        },
        [&](int j, const D12* F, const D12* lock) {
          for_each_term_row(m, j, F, lock, [&](int row, const D12& g) {
            for_each_term_column(m, j, [&](int s, int col, double f) { out.at(row, col) += f * g.d[s]; });
          });
        });

  // body actuators: the force rows carry -h u R(q2) F; d(R(q2 [1, phi]) F)/dphi = -2 R [F]x
  for (int a : m.body_actuators) {
    const double ua = d.u_act[a];
    if (ua == 0.0) continue;
    const int b = m.actuator_body[a];
    const double* r = &d.rot2[9 * b];
    const double* f = &m.actuator_force[3 * a];
    const double fx[3][3] = {{0.0, -f[2], f[1]}, {f[2], 0.0, -f[0]}, {-f[1], f[0], 0.0}};
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) {
        double rf = 0.0;
        for (int l = 0; l < 3; ++l) rf += r[3 * i + l] * fx[l][k];
        out.at(6 * b + i, state_col(b, 2, k)) += 2.0 * h * ua * rf;
      }
  }

  // the midpoint dampers' known half, w_c Jf(z2)^T Jf(z2) xi15: its xi15 = (v15, w15) columns
  for (int f : m.damped_free) {
    if (m.damper_implicit[f]) continue;
    const int j = m.free_joint[f];
    const double* jf = &d.jf2[12 * f];
    const double c = damper_weight(m, f);
    const int bodies[2] = {m.parent[j], m.child[j]};
    for (int rs = 0; rs < 2; ++rs) {
      if (bodies[rs] == kWorld) continue;
      for (int cs = 0; cs < 2; ++cs) {
        if (bodies[cs] == kWorld) continue;
        for (int i = 0; i < 6; ++i)
          for (int k = 0; k < 3; ++k) {
            out.at(6 * bodies[rs] + i, state_col(bodies[cs], 1, k)) += c * jf[6 * rs + i] * jf[6 * cs + k];
            out.at(6 * bodies[rs] + i, state_col(bodies[cs], 3, k)) += c * jf[6 * rs + i] * jf[6 * cs + 3 + k];
          }
      }
    }
  }

  // quantities at z3: joint constraints and limit rows, chained to z2
  std::vector<double>& chain = d.grad_chain;
  chain.assign(9 * m.nb, 0.0);
  for (int b = 0; b < m.nb; ++b) {
    const Mat3<double> r = rotation(integrator_map(load3<double>(w + 6 * b + 3), h));
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) chain[9 * b + 3 * i + k] = 2.0 * r[k][i];
  }
  JointKinematics<double> kin3;
  JointRow<double> row3;
  for (int j = 0; j < m.nj; ++j) {
    const int r0 = m.joint_row_start[j], r1 = m.joint_row_start[j + 1];
    const int l0 = m.joint_limit_start[j], l1 = m.joint_limit_start[j + 1];
    if (r0 == r1 && l0 == l1) continue;
    joint_kinematics_at(m, j, d.x3.data(), d.q3.data(), d.rot3.data(), kin3);
    for (int rr = r0; rr < r1; ++rr) {
      joint_row(m, j, rr, kin3, d.lock_d2.data(), d.lock_q2.data(), row3);
      add_z3(out, m.lam + rr, row3.jac, m.parent[j], m.child[j], chain);
    }
    if (l0 == l1) continue;
    const Vec3<double> rv = rotation_vector(kin3.q_rel);
    for (int l = l0; l < l1; ++l) {
      limit_row(m, j, m.limit_free[l], kin3, rv, &d.qrel2[4 * j], d.angle2[m.limit_free[l]], row3);
      double neg[12];
      for (int k = 0; k < 12; ++k) neg[k] = -m.limit_sign[l] * row3.jac[k];
      add_z3(out, m.lim_g + l, neg, m.parent[j], m.child[j], chain);
      if (d.limit_target[l] > 0.0) add_limit_target(m, d, j, l, out);
    }
  }
  // contacts: constraint rows and body impulses, both evaluated at z3
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;  // left out of the solve: rows 0 = 0 (margins.h)
    const int n = contact_half_size(m.contacts[c].model);
    const double(*cons_z3)[12];
    const double(*wrench_z3)[12];
    if (contact_z3) {
      cons_z3 = contact_z3[c].cons;
      wrench_z3 = contact_z3[c].wrench;
    } else {
      const ContactEval& ev = evaluate_step_contact(m, d, w, c, ContactOutput::Jacobians);
      cons_z3 = ev.cons_z3;
      wrench_z3 = ev.wrench_z3;
    }
    const int a = m.contacts[c].body, b = m.contacts[c].other;
    const int g0 = m.contact_start[c] + n;
    for (int i = 0; i < n; ++i) add_z3(out, g0 + i, cons_z3[i], a, b, chain);
    const int bodies[2] = {a, b};
    double neg[12];
    for (int r = 0; r < 12; ++r) {
      if (bodies[r / 6] == kWorld) continue;
      for (int k = 0; k < 12; ++k) neg[k] = -wrench_z3[r][k];
      add_z3(out, 6 * bodies[r / 6] + r % 6, neg, a, b, chain);
    }
    // the gap row's target tau(z2): d - tau - s (restitution, or a recovery from inside:
    // its derivatives vanish where tau does, restitution.h)
    if (d.contact_target[c] != 0.0) {
      double jac[kTargetColumns];
      restitution_target_jacobian(m.contacts[c], h, m.gravity, restitution_body(d, a), restitution_body(d, b), jac);
      for (int s = 0; s < 2; ++s) {
        if (bodies[s] == kWorld) continue;
        for (int k = 0; k < 12; ++k) out.at(g0, 12 * bodies[s] + k) -= jac[12 * s + k];
      }
    }
  }
}

// xv -= the joints' part of dr/dz2 dz2 (state_residual_jacobian without it gives the
// rest): joint_state_terms along the direction, one dual number where the Jacobian's
// entries take twelve (the 20-link chain's forward mode spent two thirds of its time in
// the twelve-wide kinematics). Each body's pose moves along its tangent in dz2 (12 nb,):
// x + e dx, q [1, e dphi] (t = 2 phi).
void subtract_joint_direction(const Model& m, const Data& d, const double* w, const double* dz2, double* xv) {
  joint_terms<D1>(
      m, d, w,
      [&](int body, int) {
        return seeded_pose<D1>(d, body, [&](double v, int k) {
          D1 out(v);
          out.d[0] = k < 3 ? dz2[state_col(body, 0, k)] : 2.0 * dz2[state_col(body, 2, k - 3)];
          return out;
        });
      },
      [&](int j, const D1* F, const D1* lock) {
        for_each_term_row(m, j, F, lock, [&](int row, const D1& g) { xv[row] -= g.d[0]; });
      });
}

// Whether joint j's terms are a gradient, F = grad Phi for one scalar function Phi of its
// 12 tangents (right-trivialised: q -> q exp(t/2)), but for its dampers and its inputs on
// rotational slots of a quaternion joint (add_damper_adjoint, add_rotational_input_adjoint):
// where the reverse mode needs only the forward one (subtract_joint_transpose). Every row
// family's Jacobian is the gradient of its value (kinematics.h: translational rows,
// Vec(q_rel), log(q_rel), the axes' angles and the Hooke constraint), so the terms are when
// each row's coefficient is a constant (joint impulses, limit impulses, inputs) or a
// function of the row's own value (springs, h k (m - m0) = d/dm of h k (m - m0)^2 / 2).
// Not a gradient: a locked joint's terms (the lock impulse rows' reference moves with z2;
// the lock values are outputs of their own), and a joint with friction (its rate rows are
// outputs of their own), which the tape takes.
bool joint_terms_are_gradient(const Model& m, int j) {
  return !m.locked[j] && m.joint_friction_start[j] == m.joint_friction_start[j + 1];
}

using D3 = Dual<double, 3>;

// v += what the forward pass of subtract_joint_transpose misses of joint j's dampers:
// D = c Jm^T with c = w_c Jm . xi (xi = xi25, + xi15 in the midpoint form) is no gradient.
// With M the second derivative of the coordinate m (Jm = grad m, M^T a = dJm along a,
// M a = M^T a + a_rot x Jm_rot per body as in subtract_joint_transpose), its VJP is
// c M y + (Jm . y) w_c M xi; the forward pass along y gave w_c ((M^T y) . xi) Jm + c M^T y,
// plus the cross term y_rot x c Jm_rot. The difference:
//   w_c ((Jm . y) (M^T xi + xi_rot x Jm_rot) - ((M^T y) . xi) Jm),
// with M^T y, M^T xi25 and M^T xi15 from one pass of three dual directions.
void add_damper_adjoint(const Model& m, const Data& d, const double* w, int j, const double* y, double* v) {
  const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
  bool any = false;
  for (int f = f0; f < f1; ++f) any = any || damper_weight(m, f) != 0.0;
  if (!any) return;
  const int bodies[2] = {m.parent[j], m.child[j]};
  double yj[12], xi[12], xi15[12];
  for (int s = 0; s < 2; ++s) {
    const int body = bodies[s];
    for (int k = 0; k < 6; ++k) {
      yj[6 * s + k] = body == kWorld ? 0.0 : y[6 * body + k];
      xi[6 * s + k] = body == kWorld ? 0.0 : w[6 * body + k];
    }
    for (int k = 0; k < 3; ++k) {
      xi15[6 * s + k] = body == kWorld ? 0.0 : d.v15[3 * body + k];
      xi15[6 * s + 3 + k] = body == kWorld ? 0.0 : d.w15[3 * body + k];
    }
  }
  auto pose = [&](int s) {
    return seeded_pose<D3>(d, bodies[s], [&](double value, int k) {
      D3 out(value);
      out.d[0] = yj[6 * s + k];
      out.d[1] = xi[6 * s + k];
      out.d[2] = xi15[6 * s + k];
      return out;
    });
  };
  JointKinematics<D3> kin;
  joint_kinematics(m, j, pose(0), pose(1), kin);
  const Vec3<D3> rv = rotation_vector(kin.q_rel);
  JointRow<D3> row;
  for (int f = f0; f < f1; ++f) {
    const double wc = damper_weight(m, f);
    if (wc == 0.0) continue;
    coordinate_row(m, j, f, kin, rv, row);
    const bool midpoint = !m.damper_implicit[f];
    double jy = 0.0, mty_xi = 0.0, jac[12], mt_xi[12], rate_xi[12];
    for (int k = 0; k < 12; ++k) {
      jac[k] = row.jac[k].v;
      rate_xi[k] = midpoint ? xi[k] + xi15[k] : xi[k];
      mt_xi[k] = midpoint ? row.jac[k].d[1] + row.jac[k].d[2] : row.jac[k].d[1];
      jy += jac[k] * yj[k];
      mty_xi += row.jac[k].d[0] * rate_xi[k];
    }
    double diff[12];
    for (int k = 0; k < 12; ++k) diff[k] = jy * mt_xi[k] - mty_xi * jac[k];
    for (int s = 0; s < 2; ++s) {
      const double* a = rate_xi + 6 * s + 3;
      const double* g = jac + 6 * s + 3;
      diff[6 * s + 3] += jy * (a[1] * g[2] - a[2] * g[1]);
      diff[6 * s + 4] += jy * (a[2] * g[0] - a[0] * g[2]);
      diff[6 * s + 5] += jy * (a[0] * g[1] - a[1] * g[0]);
    }
    for (int k = 0; k < 12; ++k) v[k] += wc * diff[k];
  }
}

// v += what the forward pass of subtract_joint_transpose misses of joint j's inputs on the
// rotational slots of a quaternion joint, whose rows are no gradient: input_row's
// T = c [0, rel_ta^T g, 0, g] with c = -h u, g = R(q_rel)^T b, so rel_ta^T g = -R(off) b
// is constant and g moves with q_rel's right increment delta = rel_ta t_a + t_b as
// g + g x delta (R(q exp(delta/2)) = R (I + [delta]x)). Its VJP is c [rel_ta^T p; p] on
// [ta, tb] with p = y_b x g (y_a, y_b: y on the parent's and child's torque rows); the
// forward pass gave c [-y_a x R(off) b; g x delta_y + y_b x g] (its direction's delta_y
// = rel_ta y_a + y_b, plus the cross term). The difference, at z2:
//   ta: c (rel_ta^T (y_b x g) + y_a x R(off) b),   tb: c (delta_y x g).
void add_rotational_input_adjoint(const Model& m, const Data& d, int j, const double* y, double* v) {
  if (m.joint_rotation[j] != kRotationQuaternion) return;
  const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
  bool any = false;
  for (int f = f0; f < f1; ++f) any = any || (m.free_slot[f] >= 3 && d.u[f] != 0.0);
  if (!any) return;
  JointKinematics<double> kin;
  joint_kinematics_at(m, j, d.x2.data(), d.q2.data(), d.rot2.data(), kin);
  const int a = m.parent[j], b = m.child[j];
  const Vec3<double> ya = a == kWorld ? vec3(0.0, 0.0, 0.0) : load3<double>(y + 6 * a + 3);
  const Vec3<double> yb = load3<double>(y + 6 * b + 3);
  const Vec3<double> delta = matvec(kin.rel_ta, ya) + yb;
  const Mat3<double> off = load33<double>(&m.offset_rotation[9 * j]);
  for (int f = f0; f < f1; ++f) {
    if (m.free_slot[f] < 3 || d.u[f] == 0.0) continue;
    const double c = -m.h * d.u[f];
    const Vec3<double> basis = load3<double>(&m.basis[18 * j + 3 * m.free_slot[f]]);
    const Vec3<double> g = tmatvec(kin.rot_rel, basis);
    const Vec3<double> ta = tmatvec(kin.rel_ta, cross(yb, g)) + cross(ya, matvec(off, basis));
    const Vec3<double> tb = cross(delta, g);
    for (int i = 0; i < 3; ++i) {
      v[3 + i] += c * ta[i];
      v[9 + i] += c * tb[i];
    }
  }
}

// zbar2 -= (the joints' part of dr/dz2)^T y (state_residual_jacobian without it gives the
// rest): per joint, the 12 numbers v_s = sum_k yj_k dF_k/dseed_s (yj: y on the joint's
// bodies' rows, F's order), each mapped to its state column (for_each_term_column).
//
// A joint whose terms are a gradient (joint_terms_are_gradient) takes one dual direction:
// with F = grad Phi, dF/dseed is Phi's second derivative M_sk = d^2 Phi(z + s + k) / ds dk,
// which the rotations make asymmetric: q exp(s/2) exp(k/2) = q exp(u/2) with u = s + k +
// (s x k)/2 to second order (Baker-Campbell-Hausdorff on so(3)), so M = H + (1/2) eps_lij g_l
// with H symmetric and g Phi's rotational gradient, the body's torque rows of F itself.
// Hence v = M yj = M^T yj + yj_rot x F_rot per body, and M^T yj is the forward mode along
// yj (subtract_joint_direction's pass with the direction yj): the VJP at the JVP's cost.
// Inputs on a quaternion joint's rotational slots and dampers, which are no gradient, add
// their closed-form difference (add_rotational_input_adjoint, add_damper_adjoint).
//
// A locked joint is recorded on the tape at z2 with its 12 tangents as the inputs, and one
// backward sweep of sum_row y[row] term_row (math/reverse.h) gives v, lock rows included.
//
// (Both replace the twelve-wide duals of state_residual_jacobian, which form the joint's
// whole 12 x 12 blocks: the 20-link chain's VJP spent two thirds of its time there, issue
// 28 item 1.)
void subtract_joint_transpose(const Model& m, Data& d, const double* w, const double* y, double* zbar2) {
  const JointTermFlags flags = joint_term_flags(m, d);
  std::vector<uint8_t>& gradient = d.grad_joint_gradient;
  std::vector<uint8_t>& recorded = d.grad_joint_recorded;
  gradient.resize(m.nj);
  recorded.resize(m.nj);
  bool any_recorded = false;
  for (int j = 0; j < m.nj; ++j) {
    gradient[j] = joint_terms_are_gradient(m, j);
    recorded[j] = !gradient[j];
    any_recorded = any_recorded || recorded[j];
  }
  double v[12];
  joint_terms<D1>(
      m, d, w,
      [&](int body, int) {
        return seeded_pose<D1>(d, body, [&](double value, int k) {
          D1 out(value);
          out.d[0] = y[6 * body + k];
          return out;
        });
      },
      [&](int j, const D1* F, const D1*) {
        const int bodies[2] = {m.parent[j], m.child[j]};
        for (int k = 0; k < 12; ++k) v[k] = F[k].d[0];
        for (int side = 0; side < 2; ++side) {
          if (bodies[side] == kWorld) continue;
          const double* yr = y + 6 * bodies[side] + 3;
          const D1* fr = F + 6 * side + 3;
          v[6 * side + 3] += yr[1] * fr[2].v - yr[2] * fr[1].v;
          v[6 * side + 4] += yr[2] * fr[0].v - yr[0] * fr[2].v;
          v[6 * side + 5] += yr[0] * fr[1].v - yr[1] * fr[0].v;
        }
        if (flags.any_input) add_rotational_input_adjoint(m, d, j, y, v);
        if (m.has_dampers) add_damper_adjoint(m, d, w, j, y, v);
        for_each_term_column(m, j, [&](int s, int col, double f) { zbar2[col] -= f * v[s]; });
      },
      gradient.data());
  if (!any_recorded) return;
  Tape& tape = d.grad_tape;
  tape.clear();
  Rev inputs[12];
  joint_terms<Rev>(
      m, d, w,
      [&](int body, int side) {
        std::fill(inputs + 6 * side, inputs + 6 * side + 6, Rev());  // the world's: constants
        return seeded_pose<Rev>(d, body, [&](double value, int k) { return inputs[6 * side + k] = tape.variable(value); });
      },
      [&](int j, const Rev* F, const Rev* lock) {
        tape.start_sweep();
        for_each_term_row(m, j, F, lock, [&](int row, const Rev& term) { tape.seed(term, y[row]); });
        tape.sweep();
        for_each_term_column(m, j, [&](int s, int col, double f) { zbar2[col] -= f * tape.gradient(inputs[s]); });
        tape.clear();
      },
      recorded.data());
}

// d tau / d theta of contact c's gap target, kernel column `column` (restitution.h), 0
// where there is none (its derivatives vanish where it does).
double target_parameter(const Model& m, const Data& d, int c, int column) {
  const ContactParams& p = m.contacts[c];
  if (d.contact_target[c] == 0.0) return 0.0;
  double jac[kTargetColumns];
  restitution_target_jacobian(p, m.h, m.gravity, restitution_body(d, p.body), restitution_body(d, p.other), jac);
  return jac[column];
}

// dr/du (n x nu): per joint actuator -h g Ju(z2)^T, per body actuator -h [R(q2) F; M]
// on the body rows.
void input_residual_jacobian(const Model& m, Data& d, Columns out) {
  JointKinematics<double> kin;
  JointRow<double> row;
  for (int a = 0; a < m.nu; ++a) {
    const int f = m.actuator_free[a];
    if (f >= 0) {
      const int j = m.free_joint[f];
      joint_kinematics_at(m, j, d.x2.data(), d.q2.data(), d.rot2.data(), kin);
      input_row(m, j, m.free_slot[f], kin, row);
      scatter12(m, j, row.jac, -m.h * m.actuator_gain[a], &out.at(0, a));
      continue;
    }
    const int b = m.actuator_body[a];
    const double* r = &d.rot2[9 * b];
    const double* F = &m.actuator_force[3 * a];
    for (int i = 0; i < 3; ++i) {
      out.at(6 * b + i, a) -= m.h * (r[3 * i] * F[0] + r[3 * i + 1] * F[1] + r[3 * i + 2] * F[2]);
      out.at(6 * b + 3 + i, a) -= m.h * m.actuator_moment[3 * a + i];
    }
  }
}

// dr/dtheta (n x p) for the requested kinds, columns in parameter_labels order.
void parameter_residual_jacobian(const Model& m, Data& d, const double* w, const std::vector<int>& kinds,
                                 Columns out) {
  const double h = m.h;
  int col = 0;
  for (int kind_code : kinds) {
    const ParameterKind kind = static_cast<ParameterKind>(kind_code);
    switch (kind) {
      case ParameterKind::Mass:
        // d/dm of m (v25 - v15) - h m g
        for (int b = 0; b < m.nb; ++b)
          for (int k = 0; k < 3; ++k) out.at(6 * b + k, col + b) = (w[6 * b + k] - d.v15[3 * b + k]) - h * m.gravity[k];
        break;
      case ParameterKind::Inertia: {
        // d/dJ_kl of the angular momenta: (h/2)(s25 E w25 + w25 x E w25) - (h/2)(s15 E w15 - w15 x E w15),
        // E the unit symmetric matrix of component (xx, yy, zz, xy, xz, yz)
        static const int idx[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
        for (int b = 0; b < m.nb; ++b) {
          const Vec3<double> w2 = load3<double>(w + 6 * b + 3), w1 = load3<double>(&d.w15[3 * b]);
          const double s2 = half_s(w2, h), s1 = half_s(w1, h);
          for (int c = 0; c < 6; ++c) {
            Mat3<double> e{};
            e[idx[c][0]][idx[c][1]] = e[idx[c][1]][idx[c][0]] = 1.0;
            const Vec3<double> ew2 = matvec(e, w2), ew1 = matvec(e, w1);
            const Vec3<double> x2 = cross(w2, ew2), x1 = cross(w1, ew1);
            for (int k = 0; k < 3; ++k)
              out.at(6 * b + 3 + k, col + 6 * b + c) =
                  0.5 * h * (s2 * ew2[k] + x2[k]) - 0.5 * h * (s1 * ew1[k] - x1[k]);
          }
        }
        break;
      }
      case ParameterKind::Gravity:
        for (int b = 0; b < m.nb; ++b)
          for (int k = 0; k < 3; ++k) out.at(6 * b + k, col + k) = -h * m.mass[b];
        // restitution targets: gravity's normal acceleration and the speed threshold
        for (int c = 0; c < m.nc; ++c) {
          if (!d.contact_active[c]) continue;  // left out of the solve: rows 0 = 0 (margins.h)
          const int g0 = m.contact_start[c] + contact_half_size(m.contacts[c].model);
          for (int k = 0; k < 3; ++k) out.at(g0, col + k) -= target_parameter(m, d, c, kTargetGravity + k);
        }
        break;
      case ParameterKind::Spring:
      case ParameterKind::Damper: {
        // d r / d k_f = +h (m - m0) Jm^T; d r / d c_f = +(w_c / c) (Jm (xi25 [+ xi15])) Jm^T (at z2)
        JointKinematics<double> kin;
        JointRow<double> row;
        for (int j = 0; j < m.nj; ++j) {
          const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
          if (f0 == f1) continue;
          joint_kinematics_at(m, j, d.x2.data(), d.q2.data(), d.rot2.data(), kin);
          const Vec3<double> rv = rotation_vector(kin.q_rel);
          for (int f = f0; f < f1; ++f) {
            coordinate_row(m, j, f, kin, rv, row);
            double coef = h * (row.value - m.spring_offset[f]);
            if (kind == ParameterKind::Damper) {
              const bool midpoint = !m.damper_implicit[f];
              coef = (midpoint ? 0.5 * h : h) * (dot12(m, j, row.jac, w) + (midpoint ? previous_rate(m, d, j, row.jac) : 0.0));
            }
            scatter12(m, j, row.jac, coef, &out.at(0, col + f));
          }
        }
        break;
      }
      case ParameterKind::Friction:
        // the mu gn row (row 1 of the constraint rows; impact has no friction)
        for (int c = 0; c < m.nc; ++c) {
          if (!d.contact_active[c]) continue;  // left out of the solve: rows 0 = 0 (margins.h)
          if (m.contacts[c].model == ContactModel::Impact) continue;
          const int g0 = m.contact_start[c] + contact_half_size(m.contacts[c].model);
          out.at(g0 + 1, col + c) = w[g0];
        }
        break;
      case ParameterKind::Radius:
      case ParameterKind::Offset: {
        // the sphere's offset (3) and radius (parameter columns of the contact kernel):
        // constraint rows, and the body rows minus the wrench
        const bool radius = kind == ParameterKind::Radius;
        for (int c = 0; c < m.nc; ++c) {
          if (!d.contact_active[c]) continue;  // left out of the solve: rows 0 = 0 (margins.h)
          const ContactEval& ev = evaluate_step_contact(m, d, w, c, ContactOutput::Parameters);
          const int g0 = m.contact_start[c] + ev.n;
          const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
          for (int p = 0; p < (radius ? 1 : 3); ++p) {
            const int pc = radius ? 3 : p;  // kernel column: offset x, y, z, radius
            const int oc = col + (radius ? c : 3 * c + p);
            for (int i = 0; i < ev.n; ++i) out.at(g0 + i, oc) += ev.cons_parameters[i][pc];
            out.at(g0, oc) -= target_parameter(m, d, c, radius ? kTargetRadius : kTargetOffset + p);
            for (int r = 0; r < 12; ++r)
              if (bodies[r / 6] != kWorld) out.at(6 * bodies[r / 6] + r % 6, oc) -= ev.wrench_parameters[r][pc];
          }
        }
        break;
      }
      case ParameterKind::Restitution:
        // the gap row d - tau - s
        for (int c = 0; c < m.nc; ++c) {
          if (!d.contact_active[c]) continue;  // left out of the solve: rows 0 = 0 (margins.h)
          const int g0 = m.contact_start[c] + contact_half_size(m.contacts[c].model);
          out.at(g0, col + c) = -target_parameter(m, d, c, kTargetRestitution);
        }
        break;
    }
    col += parameter_count(m, kind);
  }
}

// Derivatives of the unknowns -> derivatives of the next state (12 nb x k, row-major):
// per body dx3 = h dv25, dphi3 = (1/2) integrator_map_jacobian(w25) dw25.
void next_state_tangent(const Model& m, const double* w, Columns dw, int k, double* out) {
  const double h = m.h;
  for (int b = 0; b < m.nb; ++b) {
    const Mat3<double> mw = integrator_map_jacobian(load3<double>(w + 6 * b + 3), h);
    for (int c = 0; c < k; ++c) {
      const double* xi = &dw.at(6 * b, c);
      for (int i = 0; i < 3; ++i) {
        out[static_cast<size_t>(state_col(b, 0, i)) * k + c] = h * xi[i];
        out[static_cast<size_t>(state_col(b, 1, i)) * k + c] = xi[i];
        out[static_cast<size_t>(state_col(b, 2, i)) * k + c] =
            0.5 * (mw[i][0] * xi[3] + mw[i][1] * xi[4] + mw[i][2] * xi[5]);
        out[static_cast<size_t>(state_col(b, 3, i)) * k + c] = xi[3 + i];
      }
    }
  }
}

double frobenius(const double* v, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += v[i] * v[i];
  return std::sqrt(s);
}

// r = b - M x (or b - M^T x) for the unregularised matrix (the assembled one minus REG
// on the joint-impulse diagonal), k columns.
void unregularized_residual(const Model& m, const Data& d, const double* b, const double* x, double* r, int k,
                            bool transpose) {
  for (int c = 0; c < k; ++c) {
    const size_t off = static_cast<size_t>(c) * m.n;
    block_multiply(m.blocks, d.matrix.data(), x + off, r + off, transpose);
    for (int i = 0; i < m.n; ++i) r[off + i] = b[off + i] - r[off + i];
    for (int i = 0; i < m.nl; ++i) r[off + m.lam + i] += kConstraintRegularization * x[off + m.lam + i];
  }
}

void factor_block_lu_at_solution(const Model& m, Data& d);

// The infinity norm of the matrix in d.matrix (Model::blocks' structural blocks), or with
// `transpose` its one norm (the infinity norm of its transpose).
double matrix_norm(const Model& m, Data& d, bool transpose) {
  const BlockStructure& s = m.blocks;
  std::vector<double>& sums = d.grad_norm;
  sums.assign(m.n, 0.0);
  const double* values = d.matrix.data();
  for (int b = 0; b < s.n_structural; ++b) {
    const int i = s.block_row[b], j = s.block_col[b], ni = s.size(i), nj = s.size(j);
    const double* v = values + s.block_offset[b];
    for (int r = 0; r < ni; ++r)
      for (int c = 0; c < nj; ++c)
        sums[transpose ? s.node_idx[s.node_ptr[j] + c] : s.node_idx[s.node_ptr[i] + r]] += std::fabs(v[nj * r + c]);
  }
  return *std::max_element(sums.begin(), sums.end());
}

// x = M^-1 b (or M^-T b; k columns, in place in b; d.grad_b holds b) with the condensed
// factorisation of the exact matrix (factor_at_solution), refined against the whole matrix,
// x += M^-1 (b - M x), until the sweep that starts from an iterate whose every column has a
// normwise backward error |b - M x| / (|M| |x| + |b|) (infinity norms) of at most
// kCondensedBackwardError, about the block LU's own: the block LU's exact path (a solve and
// one sweep) when the first solve is that good, and each further sweep shrinks the closed
// form's error by about the unit roundoff times its growth. False when
// d.gradients_condensed_sweeps (kCondensedRefinementSweeps) are not enough (b then holds no
// solution).
bool solve_condensed_refined(const Model& m, Data& d, double* b, int k, bool transpose) {
  const size_t size = static_cast<size_t>(m.n) * k;
  const double norm = matrix_norm(m, d, transpose);
  std::vector<double>& r = d.grad_r;
  const double* rhs = d.grad_b.data();
  solve_factored(m, d, b, k, transpose);
  for (int sweep = 0; sweep < d.gradients_condensed_sweeps; ++sweep) {
    block_residual(m.blocks, d.matrix.data(), rhs, b, r.data(), k, transpose, &d.grad_x);
    bool converged = true;
    for (int c = 0; c < k && converged; ++c) {
      const size_t off = static_cast<size_t>(c) * m.n;
      double xmax = 0.0, bmax = 0.0, rmax = 0.0;
      for (int i = 0; i < m.n; ++i) {
        xmax = std::max(xmax, std::fabs(b[off + i]));
        bmax = std::max(bmax, std::fabs(rhs[off + i]));
        rmax = std::max(rmax, std::fabs(r[off + i]));
      }
      converged = rmax <= kCondensedBackwardError * (norm * xmax + bmax);
    }
    solve_factored(m, d, r.data(), k, transpose);
    for (size_t i = 0; i < size; ++i) b[i] += r[i];
    if (converged) return true;
  }
  return false;
}

// x = M^-1 b (or M^-T b; k columns, in place in b) without the joint-impulse regularisation:
// with the exact matrix factorised (d.lu_exact), one solve and one refinement sweep;
// otherwise iterative refinement x += M_reg^-1 (b - M x), a sweep kept only when it halves
// the residual (redundant joints make M singular: a right-hand side that breaks the
// redundancy has no exact solution and refinement would drift along the null space).
void solve_exact(const Model& m, Data& d, double* b, int k, bool transpose = false) {
  const size_t size = static_cast<size_t>(m.n) * k;
  std::vector<double>& rhs = d.grad_b;
  std::vector<double>& r = d.grad_r;
  std::vector<double>& x_new = d.grad_x;
  std::vector<double>& r_new = d.grad_r_new;
  rhs.assign(b, b + size);
  r.resize(size);
  x_new.resize(size);
  r_new.resize(size);
  if (d.lu_is_condensed) {
    if (solve_condensed_refined(m, d, b, k, transpose)) return;
    // not at rounding level within its sweeps: the block LU of the same (exact) matrix
    factor_block_lu_at_solution(m, d);
    std::copy(rhs.begin(), rhs.end(), b);
  }
  solve_factored(m, d, b, k, transpose);
  if (d.lu_exact) {
    // The exact matrix is factorised (factor_at_solution): one sweep of refinement in
    // working precision, x += M^-1 (b - M x), all columns at once. (The block LU pivots only
    // inside diagonal blocks: its solve is normwise accurate, but small entries of A lost up
    // to 2e-12 against the goldens (pendulum: 1e-14 before); the sweep restores them. A
    // column-by-column refinement to the unit roundoff, LAPACK's dgerfs, moved no entry by
    // more than 8e-13 from this one sweep and cost the chain's A 2.4 times as much.)
    block_residual(m.blocks, d.matrix.data(), rhs.data(), b, r.data(), k, transpose, &x_new);
    solve_factored(m, d, r.data(), k, transpose);
    for (size_t i = 0; i < size; ++i) b[i] += r[i];
    return;
  }
  unregularized_residual(m, d, rhs.data(), b, r.data(), k, transpose);
  double norm = frobenius(r.data(), size);
  for (int sweep = 0; sweep < kRefinementSweeps; ++sweep) {
    std::copy(r.begin(), r.end(), x_new.begin());
    solve_factored(m, d, x_new.data(), k, transpose);
    for (size_t i = 0; i < size; ++i) x_new[i] += b[i];
    unregularized_residual(m, d, rhs.data(), x_new.data(), r_new.data(), k, transpose);
    const double norm_new = frobenius(r_new.data(), size);
    if (!(norm_new < 0.5 * norm)) break;
    std::copy(x_new.begin(), x_new.end(), b);
    r.swap(r_new);
    norm = norm_new;
  }
}

// Move the converged solution d.w onto the central path s o gamma = kappa.
void relax(const Model& m, Data& d, double kappa) {
  // the contacts left out of the solve (margins.h) stay out: unknowns 0
  const uint8_t* active = d.contact_active.data();
  auto in_solve = [&](int c) { return c < 0 || active[c]; };
  std::fill(d.target.begin(), d.target.end(), 0.0);
  for (size_t i = 0; i < m.orthant_s.size(); ++i)
    if (in_solve(m.orthant_contact[i])) d.target[m.orthant_s[i]] = kappa;
  for (size_t k = 0; k < m.soc_contact.size(); ++k)
    if (in_solve(m.soc_contact[k])) d.target[m.soc_s[3 * k]] = kappa;
  double* w = d.w.data();
  // Start strictly inside the cones: at tight tolerances the solver's last iterate can
  // sit within rounding of a cone boundary, where the scaling is undefined. The lift
  // is far below the central-path values (~kappa / gamma).
  const double lift = kRelaxLift * kappa;
  for (size_t i = 0; i < m.orthant_s.size(); ++i) {
    if (!in_solve(m.orthant_contact[i])) continue;
    w[m.orthant_s[i]] = std::max(w[m.orthant_s[i]], 0.0) + lift;
    w[m.orthant_g[i]] = std::max(w[m.orthant_g[i]], 0.0) + lift;
  }
  for (const std::vector<int>* idx : {&m.soc_s, &m.soc_g})
    for (size_t k = 0; k < idx->size() / 3; ++k) {
      if (!in_solve(m.soc_contact[k])) continue;
      double* x0 = &w[(*idx)[3 * k]];
      const double x1 = w[(*idx)[3 * k + 1]], x2 = w[(*idx)[3 * k + 2]];
      *x0 = std::max(*x0, std::sqrt(x1 * x1 + x2 * x2)) + lift;
    }
  for (int it = 0; it < kRelaxIterations; ++it) {
    step_residual(m, d, w, d.r.data());
    double err = 0.0;
    for (int i = 0; i < m.n; ++i) err = std::max(err, std::fabs(d.r[i] - d.target[i]));
    if (err < kRelaxTolerance * std::max(1.0, kappa)) break;
    step_matrix(m, d, w);
    std::copy(d.r.begin(), d.r.end(), d.rhs.begin());
    scale_second_order_cones(m, d, d.rhs.data());
    if (!factor_matrix(m, d)) throw std::runtime_error("relaxation: singular Newton matrix");
    for (int i = 0; i < m.n; ++i) d.delta[i] = d.target[i] - d.rhs[i];
    solve_factored(m, d, d.delta.data());
    const double alpha = std::min(1.0, cone_step(m, w, d.delta.data(), 0.99, active));
    for (int i = 0; i < m.n; ++i) w[i] += alpha * d.delta[i];
  }
}

// ---------------------------------------------------------------- coordinate maps
// out (ko x k, row-major) = O (ko x nt, row-major) X (nt x k, row-major), skipping O's zeros.
void left_multiply(const double* O, int ko, int nt, const double* X, int k, double* out) {
  std::fill(out, out + static_cast<size_t>(ko) * k, 0.0);
  for (int r = 0; r < ko; ++r) {
    double* orow = out + static_cast<size_t>(r) * k;
    for (int j = 0; j < nt; ++j) {
      const double o = O[static_cast<size_t>(r) * nt + j];
      if (o == 0.0) continue;
      const double* xj = X + static_cast<size_t>(j) * k;
      for (int c = 0; c < k; ++c) orow[c] += o * xj[c];
    }
  }
}

// Direct dependence of z3 on z2 (x3 = x2 + h v25, q3 = q2 qmap(w25)): dx3/dx2 = I,
// dphi3/dphi2 = R(qmap(w25))^T. X (12 nb x k, row-major) += D S, S (12 nb x k,
// row-major; null: the identity, k = 12 nb).
void add_direct(const Model& m, const double* w, const double* S, int k, double* X) {
  for (int b = 0; b < m.nb; ++b) {
    const Mat3<double> r = rotation(integrator_map(load3<double>(w + 6 * b + 3), m.h));
    for (int i = 0; i < 3; ++i) {
      double* xrow = X + static_cast<size_t>(state_col(b, 0, i)) * k;
      double* prow = X + static_cast<size_t>(state_col(b, 2, i)) * k;
      if (!S) {
        xrow[state_col(b, 0, i)] += 1.0;
        for (int c = 0; c < 3; ++c) prow[state_col(b, 2, c)] += r[c][i];
        continue;
      }
      const double* sx = S + static_cast<size_t>(state_col(b, 0, i)) * k;
      for (int col = 0; col < k; ++col) xrow[col] += sx[col];
      for (int c = 0; c < 3; ++c) {
        const double rc = r[c][i];
        const double* sp = S + static_cast<size_t>(state_col(b, 2, c)) * k;
        for (int col = 0; col < k; ++col) prow[col] += rc * sp[col];
      }
    }
  }
}

// factor_at_solution's block LU, the exact matrix assembled in d.matrix (step_matrix with no
// regularisation): the exact matrix in the robust order when its joint pivots allow, else the
// regularised one.
void factor_block_lu_at_solution(const Model& m, Data& d) {
  // The raw (unscaled) cone rows at the solution can make a contact's own block
  // singular (a sliding contact): the robust elimination order (model.h).
  const bool robust = m.nc > 0;
  if (factor_matrix(m, d, robust) && smallest_joint_pivot(m, d) >= kExactPivotMargin * kConstraintRegularization) {
    d.lu_exact = true;
    return;
  }
  step_matrix(m, d, d.w.data());
  if (!factor_matrix(m, d, robust)) throw std::runtime_error("the Newton matrix at the solution could not be factorised");
}

// dr/dw at the solution d.w with the raw rows, factorised (also sets x3, q3, rot3 at the
// solution). Returns the central-path value of the solution (0 without inequalities).
//
// The exact matrix (no joint-impulse regularisation) is factorised first: when every
// joint-impulse pivot is at least kExactPivotMargin times the regularisation, the
// regularised solve plus refinement would converge to this factorisation's solution (each
// sweep shrinks the error by about REG / pivot), so the solves use it directly: one solve
// and one refinement sweep for all right-hand sides at once (d.lu_exact), where the
// regularised matrix took three solves and three products per column. Otherwise
// (redundant joint rows: a loop, or the hopper's planar joints and contact friction
// holding the same out-of-plane motion) the regularised matrix is factorised and refined,
// as before. Smallest joint pivots at the golden states: fourbar 1e-17, hopper resting on
// its foot 2e-9 (regularised); chains 1e-4 to 1e-2, hopper in the air 3e-4, panda 9e-4
// (exact); go1, humanoid, quadruped 4e-8 to 7e-7 (regularised: the test is absolute, as
// the regularisation is). (Factorising without the regularisation for every model
// without loop joints, with no test, was tried before: the resting hopper's A moved 8e-3
// off its golden.)
double factor_at_solution(const Model& m, Data& d) {
  const double kappa_used = m.degree > 0 ? complementarity_measure(m, d.w.data(), d.contact_active.data()) : 0.0;
  step_matrix(m, d, d.w.data(), 0.0, d.grad_contact_z3.data());
  // The contacts eliminated in closed form first (factor.h factor_contacts_condensed): where
  // every active contact's block is regular at the raw rows within
  // kMaxGradientSubstitutionGrowth, the box's eight closed forms and the 6x6 LU of its body
  // replace the robust order's fill among the contacts of one body (its eight 8-unknown nodes
  // all coupled through the body: a dense elimination of 64 unknowns, `eliminate<8>`, most of
  // a backward step). Its solves are refined to the block LU's backward error
  // (solve_condensed_refined), else the block LU takes over (solve_exact).
  if (d.gradients_condensed && factor_contacts_condensed(m, d, kMaxGradientSubstitutionGrowth) &&
      smallest_joint_pivot(m, d) >= kExactPivotMargin * kConstraintRegularization) {
    d.lu_exact = true;
    return kappa_used;
  }
  factor_block_lu_at_solution(m, d);
  return kappa_used;
}

}  // namespace

void state_residual_columns(const Model& m, Data& d, const double* w, double* out) {
  state_residual_jacobian(m, d, w, Columns{out, m.n});
}

void solve_unregularized(const Model& m, Data& d, double* b, int k) { solve_exact(m, d, b, k); }

void relax_step(const Model& m, Data& d, double kappa) {
  if (m.degree == 0 || kappa < 0.0) return;
  relax(m, d, kappa);
  step_next_state(m, d, d.w.data());
}

double step_gradients(const Model& m, Data& d, const GradientRequest& request, double* A, double* B, double* P) {
  const int n = m.n, nb = m.nb, nt = 12 * nb;
  if (request.kappa >= 0.0) relax_step(m, d, request.kappa);
  const double kappa_used = factor_at_solution(m, d);
  const double* w = d.w.data();
  const double* S = request.state_map;  // dz2 = S ds (null: the maximal tangent)
  const double* O = request.output_map;  // dy3 = O dz3 (null: the maximal tangent)

  std::vector<double>& rhs = d.grad_rhs;
  // out = O (T dw + D S) for the k solved columns in rhs (dw = -M^-1 rhs), T: dw -> dz3
  // (next_state_tangent), D S the direct part (state columns only)
  auto solve_into = [&](int k, double* out, bool direct) {
    Columns cols{rhs.data(), n};
    for (size_t i = 0; i < static_cast<size_t>(n) * k; ++i) rhs[i] = -rhs[i];
    solve_exact(m, d, rhs.data(), k);
    double* tangent = O ? (d.grad_tangent.resize(static_cast<size_t>(nt) * k), d.grad_tangent.data()) : out;
    next_state_tangent(m, w, cols, k, tangent);
    if (direct) add_direct(m, w, S, k, tangent);
    if (O) left_multiply(O, request.output_rows, nt, tangent, k, out);
  };
  if (request.state) {
    if (S) {
      // project first: the right-hand sides dr/dz2 S, one solve per column of S
      const int k = request.state_map_cols;
      rhs.assign(static_cast<size_t>(n) * k, 0.0);
      // each row of S between its first and last nonzero (a chain's body moves with the
      // joints above it only: half of S is zero)
      std::vector<int>& span = d.grad_span;
      span.resize(2 * static_cast<size_t>(nt));
      for (int t = 0; t < nt; ++t) {
        const double* s_row = S + static_cast<size_t>(t) * k;
        int first = 0, end = k;
        while (first < k && s_row[first] == 0.0) ++first;
        while (end > first && s_row[end - 1] == 0.0) --end;
        span[2 * t] = first;
        span[2 * t + 1] = end;
      }
      double* r = rhs.data();
      const int* sp = span.data();
      state_residual_jacobian(m, d, w,
                              product([r, S, sp, k, n](int row, int col, double v) {
                                if (v == 0.0) return;
                                const double* s_row = S + static_cast<size_t>(col) * k;
                                for (int c = sp[2 * col]; c < sp[2 * col + 1]; ++c)
                                  r[static_cast<size_t>(c) * n + row] += v * s_row[c];
                              }),
                              true, d.grad_contact_z3.data());
      solve_into(k, A, true);
    } else {
      rhs.assign(static_cast<size_t>(n) * nt, 0.0);
      state_residual_jacobian(m, d, w, Columns{rhs.data(), n}, true, d.grad_contact_z3.data());
      solve_into(nt, A, true);
    }
  }
  if (request.input && m.nu > 0) {
    rhs.assign(static_cast<size_t>(n) * m.nu, 0.0);
    input_residual_jacobian(m, d, Columns{rhs.data(), n});
    solve_into(m.nu, B, false);
  }
  const int p = parameter_columns(m, request.parameters);
  if (p > 0) {
    rhs.assign(static_cast<size_t>(n) * p, 0.0);
    parameter_residual_jacobian(m, d, w, request.parameters, Columns{rhs.data(), n});
    solve_into(p, P, false);
  }
  return kappa_used;
}

double step_vjp(const Model& m, Data& d, const std::vector<int>& kinds, const double* zbar3, double* zbar2,
                double* ubar, double* pbar) {
  const int n = m.n, nb = m.nb, nt = 12 * nb;
  const double kappa_used = factor_at_solution(m, d);
  const double* w = d.w.data();
  // g = T^T zbar3, T: dw -> dz3 (next_state_tangent)
  std::vector<double>& y = d.grad_v;
  y.assign(n, 0.0);
  for (int b = 0; b < nb; ++b) {
    const Mat3<double> mw = integrator_map_jacobian(load3<double>(w + 6 * b + 3), m.h);
    const double* zb = zbar3 + 12 * b;
    for (int i = 0; i < 3; ++i) {
      y[6 * b + i] = m.h * zb[i] + zb[3 + i];
      y[6 * b + 3 + i] = 0.5 * (mw[0][i] * zb[6] + mw[1][i] * zb[7] + mw[2][i] * zb[8]) + zb[9 + i];
    }
  }
  // y = M^-T g (the transposed solve on the same factorisation)
  solve_exact(m, d, y.data(), 1, true);
  // zbar2 = D^T zbar3 - (dr/dz2)^T y
  if (zbar2) {
    std::fill(zbar2, zbar2 + nt, 0.0);
    const double* yv = y.data();
    state_residual_jacobian(m, d, w, product([zbar2, yv](int row, int col, double v) { zbar2[col] -= v * yv[row]; }),
                            false, d.grad_contact_z3.data());
    subtract_joint_transpose(m, d, w, yv, zbar2);
    for (int b = 0; b < nb; ++b) {
      const Mat3<double> r = rotation(integrator_map(load3<double>(w + 6 * b + 3), m.h));
      for (int i = 0; i < 3; ++i) {
        zbar2[state_col(b, 0, i)] += zbar3[state_col(b, 0, i)];
        for (int c = 0; c < 3; ++c) zbar2[state_col(b, 2, c)] += r[c][i] * zbar3[state_col(b, 2, i)];
      }
    }
  }
  auto transpose_product = [&](int k, auto fill, double* out) {
    std::vector<double>& R = d.grad_rhs;
    R.assign(static_cast<size_t>(n) * k, 0.0);
    fill(Columns{R.data(), n});
    for (int j = 0; j < k; ++j) {
      const double* rj = R.data() + static_cast<size_t>(j) * n;
      double s = 0.0;
      for (int i = 0; i < n; ++i) s += rj[i] * y[i];
      out[j] = -s;
    }
  };
  if (ubar && m.nu > 0) transpose_product(m.nu, [&](Columns c) { input_residual_jacobian(m, d, c); }, ubar);
  const int p = parameter_columns(m, kinds);
  if (pbar && p > 0) transpose_product(p, [&](Columns c) { parameter_residual_jacobian(m, d, w, kinds, c); }, pbar);
  return kappa_used;
}

double step_jvp(const Model& m, Data& d, const std::vector<int>& kinds, const double* dz2, const double* du,
                const double* dp, double* dz3) {
  const int n = m.n;
  const double kappa_used = factor_at_solution(m, d);
  const double* w = d.w.data();
  std::vector<double>& x = d.grad_v;
  x.assign(n, 0.0);
  // x = -(dr/dz2 dz2 + dr/du du + dr/dtheta dtheta)
  auto accumulate = [&](int k, const double* v, auto fill) {
    std::vector<double>& R = d.grad_rhs;
    R.assign(static_cast<size_t>(n) * k, 0.0);
    fill(Columns{R.data(), n});
    for (int j = 0; j < k; ++j) {
      const double vj = v[j];
      if (vj == 0.0) continue;
      const double* rj = R.data() + static_cast<size_t>(j) * n;
      for (int i = 0; i < n; ++i) x[i] -= rj[i] * vj;
    }
  };
  if (dz2) {
    double* xv = x.data();
    state_residual_jacobian(m, d, w, product([xv, dz2](int row, int col, double v) { xv[row] -= v * dz2[col]; }),
                            false, d.grad_contact_z3.data());
    subtract_joint_direction(m, d, w, dz2, xv);
  }
  if (du && m.nu > 0) accumulate(m.nu, du, [&](Columns c) { input_residual_jacobian(m, d, c); });
  const int p = parameter_columns(m, kinds);
  if (dp && p > 0) accumulate(p, dp, [&](Columns c) { parameter_residual_jacobian(m, d, w, kinds, c); });
  solve_exact(m, d, x.data(), 1);
  next_state_tangent(m, w, Columns{x.data(), n}, 1, dz3);
  if (dz2) add_direct(m, w, dz2, 1, dz3);
  return kappa_used;
}

MinimalStepGradients minimal_step_gradients(const Model& m, Data& d, const double* y, const double* u,
                                            const SolverOptions& opts, const GradientRequest& request,
                                            double* y_next, double* A, double* B, double* P, double* w_solved) {
  const int ny = 2 * m.nf, nt = 12 * m.nb;
  std::vector<double>& z2 = d.grad_state;
  z2.resize(13 * static_cast<size_t>(m.nb));
  minimal_to_maximal<double>(m, y, nullptr, BodyOverrides{}, z2.data());
  d.impulse_scale = 1.0;
  d.warm_valid = false;
  const SolverStatus status = step(m, d, z2.data(), u, nullptr, nullptr, nullptr, opts);
  if (w_solved) std::copy(d.w.begin(), d.w.end(), w_solved);
  relax_step(m, d, request.kappa);
  GradientRequest mapped = request;
  mapped.kappa = -1.0;  // relaxed above: the output map is taken at the relaxed step's result
  std::vector<double>& in_map = d.grad_state_map;
  std::vector<double>& out_map = d.grad_output_map;
  if (request.state) {
    in_map.resize(static_cast<size_t>(nt) * ny);
    minimal_to_maximal_jacobian(m, y, nullptr, BodyOverrides{}, in_map.data());
    mapped.state_map = in_map.data();
    mapped.state_map_cols = ny;
  }
  out_map.resize(static_cast<size_t>(ny) * nt);
  maximal_to_minimal_jacobian(m, d.z_next.data(), out_map.data());
  mapped.output_map = out_map.data();
  mapped.output_rows = ny;
  const double kappa_used = step_gradients(m, d, mapped, A, B, P);
  maximal_to_minimal<double>(m, d.z_next.data(), y_next);
  return {status, kappa_used};
}

}  // namespace dojo
