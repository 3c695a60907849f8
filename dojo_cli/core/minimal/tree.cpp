// The tree model, forward kinematics, velocity kinematics (E, E_T) and point
// kinematics (tree.h has the conventions).
#include "tree.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "math/dual.h"
#include "math/spatial.h"
#include "kinematics.h"

namespace dojo {

namespace {

// Row-major flat copy of a spatial.h matrix (the tree code keeps rotations as double[9]).
void store33(const Mat3<double>& a, double* out) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) out[3 * r + c] = a[r][c];
}

// R of a quaternion used as given, PinnZoo's quat_to_rot I + 2 s [v]x + 2 [v]x^2 (E and
// E_T read the configuration's quaternions unnormalised, as PinnZoo does): spatial.h's
// quadratic form has w^2 + x^2 - y^2 - z^2 = |q|^2 - 2 (y^2 + z^2) on the diagonal where
// PinnZoo's has 1 - 2 (y^2 + z^2), so the two differ by (|q|^2 - 1) I (zero for unit q).
void quat_rotation_as_given(const double* q, double* R) {
  store33(rotation(load4<double>(q)), R);
  const double excess = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] - 1.0;
  for (int k = 0; k < 3; ++k) R[4 * k] -= excess;
}

// R_J of a revolute joint i at q, row-major: the forward kinematics' (kinematics.h)
void revolute_rotation(const TreeModel& m, int i, const double* q, double* R) { store33(joint_rotation(m, i, q), R); }

// Raw-array faces of spatial.h's operations (row-major 3x3) for the velocity kinematics below.
void store3(const Vec3<double>& v, double* out) {
  for (int k = 0; k < 3; ++k) out[k] = v[k];
}

void mat3_mul(const double* A, const double* B, double* out) { store33(matmul(load33<double>(A), load33<double>(B)), out); }

void mat3_vec(const double* A, const double* x, double* out) { store3(matvec(load33<double>(A), load3<double>(x)), out); }

void mat3t_vec(const double* A, const double* x, double* out) {
  store3(tmatvec(load33<double>(A), load3<double>(x)), out);
}

void cross3(const double* a, const double* b, double* out) { store3(cross(load3<double>(a), load3<double>(b)), out); }

// d(R(q) y)/d[s, v] (3x4, row-major) for PinnZoo's R(q) = I + 2 s [v]x + 2 [v]x^2;
// transpose: the same for R(q)^T y (s -> -s).
void rotate_derivative(const double* q, const double* y, bool transpose, double* out) {
  const double s = transpose ? -q[0] : q[0];
  const double* v = q + 1;
  double vy[3];
  cross3(v, y, vy);
  // d/ds = 2 v x y (sign of s flips it for the transpose)
  const double sign = transpose ? -1.0 : 1.0;
  for (int r = 0; r < 3; ++r) out[4 * r] = sign * 2.0 * vy[r];
  // d/dv = -2 s [y]x - 2 [v x y]x - 2 [v]x [y]x
  const double yx[9] = {0.0, -y[2], y[1], y[2], 0.0, -y[0], -y[1], y[0], 0.0};
  const double vyx[9] = {0.0, -vy[2], vy[1], vy[2], 0.0, -vy[0], -vy[1], vy[0], 0.0};
  const double vx[9] = {0.0, -v[2], v[1], v[2], 0.0, -v[0], -v[1], v[0], 0.0};
  double vxyx[9];
  mat3_mul(vx, yx, vxyx);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) out[4 * r + 1 + k] = -2.0 * s * yx[3 * r + k] - 2.0 * vyx[3 * r + k] - 2.0 * vxyx[3 * r + k];
}

}  // namespace

