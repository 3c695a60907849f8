// Small fixed-size vectors, 3x3 matrices, quaternions and the spatial algebra (motions,
// forces, rigid transforms, rigid-body inertias), templated on the scalar.
//
// Conventions (the project's): quaternions [w, x, y, z], Hamilton product, body to
// world; rotation increments are right (body-frame) perturbations q -> q exp(t/2)
// (Dojo's attitude Jacobian, dojo_engine_notes.md section 2). Matrices are row-major.
// The formulas mirror the order of operations of the numpy implementation they
// replaced (dojo_cli/math/quaternion.py) so results agree to rounding.
#pragma once

#include <cmath>

#include "dual.h"

namespace dojo {

template <class T>
struct Vec3 {
  T v[3];
  T& operator[](int i) { return v[i]; }
  const T& operator[](int i) const { return v[i]; }
};

template <class T>
struct Mat3 {
  T m[3][3];
  T* operator[](int i) { return m[i]; }
  const T* operator[](int i) const { return m[i]; }
};

template <class T>
struct Quat {
  T q[4];  // [w, x, y, z]
  T& operator[](int i) { return q[i]; }
  const T& operator[](int i) const { return q[i]; }
};

// Below this angle (rad) the series expansions replace the closed forms (their
// divisions lose precision); the series error is O(angle^4) ~ 1e-24 there.
constexpr double kSmallAngle = 1e-6;
// Below this angle the inverse right Jacobian's coefficient uses its series
// 1/12 + a^2/720 (the closed form cancels catastrophically).
constexpr double kSmallJacobianAngle = 1e-4;

// ------------------------------------------------------------------ vectors
template <class T>
inline Vec3<T> vec3(const T& a, const T& b, const T& c) {
  return Vec3<T>{{a, b, c}};
}
template <class T>
inline Vec3<T> load3(const double* p) {
  return Vec3<T>{{T(p[0]), T(p[1]), T(p[2])}};
}
template <class T>
inline Vec3<T> operator+(const Vec3<T>& a, const Vec3<T>& b) {
  return Vec3<T>{{a[0] + b[0], a[1] + b[1], a[2] + b[2]}};
}
template <class T>
inline Vec3<T> operator-(const Vec3<T>& a, const Vec3<T>& b) {
  return Vec3<T>{{a[0] - b[0], a[1] - b[1], a[2] - b[2]}};
}
template <class T>
inline Vec3<T> operator-(const Vec3<T>& a) {
  return Vec3<T>{{-a[0], -a[1], -a[2]}};
}
template <class T, class S>
inline Vec3<T> operator*(const S& s, const Vec3<T>& a) {
  return Vec3<T>{{s * a[0], s * a[1], s * a[2]}};
}
template <class T>
inline T dot(const Vec3<T>& a, const Vec3<T>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
template <class T>
inline Vec3<T> cross(const Vec3<T>& a, const Vec3<T>& b) {
  return Vec3<T>{{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}};
}

// ----------------------------------------------------------------- matrices
template <class T>
inline Mat3<T> identity3() {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = T(i == j ? 1.0 : 0.0);
  return out;
}
template <class T>
inline Mat3<T> load33(const double* p) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = T(p[3 * i + j]);
  return out;
}
template <class T>
inline Mat3<T> transpose(const Mat3<T>& a) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = a[j][i];
  return out;
}
template <class T, class U>
inline Mat3<T> matmul(const Mat3<U>& a, const Mat3<T>& b) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
  return out;
}
template <class T>
inline Mat3<T> matmul(const Mat3<T>& a, const Mat3<T>& b) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = a[i][0] * b[0][j] + a[i][1] * b[1][j] + a[i][2] * b[2][j];
  return out;
}
// M v; M may be of another scalar type than v (a constant rotation times a dual vector)
template <class U, class T>
inline Vec3<T> matvec(const Mat3<U>& a, const Vec3<T>& v) {
  return Vec3<T>{{a[0][0] * v[0] + a[0][1] * v[1] + a[0][2] * v[2], a[1][0] * v[0] + a[1][1] * v[1] + a[1][2] * v[2],
                  a[2][0] * v[0] + a[2][1] * v[1] + a[2][2] * v[2]}};
}
// a^T v (a may be of another scalar type than v, as for matvec)
template <class U, class T>
inline Vec3<T> tmatvec(const Mat3<U>& a, const Vec3<T>& v) {
  return Vec3<T>{{a[0][0] * v[0] + a[1][0] * v[1] + a[2][0] * v[2], a[0][1] * v[0] + a[1][1] * v[1] + a[2][1] * v[2],
                  a[0][2] * v[0] + a[1][2] * v[1] + a[2][2] * v[2]}};
}
template <class T>
inline Mat3<T> skew(const Vec3<T>& v) {
  Mat3<T> out;
  out[0][0] = T(0.0);
  out[0][1] = -v[2];
  out[0][2] = v[1];
  out[1][0] = v[2];
  out[1][1] = T(0.0);
  out[1][2] = -v[0];
  out[2][0] = -v[1];
  out[2][1] = v[0];
  out[2][2] = T(0.0);
  return out;
}
template <class T>
inline Mat3<T> operator+(const Mat3<T>& a, const Mat3<T>& b) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = a[i][j] + b[i][j];
  return out;
}
template <class T>
inline Mat3<T> operator-(const Mat3<T>& a) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = -a[i][j];
  return out;
}
template <class T>
inline Mat3<T> operator-(const Mat3<T>& a, const Mat3<T>& b) {
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = a[i][j] - b[i][j];
  return out;
}

