// The only nanobind file: the Python face of the C++ core (dojo_cli._core).
// Bindings are thin and mirror the C++ names; C++ exceptions become Python
// exceptions at this boundary (std::invalid_argument -> ValueError), which
// dojo_cli.simulation turns into DojoError.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "data.h"
#include "gradients.h"
#include "model.h"
#include "step.h"

namespace nb = nanobind;
using namespace dojo;

namespace {

using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, double>;

// A read-only-by-convention numpy view of a buffer owned by `owner` (no copy).
template <class V>
OutArray view(V& vec, nb::handle owner, std::initializer_list<size_t> shape) {
  return OutArray(vec.data(), shape, owner);
}

const double* checked(const std::optional<InArray>& a, size_t size, const char* what) {
  if (!a) return nullptr;
  if (a->size() != size)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(size) + " values, got " +
                                std::to_string(a->size()));
  return a->data();
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "dojo_cli's compiled core: Model, Data, the step, contacts, solvers and gradients.";

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
      .def_rw("spring", &ModelInput::spring)
      .def_rw("damper", &ModelInput::damper)
      .def_rw("spring_offset", &ModelInput::spring_offset)
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
      .def_rw("contact_shape", &ModelInput::contact_shape);

  nb::class_<Model>(m, "Model", "A compiled mechanism: frozen flat arrays and the step's block structure.")
      .def(nb::init<const ModelInput&>(), nb::arg("input"))
      .def_ro("nb", &Model::nb)
      .def_ro("nj", &Model::nj)
      .def_ro("nl", &Model::nl)
      .def_ro("nf", &Model::nf)
      .def_ro("nlim", &Model::nlim)
      .def_ro("nc", &Model::nc)
      .def_ro("n", &Model::n)
      .def_ro("h", &Model::h)
      .def_prop_ro("n_blocks", [](const Model& s) { return static_cast<int>(s.blocks.block_row.size()); })
      .def_prop_ro("n_fill_blocks",
                   [](const Model& s) { return static_cast<int>(s.blocks.block_row.size()) - s.blocks.n_structural; })
      .def_prop_ro("elimination_order", [](const Model& s) { return s.blocks.order; })
      .def_prop_ro("tree_joints", [](const Model& s) { return s.tree_joints; })
      .def_prop_ro("loop_joints", [](const Model& s) { return s.loop_joints; });

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
      .def_prop_ro("z_next", [](nb::handle self) {
        Data& d = nb::cast<Data&>(self);
        return view(d.z_next, self, {d.z_next.size()});
      })
      .def_prop_ro("w", [](nb::handle self) {
        Data& d = nb::cast<Data&>(self);
        return view(d.w, self, {d.w.size()});
      })
      .def_prop_ro("residual_vector", [](nb::handle self) {
        Data& d = nb::cast<Data&>(self);
        return view(d.r, self, {d.r.size()});
      })
      .def_prop_ro("log", [](nb::handle self) {
        Data& d = nb::cast<Data&>(self);
        return view(d.log, self, {static_cast<size_t>(d.log_rows), static_cast<size_t>(kLogColumns)});
      })
      .def_prop_ro("status", [](const Data& d) { return static_cast<int>(d.status); })
      .def_ro("iterations", &Data::iterations)
      .def_ro("residual", &Data::residual)
      .def_ro("complementarity", &Data::complementarity);

  m.def(
      "step",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, std::optional<InArray> f_ext,
         std::optional<InArray> tau_ext, std::optional<InArray> lambda0, const SolverOptions& opts) {
        if (model.nc > 0) throw std::invalid_argument("the compiled step does not handle contacts yet");
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        const double* pu = checked(u, model.nf, "input");
        const double* pf = checked(f_ext, 3 * static_cast<size_t>(model.nb), "f_ext");
        const double* pt = checked(tau_ext, 3 * static_cast<size_t>(model.nb), "tau_ext");
        const double* pl = checked(lambda0, model.nl, "lambda0");
        return static_cast<int>(step(model, data, pz, pu, pf, pt, pl, opts));
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("f_ext").none(),
      nb::arg("tau_ext").none(), nb::arg("lambda0").none(), nb::arg("opts"),
      "One step from z = [x2, v15, q2, w15] per body; the result is in data (z_next, w, status, iterations).");

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
          if (kind < 0 || kind > static_cast<int>(ParameterKind::Offset))
            throw std::invalid_argument("unknown parameter kind " + std::to_string(kind));
          p += parameter_count(model, static_cast<ParameterKind>(kind));
        }
        const size_t rows = 12 * static_cast<size_t>(model.nb);
        auto matrix = [&](bool want, size_t cols) -> std::optional<OutArray> {
          if (!want) return std::nullopt;
          double* buf = new double[rows * cols]();
          nb::capsule owner(buf, [](void* ptr) noexcept { delete[] static_cast<double*>(ptr); });
          return OutArray(buf, {rows, cols}, owner);
        };
        std::optional<OutArray> A = matrix(state, rows), B = matrix(input, model.nf), P = matrix(p > 0, p);
        const double used = step_gradients(model, data, request, A ? A->data() : nullptr, B ? B->data() : nullptr,
                                           P ? P->data() : nullptr);
        return nb::make_tuple(A, B, P, used);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("state") = true, nb::arg("input") = true,
      nb::arg("parameters") = std::vector<int>(), nb::arg("kappa") = -1.0,
      "Derivatives (A, B, P, kappa) of the step last solved with data (implicit function theorem).");

  // Test access to the pieces of a step (residual and Newton matrix at given unknowns).
  m.def(
      "step_residual",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, const InArray& w) {
        if (!step_setup(model, data, checked(z, 13 * static_cast<size_t>(model.nb), "state"),
                        checked(u, model.nf, "input"), nullptr, nullptr))
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
                        checked(u, model.nf, "input"), nullptr, nullptr))
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
}
