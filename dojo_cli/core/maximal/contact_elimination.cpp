// Closed-form elimination of the contacts' nodes (contact_elimination.h).
#include "contact_elimination.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

namespace dojo {

namespace {

// Layout of a contact's elimination record (kContactEliminationSize doubles): the
// reciprocal pivots of the substitution, then (nonlinear) K^-1 row-major.
enum : int { kGap = 0, kOrthant = 1, kRadius = 2, kSlip1 = 3, kSlip2 = 4, kConeInverse = 5 };

// 1 / p into out; false for a zero, subnormal-reciprocal or non-finite pivot (block_lu's test).
inline bool reciprocal(double p, double& out) {
  if (!(std::fabs(p) > 0.0 && std::fabs(p) <= DBL_MAX)) return false;
  out = 1.0 / p;
  return std::fabs(out) <= DBL_MAX;
}

// inv = K^-1 of a 3x3 row-major K by Gauss-Jordan with partial pivoting on K's columns
// scaled to a largest entry of 1 (K = Ks diag(c): the cone's W and W^-1 columns differ by
// beta^2, which can be 1e20 apart, and scaling the unknowns changes nothing else); false when
// a column is zero or a pivot of Ks is zero, not finite or below 1 / max_growth.
bool invert3(const double k[9], double inv[9], double max_growth) {
  double scale[3], a[3][6];
  for (int j = 0; j < 3; ++j) {
    const double largest = std::max(std::fabs(k[j]), std::max(std::fabs(k[3 + j]), std::fabs(k[6 + j])));
    if (!reciprocal(largest, scale[j])) return false;
  }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      a[i][j] = k[3 * i + j] * scale[j];
      a[i][3 + j] = i == j ? 1.0 : 0.0;
    }
  for (int c = 0; c < 3; ++c) {
    int p = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (p != c)
      for (int j = 0; j < 6; ++j) std::swap(a[c][j], a[p][j]);
    double d;
    if (!reciprocal(a[c][c], d) || std::fabs(d) > max_growth) return false;
    for (int j = c; j < 6; ++j) a[c][j] *= d;
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double l = a[r][c];
      for (int j = c; j < 6; ++j) a[r][j] -= l * a[c][j];
    }
  }
  for (int i = 0; i < 3; ++i)  // K^-1 = diag(scale) Ks^-1
    for (int j = 0; j < 3; ++j) inv[3 * i + j] = scale[i] * a[i][3 + j];
  return true;
}

inline const double* diagonal_block(const Model& m, const double* matrix, int c) {
  return matrix + m.blocks.block_offset[m.blk_contact_diag[c]];
}

}  // namespace

bool factor_contact_block(const Model& m, const double* matrix, int c, double* out, double max_growth) {
  const double* a = diagonal_block(m, matrix, c);
  switch (m.contacts[c].model) {
    case ContactModel::Impact:  // [s0, g0]: row 1 -ds0, row 0 g0 ds0 + s0 dg0
      return reciprocal(a[2 * 1 + 0], out[kGap]) && reciprocal(a[2 * 0 + 1], out[kOrthant]) &&
             std::fabs(a[0] * out[kOrthant]) <= max_growth;
    case ContactModel::Nonlinear: {  // [s0..s3, g0..g3], 8 columns
      if (!(reciprocal(a[8 * 4 + 0], out[kGap]) && reciprocal(a[8 * 0 + 4], out[kOrthant]) &&
            reciprocal(a[8 * 5 + 5], out[kRadius]) && reciprocal(a[8 * 6 + 2], out[kSlip1]) &&
            reciprocal(a[8 * 7 + 3], out[kSlip2])))
        return false;
      if (std::fabs(a[0] * out[kOrthant]) > max_growth) return false;  // g0 / s0
      // K: the cone rows 1-3 in the columns left after the substitution, s1, g2, g3
      const double k[9] = {a[8 * 1 + 1], a[8 * 1 + 6], a[8 * 1 + 7], a[8 * 2 + 1], a[8 * 2 + 6],
                           a[8 * 2 + 7], a[8 * 3 + 1], a[8 * 3 + 6], a[8 * 3 + 7]};
      return invert3(k, out + kConeInverse, max_growth);
    }
    case ContactModel::Linear:
      break;
  }
  return false;  // no closed form (Model::contacts_condensed is false for such a model)
}

