// Discrete Euler-Lagrange momenta of one body (dojo_engine_notes.md 2.3).
//
// With h the timestep, s = sqrt(4/h^2 - |w|^2) and J the body-frame inertia:
// - right (next interval):    [m v25; (h/2)(s25 J w25 + w25 x J w25)]
// - left (previous interval): [m v15; (h/2)(s15 J w15 - w15 x J w15)]
// The body's residual is right - left - h (m g + F_ext, tau_ext) - impulses; the two
// are the right and left discrete Legendre transforms, whose average is the body's
// momentum at time 2 (dojo_cli.physics.energy).
#pragma once

#include <algorithm>

#include "math/spatial.h"

namespace dojo {

template <class T>
inline T half_s(const Vec3<T>& w, double h) {
  T sq = 4.0 / (h * h) - dot(w, w);
  if (value(sq) < 0.0) sq = T(0.0);
  return sqrt(sq);
}

// out (6,): sign +1 gives the right momentum, -1 the left one.
template <class T>
inline void momentum(double mass, const Mat3<double>& inertia, const Vec3<T>& v, const Vec3<T>& w, double h,
                     double sign, T* out) {
  const Vec3<T> jw{{inertia[0][0] * w[0] + inertia[0][1] * w[1] + inertia[0][2] * w[2],
                    inertia[1][0] * w[0] + inertia[1][1] * w[1] + inertia[1][2] * w[2],
                    inertia[2][0] * w[0] + inertia[2][1] * w[1] + inertia[2][2] * w[2]}};
  const T s = half_s(w, h);
  const Vec3<T> wx = cross(w, jw);
  for (int k = 0; k < 3; ++k) {
    out[k] = mass * v[k];
    out[3 + k] = 0.5 * h * (s * jw[k] + sign * wx[k]);
  }
}

// d momentum / d [v, w] (6x6, row-major into out[36]); sign as in momentum():
// d/dw of (h/2)(s J w + sign w x J w) = (h/2)(s J - J w w^T / s + sign ([w]x J - [J w]x)).
inline void momentum_jacobian(double mass, const Mat3<double>& inertia, const Vec3<double>& w, double h, double sign,
                              double* out) {
  std::fill(out, out + 36, 0.0);
  for (int k = 0; k < 3; ++k) out[6 * k + k] = mass;
  const Vec3<double> jw = matvec(inertia, w);
  const double s = half_s(w, h);
  const Mat3<double> wx_j = matmul(skew(w), inertia);
  const Mat3<double> jw_x = skew(jw);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      out[6 * (3 + i) + 3 + j] =
          0.5 * h * (s * inertia[i][j] - jw[i] * w[j] / s + sign * (wx_j[i][j] - jw_x[i][j]));
}

}  // namespace dojo
