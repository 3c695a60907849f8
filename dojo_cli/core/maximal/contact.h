// Contact models per contact: impact, nonlinear (second-order cone) and linear (pyramid).
//
// Dojo's contact constraints (dojo_engine_notes.md 4.2), evaluated at the next
// configuration z3 = (x3, q3) and the midpoint velocities xi25 = (v25, w25) of the two
// bodies. Per contact, unknowns s (slacks) and gamma (impulses), each of half size N:
// - impact (N = 1): gamma = (gn), s = (sn);
//   rows: gn sn = kappa; d - sn = 0.
// - nonlinear (N = 4): gamma = (gn, psi, b1, b2), s = (sn, e0, e1, e2);
//   rows: gn sn = kappa; cone_product((psi, b), (e0, e1, e2)) = kappa (1, 0, 0);
//         d - sn = 0; mu gn - psi = 0; vt - (e1, e2) = 0.
//   (psi, b) and (e0, e1, e2) lie in second-order cones: |b| <= psi = mu gn and
//   e0 >= |vt|; complementarity makes b oppose the sliding velocity (maximum
//   dissipation). cone_product(u, w) = (u.w, u0 w[1:] + w0 u[1:]) (notes 4.2).
// - linear (N = 6): gamma = (gn, psi, b1..b4), s = (sn, s_psi, sb1..sb4), all >= 0;
//   rows: gamma o s = kappa; d - sn = 0; mu gn - sum b - s_psi = 0;
//         P vt + psi - sb = 0 with P = [[0, 1], [0, -1], [1, 0], [-1, 0]]
//   (friction directions +t2, -t2, +t1, -t1).
// d is the signed distance, vt = T (v_a(point_a) - v_b(point_b)) the tangential
// relative velocity of the contact points (v + (R w) x r per body), T = (t1, t2) the
// tangent rows (collision.h). The contact force on body a is f = n gn + T^T bt
// (bt = (b1, b2), or P^T b for the pyramid) at its contact point; body b receives -f at
// its own contact point. Residual rows of a contact: its complementarity rows sit at
// its s indices (written here with kappa = 0) and its constraint rows at its gamma
// indices.
//
// Per contact, allocation-free and without virtual calls: evaluate_contact() is the
// kernel. The pose-dependent part (geometry, contact
// points, vt, force, torques) is one template over the scalar. The residual runs it on
// doubles. The Jacobians (exact, not finite differences): the geometry runs on dual
// numbers seeded on its own inputs (a's sphere centre, b's pose: 3 or 9 columns; the
// half-space's affine geometry is written out), then the rest is chained by hand over
// 3 x K blocks (K = 6 for the world, 12 for two bodies, +4 with parameters), several
// times faster than dual numbers through everything. evaluate_contact_reference() does
// the latter (Dual<double, K> through every operation) and the tests hold the two
// together to ~1e-15. All paths give bitwise the same values (no templated expression
// divides: x * (1 / y), so doubles and duals round alike).
//
// Signs, for whoever assembles the Newton matrix (newton_matrix.cpp):
// - the body residual SUBTRACTS the contact wrench: r_body -= wrench;
// - this kernel returns the RAW derivatives of the wrench: the matrix entries are
//   contact_map = -wrench_gamma (body rows, gamma columns; s columns are zero) and
//   contact_body_body = -wrench_body (body rows, body columns): apply the minus sign
//   when assembling;
// - comp_jac, cons_local and cons_body are the matrix entries as they are
//   (complementarity rows at s, constraint rows at gamma); the interior point may
//   replace the SOC rows of comp_jac (rows 1..3, nonlinear) by its scaled
//   linearisation, as matrix_blocks(soc_jacobians) does.
#pragma once

#include "collision.h"
#include "contact_params.h"

