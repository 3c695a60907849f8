// integrator: variational4 -- a fourth-order variational integrator for joint-only
// scenes: a symmetric composition of the variational step (docs/physics.md, "A fourth-order
// variational integrator").
//
// The variational step Phi_h (step.h) is symmetric: its discrete Lagrangian
// L_d(q0, q1, h) (Dojo's, notes 2.3: the quaternion map, the trapezoidal potential, the
// constraint at the next configuration with its impulse through the Jacobian at the
// current one) is that of a symmetric, time-reversible method (the knot map
// (q_k, p_k) -> (q_k+1, p_k+1) with p_k the knot momentum of physics.md (2); the constraint
// impulses' split only adds a J(q_k)^T mu to p_k, which the next step's impulse absorbs).
// For a symmetric second-order Phi the composition of s stages
//   Psi_h = Phi_{w1 h} o ... o Phi_{w0 h} o ... o Phi_{w1 h},  w0 = 1 - (s - 1) w1 < 0,
// is symmetric and of order four (Hairer, Lubich, Wanner, Geometric Numerical Integration,
// II.4): s = 3, Yoshida's triple jump (Phys. Lett. A 150, 1990); s = 5, Suzuki's
// (Phys. Lett. A 146, 1990), the default: far smaller error constant (the double pendulum
// from horizontal at h = 0.01: energy within 1.9e-4 J over 10 s, the triple jump 8.0e-3 J).
// A composition of symplectic maps is symplectic, and each preserves momentum.
//
// How a sub-step of any size runs on the existing step: a Model's timestep is fixed, so
// two Models are built, with tau_o = w1 h (outer) and tau_i = |w0| h (the middle stage). The negative sub-step is
// the reversed positive one, Phi_{-tau} = R Phi_tau R with R(q, p) = (q, -p) (exact for
// forces that do not depend on velocity: gravity, springs, inputs and external forces
// held over the step; dampers and contacts are refused). Between sub-steps the state is
// the knot momentum p_hat = left_tau(v_mid) + (tau/2) F(q) (F the step's constant
// forces, physics.md (1)-(2), up to J^T mu), handed to the next sub-step of size tau'
// as the midpoint velocity v15 that solves left_tau'(v15) = sigma p_hat - (tau'/2) F(q)
// (the discrete Legendre transform inverted: linear part exactly, angular part by
// Newton's method on 3 x 3). The run's state between macro steps is that of an outer
// sub-step ([x, v_mid, q, w_mid] over the last tau_o), so the first sub-step of each
// macro step is a plain step of the outer Model.
//
// Knot velocities (what storage records): the knot momentum p_hat projected onto the
// joints' velocity constraints in the kinetic-energy metric (RATTLE's projection, HLW
// VII.1.4): p = p_hat + G^T mu with G M^-1 p = 0, G the constraint Jacobian at the knot
// (Data::jg2, columns [v; omega body] per body). Fourth order like the positions.
#pragma once

#include <string>
#include <vector>

#include "data.h"
#include "model.h"

namespace dojo {

// The outer weight w1 of a symmetric composition of `stages` sub-steps (the middle one
// w0 = 1 - (stages - 1) w1 < 0): 3, Yoshida's triple jump w1 = 1 / (2 - 2^(1/3)) = 1.3512,
// w0 = -1.7024; 5, Suzuki's w1 = 1 / (4 - 4^(1/3)) = 0.4145, w0 = -0.6580 (HLW II.4 (4.4),
// (4.5)). Both are of order four; Suzuki's error constant is far smaller (shorter steps,
// a smaller backward one), at 5/3 the solves.
double composition_outer_weight(int stages);
constexpr int kDefaultStages = 5;
// Newton's method inverting a body's angular Legendre transform: iterations and the
// relative tolerance (rounding level: the step's own rows are solved far above it).
constexpr int kLegendreMaxIterations = 30;
constexpr double kLegendreTolerance = 1e-15;
// Relative ridge added to the projection's Gram matrix G M^-1 G^T: redundant
// constraints (a planar four-bar's loop) make it singular; the ridge picks the
// least-norm multiplier, far below the solver's tolerances.
constexpr double kProjectionRidge = 1e-13;

// What variational4 cannot run, or an empty string: contacts, joint limits, dampers
// (not time-reversible) and rotor inertia (its momenta are not in the inverted transform).
std::string variational4_problem(const Model& m);

struct Variational4 {
  // Two Models from one description: its timestep h becomes w1 h and |w0| h.
  explicit Variational4(const ModelInput& in, int stages = kDefaultStages);

  Model outer, inner;
  Data d_outer, d_inner;
  double h;
  int stages;  // 3 or 5 (composition_outer_weight)

  // One macro step of h from z (13 nb,) [x, v_mid, q, w_mid] (the midpoint velocities of an
  // outer sub-step); u (nu,), f_ext, tau_ext (nb, 3) or null, held over the macro step.
  // Writes z_next (13 nb,) in the same form and knot (13 nb,) [x, v, q, omega] with the
  // velocities at the new knot. iterations: Newton iterations of the three sub-steps.
  SolverStatus step(const double* z, const double* u, const double* f_ext, const double* tau_ext,
                    const SolverOptions& opts, double* z_next, double* knot);

  // The state z (13 nb,) whose knot momentum is that of z_t0 (13 nb,) [x, v(0), q, w(0)]:
  // v_mid solves left_tau_o(v_mid) = p0 - (tau_o / 2) F(q0).
  SolverStatus initial(const double* z_t0, const double* u, const double* f_ext, const double* tau_ext, double* z);

  int iterations = 0;
  double residual = 0.0;

 private:
  std::vector<double> force_, target_, zsub_, gram_, rhs_, mom_;
  // tau F(q) of model m at configuration z (velocities ignored) into force_ (6 nb,).
  bool constant_forces(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                       const double* tau_ext);
  // The midpoint velocities (into zsub_) whose left transform at m's timestep is target_.
  bool invert_left(const Model& m);
  // Knot velocities from the knot momentum target_ at the configuration of d (after
  // constant_forces there): projected, into knot.
  void knot_velocities(const Model& m, Data& d, const double* z, double* knot);
};

}  // namespace dojo
