// Block-sparse LU over the graph of a step's unknowns (bodies, joints, contacts).
//
// The Newton matrix of a step is sparse with a block structure given by the
// mechanism's graph: each node (a body's 6 velocities, a joint's impulses and
// limit variables, a contact's slacks and impulses) owns a set of unknowns, and a
// block (i, j) is nonzero only where node i's rows depend on node j's unknowns.
// The elimination order is chosen once per Model (contacts first, then each
// child body before its parent joint, leaves to root, loop-closing joints last;
// model.cpp's "elimination order"), so a tree gets no fill and costs linear in bodies.
// The symbolic factorisation (which fill blocks appear) is computed once in
// analyze_blocks; the numeric factorisation pivots only inside diagonal blocks
// (partial pivoting), which is stable here because a body always precedes its
// parent joint, so the joint's tiny regularisation is never a pivot alone.
//
// The matrix is not symmetric (constraint Jacobians at z2 on one side, z3 on the
// other): LU, not LDL^T.
//
// Nodes may have any number of unknowns (zero included: such a node takes part in
// nothing); the dense block kernels are compiled for 1-8 and 12 unknowns and take
// other sizes at run time (~2x slower). Measured on the 2-core build machine
// (benchmarks/block_lu_speed.py): the 20-link chain (220 unknowns) factors in
// ~4.5 us and solves in ~1.9 us; a box with 8 contacts (70) in ~1.9 and ~0.8 us.
#pragma once

#include <cmath>
#include <optional>
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

  // --- symbolic data for the numeric phase (filled by analyze_blocks; read only
  // by block_lu.cpp) ---
  // Rows of the factor and of the solve's work vector are in elimination order:
  // node order[p] owns rows row0 .. row0 + size - 1, and perm[r] is the unknown
  // (index into w) of row r.
  // A block (i, j) with i eliminated before j is a U block of step i; with i
  // eliminated after j, an L block of step j.
  struct Link {
    int offset;  // the block's offset in the factor storage
    int size;    // the size of the other node
    int row0;    // the other node's first row
  };
  struct Step {
    int node, size, diag, row0;  // eliminated node, its size, its diagonal block's offset, first row
    int cols_begin, cols_end;    // links: U blocks (node, j), j later (in elimination order)
    int rows_begin, rows_end;    // links: L blocks (i, node), i later
    int uin_begin, uin_end;      // links: U blocks (i, node), i earlier (backward solve)
    int lin_begin, lin_end;      // links: L blocks (node, j), j earlier (transposed backward solve)
    int upd_begin;               // update_off[upd_begin ..]: targets of (rows x cols), row-major
  };
  std::vector<Step> steps;          // one per eliminated node with at least one unknown, in order
  std::vector<Link> links;
  std::vector<int> update_off;      // offsets of the blocks A_ij -= L_ik U_kj
  std::vector<int> perm;            // perm[r]: the unknown of row r
  int max_size = 0;                 // the largest node
  // Block ids by row, sorted by column (find()).
  std::vector<int> row_ptr, row_col, row_block;
};

// Analyse a pattern: node unknowns (together exactly 0 .. n-1, each in one node),
// the structural blocks (i, j) (each (i, i) must be present for every node;
// duplicates are merged), and the elimination order (a permutation of nodes).
// Throws std::invalid_argument on an inconsistent pattern.
BlockStructure analyze_blocks(const std::vector<std::vector<int>>& node_unknowns,
                              const std::vector<std::pair<int, int>>& blocks, const std::vector<int>& order);

// The same within a budget: nothing (and the analysis stopped there) when the factor's
// blocks (8 bytes a double) and one factorisation's block updates (4 bytes an offset)
// would exceed max_bytes; a pattern with dense fill (a body eliminated before hundreds of
// its contacts) is found out before it is allocated (model.cpp, the robust order).
std::optional<BlockStructure> analyze_blocks_within(const std::vector<std::vector<int>>& node_unknowns,
                                                    const std::vector<std::pair<int, int>>& blocks,
                                                    const std::vector<int>& order, long long max_bytes);

// The numeric factorisation of one matrix with a BlockStructure's pattern. The
// storage is allocated once (init); factor and solve allocate nothing.
class BlockLU {
 public:
  // Size the storage for s; factor and solve must then be called with the same s
  // (they throw std::logic_error when the sizes do not match).
  void init(const BlockStructure& s);

  // Factorise the matrix whose structural block values are `values`
  // (s.structural_size doubles, block layout above); the values are copied, so the
  // caller keeps the unfactored matrix (iterative refinement, gradients).
  // Returns false when a pivot is zero or not finite (the factorisation is unusable).
  // A NaN or infinite value always reaches a pivot when the pattern is structurally
  // symmetric ((i, j) present iff (j, i) is), so it is reported as well.
  bool factor(const BlockStructure& s, const double* values);

  // The node whose diagonal block had the zero or non-finite pivot when the last
  // factor() failed (what is singular, for the failed step's message); -1 after a success.
  int failed_node() const { return failed_node_; }

  // |U(r, r)|, the magnitude of row r's pivot after a successful factor() (r in
  // elimination order: its column is the unknown s.perm[r]; partial pivoting swaps rows
  // only). A column (nearly) dependent on the ones eliminated before it has a tiny pivot.
  double pivot_magnitude(int row) const { return 1.0 / std::fabs(dinv_[row]); }

  // Solve A x = b (or A^T x = b) in place for nrhs right-hand sides: b is
  // n x nrhs, column-major (column k at b + k * n), in the unknown layout of w.
  // Any nrhs: the right-hand sides go through the work buffer (sized in init) in
  // chunks of kRhsChunk columns, so solve never allocates. Not thread-safe on one
  // BlockLU (the work buffer is shared); use one BlockLU per thread.
  // Precondition: the last factor() returned true.
  void solve(const BlockStructure& s, double* b, int nrhs = 1, bool transpose = false) const;

  static constexpr int kRhsChunk = 16;

 private:
  std::vector<double> lu_;     // all blocks (structural + fill), factored in place
  std::vector<int> pivots_;    // partial pivoting inside each diagonal block (LAPACK ipiv, local to the block), by row
  std::vector<double> dinv_;   // 1 / U_kk(r, r), by row
  mutable std::vector<double> work_;  // right-hand sides in elimination order, n x kRhsChunk row-major
  mutable std::vector<double> tmp_;   // one column of a node larger than the compiled sizes
  int failed_node_ = -1;
};

// y = A x (or A^T x) with the structural blocks `values` (residual checks and
// iterative refinement). x and y must not overlap.
void block_multiply(const BlockStructure& s, const double* values, const double* x, double* y, bool transpose = false);

// The residual r = b - A x (or b - A^T x) for nrhs columns (n x nrhs, column-major), in
// one pass over the blocks (each block's values read once for all columns). r must not
// overlap b or x. With `work`, nrhs > 1 and A itself (not transposed) the columns are
// taken together (rows of nrhs entries, two columns at a time; work grows to 2 n nrhs):
// every entry is the same sum in the same order, bit for bit.
void block_residual(const BlockStructure& s, const double* values, const double* b, const double* x, double* r,
                    int nrhs, bool transpose = false, std::vector<double>* work = nullptr);

}  // namespace dojo
