// Bindings of the RK4 integrator on the tree (minimal/rk4.h).
#include "common.h"

#include "minimal/rk4.h"
#include "minimal/tree.h"
#include "run_record.h"

using namespace dojo;

namespace dojo::bindings {

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
           nb::object control, const Model* model, std::optional<InArray> z_prev, std::optional<InArray> theta,
           std::optional<nb::dict> record) {
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
          const double* pzp = nullptr;
          const double* ptheta = nullptr;
          if (record) {
            if (model == nullptr || pz == nullptr || row0 != 0 || cap < n)
              throw std::invalid_argument("rk4_run: a record needs the maximal model, out_z and row0 = 0 with n rows");
            pzp = checked(z_prev, 13 * sz(model->nb), "z_prev");
            ptheta = checked(theta, sz(model->nf), "theta");
            if (pzp == nullptr || ptheta == nullptr) throw std::invalid_argument("rk4_run: a record needs z_prev and theta");
          }
          const int done = rk4_run(t, d, r, rd, pq, pv, t0, h, n, pu, out_q.data(), out_v.data(), pz, cap, row0,
                                   control.is_none() ? nullptr : &cb);
          // the run's record of the bodies' states (their velocities are the knots' own)
          if (record && done > 0) add_run_record(*model, pz, done, pzp, ptheta, true, *record);
          return done;
        },
        nb::arg("tree"), nb::arg("data"), nb::arg("rk4"), nb::arg("rk4_data"), nb::arg("q"), nb::arg("v"),
        nb::arg("t0"), nb::arg("h"), nb::arg("n"), nb::arg("inputs").none(), nb::arg("out_q"), nb::arg("out_v"),
        nb::arg("out_z").none(), nb::arg("row0"), nb::arg("control").none(), nb::arg("model").none() = nb::none(),
        nb::arg("z_prev").none() = nb::none(), nb::arg("theta").none() = nb::none(),
        nb::arg("record").none() = nb::none(),
        "n Munthe-Kaas RK4 steps from (q, v) (updated in place) at t0; row (row0 + k) % cap of the outputs gets "
        "the state after step k; returns the steps taken (rk4.h). With record (a dict), model (the maximal\n"
        "Model), z_prev (13 nb,) and theta (nf,), the state before the steps and its unwrapped minimal\n"
        "coordinates, record gets the run's record of the bodies' states out_z (run_record.h).");
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
                           std::optional<InArray> u, double time, std::optional<InArray> tau) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    const double* pu = u ? tree_take(*u, sz(r.nu), "u") : nullptr;
    // extra generalized forces enter where a control's torques do (added to inputs, springs, dampers)
    const double* ptau = tau ? tree_take(*tau, sz(t.nv), "tau") : nullptr;
    const int nv = t.nv;
    Rk4Control add_tau = [ptau, nv](double, const double*, const double*, double* out) {
      for (int a = 0; a < nv; ++a) out[a] = ptau[a];
    };
    std::vector<double> vdot(sz(t.nv), 0.0);
    rk4_dynamics(t, d, r, rd, time, xp, xp + t.nq, pu, ptau ? &add_tau : nullptr, vdot.data());
    return numpy_owning(std::move(vdot), {sz(t.nv)});
  }, nb::arg("tree"), nb::arg("data"), nb::arg("rk4"), nb::arg("rk4_data"), nb::arg("x"), nb::arg("u").none(),
     nb::arg("t") = 0.0, nb::arg("tau").none() = nb::none(),
     "vdot of the RK4 integrator's dynamics at x (inputs u, springs, dampers, loop joints, generalized forces tau).");
  m.def("rk4_global_coordinates", [](const TreeModel& t, const InArray& q0, const InArray& phi) {
    const double* p0 = tree_take(q0, sz(t.nq), "q0");
    const double* pphi = tree_take(phi, sz(t.nv), "phi");
    std::vector<double> q(sz(t.nq), 0.0);
    rk4_global_coordinates(t, p0, pphi, q.data());
    return numpy_owning(std::move(q), {sz(t.nq)});
  }, nb::arg("tree"), nb::arg("q0"), nb::arg("phi"),
     "q (nq,) = global(q0, phi): the Munthe-Kaas map of local coordinates phi (nv,) around q0 (rk4.h).");
  m.def("rk4_local_rates", [](const TreeModel& t, const InArray& q, const InArray& phi, const InArray& v) {
    const double* pq = tree_take(q, sz(t.nq), "q");
    const double* pphi = tree_take(phi, sz(t.nv), "phi");
    const double* pv = tree_take(v, sz(t.nv), "v");
    std::vector<double> phid(sz(t.nv), 0.0);
    rk4_local_rates(t, pq, pphi, pv, phid.data());
    return numpy_owning(std::move(phid), {sz(t.nv)});
  }, nb::arg("tree"), nb::arg("q"), nb::arg("phi"), nb::arg("v"),
     "phidot (nv,): the rate of the local coordinates phi (around q0, q = global(q0, phi)) at (q, v) (rk4.h).");
}

}  // namespace dojo::bindings
