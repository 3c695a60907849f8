// The state before the first step from velocities at t = 0 (initial.h).
#include "initial.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "body_maps.h"
#include "dynamics.h"
#include "factor.h"
#include "gradients.h"
#include "newton_matrix.h"
#include "residual.h"
#include "step.h"
#include "tolerances.h"

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
  std::vector<int> node_of;  // (n,) the Newton matrix's node of each unknown
  // newton_step's work: per body Jl, Jr, Jl^-1 Jr, Jl^-1 (2 f); dr/dz2; the right-hand
  // side, the solution and its residual
  std::vector<double> jl, jr, kr, kf, e, rhs, x, r;

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

  // x solves the system in d.matrix (without the joint-impulse regularisation, as
  // solve_unregularized) for rhs to a normwise backward error of kInitialBackwardError.
  bool accurate() {
    block_multiply(m.blocks, d.matrix.data(), x.data(), r.data());
    double r_norm = 0.0, x_norm = 0.0, b_norm = 0.0, a_norm = 0.0;
    for (int i = 0; i < m.n; ++i) {
      double ri = rhs[i] - r[i];
      if (i >= m.lam && i < m.lam + m.nl) ri += kConstraintRegularization * x[i];
      r_norm = std::max(r_norm, std::fabs(ri));
      x_norm = std::max(x_norm, std::fabs(x[i]));
      b_norm = std::max(b_norm, std::fabs(rhs[i]));
    }
    for (int i = 0; i < m.blocks.structural_size; ++i) a_norm = std::max(a_norm, std::fabs(d.matrix[i]));
    return std::isfinite(r_norm) && r_norm <= kInitialBackwardError * (a_norm * x_norm + b_norm);
  }

  // The Newton step delta (6 nb,) solving dF/dy delta = -f at y, d holding the step
  // solved from it, without forming dF/dy. With the step's unknowns w (r(w; y) = 0),
  // Newton on the pair (w, y) of r = 0 and F = 0 has the matrix
  //     [ M  E ]      M = dr/dw (the step's Newton matrix at its solution),
  //     [ C  D ],     E = dr/dy (the v15, w15 columns of dr/dz2, gradients.h),
  //                   C = dF/dw = Jr / 2 on each body's (v25, w25), D = dF/dy at fixed w = Jl / 2,
  // Jr, Jl the right and left momentum Jacobians (per body, 6 x 6). Eliminating w gives
  // (D - C M^-1 E) delta = -f, the Newton step on F with the implicit derivative
  // dv25/dy = -M^-1 E; eliminating the block-diagonal D instead gives
  //     (M - E Jl^-1 Jr) dw = E Jl^-1 (2 f),   delta = -Jl^-1 (2 f + Jr dw),
  // whose matrix is M minus E Jl^-1 Jr where E is nonzero: the body's own rows (E = -Jl
  // there, so +Jr on the body's diagonal block), a damped joint's other body and a
  // restitution contact's gap row, all blocks of M's pattern. One factorisation and one
  // right-hand side per iteration instead of the 12 nb columns of step_gradients. Where
  // that matrix cannot be factorised the impulses are taken as constant (v25 moving with
  // y: dF/dy = Jl). False when a body's Jl is singular.
  bool newton_step(const std::vector<double>& y, const std::vector<double>& f, std::vector<double>& delta) {
    const int nb = m.nb, n = m.n, nt = 12 * nb;
    const BlockStructure& s = m.blocks;
    // per body: Jl, Jr, Jl^-1 Jr (row-major 6 x 6) and Jl^-1 (2 f)
    jl.resize(36 * static_cast<size_t>(nb));
    jr.resize(36 * static_cast<size_t>(nb));
    kr.resize(36 * static_cast<size_t>(nb));
    kf.resize(6 * static_cast<size_t>(nb));
    std::vector<double> a6(36), x6(6);
    auto solve_left = [&](int b, const double* src, double* out) {  // out = Jl_b^-1 src
      std::copy(&jl[36 * b], &jl[36 * b] + 36, a6.begin());
      std::copy(src, src + 6, x6.begin());
      if (!dense_solve(a6, x6, 6)) return false;
      std::copy(x6.begin(), x6.end(), out);
      return true;
    };
    for (int b = 0; b < nb; ++b) {
      const Mat3<double> inertia = body_inertia(m, b);
      momentum_jacobian(m.mass[b], inertia, load3<double>(&y[6 * b + 3]), m.h, -1.0, &jl[36 * b]);
      momentum_jacobian(m.mass[b], inertia, load3<double>(&d.z_next[13 * b + 10]), m.h, 1.0, &jr[36 * b]);
    }
    const double* w = d.w.data();
    step_matrix(m, d, w);
    e.assign(static_cast<size_t>(n) * nt, 0.0);
    state_residual_columns(m, d, w, e.data());
    auto tangent = [](int b, int k) { return 12 * b + (k < 3 ? 3 + k : 6 + k); };  // v -> 3.., w -> 9..
    rhs.assign(n, 0.0);
    x.resize(n);
    r.resize(n);
    for (int b = 0; b < nb; ++b) {
      double col[6], two_f[6];
      for (int k = 0; k < 6; ++k) {
        for (int l = 0; l < 6; ++l) col[l] = jr[36 * b + 6 * l + k];
        if (!solve_left(b, col, col)) return false;
        for (int l = 0; l < 6; ++l) kr[36 * b + 6 * l + k] = col[l];
        two_f[k] = 2.0 * f[6 * b + k];
      }
      if (!solve_left(b, two_f, &kf[6 * b])) return false;
      const int body_node = m.body_node[b];
      for (int i = 0; i < n; ++i) {
        double er[6];
        bool any = false;
        for (int l = 0; l < 6; ++l) {
          er[l] = e[static_cast<size_t>(tangent(b, l)) * n + i];
          any = any || er[l] != 0.0;
        }
        if (!any) continue;
        const int id = s.find(node_of[i], body_node);
        if (id < 0) throw std::logic_error("initial_midpoint: dr/dy outside the Newton matrix's pattern");
        double* block = d.matrix.data() + s.block_offset[id] + static_cast<size_t>(m.local_index[i]) * s.size(body_node);
        for (int k = 0; k < 6; ++k) {
          double v = 0.0;
          for (int l = 0; l < 6; ++l) v += er[l] * kr[36 * b + 6 * l + k];
          block[m.local_index[6 * b + k]] -= v;
          rhs[i] += er[k] * kf[6 * b + k];
        }
      }
    }
    // The model's elimination order first (the step's own: no fill), checked by its
    // backward error; the robust one (step_gradients': the raw cone rows at the
    // solution can make a sliding contact's own block singular) when that fails. The
    // robust order's fill among a body's contacts costs ~100 steps on a robot with
    // hundreds of hull contacts per body.
    std::copy(rhs.begin(), rhs.end(), x.begin());
    bool factored = factor_matrix(m, d);
    if (factored) solve_unregularized(m, d, x.data(), 1);
    if (factored && m.nc > 0 && !d.lu_is_robust && !accurate()) {
      std::copy(rhs.begin(), rhs.end(), x.begin());
      factored = factor_matrix(m, d, true);
      if (factored) solve_unregularized(m, d, x.data(), 1);
    }
    for (int b = 0; b < nb; ++b) {
      double t[6];
      for (int i = 0; i < 6; ++i) {
        t[i] = 2.0 * f[6 * b + i];
        if (factored)
          for (int k = 0; k < 6; ++k) t[i] += jr[36 * b + 6 * i + k] * x[6 * b + k];
      }
      if (!solve_left(b, t, &delta[6 * b])) return false;
      for (int i = 0; i < 6; ++i) delta[6 * b + i] = factored ? -delta[6 * b + i] : -0.5 * delta[6 * b + i];
    }
    return true;
  }
};

}  // namespace

