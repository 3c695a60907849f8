// Data: the state of one step and every scratch buffer, allocated once per Model
// (MuJoCo's mjData discipline): a step allocates nothing.
#pragma once

#include <limits>
#include <vector>

#include "linalg/block_lu.h"
#include "math/reverse.h"
#include "contact.h"
#include "kinematics.h"
#include "model.h"

namespace dojo {

// The per-step solver's options (Dojo's SolverOptions: names and defaults, notes 5.1).
struct SolverOptions {
  double rtol = 1e-6;   // equality residual tolerance (infinity norm)
  double btol = 1e-4;   // complementarity tolerance
  // rtol, btol relative to the scene's scales (each residual row in its own unit,
  // tolerances.h) or absolute (SI units, every row alike: the meaning before issue 27)
  bool relative = true;
  int max_iter = 50;    // iterations per step
  int max_ls = 10;      // backtracking steps per iteration
  double ls_scale = 0.5;  // step-length factor per backtracking step (Dojo ignores it and halves)
  double undercut = std::numeric_limits<double>::infinity();  // centering floor btol / undercut
  int no_progress_max = 3;          // iterations without progress before the undercut grows
  double no_progress_undercut = 10.0;  // factor applied to undercut then
  // start a step that continues the previous converged step of the same Data from that
  // step's cone variables, moved back off the cones' boundaries (step.h, "Warm start";
  // the default since issue 28); false: every step from Dojo's starting point
  bool warm_start = true;
};

// Outcome of one step's solve (dojo_cli.solver.status.SolverStatus has the same values).
enum class SolverStatus : int {
  Success = 0,
  MaxIterations = 1,
  LineSearchFailure = 2,
  NonFinite = 3,       // the state, an input or a force is NaN or infinite: nothing was solved
  SingularMatrix = 4,  // the Newton matrix could not be factorised (a zero or non-finite pivot)
  Diverged = 5,        // the solve converged to a state beyond the model's bounds (Model::state_bound)
};
constexpr int kSolverStatuses = 6;
// The statuses' names, by code (dojo_cli._core.SOLVER_STATUSES; the storage writes them).
constexpr const char* kSolverStatusNames[kSolverStatuses] = {
    "success", "max_iterations", "line_search_failure", "non_finite", "singular_matrix", "diverged"};

// Columns of one iteration's log line (--verbose): Dojo's table.
// (residual: infinity norm of the whole residual; rvio/bvio: of its equality and
// complementarity rows; Newton has no complementarity rows, its rvio is the residual.)
enum LogColumn : int {
  kLogIteration = 0,
  kLogResidual,
  kLogComplementarity,
  kLogAlpha,
  kLogKappa,
  kLogStep,
  kLogRvio,
  kLogColumns
};

struct Data {
  explicit Data(const Model& m);

  // ---- the step being solved: state z2 = [x2, v15, q2, w15] per body, inputs
  std::vector<double> x2, v15, q2, w15;  // (nb,3) (nb,3) (nb,4) (nb,3)
  std::vector<double> u;                 // (nf,) joint input per free coordinate (the joint actuators' sum)
  std::vector<double> u_act;             // (nu,) the actuators' inputs as given
  std::vector<double> f_ext, tau_ext;    // (nb,3) world-frame forces, body-frame torques

