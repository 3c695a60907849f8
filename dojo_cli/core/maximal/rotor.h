// Rotor inertia (MuJoCo's armature) of a joint with one free rotation, in the variational
// integrator.
//
// The rotor adds the kinetic energy T = 1/2 a theta_dot^2 of the joint angle's rate. For a
// joint with one free rotation about the unit axis b (joint frame), theta = b . log(q_rel) and
// theta_dot = n_c . w_c - n_p . w_p exactly, at every configuration: w_c, w_p are the bodies'
// angular velocities in their own frames, n_c = b (the child frame is the joint frame turned
// about b) and n_p = R(orientation_offset) b (the parent frame). So T is a quadratic form in
// the bodies' angular velocities with constant coefficients: an inertia coupling the two bodies.
//
// Dojo's rotational discrete Lagrangian h T(w25), w25 the midpoint angular velocity of
// q3 = q2 qmap(w25), gives each body the discrete momenta (dynamics.h momentum)
//   right = (h/2)(s p + w x p),   left = (h/2)(s p - w x p),   p = dT/dw,  s = sqrt(4/h^2 - |w|^2),
// and the map's Jacobian is per body, so a coupled quadratic T gives the same form with
// p_b = dT/dw_b: p_c = a n_c theta_dot, p_p = -a n_p theta_dot (the world has none). The body
// residual gains right(w25) - left(w15) of each rotor: the forced discrete Euler-Lagrange
// equation of the bodies plus rotor, as variational as the bodies' own term (energy test:
// tests/simulation/test_armature_variational.py). T has no configuration dependence, so the
// rotor terms depend on the velocities only (no dz2 terms in the gradients).
//
// A linear rotor (ModelInput.rotor_linear) is the armature of a translation of a joint whose
// parent is the world and whose rate is n . v_c exactly on the joint's constraints, n the
// translation's world axis (rotor_axis_child) and v_c the child's linear velocity: the joint's
// displacement d = x_c + R(q_c) p_c - p_p (kinematics.h) has the rate v_c + R(q_c)(w_c x p_c),
// which is v_c when the joint locks the child's rotation (prismatic, planar, fixed_orientation:
// w_c = 0) or its anchor is the centre of mass (p_c = 0). T = 1/2 a (n . v_c)^2 is then a
// constant quadratic form in v_c, a mass a n n^T added to the child's, and Dojo's linear
// discrete Lagrangian h T(v25) gives the momenta right = a n (n . v25), left = a n (n . v15)
// (the body's own m v25, m v15): the residual's linear rows gain right - left, the Newton
// matrix a n n^T on the child's linear block, the gradients -a n n^T in its v15 columns. With
// the rotation locked, T's extension off the constraint (w_c != 0) changes only the lock's
// torque, not the motion. A moving parent makes the rate depend on the configuration
// (R(q_p)^T (v_c - v_p) - w_p x R(q_p)^T (x_c - x_p)), which this constant form does not hold.
#pragma once

#include "dynamics.h"
#include "model.h"

namespace dojo {

// theta_dot of rotor r at the parent's and child's angular velocities (wp null: the world).
inline double rotor_rate(const Model& m, int r, const double* wp, const double* wc) {
  const double* nc = &m.rotor_axis_child[3 * r];
  const double* np = &m.rotor_axis_parent[3 * r];
  double rate = nc[0] * wc[0] + nc[1] * wc[1] + nc[2] * wc[2];
  if (wp) rate -= np[0] * wp[0] + np[1] * wp[1] + np[2] * wp[2];
  return rate;
}

// A linear rotor's discrete momentum a n (n . v) at the child's linear velocity v (the same
// form right and left: the linear part of the discrete Lagrangian has no sign term).
inline void linear_rotor_momentum(const Model& m, int r, const double* v, double* out) {
  const double* n = &m.rotor_axis_child[3 * r];
  const double rate = n[0] * v[0] + n[1] * v[1] + n[2] * v[2];
  for (int k = 0; k < 3; ++k) out[k] = m.rotor_armature[r] * rate * n[k];
}

// d linear_rotor_momentum / d v = a n n^T (3x3 row-major).
inline void linear_rotor_jacobian(const Model& m, int r, double jac[9]) {
  const double* n = &m.rotor_axis_child[3 * r];
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) jac[3 * i + k] = m.rotor_armature[r] * n[i] * n[k];
}

