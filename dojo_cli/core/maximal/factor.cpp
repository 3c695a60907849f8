// Factor wrappers (factor.h).
#include "factor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "contact_elimination.h"

namespace dojo {

bool factor_matrix(const Model& m, Data& d, bool robust) {
  d.lu_exact = false;
  d.lu_is_condensed = false;
  d.lu_is_robust = robust || !d.lu.factor(m.blocks, d.matrix.data());
  const bool ok = !d.lu_is_robust || d.lu_robust.factor(m.blocks_robust, d.matrix.data());
  d.singular_node = ok ? -1 : d.lu_robust.failed_node();
  return ok;
}

bool factor_matrix_condensed(const Model& m, Data& d) {
  if (!m.contacts_condensed) return factor_matrix(m, d);
  const double* matrix = d.matrix.data();
  double* reduced = d.matrix_condensed.data();
  for (size_t k = 0; k < m.condensed_copy.size(); k += 3)
    std::memcpy(reduced + m.condensed_copy[k + 1], matrix + m.condensed_copy[k],
                sizeof(double) * static_cast<size_t>(m.condensed_copy[k + 2]));
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;  // its block is the identity and meets no body (newton_matrix.cpp)
    double* e = &d.contact_elimination[static_cast<size_t>(kContactEliminationSize) * c];
    if (!factor_contact_block(m, matrix, c, e)) return factor_matrix(m, d);
    contact_schur_complement(m, matrix, c, e, reduced);
  }
  if (!d.lu_condensed.factor(m.blocks_condensed, reduced)) return factor_matrix(m, d);
  d.lu_exact = false;
  d.lu_is_robust = false;
  d.lu_is_condensed = true;
  d.singular_node = -1;
  return true;
}

double smallest_joint_pivot(const Model& m, const Data& d) {
  if (d.lu_is_condensed) throw std::logic_error("smallest_joint_pivot: the last factorisation was the condensed one");
  const BlockStructure& s = d.lu_is_robust ? m.blocks_robust : m.blocks;
  const BlockLU& lu = d.lu_is_robust ? d.lu_robust : d.lu;
  double smallest = std::numeric_limits<double>::infinity();
  for (int r = 0; r < s.n; ++r) {
    const int unknown = s.perm[r];
    if (unknown >= m.lam && unknown < m.lam + m.nl) smallest = std::min(smallest, lu.pivot_magnitude(r));
  }
  return smallest;
}

namespace {

// One right-hand side b (n,) through the condensed factorisation: the contacts' rows
// folded into their bodies' (b_body -= A_bc A_cc^-1 b_c), the bodies and joints solved,
// then each contact's unknowns from its rows (x_c = A_cc^-1 (b_c - A_cb x_body)).
void solve_condensed(const Model& m, const Data& d, double* b) {
  const double* matrix = d.matrix.data();
  double x[2 * kMaxContactHalfSize];
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;
    const double* e = &d.contact_elimination[static_cast<size_t>(kContactEliminationSize) * c];
    const int n = contact_half_size(m.contacts[c].model), s0 = m.contact_start[c];
    solve_contact_block(m, matrix, c, e, b + s0, x);
    const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
    for (int p = 0; p < 2; ++p) {
      if (bodies[p] == kWorld) continue;
      const double* bc = matrix + m.blocks.block_offset[m.blk_body_contact[p][c]];  // 6 x 2N, columns N..2N
      double* bb = b + 6 * bodies[p];
      for (int i = 0; i < 6; ++i) {
        double s = 0.0;
        for (int j = 0; j < n; ++j) s += bc[2 * n * i + n + j] * x[n + j];
        bb[i] -= s;
      }
    }
  }
  d.lu_condensed.solve(m.blocks_condensed, b);  // the unknowns before the contacts'
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;  // identity: x_c = b_c
    const double* e = &d.contact_elimination[static_cast<size_t>(kContactEliminationSize) * c];
    const int n = contact_half_size(m.contacts[c].model), s0 = m.contact_start[c];
    double* bc_rows = b + s0;
    const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
    for (int q = 0; q < 2; ++q) {
      if (bodies[q] == kWorld) continue;
      const double* cb = matrix + m.blocks.block_offset[m.blk_contact_body[q][c]];  // 2N x 6, rows N..2N
      const double* xb = b + 6 * bodies[q];
      for (int i = n; i < 2 * n; ++i) {
        double s = 0.0;
        for (int k = 0; k < 6; ++k) s += cb[6 * i + k] * xb[k];
        bc_rows[i] -= s;
      }
    }
    solve_contact_block(m, matrix, c, e, bc_rows, bc_rows);
  }
}

}  // namespace

void solve_factored(const Model& m, const Data& d, double* b, int nrhs, bool transpose) {
  if (d.lu_is_condensed) {
    if (transpose) throw std::logic_error("solve_factored: no transposed solve with the condensed factorisation");
    for (int k = 0; k < nrhs; ++k) solve_condensed(m, d, b + static_cast<size_t>(k) * m.n);
  } else if (d.lu_is_robust) {
    d.lu_robust.solve(m.blocks_robust, b, nrhs, transpose);
  } else {
    d.lu.solve(m.blocks, b, nrhs, transpose);
  }
}

}  // namespace dojo
