// Test-only entry points (dojo_cli._core.testing): the pieces of a step (residual, Newton
// matrix, starting point) and of the interior point (maximal/residual.h, newton_matrix.h,
// step.h, interior_point.h), for tests that check them against independent computations.
#include "common.h"

#include "linalg/block_lu.h"
#include "maximal/angles.h"
#include "maximal/coordinates.h"
#include "maximal/factor.h"
#include "maximal/interior_point.h"
#include "maximal/kinematics.h"
#include "maximal/newton_matrix.h"
#include "maximal/residual.h"
#include "maximal/step.h"

using namespace dojo;
using D12 = Dual<double, 12>;  // a joint's 12 tangents [xa, ta, xb, tb]

namespace dojo::bindings {

void bind_testing(nb::module_& testing) {
  nb::module_& m = testing;
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
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, const InArray& w,
         std::optional<InArray> residual_at) {
        if (!step_setup(model, data, checked(z, 13 * static_cast<size_t>(model.nb), "state"),
                        checked(u, model.nu, "input"), nullptr, nullptr))
          throw std::invalid_argument("state or input not finite");
        checked(w, model.n, "w");
        std::vector<double> ww(w.data(), w.data() + model.n);
        if (residual_at) {  // the residual first, as a solver evaluates it (step_matrix may reuse its rows)
          checked(residual_at, model.n, "residual_at");
          std::vector<double> wr(residual_at->data(), residual_at->data() + model.n);
          step_residual(model, data, wr.data(), data.rc.data());
        }
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
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("w"),
      nb::arg("residual_at").none() = nb::none());
  m.def(
      "condensed_solve",
      [](const Model& model, Data& data, const InArray& z, std::optional<InArray> u, const InArray& w, const InArray& b,
         bool scaled, bool condensed, bool transpose) {
        if (!step_setup(model, data, checked(z, 13 * static_cast<size_t>(model.nb), "state"),
                        checked(u, model.nu, "input"), nullptr, nullptr))
          throw std::invalid_argument("state or input not finite");
        checked(w, model.n, "w");
        checked(b, model.n, "b");
        std::vector<double> ww(w.data(), w.data() + model.n);
        step_residual(model, data, ww.data(), data.r.data());
        step_matrix(model, data, ww.data());
        std::vector<double> rn(data.r);
        std::copy(ww.begin(), ww.end(), data.w.begin());  // the scaling reads the cones at data.w
        if (scaled) scale_second_order_cones(model, data, rn.data());  // the interior point's cone rows
        const int n = model.n;
        std::vector<double> dense(static_cast<size_t>(n) * n, 0.0), e(n, 0.0), col(n, 0.0);
        for (int j = 0; j < n; ++j) {
          e[j] = 1.0;
          block_multiply(model.blocks, data.matrix.data(), e.data(), col.data());
          e[j] = 0.0;
          for (int i = 0; i < n; ++i) dense[static_cast<size_t>(i) * n + j] = col[i];
        }
        const bool factored = condensed ? factor_matrix_condensed(model, data) : factor_matrix(model, data);
        std::vector<double> x(b.data(), b.data() + n);
        if (factored) solve_factored(model, data, x.data(), 1, transpose);
        nb::dict out;
        out["factored"] = factored;
        out["condensed"] = data.lu_is_condensed;
        out["x"] = numpy_copy(x.data(), {static_cast<size_t>(n)});
        out["matrix"] = numpy_copy(dense.data(), {static_cast<size_t>(n), static_cast<size_t>(n)});
        return out;
      },
      nb::arg("model"), nb::arg("data"), nb::arg("z"), nb::arg("u").none(), nb::arg("w"), nb::arg("b"),
      nb::arg("scaled") = true, nb::arg("condensed") = true, nb::arg("transpose") = false,
      "The interior point's factorisation (factor.h factor_matrix_condensed; with condensed=False the block\n"
      "LU's, factor_matrix) of the Newton matrix at the unknowns w (its second-order cones' rows in\n"
      "Nesterov-Todd scaled form when scaled) and its solve of b (n,), of A^T x = b with transpose:\n"
      "factored, condensed (the contacts were eliminated in closed form), x (n,) and the matrix (n, n)\n"
      "it factorised (A, not transposed).");
  m.def(
      "rows3_at",
      [](const Model& model, const Data& data, const InArray& w) {
        checked(w, model.n, "w");
        return rows3_at(model, data, w.data());
      },
      nb::arg("model"), nb::arg("data"), nb::arg("w"),
      "Whether the configuration and rows at z3 in data are those of the unknowns w (residual.h rows3_at).");

