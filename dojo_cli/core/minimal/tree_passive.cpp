// The joints' springs and dampers as generalized forces of the tree (tree.h has the
// conventions): the same law as the maximal step's (step.cpp: -k (theta - theta0) on
// Dojo's free coordinates, -c theta' for the damper), on the same coordinates, mapped
// into the tree's velocity space by the transpose of d theta'/dv (virtual power).
#include <cmath>
#include <stdexcept>

#include "math/spatial.h"
#include "tree.h"

namespace dojo {

void tree_passive_forces(const TreeModel& m, const double* x, double* tau) {
  for (int k = 0; k < m.nv; ++k) tau[k] = 0.0;
  tree_passive_forces_add(m, x, x + m.nq, tau);
}

void tree_passive_forces_add(const TreeModel& m, const double* q, const double* v, double* tau) {
  for (int i = 0; i < m.n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], iv = m.idx_v[i], nvi = m.nv_i[i];
    bool any = false;
    for (int k = iv; k < iv + nvi; ++k) any = any || m.spring[k] != 0.0 || m.damper[k] != 0.0;
    if (!any) continue;
    const double* k_ = &m.spring[iv];
    const double* c_ = &m.damper[iv];
    const double* theta0 = &m.spring_offset[iv];
    // the joint rotation R_J (translations turn with it: their rate is E_t v_t, E_t = T R_J T^T)
    Mat3<double> RJ = identity3<double>();
    Quat<double> q_rel = identity_quat<double>();
    if (m.rot_kind[i] == static_cast<int>(TreeRotation::Revolute)) {
      RJ = rotation(quaternion_from_rotation_vector(q[iq + nt] * load3<double>(&m.axis[3 * i])));
    } else if (m.rot_kind[i] == static_cast<int>(TreeRotation::Quaternion)) {
      q_rel = load4<double>(q + iq + nt);
      const double norm = std::sqrt(q_rel[0] * q_rel[0] + q_rel[1] * q_rel[1] + q_rel[2] * q_rel[2] + q_rel[3] * q_rel[3]);
      if (!(norm > 0.0)) throw std::invalid_argument("a quaternion of the configuration is zero or not finite");
      for (int k = 0; k < 4; ++k) q_rel[k] /= norm;
      RJ = rotation(q_rel);
    }
    // translations in the predecessor frame (TreeModel.trans_pred): theta_t' = v_t, E_t = I
    if (m.trans_pred[i]) RJ = identity3<double>();
    // translations: theta_t = q_t - T r (Dojo's displacement from its joint frame's origin)
    if (nt > 0) {
      const double* T = &m.trans_dirs[9 * i];
      const Vec3<double> r = load3<double>(&m.joint_frame_p[3 * i]);
      Vec3<double> vt{{0.0, 0.0, 0.0}};  // T^T v_t, the translation rate in the predecessor frame
      for (int c = 0; c < nt; ++c) vt = vt + v[iv + c] * load3<double>(T + 3 * c);
      const Vec3<double> rate_p = matvec(RJ, vt);  // T^T E_t v_t = R_J T^T v_t
      Vec3<double> force{{0.0, 0.0, 0.0}};         // T^T f, f the coordinate forces
      for (int c = 0; c < nt; ++c) {
        const Vec3<double> dir = load3<double>(T + 3 * c);
        const double theta = q[iq + c] - dot(dir, r);
        const double rate = dot(dir, rate_p);
        force = force + (-k_[c] * (theta - theta0[c]) - c_[c] * rate) * dir;
      }
      // E_t^T f = T R_J^T T^T f
      const Vec3<double> back = tmatvec(RJ, force);
      for (int c = 0; c < nt; ++c) tau[iv + c] += dot(load3<double>(T + 3 * c), back);
    }
    if (m.rot_kind[i] == static_cast<int>(TreeRotation::Swing)) {
      // the swing's coordinates are Dojo's b . log(q_rel) themselves, and their rates v
      for (int k = 0; k < 2; ++k)
        tau[iv + nt + k] += -k_[nt + k] * (q[iq + nt + k] - theta0[nt + k]) - c_[nt + k] * v[iv + nt + k];
    } else if (m.rot_kind[i] == static_cast<int>(TreeRotation::Revolute)) {
      tau[iv + nt] += -k_[nt] * (q[iq + nt] - theta0[nt]) - c_[nt] * v[iv + nt];
    } else if (m.rot_kind[i] == static_cast<int>(TreeRotation::Quaternion)) {
      // Dojo's rotation vector of the rotation in its joint frame, angle in [0, 2 pi)
      const Vec3<double> theta = rotation_vector(multiply(conjugate(load4<double>(&m.joint_frame_q[4 * i])), q_rel));
      const Mat3<double> Jinv = right_jacobian_inverse(theta);  // theta' = J_r^-1(theta) w
      const Vec3<double> rate = matvec(Jinv, load3<double>(v + iv + nt));
      Vec3<double> f;
      for (int k = 0; k < 3; ++k) f[k] = -k_[nt + k] * (theta[k] - theta0[nt + k]) - c_[nt + k] * rate[k];
      const Vec3<double> back = tmatvec(Jinv, f);
      for (int k = 0; k < 3; ++k) tau[iv + nt + k] += back[k];
    }
  }
}

}  // namespace dojo
