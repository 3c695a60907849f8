// Munthe-Kaas RK4 in minimal coordinates (rk4.h has the scheme and conventions).
#include "rk4.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kinematics.h"
#include "math/spatial.h"

namespace dojo {

namespace {

// ------------------------------------------------------------------ small helpers
// Raw-array faces of spatial.h's operations (the loop rows and coordinate maps below keep
// flat arrays; the arithmetic is spatial.h's, row-major 3x3).

void store3(const Vec3<double>& v, double* out) {
  for (int k = 0; k < 3; ++k) out[k] = v[k];
}

void cross3(const double* a, const double* b, double* out) { store3(cross(load3<double>(a), load3<double>(b)), out); }

void mat_vec(const double* R, const double* x, double* out) { store3(matvec(load33<double>(R), load3<double>(x)), out); }

void mat_t_vec(const double* R, const double* x, double* out) {
  store3(tmatvec(load33<double>(R), load3<double>(x)), out);
}

void quat_mul(const double* p, const double* q, double* out) {
  const Quat<double> r = multiply(load4<double>(p), load4<double>(q));
  for (int k = 0; k < 4; ++k) out[k] = r[k];
}

// R(q) of a unit quaternion (spatial.h's rotation)
void quat_to_R(const double* q, double* R) {
  const Mat3<double> r = rotation(load4<double>(q));
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 3; ++c) R[3 * a + c] = r[a][c];
}

// exp(rv) as a unit quaternion
void quat_exp(const double* rv, double* out) {
  const Quat<double> e = quaternion_from_rotation_vector(Vec3<double>{{rv[0], rv[1], rv[2]}});
  for (int k = 0; k < 4; ++k) out[k] = e[k];
}

// log of a unit quaternion, angle in [0, pi] (sign canonicalised)
void quat_log(const double* q, double* rv) {
  const double s = q[0] < 0.0 ? -1.0 : 1.0;
  const Vec3<double> r = rotation_vector(Quat<double>{{s * q[0], s * q[1], s * q[2], s * q[3]}});
  for (int k = 0; k < 3; ++k) rv[k] = r[k];
}

// exp(phi / 2) of swing joint i at its coordinates qr, phi = b1 q1 + b2 q2
void swing_quat(const TreeModel& m, int i, const double* qr, double* out) {
  const double* b = &m.swing_axes[6 * i];
  double phi[3];
  for (int k = 0; k < 3; ++k) phi[k] = b[k] * qr[0] + b[3 + k] * qr[1];
  quat_exp(phi, out);
}

// R_J of tree joint i at q (quaternions normalised): the tree's (kinematics.h), row-major
void joint_R(const TreeModel& m, int i, const double* q, double* R) {
  const Mat3<double> RJ = joint_rotation(m, i, q);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) R[3 * r + c] = RJ[r][c];
}

// E_t = T R_J T^T (nt x nt, row-major into Et): the translation block of q' = E v
void translation_block(const TreeModel& m, int i, const double* RJ, double* Et) {
  const int nt = m.n_trans[i];
  const double* T = &m.trans_dirs[9 * i];
  for (int r = 0; r < nt; ++r)
    for (int c = 0; c < nt; ++c) {
      double RTc[3];
      mat_vec(RJ, T + 3 * c, RTc);
      Et[3 * r + c] = T[3 * r] * RTc[0] + T[3 * r + 1] * RTc[1] + T[3 * r + 2] * RTc[2];
    }
}

// SE(3) left Jacobian factor V(psi) = I + (1 - cos)/th^2 [psi]x + (th - sin)/th^3 [psi]x^2, applied to rho
void se3_V(const double* psi, const double* rho, double* out) {
  const double th2 = psi[0] * psi[0] + psi[1] * psi[1] + psi[2] * psi[2];
  double a, b;
  if (th2 < 0.05 * 0.05) {
    a = 0.5 - th2 / 24.0 + th2 * th2 / 720.0;
    b = 1.0 / 6.0 - th2 / 120.0 + th2 * th2 / 5040.0;
  } else {
    const double th = std::sqrt(th2);
    a = (1.0 - std::cos(th)) / th2;
    b = (th - std::sin(th)) / (th2 * th);
  }
  double c1[3], c2[3];
  cross3(psi, rho, c1);
  cross3(psi, c1, c2);
  for (int k = 0; k < 3; ++k) out[k] = rho[k] + a * c1[k] + b * c2[k];
}

// ad_xi V for xi = (psi, rho), V = (w, u): (psi x w, psi x u + rho x w)
void se3_ad(const double* psi, const double* rho, const double* w, const double* u, double* ow, double* ou) {
  double t[3];
  cross3(psi, w, ow);
  cross3(psi, u, ou);
  cross3(rho, w, t);
  for (int k = 0; k < 3; ++k) ou[k] += t[k];
}

