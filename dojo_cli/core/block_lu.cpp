// TEMPORARY dense stand-in for the block-sparse LU (being written): the structural
// blocks are expanded into a dense matrix and factorised with partial pivoting.
#include "block_lu.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dojo {

int BlockStructure::find(int i, int j) const {
  for (size_t b = 0; b < block_row.size(); ++b)
    if (block_row[b] == i && block_col[b] == j) return static_cast<int>(b);
  return -1;
}

BlockStructure analyze_blocks(const std::vector<std::vector<int>>& node_unknowns,
                              const std::vector<std::pair<int, int>>& blocks, const std::vector<int>& order) {
  BlockStructure s;
  s.n_nodes = static_cast<int>(node_unknowns.size());
  s.node_ptr.push_back(0);
  for (const auto& u : node_unknowns) {
    for (int i : u) s.node_idx.push_back(i);
    s.node_ptr.push_back(static_cast<int>(s.node_idx.size()));
  }
  s.n = static_cast<int>(s.node_idx.size());
  s.order = order;
  int offset = 0;
  for (const auto& b : blocks) {
    if (s.find(b.first, b.second) >= 0) continue;
    s.block_row.push_back(b.first);
    s.block_col.push_back(b.second);
    s.block_offset.push_back(offset);
    offset += s.size(b.first) * s.size(b.second);
  }
  s.n_structural = static_cast<int>(s.block_row.size());
  s.structural_size = offset;
  s.total_size = offset;
  return s;
}

void BlockLU::init(const BlockStructure& s) {
  lu_.assign(static_cast<size_t>(s.n) * s.n, 0.0);
  pivots_.assign(s.n, 0);
  work_.assign(s.n, 0.0);
}

bool BlockLU::factor(const BlockStructure& s, const double* values) {
  const int n = s.n;
  std::fill(lu_.begin(), lu_.end(), 0.0);
  for (int b = 0; b < s.n_structural; ++b) {
    const int ri = s.block_row[b], ci = s.block_col[b];
    const int nr = s.size(ri), ncol = s.size(ci);
    for (int i = 0; i < nr; ++i)
      for (int j = 0; j < ncol; ++j)
        lu_[static_cast<size_t>(s.node_idx[s.node_ptr[ri] + i]) * n + s.node_idx[s.node_ptr[ci] + j]] +=
            values[s.block_offset[b] + i * ncol + j];
  }
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (std::fabs(lu_[static_cast<size_t>(i) * n + k]) > std::fabs(lu_[static_cast<size_t>(p) * n + k])) p = i;
    pivots_[k] = p;
    if (p != k)
      for (int j = 0; j < n; ++j) std::swap(lu_[static_cast<size_t>(k) * n + j], lu_[static_cast<size_t>(p) * n + j]);
    const double piv = lu_[static_cast<size_t>(k) * n + k];
    if (piv == 0.0 || !std::isfinite(piv)) return false;
    for (int i = k + 1; i < n; ++i) {
      double& l = lu_[static_cast<size_t>(i) * n + k];
      l /= piv;
      if (l != 0.0)
        for (int j = k + 1; j < n; ++j) lu_[static_cast<size_t>(i) * n + j] -= l * lu_[static_cast<size_t>(k) * n + j];
    }
  }
  return true;
}

void BlockLU::solve(const BlockStructure& s, double* b, int nrhs, bool transpose) const {
  const int n = s.n;
  for (int c = 0; c < nrhs; ++c) {
    double* x = b + static_cast<size_t>(c) * n;
    if (!transpose) {
      for (int k = 0; k < n; ++k) std::swap(x[k], x[pivots_[k]]);
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < i; ++k) x[i] -= lu_[static_cast<size_t>(i) * n + k] * x[k];
      for (int i = n - 1; i >= 0; --i) {
        for (int k = i + 1; k < n; ++k) x[i] -= lu_[static_cast<size_t>(i) * n + k] * x[k];
        x[i] /= lu_[static_cast<size_t>(i) * n + i];
      }
    } else {
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < i; ++k) x[i] -= lu_[static_cast<size_t>(k) * n + i] * x[k];
        x[i] /= lu_[static_cast<size_t>(i) * n + i];
      }
      for (int i = n - 1; i >= 0; --i)
        for (int k = i + 1; k < n; ++k) x[i] -= lu_[static_cast<size_t>(k) * n + i] * x[k];
      for (int k = n - 1; k >= 0; --k) std::swap(x[k], x[pivots_[k]]);
    }
  }
}

void block_multiply(const BlockStructure& s, const double* values, const double* x, double* y, bool transpose) {
  for (int i = 0; i < s.n; ++i) y[i] = 0.0;
  for (int b = 0; b < s.n_structural; ++b) {
    const int ri = s.block_row[b], ci = s.block_col[b];
    const int nr = s.size(ri), ncol = s.size(ci);
    for (int i = 0; i < nr; ++i)
      for (int j = 0; j < ncol; ++j) {
        const double v = values[s.block_offset[b] + i * ncol + j];
        const int gi = s.node_idx[s.node_ptr[ri] + i], gj = s.node_idx[s.node_ptr[ci] + j];
        if (transpose)
          y[gj] += v * x[gi];
        else
          y[gi] += v * x[gj];
      }
  }
}

}  // namespace dojo