void solve_contact_block(const Model& m, const double* matrix, int c, const double* e, const double* r, double* x) {
  const double* a = diagonal_block(m, matrix, c);
  if (m.contacts[c].model == ContactModel::Impact) {
    const double ds0 = r[1] * e[kGap];
    x[1] = (r[0] - a[0] * ds0) * e[kOrthant];
    x[0] = ds0;
    return;
  }
  // nonlinear: the substitution's order (contact_elimination.h)
  const double ds0 = r[4] * e[kGap];                         // gap row
  const double dg0 = (r[0] - a[0] * ds0) * e[kOrthant];      // orthant row
  const double dg1 = (r[5] - a[8 * 5 + 4] * dg0) * e[kRadius];  // radius row
  const double ds2 = r[6] * e[kSlip1];                       // slip rows
  const double ds3 = r[7] * e[kSlip2];
  double t[3];
  for (int i = 0; i < 3; ++i) {
    const double* row = a + 8 * (1 + i);
    t[i] = r[1 + i] - (row[2] * ds2 + row[3] * ds3 + row[5] * dg1);
  }
  const double* kinv = e + kConeInverse;
  x[0] = ds0;
  x[1] = kinv[0] * t[0] + kinv[1] * t[1] + kinv[2] * t[2];
  x[2] = ds2;
  x[3] = ds3;
  x[4] = dg0;
  x[5] = dg1;
  x[6] = kinv[3] * t[0] + kinv[4] * t[1] + kinv[5] * t[2];
  x[7] = kinv[6] * t[0] + kinv[7] * t[1] + kinv[8] * t[2];
}

void solve_contact_block_transpose(const Model& m, const double* matrix, int c, const double* e, const double* r,
                                   double* x) {
  // A_cc^T y = r: one equation per column of A_cc, solved for the row whose pivot that
  // column holds in solve_contact_block, in the reverse of its order.
  const double* a = diagonal_block(m, matrix, c);
  if (m.contacts[c].model == ContactModel::Impact) {
    const double y0 = r[1] * e[kOrthant];           // column g0: a01 y0
    const double y1 = (r[0] - a[0] * y0) * e[kGap];  // column s0: a00 y0 + a10 y1
    x[0] = y0;
    x[1] = y1;
    return;
  }
  // nonlinear: columns s1, g2, g3 hold the cone rows' K: K^T (y1, y2, y3) = (r1, r6, r7)
  const double* kinv = e + kConeInverse;
  const double t[3] = {r[1], r[6], r[7]};
  double yc[3];
  for (int i = 0; i < 3; ++i) yc[i] = kinv[i] * t[0] + kinv[3 + i] * t[1] + kinv[6 + i] * t[2];
  auto cone = [&](int col) { return a[8 * 1 + col] * yc[0] + a[8 * 2 + col] * yc[1] + a[8 * 3 + col] * yc[2]; };
  const double y6 = (r[2] - cone(2)) * e[kSlip1];         // column s2: slip row 6
  const double y7 = (r[3] - cone(3)) * e[kSlip2];         // column s3: slip row 7
  const double y5 = (r[5] - cone(5)) * e[kRadius];        // column g1: radius row 5
  const double y0 = (r[4] - a[8 * 5 + 4] * y5) * e[kOrthant];  // column g0: orthant row 0
  const double y4 = (r[0] - a[0] * y0) * e[kGap];         // column s0: gap row 4
  x[0] = y0;
  x[1] = yc[0];
  x[2] = yc[1];
  x[3] = yc[2];
  x[4] = y4;
  x[5] = y5;
  x[6] = y6;
  x[7] = y7;
}

