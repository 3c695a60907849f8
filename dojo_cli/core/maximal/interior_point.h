// Primal-dual interior-point method with Mehrotra predictor-corrector steps.
//
// Dojo's mehrotra! (dojo_engine_notes.md 5.3) for the step's nonlinear
// complementarity problem, whose unknowns include pairs (s, gamma) in cones:
// - positive orthant pairs: s_i >= 0, gamma_i >= 0, complementarity s_i gamma_i = kappa;
// - second-order cones of dimension 3: complementarity cone_product(gamma, s) = kappa (1, 0, 0),
//   cone_product(u, w) = (u.w, u0 w[1:] + w0 u[1:]).
// The step's residual holds the products with kappa = 0; the solver subtracts its target.
//
// Each iteration:
// 1. affine (predictor) direction: Newton on the residual with kappa = 0;
// 2. the affine step length in the cones (fraction to the boundary 0.95);
// 3. centering: nu = sum s.gamma / degree, nu_aff the same after the affine step,
//    sigma = clamp(nu_aff / nu, 0, 1)^3, kappa = max(sigma nu, btol / undercut);
// 4. corrector: the same factorisation solves for the residual with target kappa plus
//    the affine second-order term. (Dojo's corrector aims at kappa_prev + kappa_new
//    because its residual already subtracted the previous kappa; here the residual is
//    always evaluated with kappa = 0 and the target subtracted once, so it aims at kappa.)
// 5. cone step length with tau = max(0.95, 1 - max(rvio, bvio)^2) (at most 0.95 for
//    second-order cones), then backtracking by ls_scale (at most max_ls times) until the
//    candidate does not increase both the equality violation rvio and the
//    complementarity violation bvio; with Data::filter_acceptance (a restart's second
//    sweep, step.h) the candidate must also not be worse in both than any iterate the
//    solve has left behind (a filter, Fletcher and Leyffer 2002; Waechter and Biegler
//    2006, section 2.3): Dojo's rule compares with the current iterate only, and lets a
//    solve cycle, trading one violation for the other (example-robot-data's z1 arm
//    dropped at rest: step 0 cycled through (rvio, bvio) ~ (1e-5, 2e-3), (1.3e-2, 6e-5),
//    (1.2e-2, 1e-5) for 200 iterations from every starting scale, and the filter ended the
//    cycle; that cycle's cause was its base cylinder's rim point jumping between iterates,
//    collision.h kLevelCircle, and z1 no longer restarts. Still taken: go2 dropped limp,
//    step 36, which the first sweep leaves at violations ~ 1e-4 and the filter converges);
// 6. progress bookkeeping: after no_progress_max iterations without a 20 % decrease of
//    an unconverged violation, undercut *= no_progress_undercut.
// Beyond Dojo: second-order cones are linearised in Nesterov-Todd scaled form (the raw
// linearisation can drive a cone variable onto its boundary and jam), and after a step
// cut short by a cone boundary one pure centering step (sigma = 1) follows. Two
// safeguards that no built-in scene triggers (their paths are Dojo's):
// - a second-order-cone step that would leave the cone (Dojo's absolute guards swamp a
//   cone vector of size ~1e-7) is recomputed scale-invariantly (cone_step);
// - recovery: after the no-progress bookkeeping of step 6 has fired
//   kStallsBeforeRecovery times, the corrector drops Mehrotra's second-order term for
//   the rest of the solve (sigma keeps Mehrotra's rule). Near a nearly singular Newton
//   matrix (a contact at the switch between sticking and sliding, several collinear
//   sliding contacts sharing a load the equations do not fix) the affine direction is
//   blown up along the near-null direction and its second-order term, quadratic in it,
//   dominates the right-hand side: the corrected step is cut to alpha ~ 1e-5 by the
//   cones, or wanders without progress (Mehrotra 1992 has no such safeguard; Wright,
//   Primal-Dual Interior-Point Methods, 1997, ch. 10, notes the corrector can spoil the
//   step and practical codes fall back to the plain centred direction).
// - re-centring of a jammed cone (Data::recentre_jams, a restart's third sweep, step.h):
//   when the same second-order cone cuts kJamSteps steps in a row short (alpha <
//   kShortStep), both its vectors are moved into the cone's interior (x0 raised to
//   (1 + kJamRecentre) |x1:|, the tangential parts kept) and the solve goes on from there.
//   Seen: b1-z1 dropped limp, step 40 (relative tolerances), a foot at the switch from
//   sliding to sticking, its friction impulse on the cone's boundary (7.36 of mu gn 7.36)
//   and its slip cone shrinking to the apex (5e-6 m/s): the Newton direction points out
//   of both cones (the slip reversing, the friction beyond the cone), each step is cut to
//   alpha ~ 5e-4 by that one contact, and two other feet sliding at 0.05 m/s cannot align
//   their friction with their slip beyond 2e-4 rad (cone products 2x btol) for 200
//   iterations from every starting scale, absolute tolerances alike. Re-centred, the
//   step converges in 50 iterations. A point moved this way is only a new iterate: the
//   solution, and the test it must pass, are the same.
// - Gondzio's centrality correctors (Data::centrality_correctors, a restart's fourth
//   sweep, step.h): after the corrector, while its step alpha < 1, the products at a
//   trial step min(1, 1.5 alpha + 0.3) that leave the band [0.1 kappa, 10 kappa] (orthant
//   products, and each eigenvalue of a cone's Nesterov-Todd scaled product) are aimed
//   back into it: the target gains that shift t and the direction M^-1 t (the same
//   factorisation); the corrected direction is kept if its step grows by at least 10 %
//   of the way to the trial, at most kGondzioCorrectors times (Gondzio, "Multiple
//   centrality corrections in a primal-dual method for linear programming", 1996;
//   Colombo and Gondzio 2008). Seen: light wrist and gripper links (0.08-0.5 kg) lying on
//   many hull-vertex contacts (g1, talos, alex dropped limp), where a few cones far from
//   the central path cut every step to alpha ~ 1e-2 and the complementarity shrinks
//   ~5 % an iteration. Only the path changes: the solution and its test are the same.
// Converged when rvio < rtol and bvio < btol (raw products, kappa not subtracted).
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Fraction to the boundary of the affine step (Dojo's tau_ort = tau_soc = 0.95).
constexpr double kAffineFraction = 0.95;
// Lower bound of the corrector's fraction to the boundary (Dojo: max(0.95, 1 - viol^2)).
constexpr double kMinFraction = 0.95;
// Fraction to the boundary of second-order cones (Dojo's tau_soc = min(tau, 0.95)).
constexpr double kSocFraction = 0.95;
// A step shorter than this was cut by a cone boundary; after this many in a row the
// next iteration centres (sigma = 1), once.
constexpr double kShortStep = 0.1;
constexpr int kShortStepsBeforeCentering = 1;
// No-progress events (each: no_progress_max iterations without a 20 % decrease, step 6)
// before the recovery drops the second-order term. One event happens in a few steps of
// the built-in box (which then converges on its own), two in none of them.
constexpr int kStallsBeforeRecovery = 2;
// A violation must shrink by this factor to count as progress (Dojo: 20 %).
constexpr double kProgressFactor = 0.8;
// Guards of the second-order-cone step length (CVXOPT 8.2 as in Dojo).
constexpr double kSocJFloor = 1e-25;
constexpr double kSocEps = 1e-14;
// Relative floor of Jordan determinants in the scaling (det / x0^2 below it is rounding),
// and an absolute floor for a cone vector that is exactly zero.
constexpr double kDetFloor = 1e-30;
constexpr double kTiny = 1e-300;
// Re-centring of a jammed cone (recentre_jams): after this many consecutive short steps
// cut by the same second-order cone, both its vectors get x0 = (1 + kJamRecentre) |x1:|
// (kJamRecentre = 1: det / x0^2 = 3/4, well inside; 0.1 and 0.01 also solve b1-z1's step
// 40, in 86 and 200 iterations).
constexpr int kJamSteps = 3;
constexpr double kJamRecentre = 1.0;
// Gondzio's correctors (centrality_correctors): the band of the products around kappa,
// the trial step min(1, factor alpha + offset), the growth a corrected step must make
// (a fraction of the way to the trial), and the correctors an iteration at most
// (Colombo and Gondzio 2008: beta_min = 0.1, beta_max = 10, gamma = 0.1).
constexpr double kGondzioLow = 0.1;
constexpr double kGondzioHigh = 10.0;
constexpr double kGondzioTrialFactor = 1.5;
constexpr double kGondzioTrialOffset = 0.3;
constexpr double kGondzioGain = 0.1;
constexpr int kGondzioCorrectors = 3;
// Guard of the centering ratio nu_aff / nu.
constexpr double kCenteringGuard = 1e-20;

// Nesterov-Todd scaling of one second-order-cone pair (s, z) strictly inside the cone:
// W s = W^-1 z = lambda with lambda.lambda = s.z (Nesterov and Todd 1998; Vandenberghe,
// "The CVXOPT linear and quadratic cone program solvers", 2010, section 4).
void nesterov_todd(const double* s, const double* z, double* w, double* w_inv, double* lambda);

// (rvio, bvio) of a residual: infinity norms of the equality and complementarity rows,
// each row divided by its scale (tolerances.h; null: absolute, 1).
void violations(const Model& m, const double* r, double& rvio, double& bvio, const double* scale = nullptr);

// Mean duality measure nu = sum s.gamma / degree. active: (nc,) the contacts in the
// solve (Data::contact_active; margins.h), or null for all: the others'
// cones are left out of the sum and of the degree.
double complementarity_measure(const Model& m, const double* w, const uint8_t* active = nullptr);

// Largest step keeping every cone variable strictly inside its cone, by Dojo's rules
// (orthant: fraction tau of the way to the boundary; second-order cone: CVXOPT 8.2 with
// Dojo's absolute guards). stay_inside: a second-order-cone step that those guards let
// leave the cone is recomputed scale-invariantly (the step the iterate takes; the affine
// step length, which only sets sigma, keeps Dojo's rule). active: the contacts in the solve
// (as above; null: all).
double cone_step(const Model& m, const double* w, const double* dw, double tau, const uint8_t* active = nullptr,
                 bool stay_inside = false);

// Nesterov-Todd scaled linearisation of the second-order cones at d.w: the residual
// rows cone_product(gamma, s) (in rn) become lambda o lambda and their Newton rows (in
// d.matrix, assembled at d.w) (arrow(lambda) W, arrow(lambda) W^-1), since the rows
// cone_product(gamma, s) = kappa e become lambda o (W ds + W^-1 dgamma) = kappa e - lambda o lambda.
// Keeps W, W^-1 and lambda in d.soc_w, d.soc_w_inv, d.soc_lambda. Contacts left out
// of the solve (d.contact_active) are skipped.
void scale_second_order_cones(const Model& m, Data& d, double* rn);

// Solve the step (d.w holds the starting point, cone variables strictly inside).
SolverStatus interior_point(const Model& m, Data& d, const SolverOptions& opts);

}  // namespace dojo
