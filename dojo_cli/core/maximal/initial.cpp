// The state before the first step from velocities at t = 0 (initial.h).
#include "initial.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "body_maps.h"
#include "dynamics.h"
#include "gradients.h"
#include "residual.h"
#include "step.h"

namespace dojo {

namespace {

// Solve the dense n x n system a x = b (row-major a, destroyed; b in place) by
// Gaussian elimination with partial pivoting. False when a pivot vanishes.
bool dense_solve(std::vector<double>& a, std::vector<double>& b, int n) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[p * n + c])) p = r;
    const double pivot = a[p * n + c];
    if (!(std::fabs(pivot) > 0.0) || !std::isfinite(pivot)) return false;
    if (p != c) {
      for (int k = 0; k < n; ++k) std::swap(a[p * n + k], a[c * n + k]);
      std::swap(b[p], b[c]);
    }
    for (int r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / pivot;
      if (f == 0.0) continue;
      for (int k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
      b[r] -= f * b[c];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= a[r * n + k] * b[k];
    b[r] = s / a[r * n + r];
  }
  return true;
}

struct Problem {
  const Model& m;
  Data& d;
  const double* z_t0;
  const double *u, *f_ext, *tau_ext;
  const SolverOptions& opts;
  std::vector<double> p0;  // (6 nb,) [m v(0); J w(0)] per body
  std::vector<double> z;   // (13 nb,) the trial state [x0, y, q0]

  // y (6 nb,) per body [v15, w15] into z.
  void place(const std::vector<double>& y) {
    for (int b = 0; b < m.nb; ++b)
      for (int k = 0; k < 3; ++k) {
        z[13 * b + 3 + k] = y[6 * b + k];
        z[13 * b + 10 + k] = y[6 * b + 3 + k];
      }
  }

  // F(y) into f (6 nb,) after one step from [x0, y, q0]; the step's status.
  SolverStatus residual(const std::vector<double>& y, std::vector<double>& f) {
    place(y);
    const SolverStatus status = step(m, d, z.data(), u, f_ext, tau_ext, nullptr, opts);
    if (status != SolverStatus::Success) return status;
    double left[6], right[6];
    for (int b = 0; b < m.nb; ++b) {
      const Mat3<double> inertia = body_inertia(m, b);
      momentum(m.mass[b], inertia, load3<double>(&y[6 * b]), load3<double>(&y[6 * b + 3]), m.h, -1.0, left);
      const double* next = &d.z_next[13 * b];
      momentum(m.mass[b], inertia, load3<double>(next + 3), load3<double>(next + 10), m.h, 1.0, right);
      for (int k = 0; k < 6; ++k) f[6 * b + k] = 0.5 * (left[k] + right[k]) - p0[6 * b + k];
    }
    return SolverStatus::Success;
  }

  // dF/dy (6 nb x 6 nb, row-major) at y, d holding the step solved from it.
  void jacobian(const std::vector<double>& y, std::vector<double>& g) {
    const int nb = m.nb, n = 6 * nb, nt = 12 * nb;
    std::fill(g.begin(), g.end(), 0.0);
    // dv25/dy from the step's implicit derivative, tangent rows/columns [x, v, phi, w]
    // (the velocity parts are plain velocities); without it (a step the implicit
    // function theorem cannot differentiate) the impulses are taken as constant.
    std::vector<double> a(static_cast<size_t>(nt) * nt);
    GradientRequest request;
    request.state = true;
    request.input = false;
    bool have_a = true;
    try {
      step_gradients(m, d, request, a.data(), nullptr, nullptr);
    } catch (const std::runtime_error&) {
      have_a = false;
    }
    auto tangent = [](int b, int k) { return 12 * b + (k < 3 ? 3 + k : 6 + k); };  // v -> 3.., w -> 9..
    double jac[36];
    for (int b = 0; b < nb; ++b) {
      const Mat3<double> inertia = body_inertia(m, b);
      const double* next = &d.z_next[13 * b];
      // right's Jacobian at v25 times dv25/dy
      momentum_jacobian(m.mass[b], inertia, load3<double>(next + 10), m.h, 1.0, jac);
      if (have_a) {
        for (int i = 0; i < 6; ++i)
          for (int c = 0; c < nb; ++c)
            for (int kc = 0; kc < 6; ++kc) {
              double s = 0.0;
              for (int k = 0; k < 6; ++k)
                s += jac[6 * i + k] * a[static_cast<size_t>(tangent(b, k)) * nt + tangent(c, kc)];
              g[static_cast<size_t>(6 * b + i) * n + 6 * c + kc] += 0.5 * s;
            }
      }
      // left's Jacobian at y (and, without dv25/dy, right's in its place: v25 moving with y)
      momentum_jacobian(m.mass[b], inertia, load3<double>(&y[6 * b + 3]), m.h, -1.0, jac);
      const double weight = have_a ? 0.5 : 1.0;
      for (int i = 0; i < 6; ++i)
        for (int k = 0; k < 6; ++k) g[static_cast<size_t>(6 * b + i) * n + 6 * b + k] += weight * jac[6 * i + k];
    }
  }
};

}  // namespace

