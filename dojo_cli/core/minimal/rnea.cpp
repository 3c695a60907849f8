// Recursive Newton-Euler inverse dynamics (Featherstone, "Rigid Body Dynamics
// Algorithms" (RBDA), algorithm 5.1), in the world frame (tree.h).
#include "tree.h"

namespace dojo {

// Forward pass (RBDA eqs. 5.7-5.9 in world coordinates):
//   v_i = v_lambda + J_i qd_i
//   a_i = a_lambda + J_i qdd_i + v_i x J_i qd_i + X_i Sdot_i qd_i
//   (dJ_i/dt = v_i x J_i + X_i Sdot_i, the last for a variable S_i(q): tree.h)
//   f_i = Y_i a_i + v_i x* Y_i v_i
// with a_0 = -g (gravity as a fictitious base acceleration, RBDA sec. 5.3); backward
// pass: tau_i = J_i^T f_i, f_lambda += f_i (eqs. 5.10-5.11).
void tree_rnea(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a) {
  tree_forward_kinematics(m, d, q);
  const double a0[6] = {-m.gravity[0], -m.gravity[1], -m.gravity[2], 0.0, 0.0, 0.0};
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i], iv = m.idx_v[i];
    double* ov = &d.ov[6 * i];
    double* oa = &d.oa[6 * i];
    const double* J = &d.J[36 * i];
    double vj[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int col = 0; col < m.nv_i[i]; ++col)
      for (int k = 0; k < 6; ++k) vj[k] += J[6 * col + k] * v[iv + col];
    for (int k = 0; k < 6; ++k) {
      ov[k] = (lam < 0 ? 0.0 : d.ov[6 * lam + k]) + vj[k];
      oa[k] = lam < 0 ? a0[k] : d.oa[6 * lam + k];
    }
    if (a)
      for (int col = 0; col < m.nv_i[i]; ++col)
        for (int k = 0; k < 6; ++k) oa[k] += J[6 * col + k] * a[iv + col];
    double cv[6], bias[6];
    tree::motion_cross(ov, vj, cv);
    tree_joint_bias(m, d, i, v, bias);  // X_i Sdot_i qd_i (a variable S_i; zero otherwise)
    for (int k = 0; k < 6; ++k) oa[k] += cv[k] + bias[k];
    double h[6], ya[6], vh[6];
    const double* Y = &d.Y[36 * i];
    tree::mat6_vec(Y, ov, h);
    tree::mat6_vec(Y, oa, ya);
    tree::force_cross(ov, h, vh);
    for (int k = 0; k < 6; ++k) d.of[6 * i + k] = ya[k] + vh[k];
  }
  for (int i = m.n - 1; i >= 0; --i) {
    const double* f = &d.of[6 * i];
    for (int col = 0; col < m.nv_i[i]; ++col) {
      const int k = m.idx_v[i] + col;
      d.tau[k] = tree::dot6(&d.J[36 * i + 6 * col], f) + (a ? m.armature[k] * a[k] : 0.0);  // rotor inertia
    }
    const int lam = m.parent[i];
    if (lam >= 0)
      for (int k = 0; k < 6; ++k) d.of[6 * lam + k] += f[k];
  }
}

}  // namespace dojo
