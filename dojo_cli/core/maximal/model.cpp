// Model compilation: the step's structure derived once from a ModelInput.
#include "model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "math/spatial.h"
#include "collision_hull.h"
#include "tolerances.h"
#include "euler_joints.h"

namespace dojo {

namespace {

void check_size(const char* what, size_t got, size_t want) {
  if (got != want)
    throw std::invalid_argument(std::string("ModelInput.") + what + ": expected " + std::to_string(want) +
                                " values, got " + std::to_string(got));
}

}  // namespace

Model::Model(const ModelInput& in) {
  if (!(in.timestep > 0.0) || !std::isfinite(in.timestep))
    throw std::invalid_argument("ModelInput.timestep: must be a finite number > 0");
  h = in.timestep;
  check_size("gravity", in.gravity.size(), 3);
  for (int k = 0; k < 3; ++k) gravity[k] = in.gravity[k];

  // every number of the description must be finite (a NaN parameter would otherwise
  // reach the solver and come back as a NaN 'converged' state)
  // (the fields marked finite in fields.h)
  const std::pair<const char*, const std::vector<double>*> numbers[] = {
#define DOJO_FINITE_FIELD(shape, type, name, owner, width, scene, finite) \
  DOJO_FINITE_ENTRY_##shape##_##type##_##finite(name)
#define DOJO_FINITE_ENTRY_array_double_1(name) {#name, &in.name},
#define DOJO_FINITE_ENTRY_array_double_0(name)
#define DOJO_FINITE_ENTRY_array_int_0(name)
#define DOJO_FINITE_ENTRY_scalar_double_0(name)
      DOJO_MODEL_INPUT_FIELDS(DOJO_FINITE_FIELD)
#undef DOJO_FINITE_FIELD
  };
  for (const auto& field : numbers)
    for (double v : *field.second)
      if (!std::isfinite(v)) throw std::invalid_argument(std::string("ModelInput.") + field.first + ": not finite (NaN or infinite)");

  nb = static_cast<int>(in.mass.size());
  check_size("inertia", in.inertia.size(), 9 * nb);
  mass = in.mass;
  inertia = in.inertia;
  for (int b = 0; b < nb; ++b)
    if (!(mass[b] > 0.0)) throw std::invalid_argument("ModelInput.mass: every mass must be > 0");

  nj = static_cast<int>(in.parent.size());
  check_size("child", in.child.size(), nj);
  check_size("parent_vertex", in.parent_vertex.size(), 3 * nj);
  check_size("child_vertex", in.child_vertex.size(), 3 * nj);
  check_size("orientation_offset", in.orientation_offset.size(), 4 * nj);
  check_size("basis", in.basis.size(), 18 * nj);
  check_size("constrained", in.constrained.size(), 6 * nj);
  parent = in.parent;
  child = in.child;
  for (int j = 0; j < nj; ++j) {
    if (parent[j] < kWorld || parent[j] >= nb || child[j] < 0 || child[j] >= nb || parent[j] == child[j])
      throw std::invalid_argument("ModelInput.parent/child: joint " + std::to_string(j) + " names an invalid body");
  }
  parent_vertex = in.parent_vertex;
  child_vertex = in.child_vertex;
  orientation_offset = in.orientation_offset;
  basis = in.basis;
  constrained = in.constrained;
  locked = in.locked.empty() ? std::vector<int>(nj, 0) : in.locked;
  check_size("locked", locked.size(), nj);
  for (int v : locked)
    if (v != 0 && v != 1) throw std::invalid_argument("ModelInput.locked: expected 0 or 1");
  // Universal and gimbal joints (euler_joints.h): their rotational rows must be the axes
  // (unit, orthogonal; a universal joint's third row a1 x a2, the one it constrains).
  joint_rotation = in.joint_rotation.empty() ? std::vector<int>(nj, kRotationQuaternion) : in.joint_rotation;
  check_size("joint_rotation", joint_rotation.size(), nj);
  for (int j = 0; j < nj; ++j) {
    const int kind = joint_rotation[j];
    if (kind < kRotationQuaternion || kind > kRotationGimbal)
      throw std::invalid_argument("ModelInput.joint_rotation: expected 0, 1 or 2");
    if (kind == kRotationQuaternion) continue;
    const std::string name = "ModelInput: joint " + std::to_string(j) + " (" + kJointRotationNames[kind] + ")";
    const int* c = &constrained[6 * j + 3];
    const bool universal = kind == kRotationUniversal;
    if (c[0] || c[1] || c[2] != (universal ? 1 : 0))
      throw std::invalid_argument(name + ": its rotational rows must be free, free, " +
                                  (universal ? "constrained" : "free"));
    const double* r = &basis[18 * j + 9];
    for (int a = 0; a < 3; ++a)
      for (int b = a; b < 3; ++b) {
        const double dot = r[3 * a] * r[3 * b] + r[3 * a + 1] * r[3 * b + 1] + r[3 * a + 2] * r[3 * b + 2];
        if (std::abs(dot - (a == b ? 1.0 : 0.0)) > kAxesOrthogonalTolerance)
          throw std::invalid_argument(name + ": its axes (rotational basis rows) must be unit and orthogonal");
      }
    if (universal) {
      double axes[3][3], sign;
      euler_axes(*this, j, axes, sign);
      if (sign < 0.0) throw std::invalid_argument(name + ": its third rotational row must be a1 x a2");
    }
  }
  offset_rotation.resize(9 * nj);
  for (int j = 0; j < nj; ++j) {
    const Mat3<double> r = rotation(load4<double>(&orientation_offset[4 * j]));
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) offset_rotation[9 * j + 3 * i + k] = r[i][k];
  }

