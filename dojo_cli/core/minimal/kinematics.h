// The tree's forward kinematics, the joints' bias accelerations, the point kinematics and
// RNEA, written once over the scalar T on spatial.h's types (tree.h's TreeState<T>):
// T = double in TreeData (tree_forward_kinematics, tree_rnea and every algorithm that reads
// their placements, Jacobians and inertias), T = nested dual numbers for PinnZoo's
// second-order products (tree_second_order.cpp), which differentiate this same code.
//
// Joint kinds (tree.h TreeRotation): a new kind adds one case to joint_rotation (its R_J),
// and, when its motion subspace turns with q, one to joint_subspace (S_i(q)) and to
// joint_bias (Sdot_i v_i); TreeModel's constructor gives its sizes and its constant S_i.
#pragma once

#include <stdexcept>

#include "math/dual.h"
#include "math/spatial.h"
#include "tree.h"

namespace dojo {

// |q| of a configuration's quaternion (4 entries at qq); zero or not finite is an error.
template <class T>
T quaternion_norm(const T* qq) {
  const T norm = sqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
  if (!(value(norm) > 0.0)) throw std::invalid_argument("a quaternion of the configuration is zero or not finite");
  return norm;
}

// A swing joint's rotation vector phi = b1 q1 + b2 q2 (tree.h TreeRotation::Swing).
template <class T>
Vec3<T> swing_vector(const TreeModel& m, int i, const T* q) {
  const int iq = m.idx_q[i] + m.n_trans[i];
  const double* b = &m.swing_axes[6 * i];
  Vec3<T> phi;
  for (int k = 0; k < 3; ++k) phi[k] = b[k] * q[iq] + b[3 + k] * q[iq + 1];
  return phi;
}

// The rotation by an angle with cosine c and sine s about the coordinate axis e_K: it mixes
// the other two axes K1 = K + 1, K2 = K + 2 (mod 3) (a revolute joint about +-e_k,
// TreeModel.axis_index; s carries the axis' sign). K is a template parameter so that every
// index is a constant (a run-time index kept the matrices in memory: store-forwarding stalls).
template <int K, class T>
Mat3<T> coordinate_rotation(const T& c, const T& s) {
  constexpr int K1 = (K + 1) % 3, K2 = (K + 2) % 3;
  Mat3<T> R;
  R[K][K] = T(1.0);
  R[K][K1] = R[K][K2] = R[K1][K] = R[K2][K] = T(0.0);
  R[K1][K1] = c;
  R[K1][K2] = -s;
  R[K2][K1] = s;
  R[K2][K2] = c;
  return R;
}
template <class T>
Mat3<T> coordinate_rotation(int k, const T& c, const T& s) {
  return k == 0 ? coordinate_rotation<0>(c, s) : k == 1 ? coordinate_rotation<1>(c, s) : coordinate_rotation<2>(c, s);
}

// A R for that rotation R: columns K1, K2 of A mixed, column K kept (12 products, not 27)
template <int K, class T>
Mat3<T> times_coordinate_rotation(const Mat3<T>& A, const T& c, const T& s) {
  constexpr int K1 = (K + 1) % 3, K2 = (K + 2) % 3;
  Mat3<T> out;
  for (int r = 0; r < 3; ++r) {
    out[r][K] = A[r][K];
    out[r][K1] = c * A[r][K1] + s * A[r][K2];
    out[r][K2] = c * A[r][K2] - s * A[r][K1];
  }
  return out;
}
template <class T>
Mat3<T> times_coordinate_rotation(const Mat3<T>& A, int k, const T& c, const T& s) {
  return k == 0   ? times_coordinate_rotation<0>(A, c, s)
         : k == 1 ? times_coordinate_rotation<1>(A, c, s)
                  : times_coordinate_rotation<2>(A, c, s);
}

// R_J of tree joint i at the configuration q (nq,), a quaternion used as q/|q|.
template <class T>
Mat3<T> joint_rotation(const TreeModel& m, int i, const T* q) {
  const int nt = m.n_trans[i], iq = m.idx_q[i];
  switch (static_cast<TreeRotation>(m.rot_kind[i])) {
    case TreeRotation::None:
      return identity3<T>();
    case TreeRotation::Revolute:
      if (m.axis_index[i] >= 0)
        return coordinate_rotation(m.axis_index[i], cos(q[iq + nt]), m.axis_sign[i] * sin(q[iq + nt]));
      return axis_rotation(load3<double>(&m.axis[3 * i]), q[iq + nt]);
    case TreeRotation::Swing:
      return rotation(quaternion_from_rotation_vector(swing_vector(m, i, q)));
    case TreeRotation::Quaternion: {
      const T* qq = q + iq + nt;
      const T norm = quaternion_norm(qq);
      return rotation(Quat<T>{{qq[0] / norm, qq[1] / norm, qq[2] / norm, qq[3] / norm}});
    }
  }
  throw std::logic_error("joint_rotation: unknown rotation kind");
}

// S_i(q) of a variable joint (TreeModel.variable), successor frame, after joint_rotation:
// translation columns R_J^T T^T when measured in the predecessor frame, a swing's rotation
// columns J_r(phi) [b1 b2] (J_r the right Jacobian of SO(3)).
template <class T>
void joint_subspace(const TreeModel& m, TreeState<T>& s, int i) {
  const int nt = m.n_trans[i];
  Motion<T>* S = &s.S[6 * i];
  if (m.trans_pred[i])
    for (int c = 0; c < nt; ++c) S[c].v = tmatvec(s.RJ[i], load3<T>(&m.trans_dirs[9 * i + 3 * c]));
  if (m.rot_kind[i] == static_cast<int>(TreeRotation::Swing)) {
    const double* b = &m.swing_axes[6 * i];
    const Mat3<T> Jr = right_jacobian(s.phi[i]);
    for (int c = 0; c < 2; ++c) S[nt + c].w = matvec(Jr, load3<T>(b + 3 * c));
  }
}

// Placements R_i, p_i (world), motion subspaces S_i(q), world Jacobian columns J_i = X_i S_i
// and, with inertias, the bodies' world inertias Y_i, at the configuration q (nq,).
template <class T>
void forward_kinematics(const TreeModel& m, TreeState<T>& s, const T* q, bool inertias = true) {
  for (int k = 0; k < m.nq; ++k) s.q[k] = q[k];
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i];
    // R_J (a revolute joint about a coordinate axis: its cosine and sine, for the product below)
    const int ax = m.rot_kind[i] == static_cast<int>(TreeRotation::Revolute) ? m.axis_index[i] : -1;
    // Each result is computed in a local and then stored (s.RJ, s.R, s.p): written as
    // `const Mat3<T> R = s.R[i] = ...` the compiler read the member back right after its
    // 8-byte stores with 16-byte loads, a store-forwarding stall (perf: some 40 % of this
    // function's samples on Go1 were those loads).
    T cj(1.0), sj(0.0);
    const bool quaternion = m.rot_kind[i] == static_cast<int>(TreeRotation::Quaternion);
    Mat3<T> RJ;
    if (ax >= 0) {
      cj = cos(q[iq + nt]);
      sj = m.axis_sign[i] * sin(q[iq + nt]);
      RJ = coordinate_rotation(ax, cj, sj);
    } else if (quaternion) {
      // the unit quaternion and its norm (what the derivatives read), then joint_rotation's R
      // from them (one normalisation)
      const T norm = quaternion_norm(q + iq + nt);
      s.qnorm[i] = norm;
      Quat<T> unit;
      for (int k = 0; k < 4; ++k) s.q[iq + nt + k] = unit[k] = q[iq + nt + k] / norm;
      RJ = rotation(unit);
    } else {
      RJ = joint_rotation(m, i, q);
    }
    s.RJ[i] = RJ;
    if (m.rot_kind[i] == static_cast<int>(TreeRotation::Swing)) s.phi[i] = swing_vector(m, i, q);
    // joint translation p_J = T^T q_t (predecessor frame)
    Vec3<T> pJ = zero3<T>();
    for (int c = 0; c < nt; ++c)
      for (int k = 0; k < 3; ++k) pJ[k] += m.trans_dirs[9 * i + 3 * c + k] * q[iq + c];
    // predecessor frame in the world: the parent's placement times X_T
    const int lam = m.parent[i];
    Mat3<T> Rpre = load33<T>(&m.placement_R[9 * i]);
    Vec3<T> ppre = load3<T>(&m.placement_p[3 * i]);
    if (lam >= 0) {
      Rpre = m.placement_identity[i] ? s.R[lam] : matmul(s.R[lam], Rpre);
      ppre = matvec(s.R[lam], ppre) + s.p[lam];
    }
    const Mat3<T> R = ax >= 0 ? times_coordinate_rotation(Rpre, ax, cj, sj) : matmul(Rpre, RJ);
    const Vec3<T> p = nt ? matvec(Rpre, pJ) + ppre : ppre;
    s.R[i] = R;
    s.p[i] = p;
    if (m.variable[i]) joint_subspace(m, s, i);
    // world Jacobian columns X_i S_i = [R s_v + p x R s_w; R s_w]. A translation column has
    // s_w = 0 and a rotation column s_v = 0 (tree.h), so each takes one 3x3 product.
    for (int c = 0; c < nt; ++c) s.J[6 * i + c] = Motion<T>{matvec(R, s.S[6 * i + c].v), zero3<T>()};
    for (int c = nt; c < m.nv_i[i]; ++c) {
      // a quaternion's columns are e_k: R e_k is R's column k; a revolute joint's about +-e_k
      // is +-R's column k (the same numbers as the product, with no multiplications by zero)
      Vec3<T> w;
      if (quaternion) w = Vec3<T>{{R[0][c - nt], R[1][c - nt], R[2][c - nt]}};
      else if (ax >= 0) w = Vec3<T>{{m.axis_sign[i] * R[0][ax], m.axis_sign[i] * R[1][ax], m.axis_sign[i] * R[2][ax]}};
      else w = matvec(R, s.S[6 * i + c].w);
      s.J[6 * i + c] = Motion<T>{cross(p, w), w};
    }
    if (!inertias) continue;
    // world inertia from the mass, the world centre R c + p and R Ic R^T (symmetric: its
    // upper triangle, mirrored)
    const Mat3<T> RIc = matmul(R, load33<T>(&m.body_inertia[9 * i]));
    Mat3<T> Ic;
    for (int r = 0; r < 3; ++r)
      for (int k = r; k < 3; ++k) Ic[r][k] = Ic[k][r] = RIc[r][0] * R[k][0] + RIc[r][1] * R[k][1] + RIc[r][2] * R[k][2];
    const Vec3<T> cw = matvec(R, load3<T>(&m.body_com[3 * i])) + p;
    s.Y[i] = body_inertia(T(m.body_mass[i]), cw, Ic);
  }
}

