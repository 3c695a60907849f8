// A contact's parameters as the compiled model holds them (model.h) and the sizes of its
// unknowns; the kernels that evaluate it are in contact.h.
#pragma once

#include <limits>
#include <memory>
#include <vector>

#include "collision_kind.h"

namespace dojo {

// Contact models (dojo_engine_notes.md 4.2).
enum class ContactModel : int { Impact = 0, Nonlinear = 1, Linear = 2 };
constexpr int kContactModels = 3;
// The scene's names of the models, by code (dojo_cli._core.CONTACT_MODELS).
constexpr const char* kContactModelNames[kContactModels] = {"impact", "nonlinear", "linear"};

// Unknowns per contact: s and gamma, each of this half size N.
constexpr int contact_half_size(ContactModel model) {
  return model == ContactModel::Impact ? 1 : (model == ContactModel::Nonlinear ? 4 : 6);
}
constexpr int kMaxContactHalfSize = 6;
// Cone degree for the interior point's centering average (Dojo's cone_degree): impact 1
// orthant entry; nonlinear 1 orthant entry + 1 second-order cone; linear 6 orthant entries.
constexpr int contact_cone_degree(ContactModel model) {
  return model == ContactModel::Impact ? 1 : (model == ContactModel::Nonlinear ? 2 : 6);
}

// Dojo's starting value of every cone variable after its initialisation shift
// (notes 5.3: neutral vectors shifted to 1.5 in the orthant, (1.5, 0, 0) in SOCs).
constexpr double kContactConeStart = 1.5;

// Pyramid friction directions in the tangent basis (+t2, -t2, +t1, -t1) (notes 4.2).
constexpr double kPyramid[4][2] = {{0.0, 1.0}, {0.0, -1.0}, {1.0, 0.0}, {-1.0, 0.0}};

// One contact, as the compiled model holds it.
//   body: index of body a (carries the sphere); other: index of body b, or -1 for the
//   world (a half-space); model, kind: contact model and what body b carries;
//   friction: Coulomb coefficient mu (unused by impact); radius: a's sphere radius (m),
//   0 for a point; offset: (3,) sphere centre in a's frame (m); shape_a: a's primitive
//   beyond the sphere (collision.h's kShapeASize layout: a segment's half-vector, a
//   circle's axis and radius; zeros for a sphere); shape: body b's shape
//   (collision.h's kShapeSize layout: halfspace normal(3), point(3) in the world;
//   sphere offset(3), radius; capsule end1(3), end2(3), radius; box centre(3),
//   half_sizes(3), in b's frame; hull its index, its record in `hull`); restitution:
//   coefficient e in [0, 1], read only by the step's gap target (restitution.h), not by
//   the kernels here.
struct ContactParams {
  int body;
  int other;
  ContactModel model;
  CollisionKind kind;
  double friction;
  double radius;
  double offset[3];
  double shape_a[kShapeASize];
  double shape[kShapeSize];
  double restitution;
  // the contact joins a step's solve only when its distance at the step's predicted
  // configuration is within this (m); +infinity: always (margins.h)
  double margin = std::numeric_limits<double>::infinity();
  // body a / body b (other >= 0) welded to the world through fixed joints: it does not
  // fall, which the restitution target's relative acceleration needs (restitution.h)
  bool body_welded = false;
  bool other_welded = false;
  // a hull contact's hull record (collision_hull.h), shared by the contacts of one hull
  // (the Model's, or a test's); null for every other kind
  std::shared_ptr<const std::vector<double>> hull;
};

// Body b's shape as the collision table reads it (collision.h's `shape`): the hull's
// record for a hull contact, else ContactParams::shape.
inline const double* body_b_shape(const ContactParams& c) { return c.hull ? c.hull->data() : c.shape; }

}  // namespace dojo
