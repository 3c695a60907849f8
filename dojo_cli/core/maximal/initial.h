// The state before the first step from velocities at t = 0 (docs/physics.md,
// "Velocities at t0 and at the knots").
//
// The integrator's state at knot k holds the midpoint velocities of the interval
// before it, (v15, w15) = (v_{k-1/2}, w_{k-1/2}). A scene gives velocities at t = 0.
// The momentum at a knot is the average of the two discrete Legendre transforms
// around it (energy.h; Dojo's "transform of the step leaving k minus half of that
// step's impulses", notes 7.2):
//     p_0 = (left(v15, w15) + right(v25, w25)) / 2,
// which the step's residual, right(v25) - left(v15) = I_0 (every impulse of step 0:
// gravity, external forces, springs, dampers, inputs, joint and contact impulses),
// turns into
//     right(v25, w25) - I_0 / 2 = p_0 = [m v(0); J w(0)],
// that is -D1 Ld(q0, q1) and the forces and constraint impulses of the half step
// [0, h/2]. The unknowns are the midpoint velocities y = (v15, w15) of every body; each
// evaluation of F(y) = (left(y) + right(v25(y))) / 2 - p_0 is one regular step from
// [x0, y, q0], so the regular step from the result reproduces the first step exactly
// and v[0] of a storage file (energy.h knot_velocities) is v(0). Newton's method on F
// with dF/dy = (dleft/dy + dright/dv25 dv25/dy) / 2, dv25/dy from the step's implicit
// derivative (gradients.h), and a backtracking line search on |F|. The Newton step is
// found without forming dF/dy: Newton on the step's unknowns and y together, y
// eliminated (per body, 6 x 6), is one solve with the step's Newton matrix modified on
// blocks it already has (initial.cpp, newton_step): the cost of a step, not of the
// 12 nb columns of step_gradients.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Outer Newton iterations and line-search steps (each evaluation is one step solve).
constexpr int kInitialMaxIterations = 30;
constexpr int kInitialMaxLineSearch = 10;
// The condition is met to this fraction of the solver's rtol (F is in momentum units,
// like the step's residual); a solve that stalls above it is accepted down to rtol.
constexpr double kInitialTolerance = 1e-3;
// A Newton step's linear solve in the step's own elimination order is kept when its
// normwise backward error |b - M x| / (max|M| |x| + |b|) (infinity norms) is below this;
// otherwise the robust order solves it again (initial.cpp, newton_step).
constexpr double kInitialBackwardError = 1e-10;

struct InitialResult {
  // of the condition: MaxIterations, or LineSearchFailure when no step of the line search
  // reduced |F| (a stall at the steps' own accuracy); or of a step that failed
  SolverStatus status = SolverStatus::Success;
  int iterations = 0;                           // outer Newton iterations
  double residual = 0.0;                        // |F| (infinity norm), N s or N m s
};

// z0 (13 nb,): [x, v15, q, w15] per body from z_t0 (13 nb,) [x, v(0), q, w(0)]; u, f_ext,
// tau_ext: the first step's inputs and forces (as step()). d holds the last step solved.
InitialResult initial_midpoint(const Model& m, Data& d, const double* z_t0, const double* u, const double* f_ext,
                               const double* tau_ext, const SolverOptions& opts, double* z0);

}  // namespace dojo