  // ---- constant over the solve (from z2)
  std::vector<double> constant;   // (6 nb,) previous momentum, gravity, external, springs, inputs
  std::vector<double> jg2;        // (nl, 12) constraint Jacobians at z2 (the impulse maps)
  std::vector<double> jf2;        // (nf, 12) minimal-coordinate Jacobians at z2 (springs, dampers, limits)
  // Angles of any size (kinematics.h limit_row), for the coordinates Model.angle_unwrapped:
  // - angle_ref (nf,): the unwrapped angles at the state the next step starts from, NaN
  //   where not known. Runs carry it from step to step (advance_angles), as they carry
  //   the warm-start impulses; a step with NaN there starts from start_angle.
  // - angle2 (nf,), qrel2 (nj, 4): the step's unwrapped angles at z2 and the joints'
  //   q_rel at z2 (step_setup; for limited angle coordinates only).
  std::vector<double> angle_ref, angle2, qrel2;
  // Locked joints' configuration at z2, the reference their lock rows hold (kinematics.h
  // lock_row): translational displacement (nj, 3) and relative rotation (nj, 4); set by
  // step_setup for locked joints only.
  std::vector<double> lock_d2, lock_q2;
  std::vector<double> rot2;       // (nb, 9) R(q2)
  std::vector<double> contact_target;  // (nc,) targets tau of the gap rows: restitution, or a recovery from inside (restitution.h)
  std::vector<double> limit_target;    // (nlim,) violations tau_l the limit rows allow at z3 (residual.h)

  // ---- contacts in this step's solve (margins.h): 1 in the solve, 0 left
  // out (its unknowns held at 0, its rows 0 = 0, its matrix block the identity);
  // all 1 for a model without margins
  std::vector<uint8_t> contact_active;  // (nc,)
  int active_degree = 0;                // the interior point's degree over the contacts in the solve
  double impulse_scale = 1.0;           // starting impulse scale of the next step's solve (step.h, "Restarts")
  int restarts = 0;                     // restarts of the last step's solve (step.h, "Restarts")
  // The interior point's line search keeps a filter (interior_point.h, step 5): set for a
  // restart's solves (step.h, "Restarts"), never on Dojo's first attempt.
  bool filter_acceptance = false;
  bool recentre_jams = false;  // a restart's third sweep re-centres jammed cones (interior_point.h)
  bool centrality_correctors = false;  // a restart's fourth sweep adds Gondzio's correctors (interior_point.h)
  std::vector<double> filter;  // (max_iter, 2) (rvio, bvio) of the iterates accepted in this solve
  // A step whose every attempt fails ends at the attempt that came closest (step.cpp,
  // kept_attempt): its unknowns, contacts in the solve, status and violations.
  std::vector<double> w_kept;            // (n,)
  std::vector<uint8_t> contact_active_kept;  // (nc,)
  int solves = 0;                       // solves of the last step (1 + re-solves after a left-out contact touched)
  // Warm start (step.h, "Warm start"): the last converged step's unknowns, its contact
  // set and the state it reached; a step from that state starts its cones there.
  // warm_valid is false in a new Data, after a step that did not converge, and when a
  // caller resets it (a stateless step).
  std::vector<double> w_warm;              // (n,)
  std::vector<uint8_t> contact_active_warm;  // (nc,)
  std::vector<double> z_warm;              // (13 nb,)
  bool warm_valid = false;
  bool warm_started = false;   // the last step's first attempt started warm
  bool warm_fell_back = false;  // ... and failed, and the step was solved from Dojo's start

