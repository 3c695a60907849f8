// Bindings of the block-sparse LU (linalg/block_lu.h).
#include "common.h"

#include "linalg/block_lu.h"

using namespace dojo;

namespace dojo::bindings {

// The block-sparse LU, for tests and benchmarks (in _core.testing; the step uses it from C++).
namespace {

namespace nbl = nanobind;

// A pattern, its symbolic factorisation and one numeric factorisation.
struct BlockSystem {
  dojo::BlockStructure s;
  dojo::BlockLU lu;
  bool factored = false;

  BlockSystem(const std::vector<std::vector<int>>& node_unknowns, const std::vector<std::pair<int, int>>& blocks,
              const std::vector<int>& order)
      : s(dojo::analyze_blocks(node_unknowns, blocks, order)) {
    lu.init(s);
  }
};

using Values = nbl::ndarray<const double, nbl::ndim<1>, nbl::c_contig, nbl::device::cpu>;
using AnyArray = nbl::ndarray<const double, nbl::device::cpu>;

void check_values(const BlockSystem& sys, const Values& values) {
  if (static_cast<int64_t>(values.shape(0)) != sys.s.structural_size)
    throw std::invalid_argument("values has " + std::to_string(values.shape(0)) + " entries, the pattern's blocks have " +
                                std::to_string(sys.s.structural_size));
}

// A (n,) or (n, k) array as n x k column-major doubles.
std::vector<double> column_major(const BlockSystem& sys, const AnyArray& b, const char* name, size_t* k) {
  const size_t n = static_cast<size_t>(sys.s.n);
  if ((b.ndim() != 1 && b.ndim() != 2) || b.shape(0) != n)
    throw std::invalid_argument(std::string(name) + " must have shape (n,) or (n, k) with n = " + std::to_string(n));
  *k = b.ndim() == 2 ? b.shape(1) : 1;
  std::vector<double> out(n * *k);
  const double* data = b.data();
  const int64_t s0 = b.stride(0), s1 = b.ndim() == 2 ? b.stride(1) : 0;
  for (size_t c = 0; c < *k; ++c)
    for (size_t r = 0; r < n; ++r) out[c * n + r] = data[static_cast<int64_t>(r) * s0 + static_cast<int64_t>(c) * s1];
  return out;
}

// The result in the shape of the input: (n,), or (n, k) in Fortran order.
nbl::ndarray<nbl::numpy, double> shaped_like(std::vector<double> x, const AnyArray& b, size_t n, size_t k) {
  if (b.ndim() == 1) return numpy_owning<double>(std::move(x), {n});
  return numpy_owning<double>(std::move(x), {n, k}, {1, static_cast<int64_t>(n)});
}

}  // namespace

void bind_block_lu(nanobind::module_& testing) {
  nb::module_& m = testing;
  namespace nb = nanobind;
  nb::class_<BlockSystem>(
      m, "BlockSystem",
      "A block-sparse matrix pattern over graph nodes, its symbolic block LU (analyze_blocks) and one numeric\n"
      "factorisation (BlockLU). node_unknowns[k] lists node k's unknowns (together exactly 0..n-1); blocks are the\n"
      "structural (i, j) node pairs (every (k, k) present; duplicates merged, first appearance kept); order is the\n"
      "elimination order (a permutation of the nodes). Values are the structural blocks, each a row-major\n"
      "size(i) x size(j) array at block_offsets[b], in block id order (find(i, j)); fill blocks (ids >=\n"
      "n_structural) exist only in the factor.")
      .def(nb::init<const std::vector<std::vector<int>>&, const std::vector<std::pair<int, int>>&,
                    const std::vector<int>&>(),
           nb::arg("node_unknowns"), nb::arg("blocks"), nb::arg("order"))
      .def_prop_ro("n", [](const BlockSystem& t) { return t.s.n; })
      .def_prop_ro("n_nodes", [](const BlockSystem& t) { return t.s.n_nodes; })
      .def_prop_ro("n_structural", [](const BlockSystem& t) { return t.s.n_structural; })
      .def_prop_ro("structural_size", [](const BlockSystem& t) { return t.s.structural_size; })
      .def_prop_ro("total_size", [](const BlockSystem& t) { return t.s.total_size; })
      .def_prop_ro("fill", [](const BlockSystem& t) { return static_cast<int>(t.s.block_row.size()) - t.s.n_structural; },
                   "Number of fill blocks (ids n_structural ..).")
      .def_prop_ro("block_offsets",
                   [](const BlockSystem& t) {
                     return numpy_owning<int32_t>(std::vector<int32_t>(t.s.block_offset.begin(), t.s.block_offset.end()),
                                               {t.s.block_offset.size()});
                   },
                   nb::rv_policy::move,
                   "Offset of every block (structural, then fill) in the factor storage; the structural ones are the "
                   "layout of `values`.")
      .def_prop_ro("block_rows",
                   [](const BlockSystem& t) {
                     return numpy_owning<int32_t>(std::vector<int32_t>(t.s.block_row.begin(), t.s.block_row.end()),
                                               {t.s.block_row.size()});
                   }, nb::rv_policy::move)
      .def_prop_ro("block_cols",
                   [](const BlockSystem& t) {
                     return numpy_owning<int32_t>(std::vector<int32_t>(t.s.block_col.begin(), t.s.block_col.end()),
                                               {t.s.block_col.size()});
                   }, nb::rv_policy::move)
      .def("find", [](const BlockSystem& t, int i, int j) { return t.s.find(i, j); }, nb::arg("i"), nb::arg("j"),
           "Block id of (i, j), or -1.")
      .def(
          "factor",
          [](BlockSystem& t, const Values& values) {
            check_values(t, values);
            t.factored = t.lu.factor(t.s, values.data());
            return t.factored;
          },
          nb::arg("values"),
          "Factorise the matrix with these structural values; False on a zero or non-finite pivot.")
      .def(
          "solve",
          [](const BlockSystem& t, const AnyArray& b, bool transpose) {
            if (!t.factored) throw std::runtime_error("BlockSystem.solve: no valid factorisation (factor() first)");
            size_t k = 0;
            std::vector<double> x = column_major(t, b, "b", &k);
            t.lu.solve(t.s, x.data(), static_cast<int>(k), transpose);
            return shaped_like(std::move(x), b, static_cast<size_t>(t.s.n), k);
          },
          nb::arg("b"), nb::arg("transpose") = false,
          "x with A x = b (A^T x = b if transpose) for b of shape (n,) or (n, k).")
      .def(
          "multiply",
          [](const BlockSystem& t, const Values& values, const AnyArray& x, bool transpose) {
            check_values(t, values);
            size_t k = 0;
            const std::vector<double> xc = column_major(t, x, "x", &k);
            const size_t n = static_cast<size_t>(t.s.n);
            std::vector<double> y(n * k);
            for (size_t c = 0; c < k; ++c)
              dojo::block_multiply(t.s, values.data(), xc.data() + c * n, y.data() + c * n, transpose);
            return shaped_like(std::move(y), x, n, k);
          },
          nb::arg("values"), nb::arg("x"), nb::arg("transpose") = false, "A x (A^T x if transpose).")
      .def(
          "time_kernels",
          [](BlockSystem& t, const Values& values, const AnyArray& b, int repeat, int batches, bool transpose) {
            // Best per-call time of factor and of solve over `batches` batches of `repeat` calls, measured in
            // C++ (no Python call or array conversion in the loop); each solve first restores b (an n*k copy).
            // Short batches, many of them: on a shared machine the best batch is an uninterrupted one.
            check_values(t, values);
            if (repeat < 1 || batches < 1) throw std::invalid_argument("repeat and batches must be >= 1");
            size_t k = 0;
            const std::vector<double> b0 = column_major(t, b, "b", &k);
            std::vector<double> x(b0);
            const int nrhs = static_cast<int>(k);
            using clock = std::chrono::steady_clock;
            double best_factor = 1e300, best_solve = 1e300;
            bool ok = true;
            for (int batch = 0; batch < batches; ++batch) {
              const auto t0 = clock::now();
              for (int r = 0; r < repeat; ++r) ok = t.lu.factor(t.s, values.data()) && ok;
              const auto t1 = clock::now();
              for (int r = 0; r < repeat; ++r) {
                std::copy(b0.begin(), b0.end(), x.begin());
                t.lu.solve(t.s, x.data(), nrhs, transpose);
              }
              const auto t2 = clock::now();
              best_factor = std::min(best_factor, std::chrono::duration<double>(t1 - t0).count() / repeat);
              best_solve = std::min(best_solve, std::chrono::duration<double>(t2 - t1).count() / repeat);
            }
            t.factored = ok;
            if (!ok) throw std::runtime_error("BlockSystem.time_kernels: the matrix is singular");
            return std::make_pair(best_factor, best_solve);
          },
          nb::arg("values"), nb::arg("b"), nb::arg("repeat") = 20, nb::arg("batches") = 200,
          nb::arg("transpose") = false,
          "(factor seconds, solve seconds): the best per-call time over `batches` batches of `repeat` calls, "
          "timed in C++ (benchmarks).")
      .def(
          "to_dense",
          [](const BlockSystem& t, const Values& values) {
            check_values(t, values);
            const size_t n = static_cast<size_t>(t.s.n);
            std::vector<double> a(n * n, 0.0);
            const dojo::BlockStructure& s = t.s;
            for (int b = 0; b < s.n_structural; ++b) {
              const int i = s.block_row[b], j = s.block_col[b];
              const int mi = s.size(i), mj = s.size(j);
              const double* v = values.data() + s.block_offset[b];
              for (int r = 0; r < mi; ++r)
                for (int c = 0; c < mj; ++c)
                  a[static_cast<size_t>(s.node_idx[s.node_ptr[i] + r]) * n + s.node_idx[s.node_ptr[j] + c]] +=
                      v[r * mj + c];
            }
            return numpy_owning<double>(std::move(a), {n, n});
          },
          nb::arg("values"), "The dense (n, n) matrix (tests).");
}

}  // namespace dojo::bindings
