// Block-sparse LU over the graph of a step's unknowns: see block_lu.h.
//
// Factorisation (right-looking, in the given elimination order): for node k,
//   P_k A_kk = L_kk U_kk                (partial pivoting inside the block)
//   U_kj = L_kk^-1 P_k A_kj             for every later j with a block (k, j)
//   L_ik = A_ik U_kk^-1                 for every later i with a block (i, k)
//   A_ij -= L_ik U_kj                   (A_ik A_kk^-1 A_kj; a fill block if (i, j) was absent)
// so A = L U with L's diagonal blocks P_k^T L_kk (L_kk unit lower) and U's U_kk.
// Every block lives in place of the block it replaces: the factor storage has the
// structural blocks' layout followed by the fill.
//
// The hot kernels are templates on the size M of the node being eliminated (the
// inner dimension of every product), instantiated for the common sizes (1-8,
// 12) and a generic M = 0 that takes the size at run time; the Schur update also
// on the other block's size. Pairs of columns (or rows) go through two-lane SIMD
// registers (v2d below), each lane doing the scalar code's operations in order.
//
// GCC's loop vectoriser turns the kernels' short run-time loops (5 or 6 columns)
// into versioned vector loops with scalar epilogues that run ~2x slower than the
// scalar code (measured: the 20-chain factor 10.6 -> 5.8 us, its solve 3.2 -> 1.9
// us). Straight-line (SLP) vectorisation of the compile-time-sized code stays on.
// The pragma precedes every include so that all functions of this file, the
// standard library's inline ones included, share the same options (GCC does not
// inline across differing optimize options).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-loop-vectorize")
#endif

#include "block_lu.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace dojo {

