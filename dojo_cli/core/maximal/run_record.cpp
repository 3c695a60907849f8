// A run's record of its states in one pass (run_record.h).
#include "run_record.h"

#include <algorithm>
#include <cmath>

#include "coordinates.h"
#include "energy.h"
#include "euler_joints.h"

namespace dojo {

CoordinateRecord::CoordinateRecord(const Model& m)
    : m_(m), pose_(m.nb), kin_(m.nj), canonical_(m.nf), theta_ref_(m.nf), q_ref_(4 * static_cast<size_t>(m.nj)) {}

void CoordinateRecord::start(const double* theta_prev) {
  std::copy(theta_prev, theta_prev + m_.nf, theta_ref_.begin());
  theta_ref_set_ = true;
}

void CoordinateRecord::state(const double* z, double* theta) {
  const Model& m = m_;
  for (int b = 0; b < m.nb; ++b) {
    const double* s = z + 13 * b;
    pose_[b] = detail::make_pose(load3<double>(s), load4<double>(s + 6));
  }
  const Pose<double> world = world_pose<double>();
  // unwrapping needs the reference's unwrapped angles: given (start) or the last output
  const bool unwrap = has_ref_ && theta_ref_set_;
  for (int j = 0; j < m.nj; ++j) {
    const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
    if (f0 == f1) continue;  // (no coordinates, no rates: its configuration is not read)
    JointKinematics<double>& k = kin_[j];
    joint_configuration(m, j, m.parent[j] == kWorld ? world : pose_[m.parent[j]], pose_[m.child[j]], k);
    // minimal_coordinates_and_velocities (joint_minimal_state's coordinates) ...
    const bool euler = m.joint_rotation[j] != kRotationQuaternion;
    EulerAngles<double> e;
    if (euler && theta) euler_angles(m, j, k.rot_rel, e);
    const Vec3<double> rv = rotation_vector(k.q_rel);
    for (int f = f0; f < f1; ++f) {
      const int slot = m.free_slot[f];
      const double* b = detail::basis_row(m, j, slot);
      if (!m.angle_unwrapped[f]) {
        if (theta) theta[f] = (euler && slot >= 3) ? e.angle[slot - 3] : detail::basis_dot(b, slot < 3 ? k.d : rv);
        continue;
      }
      // ... then unwrap_angles: the canonical angle (angles.cpp canonical_angle; a q_rel with
      // w >= 0 is its own canonical quaternion, whose rotation vector rv is already known)
      const Vec3<double> rc = k.q_rel[0] >= 0.0 ? rv : rotation_vector(canonical_quaternion(k.q_rel));
      const double c = b[0] * rc[0] + b[1] * rc[1] + b[2] * rc[2];
      if (theta) {
        if (unwrap) {
          // the reference's angle snapped to its branch, as a step snaps Data.angle_ref (step_setup)
          const double theta1 = canonical_[f] + kTwoPi * std::round((theta_ref_[f] - canonical_[f]) / kTwoPi);
          theta[f] = c + angle_branch(b, k.q_rel, c, &q_ref_[4 * static_cast<size_t>(j)], theta1);
        } else {
          theta[f] = start_angle(c, b[0] * rv[0] + b[1] * rv[1] + b[2] * rv[2], m.free_lower[f], m.free_upper[f]);
        }
      }
      canonical_[f] = c;
      std::copy(k.q_rel.q, k.q_rel.q + 4, q_ref_.begin() + 4 * static_cast<size_t>(j));
    }
  }
  has_ref_ = true;
  theta_ref_set_ = theta != nullptr;
  if (theta) std::copy(theta, theta + m.nf, theta_ref_.begin());
}

void unwrapped_coordinates(const Model& m, const double* states, int steps, const double* z_prev,
                           const double* theta_prev, double* theta) {
  CoordinateRecord record(m);
  if (z_prev) {
    record.state(z_prev, nullptr);
    record.start(theta_prev);
  }
  const size_t nz = 13 * static_cast<size_t>(m.nb);
  for (int t = 0; t < steps; ++t) record.state(states + t * nz, theta + static_cast<size_t>(t) * m.nf);
}

void run_record(const Model& m, const double* states, int steps, const double* z_prev, const double* theta_prev,
                bool exact_knots, double* minimal_q, double* knot_v, double* knot_omega, double* knot_minimal_v) {
  const size_t nz = 13 * static_cast<size_t>(m.nb), nb = m.nb, n = steps;
  auto row = [&](size_t t) { return t == 0 ? z_prev : states + (t - 1) * nz; };
  // the knots' velocities (n + 1, nb, 3): the states' own (exact_knots), or from their
  // midpoint velocities (energy.h)
  std::vector<double> v_own, w_own;
  double* v_mid = knot_v;
  double* w_mid = knot_omega;
  if (!exact_knots) {
    v_own.resize(3 * nb * (n + 1));
    w_own.resize(3 * nb * (n + 1));
    v_mid = v_own.data();
    w_mid = w_own.data();
  }
  for (size_t t = 0; t <= n; ++t)
    for (size_t b = 0; b < nb; ++b)
      for (int k = 0; k < 3; ++k) {
        v_mid[3 * (t * nb + b) + k] = row(t)[13 * b + 3 + k];
        w_mid[3 * (t * nb + b) + k] = row(t)[13 * b + 10 + k];
      }
  if (!exact_knots) knot_velocities(m, steps, v_mid, w_mid, true, knot_v, knot_omega);
  // one pass over the knots: each one's configuration once, for its coordinates (the
  // states; z_prev's are theta_prev), the next one's unwrapping and its minimal velocities
  CoordinateRecord record(m);
  for (size_t t = 0; t <= n; ++t) {
    record.state(row(t), t == 0 ? nullptr : minimal_q + (t - 1) * m.nf);
    if (t == 0) record.start(theta_prev);
    instantaneous_minimal_velocities(m, record.poses().data(), record.configurations().data(), knot_v + 3 * nb * t,
                                     knot_omega + 3 * nb * t, knot_minimal_v + t * m.nf);
  }
}

}  // namespace dojo
