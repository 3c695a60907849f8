// Analytical derivatives of RNEA and ABA (Carpentier and Mansard 2018, "Analytical
// Derivatives of Rigid Body Dynamics Algorithms", RSS), in the world frame (tree.h).
//
// Derivatives are with respect to the joints' tangent coordinates: delta_j moves the
// successor frame of joint j by exp(S_j delta_j) (a right perturbation, the same
// tangent as the velocity v_j), which moves the whole subtree of j rigidly by the world
// twist xi = J_j delta_j: every world-frame quantity attached to the subtree changes by
// xi x (motions) or xi x* (forces), and the quantities coming from above (v_lambda(j),
// a_lambda(j), the gravity) are seen by the subtree as changed by -xi x.
// Working that through RNEA (ours, in the paper's world-frame form, sec. III-B):
//   for j at or above i (j <= i):
//     dtau_i/dq_j = J_i^T [Bc_i dVdq_j + Yc_i (dAdq_j + v_lambda(j) x dVdq_j)]
//     dtau_i/dv_j = J_i^T [Bc_i J_j + Yc_i dAdv_j]
//   for i strictly above j (i < j): J_i^T times the same bracket taken at i = j, plus
//     xi x* F_j for q (the subtree force F_j turns with the subtree);
// with dVdq_j = v_lambda(j) x J_j, dAdq_j = a_lambda(j) x J_j,
// dAdv_j = (v_lambda(j) + v_j) x J_j, Yc_i the composite inertia, F_i the subtree force,
// and Bc_i the subtree sum of B_k u = Y_k (u x v_k) + u x* (Y_k v_k) + v_k x* (Y_k u)
// (the paper's dYcrb, eq. 14: the inertia's variation with the velocity plus the
// momentum cross term).
// A variable motion subspace S_i(q) (tree.h: a swing rotation, translations measured in
// the predecessor frame) adds its own variation to the non-rigid parts: with
// kappa = X_i (dS_i/ds) v_i, dVdq += kappa (the subtree's velocity changes by it too);
// psi += X_i (dS_i/ds) a_i + X_i d(Sdot_i v_i)/ds + v_i x kappa; dAdv += X_i d(Sdot_i v_i)/dv_s; and
// the joint's own row gains (X_i dS_i/ds)^T F_i (tree_joint_variation).
// ABA's derivatives follow from the identity the paper uses (sec. IV):
//   d(vdot)/dq = -M^-1 dtau/dq |_(a = vdot), d(vdot)/dv = -M^-1 dtau/dv, d(vdot)/dtau = M^-1.
// Locked joints (tree.h TreeInput.locked): the reduced solve M_ff vdot_f = tau_f - c_f(q, v)
// with v_l = vdot_l = 0 differentiates the same way on the free rows, rnea_f(q, v, vdot) =
// tau_f: d(vdot_f)/dq = -M_ff^-1 dtau_f/dq and d(vdot_f)/dv_f = -M_ff^-1 dtau_f/dv_f at
// (v_l, vdot_l) = 0, d(vdot_f)/dtau_f = M_ff^-1; the locked rows are zero, and so are the
// v_l columns (v_l is read as zero). The q_l columns stay: the free motion depends on where
// a joint is held.
#include "tree.h"