InitialResult initial_midpoint(const Model& m, Data& d, const double* z_t0, const double* u, const double* f_ext,
                               const double* tau_ext, const SolverOptions& opts, double* z0) {
  const int nb = m.nb, n = 6 * nb;
  Problem pr{m, d, z_t0, u, f_ext, tau_ext, opts, std::vector<double>(n), std::vector<double>(z_t0, z_t0 + 13 * nb)};
  std::vector<double> y(n), f(n), g(static_cast<size_t>(n) * n), delta(n), trial(n), f_trial(n);
  for (int b = 0; b < nb; ++b) {
    const Vec3<double> jw = matvec(body_inertia(m, b), load3<double>(z_t0 + 13 * b + 10));
    for (int k = 0; k < 3; ++k) {
      pr.p0[6 * b + k] = m.mass[b] * z_t0[13 * b + 3 + k];
      pr.p0[6 * b + 3 + k] = jw[k];
      // start from the velocities at t0
      y[6 * b + k] = z_t0[13 * b + 3 + k];
      y[6 * b + 3 + k] = z_t0[13 * b + 10 + k];
    }
  }
  InitialResult out;
  auto finish = [&](SolverStatus status) {
    pr.place(y);
    std::copy(pr.z.begin(), pr.z.end(), z0);
    out.status = status;
    return out;
  };
  SolverStatus status = pr.residual(y, f);
  if (status != SolverStatus::Success) return finish(status);
  out.residual = inf_norm(f.data(), n);
  const double target = kInitialTolerance * opts.rtol;
  for (int it = 0; it < kInitialMaxIterations && out.residual > target; ++it) {
    out.iterations = it + 1;
    pr.jacobian(y, g);
    for (int i = 0; i < n; ++i) delta[i] = -f[i];
    if (!dense_solve(g, delta, n)) return finish(SolverStatus::SingularMatrix);
    double alpha = 1.0, trial_norm = 0.0;
    bool accepted = false;
    for (int ls = 0; ls < kInitialMaxLineSearch; ++ls, alpha *= 0.5) {
      for (int i = 0; i < n; ++i) trial[i] = y[i] + alpha * delta[i];
      if (pr.residual(trial, f_trial) != SolverStatus::Success) continue;
      trial_norm = inf_norm(f_trial.data(), n);
      // sufficient decrease (Armijo on |F|): at the level of the steps' rounding, Newton
      // steps only trade noise, and the solve stops there
      if (trial_norm <= (1.0 - 0.5 * alpha) * out.residual) {
        accepted = true;
        break;
      }
    }
    if (!accepted) break;  // at the limit of the steps' own accuracy
    y.swap(trial);
    f.swap(f_trial);
    out.residual = trial_norm;
  }
  return finish(out.residual <= opts.rtol ? SolverStatus::Success : SolverStatus::MaxIterations);
}

}  // namespace dojo
