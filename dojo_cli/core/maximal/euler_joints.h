// Universal and gimbal joints: a relative rotation that is a product of revolute axes
// through one point, R = R(a1, t1) R(a2, t2) [R(a3, t3)], its coordinates the axes'
// angles (Euler angles). This is how a URDF writes a two- or three-axis joint (a chain of
// revolute joints through massless links; docs/urdf.md), and the angles are exactly the
// chain's revolute angles (Pinocchio's coordinates of the same file).
//
// Dojo's rotational elements constrain components of Vec(q_rel) about fixed axes; a
// universal (Hooke's) joint is not one of them (an orbital joint about a1 x a2 holds
// that component of q_rel at zero, while R(a1, t1) R(a2, t2) has sin(t1/2) sin(t2/2)
// there). Its one rotational constraint is
//   c = a1 . R a2 - a1 . a2 = 0        (a1 . a2 = 0 here: the axes are orthogonal),
// which holds exactly on R = R(a1, t1) R(a2, t2): R a2 is then perpendicular to a1, so it
// is a2 turned about a1, and what is left fixes a2. Its gradient (below) is never zero
// on that set, so the row is regular at every pose (no gimbal lock in the constraint).
//
// Frames: the joint frame (kinematics.h, q_rel = offset* qa* qb), in which the axes are
// given as the rotational basis rows (Model.basis rows 3..5): a universal joint's rows
// are (a1, a2, a1 x a2) with the third constrained; a gimbal's (a1, a2, a3), a3 = s a1 x a2
// (s = +-1), none constrained. With B = [a1, a2, a1 x a2] (columns, orthonormal) the
// rotation in axis coordinates is R' = B^T R B, and
//   universal: R' = Rx(t1) Ry(t2): t1 = atan2(R'21, R'11) (R a2 = a2 turned by t1 about
//     a1), t2 = atan2(R'02, R'00) (R^T a1 = a1 turned by -t2 about a2), both over the
//     full turn (-pi, pi]; c = R'01;
//   gimbal: R' = Rx(t1) Ry(t2) Rz(s t3) (Tait-Bryan XYZ): t1 = atan2(-R'12, R'22),
//     t2 = atan2(R'02, sqrt(R'12^2 + R'22^2)) in [-pi/2, pi/2], t3 = s atan2(-R'01, R'00);
//     singular at |t2| = pi/2 (gimbal lock, as every three-angle chart; URDF limits of a
//     human's hips and shoulders stay inside).
// The full-turn angles (the universal joint's two, a gimbal's first and third) are read in
// (c - pi, c + pi] around the centre c of their limit interval (Model.angle_centre): a joint
// held inside its limits never reaches the seam, wherever the limits lie (human.urdf's
// elbow: [-0.35, pi], the upper limit on atan2's own seam). The gradients do not change.
// Gradients with respect to the right increment t of q_rel (R -> R exp([t]x), the
// increment kinematics.h's rotational rows take): R'_ij -> R' exp([B^T t]x), so
// d R'_ij / d(B^T t) = e_j x r_i (r_i the i-th row of R'), and d/dt = B d/d(B^T t);
// an angle atan2(y, x) has d = (x dy - y dx) / (x^2 + y^2).
// Inputs: a joint input is the generalized force of its angle (the URDF's per-axis
// torque, Pinocchio's tau), so its body impulses are h u times the angle's gradient (the
// power balance u dt_i/dt on the joint's motion), not Dojo's fixed-axis torque.
//
// Templated on the scalar so that the gradients' dual numbers differentiate these
// hand-derived first derivatives (kinematics.h).
#pragma once

#include <cmath>

#include "model.h"
#include "math/spatial.h"

