// The only nanobind file: the Python face of the C++ core (dojo_cli._core).
// Bindings are thin and mirror the C++ names; C++ exceptions become Python
// exceptions at this boundary (std::invalid_argument -> ValueError), which
// dojo_cli.simulation turns into DojoError.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>
#include <optional>
#include <type_traits>
#include <stdexcept>
#include <string>

#include "maximal/coordinates.h"
#include "linalg/block_lu.h"
#include "maximal/contact.h"
#include "maximal/data.h"
#include "maximal/energy.h"
#include "maximal/gradients.h"
#include "maximal/initial.h"
#include "maximal/interior_point.h"
#include "maximal/model.h"
#include "maximal/step.h"
#include "minimal/tree.h"
#include "minimal/rk4.h"

namespace nb = nanobind;
using namespace dojo;

namespace {

using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, double>;

// A new numpy array owning `values` (moved in, not copied), with the given shape and
// element strides (empty: C order). Every array the core hands out is made here.
template <class T>
nb::ndarray<nb::numpy, T> numpy_owning(std::vector<T> values, const std::vector<size_t>& shape,
                                       const std::vector<int64_t>& strides = {}) {
  auto* held = new std::vector<T>(std::move(values));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(held->data(), shape.size(), shape.data(), owner,
                                   strides.empty() ? nullptr : strides.data());
}

// A new zero-filled numpy array of the given shape.
template <class T>
nb::ndarray<nb::numpy, T> numpy_zeros(const std::vector<size_t>& shape) {
  size_t size = 1;
  for (size_t n : shape) size *= n;
  return numpy_owning(std::vector<T>(size, T(0)), shape);
}

// A read-only-by-convention numpy view of a buffer owned by `owner` (no copy).
template <class V>
OutArray view(V& vec, nb::handle owner, std::initializer_list<size_t> shape) {
  return OutArray(vec.data(), shape, owner);
}

// A property getter: a numpy view of a Data vector, as rows of `cols` (1: a vector).
template <std::vector<double> Data::*member>
auto data_view(size_t cols) {
  return [cols](nb::handle self) {
    std::vector<double>& v = nb::cast<Data&>(self).*member;
    return cols == 1 ? OutArray(v.data(), {v.size()}, self) : OutArray(v.data(), {v.size() / cols, cols}, self);
  };
}

const double* checked(const std::optional<InArray>& a, size_t size, const char* what) {
  if (!a) return nullptr;
  if (a->size() != size)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " values, got " +
                                std::to_string(a->size()));
  return a->data();
}

}  // namespace

// ---- contact kernels (test and tool access; the step calls them from C++)
namespace {

using InputArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// A new numpy array (C order) holding a copy of `data`.
nb::object numpy_copy(const double* data, std::initializer_list<size_t> shape) {
  size_t size = 1;
  for (size_t n : shape) size *= n;
  return nb::cast(numpy_owning(std::vector<double>(data, data + size), std::vector<size_t>(shape)));
}

// The leading rows x cols block of a row-major matrix with `stride` columns, as numpy.
nb::object numpy_block(const double* data, size_t stride, size_t rows, size_t cols) {
  double tmp[12 * 16];
  for (size_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < cols; ++k) tmp[r * cols + k] = data[r * stride + k];
  return numpy_copy(tmp, {rows, cols});
}

const double* require_size(const InputArray& a, size_t size, const char* name) {
  if (a.size() != size) throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(size) +
                                                    " entries, got " + std::to_string(a.size()));
  return a.data();
}

void read_sequence(nb::handle obj, double* out, size_t max_size, const char* name, bool exact) {
  size_t i = 0;
  for (nb::handle item : obj) {
    if (i == max_size) throw std::invalid_argument(std::string(name) + ": too many entries");
    out[i++] = nb::cast<double>(item);
  }
  if (exact && i != max_size) throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(max_size) +
                                                          " entries, got " + std::to_string(i));
}

dojo::ContactModel parse_model(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj)) {
    const std::string name = nb::cast<std::string>(obj);
    if (name == "impact") return dojo::ContactModel::Impact;
    if (name == "nonlinear") return dojo::ContactModel::Nonlinear;
    if (name == "linear") return dojo::ContactModel::Linear;
    throw std::invalid_argument("model: unknown contact model '" + name + "'");
  }
  const int k = nb::cast<int>(obj);
  if (k < 0 || k > 2) throw std::invalid_argument("model: expected 0, 1 or 2");
  return static_cast<dojo::ContactModel>(k);
}

dojo::CollisionKind parse_kind(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj)) {
    const std::string name = nb::cast<std::string>(obj);
    if (name == "halfspace") return dojo::CollisionKind::Halfspace;
    if (name == "sphere") return dojo::CollisionKind::Sphere;
    if (name == "capsule") return dojo::CollisionKind::Capsule;
    if (name == "box") return dojo::CollisionKind::Box;
    if (name == "segment_capsule") return dojo::CollisionKind::SegmentCapsule;
    if (name == "segment_box") return dojo::CollisionKind::SegmentBox;
    if (name == "circle_halfspace") return dojo::CollisionKind::CircleHalfspace;
    if (name == "corner_box") return dojo::CollisionKind::CornerBox;
    throw std::invalid_argument("kind: unknown collision kind '" + name + "'");
  }
  const int k = nb::cast<int>(obj);
  if (k < 0 || k >= dojo::kCollisionKinds)
    throw std::invalid_argument("kind: expected 0.." + std::to_string(dojo::kCollisionKinds - 1));
  return static_cast<dojo::CollisionKind>(k);
}

// ContactParams from a dict {body, other, model, kind, friction, radius, offset (3,),
// shape_a (<= 7,), shape (<= 7,)}; missing keys take contact.py's defaults (the ground, nonlinear, mu 0.5).
dojo::ContactParams parse_contact(const nb::dict& d) {
  dojo::ContactParams c{};
  c.body = d.contains("body") ? nb::cast<int>(d["body"]) : 0;
  c.other = d.contains("other") ? nb::cast<int>(d["other"]) : -1;
  c.model = d.contains("model") ? parse_model(d["model"]) : dojo::ContactModel::Nonlinear;
  c.kind = d.contains("kind") ? parse_kind(d["kind"]) : dojo::CollisionKind::Halfspace;
  c.friction = d.contains("friction") ? nb::cast<double>(d["friction"]) : 0.5;
  c.radius = d.contains("radius") ? nb::cast<double>(d["radius"]) : 0.0;
  if (d.contains("offset")) read_sequence(d["offset"], c.offset, 3, "offset", true);
  if (d.contains("shape_a")) read_sequence(d["shape_a"], c.shape_a, dojo::kShapeASize, "shape_a", false);
  if (d.contains("shape")) {
    read_sequence(d["shape"], c.shape, dojo::kShapeSize, "shape", false);
  } else if (c.kind == dojo::CollisionKind::Halfspace) {
    c.shape[2] = 1.0;  // the ground: normal +z through the origin
  } else {
    throw std::invalid_argument("shape: required for a body shape");
  }
  return c;
}

const char* output_names[] = {"residual", "jacobians", "parameters"};

dojo::ContactOutput parse_output(const std::string& name) {
  for (int k = 0; k < 3; ++k)
    if (name == output_names[k]) return static_cast<dojo::ContactOutput>(k);
  throw std::invalid_argument("output: expected 'residual', 'jacobians' or 'parameters', got '" + name + "'");
}

}  // namespace

