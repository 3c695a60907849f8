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

#include "kinematics.h"
#include "tree.h"

namespace dojo {

void tree_aba(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* tau) {
  forward_kinematics(m, d, q);
  if (m.any_locked)
    for (int k = 0; k < m.nv; ++k) d.lock_tau[k] = 0.0;
  // pass 1 (RBDA eqs. 7.34-7.36): velocities, velocity-product accelerations
  // c_i = v_i x J_i qd_i, and IA_i = Y_i, pA_i = v_i x* Y_i v_i
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i], iv = m.idx_v[i];
    const int ni = m.locked[i] ? 0 : m.nv_i[i];  // a locked joint: v_l read as zero
    Motion<double> vj = zero_motion<double>();
    for (int c = 0; c < ni; ++c) vj += v[iv + c] * d.J[6 * i + c];
    // locals, then stored (kinematics.h forward_kinematics: a member read back right after
    // its stores stalls on store forwarding)
    const Motion<double> ov = lam < 0 ? vj : d.ov[lam] + vj;
    d.ov[i] = ov;
    Motion<double> c = cross(ov, vj);
    if (ni && m.variable[i]) c += joint_bias(m, d, i, v);  // + X_i Sdot_i qd_i (tree.h)
    d.c[i] = c;
    tree::inertia_matrix(d.Y[i], &d.IA[36 * i]);
    d.pA[i] = cross(ov, d.Y[i] * ov);
  }
  // pass 2 (eqs. 7.37-7.42): U = IA J, D = J^T U, u = tau - J^T pA; the parent gets
  // Ia = IA - U D^-1 U^T and pa = pA + Ia c + U D^-1 u.
  for (int i = m.n - 1; i >= 0; --i) {
    const int ni = m.locked[i] ? 0 : m.nv_i[i], iv = m.idx_v[i];  // locked: no free columns
    const Motion<double>* J = &d.J[6 * i];
    double* IA = &d.IA[36 * i];
    Force<double>* U = &d.U[6 * i];
    double* Dinv = &d.Dinv[36 * i];
    double* u = &d.u[6 * i];
    for (int c = 0; c < ni; ++c) U[c] = tree::mat6_mul(IA, J[c]);
    for (int r = 0; r < ni; ++r) {
      for (int c = 0; c < ni; ++c) Dinv[r * ni + c] = dot(J[r], U[c]);
      Dinv[r * ni + r] += m.armature[iv + r];  // rotor inertia on the joint's own entries (RBDA 7.3, "I_a")
      u[r] = tau[iv + r] - dot(J[r], d.pA[i]);
    }
    static const char* kSingular = "articulated inertia of a joint is singular (no mass or inertia beyond a free direction)";
    if (ni == 1) {  // a revolute or prismatic joint: D is a number
      if (!(Dinv[0] > 0.0)) throw std::domain_error(kSingular);
      Dinv[0] = 1.0 / Dinv[0];
    } else if (ni > 1) {
      double L[36], Li[36];
      tree::spd_inverse(Dinv, ni, L, Li, Dinv, kSingular);
    }
    const int lam = m.parent[i];
    if (lam < 0) continue;
    // UD = U D^-1 (6 x ni)
    Force<double> UD[6];
    for (int c = 0; c < ni; ++c) {
      UD[c] = zero_force<double>();
      for (int r = 0; r < ni; ++r) UD[c] += Dinv[r * ni + c] * U[r];
    }
    double Ia[36];
    for (int r = 0; r < 6; ++r)
      for (int k = 0; k < 6; ++k) {
        double t = IA[6 * r + k];
        for (int c = 0; c < ni; ++c) {
          const double ur = r < 3 ? UD[c].f[r] : UD[c].n[r - 3];
          const double uk = k < 3 ? U[c].f[k] : U[c].n[k - 3];
          t -= ur * uk;
        }
        Ia[6 * r + k] = t;
      }
    Force<double> pa = d.pA[i] + tree::mat6_mul(Ia, d.c[i]);
    for (int c = 0; c < ni; ++c) pa += u[c] * UD[c];
    for (int k = 0; k < 36; ++k) d.IA[36 * lam + k] += Ia[k];
    d.pA[lam] += pa;
  }
  // pass 3 (eqs. 7.43-7.45): a' = a_lambda + c, qdd = D^-1 (u - U^T a'), a = a' + J qdd,
  // from a_0 = -g.
  const Motion<double> a0{Vec3<double>{{-m.gravity[0], -m.gravity[1], -m.gravity[2]}}, zero3<double>()};
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i], iv = m.idx_v[i];
    Motion<double> oa = (lam < 0 ? a0 : d.oa[lam]) + d.c[i];
    if (m.locked[i]) {
      // welded: vdot_l = 0, a_i = a'_i; the lock force lambda = J^T (IA a + pA) - tau
      d.oa[i] = oa;
      const Force<double> f = tree::mat6_mul(&d.IA[36 * i], oa) + d.pA[i];
      for (int r = 0; r < m.nv_i[i]; ++r) {
        d.vdot[iv + r] = 0.0;
        d.lock_tau[iv + r] = dot(d.J[6 * i + r], f) - tau[iv + r];
      }
      continue;
    }
    const int ni = m.nv_i[i];
    double rhs[6];
    for (int r = 0; r < ni; ++r) rhs[r] = d.u[6 * i + r] - dot(oa, d.U[6 * i + r]);
    for (int r = 0; r < ni; ++r) {
      double t = 0.0;
      for (int c = 0; c < ni; ++c) t += d.Dinv[36 * i + r * ni + c] * rhs[c];
      d.vdot[iv + r] = t;
    }
    for (int c = 0; c < ni; ++c) oa += d.vdot[iv + c] * d.J[6 * i + c];
    d.oa[i] = oa;
  }
}

}  // namespace dojo