  // Constraint rows and free coordinates, joint by joint, translational first; a
  // locked joint's lock rows follow its constraint rows, one per free coordinate (so
  // they join the joint's node of the Newton matrix and its impulses lambda).
  joint_row_start.assign(nj + 1, 0);
  joint_free_start.assign(nj + 1, 0);
  for (int j = 0; j < nj; ++j) {
    joint_row_start[j] = static_cast<int>(row_joint.size());
    joint_free_start[j] = static_cast<int>(free_joint.size());
    for (int s = 0; s < 6; ++s) {
      if (constrained[6 * j + s]) {
        row_joint.push_back(j);
        row_slot.push_back(s);
        row_lock.push_back(0);
      } else {
        free_joint.push_back(j);
        free_slot.push_back(s);
      }
    }
    if (!locked[j]) continue;
    for (int s = 0; s < 6; ++s) {
      if (constrained[6 * j + s]) continue;
      row_joint.push_back(j);
      row_slot.push_back(s);
      row_lock.push_back(1);
    }
  }
  nl = static_cast<int>(row_joint.size());
  nf = static_cast<int>(free_joint.size());
  joint_row_start[nj] = nl;
  joint_free_start[nj] = nf;
  check_size("spring", in.spring.size(), nf);
  check_size("damper", in.damper.size(), nf);
  check_size("spring_offset", in.spring_offset.size(), nf);
  spring = in.spring;
  damper = in.damper;
  spring_offset = in.spring_offset;
  damper_implicit = in.damper_implicit.empty() ? std::vector<int>(nf, 0) : in.damper_implicit;
  check_size("damper_implicit", damper_implicit.size(), nf);
  for (int v : damper_implicit)
    if (v != 0 && v != 1) throw std::invalid_argument("ModelInput.damper_implicit: expected 0 or 1");
  nr = static_cast<int>(in.rotor_joint.size());
  check_size("rotor_armature", in.rotor_armature.size(), nr);
  check_size("rotor_axis_child", in.rotor_axis_child.size(), 3 * nr);
  check_size("rotor_axis_parent", in.rotor_axis_parent.size(), 3 * nr);
  rotor_linear = in.rotor_linear.empty() ? std::vector<int>(nr, 0) : in.rotor_linear;
  check_size("rotor_linear", rotor_linear.size(), nr);
  for (int r = 0; r < nr; ++r) {
    if (in.rotor_joint[r] < 0 || in.rotor_joint[r] >= nj) throw std::invalid_argument("ModelInput.rotor_joint: out of range");
    if (rotor_linear[r] != 0 && rotor_linear[r] != 1) throw std::invalid_argument("ModelInput.rotor_linear: expected 0 or 1");
    if (rotor_linear[r] && in.parent[in.rotor_joint[r]] != kWorld)
      throw std::invalid_argument("ModelInput.rotor_linear: a linear rotor's joint must have the world as parent");
    if (!(in.rotor_armature[r] >= 0.0 && std::isfinite(in.rotor_armature[r])))
      throw std::invalid_argument("ModelInput.rotor_armature: must be finite and >= 0");
  }
  rotor_joint = in.rotor_joint;
  rotor_armature = in.rotor_armature;
  rotor_axis_child = in.rotor_axis_child;
  rotor_axis_parent = in.rotor_axis_parent;
  // Dry joint friction (residual.h): only the coordinates with F > 0 get rows, so a model
  // without friction has the unknowns, rows and bits it had before.
  joint_friction = in.joint_friction.empty() ? std::vector<double>(nf, 0.0) : in.joint_friction;
  check_size("joint_friction", joint_friction.size(), nf);
  joint_friction_start.assign(nj + 1, 0);
  for (int f = 0; f < nf; ++f) {
    if (!(joint_friction[f] >= 0.0)) throw std::invalid_argument("ModelInput.joint_friction: must be >= 0");
    if (joint_friction[f] > 0.0) friction_free.push_back(f);
  }
  nfr = static_cast<int>(friction_free.size());
  for (int j = 0, k = 0; j < nj; ++j) {
    joint_friction_start[j] = k;
    while (k < nfr && free_joint[friction_free[k]] == j) ++k;
    joint_friction_start[j + 1] = k;
  }
  for (int f = 0; f < nf; ++f) {
    if (spring[f] != 0.0) has_springs = true;
    if (damper[f] != 0.0) {
      has_dampers = true;
      damped_free.push_back(f);
    }
  }