namespace dojo {

// Model.joint_rotation: how a joint's rotational basis rows are read.
enum JointRotation : int {
  kRotationQuaternion = 0,  // Dojo's: components of Vec(q_rel) and log(q_rel) on the rows
  kRotationUniversal = 1,   // two axes (rows 3, 4), the Hooke constraint on row 5
  kRotationGimbal = 2,      // three axes (rows 3, 4, 5), no constraint
};
// Names as the scene and _core.JOINT_ROTATIONS give them.
constexpr const char* kJointRotationNames[3] = {"quaternion", "universal", "gimbal"};
// Axes of a universal or gimbal joint must be unit and orthogonal to this (a scene's
// axes are unit vectors to rounding; Model's constructor refuses others).
constexpr double kAxesOrthogonalTolerance = 1e-9;
constexpr double kPi = 3.141592653589793;

template <class T>
struct EulerAngles {
  T angle[3];          // t1, t2, (t3): the axes' angles
  Vec3<T> grad[3];     // d angle_i / dt, joint frame
  T constraint;        // universal: a1 . R a2
  Vec3<T> constraint_grad;
};

namespace detail {
// e_j x r for a coordinate axis e_j
template <class T>
inline Vec3<T> unit_cross(int j, const Vec3<T>& r) {
  if (j == 0) return Vec3<T>{{T(0.0), -r[2], r[1]}};
  if (j == 1) return Vec3<T>{{r[2], T(0.0), -r[0]}};
  return Vec3<T>{{-r[1], r[0], T(0.0)}};
}

// atan2(y, x) and its gradient from the gradients of y and x
template <class T>
inline void atan2_with_gradient(const T& y, const Vec3<T>& gy, const T& x, const Vec3<T>& gx, T& angle,
                                Vec3<T>& grad) {
  using std::atan2;
  angle = atan2(y, x);
  const T r2 = x * x + y * y;
  for (int k = 0; k < 3; ++k) grad[k] = (x * gy[k] - y * gx[k]) / r2;
}
}  // namespace detail

// The full-turn angles into (c - pi, c + pi] around Model.angle_centre (a gimbal's middle
// angle, in [-pi/2, pi/2], stays); atan2 gives them in (-pi, pi].
template <class T>
inline void centre_angles(const Model& m, int j, EulerAngles<T>& out) {
  const int f0 = m.joint_free_start[j];
  const bool universal = m.joint_rotation[j] == kRotationUniversal;
  for (int i = 0; i < (universal ? 2 : 3); ++i) {
    if (!universal && i == 1) continue;
    const double c = m.angle_centre[f0 + i];
    if (c == 0.0) continue;
    out.angle[i] = out.angle[i] + 2.0 * kPi * std::round((c - value(out.angle[i])) / (2.0 * kPi));
  }
}

// The columns of B (joint frame): a1, a2, n = a1 x a2; and s = a3 . n (gimbal).
inline void euler_axes(const Model& m, int j, double axes[3][3], double& sign) {
  const double* a1 = &m.basis[18 * j + 9];
  const double* a2 = &m.basis[18 * j + 12];
  const double* a3 = &m.basis[18 * j + 15];
  for (int k = 0; k < 3; ++k) {
    axes[0][k] = a1[k];
    axes[1][k] = a2[k];
  }
  axes[2][0] = a1[1] * a2[2] - a1[2] * a2[1];
  axes[2][1] = a1[2] * a2[0] - a1[0] * a2[2];
  axes[2][2] = a1[0] * a2[1] - a1[1] * a2[0];
  sign = (a3[0] * axes[2][0] + a3[1] * axes[2][1] + a3[2] * axes[2][2]) >= 0.0 ? 1.0 : -1.0;
}

// Angles, their gradients and (universal) the constraint of joint j at R = R(q_rel).
template <class T>
inline void euler_angles(const Model& m, int j, const Mat3<T>& rot_rel, EulerAngles<T>& out) {
  double e[3][3], s;
  euler_axes(m, j, e, s);
  // R' = B^T R B
  Mat3<T> rb;  // R B
  for (int a = 0; a < 3; ++a)
    for (int k = 0; k < 3; ++k) rb[a][k] = rot_rel[a][0] * e[k][0] + rot_rel[a][1] * e[k][1] + rot_rel[a][2] * e[k][2];
  Mat3<T> rp;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) rp[i][k] = e[i][0] * rb[0][k] + e[i][1] * rb[1][k] + e[i][2] * rb[2][k];
  // gradients of R'_ij with respect to t' = B^T t: e_j x r_i, then d/dt = B d/dt'
  auto grad = [&](int i, int jj) {
    const Vec3<T> r{{rp[i][0], rp[i][1], rp[i][2]}};
    const Vec3<T> g = detail::unit_cross(jj, r);
    Vec3<T> out_g;
    for (int k = 0; k < 3; ++k) out_g[k] = g[0] * e[0][k] + g[1] * e[1][k] + g[2] * e[2][k];
    return out_g;
  };
  const bool universal = m.joint_rotation[j] == kRotationUniversal;
  if (universal) {
    detail::atan2_with_gradient(rp[2][1], grad(2, 1), rp[1][1], grad(1, 1), out.angle[0], out.grad[0]);
    detail::atan2_with_gradient(rp[0][2], grad(0, 2), rp[0][0], grad(0, 0), out.angle[1], out.grad[1]);
    out.angle[2] = T(0.0);
    out.grad[2] = Vec3<T>{{T(0.0), T(0.0), T(0.0)}};
    out.constraint = rp[0][1];
    out.constraint_grad = grad(0, 1);
    centre_angles(m, j, out);
    return;
  }
  using std::sqrt;
  const Vec3<T> g12 = grad(1, 2), g22 = grad(2, 2);
  detail::atan2_with_gradient(-rp[1][2], -g12, rp[2][2], g22, out.angle[0], out.grad[0]);
  const T rho = sqrt(rp[1][2] * rp[1][2] + rp[2][2] * rp[2][2]);
  Vec3<T> grho;
  for (int k = 0; k < 3; ++k) grho[k] = (rp[1][2] * g12[k] + rp[2][2] * g22[k]) / rho;
  detail::atan2_with_gradient(rp[0][2], grad(0, 2), rho, grho, out.angle[1], out.grad[1]);
  detail::atan2_with_gradient(-rp[0][1], -grad(0, 1), rp[0][0], grad(0, 0), out.angle[2], out.grad[2]);
  out.angle[2] = s * out.angle[2];
  out.grad[2] = s * out.grad[2];
  out.constraint = T(0.0);
  out.constraint_grad = Vec3<T>{{T(0.0), T(0.0), T(0.0)}};
  centre_angles(m, j, out);
}

// q_rel = exp(a1 t1 / 2) exp(a2 t2 / 2) [exp(a3 t3 / 2)] of joint j's angles (theta:
// the rotational basis coordinates, slots 3..5; a universal joint's third is unused).
template <class T>
inline Quat<T> quaternion_from_euler_angles(const Model& m, int j, const T* theta) {
  using std::cos;
  using std::sin;
  const int n = m.joint_rotation[j] == kRotationUniversal ? 2 : 3;
  Quat<T> q = identity_quat<T>();
  for (int i = 0; i < n; ++i) {
    const double* a = &m.basis[18 * j + 9 + 3 * i];
    const T half = 0.5 * theta[i];
    const T sh = sin(half);
    q = multiply(q, Quat<T>{{cos(half), sh * a[0], sh * a[1], sh * a[2]}});
  }
  return q;
}

// x - 2 pi round(x / 2 pi): an angle difference in (-pi, pi] (the rate of an angle that
// crossed its chart's seam at +-pi within one interval).
template <class T>
inline T wrapped_angle(const T& x) {
  return x - 6.283185307179586 * std::round(value(x) / 6.283185307179586);
}

}  // namespace dojo
