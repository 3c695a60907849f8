// The record a run keeps beside a block of its states, computed where the states are (the
// binding of the call that stepped them), so that a block of a run crosses into the core
// once (simulation.integrators): used by rollout (bind_step.cpp) and rk4_run (bind_rk4.cpp).
#pragma once

#include "common.h"

#include "maximal/run_record.h"

namespace dojo::bindings {

// Of `steps` states (steps, 13 nb) reached from z_prev (the state before them, 13 nb, with
// its unwrapped minimal coordinates theta_prev, nf), into `out`: minimal_q (steps, nf),
// knot_v, knot_omega (steps + 1, nb, 3) and knot_minimal_v (steps + 1, nf), as
// maximal/run_record.h run_record computes them.
// With `into` (a dict, or None: new arrays) the caller's arrays of the same names and of
// `rows` (>= steps) steps are written instead (output_rows: rows, nf and rows + 1, nb, 3 ...),
// their first steps (+ 1) rows.
inline void add_run_record(const Model& model, const double* states, int steps, const double* z_prev,
                           const double* theta_prev, bool exact_knots, nb::dict& out, nb::handle into = nb::none(),
                           int rows = -1) {
  const size_t nf = model.nf, nb_ = model.nb, n = rows < 0 ? steps : rows;
  auto theta = output_rows<double>(into, "minimal_q", {n, nf});
  auto kv = output_rows<double>(into, "knot_v", {n + 1, nb_, size_t(3)});
  auto kw = output_rows<double>(into, "knot_omega", {n + 1, nb_, size_t(3)});
  auto rate = output_rows<double>(into, "knot_minimal_v", {n + 1, nf});
  run_record(model, states, steps, z_prev, theta_prev, exact_knots, theta.data(), kv.data(), kw.data(), rate.data());
  out["minimal_q"] = theta;
  out["knot_v"] = kv;
  out["knot_omega"] = kw;
  out["knot_minimal_v"] = rate;
}

}  // namespace dojo::bindings