// The bias X_i Sdot_i v_i of a variable motion subspace, world (the part of the joint's
// acceleration that S_i's change along the motion adds to J_i v_i'), after the forward
// kinematics; zero for a constant S_i. Translations in the predecessor frame give -w x u
// (successor frame; d/dt R_J^T T^T v_t); a swing Adot v_r, A = J_r(phi) [b1 b2] differentiated
// along phi' = b1 v1 + b2 v2 by one more dual level (exact at any nesting of T).
template <class T>
Motion<T> joint_bias(const TreeModel& m, const TreeState<T>& s, int i, const T* v) {
  if (!m.variable[i]) return zero_motion<T>();
  const int nt = m.n_trans[i], iv = m.idx_v[i];
  Vec3<T> u = zero3<T>(), w = zero3<T>();  // translation velocity, angular velocity (successor)
  for (int c = 0; c < m.nv_i[i]; ++c) {
    u = u + v[iv + c] * s.S[6 * i + c].v;
    w = w + v[iv + c] * s.S[6 * i + c].w;
  }
  Motion<T> beta = zero_motion<T>();
  if (m.trans_pred[i]) beta.v = -cross(w, u);
  if (m.rot_kind[i] == static_cast<int>(TreeRotation::Swing)) {
    using E = Dual<T, 1>;
    const double* b = &m.swing_axes[6 * i];
    Vec3<E> phi;
    for (int k = 0; k < 3; ++k) {
      phi[k] = E(s.phi[i][k]);
      phi[k].d[0] = b[k] * v[iv + nt] + b[3 + k] * v[iv + nt + 1];
    }
    const Mat3<E> Jr = right_jacobian(phi);
    for (int c = 0; c < 2; ++c) {
      const Vec3<E> col = matvec(Jr, load3<E>(b + 3 * c));
      for (int k = 0; k < 3; ++k) beta.w[k] += col[k].d[0] * v[iv + nt + c];
    }
  }
  const Vec3<T> ww = matvec(s.R[i], beta.w);
  return Motion<T>{matvec(s.R[i], beta.v) + cross(s.p[i], ww), ww};
}

