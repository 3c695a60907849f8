// Conversions between maximal and minimal states, templated on the scalar
// (dojo_engine_notes.md 3.7; Dojo's minimal.jl).
//
// Minimal state, joint by joint in joint order: [theta_t; theta_r; dtheta_t; dtheta_r]
// of that joint's free coordinates (Dojo's per-joint grouping: the block of joint j
// starts at 2 joint_free_start[j]; fixed joints contribute nothing; loop-closure
// joints are included).
// - theta_t = free rows of basis_t d, theta_r = free rows of basis_r log(q_rel)
//   (kinematics.h: d the translational displacement, q_rel the relative rotation);
// - velocities are backward differences over the last interval, which the maximal
//   state holds as midpoint velocities: z1 = (x2 - h v15, q2 qmap(-w15)),
//   dtheta_t = (theta_t(z2) - theta_t(z1)) / h,
//   dtheta_r = free rows of basis_r log(q_rel(z1)* q_rel(z2)) / h.
// minimal_to_maximal places bodies from the world to the leaves along tree joints
// (loop joints are skipped: their coordinates follow from the others), building each
// child's current and previous poses from its parent's, then its midpoint velocities
// from the two poses; the round trip min -> max -> min is exact.
//
// Instantiated with double for values and with Dual<double, 1> for the instantaneous
// conversions. Their exact Jacobians, in the gradients' tangent coordinates per body
// [x, v, phi, w], an orientation perturbation phi meaning q -> q [sqrt(1 - |phi|^2), phi]
// (docs/formats.md), are analytic: one pass over the tree (coordinates.cpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "math/dual.h"
#include "kinematics.h"
#include "model.h"
#include "math/spatial.h"