void bind_contacts(nb::module_& m) {
  m.def(
      "evaluate_contact",
      [](const nb::dict& params, double h, const InputArray& xa, const InputArray& qa, const InputArray& va,
         const InputArray& wa, const InputArray& mwa, const InputArray& xb, const InputArray& qb,
         const InputArray& vb, const InputArray& wb, const InputArray& mwb, const InputArray& s,
         const InputArray& gamma, const std::string& output, bool reference) {
        const dojo::ContactParams c = parse_contact(params);
        const size_t n = static_cast<size_t>(dojo::contact_half_size(c.model));
        const dojo::ContactBodyState a{require_size(xa, 3, "xa"), require_size(qa, 4, "qa"), require_size(va, 3, "va"),
                                       require_size(wa, 3, "wa"), require_size(mwa, 9, "mwa")};
        const dojo::ContactBodyState b{require_size(xb, 3, "xb"), require_size(qb, 4, "qb"), require_size(vb, 3, "vb"),
                                       require_size(wb, 3, "wb"), require_size(mwb, 9, "mwb")};
        const dojo::ContactOutput level = parse_output(output);
        dojo::ContactEval ev;
        const double* sp = require_size(s, n, "s");
        const double* gp = require_size(gamma, n, "gamma");
        if (reference) {
          dojo::evaluate_contact_reference(c, h, a, b, sp, gp, level, ev);
        } else {
          dojo::evaluate_contact(c, h, a, b, sp, gp, level, ev);
        }
        nb::dict out;
        out["comp"] = numpy_copy(ev.comp, {n});
        out["cons"] = numpy_copy(ev.cons, {n});
        out["wrench"] = numpy_copy(ev.wrench, {12});
        out["distance"] = ev.distance;
        out["normal_impulse"] = ev.normal_impulse;
        out["friction_impulse"] = numpy_copy(ev.friction_impulse, {2});
        out["slip"] = numpy_copy(ev.slip, {2});
        if (level != dojo::ContactOutput::Residual) {
          out["comp_jac"] = numpy_block(&ev.comp_jac[0][0], 2 * dojo::kMaxContactHalfSize, n, 2 * n);
          out["cons_local"] = numpy_block(&ev.cons_local[0][0], 2 * dojo::kMaxContactHalfSize, n, 2 * n);
          out["cons_body"] = numpy_block(&ev.cons_body[0][0], 12, n, 12);
          out["wrench_gamma"] = numpy_block(&ev.wrench_gamma[0][0], dojo::kMaxContactHalfSize, 12, n);
          out["wrench_body"] = numpy_block(&ev.wrench_body[0][0], 12, 12, 12);
          out["cons_z3"] = numpy_block(&ev.cons_z3[0][0], 12, n, 12);
          out["wrench_z3"] = numpy_block(&ev.wrench_z3[0][0], 12, 12, 12);
        }
        if (level == dojo::ContactOutput::Parameters) {
          out["cons_parameters"] = numpy_block(&ev.cons_parameters[0][0], 4, n, 4);
          out["wrench_parameters"] = numpy_block(&ev.wrench_parameters[0][0], 4, 12, 4);
        }
        return out;
      },
      nb::arg("params"), nb::arg("h"), nb::arg("xa"), nb::arg("qa"), nb::arg("va"), nb::arg("wa"), nb::arg("mwa"),
      nb::arg("xb"), nb::arg("qb"), nb::arg("vb"), nb::arg("wb"), nb::arg("mwb"), nb::arg("s"), nb::arg("gamma"),
      nb::arg("output") = "jacobians", nb::arg("reference") = false,
      "One contact's residual rows, wrench and derivatives (contact.h's evaluate_contact).\n\n"
      "params: dict with body, other (-1 = world), model ('impact' | 'nonlinear' | 'linear'),\n"
      "kind ('halfspace' | 'sphere' | 'capsule' | 'box' | 'segment_capsule' | 'segment_box' |\n"
      "'circle_halfspace' | 'corner_box'), friction, radius, offset (3,), shape_a (<= 7,), shape (7,).\n"
      "x/q: (3,)/(4,) next configuration; v/w: (3,) midpoint velocities; mw: (3, 3) dt3/dw25;\n"
      "s, gamma: (N,). output: 'residual', 'jacobians' or 'parameters'. reference: use\n"
      "evaluate_contact_reference (dual numbers through every operation; for tests).\n"
      "Returns a dict of ContactEval's fields (leading N rows / 2N columns).");

  m.def(
      "contact_geometry",
      [](nb::handle kind, const InputArray& xa, const InputArray& qa, const InputArray& offset, double radius,
         const InputArray& xb, const InputArray& qb, const InputArray& shape, bool parameters, nb::handle shape_a) {
        double shape7[dojo::kShapeSize] = {0.0};
        if (shape.size() > static_cast<size_t>(dojo::kShapeSize)) throw std::invalid_argument("shape: too many entries");
        std::copy(shape.data(), shape.data() + shape.size(), shape7);
        double shape4[dojo::kShapeASize] = {0.0};
        if (!shape_a.is_none()) read_sequence(shape_a, shape4, dojo::kShapeASize, "shape_a", false);
        dojo::GeometryJacobian g;
        dojo::contact_geometry(parse_kind(kind), require_size(xa, 3, "xa"), require_size(qa, 4, "qa"),
                               require_size(offset, 3, "offset"), radius, shape4, require_size(xb, 3, "xb"),
                               require_size(qb, 4, "qb"), shape7, parameters, g);
        const size_t cols = static_cast<size_t>(g.columns);
        const size_t stride = dojo::kPairParameterColumns;
        nb::dict out;
        out["distance"] = g.distance;
        out["normal"] = numpy_copy(g.normal, {3});
        out["tangent"] = numpy_copy(&g.tangent[0][0], {2, 3});
        out["point_a"] = numpy_copy(g.point_a, {3});
        out["point_b"] = numpy_copy(g.point_b, {3});
        out["distance_jac"] = numpy_copy(g.distance_jac, {cols});
        out["normal_jac"] = numpy_block(&g.normal_jac[0][0], stride, 3, cols);
        double tangent_jac[6 * dojo::kPairParameterColumns];
        for (size_t r = 0; r < 6; ++r)
          for (size_t k = 0; k < cols; ++k) tangent_jac[r * cols + k] = (&g.tangent_jac[0][0][0])[r * stride + k];
        out["tangent_jac"] = numpy_copy(tangent_jac, {2, 3, cols});
        out["point_a_jac"] = numpy_block(&g.point_a_jac[0][0], stride, 3, cols);
        out["point_b_jac"] = numpy_block(&g.point_b_jac[0][0], stride, 3, cols);
        return out;
      },
      nb::arg("kind"), nb::arg("xa"), nb::arg("qa"), nb::arg("offset"), nb::arg("radius"), nb::arg("xb"),
      nb::arg("qb"), nb::arg("shape"), nb::arg("parameters") = false, nb::arg("shape_a") = nb::none(),
      "Collision geometry of a primitive on body a (a sphere; a segment, circle or box corner, shape_a (<= 7,))\n"
      "against body b's shape (collision.h), with Jacobians over [x_a, t_a, x_b, t_b] (12 columns)\n"
      "or also offset (3) and radius (16).");

  m.def(
      "contact_starting_point",
      [](nb::handle model) {
        const dojo::ContactModel k = parse_model(model);
        const size_t n = static_cast<size_t>(dojo::contact_half_size(k));
        double s[dojo::kMaxContactHalfSize], gamma[dojo::kMaxContactHalfSize];
        dojo::contact_starting_point(k, s, gamma);
        return nb::make_tuple(numpy_copy(s, {n}), numpy_copy(gamma, {n}));
      },
      nb::arg("model"), "Dojo's interior-point starting (s, gamma) of one contact.");

  m.def(
      "contact_half_size", [](nb::handle model) { return dojo::contact_half_size(parse_model(model)); },
      nb::arg("model"), "N: the number of slacks (and of impulses) of one contact.");
}

// ---- block-sparse LU (test and benchmark access; the step uses it from C++)
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

void bind_block_lu(nanobind::module_& m) {
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

// ---- the minimal-coordinate tree (tree.h): one crossing per PinnZoo function
namespace {

const double* tree_take(const InArray& a, size_t size, const char* what) {
  if (a.size() != size)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " entries, got " +
                                std::to_string(a.size()));
  return a.data();
}

std::vector<double> raw_columns(const TreeModel& m, const TreeData& d, const double* dq_tangent,
                                const double* dv, int rows) {
  // [d/dq (raw, chained through d tangent / d q), d/dv] (rows, nx)
  const int nx = m.nq + m.nv;
  std::vector<double> out(static_cast<size_t>(rows) * nx, 0.0);
  tree_tangent_to_raw(m, d, dq_tangent, rows, out.data(), nx);
  if (dv)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < m.nv; ++c) out[static_cast<size_t>(r) * nx + m.nq + c] = dv[r * m.nv + c];
  return out;
}

std::vector<double> tangent_columns(const TreeModel& m, const double* dq, const double* dv, int rows) {
  std::vector<double> out(static_cast<size_t>(rows) * 2 * m.nv, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < m.nv; ++c) {
      out[static_cast<size_t>(r) * 2 * m.nv + c] = dq[r * m.nv + c];
      if (dv) out[static_cast<size_t>(r) * 2 * m.nv + m.nv + c] = dv[r * m.nv + c];
    }
  return out;
}

size_t sz(int n) { return static_cast<size_t>(n); }

}  // namespace

