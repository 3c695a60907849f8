// Block-sparse LU over the graph of a step's unknowns (bodies, joints, contacts).
//
// The Newton matrix of a step is sparse with a block structure given by the
// mechanism's graph: each node (a body's 6 velocities, a joint's impulses and
// limit variables, a contact's slacks and impulses) owns a set of unknowns, and a
// block (i, j) is nonzero only where node i's rows depend on node j's unknowns.
// The elimination order is chosen once per Model (contacts first, then each
// child body before its parent joint, leaves to root, loop-closing joints last:
// shared/core_prototype.md), so a tree gets no fill and costs linear in bodies.
// The symbolic factorisation (which fill blocks appear) is computed once in
// analyze_blocks; the numeric factorisation pivots only inside diagonal blocks
// (partial pivoting), which is stable here because a body always precedes its
// parent joint, so the joint's tiny regularisation is never a pivot alone.
//
// The matrix is not symmetric (constraint Jacobians at z2 on one side, z3 on the
// other): LU, not LDL^T.
#pragma once

#include <utility>
#include <vector>

namespace dojo {

// The block pattern and its symbolic factorisation (built once, never mutated).
struct BlockStructure {
  int n = 0;        // number of unknowns
  int n_nodes = 0;  // number of nodes
  // Unknowns of node k: node_idx[node_ptr[k] .. node_ptr[k+1]) (indices into the
  // unknown vector w; they need not be contiguous).
  std::vector<int> node_ptr;
  std::vector<int> node_idx;
  std::vector<int> order;  // elimination order: order[p] is the node eliminated p-th

  // Blocks: ids 0 .. n_structural-1 are the structural blocks handed to
  // analyze_blocks (duplicates merged, in first-appearance order); ids from
  // n_structural on are fill created by the elimination. Block b is a dense
  // row-major size(block_row[b]) x size(block_col[b]) array at block_offset[b].
  int n_structural = 0;
  std::vector<int> block_row, block_col, block_offset;
  int structural_size = 0;  // doubles of the structural blocks (the assembled matrix)
  int total_size = 0;       // doubles of all blocks (the factor storage)

  int size(int node) const { return node_ptr[node + 1] - node_ptr[node]; }
  // Block id of (i, j), or -1 when it is not in the pattern (a search: call it when
  // building a Model, never per step).
  int find(int i, int j) const;

  // --- symbolic data for the numeric factorisation (filled by analyze_blocks;
  // layout private to block_lu.cpp) ---
  std::vector<int> sym_ptr, sym_data;
};

// Analyse a pattern: node unknowns, the structural blocks (i, j) (each (i, i) must
// be present for every node), and the elimination order (a permutation of nodes).
// Throws std::invalid_argument on an inconsistent pattern.
BlockStructure analyze_blocks(const std::vector<std::vector<int>>& node_unknowns,
                              const std::vector<std::pair<int, int>>& blocks, const std::vector<int>& order);

// The numeric factorisation of one matrix with a BlockStructure's pattern. The
// storage is allocated once (init); factor and solve allocate nothing.
class BlockLU {
 public:
  void init(const BlockStructure& s);

  // Factorise the matrix whose structural block values are `values`
  // (s.structural_size doubles, block layout above); the values are copied, so the
  // caller keeps the unfactored matrix (iterative refinement, gradients).
  // Returns false when a pivot is zero or not finite (the factorisation is unusable).
  bool factor(const BlockStructure& s, const double* values);

  // Solve A x = b (or A^T x = b) in place for nrhs right-hand sides: b is
  // n x nrhs, column-major (column k at b + k * n), in the unknown layout of w.
  void solve(const BlockStructure& s, double* b, int nrhs = 1, bool transpose = false) const;

 private:
  std::vector<double> lu_;     // all blocks (structural + fill), factored in place
  std::vector<int> pivots_;    // partial-pivoting row order inside each diagonal block
  mutable std::vector<double> work_;  // node-ordered right-hand sides
};

// y = A x (or A^T x) with the structural blocks `values` (residual checks and
// iterative refinement).
void block_multiply(const BlockStructure& s, const double* values, const double* x, double* y, bool transpose = false);

}  // namespace dojo
