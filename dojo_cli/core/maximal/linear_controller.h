// The full-state linear controller on the minimal state, evaluated where the steps are (a
// run's input law, as pd_controller.h's: model/controller.py LinearController hands it to the
// core, the rollout evaluates it before each step, and the Python controller calls
// linear_inputs too: one law).
//
//   u = clamp(u0 - K (y - y0), lower, upper)                                 (nu,)
//
// y (2 nf,): the minimal state of the maximal state z, per joint [theta_j; theta_dot_j]
// (coordinates.h maximal_to_minimal: theta at the knot z2, rotations as the rotation vector
// log(q_rel) in (-pi, pi], theta_dot the backward difference over the interval before it,
// the state's midpoint velocities; dojo.maximal_to_minimal's layout, that of the minimal
// gradients A (2 nf, 2 nf) and B (2 nf, nu) a gain is designed on); K (nu, 2 nf) the gain,
// u0 (nu,) the feedforward, y0 (2 nf,) the state it regulates to (an LQR about an
// equilibrium: u0 holds it, K from the Riccati equation; a PD law is a K with one kp and one
// kd per row). The clamp: the actuators' ctrl_range, as the PD law's. The input is held
// over the step (an explicit law: the state at the knot k).
#pragma once

#include <vector>

#include "model.h"

namespace dojo {

struct LinearController {
  std::vector<double> feedforward;   // u0 (nu,)
  std::vector<double> gain;          // K (nu, 2 nf) row-major
  std::vector<double> state_target;  // y0 (2 nf,)
  std::vector<double> lower, upper;  // (nu,) each; empty: no clamp
};

// Throws std::invalid_argument naming the field whose size does not fit the model.
void check_linear_controller(const Model& m, const LinearController& c);

// The inputs u (nu,) of the law at the maximal state z (13 nb,) (midpoint velocities).
// y: (2 nf,) scratch (it holds y - y0 afterwards).
void linear_inputs(const Model& m, const LinearController& c, const double* z, double* y, double* u);

}  // namespace dojo