// phidot = V + ad V / 2 + A ad^2 V + B ad^4 V (Bullo and Murray lemma 4, RBD's coefficients)
void se3_local_rate(const double* psi, const double* rho, const double* w, const double* u, double* dpsi,
                    double* drho) {
  const double th2 = psi[0] * psi[0] + psi[1] * psi[1] + psi[2] * psi[2];
  double A, B;
  if (th2 < 0.05 * 0.05) {
    // series (derived from alpha = (th/2) cot(th/2), beta = (th/2)^2 / sin^2(th/2))
    A = 1.0 / 12.0 - th2 * th2 / 30240.0;
    B = -1.0 / 720.0 - th2 / 15120.0;
  } else {
    const double th = std::sqrt(th2);
    const double alpha = 0.5 * th / std::tan(0.5 * th);
    const double s = std::sin(0.5 * th);
    const double beta = 0.25 * th2 / (s * s);
    A = (2.0 * (1.0 - alpha) + 0.5 * (alpha - beta)) / th2;
    B = ((1.0 - alpha) + 0.5 * (alpha - beta)) / (th2 * th2);
  }
  double w1[3], u1[3], w2[3], u2[3], w3[3], u3[3], w4[3], u4[3];
  se3_ad(psi, rho, w, u, w1, u1);
  se3_ad(psi, rho, w1, u1, w2, u2);
  se3_ad(psi, rho, w2, u2, w3, u3);
  se3_ad(psi, rho, w3, u3, w4, u4);
  for (int k = 0; k < 3; ++k) {
    dpsi[k] = w[k] + 0.5 * w1[k] + A * w2[k] + B * w4[k];
    drho[k] = u[k] + 0.5 * u1[k] + A * u2[k] + B * u4[k];
  }
}

// q = global(q0, phi) for every joint
void global_coordinates(const TreeModel& m, const double* q0, const double* phi, double* q) {
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], iv = m.idx_v[i];
    if (m.rot_kind[i] != 2) {  // vector coordinates (a swing's too: phi = q - q0)
      for (int k = 0; k < m.nq_i[i]; ++k) q[iq + k] = q0[iq + k] + phi[iv + k];
      continue;
    }
    if (m.trans_pred[i])  // translations in the predecessor frame: q_t' = v_t
      for (int k = 0; k < nt; ++k) q[iq + k] = q0[iq + k] + phi[iv + k];
    const double* qr0 = q0 + iq + nt;
    const double* psi = phi + iv + nt;
    double e[4], qr[4];
    quat_exp(psi, e);
    quat_mul(qr0, e, qr);
    const double nrm = std::sqrt(qr[0] * qr[0] + qr[1] * qr[1] + qr[2] * qr[2] + qr[3] * qr[3]);
    for (int k = 0; k < 4; ++k) q[iq + nt + k] = qr[k] / nrm;
    if (nt == 0 || m.trans_pred[i]) continue;
    // floating (nt = 3): p = p0 + R0 V(psi) rho, with p = T^T q_t and rho = T^T phi_t
    const double* T = &m.trans_dirs[9 * i];
    double rho[3] = {0.0, 0.0, 0.0}, p0[3] = {0.0, 0.0, 0.0};
    for (int c = 0; c < nt; ++c)
      for (int k = 0; k < 3; ++k) {
        rho[k] += T[3 * c + k] * phi[iv + c];
        p0[k] += T[3 * c + k] * q0[iq + c];
      }
    double Vr[3], R0[9], dp[3];
    se3_V(psi, rho, Vr);
    const double n0 = std::sqrt(qr0[0] * qr0[0] + qr0[1] * qr0[1] + qr0[2] * qr0[2] + qr0[3] * qr0[3]);
    const double u0[4] = {qr0[0] / n0, qr0[1] / n0, qr0[2] / n0, qr0[3] / n0};
    quat_to_R(u0, R0);
    mat_vec(R0, Vr, dp);
    for (int c = 0; c < nt; ++c) {
      double s = 0.0;
      for (int k = 0; k < 3; ++k) s += T[3 * c + k] * (p0[k] + dp[k]);
      q[iq + c] = s;
    }
  }
}

