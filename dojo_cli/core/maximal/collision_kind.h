// The collision table's keys and the layout of its shape parameters: what the compiled
// model stores per contact (model.h), without the narrow phase itself (collision.h).
#pragma once

namespace dojo {

// The pair: what body b carries, with a sphere on body a (0..3, 8, 10), or what both carry (4..7, 9).
enum class CollisionKind : int {
  Halfspace = 0,        // sphere - half-space
  Sphere = 1,           // sphere - sphere
  Capsule = 2,          // sphere - capsule
  Box = 3,              // sphere - box
  SegmentCapsule = 4,   // segment (a capsule's core) - capsule
  SegmentBox = 5,       // segment - box
  CircleHalfspace = 6,  // circle (a cylinder cap's rim) - half-space
  CornerBox = 7,        // a box's corner (a sphere with its box) - box
  Cylinder = 8,         // sphere - cylinder
  SegmentCylinder = 9,  // segment - cylinder
  Hull = 10,            // sphere - convex hull (its record: collision_hull.h)
};
constexpr int kCollisionKinds = 11;
// The scene's names of the kinds, by code (Python reads them: dojo_cli._core.COLLISION_KINDS).
constexpr const char* kCollisionKindNames[kCollisionKinds] = {
    "halfspace", "sphere", "capsule", "box", "segment_capsule", "segment_box", "circle_halfspace", "corner_box",
    "cylinder", "segment_cylinder", "hull"};

// Whether body b is the world (a half-space).
constexpr bool is_halfspace(CollisionKind kind) {
  return kind == CollisionKind::Halfspace || kind == CollisionKind::CircleHalfspace;
}

// Layout of ContactParams::shape (body b's shape, in b's frame; the half-space's in the
// world): halfspace normal(3), point(3); sphere offset(3), radius; capsule end1(3),
// end2(3), radius; box centre(3), half_sizes(3); cylinder as capsule (its caps' centres);
// hull its index among the model's hulls (ModelInput's hull_* fields): the hull itself is
// its record (collision_hull.h), which the contact shares (ContactParams::hull).
constexpr int kShapeSize = 7;
// Layout of ContactParams::shape_a (body a's primitive beyond the sphere, in a's frame):
// segment half-vector(3) (ends offset -+ half-vector); circle unit axis(3), circle
// radius; a box corner's box centre(3), half sizes(3); unused (zeros) for a sphere.
constexpr int kShapeASize = 7;

}  // namespace dojo
