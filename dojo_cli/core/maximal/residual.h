// One step of Dojo's variational integrator in maximal coordinates.
//
// Residual (dojo_engine_notes.md 2.3, 3.3, 3.6, 4.2), with w the unknowns of model.h:
// - body i: DEL(v25, w25) - sum_r Jg_r,i(z2)^T lambda_r - h sum_f Jf_f,i(z2)^T spring_f
//           - h sum_f Ju_f,i(z2)^T u_f - h sum_a [R(q2) F_a; M_a] u_a (body actuators)
//           + h sum_f Jf_f,i^T c_f (Jf(z2) xi25)_f
//           + sum_rotors [right_i(w25) - left_i(w15)] (armature, rotor.h)
//           - sum_limits sigma Jf(z2)^T gamma - sum_friction Jf(z2)^T beta
//           - sum_contacts wrench(z3, gamma)
// - joint row r: g_r(z3) with x3 = x2 + h v25, q3 = q2 qmap(w25); a locked joint's lock
//   rows g_r(z3; z2) hold its configuration at z2 (kinematics.h lock_row), their impulse
//   map the row's Jacobian at z3 = z2;
// - limit (bound b, sign sigma = +1 lower / -1 upper): s - sigma (theta(z3) - b) - tau_l = 0,
//   s gamma = kappa, tau_l the violation it allows at z3 (limit_target below; 0 inside the range);
// - contact: the model's constraint and complementarity rows (contact.h), the gap row
//   d - tau - s with the restitution target tau from z2 (restitution.h);
// - joint friction (a free coordinate with dry friction F > 0, issue 24): maximal
//   dissipation on the coordinate's rate Jf(z2) xi25 with the impulse beta on it, |beta| <= h F,
//   as a box-constrained complementarity problem: the rate split into v+, v- >= 0 and the
//   bounds' slacks s+, s- >= 0, rows
//     s+ v+ = kappa,  s- v- = kappa                               (at the slacks)
//     s+ - h F + beta = 0,  s- - h F - beta = 0,  Jf xi25 - v- + v+ = 0   (at v+, v-, beta)
//   and the body rows receive -Jf(z2)^T beta, acting as the limits' and dampers' impulses do.
//   At kappa = 0: sliding forward (Jf xi25 > 0) gives v- > 0, s- = 0, beta = -h F; sticking
//   gives v+ = v- = 0 with |beta| <= h F what the other impulses need. It is the friction of
//   Dojo's linearised cone in one dimension (|beta| <= mu gamma with mu gamma = h F), in
//   two orthant pairs and one free impulse instead of that cone's three pairs (b+, b-, psi),
//   whose b+ + b- is undetermined while the joint sticks (a degenerate solution): on
//   talos_full_v2 dropped limp the cone's form took 23 iterations a step (median; p90 72),
//   this one 18 (p90 39), without friction 16 (p90 30). The interior point treats the pairs
//   as it treats the limits'.
// Constraint impulses act through the constraint Jacobian at the current
// configuration and the constraints hold at the next one; contact wrenches act at
// the next configuration (Dojo's choices). Springs are the exact gradient of
// 1/2 k (theta - theta0)^2 at z2 (the discrete potential h (V(q_k) + V(q_k+1)) / 2
// of the two steps meeting at z2: second order, like gravity). Dampers are Rayleigh
// dissipation on the joint velocity through Jf(z2), linear in the unknowns, in one of
// two forms per free coordinate (docs/physics.md, "Joints"):
// - midpoint (second order): each step's impulse h c Jf xi is split between its two
//   ends (discrete Lagrange-d'Alembert forcing), so z2 receives
//   (h c / 2) Jf(z2)^T Jf(z2) (xi15 + xi25); Jf (xi15 + xi25) / 2 = theta_dot(t2) + O(h^2);
// - implicit (first order, L-stable): h c Jf(z2)^T Jf(z2) xi25, the whole impulse on
//   the unknown velocity (backward Euler on the damper).
#pragma once

#include <algorithm>
#include <cmath>

#include "data.h"
#include "model.h"
#include "recovery.h"
#include "restitution.h"