TreeModel::TreeModel(const TreeInput& in) {
  n = static_cast<int>(in.parent.size());
  nq = in.nq;
  nv = in.nv;
  auto need = [&](size_t size, size_t per, const char* what) {
    if (size != per * static_cast<size_t>(n))
      throw std::invalid_argument(std::string("TreeInput.") + what + ": expected " + std::to_string(per * n) +
                                  " values, got " + std::to_string(size));
  };
  need(in.n_trans.size(), 1, "n_trans");
  need(in.trans_dirs.size(), 9, "trans_dirs");
  need(in.rot_kind.size(), 1, "rot_kind");
  need(in.axis.size(), 3, "axis");
  need(in.placement_rotation.size(), 4, "placement_rotation");
  need(in.placement_translation.size(), 3, "placement_translation");
  need(in.mass.size(), 1, "mass");
  need(in.com.size(), 3, "com");
  need(in.inertia.size(), 9, "inertia");
  need(in.idx_q.size(), 1, "idx_q");
  need(in.idx_v.size(), 1, "idx_v");
  if (in.gravity.size() != 3) throw std::invalid_argument("TreeInput.gravity: expected 3 values");
  for (int k = 0; k < 3; ++k) gravity[k] = in.gravity[k];
  parent = in.parent;
  n_trans = in.n_trans;
  rot_kind = in.rot_kind;
  idx_q = in.idx_q;
  idx_v = in.idx_v;
  trans_dirs = in.trans_dirs;
  axis = in.axis;
  placement_p = in.placement_translation;
  nq_i.resize(n);
  nv_i.resize(n);
  placement_R.resize(9 * n);
  S.assign(36 * n, 0.0);
  subtree.assign(n, {});
  int total_q = 0, total_v = 0;
  for (int i = 0; i < n; ++i) {
    if (parent[i] >= i || parent[i] < -1)
      throw std::invalid_argument("TreeInput.parent: joint " + std::to_string(i) + " must come after its parent");
    if (n_trans[i] < 0 || n_trans[i] > 3) throw std::invalid_argument("TreeInput.n_trans: 0..3");
    if (rot_kind[i] < 0 || rot_kind[i] > 3) throw std::invalid_argument("TreeInput.rot_kind: 0, 1, 2 or 3");
    static const int kRotQ[4] = {0, 1, 4, 2}, kRotV[4] = {0, 1, 3, 2};
    const int nr_q = kRotQ[rot_kind[i]];
    const int nr_v = kRotV[rot_kind[i]];
    nq_i[i] = n_trans[i] + nr_q;
    nv_i[i] = n_trans[i] + nr_v;
    total_q += nq_i[i];
    total_v += nv_i[i];
    if (idx_q[i] < 0 || idx_q[i] + nq_i[i] > nq || idx_v[i] < 0 || idx_v[i] + nv_i[i] > nv)
      throw std::invalid_argument("TreeInput.idx_q/idx_v: joint " + std::to_string(i) + " out of range");
    const double* pq = &in.placement_rotation[4 * i];
    const double norm = std::sqrt(pq[0] * pq[0] + pq[1] * pq[1] + pq[2] * pq[2] + pq[3] * pq[3]);
    const double qn[4] = {pq[0] / norm, pq[1] / norm, pq[2] / norm, pq[3] / norm};
    store33(rotation(load4<double>(qn)), &placement_R[9 * i]);
    // S: translations [dir; 0], then the rotation [0; axis] or [0; I] (successor frame)
    double* s = &S[36 * i];
    for (int c = 0; c < n_trans[i]; ++c)
      for (int k = 0; k < 3; ++k) s[6 * c + k] = trans_dirs[9 * i + 3 * c + k];
    if (rot_kind[i] == 1) {
      for (int k = 0; k < 3; ++k) s[6 * n_trans[i] + 3 + k] = axis[3 * i + k];
    } else if (rot_kind[i] == 2) {
      for (int k = 0; k < 3; ++k) s[6 * (n_trans[i] + k) + 3 + k] = 1.0;
    } else if (rot_kind[i] == 3) {  // at phi = 0 (J_r = I); variable: the forward kinematics computes it
      if (in.swing_axes.size() != 6 * static_cast<size_t>(n))
        throw std::invalid_argument("TreeInput.swing_axes: expected " + std::to_string(6 * n) +
                                    " values (a swing joint needs its two axes)");
      for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 3; ++k) s[6 * (n_trans[i] + c) + 3 + k] = in.swing_axes[6 * i + 3 * c + k];
    }
  }
  auto per_velocity = [&](const std::vector<double>& given, const char* what) {
    if (given.empty()) return std::vector<double>(nv, 0.0);
    if (given.size() != static_cast<size_t>(nv))
      throw std::invalid_argument(std::string("TreeInput.") + what + ": expected nv = " + std::to_string(nv) +
                                  " values or none, got " + std::to_string(given.size()));
    return given;
  };
  spring = per_velocity(in.spring, "spring");
  damper = per_velocity(in.damper, "damper");
  spring_offset = per_velocity(in.spring_offset, "spring_offset");
  armature = per_velocity(in.armature, "armature");
  for (double a : armature)
    if (!(a >= 0.0 && std::isfinite(a))) throw std::invalid_argument("TreeInput.armature: must be finite and >= 0");
  joint_frame_p.assign(3 * n, 0.0);
  joint_frame_q.assign(4 * n, 0.0);
  for (int i = 0; i < n; ++i) joint_frame_q[4 * i] = 1.0;
  if (!in.joint_frame_translation.empty()) {
    need(in.joint_frame_translation.size(), 3, "joint_frame_translation");
    joint_frame_p = in.joint_frame_translation;
  }
  if (!in.joint_frame_rotation.empty()) {
    need(in.joint_frame_rotation.size(), 4, "joint_frame_rotation");
    for (int i = 0; i < n; ++i) {
      const double* o = &in.joint_frame_rotation[4 * i];
      const double norm = std::sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
      if (!(norm > 0.0)) throw std::invalid_argument("TreeInput.joint_frame_rotation: a zero quaternion");
      for (int k = 0; k < 4; ++k) joint_frame_q[4 * i + k] = o[k] / norm;
    }
  }
  if (total_q != nq || total_v != nv)
    throw std::invalid_argument("TreeInput: nq/nv do not match the joints (" + std::to_string(total_q) + ", " +
                                std::to_string(total_v) + ")");
  trans_pred.assign(n, 0);
  if (!in.trans_pred.empty()) {
    need(in.trans_pred.size(), 1, "trans_pred");
    trans_pred = in.trans_pred;
  }
  swing_axes.assign(6 * n, 0.0);
  if (!in.swing_axes.empty()) {
    need(in.swing_axes.size(), 6, "swing_axes");
    swing_axes = in.swing_axes;
  }
  variable.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    if (trans_pred[i] && n_trans[i] == 0) trans_pred[i] = 0;
    if (rot_kind[i] == 3 && n_trans[i] > 0 && !trans_pred[i])
      throw std::invalid_argument("TreeInput.trans_pred: joint " + std::to_string(i) +
                                  " (a swing rotation with translations) must measure them in the predecessor frame");
    // translations in the predecessor frame turn in the successor frame with any rotation
    // (a revolute's too: skydy's [x, ry], the translation across the axis; S_t = R_J^T T^T)
    variable[i] = (trans_pred[i] && rot_kind[i] >= 1) || rot_kind[i] == 3;
  }
  axis_index.assign(n, -1);
  axis_sign.assign(n, 1.0);
  placement_identity.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    if (rot_kind[i] == static_cast<int>(TreeRotation::Revolute))
      for (int k = 0; k < 3; ++k) {
        const double* a = &axis[3 * i];
        if ((a[k] == 1.0 || a[k] == -1.0) && a[(k + 1) % 3] == 0.0 && a[(k + 2) % 3] == 0.0) {
          axis_index[i] = k;
          axis_sign[i] = a[k];
        }
      }
    bool identity = true;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) identity = identity && placement_R[9 * i + 3 * r + c] == (r == c ? 1.0 : 0.0);
    placement_identity[i] = identity;
  }
  for (int i = 0; i < n; ++i)
    for (int k = i; k >= 0; k = parent[k]) subtree[k].push_back(i);
  v_joint.assign(nv, 0);
  v_col.assign(nv, 0);
  support_start.assign(nv + 1, 0);
  support_v.clear();
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < nv_i[i]; ++c) {
      v_joint[idx_v[i] + c] = i;
      v_col[idx_v[i] + c] = 6 * i + c;
    }
  for (int k = 0; k < nv; ++k) {
    const int i = v_joint[k], c = v_col[k] - 6 * i;
    for (int r = c; r < nv_i[i]; ++r) support_v.push_back(idx_v[i] + r);
    for (int j = parent[i]; j >= 0; j = parent[j])
      for (int r = 0; r < nv_i[j]; ++r) support_v.push_back(idx_v[j] + r);
    support_start[k + 1] = static_cast<int>(support_v.size());
  }
  np = static_cast<int>(in.point_joint.size());
  if (in.point_offset.size() != 3 * in.point_joint.size()) throw std::invalid_argument("TreeInput.point_offset: 3 per point");
  for (int j : in.point_joint)
    if (j < 0 || j >= n) throw std::invalid_argument("TreeInput.point_joint: out of range");
  point_joint = in.point_joint;
  point_offset = in.point_offset;
  body_mass = in.mass;
  body_com = in.com;
  body_inertia = in.inertia;
  locked.assign(n, 0);
  if (!in.locked.empty()) {
    need(in.locked.size(), 1, "locked");
    for (int i = 0; i < n; ++i) locked[i] = in.locked[i] != 0;
  }
  locked_v.assign(nv, 0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < nv_i[i]; ++k) locked_v[idx_v[i] + k] = locked[i];
  for (int k = 0; k < nv; ++k) {
    if (locked_v[k]) any_locked = true;
    else free_v.push_back(k);
  }
}