void bind_tree(nb::module_& m) {
  nb::class_<TreeInput>(m, "TreeInput", "The description a TreeModel is compiled from (flat arrays, tree.h).")
      .def(nb::init<>())
      .def_rw("gravity", &TreeInput::gravity)
      .def_rw("parent", &TreeInput::parent)
      .def_rw("n_trans", &TreeInput::n_trans)
      .def_rw("trans_dirs", &TreeInput::trans_dirs)
      .def_rw("rot_kind", &TreeInput::rot_kind)
      .def_rw("axis", &TreeInput::axis)
      .def_rw("placement_rotation", &TreeInput::placement_rotation)
      .def_rw("placement_translation", &TreeInput::placement_translation)
      .def_rw("mass", &TreeInput::mass)
      .def_rw("com", &TreeInput::com)
      .def_rw("inertia", &TreeInput::inertia)
      .def_rw("idx_q", &TreeInput::idx_q)
      .def_rw("idx_v", &TreeInput::idx_v)
      .def_rw("nq", &TreeInput::nq)
      .def_rw("nv", &TreeInput::nv)
      .def_rw("point_joint", &TreeInput::point_joint)
      .def_rw("point_offset", &TreeInput::point_offset)
      .def_rw("spring", &TreeInput::spring)
      .def_rw("damper", &TreeInput::damper)
      .def_rw("spring_offset", &TreeInput::spring_offset)
      .def_rw("joint_frame_translation", &TreeInput::joint_frame_translation)
      .def_rw("joint_frame_rotation", &TreeInput::joint_frame_rotation)
      .def_rw("trans_pred", &TreeInput::trans_pred)
      .def_rw("swing_axes", &TreeInput::swing_axes)
      .def_rw("locked", &TreeInput::locked);
  nb::class_<TreeModel>(m, "TreeModel", "A compiled kinematic tree (minimal coordinates, frozen).")
      .def(nb::init<const TreeInput&>(), nb::arg("input"))
      .def_ro("n", &TreeModel::n)
      .def_ro("nq", &TreeModel::nq)
      .def_ro("nv", &TreeModel::nv)
      .def_ro("np", &TreeModel::np);
  nb::class_<TreeData>(m, "TreeData", "Scratch of a TreeModel, allocated once.")
      .def(nb::init<const TreeModel&>(), nb::arg("model"));

  m.def("tree_mass_matrix", [](const TreeModel& t, TreeData& d, const InArray& x) {
    tree_crba(t, d, tree_take(x, sz(t.nq + t.nv), "x"));
    return numpy_owning(d.M, {sz(t.nv), sz(t.nv)});
  }, "M(q) by CRBA (x = [q; v]).");
  m.def("tree_bias", [](const TreeModel& t, TreeData& d, const InArray& x) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_rnea(t, d, xp, xp + t.nq, nullptr);
    return numpy_owning(d.tau, {sz(t.nv)});
  }, "C(x): Coriolis, centrifugal and gravity (RNEA with vdot = 0).");
  m.def("tree_passive_forces", [](const TreeModel& t, const InArray& x) {
    std::vector<double> tau(sz(t.nv));
    tree_passive_forces(t, tree_take(x, sz(t.nq + t.nv), "x"), tau.data());
    return numpy_owning(std::move(tau), {sz(t.nv)});
  }, "Generalized forces (nv,) of the joints' springs and dampers at x = [q; v] (not in C).");
  m.def("tree_inverse_dynamics", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& a) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_rnea(t, d, xp, xp + t.nq, tree_take(a, sz(t.nv), "vdot"));
    return numpy_owning(d.tau, {sz(t.nv)});
  }, "tau = M vdot + C by RNEA.");
  m.def("tree_forward_dynamics", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& tau) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_aba(t, d, xp, xp + t.nq, tree_take(tau, sz(t.nv), "tau"));
    return numpy_owning(d.vdot, {sz(t.nv)});
  }, "vdot = M^-1 (tau - C) by ABA (with locked joints the reduced solve: vdot_l = 0, v_l read as zero).");
  m.def("tree_lock_forces", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& tau) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_aba(t, d, xp, xp + t.nq, tree_take(tau, sz(t.nv), "tau"));
    return numpy_owning(d.lock_tau, {sz(t.nv)});
  }, "(nv,) the locked joints' lock forces M vdot + C - tau at the forward dynamics' vdot (v_l read as zero); "
     "zero on the free rows.");
  m.def("tree_inverse_dynamics_deriv", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& a, bool raw) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    const double* ap = tree_take(a, sz(t.nv), "vdot");
    tree_crba(t, d, xp);
    std::vector<double> M = d.M;
    tree_rnea_derivatives(t, d, xp, xp + t.nq, ap);
    const int nx = raw ? t.nq + t.nv : 2 * t.nv;
    std::vector<double> dx = raw ? raw_columns(t, d, d.dtau_dq.data(), d.dtau_dv.data(), t.nv)
                                 : tangent_columns(t, d.dtau_dq.data(), d.dtau_dv.data(), t.nv);
    return std::make_pair(numpy_owning(std::move(dx), {sz(t.nv), sz(nx)}), numpy_owning(std::move(M), {sz(t.nv), sz(t.nv)}));
  }, "(dtau/dx, dtau/dvdot = M): x raw (PinnZoo) or tangent [dq (nv); dv].");
  m.def("tree_forward_dynamics_deriv", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& tau, bool raw) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    const double* tp = tree_take(tau, sz(t.nv), "tau");
    std::vector<double> dq(sz(t.nv * t.nv)), dv(sz(t.nv * t.nv));
    tree_aba_derivatives(t, d, xp, xp + t.nq, tp, dq.data(), dv.data());
    const int nx = raw ? t.nq + t.nv : 2 * t.nv;
    std::vector<double> dx = raw ? raw_columns(t, d, dq.data(), dv.data(), t.nv) : tangent_columns(t, dq.data(), dv.data(), t.nv);
    return std::make_pair(numpy_owning(std::move(dx), {sz(t.nv), sz(nx)}), numpy_owning(d.Minv, {sz(t.nv), sz(t.nv)}));
  }, "(dvdot/dx, dvdot/dtau = M^-1), Carpentier and Mansard's ABA derivatives.");
  m.def("tree_dynamics_deriv", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& tau, bool raw) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    const double* tp = tree_take(tau, sz(t.nv), "tau");
    const int nv = t.nv;
    std::vector<double> dq(sz(nv * nv)), dv(sz(nv * nv));
    tree_aba_derivatives(t, d, xp, xp + t.nq, tp, dq.data(), dv.data());
    const int nx = raw ? t.nq + nv : 2 * nv;
    std::vector<double> bottom = raw ? raw_columns(t, d, dq.data(), dv.data(), nv) : tangent_columns(t, dq.data(), dv.data(), nv);
    std::vector<double> dx(sz(2 * nv * nx), 0.0), dtau(sz(2 * nv * nv), 0.0);
    const int v0 = raw ? t.nq : nv;
    // d v / d v = I (a locked joint's v is read as zero: its entries are 0)
    for (int r = 0; r < nv; ++r) dx[sz(r * nx + v0 + r)] = t.any_locked && t.locked_v[sz(r)] ? 0.0 : 1.0;
    std::copy(bottom.begin(), bottom.end(), dx.begin() + nv * nx);
    std::copy(d.Minv.begin(), d.Minv.end(), dtau.begin() + nv * nv);
    return std::make_pair(numpy_owning(std::move(dx), {sz(2 * nv), sz(nx)}), numpy_owning(std::move(dtau), {sz(2 * nv), sz(nv)}));
  }, "(d[v; vdot]/dx, d[v; vdot]/dtau).");
  m.def("tree_velocity_kinematics", [](const TreeModel& t, const InArray& x) {
    if (x.size() != sz(t.nq) && x.size() != sz(t.nq + t.nv)) throw std::invalid_argument("x: expected nq or nx entries");
    std::vector<double> E(sz(t.nq * t.nv));
    tree_velocity_kinematics(t, x.data(), E.data());
    return numpy_owning(std::move(E), {sz(t.nq), sz(t.nv)});
  });
  m.def("tree_velocity_kinematics_T", [](const TreeModel& t, const InArray& x) {
    if (x.size() != sz(t.nq) && x.size() != sz(t.nq + t.nv)) throw std::invalid_argument("x: expected nq or nx entries");
    std::vector<double> E(sz(t.nq * t.nv));
    tree_velocity_kinematics_T(t, x.data(), E.data());
    return numpy_owning(std::move(E), {sz(t.nv), sz(t.nq)});
  });
  m.def("tree_velocity_kinematics_jvp_deriv", [](const TreeModel& t, const InArray& x, const InArray& v) {
    if (x.size() != sz(t.nq) && x.size() != sz(t.nq + t.nv)) throw std::invalid_argument("x: expected nq or nx entries");
    std::vector<double> out(sz(t.nq * (t.nq + t.nv)));
    tree_velocity_kinematics_jvp_deriv(t, x.data(), tree_take(v, sz(t.nv), "v"), out.data());
    return numpy_owning(std::move(out), {sz(t.nq), sz(t.nq + t.nv)});
  });
  m.def("tree_velocity_kinematics_T_jvp_deriv", [](const TreeModel& t, const InArray& x, const InArray& y) {
    if (x.size() != sz(t.nq) && x.size() != sz(t.nq + t.nv)) throw std::invalid_argument("x: expected nq or nx entries");
    std::vector<double> out(sz(t.nv * (t.nq + t.nv)));
    tree_velocity_kinematics_T_jvp_deriv(t, x.data(), tree_take(y, sz(t.nq), "qdot"), out.data());
    return numpy_owning(std::move(out), {sz(t.nv), sz(t.nq + t.nv)});
  });
  m.def("tree_swing_jacobian", [](const TreeModel& t, int i, const InArray& qr) {
    if (i < 0 || i >= t.n || t.rot_kind[sz(i)] != 3) throw std::invalid_argument("joint: not a swing tree joint");
    double A[3][2];
    tree_swing_jacobian(t, i, tree_take(qr, 2, "qr"), A, nullptr, nullptr);
    std::vector<double> out(6);
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 2; ++c) out[sz(2 * r + c)] = A[r][c];
    return numpy_owning(std::move(out), {3, 2});
  }, "A (3, 2) = J_r(phi) [b1 b2] of swing tree joint i at its coordinates qr (2,), phi = b1 q1 + b2 q2.");
  m.def("tree_placements", [](const TreeModel& t, TreeData& d, const InArray& x) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_forward_kinematics(t, d, xp);
    tree_velocities(t, d, xp + t.nq);
    return nb::make_tuple(numpy_owning(d.R, {sz(t.n), 3, 3}), numpy_owning(d.p, {sz(t.n), 3}),
                          numpy_owning(d.ov, {sz(t.n), 6}));
  }, "(R (n,3,3), p (n,3), twist (n,6)): successor frames in the world, world twists [v; w] at the origin.");
  m.def("tree_frame_wrenches", [](const TreeModel& t, TreeData& d, const InArray& x, const std::vector<int>& joints,
                                  const InArray& offsets, const InArray& forces, const InArray& torques) {
    const size_t na = joints.size();
    tree_forward_kinematics(t, d, tree_take(x, sz(t.nq + t.nv), "x"));
    const double* po = tree_take(offsets, 3 * na, "offsets");
    const double* pf = tree_take(forces, 3 * na, "forces");
    const double* pt = tree_take(torques, 3 * na, "torques");
    std::vector<double> cols(na * sz(t.nv), 0.0);  // column a of the result, contiguous
    for (size_t a = 0; a < na; ++a) {
      if (joints[a] < 0 || joints[a] >= t.n) throw std::invalid_argument("joints: tree joint out of range");
      tree_frame_wrench(t, d, joints[a], po + 3 * a, pf + 3 * a, pt + 3 * a, cols.data() + a * sz(t.nv));
    }
    std::vector<double> out(na * sz(t.nv));
    for (size_t a = 0; a < na; ++a)
      for (int r = 0; r < t.nv; ++r) out[sz(r) * na + a] = cols[a * sz(t.nv) + sz(r)];
    return numpy_owning(std::move(out), {sz(t.nv), na});
  }, "(nv, na) generalized forces of unit wrenches fixed in successor frames: per column a, the force forces[a] "
     "at offsets[a] and the torque torques[a], all in the frame of tree joint joints[a] (tree_frame_wrench).");
  m.def("tree_kinematics", [](const TreeModel& t, TreeData& d, const InArray& x, const std::string& what,
                              std::optional<InArray> lambda) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_forward_kinematics(t, d, xp);
    const int np = t.np, nv = t.nv, nx = t.nq + t.nv;
    if (what == "positions") {
      std::vector<double> out(sz(3 * np));
      tree_point_positions(t, d, out.data());
      return nb::cast(numpy_owning(std::move(out), {sz(np), 3}));
    }
    if (what == "rotations") {
      std::vector<double> out(sz(9 * np));
      for (int k = 0; k < np; ++k)
        for (int r = 0; r < 9; ++r) out[sz(9 * k + r)] = d.R[sz(9 * t.point_joint[sz(k)] + r)];
      return nb::cast(numpy_owning(std::move(out), {sz(np), 3, 3}));
    }
    tree_velocities(t, d, xp + t.nq);
    if (what == "velocities") {
      std::vector<double> out(sz(3 * np));
      tree_point_velocities(t, d, out.data());
      return nb::cast(numpy_owning(std::move(out), {sz(np), 3}));
    }
    std::vector<double> jac(sz(3 * np * nv));
    if (what == "jacobian" || what == "jacobian_tangent") {
      tree_point_jacobian(t, d, jac.data());
      if (what == "jacobian_tangent") return nb::cast(numpy_owning(std::move(jac), {sz(3 * np), sz(nv)}));
      return nb::cast(numpy_owning(raw_columns(t, d, jac.data(), nullptr, 3 * np), {sz(3 * np), sz(nx)}));
    }
    if (what == "velocity_jacobian") {
      std::vector<double> jv(sz(3 * np * nv));
      tree_point_velocity_jacobian(t, d, jac.data());
      tree_point_jacobian(t, d, jv.data());
      return nb::cast(numpy_owning(raw_columns(t, d, jac.data(), jv.data(), 3 * np), {sz(3 * np), sz(nx)}));
    }
    if (what == "force_jacobian") {
      if (!lambda) throw std::invalid_argument("force_jacobian needs lambda");
      std::vector<double> fj(sz(nv * nv));
      tree_point_force_jacobian(t, d, tree_take(*lambda, sz(3 * np), "lambda"), fj.data());
      return nb::cast(numpy_owning(raw_columns(t, d, fj.data(), nullptr, nv), {sz(nv), sz(nx)}));
    }
    throw std::invalid_argument("what: unknown kinematics output '" + what + "'");
  }, "Point kinematics: positions, rotations, velocities, jacobian(_tangent), velocity_jacobian, force_jacobian.");
}


