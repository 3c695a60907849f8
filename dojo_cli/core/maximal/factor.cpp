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
  return factor_contacts_condensed(m, d, kMaxSubstitutionGrowth) || factor_matrix(m, d);
}

bool factor_contacts_condensed(const Model& m, Data& d, double max_growth) {
  if (!m.contacts_condensed) return false;
  const double* matrix = d.matrix.data();
  double* reduced = d.matrix_condensed.data();
  for (size_t k = 0; k < m.condensed_copy.size(); k += 3)
    std::memcpy(reduced + m.condensed_copy[k + 1], matrix + m.condensed_copy[k],
                sizeof(double) * static_cast<size_t>(m.condensed_copy[k + 2]));
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;  // its block is the identity and meets no body (newton_matrix.cpp)
    double* e = &d.contact_elimination[static_cast<size_t>(kContactEliminationSize) * c];
    if (!factor_contact_block(m, matrix, c, e, max_growth)) return false;
    contact_schur_complement(m, matrix, c, e, reduced);
  }
  if (!d.lu_condensed.factor(m.blocks_condensed, reduced)) return false;
  d.lu_exact = false;
  d.lu_is_robust = false;
  d.lu_is_condensed = true;
  d.singular_node = -1;
  return true;
}

double smallest_joint_pivot(const Model& m, const Data& d) {
  // the condensed pattern keeps the bodies' and joints' unknowns at their indices in w
  const BlockStructure& s = d.lu_is_condensed ? m.blocks_condensed : d.lu_is_robust ? m.blocks_robust : m.blocks;
  const BlockLU& lu = d.lu_is_condensed ? d.lu_condensed : d.lu_is_robust ? d.lu_robust : d.lu;
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

// One right-hand side through the condensed factorisation's transpose. With the contacts
// first, A = [C Cb; Bc R] and the factorisation's S = R - Bc C^-1 Cb, A^T = [C^T Bc^T; Cb^T
// R^T] has the Schur complement S^T on the same unknowns: each contact's rows folded into
// its bodies' with C^-T (b_body -= Cb^T C^-T b_c: Cb's gamma rows, the only ones it has),
// the bodies and joints solved with S^T (the reduced LU's transposed solve), then each
// contact's unknowns x_c = C^-T (b_c - Bc^T x_body) (Bc's gamma columns).
void solve_condensed_transpose(const Model& m, const Data& d, double* b) {
  const double* matrix = d.matrix.data();
  double x[2 * kMaxContactHalfSize];
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;
    const double* e = &d.contact_elimination[static_cast<size_t>(kContactEliminationSize) * c];
    const int n = contact_half_size(m.contacts[c].model), s0 = m.contact_start[c];
    solve_contact_block_transpose(m, matrix, c, e, b + s0, x);
    const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
    for (int q = 0; q < 2; ++q) {
      if (bodies[q] == kWorld) continue;
      const double* cb = matrix + m.blocks.block_offset[m.blk_contact_body[q][c]];  // 2N x 6, rows N..2N
      double* bb = b + 6 * bodies[q];
      for (int k = 0; k < 6; ++k) {
        double s = 0.0;
        for (int i = n; i < 2 * n; ++i) s += cb[6 * i + k] * x[i];
        bb[k] -= s;
      }
    }
  }
  d.lu_condensed.solve(m.blocks_condensed, b, 1, true);
  for (int c = 0; c < m.nc; ++c) {
    if (!d.contact_active[c]) continue;  // identity: x_c = b_c
    const double* e = &d.contact_elimination[static_cast<size_t>(kContactEliminationSize) * c];
    const int n = contact_half_size(m.contacts[c].model), s0 = m.contact_start[c];
    double* bc_rows = b + s0;
    const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
    for (int p = 0; p < 2; ++p) {
      if (bodies[p] == kWorld) continue;
      const double* bc = matrix + m.blocks.block_offset[m.blk_body_contact[p][c]];  // 6 x 2N, columns N..2N
      const double* xb = b + 6 * bodies[p];
      for (int j = 0; j < n; ++j) {
        double s = 0.0;
        for (int i = 0; i < 6; ++i) s += bc[2 * n * i + n + j] * xb[i];
        bc_rows[n + j] -= s;
      }
    }
    solve_contact_block_transpose(m, matrix, c, e, bc_rows, bc_rows);
  }
}

}  // namespace

void solve_factored(const Model& m, const Data& d, double* b, int nrhs, bool transpose) {
  if (d.lu_is_condensed) {
    for (int k = 0; k < nrhs; ++k)
      transpose ? solve_condensed_transpose(m, d, b + static_cast<size_t>(k) * m.n)
                : solve_condensed(m, d, b + static_cast<size_t>(k) * m.n);
  } else if (d.lu_is_robust) {
    d.lu_robust.solve(m.blocks_robust, b, nrhs, transpose);
  } else {
    d.lu.solve(m.blocks, b, nrhs, transpose);
  }
}

}  // namespace dojo