TreeData::TreeData(const TreeModel& m) {
  const size_t n = static_cast<size_t>(m.n), nv = static_cast<size_t>(m.nv);
  resize(m);
  Yc.assign(n, Inertia<double>{0.0, zero3<double>(), identity3<double>()});
  Bc.assign(n, InertiaVariation{zero3<double>(), identity3<double>()});
  dVdq.assign(6 * n, zero_motion<double>());
  dAdq = dAdv = psi = dVdq;
  P.assign(6 * n, zero_force<double>());
  Q = Delta = DeltaV = P;
  IA.assign(36 * n, 0.0);
  U.assign(6 * n, zero_force<double>());
  Dinv.assign(36 * n, 0.0);
  pA.assign(n, zero_force<double>());
  c.assign(n, zero_motion<double>());
  u.assign(6 * n, 0.0);
  qdot.assign(static_cast<size_t>(m.nq), 0.0);
  vdot.assign(nv, 0.0);
  v.assign(nv, 0.0);
  M.assign(nv * nv, 0.0);
  Minv.assign(nv * nv, 0.0);
  L.assign(nv * nv, 0.0);
  dtau_dq.assign(nv * nv, 0.0);
  dtau_dv.assign(nv * nv, 0.0);
  work.assign(nv * nv, 0.0);
  work2.assign(nv * nv, 0.0);
  v_held.assign(nv, 0.0);
  lock_tau.assign(nv, 0.0);
  Mff.assign(m.any_locked ? m.free_v.size() * m.free_v.size() : 0, 0.0);
  second.resize(m);
}