namespace dojo {

void tree_rnea_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a) {
  tree_rnea(m, d, q, v, a);  // placements, J, Y, ov, oa (with gravity), of (per body), tau
  const int nv = m.nv;
  JointVariation var;
  // per body: per-column quantities, B_i, Yc_i = Y_i, F_i = f_i (the rnea backward pass
  // already summed of into subtree forces: d.of holds F_i)
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i];
    const double zero[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    const double a0[6] = {-m.gravity[0], -m.gravity[1], -m.gravity[2], 0.0, 0.0, 0.0};
    const double* vl = lam < 0 ? zero : &d.ov[6 * lam];
    const double* al = lam < 0 ? a0 : &d.oa[6 * lam];
    const double* vi = &d.ov[6 * i];
    if (m.variable[i]) tree_joint_variation(m, d, i, v, a, var);
    for (int s = 0; s < m.nv_i[i]; ++s) {
      const double* xi = &d.J[36 * i + 6 * s];
      double* dvdq = &d.dVdq[36 * i + 6 * s];
      double* dadq = &d.dAdq[36 * i + 6 * s];
      double* dadv = &d.dAdv[36 * i + 6 * s];
      double* ps = &d.psi[36 * i + 6 * s];
      double t[6];
      tree::motion_cross(vl, xi, dvdq);
      tree::motion_cross(al, xi, dadq);
      tree::motion_cross(vi, xi, t);
      for (int k = 0; k < 6; ++k) dadv[k] = dvdq[k] + t[k];
      if (m.variable[i])
        for (int k = 0; k < 6; ++k) {
          dvdq[k] += var.dSv[s][k];
          dadv[k] += var.dbv[s][k];
        }
      tree::motion_cross(vl, dvdq, t);
      for (int k = 0; k < 6; ++k) ps[k] = dadq[k] + t[k];
      if (m.variable[i]) {
        // the joint's own term v_i x J_i qd_i sees J_i qd_i change by kappa too: + v_i x kappa
        tree::motion_cross(vi, var.dSv[s], t);
        for (int k = 0; k < 6; ++k) ps[k] += var.dSa[s][k] + var.dbq[s][k] + t[k];
      }
    }
    // B_i column k: Y (e_k x v) + e_k x* h + v x* (Y e_k), h = Y v
    const double* Y = &d.Y[36 * i];
    double h[6];
    tree::mat6_vec(Y, vi, h);
    double* B = &d.Bc[36 * i];
    for (int k = 0; k < 6; ++k) {
      double e[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
      e[k] = 1.0;
      double ev[6], yev[6], eh[6], ye[6], vye[6];
      tree::motion_cross(e, vi, ev);
      tree::mat6_vec(Y, ev, yev);
      tree::force_cross(e, h, eh);
      for (int r = 0; r < 6; ++r) ye[r] = Y[6 * r + k];
      tree::force_cross(vi, ye, vye);
      for (int r = 0; r < 6; ++r) B[6 * r + k] = yev[r] + eh[r] + vye[r];
    }
    for (int k = 0; k < 36; ++k) d.Yc[36 * i + k] = Y[k];
  }
  for (int i = m.n - 1; i >= 0; --i) {
    const int lam = m.parent[i];
    if (lam < 0) continue;
    for (int k = 0; k < 36; ++k) {
      d.Yc[36 * lam + k] += d.Yc[36 * i + k];
      d.Bc[36 * lam + k] += d.Bc[36 * i + k];
    }
  }
  for (int k = 0; k < nv * nv; ++k) d.dtau_dq[k] = d.dtau_dv[k] = 0.0;
  for (int i = 0; i < m.n; ++i) {
    const int ni = m.nv_i[i];
    const double* J = &d.J[36 * i];
    const double* Bc = &d.Bc[36 * i];
    const double* Yc = &d.Yc[36 * i];
    double* P = &d.P[36 * i];
    double* Q = &d.Q[36 * i];
    // P = Bc^T J, Q = Yc J (Yc symmetric)
    for (int s = 0; s < ni; ++s) {
      tree::mat6t_vec(Bc, J + 6 * s, P + 6 * s);
      tree::mat6_vec(Yc, J + 6 * s, Q + 6 * s);
    }
    // Delta_i = Bc dVdq + Yc psi + xi x* F_i; DeltaV_i = Bc J + Yc dAdv
    for (int s = 0; s < ni; ++s) {
      double t1[6], t2[6], t3[6];
      tree::mat6_vec(Bc, &d.dVdq[36 * i + 6 * s], t1);
      tree::mat6_vec(Yc, &d.psi[36 * i + 6 * s], t2);
      tree::force_cross(J + 6 * s, &d.of[6 * i], t3);
      for (int k = 0; k < 6; ++k) d.Delta[36 * i + 6 * s + k] = t1[k] + t2[k] + t3[k];
      tree::mat6_vec(Bc, J + 6 * s, t1);
      tree::mat6_vec(Yc, &d.dAdv[36 * i + 6 * s], t2);
      for (int k = 0; k < 6; ++k) d.DeltaV[36 * i + 6 * s + k] = t1[k] + t2[k];
    }
    // j at or above i: rows of i, columns of j
    for (int j = i; j >= 0; j = m.parent[j])
      for (int r = 0; r < ni; ++r)
        for (int s = 0; s < m.nv_i[j]; ++s) {
          const int row = m.idx_v[i] + r, col = m.idx_v[j] + s;
          d.dtau_dq[row * nv + col] = tree::dot6(P + 6 * r, &d.dVdq[36 * j + 6 * s]) +
                                      tree::dot6(Q + 6 * r, &d.psi[36 * j + 6 * s]);
          d.dtau_dv[row * nv + col] = tree::dot6(P + 6 * r, &d.J[36 * j + 6 * s]) +
                                      tree::dot6(Q + 6 * r, &d.dAdv[36 * j + 6 * s]);
        }
    // a variable S_i: tau_i = J_i^T F_i also changes with J_i's own shape, (X_i dS_i/ds)^T F_i
    if (m.variable[i]) {
      tree_joint_variation(m, d, i, v, a, var);
      for (int r = 0; r < ni; ++r)
        for (int s = 0; s < ni; ++s)
          d.dtau_dq[(m.idx_v[i] + r) * nv + m.idx_v[i] + s] += tree::dot6(var.dS[s][r], &d.of[6 * i]);
    }
    // k strictly above i: rows of k, columns of i
    for (int k = m.parent[i]; k >= 0; k = m.parent[k])
      for (int r = 0; r < m.nv_i[k]; ++r)
        for (int s = 0; s < ni; ++s) {
          const int row = m.idx_v[k] + r, col = m.idx_v[i] + s;
          d.dtau_dq[row * nv + col] = tree::dot6(&d.J[36 * k + 6 * r], &d.Delta[36 * i + 6 * s]);
          d.dtau_dv[row * nv + col] = tree::dot6(&d.J[36 * k + 6 * r], &d.DeltaV[36 * i + 6 * s]);
        }
  }
}

