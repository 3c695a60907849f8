// The interior-point solver (interior_point.h).
#include "interior_point.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "factor.h"
#include "newton_matrix.h"
#include "residual.h"
#include "tolerances.h"

namespace dojo {

namespace {

inline double jordan_det(const double* x) { return x[0] * x[0] - (x[1] * x[1] + x[2] * x[2]); }

// cone_product(u, w) = (u.w, u0 w[1:] + w0 u[1:])
inline void cone_product(const double* u, const double* w, double* out) {
  out[0] = u[0] * w[0] + u[1] * w[1] + u[2] * w[2];
  out[1] = u[0] * w[1] + w[0] * u[1];
  out[2] = u[0] * w[2] + w[0] * u[2];
}

// out = arrow(u) M for a 3x3 row-major M; arrow(u) = [[u0, u1, u2], [u1, u0, 0], [u2, 0, u0]]
inline void arrow_times(const double* u, const double* mat, double* out) {
  const double a[3][3] = {{u[0], u[1], u[2]}, {u[1], u[0], 0.0}, {u[2], 0.0, u[0]}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[3 * i + j] = a[i][0] * mat[j] + a[i][1] * mat[3 + j] + a[i][2] * mat[6 + j];
}

inline void matvec3(const double* mat, const double* x, double* out) {
  for (int i = 0; i < 3; ++i) out[i] = mat[3 * i] * x[0] + mat[3 * i + 1] * x[1] + mat[3 * i + 2] * x[2];
}

// Whether the cone of contact c (-1: a joint limit) is in the solve.
inline bool in_solve(const uint8_t* active, int c) { return c < 0 || active == nullptr || active[c]; }

// Largest alpha <= 1 keeping x + alpha dx >= (1 - tau) x (Dojo's positive orthant rule).
double orthant_step(const Model& m, const double* w, const double* dw, double tau, const uint8_t* active) {
  double alpha = 1.0;
  for (const std::vector<int>* idx : {&m.orthant_s, &m.orthant_g})
    for (size_t k = 0; k < idx->size(); ++k) {
      const int i = (*idx)[k];
      if (dw[i] < 0.0 && in_solve(active, m.orthant_contact[k])) alpha = std::min(alpha, -tau * w[i] / dw[i]);
    }
  return alpha;
}

// Step length to the boundary of a second-order cone (CVXOPT section 8.2, Dojo's rule).
double soc_step(const double* x, const double* dx, double tau) {
  const double jn = std::max(jordan_det(x), kSocJFloor) + kSocEps;
  const double sj = std::sqrt(jn);
  const double c = x[0] * dx[0] - (x[1] * dx[1] + x[2] * dx[2]) + kSocEps;
  const double rho_s = c / jn;
  const double coef = (c / sj + dx[0]) / (x[0] / sj + 1.0);
  const double r1 = dx[1] / sj - coef * x[1] / jn;
  const double r2 = dx[2] / sj - coef * x[2] / jn;
  const double gap = std::sqrt(r1 * r1 + r2 * r2) - rho_s;
  return gap > 0.0 ? std::min(1.0, tau / gap) : 1.0;
}

// x + a dx outside the second-order cone (on its boundary is not outside: Dojo's rule
// takes a vector that must vanish, a frictionless contact's impulse cone, exactly to 0).
bool leaves_cone(const double* x, const double* dx, double a) {
  double y[3];
  for (int i = 0; i < 3; ++i) y[i] = x[i] + a * dx[i];
  return y[0] < 0.0 || jordan_det(y) < 0.0;
}

// A candidate (rvio, bvio) no better in both violations than an iterate the solve has
// left behind (filter: (size, 2) their pairs): accepting it could close a cycle
// (interior_point.h, step 5, the filter).
bool filtered(const double* filter, int size, double rvio, double bvio) {
  for (int k = 0; k < size; ++k)
    if (rvio >= filter[2 * k] && bvio >= filter[2 * k + 1]) return true;
  return false;
}

// The second-order cone (index into m.soc_contact) whose own step length along dw is
// the shortest, -1 without cones in the solve.
int limiting_cone(const Model& m, const double* w, const double* dw, const uint8_t* active) {
  int out = -1;
  double shortest = std::numeric_limits<double>::infinity();
  double x[3], dx[3];
  for (size_t k = 0; k < m.soc_contact.size(); ++k) {
    if (!active[m.soc_contact[k]]) continue;
    for (const std::vector<int>* idx : {&m.soc_s, &m.soc_g}) {
      for (int i = 0; i < 3; ++i) {
        x[i] = w[(*idx)[3 * k + i]];
        dx[i] = dw[(*idx)[3 * k + i]];
      }
      const double a = soc_step(x, dx, kSocFraction);
      if (a < shortest) {
        shortest = a;
        out = static_cast<int>(k);
      }
    }
  }
  return out;
}

// Moves both vectors of cone k into the cone's interior: x0 = max(x0, |x1:|) (1 + kJamRecentre
// relative to |x1:|), the tangential parts kept (interior_point.h, recentre_jams).
void recentre_cone(const Model& m, double* w, int k) {
  for (const std::vector<int>* idx : {&m.soc_s, &m.soc_g}) {
    double& x0 = w[(*idx)[3 * k]];
    const double t = std::hypot(w[(*idx)[3 * k + 1]], w[(*idx)[3 * k + 2]]);
    x0 = std::max(x0, t) + kJamRecentre * t;
  }
}

// Gondzio's centrality correction of one complementarity product v against the target
// kappa (Gondzio 1996, eq. 20; Colombo and Gondzio 2008, section 3): the amount that
// moves v into [kGondzioLow kappa, kGondzioHigh kappa], a decrease at most kGondzioHigh kappa.
inline double centrality_shift(double v, double kappa) {
  if (v < kGondzioLow * kappa) return kGondzioLow * kappa - v;
  if (v > kGondzioHigh * kappa) return std::max(kGondzioHigh * kappa - v, -kGondzioHigh * kappa);
  return 0.0;
}

// Gondzio's corrector term t at the trial point x = w + alpha dw (rows of the
// complementarity, zero elsewhere), in the linearisation's units: orthant rows
// s gamma, second-order-cone rows the Nesterov-Todd scaled product (W s) o (W^-1 gamma)
// (scale_second_order_cones), whose two eigenvalues p0 +- |p1:| (Alizadeh and Goldfarb
// 2003, section 4, the spectral decomposition) are each moved as an orthant product.
void centrality_term(const Model& m, const Data& d, const double* x, double kappa, const uint8_t* active,
                     double* t) {
  std::fill(t, t + m.n, 0.0);
  for (size_t i = 0; i < m.orthant_s.size(); ++i)
    if (in_solve(active, m.orthant_contact[i]))
      t[m.orthant_s[i]] = centrality_shift(x[m.orthant_s[i]] * x[m.orthant_g[i]], kappa);
  for (size_t k = 0; k < m.soc_contact.size(); ++k) {
    if (!active[m.soc_contact[k]]) continue;
    double s[3], z[3], ws[3], wz[3], p[3];
    for (int i = 0; i < 3; ++i) {
      s[i] = x[m.soc_s[3 * k + i]];
      z[i] = x[m.soc_g[3 * k + i]];
    }
    matvec3(&d.soc_w[9 * k], s, ws);
    matvec3(&d.soc_w_inv[9 * k], z, wz);
    cone_product(ws, wz, p);
    const double r = std::hypot(p[1], p[2]);
    const double u1 = r > 0.0 ? p[1] / r : 1.0, u2 = r > 0.0 ? p[2] / r : 0.0;
    // p = l1 (1, u) / 2 + l2 (1, -u) / 2
    const double c1 = centrality_shift(p[0] + r, kappa), c2 = centrality_shift(p[0] - r, kappa);
    t[m.soc_s[3 * k]] = 0.5 * (c1 + c2);
    t[m.soc_s[3 * k + 1]] = 0.5 * (c1 - c2) * u1;
    t[m.soc_s[3 * k + 2]] = 0.5 * (c1 - c2) * u2;
  }
}

}  // namespace

void scale_second_order_cones(const Model& m, Data& d, double* rn) {
  const int ns = static_cast<int>(m.soc_contact.size());
  double s[3], z[3], a[9];
  for (int k = 0; k < ns; ++k) {
    if (!d.contact_active[m.soc_contact[k]]) continue;
    for (int i = 0; i < 3; ++i) {
      s[i] = d.w[m.soc_s[3 * k + i]];
      z[i] = d.w[m.soc_g[3 * k + i]];
    }
    double* w = &d.soc_w[9 * k];
    double* w_inv = &d.soc_w_inv[9 * k];
    double* lam = &d.soc_lambda[3 * k];
    nesterov_todd(s, z, w, w_inv, lam);
    double ll[3];
    cone_product(lam, lam, ll);
    for (int i = 0; i < 3; ++i) rn[m.soc_s[3 * k + i]] = ll[i];
    // rows 1..3 of the contact's diagonal block: columns s (1..3) and gamma (N+1..N+3)
    const int c = m.soc_contact[k];
    const int id = m.blk_contact_diag[c];
    const int cols = m.blocks.size(m.blocks.block_col[id]);
    const int half = cols / 2;
    double* blk = d.matrix.data() + m.blocks.block_offset[id];
    arrow_times(lam, w, a);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) blk[(1 + i) * cols + 1 + j] = a[3 * i + j];
    arrow_times(lam, w_inv, a);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) blk[(1 + i) * cols + half + 1 + j] = a[3 * i + j];
  }
}

