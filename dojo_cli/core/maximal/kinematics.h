// Joint kinematics with Jacobians in body tangents, templated on the scalar.
//
// For joint j between parent a (or the world) and child b, at configurations
// (x, q) of the bodies (dojo_engine_notes.md 3.3):
// - translational displacement, parent frame: d = R(qa)^T (xb + R(qb) pb - xa) - pa
// - relative rotation in the joint frame: q_rel = offset* qa* qb.
// Jacobians are with respect to the 12 tangent coordinates [xa, ta, xb, tb]
// (world-frame position increments, body-frame rotation increments q -> q exp(t/2)).
// A body rotation increment moves q_rel by the right increment E [ta; tb] with
// E = [-R(q_rel)^T R(offset)^T, I].
//
// Three row families, each in the joint's element bases (rows 0:3 translational,
// 3:6 rotational):
// - constraint: c = [bt d; br Vec(q_rel)], d Vec(q_rel) = (w I + [v]x)/2 dt (Dojo's constraint);
// - minimal coordinates: m = [bt d; br log(q_rel)], d log(q_rel) = J_r^-1(log q_rel) dt;
// - inputs: [bt d; br R(q_rel) E] (a torque about joint-frame axes acts on parent and
//   child as an equal and opposite pair, as Dojo's rotational input does).
// A universal or gimbal joint (Model.joint_rotation) reads its rotational rows its own way:
// the Hooke constraint and the axes' angles, the inputs along the angles' gradients
// (euler_joints.h); lock rows are Dojo's for every joint.
//
// Instantiated with double for the step; with dual numbers for the second
// derivatives the gradients need (the hand-derived first derivatives below are
// themselves differentiated), so values and derivatives share this one source.
#pragma once

#include "euler_joints.h"
#include "model.h"
#include "math/spatial.h"