namespace {

using Step = BlockStructure::Step;
using Link = BlockStructure::Link;

// Inlining where it matters is explicit: the factor's kernels are inlined into
// eliminate<M>, one function per node size that is never inlined into the loop over
// steps, and the solve's per-column lambdas into their kernels. Left to its
// heuristics, GCC's choices moved with unrelated edits and cost up to 1.3x (the
// limited-joint chain's factor, the multi-right-hand-side solve).
#if defined(__GNUC__)
#define DOJO_ALWAYS_INLINE __attribute__((always_inline)) inline
#define DOJO_NOINLINE __attribute__((noinline))
#define DOJO_LAMBDA_INLINE __attribute__((always_inline))
#else
#define DOJO_LAMBDA_INLINE
#define DOJO_ALWAYS_INLINE inline
#define DOJO_NOINLINE
#endif

// Two doubles as one SIMD register (GCC/Clang vector extension: SSE2 on x86-64, NEON
// on arm64, scalar code elsewhere). Each lane does exactly the scalar code's
// operations in the same order, so results do not depend on the vector width.
typedef double v2d __attribute__((vector_size(16)));
DOJO_ALWAYS_INLINE v2d load2(const double* p) {
  v2d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
DOJO_ALWAYS_INLINE void store2(double* p, v2d v) { std::memcpy(p, &v, sizeof v); }

// A column of a node: a local array the compiler keeps in registers when M is a
// compile-time size, the caller's scratch (at least max_size doubles) otherwise.
#define DOJO_COLUMN(name, M, scratch) \
  double name##_local[(M) > 0 ? (M) : 1]; \
  double* name = (M) > 0 ? name##_local : (scratch)

// CALL(M) with M the compile-time size for the common node sizes, M = 0 (run-time
// size) otherwise: bodies 6, joints 1-6 (+2 per limit: 7 is a revolute or prismatic
// joint with one bound, 9 with both, as every URDF robot's), contacts 2, 8, 12. Compile-time sizes run the 20-chain's factor
// ~2x faster than run-time ones (benchmarks/block_lu_speed.py).
#ifdef DOJO_BLOCK_LU_RUNTIME_SIZES  // for measuring what the compile-time sizes bring
#define DOJO_DISPATCH(size, CALL) CALL(0);
#else
#define DOJO_DISPATCH(size, CALL) \
  switch (size) {                 \
    case 1: CALL(1); break;       \
    case 2: CALL(2); break;       \
    case 3: CALL(3); break;       \
    case 4: CALL(4); break;       \
    case 5: CALL(5); break;       \
    case 6: CALL(6); break;       \
    case 7: CALL(7); break;       \
    case 8: CALL(8); break;       \
    case 9: CALL(9); break;       \
    case 12: CALL(12); break;     \
    default: CALL(0); break;      \
  }
#endif

// ---------------------------------------------------------------------------
// Factorisation kernels. Blocks are row-major; `m` is used only when M == 0.

// P a = L U in place (LAPACK getf2 conventions: piv[c] is the row swapped with c),
// dinv[c] = 1 / U(c, c). False on a zero or non-finite pivot.
template <int M>
DOJO_ALWAYS_INLINE bool factor_diagonal(double* __restrict__ a, int* __restrict__ piv, double* __restrict__ dinv, int m_rt) {
  const int m = M > 0 ? M : m_rt;
  for (int c = 0; c < m; ++c) {
    int p = c;
    double best = std::fabs(a[c * m + c]);
    for (int r = c + 1; r < m; ++r) {  // the first largest, as LAPACK's idamax; branch-free
      const double v = std::fabs(a[r * m + c]);
      const bool larger = v > best;
      p = larger ? r : p;
      best = larger ? v : best;
    }
    piv[c] = p;
    if (!(best > 0.0 && best <= DBL_MAX)) return false;  // zero, NaN or infinite
    if (p != c) {
      for (int t = 0; t < m; ++t) std::swap(a[c * m + t], a[p * m + t]);
    }
    const double d = 1.0 / a[c * m + c];
    if (!(std::fabs(d) <= DBL_MAX)) return false;  // a subnormal pivot
    dinv[c] = d;
    for (int r = c + 1; r < m; ++r) {
      double* __restrict__ ar = a + r * m;
      const double* __restrict__ ac = a + c * m;
      const double l = ar[c] * d;
      ar[c] = l;
      int t = c + 1;
      for (; t + 1 < m; t += 2) store2(ar + t, load2(ar + t) - l * load2(ac + t));
      if (t < m) ar[t] -= l * ac[t];
    }
  }
  return true;
}

// x (m x nc) <- L^-1 P x (a U block).
template <int M>
DOJO_ALWAYS_INLINE void lower_solve_left(const double* __restrict__ lu, const int* __restrict__ piv, double* __restrict__ x,
                             int nc, int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  for (int c = 0; c < m; ++c) {
    const int p = piv[c];
    if (p != c) {
      for (int t = 0; t < nc; ++t) std::swap(x[c * nc + t], x[p * nc + t]);
    }
  }
  int col = 0;
  if (M > 0) {  // two columns at a time
    v2d v2[M > 0 ? M : 1];
    for (; col + 1 < nc; col += 2) {
      for (int r = 0; r < m; ++r) v2[r] = load2(x + r * nc + col);
      for (int r = 1; r < m; ++r) {
        v2d s = v2[r];
        for (int t = 0; t < r; ++t) s -= lu[r * m + t] * v2[t];
        v2[r] = s;
        store2(x + r * nc + col, s);
      }
    }
  }
  DOJO_COLUMN(v, M, scratch);
  for (; col < nc; ++col) {
    for (int r = 0; r < m; ++r) v[r] = x[r * nc + col];
    for (int r = 1; r < m; ++r) {
      double s = v[r];
      for (int t = 0; t < r; ++t) s -= lu[r * m + t] * v[t];
      v[r] = s;
    }
    for (int r = 1; r < m; ++r) x[r * nc + col] = v[r];
  }
}

// x (nr x m) <- x U^-1 (an L block).
template <int M>
DOJO_ALWAYS_INLINE void upper_solve_right(const double* __restrict__ lu, const double* __restrict__ dinv, double* __restrict__ x,
                              int nr, int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  int row = 0;
  if (M > 0) {  // two rows at a time
    v2d v2[M > 0 ? M : 1];
    for (; row + 1 < nr; row += 2) {
      double* __restrict__ x0 = x + row * m;
      double* __restrict__ x1 = x0 + m;
      for (int c = 0; c < m; ++c) {
        v2d s = {x0[c], x1[c]};
        for (int t = 0; t < c; ++t) s -= v2[t] * lu[t * m + c];
        v2[c] = s * dinv[c];
      }
      for (int c = 0; c < m; ++c) {
        x0[c] = v2[c][0];
        x1[c] = v2[c][1];
      }
    }
  }
  DOJO_COLUMN(v, M, scratch);
  for (; row < nr; ++row) {
    double* __restrict__ xr = x + row * m;
    for (int c = 0; c < m; ++c) {
      double s = xr[c];
      for (int t = 0; t < c; ++t) s -= v[t] * lu[t * m + c];
      v[c] = s * dinv[c];
    }
    for (int c = 0; c < m; ++c) xr[c] = v[c];
  }
}

// c (nr x nc) -= a (nr x m) b (m x nc); N: nc at compile time (0: run time).
template <int M, int N>
DOJO_ALWAYS_INLINE void multiply_subtract(double* __restrict__ c, const double* __restrict__ a, const double* __restrict__ b, int nr,
                              int nc_rt, int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  const int nc = N > 0 ? N : nc_rt;
  DOJO_COLUMN(l, M, scratch);
  for (int r = 0; r < nr; ++r) {
    for (int t = 0; t < m; ++t) l[t] = a[r * m + t];
    double* __restrict__ cr = c + r * nc;
    int j = 0;
    for (; j + 1 < nc; j += 2) {
      v2d s = load2(cr + j);
      for (int t = 0; t < m; ++t) s -= l[t] * load2(b + t * nc + j);
      store2(cr + j, s);
    }
    if (j < nc) {
      double s = cr[j];
      for (int t = 0; t < m; ++t) s -= l[t] * b[t * nc + j];
      cr[j] = s;
    }
  }
}

template <int M>
DOJO_NOINLINE bool eliminate(const BlockStructure& s, const Step& st, double* lu, int* pivots, double* dinv, double* scratch) {
  const int m = M > 0 ? M : st.size;
  double* d = lu + st.diag;
  int* piv = pivots + st.row0;
  double* di = dinv + st.row0;
  if (!factor_diagonal<M>(d, piv, di, m)) return false;
  const Link* links = s.links.data();
  for (int e = st.cols_begin; e < st.cols_end; ++e) lower_solve_left<M>(d, piv, lu + links[e].offset, links[e].size, m, scratch);
  for (int e = st.rows_begin; e < st.rows_end; ++e) upper_solve_right<M>(d, di, lu + links[e].offset, links[e].size, m, scratch);
  const int* target = s.update_off.data() + st.upd_begin;
  for (int a = st.rows_begin; a < st.rows_end; ++a) {
    const double* la = lu + links[a].offset;
    const int nr = links[a].size;
    for (int b = st.cols_begin; b < st.cols_end; ++b) {
      const int nc = links[b].size;
#define DOJO_CALL(N) multiply_subtract<M, N>(lu + *target, la, lu + links[b].offset, nr, nc, m, scratch)
      DOJO_DISPATCH(nc, DOJO_CALL)
#undef DOJO_CALL
      ++target;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Solve kernels on the work matrix w (rows in elimination order, R columns,
// row-major). ONE: R == 1 at compile time. `m` is used only when M == 0. Several
// right-hand sides go two columns at a time (v2d lanes), then one.

template <class T>
struct Lane;
template <>
struct Lane<double> {
  static double load(const double* p) { return *p; }
  static void store(double* p, double v) { *p = v; }
};
template <>
struct Lane<v2d> {
  static v2d load(const double* p) { return load2(p); }
  static void store(double* p, v2d v) { store2(p, v); }
};
template <class T>
struct Tag {
  using type = T;
};

// f(col, Tag<T>) for the columns of w: pairs (T = v2d) while they last, then single.
template <int M, bool ONE, class F>
DOJO_ALWAYS_INLINE void over_columns(int R, F&& f) {
  int col = 0;
  if constexpr (!ONE && M > 0) {
    for (; col + 1 < R; col += 2) f(col, Tag<v2d>{});
  }
  for (; col < R; ++col) f(col, Tag<double>{});
}

// A node's column(s) of w in registers (M > 0) or in the caller's scratch (M == 0:
// only scalar lanes, over_columns never pairs them).
#define DOJO_LANES(name, M, T, scratch) \
  T name##_local[(M) > 0 ? (M) : 1];    \
  T* name = (M) > 0 ? name##_local : reinterpret_cast<T*>(scratch)

// Apply the swaps piv[0..m) (forward) or undo them (backward) on the rows of w.
template <bool ONE, bool UNDO>
inline void swap_rows(const int* __restrict__ piv, double* __restrict__ w, int R_rt, int m) {
  const int R = ONE ? 1 : R_rt;
  for (int q = 0; q < m; ++q) {
    const int c = UNDO ? m - 1 - q : q;
    const int p = piv[c];
    if (p != c) {
      for (int t = 0; t < R; ++t) std::swap(w[c * R + t], w[p * R + t]);
    }
  }
}

// w_k <- L^-1 P w_k.
template <int M, bool ONE>
inline void forward_diagonal(const double* __restrict__ lu, const int* __restrict__ piv, double* __restrict__ w, int R_rt,
                             int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  const int R = ONE ? 1 : R_rt;
  swap_rows<ONE, false>(piv, w, R, m);
  over_columns<M, ONE>(R, [&](int col, auto tag) DOJO_LAMBDA_INLINE {
    using T = typename decltype(tag)::type;
    DOJO_LANES(v, M, T, scratch);
    for (int r = 0; r < m; ++r) v[r] = Lane<T>::load(w + r * R + col);
    for (int r = 1; r < m; ++r) {
      T s = v[r];
      for (int t = 0; t < r; ++t) s -= lu[r * m + t] * v[t];
      v[r] = s;
      Lane<T>::store(w + r * R + col, s);
    }
  });
}

// w_k <- U^-1 w_k.
template <int M, bool ONE>
inline void backward_diagonal(const double* __restrict__ lu, const double* __restrict__ dinv, double* __restrict__ w,
                              int R_rt, int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  const int R = ONE ? 1 : R_rt;
  over_columns<M, ONE>(R, [&](int col, auto tag) DOJO_LAMBDA_INLINE {
    using T = typename decltype(tag)::type;
    DOJO_LANES(v, M, T, scratch);
    for (int r = 0; r < m; ++r) v[r] = Lane<T>::load(w + r * R + col);
    for (int r = m - 1; r >= 0; --r) {
      T s = v[r];
      for (int t = r + 1; t < m; ++t) s -= lu[r * m + t] * v[t];
      v[r] = s * dinv[r];
      Lane<T>::store(w + r * R + col, v[r]);
    }
  });
}

// w_k <- U^-T w_k.
template <int M, bool ONE>
inline void forward_diagonal_t(const double* __restrict__ lu, const double* __restrict__ dinv, double* __restrict__ w,
                               int R_rt, int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  const int R = ONE ? 1 : R_rt;
  over_columns<M, ONE>(R, [&](int col, auto tag) DOJO_LAMBDA_INLINE {
    using T = typename decltype(tag)::type;
    DOJO_LANES(v, M, T, scratch);
    for (int r = 0; r < m; ++r) v[r] = Lane<T>::load(w + r * R + col);
    for (int r = 0; r < m; ++r) {
      T s = v[r];
      for (int t = 0; t < r; ++t) s -= lu[t * m + r] * v[t];
      v[r] = s * dinv[r];
      Lane<T>::store(w + r * R + col, v[r]);
    }
  });
}

// w_k <- P^T L^-T w_k.
template <int M, bool ONE>
inline void backward_diagonal_t(const double* __restrict__ lu, const int* __restrict__ piv, double* __restrict__ w,
                                int R_rt, int m_rt, double* scratch) {
  const int m = M > 0 ? M : m_rt;
  const int R = ONE ? 1 : R_rt;
  over_columns<M, ONE>(R, [&](int col, auto tag) DOJO_LAMBDA_INLINE {
    using T = typename decltype(tag)::type;
    DOJO_LANES(v, M, T, scratch);
    for (int r = 0; r < m; ++r) v[r] = Lane<T>::load(w + r * R + col);
    for (int r = m - 2; r >= 0; --r) {
      T s = v[r];
      for (int t = r + 1; t < m; ++t) s -= lu[t * m + r] * v[t];
      v[r] = s;
      Lane<T>::store(w + r * R + col, s);
    }
  });
  swap_rows<ONE, true>(piv, w, R, m);
}

// wi (nr x R) -= a (nr x m) wk (m x R).
template <int M, bool ONE>
inline void update(double* __restrict__ wi, const double* __restrict__ a, const double* __restrict__ wk, int nr, int R_rt,
                   int m_rt) {
  const int m = M > 0 ? M : m_rt;
  const int R = ONE ? 1 : R_rt;
  for (int r = 0; r < nr; ++r) {
    const double* __restrict__ ar = a + r * m;
    over_columns<M, ONE>(R, [&](int col, auto tag) DOJO_LAMBDA_INLINE {
      using T = typename decltype(tag)::type;
      T s = Lane<T>::load(wi + r * R + col);
      for (int t = 0; t < m; ++t) s -= ar[t] * Lane<T>::load(wk + t * R + col);
      Lane<T>::store(wi + r * R + col, s);
    });
  }
}

// wj (nc x R) -= a^T wk, a (m x nc).
template <int M, bool ONE>
inline void update_t(double* __restrict__ wj, const double* __restrict__ a, const double* __restrict__ wk, int nc, int R_rt,
                     int m_rt) {
  const int m = M > 0 ? M : m_rt;
  const int R = ONE ? 1 : R_rt;
  for (int j = 0; j < nc; ++j) {
    over_columns<M, ONE>(R, [&](int col, auto tag) DOJO_LAMBDA_INLINE {
      using T = typename decltype(tag)::type;
      T s = Lane<T>::load(wj + j * R + col);
      for (int t = 0; t < m; ++t) s -= a[t * nc + j] * Lane<T>::load(wk + t * R + col);
      Lane<T>::store(wj + j * R + col, s);
    });
  }
}

struct SolveArgs {
  const double* lu;
  const int* pivots;
  const double* dinv;
  const Link* links;
  double* w;
  int R;
  double* scratch;
};

// A x = b, forward step: y_k = L_kk^-1 P_k w_k, then w_i -= L_ik y_k.
template <int M, bool ONE>
inline void forward_step(const SolveArgs& g, const Step& st) {
  const int R = ONE ? 1 : g.R;
  double* wk = g.w + st.row0 * R;
  forward_diagonal<M, ONE>(g.lu + st.diag, g.pivots + st.row0, wk, R, st.size, g.scratch);
  for (int e = st.rows_begin; e < st.rows_end; ++e) {
    const Link& l = g.links[e];
    update<M, ONE>(g.w + l.row0 * R, g.lu + l.offset, wk, l.size, R, st.size);
  }
}

// A x = b, backward step: x_k = U_kk^-1 w_k, then w_i -= U_ik x_k (i earlier).
template <int M, bool ONE>
inline void backward_step(const SolveArgs& g, const Step& st) {
  const int R = ONE ? 1 : g.R;
  double* wk = g.w + st.row0 * R;
  backward_diagonal<M, ONE>(g.lu + st.diag, g.dinv + st.row0, wk, R, st.size, g.scratch);
  for (int e = st.uin_begin; e < st.uin_end; ++e) {
    const Link& l = g.links[e];
    update<M, ONE>(g.w + l.row0 * R, g.lu + l.offset, wk, l.size, R, st.size);
  }
}

// A^T x = b = U^T L^T x, forward step: z_k = U_kk^-T w_k, then w_j -= U_kj^T z_k (j later).
template <int M, bool ONE>
inline void forward_step_t(const SolveArgs& g, const Step& st) {
  const int R = ONE ? 1 : g.R;
  double* wk = g.w + st.row0 * R;
  forward_diagonal_t<M, ONE>(g.lu + st.diag, g.dinv + st.row0, wk, R, st.size, g.scratch);
  for (int e = st.cols_begin; e < st.cols_end; ++e) {
    const Link& l = g.links[e];
    update_t<M, ONE>(g.w + l.row0 * R, g.lu + l.offset, wk, l.size, R, st.size);
  }
}

// A^T x = b, backward step: x_k = P_k^T L_kk^-T w_k, then w_j -= L_kj^T x_k (j earlier).
template <int M, bool ONE>
inline void backward_step_t(const SolveArgs& g, const Step& st) {
  const int R = ONE ? 1 : g.R;
  double* wk = g.w + st.row0 * R;
  backward_diagonal_t<M, ONE>(g.lu + st.diag, g.pivots + st.row0, wk, R, st.size, g.scratch);
  for (int e = st.lin_begin; e < st.lin_end; ++e) {
    const Link& l = g.links[e];
    update_t<M, ONE>(g.w + l.row0 * R, g.lu + l.offset, wk, l.size, R, st.size);
  }
}


template <bool ONE>
void solve_chunk(const BlockStructure& s, const SolveArgs& g, bool transpose) {
  const Step* steps = s.steps.data();
  const int ns = static_cast<int>(s.steps.size());
  if (!transpose) {
    for (int p = 0; p < ns; ++p) {
      const Step& st = steps[p];
#define DOJO_CALL(M) forward_step<M, ONE>(g, st)
      DOJO_DISPATCH(st.size, DOJO_CALL)
#undef DOJO_CALL
    }
    for (int p = ns - 1; p >= 0; --p) {
      const Step& st = steps[p];
#define DOJO_CALL(M) backward_step<M, ONE>(g, st)
      DOJO_DISPATCH(st.size, DOJO_CALL)
#undef DOJO_CALL
    }
  } else {
    for (int p = 0; p < ns; ++p) {
      const Step& st = steps[p];
#define DOJO_CALL(M) forward_step_t<M, ONE>(g, st)
      DOJO_DISPATCH(st.size, DOJO_CALL)
#undef DOJO_CALL
    }
    for (int p = ns - 1; p >= 0; --p) {
      const Step& st = steps[p];
#define DOJO_CALL(M) backward_step_t<M, ONE>(g, st)
      DOJO_DISPATCH(st.size, DOJO_CALL)
#undef DOJO_CALL
    }
  }
}

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument("analyze_blocks: " + what); }

}  // namespace

// ---------------------------------------------------------------------------
// Symbolic phase.

int BlockStructure::find(int i, int j) const {
  if (i < 0 || i >= n_nodes || j < 0 || j >= n_nodes) return -1;
  const int* begin = row_col.data() + row_ptr[i];
  const int* end = row_col.data() + row_ptr[i + 1];
  const int* it = std::lower_bound(begin, end, j);
  return (it != end && *it == j) ? row_block[it - row_col.data()] : -1;
}

namespace {

// analyze_blocks with a budget (max_bytes > 0: analyze_blocks_within's): false, with s
// half built, as soon as the fill's doubles and the update count exceed it.
bool analyze_into(BlockStructure& s, const std::vector<std::vector<int>>& node_unknowns,
                  const std::vector<std::pair<int, int>>& blocks, const std::vector<int>& order, long long max_bytes) {
  const int nn = static_cast<int>(node_unknowns.size());
  s.n_nodes = nn;

  // Nodes and their unknowns: every unknown 0 .. n-1 in exactly one node.
  s.node_ptr.assign(1, 0);
  for (const auto& u : node_unknowns) {
    s.node_idx.insert(s.node_idx.end(), u.begin(), u.end());
    s.node_ptr.push_back(static_cast<int>(s.node_idx.size()));
    s.max_size = std::max(s.max_size, static_cast<int>(u.size()));
  }
  const int n = static_cast<int>(s.node_idx.size());
  s.n = n;
  {
    std::vector<int> owner(n, -1);
    for (int k = 0; k < nn; ++k) {
      for (int q = s.node_ptr[k]; q < s.node_ptr[k + 1]; ++q) {
        const int u = s.node_idx[q];
        if (u < 0 || u >= n)
          invalid("node " + std::to_string(k) + " has unknown " + std::to_string(u) + " outside 0.." +
                  std::to_string(n - 1) + " (the nodes own " + std::to_string(n) + " unknowns)");
        if (owner[u] >= 0)
          invalid("unknown " + std::to_string(u) + " belongs to nodes " + std::to_string(owner[u]) + " and " +
                  std::to_string(k));
        owner[u] = k;
      }
    }
    // n distinct indices in 0..n-1: they cover 0..n-1.
  }

  // Elimination order: a permutation of the nodes.
  if (static_cast<int>(order.size()) != nn)
    invalid("order has " + std::to_string(order.size()) + " entries for " + std::to_string(nn) + " nodes");
  std::vector<int> pos(nn, -1);
  for (int p = 0; p < nn; ++p) {
    const int k = order[p];
    if (k < 0 || k >= nn) invalid("order[" + std::to_string(p) + "] = " + std::to_string(k) + " is not a node");
    if (pos[k] >= 0) invalid("node " + std::to_string(k) + " appears twice in order");
    pos[k] = p;
  }
  s.order = order;

  // Structural blocks, duplicates merged in first-appearance order.
  std::unordered_map<std::int64_t, int> id;
  id.reserve(blocks.size() * 2 + 16);
  auto key = [nn](int i, int j) { return static_cast<std::int64_t>(i) * nn + j; };
  std::vector<std::vector<int>> cols_of(nn), rows_of(nn);  // (k, j) and (i, k) neighbours of k
  std::vector<std::vector<int>> col_blocks(nn);             // the block ids of (k, cols_of[k])
  std::vector<int> diagonal(nn, -1);                        // the block id of (k, k)
  auto add_block = [&](int i, int j) {
    const int b = static_cast<int>(s.block_row.size());
    id.emplace(key(i, j), b);
    s.block_row.push_back(i);
    s.block_col.push_back(j);
    if (i != j) {
      cols_of[i].push_back(j);
      col_blocks[i].push_back(b);
      rows_of[j].push_back(i);
    } else {
      diagonal[i] = b;
    }
    return b;
  };
  for (std::size_t q = 0; q < blocks.size(); ++q) {
    const int i = blocks[q].first, j = blocks[q].second;
    if (i < 0 || i >= nn || j < 0 || j >= nn)
      invalid("block " + std::to_string(q) + " = (" + std::to_string(i) + ", " + std::to_string(j) +
              ") is outside the " + std::to_string(nn) + " nodes");
    if (id.find(key(i, j)) == id.end()) add_block(i, j);
  }
  s.n_structural = static_cast<int>(s.block_row.size());
  for (int k = 0; k < nn; ++k) {
    if (id.find(key(k, k)) == id.end()) invalid("node " + std::to_string(k) + " has no diagonal block");
  }

  // Row i's blocks by column, for the loops over a step's rows x columns: block_of[j] is the
  // id of (i, j) while stamp[j] == the current tick (mark_row(i)). A hash lookup per pair
  // made the analysis of a body with hundreds of contacts take seconds (the robust order
  // eliminates the body first, so its contacts' rows and columns fill densely: O(deg^3)
  // pairs; dm_control's manipulator, 316 contacts: 10 s).
  std::vector<int> stamp(nn, -1), block_of(nn, -1);
  int tick = -1;
  auto mark_row = [&](int i) {
    ++tick;
    stamp[i] = tick;
    block_of[i] = diagonal[i];
    for (std::size_t q = 0; q < cols_of[i].size(); ++q) {
      stamp[cols_of[i][q]] = tick;
      block_of[cols_of[i][q]] = col_blocks[i][q];
    }
  };

  // Symbolic elimination: eliminating k updates (i, j) for every later i in k's
  // column and later j in k's row. A node without unknowns updates nothing.
  auto later = [&](const std::vector<int>& nodes, int p) {
    std::vector<int> out;
    for (int x : nodes) {
      if (pos[x] > p) out.push_back(x);
    }
    std::sort(out.begin(), out.end(), [&](int a, int b) { return pos[a] < pos[b]; });
    return out;
  };
  long long bytes = 0;  // the budget's measure: 8 per double of the blocks, 4 per block update
  for (std::size_t b = 0; b < s.block_row.size(); ++b)
    bytes += 8LL * s.size(s.block_row[b]) * s.size(s.block_col[b]);
  for (int p = 0; p < nn; ++p) {
    const int k = order[p];
    if (s.size(k) == 0) continue;
    const std::vector<int> rows = later(rows_of[k], p), cols = later(cols_of[k], p);
    bytes += 4LL * static_cast<long long>(rows.size()) * static_cast<long long>(cols.size());
    for (int i : rows) {
      if (cols.empty()) break;
      mark_row(i);
      for (int j : cols) {
        if (stamp[j] != tick) {
          stamp[j] = tick;
          block_of[j] = add_block(i, j);
          bytes += 8LL * s.size(i) * s.size(j);
        }
      }
    }
    if (max_bytes > 0 && bytes > max_bytes) return false;
  }

  // Storage: structural blocks in id order (the assembled matrix), then the fill.
  const int nb = static_cast<int>(s.block_row.size());
  s.block_offset.resize(nb);
  long long off = 0;
  for (int b = 0; b < nb; ++b) {
    if (b == s.n_structural) s.structural_size = static_cast<int>(off);
    s.block_offset[b] = static_cast<int>(off);
    off += static_cast<long long>(s.size(s.block_row[b])) * s.size(s.block_col[b]);
    if (off > INT32_MAX) invalid("the blocks need more than 2^31 doubles");
  }
  if (nb == s.n_structural) s.structural_size = static_cast<int>(off);
  s.total_size = static_cast<int>(off);

  // Rows in elimination order.
  std::vector<int> row0(nn);
  s.perm.reserve(n);
  for (int p = 0; p < nn; ++p) {
    const int k = order[p];
    row0[k] = static_cast<int>(s.perm.size());
    for (int q = s.node_ptr[k]; q < s.node_ptr[k + 1]; ++q) s.perm.push_back(s.node_idx[q]);
  }

  // Steps and their links (the final pattern: fill at step p involves only nodes
  // after p, so a node's neighbours are complete when it is eliminated).
  auto offset_of = [&](int i, int j) { return s.block_offset[id.at(key(i, j))]; };
  auto earlier = [&](const std::vector<int>& nodes, int p) {
    std::vector<int> out;
    for (int x : nodes) {
      if (pos[x] < p && s.size(x) > 0) out.push_back(x);
    }
    std::sort(out.begin(), out.end(), [&](int a, int b) { return pos[a] < pos[b]; });
    return out;
  };
  for (int p = 0; p < nn; ++p) {
    const int k = order[p];
    if (s.size(k) == 0) continue;
    Step st{};
    st.node = k;
    st.size = s.size(k);
    st.diag = offset_of(k, k);
    st.row0 = row0[k];
    std::vector<int> cols, rows;
    for (int j : later(cols_of[k], p)) {
      if (s.size(j) > 0) cols.push_back(j);
    }
    for (int i : later(rows_of[k], p)) {
      if (s.size(i) > 0) rows.push_back(i);
    }
    st.cols_begin = static_cast<int>(s.links.size());
    for (int j : cols) s.links.push_back({offset_of(k, j), s.size(j), row0[j]});
    st.cols_end = st.rows_begin = static_cast<int>(s.links.size());
    for (int i : rows) s.links.push_back({offset_of(i, k), s.size(i), row0[i]});
    st.rows_end = st.uin_begin = static_cast<int>(s.links.size());
    for (int i : earlier(rows_of[k], p)) s.links.push_back({offset_of(i, k), s.size(i), row0[i]});
    st.uin_end = st.lin_begin = static_cast<int>(s.links.size());
    for (int j : earlier(cols_of[k], p)) s.links.push_back({offset_of(k, j), s.size(j), row0[j]});
    st.lin_end = static_cast<int>(s.links.size());
    st.upd_begin = static_cast<int>(s.update_off.size());
    for (int i : rows) {
      if (cols.empty()) break;
      mark_row(i);
      for (int j : cols) {
        if (stamp[j] != tick) throw std::logic_error("analyze_blocks: a fill block is missing");
        s.update_off.push_back(s.block_offset[block_of[j]]);
      }
    }
    s.steps.push_back(st);
  }

  // Block ids by row, sorted by column (find()).
  s.row_ptr.assign(nn + 1, 0);
  for (int b = 0; b < nb; ++b) ++s.row_ptr[s.block_row[b] + 1];
  for (int k = 0; k < nn; ++k) s.row_ptr[k + 1] += s.row_ptr[k];
  s.row_col.resize(nb);
  s.row_block.resize(nb);
  {
    std::vector<int> next(s.row_ptr.begin(), s.row_ptr.end() - 1);
    for (int b = 0; b < nb; ++b) {
      const int q = next[s.block_row[b]]++;
      s.row_col[q] = s.block_col[b];
      s.row_block[q] = b;
    }
    for (int k = 0; k < nn; ++k) {
      std::vector<std::pair<int, int>> row;
      for (int q = s.row_ptr[k]; q < s.row_ptr[k + 1]; ++q) row.emplace_back(s.row_col[q], s.row_block[q]);
      std::sort(row.begin(), row.end());
      for (std::size_t t = 0; t < row.size(); ++t) {
        s.row_col[s.row_ptr[k] + t] = row[t].first;
        s.row_block[s.row_ptr[k] + t] = row[t].second;
      }
    }
  }
  return true;
}

}  // namespace

BlockStructure analyze_blocks(const std::vector<std::vector<int>>& node_unknowns,
                              const std::vector<std::pair<int, int>>& blocks, const std::vector<int>& order) {
  BlockStructure s;
  analyze_into(s, node_unknowns, blocks, order, 0);
  return s;
}

std::optional<BlockStructure> analyze_blocks_within(const std::vector<std::vector<int>>& node_unknowns,
                                                    const std::vector<std::pair<int, int>>& blocks,
                                                    const std::vector<int>& order, long long max_bytes) {
  BlockStructure s;
  if (!analyze_into(s, node_unknowns, blocks, order, max_bytes)) return std::nullopt;
  return s;
}

// ---------------------------------------------------------------------------
// Numeric phase.

void BlockLU::init(const BlockStructure& s) {
  lu_.assign(s.total_size, 0.0);
  pivots_.assign(s.n, 0);
  dinv_.assign(s.n, 0.0);
  work_.assign(static_cast<std::size_t>(s.n) * kRhsChunk, 0.0);
  tmp_.assign(std::max(s.max_size, 1), 0.0);
}

bool BlockLU::factor(const BlockStructure& s, const double* values) {
  if (lu_.size() != static_cast<std::size_t>(s.total_size) || dinv_.size() != static_cast<std::size_t>(s.n))
    throw std::logic_error("BlockLU::factor: init() was not called with this structure");
  double* lu = lu_.data();
  if (s.structural_size > 0) std::memcpy(lu, values, sizeof(double) * s.structural_size);
  if (s.total_size > s.structural_size)
    std::memset(lu + s.structural_size, 0, sizeof(double) * (s.total_size - s.structural_size));
  int* piv = pivots_.data();
  double* dinv = dinv_.data();
  double* scratch = tmp_.data();
  failed_node_ = -1;
  for (const Step& st : s.steps) {
    bool ok = true;
#define DOJO_CALL(M) ok = eliminate<M>(s, st, lu, piv, dinv, scratch)
    DOJO_DISPATCH(st.size, DOJO_CALL)
#undef DOJO_CALL
    if (!ok) {
      failed_node_ = st.node;
      return false;
    }
  }
  return true;
}

void BlockLU::solve(const BlockStructure& s, double* b, int nrhs, bool transpose) const {
  if (work_.size() != static_cast<std::size_t>(s.n) * kRhsChunk)
    throw std::logic_error("BlockLU::solve: init() was not called with this structure");
  const int n = s.n;
  const int* perm = s.perm.data();
  double* w = work_.data();
  for (int c0 = 0; c0 < nrhs; c0 += kRhsChunk) {
    const int R = std::min(kRhsChunk, nrhs - c0);
    double* bc = b + static_cast<std::size_t>(c0) * n;
    // Gather into elimination order.
    if (R == 1) {
      for (int r = 0; r < n; ++r) w[r] = bc[perm[r]];
    } else {
      for (int r = 0; r < n; ++r) {
        const double* src = bc + perm[r];
        for (int c = 0; c < R; ++c) w[r * R + c] = src[static_cast<std::size_t>(c) * n];
      }
    }
    const SolveArgs g{lu_.data(), pivots_.data(), dinv_.data(), s.links.data(), w, R, tmp_.data()};
    if (R == 1) {
      solve_chunk<true>(s, g, transpose);
    } else {
      solve_chunk<false>(s, g, transpose);
    }
    // Scatter back.
    if (R == 1) {
      for (int r = 0; r < n; ++r) bc[perm[r]] = w[r];
    } else {
      for (int r = 0; r < n; ++r) {
        double* dst = bc + perm[r];
        for (int c = 0; c < R; ++c) dst[static_cast<std::size_t>(c) * n] = w[r * R + c];
      }
    }
  }
}

void block_multiply(const BlockStructure& s, const double* values, const double* x, double* y, bool transpose) {
  std::fill(y, y + s.n, 0.0);
  const int* idx = s.node_idx.data();
  for (int b = 0; b < s.n_structural; ++b) {
    const int i = s.block_row[b], j = s.block_col[b];
    const int mi = s.size(i), mj = s.size(j);
    const int* ri = idx + s.node_ptr[i];
    const int* cj = idx + s.node_ptr[j];
    const double* a = values + s.block_offset[b];
    if (!transpose) {
      for (int r = 0; r < mi; ++r) {
        double acc = 0.0;
        for (int t = 0; t < mj; ++t) acc += a[r * mj + t] * x[cj[t]];
        y[ri[r]] += acc;
      }
    } else {
      for (int t = 0; t < mj; ++t) {
        double acc = 0.0;
        for (int r = 0; r < mi; ++r) acc += a[r * mj + t] * x[ri[r]];
        y[cj[t]] += acc;
      }
    }
  }
}

// Widest block (a node's size) whose row block_residual's column pairs keep in registers.
constexpr int kMaxBlockSide = 12;

void block_residual(const BlockStructure& s, const double* values, const double* b, const double* x, double* r,
                    int nrhs, bool transpose, std::vector<double>* work) {
  const int* idx = s.node_idx.data();
  if (work && nrhs > 1 && !transpose) {
    // Rows of nrhs entries: xt, rt (n x nrhs). The column-at-a-time loop below gathers x
    // through the block's index list once per column and runs its inner loop over at
    // most six entries; here each block row's sums are formed for two columns at a time in
    // v2d lanes, the row's entries and the partial sums in registers (the 20-link chain's
    // 40 minimal directions: a fifth of its minimal gradients went to this residual).
    // Each entry's sum is the same: acc over the block's row in the same order from 0,
    // then subtracted.
    const std::size_t n = static_cast<std::size_t>(s.n), k = static_cast<std::size_t>(nrhs);
    work->resize(2 * n * k);
    double* xt = work->data();
    double* rt = xt + n * k;
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t i = 0; i < n; ++i) {
        xt[i * k + c] = x[c * n + i];
        rt[i * k + c] = b[c * n + i];
      }
    const double* rows[kMaxBlockSide];
    double coef[kMaxBlockSide];
    for (int blk = 0; blk < s.n_structural; ++blk) {
      const int i = s.block_row[blk], j = s.block_col[blk];
      const int mi = s.size(i), mj = s.size(j);
      const int* ri = idx + s.node_ptr[i];
      const int* cj = idx + s.node_ptr[j];
      const double* a = values + s.block_offset[blk];
      if (mj > kMaxBlockSide) {  // wider than the registers below hold: entry by entry
        for (int p = 0; p < mi; ++p) {
          double* rp = rt + static_cast<std::size_t>(ri[p]) * k;
          for (std::size_t c = 0; c < k; ++c) {
            double acc = 0.0;
            for (int q = 0; q < mj; ++q) acc += a[p * mj + q] * xt[static_cast<std::size_t>(cj[q]) * k + c];
            rp[c] -= acc;
          }
        }
        continue;
      }
      for (int q = 0; q < mj; ++q) rows[q] = xt + static_cast<std::size_t>(cj[q]) * k;
      for (int p = 0; p < mi; ++p) {
        for (int q = 0; q < mj; ++q) coef[q] = a[p * mj + q];
        double* rp = rt + static_cast<std::size_t>(ri[p]) * k;
        std::size_t c = 0;
        for (; c + 1 < k; c += 2) {
          v2d acc = {0.0, 0.0};
          for (int q = 0; q < mj; ++q) {
            const v2d v = {coef[q], coef[q]};
            acc += v * load2(rows[q] + c);
          }
          store2(rp + c, load2(rp + c) - acc);
        }
        for (; c < k; ++c) {
          double acc = 0.0;
          for (int q = 0; q < mj; ++q) acc += coef[q] * rows[q][c];
          rp[c] -= acc;
        }
      }
    }
    for (std::size_t c = 0; c < k; ++c)
      for (std::size_t i = 0; i < n; ++i) r[c * n + i] = rt[i * k + c];
    return;
  }
  std::copy(b, b + static_cast<std::size_t>(s.n) * nrhs, r);
  for (int blk = 0; blk < s.n_structural; ++blk) {
    const int i = s.block_row[blk], j = s.block_col[blk];
    const int mi = s.size(i), mj = s.size(j);
    const int* ri = idx + s.node_ptr[i];
    const int* cj = idx + s.node_ptr[j];
    const double* a = values + s.block_offset[blk];
    for (int c = 0; c < nrhs; ++c) {
      const std::size_t off = static_cast<std::size_t>(c) * s.n;
      const double* xc = x + off;
      double* rc = r + off;
      if (!transpose) {
        for (int p = 0; p < mi; ++p) {
          double acc = 0.0;
          for (int q = 0; q < mj; ++q) acc += a[p * mj + q] * xc[cj[q]];
          rc[ri[p]] -= acc;
        }
      } else {
        for (int q = 0; q < mj; ++q) {
          double acc = 0.0;
          for (int p = 0; p < mi; ++p) acc += a[p * mj + q] * xc[ri[p]];
          rc[cj[q]] -= acc;
        }
      }
    }
  }
}

#undef DOJO_ALWAYS_INLINE
#undef DOJO_NOINLINE
#undef DOJO_LAMBDA_INLINE
#undef DOJO_COLUMN
#undef DOJO_LANES
#undef DOJO_DISPATCH

}  // namespace dojo