  // Actuators (the inputs u): by default one per free coordinate, gain 1.
  {
    const size_t na = in.actuator_free.size();
    check_size("actuator_body", in.actuator_body.size(), na);
    check_size("actuator_gain", in.actuator_gain.size(), na);
    check_size("actuator_force", in.actuator_force.size(), 3 * na);
    check_size("actuator_point", in.actuator_point.size(), 3 * na);
    check_size("actuator_torque", in.actuator_torque.size(), 3 * na);
    if (na == 0) {
      nu = nf;
      actuator_free.resize(nf);
      for (int f = 0; f < nf; ++f) actuator_free[f] = f;
      actuator_body.assign(nf, kWorld);
      actuator_gain.assign(nf, 1.0);
      actuator_force.assign(3 * static_cast<size_t>(nf), 0.0);
      actuator_moment.assign(3 * static_cast<size_t>(nf), 0.0);
    } else {
      nu = static_cast<int>(na);
      actuator_free = in.actuator_free;
      actuator_body = in.actuator_body;
      actuator_gain = in.actuator_gain;
      actuator_force.assign(3 * na, 0.0);
      actuator_moment.assign(3 * na, 0.0);
      for (int a = 0; a < nu; ++a) {
        const double g = actuator_gain[a];
        if (!std::isfinite(g)) throw std::invalid_argument("ModelInput.actuator_gain: not finite");
        const bool joint = actuator_free[a] >= 0, body = actuator_body[a] >= 0;
        if (joint == body) throw std::invalid_argument("ModelInput: actuator " + std::to_string(a) + " needs exactly one of a free coordinate and a body");
        if (joint && actuator_free[a] >= nf) throw std::invalid_argument("ModelInput.actuator_free: out of range");
        if (body && actuator_body[a] >= nb) throw std::invalid_argument("ModelInput.actuator_body: out of range");
        if (!body) continue;
        body_actuators.push_back(a);
        const double* f = &in.actuator_force[3 * a];
        const double* p = &in.actuator_point[3 * a];
        const double* t = &in.actuator_torque[3 * a];
        const double pxf[3] = {p[1] * f[2] - p[2] * f[1], p[2] * f[0] - p[0] * f[2], p[0] * f[1] - p[1] * f[0]};
        for (int k = 0; k < 3; ++k) {
          actuator_force[3 * a + k] = g * f[k];
          actuator_moment[3 * a + k] = g * (pxf[k] + t[k]);
        }
      }
      for (double v : actuator_force)
        if (!std::isfinite(v)) throw std::invalid_argument("ModelInput.actuator_force: not finite");
      for (double v : actuator_moment)
        if (!std::isfinite(v)) throw std::invalid_argument("ModelInput.actuator_point/torque: not finite");
    }
  }

  // Tree order (Dojo's get_loop_joints): a joint whose child already has a tree
  // joint earlier in the list closes a loop; the others are ordered root to leaves.
  {
    std::vector<int> tree_of_child(nb, -1);
    std::vector<char> is_loop(nj, 0);
    for (int j = 0; j < nj; ++j) {
      if (tree_of_child[child[j]] >= 0) {
        is_loop[j] = 1;
        loop_joints.push_back(j);
      } else {
        tree_of_child[child[j]] = j;
      }
    }
    std::vector<char> placed(nb, 0);
    std::vector<int> remaining;
    for (int j = 0; j < nj; ++j)
      if (!is_loop[j]) remaining.push_back(j);
    while (!remaining.empty()) {
      std::vector<int> ready, rest;
      for (int j : remaining) {
        if (parent[j] == kWorld || placed[parent[j]])
          ready.push_back(j);
        else
          rest.push_back(j);
      }
      if (ready.empty()) {
        std::string names;
        for (int j : rest) names += (names.empty() ? "" : ", ") + std::to_string(j);
        throw std::invalid_argument("ModelInput: joints " + names + " do not connect to the world");
      }
      for (int j : ready) {
        tree_joints.push_back(j);
        placed[child[j]] = 1;
      }
      remaining.swap(rest);
    }
    for (int b = 0; b < nb; ++b)
      if (!placed[b]) throw std::invalid_argument("ModelInput: body " + std::to_string(b) + " is attached by no joint");
  }

