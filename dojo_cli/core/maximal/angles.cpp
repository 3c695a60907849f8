// Unwrapped angles (angles.h).
#include "angles.h"

#include <cmath>

#include "kinematics.h"
#include "residual.h"

namespace dojo {

namespace {
// Pose of body b in a state z (13 nb,), or the world's.
Pose<double> state_pose(const double* z, int b) {
  if (b == kWorld) return world_pose<double>();
  const double* s = z + 13 * b;
  Pose<double> p;
  p.x = load3<double>(s);
  p.q = load4<double>(s + 6);
  p.r = rotation(p.q);
  return p;
}

// Joint j's canonical angle (kinematics.h) of coordinate f and q_rel in state z.
double canonical_angle(const Model& m, int j, int f, const double* z, Quat<double>& q_rel) {
  JointKinematics<double> kin;
  joint_configuration(m, j, state_pose(z, m.parent[j]), state_pose(z, m.child[j]), kin);
  q_rel = kin.q_rel;
  const double* b = &m.basis[18 * j + 3 * m.free_slot[f]];
  const Vec3<double> rc = rotation_vector(canonical_quaternion(kin.q_rel));
  return b[0] * rc[0] + b[1] * rc[1] + b[2] * rc[2];
}
}  // namespace

void advance_angles(const Model& m, Data& d) {
  const double* z3 = d.z_next.data();
  if (!all_finite(z3, 13 * m.nb)) return;
  for (int j = 0; j < m.nj; ++j) {
    if (m.joint_limit_start[j] == m.joint_limit_start[j + 1]) continue;
    for (int f = m.joint_free_start[j]; f < m.joint_free_start[j + 1]; ++f) {
      if (!m.angle_unwrapped[f]) continue;
      Quat<double> q3;
      const double c = canonical_angle(m, j, f, z3, q3);
      d.angle_ref[f] = c + angle_branch(&m.basis[18 * j + 3 * m.free_slot[f]], q3, c, &d.qrel2[4 * j], d.angle2[f]);
    }
  }
}

void unwrap_angles(const Model& m, const double* z, const double* z_prev, const double* theta_prev, double* theta) {
  for (int f = 0; f < m.nf; ++f) {
    if (!m.angle_unwrapped[f]) continue;
    const int j = m.free_joint[f];
    const double* b = &m.basis[18 * j + 3 * m.free_slot[f]];
    Quat<double> q;
    const double c = canonical_angle(m, j, f, z, q);
    if (z_prev) {
      Quat<double> q_prev;
      const double c_prev = canonical_angle(m, j, f, z_prev, q_prev);
      // theta_prev snapped to its branch, as a step snaps Data.angle_ref (step_setup)
      const double theta1 = c_prev + kTwoPi * std::round((theta_prev[f] - c_prev) / kTwoPi);
      theta[f] = c + angle_branch(b, q, c, q_prev.q, theta1);
    } else {
      const Vec3<double> rv = rotation_vector(q);
      theta[f] = start_angle(c, b[0] * rv[0] + b[1] * rv[1] + b[2] * rv[2], m.free_lower[f], m.free_upper[f]);
    }
  }
}

}  // namespace dojo
