// Bindings of the step and runs: step, rollout, the PD and linear controllers, the initial
// midpoint, unwrapped angles, gradients, steps of another length (maximal/step.h, rollout.h,
// pd_controller.h, linear_controller.h, initial.h, angles.h, gradients.h, step_length.h).
#include <cmath>

#include "common.h"

#include "maximal/angles.h"
#include "maximal/coordinates.h"
#include "run_record.h"
#include "maximal/gradients.h"
#include "maximal/initial.h"
#include "maximal/linear_controller.h"
#include "maximal/pd_controller.h"
#include "maximal/rollout.h"
#include "maximal/step.h"
#include "maximal/step_length.h"

using namespace dojo;

namespace dojo::bindings {

namespace {

// Columns of the parameter kinds (gradients.h), each checked.
int checked_parameter_count(const Model& model, const std::vector<int>& parameters) {
  int p = 0;
  for (int kind : parameters) {
    if (kind < 0 || kind > static_cast<int>(ParameterKind::Restitution))
      throw std::invalid_argument("unknown parameter kind " + std::to_string(kind));
    p += parameter_count(model, static_cast<ParameterKind>(kind));
  }
  return p;
}

// A vector of an optional array (empty: none).
std::vector<double> values_of(const std::optional<InArray>& a) {
  if (!a) return {};
  return std::vector<double>(a->data(), a->data() + a->size());
}

}  // namespace

void bind_step(nb::module_& m) {
  nb::class_<PDController>(m, "PDController",
                           "The PD law on minimal coordinates (pd_controller.h), as the run loop evaluates it: "
                           "u = clamp(O (kp (target - theta) + kd (velocity_target - theta_dot)), lower, upper).")
      .def(
          "__init__",
          [](PDController* c, const InArray& kp, const InArray& kd, const InArray& target,
             const InArray& velocity_target, std::optional<InArray> output, std::optional<InArray> lower,
             std::optional<InArray> upper) {
            new (c) PDController{values_of(kp), values_of(kd), values_of(target), values_of(velocity_target),
                                 values_of(output), values_of(lower), values_of(upper)};
          },
          nb::arg("kp"), nb::arg("kd"), nb::arg("target"), nb::arg("velocity_target"),
          nb::arg("output").none() = nb::none(), nb::arg("lower").none() = nb::none(),
          nb::arg("upper").none() = nb::none(),
          "kp, kd, target, velocity_target: (nf,); output: (nu, nf) row-major, or None (u = tau, nu = nf);\n"
          "lower, upper: (nu,) the inputs' clamp, or None. Checked against a model where it is used.");

  m.def(
      "pd_inputs",
      [](const Model& model, const PDController& controller, const InArray& z) {
        check_pd_controller(model, controller);
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        std::vector<double> theta(model.nf), rate(model.nf), u(model.nu);
        pd_inputs(model, controller, pz, theta.data(), rate.data(), u.data());
        return numpy_owning<double>(std::move(u), {sz(model.nu)});
      },
      nb::arg("model"), nb::arg("controller"), nb::arg("z"),
      "The inputs (nu,) of the PD controller at the maximal state z (13 nb,) (pd_controller.h).");

  nb::class_<LinearController>(m, "LinearController",
                               "The full-state linear law on the minimal state (linear_controller.h), as the run loop "
                               "evaluates it: u = clamp(u0 - K (y - y0), lower, upper).")
      .def(
          "__init__",
          [](LinearController* c, const InArray& u0, const InArray& K, const InArray& y0, std::optional<InArray> lower,
             std::optional<InArray> upper) {
            new (c) LinearController{values_of(u0), values_of(K), values_of(y0), values_of(lower), values_of(upper)};
          },
          nb::arg("u0"), nb::arg("K"), nb::arg("y0"), nb::arg("lower").none() = nb::none(),
          nb::arg("upper").none() = nb::none(),
          "u0: (nu,); K: (nu, 2 nf) row-major; y0: (2 nf,) per joint [coordinates; velocities];\n"
          "lower, upper: (nu,) the inputs' clamp, or None. Checked against a model where it is used.");

  m.def(
      "linear_inputs",
      [](const Model& model, const LinearController& controller, const InArray& z) {
        check_linear_controller(model, controller);
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        std::vector<double> y(2 * static_cast<size_t>(model.nf)), u(model.nu);
        linear_inputs(model, controller, pz, y.data(), u.data());
        return numpy_owning<double>(std::move(u), {sz(model.nu)});
      },
      nb::arg("model"), nb::arg("controller"), nb::arg("z"),
      "The inputs (nu,) of the linear controller at the maximal state z (13 nb,) (linear_controller.h).");

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

  // dojo.step's path: one crossing a step. The arguments are taken as they are (float64,
  // C-contiguous: no conversion, no copy) and the next state is written into `out`, a new
  // array the caller made (numpy makes one in ~0.07 us; one handed out from here cost
  // ~0.5 us), so a step costs the call and the step (issue 28 item 2: the pendulum spent
  // more time in Python around _core.step, reading and copying data.z_next, than in the step).
  m.def(
      "next_state",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, std::optional<InArray> f_ext,
         std::optional<InArray> tau_ext, const SolverOptions& opts, nb::ndarray<double, nb::c_contig, nb::device::cpu> out) {
        const size_t nz = 13 * static_cast<size_t>(model.nb);
        const double* pz = checked(z, nz, "state");
        const double* pu = checked(u, model.nu, "input");
        const double* pf = checked(f_ext, 3 * static_cast<size_t>(model.nb), "f_ext");
        const double* pt = checked(tau_ext, 3 * static_cast<size_t>(model.nb), "tau_ext");
        if (out.size() != nz)
          throw std::invalid_argument("out: expected " + std::to_string(nz) + " values, got " + std::to_string(out.size()));
        // stateless: Dojo's starting point, not a previous step's scale or cones (step.h,
        // "Restarts" and "Warm start")
        data.impulse_scale = 1.0;
        data.warm_valid = false;
        step(model, data, pz, pu, pf, pt, nullptr, opts);
        std::copy(data.z_next.begin(), data.z_next.end(), out.data());
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z").noconvert(), nb::arg("u").none().noconvert(),
      nb::arg("f_ext").none().noconvert(), nb::arg("tau_ext").none().noconvert(), nb::arg("opts"),
      nb::arg("out").noconvert(),
      "One stateless step from z = [x2, v15, q2, w15] per body (Dojo's starting point, no warm start): the next\n"
      "state into out (13 nb,); the solve's record stays in data. Arrays must be float64 and C-contiguous\n"
      "(nothing is converted).");

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
      "midpoint_for_step",
      [](const Model& from, Data& d_from, const Model& to, Data& d_to, const InArray& z) {
        if (from.nb != to.nb || from.nf != to.nf || from.nl != to.nl)
          throw std::invalid_argument("midpoint_for_step: the two models are not of one mechanism");
        const size_t nz = 13 * static_cast<size_t>(from.nb);
        const double* pz = checked(z, nz, "state");
        std::vector<double> out(pz, pz + nz);
        const StepLengthResult r = midpoint_for_step(from, d_from, to, d_to, pz, out.data());
        return nb::make_tuple(numpy_owning<double>(std::move(out), {nz}), r.ok, r.iterations, r.residual);
      },
      nb::arg("from_model"), nb::arg("from_data"), nb::arg("to_model"), nb::arg("to_data"), nb::arg("z"),
      "(z_out, ok, iterations, residual): the state z (13 nb,) of a step of from_model re-expressed for a step\n"
      "of to_model (another timestep) from the same knot: the midpoint velocities with the same knot momentum\n"
      "(step_length.h); ok False when none exists on the physical branch (z_out is then z).");

