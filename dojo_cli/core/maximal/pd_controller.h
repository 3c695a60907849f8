// The PD controller on minimal coordinates, evaluated where the steps are (a run's input
// law: model/controller.py PDController and ClampedInputs hand it to the core, and the
// rollout evaluates it before each step, so a PD-controlled run crosses into the core once
// per block; the Python controllers call pd_inputs too: one law).
//
//   tau = kp (target - theta) + kd (velocity_target - theta_dot)        (nf,)
//   u   = clamp(O tau, lower, upper)                                      (nu,)
//
// theta, theta_dot: the free coordinates of the state z and their velocities, as
// coordinates.h minimal_coordinates_and_velocities gives them (theta at the knot z2,
// theta_dot the backward difference over the interval before it, the state's midpoint
// velocities); O (nu, nf): the joint forces onto the inputs (a scene's joint actuators:
// 1 / gain), none when the inputs are the joint forces (nu = nf); the clamp: the
// actuators' ctrl_range (MuJoCo's ctrlrange: the control clipped before the gain).
// The input is held over the step (an explicit law: the stiffness at the knot k).
#pragma once

#include <vector>

#include "model.h"

namespace dojo {

struct PDController {
  std::vector<double> kp, kd, target, velocity_target;  // (nf,) each
  std::vector<double> output;                           // (nu, nf) row-major; empty: u = tau (nu = nf)
  std::vector<double> lower, upper;                     // (nu,) each; empty: no clamp
};

// Throws std::invalid_argument naming the field whose size does not fit the model.
void check_pd_controller(const Model& m, const PDController& c);

// The inputs u (nu,) of the law at the maximal state z (13 nb,) (midpoint velocities).
// theta, rate: (nf,) scratch (they hold z's coordinates and velocities afterwards).
void pd_inputs(const Model& m, const PDController& c, const double* z, double* theta, double* rate, double* u);

}  // namespace dojo