// J_i v_i: joint i's velocity across it (world).
template <class T>
Motion<T> joint_velocity(const TreeModel& m, const TreeState<T>& s, int i, const T* v) {
  Motion<T> out = zero_motion<T>();
  const int iv = m.idx_v[i];
  for (int c = 0; c < m.nv_i[i]; ++c) out += v[iv + c] * s.J[6 * i + c];
  return out;
}

// Inverse dynamics by the recursive Newton-Euler algorithm (Featherstone, RBDA algorithm 5.1)
// in the world frame (tree.h): tau = M(q) a + C(q, v) into s.tau (a null: the bias C,
// Pinocchio's nonLinearEffects). Forward pass (RBDA eqs. 5.7-5.9 in world coordinates):
//   v_i = v_lambda + J_i qd_i
//   a_i = a_lambda + J_i qdd_i + v_i x J_i qd_i + X_i Sdot_i qd_i
//   (dJ_i/dt = v_i x J_i + X_i Sdot_i, the last for a variable S_i(q): tree.h)
//   f_i = Y_i a_i + v_i x* Y_i v_i
// with a_0 = -g (gravity as a fictitious base acceleration, RBDA sec. 5.3); backward pass:
// tau_i = J_i^T f_i (+ the rotor inertia a_k qdd_k), f_lambda += f_i (eqs. 5.10-5.11), which
// leaves the subtree forces in s.of. kinematics = false: the forward kinematics at q is done.
template <class T>
void rnea(const TreeModel& m, TreeState<T>& s, const T* q, const T* v, const T* a, bool kinematics = true) {
  if (kinematics) forward_kinematics(m, s, q);
  const Motion<T> a0{Vec3<T>{{T(-m.gravity[0]), T(-m.gravity[1]), T(-m.gravity[2])}}, zero3<T>()};
  for (int i = 0; i < m.n; ++i) {
    const int lam = m.parent[i];
    const Motion<T> vj = joint_velocity(m, s, i, v);
    const Motion<T> ov = lam < 0 ? vj : s.ov[lam] + vj;  // a local, then stored (forward_kinematics)
    s.ov[i] = ov;
    Motion<T> oa = lam < 0 ? a0 : s.oa[lam];
    if (a) oa += joint_velocity(m, s, i, a);
    oa += cross(ov, vj);
    if (m.variable[i]) oa += joint_bias(m, s, i, v);
    s.oa[i] = oa;
    s.of[i] = s.Y[i] * oa + cross(ov, s.Y[i] * ov);
  }
  for (int i = m.n - 1; i >= 0; --i) {
    const Force<T>& f = s.of[i];
    for (int c = 0; c < m.nv_i[i]; ++c) {
      const int k = m.idx_v[i] + c;
      s.tau[k] = dot(s.J[6 * i + c], f);
      if (a) s.tau[k] += m.armature[k] * a[k];  // rotor inertia
    }
    const int lam = m.parent[i];
    if (lam >= 0) s.of[lam] += f;
  }
}

// Kinematics point k's world position, after the forward kinematics.
template <class T>
Vec3<T> point_position(const TreeModel& m, const TreeState<T>& s, int k) {
  const int i = m.point_joint[k];
  return matvec(s.R[i], load3<T>(&m.point_offset[3 * k])) + s.p[i];
}

// The points' tangent Jacobian (3 np, nv) row-major, after the forward kinematics: a column
// is the linear part of J_j's motion at the point, v + w x pos, for j on the point's path.
template <class T>
void point_jacobian(const TreeModel& m, const TreeState<T>& s, T* jac) {
  const int nv = m.nv;
  for (int k = 0; k < 3 * m.np * nv; ++k) jac[k] = T(0.0);
  for (int k = 0; k < m.np; ++k) {
    const Vec3<T> x = point_position(m, s, k);
    for (int j = m.point_joint[k]; j >= 0; j = m.parent[j])
      for (int c = 0; c < m.nv_i[j]; ++c) {
        const Vec3<T> col = velocity_at(s.J[6 * j + c], x);
        for (int r = 0; r < 3; ++r) jac[(3 * k + r) * nv + m.idx_v[j] + c] = col[r];
      }
  }
}

}  // namespace dojo