// -------------------------------------------------------------- quaternions
template <class T>
inline Quat<T> load4(const double* p) {
  return Quat<T>{{T(p[0]), T(p[1]), T(p[2]), T(p[3])}};
}
template <class T>
inline Quat<T> identity_quat() {
  return Quat<T>{{T(1.0), T(0.0), T(0.0), T(0.0)}};
}
template <class T>
inline Quat<T> conjugate(const Quat<T>& q) {
  return Quat<T>{{q[0], -q[1], -q[2], -q[3]}};
}
// Hamilton product p * q.
template <class T>
inline Quat<T> multiply(const Quat<T>& p, const Quat<T>& q) {
  return Quat<T>{{p[0] * q[0] - p[1] * q[1] - p[2] * q[2] - p[3] * q[3],
                  p[0] * q[1] + p[1] * q[0] + p[2] * q[3] - p[3] * q[2],
                  p[0] * q[2] - p[1] * q[3] + p[2] * q[0] + p[3] * q[1],
                  p[0] * q[3] + p[1] * q[2] - p[2] * q[1] + p[3] * q[0]}};
}
// R(q), body to world, for unit q (quadratic in q).
template <class T>
inline Mat3<T> rotation(const Quat<T>& q) {
  const T &w = q[0], &x = q[1], &y = q[2], &z = q[3];
  Mat3<T> r;
  r[0][0] = w * w + x * x - y * y - z * z;
  r[0][1] = 2.0 * (x * y) - 2.0 * (w * z);
  r[0][2] = 2.0 * (x * z) + 2.0 * (w * y);
  r[1][0] = 2.0 * (x * y) + 2.0 * (w * z);
  r[1][1] = w * w - x * x + y * y - z * z;
  r[1][2] = 2.0 * (y * z) - 2.0 * (w * x);
  r[2][0] = 2.0 * (x * z) - 2.0 * (w * y);
  r[2][1] = 2.0 * (y * z) + 2.0 * (w * x);
  r[2][2] = w * w - x * x - y * y + z * z;
  return r;
}
// Rotation by angle about the unit axis a (Rodrigues): cos 1 + sin [a]x + (1 - cos) a a^T.
// One sine and cosine, no square root: the joint rotation of a revolute joint.
template <class T>
inline Mat3<T> axis_rotation(const Vec3<double>& a, const T& angle) {
  const T c = cos(angle), s = sin(angle), t = 1.0 - c;
  Mat3<T> R;
  R[0][0] = c + t * (a[0] * a[0]);
  R[0][1] = t * (a[0] * a[1]) - s * a[2];
  R[0][2] = t * (a[0] * a[2]) + s * a[1];
  R[1][0] = t * (a[1] * a[0]) + s * a[2];
  R[1][1] = c + t * (a[1] * a[1]);
  R[1][2] = t * (a[1] * a[2]) - s * a[0];
  R[2][0] = t * (a[2] * a[0]) - s * a[1];
  R[2][1] = t * (a[2] * a[1]) + s * a[0];
  R[2][2] = c + t * (a[2] * a[2]);
  return R;
}
template <class T>
inline Vec3<T> vector_part(const Quat<T>& q) {
  return Vec3<T>{{q[1], q[2], q[3]}};
}
// q exp(t/2) to first order, q * [1, t/2]: enough to seed the first derivatives of
// a dual-number tangent perturbation t (its value is zero).
template <class T>
inline Quat<T> perturb_right(const Quat<T>& q, const Vec3<T>& t) {
  const Quat<T> e{{T(1.0), 0.5 * t[0], 0.5 * t[1], 0.5 * t[2]}};
  return multiply(q, e);
}

