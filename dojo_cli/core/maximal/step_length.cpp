// Steps of another length from a knot (step_length.h).
#include "step_length.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "body_maps.h"
#include "dynamics.h"
#include "gradients.h"
#include "kinematics.h"
#include "math/dual.h"
#include "residual.h"
#include "rotor.h"

namespace dojo {

namespace {

// Solve the dense n x n system a x = b in place (Gaussian elimination, partial pivoting);
// false when a pivot is zero or not finite.
bool solve_dense(std::vector<double>& a, std::vector<double>& b, int n) {
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(a[static_cast<size_t>(n) * i + k]) > std::fabs(a[static_cast<size_t>(n) * p + k])) p = i;
    const double pivot = a[static_cast<size_t>(n) * p + k];
    if (pivot == 0.0 || !std::isfinite(pivot)) return false;
    if (p != k) {
      for (int j = 0; j < n; ++j) std::swap(a[static_cast<size_t>(n) * k + j], a[static_cast<size_t>(n) * p + j]);
      std::swap(b[k], b[p]);
    }
    for (int i = k + 1; i < n; ++i) {
      const double f = a[static_cast<size_t>(n) * i + k] / pivot;
      if (f == 0.0) continue;
      for (int j = k; j < n; ++j) a[static_cast<size_t>(n) * i + j] -= f * a[static_cast<size_t>(n) * k + j];
      b[i] -= f * b[k];
    }
  }
  for (int k = n - 1; k >= 0; --k) {
    double s = b[k];
    for (int j = k + 1; j < n; ++j) s -= a[static_cast<size_t>(n) * k + j] * b[j];
    b[k] = s / a[static_cast<size_t>(n) * k + k];
  }
  return true;
}

// The known side C_h(z) of m's step at z without inputs, external forces and the midpoint
// dampers' known half (Data::constant, 6 nb, less those: L_h(xi15) + h F) into out; false
// when z is not finite.
bool known_side(const Model& m, Data& d, const double* z, double* out) {
  if (!step_setup(m, d, z, nullptr, nullptr, nullptr)) return false;
  std::copy(d.constant.begin(), d.constant.begin() + 6 * m.nb, out);
  // the dampers' known half -(h c / 2) Jf^T Jf xi15 taken back out (step_length.h, "Dampers")
  if (m.has_dampers)
    for (int j = 0; j < m.nj; ++j)
      for (int f = m.joint_free_start[j]; f < m.joint_free_start[j + 1]; ++f) {
        if (m.damper[f] == 0.0 || m.damper_implicit[f]) continue;
        const double* jf = &d.jf2[12 * f];
        scatter12(m, j, jf, damper_weight(m, f) * previous_rate(m, d, j, jf), out);
      }
  return true;
}

// The dense Jacobian (6 nb x 6 nb, row-major) of known_side in the midpoint velocities
// [v; w] per body at the velocities of z: the bodies' and the rotors' left transforms.
void known_side_jacobian(const Model& m, const double* z, std::vector<double>& jac) {
  const int n = 6 * m.nb;
  std::fill(jac.begin(), jac.end(), 0.0);
  double block[36];
  for (int b = 0; b < m.nb; ++b) {
    momentum_jacobian(m.mass[b], body_inertia(m, b), load3<double>(z + 13 * b + 10), m.h, -1.0, block);
    for (int i = 0; i < 6; ++i)
      for (int k = 0; k < 6; ++k) jac[static_cast<size_t>(n) * (6 * b + i) + 6 * b + k] = block[6 * i + k];
  }
  // the rotors' left momenta (rotor.h), on the angular rows and columns of both bodies; a
  // linear rotor's, a n n^T, on its child's linear rows and columns (as known_side has it)
  double rj[2][2][9];
  for (int r = 0; r < m.nr; ++r) {
    const int j = m.rotor_joint[r];
    const int bodies[2] = {m.parent[j], m.child[j]};
    if (m.rotor_linear[r]) {
      double lj[9];
      linear_rotor_jacobian(m, r, lj);
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) jac[static_cast<size_t>(n) * (6 * bodies[1] + i) + 6 * bodies[1] + k] += lj[3 * i + k];
      continue;
    }
    const double* wp = bodies[0] == kWorld ? nullptr : z + 13 * bodies[0] + 10;
    rotor_jacobian(m, r, wp, z + 13 * bodies[1] + 10, m.h, -1.0, rj);
    for (int s = 0; s < 2; ++s) {
      if (bodies[s] == kWorld) continue;
      for (int t = 0; t < 2; ++t) {
        if (bodies[t] == kWorld) continue;
        for (int i = 0; i < 3; ++i)
          for (int k = 0; k < 3; ++k)
            jac[static_cast<size_t>(n) * (6 * bodies[s] + 3 + i) + 6 * bodies[t] + 3 + k] += rj[s][t][3 * i + k];
      }
    }
  }
}

