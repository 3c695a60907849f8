// A symmetric composition of the variational step, fourth order (variational4.h).
#include "variational4.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "body_maps.h"
#include "dynamics.h"
#include "residual.h"
#include "step.h"

namespace dojo {

double composition_outer_weight(int stages) {
  if (stages == 3) return 1.0 / (2.0 - std::cbrt(2.0));
  if (stages == 5) return 1.0 / (4.0 - std::cbrt(4.0));
  throw std::invalid_argument("variational4: a composition has 3 (Yoshida) or 5 (Suzuki) stages");
}

namespace {

ModelInput with_timestep(const ModelInput& in, double h) {
  ModelInput out = in;
  out.timestep = h;
  return out;
}

// Solve the dense n x n system a x = b in place (Gaussian elimination, partial pivoting);
// false when a pivot is zero.
bool dense_solve(double* a, double* b, int n) {
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(a[n * i + k]) > std::fabs(a[n * p + k])) p = i;
    if (a[n * p + k] == 0.0) return false;
    if (p != k) {
      for (int j = 0; j < n; ++j) std::swap(a[n * k + j], a[n * p + j]);
      std::swap(b[k], b[p]);
    }
    for (int i = k + 1; i < n; ++i) {
      const double f = a[n * i + k] / a[n * k + k];
      if (f == 0.0) continue;
      for (int j = k; j < n; ++j) a[n * i + j] -= f * a[n * k + j];
      b[i] -= f * b[k];
    }
  }
  for (int k = n - 1; k >= 0; --k) {
    double s = b[k];
    for (int j = k + 1; j < n; ++j) s -= a[n * k + j] * b[j];
    b[k] = s / a[n * k + k];
  }
  return true;
}

// M^-1 of one body applied to a 6-vector [linear (world); angular (body)].
void apply_inverse_mass(const Model& m, int b, const double* p, double* out) {
  for (int k = 0; k < 3; ++k) out[k] = p[k] / m.mass[b];
  double a[9], x[3] = {p[3], p[4], p[5]};
  std::copy(&m.inertia[9 * b], &m.inertia[9 * b] + 9, a);
  dense_solve(a, x, 3);
  for (int k = 0; k < 3; ++k) out[3 + k] = x[k];
}

}  // namespace

std::string variational4_problem(const Model& m) {
  if (m.nc > 0) return "contacts are not supported by the variational4 integrator (use integrator: variational)";
  if (m.nlim > 0) return "joint limits are not supported by the variational4 integrator (use integrator: variational)";
  if (m.nfr > 0) return "joint friction is not supported by the variational4 integrator (use integrator: variational)";
  if (m.has_dampers)
    return "dampers are not supported by the variational4 integrator (its negative sub-step is the reversed step, "
           "exact for forces that do not depend on velocity; use integrator: variational)";
  if (m.nr > 0) return "rotor inertia (armature) is not supported by the variational4 integrator";
  return "";
}

Variational4::Variational4(const ModelInput& in, int stages_)
    : outer(with_timestep(in, composition_outer_weight(stages_) * in.timestep)),
      inner(with_timestep(in, ((stages_ - 1) * composition_outer_weight(stages_) - 1.0) * in.timestep)),
      d_outer(outer),
      d_inner(inner),
      h(in.timestep),
      stages(stages_) {
  const std::string problem = variational4_problem(outer);
  if (!problem.empty()) throw std::invalid_argument(problem);
  const int nb = outer.nb, nl = outer.nl;
  force_.assign(6 * nb, 0.0);
  target_.assign(6 * nb, 0.0);
  zsub_.assign(13 * nb, 0.0);
  mom_.assign(6 * nb, 0.0);
  gram_.assign(static_cast<size_t>(nl) * nl, 0.0);
  rhs_.assign(nl, 0.0);
}

bool Variational4::constant_forces(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                                   const double* tau_ext) {
  // step_setup's constant is left_tau(v15) + tau F(q) (residual.cpp): at zero velocities, tau F
  std::copy(z, z + 13 * m.nb, zsub_.begin());
  for (int b = 0; b < m.nb; ++b)
    for (int k = 0; k < 3; ++k) zsub_[13 * b + 3 + k] = zsub_[13 * b + 10 + k] = 0.0;
  if (!step_setup(m, d, zsub_.data(), u, f_ext, tau_ext)) return false;
  std::copy(d.constant.begin(), d.constant.begin() + 6 * m.nb, force_.begin());
  return true;
}