// phidot at (q, v) with local coordinates phi (around the step's q0)
void local_rates(const TreeModel& m, const double* q, const double* phi, const double* v, double* phid) {
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iv = m.idx_v[i];
    if (m.rot_kind[i] == 0 || m.rot_kind[i] == 3) {  // q' = v
      for (int k = 0; k < m.nv_i[i]; ++k) phid[iv + k] = v[iv + k];
    } else if (m.rot_kind[i] == 1) {
      if (nt) {
        double RJ[9], Et[9];
        joint_R(m, i, q, RJ);
        translation_block(m, i, RJ, Et);
        for (int r = 0; r < nt; ++r) {
          double s = 0.0;
          for (int c = 0; c < nt; ++c) s += Et[3 * r + c] * v[iv + c];
          phid[iv + r] = s;
        }
      }
      phid[iv + nt] = v[iv + nt];
    } else if (nt == 0 || m.trans_pred[i]) {
      for (int k = 0; k < nt; ++k) phid[iv + k] = v[iv + k];
      const int ir = iv + nt;
      const Mat3<double> Ji = right_jacobian_inverse(Vec3<double>{{phi[ir], phi[ir + 1], phi[ir + 2]}});
      for (int r = 0; r < 3; ++r) phid[ir + r] = Ji[r][0] * v[ir] + Ji[r][1] * v[ir + 1] + Ji[r][2] * v[ir + 2];
    } else {
      const double* T = &m.trans_dirs[9 * i];
      double rho[3] = {0.0, 0.0, 0.0}, u[3] = {0.0, 0.0, 0.0};
      for (int c = 0; c < nt; ++c)
        for (int k = 0; k < 3; ++k) {
          rho[k] += T[3 * c + k] * phi[iv + c];
          u[k] += T[3 * c + k] * v[iv + c];
        }
      double drho[3];
      se3_local_rate(phi + iv + nt, rho, v + iv + nt, u, phid + iv + nt, drho);
      for (int c = 0; c < nt; ++c) phid[iv + c] = T[3 * c] * drho[0] + T[3 * c + 1] * drho[1] + T[3 * c + 2] * drho[2];
    }
  }
}

// tau += B(q) u (minimal/inputs.py's B_func for joint inputs) + the springs and dampers
// (tree_passive.cpp, the one copy of their law in minimal coordinates)
void joint_forces(const TreeModel& m, const Rk4Model& r, const double* q, const double* v, const double* u,
                  double* tau) {
  if (r.has_passive) tree_passive_forces_add(m, q, v, tau);
  if (!u) return;
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], iv = m.idx_v[i], fs = r.in.free_start[i];
    if (fs < 0) continue;
    static const int kRotV[4] = {0, 1, 3, 2};
    const int nrot = kRotV[m.rot_kind[i]];
    double RJ[9], Et[9];
    joint_R(m, i, q, RJ);
    if (nt) {
      if (m.rot_kind[i] != 0 && !m.trans_pred[i]) {
        translation_block(m, i, RJ, Et);
      } else {
        for (int k = 0; k < 9; ++k) Et[k] = (k % 4 == 0) ? 1.0 : 0.0;
      }
    }
    // generalized translation force f (free-coordinate space) -> Et^T f
    for (int a = 0; a < nt; ++a) {
      double s = 0.0;
      for (int b = 0; b < nt; ++b) s += Et[3 * b + a] * u[fs + b];
      tau[iv + a] += s;
    }
    if (nrot == 2) {
      // swing: a joint-frame torque u_1 b1 + u_2 b2 on the child, A^T R_J^T [b1 b2] u (minimal/inputs.py)
      const double* b = &m.swing_axes[6 * i];
      double t[3], tb[3], A[3][2];
      for (int a = 0; a < 3; ++a) t[a] = b[a] * u[fs + nt] + b[3 + a] * u[fs + nt + 1];
      mat_t_vec(RJ, t, tb);
      tree_swing_jacobian(m, i, q + iq + nt, A, nullptr, nullptr);
      for (int a = 0; a < 2; ++a) tau[iv + nt + a] += A[0][a] * tb[0] + A[1][a] * tb[1] + A[2][a] * tb[2];
    } else if (nrot == 1) {
      tau[iv + nt] += u[fs + nt];
    } else if (nrot == 3) {
      // R_J^T (R_off for a floating joint) u: a joint-frame torque in the body frame
      double uu[3] = {u[fs + nt], u[fs + nt + 1], u[fs + nt + 2]}, w[3], fr[3];
      if (r.in.floating[i]) {
        double Ro[9];
        quat_to_R(&r.in.offset_quat[4 * i], Ro);
        mat_vec(Ro, uu, w);
      } else {
        for (int a = 0; a < 3; ++a) w[a] = uu[a];
      }
      mat_t_vec(RJ, w, fr);
      for (int a = 0; a < 3; ++a) tau[iv + nt + a] += fr[a];
    }
  }
}

// Placement of a loop joint's parent or child body (k = -1: the world): R, the body's
// centre of mass x, its spatial velocity V and bias acceleration Ab (world, at the origin).
struct BodyFrame {
  double R[9], x[3], V[6], Ab[6];
};

void body_frame(const TreeModel& m, const TreeData& d, int k, BodyFrame& b) {
  if (k < 0) {
    for (int a = 0; a < 9; ++a) b.R[a] = (a % 4 == 0) ? 1.0 : 0.0;
    for (int a = 0; a < 3; ++a) b.x[a] = 0.0;
    for (int a = 0; a < 6; ++a) b.V[a] = b.Ab[a] = 0.0;
    return;
  }
  // the bias acceleration (vdot = 0, no gravity): RNEA's acceleration at vdot = 0 (rk4_dynamics
  // runs it) less the gravity it starts from, which the world frame carries unchanged
  const Motion<double> ab = d.oa[k] - Motion<double>{Vec3<double>{{-m.gravity[0], -m.gravity[1], -m.gravity[2]}},
                                                     zero3<double>()};
  const Vec3<double> x = matvec(d.R[k], load3<double>(&m.body_com[3 * k])) + d.p[k];
  for (int a = 0; a < 3; ++a) {
    for (int c = 0; c < 3; ++c) b.R[3 * a + c] = d.R[k][a][c];
    b.x[a] = x[a];
    b.V[a] = d.ov[k].v[a];
    b.V[3 + a] = d.ov[k].w[a];
    b.Ab[a] = ab.v[a];
    b.Ab[3 + a] = ab.w[a];
  }
}