  m.def(
      "midpoint_for_step_jacobian",
      [](const Model& from, Data& d_from, const Model& to, Data& d_to, const InArray& z, const InArray& z_out,
         const std::vector<int>& parameters) {
        if (from.nb != to.nb || from.nf != to.nf || from.nl != to.nl)
          throw std::invalid_argument("midpoint_for_step_jacobian: the two models are not of one mechanism");
        const size_t nz = 13 * static_cast<size_t>(from.nb), nt = 12 * static_cast<size_t>(from.nb);
        const double* pz = checked(z, nz, "state");
        const double* po = checked(z_out, nz, "z_out");
        const int p = checked_parameter_count(from, parameters);
        OutArray A = numpy_zeros<double>({nt, nt});
        std::optional<OutArray> P;
        if (p > 0) P = numpy_zeros<double>({nt, static_cast<size_t>(p)});
        if (!midpoint_for_step_jacobian(from, d_from, to, d_to, pz, po, parameters, A.data(), P ? P->data() : nullptr))
          throw std::invalid_argument(
              "midpoint_for_step_jacobian: a state is not finite or the left transforms' Jacobian is singular");
        return nb::make_tuple(A, P);
      },
      nb::arg("from_model"), nb::arg("from_data"), nb::arg("to_model"), nb::arg("to_data"), nb::arg("z"),
      nb::arg("z_out"), nb::arg("parameters") = std::vector<int>(),
      "(A (12 nb, 12 nb), P (12 nb, p) or None): the Jacobian of midpoint_for_step at z, whose result is z_out,\n"
      "in the gradients' tangent coordinates, and in the parameters of the kinds given (step_length.h).");

