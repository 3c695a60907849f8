// Maps between a joint's 12 tangent columns [parent (x, t) | child (x, t)] and the
// bodies' rows and unknowns, shared by the step (step.cpp) and its gradients
// (gradients.cpp). The world is kWorld: its part is dropped.
#pragma once

#include "kinematics.h"
#include "model.h"
#include "math/spatial.h"

namespace dojo {

inline Mat3<double> body_inertia(const Model& m, int b) { return load33<double>(&m.inertia[9 * b]); }

// Pose of body b from per-body arrays x (nb,3), q (nb,4), rot (nb,9); the world's for kWorld.
inline Pose<double> pose_of(const double* x, const double* q, const double* rot, int b) {
  if (b == kWorld) return world_pose<double>();
  Pose<double> p;
  p.x = load3<double>(x + 3 * b);
  p.q = load4<double>(q + 4 * b);
  p.r = load33<double>(rot + 9 * b);
  return p;
}

// Kinematics of joint j from per-body arrays x (nb,3), q (nb,4), rot (nb,9) (at z2 or z3).
inline void joint_kinematics_at(const Model& m, int j, const double* x, const double* q, const double* rot,
                                JointKinematics<double>& kin) {
  joint_kinematics(m, j, pose_of(x, q, rot, m.parent[j]), pose_of(x, q, rot, m.child[j]), kin);
}

// Sum a joint's 12-vector [parent 6 | child 6] into body rows (the world's part dropped).
inline void scatter12(const Model& m, int j, const double* vals, double scale, double* body) {
  const int a = m.parent[j], b = m.child[j];
  if (a != kWorld)
    for (int k = 0; k < 6; ++k) body[6 * a + k] += scale * vals[k];
  for (int k = 0; k < 6; ++k) body[6 * b + k] += scale * vals[6 + k];
}

// A joint's 12 body unknowns xi = [xi_parent, xi_child] dotted with a 12-vector.
inline double dot12(const Model& m, int j, const double* vals, const double* w) {
  const int a = m.parent[j], b = m.child[j];
  double out = 0.0;
  if (a != kWorld)
    for (int k = 0; k < 6; ++k) out += vals[k] * w[6 * a + k];
  for (int k = 0; k < 6; ++k) out += vals[6 + k] * w[6 * b + k];
  return out;
}

// Jacobian columns [x, t] of one body at z3 chained to its midpoint velocities:
// dx3/dv25 = h I, dt3/dw25 = mw (integrator_map_jacobian).
inline void chain6(const double* jac, const double* mw, double h, double* out) {
  for (int k = 0; k < 3; ++k) out[k] = h * jac[k];
  for (int k = 0; k < 3; ++k) out[3 + k] = jac[3] * mw[k] + jac[4] * mw[3 + k] + jac[5] * mw[6 + k];
}

}  // namespace dojo