void tree_aba_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* tau,
                          double* dvdot_dq, double* dvdot_dv) {
  tree_aba(m, d, q, v, tau);
  const int nv = m.nv;
  // keep vdot: the derivative pass reuses the buffers of the forward pass
  double* vdot = d.work2.data();
  for (int k = 0; k < nv; ++k) vdot[k] = d.vdot[k];
  tree_crba(m, d, q);
  tree_mass_matrix_inverse(m, d);  // with locked joints the reduced inverse (zero locked rows)
  // locked joints: RNEA's identity tau_f = rnea_f(q, v, vdot) holds with v_l = vdot_l = 0
  // held, so dvdot_f = -M_ff^-1 drnea_f (tree.h TreeInput.locked); v_l is read as zero
  tree_rnea_derivatives(m, d, q, tree_held_velocities(m, d, v), vdot);
  for (int r = 0; r < nv; ++r)
    for (int c = 0; c < nv; ++c) {
      double sq = 0.0, sv = 0.0;
      for (int k = 0; k < nv; ++k) {
        sq += d.Minv[r * nv + k] * d.dtau_dq[k * nv + c];
        sv += d.Minv[r * nv + k] * d.dtau_dv[k * nv + c];
      }
      dvdot_dq[r * nv + c] = -sq;
      dvdot_dv[r * nv + c] = m.any_locked && m.locked_v[c] ? 0.0 : -sv;
    }
  for (int k = 0; k < nv; ++k) d.vdot[k] = vdot[k];
}

}  // namespace dojo
