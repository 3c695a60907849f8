// Damped Newton (newton.h).
#include "newton.h"

#include <algorithm>

#include "factor.h"
#include "newton_matrix.h"
#include "residual.h"
#include "tolerances.h"

namespace dojo {

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
  // the convergence test in the rows' units (tolerances.h); the line search on the raw
  // residual (Dojo's path)
  const double* scale = tolerance_row_scale(m, opts);
  double rnorm = inf_norm(d.r.data(), n);
  double cnorm = scaled_norm(d.r.data(), scale, 0, n);
  for (int it = 0; it < opts.max_iter; ++it) {
    if (cnorm < opts.rtol) {
      d.iterations = it;
      d.residual = cnorm;
      return SolverStatus::Success;
    }
    step_matrix(m, d, w);
    if (!factor_matrix(m, d)) {
      d.iterations = it + 1;
      d.residual = cnorm;
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
      d.residual = cnorm;
      return SolverStatus::LineSearchFailure;
    }
    d.w.swap(d.cand);
    d.r.swap(d.rc);
    w = d.w.data();
    rnorm = rc_norm;
    cnorm = scaled_norm(d.r.data(), scale, 0, n);
    log_line(d, it + 1, rnorm, alpha, step_norm);
  }
  d.iterations = opts.max_iter;
  d.residual = cnorm;
  return cnorm < opts.rtol ? SolverStatus::Success : SolverStatus::MaxIterations;
}

}  // namespace dojo
