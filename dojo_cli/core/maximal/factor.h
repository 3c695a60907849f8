// The factorisation of the step's Newton matrix (newton_matrix.h) with the block-sparse LU
// (linalg/block_lu.h), and solves with it.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Factorise d.matrix: in the model's elimination order, or in the robust one (model.h)
// when `robust` or when the first fails. Returns false when neither succeeds.
bool factor_matrix(const Model& m, Data& d, bool robust = false);

// Solve with the last factorisation (n x nrhs column-major right-hand sides, in place).
void solve_factored(const Model& m, const Data& d, double* b, int nrhs = 1, bool transpose = false);

}  // namespace dojo