InitialResult initial_midpoint(const Model& m, Data& d, const double* z_t0, const double* u, const double* f_ext,
                               const double* tau_ext, const SolverOptions& opts, double* z0) {
  const int nb = m.nb, n = 6 * nb;
  // (the scratch vectors after z start empty: -Wmissing-field-initializers)
  Problem pr{m, d, z_t0, u, f_ext, tau_ext, opts, std::vector<double>(n), std::vector<double>(z_t0, z_t0 + 13 * nb),
             {}, {}, {}, {}, {}, {}, {}, {}, {}};
  std::vector<double> y(n), f(n), delta(n), trial(n), f_trial(n);
  pr.node_of.assign(m.n, -1);
  for (int k = 0; k < m.blocks.n_nodes; ++k)
    for (int p = m.blocks.node_ptr[k]; p < m.blocks.node_ptr[k + 1]; ++p) pr.node_of[m.blocks.node_idx[p]] = k;
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
  // the convergence test measures |F| in the bodies' momentum units (F's rows are the
  // step's body rows: tolerances.h); the line search and out.residual keep N s, N m s
  const double* scale = tolerance_row_scale(m, opts);
  double norm = scaled_norm(f.data(), scale, 0, n);
  out.residual = inf_norm(f.data(), n);
  const double target = kInitialTolerance * opts.rtol;
  bool stalled = false;  // the line search found no decrease: |F| is at the steps' own accuracy
  for (int it = 0; it < kInitialMaxIterations && norm > target; ++it) {
    out.iterations = it + 1;
    if (!pr.newton_step(y, f, delta)) return finish(SolverStatus::SingularMatrix);
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
    if (!accepted) {  // at the limit of the steps' own accuracy
      stalled = true;
      break;
    }
    y.swap(trial);
    f.swap(f_trial);
    out.residual = trial_norm;
    norm = scaled_norm(f.data(), scale, 0, n);
  }
  if (norm <= opts.rtol) return finish(SolverStatus::Success);
  return finish(stalled ? SolverStatus::LineSearchFailure : SolverStatus::MaxIterations);
}

}  // namespace dojo