// Loop rows at the current FK and velocities: K (nr, nv), rhs (nr) with K vdot = rhs.
void loop_rows(const TreeModel& m, const TreeData& d, const Rk4Model& r, Rk4Data& rd) {
  const int nv = m.nv;
  for (int a = 0; a < r.nr * nv; ++a) rd.K[a] = 0.0;
  for (int l = 0; l < r.nl; ++l) {
    const int ka = r.in.loop_parent[l], kb = r.in.loop_child[l];
    BodyFrame A, B;
    body_frame(m, d, ka, A);
    body_frame(m, d, kb, B);
    double Pb[3], t3[3];
    mat_vec(B.R, &r.in.loop_pb[3 * l], t3);
    for (int a = 0; a < 3; ++a) Pb[a] = B.x[a] + t3[a];
    // translational error d = R_a^T (P_b - x_a) - p_a
    double dd[3], rel[3];
    for (int a = 0; a < 3; ++a) rel[a] = Pb[a] - A.x[a];
    mat_t_vec(A.R, rel, dd);
    for (int a = 0; a < 3; ++a) dd[a] -= r.in.loop_pa[3 * l + a];
    // relative rotation q_rel = off^* qa^* qb, as R_off^T R_a^T R_b, its rotation vector
    const double* Ro = &r.offset_R[9 * l];
    double RaRo[9];  // joint frame in the world
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) RaRo[3 * i + j] = A.R[3 * i] * Ro[j] + A.R[3 * i + 1] * Ro[3 + j] + A.R[3 * i + 2] * Ro[6 + j];
    double Rrel[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) Rrel[3 * i + j] = RaRo[i] * B.R[j] + RaRo[3 + i] * B.R[3 + j] + RaRo[6 + i] * B.R[6 + j];
    // rotation vector of Rrel (angle in [0, pi])
    double rv[3];
    {
      const double w[3] = {0.5 * (Rrel[7] - Rrel[5]), 0.5 * (Rrel[2] - Rrel[6]), 0.5 * (Rrel[3] - Rrel[1])};
      const double s = std::sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
      const double c = 0.5 * (Rrel[0] + Rrel[4] + Rrel[8] - 1.0);
      const double th = std::atan2(s, c);
      const double f = s < 1e-12 ? 1.0 : th / s;
      for (int a = 0; a < 3; ++a) rv[a] = f * w[a];
    }
    // relative motion, world
    double dV[6], dA[6];
    for (int a = 0; a < 6; ++a) {
      dV[a] = B.V[a] - A.V[a];
      dA[a] = B.Ab[a] - A.Ab[a];
    }
    const double* wa = A.V + 3;
    // translational: u = dv_O + dw x P_b; sdot bias = R_a^T (dA_lin + dA_ang x Pb + dw x Pbdot - wa x u)
    double u[3], Pbdot[3], tbias[3];
    cross3(dV + 3, Pb, t3);
    for (int a = 0; a < 3; ++a) u[a] = dV[a] + t3[a];
    cross3(B.V + 3, Pb, t3);
    for (int a = 0; a < 3; ++a) Pbdot[a] = B.V[a] + t3[a];
    {
      double c1[3], c2[3], c3[3], sum[3];
      cross3(dA + 3, Pb, c1);
      cross3(dV + 3, Pbdot, c2);
      cross3(wa, u, c3);
      for (int a = 0; a < 3; ++a) sum[a] = dA[a] + c1[a] + c2[a] - c3[a];
      mat_t_vec(A.R, sum, tbias);
    }
    double urel[3];
    mat_t_vec(A.R, u, urel);
    // rotational: w_rel = (R_a R_off)^T dw; bias (R_a R_off)^T (dA_ang - wa x dw)
    double wrel[3], rbias[3];
    mat_t_vec(RaRo, dV + 3, wrel);
    {
      double c1[3], sum[3];
      cross3(wa, dV + 3, c1);
      for (int a = 0; a < 3; ++a) sum[a] = dA[3 + a] - c1[a];
      mat_t_vec(RaRo, sum, rbias);
    }
    const double* g = &r.in.loop_gains[4 * l];
    const bool stab = r.in.loop_stabilized[l] != 0;
    for (int row = r.in.loop_row_start[l]; row < r.in.loop_row_start[l + 1]; ++row) {
      const double* b = &r.in.row_basis[3 * row];
      const bool rot = r.in.row_rotational[row] != 0;
      // row direction in the world: translational b^T R_a^T, rotational b^T (R_a R_off)^T
      double bw[3];
      mat_vec(rot ? RaRo : A.R, b, bw);
      const double* err = rot ? rv : dd;
      const double* vel = rot ? wrel : urel;
      const double* bias = rot ? rbias : tbias;
      const double kp = stab ? g[rot ? 2 : 0] : 0.0, kd = stab ? g[rot ? 3 : 1] : 0.0;
      const double e = b[0] * err[0] + b[1] * err[1] + b[2] * err[2];
      const double ed = b[0] * vel[0] + b[1] * vel[1] + b[2] * vel[2];
      const double kb_ = b[0] * bias[0] + b[1] * bias[1] + b[2] * bias[2];
      rd.rhs[row] = -kb_ - kd * ed - kp * e;
      // K row: +columns on kb's path, - on ka's (common ancestors cancel)
      double* Krow = &rd.K[row * nv];
      for (int side = 0; side < 2; ++side) {
        const double sign = side == 0 ? 1.0 : -1.0;
        for (int j = side == 0 ? kb : ka; j >= 0; j = m.parent[j]) {
          for (int col = 0; col < m.nv_i[j]; ++col) {
            const Motion<double>& Jc = d.J[6 * j + col];
            // a rotational row reads the column's angular velocity, a translational one its
            // velocity at the joint point P_b
            const Vec3<double> u = rot ? Jc.w : velocity_at(Jc, load3<double>(Pb));
            Krow[m.idx_v[j] + col] += sign * (bw[0] * u[0] + bw[1] * u[1] + bw[2] * u[2]);
          }
        }
      }
    }
  }
}