bool Variational4::invert_left(const Model& m) {
  for (int b = 0; b < m.nb; ++b) {
    const double* t = &target_[6 * b];
    for (int k = 0; k < 3; ++k) zsub_[13 * b + 3 + k] = t[k] / m.mass[b];
    // angular: (tau/2)(s J w - w x J w) = t, Newton from w = J^-1 t (its small-tau limit)
    double a[9], w[3] = {t[3], t[4], t[5]};
    std::copy(&m.inertia[9 * b], &m.inertia[9 * b] + 9, a);
    if (!dense_solve(a, w, 3)) return false;
    const Mat3<double> inertia = body_inertia(m, b);
    const double scale = std::max({std::fabs(t[3]), std::fabs(t[4]), std::fabs(t[5]), 1e-300});
    bool done = false;
    for (int it = 0; it < kLegendreMaxIterations && !done; ++it) {
      double mom[6], jac[36];
      const Vec3<double> wv{{w[0], w[1], w[2]}};
      momentum(m.mass[b], inertia, wv, wv, m.h, -1.0, mom);
      double r[3], err = 0.0;
      for (int k = 0; k < 3; ++k) {
        r[k] = t[3 + k] - mom[3 + k];
        err = std::max(err, std::fabs(r[k]));
      }
      if (err <= kLegendreTolerance * scale) break;
      momentum_jacobian(m.mass[b], inertia, wv, m.h, -1.0, jac);
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) a[3 * i + j] = jac[6 * (3 + i) + 3 + j];
      if (!dense_solve(a, r, 3)) return false;
      for (int k = 0; k < 3; ++k) w[k] += r[k];
      done = std::fabs(r[0]) + std::fabs(r[1]) + std::fabs(r[2]) == 0.0;
    }
    for (int k = 0; k < 3; ++k) zsub_[13 * b + 10 + k] = w[k];
    if (!(std::isfinite(w[0]) && std::isfinite(w[1]) && std::isfinite(w[2]))) return false;
  }
  return true;
}

void Variational4::knot_velocities(const Model& m, Data& d, const double* z, double* knot) {
  // RATTLE's projection: p = p_hat + G^T mu, G M^-1 p = 0 (d.jg2: G at this knot, from
  // the constant_forces call's step_setup)
  const int nb = m.nb, nl = m.nl;
  std::vector<double>& minv_gt = d.grad_chain;  // scratch: (nl, 6 nb) M^-1 G^T, row by constraint
  minv_gt.assign(static_cast<size_t>(nl) * 6 * nb, 0.0);
  double row6[6];
  for (int r = 0; r < nl; ++r) {
    const int j = m.row_joint[r];
    const double* g = &d.jg2[12 * r];
    const int bodies[2] = {m.parent[j], m.child[j]};
    for (int s = 0; s < 2; ++s) {
      if (bodies[s] == kWorld) continue;
      apply_inverse_mass(m, bodies[s], g + 6 * s, row6);
      for (int k = 0; k < 6; ++k) minv_gt[static_cast<size_t>(r) * 6 * nb + 6 * bodies[s] + k] += row6[k];
    }
  }
  // M^-1 p_hat, then the Gram matrix G M^-1 G^T and the right-hand side -G M^-1 p_hat
  for (int b = 0; b < nb; ++b) apply_inverse_mass(m, b, &target_[6 * b], &mom_[6 * b]);
  double trace = 0.0;
  for (int r = 0; r < nl; ++r) {
    const int j = m.row_joint[r];
    const double* g = &d.jg2[12 * r];
    rhs_[r] = -dot12(m, j, g, mom_.data());
    for (int c = 0; c < nl; ++c)
      gram_[static_cast<size_t>(r) * nl + c] = dot12(m, j, g, &minv_gt[static_cast<size_t>(c) * 6 * nb]);
    trace += std::fabs(gram_[static_cast<size_t>(r) * nl + r]);
  }
  for (int r = 0; r < nl; ++r) gram_[static_cast<size_t>(r) * nl + r] += kProjectionRidge * trace / std::max(nl, 1);
  if (nl > 0 && !dense_solve(gram_.data(), rhs_.data(), nl)) std::fill(rhs_.begin(), rhs_.end(), 0.0);
  std::copy(target_.begin(), target_.end(), mom_.begin());
  for (int r = 0; r < nl; ++r) scatter12(m, m.row_joint[r], &d.jg2[12 * r], rhs_[r], mom_.data());
  for (int b = 0; b < nb; ++b) {
    double xi[6];
    apply_inverse_mass(m, b, &mom_[6 * b], xi);
    const double* s = z + 13 * b;
    double* o = knot + 13 * b;
    for (int k = 0; k < 3; ++k) o[k] = s[k];
    for (int k = 0; k < 4; ++k) o[6 + k] = s[6 + k];
    for (int k = 0; k < 3; ++k) {
      o[3 + k] = xi[k];
      o[10 + k] = xi[3 + k];
    }
  }
}

