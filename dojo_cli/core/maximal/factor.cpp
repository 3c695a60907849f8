// Factor wrappers (factor.h).
#include "factor.h"

namespace dojo {

bool factor_matrix(const Model& m, Data& d, bool robust) {
  d.lu_is_robust = robust || !d.lu.factor(m.blocks, d.matrix.data());
  const bool ok = !d.lu_is_robust || d.lu_robust.factor(m.blocks_robust, d.matrix.data());
  d.singular_node = ok ? -1 : d.lu_robust.failed_node();
  return ok;
}

void solve_factored(const Model& m, const Data& d, double* b, int nrhs, bool transpose) {
  if (d.lu_is_robust)
    d.lu_robust.solve(m.blocks_robust, b, nrhs, transpose);
  else
    d.lu.solve(m.blocks, b, nrhs, transpose);
}

}  // namespace dojo