// Solve A lambda = y (A = K M^-1 K^T, PSD) by Cholesky with diagonal pivoting, dropping
// pivots below 1e-10 of the largest diagonal entry (their lambda is 0).
void psd_solve(int nr, Rk4Data& rd) {
  double* A = rd.Lc.data();
  for (int a = 0; a < nr * nr; ++a) A[a] = rd.A[a];
  for (int a = 0; a < nr; ++a) rd.perm[a] = a;
  double dmax = 0.0;
  for (int a = 0; a < nr; ++a) dmax = std::fmax(dmax, A[a * nr + a]);
  const double tol = 1e-10 * dmax;
  int rank = 0;
  for (int k = 0; k < nr; ++k) {
    int p = k;
    for (int a = k + 1; a < nr; ++a)
      if (A[a * nr + a] > A[p * nr + p]) p = a;
    if (!(A[p * nr + p] > tol)) break;
    if (p != k) {
      for (int a = 0; a < nr; ++a) std::swap(A[k * nr + a], A[p * nr + a]);
      for (int a = 0; a < nr; ++a) std::swap(A[a * nr + k], A[a * nr + p]);
      std::swap(rd.perm[k], rd.perm[p]);
    }
    const double lkk = std::sqrt(A[k * nr + k]);
    A[k * nr + k] = lkk;
    for (int i = k + 1; i < nr; ++i) A[i * nr + k] /= lkk;
    for (int i = k + 1; i < nr; ++i)
      for (int j = k + 1; j <= i; ++j) {
        A[i * nr + j] -= A[i * nr + k] * A[j * nr + k];
        A[j * nr + i] = A[i * nr + j];
      }
    rank = k + 1;
  }
  // L L^T z = y[perm] on the first `rank` rows
  double* z = rd.lam.data();  // reused as scratch, then filled with lambda
  for (int i = 0; i < rank; ++i) {
    double s = rd.y[rd.perm[i]];
    for (int k = 0; k < i; ++k) s -= A[i * nr + k] * rd.f[k];
    rd.f[i] = s / A[i * nr + i];  // rd.f is free scratch here (nv >= nr is not assumed: sized max)
  }
  for (int i = rank - 1; i >= 0; --i) {
    double s = rd.f[i];
    for (int k = i + 1; k < rank; ++k) s -= A[k * nr + i] * rd.f[k];
    rd.f[i] = s / A[i * nr + i];
  }
  for (int a = 0; a < nr; ++a) z[a] = 0.0;
  for (int i = 0; i < rank; ++i) z[rd.perm[i]] = rd.f[i];
}

void body_quaternions(const TreeModel& m, const Rk4Model& r, Rk4Data& rd, const double* q) {
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], lam = m.parent[i];
    double qj[4] = {1.0, 0.0, 0.0, 0.0};
    if (m.rot_kind[i] == 1) {
      const double h = 0.5 * q[iq + nt], s = std::sin(h);
      const double* a = &m.axis[3 * i];
      qj[0] = std::cos(h);
      qj[1] = s * a[0];
      qj[2] = s * a[1];
      qj[3] = s * a[2];
    } else if (m.rot_kind[i] == 2) {
      const double* qq = q + iq + nt;
      const double nrm = std::sqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
      for (int k = 0; k < 4; ++k) qj[k] = qq[k] / nrm;
    } else if (m.rot_kind[i] == 3) {
      swing_quat(m, i, q + iq + nt, qj);
    }
    double pre[4];
    const double* pq = &r.in.placement_quat[4 * i];
    if (lam < 0) {
      for (int k = 0; k < 4; ++k) pre[k] = pq[k];
    } else {
      quat_mul(&rd.quat[4 * lam], pq, pre);
    }
    quat_mul(pre, qj, &rd.quat[4 * i]);
  }
}

}  // namespace

