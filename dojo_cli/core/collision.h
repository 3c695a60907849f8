// Contact geometry between a sphere on body a and a shape on body b, templated on the scalar.
//
// Body a always carries a sphere (radius >= 0; radius 0 is a point) centred at a
// body-frame offset. Body b carries a half-space (fixed in the world), a sphere, a
// capsule (a segment swept by a radius) or a box. Each pair is one templated function
// that computes the signed distance, the unit normal, two tangents and the contact
// points on both surfaces (a Geometry<T>); the functions are chosen from a table keyed
// by CollisionKind (MuJoCo's mjCOLLISIONFUNC, engine_collision_driver.c): adding a pair
// is one function plus one table entry.
//
// Derivatives. Instantiated with double the functions give values; with
// Dual<double, N> seeded on the pair's tangent coordinates [x_a, t_a, x_b, t_b]
// (world-frame position increments and body-frame rotation increments
// q -> q exp(t/2)) they give the exact Jacobians, operation by operation (forward
// mode, no finite differences). Every collision function sees body a only through
// its sphere centre c = x_a + R(q_a) offset_a and its radius (computed once by the
// caller, sphere_centre()), so seeding the offset and the radius as well gives the
// parameter derivatives (contact_geometry(..., parameters = true), 16 columns).
// Branches test value(x), so every instantiation takes the same branch, and no
// templated expression divides (x * (1 / y) instead of x / y): the double and dual
// instantiations then give bitwise identical values.
//
// Conventions (those of Dojo, src/contacts/collisions/collision.jl;
// dojo_engine_notes.md section 4.3): body a is Dojo's contact *parent* and body b
// its *child*; the normal points from b towards a (a is pushed along +normal); the
// tangents are t1 = normalize(e_x x n) (normalize(e_y x n) when |e_x x n| is not above
// 1e-6) and t2 = t1 x n; for every kind point_a - point_b = distance * normal.
//
// This is a port of the numpy dojo_cli/physics/collision.py and math/jet.py (deleted
// since: commit 83cbf48 has them, tests/data/golden holds this code to them), with the
// same formulas, special cases and thresholds. Differences from Dojo, on purpose, as documented there: t1 is
// normalised; a sphere centre inside a box is pushed out through the nearest face
// (Dojo clamps it to itself: distance -radius at any depth); every Jacobian is
// analytic (Dojo uses finite differences for sphere-sphere and the box point); the
// normals are built from the sphere centre and the closest point of b, which do not
// cross when the surfaces overlap, so no sign flip is needed.
#pragma once

#include <cmath>
#include <type_traits>

#include "dual.h"
#include "spatial.h"

