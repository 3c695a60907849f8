// The factorisation of the step's Newton matrix (newton_matrix.h) with the block-sparse LU
// (linalg/block_lu.h), and solves with it.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Factorise d.matrix: in the model's elimination order, or in the robust one (model.h)
// when `robust` or when the first fails. Returns false when neither succeeds. Clears
// d.lu_exact (the caller that factorised the exact matrix sets it).
bool factor_matrix(const Model& m, Data& d, bool robust = false);

// The interior point's factorisation of d.matrix: each contact in the solve eliminated in
// closed form onto its bodies (contact_elimination.h), then the block LU of the bodies and
// joints (Model::blocks_condensed): the same elimination order as factor_matrix's first,
// without the dense LU of every contact's node. Falls back to factor_matrix (both of its
// orders) where the model has no closed form (Model::contacts_condensed), where a pivot of
// the closed form or of the reduced LU is zero, or where a contact's substitution would
// amplify rounding beyond kMaxSubstitutionGrowth (contact_elimination.h: a loaded contact
// near a tight solution). Solves with it take one right-hand side at a time, transposed
// or not.
bool factor_matrix_condensed(const Model& m, Data& d);

// factor_matrix_condensed without its fallback, with the substitution's growth bounded by
// max_growth (contact_elimination.h): false (d's factorisation then unusable) where it would
// fall back to factor_matrix. The gradients' exact matrix at the solution (gradients.cpp,
// factor_at_solution) falls back to the robust order instead.
bool factor_contacts_condensed(const Model& m, Data& d, double max_growth);

// The smallest pivot magnitude (BlockLU::pivot_magnitude) of the last factorisation over
// the columns of joint impulses (unknowns lam .. lam + nl); +infinity without joint rows.
// The last factorisation must have succeeded (factor_matrix's or the condensed one's: the
// reduced LU's pivots, the joints' unknowns being eliminated after the contacts').
double smallest_joint_pivot(const Model& m, const Data& d);

// Solve with the last factorisation (n x nrhs column-major right-hand sides, in place).
void solve_factored(const Model& m, const Data& d, double* b, int nrhs = 1, bool transpose = false);

}  // namespace dojo