// The rotor's discrete momenta (angular rows of the body residual) of the parent (out_p) and
// the child (out_c) at angular velocities wp (null: the world), wc; sign +1 right, -1 left.
inline void rotor_momenta(const Model& m, int r, const double* wp, const double* wc, double h, double sign,
                          double* out_p, double* out_c) {
  const double a = m.rotor_armature[r];
  const double rate = rotor_rate(m, r, wp, wc);
  const double* axes[2] = {&m.rotor_axis_parent[3 * r], &m.rotor_axis_child[3 * r]};
  const double* ws[2] = {wp, wc};
  double* outs[2] = {out_p, out_c};
  const double factor[2] = {-1.0, 1.0};  // p_p = -a n_p theta_dot, p_c = a n_c theta_dot
  for (int side = 0; side < 2; ++side) {
    if (!ws[side]) continue;
    const Vec3<double> w = load3<double>(ws[side]);
    Vec3<double> p;
    for (int k = 0; k < 3; ++k) p[k] = factor[side] * a * rate * axes[side][k];
    const double s = half_s(w, h);
    const Vec3<double> wx = cross(w, p);
    for (int k = 0; k < 3; ++k) outs[side][k] = 0.5 * h * (s * p[k] + sign * wx[k]);
  }
}

// d rotor_momenta / d w: jac[side][other] (3x3 row-major) = d out_side / d w_other, for
// side, other in {0 parent, 1 child}. With e_p = -n_p, e_c = n_c (theta_dot = e_p.w_p + e_c.w_c,
// p_s = a e_s theta_dot):
//   d out_s / d w_s = (h/2)(-p_s w_s^T / s + (s I + sign [w_s]x) a e_s e_s^T - sign [p_s]x)
//   d out_s / d w_t = (h/2)(s I + sign [w_s]x) a e_s e_t^T       (t != s)
inline void rotor_jacobian(const Model& m, int r, const double* wp, const double* wc, double h, double sign,
                           double jac[2][2][9]) {
  const double a = m.rotor_armature[r];
  const double rate = rotor_rate(m, r, wp, wc);
  Vec3<double> e[2];
  for (int k = 0; k < 3; ++k) {
    e[0][k] = -m.rotor_axis_parent[3 * r + k];
    e[1][k] = m.rotor_axis_child[3 * r + k];
  }
  const double* ws[2] = {wp, wc};
  for (int side = 0; side < 2; ++side) {
    for (int other = 0; other < 2; ++other) std::fill(jac[side][other], jac[side][other] + 9, 0.0);
    if (!ws[side]) continue;
    const Vec3<double> w = load3<double>(ws[side]);
    const double s = half_s(w, h);
    Vec3<double> p;
    for (int k = 0; k < 3; ++k) p[k] = a * rate * e[side][k];
    const Mat3<double> wx = skew(w);
    // M = (s I + sign [w]x) a e_s  (a 3-vector): d out / d w_t = (h/2) M e_t^T
    Vec3<double> col;
    for (int i = 0; i < 3; ++i) {
      col[i] = s * a * e[side][i];
      for (int k = 0; k < 3; ++k) col[i] += sign * wx[i][k] * a * e[side][k];
    }
    for (int other = 0; other < 2; ++other) {
      if (!ws[other]) continue;
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) jac[side][other][3 * i + k] = 0.5 * h * col[i] * e[other][k];
    }
    const Mat3<double> px = skew(p);
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k)
        jac[side][side][3 * i + k] += 0.5 * h * (-p[i] * w[k] / s - sign * px[i][k]);
  }
}

}  // namespace dojo