SolverStatus Variational4::initial(const double* z_t0, const double* u, const double* f_ext, const double* tau_ext,
                                   double* z) {
  const Model& m = outer;
  if (!constant_forces(m, d_outer, z_t0, u, f_ext, tau_ext)) return SolverStatus::NonFinite;
  for (int b = 0; b < m.nb; ++b) {
    const Vec3<double> jw = matvec(body_inertia(m, b), load3<double>(z_t0 + 13 * b + 10));
    for (int k = 0; k < 3; ++k) {
      target_[6 * b + k] = m.mass[b] * z_t0[13 * b + 3 + k] - 0.5 * force_[6 * b + k];
      target_[6 * b + 3 + k] = jw[k] - 0.5 * force_[6 * b + 3 + k];
    }
  }
  if (!invert_left(m)) return SolverStatus::NonFinite;
  std::copy(zsub_.begin(), zsub_.begin() + 13 * m.nb, z);
  return SolverStatus::Success;
}

SolverStatus Variational4::step(const double* z, const double* u, const double* f_ext, const double* tau_ext,
                                const SolverOptions& opts, double* z_next, double* knot) {
  const int nb = outer.nb;
  iterations = 0;
  residual = 0.0;
  // the outer sub-steps forward, the middle (inner) one reversed
  std::vector<double> state(z, z + 13 * nb);
  const Model* prev = &outer;
  double prev_sigma = 1.0;
  for (int i = 0; i < stages; ++i) {
    const bool middle = i == stages / 2;
    const Model& m = middle ? inner : outer;
    Data& d = middle ? d_inner : d_outer;
    const double sigma_i = middle ? -1.0 : 1.0;
    // the same Model forward again: the state's midpoint velocities are already the ones
    if (i > 0 && !(prev == &m && sigma_i == prev_sigma)) {
      // left_tau(v15) = sigma p_hat - (tau/2) F(q), with p_hat = prev_sigma (left_prev(v) + (tau_prev/2) F(q))
      if (!constant_forces(m, d, state.data(), u, f_ext, tau_ext)) return SolverStatus::NonFinite;
      const double ratio = prev->h / m.h;  // tau_prev F = ratio (tau F)
      const double s = sigma_i * prev_sigma;
      double left[6];
      for (int b = 0; b < nb; ++b) {
        momentum(prev->mass[b], body_inertia(*prev, b), load3<double>(&state[13 * b + 3]),
                 load3<double>(&state[13 * b + 10]), prev->h, -1.0, left);
        for (int k = 0; k < 6; ++k)
          target_[6 * b + k] = s * (left[k] + 0.5 * ratio * force_[6 * b + k]) - 0.5 * force_[6 * b + k];
      }
      if (!invert_left(m)) return SolverStatus::NonFinite;
      std::copy(zsub_.begin(), zsub_.begin() + 13 * nb, state.begin());
    }
    const SolverStatus status = dojo::step(m, d, state.data(), u, f_ext, tau_ext, nullptr, opts);
    iterations += d.iterations;
    residual = std::max(residual, d.residual);
    if (status != SolverStatus::Success) {
      std::copy(d.z_next.begin(), d.z_next.end(), z_next);
      std::copy(d.z_next.begin(), d.z_next.end(), knot);
      return status;
    }
    std::copy(d.z_next.begin(), d.z_next.end(), state.begin());
    prev = &m;
    prev_sigma = sigma_i;
  }
  std::copy(state.begin(), state.end(), z_next);
  // the new knot's momentum p_hat = left_tau_o(v) + (tau_o/2) F(q), projected
  if (!constant_forces(outer, d_outer, state.data(), u, f_ext, tau_ext)) return SolverStatus::NonFinite;
  double left[6];
  for (int b = 0; b < nb; ++b) {
    momentum(outer.mass[b], body_inertia(outer, b), load3<double>(&state[13 * b + 3]),
             load3<double>(&state[13 * b + 10]), outer.h, -1.0, left);
    for (int k = 0; k < 6; ++k) target_[6 * b + k] = left[k] + 0.5 * force_[6 * b + k];
  }
  knot_velocities(outer, d_outer, state.data(), knot);
  return SolverStatus::Success;
}

}  // namespace dojo