namespace dojo {

// Dojo clips |w|^2 at 3.9/h^2 (the integrator map needs |w| < 2/h, notes 5.3 f).
constexpr double kMaxAngularSpeedSq = 3.9;

// Limits violated at the step's start (docs/physics.md, "Joints outside their range").
// A joint that starts the step outside its range, by e2 = -sigma (theta(z2) - b) > 0 (a file
// whose pose violates its ranges: robosuite's Jaco, three joints 0.5-1.1 rad out; Meta-World's
// Sawyer, 0.5 rad), would be put on the bound within the step at e2 / h (250 rad/s for 0.5
// rad at h = 2 ms), which spun light links past what a step can carry (no solution, and
// substeps only raise the speed). The row allows the violation recovery.h's recurrence
// gives instead, from e2 and its rate over the last step e_dot = -sigma Jf(z2) xi15 (the
// dampers' previous_rate). The row can only push (gamma >= 0): a joint that moves in faster
// on its own is not held back. Inside the range (e2 <= band) tau_l = 0: Dojo's hard limit,
// bit for bit (gradients against finite differences failed on pendulum_limit at rest with a
// recovery starting at the bound). tau_l is a constant of the step (from z2): the gradients
// add its derivatives in z2 (state_residual_jacobian).
template <class T>
inline T limit_target(double sigma, double bound, const T& theta2, const T& rate15, double h) {
  return recovered_violation<T>(-sigma * (theta2 - bound), -sigma * rate15, h);
}

// Infinity norm of n numbers; NaN if any is NaN (std::max would drop it, and Newton's
// line search would then accept a candidate whose residual is NaN as "smaller").
inline double inf_norm(const double* p, int n) {
  double out = 0.0;
  for (int i = 0; i < n; ++i) {
    const double a = std::fabs(p[i]);
    if (a != a) return a;
    out = std::max(out, a);
  }
  return out;
}

// The weight of damper f's unknown velocity in the body residual: h c (implicit) or
// h c / 2 (midpoint, whose other half multiplies the known xi15).
inline double damper_weight(const Model& m, int f) {
  return (m.damper_implicit[f] ? 1.0 : 0.5) * m.h * m.damper[f];
}

// Jf . xi15 of a joint's 12-vector jf: its rate at the state's midpoint velocities.
inline double previous_rate(const Model& m, const Data& d, int j, const double* jf) {
  const int bodies[2] = {m.parent[j], m.child[j]};
  double out = 0.0;
  for (int s = 0; s < 2; ++s) {
    if (bodies[s] == kWorld) continue;
    for (int k = 0; k < 3; ++k)
      out += jf[6 * s + k] * d.v15[3 * bodies[s] + k] + jf[6 * s + 3 + k] * d.w15[3 * bodies[s] + k];
  }
  return out;
}

// Whether n numbers are all finite.
inline bool all_finite(const double* p, int n) {
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

// Load the step's inputs into d and compute what is constant over the solve.
// z: (13 nb,) [x2, v15, q2, w15] per body; u: (nu,) actuator inputs or null (zero); f_ext, tau_ext:
// (nb, 3) or null. Returns false when any input is not finite (nothing is computed).
bool step_setup(const Model& m, Data& d, const double* z, const double* u, const double* f_ext, const double* tau_ext);

// The residual at w (complementarity rows with kappa = 0) into r.
void step_residual(const Model& m, Data& d, const double* w, double* r);

// The configuration at z3 of every body from the unknowns w into d.x3, d.q3, d.rot3 (and
// the integrator map's Jacobian into d.mw when `jacobians`).
void next_configuration(const Model& m, Data& d, const double* w, bool jacobians);

// The integrator map's Jacobian dt3/dw25 of every body at the unknowns w into d.mw.
void integrator_map_jacobians(const Model& m, Data& d, const double* w);

// Whether step_residual leaves joint j's Jacobians at z3 to step_matrix: the residual
// keeps the joint's configuration (d.kin3) and computes its rows' values alone, and the
// matrix at the same unknowns completes the kinematics' and rows' Jacobians from it (the
// same operations, so the same bits). A Newton solve evaluates the residual once more than
// the matrix (at the converged iterate, and at any rejected line-search candidate), whose
// Jacobians no one reads: by operation count they are some 60% of a revolute joint's work
// in the residual (the 20-link chain's dojo.step 5% faster). For the joints whose rows
// have a value-only form (Dojo's quaternion rotation, kinematics.h joint_row_value) and no
// limit rows (those keep their Jacobians in d.jl3, as before).
inline bool deferred_joint_jacobians(const Model& m, int j) {
  return m.joint_rotation[j] == kRotationQuaternion && m.joint_limit_start[j] == m.joint_limit_start[j + 1];
}

// Whether d.x3, d.q3, d.rot3 and the rows' Jacobians d.jg3, d.jl3 are those of the
// unknowns w: the last step_residual was evaluated at w's body velocities (bit for bit)
// and nothing has moved the configuration since (kinematics once per iterate, issue 28).
bool rows3_at(const Model& m, const Data& d, const double* w);

// Evaluate contact c at the unknowns w; d.x3, d.q3 (and d.mw for Jacobians) must be
// those of w (step_residual / step_matrix set them). The result is d.contact_eval.
const ContactEval& evaluate_step_contact(const Model& m, Data& d, const double* w, int c, ContactOutput output);

// Body b at z2 (x2, q2, v15, w15) as the restitution target reads it (null for the world).
RestitutionBody restitution_body(const Data& d, int b);

// Each contact's record at the unknowns w (distance, impulses, slip) into d.contact_*.
void step_contact_records(const Model& m, Data& d, const double* w);

// Scale angular velocities into |w| < 2/h (Dojo's clipping); in place.
void step_project(const Model& m, double* w);

// [x3, v25, q3 (normalised), w25] per body from the unknowns w, into d.z_next.
void step_next_state(const Model& m, Data& d, const double* w);

}  // namespace dojo