const double* tree_held_velocities(const TreeModel& m, TreeData& d, const double* v) {
  if (!m.any_locked) return v;
  for (int k = 0; k < m.nv; ++k) d.v_held[k] = m.locked_v[k] ? 0.0 : v[k];
  return d.v_held.data();
}

void tree_forward_kinematics(const TreeModel& m, TreeData& d, const double* q) { forward_kinematics(m, d, q); }

void tree_velocities(const TreeModel& m, TreeData& d, const double* v) {
  for (int k = 0; k < m.nv; ++k) d.v[k] = v[k];
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i];
    const Motion<double> vj = joint_velocity(m, d, i, v);
    d.ov[i] = lam < 0 ? vj : d.ov[lam] + vj;
  }
}

namespace {

// E (transpose = false: qdot = E v, (nq, nv)) or E_T (transpose = true: v = E_T qdot,
// (nv, nq)), per joint: translations T R_J T^T (E) and T R_J^T T^T (E_T); a revolute
// angle 1; a quaternion 1/2 G(q) (E) and 2 G(q)^T (E_T), G = [-v^T; s I + [v]x]
// (PinnZoo's attitude_jacobian), so that E_T E = I.
void velocity_kinematics(const TreeModel& m, const double* q, bool transpose, double* out) {
  const int cols = transpose ? m.nq : m.nv;
  for (int k = 0; k < m.nq * m.nv; ++k) out[k] = 0.0;
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], iv = m.idx_v[i];
    const int row0 = transpose ? iv : iq, col0 = transpose ? iq : iv;
    double RJ[9];
    if (m.rot_kind[i] == 1) {
      revolute_rotation(m, i, q, RJ);
    } else if (m.rot_kind[i] == 2) {
      quat_rotation_as_given(q + iq + nt, RJ);
    }
    const double* T = &m.trans_dirs[9 * i];
    for (int r = 0; r < nt; ++r)
      for (int c = 0; c < nt; ++c) {
        double s = 0.0;
        if (m.trans_pred[i]) {
          s = r == c ? 1.0 : 0.0;  // q_t' = v_t
        } else if (m.rot_kind[i] == 0) {
          s = T[3 * r] * T[3 * c] + T[3 * r + 1] * T[3 * c + 1] + T[3 * r + 2] * T[3 * c + 2];
        } else {
          double rt[3];
          (transpose ? mat3t_vec : mat3_vec)(RJ, T + 3 * c, rt);
          s = T[3 * r] * rt[0] + T[3 * r + 1] * rt[1] + T[3 * r + 2] * rt[2];
        }
        out[(row0 + r) * cols + col0 + c] = s;
      }
    if (m.rot_kind[i] == 1) {
      out[(row0 + nt) * cols + col0 + nt] = 1.0;
    } else if (m.rot_kind[i] == 3) {
      out[(row0 + nt) * cols + col0 + nt] = out[(row0 + nt + 1) * cols + col0 + nt + 1] = 1.0;
    } else if (m.rot_kind[i] == 2) {
      const double* qq = q + iq + nt;
      const double G[12] = {-qq[1], -qq[2], -qq[3], qq[0], -qq[3], qq[2], qq[3], qq[0], -qq[1], -qq[2], qq[1], qq[0]};
      if (!transpose) {
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 3; ++c) out[(row0 + nt + r) * cols + col0 + nt + c] = 0.5 * G[3 * r + c];
      } else {
        for (int r = 0; r < 3; ++r)
          for (int c = 0; c < 4; ++c) out[(row0 + nt + r) * cols + col0 + nt + c] = 2.0 * G[3 * c + r];
      }
    }
  }
}

}  // namespace

