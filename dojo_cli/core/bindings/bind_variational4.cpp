// integrator: variational4 (core/maximal/variational4.h): a symmetric composition of the step.
#include "common.h"

#include "maximal/variational4.h"

using namespace dojo;

namespace dojo::bindings {

void bind_variational4(nb::module_& m) {
  m.def("variational4_problem", &variational4_problem, nb::arg("model"),
        "What the variational4 integrator cannot run in a model (empty: runnable).");
  nb::class_<Variational4>(m, "Variational4",
                           "A symmetric composition of the variational step (Suzuki 5 stages, or Yoshida 3): two Models (timesteps "
                           "w1 h, |w0| h) and "
                           "their Data.")
      .def(nb::init<const ModelInput&, int>(), nb::arg("input"), nb::arg("stages") = kDefaultStages)
      .def_ro("stages", &Variational4::stages)
      .def_ro("h", &Variational4::h)
      .def_prop_ro("outer_h", [](const Variational4& v) { return v.outer.h; })
      .def_prop_ro("inner_h", [](const Variational4& v) { return v.inner.h; })
      .def(
          "initial",
          [](Variational4& v, const InArray& z, std::optional<InArray> u) {
            const size_t nz = 13 * sz(v.outer.nb);
            const double* pz = checked(z, nz, "state");
            const double* pu = checked(u, sz(v.outer.nu), "input");
            std::vector<double> out(nz);
            const SolverStatus status = v.initial(pz, pu, nullptr, nullptr, out.data());
            return nb::make_tuple(numpy_owning<double>(std::move(out), {nz}), static_cast<int>(status));
          },
          nb::arg("z_t0"), nb::arg("u").none(),
          "(z, status): the run's state [x, v_mid, q, w_mid] from z_t0 = [x, v(0), q, w(0)] per body.")
      .def(
          "run",
          [](Variational4& v, const InArray& z, int n, std::optional<InArray> inputs, const SolverOptions& opts) {
            if (n < 0) throw std::invalid_argument("variational4 run: n must be >= 0");
            const size_t nz = 13 * sz(v.outer.nb), nu = sz(v.outer.nu);
            const double* pz = checked(z, nz, "state");
            const double* pu = checked(inputs, sz(n) * nu, "inputs");
            std::vector<double> state(pz, pz + nz), next(nz), knots(sz(n) * nz), residual(sz(n));
            std::vector<int> status(sz(n), 0), iterations(sz(n), 0);
            int done = 0;
            for (; done < n; ++done) {
              const SolverStatus s =
                  v.step(state.data(), pu ? pu + sz(done) * nu : nullptr, nullptr, nullptr, opts, next.data(),
                         knots.data() + sz(done) * nz);
              status[sz(done)] = static_cast<int>(s);
              iterations[sz(done)] = v.iterations;
              residual[sz(done)] = v.residual;
              if (s != SolverStatus::Success) {
                ++done;
                break;
              }
              state.swap(next);
            }
            knots.resize(sz(done) * nz);
            status.resize(sz(done));
            iterations.resize(sz(done));
            residual.resize(sz(done));
            return nb::make_tuple(numpy_owning<double>(std::move(state), {nz}),
                                  numpy_owning<double>(std::move(knots), {sz(done), nz}),
                                  numpy_owning<int>(std::move(status), {sz(done)}),
                                  numpy_owning<int>(std::move(iterations), {sz(done)}),
                                  numpy_owning<double>(std::move(residual), {sz(done)}));
          },
          nb::arg("z"), nb::arg("n"), nb::arg("inputs").none(), nb::arg("opts"),
          "(z_last, knots, status, iterations, residual): n macro steps of h from z = [x, v_mid, q, w_mid] (the\n"
          "midpoint velocities of an outer sub-step), inputs (n, nu) held over each step or None. knots (n, 13 nb):\n"
          "the states after each step with their velocities at the knot; z_last: the state to go on from. Stops\n"
          "after the first step that fails (its status is the last).");
}

}  // namespace dojo::bindings