  // Joint rows (kinematics.h) at given parent and child poses: each basis slot's row (its
  // constraint row where the slot is constrained, else its minimal coordinate) and the
  // input rows, with the hand-derived tangent Jacobians and the same rows evaluated on
  // dual numbers seeded along the 12 tangents (an independent derivative of the values).
  m.def(
      "joint_rows",
      [](const Model& model, int j, const InArray& xa, const InArray& qa, const InArray& xb, const InArray& qb) {
        if (j < 0 || j >= model.nj) throw std::invalid_argument("joint index out of range");
        const double* pa = tree_take(xa, 3, "xa");
        const double* pqa = tree_take(qa, 4, "qa");
        const double* pb = tree_take(xb, 3, "xb");
        const double* pqb = tree_take(qb, 4, "qb");
        Pose<double> a{load3<double>(pa), load4<double>(pqa), rotation(load4<double>(pqa))};
        Pose<double> b{load3<double>(pb), load4<double>(pqb), rotation(load4<double>(pqb))};
        if (model.parent[j] == kWorld) a = world_pose<double>();
        Pose<D12> ad, bd;
        const bool world = model.parent[j] == kWorld;
        for (int k = 0; k < 3; ++k) {
          ad.x[k] = world ? D12(0.0) : D12::variable(pa[k], k);
          bd.x[k] = D12::variable(pb[k], 6 + k);
        }
        const Vec3<D12> ta{{D12::variable(0.0, 3), D12::variable(0.0, 4), D12::variable(0.0, 5)}};
        const Vec3<D12> tb{{D12::variable(0.0, 9), D12::variable(0.0, 10), D12::variable(0.0, 11)}};
        ad.q = world ? identity_quat<D12>() : perturb_right(load4<D12>(pqa), ta);
        bd.q = perturb_right(load4<D12>(pqb), tb);
        ad.r = rotation(ad.q);
        bd.r = rotation(bd.q);
        JointKinematics<double> k;
        JointKinematics<D12> kd;
        joint_kinematics(model, j, a, b, k);
        joint_kinematics(model, j, ad, bd, kd);
        const Vec3<double> rv = rotation_vector(k.q_rel);
        const Vec3<D12> rvd = rotation_vector(kd.q_rel);
        std::vector<double> values(6), jac(72), dual_jac(72), input_jac(72), dual_input_jac(72);
        for (int s = 0; s < 6; ++s) {
          JointRow<double> row;
          JointRow<D12> rowd;
          if (model.constrained[6 * j + s]) {
            constraint_row(model, j, s, k, row);
            constraint_row(model, j, s, kd, rowd);
          } else {
            minimal_row(model, j, s, k, rv, row);
            minimal_row(model, j, s, kd, rvd, rowd);
          }
          values[s] = row.value;
          for (int c = 0; c < 12; ++c) {
            jac[12 * s + c] = row.jac[c];
            dual_jac[12 * s + c] = rowd.value.d[c];
          }
          input_row(model, j, s, k, row);
          for (int c = 0; c < 12; ++c) input_jac[12 * s + c] = row.jac[c];
        }
        nb::dict out;
        out["value"] = numpy_copy(values.data(), {6});
        out["jacobian"] = numpy_copy(jac.data(), {6, 12});
        out["dual_jacobian"] = numpy_copy(dual_jac.data(), {6, 12});
        out["input_jacobian"] = numpy_copy(input_jac.data(), {6, 12});
        return out;
      },
      nb::arg("model"), nb::arg("joint"), nb::arg("xa"), nb::arg("qa"), nb::arg("xb"), nb::arg("qb"),
      "Rows of joint j (kinematics.h) at the parent pose (xa (3,), qa (4,); ignored for the world) and the\n"
      "child pose (xb, qb): value (6,) per basis slot (constraint row where constrained, else the minimal\n"
      "coordinate), jacobian (6, 12) hand-derived in the tangents [xa, ta, xb, tb], dual_jacobian (6, 12)\n"
      "the values differentiated with dual numbers, input_jacobian (6, 12) the input rows.");

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
        [](const Model& model, const InArray& r, bool relative) {
          checked(r, model.n, "r");
          double rvio = 0.0, bvio = 0.0;
          violations(model, r.data(), rvio, bvio, relative ? model.row_scale.data() : nullptr);
          return nb::make_tuple(rvio, bvio);
        },
        nb::arg("model"), nb::arg("r"), nb::arg("relative") = true,
        "(rvio, bvio): infinity norms of the equality and complementarity rows of a residual r (n,), each row in\n"
        "its unit (relative, as the solver's default tolerances measure it: tolerances.h) or in SI units.");
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

  // The functions a run's record (maximal/run_record.h, one pass) stands for, as they were
  // called state by state before it: its bit-for-bit references.
  m.def(
      "unwrapped_coordinates_by_state",
      [](const Model& model, const InArray& z, const InArray& z_prev, const InArray& theta_prev) {
        const size_t nz = 13 * static_cast<size_t>(model.nb), nf = model.nf;
        if (nz == 0 || z.size() % nz != 0) throw std::invalid_argument("z: expected (T, 13 nb) values");
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
      nb::arg("model"), nb::arg("z"), nb::arg("z_prev"), nb::arg("theta_prev"),
      "(T, nf): minimal_coordinates_and_velocities of each state of z (T, 13 nb), then angles.h unwrap_angles\n"
      "from the state before (row 0 from z_prev, theta_prev).");
  m.def(
      "instantaneous_minimal_velocities_dual",
      [](const Model& model, const InArray& z) {
        using D1 = Dual<double, 1>;
        const size_t nz = 13 * static_cast<size_t>(model.nb), nf = model.nf;
        if (nz == 0 || z.size() % nz != 0) throw std::invalid_argument("z: expected (T, 13 nb) values");
        const size_t n = z.size() / nz;
        std::vector<double> rate(n * nf);
        std::vector<D1> zd(nz), rd(nf);
        for (size_t t = 0; t < n; ++t) {
          for (size_t k = 0; k < nz; ++k) {
            const double e = z.data()[t * nz + k];
            const size_t slot = k % 13;  // the velocities as rates: zeros whose derivative is the value
            zd[k] = (slot >= 3 && slot < 6) || slot >= 10 ? D1::variable(0.0, 0) * e : D1(e);
          }
          minimal_coordinates_and_velocities(model, zd.data(), static_cast<D1*>(nullptr), rd.data());
          for (size_t f = 0; f < nf; ++f) rate[t * nf + f] = rd[f].d[0];
        }
        return numpy_owning<double>(std::move(rate), {n, nf});
      },
      nb::arg("model"), nb::arg("z"),
      "(T, nf): the rates of states z (T, 13 nb) with velocities at their own time, every quantity at dual\n"
      "numbers seeded with the velocities (minimal_coordinates_and_velocities<Dual>).");
}

}  // namespace dojo::bindings
