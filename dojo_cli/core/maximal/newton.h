// Newton's method on the step's residual, for steps with no inequalities (no joint limit,
// no contact); the others go to interior_point.h.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Damped Newton on the step's residual (no inequalities): each iteration factorises
// the Newton matrix, takes the full step, then backtracks by ls_scale (at most
// max_ls times) until the residual's infinity norm decreases (notes 5.3 f).
SolverStatus newton(const Model& m, Data& d, const SolverOptions& opts);

}  // namespace dojo
