// Exact derivatives of one step by the implicit function theorem (dojo_engine_notes.md 6).
//
// The step solves r(w; z2, u, theta) = 0 for the unknowns w. At the solution,
// dw/dp = -(dr/dw)^-1 dr/dp for any p among the state z2, the inputs u and the
// parameters theta. dr/dw is the Newton matrix at the solution itself, refactorised
// with the raw rows (the solver's last factorisation is one iterate behind and its
// second-order-cone rows are Nesterov-Todd scaled); one factorisation serves every
// right-hand side. The contacts are eliminated in closed form (contact_elimination.h) where
// their growth allows and the solves refined against the whole matrix; otherwise the block
// LU in the robust order (model.h) factorises it. Everything is evaluated at the state the step started from (Dojo
// differentiates at the post-step state, notes 6).
//
// Tangent coordinates (docs/formats.md), per body [x, v, phi, w] on inputs and outputs,
// with q -> q [sqrt(1 - |phi|^2), phi]; the physics' rotation tangent t
// (q -> q exp(t/2)) is t = 2 phi to first order.
//
// dr/dz2 has five parts:
// - the previous momentum (v15, w15): minus the left momentum's Jacobian;
// - the next configuration x3 = x2 + h v25, q3 = q2 qmap(w25) moves with z2:
//   dx3/dx2 = I, dt3/dphi2 = 2 R(qmap(w25))^T; every quantity evaluated at z3 (joint
//   constraints, limit rows, contact rows and wrenches) has its exact z3 Jacobian from
//   the step, chained through this map;
// - a locked joint's lock rows hold its configuration at z2 (kinematics.h lock_row):
//   their value's derivative in that reference, with dual numbers as below;
// - the impulse maps evaluated at z2 (Jg(z2)^T lambda, springs, dampers, inputs, limit
//   impulses, all J(z2)^T times a vector): their derivative needs the second derivative
//   of the joint kinematics, taken by instantiating the templated kinematics
//   (kinematics.h) with dual numbers seeded on the joint's 12 tangents: the same code
//   as the values, differentiated exactly.
// Parameters: body mass and inertia, gravity, joint spring and damper coefficients,
// and per contact the friction coefficient, sphere radius and offset, and restitution.
// A contact's restitution target tau(z2) (restitution.h) adds -d tau/dz2 and
// -d tau/dtheta (offset, radius, restitution, gravity) to its gap row.
//
// The joint-impulse regularisation (newton_matrix.h) is kept out of every solve: the exact
// matrix is factorised when its joint-impulse pivots are far above the regularisation
// (kExactPivotMargin), and used with one solve and one refinement sweep; otherwise (redundant
// joint rows make it singular) the regularised matrix is, and every solve is refined
// against the unregularised one (a sweep kept only when it halves the residual).
//
// Smoothness (the Dojo paper's relaxed gradients): with kappa >= 0 the step is first
// re-solved on the central path s o gamma = kappa (Newton on the relaxed system,
// staying inside the cones) and differentiated there.
#pragma once

#include <vector>

#include "data.h"
#include "model.h"

