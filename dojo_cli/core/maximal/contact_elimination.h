// Closed-form elimination of the contacts' nodes from the step's Newton matrix (issue 28
// item 2): the interior point's factorisation without a dense LU per contact.
//
// A contact's unknowns u = [s (N), gamma (N)] meet the rest of the Newton matrix only
// through its bodies: its rows [A_cc A_cb] and its columns [A_cc; A_bc]. Eliminated first
// (as the block LU's order does, model.cpp), they leave the Schur complement
// A_bb - A_bc A_cc^-1 A_cb on the bodies. A_cc's pattern is known (contact.h's rows,
// newton_matrix.cpp's assembly, the interior point's scaled cone rows):
//   impact (N = 1):    row 0   g0 ds0 + s0 dg0               (orthant pair)
//                      row 1   -ds0 (+ body columns)          (gap d - s0)
//   nonlinear (N = 4): row 0   g0 ds0 + s0 dg0               (orthant pair)
//                      rows 1-3  P ds[1:4] + Q dg[1:4]        (the cone pair: P, Q = arrow(lambda) W,
//                                                              arrow(lambda) W^-1 scaled, or arrow(gamma),
//                                                              arrow(s) raw; any 3x3 pair)
//                      row 4   -ds0 (+ body columns)          (gap)
//                      row 5   mu dg0 - dg1                   (the cone's radius psi = mu gn: constant)
//                      rows 6, 7  -ds2, -ds3 (+ body columns) (slip vt - (e1, e2))
// so A_cc x = r is solved by substitution: ds0 from the gap row, dg0 from the orthant row,
// dg1 from the radius row, ds2 and ds3 from the slip rows, then (ds1, dg2, dg3) from the
// cone rows, a 3x3 system K (rows 1-3, columns s1, g2, g3). In that order A_cc is block
// lower triangular, so det A_cc = +-s0 det K: the pivots of the substitution vanish exactly
// where A_cc is singular, and the dense LU of the node (block_lu.h) would fail there too.
// The body columns sit in the constraint rows only (A_cb's rows N..2N) and the wrench
// reads gamma only (A_bc's columns N..2N), which the elimination uses.
//
// The linear (pyramid) model has no closed form here: a model with one takes the block
// LU of the whole matrix (Model::contacts_condensed false).
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// The substitution divides by the slack s0 where the dense LU would pivot on the larger of
// (s0, g0): the impulse dg0 = (r0 - g0 ds0) / s0 carries the rounding of ds0 times g0 / s0.
// Near a tight solution (a loaded contact's s0 ~ kappa / g0) that ratio reaches 1e20 and the
// direction loses every digit (seen: the box at rtol = btol = 1e-10 stalled with its equality
// residual at 1e-10 where the block LU reached 1e-14). A contact whose g0 / s0, or whose cone
// system K's growth (largest entry / smallest pivot), exceeds this is not eliminated in closed
// form: the whole matrix goes to the block LU (factor.h).
constexpr double kMaxSubstitutionGrowth = 1e8;

// The same bound for the gradients' solves (gradients.cpp, factor_at_solution), which refine
// every solve against the whole matrix until its backward error is the block LU's
// (kCondensedBackwardError) and take the block LU where a few sweeps do not get there: each
// sweep shrinks the error by about the unit roundoff times the growth (2e-4 a sweep at 1e12).
// The resting box at the warm start's solutions has g0 / s0 of 1.8e8 (most steps) to 3e13
// (over the toss's 500 steps; 3 steps above 1e12): above kMaxSubstitutionGrowth, which would
// send 97 of 100 resting steps' gradients to the block LU.
constexpr double kMaxGradientSubstitutionGrowth = 1e12;

// Doubles a contact keeps from its factorisation (Data::contact_elimination): the
// substitution's reciprocal pivots and K^-1.
constexpr int kContactEliminationSize = 16;

// Factorise contact c's diagonal block (the matrix values `matrix`, Model::blocks' layout)
// into out (kContactEliminationSize doubles). False when a pivot is zero or not finite
// (A_cc singular: the caller factorises the whole matrix by the block LU instead), or when
// the substitution's growth exceeds max_growth.
bool factor_contact_block(const Model& m, const double* matrix, int c, double* out,
                          double max_growth = kMaxSubstitutionGrowth);

// x = A_cc^-1 r for contact c (its 2N unknowns, local order [s, gamma]); r and x may be
// the same array.
void solve_contact_block(const Model& m, const double* matrix, int c, const double* elimination, const double* r,
                         double* x);

// x = A_cc^-T r for contact c (the transposed substitution: the same pivots and K^-1,
// visited in the reverse order); r and x may be the same array.
void solve_contact_block_transpose(const Model& m, const double* matrix, int c, const double* elimination,
                                   const double* r, double* x);

// The Schur complement of contact c: A_bb -= A_bc A_cc^-1 A_cb over its bodies' blocks of
// `reduced` (Model::blocks_condensed' layout).
void contact_schur_complement(const Model& m, const double* matrix, int c, const double* elimination,
                              double* reduced);

}  // namespace dojo
