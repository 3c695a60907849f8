// Articulated body algorithm (Featherstone, RBDA algorithm 7.3), in the world frame:
// every articulated inertia and bias force is expressed at the world origin, so the
// passes add children to parents without transforms.
//
// A locked joint (TreeModel.locked, Drake's Lock) is welded at its current q: it has no
// free columns, so its child's articulated inertia and bias force pass to the parent
// whole (Ia = IA, pa = pA + IA c with c = 0, since v_l = 0 adds no velocity product), and
// vdot_l = 0. That is ABA on the tree with those joints fixed, i.e. the reduced solve
// M_ff vdot_f = tau_f - c_f(q, v) with v_l = 0 (RBDA sec. 7.3 on the reduced tree). The
// force the weld carries is f_i = IA_i a_i + pA_i (the articulated-body equation, RBDA
// sec. 7.2), so the lock force on the coordinates is
// lambda_i = J_i^T f_i - tau_i: M vdot + C = tau + lambda on the locked rows.
#include <cmath>
#include <stdexcept>

#include "tree.h"

namespace dojo {

void tree_aba(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* tau) {
  tree_forward_kinematics(m, d, q);
  if (m.any_locked)
    for (int k = 0; k < m.nv; ++k) d.lock_tau[k] = 0.0;
  // pass 1 (RBDA eqs. 7.34-7.36): velocities, velocity-product accelerations
  // c_i = v_i x J_i qd_i, and IA_i = Y_i, pA_i = v_i x* Y_i v_i
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i], iv = m.idx_v[i];
    const int ni = m.locked[i] ? 0 : m.nv_i[i];  // a locked joint: v_l read as zero
    const double* J = &d.J[36 * i];
    double vj[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int col = 0; col < ni; ++col)
      for (int k = 0; k < 6; ++k) vj[k] += J[6 * col + k] * v[iv + col];
    double* ov = &d.ov[6 * i];
    for (int k = 0; k < 6; ++k) ov[k] = (lam < 0 ? 0.0 : d.ov[6 * lam + k]) + vj[k];
    tree::motion_cross(ov, vj, &d.c[6 * i]);
    if (ni) {
      double bias[6];
      tree_joint_bias(m, d, i, v, bias);  // + X_i Sdot_i qd_i for a variable S_i (tree.h)
      for (int k = 0; k < 6; ++k) d.c[6 * i + k] += bias[k];
    }
    for (int k = 0; k < 36; ++k) d.IA[36 * i + k] = d.Y[36 * i + k];
    double h[6];
    tree::mat6_vec(&d.Y[36 * i], ov, h);
    tree::force_cross(ov, h, &d.pA[6 * i]);
  }
  // pass 2 (eqs. 7.37-7.42): U = IA J, D = J^T U, u = tau - J^T pA; the parent gets
  // Ia = IA - U D^-1 U^T and pa = pA + Ia c + U D^-1 u.
  for (int i = m.n - 1; i >= 0; --i) {
    const int ni = m.locked[i] ? 0 : m.nv_i[i], iv = m.idx_v[i];  // locked: no free columns
    const double* J = &d.J[36 * i];
    double* IA = &d.IA[36 * i];
    double* U = &d.U[36 * i];
    double* Dinv = &d.Dinv[36 * i];
    double* u = &d.u[6 * i];
    for (int col = 0; col < ni; ++col) tree::mat6_vec(IA, J + 6 * col, U + 6 * col);
    for (int r = 0; r < ni; ++r) {
      for (int col = 0; col < ni; ++col) Dinv[r * ni + col] = tree::dot6(J + 6 * r, U + 6 * col);
      Dinv[r * ni + r] += m.armature[iv + r];  // rotor inertia on the joint's own entries (RBDA 7.3, "I_a")
      u[r] = tau[iv + r] - tree::dot6(J + 6 * r, &d.pA[6 * i]);
    }
    double L[36], Li[36];
    tree::spd_inverse(Dinv, ni, L, Li, Dinv,
                      "articulated inertia of a joint is singular (no mass or inertia beyond a free direction)");
    const int lam = m.parent[i];
    if (lam < 0) continue;
    // UD = U D^-1 (6 x ni)
    double UD[36];
    for (int k = 0; k < 6; ++k)
      for (int col = 0; col < ni; ++col) {
        double t = 0.0;
        for (int r = 0; r < ni; ++r) t += U[6 * r + k] * Dinv[r * ni + col];
        UD[6 * col + k] = t;
      }
    double Ia[36];
    for (int r = 0; r < 6; ++r)
      for (int k = 0; k < 6; ++k) {
        double t = IA[6 * r + k];
        for (int col = 0; col < ni; ++col) t -= UD[6 * col + r] * U[6 * col + k];
        Ia[6 * r + k] = t;
      }
    double pa[6], Iac[6];
    tree::mat6_vec(Ia, &d.c[6 * i], Iac);
    for (int k = 0; k < 6; ++k) {
      double t = d.pA[6 * i + k] + Iac[k];
      for (int col = 0; col < ni; ++col) t += UD[6 * col + k] * u[col];
      pa[k] = t;
    }
    for (int k = 0; k < 36; ++k) d.IA[36 * lam + k] += Ia[k];
    for (int k = 0; k < 6; ++k) d.pA[6 * lam + k] += pa[k];
  }
  // pass 3 (eqs. 7.43-7.45): a' = a_lambda + c, qdd = D^-1 (u - U^T a'), a = a' + J qdd,
  // from a_0 = -g.
  const double a0[6] = {-m.gravity[0], -m.gravity[1], -m.gravity[2], 0.0, 0.0, 0.0};
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i], iv = m.idx_v[i];
    double* oa = &d.oa[6 * i];
    for (int k = 0; k < 6; ++k) oa[k] = (lam < 0 ? a0[k] : d.oa[6 * lam + k]) + d.c[6 * i + k];
    if (m.locked[i]) {
      // welded: vdot_l = 0, a_i = a'_i; the lock force lambda = J^T (IA a + pA) - tau
      double f[6];
      tree::mat6_vec(&d.IA[36 * i], oa, f);
      for (int k = 0; k < 6; ++k) f[k] += d.pA[6 * i + k];
      for (int r = 0; r < m.nv_i[i]; ++r) {
        d.vdot[iv + r] = 0.0;
        d.lock_tau[iv + r] = tree::dot6(&d.J[36 * i + 6 * r], f) - tau[iv + r];
      }
      continue;
    }
    const int ni = m.nv_i[i];
    double rhs[6];
    for (int r = 0; r < ni; ++r) rhs[r] = d.u[6 * i + r] - tree::dot6(&d.U[36 * i + 6 * r], oa);
    for (int r = 0; r < ni; ++r) {
      double t = 0.0;
      for (int col = 0; col < ni; ++col) t += d.Dinv[36 * i + r * ni + col] * rhs[col];
      d.vdot[iv + r] = t;
    }
    for (int col = 0; col < ni; ++col)
      for (int k = 0; k < 6; ++k) oa[k] += d.J[36 * i + 6 * col + k] * d.vdot[iv + col];
  }
}

}  // namespace dojo