// log map: angle * axis with angle = 2 atan2(|vec|, w) in [0, 2 pi), no sign
// canonicalisation (Dojo's rotation_vector).
template <class T>
inline Vec3<T> rotation_vector(const Quat<T>& q) {
  const Vec3<T> v = vector_part(q);
  const T s = sqrt(dot(v, v));
  if (value(s) < kSmallAngle) {
    // angle / s -> 2 / w as s -> 0
    const T k = 2.0 / q[0];
    return k * v;
  }
  const T k = (2.0 * atan2(s, q[0])) / s;
  return k * v;
}

// exp map: the unit quaternion rotating by |rv| about rv / |rv|.
template <class T>
inline Quat<T> quaternion_from_rotation_vector(const Vec3<T>& rv) {
  const T angle_sq = dot(rv, rv);
  if (value(angle_sq) < kSmallAngle * kSmallAngle) {
    // Series in angle^2, with no square root: its derivative is infinite at zero, which
    // would make dual-number derivatives NaN at rv = 0 (coordinates.h differentiates this
    // map at zero joint angles). cos(a/2) = 1 - a^2/8 and sin(a/2)/a = 1/2 - a^2/48, the
    // dropped terms O(a^4) ~ 1e-24.
    const T k = 0.5 - angle_sq / 48.0;
    return Quat<T>{{1.0 - angle_sq / 8.0, k * rv[0], k * rv[1], k * rv[2]}};
  }
  const T angle = sqrt(angle_sq);
  const T half = 0.5 * angle;
  const T k = sin(half) / angle;
  return Quat<T>{{cos(half), k * rv[0], k * rv[1], k * rv[2]}};
}

// Right Jacobian of SO(3), J_r(phi) = I - a [phi]x + b [phi]x^2 with a = (1 - cos t) / t^2,
// b = (t - sin t) / t^3 (Barfoot, State Estimation for Robotics, eq. 7.77a, right form):
// R(phi + d) = R(phi) exp(J_r(phi) d). Series in t^2 below t = 0.1 (no square root: its
// derivatives are infinite at zero, and dual numbers differentiate this twice).
template <class T>
inline Mat3<T> right_jacobian(const Vec3<T>& phi) {
  const T x = dot(phi, phi);
  T a, b;
  if (value(x) < 1e-2) {
    a = 0.5 - x * (1.0 / 24.0 - x * (1.0 / 720.0 - x * (1.0 / 40320.0 - x / 3628800.0)));
    b = 1.0 / 6.0 - x * (1.0 / 120.0 - x * (1.0 / 5040.0 - x * (1.0 / 362880.0 - x / 39916800.0)));
  } else {
    const T t = sqrt(x);
    a = (1.0 - cos(t)) / x;
    b = (t - sin(t)) / (x * t);
  }
  const Mat3<T> k = skew(phi);
  const Mat3<T> kk = matmul(k, k);
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = T(i == j ? 1.0 : 0.0) - a * k[i][j] + b * kk[i][j];
  return out;
}