void tree_velocity_kinematics(const TreeModel& m, const double* q, double* E) {
  velocity_kinematics(m, q, false, E);
}

void tree_velocity_kinematics_T(const TreeModel& m, const double* q, double* ET) {
  velocity_kinematics(m, q, true, ET);
}

namespace {

// d(E v)/dx (transpose = false) or d(E_T y)/dx (transpose = true), rows nq or nv, columns nx.
void velocity_kinematics_jvp(const TreeModel& m, const double* q, const double* y, bool transpose, double* out) {
  const int nx = m.nq + m.nv;
  const int rows = transpose ? m.nv : m.nq;
  for (int k = 0; k < rows * nx; ++k) out[k] = 0.0;
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], iv = m.idx_v[i];
    if (m.rot_kind[i] == 0) continue;
    const double* T = &m.trans_dirs[9 * i];
    const int row0 = transpose ? iv : iq;
    const int in0 = transpose ? iq : iv;  // where the joint's part of y starts
    // translation rows: d(T R_J(^T) T^T y_t)/d(rotation coordinates)
    double yt[3] = {0.0, 0.0, 0.0};
    for (int c = 0; c < nt; ++c)
      for (int k = 0; k < 3; ++k) yt[k] += T[3 * c + k] * y[in0 + c];
    if (m.rot_kind[i] == 3) continue;  // E = I
    if (nt > 0 && !m.trans_pred[i]) {
      if (m.rot_kind[i] == 1) {
        // d(R_J)/dtheta = [a]x R_J; d(R_J^T)/dtheta = -R_J^T [a]x
        double RJ[9], r[3], ar[3];
        revolute_rotation(m, i, q, RJ);
        const double* a = &m.axis[3 * i];
        if (!transpose) {
          mat3_vec(RJ, yt, r);
          cross3(a, r, ar);
        } else {
          cross3(a, yt, r);
          mat3t_vec(RJ, r, ar);
          for (int k = 0; k < 3; ++k) ar[k] = -ar[k];
        }
        for (int rr = 0; rr < nt; ++rr)
          out[(row0 + rr) * nx + iq + nt] = T[3 * rr] * ar[0] + T[3 * rr + 1] * ar[1] + T[3 * rr + 2] * ar[2];
      } else {
        double D[12];
        rotate_derivative(q + iq + nt, yt, transpose, D);
        for (int rr = 0; rr < nt; ++rr)
          for (int c = 0; c < 4; ++c)
            out[(row0 + rr) * nx + iq + nt + c] = T[3 * rr] * D[c] + T[3 * rr + 1] * D[4 + c] + T[3 * rr + 2] * D[8 + c];
      }
    }
    if (m.rot_kind[i] == 2) {
      const double* yr = y + in0 + nt;
      if (!transpose) {
        // 1/2 G(q) w = 1/2 [-v.w; s w + v x w]: d/ds = 1/2 [0; w], d/dv = 1/2 [-w^T; -[w]x]
        const double* w = yr;
        double* o = out + (row0 + nt) * nx + iq + nt;
        o[0] = 0.0;
        o[1] = -0.5 * w[0];
        o[2] = -0.5 * w[1];
        o[3] = -0.5 * w[2];
        const double wx[9] = {0.0, -w[2], w[1], w[2], 0.0, -w[0], -w[1], w[0], 0.0};
        for (int r = 0; r < 3; ++r) {
          o[(1 + r) * nx] = 0.5 * w[r];
          for (int c = 0; c < 3; ++c) o[(1 + r) * nx + 1 + c] = -0.5 * wx[3 * r + c];
        }
      } else {
        // 2 G(q)^T y = 2 [-v y0 + s yv - v x yv]: d/ds = 2 yv, d/dv = 2 (-y0 I + [yv]x)
        const double y0 = yr[0];
        const double* yv = yr + 1;
        const double yx[9] = {0.0, -yv[2], yv[1], yv[2], 0.0, -yv[0], -yv[1], yv[0], 0.0};
        double* o = out + (row0 + nt) * nx + iq + nt;
        for (int r = 0; r < 3; ++r) {
          o[r * nx] = 2.0 * yv[r];
          for (int c = 0; c < 3; ++c) o[r * nx + 1 + c] = 2.0 * ((r == c ? -y0 : 0.0) + yx[3 * r + c]);
        }
      }
    }
  }
}

}  // namespace