namespace dojo {

// What evaluate_contact computes. The interior point evaluates the residual more often
// than the matrix; Residual skips every derivative (plain doubles, no dual numbers).
enum class ContactOutput : int {
  Residual = 0,    // comp, cons, wrench and the records
  Jacobians = 1,   // + comp_jac, cons_local, cons_body, wrench_gamma, wrench_body, cons_z3, wrench_z3
  Parameters = 2,  // + cons_parameters, wrench_parameters (derivatives wrt offset and radius)
};

// One body of the pair as the step sees it (pointers into the caller's arrays).
//   x: (3,) x3, world position at the next configuration (m);
//   q: (4,) q3, orientation at the next configuration, [w, x, y, z] body to world;
//   v: (3,) v25, world linear velocity; w: (3,) w25, body-frame angular velocity;
//   mw: (9,) row-major dt3/dw25 = integrator_map_jacobian(w25, h) (spatial.h).
// For the world (ContactParams::other < 0) body b is not read (its pointers may be null):
// the kernel uses the identity pose, zero velocities and no columns (every b column of
// the output is 0).
struct ContactBodyState {
  const double* x;
  const double* q;
  const double* v;
  const double* w;
  const double* mw;
};

// One contact's residual rows, wrench and derivatives. Fixed sizes (N <= 6); only the
// leading N rows (and 2N columns of comp_jac / cons_local, N columns of wrench_gamma)
// are written. Columns named "body" are [xi_a (6), xi_b (6)], xi = (v25, w25) of body a
// then b; columns named "z3" are the pair's tangent coordinates [x_a, t_a, x_b, t_b] at
// z3 (world-frame position, body-frame rotation increment q -> q exp(t/2)); for the
// world every b column is written as 0.
struct ContactEval {
  int n;  // half size N of the model

  // ---- ContactOutput::Residual and above
  double comp[kMaxContactHalfSize];  // complementarity rows (kappa = 0), at the contact's s rows
  double cons[kMaxContactHalfSize];  // constraint rows, at its gamma rows
  // [f_a; tau_a (a's frame); f_b; tau_b (b's frame)]: the contact impulse on a and b
  // (the step's body residual SUBTRACTS it); zero for the world's half.
  double wrench[12];
  double distance;             // signed distance d at z3 (m)
  double normal_impulse;       // gn
  double friction_impulse[2];  // bt in the tangent basis (t1, t2)
  double slip[2];              // vt (m/s)

  // ---- ContactOutput::Jacobians and above
  double comp_jac[kMaxContactHalfSize][2 * kMaxContactHalfSize];    // d comp / d [s, gamma] (N x 2N)
  double cons_local[kMaxContactHalfSize][2 * kMaxContactHalfSize];  // d cons / d [s, gamma] (N x 2N, with mu)
  // d cons / d [xi_a, xi_b]: cons_z3 chained through x3 = x2 + h v25 (dx3/dv25 = h I) and
  // dt3/dw25 = mw, plus the direct dependence of vt on xi25 (the body columns of cons +
  // chain_to_velocities)
  double cons_body[kMaxContactHalfSize][12];
  double wrench_gamma[12][kMaxContactHalfSize];  // d wrench / d gamma (12 x N): the raw impulse map
  double wrench_body[12][12];                    // d wrench / d [xi_a, xi_b] (chained like cons_body)
  double cons_z3[kMaxContactHalfSize][12];       // d cons / d z3 at fixed xi25 (for the gradients)
  double wrench_z3[12][12];                      // d wrench / d z3

  // ---- ContactOutput::Parameters: columns [offset (3), radius] of the contact's sphere
  double cons_parameters[kMaxContactHalfSize][4];
  double wrench_parameters[12][4];
};

// A contact's derivatives at z3 (ContactEval's cons_z3 and wrench_z3): what the gradients'
// dr/dz2 reads of the contact evaluation that assembled the matrix at the same solution
// (newton_matrix.h step_matrix, gradients.cpp), kept so it is not evaluated twice.
struct ContactZ3 {
  double cons[kMaxContactHalfSize][12];
  double wrench[12][12];
};

// Evaluate one contact at an iterate.
//   c: the contact; h: timestep (s);
//   a, b: bodies a and b (b unread for the world, c.other < 0);
//   s, gamma: (N,) the contact's slacks and impulses;
//   output: how much to compute (ContactOutput);
//   out: the results (fields beyond `output` are left untouched).
void evaluate_contact(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                      const double* s, const double* gamma, ContactOutput output, ContactEval& out);

// The same outputs with every derivative taken by dual numbers through every operation
// (Dual<double, K> seeded on all the columns), none chained by hand: several times
// slower than evaluate_contact; the tests use it as an independent check of the
// hand-chained Jacobians (values are bitwise those of evaluate_contact).
void evaluate_contact_reference(const ContactParams& c, double h, const ContactBodyState& a,
                                const ContactBodyState& b, const double* s, const double* gamma,
                                ContactOutput output, ContactEval& out);

// Dojo's interior-point starting point for one contact (Dojo's initialisation): every
// orthant entry kContactConeStart, the second-order cones (kContactConeStart, 0, 0).
//   s, gamma: (N,) written.
void contact_starting_point(ContactModel model, double* s, double* gamma);

}  // namespace dojo
