// What every binding file shares: the nanobind aliases, the array types the core takes and
// hands out, and the declarations of each area's bind function (module.cpp calls them).
#pragma once

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

#include "maximal/data.h"

namespace nb = nanobind;

namespace dojo::bindings {

using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, double>;

// A new numpy array owning `values` (moved in, not copied), with the given shape and
// element strides (empty: C order). Every array the core hands out is made here, except the
// tree's per-call results (bind_tree.cpp new_array: numpy.empty's array, 0.17 us cheaper).
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

// An output of a call that writes per-step rows: the caller's array `name` of `into` (a dict,
// or None) when it has one, written in place (a run's recorder hands the rows of its own
// arrays: no block array made and copied, issue 28), else a new zero-filled one. A given
// array must be a writable C-contiguous array of T with exactly `shape` (never converted:
// a copy would leave the caller's array unwritten).
template <class T>
nb::ndarray<nb::numpy, T> output_rows(nb::handle into, const char* name, const std::vector<size_t>& shape) {
  if (!into.is_none()) {
    nb::dict given = nb::borrow<nb::dict>(into);
    if (given.contains(name)) {
      nb::ndarray<nb::numpy, T, nb::c_contig> a;
      if (!nb::try_cast(given[name], a, false) || a.ndim() != shape.size())
        throw std::invalid_argument(std::string("out['") + name + "']: expected a writable C-contiguous array of " +
                                    std::to_string(shape.size()) + " dimensions");
      for (size_t i = 0; i < shape.size(); ++i)
        if (a.shape(i) != shape[i])
          throw std::invalid_argument(std::string("out['") + name + "']: expected shape axis " + std::to_string(i) +
                                      " of " + std::to_string(shape[i]) + ", got " + std::to_string(a.shape(i)));
      return nb::ndarray<nb::numpy, T>(a);
    }
  }
  return numpy_zeros<T>(shape);
}

// A read-only-by-convention numpy view of a buffer owned by `owner` (no copy).
template <class V>
OutArray view(V& vec, nb::handle owner, std::initializer_list<size_t> shape) {
  return OutArray(vec.data(), shape, owner);
}

// A property getter: a numpy view of a Data vector, as rows of `cols` (1: a vector).
template <std::vector<double> dojo::Data::*member>
auto data_view(size_t cols) {
  return [cols](nb::handle self) {
    std::vector<double>& v = nb::cast<dojo::Data&>(self).*member;
    return cols == 1 ? OutArray(v.data(), {v.size()}, self) : OutArray(v.data(), {v.size() / cols, cols}, self);
  };
}

inline const double* checked(const std::optional<InArray>& a, size_t size, const char* what) {
  if (!a) return nullptr;
  if (a->size() != size)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " values, got " +
                                std::to_string(a->size()));
  return a->data();
}

// A new numpy array (C order) holding a copy of `data`.
inline nb::object numpy_copy(const double* data, std::initializer_list<size_t> shape) {
  size_t size = 1;
  for (size_t n : shape) size *= n;
  return nb::cast(numpy_owning(std::vector<double>(data, data + size), std::vector<size_t>(shape)));
}

// The data of an input array of `size` numbers (the tree and RK4 bindings).
inline const double* tree_take(const InArray& a, size_t size, const char* what) {
  if (a.size() != size)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " entries, got " +
                                std::to_string(a.size()));
  return a.data();
}

// A count as a size.
inline size_t sz(int n) { return static_cast<size_t>(n); }

// One function per area, each in its own file (bind_<area>.cpp). `testing` is the
// submodule dojo_cli._core.testing: entry points only tests and benchmarks call.
void bind_model(nb::module_& m);
void bind_step(nb::module_& m);
void bind_coordinates(nb::module_& m);
void bind_contacts(nb::module_& m, nb::module_& testing);
void bind_block_lu(nb::module_& testing);
void bind_tree(nb::module_& m);
void bind_rk4(nb::module_& m);
void bind_variational4(nb::module_& m);
void bind_testing(nb::module_& testing);

}  // namespace dojo::bindings
