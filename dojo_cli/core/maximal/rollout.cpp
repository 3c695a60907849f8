// Rollouts (rollout.h).
#include "rollout.h"

#include <algorithm>

#include "angles.h"
#include "gradients.h"
#include "residual.h"
#include "step.h"

namespace dojo {

int rollout(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
            const SolverOptions& opts, bool stop_on_failure, const RolloutRecord& out,
            const PDController* controller, const LinearController* linear) {
  const int nb = m.nb;
  const double* current = z;
  bool warm = lambda != nullptr;
  // a law's inputs of the step, and its scratch (the state's minimal coordinates: theta and
  // rate for the PD law, the minimal state y for the linear one)
  const bool law = controller || linear;
  std::vector<double> u_law(law ? m.nu : 0), theta(controller ? m.nf : 0), rate(controller ? m.nf : 0),
      y(linear ? 2 * m.nf : 0);
  for (int i = 0; i < k; ++i) {
    const double* u = inputs ? inputs + static_cast<size_t>(i) * m.nu : nullptr;
    if (controller) {
      pd_inputs(m, *controller, current, theta.data(), rate.data(), u_law.data());
      u = u_law.data();
    } else if (linear) {
      linear_inputs(m, *linear, current, y.data(), u_law.data());
      u = u_law.data();
    }
    if (out.inputs) {
      double* u_row = out.inputs + static_cast<size_t>(i) * m.nu;
      if (u)
        std::copy(u, u + m.nu, u_row);
      else
        std::fill(u_row, u_row + m.nu, 0.0);
    }
    const SolverStatus status = step(m, d, current, u, nullptr, nullptr, warm ? lambda : nullptr, opts);
    if (lambda) {
      for (int r = 0; r < m.nl; ++r) lambda[r] = d.w[m.lam + r];
      warm = true;
    }
    double* row = out.states ? out.states + static_cast<size_t>(i) * 13 * nb : nullptr;
    if (row) std::copy(d.z_next.begin(), d.z_next.end(), row);
    if (out.iterations) out.iterations[i] = d.iterations;
    if (out.residual) out.residual[i] = d.residual;
    if (out.status) out.status[i] = static_cast<int>(status);
    if (out.complementarity) out.complementarity[i] = d.complementarity;
    if (out.singular_node) out.singular_node[i] = status == SolverStatus::SingularMatrix ? d.singular_node : -1;
    if (out.impulses)
      for (int r = 0; r < m.nl; ++r) out.impulses[static_cast<size_t>(i) * m.nl + r] = d.w[m.lam + r];
    const size_t c0 = static_cast<size_t>(i) * m.nc;
    for (int c = 0; c < m.nc; ++c) {
      if (out.contact_distance) out.contact_distance[c0 + c] = d.contact_distance[c];
      if (out.contact_normal_impulse) out.contact_normal_impulse[c0 + c] = d.contact_normal_impulse[c];
      for (int j = 0; j < 2; ++j) {
        if (out.contact_friction_impulse) out.contact_friction_impulse[2 * (c0 + c) + j] = d.contact_friction_impulse[2 * c + j];
        if (out.contact_slip) out.contact_slip[2 * (c0 + c) + j] = d.contact_slip[2 * c + j];
      }
    }
    if (out.start) record_start(m, d, out.start + static_cast<size_t>(i) * start_record_size(m));
    advance_angles(m, d);
    if (status != SolverStatus::Success && stop_on_failure) return i + 1;
    // the next step starts from this one's result (its setup reads the state before
    // anything overwrites d.z_next)
    current = row ? row : d.z_next.data();
  }
  return k;
}

namespace {

// One forward step i of a differentiated rollout from `current`: the step (warm-started
// from `lambda` once a step has filled it), then (kappa >= 0, a model with inequalities)
// the move onto the central path, whose result the run continues from. The status goes to
// status[i], the next state to row i of `states`, the step's impulses to `lambda` (the
// next step's warm start); returns the row.
double* rollout_step(const Model& m, Data& d, int i, const double* current, const double* inputs, double* lambda,
                     bool& warm, const SolverOptions& opts, double kappa, double* states, int* status) {
  const double* u = inputs ? inputs + static_cast<size_t>(i) * m.nu : nullptr;
  SolverStatus s = step(m, d, current, u, nullptr, nullptr, warm ? lambda : nullptr, opts);
  if (s == SolverStatus::Success && kappa >= 0.0 && m.degree > 0) relax_step(m, d, kappa);
  status[i] = static_cast<int>(s);
  if (lambda) {
    for (int r = 0; r < m.nl; ++r) lambda[r] = d.w[m.lam + r];
    warm = true;
  }
  double* row = states + static_cast<size_t>(i) * 13 * m.nb;
  std::copy(d.z_next.begin(), d.z_next.end(), row);
  return row;
}

}  // namespace

int rollout_jvp(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
                const SolverOptions& opts, double kappa, const std::vector<int>& kinds, const double* dz0,
                const double* du, const double* dp, double* states, double* tangents, int* status) {
  const int nb = m.nb, nt = 12 * nb;
  const double* current = z;
  const double* tangent = dz0;
  bool warm = lambda != nullptr;
  for (int i = 0; i < k; ++i) {
    double* row = rollout_step(m, d, i, current, inputs, lambda, warm, opts, kappa, states, status);
    if (status[i] != static_cast<int>(SolverStatus::Success)) return i + 1;
    double* out = tangents + static_cast<size_t>(i) * nt;
    step_jvp(m, d, kinds, tangent, du ? du + static_cast<size_t>(i) * m.nu : nullptr, dp, out);
    advance_angles(m, d);
    current = row;
    tangent = out;
  }
  return k;
}

int rollout_vjp(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
                const SolverOptions& opts, double kappa, const std::vector<int>& kinds, const double* cotangents,
                double* states, int* status, double* z0_bar, double* u_bar, double* p_bar) {
  const int nb = m.nb, nt = 12 * nb, n = m.n;
  // forward: the steps, and what restores each one's solution for the backward pass
  // (restore_step): the unwrapped angles it started from, its contact set, its solution
  std::vector<double> angles(static_cast<size_t>(k) * m.nf), solutions(static_cast<size_t>(k) * n);
  std::vector<uint8_t> active(static_cast<size_t>(k) * m.nc);
  const double* current = z;
  bool warm = lambda != nullptr;
  for (int i = 0; i < k; ++i) {
    std::copy(d.angle_ref.begin(), d.angle_ref.end(), angles.begin() + static_cast<size_t>(i) * m.nf);
    double* row = rollout_step(m, d, i, current, inputs, lambda, warm, opts, kappa, states, status);
    if (status[i] != static_cast<int>(SolverStatus::Success)) return i + 1;
    std::copy(d.w.begin(), d.w.end(), solutions.begin() + static_cast<size_t>(i) * n);
    std::copy(d.contact_active.begin(), d.contact_active.end(), active.begin() + static_cast<size_t>(i) * m.nc);
    advance_angles(m, d);
    current = row;
  }
  // backward: the cotangent of state i+1 (its own plus what later states pass back)
  // through step i, on step i's solution refactorised
  const int p = parameter_columns(m, kinds);
  std::vector<double> bar(cotangents + static_cast<size_t>(k - 1) * nt, cotangents + static_cast<size_t>(k) * nt);
  std::vector<double> bar_prev(nt), p_step(p);
  if (p_bar) std::fill(p_bar, p_bar + p, 0.0);
  for (int i = k - 1; i >= 0; --i) {
    std::copy(angles.begin() + static_cast<size_t>(i) * m.nf, angles.begin() + static_cast<size_t>(i + 1) * m.nf,
              d.angle_ref.begin());
    const double* zi = i == 0 ? z : states + static_cast<size_t>(i - 1) * 13 * nb;
    step_setup(m, d, zi, inputs ? inputs + static_cast<size_t>(i) * m.nu : nullptr, nullptr, nullptr);
    std::copy(active.begin() + static_cast<size_t>(i) * m.nc, active.begin() + static_cast<size_t>(i + 1) * m.nc,
              d.contact_active.begin());
    std::copy(solutions.begin() + static_cast<size_t>(i) * n, solutions.begin() + static_cast<size_t>(i + 1) * n,
              d.w.begin());
    step_vjp(m, d, kinds, bar.data(), bar_prev.data(), u_bar ? u_bar + static_cast<size_t>(i) * m.nu : nullptr,
             p > 0 ? p_step.data() : nullptr);
    for (int j = 0; j < p && p_bar; ++j) p_bar[j] += p_step[j];
    if (i > 0)
      for (int j = 0; j < nt; ++j) bar[j] = bar_prev[j] + cotangents[static_cast<size_t>(i - 1) * nt + j];
  }
  if (z0_bar) std::copy(bar_prev.begin(), bar_prev.end(), z0_bar);
  return k;
}

}  // namespace dojo