namespace dojo {

// What body b carries (the second index of the pair; body a always carries a sphere).
enum class CollisionKind : int { Halfspace = 0, Sphere = 1, Capsule = 2, Box = 3 };
constexpr int kCollisionKinds = 4;

// Tangent coordinates of a pair: [x_a (3), t_a (3), x_b (3), t_b (3)].
constexpr int kPairTangents = 12;
// With parameters: then the contact's sphere offset (3) and radius (1) (contact.py's
// PARAMETER_COLUMNS; the parameter gradients need them).
constexpr int kPairParameterColumns = 16;
constexpr int kColumnsA = 0;        // first tangent column of body a
constexpr int kColumnsB = 6;        // first tangent column of body b
constexpr int kColumnsOffset = 12;  // first column of the sphere offset (with parameters)
constexpr int kColumnRadius = 15;   // column of the sphere radius (with parameters)

// Dojo's threshold for the tangent fallback (collision.jl, contact_tangent_one:
// t1 = e_x x n unless !(norm(t1) > 1e-6), then e_y x n): below it the normal is within
// 1e-6 rad of +-e_x and e_x x n has no usable direction.
constexpr double kTangentFallbackThreshold = 1e-6;
// Below this distance (m) between the sphere centre and the closest point of b, the
// direction between them is rounding noise: a fixed, documented normal is used
// instead (see each function).
constexpr double kCoincident = 1e-12;
// Capsule segments shorter than this (m) are treated as a point (the projection
// parameter would divide by ~0).
constexpr double kShortSegment = 1e-12;
// Degenerate capsule normal: world +z projected perpendicular to the segment, or world
// +x when that projection is shorter than this (segment within 30 degrees of z; then
// |x projected| >= sqrt(3)/2, well conditioned).
constexpr double kParallelSine = 0.5;
// Below this norm a vector has no direction (jet.py's _TINY); normalizing it returns it
// unchanged (unreachable in the collision functions, which guard their directions).
constexpr double kTinyNorm = 1e-300;

// Layout of ContactParams::shape (body b's shape, in b's frame; the half-space's in the
// world): halfspace normal(3), point(3); sphere offset(3), radius; capsule end1(3),
// end2(3), radius; box centre(3), half_sizes(3).
constexpr int kShapeSize = 7;

// A body's pose at the linearisation point with its tangent seeds: the position x
// (world; its derivatives are the x seeds), the rotation R(q) (values only) and the
// body-frame rotation increment t (value 0; its derivatives are the t seeds), so that
// the pose is (x, q exp(t/2)). R(q exp(t/2)) u = R(q)(u + t x u) and
// R(q exp(t/2))^T w = (I - [t]x) R(q)^T w to first order in t, which is exact for
// first derivatives at t = 0 (these two forms are not valid for nested duals:
// second derivatives would need the full exp map). With T = double, t is zero and
// skipped. `seeded` is false for the world (no tangent coordinates).
template <class T>
struct TangentPose {
  Vec3<T> x;
  Mat3<double> R;
  Vec3<T> t;
  bool seeded;
};

// Geometry of one contact (contact.py's ContactGeometry fields, one contact).
//   distance: signed distance (m): > 0 separated, < 0 penetrating.
//   normal: (3,) world unit normal, from body b towards body a.
//   tangent: (2, 3) world rows t1, t2 (see tangent_basis).
//   point_a: (3,) world contact point on a's sphere: centre_a - radius_a normal.
//   point_b: (3,) world contact point on b's surface.
template <class T>
struct Geometry {
  T distance;
  Vec3<T> normal;
  Vec3<T> tangent[2];
  Vec3<T> point_a;
  Vec3<T> point_b;
};

namespace collision_detail {

template <class T>
constexpr bool kIsDouble = std::is_same<T, double>::value;

// Jet operations with jet.py's conventions at the edges (generic names, kept out of
// namespace dojo).

// |v| with derivative (v / |v|) . dv, and a zero derivative at v = 0 where the
// direction is undefined (jet.py's Jet.norm).
template <class T>
inline T norm(const Vec3<T>& v) {
  const T sq = dot(v, v);
  if (value(sq) > 0.0) return sqrt(sq);
  return T(0.0);
}

// v / |v| (derivative (I - u u^T) dv / |v|); a vector shorter than kTinyNorm is
// returned unchanged (jet.py divides it by 1e-300 instead; no caller reaches it).
template <class T>
inline Vec3<T> normalized(const Vec3<T>& v) {
  const T r = norm(v);
  if (!(value(r) > kTinyNorm)) return v;
  const T inv = 1.0 / r;
  return Vec3<T>{{v[0] * inv, v[1] * inv, v[2] * inv}};
}

// np.clip(x, lower, upper) with jet.py's derivative: zero where clamped, including
// exactly at a bound.
template <class T>
inline T clip(const T& x, double lower, double upper) {
  const double v = value(x);
  if (v > lower && v < upper) return x;
  return T(v < lower ? lower : (v > upper ? upper : v));
}

}  // namespace collision_detail

// ------------------------------------------------------------------ helpers
// R(q exp(t/2)) u: a body-frame vector of pose p in the world. u is a constant
// (Vec3<double>) or carries derivatives itself (Vec3<T>).
template <class T, class U>
inline Vec3<T> world_from_body(const TangentPose<T>& p, const Vec3<U>& u) {
  using namespace collision_detail;
  if constexpr (kIsDouble<T>) {
    return matvec(p.R, u);
  } else {
    if (!p.seeded) {
      const Vec3<T> uu{{T(u[0]), T(u[1]), T(u[2])}};
      return matvec(p.R, uu);
    }
    // u + t x u (t has value 0, so the value is u exactly)
    const Vec3<T> w{{u[0] + (p.t[1] * u[2] - p.t[2] * u[1]), u[1] + (p.t[2] * u[0] - p.t[0] * u[2]),
                     u[2] + (p.t[0] * u[1] - p.t[1] * u[0])}};
    return matvec(p.R, w);
  }
}

// R(q exp(t/2))^T w = (I - [t]x) R^T w: a world vector in pose p's body frame.
template <class T>
inline Vec3<T> body_from_world(const TangentPose<T>& p, const Vec3<T>& w) {
  using namespace collision_detail;
  const Vec3<T> v = tmatvec(p.R, w);
  if constexpr (kIsDouble<T>) {
    return v;
  } else {
    if (!p.seeded) return v;
    return v - cross(p.t, v);
  }
}

// The world centre of a's sphere, x_a + R(q_a) offset_a (collision.py's _sphere_centre).
template <class T, class U>
inline Vec3<T> sphere_centre(const TangentPose<T>& a, const Vec3<U>& offset) {
  return a.x + world_from_body(a, offset);
}

// Dojo's tangent rows for a unit normal (collision.jl, contact_tangent; notes 4.3):
// t1 = normalize(e_x x n), or normalize(e_y x n) when |e_x x n| is not above
// kTangentFallbackThreshold (n along +-e_x); t2 = t1 x n. (t1, t2, n) is left-handed
// (t1 x t2 = -n). Dojo does not normalise t1 (its rows have length |e_x x n|).
template <class T>
inline void tangent_basis(const Vec3<T>& n, Vec3<T> tangent[2]) {
  using namespace collision_detail;  // norm, normalized, clip
  Vec3<T> t1{{T(0.0), -n[2], n[1]}};  // e_x x n
  const double t1y = value(n[2]), t1z = value(n[1]);
  // written as "not above" like Dojo's !(norm(t1) > 1e-6); the norm summed as numpy does
  if (!(std::sqrt(0.0 * 0.0 + t1y * t1y + t1z * t1z) > kTangentFallbackThreshold)) {
    t1 = Vec3<T>{{n[2], T(0.0), -n[0]}};  // e_y x n
  }
  tangent[0] = normalized(t1);
  tangent[1] = cross(tangent[0], n);
}

// Add the tangents and a's contact point (centre_a - radius_a normal) (collision.py's _finish).
template <class T>
inline void finish_geometry(const Vec3<T>& centre_a, const T& radius_a, const T& distance, const Vec3<T>& normal,
                            const Vec3<T>& point_b, Geometry<T>& out) {
  out.distance = distance;
  out.normal = normal;
  tangent_basis(normal, out.tangent);
  for (int i = 0; i < 3; ++i) out.point_a[i] = centre_a[i] - normal[i] * radius_a;
  out.point_b = point_b;
}

// ------------------------------------------------------------- collisions
// Every collision function has the same signature (the table's):
//   centre_a: (3,) world centre of a's sphere (sphere_centre()), with its derivatives.
//   radius_a: a's sphere radius (m), >= 0 (a variable only for parameter derivatives).
//   b: body b's pose with its seeds (the world: identity, unseeded).
//   shape: (kShapeSize,) body b's shape (ContactParams::shape layout).
//   out: the geometry.

// Sphere against a half-space fixed in the world, {p : n . (p - point) >= 0} (Dojo's
// sphere_halfspace.jl / SphereHalfSpaceCollision, notes 4.3; the ground is normal
// [0, 0, 1], point 0). distance = n . (c - point) - r; the normal is constant (the
// given normal, normalised here); point_b is c projected on the plane. Body b plays
// no part.
template <class T>
void sphere_halfspace(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*b*/, const double* shape,
                      Geometry<T>& out) {
  const double r = std::sqrt(shape[0] * shape[0] + shape[1] * shape[1] + shape[2] * shape[2]);
  const double unit[3] = {shape[0] / r, shape[1] / r, shape[2] / r};
  // height of the centre above the plane
  const T height = (centre_a[0] - shape[3]) * unit[0] + (centre_a[1] - shape[4]) * unit[1] +
                   (centre_a[2] - shape[5]) * unit[2];
  const Vec3<T> n = load3<T>(unit);
  Vec3<T> point_b;
  for (int i = 0; i < 3; ++i) point_b[i] = centre_a[i] - unit[i] * height;
  finish_geometry(centre_a, radius_a, height - radius_a, n, point_b, out);
}

// Sphere against a sphere on body b (Dojo's sphere_sphere.jl): distance =
// |ca - cb| - ra - rb; normal = normalize(ca - cb); point_b = cb + rb normal.
// Coincident centres (|ca - cb| <= kCoincident) take the world +z as normal (constant,
// zero Jacobian) and distance -(ra + rb).
template <class T>
void sphere_sphere(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& b, const double* shape,
                   Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized, clip
  const Vec3<double> offset_b{{shape[0], shape[1], shape[2]}};
  const double radius_b = shape[3];
  const Vec3<T> centre_b = b.x + world_from_body(b, offset_b);
  const Vec3<T> diff = centre_a - centre_b;
  const T gap = norm(diff);
  const Vec3<T> normal = value(gap) <= kCoincident ? Vec3<T>{{T(0.0), T(0.0), T(1.0)}} : normalized(diff);
  Vec3<T> point_b;
  for (int i = 0; i < 3; ++i) point_b[i] = centre_b[i] + normal[i] * radius_b;
  finish_geometry(centre_a, radius_a, (gap - radius_a) - radius_b, normal, point_b, out);
}

// Sphere against a capsule on body b, the segment [e1, e2] swept by rb (Dojo's
// sphere_capsule.jl). The closest segment point to the centre c has parameter
// s = clamp((c - e1).(e2 - e1) / |e2 - e1|^2, 0, 1) (Dojo's point_to_segment.jl);
// distance = |c - closest| - ra - rb, normal = normalize(c - closest),
// point_b = closest + rb normal.
// Degenerate cases: a segment shorter than kShortSegment is the point e1. A centre on
// the segment (|c - closest| <= kCoincident) takes as normal the world +z projected
// perpendicular to the segment, or the world +x projected when the segment is within
// 30 degrees of z (kParallelSine), so that point_b lies on the capsule's cylinder; its
// Jacobian follows b's rotation only.
template <class T>
void sphere_capsule(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& b, const double* shape,
                    Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized, clip
  const Vec3<double> end1_b{{shape[0], shape[1], shape[2]}}, end2_b{{shape[3], shape[4], shape[5]}};
  const double radius_b = shape[6];
  const Vec3<T> end1 = b.x + world_from_body(b, end1_b);
  const Vec3<T> end2 = b.x + world_from_body(b, end2_b);
  const Vec3<T> axis = end2 - end1;
  const T length2 = dot(axis, axis);
  const bool is_short = value(length2) <= kShortSegment * kShortSegment;
  T along(0.0);
  if (!is_short) along = clip(dot(centre_a - end1, axis) * (1.0 / length2), 0.0, 1.0);
  Vec3<T> closest;
  for (int i = 0; i < 3; ++i) closest[i] = end1[i] + axis[i] * along;

  const Vec3<T> diff = centre_a - closest;
  const T gap = norm(diff);
  Vec3<T> normal;
  if (value(gap) <= kCoincident) {
    // on the segment: +z (else +x) made perpendicular to the segment
    const Vec3<T> direction = is_short ? Vec3<T>{{T(1.0), T(0.0), T(0.0)}} : normalized(axis);
    const Vec3<T> perp_z{{0.0 - direction[0] * direction[2], 0.0 - direction[1] * direction[2],
                          1.0 - direction[2] * direction[2]}};
    const double pz[3] = {value(perp_z[0]), value(perp_z[1]), value(perp_z[2])};
    if (std::sqrt(pz[0] * pz[0] + pz[1] * pz[1] + pz[2] * pz[2]) < kParallelSine) {
      const Vec3<T> perp_x{{1.0 - direction[0] * direction[0], 0.0 - direction[1] * direction[0],
                            0.0 - direction[2] * direction[0]}};
      normal = normalized(perp_x);
    } else {
      normal = normalized(perp_z);
    }
  } else {
    normal = normalized(diff);
  }
  Vec3<T> point_b;
  for (int i = 0; i < 3; ++i) point_b[i] = closest[i] + normal[i] * radius_b;
  finish_geometry(centre_a, radius_a, (gap - radius_a) - radius_b, normal, point_b, out);
}

// Box faces in the order of the nearest-face search (ties go to the first):
// +x, -x, +y, -y, +z, -z; face f has axis f / 2 and outward sign +1 for even f.
constexpr int kBoxFaces = 6;

// Sphere against a box on body b (Dojo's sphere_box.jl), centred at centre_b in b's
// frame with its axes along b's axes. With p the sphere centre in box coordinates:
// - outside (some |p_i| > h_i): the closest box point clamps p per axis (Dojo's
//   point_to_box_v2.jl); distance = |c - closest| - ra, normal = normalize(c - closest),
//   point_b = closest;
// - inside or on the surface (all |p_i| <= h_i): the nearest face (smallest depth
//   h_i -+ p_i; ties go to the first of +x, -x, +y, -y, +z, -z); distance = -depth - ra,
//   normal = that face's outward normal (world), point_b = the centre projected on that
//   face. Dojo instead returns the centre itself as closest point (distance -ra at any
//   depth, normal normalize(0)).
// A centre on the surface takes the inside branch: depth 0, distance -ra, continuous
// with outside.
template <class T>
void sphere_box(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& b, const double* shape,
                Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized, clip
  const Vec3<double> centre_b{{shape[0], shape[1], shape[2]}};
  const double half[3] = {shape[3], shape[4], shape[5]};
  const Vec3<T> box_centre = b.x + world_from_body(b, centre_b);
  const Vec3<T> local = body_from_world(b, centre_a - box_centre);  // sphere centre in box coordinates
  const double p[3] = {value(local[0]), value(local[1]), value(local[2])};
  const bool inside = std::abs(p[0]) <= half[0] && std::abs(p[1]) <= half[1] && std::abs(p[2]) <= half[2];

  if (inside) {
    // push out through the nearest face
    int face = 0;
    double best = half[0] - p[0];
    for (int f = 1; f < kBoxFaces; ++f) {
      const int i = f / 2;
      const double depth = f % 2 == 0 ? half[i] - p[i] : half[i] + p[i];
      if (depth < best) {  // strict: ties keep the first face
        best = depth;
        face = f;
      }
    }
    const int i = face / 2;
    const double sign = face % 2 == 0 ? 1.0 : -1.0;
    const T depth = face % 2 == 0 ? half[i] - local[i] : half[i] + local[i];
    Vec3<double> face_normal{{0.0, 0.0, 0.0}};  // box frame
    face_normal[i] = sign;
    const Vec3<T> normal = world_from_body(b, face_normal);
    Vec3<T> point_b;
    for (int k = 0; k < 3; ++k) point_b[k] = centre_a[k] + normal[k] * depth;
    finish_geometry(centre_a, radius_a, -depth - radius_a, normal, point_b, out);
  } else {
    // closest box point by per-axis clamping
    const Vec3<T> clamped{{clip(local[0], -half[0], half[0]), clip(local[1], -half[1], half[1]),
                           clip(local[2], -half[2], half[2])}};
    const Vec3<T> closest = box_centre + world_from_body(b, clamped);
    const Vec3<T> diff = centre_a - closest;
    finish_geometry(centre_a, radius_a, norm(diff) - radius_a, normalized(diff), closest, out);
  }
}

// ------------------------------------------------------------- dispatch
template <class T>
using CollisionFunction = void (*)(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& b,
                                   const double* shape, Geometry<T>& out);

// The narrow phase, indexed by CollisionKind (MuJoCo's mjCOLLISIONFUNC).
template <class T>
inline constexpr CollisionFunction<T> kCollisionFunctions[kCollisionKinds] = {
    &sphere_halfspace<T>,  // CollisionKind::Halfspace
    &sphere_sphere<T>,     // CollisionKind::Sphere
    &sphere_capsule<T>,    // CollisionKind::Capsule
    &sphere_box<T>,        // CollisionKind::Box
};

template <class T>
inline void collide(CollisionKind kind, const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& b,
                    const double* shape, Geometry<T>& out) {
  kCollisionFunctions<T>[static_cast<int>(kind)](centre_a, radius_a, b, shape, out);
}

// ------------------------------------------------------------- poses
// The pose of a body at (x, q), seeded on tangent columns [first, first + 6) when
// first >= 0 (position then rotation), unseeded (a constant) when first < 0.
template <class T>
inline TangentPose<T> tangent_pose(const double x[3], const double q[4], int first) {
  TangentPose<T> p;
  p.R = rotation(load4<double>(q));
  p.seeded = first >= 0;
  for (int i = 0; i < 3; ++i) {
    p.x[i] = T(x[i]);
    p.t[i] = T(0.0);
  }
  if constexpr (!collision_detail::kIsDouble<T>) {
    if (first >= 0) {
      for (int i = 0; i < 3; ++i) {
        p.x[i] = T::variable(x[i], first + i);
        p.t[i] = T::variable(0.0, first + 3 + i);
      }
    }
  }
  return p;
}

// ------------------------------------------------------------- flat front end
// The geometry of one contact with its Jacobian over [x_a, t_a, x_b, t_b] (12 columns)
// or, with parameters, also over a's sphere offset (3) and radius (16 columns). Body b's
// columns are seeded even for a half-space (they are zero), as collision.py does.
struct GeometryJacobian {
  int columns;  // 12 or 16
  double distance;
  double normal[3];
  double tangent[2][3];
  double point_a[3];
  double point_b[3];
  double distance_jac[kPairParameterColumns];
  double normal_jac[3][kPairParameterColumns];
  double tangent_jac[2][3][kPairParameterColumns];
  double point_a_jac[3][kPairParameterColumns];
  double point_b_jac[3][kPairParameterColumns];
};

// xa, xb: (3,) world positions; qa, qb: (4,) orientations [w, x, y, z] body to world;
// offset_a: (3,) sphere centre in a's frame; radius_a: sphere radius;
// shape: (kShapeSize,) body b's shape. Defined in contact.cpp.
void contact_geometry(CollisionKind kind, const double xa[3], const double qa[4], const double offset_a[3],
                      double radius_a, const double xb[3], const double qb[4], const double* shape, bool parameters,
                      GeometryJacobian& out);

}  // namespace dojo
