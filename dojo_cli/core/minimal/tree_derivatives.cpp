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
#include "kinematics.h"
#include "tree.h"

namespace dojo {

namespace {

// The derivatives of RNEA at (v, a), after the forward kinematics at q.
void rnea_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a) {
  rnea(m, d, q, v, a, false);  // ov, oa (with gravity), of (subtree forces), tau
  const int nv = m.nv;
  JointVariation var;
  const Motion<double> a0{Vec3<double>{{-m.gravity[0], -m.gravity[1], -m.gravity[2]}}, zero3<double>()};
  // per body: per-column quantities, B_i, Yc_i = Y_i (RNEA's backward pass already summed
  // the body forces into subtree forces: d.of holds F_i)
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i];
    const Motion<double> vl = lam < 0 ? zero_motion<double>() : d.ov[lam];
    const Motion<double> al = lam < 0 ? a0 : d.oa[lam];
    const Motion<double>& vi = d.ov[i];
    if (m.variable[i]) tree_joint_variation(m, d, i, v, a, var);
    for (int s = 0; s < m.nv_i[i]; ++s) {
      const Motion<double>& xi = d.J[6 * i + s];
      Motion<double>& dvdq = d.dVdq[6 * i + s];
      Motion<double>& dadv = d.dAdv[6 * i + s];
      dvdq = cross(vl, xi);
      d.dAdq[6 * i + s] = cross(al, xi);
      dadv = dvdq + cross(vi, xi);
      if (m.variable[i]) {
        dvdq += var.dSv[s];
        dadv += var.dbv[s];
      }
      Motion<double> ps = d.dAdq[6 * i + s] + cross(vl, dvdq);
      // the joint's own term v_i x J_i qd_i sees J_i qd_i change by kappa too: + v_i x kappa
      if (m.variable[i]) ps += var.dSa[s] + var.dbq[s] + cross(vi, var.dSv[s]);
      d.psi[6 * i + s] = ps;
    }
    // B_i (tree.h InertiaVariation): Y (u x v) + u x* (Y v) + v x* (Y u)
    const Inertia<double>& Y = d.Y[i];
    d.Bc[i] = inertia_variation(Y, vi);
    d.Yc[i] = Y;
  }
  for (int i = m.n - 1; i >= 0; --i) {
    const int lam = m.parent[i];
    if (lam < 0) continue;
    d.Yc[lam] += d.Yc[i];
    d.Bc[lam] = d.Bc[lam] + d.Bc[i];
  }
  for (int k = 0; k < nv * nv; ++k) d.dtau_dq[k] = d.dtau_dv[k] = 0.0;
  for (int i = 0; i < m.n; ++i) {
    const int ni = m.nv_i[i];
    const Motion<double>* J = &d.J[6 * i];
    const InertiaVariation& Bc = d.Bc[i];
    const Inertia<double>& Yc = d.Yc[i];
    Force<double>* P = &d.P[6 * i];
    Force<double>* Q = &d.Q[6 * i];
    // P = Bc^T J, Q = Yc J (Yc symmetric)
    for (int s = 0; s < ni; ++s) {
      P[s] = transpose_mul(Bc, J[s]);
      Q[s] = Yc * J[s];
    }
    // Delta_i = Bc dVdq + Yc psi + xi x* F_i; DeltaV_i = Bc J + Yc dAdv
    for (int s = 0; s < ni; ++s) {
      d.Delta[6 * i + s] = Bc * d.dVdq[6 * i + s] + Yc * d.psi[6 * i + s] + cross(J[s], d.of[i]);
      d.DeltaV[6 * i + s] = Bc * J[s] + Yc * d.dAdv[6 * i + s];
    }
    // j at or above i: rows of i, columns of j
    for (int j = i; j >= 0; j = m.parent[j])
      for (int r = 0; r < ni; ++r)
        for (int s = 0; s < m.nv_i[j]; ++s) {
          const int row = m.idx_v[i] + r, col = m.idx_v[j] + s;
          d.dtau_dq[row * nv + col] = dot(d.dVdq[6 * j + s], P[r]) + dot(d.psi[6 * j + s], Q[r]);
          d.dtau_dv[row * nv + col] = dot(d.J[6 * j + s], P[r]) + dot(d.dAdv[6 * j + s], Q[r]);
        }
    // a variable S_i: tau_i = J_i^T F_i also changes with J_i's own shape, (X_i dS_i/ds)^T F_i
    if (m.variable[i]) {
      tree_joint_variation(m, d, i, v, a, var);
      for (int r = 0; r < ni; ++r)
        for (int s = 0; s < ni; ++s) d.dtau_dq[(m.idx_v[i] + r) * nv + m.idx_v[i] + s] += dot(var.dS[s][r], d.of[i]);
    }
    // k strictly above i: rows of k, columns of i
    for (int k = m.parent[i]; k >= 0; k = m.parent[k])
      for (int r = 0; r < m.nv_i[k]; ++r)
        for (int s = 0; s < ni; ++s) {
          const int row = m.idx_v[k] + r, col = m.idx_v[i] + s;
          d.dtau_dq[row * nv + col] = dot(d.J[6 * k + r], d.Delta[6 * i + s]);
          d.dtau_dv[row * nv + col] = dot(d.J[6 * k + r], d.DeltaV[6 * i + s]);
        }
  }
}

}  // namespace

void tree_rnea_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a) {
  forward_kinematics(m, d, q);  // placements, J, Y
  rnea_derivatives(m, d, q, v, a);
}

void tree_aba_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* tau,
                          double* dvdot_dq, double* dvdot_dv) {
  tree_aba(m, d, q, v, tau);  // the forward kinematics at q, then ABA
  const int nv = m.nv;
  // keep vdot: the derivative pass reuses the buffers of the forward pass
  double* vdot = d.work2.data();
  for (int k = 0; k < nv; ++k) vdot[k] = d.vdot[k];
  tree_crba_at_kinematics(m, d);  // at the same q: ABA leaves the placements, J and Y
  tree_mass_matrix_inverse(m, d);  // with locked joints the reduced inverse (zero locked rows)
  // locked joints: RNEA's identity tau_f = rnea_f(q, v, vdot) holds with v_l = vdot_l = 0
  // held, so dvdot_f = -M_ff^-1 drnea_f (tree.h TreeInput.locked); v_l is read as zero
  rnea_derivatives(m, d, q, tree_held_velocities(m, d, v), vdot);
  // -M^-1 dtau, row by row: the inner loop runs along contiguous rows (it vectorises)
  for (int r = 0; r < nv; ++r) {
    double* oq = dvdot_dq + r * nv;
    double* ov = dvdot_dv + r * nv;
    for (int c = 0; c < nv; ++c) oq[c] = ov[c] = 0.0;
    for (int k = 0; k < nv; ++k) {
      const double w = -d.Minv[r * nv + k];
      const double* tq = &d.dtau_dq[k * nv];
      const double* tv = &d.dtau_dv[k * nv];
      for (int c = 0; c < nv; ++c) {
        oq[c] += w * tq[c];
        ov[c] += w * tv[c];
      }
    }
    if (m.any_locked)
      for (int c = 0; c < nv; ++c)
        if (m.locked_v[c]) ov[c] = 0.0;
  }
  for (int k = 0; k < nv; ++k) d.vdot[k] = vdot[k];
}

}  // namespace dojo