void rk4_global_coordinates(const TreeModel& m, const double* q0, const double* phi, double* q) {
  global_coordinates(m, q0, phi, q);
}

void rk4_local_rates(const TreeModel& m, const double* q, const double* phi, const double* v, double* phid) {
  local_rates(m, q, phi, v, phid);
}

Rk4Model::Rk4Model(const TreeModel& tree, const Rk4Input& input) : in(input) {
  n = tree.n;
  nq = tree.nq;
  nv = tree.nv;
  nb = in.nb;
  nu = in.nu;
  nl = static_cast<int>(in.loop_parent.size());
  auto need = [&](size_t size, size_t want, const char* what) {
    if (size != want)
      throw std::invalid_argument(std::string("Rk4Input.") + what + ": expected " + std::to_string(want) + " values, got " +
                                  std::to_string(size));
  };
  const size_t sn = static_cast<size_t>(n), snl = static_cast<size_t>(nl);
  need(in.body.size(), sn, "body");
  need(in.placement_quat.size(), 4 * sn, "placement_quat");
  need(in.free_start.size(), sn, "free_start");
  need(in.floating.size(), sn, "floating");
  need(in.offset_quat.size(), 4 * sn, "offset_quat");
  need(in.loop_child.size(), snl, "loop_child");
  need(in.loop_pa.size(), 3 * snl, "loop_pa");
  need(in.loop_pb.size(), 3 * snl, "loop_pb");
  need(in.loop_offset.size(), 4 * snl, "loop_offset");
  need(in.loop_row_start.size(), snl + 1, "loop_row_start");
  need(in.loop_gains.size(), 4 * snl, "loop_gains");
  need(in.loop_stabilized.size(), snl, "loop_stabilized");
  nr = in.loop_row_start[snl];
  need(in.row_rotational.size(), static_cast<size_t>(nr), "row_rotational");
  need(in.row_basis.size(), 3 * static_cast<size_t>(nr), "row_basis");
  for (int i = 0; i < n; ++i) {
    // -1: a massless frame between the axes of a universal or gimbal joint (no body)
    if (in.body[i] < -1 || in.body[i] >= nb) throw std::invalid_argument("Rk4Input.body: out of range");
    if (in.free_start[i] >= 0 && in.free_start[i] + tree.nv_i[i] > nu)
      throw std::invalid_argument("Rk4Input.free_start: out of range");
  }
  for (int l = 0; l < nl; ++l)
    if (in.loop_parent[l] < -1 || in.loop_parent[l] >= n || in.loop_child[l] < -1 || in.loop_child[l] >= n)
      throw std::invalid_argument("Rk4Input.loop_parent/loop_child: out of range");
  // springs and dampers act through the tree's own values (tree_passive.cpp)
  for (int k = 0; k < tree.nv; ++k)
    if (tree.spring[k] != 0.0 || tree.damper[k] != 0.0) has_passive = true;
  offset_R.resize(9 * snl);
  for (int l = 0; l < nl; ++l) {
    const double* o = &in.loop_offset[4 * l];
    const double nrm = std::sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
    const double u[4] = {o[0] / nrm, o[1] / nrm, o[2] / nrm, o[3] / nrm};
    quat_to_R(u, &offset_R[9 * l]);
  }
}

Rk4Data::Rk4Data(const Rk4Model& r) {
  const size_t nq = r.nq, nv = r.nv, nr = r.nr;
  q0.assign(nq, 0.0);
  v0.assign(nv, 0.0);
  qs.assign(nq, 0.0);
  vs.assign(nv, 0.0);
  phi.assign(nv, 0.0);
  phid.assign(4 * nv, 0.0);
  vd.assign(4 * nv, 0.0);
  tau.assign(nv, 0.0);
  tau_user.assign(nv, 0.0);
  f.assign(std::max(nv, nr), 0.0);
  K.assign(nr * nv, 0.0);
  rhs.assign(nr, 0.0);
  A.assign(nr * nr, 0.0);
  Lc.assign(nr * nr, 0.0);
  lam.assign(nr, 0.0);
  y.assign(nr, 0.0);
  Y.assign(nr * nv, 0.0);
  perm.assign(nr, 0);
  quat.assign(4 * static_cast<size_t>(r.n), 0.0);
}