// Inverse right Jacobian of SO(3): J_r^-1(t) = I + [t]/2 + (1/a^2 - cot(a/2)/(2a)) [t]^2
// (Barfoot, State Estimation for Robotics, eq. 7.187, right convention).
template <class T>
inline Mat3<T> right_jacobian_inverse(const Vec3<T>& rv) {
  const T a_sq = dot(rv, rv);
  T coef;
  if (value(a_sq) < kSmallJacobianAngle * kSmallJacobianAngle) {
    // the series in a^2, with no square root (its derivative is infinite at zero: dual
    // numbers would turn 0 * inf into NaN at rv = 0, e.g. a prismatic joint)
    coef = 1.0 / 12.0 + a_sq / 720.0;
  } else {
    const T a = sqrt(a_sq);
    coef = 1.0 / (a * a) - 1.0 / (2.0 * a * tan(a / 2.0));
  }
  const Mat3<T> k = skew(rv);
  const Mat3<T> kk = matmul(k, k);
  Mat3<T> out;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = T(i == j ? 1.0 : 0.0) + 0.5 * k[i][j] + coef * kk[i][j];
  return out;
}

// Dojo's orientation increment qmap(w) = (h/2) [sqrt(4/h^2 - |w|^2), w]: q3 = q2 qmap(w25)
// (dojo_engine_notes.md 2.2).
template <class T>
inline Quat<T> integrator_map(const Vec3<T>& w, double h) {
  const T s = sqrt(4.0 / (h * h) - dot(w, w));
  return Quat<T>{{0.5 * h * s, 0.5 * h * w[0], 0.5 * h * w[1], 0.5 * h * w[2]}};
}

// d theta3 / d w25 for q3 = q2 qmap(w): (h^2/2) (s I + w w^T / s - [w]x), s = sqrt(4/h^2 - |w|^2).
template <class T>
inline Mat3<T> integrator_map_jacobian(const Vec3<T>& w, double h) {
  const T s = sqrt(4.0 / (h * h) - dot(w, w));
  Mat3<T> out;
  const Mat3<T> k = skew(w);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) out[i][j] = 0.5 * h * h * (T(i == j ? 1.0 : 0.0) * s + w[i] * w[j] / s - k[i][j]);
  return out;
}

// ------------------------------------------------------------ spatial algebra
// Spatial vectors in Plücker coordinates, [linear; angular] (Pinocchio's order; Featherstone,
// RBDA ch. 2, orders them [angular; linear]): a motion m = [v; w] (v the velocity of the
// point at the frame's origin), a force f = [f; n] (n the moment about the origin).
template <class T>
struct Motion {
  Vec3<T> v, w;
};
template <class T>
struct Force {
  Vec3<T> f, n;
};
template <class T>
inline Vec3<T> zero3() {
  return Vec3<T>{{T(0.0), T(0.0), T(0.0)}};
}
template <class T>
inline Motion<T> zero_motion() {
  return Motion<T>{zero3<T>(), zero3<T>()};
}
template <class T>
inline Force<T> zero_force() {
  return Force<T>{zero3<T>(), zero3<T>()};
}
template <class T>
inline Motion<T> operator+(const Motion<T>& a, const Motion<T>& b) {
  return Motion<T>{a.v + b.v, a.w + b.w};
}
template <class T>
inline Motion<T> operator-(const Motion<T>& a, const Motion<T>& b) {
  return Motion<T>{a.v - b.v, a.w - b.w};
}
template <class T, class S>
inline Motion<T> operator*(const S& s, const Motion<T>& a) {
  return Motion<T>{s * a.v, s * a.w};
}
template <class T>
inline Force<T> operator+(const Force<T>& a, const Force<T>& b) {
  return Force<T>{a.f + b.f, a.n + b.n};
}
template <class T>
inline Force<T> operator-(const Force<T>& a, const Force<T>& b) {
  return Force<T>{a.f - b.f, a.n - b.n};
}
template <class T>
inline Force<T> operator-(const Force<T>& a) {
  return Force<T>{-a.f, -a.n};
}
template <class T, class S>
inline Force<T> operator*(const S& s, const Force<T>& a) {
  return Force<T>{s * a.f, s * a.n};
}
template <class T>
inline Motion<T>& operator+=(Motion<T>& a, const Motion<T>& b) {
  a = a + b;
  return a;
}
template <class T>
inline Force<T>& operator+=(Force<T>& a, const Force<T>& b) {
  a = a + b;
  return a;
}
// power m . f = v . f + w . n
template <class T>
inline T dot(const Motion<T>& m, const Force<T>& f) {
  return dot(m.v, f.f) + dot(m.w, f.n);
}
// motion cross product a x b = [wa x vb + va x wb; wa x wb] (RBDA eq. 2.31, crm)
template <class T>
inline Motion<T> cross(const Motion<T>& a, const Motion<T>& b) {
  return Motion<T>{cross(a.w, b.v) + cross(a.v, b.w), cross(a.w, b.w)};
}
// force cross product m x* f = [w x f; w x n + v x f] (RBDA eq. 2.32, crf)
template <class T>
inline Force<T> cross(const Motion<T>& m, const Force<T>& f) {
  return Force<T>{cross(m.w, f.f), cross(m.w, f.n) + cross(m.v, f.f)};
}
// the linear velocity at the point x of a motion given at the origin: v + w x x
template <class T>
inline Vec3<T> velocity_at(const Motion<T>& m, const Vec3<T>& x) {
  return m.v + cross(m.w, x);
}

