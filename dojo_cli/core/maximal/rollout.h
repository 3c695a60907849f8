// Several steps in one call (rollout): the loop of step.h with angles.h between steps.
#pragma once

#include <vector>

#include "data.h"
#include "linear_controller.h"
#include "model.h"
#include "pd_controller.h"

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
  double* inputs = nullptr;  // (k, nu) the inputs each step was taken with (a controller's)
  double* start = nullptr;   // (k, start_record_size) the start record after each step (step.h)
};

// k steps from z in one call, each warm-started with the previous step's joint impulses
// (lambda: (nl,) in, the last step's out; null: start from zero). The inputs: given per
// step (inputs (k, nu), an open-loop run; null: zero), or, with a controller, its law
// evaluated at the state each step starts from (pd_controller.h, or linear_controller.h
// with `linear`; at most one of the two: a closed-loop run, one call a block as an
// open-loop one). Stops after the first step that fails when stop_on_failure. Returns the
// number of steps taken; d holds the last one.
int rollout(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
            const SolverOptions& opts, bool stop_on_failure, const RolloutRecord& out,
            const PDController* controller = nullptr, const LinearController* linear = nullptr);

// Forward and reverse mode through k steps (rollout()'s loop: the same warm starts and
// angles), each step differentiated where it converged (gradients.h). With kappa >= 0
// every step is moved onto the central path s o gamma = kappa (relax_step) and the run
// continues from that relaxed step: a smooth run, differentiated exactly. kinds: the
// parameter kinds (gradients.h) of dtheta and its cotangent. Tangents and cotangents
// per state are A's (12 nb, [x, v, phi, w] per body). Both stop after the first step
// that does not converge (its status in status[i]; rows past the returned count unset).
//
// rollout_jvp: states (k, 13 nb) and tangents (k, 12 nb) of z_1 .. z_k along dz0
// (12 nb), du (k, nu) and dtheta (p); one solve per step on the step's own matrix.
int rollout_jvp(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
                const SolverOptions& opts, double kappa, const std::vector<int>& kinds, const double* dz0,
                const double* du, const double* dtheta, double* states, double* tangents, int* status);

// rollout_vjp: given cotangents (k, 12 nb) of z_1 .. z_k, the cotangents of z0 (12 nb),
// of the inputs (k, nu) and of theta (p). The forward pass records each step's unwrapped
// starting angles, contact set and solution; the backward pass restores step i from them
// (step_setup at z_i), refactorises dr/dw at its solution and makes one transposed solve
// (step_vjp) with the cotangent of z_{i+1} (its own plus what later states passed back).
int rollout_vjp(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
                const SolverOptions& opts, double kappa, const std::vector<int>& kinds, const double* cotangents,
                double* states, int* status, double* z0_bar, double* u_bar, double* p_bar);

}  // namespace dojo