void nesterov_todd(const double* s, const double* z, double* w, double* w_inv, double* lambda) {
  // Points within rounding of the boundary can have det <= 0 at very tight tolerances;
  // a relative floor keeps the scaling finite.
  const double ds = std::max(jordan_det(s), std::max(kDetFloor * s[0] * s[0], kTiny));
  const double dz = std::max(jordan_det(z), std::max(kDetFloor * z[0] * z[0], kTiny));
  const double rs = std::sqrt(ds), rz = std::sqrt(dz);
  const double sign[3] = {1.0, -1.0, -1.0};
  double wt[3];
  for (int i = 0; i < 3; ++i) wt[i] = s[i] / rs + sign[i] * (z[i] / rz);
  const double dwt = std::sqrt(std::max(jordan_det(wt), std::max(kDetFloor * wt[0] * wt[0], kTiny)));
  double wh[3];
  for (int i = 0; i < 3; ++i) wh[i] = wt[i] / dwt;
  const double norm = std::sqrt(2.0 * (wh[0] + 1.0));
  const double u[3] = {(wh[0] + 1.0) / norm, wh[1] / norm, wh[2] / norm};
  const double beta = std::pow(ds / dz, 0.25);
  const double ju[3] = {u[0], -u[1], -u[2]};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const double jd = (i == j) ? sign[i] : 0.0;
      w_inv[3 * i + j] = beta * (2.0 * u[i] * u[j] - jd);
      w[3 * i + j] = (1.0 / beta) * (2.0 * ju[i] * ju[j] - jd);
    }
  matvec3(w, s, lambda);
}