void rk4_dynamics(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, double t, const double* q,
                  const double* v, const double* u, const Rk4Control* control, double* vdot) {
  const int nv = m.nv;
  // locked joints: their velocities read as zero (Drake's Lock); ABA and the reduced M^-1
  // then give vdot_l = 0 and carry the locked rows' forces in the lock (tree.h TreeInput.locked)
  v = tree_held_velocities(m, d, v);
  for (int a = 0; a < nv; ++a) rd.tau[a] = 0.0;
  if (u || r.has_passive) joint_forces(m, r, q, v, u, rd.tau.data());
  if (control && *control) {
    for (int a = 0; a < nv; ++a) rd.tau_user[a] = 0.0;
    (*control)(t, q, v, rd.tau_user.data());
    for (int a = 0; a < nv; ++a) rd.tau[a] += rd.tau_user[a];
  }
  if (r.nr == 0) {
    tree_aba(m, d, q, v, rd.tau.data());
    for (int a = 0; a < nv; ++a) vdot[a] = d.vdot[a];
    return;
  }
  // with loops: M (CRBA) and M^-1, c (RNEA, leaves ov), the loop rows, the Schur complement
  tree_crba(m, d, q);
  tree_mass_matrix_inverse(m, d);
  tree_rnea(m, d, q, v, nullptr);  // d.tau = c; also d.ov and d.oa (the loop rows' bias accelerations)
  loop_rows(m, d, r, rd);
  const int nr = r.nr;
  for (int a = 0; a < nv; ++a) rd.f[a] = rd.tau[a] - d.tau[a];
  // Y = K M^-1 (nr, nv); A = Y K^T; y = Y f - rhs
  for (int i = 0; i < nr; ++i) {
    const double* Kr = &rd.K[i * nv];
    for (int c = 0; c < nv; ++c) {
      double s = 0.0;
      for (int k = 0; k < nv; ++k) s += Kr[k] * d.Minv[k * nv + c];
      rd.Y[i * nv + c] = s;
    }
  }
  for (int i = 0; i < nr; ++i) {
    double s = -rd.rhs[i];
    for (int k = 0; k < nv; ++k) s += rd.Y[i * nv + k] * rd.f[k];
    rd.y[i] = s;
    for (int j = 0; j <= i; ++j) {
      double t2 = 0.0;
      for (int k = 0; k < nv; ++k) t2 += rd.Y[i * nv + k] * rd.K[j * nv + k];
      rd.A[i * nr + j] = t2;
      rd.A[j * nr + i] = t2;
    }
  }
  // f is the solve's scratch: keep tau - c in vdot meanwhile
  for (int a = 0; a < nv; ++a) vdot[a] = rd.f[a];
  psd_solve(nr, rd);
  for (int i = 0; i < nr; ++i)
    for (int k = 0; k < nv; ++k) vdot[k] -= rd.K[i * nv + k] * rd.lam[i];
  for (int a = 0; a < nv; ++a) rd.f[a] = vdot[a];
  for (int a = 0; a < nv; ++a) {
    double s = 0.0;
    for (int k = 0; k < nv; ++k) s += d.Minv[a * nv + k] * rd.f[k];
    vdot[a] = s;
  }
}

void rk4_step(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, double t, double h, double* q,
              double* v, const double* u, const Rk4Control* control) {
  static const double a_coef[4] = {0.0, 0.5, 0.5, 1.0};  // a_{i,i-1} (the classic tableau's only entries)
  static const double b_coef[4] = {1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0};
  const int nq = m.nq, nv = m.nv;
  // Drake's Lock zeroes a locked joint's velocities; with vdot_l = 0 at every stage they stay
  // exactly zero, so its local coordinates' rates are zero and q_l stays where it is
  if (m.any_locked)
    for (int a = 0; a < nv; ++a)
      if (m.locked_v[a]) v[a] = 0.0;
  for (int a = 0; a < nq; ++a) rd.q0[a] = q[a];
  for (int a = 0; a < nv; ++a) rd.v0[a] = v[a];
  for (int s = 0; s < 4; ++s) {
    double* vd = &rd.vd[s * nv];
    double* phid = &rd.phid[s * nv];
    if (s == 0) {
      for (int a = 0; a < nv; ++a) {
        rd.phi[a] = 0.0;
        rd.vs[a] = rd.v0[a];
      }
      for (int a = 0; a < nq; ++a) rd.qs[a] = rd.q0[a];
    } else {
      const double w = h * a_coef[s];
      const double* pd = &rd.phid[(s - 1) * nv];
      const double* pv = &rd.vd[(s - 1) * nv];
      for (int a = 0; a < nv; ++a) {
        rd.phi[a] = w * pd[a];
        rd.vs[a] = rd.v0[a] + w * pv[a];
      }
      global_coordinates(m, rd.q0.data(), rd.phi.data(), rd.qs.data());
    }
    rk4_dynamics(m, d, r, rd, t + a_coef[s] * h, rd.qs.data(), rd.vs.data(), u, control, vd);
    local_rates(m, rd.qs.data(), rd.phi.data(), rd.vs.data(), phid);
  }
  for (int a = 0; a < nv; ++a) {
    double sp = 0.0, sv = 0.0;
    for (int s = 0; s < 4; ++s) {
      sp += b_coef[s] * rd.phid[s * nv + a];
      sv += b_coef[s] * rd.vd[s * nv + a];
    }
    rd.phi[a] = h * sp;
    v[a] = rd.v0[a] + h * sv;
  }
  global_coordinates(m, rd.q0.data(), rd.phi.data(), q);
}

