// Bindings of the step and runs: step, rollout, the initial midpoint, unwrapped angles,
// gradients (maximal/step.h, rollout.h, initial.h, angles.h, gradients.h).
#include "common.h"

#include "maximal/angles.h"
#include "maximal/coordinates.h"
#include "run_record.h"
#include "maximal/gradients.h"
#include "maximal/initial.h"
#include "maximal/rollout.h"
#include "maximal/step.h"

using namespace dojo;

namespace dojo::bindings {

void bind_step(nb::module_& m) {
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
      "run_record",
      [](const Model& model, const InArray& states, const InArray& z_prev, const InArray& theta_prev, bool exact_knots) {
        const size_t nz = 13 * static_cast<size_t>(model.nb);
        if (nz == 0 || states.size() == 0 || states.size() % nz != 0)
          throw std::invalid_argument("states: expected (T, " + std::to_string(nz) + ") values, T >= 1");
        nb::dict out;
        add_run_record(model, states.data(), static_cast<int>(states.size() / nz), checked(z_prev, nz, "z_prev"),
                       checked(theta_prev, model.nf, "theta_prev"), exact_knots, out);
        return out;
      },
      nb::arg("model"), nb::arg("states"), nb::arg("z_prev"), nb::arg("theta_prev"), nb::arg("exact_knots") = false,
      "The run's record of states (T, 13 nb) reached from z_prev (13 nb,) with its unwrapped minimal coordinates\n"
      "theta_prev (nf,): minimal_q, knot_v, knot_omega, knot_minimal_v (run_record.h), in one call (a closed-loop\n"
      "step's, whose states come one solve at a time).");

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
         bool stop_on_failure, std::optional<InArray> theta) {
        if (k < 0) throw std::invalid_argument("rollout: k must be >= 0");
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        const double* ptheta = checked(theta, model.nf, "theta");
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
        if (ptheta != nullptr && done > 0) add_run_record(model, states.data(), done, pz, ptheta, false, out);
        return out;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("k"), nb::arg("inputs").none(),
      nb::arg("lambda_").none(), nb::arg("opts"), nb::arg("stop_on_failure") = false,
      nb::arg("theta").none() = nb::none(),
      "k steps from z with per-step inputs (k, nu) in one call; records per step (rows past 'steps' unused).\n"
      "With theta (nf,), z's unwrapped minimal coordinates, also the run's record of the steps done: minimal_q\n"
      "(steps, nf) unwrapped on from z; knot_v, knot_omega (steps + 1, nb, 3), knot_minimal_v (steps + 1, nf):\n"
      "the velocities at the knots of z and the states reached, the last extrapolated (energy.h).");
}

}  // namespace dojo::bindings