namespace dojo {

// Parts of a body a minimal_to_maximal caller may override (columns of the flags).
enum OverridePart : int {
  kOverridePosition = 0,
  kOverrideOrientation = 1,
  kOverrideVelocity = 2,
  kOverrideAngularVelocity = 3,
  kOverrideParts = 4
};

// Per-body maximal values replacing what the joints give (minimal_to_maximal).
// flags: (nb, kOverrideParts) nonzero where a part is overridden; values: (nb, 13)
// in the maximal layout [x, v, q, w] (q need not be normalised). Null: none.
struct BodyOverrides {
  const uint8_t* flags = nullptr;
  const double* values = nullptr;
  // The velocity values are instantaneous: they enter as the derivative along dual
  // direction 0 (minimal_to_maximal_instantaneous, coordinates.cpp; T = Dual only).
  bool instantaneous = false;
  bool has(int b, OverridePart part) const { return flags && flags[kOverrideParts * b + part]; }
};

// a (3,) as a velocity: the value itself, or (instantaneous conversions) the
// derivative of a zero along dual direction 0, so that a difference over h of the
// poses it builds is the exact rate (coordinates.cpp).
template <class T>
struct VelocitySeed {
  static Vec3<T> of(const double* a, bool instantaneous) {
    if (instantaneous) throw std::logic_error("instantaneous conversions need dual numbers");
    return load3<T>(a);
  }
};
template <int N>
struct VelocitySeed<Dual<double, N>> {
  static Vec3<Dual<double, N>> of(const double* a, bool instantaneous) {
    using D = Dual<double, N>;
    if (!instantaneous) return load3<D>(a);
    return Vec3<D>{{D::variable(0.0, 0) * a[0], D::variable(0.0, 0) * a[1], D::variable(0.0, 0) * a[2]}};
  }
};

namespace detail {

template <class T>
inline Pose<T> make_pose(const Vec3<T>& x, const Quat<T>& q) {
  return Pose<T>{x, q, rotation(q)};
}

// A basis row (3 doubles) dotted with a vector.
template <class T>
inline T basis_dot(const double* b, const Vec3<T>& v) {
  return b[0] * v[0] + b[1] * v[1] + b[2] * v[2];
}

// basis^T c for one element: sum_i c_i row_i (rows 0:3 at `rows`, row-major).
template <class T>
inline Vec3<T> basis_transpose_times(const double* rows, const T* c) {
  Vec3<T> out;
  for (int k = 0; k < 3; ++k) out[k] = rows[k] * c[0] + rows[3 + k] * c[1] + rows[6 + k] * c[2];
  return out;
}

// R(q) v for a quaternion (rotate).
template <class T>
inline Vec3<T> rotate(const Quat<T>& q, const Vec3<T>& v) {
  return matvec(rotation(q), v);
}

}  // namespace detail

// The configuration at the start of the last interval: (x1, q1) = (x2 - h v15, q2 qmap(-w15)).
template <class T>
inline Pose<T> previous_pose(const Vec3<T>& x2, const Vec3<T>& v15, const Quat<T>& q2, const Vec3<T>& w15, double h) {
  return detail::make_pose(x2 - h * v15, multiply(q2, integrator_map(-w15, h)));
}

// Current (z2) and previous (z1) poses of body b of a maximal state z (13 nb,).
template <class T>
inline void body_poses(const T* z, int b, double h, Pose<T>& now, Pose<T>& prev) {
  const T* s = z + 13 * b;
  const Vec3<T> x{{s[0], s[1], s[2]}}, v{{s[3], s[4], s[5]}}, w{{s[10], s[11], s[12]}};
  const Quat<T> q{{s[6], s[7], s[8], s[9]}};
  now = detail::make_pose(x, q);
  prev = previous_pose(x, v, q, w, h);
}

// Joint j's minimal state from its parent and child poses at z2 (a2, b2) and z1
// (a1, b1): theta (n,) its free coordinates and rate (n,) their velocities, n the
// joint's free coordinates. rate may be null (then a1, b1 are not read); theta may be null
// (only the rates: no rotation vector of q_rel).
template <class T>
inline void joint_minimal_state(const Model& m, int j, const Pose<T>& a2, const Pose<T>& b2, const Pose<T>& a1,
                                const Pose<T>& b1, T* theta, T* rate) {
  const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
  if (f0 == f1) return;
  JointKinematics<T> k2;
  joint_configuration(m, j, a2, b2, k2);
  // a universal or gimbal joint's rotations are its axes' angles (euler_joints.h)
  const bool euler = m.joint_rotation[j] != kRotationQuaternion;
  EulerAngles<T> e2, e1;
  if (euler) euler_angles(m, j, k2.rot_rel, e2);
  if (theta) {
    const Vec3<T> rv = rotation_vector(k2.q_rel);
    for (int f = f0; f < f1; ++f) {
      const int slot = m.free_slot[f];
      const double* b = detail::basis_row(m, j, slot);
      theta[f - f0] = (euler && slot >= 3) ? e2.angle[slot - 3] : detail::basis_dot(b, slot < 3 ? k2.d : rv);
    }
  }
  if (!rate) return;
  JointKinematics<T> k1;
  joint_configuration(m, j, a1, b1, k1);
  const Vec3<T> dd = k2.d - k1.d;
  const Vec3<T> inc = rotation_vector(multiply(conjugate(k1.q_rel), k2.q_rel));
  if (euler) euler_angles(m, j, k1.rot_rel, e1);
  const double h = m.h;
  for (int f = f0; f < f1; ++f) {
    const int slot = m.free_slot[f];
    const double* b = detail::basis_row(m, j, slot);
    if (euler && slot >= 3)  // the angles' difference over the interval (across the chart's seam)
      rate[f - f0] = wrapped_angle(e2.angle[slot - 3] - e1.angle[slot - 3]) / h;
    else
      rate[f - f0] = detail::basis_dot(b, slot < 3 ? dd : inc) / h;
  }
}

// Free coordinates theta (nf,) at the configuration x (nb, 3), q (nb, 4).
template <class T>
inline void minimal_coordinates(const Model& m, const T* x, const T* q, T* theta) {
  std::vector<Pose<T>> pose(m.nb);
  for (int b = 0; b < m.nb; ++b)
    pose[b] = detail::make_pose(Vec3<T>{{x[3 * b], x[3 * b + 1], x[3 * b + 2]}},
                                Quat<T>{{q[4 * b], q[4 * b + 1], q[4 * b + 2], q[4 * b + 3]}});
  const Pose<T> world = world_pose<T>();
  for (int j = 0; j < m.nj; ++j) {
    const Pose<T>& a = m.parent[j] == kWorld ? world : pose[m.parent[j]];
    joint_minimal_state(m, j, a, pose[m.child[j]], a, a, theta + m.joint_free_start[j], static_cast<T*>(nullptr));
  }
}

// Free coordinates theta (nf,) and their velocities rate (nf,) of a maximal state
// z (13 nb,); either output may be null.
template <class T>
inline void minimal_coordinates_and_velocities(const Model& m, const T* z, T* theta, T* rate) {
  std::vector<Pose<T>> now(m.nb), prev(m.nb);
  for (int b = 0; b < m.nb; ++b) {
    if (rate) {
      body_poses(z, b, m.h, now[b], prev[b]);
    } else {  // the previous poses are read only for the rates
      const T* s = z + 13 * b;
      now[b] = detail::make_pose(Vec3<T>{{s[0], s[1], s[2]}}, Quat<T>{{s[6], s[7], s[8], s[9]}});
    }
  }
  const Pose<T> world = world_pose<T>();
  for (int j = 0; j < m.nj; ++j) {
    const int a = m.parent[j], c = m.child[j], f0 = m.joint_free_start[j];
    const Pose<T>& a2 = a == kWorld ? world : now[a];
    const Pose<T>& a1 = a == kWorld ? world : prev[a];
    joint_minimal_state(m, j, a2, now[c], a1, prev[c], theta ? theta + f0 : nullptr, rate ? rate + f0 : nullptr);
  }
}

// Minimal state y (2 nf,), per joint [coordinates; velocities], of a maximal state z (13 nb,).
template <class T>
inline void maximal_to_minimal(const Model& m, const T* z, T* y) {
  std::vector<Pose<T>> now(m.nb), prev(m.nb);
  for (int b = 0; b < m.nb; ++b) body_poses(z, b, m.h, now[b], prev[b]);
  const Pose<T> world = world_pose<T>();
  for (int j = 0; j < m.nj; ++j) {
    const int a = m.parent[j], c = m.child[j], f0 = m.joint_free_start[j];
    const int n = m.joint_free_start[j + 1] - f0;
    const Pose<T>& a2 = a == kWorld ? world : now[a];
    const Pose<T>& a1 = a == kWorld ? world : prev[a];
    joint_minimal_state(m, j, a2, now[c], a1, prev[c], y + 2 * f0, y + 2 * f0 + n);
  }
}

namespace detail {

// Pose of joint j's child from its parent pose and the joint's displacement d
// (parent frame) and relative rotation q_rel: qb = qa offset q_rel,
// xb = xa + R(qa)(pa + d) - R(qb) pb.
template <class T>
inline Pose<T> child_pose(const Model& m, int j, const Pose<T>& a, const Vec3<T>& d, const Quat<T>& q_rel) {
  const Vec3<double> pa = load3<double>(&m.parent_vertex[3 * j]);
  const Vec3<double> pb = load3<double>(&m.child_vertex[3 * j]);
  const Quat<T> off = load4<T>(&m.orientation_offset[4 * j]);
  const Quat<T> qb = multiply(multiply(a.q, off), q_rel);
  const Vec3<T> lever = Vec3<T>{{pa[0] + d[0], pa[1] + d[1], pa[2] + d[2]}};
  const Mat3<T> rb = rotation(qb);
  const Vec3<T> rb_pb = matvec(rb, Vec3<T>{{T(pb[0]), T(pb[1]), T(pb[2])}});
  return Pose<T>{a.x + matvec(a.r, lever) - rb_pb, qb, rb};
}

// Replace parts of body b's current and previous poses, keeping the velocities of
// the parts not overridden (the previous pose is rebuilt from the current one).
template <class T>
inline void apply_override(const BodyOverrides& o, int b, double h, Pose<T>& now, Pose<T>& prev) {
  const double* val = o.values + 13 * b;
  Vec3<T> v = now.x - prev.x;
  for (int k = 0; k < 3; ++k) v[k] = v[k] / h;
  Quat<T> dq = multiply(conjugate(now.q), prev.q);  // body-frame increment q -> q1
  if (o.has(b, kOverridePosition)) now.x = load3<T>(val);
  if (o.has(b, kOverrideOrientation)) {
    const double norm = std::sqrt(val[6] * val[6] + val[7] * val[7] + val[8] * val[8] + val[9] * val[9]);
    now.q = Quat<T>{{T(val[6] / norm), T(val[7] / norm), T(val[8] / norm), T(val[9] / norm)}};
    now.r = rotation(now.q);
  }
  if (o.has(b, kOverrideVelocity)) v = VelocitySeed<T>::of(val + 3, o.instantaneous);
  if (o.has(b, kOverrideAngularVelocity)) dq = integrator_map(-VelocitySeed<T>::of(val + 10, o.instantaneous), h);
  prev = make_pose(now.x - h * v, multiply(now.q, dq));
}

}  // namespace detail

// Maximal state z (13 nb,) of a minimal state y (2 nf,), per joint [coordinates; velocities].
// z_base (13 nb,) or null: the state of bodies no tree joint reaches (default: at rest at
// the origin); every body reached by a tree joint is overwritten. Overrides replace parts
// of a body as the tree is walked, so that its descendants follow it.
template <class T>
inline void minimal_to_maximal(const Model& m, const T* y, const double* z_base, const BodyOverrides& overrides,
                               T* z) {
  const double h = m.h;
  std::vector<Pose<T>> now(m.nb), prev(m.nb);
  for (int b = 0; b < m.nb; ++b) {
    if (z_base) {
      std::vector<T> s(z_base + 13 * b, z_base + 13 * b + 13);
      body_poses(s.data(), 0, h, now[b], prev[b]);
    } else {
      now[b] = world_pose<T>();
      prev[b] = world_pose<T>();
    }
  }
  const Pose<T> world = world_pose<T>();
  for (int j : m.tree_joints) {
    const int a = m.parent[j], b = m.child[j], f0 = m.joint_free_start[j];
    const int n = m.joint_free_start[j + 1] - f0;
    // the joint's six basis coordinates and rates (constrained rows zero)
    T six[6], rate[6];
    for (int s = 0; s < 6; ++s) six[s] = rate[s] = T(0.0);
    for (int i = 0; i < n; ++i) {
      six[m.free_slot[f0 + i]] = y[2 * f0 + i];
      rate[m.free_slot[f0 + i]] = y[2 * f0 + n + i];
    }
    const double* bt = &m.basis[18 * j];
    const double* br = &m.basis[18 * j + 9];
    const Pose<T>& a2 = a == kWorld ? world : now[a];
    const Pose<T>& a1 = a == kWorld ? world : prev[a];
    // current pose: d = bt^T theta_t, q_rel = exp(br^T theta_r)
    const Vec3<T> d = detail::basis_transpose_times(bt, six);
    // (a universal or gimbal joint: q_rel from its axes' angles, euler_joints.h)
    const bool euler = m.joint_rotation[j] != kRotationQuaternion;
    const Quat<T> q_rel = euler ? quaternion_from_euler_angles(m, j, six + 3)
                                : quaternion_from_rotation_vector(detail::basis_transpose_times(br, six + 3));
    now[b] = detail::child_pose(m, j, a2, d, q_rel);
    // previous relative pose: d1 = d - h d_dot, q_rel1 = q_rel exp(-h w_rel) (Euler: the
    // angles h before, theta - h theta_dot)
    T prev_t[3], back_r[3], prev_r[3];
    for (int s = 0; s < 3; ++s) prev_t[s] = six[s] - h * rate[s];
    for (int s = 0; s < 3; ++s) back_r[s] = -h * rate[3 + s];
    for (int s = 0; s < 3; ++s) prev_r[s] = six[3 + s] + back_r[s];
    const Vec3<T> d1 = detail::basis_transpose_times(bt, prev_t);
    const Quat<T> q_rel1 =
        euler ? quaternion_from_euler_angles(m, j, prev_r)
              : multiply(q_rel, quaternion_from_rotation_vector(detail::basis_transpose_times(br, back_r)));
    prev[b] = detail::child_pose(m, j, a1, d1, q_rel1);
    if (overrides.flags) detail::apply_override(overrides, b, h, now[b], prev[b]);
  }
  for (int b = 0; b < m.nb; ++b) {
    T* s = z + 13 * b;
    const Quat<T> inc = multiply(conjugate(prev[b].q), now[b].q);  // q = q1 qmap(w): w = (2/h) Vec(q1* q)
    for (int k = 0; k < 3; ++k) {
      s[k] = now[b].x[k];
      s[3 + k] = (now[b].x[k] - prev[b].x[k]) / h;
      s[10 + k] = (2.0 / h) * inc[1 + k];
    }
    for (int k = 0; k < 4; ++k) s[6 + k] = now[b].q[k];
  }
}

// Instantaneous conversions (velocities at the configuration's own time, not midpoint
// velocities over the interval before it; docs/physics.md "Velocities at t0 and at the
// knots"). The conversions above difference two poses h apart; seeding every velocity
// as the derivative of a zero along one dual direction makes the previous pose
// (x - h v, q qmap(-w)) differ from the current one only in that direction, so the
// difference over h is the exact derivative: the map J(q) qdot, no O(h) chord.
// Maximal state z (13 nb,) [x, v(t), q, w(t)] of a minimal state y (2 nf,) of
// coordinates and their rates at t; overrides' velocities are rates at t too.
void minimal_to_maximal_instantaneous(const Model& m, const double* y, const BodyOverrides& overrides, double* z);

// Free-coordinate rates (nf,) of a maximal state z (13 nb,) whose velocities are at
// the configuration's time.
void instantaneous_minimal_velocities(const Model& m, const double* z, double* rate);

// The same rates of a state given as its poses now (nb,), its joints' configurations kin
// (nj,: d, q_rel, rot_rel, kinematics.h joint_configuration) and its velocities v, omega
// (nb, 3) (run_record.h: a run's knots, whose configurations it has computed already).
void instantaneous_minimal_velocities(const Model& m, const Pose<double>* now, const JointKinematics<double>* kin,
                                      const double* v, const double* omega, double* rate);

// Largest constraint-row magnitude of each joint at the configuration of z (13 nb,), into out (nj,).
void constraint_violation(const Model& m, const double* z, double* out);

// d y / d z (2 nf, 12 nb), row-major, of maximal_to_minimal at z (13 nb,), in the tangent
// coordinates [x, v, phi, w] per body: each joint's rows from its kinematics.h minimal rows
// at the current and previous poses.
void maximal_to_minimal_jacobian(const Model& m, const double* z, double* jac);

// d z / d y (12 nb, 2 nf), row-major, of minimal_to_maximal at y (2 nf,) (z_base and
// overrides as there, held fixed), in the tangent coordinates [x, v, phi, w] per body: the
// joint-space Jacobian of every body's two poses, built from the root (Pinocchio's
// computeJointJacobians).
void minimal_to_maximal_jacobian(const Model& m, const double* y, const double* z_base,
                                 const BodyOverrides& overrides, double* jac);

}  // namespace dojo