void tree_velocity_kinematics_jvp_deriv(const TreeModel& m, const double* q, const double* v, double* out) {
  velocity_kinematics_jvp(m, q, v, false, out);
}

void tree_velocity_kinematics_T_jvp_deriv(const TreeModel& m, const double* q, const double* y, double* out) {
  velocity_kinematics_jvp(m, q, y, true, out);
}

void tree_tangent_to_raw(const TreeModel& m, const TreeData& d, const double* A, int rows, double* out, int ld_out) {
  const int nv = m.nv;
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], iv = m.idx_v[i];
    const double* T = &m.trans_dirs[9 * i];
    const Mat3<double>& RJ = d.RJ[i];
    // d(tangent)/d(raw): translations T R_J^T T^T; revolute 1; quaternion 2 G(q^)^T / |q|
    double Et[6 * 7] = {0.0};
    const int nqi = m.nq_i[i], nvi = m.nv_i[i];
    for (int r = 0; r < nt; ++r)
      for (int c = 0; c < nt; ++c) {
        const Vec3<double> rt = tmatvec(RJ, load3<double>(T + 3 * c));
        Et[r * nqi + c] = m.trans_pred[i] ? (r == c ? 1.0 : 0.0)
                                          : T[3 * r] * rt[0] + T[3 * r + 1] * rt[1] + T[3 * r + 2] * rt[2];
      }
    if (m.rot_kind[i] == 1) {
      Et[nt * nqi + nt] = 1.0;
    } else if (m.rot_kind[i] == 3) {
      Et[nt * nqi + nt] = Et[(nt + 1) * nqi + nt + 1] = 1.0;
    } else if (m.rot_kind[i] == 2) {
      const double norm = d.qnorm[i];
      const double* qq = &d.q[iq + nt];  // normalised
      const double G[12] = {-qq[1], -qq[2], -qq[3], qq[0], -qq[3], qq[2], qq[3], qq[0], -qq[1], -qq[2], qq[1], qq[0]};
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) Et[(nt + r) * nqi + nt + c] = 2.0 * G[3 * c + r] / norm;
    }
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < nqi; ++c) {
        double s = 0.0;
        for (int k = 0; k < nvi; ++k) s += A[r * nv + iv + k] * Et[k * nqi + c];
        out[r * ld_out + iq + c] = s;
      }
  }
}

void tree_point_positions(const TreeModel& m, const TreeData& d, double* pos) {
  for (int k = 0; k < m.np; ++k) {
    const Vec3<double> x = point_position(m, d, k);
    for (int r = 0; r < 3; ++r) pos[3 * k + r] = x[r];
  }
}

void tree_point_velocities(const TreeModel& m, const TreeData& d, double* vel) {
  for (int k = 0; k < m.np; ++k) {
    const Vec3<double> x = velocity_at(d.ov[m.point_joint[k]], point_position(m, d, k));
    for (int r = 0; r < 3; ++r) vel[3 * k + r] = x[r];
  }
}

void tree_frame_wrench(const TreeModel& m, const TreeData& d, int k, const double* offset, const double* f,
                       const double* t, double* tau) {
  const Mat3<double>& R = d.R[k];
  const Vec3<double> F = matvec(R, load3<double>(f));
  const Vec3<double> c = matvec(R, load3<double>(offset)) + d.p[k];
  const Force<double> w{F, cross(c, F) + matvec(R, load3<double>(t))};
  for (int j = k; j >= 0; j = m.parent[j])
    for (int s = 0; s < m.nv_i[j]; ++s) tau[m.idx_v[j] + s] += dot(d.J[6 * j + s], w);
}

void tree_point_jacobian(const TreeModel& m, const TreeData& d, double* jac) { point_jacobian(m, d, jac); }