using IoArray = nb::ndarray<double, nb::c_contig, nb::device::cpu>;

double* io_take(IoArray& a, size_t size, const char* what) {
  if (a.size() != size)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " entries, got " +
                                std::to_string(a.size()));
  return a.data();
}

void bind_rk4(nb::module_& m) {
  nb::class_<Rk4Input>(m, "Rk4Input", "What the RK4 integrator needs beyond the TreeModel (rk4.h).")
      .def(nb::init<>())
      .def_rw("nb", &Rk4Input::nb)
      .def_rw("body", &Rk4Input::body)
      .def_rw("placement_quat", &Rk4Input::placement_quat)
      .def_rw("nu", &Rk4Input::nu)
      .def_rw("free_start", &Rk4Input::free_start)
      .def_rw("floating", &Rk4Input::floating)
      .def_rw("offset_quat", &Rk4Input::offset_quat)
      .def_rw("loop_parent", &Rk4Input::loop_parent)
      .def_rw("loop_child", &Rk4Input::loop_child)
      .def_rw("loop_pa", &Rk4Input::loop_pa)
      .def_rw("loop_pb", &Rk4Input::loop_pb)
      .def_rw("loop_offset", &Rk4Input::loop_offset)
      .def_rw("loop_row_start", &Rk4Input::loop_row_start)
      .def_rw("row_rotational", &Rk4Input::row_rotational)
      .def_rw("row_basis", &Rk4Input::row_basis)
      .def_rw("loop_gains", &Rk4Input::loop_gains)
      .def_rw("loop_stabilized", &Rk4Input::loop_stabilized);
  nb::class_<Rk4Model>(m, "Rk4Model", "The RK4 integrator's compiled description (frozen).")
      .def(nb::init<const TreeModel&, const Rk4Input&>(), nb::arg("tree"), nb::arg("input"))
      .def_ro("nl", &Rk4Model::nl)
      .def_ro("nr", &Rk4Model::nr);
  nb::class_<Rk4Data>(m, "Rk4Data", "Scratch of the RK4 integrator, allocated once.")
      .def(nb::init<const Rk4Model&>(), nb::arg("model"));

  m.def("rk4_run",
        [](const TreeModel& t, TreeData& d, const Rk4Model& r, Rk4Data& rd, IoArray q, IoArray v, double t0, double h,
           int n, std::optional<InArray> inputs, IoArray out_q, IoArray out_v, std::optional<IoArray> out_z, int row0,
           nb::object control) {
          if (n < 0) throw std::invalid_argument("rk4_run: n must be >= 0");
          if (!(h > 0.0)) throw std::invalid_argument("rk4_run: the step must be > 0");
          double* pq = io_take(q, sz(t.nq), "q");
          double* pv = io_take(v, sz(t.nv), "v");
          const double* pu = nullptr;
          if (inputs) pu = tree_take(*inputs, sz(n) * sz(r.nu), "inputs");
          if (out_q.ndim() != 2 || out_q.shape(1) != sz(t.nq)) throw std::invalid_argument("out_q: expected (cap, nq)");
          const int cap = static_cast<int>(out_q.shape(0));
          if (out_v.ndim() != 2 || out_v.shape(0) != sz(cap) || out_v.shape(1) != sz(t.nv))
            throw std::invalid_argument("out_v: expected (cap, nv)");
          double* pz = nullptr;
          if (out_z) {
            if (out_z->size() != sz(cap) * 13 * sz(r.nb)) throw std::invalid_argument("out_z: expected (cap, 13 nb)");
            pz = out_z->data();
          }
          Rk4Control cb;
          if (!control.is_none()) {
            // numpy views of the stage buffers, made once: control(tau, t, x) fills tau
            std::vector<double>* xs = new std::vector<double>(sz(t.nq + t.nv));
            nb::capsule owner(xs, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
            const size_t nx[1] = {sz(t.nq + t.nv)}, nvs[1] = {sz(t.nv)};
            nb::object x_view = nb::cast(nb::ndarray<nb::numpy, double>(xs->data(), 1, nx, owner));
            std::vector<double>* taus = new std::vector<double>(sz(t.nv));
            nb::capsule tau_owner(taus, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
            nb::object tau_view = nb::cast(nb::ndarray<nb::numpy, double>(taus->data(), 1, nvs, tau_owner));
            const int nq = t.nq, nvv = t.nv;
            cb = [control, x_view, tau_view, xs, taus, nq, nvv](double time, const double* qq, const double* vv, double* tau) {
              for (int a = 0; a < nq; ++a) (*xs)[a] = qq[a];
              for (int a = 0; a < nvv; ++a) (*xs)[nq + a] = vv[a];
              for (int a = 0; a < nvv; ++a) (*taus)[a] = 0.0;
              control(tau_view, time, x_view);
              for (int a = 0; a < nvv; ++a) tau[a] = (*taus)[a];
            };
          }
          return rk4_run(t, d, r, rd, pq, pv, t0, h, n, pu, out_q.data(), out_v.data(), pz, cap, row0,
                         control.is_none() ? nullptr : &cb);
        },
        nb::arg("tree"), nb::arg("data"), nb::arg("rk4"), nb::arg("rk4_data"), nb::arg("q"), nb::arg("v"),
        nb::arg("t0"), nb::arg("h"), nb::arg("n"), nb::arg("inputs").none(), nb::arg("out_q"), nb::arg("out_v"),
        nb::arg("out_z").none(), nb::arg("row0"), nb::arg("control").none(),
        "n Munthe-Kaas RK4 steps from (q, v) (updated in place) at t0; row (row0 + k) % cap of the outputs gets "
        "the state after step k; returns the steps taken (rk4.h).");
  m.def("rk4_bodies", [](const TreeModel& t, TreeData& d, const Rk4Model& r, Rk4Data& rd, const InArray& x) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    std::vector<double> z(13 * sz(r.nb), 0.0);
    rk4_bodies(t, d, r, rd, xp, xp + t.nq, z.data());
    return numpy_owning(std::move(z), {sz(r.nb), 13});
  }, "Every body's maximal state [x, v, q, w] (nb, 13) of the minimal state x.");
  m.def("rk4_loop_errors", [](const TreeModel& t, TreeData& d, const Rk4Model& r, Rk4Data& rd, const InArray& x) {
    if (x.size() != sz(t.nq) && x.size() != sz(t.nq + t.nv)) throw std::invalid_argument("x: expected nq or nx entries");
    std::vector<double> out(2 * sz(r.nl), 0.0);
    rk4_loop_errors(t, d, r, rd, x.data(), out.data());
    return numpy_owning(std::move(out), {sz(r.nl), 2});
  }, "Per loop joint (distance between its joint points, constrained rotation error) at x.");
  m.def("rk4_dynamics", [](const TreeModel& t, TreeData& d, const Rk4Model& r, Rk4Data& rd, const InArray& x,
                           std::optional<InArray> u, double time) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    const double* pu = u ? tree_take(*u, sz(r.nu), "u") : nullptr;
    std::vector<double> vdot(sz(t.nv), 0.0);
    rk4_dynamics(t, d, r, rd, time, xp, xp + t.nq, pu, nullptr, vdot.data());
    return numpy_owning(std::move(vdot), {sz(t.nv)});
  }, nb::arg("tree"), nb::arg("data"), nb::arg("rk4"), nb::arg("rk4_data"), nb::arg("x"), nb::arg("u").none(),
     nb::arg("t") = 0.0, "vdot of the RK4 integrator's dynamics at x (inputs u, springs, dampers, loop joints).");
}

