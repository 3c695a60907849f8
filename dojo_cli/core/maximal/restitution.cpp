// Restitution targets (restitution.h).
#include "restitution.h"

#include <cmath>

#include "math/dual.h"
#include "recovery.h"

namespace dojo {
namespace {

using collision_detail::clip;

// tau from the pair at z2, templated on the scalar (double for the step, dual numbers
// for its derivatives; branches test values, so both take the same branch).
//   e: restitution; g: gravity; pose_a/pose_b, va/vb, wa/wb: the bodies at z2 with v15,
//   w15 (b unread for the world); offset, radius: a's sphere.
template <class T>
T target(const ContactParams& c, double h, const T& e, const Vec3<T>& g, const TangentPose<T>& pose_a,
         const Vec3<T>& va, const Vec3<T>& wa, const TangentPose<T>& pose_b, const Vec3<T>& vb, const Vec3<T>& wb,
         bool world_b, const Vec3<T>& offset, const T& radius) {
  Geometry<T> geo;
  collide(c.kind, sphere_centre(pose_a, offset), radius, pose_a, c.shape_a, pose_b, body_b_shape(c), geo);
  // relative velocity of the contact points over the last step: v + (R w) x (p - x) per body
  Vec3<T> dv = va + cross(world_from_body(pose_a, wa), geo.point_a - pose_a.x);
  if (!world_b) dv = dv - (vb + cross(world_from_body(pose_b, wb), geo.point_b - pose_b.x));
  const T vn = dot(geo.normal, dv);
  // gravity's relative normal acceleration of a's point with respect to b's: each body
  // falls unless it is the world or welded to it (two falling bodies have none)
  const double falls = (c.body_welded ? 0.0 : 1.0) - ((world_b || c.other_welded) ? 0.0 : 1.0);
  const T d2 = geo.distance;
  // a contact that starts the step inside its surface (deeper than kRecoveryBand) comes out
  // over recovery.h's time constant, the row allowing -tau of it at z3: the penetration -d2
  // grows at -vn (a body resting 1 mm inside, noise in a recording's state, is not thrown
  // out within the step)
  const bool inside = value(d2) < -kRecoveryBand;
  const T recovery = inside ? -recovered_violation<T>(-d2, -vn, h) : T(0.0);
  if (c.restitution == 0.0) return recovery;  // Dojo's contact outside
  const T accel = falls * dot(geo.normal, g);
  if (!(value(d2 + h * (vn + h * accel)) < 0.0)) return recovery;  // no impact within the step

  // approach speed V against the threshold v_th = kRestitutionThreshold |g| h
  const T approach = -vn;
  T ramp(1.0);
  const T g_sq = dot(g, g);
  if (value(g_sq) > 0.0) {
    const T v_th = (kRestitutionThreshold * h) * sqrt(g_sq);
    const T t = clip((approach - v_th) * (1.0 / v_th), 0.0, 1.0);
    if (!(value(t) > 0.0)) return recovery;
    ramp = t * t * (3.0 - 2.0 * t);  // smoothstep: C1 at both ends
  } else if (!(value(approach) > 0.0)) {
    return recovery;
  }

  // v*: the discrete normal energy after the step is e^2 times the energy before
  const T e_sq = e * e;
  const T disc = (0.25 * h * h) * accel * accel + 2.0 * accel * d2 * (1.0 - e_sq) + e_sq * vn * (vn + h * accel);
  T v_star = (0.5 * h) * accel;
  if (value(disc) > 0.0) v_star = v_star + sqrt(disc);
  const T tau = d2 + h * v_star;
  if (inside) {
    // an impact from inside (a recorded state whose noise put the contact 1 mm in): it
    // leaves at v* from where it is, or as the recovery takes it out, whichever is farther
    // out; blended into the recovery below the approach threshold (continuous in both)
    const T bounce = value(tau) > value(recovery) ? tau : recovery;
    return ramp * bounce + (1.0 - ramp) * recovery;
  }
  if (!(value(tau) > 0.0)) return T(0.0);
  return ramp * tau;
}

inline Vec3<double> load(const double* p) { return Vec3<double>{{p[0], p[1], p[2]}}; }

// The world as body b (never read by the target).
constexpr double kOrigin[3] = {0.0, 0.0, 0.0};
constexpr double kIdentity[4] = {1.0, 0.0, 0.0, 0.0};

}  // namespace

double restitution_target(const ContactParams& c, double h, const double gravity[3], const RestitutionBody& a,
                          const RestitutionBody& b) {
  const bool world_b = c.other < 0;
  const Vec3<double> zero{{0.0, 0.0, 0.0}};
  const TangentPose<double> pose_a = tangent_pose<double>(a.x, a.q, -1);
  const TangentPose<double> pose_b =
      world_b ? tangent_pose<double>(kOrigin, kIdentity, -1) : tangent_pose<double>(b.x, b.q, -1);
  return target<double>(c, h, c.restitution, load(gravity), pose_a, load(a.v), load(a.w), pose_b,
                        world_b ? zero : load(b.v), world_b ? zero : load(b.w), world_b, load(c.offset), c.radius);
}

double restitution_target_jacobian(const ContactParams& c, double h, const double gravity[3],
                                   const RestitutionBody& a, const RestitutionBody& b, double jac[kTargetColumns]) {
  for (int k = 0; k < kTargetColumns; ++k) jac[k] = 0.0;
  using D = Dual<double, kTargetColumns>;
  const bool world_b = c.other < 0;
  // seeds: per body x (0..2), t (3..5, the rotation increment q exp(t/2)), v (6..8),
  // w (9..11); b from 12; then the parameters
  auto seeded = [](const double* p, int first) {
    Vec3<D> out;
    for (int i = 0; i < 3; ++i) out[i] = D::variable(p[i], first + i);
    return out;
  };
  const TangentPose<D> pose_a = tangent_pose<D>(a.x, a.q, 0);
  const TangentPose<D> pose_b = world_b ? tangent_pose<D>(kOrigin, kIdentity, -1) : tangent_pose<D>(b.x, b.q, 12);
  const Vec3<D> zero{{D(0.0), D(0.0), D(0.0)}};
  const D tau = target<D>(c, h, D::variable(c.restitution, kTargetRestitution), seeded(gravity, kTargetGravity),
                          pose_a, seeded(a.v, 6), seeded(a.w, 9), pose_b, world_b ? zero : seeded(b.v, 18),
                          world_b ? zero : seeded(b.w, 21), world_b, seeded(c.offset, kTargetOffset),
                          D::variable(c.radius, kTargetRadius));
  // seeds -> columns: per body [x, v, phi, w] with t = 2 phi
  for (int body = 0; body < (world_b ? 1 : 2); ++body) {
    const int s = 12 * body;
    for (int i = 0; i < 3; ++i) {
      jac[s + i] = tau.d[s + i];
      jac[s + 3 + i] = tau.d[s + 6 + i];
      jac[s + 6 + i] = 2.0 * tau.d[s + 3 + i];
      jac[s + 9 + i] = tau.d[s + 9 + i];
    }
  }
  for (int k = kTargetStateColumns; k < kTargetColumns; ++k) jac[k] = tau.d[k];
  return tau.v;
}

}  // namespace dojo
