// Constraint violation and the exact Jacobians of the coordinate conversions
// (coordinates.h), from the templated conversions instantiated with dual numbers.
#include "coordinates.h"

#include <algorithm>
#include <cmath>

#include "math/dual.h"

namespace dojo {

namespace {

// Tangent coordinates per body (docs/formats.md): [x, v, phi, w].
constexpr int kTangent = 12;
// Minimal-state directions seeded per pass of minimal_to_maximal_jacobian for larger
// mechanisms (forward mode, one pass per chunk: 16 keeps a pass's dual numbers small
// while n free coordinates need ceil(2 n / 16) passes).
constexpr int kMinimalChunk = 16;

// Body b of z seeded along its 12 tangent directions [x, v, phi, w], numbered from
// `first`: x + dx, v + dv, q [sqrt(1 - |phi|^2), phi], w + dw (each at zero).
template <int N>
void seeded_poses(const double* z, int b, int first, double h, Pose<Dual<double, N>>& now,
                  Pose<Dual<double, N>>& prev) {
  using D = Dual<double, N>;
  const double* s = z + 13 * b;
  Vec3<D> x, v, phi, w;
  for (int k = 0; k < 3; ++k) {
    x[k] = D::variable(s[k], first + k);
    v[k] = D::variable(s[3 + k], first + 3 + k);
    phi[k] = D::variable(0.0, first + 6 + k);
    w[k] = D::variable(s[10 + k], first + 9 + k);
  }
  const Quat<D> dq{{sqrt(1.0 - dot(phi, phi)), phi[0], phi[1], phi[2]}};
  const Quat<D> q = multiply(load4<D>(s + 6), dq);
  now = Pose<D>{x, q, rotation(q)};
  prev = previous_pose(x, v, q, w, h);
}

// Jacobian columns [x, v, phi, w] of body b from a dual maximal state's derivative
// direction c: phi = Vec(q0* dq) (q = q0 [1, phi] to first order).
template <int N>
void body_tangent(const Dual<double, N>* s, int c, double* out) {
  const Quat<double> q0{{s[6].v, s[7].v, s[8].v, s[9].v}};
  const Quat<double> dq{{s[6].d[c], s[7].d[c], s[8].d[c], s[9].d[c]}};
  const Quat<double> phi = multiply(conjugate(q0), dq);
  for (int k = 0; k < 3; ++k) {
    out[k] = s[k].d[c];
    out[3 + k] = s[3 + k].d[c];
    out[6 + k] = phi[1 + k];
    out[9 + k] = s[10 + k].d[c];
  }
}

// Rows of joint j in d y / d z: its minimal state depends on its parent's and child's
// states only, so one pass seeds their tangents (parent first, child last; N = 12 for
// a world parent, 24 otherwise).
template <int N>
void joint_jacobian(const Model& m, const double* z, int j, double* jac) {
  using D = Dual<double, N>;
  const int a = m.parent[j], c = m.child[j], f0 = m.joint_free_start[j];
  const int n = m.joint_free_start[j + 1] - f0;
  const size_t cols = static_cast<size_t>(kTangent) * m.nb;
  const Pose<D> world = world_pose<D>();
  Pose<D> a2 = world, a1 = world, b2, b1;
  if (a != kWorld) seeded_poses<N>(z, a, 0, m.h, a2, a1);
  seeded_poses<N>(z, c, N - kTangent, m.h, b2, b1);
  D out[12];  // at most 6 coordinates and 6 velocities
  joint_minimal_state(m, j, a2, b2, a1, b1, out, out + n);
  for (int i = 0; i < 2 * n; ++i) {
    double* row = jac + static_cast<size_t>(2 * f0 + i) * cols;
    for (int k = 0; k < kTangent; ++k) {
      if (a != kWorld) row[kTangent * a + k] += out[i].d[k];
      row[kTangent * c + k] += out[i].d[N - kTangent + k];
    }
  }
}

// d z / d y by forward mode over the minimal state, K directions per pass.
template <int K>
void minimal_to_maximal_chunks(const Model& m, const double* y, const double* z_base, const BodyOverrides& overrides,
                               double* jac) {
  using D = Dual<double, K>;
  const int ny = 2 * m.nf;
  std::vector<D> yd(ny), zd(13 * m.nb);
  double tangent[kTangent];
  for (int c0 = 0; c0 < ny; c0 += K) {
    for (int i = 0; i < ny; ++i) yd[i] = (i >= c0 && i < c0 + K) ? D::variable(y[i], i - c0) : D(y[i]);
    minimal_to_maximal(m, yd.data(), z_base, overrides, zd.data());
    const int width = std::min(K, ny - c0);
    for (int b = 0; b < m.nb; ++b)
      for (int c = 0; c < width; ++c) {
        body_tangent(zd.data() + 13 * b, c, tangent);
        for (int k = 0; k < kTangent; ++k) jac[static_cast<size_t>(kTangent * b + k) * ny + c0 + c] = tangent[k];
      }
  }
}

}  // namespace

namespace {
using D1 = Dual<double, 1>;
// v as a rate: a zero whose derivative along direction 0 is v (coordinates.h).
inline D1 rate_seed(double v) { return D1::variable(0.0, 0) * v; }
}  // namespace

void minimal_to_maximal_instantaneous(const Model& m, const double* y, const BodyOverrides& overrides, double* z) {
  std::vector<D1> yd(2 * static_cast<size_t>(m.nf)), zd(13 * static_cast<size_t>(m.nb));
  for (int j = 0; j < m.nj; ++j) {
    const int f0 = m.joint_free_start[j], n = m.joint_free_start[j + 1] - f0;
    for (int i = 0; i < n; ++i) {
      yd[2 * f0 + i] = D1(y[2 * f0 + i]);
      yd[2 * f0 + n + i] = rate_seed(y[2 * f0 + n + i]);
    }
  }
  BodyOverrides seeded = overrides;
  seeded.instantaneous = true;
  minimal_to_maximal(m, yd.data(), nullptr, seeded, zd.data());
  // positions and orientations are the values; the velocities' values are zero and
  // their derivatives the rates
  for (int b = 0; b < m.nb; ++b)
    for (int k = 0; k < 13; ++k) {
      const D1& e = zd[13 * b + k];
      z[13 * b + k] = (k >= 3 && k < 6) || k >= 10 ? e.d[0] : e.v;
    }
}

void instantaneous_minimal_velocities(const Model& m, const double* z, double* rate) {
  std::vector<D1> zd(13 * static_cast<size_t>(m.nb)), rd(m.nf);
  for (int b = 0; b < m.nb; ++b)
    for (int k = 0; k < 13; ++k) {
      const double e = z[13 * b + k];
      zd[13 * b + k] = (k >= 3 && k < 6) || k >= 10 ? rate_seed(e) : D1(e);
    }
  minimal_coordinates_and_velocities(m, zd.data(), static_cast<D1*>(nullptr), rd.data());
  for (int f = 0; f < m.nf; ++f) rate[f] = rd[f].d[0];
}

void constraint_violation(const Model& m, const double* z, double* out) {
  std::vector<Pose<double>> pose(m.nb);
  for (int b = 0; b < m.nb; ++b) {
    const double* s = z + 13 * b;
    const Quat<double> q = load4<double>(s + 6);
    pose[b] = Pose<double>{load3<double>(s), q, rotation(q)};
  }
  const Pose<double> world = world_pose<double>();
  JointKinematics<double> kin;
  JointRow<double> row;
  for (int j = 0; j < m.nj; ++j) {
    joint_kinematics(m, j, m.parent[j] == kWorld ? world : pose[m.parent[j]], pose[m.child[j]], kin);
    out[j] = 0.0;
    for (int r = m.joint_row_start[j]; r < m.joint_row_start[j + 1]; ++r) {
      if (m.row_lock[r]) continue;  // a lock row holds a step's change, not a state's property
      constraint_row(m, j, m.row_slot[r], kin, row);
      out[j] = std::max(out[j], std::fabs(row.value));
    }
  }
}

void maximal_to_minimal_jacobian(const Model& m, const double* z, double* jac) {
  std::fill(jac, jac + static_cast<size_t>(2 * m.nf) * kTangent * m.nb, 0.0);
  for (int j = 0; j < m.nj; ++j) {
    if (m.joint_free_start[j + 1] == m.joint_free_start[j]) continue;
    if (m.parent[j] == kWorld)
      joint_jacobian<kTangent>(m, z, j, jac);
    else
      joint_jacobian<2 * kTangent>(m, z, j, jac);
  }
}

void minimal_to_maximal_jacobian(const Model& m, const double* y, const double* z_base,
                                 const BodyOverrides& overrides, double* jac) {
  // the narrowest dual numbers that hold the minimal state (small mechanisms: one pass)
  const int ny = 2 * m.nf;
  if (ny <= 4)
    minimal_to_maximal_chunks<4>(m, y, z_base, overrides, jac);
  else if (ny <= 8)
    minimal_to_maximal_chunks<8>(m, y, z_base, overrides, jac);
  else
    minimal_to_maximal_chunks<kMinimalChunk>(m, y, z_base, overrides, jac);
}

}  // namespace dojo