void tree_point_velocity_jacobian(const TreeModel& m, const TreeData& d, double* jac) {
  // d(point velocity)/d(delta_j) for j on the point's path: the subtree of j moves by
  // xi = J_j^s, so v_i changes by xi x (v_i - v_parent(j)) and the point by xi at pos.
  const int nv = m.nv;
  JointVariation var;
  for (int k = 0; k < 3 * m.np * nv; ++k) jac[k] = 0.0;
  for (int k = 0; k < m.np; ++k) {
    const int i = m.point_joint[k];
    const Vec3<double> pos = point_position(m, d, k);
    const Motion<double>& vi = d.ov[i];
    for (int j = i; j >= 0; j = m.parent[j]) {
      const int lam = m.parent[j];
      const Motion<double> w = lam < 0 ? vi : vi - d.ov[lam];
      // a variable S_j also changes the joint's own velocity: by X_j (dS_j/ds) v_j
      if (m.variable[j]) tree_joint_variation(m, d, j, d.v.data(), nullptr, var);
      for (int s = 0; s < m.nv_i[j]; ++s) {
        const Motion<double>& xi = d.J[6 * j + s];
        Motion<double> dv = cross(xi, w);
        if (m.variable[j]) dv += var.dSv[s];
        const Vec3<double> col = velocity_at(dv, pos) + cross(vi.w, velocity_at(xi, pos));
        for (int r = 0; r < 3; ++r) jac[(3 * k + r) * nv + m.idx_v[j] + s] = col[r];
      }
    }
  }
}

void tree_point_force_jacobian(const TreeModel& m, TreeData& d, const double* lambda, double* jac) {
  // tau = J_v^T lambda: tau_k = J_k^T F_k, F_k the wrenches (world origin) of the
  // points below k. Moving the subtree of j by xi: for k at or below j, J_k moves with
  // it and the world force does not: d tau_k = -J_k^T [w x l; pos x (w x l)] (w the
  // angular part of xi); for k above j only the point moves: J_k^T [0; dpos x l].
  const int nv = m.nv;
  JointVariation var;
  for (int k = 0; k < nv * nv; ++k) jac[k] = 0.0;
  int path[256];
  for (int k = 0; k < m.np; ++k) {
    const Vec3<double> l = load3<double>(lambda + 3 * k);
    const Vec3<double> pos = point_position(m, d, k);
    int depth = 0;
    for (int j = m.point_joint[k]; j >= 0; j = m.parent[j]) {
      if (depth == 256) throw std::invalid_argument("tree deeper than 256 joints");
      path[depth++] = j;
    }
    for (int a = 0; a < depth; ++a) {
      const int j = path[a];
      if (m.variable[j]) {
        // J_j's own columns change with q_j beyond the subtree's rigid motion: d tau_j += (X dS/ds)^T F
        tree_joint_variation(m, d, j, d.v.data(), nullptr, var);
        const Force<double> F{l, cross(pos, l)};
        for (int s = 0; s < m.nv_i[j]; ++s)
          for (int r = 0; r < m.nv_i[j]; ++r) jac[(m.idx_v[j] + r) * nv + m.idx_v[j] + s] += dot(var.dS[s][r], F);
      }
      for (int s = 0; s < m.nv_i[j]; ++s) {
        const Motion<double>& xi = d.J[6 * j + s];
        const Vec3<double> wl = cross(xi.w, l);
        const Force<double> below{-wl, -cross(pos, wl)};
        const Force<double> above{zero3<double>(), cross(velocity_at(xi, pos), l)};
        for (int b = 0; b < depth; ++b) {
          const int kk = path[b];
          const Force<double>& f = b <= a ? below : above;
          for (int r = 0; r < m.nv_i[kk]; ++r) jac[(m.idx_v[kk] + r) * nv + m.idx_v[j] + s] += dot(d.J[6 * kk + r], f);
        }
      }
    }
  }
}

void tree_swing_jacobian(const TreeModel& m, int i, const double* qr, double A[3][2], double dA[2][3][2],
                         double d2A[2][2][3][2]) {
  using D1 = Dual<double, 2>;
  using D2 = Dual<D1, 2>;
  const double* b = &m.swing_axes[6 * i];
  D2 q[2];
  for (int k = 0; k < 2; ++k) {
    q[k].v = D1::variable(qr[k], k);
    q[k].d[k] = D1(1.0);
  }
  Vec3<D2> phi;
  for (int r = 0; r < 3; ++r) phi[r] = b[r] * q[0] + b[3 + r] * q[1];
  const Mat3<D2> Jr = right_jacobian(phi);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) {
      const D2 e = Jr[r][0] * b[3 * c] + Jr[r][1] * b[3 * c + 1] + Jr[r][2] * b[3 * c + 2];
      A[r][c] = e.v.v;
      if (dA)
        for (int k = 0; k < 2; ++k) dA[k][r][c] = e.d[k].v;
      if (d2A)
        for (int k = 0; k < 2; ++k)
          for (int l = 0; l < 2; ++l) d2A[k][l][r][c] = e.d[k].d[l];
    }
}

