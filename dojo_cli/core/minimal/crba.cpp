// Composite rigid body algorithm (Featherstone, RBDA algorithm 6.2), in the world
// frame, and the mass matrix's Cholesky factor and inverse.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kinematics.h"
#include "tree.h"

namespace dojo {

// Yc_i = Y_i + sum of the children's Yc (RBDA eq. 6.4, no transform in the world frame: a
// sum of rigid-body inertias, spatial.h's Inertia); for each column k of joint i,
// F_k = Yc_i J_k and M_rk = M_kr = J_r^T F_k for the columns r of i's ancestors and i's own
// from k on (TreeModel.support_v; eqs. 6.5-6.6; Pinocchio's crba in its WORLD convention,
// which writes the row blocks J_i^T (Yc J)_subtree instead: the same products).
void tree_crba(const TreeModel& m, TreeData& d, const double* q) {
  forward_kinematics(m, d, q);
  tree_crba_at_kinematics(m, d);
}

void tree_crba_at_kinematics(const TreeModel& m, TreeData& d) {
  const int nv = m.nv;
  for (int i = 0; i < m.n; ++i) d.Yc[i] = d.Y[i];
  for (int i = m.n - 1; i >= 0; --i) {
    const int lam = m.parent[i];
    if (lam >= 0) d.Yc[lam] += d.Yc[i];
  }
  // the pairs on different branches stay zero; the loop below is one dot product a pair over
  // the model's flat lists (TreeModel.support_v): nested loops over joints and their column
  // counts took a third more instructions (callgrind, Go1: 12,100 a call against 9,000)
  double* M = d.M.data();
  std::fill(M, M + nv * nv, 0.0);
  const Motion<double>* J = d.J.data();
  const int* col = m.v_col.data();
  const int* support = m.support_v.data();
  for (int k = 0; k < nv; ++k) {
    const Force<double> F = d.Yc[m.v_joint[k]] * J[col[k]];
    double* row = M + k * nv;
    for (int s = m.support_start[k]; s < m.support_start[k + 1]; ++s) {
      const int r = support[s];
      const double value = dot(J[col[r]], F);
      row[r] = value;
      M[r * nv + k] = value;
    }
  }
  // rotor inertia: 1/2 a v_k^2 adds a to M_kk (tree.h TreeInput.armature)
  for (int k = 0; k < nv; ++k) M[k * nv + k] += m.armature[k];
}
void tree_mass_matrix_inverse(const TreeModel& m, TreeData& d) {
  static const char* kWhat = "the mass matrix is not positive definite (a body with no mass or inertia on a free direction?)";
  // dense: nv is small, and that is fastest
  if (!m.any_locked) {
    tree::spd_inverse(d.M.data(), m.nv, d.L.data(), d.work.data(), d.Minv.data(), kWhat);
    return;
  }
  // locked joints: the reduced solve's inverse, M_ff^-1 scattered on the free rows and
  // columns (vdot_f = M_ff^-1 (tau_f - c_f), vdot_l = 0: tree.h TreeInput.locked)
  const int nv = m.nv, nf = static_cast<int>(m.free_v.size());
  for (int a = 0; a < nf; ++a)
    for (int b = 0; b < nf; ++b) d.Mff[a * nf + b] = d.M[m.free_v[a] * nv + m.free_v[b]];
  tree::spd_inverse(d.Mff.data(), nf, d.L.data(), d.work.data(), d.Mff.data(), kWhat);
  for (int k = 0; k < nv * nv; ++k) d.Minv[k] = 0.0;
  for (int a = 0; a < nf; ++a)
    for (int b = 0; b < nf; ++b) d.Minv[m.free_v[a] * nv + m.free_v[b]] = d.Mff[a * nf + b];
}

namespace tree {

void spd_inverse(const double* A, int n, double* L, double* Li, double* Ainv, const char* what) {
  for (int k = 0; k < n * n; ++k) L[k] = 0.0;
  for (int j = 0; j < n; ++j) {
    double s = A[j * n + j];
    for (int k = 0; k < j; ++k) s -= L[j * n + k] * L[j * n + k];
    if (!(s > 0.0)) throw std::domain_error(what);
    const double ljj = std::sqrt(s);
    L[j * n + j] = ljj;
    for (int i = j + 1; i < n; ++i) {
      double t = A[i * n + j];
      for (int k = 0; k < j; ++k) t -= L[i * n + k] * L[j * n + k];
      L[i * n + j] = t / ljj;
    }
  }
  // L^-1 (lower triangular), then A^-1 = L^-T L^-1
  for (int k = 0; k < n * n; ++k) Li[k] = 0.0;
  for (int c = 0; c < n; ++c) {
    Li[c * n + c] = 1.0 / L[c * n + c];
    for (int i = c + 1; i < n; ++i) {
      double t = 0.0;
      for (int k = c; k < i; ++k) t -= L[i * n + k] * Li[k * n + c];
      Li[i * n + c] = t / L[i * n + i];
    }
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double t = 0.0;
      for (int k = i; k < n; ++k) t += Li[k * n + i] * Li[k * n + j];
      Ainv[i * n + j] = t;
      Ainv[j * n + i] = t;
    }
}

}  // namespace tree
}  // namespace dojo