namespace dojo {

template <class T>
struct JointKinematics {
  Vec3<T> d;          // translational displacement, parent frame
  Quat<T> q_rel;      // relative rotation, joint frame
  Mat3<T> rot_rel;    // R(q_rel)
  Vec3<T> ra_t_world;  // R(qa)^T (xb + R(qb) pb - xa) = d + pa (what d(d)/dta is made of)
  // d(d)/d[xa, ta, xb, tb]: four 3x3 blocks
  Mat3<T> d_xa, d_ta, d_xb, d_tb;
  // right increment of q_rel per body rotation increment: d/dta = rel_ta, d/dtb = I
  Mat3<T> rel_ta;
};

// A body pose (the world is the identity at the origin).
template <class T>
struct Pose {
  Vec3<T> x;
  Quat<T> q;
  Mat3<T> r;  // R(q)
};

template <class T>
inline Pose<T> world_pose() {
  Pose<T> p;
  p.x = vec3<T>(T(0.0), T(0.0), T(0.0));
  p.q = identity_quat<T>();
  p.r = identity3<T>();
  return p;
}

// The Jacobian members of joint j's kinematics `out`, whose configuration (d, q_rel, rot_rel,
// ra_t_world) was computed from the same poses: joint_kinematics in two parts, so that the
// step's residual can take the configuration alone at an iterate whose Jacobians may never
// be needed (residual.h, deferred_joint_jacobians) and its Newton matrix complete them.
template <class T>
inline void joint_kinematics_jacobians(const Model& m, int j, const Pose<T>& a, const Pose<T>& b, JointKinematics<T>& out) {
  const Vec3<T> pb = load3<T>(&m.child_vertex[3 * j]);
  const Mat3<T> ra_t = transpose(a.r);
  out.d_xa = -ra_t;
  out.d_ta = skew(out.ra_t_world);  // d/dta of R(qa exp(ta/2))^T w = [R^T w]x
  out.d_xb = ra_t;
  // R(qb exp(tb/2)) pb ~ R(qb)(pb + tb x pb): d/dtb = -Ra^T Rb [pb]x
  out.d_tb = -matmul(matmul(ra_t, b.r), skew(pb));
  const Mat3<T> off_t = transpose(load33<T>(&m.offset_rotation[9 * j]));
  out.rel_ta = -matmul(transpose(out.rot_rel), off_t);
}

// Kinematics of joint j from its parent and child poses. Without kJacobians only the
// configuration (d, q_rel, rot_rel, ra_t_world; the same operations, so the same bits) is
// computed and the Jacobian members are left as they were: what the minimal coordinates and
// the angles read (joint_configuration), at about half the cost.
template <class T, bool kJacobians = true>
inline void joint_kinematics(const Model& m, int j, const Pose<T>& a, const Pose<T>& b, JointKinematics<T>& out) {
  const Vec3<T> pa = load3<T>(&m.parent_vertex[3 * j]);
  const Vec3<T> pb = load3<T>(&m.child_vertex[3 * j]);
  const Vec3<T> rb_pb = matvec(b.r, pb);
  const Vec3<T> world = b.x + rb_pb - a.x;  // child joint point relative to the parent origin, world
  out.ra_t_world = tmatvec(a.r, world);
  out.d = out.ra_t_world - pa;
  const Quat<T> off = load4<T>(&m.orientation_offset[4 * j]);
  out.q_rel = multiply(conjugate(off), multiply(conjugate(a.q), b.q));
  out.rot_rel = rotation(out.q_rel);
  if constexpr (kJacobians) joint_kinematics_jacobians(m, j, a, b, out);
}

// Joint j's configuration only: d, q_rel, rot_rel, ra_t_world of JointKinematics (no Jacobians).
template <class T>
inline void joint_configuration(const Model& m, int j, const Pose<T>& a, const Pose<T>& b, JointKinematics<T>& out) {
  joint_kinematics<T, false>(m, j, a, b, out);
}

// One row of a family: its value and its 12 tangent derivatives.
template <class T>
struct JointRow {
  T value;
  T jac[12];
};

namespace detail {
// basis row `slot` (0..5) of joint j
inline const double* basis_row(const Model& m, int j, int slot) { return &m.basis[18 * j + 3 * slot]; }

// row = b^T M for a 3x3 block M (b a basis row): 3 entries
template <class T>
inline void row_times(const double* b, const Mat3<T>& mat, T* out) {
  for (int k = 0; k < 3; ++k) out[k] = b[0] * mat[0][k] + b[1] * mat[1][k] + b[2] * mat[2][k];
}

// translational row: b . d, b^T [d_xa d_ta d_xb d_tb]
template <class T>
inline void translational_row(const double* b, const JointKinematics<T>& k, JointRow<T>& row) {
  row.value = b[0] * k.d[0] + b[1] * k.d[1] + b[2] * k.d[2];
  row_times(b, k.d_xa, row.jac + 0);
  row_times(b, k.d_ta, row.jac + 3);
  row_times(b, k.d_xb, row.jac + 6);
  row_times(b, k.d_tb, row.jac + 9);
}

// rotational row from the gradient g (3,) of its value with respect to the right
// increment of q_rel: g^T [0, rel_ta, 0, I]
template <class T>
inline void rotational_jacobian_of_gradient(const Vec3<T>& g, const JointKinematics<T>& k, JointRow<T>& row) {
  for (int c = 0; c < 3; ++c) {
    row.jac[c] = T(0.0);
    row.jac[6 + c] = T(0.0);
    row.jac[3 + c] = g[0] * k.rel_ta[0][c] + g[1] * k.rel_ta[1][c] + g[2] * k.rel_ta[2][c];
    row.jac[9 + c] = g[c];
  }
}

// rotational row with a 3x3 map M from the relative rotation increment:
// b^T M [0, rel_ta, 0, I], the row of the gradient g = M^T b
template <class T>
inline void rotational_jacobian(const double* b, const Mat3<T>& mat, const JointKinematics<T>& k, JointRow<T>& row) {
  Vec3<T> bm;
  row_times(b, mat, bm.v);
  rotational_jacobian_of_gradient(bm, k, row);
}

// A universal or gimbal joint's rotational slot (3..5): its angle (minimal) or, for
// the universal joint's slot 5, the Hooke constraint (euler_joints.h).
template <class T>
inline void euler_row(const Model& m, int j, int slot, const JointKinematics<T>& k, bool constraint, JointRow<T>& row) {
  EulerAngles<T> e;
  euler_angles(m, j, k.rot_rel, e);
  if (constraint) {
    row.value = e.constraint;
    rotational_jacobian_of_gradient(e.constraint_grad, k, row);
    return;
  }
  row.value = e.angle[slot - 3];
  rotational_jacobian_of_gradient(e.grad[slot - 3], k, row);
}
}  // namespace detail

// Dojo's constraint row `slot` of joint j (zero when the joint holds).
template <class T>
inline void constraint_row(const Model& m, int j, int slot, const JointKinematics<T>& k, JointRow<T>& row) {
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) {
    detail::translational_row(b, k, row);
    return;
  }
  if (m.joint_rotation[j] != kRotationQuaternion) {
    detail::euler_row(m, j, slot, k, true, row);
    return;
  }
  const Vec3<T> vec = vector_part(k.q_rel);
  row.value = b[0] * vec[0] + b[1] * vec[1] + b[2] * vec[2];
  // d Vec(q_rel) = (w I + [v]x) / 2 dt
  Mat3<T> dvec = skew(vec);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 3; ++c) dvec[i][c] = 0.5 * (T(i == c ? 1.0 : 0.0) * k.q_rel[0] + dvec[i][c]);
  detail::rotational_jacobian(b, dvec, k, row);
}

