// Contact geometry between a primitive on body a and a shape on body b, templated on the scalar.
//
// Body a carries a sphere (radius >= 0; radius 0 is a point) centred at a body-frame
// offset, or, for the pairs that need more, a segment swept by that radius (a capsule's
// core: offset -+ a body-frame half-vector) or a circle (a cylinder cap's rim: centre at
// the offset, a body-frame axis and the circle's radius). Body b carries a half-space
// (fixed in the world), a sphere, a capsule (a segment swept by a radius), a box or a
// solid cylinder. Each
// pair is one templated function that computes the signed distance, the unit normal, two
// tangents and the contact points on both surfaces (a Geometry<T>); the functions are
// chosen from a table keyed by CollisionKind, the pair (MuJoCo's mjCOLLISIONFUNC,
// engine_collision_driver.c): adding a pair is one function plus one table entry. A
// scene's shape pair (box-box, a cylinder on the ground, a convex hull on the ground)
// compiles into several contacts, each one entry of this table (dojo_cli/model/collisions.py;
// docs/physics.md, "Collision table").
//
// Derivatives. Instantiated with double the functions give values; with
// Dual<double, N> seeded on the pair's tangent coordinates [x_a, t_a, x_b, t_b]
// (world-frame position increments and body-frame rotation increments
// q -> q exp(t/2)) they give the exact Jacobians, operation by operation (forward
// mode, no finite differences). Every collision function sees body a's position only
// through its primitive's centre c = x_a + R(q_a) offset_a (computed once by the caller,
// sphere_centre()) and its rotation only through the body-frame vectors it rotates
// (world_from_body(a, ...): a segment's half-vector, a circle's axis; a sphere uses
// none), so seeding the offset and the radius as well gives the parameter derivatives
// (contact_geometry(..., parameters = true), 16 columns). Branches test value(x), so
// every instantiation takes the same branch, and no templated expression divides
// (x * (1 / y) instead of x / y): the double and dual instantiations then give bitwise
// identical values. A pair whose closest points solve a small minimisation (segment
// against segment or box) finds the active case on values, then recomputes its
// closed form with the scalar type, so the derivatives include those of the closest
// points (not only the envelope theorem's distance derivative).
//
// Conventions (those of Dojo, src/contacts/collisions/collision.jl;
// dojo_engine_notes.md section 4.3): body a is Dojo's contact *parent* and body b
// its *child*; the normal points from b towards a (a is pushed along +normal); the
// tangents are t1 = normalize(e_x x n) (normalize(e_y x n) when |e_x x n| is not above
// 1e-6) and t2 = t1 x n; for every kind point_a - point_b = distance * normal.
//
// Differences from Dojo, on purpose: t1 is
// normalised; a sphere centre inside a box is pushed out through the nearest face
// (Dojo clamps it to itself: distance -radius at any depth); every Jacobian is
// analytic (Dojo uses finite differences for sphere-sphere and the box point); the
// normals are built from the sphere centre and the closest point of b, which do not
// cross when the surfaces overlap, so no sign flip is needed. Dojo has no segment or
// circle pairs (its capsule_capsule.jl is not included).
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "math/dual.h"
#include "math/spatial.h"
#include "collision_hull.h"
#include "collision_kind.h"

