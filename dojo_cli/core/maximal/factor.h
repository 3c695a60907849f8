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

// The smallest pivot magnitude (BlockLU::pivot_magnitude) of the last factorisation over
// the columns of joint impulses (unknowns lam .. lam + nl); +infinity without joint rows.
double smallest_joint_pivot(const Model& m, const Data& d);

// Solve with the last factorisation (n x nrhs column-major right-hand sides, in place).
void solve_factored(const Model& m, const Data& d, double* b, int nrhs = 1, bool transpose = false);

}  // namespace dojo