  // ---- iterate
  std::vector<double> w, r, delta, cand, rc;  // (n,)
  std::vector<double> x3, q3, rot3, mw;       // next configuration, R(q3), dt3/dw25 per body
  // The rows' Jacobians at z3 that step_residual computed with their values (kinematics
  // evaluated once per iterate: step_matrix at the same unknowns reads them instead of
  // evaluating the joints' kinematics again): joint rows (nl, 12), limit rows (nlim, 12),
  // the body velocities (6 nb,) they were computed at, and whether they are still those of
  // d.x3, d.q3 (any next_configuration and step_setup clears it).
  std::vector<double> jg3, jl3, rows3_w;
  // (nj,) the configuration at z3 of the joints whose Jacobians step_residual leaves to
  // step_matrix (residual.h deferred_joint_jacobians; valid with the rows, rows3_valid)
  std::vector<JointKinematics<double>> kin3;
  bool rows3_valid = false;
  std::vector<double> matrix;                 // structural block values of the Newton matrix
  BlockLU lu;                                 // its factorisation in the model's order
  BlockLU lu_robust;                          // ... in the robust order (model.h, blocks_robust)
  bool lu_is_robust = false;                  // it is lu_robust's
  bool lu_exact = false;  // it is of the matrix without the joint-impulse regularisation (gradients.cpp)
  // The interior point's factorisation with the contacts eliminated in closed form
  // (factor.h factor_matrix_condensed): the bodies' and joints' blocks with the contacts'
  // Schur complements (Model::blocks_condensed' layout), their LU, each contact's
  // elimination record (nc, kContactEliminationSize), and whether the last factorisation is this one.
  std::vector<double> matrix_condensed;
  BlockLU lu_condensed;
  std::vector<double> contact_elimination;
  bool lu_is_condensed = false;
  // The gradients factorise dr/dw at the solution with the contacts eliminated in closed
  // form where they can (gradients.cpp, factor_at_solution); false: the robust order's
  // block LU always (what it did before: tests and benchmarks compare the two).
  bool gradients_condensed = true;
  // The refinement sweeps a solve with that factorisation may take before the block LU takes
  // over (gradients.cpp, solve_condensed_refined; 0: every solve falls back, a test's way to
  // take that path). The constructor sets kCondensedRefinementSweeps (gradients.h).
  int gradients_condensed_sweeps = 0;

  // ---- interior point scratch (interior_point.cpp)
  std::vector<double> target, d_aff, rhs;  // (n,)
  std::vector<double> soc_w, soc_w_inv, soc_lambda;  // (ns, 9), (ns, 9), (ns, 3): Nesterov-Todd scaling

  // ---- contacts: the kernel's output (contact.h) and, after a step, each contact's
  // record at the solution (distance, normal impulse, friction impulse, slip)
  ContactEval contact_eval;
  std::vector<double> contact_distance, contact_normal_impulse;  // (nc,)
  std::vector<double> contact_friction_impulse, contact_slip;     // (nc, 2)

  // ---- gradient scratch (gradients.cpp; grown on first use, then reused)
  std::vector<double> grad_rhs, grad_b, grad_r, grad_x, grad_r_new, grad_chain, grad_norm;
  std::vector<double> grad_v, grad_tangent;               // products (step_jvp, step_vjp), outputs before an output map
  std::vector<int> grad_span;                             // a state map's nonzero columns per row (first, end)
  std::vector<double> grad_state, grad_state_map, grad_output_map;  // minimal_step_gradients: z2, dz2/dy, dy3/dz3
  std::vector<ContactZ3> grad_contact_z3;  // (nc,) the contacts' derivatives at z3 where dr/dw was assembled
  Tape grad_tape;  // one joint's impulse-map terms recorded for reverse mode (step_vjp)
  std::vector<uint8_t> grad_joint_gradient, grad_joint_recorded;  // step_vjp: (nj,) the joints of each reverse pass

  // ---- result
  std::vector<double> z_next;  // (13 nb,) [x3, v25, q3 (normalised), w25] per body
  SolverStatus status = SolverStatus::Success;
  int iterations = 0;
  double residual = 0.0;         // infinity norm of the final residual
  double complementarity = 0.0;  // final complementarity violation (0 without inequalities)
  // The Newton-matrix node (Model::body_node / joint_node / contact_node) whose diagonal
  // block had a zero or non-finite pivot when the last factorisation failed; -1 otherwise.
  int singular_node = -1;
  // The iteration after which the interior point's recovery dropped Mehrotra's
  // second-order term (interior_point.h); -1 when it did not.
  int recovery_iteration = -1;
  // Relative tolerances' fallback (tolerances.h): the first iterate of the solve that met
  // the absolute (SI) test, and whether the step returned it.
  std::vector<double> w_fallback;
  bool fell_back = false;
  std::vector<double> log;       // (max_iter kMaxAttempts + 1, kLogColumns) per-iteration record, every attempt's
  int log_rows = 0;
};

}  // namespace dojo