namespace dojo {

// Tangent coordinates of a pair: [x_a (3), t_a (3), x_b (3), t_b (3)].
constexpr int kPairTangents = 12;
// With parameters: then the contact's sphere offset (3) and radius (1) (the parameter
// gradients need them).
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
// Below this norm a vector has no direction; normalizing it returns it
// unchanged (unreachable in the collision functions, which guard their directions).
constexpr double kTinyNorm = 1e-300;

// Segment pairs (closest points by cases, Ericson, Real-Time Collision Detection 5.1.9):
// two segments are treated as parallel when |u x v|^2 <= kParallelSegments |u|^2 |v|^2
// (within 1e-6 rad), where the 2 x 2 system for the closest points is singular.
constexpr double kParallelSegments = 1e-12;
// Bisections for a rim's stationary point (segment_cylinder) on [0, 1]: each halves the
// bracket, so 64 reach adjacent doubles (the loop also stops there).
constexpr int kRimBisections = 64;
// A circle whose axis is within this sine of the half-space normal lies flat: its lowest
// rim point, whose direction (the normal projected on the circle's plane, |projection| =
// sin(tilt)) turns at a rate 1 / |projection|, is replaced by a point of the cap's disc
// that moves linearly with the projection, from the centre (level) to the lowest rim
// point (at this sine), so that the contact point is continuous in the orientation
// (circle_halfspace). The point is at most radius kLevelCircle / 4 above the lowest. The
// zone is the Newton step's: within it the point is linear in the tilt, and outside it its
// direction turns at most 1 / kLevelCircle per unit of the projection. At 1e-4, iterates
// of z1's base (a cylinder standing on the ground) still cycled across the zone's edge
// for 200 iterations at its step 1; at 1e-3 z1 runs its 200 steps of the zoo without a
// restart (docs/urdf.md, "The robot zoo"), and the height error is 2.5e-4 of the radius
// (12 um on a 5 cm cylinder).
constexpr double kLevelCircle = 1e-3;

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

// Geometry of one contact.
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

// Dual-number operations with fixed conventions at the edges (generic names, kept out of
// namespace dojo).

// |v| with derivative (v / |v|) . dv, and a zero derivative at v = 0 where the
// direction is undefined.
template <class T>
inline T norm(const Vec3<T>& v) {
  const T sq = dot(v, v);
  if (value(sq) > 0.0) return sqrt(sq);
  return T(0.0);
}

// v / |v| (derivative (I - u u^T) dv / |v|); a vector shorter than kTinyNorm is
// returned unchanged rather than divided by a tiny number (no caller reaches it).
template <class T>
inline Vec3<T> normalized(const Vec3<T>& v) {
  const T r = norm(v);
  if (!(value(r) > kTinyNorm)) return v;
  const T inv = 1.0 / r;
  return Vec3<T>{{v[0] * inv, v[1] * inv, v[2] * inv}};
}

// np.clip(x, lower, upper) with the derivative: zero where clamped, including
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

// The world centre of a's sphere, x_a + R(q_a) offset_a.
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

// Add the tangents and a's contact point (centre_a - radius_a normal).
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
//   centre_a: (3,) world centre of a's primitive (sphere_centre()), with its derivatives.
//   radius_a: a's sphere (or swept) radius (m), >= 0 (a variable only for parameter
//     derivatives); every pair has distance = (its radius-0 distance) - radius_a and
//     point_a = (its radius-0 point) - radius_a normal.
//   a: body a's pose with its rotation seeds; read only through world_from_body
//     (its position enters through centre_a).
//   shape_a: (kShapeASize,) a's primitive beyond the sphere (ContactParams::shape_a).
//   b: body b's pose with its seeds (the world: identity, unseeded).
//   shape: (kShapeSize,) body b's shape (ContactParams::shape layout).
//   out: the geometry.

// Sphere against a half-space fixed in the world, {p : n . (p - point) >= 0} (Dojo's
// sphere_halfspace.jl / SphereHalfSpaceCollision, notes 4.3; the ground is normal
// [0, 0, 1], point 0). distance = n . (c - point) - r; the normal is constant (the
// given normal, normalised here); point_b is c projected on the plane. Body b plays
// no part.
template <class T>
void sphere_halfspace(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*a*/, const double* /*shape_a*/,
                      const TangentPose<T>& /*b*/, const double* shape,
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
void sphere_sphere(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*a*/, const double* /*shape_a*/,
                   const TangentPose<T>& b, const double* shape,
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
void sphere_capsule(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*a*/, const double* /*shape_a*/,
                    const TangentPose<T>& b, const double* shape,
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
void sphere_box(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*a*/, const double* /*shape_a*/,
                const TangentPose<T>& b, const double* shape,
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

// ------------------------------------------------- pairs beyond a sphere on a
// Body a's segment: the ends c -+ R_a h (h: shape_a's half-vector, a's frame).
template <class T>
inline void segment_ends(const Vec3<T>& centre_a, const TangentPose<T>& a, const double* shape_a, Vec3<T>& end1,
                         Vec3<T>& end2) {
  const Vec3<T> half = world_from_body(a, Vec3<double>{{shape_a[0], shape_a[1], shape_a[2]}});
  end1 = centre_a - half;
  end2 = centre_a + half;
}

// Parameters (s, t) in [0, 1]^2 of the closest points p1 + s u and q1 + t v of two
// segments, r = p1 - q1 (Ericson, Real-Time Collision Detection 5.1.9): the unclamped
// solution of the 2 x 2 normal equations, clamped to the square by the book's
// sequence; each case is a closed form in the scalar type, so s and t carry the
// derivatives of the closest points (zero where clamped). Parallel segments
// (kParallelSegments) have a stretch of closest points: s is the middle of the stretch
// where they overlap (the nearest end when they do not), a choice, smooth in the poses.
template <class T>
void segment_parameters(const Vec3<T>& u, const Vec3<T>& v, const Vec3<T>& r, T& s, T& t) {
  using namespace collision_detail;  // clip
  const T a = dot(u, u), e = dot(v, v), f = dot(v, r);
  const double short2 = kShortSegment * kShortSegment;
  if (value(a) <= short2 && value(e) <= short2) {
    s = T(0.0);
    t = T(0.0);
    return;
  }
  if (value(a) <= short2) {  // a is a point
    s = T(0.0);
    t = clip(f * (1.0 / e), 0.0, 1.0);
    return;
  }
  const T c = dot(u, r);
  if (value(e) <= short2) {  // b is a point
    t = T(0.0);
    s = clip((0.0 - c) * (1.0 / a), 0.0, 1.0);
    return;
  }
  const T b = dot(u, v);
  const T denom = a * e - b * b;
  if (value(denom) > kParallelSegments * value(a) * value(e)) {
    s = clip((b * f - c * e) * (1.0 / denom), 0.0, 1.0);
  } else {
    // parallel: b's ends project on a's line at -c/a and (b - c)/a
    const T inv_a = 1.0 / a;
    T lo = (0.0 - c) * inv_a, hi = (b - c) * inv_a;
    if (value(lo) > value(hi)) std::swap(lo, hi);
    if (value(hi) < 0.0) {
      s = T(0.0);
    } else if (value(lo) > 1.0) {
      s = T(1.0);
    } else {
      const T first = value(lo) < 0.0 ? T(0.0) : lo, last = value(hi) > 1.0 ? T(1.0) : hi;
      s = 0.5 * (first + last);
    }
  }
  t = (b * s + f) * (1.0 / e);
  if (value(t) < 0.0) {
    t = T(0.0);
    s = clip((0.0 - c) * (1.0 / a), 0.0, 1.0);
  } else if (value(t) > 1.0) {
    t = T(1.0);
    s = clip((b - c) * (1.0 / a), 0.0, 1.0);
  }
}

// Segment on a (capsule core, swept by radius_a) against a capsule on b (segment
// [e1, e2] swept by rb): the closest points P, Q of the two segments
// (segment_parameters); distance = |P - Q| - ra - rb, normal = normalize(P - Q),
// point_b = Q + rb normal. Crossing segments (|P - Q| <= kCoincident) take the normal
// normalize(u x v), oriented from b's segment middle towards a's; parallel ones that
// touch take b's degenerate capsule normal (sphere_capsule).
template <class T>
void segment_capsule(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a, const double* shape_a,
                     const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized
  Vec3<T> p1, p2;
  segment_ends(centre_a, a, shape_a, p1, p2);
  const Vec3<double> end1_b{{shape[0], shape[1], shape[2]}}, end2_b{{shape[3], shape[4], shape[5]}};
  const double radius_b = shape[6];
  const Vec3<T> q1 = b.x + world_from_body(b, end1_b);
  const Vec3<T> q2 = b.x + world_from_body(b, end2_b);
  const Vec3<T> u = p2 - p1, v = q2 - q1;
  T s, t;
  segment_parameters(u, v, p1 - q1, s, t);
  const Vec3<T> closest_a = p1 + s * u, closest_b = q1 + t * v;
  const Vec3<T> diff = closest_a - closest_b;
  const T gap = norm(diff);
  if (value(gap) > kCoincident) {
    const Vec3<T> normal = normalized(diff);
    finish_geometry(closest_a, radius_a, (gap - radius_a) - radius_b, normal, closest_b + radius_b * normal, out);
    return;
  }
  const Vec3<T> across = cross(u, v);
  Vec3<T> normal;
  if (value(norm(across)) > kCoincident) {
    normal = normalized(across);
    const Vec3<T> between = (p1 + p2) - (q1 + q2);  // twice middle a - middle b
    if (value(dot(normal, between)) < 0.0) normal = -normal;
    finish_geometry(closest_a, radius_a, (gap - radius_a) - radius_b, normal, closest_b + radius_b * normal, out);
  } else {
    // parallel and touching: sphere_capsule's degenerate normal for the point closest_a
    sphere_capsule(closest_a, radius_a, a, shape_a, b, shape, out);
  }
}

// Signed distance from a point p (box coordinates) to the box of half sizes h: the
// distance to the box outside, minus the depth to the nearest face inside
// (max_i |p_i| - h_i). Convex in p.
inline double box_signed_distance(const double p[3], const double h[3]) {
  double outside = 0.0, inside = -INFINITY;
  for (int i = 0; i < 3; ++i) {
    const double excess = std::abs(p[i]) - h[i];
    if (excess > 0.0) outside += excess * excess;
    inside = std::max(inside, excess);
  }
  return outside > 0.0 ? std::sqrt(outside) : inside;
}

// One candidate for the segment parameter of segment_box (its closed form).
struct SegmentBoxCandidate {
  int type;      // 0: s = 0; 1: s = 1; 2: stationary outside; 3: p_i = 0; 4: inside faces i, j cross
  int i, j;      // axes (types 3, 4)
  int mask[3];   // type 2: per axis 0 (inside its slab), +1 or -1 (beyond the face +-h)
  double sign_i, sign_j;  // type 4: the faces sign h
};

// The closed form of a candidate, in the scalar type (p0, d: the segment's first end and
// direction in box coordinates; h: half sizes):
//   type 2: s = -sum_m (p0_i - m_i h_i) d_i / sum_m d_i^2 (the squared distance to the
//     faces beyond which the segment point lies is stationary);
//   type 3: s = -p0_i / d_i; type 4: sign_i p_i(s) - h_i = sign_j p_j(s) - h_j.
template <class T>
T segment_box_parameter(const SegmentBoxCandidate& k, const Vec3<T>& p0, const Vec3<T>& d, const double h[3]) {
  switch (k.type) {
    case 0:
      return T(0.0);
    case 1:
      return T(1.0);
    case 2: {
      T num(0.0), den(0.0);
      for (int i = 0; i < 3; ++i) {
        if (k.mask[i] == 0) continue;
        num = num + (p0[i] - k.mask[i] * h[i]) * d[i];
        den = den + d[i] * d[i];
      }
      return (0.0 - num) * (1.0 / den);
    }
    case 3:
      return (0.0 - p0[k.i]) * (1.0 / d[k.i]);
    default:
      return ((h[k.i] - h[k.j]) - k.sign_i * p0[k.i] + k.sign_j * p0[k.j]) * (1.0 / (k.sign_i * d[k.i] - k.sign_j * d[k.j]));
  }
}

// Segment on a (capsule core, swept by radius_a) against a box on b: the segment point
// p(s) = e1 + s (e2 - e1) of least box signed distance, then sphere_box at that point.
// The signed distance along the segment is convex in s, so its minimum on [0, 1] is an
// end, a stationary point of one of its quadratic pieces (outside the box: the segment
// point beyond a set of faces), or a kink of its piecewise-linear inside part (a
// coordinate crossing 0, or two faces' depths crossing): every candidate of these
// kinds (2 + 26 + 3 + 12) is evaluated on values and the least kept (ties, a segment
// parallel to a face: the candidate nearest the segment's middle), then its closed
// form recomputed in the scalar type (segment_box_parameter), so the closest point
// carries its derivatives.
template <class T>
void segment_box(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a, const double* shape_a,
                 const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  Vec3<T> e1, e2;
  segment_ends(centre_a, a, shape_a, e1, e2);
  const Vec3<double> centre_b{{shape[0], shape[1], shape[2]}};
  const double h[3] = {shape[3], shape[4], shape[5]};
  const Vec3<T> box_centre = b.x + world_from_body(b, centre_b);
  const Vec3<T> p0 = body_from_world(b, e1 - box_centre);  // box coordinates
  const Vec3<T> d = body_from_world(b, e2 - e1);
  const Vec3<double> p0v{{value(p0[0]), value(p0[1]), value(p0[2])}}, dv{{value(d[0]), value(d[1]), value(d[2])}};

  // candidates on values
  SegmentBoxCandidate best{0, 0, 0, {0, 0, 0}, 0.0, 0.0};
  double best_distance = INFINITY, best_s = 0.0;
  const double tie = 1e-12 * (1.0 + h[0] + h[1] + h[2]);
  auto consider = [&](const SegmentBoxCandidate& k) {
    const double s = value(segment_box_parameter(k, p0v, dv, h));
    if (!(s >= 0.0 && s <= 1.0)) return;  // outside the segment (or not a number)
    const double p[3] = {p0v[0] + s * dv[0], p0v[1] + s * dv[1], p0v[2] + s * dv[2]};
    const double distance = box_signed_distance(p, h);
    const bool better = distance < best_distance - tie ||
                        (distance <= best_distance + tie && std::abs(s - 0.5) < std::abs(best_s - 0.5));
    if (better) {
      best = k;
      best_distance = std::min(distance, best_distance);
      best_s = s;
    }
  };
  consider({0, 0, 0, {0, 0, 0}, 0.0, 0.0});
  consider({1, 0, 0, {0, 0, 0}, 0.0, 0.0});
  const double degenerate = kShortSegment * kShortSegment;
  for (int m = 1; m < 27; ++m) {
    SegmentBoxCandidate k{2, 0, 0, {m % 3, (m / 3) % 3, m / 9}, 0.0, 0.0};
    double den = 0.0;
    for (int i = 0; i < 3; ++i) {
      if (k.mask[i] == 2) k.mask[i] = -1;
      if (k.mask[i] != 0) den += dv[i] * dv[i];
    }
    if (den > degenerate) consider(k);
  }
  for (int i = 0; i < 3; ++i) {
    if (std::abs(dv[i]) > kShortSegment) consider({3, i, i, {0, 0, 0}, 0.0, 0.0});
    for (int j = i + 1; j < 3; ++j) {
      for (const double si : {1.0, -1.0}) {
        for (const double sj : {1.0, -1.0}) {
          if (std::abs(si * dv[i] - sj * dv[j]) > kShortSegment) consider({4, i, j, {0, 0, 0}, si, sj});
        }
      }
    }
  }
  const T s = segment_box_parameter(best, p0, d, h);
  sphere_box(e1 + s * (e2 - e1), radius_a, a, shape_a, b, shape, out);
}

// A corner of a box on a (the point centre_a, swept by radius_a; shape_a: a's box centre
// (3) and half sizes (3) in a's frame, its axes along a's) against a box on b. A corner
// meeting a face exactly at an edge or a corner of b (boxes stacked flush: every corner
// on an edge of the other box) makes the nearest face of sphere_box a tie, which it may
// break towards a side face and miss the load. The face is chosen for the pair instead:
// the axis i of b on which the boxes overlap least (separating-axis test over b's face
// axes, on values: overlap_i = h_i + sum_k ha_k |(R_b^T R_a)_ik| - |d_i|, d the centre of
// a's box in b's box coordinates), towards a's box. A corner within that face's extent
// (|p_k| <= h_k (1 + kFaceMargin) for the other two axes) is held by its plane: distance =
// s p_i - h_i - radius_a, normal the face's (s = sign d_i), point_b the corner projected on
// the plane; beyond it, sphere_box (the corner is then outside b). The margin: boxes stacked
// flush put every corner exactly on an edge, where rounding puts it inside the face at one
// step and outside at the next; each switch between the two branches changes the contact
// point's derivatives, and a 2-box stack at rest grew a yaw-and-slide mode by 1.8x per step
// until its Newton matrix was singular (~100 steps). Within the margin the plane holds the
// corner; the branches then differ by at most kFaceMargin h_k in distance at the switch.
// Relative margin beyond a face's edges within which corner_box holds a corner by the face.
constexpr double kFaceMargin = 1e-6;

template <class T>
void corner_box(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a, const double* shape_a,
                const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  const Vec3<double> centre_b{{shape[0], shape[1], shape[2]}};
  const double h[3] = {shape[3], shape[4], shape[5]};
  const Vec3<T> box_centre = b.x + world_from_body(b, centre_b);
  const Vec3<T> local = body_from_world(b, centre_a - box_centre);
  // the face: least overlap of the two boxes along b's axes (values)
  const Vec3<double> xa{{value(a.x[0]), value(a.x[1]), value(a.x[2])}};
  const Vec3<double> box_a = xa + matvec(a.R, Vec3<double>{{shape_a[0], shape_a[1], shape_a[2]}});
  const Vec3<double> box_b{{value(box_centre[0]), value(box_centre[1]), value(box_centre[2])}};
  const Vec3<double> d = tmatvec(b.R, box_a - box_b);
  const Mat3<double> relative = matmul(transpose(b.R), a.R);
  int axis = 0;
  double least = INFINITY;
  for (int i = 0; i < 3; ++i) {
    double extent = 0.0;
    for (int k = 0; k < 3; ++k) extent += shape_a[3 + k] * std::abs(relative[i][k]);
    const double overlap = h[i] + extent - std::abs(d[i]);
    if (overlap < least) {
      least = overlap;
      axis = i;
    }
  }
  const double sign = d[axis] < 0.0 ? -1.0 : 1.0;
  bool within = true;
  for (int k = 0; k < 3; ++k)
    if (k != axis && std::abs(value(local[k])) > h[k] * (1.0 + kFaceMargin)) within = false;
  if (!within) {
    sphere_box(centre_a, radius_a, a, shape_a, b, shape, out);
    return;
  }
  Vec3<double> face{{0.0, 0.0, 0.0}};
  face[axis] = sign;
  const Vec3<T> normal = world_from_body(b, face);
  const T height = sign * local[axis] - h[axis];
  finish_geometry(centre_a, radius_a, height - radius_a, normal, centre_a - height * normal, out);
}

// A circle on a (a cylinder cap's rim: centre c, world axis A = R_a axis, radius rho;
// swept by radius_a) against a half-space: the rim point lowest along the normal n,
// c - rho u with u = normalize(n - (n.A) A), then sphere_halfspace at that point
// (distance n.(c - point) - rho |n - (n.A) A| - radius_a). A circle lying flat,
// l = |n - (n.A) A| <= kLevelCircle, takes the point c - rho (n - (n.A) A) / kLevelCircle
// of its cap's disc: its centre when level, the lowest rim point at l = kLevelCircle,
// continuous in the orientation, its height rho (l - l^2 / kLevelCircle) <= rho
// kLevelCircle / 4 above the lowest rim point. Before, a fixed rim point c - rho R_a w0
// (w0 perpendicular to the axis) stood in below kLevelCircle: the contact point jumped by
// up to 2 rho where an iterate's tilt crossed kLevelCircle, and the solve of a body lying
// on a cap stalled (example-robot-data's simple_humanoid dropped limp, step 62: its 27 kg
// trunk on a 1 m cylinder's cap, the trunk's angular momentum row jumping from 0.05 to 17
// N m s between iterates; docs/urdf.md, "The robot zoo").
template <class T>
void circle_halfspace(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a, const double* shape_a,
                      const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized
  const Vec3<double> axis_a{{shape_a[0], shape_a[1], shape_a[2]}};
  const double rho = shape_a[3];
  const double r = std::sqrt(shape[0] * shape[0] + shape[1] * shape[1] + shape[2] * shape[2]);
  const Vec3<double> n{{shape[0] / r, shape[1] / r, shape[2] / r}};
  const Vec3<T> axis = world_from_body(a, axis_a);
  const T along = dot(axis, Vec3<T>{{T(n[0]), T(n[1]), T(n[2])}});
  const Vec3<T> level{{n[0] - along * axis[0], n[1] - along * axis[1], n[2] - along * axis[2]}};
  const Vec3<T> u = value(norm(level)) > kLevelCircle ? normalized(level) : (1.0 / kLevelCircle) * level;
  sphere_halfspace(centre_a - rho * u, radius_a, a, shape_a, b, shape, out);
}

// ------------------------------------------------- cylinders on body b
// A solid cylinder on body b in the capsule's layout: shape = end1 (3), end2 (3) (its caps'
// centres, b's frame), radius. Coordinates (x, y, z) of a point relative to its centre
// along (u, v, k): k the unit axis end1 -> end2, u, v a fixed orthonormal completion
// (cylinder_perpendicular), so that the radial direction of a point on the axis is defined.
struct CylinderFrame {
  Vec3<double> centre, axis, u, v;  // b's frame
  double half_height, radius;
};

// A fixed unit vector perpendicular to the unit axis k: e_{j+1} made perpendicular, j the
// index of k's largest component (dojo_cli.model.collisions.perpendicular_unit).
inline Vec3<double> cylinder_perpendicular(const Vec3<double>& k) {
  int j = 0;
  for (int i = 1; i < 3; ++i)
    if (std::abs(k[i]) > std::abs(k[j])) j = i;
  Vec3<double> e{{0.0, 0.0, 0.0}};
  e[(j + 1) % 3] = 1.0;
  const double along = dot(e, k);
  const Vec3<double> p{{e[0] - along * k[0], e[1] - along * k[1], e[2] - along * k[2]}};
  const double n = std::sqrt(dot(p, p));
  return Vec3<double>{{p[0] / n, p[1] / n, p[2] / n}};
}

inline CylinderFrame cylinder_frame(const double* shape) {
  CylinderFrame f;
  const Vec3<double> e1{{shape[0], shape[1], shape[2]}}, e2{{shape[3], shape[4], shape[5]}};
  const Vec3<double> span = e2 - e1;
  const double length = std::sqrt(dot(span, span));
  f.centre = 0.5 * (e1 + e2);
  f.half_height = 0.5 * length;
  f.radius = shape[6];
  // a cylinder of no height (a disc) keeps a defined axis: b's z
  f.axis = length > kShortSegment ? Vec3<double>{{span[0] / length, span[1] / length, span[2] / length}}
                                  : Vec3<double>{{0.0, 0.0, 1.0}};
  f.u = cylinder_perpendicular(f.axis);
  f.v = cross(f.axis, f.u);
  return f;
}

// (x, y, z) of a b-frame vector l along (u, v, k).
template <class T>
inline Vec3<T> cylinder_coordinates(const CylinderFrame& f, const Vec3<T>& l) {
  auto along = [&](const Vec3<double>& e) { return l[0] * e[0] + l[1] * e[1] + l[2] * e[2]; };
  return Vec3<T>{{along(f.u), along(f.v), along(f.axis)}};
}

// The b-frame vector of cylinder coordinates c.
template <class T>
inline Vec3<T> cylinder_vector(const CylinderFrame& f, const Vec3<T>& c) {
  Vec3<T> out;
  for (int i = 0; i < 3; ++i) out[i] = c[0] * f.u[i] + c[1] * f.v[i] + c[2] * f.axis[i];
  return out;
}

// Signed distance from a point (cylinder coordinates p) to the solid cylinder: the distance
// to it outside (to the lateral surface, a cap, or a cap's rim circle), minus the depth to
// the nearest of the caps and the lateral surface inside. Convex in p.
inline double cylinder_signed_distance(const double p[3], double half_height, double radius) {
  const double axial = std::abs(p[2]) - half_height;
  const double radial = std::sqrt(p[0] * p[0] + p[1] * p[1]) - radius;
  if (axial > 0.0 || radial > 0.0) {
    const double a = std::max(axial, 0.0), r = std::max(radial, 0.0);
    return std::sqrt(a * a + r * r);
  }
  return std::max(axial, radial);
}

// Sphere against a solid cylinder on body b. With p the sphere centre in cylinder
// coordinates, r = |(p_x, p_y)|:
// - outside (|p_z| > H or r > rho): the closest point clamps p_z to [-H, H] and scales the
//   radial part to rho where r > rho (a cap, the lateral surface or a rim);
//   distance = |c - closest| - ra, normal = normalize(c - closest), point_b = closest;
// - inside or on the surface: out through the nearest of the top cap (depth H - p_z), the
//   bottom cap (H + p_z) and the lateral surface (rho - r) (ties in that order);
//   distance = -depth - ra, normal that surface's outward normal (the lateral one
//   (p_x, p_y) / r; a centre on the axis, r <= kCoincident, takes the fixed u), point_b
//   the centre moved out by the depth along it.
template <class T>
void sphere_cylinder(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*a*/,
                     const double* /*shape_a*/, const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized, clip
  const CylinderFrame f = cylinder_frame(shape);
  const double H = f.half_height, rho = f.radius;
  const Vec3<T> centre_b = b.x + world_from_body(b, f.centre);
  const Vec3<T> p = cylinder_coordinates(f, body_from_world(b, centre_a - centre_b));
  const Vec3<T> radial{{p[0], p[1], T(0.0)}};
  const T r = norm(radial);
  const double pz = value(p[2]), rv = value(r);
  if (std::abs(pz) <= H && rv <= rho) {
    const double depths[3] = {H - pz, H + pz, rho - rv};
    int face = 0;
    for (int k = 1; k < 3; ++k)
      if (depths[k] < depths[face]) face = k;  // strict: ties keep the first
    T depth;
    Vec3<T> local;  // the outward normal in cylinder coordinates
    if (face < 2) {
      const double sign = face == 0 ? 1.0 : -1.0;
      depth = H - sign * p[2];
      local = Vec3<T>{{T(0.0), T(0.0), T(sign)}};
    } else {
      depth = rho - r;
      local = rv > kCoincident ? normalized(radial) : Vec3<T>{{T(1.0), T(0.0), T(0.0)}};
    }
    const Vec3<T> normal = world_from_body(b, cylinder_vector(f, local));
    Vec3<T> point_b;
    for (int k = 0; k < 3; ++k) point_b[k] = centre_a[k] + normal[k] * depth;
    finish_geometry(centre_a, radius_a, (0.0 - depth) - radius_a, normal, point_b, out);
    return;
  }
  // the closest point of the solid, in cylinder coordinates
  Vec3<T> closest{{p[0], p[1], clip(p[2], -H, H)}};
  if (rv > rho) {
    const T scale = rho * (1.0 / r);
    closest[0] = p[0] * scale;
    closest[1] = p[1] * scale;
  }
  const Vec3<T> point_b = centre_b + world_from_body(b, cylinder_vector(f, closest));
  const Vec3<T> diff = centre_a - point_b;
  finish_geometry(centre_a, radius_a, norm(diff) - radius_a, normalized(diff), point_b, out);
}

// One candidate for the segment parameter of segment_cylinder (its closed form).
struct SegmentCylinderCandidate {
  int type;       // 0: s = 0; 1: s = 1; 2: nearest the axis; 3: p_z = sign H; 4: p_z = 0;
                  // 5: r = rho; 6: inside, cap depth = lateral depth; 7: a rim's stationary point
  double sign;    // types 3, 6, 7: the cap (+1 top, -1 bottom)
  double root;    // types 5, 6: which root of the quadratic (+1, -1)
  double at;      // type 7: the stationary parameter, found on values
};

// The closed form of a candidate in the scalar type (p0, d: the segment's first end and
// direction in cylinder coordinates; H, rho: half height and radius); NaN-free only where
// the candidate applies (the caller checks on values).
//   type 2: s = -(p0_xy . d_xy) / |d_xy|^2 (the segment point nearest the axis);
//   type 3: s = (sign H - p0_z) / d_z; type 4: s = -p0_z / d_z;
//   type 5: |p_xy(s)|^2 = rho^2, a quadratic a s^2 + 2 b s + c = 0, s = (-b + root sqrt(b^2 - a c)) / a;
//   type 6: |p_xy(s)| = sign p_z(s) - H + rho (the inside's two depths equal), squared: a quadratic;
//   type 7: the stationary point s* of g(s) = (sign p_z(s) - H)^2 + (|p_xy(s)| - rho)^2 (the
//     squared distance to the rim circle), found on values: s = s* - g'(s*) / g''(s*) with g'
//     in the scalar type, whose value is s* (g'(s*) = 0) and whose derivative is the implicit
//     function theorem's, ds = -dg' / g''.
template <class T>
T segment_cylinder_parameter(const SegmentCylinderCandidate& k, const Vec3<T>& p0, const Vec3<T>& d, double H,
                             double rho) {
  switch (k.type) {
    case 0:
      return T(0.0);
    case 1:
      return T(1.0);
    case 2:
      return (0.0 - (p0[0] * d[0] + p0[1] * d[1])) * (1.0 / (d[0] * d[0] + d[1] * d[1]));
    case 3:
      return (k.sign * H - p0[2]) * (1.0 / d[2]);
    case 4:
      return (0.0 - p0[2]) * (1.0 / d[2]);
    case 5:
    case 6: {
      T a = d[0] * d[0] + d[1] * d[1], b = p0[0] * d[0] + p0[1] * d[1], c = p0[0] * p0[0] + p0[1] * p0[1];
      if (k.type == 5) {
        c = c - rho * rho;
      } else {
        const T l0 = k.sign * p0[2] + (rho - H), l1 = k.sign * d[2];
        a = a - l1 * l1;
        b = b - l0 * l1;
        c = c - l0 * l0;
      }
      if (std::abs(value(a)) <= kParallelSegments * (value(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])))
        return (0.0 - c) * (1.0 / (2.0 * b));  // linear
      return ((0.0 - b) + k.root * sqrt(b * b - a * c)) * (1.0 / a);
    }
    default: {
      const double s = k.at;
      const Vec3<T> p{{p0[0] + s * d[0], p0[1] + s * d[1], p0[2] + s * d[2]}};
      const T r = sqrt(p[0] * p[0] + p[1] * p[1]);
      const T rate = (p[0] * d[0] + p[1] * d[1]) * (1.0 / r);  // r'
      const T slope = 2.0 * ((k.sign * p[2] - H) * (k.sign * d[2]) + (r - rho) * rate);  // g'
      // g'' on values: 2 d_z^2 + 2 r'^2 + 2 (r - rho) r'', r'' = (|d_xy|^2 - r'^2) / r
      const double rv = value(r), ratev = value(rate);
      const double dxy = value(d[0]) * value(d[0]) + value(d[1]) * value(d[1]);
      const double curvature =
          2.0 * value(d[2]) * value(d[2]) + 2.0 * ratev * ratev + 2.0 * (rv - rho) * (dxy - ratev * ratev) / rv;
      if (!(curvature > 0.0)) return T(s);  // g flat (not met on a rim piece, g convex there)
      return s - slope * (1.0 / curvature);
    }
  }
}

// Segment on a (capsule core, swept by radius_a) against a solid cylinder on b: the segment
// point p(s) = e1 + s (e2 - e1) of least cylinder signed distance, then sphere_cylinder at
// that point (segment_box's scheme). The signed distance along the segment is convex in s, so
// its minimum on [0, 1] is an end, a kink or a stationary point of one of its pieces: the
// lateral distance r - rho (stationary nearest the axis, type 2), a cap's distance (linear),
// a rim circle's distance (type 7, no closed form: bisection on the sign of g' between the
// neighbouring candidates, where g is convex), the inside's max of the three depths (kinks
// where p_z = 0 or a cap's depth equals the lateral one, type 4, 6), and the pieces' borders
// (p_z = +-H, r = rho: types 3, 5). Every candidate is evaluated on values and the least kept
// (ties, a segment along a cap or the lateral surface: the candidate nearest the segment's
// middle), then its closed form recomputed in the scalar type, so the closest point carries
// its derivatives.
template <class T>
void segment_cylinder(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a, const double* shape_a,
                      const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  Vec3<T> e1, e2;
  segment_ends(centre_a, a, shape_a, e1, e2);
  const CylinderFrame f = cylinder_frame(shape);
  const double H = f.half_height, rho = f.radius;
  const Vec3<T> centre_b = b.x + world_from_body(b, f.centre);
  const Vec3<T> p0 = cylinder_coordinates(f, body_from_world(b, e1 - centre_b));
  const Vec3<T> d = cylinder_coordinates(f, body_from_world(b, e2 - e1));
  const Vec3<double> p0v{{value(p0[0]), value(p0[1]), value(p0[2])}}, dv{{value(d[0]), value(d[1]), value(d[2])}};
  auto distance_at = [&](double s) {
    const double p[3] = {p0v[0] + s * dv[0], p0v[1] + s * dv[1], p0v[2] + s * dv[2]};
    return cylinder_signed_distance(p, H, rho);
  };

  // closed-form candidates on values
  constexpr int kMost = 16;
  SegmentCylinderCandidate candidates[kMost];
  double at[kMost];
  int n = 0;
  auto add = [&](const SegmentCylinderCandidate& k) {
    const double s = value(segment_cylinder_parameter(k, p0v, dv, H, rho));
    if (s >= 0.0 && s <= 1.0) {  // inside the segment (and a number)
      candidates[n] = k;
      at[n++] = s;
    }
  };
  add({0, 0.0, 0.0, 0.0});
  add({1, 0.0, 0.0, 0.0});
  const double short2 = kShortSegment * kShortSegment;
  const double dxy = dv[0] * dv[0] + dv[1] * dv[1];
  if (dxy > short2) add({2, 0.0, 0.0, 0.0});
  if (std::abs(dv[2]) > kShortSegment) {
    add({3, 1.0, 0.0, 0.0});
    add({3, -1.0, 0.0, 0.0});
    add({4, 0.0, 0.0, 0.0});
  }
  const double length2 = dxy + dv[2] * dv[2];
  for (const double root : {1.0, -1.0}) {
    if (dxy > short2) {  // r = rho: real roots only
      const double b = p0v[0] * dv[0] + p0v[1] * dv[1], c = p0v[0] * p0v[0] + p0v[1] * p0v[1] - rho * rho;
      if (b * b - dxy * c > 0.0) add({5, 0.0, root, 0.0});
    }
    for (const double sign : {1.0, -1.0}) {  // inside kinks, where the lateral depth's side is real
      const double l0 = sign * p0v[2] + (rho - H), l1 = sign * dv[2];
      const double a = dxy - l1 * l1, b = p0v[0] * dv[0] + p0v[1] * dv[1] - l0 * l1,
                   c = p0v[0] * p0v[0] + p0v[1] * p0v[1] - l0 * l0;
      const bool linear = std::abs(a) <= kParallelSegments * length2;
      if (linear ? (root > 0.0 && std::abs(b) > kShortSegment * kShortSegment) : b * b - a * c > 0.0) {
        const SegmentCylinderCandidate k{6, sign, root, 0.0};
        const double s = value(segment_cylinder_parameter(k, p0v, dv, H, rho));
        if (l0 + l1 * s >= 0.0) add(k);  // |p_xy| = a length, not its negative
      }
    }
  }
  // the rims' stationary points: between neighbouring candidates (sorted), where the whole
  // interval is a rim's piece (sign p_z > H, r > rho), g' changes sign once (g convex there)
  double sorted[kMost];
  std::copy(at, at + n, sorted);
  std::sort(sorted, sorted + n);
  const int closed = n;
  for (int i = 0; i + 1 < closed && n < kMost; ++i) {
    double lo = sorted[i], hi = sorted[i + 1];
    if (!(hi - lo > kShortSegment)) continue;
    const double mid = 0.5 * (lo + hi);
    const double pm[3] = {p0v[0] + mid * dv[0], p0v[1] + mid * dv[1], p0v[2] + mid * dv[2]};
    if (!(std::abs(pm[2]) > H && std::sqrt(pm[0] * pm[0] + pm[1] * pm[1]) > rho)) continue;
    const double sign = pm[2] > 0.0 ? 1.0 : -1.0;
    auto slope = [&](double s) {  // g'(s) / 2
      const double p[3] = {p0v[0] + s * dv[0], p0v[1] + s * dv[1], p0v[2] + s * dv[2]};
      const double r = std::sqrt(p[0] * p[0] + p[1] * p[1]);
      return (sign * p[2] - H) * sign * dv[2] + (r - rho) * (p[0] * dv[0] + p[1] * dv[1]) / r;
    };
    if (!(slope(lo) < 0.0 && slope(hi) > 0.0)) continue;  // monotone: the least is an end
    for (int it = 0; it < kRimBisections && hi - lo > 0.0; ++it) {
      const double m = 0.5 * (lo + hi);
      if (m <= lo || m >= hi) break;
      (slope(m) < 0.0 ? lo : hi) = m;
    }
    add({7, sign, 0.0, 0.5 * (lo + hi)});
  }
  // the least distance (ties: nearest the segment's middle)
  int best = 0;
  double best_distance = INFINITY;
  const double tie = 1e-12 * (1.0 + H + rho);
  for (int i = 0; i < n; ++i) {
    const double distance = distance_at(at[i]);
    if (distance < best_distance - tie ||
        (distance <= best_distance + tie && std::abs(at[i] - 0.5) < std::abs(at[best] - 0.5))) {
      best = i;
      best_distance = std::min(distance, best_distance);
    }
  }
  const T s = segment_cylinder_parameter(candidates[best], p0, d, H, rho);
  sphere_cylinder(e1 + s * (e2 - e1), radius_a, a, shape_a, b, shape, out);
}

// ------------------------------------------------------------- convex hull
// A projection onto a hull triangle counts as inside it down to this many rounding units
// of the hull's extent: a point over a merged face's inner diagonal (no edge of the
// record) is then inside one of its two triangles whatever the rounding.
constexpr double kHullInsideRounding = 64.0 * 2.220446049250313e-16;

// Sphere against a convex hull on body b (shape: the hull's record, collision_hull.h; its
// vertices and planes in b's frame). With p the sphere centre in b's frame and
// s_f = n_f . p - d_f each face's height:
// - outside (some s_f > kCoincident): the closest point of the polytope. The active
//   feature is found on values: a face whose plane projection p - s_f n_f (s_f > 0) lies
//   within one of its triangles (then it is the closest point: p - q is in the normal cone
//   at q, the projection's optimality condition), else the nearest of the edges between
//   faces (clamped; an end is a vertex). Its closed form is then recomputed in the scalar
//   type, so the closest point carries its derivatives (segment_box's way): a face,
//   distance s_f - ra, normal R n_f, point_b = c - s_f normal; an edge, the projection on
//   its line; a vertex, itself; for both distance |c - q| - ra and normal
//   normalize(c - q).
// - inside or on the surface (every s_f <= kCoincident): out through the face of least
//   depth d_f - n_f . p (ties: the first face), as sphere_box: distance -depth - ra,
//   normal R n_f, point_b = c + depth normal.
template <class T>
void sphere_hull(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& /*a*/, const double* /*shape_a*/,
                 const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  using namespace collision_detail;  // norm, normalized
  const HullView hull(shape);
  const Vec3<T> local = body_from_world(b, centre_a - b.x);  // sphere centre in b's frame
  const double p[3] = {value(local[0]), value(local[1]), value(local[2])};
  int face = 0;
  double highest = -INFINITY;
  for (int f = 0; f < hull.nf; ++f) {
    const double* pl = hull.planes + 4 * f;
    const double s = pl[0] * p[0] + pl[1] * p[1] + pl[2] * p[2] - pl[3];
    if (s > highest) {  // strict: ties keep the first face
      highest = s;
      face = f;
    }
  }
  auto height = [&](int f) {  // s_f in the scalar type
    const double* pl = hull.planes + 4 * f;
    return local[0] * pl[0] + local[1] * pl[1] + local[2] * pl[2] - pl[3];
  };
  auto through_face = [&](int f, const T& s) {  // distance s - ra along the face's normal
    const double* pl = hull.planes + 4 * f;
    const Vec3<T> normal = world_from_body(b, Vec3<double>{{pl[0], pl[1], pl[2]}});
    Vec3<T> point_b;
    for (int k = 0; k < 3; ++k) point_b[k] = centre_a[k] - normal[k] * s;
    finish_geometry(centre_a, radius_a, s - radius_a, normal, point_b, out);
  };
  if (!(highest > kCoincident)) {
    through_face(face, height(face));
    return;
  }
  // outside: a face holding the projection
  const double tolerance = kHullInsideRounding * (1.0 + hull.extent);
  for (int t = 0; t < hull.nt; ++t) {
    const double* tri = hull.triangles + 4 * t;
    const int f = static_cast<int>(tri[3]);
    const double* pl = hull.planes + 4 * f;
    const double s = pl[0] * p[0] + pl[1] * p[1] + pl[2] * p[2] - pl[3];
    if (!(s > 0.0)) continue;
    const double q[3] = {p[0] - s * pl[0], p[1] - s * pl[1], p[2] - s * pl[2]};
    bool within = true;
    for (int i = 0; i < 3 && within; ++i) {
      const double* u = hull.vertex(static_cast<int>(tri[i]));
      const double* w = hull.vertex(static_cast<int>(tri[(i + 1) % 3]));
      const double e[3] = {w[0] - u[0], w[1] - u[1], w[2] - u[2]};
      const double r[3] = {q[0] - u[0], q[1] - u[1], q[2] - u[2]};
      // (e x r) . n: the projection's signed distance inside the edge's line, times |e|
      const double side = (e[1] * r[2] - e[2] * r[1]) * pl[0] + (e[2] * r[0] - e[0] * r[2]) * pl[1] +
                          (e[0] * r[1] - e[1] * r[0]) * pl[2];
      within = side >= -tolerance * std::sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
    }
    if (within) {
      through_face(f, height(f));
      return;
    }
  }
  // else the nearest edge (ties: the first), clamped to its ends
  int best = -1, end = -1;  // end: -1 the edge's inside, 0 or 1 an end (a vertex)
  double best_sq = INFINITY;
  for (int k = 0; k < hull.ne; ++k) {
    const double* u = hull.vertex(static_cast<int>(hull.edges[2 * k]));
    const double* w = hull.vertex(static_cast<int>(hull.edges[2 * k + 1]));
    const double e[3] = {w[0] - u[0], w[1] - u[1], w[2] - u[2]};
    const double length2 = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
    const double along = ((p[0] - u[0]) * e[0] + (p[1] - u[1]) * e[1] + (p[2] - u[2]) * e[2]) / length2;
    const double t = along <= 0.0 ? 0.0 : (along >= 1.0 ? 1.0 : along);
    double sq = 0.0;
    for (int i = 0; i < 3; ++i) sq += (p[i] - (u[i] + t * e[i])) * (p[i] - (u[i] + t * e[i]));
    if (sq < best_sq) {
      best_sq = sq;
      best = k;
      end = along <= 0.0 ? 0 : (along >= 1.0 ? 1 : -1);
    }
  }
  const Vec3<double> u = load3<double>(hull.vertex(static_cast<int>(hull.edges[2 * best])));
  const Vec3<double> w = load3<double>(hull.vertex(static_cast<int>(hull.edges[2 * best + 1])));
  Vec3<T> closest_local;
  if (end < 0) {
    const Vec3<double> e = w - u;
    const T along = ((local[0] - u[0]) * e[0] + (local[1] - u[1]) * e[1] + (local[2] - u[2]) * e[2]) *
                    (1.0 / dot(e, e));
    for (int i = 0; i < 3; ++i) closest_local[i] = u[i] + along * e[i];
  } else {
    const Vec3<double>& vertex = end == 0 ? u : w;
    for (int i = 0; i < 3; ++i) closest_local[i] = T(vertex[i]);
  }
  const Vec3<T> closest = b.x + world_from_body(b, closest_local);
  const Vec3<T> diff = centre_a - closest;
  finish_geometry(centre_a, radius_a, norm(diff) - radius_a, normalized(diff), closest, out);
}

// ------------------------------------------------------------- dispatch
template <class T>
using CollisionFunction = void (*)(const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a,
                                   const double* shape_a, const TangentPose<T>& b, const double* shape,
                                   Geometry<T>& out);

// The narrow phase, indexed by CollisionKind (MuJoCo's mjCOLLISIONFUNC).
template <class T>
inline constexpr CollisionFunction<T> kCollisionFunctions[kCollisionKinds] = {
    &sphere_halfspace<T>,  // CollisionKind::Halfspace
    &sphere_sphere<T>,     // CollisionKind::Sphere
    &sphere_capsule<T>,    // CollisionKind::Capsule
    &sphere_box<T>,        // CollisionKind::Box
    &segment_capsule<T>,   // CollisionKind::SegmentCapsule
    &segment_box<T>,       // CollisionKind::SegmentBox
    &circle_halfspace<T>,  // CollisionKind::CircleHalfspace
    &corner_box<T>,        // CollisionKind::CornerBox
    &sphere_cylinder<T>,   // CollisionKind::Cylinder
    &segment_cylinder<T>,  // CollisionKind::SegmentCylinder
    &sphere_hull<T>,       // CollisionKind::Hull
};

template <class T>
inline void collide(CollisionKind kind, const Vec3<T>& centre_a, const T& radius_a, const TangentPose<T>& a,
                    const double* shape_a, const TangentPose<T>& b, const double* shape, Geometry<T>& out) {
  kCollisionFunctions<T>[static_cast<int>(kind)](centre_a, radius_a, a, shape_a, b, shape, out);
}

// Whether body a's rotation enters the pair beyond its primitive's centre (a segment's
// or a circle's body-frame vectors): the contact kernel then seeds a's rotation in the
// geometry too (contact.cpp).
// (A box corner's box enters only through the face choice, on values.)
constexpr bool rotates_primitive(CollisionKind kind) {
  return kind == CollisionKind::SegmentCapsule || kind == CollisionKind::SegmentBox ||
         kind == CollisionKind::CircleHalfspace || kind == CollisionKind::SegmentCylinder;
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
// columns are seeded even for a half-space (they are zero).
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
// offset_a: (3,) a's primitive centre in a's frame; radius_a: its sphere (swept) radius;
// shape_a: (kShapeASize,) a's primitive beyond the sphere; shape: (kShapeSize,) body b's
// shape. Defined in contact.cpp.
void contact_geometry(CollisionKind kind, const double xa[3], const double qa[4], const double offset_a[3],
                      double radius_a, const double* shape_a, const double xb[3], const double qb[4],
                      const double* shape, bool parameters, GeometryJacobian& out);

}  // namespace dojo