// Minimal coordinate `slot` of joint j (rotation vector for rotational rows).
// `rv` is log(q_rel) (compute it once per joint with rotation_vector).
template <class T>
inline void minimal_row(const Model& m, int j, int slot, const JointKinematics<T>& k, const Vec3<T>& rv,
                        JointRow<T>& row) {
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) {
    detail::translational_row(b, k, row);
    return;
  }
  if (m.joint_rotation[j] != kRotationQuaternion) {  // the axes' angles (euler_joints.h)
    detail::euler_row(m, j, slot, k, false, row);
    return;
  }
  row.value = b[0] * rv[0] + b[1] * rv[1] + b[2] * rv[2];
  detail::rotational_jacobian(b, right_jacobian_inverse(rv), k, row);
}

// ---- angles of any size (revolute limits; docs/physics.md, "Revolute limits of any size")
//
// A revolute joint's angle theta is known from q_rel only modulo 2 pi; a limit beyond
// +-pi needs the winding, which the step gets from the angle at its start z2 (carried
// by a run, Data.angle_ref) and measures from there:
//   theta(q3) = b.log(q3c) + 2 pi n,  n = round((theta2 + b.log(q2* q3) - b.log(q3c)) / 2 pi),
// q3c the canonical form (w >= 0) of q3 = q_rel at z3, q2 = q_rel at z2, theta2 the
// unwrapped angle at z2. The value b.log(q3c) is in (-pi, pi], where the inverse right
// Jacobian is regular (the raw log map reaches 2 pi, where it is singular); n is
// piecewise constant, so the row's Jacobian is the canonical one. The increment
// b.log(q2* q3) is taken on the signed quaternions: an iterate's body quaternions are
// z2's times maps with a positive scalar part (each turning less than pi, step.cpp's
// clipping), so it is continuous in the iterate and in (-2 pi, 2 pi): the branch never
// jumps within a step, however far a Newton iterate turns the joint.
constexpr double kTwoPi = 6.283185307179586;

// q or -q, whichever has w >= 0 (the same rotation).
template <class T>
inline Quat<T> canonical_quaternion(const Quat<T>& q) {
  if (value(q[0]) >= 0.0) return q;
  return Quat<T>{{-q[0], -q[1], -q[2], -q[3]}};
}

// 2 pi n above, for the joint-frame axis b, q = q_rel (values) and its canonical angle.
inline double angle_branch(const double* b, const Quat<double>& q, double canonical, const double* q2, double theta2) {
  const Vec3<double> inc = rotation_vector(multiply(conjugate(load4<double>(q2)), q));
  return kTwoPi * std::round((theta2 + b[0] * inc[0] + b[1] * inc[1] + b[2] * inc[2] - canonical) / kTwoPi);
}

// The angle a step with no carried angle starts from: of the branches canonical + 2 pi n,
// the one nearest `raw` (b.log of the signed q_rel, in (-2 pi, 2 pi): the angle a scene
// gave, for |angle| < 2 pi, and the only angle before revolute limits unwrapped) when it
// lies in [lo, hi]; else the branch in [lo, hi] nearest it; else (an interval narrower
// than a turn that no branch meets) its own: the scene's angle, which the violated limit
// brings in over its time constant (residual.h, limit_target) from the side the scene put
// it on, as MuJoCo's hinge angle (qpos, which has no branches) comes in. (The branch
// violating the interval least, chosen before, turned robosuite's Jaco's elbow at 0 in
// [0.5236, 5.7596] to 2 pi, 4e-6 rad nearer the upper bound: it came in the other way.)
inline double start_angle(double canonical, double raw, double lo, double hi) {
  const double best = canonical + kTwoPi * std::round((raw - canonical) / kTwoPi);
  if (best < lo) {
    const double in = canonical + kTwoPi * std::ceil((lo - canonical) / kTwoPi);  // smallest >= lo
    return in <= hi ? in : best;
  }
  if (best > hi) {
    const double in = canonical + kTwoPi * std::floor((hi - canonical) / kTwoPi);  // largest <= hi
    return in >= lo ? in : best;
  }
  return best;
}