  // Joint limits (grouped by joint, in joint order, as the description lists them).
  nlim = static_cast<int>(in.limit_free.size());
  check_size("limit_sign", in.limit_sign.size(), nlim);
  check_size("limit_bound", in.limit_bound.size(), nlim);
  limit_free = in.limit_free;
  limit_sign = in.limit_sign;
  limit_bound = in.limit_bound;
  joint_limit_start.assign(nj + 1, nlim);
  for (int l = nlim - 1; l >= 0; --l) {
    if (limit_free[l] < 0 || limit_free[l] >= nf) throw std::invalid_argument("ModelInput.limit_free: out of range");
    if (l > 0 && free_joint[limit_free[l - 1]] > free_joint[limit_free[l]])
      throw std::invalid_argument("ModelInput.limit_free: limits must be listed in joint order");
  }
  for (int j = nj - 1; j >= 0; --j) {
    joint_limit_start[j] = joint_limit_start[j + 1];
    for (int l = 0; l < nlim; ++l)
      if (free_joint[limit_free[l]] == j) {
        joint_limit_start[j] = l;
        break;
      }
  }

  // Revolute angles of any size (kinematics.h unwrapped_angle): which coordinates are a
  // joint's only rotation, and their limit intervals.
  angle_unwrapped.assign(nf, 0);
  free_lower.assign(nf, -std::numeric_limits<double>::infinity());
  free_upper.assign(nf, std::numeric_limits<double>::infinity());
  for (int f = 0; f < nf; ++f) {
    const int j = free_joint[f];
    int rotations = 0;
    for (int g = joint_free_start[j]; g < joint_free_start[j + 1]; ++g) rotations += free_slot[g] >= 3;
    angle_unwrapped[f] = free_slot[f] >= 3 && rotations == 1;
  }
  for (int l = 0; l < nlim; ++l) (limit_sign[l] > 0 ? free_lower : free_upper)[limit_free[l]] = limit_bound[l];
  angle_centre.assign(nf, 0.0);
  for (int f = 0; f < nf; ++f) {
    const double lo = free_lower[f], hi = free_upper[f];
    if (std::isfinite(lo) && std::isfinite(hi) && hi - lo < 2.0 * kPi) angle_centre[f] = 0.5 * (lo + hi);
  }

