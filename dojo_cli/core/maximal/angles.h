// Unwrapped joint angles across steps (kinematics.h limit_row, angle_branch).
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// After a step solved in d: the unwrapped angles of its z3 (limited angle coordinates,
// kinematics.h limit_row) become Data.angle_ref, where the next step starts. Runs call
// it after each step (rollout does); a stateless step leaves Data.angle_ref alone.
void advance_angles(const Model& m, Data& d);

// The unwrapped angles (Model.angle_unwrapped; other entries of theta untouched) of the
// configuration in state z (13 nb,) into theta (nf,): from the previous state z_prev and
// its unwrapped angles theta_prev as a step measures them (kinematics.h angle_branch), or
// where a step with no carried angle starts (start_angle) when z_prev is null. (A run's
// record computes the same in one pass over its states, run_record.h CoordinateRecord; this
// per-state form is its reference, _core.testing.unwrapped_coordinates_by_state.)
void unwrap_angles(const Model& m, const double* z, const double* z_prev, const double* theta_prev, double* theta);

}  // namespace dojo
