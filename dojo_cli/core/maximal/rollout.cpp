// Rollouts (rollout.h).
#include "rollout.h"

#include <algorithm>

#include "angles.h"
#include "step.h"

namespace dojo {

int rollout(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
            const SolverOptions& opts, bool stop_on_failure, const RolloutRecord& out) {
  const int nb = m.nb;
  const double* current = z;
  bool warm = lambda != nullptr;
  for (int i = 0; i < k; ++i) {
    const SolverStatus status =
        step(m, d, current, inputs ? inputs + static_cast<size_t>(i) * m.nu : nullptr, nullptr, nullptr,
             warm ? lambda : nullptr, opts);
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
    advance_angles(m, d);
    if (status != SolverStatus::Success && stop_on_failure) return i + 1;
    // the next step starts from this one's result (its setup reads the state before
    // anything overwrites d.z_next)
    current = row ? row : d.z_next.data();
  }
  return k;
}

}  // namespace dojo