  // Contacts.
  nc = static_cast<int>(in.contact_body.size());
  check_size("contact_other", in.contact_other.size(), nc);
  check_size("contact_model", in.contact_model.size(), nc);
  check_size("contact_kind", in.contact_kind.size(), nc);
  check_size("contact_friction", in.contact_friction.size(), nc);
  check_size("contact_radius", in.contact_radius.size(), nc);
  check_size("contact_offset", in.contact_offset.size(), 3 * nc);
  check_size("contact_shape", in.contact_shape.size(), 7 * nc);
  // a's primitive beyond the sphere: optional (empty: every contact carries a sphere)
  if (!in.contact_shape_a.empty()) check_size("contact_shape_a", in.contact_shape_a.size(), kShapeASize * nc);
  contact_body = in.contact_body;
  contact_other = in.contact_other;
  contact_model = in.contact_model;
  contact_kind = in.contact_kind;
  contact_friction = in.contact_friction;
  contact_radius = in.contact_radius;
  contact_offset = in.contact_offset;
  contact_shape = in.contact_shape;
  contact_restitution = in.contact_restitution;
  if (contact_restitution.empty()) contact_restitution.assign(nc, 0.0);
  check_size("contact_restitution", contact_restitution.size(), nc);
  contact_margin = in.contact_margin;
  if (contact_margin.empty()) contact_margin.assign(nc, std::numeric_limits<double>::infinity());
  check_size("contact_margin", contact_margin.size(), nc);
  // bodies welded to the world: the child of a joint constraining all six directions whose
  // parent is the world or welded itself (a fixed point over the joints, nj passes at most)
  std::vector<char> welded(nb, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int j = 0; j < nj; ++j) {
      bool all = true;
      for (int k = 0; k < 6; ++k) all = all && constrained[6 * j + k] != 0;
      const int c = child[j], p = parent[j];
      if (all && !welded[c] && (p == kWorld || welded[p])) welded[c] = changed = true;
    }
  }
  // convex hulls: each one's record, compiled once (collision_hull.h)
  if (in.hull_vertices.size() % 3 != 0) throw std::invalid_argument("ModelInput.hull_vertices: not (n, 3)");
  if (in.hull_triangles.size() % 3 != 0) throw std::invalid_argument("ModelInput.hull_triangles: not (n, 3)");
  {
    const std::vector<int>& start = in.hull_triangle_start;
    const int triangles = static_cast<int>(in.hull_triangles.size() / 3);
    if (start.empty() ? triangles != 0 : (start.front() != 0 || start.back() != triangles))
      throw std::invalid_argument("ModelInput.hull_triangle_start: must run from 0 to the number of hull_triangles");
    for (size_t k = 0; k + 1 < start.size(); ++k) {
      if (start[k + 1] < start[k]) throw std::invalid_argument("ModelInput.hull_triangle_start: must not decrease");
      const std::string what = "ModelInput.hull " + std::to_string(k);
      hulls.push_back(std::make_shared<const std::vector<double>>(
          compile_hull(in.hull_vertices.data(), static_cast<int>(in.hull_vertices.size() / 3),
                       in.hull_triangles.data() + 3 * start[k], start[k + 1] - start[k], what.c_str())));
    }
  }
  for (int c = 0; c < nc; ++c) {
    if (contact_body[c] < 0 || contact_body[c] >= nb || contact_other[c] < kWorld || contact_other[c] >= nb)
      throw std::invalid_argument("ModelInput.contact_body/other: out of range");
    if (contact_model[c] < 0 || contact_model[c] > 2) throw std::invalid_argument("ModelInput.contact_model: unknown");
    if (contact_kind[c] < 0 || contact_kind[c] >= kCollisionKinds)
      throw std::invalid_argument("ModelInput.contact_kind: unknown");
    const bool halfspace = is_halfspace(static_cast<CollisionKind>(contact_kind[c]));
    if (halfspace != (contact_other[c] == kWorld))
      throw std::invalid_argument("ModelInput.contact_other: a half-space pair is against the world, any other against a body");
    ContactParams p;
    p.body = contact_body[c];
    p.other = contact_other[c];
    p.model = static_cast<ContactModel>(contact_model[c]);
    p.kind = static_cast<CollisionKind>(contact_kind[c]);
    p.friction = contact_friction[c];
    p.radius = contact_radius[c];
    for (int k = 0; k < 3; ++k) p.offset[k] = contact_offset[3 * c + k];
    for (int k = 0; k < kShapeSize; ++k) p.shape[k] = contact_shape[7 * c + k];
    if (p.kind == CollisionKind::Hull) {
      const double k = p.shape[0];
      if (!(k >= 0.0 && k < static_cast<double>(hulls.size()) && k == std::floor(k)))
        throw std::invalid_argument("ModelInput.contact_shape: contact " + std::to_string(c) +
                                    " names hull " + std::to_string(k) + ", not one of the " +
                                    std::to_string(hulls.size()) + " hulls");
      p.hull = hulls[static_cast<size_t>(k)];
    }
    if (!(contact_restitution[c] >= 0.0 && contact_restitution[c] <= 1.0))
      throw std::invalid_argument("ModelInput.contact_restitution: must be in [0, 1]");
    p.restitution = contact_restitution[c];
    // +infinity is allowed (always in the solve); NaN and negative margins are not
    if (!(contact_margin[c] >= 0.0)) throw std::invalid_argument("ModelInput.contact_margin: must be >= 0 (or infinite)");
    p.margin = contact_margin[c];
    has_margins = has_margins || std::isfinite(p.margin);
    p.body_welded = welded[p.body];
    p.other_welded = p.other >= 0 && welded[p.other];
    has_restitution = has_restitution || p.restitution > 0.0;
    for (int k = 0; k < kShapeASize; ++k)
      p.shape_a[k] = in.contact_shape_a.empty() ? 0.0 : in.contact_shape_a[kShapeASize * c + k];
    contacts.push_back(p);
  }

  // ---- divergence bound from the scene's length scale
  {
    double scale = 0.0;
    for (const std::vector<double>* v : {&parent_vertex, &child_vertex, &contact_offset, &contact_radius})
      for (double x : *v) scale = std::max(scale, std::fabs(x));
    for (int c = 0; c < nc; ++c) {
      const bool halfspace = is_halfspace(static_cast<CollisionKind>(contact_kind[c]));
      if (contacts[c].hull) {  // a hull's index is no length: its vertices' extent
        scale = std::max(scale, HullView(contacts[c].hull->data()).extent);
      } else {
        for (int k = 0; k < 7; ++k)
          if (!(halfspace && k < 3)) scale = std::max(scale, std::fabs(contact_shape[7 * c + k]));  // not a normal
      }
      for (int k = 0; k < kShapeASize; ++k) scale = std::max(scale, std::fabs(contacts[c].shape_a[k]));
    }
    state_bound = kDivergenceFactor * (1.0 + scale);
  }

  // ---- unknown layout
  nv = 6 * nb;
  lam = nv;
  lim_s = nv + nl;
  lim_g = lim_s + nlim;
  fr_s = lim_g + nlim;
  fr_g = fr_s + 2 * nfr;
  fr_b = fr_g + 2 * nfr;
  contact_start.assign(nc + 1, fr_b + nfr);
  for (int c = 0; c < nc; ++c) contact_start[c + 1] = contact_start[c] + 2 * contact_half_size(static_cast<ContactModel>(contact_model[c]));
  n = contact_start[nc];

  // ---- cone structure: limits, then contacts grouped by model (impact, nonlinear,
  // linear) as the numpy implementation ordered them.
  for (int l = 0; l < nlim; ++l) {
    orthant_s.push_back(lim_s + l);
    orthant_g.push_back(lim_g + l);
    orthant_contact.push_back(-1);
  }
  // joint friction: (s+, v+), (s-, v-) per frictional coordinate
  for (int i = 0; i < 2 * nfr; ++i) {
    orthant_s.push_back(fr_s + i);
    orthant_g.push_back(fr_g + i);
    orthant_contact.push_back(-1);
  }
  for (int model = 0; model < 3; ++model) {
    for (int c = 0; c < nc; ++c) {
      if (contact_model[c] != model) continue;
      const int half = contact_half_size(static_cast<ContactModel>(model));
      const int s0 = contact_start[c], g0 = s0 + half;
      if (model == 1) {
        orthant_s.push_back(s0);
        orthant_g.push_back(g0);
        orthant_contact.push_back(c);
        for (int k = 1; k < 4; ++k) {
          soc_s.push_back(s0 + k);
          soc_g.push_back(g0 + k);
        }
        soc_contact.push_back(c);
      } else {
        for (int k = 0; k < half; ++k) {
          orthant_s.push_back(s0 + k);
          orthant_g.push_back(g0 + k);
          orthant_contact.push_back(c);
        }
      }
    }
  }
  is_complementarity.assign(n, 0);
  for (int i : orthant_s) is_complementarity[i] = 1;
  for (int i : soc_s) is_complementarity[i] = 1;
  degree = static_cast<int>(orthant_s.size() + soc_s.size() / 3);

  // ---- nodes of the block graph
  std::vector<std::vector<int>> nodes;
  body_node.assign(nb, -1);
  joint_node.assign(nj, -1);
  contact_node.assign(nc, -1);
  local_index.assign(n, -1);
  auto add_node = [&](std::vector<int> unknowns) {
    for (size_t k = 0; k < unknowns.size(); ++k) local_index[unknowns[k]] = static_cast<int>(k);
    nodes.push_back(std::move(unknowns));
    return static_cast<int>(nodes.size()) - 1;
  };
  for (int b = 0; b < nb; ++b) {
    std::vector<int> u;
    for (int k = 0; k < 6; ++k) u.push_back(6 * b + k);
    body_node[b] = add_node(u);
  }
  for (int j = 0; j < nj; ++j) {
    std::vector<int> u;
    for (int r = joint_row_start[j]; r < joint_row_start[j + 1]; ++r) u.push_back(lam + r);
    for (int l = joint_limit_start[j]; l < joint_limit_start[j + 1]; ++l) {
      u.push_back(lim_s + l);
      u.push_back(lim_g + l);
    }
    for (int k = joint_friction_start[j]; k < joint_friction_start[j + 1]; ++k) {
      for (int i = 0; i < 2; ++i) {
        u.push_back(fr_s + 2 * k + i);
        u.push_back(fr_g + 2 * k + i);
      }
      u.push_back(fr_b + k);
    }
    if (!u.empty()) joint_node[j] = add_node(u);
  }
  for (int c = 0; c < nc; ++c) {
    std::vector<int> u;
    for (int i = contact_start[c]; i < contact_start[c + 1]; ++i) u.push_back(i);
    contact_node[c] = add_node(u);
  }

  // ---- structural blocks (ids assigned in this order)
  // (a hash of the pairs: the linear search it replaces made a compile O(blocks^2), seconds for
  // the thousands of contacts of dm_control's dog; the ids stay in first-appearance order)
  std::vector<std::pair<int, int>> pattern;
  std::unordered_map<long long, int> pattern_id;
  const long long n_nodes = static_cast<long long>(nodes.size());
  auto add_block = [&](int i, int j) {
    const auto found = pattern_id.emplace(i * n_nodes + j, static_cast<int>(pattern.size()));
    if (found.second) pattern.emplace_back(i, j);
    return found.first->second;
  };
  blk_body.assign(nb, -1);
  for (int b = 0; b < nb; ++b) blk_body[b] = add_block(body_node[b], body_node[b]);
  blk_joint_diag.assign(nj, -1);
  blk_body_body.assign(nj, -1);
  blk_body_body_t.assign(nj, -1);
  for (int s = 0; s < 2; ++s) {
    blk_joint_body[s].assign(nj, -1);
    blk_body_joint[s].assign(nj, -1);
  }
  std::vector<char> joint_damped(nj, 0);
  for (int f : damped_free) joint_damped[free_joint[f]] = 1;
  for (int j : rotor_joint) joint_damped[j] = 1;  // a rotor couples the two bodies' velocities too
  for (int j = 0; j < nj; ++j) {
    const int bodies[2] = {parent[j], child[j]};
    if (joint_node[j] >= 0) {
      const int jn = joint_node[j];
      blk_joint_diag[j] = add_block(jn, jn);
      for (int s = 0; s < 2; ++s) {
        if (bodies[s] == kWorld) continue;
        blk_joint_body[s][j] = add_block(jn, body_node[bodies[s]]);
        blk_body_joint[s][j] = add_block(body_node[bodies[s]], jn);
      }
    }
    if (joint_damped[j] && parent[j] != kWorld) {
      blk_body_body[j] = add_block(body_node[parent[j]], body_node[child[j]]);
      blk_body_body_t[j] = add_block(body_node[child[j]], body_node[parent[j]]);
    }
  }
  blk_contact_diag.assign(nc, -1);
  for (int s = 0; s < 2; ++s) {
    blk_contact_body[s].assign(nc, -1);
    blk_body_contact[s].assign(nc, -1);
    blk_contact_ab[s].assign(nc, -1);
  }
  for (int c = 0; c < nc; ++c) {
    const int cn = contact_node[c];
    const int bodies[2] = {contact_body[c], contact_other[c]};
    blk_contact_diag[c] = add_block(cn, cn);
    for (int s = 0; s < 2; ++s) {
      if (bodies[s] == kWorld) continue;
      blk_contact_body[s][c] = add_block(cn, body_node[bodies[s]]);
      blk_body_contact[s][c] = add_block(body_node[bodies[s]], cn);
    }
    if (bodies[1] != kWorld) {
      blk_contact_ab[0][c] = add_block(body_node[bodies[0]], body_node[bodies[1]]);
      blk_contact_ab[1][c] = add_block(body_node[bodies[1]], body_node[bodies[0]]);
    }
  }

  // ---- elimination order: contacts first, then each
  // child body followed by its parent joint, leaves to root, loop-closing joints last.
  // A body always precedes its parent joint, so the joint's 1e-10 regularisation is
  // never a pivot alone, and a tree gets no fill.
  std::vector<int> order;
  for (int c = 0; c < nc; ++c) order.push_back(contact_node[c]);
  for (auto it = tree_joints.rbegin(); it != tree_joints.rend(); ++it) {
    order.push_back(body_node[child[*it]]);
    if (joint_node[*it] >= 0) order.push_back(joint_node[*it]);
  }
  for (int j : loop_joints)
    if (joint_node[j] >= 0) order.push_back(joint_node[j]);
  blocks = analyze_blocks(nodes, pattern, order);

  // the pattern without the contacts' nodes (the last nc nodes, whose unknowns are the
  // last ones): the interior point eliminates them in closed form (contact_elimination.h)
  contacts_condensed = nc > 0;
  for (int c = 0; c < nc; ++c)
    if (contact_model[c] == static_cast<int>(ContactModel::Linear)) contacts_condensed = false;
  if (contacts_condensed) {
    const int first = contact_node[0];
    const std::vector<std::vector<int>> kept_nodes(nodes.begin(), nodes.begin() + first);
    std::vector<std::pair<int, int>> kept_pattern;
    std::vector<int> kept_ids;
    for (size_t k = 0; k < pattern.size(); ++k)
      if (pattern[k].first < first && pattern[k].second < first) {
        kept_pattern.push_back(pattern[k]);
        kept_ids.push_back(static_cast<int>(k));
      }
    std::vector<int> kept_order;
    for (int node : order)
      if (node < first) kept_order.push_back(node);
    blocks_condensed = analyze_blocks(kept_nodes, kept_pattern, kept_order);
    for (size_t k = 0; k < kept_ids.size(); ++k) {
      const int id = kept_ids[k];
      const int src = blocks.block_offset[id], dst = blocks_condensed.block_offset[static_cast<int>(k)];
      const int size = blocks.size(blocks.block_row[id]) * blocks.size(blocks.block_col[id]);
      const size_t runs = condensed_copy.size();
      if (runs > 0 && condensed_copy[runs - 3] + condensed_copy[runs - 1] == src &&
          condensed_copy[runs - 2] + condensed_copy[runs - 1] == dst) {
        condensed_copy[runs - 1] += size;  // contiguous in both: one copy
      } else {
        condensed_copy.insert(condensed_copy.end(), {src, dst, size});
      }
    }
    condensed_body.assign(nb, -1);
    for (int b = 0; b < nb; ++b)
      condensed_body[b] = blocks_condensed.block_offset[blocks_condensed.find(body_node[b], body_node[b])];
    for (int s = 0; s < 2; ++s) condensed_ab[s].assign(nc, -1);
    for (int c = 0; c < nc; ++c) {
      if (contact_other[c] == kWorld) continue;
      const int a = body_node[contact_body[c]], b = body_node[contact_other[c]];
      condensed_ab[0][c] = blocks_condensed.block_offset[blocks_condensed.find(a, b)];
      condensed_ab[1][c] = blocks_condensed.block_offset[blocks_condensed.find(b, a)];
    }
  }

  // the robust order: child body, the contacts whose last body it is, then its joint
  std::vector<int> body_rank(nb, 0);
  {
    int rank = 0;
    for (auto it = tree_joints.rbegin(); it != tree_joints.rend(); ++it) body_rank[child[*it]] = rank++;
  }
  // Each body b is followed by the contacts `after(c)` places after it (-1: at the start,
  // before every body), then its joint; loop-closing joints last.
  auto robust_order = [&](auto after) {
    std::vector<int> order_out;
    std::vector<std::vector<int>> contacts_after(nb);
    for (int c = 0; c < nc; ++c) {
      const int b = after(c);
      if (b < 0)
        order_out.push_back(contact_node[c]);
      else
        contacts_after[b].push_back(c);
    }
    for (auto it = tree_joints.rbegin(); it != tree_joints.rend(); ++it) {
      const int b = child[*it];
      order_out.push_back(body_node[b]);
      for (int c : contacts_after[b]) order_out.push_back(contact_node[c]);
      if (joint_node[*it] >= 0) order_out.push_back(joint_node[*it]);
    }
    for (int j : loop_joints)
      if (joint_node[j] >= 0) order_out.push_back(joint_node[j]);
    return order_out;
  };
  // The robust order as it was: each contact after the last of its bodies.
  const std::vector<int> robust_last = robust_order([&](int c) {
    const int a = contact_body[c], b = contact_other[c];
    return b != kWorld && body_rank[b] > body_rank[a] ? b : a;
  });
  // A body eliminated before k of its contacts couples every pair of them (k^2 fill blocks,
  // 8 x 8 for a nonlinear cone, and ~k^3 / 3 block updates per factorisation), and a
  // contact between two bodies placed after the second carries that coupling on to the
  // second's contacts. dm_control's humanoid_CMU (740 contacts on a finger body, 3686
  // between its bodies) did not fit in memory that way (still 1.3 GB with only its bodies
  // of more than 256 contacts kept first). When that order's structure exceeds
  // kRobustStructureBytes, a bounded one: a body with more than kRobustContactsPerBody
  // contacts (its own and those against it) keeps them all before it, as the model's order
  // does (their own pivots, no fill among them), and every other contact follows the first
  // of its bodies (whose elimination is what makes its pivot regular), so the fill stays
  // within each body's at most kRobustContactsPerBody contacts and its neighbours. When even
  // that exceeds the budget, the robust structure is the model's own order.
  // (Every contact of a body follows it in that order, so the fill among each body's
  // contacts alone is a lower bound of its bytes: above the budget, it is not analysed.)
  std::vector<long long> body_contact_unknowns(nb, 0);
  for (int c = 0; c < nc; ++c) {
    const long long size = contact_start[c + 1] - contact_start[c];
    body_contact_unknowns[contact_body[c]] += size;
    if (contact_other[c] != kWorld) body_contact_unknowns[contact_other[c]] += size;
  }
  long long dense_fill_bytes = 0;
  for (long long u : body_contact_unknowns) dense_fill_bytes += 8 * u * u;
  std::optional<BlockStructure> robust;
  if (dense_fill_bytes <= kRobustStructureBytes)
    robust = analyze_blocks_within(nodes, pattern, robust_last, kRobustStructureBytes);
  if (!robust) {
    std::vector<int> body_contacts(nb, 0);
    for (int c = 0; c < nc; ++c) {
      ++body_contacts[contact_body[c]];
      if (contact_other[c] != kWorld) ++body_contacts[contact_other[c]];
    }
    auto crowded = [&](int b) { return b != kWorld && body_contacts[b] > kRobustContactsPerBody; };
    const std::vector<int> bounded = robust_order([&](int c) {
      const int a = contact_body[c], b = contact_other[c];
      if (crowded(a) || crowded(b)) return -1;
      return b != kWorld && body_rank[b] < body_rank[a] ? b : a;
    });
    robust = analyze_blocks_within(nodes, pattern, bounded, kRobustStructureBytes);
  }
  blocks_robust = robust ? std::move(*robust) : blocks;

  tolerance_scales(*this, row_scale);
}

}  // namespace dojo