// Dense LU with partial pivoting of the n x n row-major a, in place, rows swapped as piv
// says; false when a pivot is zero or not finite (solve_dense's elimination, kept apart
// so that many right-hand sides share one factorisation).
bool lu_factor(std::vector<double>& a, std::vector<int>& piv, int n) {
  piv.resize(n);
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(a[static_cast<size_t>(n) * i + k]) > std::fabs(a[static_cast<size_t>(n) * p + k])) p = i;
    piv[k] = p;
    const double pivot = a[static_cast<size_t>(n) * p + k];
    if (pivot == 0.0 || !std::isfinite(pivot)) return false;
    if (p != k)
      for (int j = 0; j < n; ++j) std::swap(a[static_cast<size_t>(n) * k + j], a[static_cast<size_t>(n) * p + j]);
    for (int i = k + 1; i < n; ++i) {
      double& f = a[static_cast<size_t>(n) * i + k];
      f /= pivot;
      if (f == 0.0) continue;
      for (int j = k + 1; j < n; ++j) a[static_cast<size_t>(n) * i + j] -= f * a[static_cast<size_t>(n) * k + j];
    }
  }
  return true;
}

// b = a^-1 b for the k columns of b (n x k, row-major), a factorised by lu_factor: P a = L U
// (the factor swapped whole rows, its multipliers with them), so b's rows are swapped
// first, all in order, then the two triangular solves.
void lu_solve(const std::vector<double>& a, const std::vector<int>& piv, int n, double* b, int k) {
  const size_t kk = static_cast<size_t>(k);
  for (int r = 0; r < n; ++r)
    if (piv[r] != r)
      for (size_t c = 0; c < kk; ++c) std::swap(b[kk * r + c], b[kk * piv[r] + c]);
  for (int r = 0; r < n; ++r) {
    for (int i = r + 1; i < n; ++i) {
      const double f = a[static_cast<size_t>(n) * i + r];
      if (f == 0.0) continue;
      for (size_t c = 0; c < kk; ++c) b[kk * i + c] -= f * b[kk * r + c];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    for (int j = r + 1; j < n; ++j) {
      const double f = a[static_cast<size_t>(n) * r + j];
      if (f == 0.0) continue;
      for (size_t c = 0; c < kk; ++c) b[kk * r + c] -= f * b[kk * j + c];
    }
    const double pivot = a[static_cast<size_t>(n) * r + r];
    for (size_t c = 0; c < kk; ++c) b[kk * r + c] /= pivot;
  }
}

using D12 = Dual<double, 12>;

// Body b's pose at z with dual seeds on its tangents [x (seed0..), t (seed0 + 3..)],
// q exp(t/2) = q [1, t/2] to first order (gradients.cpp's seeded pose, read from a state).
Pose<D12> seeded_state_pose(const double* z, int b, int seed0) {
  if (b == kWorld) return world_pose<D12>();
  Pose<D12> p;
  const double* s = z + 13 * b;
  for (int k = 0; k < 3; ++k) p.x[k] = D12::variable(s[k], seed0 + k);
  const Vec3<D12> t{{D12::variable(0.0, seed0 + 3), D12::variable(0.0, seed0 + 4), D12::variable(0.0, seed0 + 5)}};
  p.q = perturb_right(load4<D12>(s + 6), t);
  p.r = rotation(p.q);
  return p;
}

// dF/dq of the springs' forces per unit time F = -Jf(q)^T k (m(q) - m0) (residual.cpp
// step_setup's spring impulse over h) at the configuration of z, accumulated into kq
// (6 nb x 6 nb, row-major: body rows [force, torque], columns [x, phi] per body, d/dphi =
// 2 d/dt): the joint's coordinate rows at dual numbers seeded on its 12 tangents.
void spring_force_jacobian(const Model& m, const double* z, std::vector<double>& kq) {
  const size_t n = 6 * static_cast<size_t>(m.nb);
  JointKinematics<D12> kin;
  JointRow<D12> row;
  for (int j = 0; j < m.nj; ++j) {
    const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
    bool sprung = false;
    for (int f = f0; f < f1; ++f) sprung = sprung || m.spring[f] != 0.0;
    if (!sprung) continue;
    const int bodies[2] = {m.parent[j], m.child[j]};
    joint_kinematics(m, j, seeded_state_pose(z, bodies[0], 0), seeded_state_pose(z, bodies[1], 6), kin);
    const Vec3<D12> rv = rotation_vector(kin.q_rel);
    D12 gen[12];
    for (int k = 0; k < 12; ++k) gen[k] = D12(0.0);
    for (int f = f0; f < f1; ++f) {
      if (m.spring[f] == 0.0) continue;
      coordinate_row(m, j, f, kin, rv, row);
      const D12 force = -m.spring[f] * (row.value - m.spring_offset[f]);
      for (int k = 0; k < 12; ++k) gen[k] += row.jac[k] * force;
    }
    for (int rs = 0; rs < 2; ++rs) {
      if (bodies[rs] == kWorld) continue;
      for (int i = 0; i < 6; ++i) {
        double* out = &kq[n * (6 * bodies[rs] + i)];
        for (int part = 0; part < 4; ++part) {  // seeds [xa, ta, xb, tb]
          const int body = bodies[part / 2];
          if (body == kWorld) continue;
          const double scale = part % 2 == 1 ? 2.0 : 1.0;
          for (int k = 0; k < 3; ++k) out[6 * body + 3 * (part % 2) + k] += scale * gen[6 * rs + i].d[3 * part + k];
        }
      }
    }
  }
}

}  // namespace

