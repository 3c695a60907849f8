// PinnZoo's second-order products (kinematics_hvp, kinematics_force_hvp, kinematics_force_hTvp,
// inverse_dynamics_hvp, inverse_dynamics_hTvp): exact, by pushing forward-mode dual numbers
// (math/dual.h) through kinematics.h's forward kinematics, point Jacobian and RNEA, the same
// code the double path runs, at T = Dual<Dual<double, 1>, 1>.
//
// The kinematics read the raw configuration (a quaternion as q/|q|, in T arithmetic), so the
// dual parts are derivatives with respect to the raw q, PinnZoo's convention
// (docs/minimal.md): seeded along u (inner) and e_j (outer), pos.d.d = d2 pos/dq_j du, the
// column j of the directional derivative of a Jacobian along u (no finite differences).
// Scratch: TreeSecondOrder, sized once with TreeData.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kinematics.h"
#include "math/dual.h"
#include "math/spatial.h"
#include "tree.h"

namespace dojo {

using D2 = TreeDual2;

namespace {

// The first `size` entries of w.x: values x0 (size,), inner direction u (null: zero), outer
// direction e_j (j < 0: none)
void seed(TreeSecondOrder& w, int size, const double* x0, const double* u, int j) {
  for (int k = 0; k < size; ++k) {
    D2& e = w.x[k];
    e = D2(0.0);
    e.v.v = x0[k];
    if (u) e.v.d[0] = u[k];
    if (k == j) e.d[0].v = 1.0;
  }
}

// positions (and, with jac, the tangent Jacobian) of the points at the seeded configuration
void points(const TreeModel& m, TreeSecondOrder& w, bool jac) {
  forward_kinematics(m, w.s, w.x.data(), false);
  for (int k = 0; k < m.np; ++k) {
    const Vec3<D2> x = point_position(m, w.s, k);
    for (int r = 0; r < 3; ++r) w.pos[3 * k + r] = x[r];
  }
  if (jac) point_jacobian(m, w.s, w.jac.data());
}

}  // namespace

void tree_kinematics_hvp(const TreeModel& m, TreeData& d, const double* q, const double* dq, double* out) {
  TreeSecondOrder& w = d.second;
  const int nq = m.nq, rows = 3 * m.np;
  for (int j = 0; j < nq; ++j) {
    seed(w, nq, q, dq, j);
    points(m, w, false);
    for (int r = 0; r < rows; ++r) out[r * nq + j] = w.pos[r].d[0].d[0];
  }
}

void tree_kinematics_force_hvp(const TreeModel& m, TreeData& d, const double* q, const double* lambda,
                               const double* dq, double* out_q, double* out_lambda) {
  TreeSecondOrder& w = d.second;
  const int nq = m.nq, nv = m.nv, rows = 3 * m.np;
  for (int j = 0; j < nq; ++j) {
    seed(w, nq, q, dq, j);
    points(m, w, true);
    // d/dq_j of D_dq (J_v^T lambda) (the outer part of the inner derivative)
    for (int c = 0; c < nv; ++c) {
      double s = 0.0;
      for (int r = 0; r < rows; ++r) s += w.jac[r * nv + c].d[0].d[0] * lambda[r];
      out_q[c * nq + j] = s;
    }
    // D_dq J_v (the inner derivative; the same at every j): its transpose is d/dlambda
    if (j == 0)
      for (int c = 0; c < nv; ++c)
        for (int r = 0; r < rows; ++r) out_lambda[c * rows + r] = w.jac[r * nv + c].v.d[0];
  }
  if (nq == 0)
    for (int k = 0; k < nv * rows; ++k) out_lambda[k] = 0.0;
}

void tree_kinematics_force_hTvp(const TreeModel& m, TreeData& d, const double* q, const double* lambda,
                                const double* mult, double* out_q, double* out_lambda) {
  TreeSecondOrder& w = d.second;
  const int nq = m.nq, nv = m.nv, rows = 3 * m.np;
  // s(q) = lambda . J_v(q) mult: its Hessian (symmetric, nq (nq + 1) / 2 passes) and the
  // Jacobian of J_v(q) mult, whose transpose is d/dlambda of grad s
  for (int j = 0; j < nq; ++j)
    for (int k = j; k < nq; ++k) {
      seed(w, nq, q, nullptr, j);
      w.x[k].v.d[0] = 1.0;
      points(m, w, true);
      double h = 0.0;
      for (int r = 0; r < rows; ++r) {
        D2 jm(0.0);
        for (int c = 0; c < nv; ++c) jm += w.jac[r * nv + c] * mult[c];
        h += jm.d[0].d[0] * lambda[r];
        if (j == 0) out_lambda[k * rows + r] = jm.v.d[0];
      }
      out_q[j * nq + k] = out_q[k * nq + j] = h;
    }
}

namespace {
// tau of RNEA at the seeded [q; v; vdot] (w.x) into w.s.tau
void inverse_dynamics(const TreeModel& m, TreeSecondOrder& w) {
  const D2* x = w.x.data();
  rnea(m, w.s, x, x + m.nq, x + m.nq + m.nv);
}
}  // namespace

void tree_inverse_dynamics_hvp(const TreeModel& m, TreeData& d, const double* x, const double* vdot,
                               const double* lam, double* out_x, double* out_a) {
  TreeSecondOrder& w = d.second;
  const int nq = m.nq, nv = m.nv, nx = nq + nv, size = nx + nv;
  for (int j = 0; j < size; ++j) {
    seed(w, nx, x, lam, j);
    for (int k = nx; k < size; ++k) {
      w.x[k] = D2(0.0);
      w.x[k].v.v = vdot[k - nx];
      if (k == j) w.x[k].d[0].v = 1.0;
    }
    inverse_dynamics(m, w);
    for (int r = 0; r < nv; ++r) {
      if (j < nx)
        out_x[r * nx + j] = w.s.tau[r].d[0].d[0];
      else
        out_a[r * nv + j - nx] = w.s.tau[r].d[0].d[0];
    }
  }
}

void tree_inverse_dynamics_hTvp(const TreeModel& m, TreeData& d, const double* x, const double* vdot,
                                const double* lam, double* out_x, double* out_m) {
  TreeSecondOrder& w = d.second;
  const int nq = m.nq, nv = m.nv, nx = nq + nv, size = nx + nv;
  auto seed_vdot = [&](const double* u, int j) {  // the vdot entries: values, inner u (null: 0), outer e_j
    for (int k = nx; k < size; ++k) {
      w.x[k] = D2(0.0);
      w.x[k].v.v = vdot[k - nx];
      if (u) w.x[k].v.d[0] = u[k - nx];
      if (k == j) w.x[k].d[0].v = 1.0;
    }
  };
  // the Hessian of lam . tau over x (symmetric: nx (nx + 1) / 2 passes)
  for (int j = 0; j < nx; ++j)
    for (int k = j; k < nx; ++k) {
      seed(w, nx, x, nullptr, j);
      seed_vdot(nullptr, j);
      w.x[k].v.d[0] = 1.0;
      inverse_dynamics(m, w);
      double h = 0.0;
      for (int r = 0; r < nv; ++r) h += lam[r] * w.s.tau[r].d[0].d[0];
      out_x[j * nx + k] = out_x[k * nx + j] = h;
    }
  // d(M lam)/dx: the inner direction lam on vdot gives M lam (tau is affine in vdot)
  for (int j = 0; j < nx; ++j) {
    seed(w, nx, x, nullptr, j);
    seed_vdot(lam, j);
    inverse_dynamics(m, w);
    for (int r = 0; r < nv; ++r) out_m[r * nx + j] = w.s.tau[r].d[0].d[0];
  }
}

}  // namespace dojo
