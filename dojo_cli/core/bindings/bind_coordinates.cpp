// Bindings of the maximal <-> minimal coordinate conversions, energy and momentum
// (maximal/coordinates.h, maximal/energy.h).
#include "common.h"

#include "maximal/coordinates.h"
#include "maximal/energy.h"

using namespace dojo;

namespace dojo::bindings {

void bind_coordinates(nb::module_& m) {
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
        "knot_momenta",
        [=](const Model& model, const InArray& q, const InArray& v, const InArray& omega) {
          const int states = steps_of(model, v, omega) + 1;
          std::vector<size_t> lead;
          if (batch(q, {size_t(model.nb), 4}, "q", lead) != static_cast<size_t>(states) || lead.size() != 1)
            throw std::invalid_argument("q: expected shape (n, nb, 4), as many rows as v");
          const size_t nb = model.nb, n = 3 * nb * states;
          std::vector<double> px(n), pq(n);
          knot_momenta(model, states, q.data(), v.data(), omega.data(), px.data(), pq.data());
          return nb::make_tuple(numpy_owning<double>(std::move(px), {size_t(states), nb, 3}),
                                numpy_owning<double>(std::move(pq), {size_t(states), nb, 3}));
        },
        nb::arg("model"), nb::arg("q"), nb::arg("v"), nb::arg("omega"),
        "(px, pq): Dojo's Storage.px, pq (n, nb, 3) of n states whose velocities v, omega (n, nb, 3) are at\n"
        "the knots: each body's linear momentum m v and angular momentum R(q) J omega, world frame (energy.h).");
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
}

}  // namespace dojo::bindings