// Row of coordinate f of joint j for its springs, dampers and limit impulses (at z2):
// minimal_row, except that an angle coordinate (Model.angle_unwrapped) whose q_rel has
// w < 0 takes its Jacobian on the canonical quaternion (the raw log's inverse right
// Jacobian is singular at a full turn, |log q_rel| = 2 pi) and keeps the raw value
// (the spring's angle) as a constant shift of the canonical one. With w >= 0 it is
// minimal_row itself.
template <class T>
inline void coordinate_row(const Model& m, int j, int f, const JointKinematics<T>& k, const Vec3<T>& rv,
                           JointRow<T>& row) {
  const int slot = m.free_slot[f];
  if (!m.angle_unwrapped[f] || value(k.q_rel[0]) >= 0.0) {
    minimal_row(m, j, slot, k, rv, row);
    return;
  }
  const double* b = detail::basis_row(m, j, slot);
  const double raw = b[0] * value(rv[0]) + b[1] * value(rv[1]) + b[2] * value(rv[2]);
  minimal_row(m, j, slot, k, rotation_vector(canonical_quaternion(k.q_rel)), row);
  row.value = row.value + (raw - value(row.value));
}

// Row of coordinate f (slot `slot`) of joint j for its limits: minimal_row, with an
// angle coordinate (Model.angle_unwrapped) unwrapped from (q2, theta2) as above.
template <class T>
inline void limit_row(const Model& m, int j, int f, const JointKinematics<T>& k, const Vec3<T>& rv, const double* q2,
                      double theta2, JointRow<T>& row) {
  const int slot = m.free_slot[f];
  if (!m.angle_unwrapped[f]) {
    minimal_row(m, j, slot, k, rv, row);
    return;
  }
  minimal_row(m, j, slot, k, rotation_vector(canonical_quaternion(k.q_rel)), row);
  const Quat<double> q{{value(k.q_rel[0]), value(k.q_rel[1]), value(k.q_rel[2]), value(k.q_rel[3])}};
  row.value = row.value + angle_branch(detail::basis_row(m, j, slot), q, value(row.value), q2, theta2);
}

// ---- locked joints (Drake's Lock; ModelInput.locked, docs/scenes.md "locked")
//
// A locked joint's free coordinate `slot` gets an equality row on the joint impulses
// that holds the joint where it was at the step's start z2: a fixed joint at the pose of
// step k. Relative to (d2, q2), the joint's displacement and q_rel at z2:
//   translational slot: b.(d(z3) - d2);  rotational slot: b.Vec(q2* q_rel(z3)),
// Dojo's own constraint rows (constraint_row) applied to the change since z2, so the
// joint's velocities are zero once the rows hold (x3 = x2 along the locked directions).
// Why not the minimal coordinates the limits use (b.log q_rel(z3) - b.log q_rel2): the
// log's branch at a half turn and its singular inverse right Jacobian at a full turn
// would make a joint locked there ill-posed; Vec(q2* q_rel) is regular at every pose and
// vanishes where the change does. The two have the same zero set near q2, so the
// motion is the same.
// The impulse map is the row's Jacobian at z3 = z2 (Dojo's J(z2)^T lambda): q2* q_rel =
// identity there, so d Vec / dt = I / 2 exactly (lock_impulse_row), whatever z2 is.

// b.(d - d2) or b.Vec(q2* q_rel) of the lock row `slot` (value only; the gradients
// differentiate it in the reference (d2, q2) at z2).
template <class T>
inline T lock_value(const Model& m, int j, int slot, const Vec3<T>& d, const Quat<T>& q_rel, const Vec3<T>& d2,
                    const Quat<T>& q2) {
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) return b[0] * (d[0] - d2[0]) + b[1] * (d[1] - d2[1]) + b[2] * (d[2] - d2[2]);
  const Vec3<T> vec = vector_part(multiply(conjugate(q2), q_rel));
  return b[0] * vec[0] + b[1] * vec[1] + b[2] * vec[2];
}

