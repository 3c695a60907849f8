// Energy and momentum of a trajectory's states (energy.h).
#include "energy.h"

#include <algorithm>
#include <vector>

#include "coordinates.h"
#include "dynamics.h"
#include "math/spatial.h"

namespace dojo {

namespace {

// J^-1 of a symmetric positive-definite body inertia (adjugate over determinant).
Mat3<double> inverse(const Mat3<double>& a) {
  Mat3<double> adj;
  adj[0][0] = a[1][1] * a[2][2] - a[1][2] * a[2][1];
  adj[0][1] = a[0][2] * a[2][1] - a[0][1] * a[2][2];
  adj[0][2] = a[0][1] * a[1][2] - a[0][2] * a[1][1];
  adj[1][0] = a[1][2] * a[2][0] - a[1][0] * a[2][2];
  adj[1][1] = a[0][0] * a[2][2] - a[0][2] * a[2][0];
  adj[1][2] = a[0][2] * a[1][0] - a[0][0] * a[1][2];
  adj[2][0] = a[1][0] * a[2][1] - a[1][1] * a[2][0];
  adj[2][1] = a[0][1] * a[2][0] - a[0][0] * a[2][1];
  adj[2][2] = a[0][0] * a[1][1] - a[0][1] * a[1][0];
  const double det = a[0][0] * adj[0][0] + a[0][1] * adj[1][0] + a[0][2] * adj[2][0];
  Mat3<double> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = adj[i][j] / det;
  return out;
}

inline Mat3<double> body_inertia(const Model& m, int b) { return load33<double>(&m.inertia[9 * b]); }

}  // namespace

void body_momenta(const Model& m, int steps, const double* v, const double* omega, double* p, double* l) {
  const int nb = m.nb;
  double right[6], left[6];
  for (int t = 0; t < steps; ++t)
    for (int b = 0; b < nb; ++b) {
      const Mat3<double> inertia = body_inertia(m, b);
      const size_t now = 3 * (static_cast<size_t>(t) * nb + b), next = now + 3 * static_cast<size_t>(nb);
      // right transform of the step leaving t (v25 = v[t+1]), left of the one entering it
      momentum(m.mass[b], inertia, load3<double>(v + next), load3<double>(omega + next), m.h, 1.0, right);
      momentum(m.mass[b], inertia, load3<double>(v + now), load3<double>(omega + now), m.h, -1.0, left);
      for (int k = 0; k < 3; ++k) {
        p[now + k] = 0.5 * (right[k] + left[k]);
        l[now + k] = 0.5 * (right[3 + k] + left[3 + k]);
      }
    }
}

void potential_energy(const Model& m, int steps, const double* x, const double* q, double* out) {
  const int nb = m.nb;
  std::vector<double> theta(m.nf);
  for (int t = 0; t < steps; ++t) {
    const double* xt = x + 3 * static_cast<size_t>(t) * nb;
    double grav = 0.0;
    for (int b = 0; b < nb; ++b)
      grav += m.mass[b] * (xt[3 * b] * m.gravity[0] + xt[3 * b + 1] * m.gravity[1] + xt[3 * b + 2] * m.gravity[2]);
    out[t] = -grav;
    if (!m.has_springs) continue;
    minimal_coordinates(m, xt, q + 4 * static_cast<size_t>(t) * nb, theta.data());
    double spring = 0.0;
    for (int f = 0; f < m.nf; ++f) {
      const double e = theta[f] - m.spring_offset[f];
      spring += m.spring[f] * (e * e);
    }
    out[t] += 0.5 * spring;
  }
}

namespace {

// Energy and momenta of n states from per-body momenta p (world), l (body), (n, nb, 3).
void mechanics_of_momenta(const Model& m, int states, const double* x, const double* q, const double* p,
                          const double* l, double* kinetic, double* potential, double* linear, double* angular) {
  const int nb = m.nb;
  std::vector<Mat3<double>> inertia_inv(nb);
  for (int b = 0; b < nb; ++b) inertia_inv[b] = inverse(body_inertia(m, b));
  for (int t = 0; t < states; ++t) {
    double energy = 0.0;
    Vec3<double> lin{{0.0, 0.0, 0.0}}, ang{{0.0, 0.0, 0.0}};
    for (int b = 0; b < nb; ++b) {
      const size_t i = 3 * (static_cast<size_t>(t) * nb + b);
      const Vec3<double> pb = load3<double>(&p[i]), lb = load3<double>(&l[i]);
      energy += 0.5 * dot(pb, pb) / m.mass[b] + 0.5 * dot(lb, matvec(inertia_inv[b], lb));
      lin = lin + pb;
      if (angular)
        ang = ang + (matvec(rotation(load4<double>(q + 4 * (static_cast<size_t>(t) * nb + b))), lb) +
                     cross(load3<double>(x + i), pb));
    }
    if (kinetic) kinetic[t] = energy;
    for (int k = 0; k < 3; ++k) {
      if (linear) linear[3 * t + k] = lin[k];
      if (angular) angular[3 * t + k] = ang[k];
    }
  }
  if (potential) potential_energy(m, states, x, q, potential);
}

}  // namespace

void mechanics(const Model& m, int steps, const double* x, const double* q, const double* v, const double* omega,
               double* kinetic, double* potential, double* linear, double* angular) {
  const size_t n = 3 * static_cast<size_t>(steps) * m.nb;
  std::vector<double> p(n), l(n);
  body_momenta(m, steps, v, omega, p.data(), l.data());
  mechanics_of_momenta(m, steps, x, q, p.data(), l.data(), kinetic, potential, linear, angular);
}

void knot_velocities(const Model& m, int steps, const double* v_mid, const double* omega_mid, bool extrapolate_last,
                     double* v, double* omega) {
  const int nb = m.nb;
  body_momenta(m, steps, v_mid, omega_mid, v, omega);  // p_k, L_k in place
  if (extrapolate_last) {
    double right[6], left[6], before[6] = {0, 0, 0, 0, 0, 0};
    for (int b = 0; b < nb; ++b) {
      const Mat3<double> inertia = body_inertia(m, b);
      const size_t last = 3 * (static_cast<size_t>(steps) * nb + b), prev = last - 3 * static_cast<size_t>(nb);
      momentum(m.mass[b], inertia, load3<double>(v_mid + last), load3<double>(omega_mid + last), m.h, 1.0, right);
      momentum(m.mass[b], inertia, load3<double>(v_mid + last), load3<double>(omega_mid + last), m.h, -1.0, left);
      if (steps > 0) {
        momentum(m.mass[b], inertia, load3<double>(v_mid + prev), load3<double>(omega_mid + prev), m.h, -1.0, before);
      } else {
        std::copy(right, right + 6, before);  // no step yet: no impulse
      }
      for (int k = 0; k < 3; ++k) {
        v[last + k] = left[k] + 0.5 * (right[k] - before[k]);
        omega[last + k] = left[3 + k] + 0.5 * (right[3 + k] - before[3 + k]);
      }
    }
  }
  const int knots = steps + (extrapolate_last ? 1 : 0);
  for (int b = 0; b < nb; ++b) {
    const Mat3<double> inertia_inv = inverse(body_inertia(m, b));
    for (int t = 0; t < knots; ++t) {
      const size_t i = 3 * (static_cast<size_t>(t) * nb + b);
      const Vec3<double> w = matvec(inertia_inv, load3<double>(omega + i));
      for (int k = 0; k < 3; ++k) {
        v[i + k] /= m.mass[b];
        omega[i + k] = w[k];
      }
    }
  }
}

namespace {

// The knot momenta of knot velocities: p = m v (world), l = J omega (body frame), (n, nb, 3).
void momenta_of_knot_velocities(const Model& m, int states, const double* v, const double* omega, double* p,
                                double* l) {
  const int nb = m.nb;
  for (int t = 0; t < states; ++t)
    for (int b = 0; b < nb; ++b) {
      const size_t i = 3 * (static_cast<size_t>(t) * nb + b);
      const Vec3<double> jw = matvec(body_inertia(m, b), load3<double>(omega + i));
      for (int k = 0; k < 3; ++k) {
        p[i + k] = m.mass[b] * v[i + k];
        l[i + k] = jw[k];
      }
    }
}

}  // namespace

void knot_mechanics(const Model& m, int states, const double* x, const double* q, const double* v,
                    const double* omega, double* kinetic, double* potential, double* linear, double* angular) {
  const size_t n = 3 * static_cast<size_t>(states) * m.nb;
  std::vector<double> p(n), l(n);
  momenta_of_knot_velocities(m, states, v, omega, p.data(), l.data());
  mechanics_of_momenta(m, states, x, q, p.data(), l.data(), kinetic, potential, linear, angular);
}

void knot_momenta(const Model& m, int states, const double* q, const double* v, const double* omega, double* px,
                  double* pq) {
  const int nb = m.nb;
  momenta_of_knot_velocities(m, states, v, omega, px, pq);
  for (int t = 0; t < states; ++t)
    for (int b = 0; b < nb; ++b) {
      const size_t i = 3 * (static_cast<size_t>(t) * nb + b);
      const Vec3<double> world =
          matvec(rotation(load4<double>(q + 4 * (static_cast<size_t>(t) * nb + b))), load3<double>(pq + i));
      for (int k = 0; k < 3; ++k) pq[i + k] = world[k];
    }
}

void kinetic_energy(const Model& m, int steps, const double* v, const double* omega, double* out) {
  mechanics(m, steps, nullptr, nullptr, v, omega, out, nullptr, nullptr, nullptr);
}

void linear_momentum(const Model& m, int steps, const double* v, const double* omega, double* out) {
  mechanics(m, steps, nullptr, nullptr, v, omega, nullptr, nullptr, out, nullptr);
}

void angular_momentum(const Model& m, int steps, const double* x, const double* q, const double* v,
                      const double* omega, double* out) {
  mechanics(m, steps, x, q, v, omega, nullptr, nullptr, nullptr, out);
}

}  // namespace dojo