StepLengthResult midpoint_for_step(const Model& from, Data& d_from, const Model& to, Data& d_to, const double* z,
                                   double* z_out) {
  StepLengthResult out;
  const int nb = from.nb, n = 6 * nb;
  const double ratio = to.h / from.h;
  std::vector<double> c(n), force(n), target(n), jac(static_cast<size_t>(n) * n), r(n);
  std::vector<double> zk(z, z + 13 * nb);
  // p^- - (h2/2) F = C_h1(z) - (h1/2) F - (h2/2) F, with h1 F = C_h1 at zero velocities
  if (!known_side(from, d_from, z, c.data())) return out;
  for (int b = 0; b < nb; ++b)
    for (int k = 0; k < 3; ++k) zk[13 * b + 3 + k] = zk[13 * b + 10 + k] = 0.0;
  if (!known_side(from, d_from, zk.data(), force.data())) return out;
  double scale = 0.0;
  for (int i = 0; i < n; ++i) {
    // L_h2(xi') = target, with C_h2(z') = L_h2(xi') + (h2/h1) h1 F
    target[i] = c[i] - 0.5 * (1.0 + ratio) * force[i] + ratio * force[i];
    scale = std::max(scale, std::fabs(c[i] - 0.5 * force[i]));
  }
  // Newton from the state's own velocities (the re-expressed ones differ by O(h) forces)
  std::copy(z, z + 13 * nb, zk.begin());
  const double tol = kStepLengthTolerance * std::max(scale, 1e-300);
  for (int it = 0; it <= kStepLengthMaxIterations; ++it) {
    if (!known_side(to, d_to, zk.data(), c.data())) return out;
    double err = 0.0;
    for (int i = 0; i < n; ++i) {
      r[i] = target[i] - c[i];
      err = std::max(err, std::fabs(r[i]));
    }
    out.residual = err;
    out.iterations = it;
    if (!std::isfinite(err)) return out;
    if (err <= tol) {
      out.ok = true;
      break;
    }
    if (it == kStepLengthMaxIterations) return out;
    known_side_jacobian(to, zk.data(), jac);
    if (!solve_dense(jac, r, n)) return out;
    for (int b = 0; b < nb; ++b)
      for (int k = 0; k < 3; ++k) {
        zk[13 * b + 3 + k] += r[6 * b + k];
        zk[13 * b + 10 + k] += r[6 * b + 3 + k];
      }
  }
  // the physical branch: every body's spin below the fold of the h2 step's left transform
  for (int b = 0; b < nb; ++b) {
    const double* w = &zk[13 * b + 10];
    if ((w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * to.h * to.h >= kStepLengthFoldSq) {
      out.ok = false;
      return out;
    }
  }
  std::copy(zk.begin(), zk.end(), z_out);
  return out;
}

bool knot_velocities_between(const Model& m, Data& d, const double* z, const double* z_next, double h1, double* v,
                             double* omega) {
  const int nb = m.nb;
  std::vector<double> zk(z, z + 13 * nb), force(6 * nb);
  if (!all_finite(z_next, 13 * nb)) return false;
  for (int b = 0; b < nb; ++b)
    for (int k = 0; k < 3; ++k) zk[13 * b + 3 + k] = zk[13 * b + 10 + k] = 0.0;
  if (!known_side(m, d, zk.data(), force.data())) return false;  // h2 F
  const double s = h1 / (h1 + m.h);
  double left[6], right[6], p[6];
  for (int b = 0; b < nb; ++b) {
    const Mat3<double> inertia = body_inertia(m, b);
    momentum(m.mass[b], inertia, load3<double>(z + 13 * b + 3), load3<double>(z + 13 * b + 10), m.h, -1.0, left);
    momentum(m.mass[b], inertia, load3<double>(z_next + 13 * b + 3), load3<double>(z_next + 13 * b + 10), m.h, 1.0,
             right);
    // (1 - s) P^- + s P^+
    for (int k = 0; k < 6; ++k) p[k] = (1.0 - s) * left[k] + s * right[k] + (1.0 - 2.0 * s) * 0.5 * force[6 * b + k];
    std::vector<double> j(&m.inertia[9 * b], &m.inertia[9 * b] + 9), w{p[3], p[4], p[5]};
    if (!solve_dense(j, w, 3)) return false;
    for (int k = 0; k < 3; ++k) {
      v[3 * b + k] = p[k] / m.mass[b];
      omega[3 * b + k] = w[k];
    }
  }
  return true;
}

bool midpoint_for_step_jacobian(const Model& from, Data& d_from, const Model& to, Data& d_to, const double* z,
                                const double* z_out, const std::vector<int>& kinds, double* A, double* P) {
  const int nb = from.nb, n = 6 * nb, nt = 12 * nb;
  if (!all_finite(z, 13 * nb) || !all_finite(z_out, 13 * nb)) return false;
  const double h1 = from.h, h2 = to.h, half = 0.5 * (h1 - h2);
  const int p = parameter_columns(from, kinds);
  const int cols = nt + p;  // right-hand sides: the state's tangents, then the parameters
  // L_h2'(xi') and L_h1'(xi): the known sides' velocity Jacobians (no configuration term)
  std::vector<double> jt(static_cast<size_t>(n) * n), jf(static_cast<size_t>(n) * n);
  known_side_jacobian(to, z_out, jt);
  known_side_jacobian(from, z, jf);
  std::vector<double> kq(static_cast<size_t>(n) * n, 0.0);
  if (from.has_springs) spring_force_jacobian(from, z, kq);
  std::vector<double> rhs(static_cast<size_t>(n) * cols, 0.0);
  for (int r = 0; r < n; ++r) {
    double* out = &rhs[static_cast<size_t>(cols) * r];
    const double* lf = &jf[static_cast<size_t>(n) * r];
    const double* fq = &kq[static_cast<size_t>(n) * r];
    for (int b = 0; b < nb; ++b)
      for (int k = 0; k < 3; ++k) {
        out[12 * b + k] = half * fq[6 * b + k];          // x
        out[12 * b + 3 + k] = lf[6 * b + k];             // v
        out[12 * b + 6 + k] = half * fq[6 * b + 3 + k];  // phi
        out[12 * b + 9 + k] = lf[6 * b + 3 + k];         // w
      }
  }
  // d/dtheta of L_h1(xi) - L_h2(xi') + half F(q) (the parameters the step's kinds name)
  int col = nt;
  for (int kind_code : kinds) {
    const ParameterKind kind = static_cast<ParameterKind>(kind_code);
    switch (kind) {
      case ParameterKind::Mass:
        for (int b = 0; b < nb; ++b)
          for (int k = 0; k < 3; ++k)
            rhs[static_cast<size_t>(cols) * (6 * b + k) + col + b] =
                z[13 * b + 3 + k] - z_out[13 * b + 3 + k] + half * from.gravity[k];
        break;
      case ParameterKind::Inertia: {
        // (h/2)(s E w - w x E w) of the left transforms, E the unit symmetric matrix of
        // component (xx, yy, zz, xy, xz, yz), as gradients.cpp's inertia columns
        static const int idx[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
        for (int b = 0; b < nb; ++b) {
          const Vec3<double> w1 = load3<double>(z + 13 * b + 10), w2 = load3<double>(z_out + 13 * b + 10);
          const double s1 = half_s(w1, h1), s2 = half_s(w2, h2);
          for (int c = 0; c < 6; ++c) {
            Mat3<double> e{};
            e[idx[c][0]][idx[c][1]] = e[idx[c][1]][idx[c][0]] = 1.0;
            const Vec3<double> ew1 = matvec(e, w1), ew2 = matvec(e, w2);
            const Vec3<double> x1 = cross(w1, ew1), x2 = cross(w2, ew2);
            for (int k = 0; k < 3; ++k)
              rhs[static_cast<size_t>(cols) * (6 * b + 3 + k) + col + 6 * b + c] =
                  0.5 * h1 * (s1 * ew1[k] - x1[k]) - 0.5 * h2 * (s2 * ew2[k] - x2[k]);
          }
        }
        break;
      }
      case ParameterKind::Gravity:
        for (int b = 0; b < nb; ++b)
          for (int k = 0; k < 3; ++k) rhs[static_cast<size_t>(cols) * (6 * b + k) + col + k] = half * from.mass[b];
        break;
      case ParameterKind::Spring: {
        // d F / d k_f = -(m - m0) Jf^T at z
        if (!step_setup(from, d_from, z, nullptr, nullptr, nullptr)) return false;
        JointKinematics<double> kin;
        JointRow<double> row;
        std::vector<double> column(n);
        for (int j = 0; j < from.nj; ++j) {
          const int f0 = from.joint_free_start[j], f1 = from.joint_free_start[j + 1];
          if (f0 == f1) continue;
          joint_kinematics_at(from, j, d_from.x2.data(), d_from.q2.data(), d_from.rot2.data(), kin);
          const Vec3<double> rv = rotation_vector(kin.q_rel);
          for (int f = f0; f < f1; ++f) {
            coordinate_row(from, j, f, kin, rv, row);
            std::fill(column.begin(), column.end(), 0.0);
            scatter12(from, j, row.jac, -half * (row.value - from.spring_offset[f]), column.data());
            for (int r = 0; r < n; ++r) rhs[static_cast<size_t>(cols) * r + col + f] = column[r];
          }
        }
        break;
      }
      default:  // dampers, friction, the contacts' kinds: not in (S)
        break;
    }
    col += parameter_count(from, kind);
  }
  std::vector<int> piv;
  if (!lu_factor(jt, piv, n)) return false;
  lu_solve(jt, piv, n, rhs.data(), cols);
  // rows: x and phi unchanged (identity), v and w the solved dxi'
  if (A) std::fill(A, A + static_cast<size_t>(nt) * nt, 0.0);
  if (P) std::fill(P, P + static_cast<size_t>(nt) * p, 0.0);
  for (int b = 0; b < nb; ++b)
    for (int k = 0; k < 3; ++k) {
      for (int part = 0; part < 2; ++part) {
        const int row = 12 * b + 3 + 6 * part + k;  // v (part 0) or w (part 1) of body b
        const double* x = &rhs[static_cast<size_t>(cols) * (6 * b + 3 * part + k)];
        if (A) std::copy(x, x + nt, A + static_cast<size_t>(nt) * row);
        if (P) std::copy(x + nt, x + cols, P + static_cast<size_t>(p) * row);
      }
      if (A) {
        A[static_cast<size_t>(nt) * (12 * b + k) + 12 * b + k] = 1.0;
        A[static_cast<size_t>(nt) * (12 * b + 6 + k) + 12 * b + 6 + k] = 1.0;
      }
    }
  return true;
}

}  // namespace dojo
