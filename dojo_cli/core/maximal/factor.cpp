// Factor wrappers (factor.h).
#include "factor.h"

#include <algorithm>
#include <limits>

namespace dojo {

bool factor_matrix(const Model& m, Data& d, bool robust) {
  d.lu_exact = false;
  d.lu_is_robust = robust || !d.lu.factor(m.blocks, d.matrix.data());
  const bool ok = !d.lu_is_robust || d.lu_robust.factor(m.blocks_robust, d.matrix.data());
  d.singular_node = ok ? -1 : d.lu_robust.failed_node();
  return ok;
}

double smallest_joint_pivot(const Model& m, const Data& d) {
  const BlockStructure& s = d.lu_is_robust ? m.blocks_robust : m.blocks;
  const BlockLU& lu = d.lu_is_robust ? d.lu_robust : d.lu;
  double smallest = std::numeric_limits<double>::infinity();
  for (int r = 0; r < s.n; ++r) {
    const int unknown = s.perm[r];
    if (unknown >= m.lam && unknown < m.lam + m.nl) smallest = std::min(smallest, lu.pivot_magnitude(r));
  }
  return smallest;
}

void solve_factored(const Model& m, const Data& d, double* b, int nrhs, bool transpose) {
  if (d.lu_is_robust)
    d.lu_robust.solve(m.blocks_robust, b, nrhs, transpose);
  else
    d.lu.solve(m.blocks, b, nrhs, transpose);
}

}  // namespace dojo