  m.def(
      "knot_velocities_between",
      [](const Model& model, Data& data, const InArray& z, const InArray& z_next, double h1) {
        const size_t nz = 13 * static_cast<size_t>(model.nb), nb_ = model.nb;
        const double* pz = checked(z, nz, "state");
        const double* pn = checked(z_next, nz, "z_next");
        if (!(h1 > 0.0)) throw std::invalid_argument("h1: a step length must be > 0");
        std::vector<double> v(3 * nb_), omega(3 * nb_);
        if (!knot_velocities_between(model, data, pz, pn, h1, v.data(), omega.data()))
          throw std::invalid_argument("knot_velocities_between: a state is not finite");
        return nb::make_tuple(numpy_owning<double>(std::move(v), {nb_, size_t(3)}),
                              numpy_owning<double>(std::move(omega), {nb_, size_t(3)}));
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("z_next"), nb::arg("h1"),
      "(v, omega) (nb, 3): the velocities at the knot of z (a state for a step of model) between a step of h1\n"
      "before it and the step of model.h to z_next (step_length.h knot_velocities_between).");

  m.def(
      "advance_angles", [](const Model& model, Data& data) { advance_angles(model, data); }, nb::arg("model"),
      nb::arg("data"),
      "After a step in data: the unwrapped angles of its z3 become data.angle_ref (where the next step starts).");

  m.def(
      "start_record",
      [](const Model& model, const Data& data) {
        auto out = numpy_zeros<double>({static_cast<size_t>(start_record_size(model))});
        record_start(model, data, out.data());
        return out;
      },
      nb::arg("model"), nb::arg("data"),
      "(start_record_size,) what the next step of data starts from besides the state, the impulses and the\n"
      "angles: [warm_valid, impulse_scale, the warm start's cones (NaN: a contact not in the solve)] (step.h).");

  m.def(
      "start_record_size", [](const Model& model) { return start_record_size(model); }, nb::arg("model"),
      "Values of a start record (step.h): 2 + the unknowns of the limits and contacts.");

  m.def(
      "restore_start",
      [](const Model& model, Data& data, const InArray& record, const InArray& z) {
        const double* pr = checked(record, static_cast<size_t>(start_record_size(model)), "start record");
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        if (!(pr[0] == 0.0 || pr[0] == 1.0) || !(std::isfinite(pr[1]) && pr[1] > 0.0))
          throw std::invalid_argument("start record: warm_valid must be 0 or 1 and the impulse scale > 0");
        restore_start(model, data, pr, pz);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("record"), nb::arg("z"),
      "The next step of data continues the step a start_record was taken after, which reached z (step.h): a\n"
      "run continued from a stored state takes the steps the stored run took, bit for bit.");

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
        unwrapped_coordinates(model, z.data(), static_cast<int>(n), zp, tp, theta.data());
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
      [](const Model& model, Data& data, bool state, bool input, const std::vector<int>& parameters, double kappa,
         std::optional<InArray> state_map, std::optional<InArray> output_map) {
        GradientRequest request;
        request.state = state;
        request.input = input;
        request.parameters = parameters;
        request.kappa = kappa;
        const int p = checked_parameter_count(model, parameters);
        const size_t nt = 12 * static_cast<size_t>(model.nb);
        if (state_map) {
          if (state_map->ndim() != 2 || state_map->shape(0) != nt)
            throw std::invalid_argument("state_map: expected (" + std::to_string(nt) + ", k)");
          request.state_map = state_map->data();
          request.state_map_cols = static_cast<int>(state_map->shape(1));
        }
        if (output_map) {
          if (output_map->ndim() != 2 || output_map->shape(1) != nt)
            throw std::invalid_argument("output_map: expected (k, " + std::to_string(nt) + ")");
          request.output_map = output_map->data();
          request.output_rows = static_cast<int>(output_map->shape(0));
        }
        const size_t rows = output_map ? static_cast<size_t>(request.output_rows) : nt;
        const size_t cols = state_map ? static_cast<size_t>(request.state_map_cols) : nt;
        auto matrix = [&](bool want, size_t n) -> std::optional<OutArray> {
          if (!want) return std::nullopt;
          return numpy_zeros<double>({rows, n});
        };
        std::optional<OutArray> A = matrix(state, cols), B = matrix(input, model.nu), P = matrix(p > 0, p);
        const double used = step_gradients(model, data, request, A ? A->data() : nullptr, B ? B->data() : nullptr,
                                           P ? P->data() : nullptr);
        return nb::make_tuple(A, B, P, used);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("state") = true, nb::arg("input") = true,
      nb::arg("parameters") = std::vector<int>(), nb::arg("kappa") = -1.0, nb::arg("state_map").none() = nb::none(),
      nb::arg("output_map").none() = nb::none(),
      "Derivatives (A, B, P, kappa) of the step last solved with data (implicit function theorem); with\n"
      "state_map S (12 nb, k) A's columns are dz2 = S ds, with output_map O (r, 12 nb) the rows are O dz3.");

  m.def(
      "minimal_gradients",
      [](const Model& model, Data& data, const InArray& y, std::optional<InArray> u, const SolverOptions& opts,
         bool state, bool input, const std::vector<int>& parameters, double kappa) {
        const size_t ny = 2 * static_cast<size_t>(model.nf);
        const double* py = checked(y, ny, "y");
        const double* pu = checked(u, model.nu, "input");
        GradientRequest request;
        request.state = state;
        request.input = input;
        request.parameters = parameters;
        request.kappa = kappa;
        const int p = checked_parameter_count(model, parameters);
        auto matrix = [&](bool want, size_t cols) -> std::optional<OutArray> {
          if (!want) return std::nullopt;
          return numpy_zeros<double>({ny, cols});
        };
        std::optional<OutArray> A = matrix(state, ny), B = matrix(input, model.nu), P = matrix(p > 0, p);
        OutArray y_next = numpy_zeros<double>({ny}), w = numpy_zeros<double>({sz(model.n)});
        const MinimalStepGradients r =
            minimal_step_gradients(model, data, py, pu, opts, request, y_next.data(), A ? A->data() : nullptr,
                                   B ? B->data() : nullptr, P ? P->data() : nullptr, w.data());
        return nb::make_tuple(y_next, static_cast<int>(r.status), w, A, B, P, r.kappa);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("y"), nb::arg("u").none(), nb::arg("opts"), nb::arg("state") = true,
      nb::arg("input") = true, nb::arg("parameters") = std::vector<int>(), nb::arg("kappa") = -1.0,
      "One step from the minimal state y (2 nf,) and its derivatives in minimal coordinates, in one call\n"
      "(gradients.h minimal_step_gradients): (y_next, status, w, A, B, P, kappa), w the solver's solution\n"
      "before any relaxation; the step starts from Dojo's point, as dojo.step's.");

  m.def(
      "relax_step", [](const Model& model, Data& data, double kappa) { relax_step(model, data, kappa); },
      nb::arg("model"), nb::arg("data"), nb::arg("kappa"),
      "Move the step last solved with data onto the central path s o gamma = kappa (gradients.h); data.z_next\n"
      "becomes that step's result.");

  m.def(
      "rollout",
      [](const Model& model, Data& data, const InArray& z, int k, std::optional<InArray> inputs,
         std::optional<nb::ndarray<double, nb::c_contig, nb::device::cpu>> lambda, const SolverOptions& opts,
         bool stop_on_failure, std::optional<InArray> theta, nb::handle law, nb::handle into) {
        if (k < 0) throw std::invalid_argument("rollout: k must be >= 0");
        // the law: a PDController or a LinearController (or None)
        const PDController* controller = nullptr;
        const LinearController* linear = nullptr;
        if (!law.is_none()) {
          if (nb::isinstance<PDController>(law))
            controller = nb::cast<const PDController*>(law);
          else if (nb::isinstance<LinearController>(law))
            linear = nb::cast<const LinearController*>(law);
          else
            throw nb::type_error("rollout: controller must be a PDController, a LinearController or None");
          if (inputs) throw std::invalid_argument("rollout: give inputs or a controller, not both");
          if (controller) check_pd_controller(model, *controller);
          if (linear) check_linear_controller(model, *linear);
        }
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
        if (!into.is_none() && !nb::isinstance<nb::dict>(into)) throw nb::type_error("rollout: out must be a dict or None");
        auto states = output_rows<double>(into, "states", {kk, 13 * nb_});
        auto iterations = numpy_zeros<int>({kk});
        auto residual = numpy_zeros<double>({kk});
        auto status = numpy_zeros<int>({kk});
        auto complementarity = numpy_zeros<double>({kk});
        auto singular_node = numpy_zeros<int>({kk});
        auto impulses = output_rows<double>(into, "impulses", {kk, static_cast<size_t>(model.nl)});
        auto distance = numpy_zeros<double>({kk, nc});
        auto normal = numpy_zeros<double>({kk, nc});
        auto friction = numpy_zeros<double>({kk, nc, size_t(2)});
        auto slip = numpy_zeros<double>({kk, nc, size_t(2)});
        auto start = numpy_zeros<double>({kk, static_cast<size_t>(start_record_size(model))});
        std::optional<nb::ndarray<nb::numpy, double>> used;
        if (controller || linear) used = numpy_zeros<double>({kk, static_cast<size_t>(model.nu)});
        RolloutRecord rec;
        if (used) rec.inputs = used->data();
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
        rec.start = start.data();
        const int done = rollout(model, data, pz, k, pu, pl, opts, stop_on_failure, rec, controller, linear);
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
        out["start"] = start;
        if (used) out["inputs"] = *used;
        if (ptheta != nullptr && done > 0) add_run_record(model, states.data(), done, pz, ptheta, false, out, into, k);
        return out;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("k"), nb::arg("inputs").none(),
      nb::arg("lambda_").none(), nb::arg("opts"), nb::arg("stop_on_failure") = false,
      nb::arg("theta").none() = nb::none(), nb::arg("controller").none() = nb::none(), nb::arg("out").none() = nb::none(),
      "k steps from z with per-step inputs (k, nu) in one call; records per step (rows past 'steps' unused),\n"
      "'start' (k, start_record_size) among them (step.h, the start record).\n"
      "With a controller (PDController or LinearController) instead of inputs, its law at the state each step\n"
      "starts from, and\n"
      "the inputs it gave, 'inputs' (k, nu) (a closed-loop run, one call a block).\n"
      "With theta (nf,), z's unwrapped minimal coordinates, also the run's record of the steps done: minimal_q\n"
      "(steps, nf) unwrapped on from z; knot_v, knot_omega (steps + 1, nb, 3), knot_minimal_v (steps + 1, nf):\n"
      "the velocities at the knots of z and the states reached, the last extrapolated (energy.h); those arrays\n"
      "then have k (+ 1) rows, the first steps (+ 1) written.\n"
      "out: a dict of the caller's arrays to write instead of new ones, written in place (a run's recorder's\n"
      "rows): any of 'states' (k, 13 nb), 'impulses' (k, nl), 'minimal_q' (k, nf), 'knot_v', 'knot_omega'\n"
      "(k + 1, nb, 3), 'knot_minimal_v' (k + 1, nf); C-contiguous float64 of exactly these shapes.");

  m.def(
      "rollout_jvp",
      [](const Model& model, Data& data, const InArray& z, int k, std::optional<InArray> inputs,
         nb::ndarray<double, nb::c_contig, nb::device::cpu> lambda, const SolverOptions& opts, double kappa,
         const std::vector<int>& parameters, const InArray& dz0, std::optional<InArray> du,
         std::optional<InArray> dp) {
        if (k < 1) throw std::invalid_argument("rollout_jvp: k must be >= 1");
        const int p = checked_parameter_count(model, parameters);
        const size_t kk = k, nt = 12 * static_cast<size_t>(model.nb);
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        const double* pu = checked(inputs, kk * model.nu, "inputs");
        const double* pdz = checked(dz0, nt, "dz0");
        const double* pdu = checked(du, kk * model.nu, "dU");
        const double* pdp = checked(dp, p, "dparams");
        if (lambda.size() != static_cast<size_t>(model.nl))
          throw std::invalid_argument("lambda: expected " + std::to_string(model.nl) + " values");
        auto states = numpy_zeros<double>({kk, 13 * static_cast<size_t>(model.nb)});
        auto tangents = numpy_zeros<double>({kk, nt});
        auto status = numpy_zeros<int>({kk});
        const int done = rollout_jvp(model, data, pz, k, pu, lambda.data(), opts, kappa, parameters, pdz, pdu, pdp,
                                     states.data(), tangents.data(), status.data());
        nb::dict out;
        out["steps"] = done;
        out["states"] = states;
        out["tangents"] = tangents;
        out["status"] = status;
        return out;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("k"), nb::arg("inputs").none(), nb::arg("lambda_"),
      nb::arg("opts"), nb::arg("kappa"), nb::arg("parameters"), nb::arg("dz0"), nb::arg("du").none(),
      nb::arg("dp").none(),
      "Forward mode through k steps from z (rollout.h rollout_jvp): {steps, states (k, 13 nb), tangents (k, 12 nb), status}.");

  m.def(
      "rollout_vjp",
      [](const Model& model, Data& data, const InArray& z, int k, std::optional<InArray> inputs,
         nb::ndarray<double, nb::c_contig, nb::device::cpu> lambda, const SolverOptions& opts, double kappa,
         const std::vector<int>& parameters, const InArray& cotangents) {
        if (k < 1) throw std::invalid_argument("rollout_vjp: k must be >= 1");
        const int p = checked_parameter_count(model, parameters);
        const size_t kk = k, nt = 12 * static_cast<size_t>(model.nb);
        const double* pz = checked(z, 13 * static_cast<size_t>(model.nb), "state");
        const double* pu = checked(inputs, kk * model.nu, "inputs");
        const double* pc = checked(cotangents, kk * nt, "cotangents");
        if (lambda.size() != static_cast<size_t>(model.nl))
          throw std::invalid_argument("lambda: expected " + std::to_string(model.nl) + " values");
        auto states = numpy_zeros<double>({kk, 13 * static_cast<size_t>(model.nb)});
        auto status = numpy_zeros<int>({kk});
        auto z0_bar = numpy_zeros<double>({nt});
        auto u_bar = numpy_zeros<double>({kk, static_cast<size_t>(model.nu)});
        auto p_bar = numpy_zeros<double>({static_cast<size_t>(p)});
        const int done = rollout_vjp(model, data, pz, k, pu, lambda.data(), opts, kappa, parameters, pc, states.data(),
                                     status.data(), z0_bar.data(), u_bar.data(), p_bar.data());
        nb::dict out;
        out["steps"] = done;
        out["states"] = states;
        out["status"] = status;
        out["z0"] = z0_bar;
        out["inputs"] = u_bar;
        out["params"] = p_bar;
        return out;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("k"), nb::arg("inputs").none(), nb::arg("lambda_"),
      nb::arg("opts"), nb::arg("kappa"), nb::arg("parameters"), nb::arg("cotangents"),
      "Reverse mode through k steps from z (rollout.h rollout_vjp): {steps, states, status, z0 (12 nb), inputs (k, nu), params (p,)}.");
}

}  // namespace dojo::bindings