void tree_joint_variation(const TreeModel& m, const TreeData& d, int i, const double* v, const double* a,
                          JointVariation& out) {
  using M6 = Motion<double>;
  using V3 = Vec3<double>;
  const int nt = m.n_trans[i], iv = m.idx_v[i], nvi = m.nv_i[i], rk = m.rot_kind[i];
  const int nr = nvi - nt;
  const bool swing = rk == static_cast<int>(TreeRotation::Swing);
  // local (successor-frame) quantities, then mapped to the world
  M6 dS[6][6], dSv[6], dSa[6], dbq[6], dbv[6];
  for (int s = 0; s < 6; ++s) {
    dSv[s] = dSa[s] = dbq[s] = dbv[s] = zero_motion<double>();
    for (int c = 0; c < 6; ++c) dS[s][c] = zero_motion<double>();
  }
  const M6* S = &d.S[6 * i];
  const double* vr = v + iv + nt;
  double A[3][2] = {}, dA[2][3][2] = {}, d2A[2][2][3][2] = {};
  if (swing) tree_swing_jacobian(m, i, &d.q[m.idx_q[i] + nt], A, dA, d2A);
  // u = R_J^T T^T v_t (translation velocity), w = angular velocity, successor frame
  V3 u = zero3<double>(), w = zero3<double>();
  for (int c = 0; c < nvi; ++c) {
    u = u + v[iv + c] * S[c].v;
    w = w + v[iv + c] * S[c].w;
  }
  if (!m.trans_pred[i]) u = zero3<double>();
  for (int r = 0; r < nr; ++r) {
    const int s = nt + r;
    // a_r: the body rotation per unit tangent r (A e_r for a swing, e_r for a quaternion)
    const V3 ar = S[s].w;
    V3 dAv = zero3<double>();  // (dA/dq_r) v_r
    if (swing)
      for (int k = 0; k < 3; ++k) dAv[k] = dA[r][k][0] * vr[0] + dA[r][k][1] * vr[1];
    // dS/ds: translation columns -a_r x (R_J^T T_c); swing columns dA_r e_k
    if (m.trans_pred[i])
      for (int c = 0; c < nt; ++c) dS[s][c].v = -cross(ar, S[c].v);
    if (swing)
      for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 3; ++k) dS[s][nt + c].w[k] = dA[r][k][c];
    for (int c = 0; c < nvi; ++c) {
      dSv[s] += v[iv + c] * dS[s][c];
      if (a) dSa[s] += a[iv + c] * dS[s][c];
    }
    // d beta/ds: translation -(dA_r v_r) x u + w x (a_r x u); swing sum_k d2A_rk v_k v_r
    if (m.trans_pred[i]) dbq[s].v = cross(w, cross(ar, u)) - cross(dAv, u);
    if (swing)
      for (int k = 0; k < 2; ++k)
        for (int e = 0; e < 3; ++e) dbq[s].w[e] += vr[k] * (d2A[r][k][e][0] * vr[0] + d2A[r][k][e][1] * vr[1]);
    // d beta/dv_s (rotation velocity r): translation -a_r x u; swing dA_r v_r + sum_k dA_k v_k e_r
    if (m.trans_pred[i]) dbv[s].v = -cross(ar, u);
    if (swing)
      for (int e = 0; e < 3; ++e) dbv[s].w[e] = dAv[e] + dA[0][e][r] * vr[0] + dA[1][e][r] * vr[1];
  }
  // d beta/dv_c (translation velocity c): -w x (R_J^T T_c)
  if (m.trans_pred[i])
    for (int c = 0; c < nt; ++c) dbv[c].v = -cross(w, S[c].v);
  const Transform<double> X{d.R[i], d.p[i]};
  for (int s = 0; s < nvi; ++s) {
    for (int c = 0; c < nvi; ++c) out.dS[s][c] = act(X, dS[s][c]);
    out.dSv[s] = act(X, dSv[s]);
    out.dSa[s] = act(X, dSa[s]);
    out.dbq[s] = act(X, dbq[s]);
    out.dbv[s] = act(X, dbv[s]);
  }
}

}  // namespace dojo