void rk4_bodies(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, const double* q, const double* v,
                double* z) {
  tree_forward_kinematics(m, d, q);
  tree_velocities(m, d, v);
  body_quaternions(m, r, rd, q);
  for (int i = 0; i < m.n; ++i) {
    if (r.in.body[i] < 0) continue;  // a frame between a universal or gimbal joint's axes
    double* s = z + 13 * r.in.body[i];
    // the centre of mass, its velocity, the quaternion and the body-frame angular velocity
    const Vec3<double> x = matvec(d.R[i], load3<double>(&m.body_com[3 * i])) + d.p[i];
    const Vec3<double> xd = velocity_at(d.ov[i], x);
    const Vec3<double> wb = tmatvec(d.R[i], d.ov[i].w);
    for (int k = 0; k < 3; ++k) {
      s[k] = x[k];
      s[3 + k] = xd[k];
      s[10 + k] = wb[k];
    }
    for (int k = 0; k < 4; ++k) s[6 + k] = rd.quat[4 * i + k];
  }
}

void rk4_loop_errors(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, const double* q, double* out) {
  tree_forward_kinematics(m, d, q);
  body_quaternions(m, r, rd, q);
  for (int l = 0; l < r.nl; ++l) {
    const int ka = r.in.loop_parent[l], kb = r.in.loop_child[l];
    double Pa[3] = {0.0, 0.0, 0.0}, Pb[3] = {0.0, 0.0, 0.0};
    double qa[4] = {1.0, 0.0, 0.0, 0.0}, qb[4] = {1.0, 0.0, 0.0, 0.0};
    for (int side = 0; side < 2; ++side) {
      const int k = side == 0 ? ka : kb;
      double* P = side == 0 ? Pa : Pb;
      const double* off = side == 0 ? &r.in.loop_pa[3 * l] : &r.in.loop_pb[3 * l];
      if (k < 0) {
        for (int a = 0; a < 3; ++a) P[a] = off[a];
        continue;
      }
      const Vec3<double> c{{m.body_com[3 * k] + off[0], m.body_com[3 * k + 1] + off[1], m.body_com[3 * k + 2] + off[2]}};
      const Vec3<double> x = matvec(d.R[k], c) + d.p[k];
      for (int a = 0; a < 3; ++a) P[a] = x[a];
      for (int a = 0; a < 4; ++a) (side == 0 ? qa : qb)[a] = rd.quat[4 * k + a];
    }
    double dist = 0.0;
    for (int a = 0; a < 3; ++a) dist += (Pb[a] - Pa[a]) * (Pb[a] - Pa[a]);
    out[2 * l] = std::sqrt(dist);
    // constrained rotational error: |b . log(off^* qa^* qb)| over the rotational rows
    const double* o = &r.in.loop_offset[4 * l];
    const double oc[4] = {o[0], -o[1], -o[2], -o[3]}, qac[4] = {qa[0], -qa[1], -qa[2], -qa[3]};
    double t4[4], qrel[4], rv[3];
    quat_mul(oc, qac, t4);
    quat_mul(t4, qb, qrel);
    quat_log(qrel, rv);
    double e = 0.0;
    for (int row = r.in.loop_row_start[l]; row < r.in.loop_row_start[l + 1]; ++row)
      if (r.in.row_rotational[row]) {
        const double* b = &r.in.row_basis[3 * row];
        e = std::fmax(e, std::fabs(b[0] * rv[0] + b[1] * rv[1] + b[2] * rv[2]));
      }
    out[2 * l + 1] = e;
  }
}

int rk4_run(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, double* q, double* v, double t0,
            double h, int n, const double* inputs, double* out_q, double* out_v, double* out_z, int cap, int row0,
            const Rk4Control* control) {
  if (cap < 1) throw std::invalid_argument("rk4_run: the output arrays have no rows");
  for (int k = 0; k < n; ++k) {
    const double* u = inputs ? inputs + static_cast<size_t>(k) * r.nu : nullptr;
    rk4_step(m, d, r, rd, t0 + k * h, h, q, v, u, control);
    const size_t row = static_cast<size_t>((row0 + k) % cap);
    for (int a = 0; a < m.nq; ++a) out_q[row * m.nq + a] = q[a];
    for (int a = 0; a < m.nv; ++a) out_v[row * m.nv + a] = v[a];
    bool finite = true;
    for (int a = 0; a < m.nv; ++a) finite = finite && std::isfinite(v[a]);
    for (int a = 0; a < m.nq; ++a) finite = finite && std::isfinite(q[a]);
    if (!finite) return k + 1;
    if (out_z) rk4_bodies(m, d, r, rd, q, v, out_z + row * 13 * r.nb);
  }
  return n;
}

}  // namespace dojo