// Lock row `slot` of joint j at kinematics k (z3) with the reference d2 (3,), q2 (4,).
template <class T>
inline void lock_row(const Model& m, int j, int slot, const JointKinematics<T>& k, const double* d2, const double* q2,
                     JointRow<T>& row) {
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) {
    detail::translational_row(b, k, row);
    row.value = row.value - (b[0] * d2[0] + b[1] * d2[1] + b[2] * d2[2]);
    return;
  }
  const Quat<T> err = multiply(conjugate(load4<T>(q2)), k.q_rel);
  const Vec3<T> vec = vector_part(err);
  row.value = b[0] * vec[0] + b[1] * vec[1] + b[2] * vec[2];
  // a right increment of q_rel is one of err: d Vec(err) = (w I + [v]x)/2 dt (as constraint_row)
  Mat3<T> dvec = skew(vec);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 3; ++c) dvec[i][c] = 0.5 * (T(i == c ? 1.0 : 0.0) * err[0] + dvec[i][c]);
  detail::rotational_jacobian(b, dvec, k, row);
}

// The impulse map of lock row `slot` at z2 (k at z2): lock_row's Jacobian at err =
// identity, b^T [d_xa d_ta d_xb d_tb] or b^T (I/2) [0, rel_ta, 0, I]. Exact as a function
// of z2 (the reference moves with z2), which the gradients differentiate.
template <class T>
inline void lock_impulse_row(const Model& m, int j, int slot, const JointKinematics<T>& k, JointRow<T>& row) {
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) {
    detail::translational_row(b, k, row);
    return;
  }
  row.value = T(0.0);
  Mat3<T> half = identity3<T>();
  for (int i = 0; i < 3; ++i) half[i][i] = T(0.5);
  detail::rotational_jacobian(b, half, k, row);
}

// Row rr of joint j at kinematics k (z3): Dojo's constraint row, or a lock row measured
// from the joint's configuration at z2 (d2 (nj, 3), q2 (nj, 4): Data.lock_d2, lock_q2).
template <class T>
inline void joint_row(const Model& m, int j, int rr, const JointKinematics<T>& k, const double* d2, const double* q2,
                      JointRow<T>& row) {
  if (m.row_lock[rr])
    lock_row(m, j, m.row_slot[rr], k, d2 + 3 * j, q2 + 4 * j, row);
  else
    constraint_row(m, j, m.row_slot[rr], k, row);
}

// The value of joint_row alone (the same operations, so the same bits), for a joint whose
// rotation is Dojo's quaternion (Model.joint_rotation): what the residual needs at an
// iterate whose rows' Jacobians may never be used (residual.h, deferred_joint_jacobians).
inline double joint_row_value(const Model& m, int j, int rr, const JointKinematics<double>& k, const double* d2,
                              const double* q2) {
  const int slot = m.row_slot[rr];
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) {
    const double v = b[0] * k.d[0] + b[1] * k.d[1] + b[2] * k.d[2];
    if (!m.row_lock[rr]) return v;
    const double* r = d2 + 3 * j;  // lock_row's reference
    return v - (b[0] * r[0] + b[1] * r[1] + b[2] * r[2]);
  }
  const Vec3<double> vec = vector_part(m.row_lock[rr] ? multiply(conjugate(load4<double>(q2 + 4 * j)), k.q_rel) : k.q_rel);
  return b[0] * vec[0] + b[1] * vec[1] + b[2] * vec[2];
}

// Input row `slot` of joint j: the body impulses per unit input and time.
template <class T>
inline void input_row(const Model& m, int j, int slot, const JointKinematics<T>& k, JointRow<T>& row) {
  const double* b = detail::basis_row(m, j, slot);
  if (slot < 3) {
    detail::translational_row(b, k, row);
    return;
  }
  if (m.joint_rotation[j] != kRotationQuaternion) {
    // the angle's generalized force: impulses along the angle's gradient (euler_joints.h)
    detail::euler_row(m, j, slot, k, false, row);
    row.value = T(0.0);
    return;
  }
  row.value = T(0.0);
  detail::rotational_jacobian(b, k.rot_rel, k, row);
}

}  // namespace dojo
