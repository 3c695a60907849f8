// The record a run keeps beside a block of its states, computed where the states are (the
// binding of the call that stepped them), so that a block of a run crosses into the core
// once (simulation.integrators): used by rollout (bind_step.cpp) and rk4_run (bind_rk4.cpp).
#pragma once

#include "common.h"

#include "maximal/angles.h"
#include "maximal/coordinates.h"
#include "maximal/energy.h"

namespace dojo::bindings {

// Of `steps` states (steps, 13 nb) reached from z_prev (the state before them, 13 nb, with
// its unwrapped minimal coordinates theta_prev, nf), into `out`: minimal_q (steps, nf),
// unwrapped as `unwrapped_coordinates` does; knot_v, knot_omega (steps + 1, nb, 3) and
// knot_minimal_v (steps + 1, nf), the velocities at the knots of z_prev and the states.
// Midpoint states (exact_knots false): energy.h knot_velocities, the last extrapolated, as
// simulation.knots.KnotRows derives them; states that carry their knot velocities already
// (exact_knots, the rk4 integrator's): their own v, omega. knot_minimal_v is the exact
// velocity map of the knot velocities (instantaneous_minimal_velocities).
inline void add_run_record(const Model& model, const double* states, int steps, const double* z_prev,
                           const double* theta_prev, bool exact_knots, nb::dict& out) {
  const size_t nz = 13 * static_cast<size_t>(model.nb), nf = model.nf, nb_ = model.nb, n = steps;
  std::vector<double> theta(n * nf);
  for (size_t t = 0; t < n; ++t) {
    const double* zt = states + t * nz;
    minimal_coordinates_and_velocities(model, zt, theta.data() + t * nf, static_cast<double*>(nullptr));
    if (t == 0)
      unwrap_angles(model, zt, z_prev, theta_prev, theta.data());
    else
      unwrap_angles(model, zt, zt - nz, theta.data() + (t - 1) * nf, theta.data() + t * nf);
  }
  auto row = [&](size_t t) { return t == 0 ? z_prev : states + (t - 1) * nz; };
  // the states' own velocities (n + 1, nb, 3): midpoint ones, or the knot ones
  std::vector<double> v_own(3 * nb_ * (n + 1)), w_own(3 * nb_ * (n + 1));
  for (size_t t = 0; t <= n; ++t)
    for (size_t b = 0; b < nb_; ++b)
      for (int k = 0; k < 3; ++k) {
        v_own[3 * (t * nb_ + b) + k] = row(t)[13 * b + 3 + k];
        w_own[3 * (t * nb_ + b) + k] = row(t)[13 * b + 10 + k];
      }
  std::vector<double> kv, kw;
  if (exact_knots) {
    kv = v_own;
    kw = w_own;
  } else {
    kv.resize(v_own.size());
    kw.resize(w_own.size());
    knot_velocities(model, steps, v_own.data(), w_own.data(), true, kv.data(), kw.data());
  }
  std::vector<double> rate((n + 1) * nf), zk(nz);
  for (size_t t = 0; t <= n; ++t) {
    std::copy(row(t), row(t) + nz, zk.begin());
    for (size_t b = 0; b < nb_; ++b)
      for (int k = 0; k < 3; ++k) {
        zk[13 * b + 3 + k] = kv[3 * (t * nb_ + b) + k];
        zk[13 * b + 10 + k] = kw[3 * (t * nb_ + b) + k];
      }
    instantaneous_minimal_velocities(model, zk.data(), rate.data() + t * nf);
  }
  out["minimal_q"] = numpy_owning<double>(std::move(theta), {n, nf});
  out["knot_v"] = numpy_owning<double>(std::move(kv), {n + 1, nb_, size_t(3)});
  out["knot_omega"] = numpy_owning<double>(std::move(kw), {n + 1, nb_, size_t(3)});
  out["knot_minimal_v"] = numpy_owning<double>(std::move(rate), {n + 1, nf});
}

}  // namespace dojo::bindings