void violations(const Model& m, const double* r, double& rvio, double& bvio, const double* scale) {
  rvio = 0.0;
  bvio = 0.0;
  for (int i = 0; i < m.n; ++i) {
    const double a = scale ? std::fabs(r[i]) / scale[i] : std::fabs(r[i]);
    if (m.is_complementarity[i])
      bvio = std::max(bvio, a);
    else
      rvio = std::max(rvio, a);
    if (a != a) {  // NaN: max() would drop it
      rvio = a;
      bvio = a;
      return;
    }
  }
}

double complementarity_measure(const Model& m, const double* w, const uint8_t* active) {
  double total = 0.0;
  int degree = 0;
  for (size_t i = 0; i < m.orthant_s.size(); ++i)
    if (in_solve(active, m.orthant_contact[i])) {
      total += w[m.orthant_s[i]] * w[m.orthant_g[i]];
      ++degree;
    }
  double soc = 0.0;
  for (size_t i = 0; i < m.soc_s.size(); ++i)
    if (in_solve(active, m.soc_contact[i / 3])) soc += w[m.soc_s[i]] * w[m.soc_g[i]];
  for (int c : m.soc_contact) degree += in_solve(active, c) ? 1 : 0;
  return (total + soc) / std::max(degree, 1);
}

double cone_step(const Model& m, const double* w, const double* dw, double tau, const uint8_t* active,
                 bool stay_inside) {
  double alpha = orthant_step(m, w, dw, tau, active);
  const double tau_soc = std::min(tau, kSocFraction);
  const int ns = static_cast<int>(m.soc_contact.size());
  double x[3], dx[3];
  for (int k = 0; k < ns; ++k) {
    if (!in_solve(active, m.soc_contact[k])) continue;
    for (const std::vector<int>* idx : {&m.soc_s, &m.soc_g}) {
      for (int i = 0; i < 3; ++i) {
        x[i] = w[(*idx)[3 * k + i]];
        dx[i] = dw[(*idx)[3 * k + i]];
      }
      double a = soc_step(x, dx, tau_soc);
      if (stay_inside && leaves_cone(x, dx, a)) {
        // Dojo's rule has absolute guards (kSocJFloor, kSocEps) that swamp the Jordan
        // determinant of a cone vector of size ~1e-7 (a sticking contact's slip cone at
        // kappa ~ 1e-8, det ~ 1e-15 < kSocEps): the step it returns can then leave the
        // cone, after which the scaling and the linearisation are meaningless and the
        // solve stalls (seen: the twister dropped straight). The same rule on x / x0,
        // dx / x0 is scale-invariant (its guards become relative). Only taken when Dojo's
        // step would leave the cone, which no built-in scene's iterate does.
        const double x0 = x[0];
        for (int i = 0; i < 3; ++i) {
          x[i] /= x0;
          dx[i] /= x0;
        }
        a = soc_step(x, dx, tau_soc);
      }
      alpha = std::min(alpha, a);
    }
  }
  return alpha;
}