namespace dojo {

// Parameter kinds, in dojo_cli.model.parameters.PARAMETER_KINDS order; each expands
// to one column per instance: mass (nb), inertia (6 nb: xx yy zz xy xz yz), gravity (3),
// spring (nf), damper (nf), friction (nc), radius (nc), offset (3 nc), restitution (nc).
enum class ParameterKind : int { Mass = 0, Inertia, Gravity, Spring, Damper, Friction, Radius, Offset, Restitution };
int parameter_count(const Model& m, ParameterKind kind);

// Relaxation onto the central path: Newton iterations, tolerance (relative to
// max(1, kappa)), and the lift of cone variables off their boundary (times kappa).
constexpr int kRelaxIterations = 60;
constexpr double kRelaxTolerance = 1e-13;
constexpr double kRelaxLift = 1e-2;
constexpr int kRefinementSweeps = 3;
// The exact matrix dr/dw is factorised and used (gradients.cpp, factor_at_solution) when its
// smallest joint-impulse pivot is at least this many times the regularisation: refining the
// regularised solve shrinks its error by about REG / pivot a sweep, so above 1e4 its
// kRefinementSweeps sweeps end on this solution to rounding (1e-4^4 = 1e-16).
constexpr double kExactPivotMargin = 1e4;
// The condensed factorisation's solves (gradients.cpp, solve_condensed_refined): refinement
// sweeps at most, and the normwise backward error every column must have reached before the
// last: about the block LU's own. Over the box's toss (500 steps, transposed solves) the
// block LU's solve and sweep reached 3e-19 (median) to 2e-17; the closed form's first solve
// 3e-19 to 2e-14, after one sweep at most 1e-17 (two steps took a second sweep).
constexpr int kCondensedRefinementSweeps = 4;
constexpr double kCondensedBackwardError = 1e-15;

struct GradientRequest {
  bool state = true;
  bool input = true;
  std::vector<int> parameters;  // ParameterKind values
  double kappa = -1.0;          // < 0: differentiate where the solver stopped
  // Other coordinates (minimal ones: coordinates.h's conversion Jacobians). With
  // state_map S (12 nb x state_map_cols, row-major) the state is z2 = z2(s) with
  // dz2 = S ds and A's columns are ds: the right-hand sides are dr/dz2 S, one solve per
  // column of S (project first: 2 nf solves for a chain, not 12 nb). With output_map O
  // (output_rows x 12 nb, row-major) every output is dy3 = O dz3 (A, B and P get
  // output_rows rows). Null: the maximal tangent.
  const double* state_map = nullptr;
  int state_map_cols = 0;
  const double* output_map = nullptr;
  int output_rows = 0;
};

// Derivatives of the step last solved with d (step() must have returned; d.w is its
// solution). Writes A (12 nb x 12 nb), B (12 nb x nu), P (12 nb x p), row-major, into
// the buffers given for the requested parts. With kappa >= 0 the solution is moved
// onto the central path first and d.z_next is updated to that step's result.
// Returns the central-path value the derivatives were taken at (mean s.gamma; 0
// without inequalities). Throws std::runtime_error if the matrix cannot be factorised.
double step_gradients(const Model& m, Data& d, const GradientRequest& request, double* A, double* B, double* P);

// Move the solution in d (step() returned) onto the central path s o gamma = kappa and
// update d.z_next to that step's result (nothing without inequalities or with kappa < 0).
void relax_step(const Model& m, Data& d, double kappa);

// Products with a step's derivatives, without forming them (rollout.h's forward and
// reverse mode), on the solution in d (step() returned, or restored: step_setup, then
// d.contact_active and d.w as the step left them). Tangents as A's (12 nb per state).
// - step_jvp: dz3 = A dz2 + B du + P dtheta (dz2 (12 nb), du (nu), dtheta (p,) for the
//   kinds; null: zero), one solve;
// - step_vjp: zbar2 = A^T zbar3, ubar = B^T zbar3, pbar = P^T zbar3 (null: not wanted),
//   one transposed solve (dr/dw)^T y = T^T zbar3 (T: dw -> dz3), then
//   zbar2 = D^T zbar3 - (dr/dz2)^T y, ubar = -(dr/du)^T y, pbar = -(dr/dtheta)^T y.
// Both refactorise dr/dw at the solution (as step_gradients) and return its kappa.
double step_jvp(const Model& m, Data& d, const std::vector<int>& kinds, const double* dz2, const double* du,
                const double* dtheta, double* dz3);
double step_vjp(const Model& m, Data& d, const std::vector<int>& kinds, const double* zbar3, double* zbar2,
                double* ubar, double* pbar);
int parameter_columns(const Model& m, const std::vector<int>& kinds);

// One step from a minimal state and its derivatives in minimal coordinates, in one call
// (issue 28 item 1): z2 = minimal_to_maximal(y) (coordinates.h), the step from Dojo's
// starting point (d.impulse_scale = 1, no warm start: dojo.step's stateless step), with
// kappa >= 0 its move onto the central path, then step_gradients with the minimal
// directions as the right-hand sides (state_map dz2/dy) and the rows mapped to the minimal
// state at the step's result (output_map dy3/dz3), both maps' analytic Jacobians kept in
// d. request.state_map and output_map are ignored (these are the maps). y (2 nf,), u (nu,)
// or null; writes y_next (2 nf,), A (2 nf x 2 nf), B (2 nf x nu), P (2 nf x p) row-major
// for the requested parts, and w_solved (n,) the solver's solution before any relaxation
// (null: not wanted). Returns the step's status and (second) the central-path value the
// derivatives were taken at; the derivatives are taken whatever the status (a step that
// did not converge is the caller's to refuse). Throws std::runtime_error as step_gradients.
struct MinimalStepGradients {
  SolverStatus status;
  double kappa;
};
MinimalStepGradients minimal_step_gradients(const Model& m, Data& d, const double* y, const double* u,
                                            const SolverOptions& opts, const GradientRequest& request,
                                            double* y_next, double* A, double* B, double* P, double* w_solved);

// The two halves of step_gradients' state part, for a caller that needs only some
// columns (initial.h): dr/dz2 at the solution w accumulated into out (n x 12 nb,
// column-major, tangent columns as A's), with step_matrix(m, d, w) assembled first; and
// x = M^-1 b for the matrix in d.matrix, factorised (factor_matrix), without the
// joint-impulse regularisation (k columns, n x k column-major, in place).
void state_residual_columns(const Model& m, Data& d, const double* w, double* out);
void solve_unregularized(const Model& m, Data& d, double* b, int k);

}  // namespace dojo
