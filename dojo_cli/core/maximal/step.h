// One step of Dojo's variational integrator in maximal coordinates.
//
// Residual (dojo_engine_notes.md 2.3, 3.3, 3.6, 4.2), with w the unknowns of model.h:
// - body i: DEL(v25, w25) - sum_r Jg_r,i(z2)^T lambda_r - h sum_f Jf_f,i(z2)^T spring_f
//           - h sum_f Ju_f,i(z2)^T u_f - h sum_a [R(q2) F_a; M_a] u_a (body actuators)
//           + h sum_f Jf_f,i^T c_f (Jf(z2) xi25)_f
//           - sum_limits sigma Jf(z2)^T gamma - sum_contacts wrench(z3, gamma)
// - joint row r: g_r(z3) with x3 = x2 + h v25, q3 = q2 qmap(w25); a locked joint's lock
//   rows g_r(z3; z2) hold its configuration at z2 (kinematics.h lock_row), their impulse
//   map the row's Jacobian at z3 = z2;
// - limit (bound b, sign sigma = +1 lower / -1 upper): s - sigma (theta(z3) - b) = 0, s gamma = kappa;
// - contact: the model's constraint and complementarity rows (contact.h), the gap row
//   d - tau - s with the restitution target tau from z2 (restitution.h).
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
#include "restitution.h"

namespace dojo {

// Dojo clips |w|^2 at 3.9/h^2 (the integrator map needs |w| < 2/h, notes 5.3 f).
constexpr double kMaxAngularSpeedSq = 3.9;
// Regularisation of the joint-impulse diagonal (Dojo's REG, notes 1 and 3.3): redundant
// constraints (a planar loop closed by revolute joints constrains out-of-plane motion
// twice) make the Newton matrix singular; with the Schur complement Jg A^-1 Jg^T
// positive semidefinite, +REG I makes it definite without changing the residual.
constexpr double kConstraintRegularization = 1e-10;
// Interior-point starting value of joint-limit slacks and impulses (Dojo: reset to 1).
constexpr double kLimitStart = 1.0;

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

// Load the step's inputs into d and compute what is constant over the solve.
// z: (13 nb,) [x2, v15, q2, w15] per body; u: (nu,) actuator inputs or null (zero); f_ext, tau_ext:
// (nb, 3) or null. Returns false when any input is not finite (nothing is computed).
bool step_setup(const Model& m, Data& d, const double* z, const double* u, const double* f_ext, const double* tau_ext);

// The residual at w (complementarity rows with kappa = 0) into r.
void step_residual(const Model& m, Data& d, const double* w, double* r);

// The Newton matrix at w into d.matrix (structural blocks).
void step_matrix(const Model& m, Data& d, const double* w);

// Evaluate contact c at the unknowns w; d.x3, d.q3 (and d.mw for Jacobians) must be
// those of w (step_residual / step_matrix set them). The result is d.contact_eval.
const ContactEval& evaluate_step_contact(const Model& m, Data& d, const double* w, int c, ContactOutput output);

// Body b at z2 (x2, q2, v15, w15) as the restitution target reads it (null for the world).
RestitutionBody restitution_body(const Data& d, int b);

// Each contact's record at the unknowns w (distance, impulses, slip) into d.contact_*.
void step_contact_records(const Model& m, Data& d, const double* w);

// Factorise d.matrix: in the model's elimination order, or in the robust one (model.h)
// when `robust` or when the first fails. Returns false when neither succeeds.
bool factor_matrix(const Model& m, Data& d, bool robust = false);

// Solve with the last factorisation (n x nrhs column-major right-hand sides, in place).
void solve_factored(const Model& m, const Data& d, double* b, int nrhs = 1, bool transpose = false);

// Scale angular velocities into |w| < 2/h (Dojo's clipping); in place.
void step_project(const Model& m, double* w);

// Warm start: previous midpoint velocities, lambda0 (or zero), cone variables at
// Dojo's starting values strictly inside their cones (the contacts in the solve:
// d.contact_active; the others' unknowns are left as they are).
void step_initial_guess(const Model& m, Data& d, const double* lambda0);

// Contact margins. A contact with a finite margin (ContactParams::margin) joins a
// step's solve only when its distance at the predicted configuration (x2 + h v15,
// q2 qmap(w15): the initial guess) is within the margin: MuJoCo's margin, which keeps
// far contacts out of its constraint solver. A left-out contact's unknowns are held at
// 0 (no impulse), its residual rows are 0 = 0 and its diagonal block is the identity,
// so the interior point neither evaluates it nor counts it (d.active_degree), and the
// storage keeps its shape. After the solve, a left-out contact whose distance at the
// solution is not positive joins and the step is solved again (d.solves counts the
// solves); so at the returned solution every left-out contact is separated, and with
// s = its distance, gamma = 0 it satisfies its rows of the full problem (s gamma = 0):
// the solution is one of the whole contact set's, and the step's derivatives
// (gradients.h) are those of the solve with this contact set, which is locally
// constant (a separated contact stays separated under a small change of the inputs).
// What differs: a left-out contact has exactly no impulse, where in the solve it would
// keep kappa / distance (the complementarity tolerance over its gap), and the relaxed
// gradients (kappa > 0) see no smoothing from it. Without margins d.contact_active is
// all 1 and the step is the same computation as before margins existed.
//
// select_contacts: the contact set from the initial guess in d.w (sets d.contact_active
// and leaves the others out); leave_out_contacts: the unknowns of the left-out contacts
// to 0 and d.active_degree; admit_touching_contacts: the left-out contacts whose
// d.contact_distance (step_contact_records at the solution) is not positive join the
// set; whether any did.
void select_contacts(const Model& m, Data& d);
void leave_out_contacts(const Model& m, Data& d);
bool admit_touching_contacts(const Model& m, Data& d);

// [x3, v25, q3 (normalised), w25] per body from the unknowns w, into d.z_next.
void step_next_state(const Model& m, Data& d, const double* w);

// Damped Newton on the step's residual (no inequalities): each iteration factorises
// the Newton matrix, takes the full step, then backtracks by ls_scale (at most
// max_ls times) until the residual's infinity norm decreases (notes 5.3 f).
SolverStatus newton(const Model& m, Data& d, const SolverOptions& opts);

// One whole step: setup, warm start, solve, next state. The result is in d.
SolverStatus step(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                  const double* tau_ext, const double* lambda0, const SolverOptions& opts);

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
// After a step solved in d: the unwrapped angles of its z3 (limited angle coordinates,
// kinematics.h limit_row) become Data.angle_ref, where the next step starts. Runs call
// it after each step (rollout does); a stateless step leaves Data.angle_ref alone.
void advance_angles(const Model& m, Data& d);

// The unwrapped angles (Model.angle_unwrapped; other entries of theta untouched) of the
// configuration in state z (13 nb,) into theta (nf,): from the previous state z_prev and
// its unwrapped angles theta_prev as a step measures them (kinematics.h angle_branch), or
// where a step with no carried angle starts (start_angle) when z_prev is null.
void unwrap_angles(const Model& m, const double* z, const double* z_prev, const double* theta_prev, double* theta);


int rollout(const Model& m, Data& d, const double* z, int k, const double* inputs, double* lambda,
            const SolverOptions& opts, bool stop_on_failure, const RolloutRecord& out);

}  // namespace dojo