SolverStatus interior_point(const Model& m, Data& d, const SolverOptions& opts) {
  const int n = m.n;
  step_project(m, d.w.data());
  // the contacts in this solve (margins.h): the others' cones are skipped
  const uint8_t* active = d.contact_active.data();
  std::fill(d.target.begin(), d.target.end(), 0.0);  // e: 1 on orthant rows, (1, 0, 0) on SOC rows
  for (size_t i = 0; i < m.orthant_s.size(); ++i)
    if (in_solve(active, m.orthant_contact[i])) d.target[m.orthant_s[i]] = 1.0;
  for (size_t k = 0; k < m.soc_contact.size(); ++k)
    if (active[m.soc_contact[k]]) d.target[m.soc_s[3 * k]] = 1.0;
  double undercut = opts.undercut;
  int no_progress = 0, short_steps = 0, stalls = 0;
  bool recovering = false;  // Mehrotra's second-order term dropped (kStallsBeforeRecovery)
  d.recovery_iteration = -1;
  bool line_search_failed = false;
  int jam_cone = -1, jam_count = 0;  // the cone that cut the last jam_count steps short
  int filter_size = 0;  // entries of d.filter (the iterates left behind in this solve)
  const int filter_capacity = static_cast<int>(d.filter.size()) / 2;
  // The convergence test measures each row in its unit (tolerances.h): (crvio, cbvio),
  // and so does the centering floor. The path to convergence (line search, fraction to
  // the boundary, the progress test's decrease) keeps the raw violations (rvio, bvio),
  // Dojo's: a step the old solver converged on is solved along the same iterates, only
  // stopped by the scaled test.
  const double* scale = tolerance_row_scale(m, opts);
  const double kappa_floor = opts.btol * complementarity_floor_scale(m, scale);
  step_residual(m, d, d.w.data(), d.r.data());
  double rvio, bvio, crvio, cbvio;
  violations(m, d.r.data(), rvio, bvio);
  violations(m, d.r.data(), crvio, cbvio, scale);
  // Fallback (tolerances.h): the first iterate that meets the absolute test is kept; a
  // solve that cannot reach the relative test ends there, as the absolute solver did.
  bool have_fallback = false;
  double fallback_c[2] = {0.0, 0.0};
  d.fell_back = false;
  auto finish = [&](SolverStatus status, int iterations) {
    if (status != SolverStatus::Success && status != SolverStatus::NonFinite && have_fallback) {
      std::copy(d.w_fallback.begin(), d.w_fallback.end(), d.w.begin());
      step_residual(m, d, d.w.data(), d.r.data());  // the residual at the step kept, not at the last iterate
      crvio = fallback_c[0];
      cbvio = fallback_c[1];
      d.fell_back = true;
      status = SolverStatus::Success;
    }
    d.iterations = iterations;
    d.residual = std::max(crvio, cbvio);
    d.complementarity = cbvio;
    return status;
  };
  for (int it = 0; it < opts.max_iter; ++it) {
    if (crvio < opts.rtol && cbvio < opts.btol) return finish(SolverStatus::Success, it);
    if (scale && !have_fallback && rvio < opts.rtol && bvio < opts.btol) {
      d.w_fallback.assign(d.w.begin(), d.w.end());
      fallback_c[0] = crvio;
      fallback_c[1] = cbvio;
      have_fallback = true;
    }
    // Newton matrix with the second-order cones in Nesterov-Todd scaled form; the
    // residual used for convergence stays raw.
    step_matrix(m, d, d.w.data());
    std::copy(d.r.begin(), d.r.end(), d.rhs.begin());
    scale_second_order_cones(m, d, d.rhs.data());  // d.rhs = rn
    if (!factor_matrix_condensed(m, d)) return finish(SolverStatus::SingularMatrix, it + 1);

    // 1-2. affine direction and its step length
    for (int i = 0; i < n; ++i) d.d_aff[i] = -d.rhs[i];
    solve_factored(m, d, d.d_aff.data());
    const double a_aff = cone_step(m, d.w.data(), d.d_aff.data(), kAffineFraction, active);

    // 3. centering (a pure centering step after a step cut short by a cone boundary)
    const double nu = complementarity_measure(m, d.w.data(), active);
    for (int i = 0; i < n; ++i) d.cand[i] = d.w[i] + a_aff * d.d_aff[i];
    const double nu_aff = complementarity_measure(m, d.cand.data(), active);
    double sigma = std::pow(std::clamp(nu_aff / (nu + kCenteringGuard), 0.0, 1.0), 3);
    const bool centering = short_steps >= kShortStepsBeforeCentering;
    if (centering) sigma = 1.0;
    const double kappa = std::max(sigma * nu, kappa_floor / undercut);

    // 4. corrector: target kappa plus the affine second-order term (scaled for SOCs),
    // which the recovery drops (kStallsBeforeRecovery)
    for (int i = 0; i < n; ++i) d.rhs[i] -= kappa * d.target[i];
    const size_t n_orthant = recovering ? 0 : m.orthant_s.size();
    const size_t n_soc = recovering ? 0 : m.soc_contact.size();
    for (size_t i = 0; i < n_orthant; ++i) d.rhs[m.orthant_s[i]] += d.d_aff[m.orthant_s[i]] * d.d_aff[m.orthant_g[i]];
    for (size_t k = 0; k < n_soc; ++k) {
      if (!active[m.soc_contact[k]]) continue;
      double ds[3], dz[3], sds[3], sdz[3], cp[3];
      for (int i = 0; i < 3; ++i) {
        ds[i] = d.d_aff[m.soc_s[3 * k + i]];
        dz[i] = d.d_aff[m.soc_g[3 * k + i]];
      }
      matvec3(&d.soc_w[9 * k], ds, sds);
      matvec3(&d.soc_w_inv[9 * k], dz, sdz);
      cone_product(sds, sdz, cp);
      for (int i = 0; i < 3; ++i) d.rhs[m.soc_s[3 * k + i]] += cp[i];
    }
    for (int i = 0; i < n; ++i) d.delta[i] = -d.rhs[i];
    solve_factored(m, d, d.delta.data());

    // 5. cone step length and backtracking
    const double viol = std::max(rvio, bvio);
    const double tau = std::max(kMinFraction, 1.0 - viol * viol);
    double alpha = cone_step(m, d.w.data(), d.delta.data(), tau, active, /*stay_inside=*/true);
    // Gondzio's centrality correctors (centrality_correctors, interior_point.h): aim the
    // products of the pairs that cut the step back into a band around kappa at a longer
    // trial step, with the same factorisation; kept while the step grows enough.
    if (d.centrality_correctors)
      for (int k = 0; k < kGondzioCorrectors && alpha < 1.0; ++k) {
        const double trial = std::min(1.0, kGondzioTrialFactor * alpha + kGondzioTrialOffset);
        for (int i = 0; i < n; ++i) d.cand[i] = d.w[i] + trial * d.delta[i];
        centrality_term(m, d, d.cand.data(), kappa, active, d.rhs.data());
        solve_factored(m, d, d.rhs.data());  // M^-1 t: the direction's change when the target gains t
        for (int i = 0; i < n; ++i) d.d_aff[i] = d.delta[i] + d.rhs[i];
        const double corrected = cone_step(m, d.w.data(), d.d_aff.data(), tau, active, /*stay_inside=*/true);
        if (!(corrected >= alpha + kGondzioGain * (trial - alpha))) break;
        d.delta.swap(d.d_aff);
        alpha = corrected;
      }
    double rvio_c = 0.0, bvio_c = 0.0;
    line_search_failed = true;
    for (int ls = 0; ls < std::max(opts.max_ls, 1); ++ls) {
      for (int i = 0; i < n; ++i) d.cand[i] = d.w[i] + alpha * d.delta[i];
      step_project(m, d.cand.data());
      step_residual(m, d, d.cand.data(), d.rc.data());
      violations(m, d.rc.data(), rvio_c, bvio_c);
      // a non-finite candidate is never accepted (NaN compares false)
      if (std::isfinite(rvio_c) && std::isfinite(bvio_c) && !(rvio_c > rvio && bvio_c > bvio) &&
          !(d.filter_acceptance && filtered(d.filter.data(), filter_size, rvio_c, bvio_c))) {
        line_search_failed = false;
        break;
      }
      alpha *= opts.ls_scale;
    }
    // Dojo accepts the last candidate even when backtracking ran out; the status
    // records it if the solve then ends unconverged. A non-finite one is never taken.
    if (!(std::isfinite(rvio_c) && std::isfinite(bvio_c))) return finish(SolverStatus::LineSearchFailure, it + 1);

    // the second-order cone that cut a short step (recentre_jams, interior_point.h)
    if (d.recentre_jams) {
      const int cut = alpha < kShortStep ? limiting_cone(m, d.w.data(), d.delta.data(), active) : -1;
      jam_count = (cut >= 0 && cut == jam_cone) ? jam_count + 1 : (cut >= 0 ? 1 : 0);
      jam_cone = cut;
    }

    // 6. progress bookkeeping (an unconverged violation: by the scaled test)
    double crvio_c, cbvio_c;
    violations(m, d.rc.data(), crvio_c, cbvio_c, scale);
    const bool progress = (crvio >= opts.rtol && rvio_c < kProgressFactor * rvio) ||
                          (cbvio >= opts.btol && bvio_c < kProgressFactor * bvio);
    no_progress = progress ? std::max(no_progress - 1, 0) : no_progress + 1;
    if (no_progress >= opts.no_progress_max) {
      undercut *= opts.no_progress_undercut;
      no_progress = 0;
      if (!recovering && ++stalls >= kStallsBeforeRecovery) {
        recovering = true;
        d.recovery_iteration = it + 1;
      }
    }
    if (d.log_rows * kLogColumns < static_cast<int>(d.log.size())) {
      double* line = &d.log[kLogColumns * d.log_rows++];
      line[kLogIteration] = it + 1;
      line[kLogResidual] = inf_norm(d.rc.data(), n);
      line[kLogComplementarity] = bvio_c;
      line[kLogAlpha] = alpha;
      line[kLogKappa] = kappa;
      line[kLogStep] = inf_norm(d.delta.data(), n);
      line[kLogRvio] = rvio_c;
    }
    // one centring step at a time: it is followed by a normal (Mehrotra) iteration
    short_steps = centering ? 0 : (alpha < kShortStep ? short_steps + 1 : 0);
    if (d.filter_acceptance && filter_size < filter_capacity) {
      d.filter[2 * filter_size] = rvio;
      d.filter[2 * filter_size + 1] = bvio;
      ++filter_size;
    }
    d.w.swap(d.cand);
    d.r.swap(d.rc);
    // a cone that keeps cutting the step holds the whole solve (interior_point.h,
    // recentre_jams): move it inside and go on from there (a new iterate, same problem)
    if (jam_count >= kJamSteps) {
      recentre_cone(m, d.w.data(), jam_cone);
      step_residual(m, d, d.w.data(), d.r.data());
      violations(m, d.r.data(), rvio_c, bvio_c);
      violations(m, d.r.data(), crvio_c, cbvio_c, scale);
      jam_count = 0;
      jam_cone = -1;
    }
    rvio = rvio_c;
    bvio = bvio_c;
    crvio = crvio_c;
    cbvio = cbvio_c;
  }
  if (crvio < opts.rtol && cbvio < opts.btol) return finish(SolverStatus::Success, opts.max_iter);
  return finish(line_search_failed ? SolverStatus::LineSearchFailure : SolverStatus::MaxIterations, opts.max_iter);
}

}  // namespace dojo
