// Bindings of the minimal-coordinate tree (minimal/tree.h): one crossing per PinnZoo function.
#include "common.h"

#include "minimal/tree.h"

using namespace dojo;

namespace dojo::bindings {

// ---- the minimal-coordinate tree (tree.h): one crossing per PinnZoo function
namespace {

// A new numpy array of the given shape, uninitialised, with a pointer to its numbers (C order),
// for a result the core copies in once. numpy.empty's own array, its data reached through the
// buffer protocol: numpy_owning (a std::vector, a capsule, nanobind's ndarray object and
// numpy.asarray of it) costs ~0.17 us more a call, 10 % of M_func on Go1 (benchmarks/README.md,
// minimal_speed).
struct NewArray {
  nb::object array;
  double* data;
};
NewArray new_array(size_t rows, size_t cols = 0) {
  // numpy.empty, looked up once and kept for the life of the process (a static nb::object
  // would be released after the interpreter is gone)
  static PyObject* empty = nb::object(nb::module_::import_("numpy").attr("empty")).release().ptr();
  nb::object shape = cols ? nb::object(nb::make_tuple(rows, cols)) : nb::object(nb::int_(rows));
  nb::object array = nb::steal(PyObject_CallOneArg(empty, shape.ptr()));
  if (!array.is_valid()) throw nb::python_error();
  Py_buffer view;
  if (PyObject_GetBuffer(array.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
  double* data = static_cast<double*>(view.buf);
  PyBuffer_Release(&view);  // the array keeps its memory; the view only lent the pointer
  return NewArray{std::move(array), data};
}

// A new numpy array holding n numbers copied from `values`, of shape (rows,) or (rows, cols)
nb::object new_array_from(const double* values, size_t rows, size_t cols = 0) {
  NewArray out = new_array(rows, cols);
  std::copy(values, values + rows * (cols ? cols : 1), out.data);
  return std::move(out.array);
}

// [d/dq (raw, chained through d tangent / d q), d/dv] (rows, nx) into out
void raw_columns(const TreeModel& m, const TreeData& d, const double* dq_tangent, const double* dv, int rows,
                 double* out) {
  const int nx = m.nq + m.nv;
  std::fill(out, out + static_cast<size_t>(rows) * nx, 0.0);
  tree_tangent_to_raw(m, d, dq_tangent, rows, out, nx);
  if (dv)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < m.nv; ++c) out[static_cast<size_t>(r) * nx + m.nq + c] = dv[r * m.nv + c];
}
std::vector<double> raw_columns(const TreeModel& m, const TreeData& d, const double* dq_tangent,
                                const double* dv, int rows) {
  std::vector<double> out(static_cast<size_t>(rows) * (m.nq + m.nv));
  raw_columns(m, d, dq_tangent, dv, rows, out.data());
  return out;
}

// [d/dq (tangent), d/dv] (rows, 2 nv) into out
void tangent_columns(const TreeModel& m, const double* dq, const double* dv, int rows, double* out) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < m.nv; ++c) {
      out[static_cast<size_t>(r) * 2 * m.nv + c] = dq[r * m.nv + c];
      out[static_cast<size_t>(r) * 2 * m.nv + m.nv + c] = dv ? dv[r * m.nv + c] : 0.0;
    }
}
std::vector<double> tangent_columns(const TreeModel& m, const double* dq, const double* dv, int rows) {
  std::vector<double> out(static_cast<size_t>(rows) * 2 * m.nv);
  tangent_columns(m, dq, dv, rows, out.data());
  return out;
}

// The derivative's columns d/dx (rows, nx) as a new array: raw x (PinnZoo) or tangent [dq; dv]
nb::object x_columns(const TreeModel& m, const TreeData& d, const double* dq_tangent, const double* dv, int rows,
                     bool raw) {
  NewArray out = new_array(sz(rows), sz(raw ? m.nq + m.nv : 2 * m.nv));
  if (raw) raw_columns(m, d, dq_tangent, dv, rows, out.data);
  else tangent_columns(m, dq_tangent, dv, rows, out.data);
  return std::move(out.array);
}

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
      .def_rw("armature", &TreeInput::armature)
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
    return new_array_from(d.M.data(), sz(t.nv), sz(t.nv));
  }, "M(q) by CRBA (x = [q; v]).");
  m.def("tree_bias", [](const TreeModel& t, TreeData& d, const InArray& x) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_rnea(t, d, xp, xp + t.nq, nullptr);
    return new_array_from(d.tau.data(), sz(t.nv));
  }, "C(x): Coriolis, centrifugal and gravity (RNEA with vdot = 0).");
  m.def("tree_passive_forces", [](const TreeModel& t, const InArray& x) {
    std::vector<double> tau(sz(t.nv));
    tree_passive_forces(t, tree_take(x, sz(t.nq + t.nv), "x"), tau.data());
    return numpy_owning(std::move(tau), {sz(t.nv)});
  }, "Generalized forces (nv,) of the joints' springs and dampers at x = [q; v] (not in C).");
  m.def("tree_inverse_dynamics", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& a) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_rnea(t, d, xp, xp + t.nq, tree_take(a, sz(t.nv), "vdot"));
    return new_array_from(d.tau.data(), sz(t.nv));
  }, "tau = M vdot + C by RNEA.");
  m.def("tree_forward_dynamics", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& tau) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    tree_aba(t, d, xp, xp + t.nq, tree_take(tau, sz(t.nv), "tau"));
    return new_array_from(d.vdot.data(), sz(t.nv));
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
    nb::object M = new_array_from(d.M.data(), sz(t.nv), sz(t.nv));
    tree_rnea_derivatives(t, d, xp, xp + t.nq, ap);
    return std::make_pair(x_columns(t, d, d.dtau_dq.data(), d.dtau_dv.data(), t.nv, raw), std::move(M));
  }, "(dtau/dx, dtau/dvdot = M): x raw (PinnZoo) or tangent [dq (nv); dv].");
  m.def("tree_forward_dynamics_deriv", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& tau, bool raw) {
    const double* xp = tree_take(x, sz(t.nq + t.nv), "x");
    const double* tp = tree_take(tau, sz(t.nv), "tau");
    std::vector<double> dq(sz(t.nv * t.nv)), dv(sz(t.nv * t.nv));
    tree_aba_derivatives(t, d, xp, xp + t.nq, tp, dq.data(), dv.data());
    return std::make_pair(x_columns(t, d, dq.data(), dv.data(), t.nv, raw), new_array_from(d.Minv.data(), sz(t.nv), sz(t.nv)));
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
    std::vector<double> R(sz(9 * t.n)), p(sz(3 * t.n)), ov(sz(6 * t.n));
    for (int i = 0; i < t.n; ++i)
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) R[sz(9 * i + 3 * r + c)] = d.R[sz(i)][r][c];
        p[sz(3 * i + r)] = d.p[sz(i)][r];
        ov[sz(6 * i + r)] = d.ov[sz(i)].v[r];
        ov[sz(6 * i + 3 + r)] = d.ov[sz(i)].w[r];
      }
    return nb::make_tuple(numpy_owning(std::move(R), {sz(t.n), 3, 3}), numpy_owning(std::move(p), {sz(t.n), 3}),
                          numpy_owning(std::move(ov), {sz(t.n), 6}));
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
        for (int r = 0; r < 9; ++r) out[sz(9 * k + r)] = d.R[sz(t.point_joint[sz(k)])][r / 3][r % 3];
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
  // PinnZoo's second-order kinematics products (tree_second_order.cpp): raw x; the v rows and
  // columns are zero (the points' positions and J_v do not depend on v)
  m.def("tree_kinematics_hvp", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& dx) {
    const int nq = t.nq, nx = t.nq + t.nv, rows = 3 * t.np;
    const double* xp = tree_take(x, sz(nx), "x");
    const double* dp = tree_take(dx, sz(nx), "dx");
    std::vector<double> hq(sz(rows * nq)), out(sz(rows * nx), 0.0);
    tree_kinematics_hvp(t, d, xp, dp, hq.data());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < nq; ++c) out[sz(r * nx + c)] = hq[sz(r * nq + c)];
    return numpy_owning(std::move(out), {sz(rows), sz(nx)});
  }, "(3np, nx) d(kinematics_jacobian(x) dx)/dx, exact (dual numbers).");
  m.def("tree_kinematics_force_hvp", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& lambda,
                                        const InArray& mult) {
    const int nq = t.nq, nv = t.nv, nx = t.nq + t.nv, rows = 3 * t.np;
    const double* xp = tree_take(x, sz(nx), "x");
    const double* lp = tree_take(lambda, sz(rows), "lambda");
    const double* mp = tree_take(mult, sz(nx), "mult");
    std::vector<double> hq(sz(nv * nq)), hl(sz(nv * rows), 0.0), out(sz(nv * nx), 0.0);
    tree_kinematics_force_hvp(t, d, xp, lp, mp, hq.data(), hl.data());
    for (int r = 0; r < nv; ++r)
      for (int c = 0; c < nq; ++c) out[sz(r * nx + c)] = hq[sz(r * nq + c)];
    return std::make_pair(numpy_owning(std::move(out), {sz(nv), sz(nx)}), numpy_owning(std::move(hl), {sz(nv), sz(rows)}));
  }, "(d(F mult)/dx (nv, nx), d(F mult)/dlambda (nv, 3np)), F = d(J_v^T lambda)/dx; exact (dual numbers).");
  m.def("tree_kinematics_force_hTvp", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& lambda,
                                         const InArray& mult) {
    const int nq = t.nq, nx = t.nq + t.nv, rows = 3 * t.np;
    const double* xp = tree_take(x, sz(nx), "x");
    const double* lp = tree_take(lambda, sz(rows), "lambda");
    const double* mp = tree_take(mult, sz(t.nv), "mult");
    std::vector<double> hq(sz(nq * nq)), hl(sz(nq * rows)), out(sz(nx * nx), 0.0), outl(sz(nx * rows), 0.0);
    tree_kinematics_force_hTvp(t, d, xp, lp, mp, hq.data(), hl.data());
    for (int r = 0; r < nq; ++r) {
      for (int c = 0; c < nq; ++c) out[sz(r * nx + c)] = hq[sz(r * nq + c)];
      for (int c = 0; c < rows; ++c) outl[sz(r * rows + c)] = hl[sz(r * rows + c)];
    }
    return std::make_pair(numpy_owning(std::move(out), {sz(nx), sz(nx)}), numpy_owning(std::move(outl), {sz(nx), sz(rows)}));
  }, "(d(F^T mult)/dx (nx, nx), d(F^T mult)/dlambda (nx, 3np)), F = d(J_v^T lambda)/dx; exact (dual numbers).");
  m.def("tree_inverse_dynamics_hvp", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& vdot,
                                        const InArray& lam) {
    const int nv = t.nv, nx = t.nq + t.nv;
    std::vector<double> ox(sz(nv * nx)), oa(sz(nv * nv));
    tree_inverse_dynamics_hvp(t, d, tree_take(x, sz(nx), "x"), tree_take(vdot, sz(nv), "vdot"),
                              tree_take(lam, sz(nx), "lam"), ox.data(), oa.data());
    return std::make_pair(numpy_owning(std::move(ox), {sz(nv), sz(nx)}), numpy_owning(std::move(oa), {sz(nv), sz(nv)}));
  }, "(d((dtau/dx) lam)/dx (nv, nx), d((dtau/dx) lam)/dvdot (nv, nv)); exact (dual numbers through RNEA).");
  m.def("tree_inverse_dynamics_hTvp", [](const TreeModel& t, TreeData& d, const InArray& x, const InArray& vdot,
                                         const InArray& lam) {
    const int nv = t.nv, nx = t.nq + t.nv;
    std::vector<double> ox(sz(nx * nx)), om(sz(nv * nx));
    tree_inverse_dynamics_hTvp(t, d, tree_take(x, sz(nx), "x"), tree_take(vdot, sz(nv), "vdot"),
                               tree_take(lam, sz(nv), "lam"), ox.data(), om.data());
    return std::make_pair(numpy_owning(std::move(ox), {sz(nx), sz(nx)}), numpy_owning(std::move(om), {sz(nv), sz(nx)}));
  }, "(d((dtau/dx)^T lam)/dx (nx, nx), d((dtau/dvdot)^T lam)/dx (nv, nx)); exact (dual numbers through RNEA).");
}

}  // namespace dojo::bindings