namespace {

// contact_schur_complement of a nonlinear contact: solve_contact_block's operations on the
// entries that are not zero by construction, in the same order (the same results, bit for
// bit): A_cb has no complementarity rows and no radius-row columns (psi = mu gn holds no
// body), and A_bc no psi column (psi exerts no force: contact.cpp, finish_jacobians), so
// y = A_cc^-1 A_cb needs its gn, b1, b2 rows only.
void nonlinear_schur_complement(const Model& m, const double* matrix, int c, const double* e, double* reduced) {
  const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
  const double* a = diagonal_block(m, matrix, c);
  const double* kinv = e + kConeInverse;
  double y[2][3][6];  // per side: rows gn, b1, b2 of A_cc^-1 A_cb
  for (int q = 0; q < 2; ++q) {
    if (bodies[q] == kWorld) continue;
    const double* cb = matrix + m.blocks.block_offset[m.blk_contact_body[q][c]];  // 8 x 6, rows 4..7
    for (int k = 0; k < 6; ++k) {
      const double ds0 = cb[6 * 4 + k] * e[kGap];
      const double dg0 = (0.0 - a[0] * ds0) * e[kOrthant];
      const double dg1 = (0.0 - a[8 * 5 + 4] * dg0) * e[kRadius];
      const double ds2 = cb[6 * 6 + k] * e[kSlip1];
      const double ds3 = cb[6 * 7 + k] * e[kSlip2];
      double t[3];
      for (int i = 0; i < 3; ++i) {
        const double* row = a + 8 * (1 + i);
        t[i] = 0.0 - (row[2] * ds2 + row[3] * ds3 + row[5] * dg1);
      }
      y[q][0][k] = dg0;
      y[q][1][k] = kinv[3] * t[0] + kinv[4] * t[1] + kinv[5] * t[2];
      y[q][2][k] = kinv[6] * t[0] + kinv[7] * t[1] + kinv[8] * t[2];
    }
  }
  for (int p = 0; p < 2; ++p) {
    if (bodies[p] == kWorld) continue;
    const double* bc = matrix + m.blocks.block_offset[m.blk_body_contact[p][c]];  // 6 x 8, columns 4, 6, 7
    for (int q = 0; q < 2; ++q) {
      if (bodies[q] == kWorld) continue;
      double* target = reduced + (p == q ? m.condensed_body[bodies[p]] : m.condensed_ab[p][c]);
      for (int i = 0; i < 6; ++i) {
        const double* row = bc + 8 * i + 4;
        for (int k = 0; k < 6; ++k) {
          double s = 0.0;
          s += row[0] * y[q][0][k];
          s += row[2] * y[q][1][k];
          s += row[3] * y[q][2][k];
          target[6 * i + k] -= s;
        }
      }
    }
  }
}

}  // namespace

void contact_schur_complement(const Model& m, const double* matrix, int c, const double* e, double* reduced) {
  if (m.contacts[c].model == ContactModel::Nonlinear) return nonlinear_schur_complement(m, matrix, c, e, reduced);
  const int n = contact_half_size(m.contacts[c].model);
  const int bodies[2] = {m.contacts[c].body, m.contacts[c].other};
  // y_q = A_cc^-1 A_cb(q) per body side q, its gamma rows (the only ones A_bc reads)
  double y[2][kMaxContactHalfSize][6];
  double r[2 * kMaxContactHalfSize] = {}, x[2 * kMaxContactHalfSize];
  for (int q = 0; q < 2; ++q) {
    if (bodies[q] == kWorld) continue;
    const double* cb = matrix + m.blocks.block_offset[m.blk_contact_body[q][c]];  // 2N x 6, rows N..2N
    for (int k = 0; k < 6; ++k) {
      for (int i = 0; i < n; ++i) r[n + i] = cb[6 * (n + i) + k];
      solve_contact_block(m, matrix, c, e, r, x);
      for (int i = 0; i < n; ++i) y[q][i][k] = x[n + i];
    }
  }
  // A_bb(p, q) -= A_bc(p) y_q
  for (int p = 0; p < 2; ++p) {
    if (bodies[p] == kWorld) continue;
    const double* bc = matrix + m.blocks.block_offset[m.blk_body_contact[p][c]];  // 6 x 2N, columns N..2N
    for (int q = 0; q < 2; ++q) {
      if (bodies[q] == kWorld) continue;
      double* target = reduced + (p == q ? m.condensed_body[bodies[p]] : m.condensed_ab[p][c]);
      for (int i = 0; i < 6; ++i) {
        const double* row = bc + 2 * n * i + n;
        for (int k = 0; k < 6; ++k) {
          double s = 0.0;
          for (int j = 0; j < n; ++j) s += row[j] * y[q][j][k];
          target[6 * i + k] -= s;
        }
      }
    }
  }
}

}  // namespace dojo