// A rigid transform (SE(3)): a frame with rotation R (its axes in the parent's) and origin p
// (in the parent). act maps the frame's spatial vectors to the parent's (RBDA eq. 2.24).
template <class T>
struct Transform {
  Mat3<T> R;
  Vec3<T> p;
};
// X m = [R v + p x R w; R w]
template <class T>
inline Motion<T> act(const Transform<T>& X, const Motion<T>& m) {
  const Vec3<T> w = matvec(X.R, m.w);
  return Motion<T>{matvec(X.R, m.v) + cross(X.p, w), w};
}
// X* f = [R f; R n + p x R f]
template <class T>
inline Force<T> act(const Transform<T>& X, const Force<T>& f) {
  const Vec3<T> ff = matvec(X.R, f.f);
  return Force<T>{ff, matvec(X.R, f.n) + cross(X.p, ff)};
}
// X1 X2: the frame X2 (given in X1's) in X1's parent
template <class T>
inline Transform<T> compose(const Transform<T>& a, const Transform<T>& b) {
  return Transform<T>{matmul(a.R, b.R), a.p + matvec(a.R, b.p)};
}

// A rigid body's spatial inertia about a frame's origin, in that frame's axes: mass m, first
// moment h = m c (c the centre of mass) and rotational inertia about the origin
// Io = Ic + m ([c]x [c]x^T) (RBDA eq. 2.63). Ten numbers instead of a dense 6x6: the
// products below cost about a third of a 6x6 one, and sums of inertias (composite bodies)
// stay inertias.
template <class T>
struct Inertia {
  T m;
  Vec3<T> h;
  Mat3<T> I;  // symmetric
};
template <class T>
inline Inertia<T> operator+(const Inertia<T>& a, const Inertia<T>& b) {
  return Inertia<T>{a.m + b.m, a.h + b.h, a.I + b.I};
}
template <class T>
inline Inertia<T>& operator+=(Inertia<T>& a, const Inertia<T>& b) {
  a = a + b;
  return a;
}
// I m = [m v - h x w; Io w + h x v]
template <class T>
inline Force<T> operator*(const Inertia<T>& Y, const Motion<T>& x) {
  return Force<T>{Y.m * x.v - cross(Y.h, x.w), matvec(Y.I, x.w) + cross(Y.h, x.v)};
}
// The inertia of a body of mass m, centre c and rotational inertia Ic about c, all in one
// frame: h = m c, Io = Ic + m (|c|^2 1 - c c^T).
template <class T>
inline Inertia<T> body_inertia(const T& mass, const Vec3<T>& c, const Mat3<T>& Ic) {
  const T cc = dot(c, c);
  Inertia<T> out{mass, mass * c, Ic};
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) out.I[r][k] = Ic[r][k] + mass * ((r == k ? cc : T(0.0)) - c[r] * c[k]);
  return out;
}

}  // namespace dojo
