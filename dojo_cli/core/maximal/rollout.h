// Several steps in one call (rollout): the loop of step.h with angles.h between steps.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Where rollout() records each step (row k of each array; null: not recorded).
struct RolloutRecord {
  double* states = nullptr;           // (k, 13 nb) the state each step reaches
  int* iterations = nullptr;          // (k,)
  double* residual = nullptr;         // (k,)
  int* status = nullptr;              // (k,) SolverStatus codes
  double* complementarity = nullptr;  // (k,)
  int* singular_node = nullptr;       // (k,) Data::singular_node of a singular_matrix step, else -1
  double* impulses = nullptr;         // (k, nl) joint impulses
  double* contact_distance = nullptr;          // (k, nc)
  double* contact_normal_impulse = nullptr;    // (k, nc)
  double* contact_friction_impulse = nullptr;  // (k, nc, 2)
  double* contact_slip = nullptr;              // (k, nc, 2)
};

// k steps from z in one call (an open-loop run: the inputs are given per step), each
// warm-started with the previous step's joint impulses (lambda: (nl,) in, the last
// step's out; null: start from zero). Stops after the first step that fails when
// stop_on_failure. Returns the number of steps taken; d holds the last one.
int rollout(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
            const SolverOptions& opts, bool stop_on_failure, const RolloutRecord& out);

}  // namespace dojo