NB_MODULE(_core, m) {
  m.doc() = "dojo_cli's compiled core: Model, Data, the step, contacts, solvers and gradients.";
  bind_contacts(m);
  bind_block_lu(m);
  bind_tree(m);
  bind_rk4(m);

  nb::class_<ModelInput>(m, "ModelInput", "The description a Model is compiled from (flat arrays).")
      .def(nb::init<>())
      .def_rw("timestep", &ModelInput::timestep)
      .def_rw("gravity", &ModelInput::gravity)
      .def_rw("mass", &ModelInput::mass)
      .def_rw("inertia", &ModelInput::inertia)
      .def_rw("parent", &ModelInput::parent)
      .def_rw("child", &ModelInput::child)
      .def_rw("parent_vertex", &ModelInput::parent_vertex)
      .def_rw("child_vertex", &ModelInput::child_vertex)
      .def_rw("orientation_offset", &ModelInput::orientation_offset)
      .def_rw("basis", &ModelInput::basis)
      .def_rw("constrained", &ModelInput::constrained)
      .def_rw("locked", &ModelInput::locked)
      .def_rw("spring", &ModelInput::spring)
      .def_rw("damper", &ModelInput::damper)
      .def_rw("spring_offset", &ModelInput::spring_offset)
      .def_rw("damper_implicit", &ModelInput::damper_implicit)
      .def_rw("limit_free", &ModelInput::limit_free)
      .def_rw("limit_sign", &ModelInput::limit_sign)
      .def_rw("limit_bound", &ModelInput::limit_bound)
      .def_rw("contact_body", &ModelInput::contact_body)
      .def_rw("contact_other", &ModelInput::contact_other)
      .def_rw("contact_model", &ModelInput::contact_model)
      .def_rw("contact_kind", &ModelInput::contact_kind)
      .def_rw("contact_friction", &ModelInput::contact_friction)
      .def_rw("contact_radius", &ModelInput::contact_radius)
      .def_rw("contact_offset", &ModelInput::contact_offset)
      .def_rw("contact_shape", &ModelInput::contact_shape)
      .def_rw("contact_restitution", &ModelInput::contact_restitution)
      .def_rw("contact_shape_a", &ModelInput::contact_shape_a)
      .def_rw("actuator_free", &ModelInput::actuator_free)
      .def_rw("actuator_body", &ModelInput::actuator_body)
      .def_rw("actuator_gain", &ModelInput::actuator_gain)
      .def_rw("actuator_force", &ModelInput::actuator_force)
      .def_rw("actuator_point", &ModelInput::actuator_point)
      .def_rw("actuator_torque", &ModelInput::actuator_torque)
      .def_rw("contact_margin", &ModelInput::contact_margin);

  nb::class_<Model>(m, "Model", "A compiled mechanism: frozen flat arrays and the step's block structure.")
      .def(nb::init<const ModelInput&>(), nb::arg("input"))
      .def_ro("nb", &Model::nb)
      .def_ro("nj", &Model::nj)
      .def_ro("nl", &Model::nl)
      .def_ro("nf", &Model::nf)
      .def_ro("nu", &Model::nu)
      .def_ro("nlim", &Model::nlim)
      .def_ro("nc", &Model::nc)
      .def_ro("n", &Model::n)
      .def_ro("h", &Model::h)
      .def_prop_ro("n_blocks", [](const Model& s) { return static_cast<int>(s.blocks.block_row.size()); })
      .def_prop_ro("n_fill_blocks",
                   [](const Model& s) { return static_cast<int>(s.blocks.block_row.size()) - s.blocks.n_structural; })
      .def_prop_ro("elimination_order", [](const Model& s) { return s.blocks.order; })
      .def_prop_ro("tree_joints", [](const Model& s) { return s.tree_joints; })
      .def_prop_ro("limit_free", [](const Model& s) { return s.limit_free; })
      .def_prop_ro("angle_unwrapped",
                   [](const Model& s) { return std::vector<bool>(s.angle_unwrapped.begin(), s.angle_unwrapped.end()); },
                   "(nf,) the coordinate is its joint's only rotation (an angle unwrapped through turns).")
      .def_prop_ro("loop_joints", [](const Model& s) { return s.loop_joints; })
      .def_prop_ro(
          "node_owner",
          [](const Model& s) {
            // per Newton-matrix node: ("body" | "joint" | "contact", index)
            std::vector<std::pair<std::string, int>> out(s.blocks.n_nodes);
            const std::pair<const char*, const std::vector<int>*> kinds[] = {
                {"body", &s.body_node}, {"joint", &s.joint_node}, {"contact", &s.contact_node}};
            for (const auto& kind : kinds)
              for (size_t i = 0; i < kind.second->size(); ++i)
                if ((*kind.second)[i] >= 0) out[(*kind.second)[i]] = {kind.first, static_cast<int>(i)};
            return out;
          },
          "Per Newton-matrix node, what owns its unknowns: (kind, index) with kind body, joint or contact.");

  nb::class_<SolverOptions>(m, "SolverOptions", "The per-step solver's options (Dojo's names and defaults).")
      .def(nb::init<>())
      .def_rw("rtol", &SolverOptions::rtol)
      .def_rw("btol", &SolverOptions::btol)
      .def_rw("max_iter", &SolverOptions::max_iter)
      .def_rw("max_ls", &SolverOptions::max_ls)
      .def_rw("ls_scale", &SolverOptions::ls_scale)
      .def_rw("undercut", &SolverOptions::undercut)
      .def_rw("no_progress_max", &SolverOptions::no_progress_max)
      .def_rw("no_progress_undercut", &SolverOptions::no_progress_undercut);

  nb::class_<Data>(m, "Data", "Per-run scratch of a Model: the step's state and buffers, allocated once.")
      .def(nb::init<const Model&>(), nb::arg("model"))
      .def_prop_ro("z_next", data_view<&Data::z_next>(1))
      .def_prop_ro("w", data_view<&Data::w>(1))
      .def_prop_ro("residual_vector", data_view<&Data::r>(1))
      .def_prop_ro("angle_ref", data_view<&Data::angle_ref>(1),
                   "(nf,) unwrapped angles where the next step starts, NaN where not known (writable; runs carry\n"
                   "it: advance_angles; a restart sets it from the stored minimal/q).")
      .def_prop_ro("angle2", data_view<&Data::angle2>(1), "(nf,) the last step's unwrapped angles at z2 (limited angles).")
      .def_prop_ro("log", [](nb::handle self) {
        Data& d = nb::cast<Data&>(self);
        return view(d.log, self, {static_cast<size_t>(d.log_rows), static_cast<size_t>(kLogColumns)});
      })
      .def_prop_ro("contact_distance", data_view<&Data::contact_distance>(1))
      .def_prop_ro("contact_normal_impulse", data_view<&Data::contact_normal_impulse>(1))
      .def_prop_ro("contact_friction_impulse", data_view<&Data::contact_friction_impulse>(2))
      .def_prop_ro("contact_slip", data_view<&Data::contact_slip>(2))
      .def_prop_ro("status", [](const Data& d) { return static_cast<int>(d.status); })
      .def_ro("iterations", &Data::iterations)
      .def_prop_ro("contact_active",
                   [](const Data& d) { return std::vector<bool>(d.contact_active.begin(), d.contact_active.end()); },
                   "(nc,) whether each contact was in the last step's solve (step.h, \"Contact margins\").")
      .def_ro("solves", &Data::solves, "Solves of the last step (1, or more when a left-out contact touched).")
      .def_ro("recovery_iteration", &Data::recovery_iteration)
      .def_ro("lu_is_robust", &Data::lu_is_robust, "The last factorisation used the robust elimination order.")
      .def_ro("residual", &Data::residual)
      .def_ro("complementarity", &Data::complementarity)
      .def_ro("singular_node", &Data::singular_node,
              "After a singular_matrix step: the node (Model.node_owner) with the zero pivot; else -1.");

  m.def(
      "step",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, std::optional<InArray> f_ext,
         std::optional<InArray> tau_ext, std::optional<InArray> lambda0, const SolverOptions& opts) {
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        const double* pu = checked(u, model.nu, "input");
        const double* pf = checked(f_ext, 3 * static_cast<size_t>(model.nb), "f_ext");
        const double* pt = checked(tau_ext, 3 * static_cast<size_t>(model.nb), "tau_ext");
        const double* pl = checked(lambda0, model.nl, "lambda0");
        return static_cast<int>(step(model, data, pz, pu, pf, pt, pl, opts));
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("f_ext").none(),
      nb::arg("tau_ext").none(), nb::arg("lambda0").none(), nb::arg("opts"),
      "One step from z = [x2, v15, q2, w15] per body; the result is in data (z_next, w, status, iterations).");

  m.def(
      "initial_midpoint",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, std::optional<InArray> f_ext,
         std::optional<InArray> tau_ext, const SolverOptions& opts) {
        const size_t nz = 13 * static_cast<size_t>(model.nb);
        const double* pz = checked(z, nz, "state");
        const double* pu = checked(u, model.nu, "input");
        const double* pf = checked(f_ext, 3 * static_cast<size_t>(model.nb), "f_ext");
        const double* pt = checked(tau_ext, 3 * static_cast<size_t>(model.nb), "tau_ext");
        std::vector<double> z0(nz);
        const InitialResult r = initial_midpoint(model, data, pz, pu, pf, pt, opts, z0.data());
        return nb::make_tuple(numpy_owning<double>(std::move(z0), {nz}), static_cast<int>(r.status), r.iterations,
                              r.residual);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("f_ext").none(),
      nb::arg("tau_ext").none(), nb::arg("opts"),
      "(z0, status, iterations, residual): the state [x, v15, q, w15] per body whose first step starts with the\n"
      "velocities of z = [x, v(0), q, w(0)] at t = 0 (initial.h); u, f_ext, tau_ext: the first step's.");

  m.def(
      "advance_angles", [](const Model& model, Data& data) { advance_angles(model, data); }, nb::arg("model"),
      nb::arg("data"),
      "After a step in data: the unwrapped angles of its z3 become data.angle_ref (where the next step starts).");

  m.def(
      "unwrapped_coordinates",
      [](const Model& model, const InArray& z, const std::optional<InArray>& z_prev,
         const std::optional<InArray>& theta_prev) {
        const size_t nz = 13 * static_cast<size_t>(model.nb), nf = model.nf;
        if (nz == 0 || z.size() % nz != 0)
          throw std::invalid_argument("z: expected (T, " + std::to_string(nz) + ") values, got " + std::to_string(z.size()));
        if (z_prev.has_value() != theta_prev.has_value())
          throw std::invalid_argument("z_prev and theta_prev: give both or neither");
        const double* zp = checked(z_prev, nz, "z_prev");
        const double* tp = checked(theta_prev, nf, "theta_prev");
        const size_t n = z.size() / nz;
        std::vector<double> theta(n * nf);
        for (size_t t = 0; t < n; ++t) {
          const double* zt = z.data() + t * nz;
          minimal_coordinates_and_velocities(model, zt, theta.data() + t * nf, static_cast<double*>(nullptr));
          if (t == 0)
            unwrap_angles(model, zt, zp, tp, theta.data());
          else
            unwrap_angles(model, zt, zt - nz, theta.data() + (t - 1) * nf, theta.data() + t * nf);
        }
        return numpy_owning<double>(std::move(theta), {n, nf});
      },
      nb::arg("model"), nb::arg("z"), nb::arg("z_prev").none() = nb::none(), nb::arg("theta_prev").none() = nb::none(),
      "(T, nf) minimal coordinates of the states z (T, 13 nb), each angle coordinate (Model.angle_unwrapped)\n"
      "unwrapped from the state before as a step measures it (row 0 from z_prev, theta_prev; without them,\n"
      "where a step with no carried angle starts). The coordinates storage writes to minimal/q.");

  m.def(
      "gradients",
      [](const Model& model, Data& data, bool state, bool input, const std::vector<int>& parameters, double kappa) {
        GradientRequest request;
        request.state = state;
        request.input = input;
        request.parameters = parameters;
        request.kappa = kappa;
        int p = 0;
        for (int kind : parameters) {
          if (kind < 0 || kind > static_cast<int>(ParameterKind::Restitution))
            throw std::invalid_argument("unknown parameter kind " + std::to_string(kind));
          p += parameter_count(model, static_cast<ParameterKind>(kind));
        }
        const size_t rows = 12 * static_cast<size_t>(model.nb);
        auto matrix = [&](bool want, size_t cols) -> std::optional<OutArray> {
          if (!want) return std::nullopt;
          return numpy_zeros<double>({rows, cols});
        };
        std::optional<OutArray> A = matrix(state, rows), B = matrix(input, model.nu), P = matrix(p > 0, p);
        const double used = step_gradients(model, data, request, A ? A->data() : nullptr, B ? B->data() : nullptr,
                                           P ? P->data() : nullptr);
        return nb::make_tuple(A, B, P, used);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("state") = true, nb::arg("input") = true,
      nb::arg("parameters") = std::vector<int>(), nb::arg("kappa") = -1.0,
      "Derivatives (A, B, P, kappa) of the step last solved with data (implicit function theorem).");

  m.def(
      "rollout",
      [](const Model& model, Data& data, const InArray& z, int k, std::optional<InArray> inputs,
         std::optional<nb::ndarray<double, nb::c_contig, nb::device::cpu>> lambda, const SolverOptions& opts,
         bool stop_on_failure) {
        if (k < 0) throw std::invalid_argument("rollout: k must be >= 0");
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        const double* pu = checked(inputs, static_cast<size_t>(k) * model.nu, "inputs");
        double* pl = nullptr;
        if (lambda) {
          if (lambda->size() != static_cast<size_t>(model.nl))
            throw std::invalid_argument("lambda: expected " + std::to_string(model.nl) + " values");
          pl = lambda->data();
        }
        const size_t kk = static_cast<size_t>(k), nb_ = model.nb, nc = model.nc;
        auto states = numpy_zeros<double>({kk, 13 * nb_});
        auto iterations = numpy_zeros<int>({kk});
        auto residual = numpy_zeros<double>({kk});
        auto status = numpy_zeros<int>({kk});
        auto complementarity = numpy_zeros<double>({kk});
        auto singular_node = numpy_zeros<int>({kk});
        auto impulses = numpy_zeros<double>({kk, static_cast<size_t>(model.nl)});
        auto distance = numpy_zeros<double>({kk, nc});
        auto normal = numpy_zeros<double>({kk, nc});
        auto friction = numpy_zeros<double>({kk, nc, size_t(2)});
        auto slip = numpy_zeros<double>({kk, nc, size_t(2)});
        RolloutRecord rec;
        rec.states = states.data();
        rec.iterations = iterations.data();
        rec.residual = residual.data();
        rec.status = status.data();
        rec.complementarity = complementarity.data();
        rec.singular_node = singular_node.data();
        rec.impulses = impulses.data();
        rec.contact_distance = distance.data();
        rec.contact_normal_impulse = normal.data();
        rec.contact_friction_impulse = friction.data();
        rec.contact_slip = slip.data();
        const int done = rollout(model, data, pz, k, pu, pl, opts, stop_on_failure, rec);
        nb::dict out;
        out["steps"] = done;
        out["states"] = states;
        out["iterations"] = iterations;
        out["residual"] = residual;
        out["status"] = status;
        out["complementarity"] = complementarity;
        out["singular_node"] = singular_node;
        out["impulses"] = impulses;
        out["contact_distance"] = distance;
        out["contact_normal_impulse"] = normal;
        out["contact_friction_impulse"] = friction;
        out["contact_slip"] = slip;
        return out;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("k"), nb::arg("inputs").none(),
      nb::arg("lambda_").none(), nb::arg("opts"), nb::arg("stop_on_failure") = false,
      "k steps from z with per-step inputs (k, nu) in one call; records per step (rows past 'steps' unused).");

  // Test access to the pieces of a step (residual and Newton matrix at given unknowns).
  m.def(
      "step_residual",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, const InArray& w) {
        if (!step_setup(model, data, checked(z, 13 * static_cast<size_t>(model.nb), "state"),
                        checked(u, model.nu, "input"), nullptr, nullptr))
          throw std::invalid_argument("state or input not finite");
        checked(w, model.n, "w");
        std::vector<double> ww(w.data(), w.data() + model.n);
        step_residual(model, data, ww.data(), data.r.data());
        return std::vector<double>(data.r);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("w"));
  m.def(
      "step_matrix_dense",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, const InArray& w) {
        if (!step_setup(model, data, checked(z, 13 * static_cast<size_t>(model.nb), "state"),
                        checked(u, model.nu, "input"), nullptr, nullptr))
          throw std::invalid_argument("state or input not finite");
        checked(w, model.n, "w");
        std::vector<double> ww(w.data(), w.data() + model.n);
        step_matrix(model, data, ww.data());
        const int n = model.n;
        std::vector<double> dense(static_cast<size_t>(n) * n, 0.0);
        std::vector<double> e(n, 0.0), col(n, 0.0);
        for (int j = 0; j < n; ++j) {
          e[j] = 1.0;
          block_multiply(model.blocks, data.matrix.data(), e.data(), col.data());
          e[j] = 0.0;
          for (int i = 0; i < n; ++i) dense[static_cast<size_t>(i) * n + j] = col[i];
        }
        return dense;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("w"));

  // ======== maximal <-> minimal coordinates, energy and momentum (coordinates.h, energy.h) ========
  // Arrays may carry leading batch axes (e.g. (T, 13 nb) states): one call converts them all.
  {
    using FlagArray = nb::ndarray<const bool, nb::c_contig, nb::device::cpu>;
    // The leading (batch) axes of `a`, whose trailing axes must be `tail`; returns their product.
    auto batch = [](const auto& a, std::vector<size_t> tail, const char* what, std::vector<size_t>& lead) {
      const size_t nd = a.ndim(), nt = tail.size();
      bool ok = nd >= nt;
      for (size_t i = 0; ok && i < nt; ++i) ok = a.shape(nd - nt + i) == tail[i];
      if (!ok) {
        std::string want = "(...", got = "(";
        for (size_t t : tail) want += ", " + std::to_string(t);
        for (size_t i = 0; i < nd; ++i) got += (i ? ", " : "") + std::to_string(a.shape(i));
        throw std::invalid_argument(std::string(what) + ": expected shape " + want + "), got " + got + ")");
      }
      lead.assign(a.shape_ptr(), a.shape_ptr() + (nd - nt));
      size_t count = 1;
      for (size_t s : lead) count *= s;
      return count;
    };
    auto with = [](std::vector<size_t> lead, std::initializer_list<size_t> tail) {
      lead.insert(lead.end(), tail.begin(), tail.end());
      return lead;
    };
    // Overrides of minimal_to_maximal: flags (nb, 4) and values (nb, 13), both or neither.
    auto overrides_of = [](const Model& model, const std::optional<FlagArray>& flags,
                           const std::optional<InArray>& values) {
      BodyOverrides o;
      if (flags.has_value() != values.has_value())
        throw std::invalid_argument("override_flags and override_values go together");
      if (!flags) return o;
      if (flags->size() != static_cast<size_t>(kOverrideParts) * model.nb)
        throw std::invalid_argument("override_flags: expected (nb, 4) flags");
      o.flags = reinterpret_cast<const uint8_t*>(flags->data());
      o.values = checked(values, 13 * static_cast<size_t>(model.nb), "override_values");
      return o;
    };
    const size_t kState = 13;

    m.def(
        "maximal_to_minimal",
        [=](const Model& model, const InArray& z) {
          std::vector<size_t> lead;
          const size_t n = batch(z, {kState * model.nb}, "z", lead), ny = 2 * static_cast<size_t>(model.nf);
          std::vector<double> y(n * ny);
          for (size_t t = 0; t < n; ++t) maximal_to_minimal(model, z.data() + t * kState * model.nb, y.data() + t * ny);
          return numpy_owning<double>(std::move(y), with(lead, {ny}));
        },
        nb::arg("model"), nb::arg("z"),
        "Minimal states (..., 2 nf), per joint [coordinates; velocities], of maximal states z (..., 13 nb).");
    m.def(
        "minimal_coordinates",
        [=](const Model& model, const InArray& x, const InArray& q) {
          std::vector<size_t> lead, lead_q;
          const size_t n = batch(x, {static_cast<size_t>(model.nb), 3}, "x", lead);
          if (batch(q, {static_cast<size_t>(model.nb), 4}, "q", lead_q) != n || lead_q != lead)
            throw std::invalid_argument("x and q: different batch shapes");
          const size_t nf = model.nf, nb3 = 3 * static_cast<size_t>(model.nb);
          std::vector<double> theta(n * nf);
          for (size_t t = 0; t < n; ++t)
            minimal_coordinates(model, x.data() + t * nb3, q.data() + t * (nb3 / 3) * 4, theta.data() + t * nf);
          return numpy_owning<double>(std::move(theta), with(lead, {nf}));
        },
        nb::arg("model"), nb::arg("x"), nb::arg("q"),
        "Free coordinates (..., nf) at configurations x (..., nb, 3), q (..., nb, 4).");
    m.def(
        "minimal_velocities",
        [=](const Model& model, const InArray& z) {
          std::vector<size_t> lead;
          const size_t n = batch(z, {kState * model.nb}, "z", lead), nf = model.nf;
          std::vector<double> rate(n * nf);
          for (size_t t = 0; t < n; ++t)
            minimal_coordinates_and_velocities(model, z.data() + t * kState * model.nb, static_cast<double*>(nullptr),
                                               rate.data() + t * nf);
          return numpy_owning<double>(std::move(rate), with(lead, {nf}));
        },
        nb::arg("model"), nb::arg("z"),
        "Free-coordinate velocities (..., nf) of maximal states z (..., 13 nb) (backward differences).");
    m.def(
        "minimal_to_maximal",
        [=](const Model& model, const InArray& y, std::optional<InArray> z_base, std::optional<FlagArray> override_flags,
            std::optional<InArray> override_values) {
          std::vector<size_t> lead;
          const size_t ny = 2 * static_cast<size_t>(model.nf), nz = kState * model.nb;
          const size_t n = batch(y, {ny}, "y", lead);
          const double* base = checked(z_base, nz, "z_base");
          const BodyOverrides o = overrides_of(model, override_flags, override_values);
          std::vector<double> z(n * nz);
          for (size_t t = 0; t < n; ++t) minimal_to_maximal(model, y.data() + t * ny, base, o, z.data() + t * nz);
          return numpy_owning<double>(std::move(z), with(lead, {nz}));
        },
        nb::arg("model"), nb::arg("y"), nb::arg("z_base").none() = nb::none(),
        nb::arg("override_flags").none() = nb::none(), nb::arg("override_values").none() = nb::none(),
        "Maximal states (..., 13 nb) of minimal states y (..., 2 nf). z_base (13 nb,): state of bodies no tree "
        "joint reaches; override_flags (nb, 4) bool [position, orientation, velocity, angular_velocity] with "
        "override_values (nb, 13) in the maximal layout: parts of bodies replaced as the tree is walked.");
    m.def(
        "minimal_to_maximal_instantaneous",
        [=](const Model& model, const InArray& y, std::optional<FlagArray> override_flags,
            std::optional<InArray> override_values) {
          const size_t ny = 2 * static_cast<size_t>(model.nf), nz = kState * model.nb;
          checked(y, ny, "y");
          const BodyOverrides o = overrides_of(model, override_flags, override_values);
          std::vector<double> z(nz);
          minimal_to_maximal_instantaneous(model, y.data(), o, z.data());
          return numpy_owning<double>(std::move(z), {nz});
        },
        nb::arg("model"), nb::arg("y"), nb::arg("override_flags").none() = nb::none(),
        nb::arg("override_values").none() = nb::none(),
        "Maximal state (13 nb,) with velocities at t of a minimal state y (2 nf,) of coordinates and rates at t\n"
        "(the exact velocity map, not a difference over h); overrides as minimal_to_maximal's, velocities at t.");
    m.def(
        "instantaneous_minimal_velocities",
        [=](const Model& model, const InArray& z) {
          std::vector<size_t> lead;
          const size_t n = batch(z, {kState * model.nb}, "z", lead), nf = model.nf;
          std::vector<double> rate(n * nf);
          for (size_t t = 0; t < n; ++t)
            instantaneous_minimal_velocities(model, z.data() + t * kState * model.nb, rate.data() + t * nf);
          return numpy_owning<double>(std::move(rate), with(lead, {nf}));
        },
        nb::arg("model"), nb::arg("z"),
        "Free-coordinate rates (..., nf) of maximal states z (..., 13 nb) whose velocities are at the\n"
        "configuration's time (the exact map, for knot velocities).");
    m.def(
        "maximal_to_minimal_jacobian",
        [=](const Model& model, const InArray& z) {
          checked(z, kState * model.nb, "z");
          const size_t rows = 2 * static_cast<size_t>(model.nf), cols = 12 * static_cast<size_t>(model.nb);
          std::vector<double> jac(rows * cols);
          maximal_to_minimal_jacobian(model, z.data(), jac.data());
          return numpy_owning<double>(std::move(jac), {rows, cols});
        },
        nb::arg("model"), nb::arg("z"),
        "d y / d z (2 nf, 12 nb) of maximal_to_minimal at z (13 nb,), tangents [x, v, phi, w] per body.");
    m.def(
        "minimal_to_maximal_jacobian",
        [=](const Model& model, const InArray& y, std::optional<InArray> z_base, std::optional<FlagArray> override_flags,
            std::optional<InArray> override_values) {
          const size_t ny = 2 * static_cast<size_t>(model.nf), rows = 12 * static_cast<size_t>(model.nb);
          checked(y, ny, "y");
          const double* base = checked(z_base, kState * model.nb, "z_base");
          const BodyOverrides o = overrides_of(model, override_flags, override_values);
          std::vector<double> jac(rows * ny);
          minimal_to_maximal_jacobian(model, y.data(), base, o, jac.data());
          return numpy_owning<double>(std::move(jac), {rows, ny});
        },
        nb::arg("model"), nb::arg("y"), nb::arg("z_base").none() = nb::none(),
        nb::arg("override_flags").none() = nb::none(), nb::arg("override_values").none() = nb::none(),
        "d z / d y (12 nb, 2 nf) of minimal_to_maximal at y (2 nf,), tangents [x, v, phi, w] per body.");
    m.def(
        "constraint_violation",
        [=](const Model& model, const InArray& z) {
          std::vector<size_t> lead;
          const size_t n = batch(z, {kState * model.nb}, "z", lead), nj = model.nj;
          std::vector<double> out(n * nj);
          for (size_t t = 0; t < n; ++t) constraint_violation(model, z.data() + t * kState * model.nb, out.data() + t * nj);
          return numpy_owning<double>(std::move(out), with(lead, {nj}));
        },
        nb::arg("model"), nb::arg("z"), "Largest constraint-row magnitude per joint (..., nj) of states z (..., 13 nb).");

    // Energy and momentum of states 0..T-1 from midpoint velocities v, omega (T+1, nb, 3)
    // and configurations x (>= T, nb, 3), q (>= T, nb, 4).
    auto steps_of = [=](const Model& model, const InArray& v, const InArray& omega) {
      std::vector<size_t> lead, lead_w;
      const size_t nb = model.nb;
      const size_t n = batch(v, {nb, 3}, "v", lead);
      if (lead.size() != 1 || n < 1) throw std::invalid_argument("v: expected shape (T+1, nb, 3)");
      if (batch(omega, {nb, 3}, "omega", lead_w) != n || lead_w != lead)
        throw std::invalid_argument("v and omega: different shapes");
      return static_cast<int>(n - 1);
    };
    auto configurations = [=](const Model& model, const InArray& x, const InArray& q, int steps) {
      std::vector<size_t> lead, lead_q;
      const size_t nb = model.nb;
      const size_t nx = batch(x, {nb, 3}, "x", lead), nq = batch(q, {nb, 4}, "q", lead_q);
      if (lead.size() != 1 || lead_q.size() != 1 || nx < static_cast<size_t>(steps) || nq < static_cast<size_t>(steps))
        throw std::invalid_argument("x, q: expected shapes (T or more, nb, 3), (T or more, nb, 4)");
    };
    m.def(
        "body_momenta",
        [=](const Model& model, const InArray& v, const InArray& omega) {
          const int steps = steps_of(model, v, omega);
          const size_t nb = model.nb, n = 3 * nb * steps;
          std::vector<double> p(n), l(n);
          body_momenta(model, steps, v.data(), omega.data(), p.data(), l.data());
          return nb::make_tuple(numpy_owning<double>(std::move(p), {size_t(steps), nb, 3}), numpy_owning<double>(std::move(l), {size_t(steps), nb, 3}));
        },
        nb::arg("model"), nb::arg("v"), nb::arg("omega"),
        "(p, l): per-body momenta (T, nb, 3) of states 0..T-1, world linear and body angular (Dojo's discrete "
        "Legendre transforms averaged).");
    m.def(
        "knot_velocities",
        [=](const Model& model, const InArray& v_mid, const InArray& omega_mid, bool extrapolate_last) {
          const int steps = steps_of(model, v_mid, omega_mid);
          const size_t nb = model.nb, rows = steps + (extrapolate_last ? 1 : 0);
          std::vector<double> v(3 * nb * (steps + 1)), w(3 * nb * (steps + 1));
          knot_velocities(model, steps, v_mid.data(), omega_mid.data(), extrapolate_last, v.data(), w.data());
          v.resize(3 * nb * rows);
          w.resize(3 * nb * rows);
          return nb::make_tuple(numpy_owning<double>(std::move(v), {rows, nb, 3}),
                                numpy_owning<double>(std::move(w), {rows, nb, 3}));
        },
        nb::arg("model"), nb::arg("v_mid"), nb::arg("omega_mid"), nb::arg("extrapolate_last") = false,
        "(v, omega): velocities (T, nb, 3) at the knots 0..T-1 from midpoint velocities (T+1, nb, 3)\n"
        "(energy.h); extrapolate_last adds knot T, its outgoing step's impulses taken as the previous step's.");
    m.def(
        "knot_mechanics",
        [=](const Model& model, const InArray& x, const InArray& q, const InArray& v, const InArray& omega) {
          const int states = steps_of(model, v, omega) + 1;
          configurations(model, x, q, states);
          const size_t t = states;
          std::vector<double> kin(t), pot(t), lin(3 * t), ang(3 * t);
          knot_mechanics(model, states, x.data(), q.data(), v.data(), omega.data(), kin.data(), pot.data(), lin.data(),
                         ang.data());
          return nb::make_tuple(numpy_owning<double>(std::move(kin), {t}), numpy_owning<double>(std::move(pot), {t}),
                                numpy_owning<double>(std::move(lin), {t, 3}), numpy_owning<double>(std::move(ang), {t, 3}));
        },
        nb::arg("model"), nb::arg("x"), nb::arg("q"), nb::arg("v"), nb::arg("omega"),
        "(kinetic (n,), potential (n,), linear momentum (n, 3), angular momentum (n, 3)) of n states whose\n"
        "velocities v, omega (n, nb, 3) are at the knots.");
    m.def(
        "kinetic_energy",
        [=](const Model& model, const InArray& v, const InArray& omega) {
          const int steps = steps_of(model, v, omega);
          std::vector<double> out(steps);
          kinetic_energy(model, steps, v.data(), omega.data(), out.data());
          return numpy_owning<double>(std::move(out), {size_t(steps)});
        },
        nb::arg("model"), nb::arg("v"), nb::arg("omega"), "(T,) kinetic energy of states 0..T-1.");
    m.def(
        "potential_energy",
        [=](const Model& model, const InArray& x, const InArray& q) {
          std::vector<size_t> lead;
          const int steps = static_cast<int>(batch(x, {static_cast<size_t>(model.nb), 3}, "x", lead));
          configurations(model, x, q, steps);
          std::vector<double> out(steps);
          potential_energy(model, steps, x.data(), q.data(), out.data());
          return numpy_owning<double>(std::move(out), {size_t(steps)});
        },
        nb::arg("model"), nb::arg("x"), nb::arg("q"), "(T,) gravity and spring potential energy of x (T, nb, 3), q (T, nb, 4).");
    m.def(
        "linear_momentum",
        [=](const Model& model, const InArray& v, const InArray& omega) {
          const int steps = steps_of(model, v, omega);
          std::vector<double> out(3 * static_cast<size_t>(steps));
          linear_momentum(model, steps, v.data(), omega.data(), out.data());
          return numpy_owning<double>(std::move(out), {size_t(steps), 3});
        },
        nb::arg("model"), nb::arg("v"), nb::arg("omega"), "(T, 3) total linear momentum, world frame.");
    m.def(
        "angular_momentum",
        [=](const Model& model, const InArray& x, const InArray& q, const InArray& v, const InArray& omega) {
          const int steps = steps_of(model, v, omega);
          configurations(model, x, q, steps);
          std::vector<double> out(3 * static_cast<size_t>(steps));
          angular_momentum(model, steps, x.data(), q.data(), v.data(), omega.data(), out.data());
          return numpy_owning<double>(std::move(out), {size_t(steps), 3});
        },
        nb::arg("model"), nb::arg("x"), nb::arg("q"), nb::arg("v"), nb::arg("omega"),
        "(T, 3) total angular momentum about the world origin, world frame.");
    m.def(
        "mechanics",
        [=](const Model& model, const InArray& x, const InArray& q, const InArray& v, const InArray& omega) {
          const int steps = steps_of(model, v, omega);
          configurations(model, x, q, steps);
          const size_t t = steps;
          std::vector<double> kin(t), pot(t), lin(3 * t), ang(3 * t);
          mechanics(model, steps, x.data(), q.data(), v.data(), omega.data(), kin.data(), pot.data(), lin.data(),
                    ang.data());
          return nb::make_tuple(numpy_owning<double>(std::move(kin), {t}), numpy_owning<double>(std::move(pot), {t}), numpy_owning<double>(std::move(lin), {t, 3}),
                                numpy_owning<double>(std::move(ang), {t, 3}));
        },
        nb::arg("model"), nb::arg("x"), nb::arg("q"), nb::arg("v"), nb::arg("omega"),
        "(kinetic (T,), potential (T,), linear momentum (T, 3), angular momentum (T, 3)) of states 0..T-1.");
  }
  // ======== end of coordinates, energy and momentum ========

  // ======== interior point (interior_point.h) and the step's starting point: test access ========
  {
    m.def(
        "nesterov_todd",
        [](const InArray& s, const InArray& z) {
          if (s.ndim() != 2 || s.shape(1) != 3 || z.ndim() != 2 || z.shape(1) != 3 || z.shape(0) != s.shape(0))
            throw std::invalid_argument("s, z: expected two (m, 3) arrays");
          const size_t rows = s.shape(0);
          std::vector<double> w(9 * rows), w_inv(9 * rows), lambda(3 * rows);
          for (size_t k = 0; k < rows; ++k)
            nesterov_todd(s.data() + 3 * k, z.data() + 3 * k, &w[9 * k], &w_inv[9 * k], &lambda[3 * k]);
          return nb::make_tuple(numpy_copy(w.data(), {rows, 3, 3}), numpy_copy(w_inv.data(), {rows, 3, 3}),
                                numpy_copy(lambda.data(), {rows, 3}));
        },
        nb::arg("s"), nb::arg("z"),
        "(W (m, 3, 3), W^-1 (m, 3, 3), lambda (m, 3)): Nesterov-Todd scaling of second-order-cone pairs\n"
        "s, z (m, 3) strictly inside the cone, W s = W^-1 z = lambda with lambda.lambda = s.z.");
    m.def(
        "cone_structure",
        [](const Model& model) {
          nb::dict out;
          out["orthant_s"] = nb::cast(model.orthant_s);
          out["orthant_g"] = nb::cast(model.orthant_g);
          out["soc_s"] = nb::cast(model.soc_s);
          out["soc_g"] = nb::cast(model.soc_g);
          out["is_complementarity"] =
              nb::cast(std::vector<int>(model.is_complementarity.begin(), model.is_complementarity.end()));
          out["degree"] = model.degree;
          out["contact_start"] = nb::cast(model.contact_start);
          return out;
        },
        nb::arg("model"),
        "The interior point's view of the unknowns (model.h): orthant pairs orthant_s, orthant_g (no,);\n"
        "second-order-cone triples soc_s, soc_g (3 ns, flat); is_complementarity (n,); degree;\n"
        "contact_start (nc + 1,).");
    m.def(
        "cone_step",
        [](const Model& model, const InArray& w, const InArray& dw, double tau, bool stay_inside) {
          checked(w, model.n, "w");
          checked(dw, model.n, "dw");
          return cone_step(model, w.data(), dw.data(), tau, nullptr, stay_inside);
        },
        nb::arg("model"), nb::arg("w"), nb::arg("dw"), nb::arg("tau"), nb::arg("stay_inside") = false,
        "Largest step alpha <= 1 along dw keeping every cone variable of w (n,) inside its cone\n"
        "(fraction to the boundary tau; at most 0.95 for second-order cones). stay_inside: the\n"
        "solver's safeguard for tiny cone vectors, whose step Dojo's absolute guards let leave the cone.");
    m.def(
        "complementarity_measure",
        [](const Model& model, const InArray& w) {
          checked(w, model.n, "w");
          return complementarity_measure(model, w.data());
        },
        nb::arg("model"), nb::arg("w"), "Mean duality measure sum s.gamma / degree of the unknowns w (n,).");
    m.def(
        "violations",
        [](const Model& model, const InArray& r) {
          checked(r, model.n, "r");
          double rvio = 0.0, bvio = 0.0;
          violations(model, r.data(), rvio, bvio);
          return nb::make_tuple(rvio, bvio);
        },
        nb::arg("model"), nb::arg("r"),
        "(rvio, bvio): infinity norms of the equality and complementarity rows of a residual r (n,).");
    m.def(
        "step_initial_guess",
        [](const Model& model, Data& data, const InArray& z, std::optional<InArray> lambda0) {
          if (!step_setup(model, data, checked(z, 13 * static_cast<size_t>(model.nb), "state"), nullptr, nullptr,
                          nullptr))
            throw std::invalid_argument("state not finite");
          step_initial_guess(model, data, checked(lambda0, model.nl, "lambda0"));
          return std::vector<double>(data.w);
        },
        nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("lambda0").none() = nb::none(),
        "The step's starting unknowns (n,) from z (13 nb,): midpoint velocities v15, w15, lambda0 (or\n"
        "zero), cone variables at Dojo's starting point.");
  }
  // ======== end of interior point ========
}
