// One whole step of Dojo's variational integrator in maximal coordinates: setup, warm
// start, the contact set (margins.h), the solve (newton.h or interior_point.h), the next
// state. The residual it solves is written out in residual.h.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Interior-point starting value of joint-limit slacks and impulses (Dojo: reset to 1).
constexpr double kLimitStart = 1.0;

// Warm start: previous midpoint velocities, lambda0 (or zero), cone variables at
// Dojo's starting values strictly inside their cones (the contacts in the solve:
// d.contact_active; the others' unknowns are left as they are).
void step_initial_guess(const Model& m, Data& d, const double* lambda0);

// One whole step: setup, warm start, solve, next state. The result is in d.
SolverStatus step(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                  const double* tau_ext, const double* lambda0, const SolverOptions& opts);

}  // namespace dojo
