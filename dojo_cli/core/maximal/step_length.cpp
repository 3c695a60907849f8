// Steps of another length from a knot (step_length.h).
#include "step_length.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "body_maps.h"
#include "dynamics.h"
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
  // the rotors' left momenta (rotor.h), on the angular rows and columns of both bodies
  double rj[2][2][9];
  for (int r = 0; r < m.nr; ++r) {
    const int j = m.rotor_joint[r];
    const int bodies[2] = {m.parent[j], m.child[j]};
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

}  // namespace dojo
