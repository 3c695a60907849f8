// The one list of the fields of a ModelInput (MuJoCo's mjxmacro.h): the struct (model.h),
// the finiteness check of Model's constructor (model.cpp), the bindings and the field
// table Python reads (bindings/bind_model.cpp, dojo_cli._core.MODEL_INPUT_FIELDS, which
// dojo_cli/model/compiled.py uses to name a bad value by its scene field) are generated
// from it. Adding a field is one line here, its use in model.cpp, and its value in
// compiled.py's model_input().
//
// X(shape, type, name, owner, width, scene, finite):
//   shape: scalar (one value) or array (a flat, row-major std::vector<type>);
//   owner: what one entry of `width` values belongs to: "" (the scene), "bodies",
//     "joints", "free" (a joint's free coordinate, in joint order), "limits", "contacts",
//     "actuators";
//   scene: the scene field the values come from ("": none a user writes);
//   finite: 1 when every value must be finite (Model's constructor refuses the others;
//     a NaN parameter would otherwise come back as a NaN "converged" state).
// Comments inside the list are /* */: a // comment would swallow the line continuation.
#pragma once

#define DOJO_MODEL_INPUT_FIELDS(X)                                                                       \
  X(scalar, double, timestep, "", 1, "timestep", 0) /* (s) > 0, checked on its own */                  \
  X(array, double, gravity, "", 3, "gravity", 1)    /* (3,) world frame (m/s^2) */                     \
  /* bodies */                                                                                          \
  X(array, double, mass, "bodies", 1, "mass", 1)                                                        \
  X(array, double, inertia, "bodies", 9, "inertia", 1) /* body frame, about the centre of mass */      \
  /* joints: parent kWorld (-1) for the world */                                                        \
  X(array, int, parent, "joints", 1, "", 0)                                                             \
  X(array, int, child, "joints", 1, "", 0)                                                              \
  X(array, double, parent_vertex, "joints", 3, "parent_vertex", 1)                                      \
  X(array, double, child_vertex, "joints", 3, "child_vertex", 1)                                        \
  X(array, double, orientation_offset, "joints", 4, "orientation_offset", 1) /* [w, x, y, z] */        \
  X(array, double, basis, "joints", 18, "axis", 1) /* (6, 3): translational rows 0:3, rotational 3:6 */ \
  X(array, int, constrained, "joints", 6, "", 0)   /* 1 where a basis row is a constraint */           \
  /* 1: the joint is locked (Drake's Lock): each free coordinate gets a lock row, an */                 \
  /* equality on the joint impulses holding it at its value at z2 (kinematics.h lock_row), */           \
  /* so its velocity is zero. Empty: no joint locked. */                                                \
  X(array, int, locked, "joints", 1, "", 0)                                                             \
  /* JointRotation (euler_joints.h): how the rotational basis rows are read: Dojo's */                  \
  /* quaternion rows (0), a universal joint's two axes and Hooke constraint (1), a */                     \
  /* gimbal's three axes (2). Empty: all Dojo's. */                                                      \
  X(array, int, joint_rotation, "joints", 1, "", 0)                                                     \
  /* per free coordinate, in joint order */                                                             \
  X(array, double, spring, "free", 1, "spring", 1)                                                      \
  X(array, double, damper, "free", 1, "damper", 1)                                                      \
  X(array, double, spring_offset, "free", 1, "spring_offset", 1)                                        \
  /* dry (Coulomb) friction F >= 0 of the coordinate (N m or N): maximal dissipation with */            \
  /* |impulse| <= h F (residual.h); only coordinates with F > 0 get rows. Empty: none */                \
  X(array, double, joint_friction, "free", 1, "friction", 1)                                            \
  /* 1: the damper's first-order implicit form (L-stable), 0: the midpoint form (second */              \
  /* order); residual.h. Empty means midpoint everywhere. */                                            \
  X(array, int, damper_implicit, "free", 1, "", 0)                                                      \
  /* rotor inertia (armature) of joints with one free rotation (rotor.h): per rotor, its */             \
  /* joint, a, and the rotation axis in the child's and in the parent's body frame */                   \
  X(array, int, rotor_joint, "", 1, "", 0)                                                              \
  X(array, double, rotor_armature, "", 1, "", 1)                                                        \
  X(array, double, rotor_axis_child, "", 3, "", 1)                                                      \
  X(array, double, rotor_axis_parent, "", 3, "", 1)                                                     \
  /* 1: a linear rotor, on a translation of a joint from the world whose rate is */                     \
  /* axis . v_child (rotor_axis_child the world axis; rotor.h); 0: on the rotation. Empty: all 0 */     \
  X(array, int, rotor_linear, "", 1, "", 0)                                                             \
  /* joint limits: one inequality per finite bound of a free coordinate */                              \
  X(array, int, limit_free, "limits", 1, "", 0)   /* free-coordinate index */                          \
  X(array, double, limit_sign, "limits", 1, "", 1) /* +1 lower / -1 upper */                           \
  X(array, double, limit_bound, "limits", 1, "limits", 1)                                               \
  /* contacts: a primitive on `body` against a half-space (other kWorld) or another body */             \
  X(array, int, contact_body, "contacts", 1, "", 0)                                                     \
  X(array, int, contact_other, "contacts", 1, "", 0)                                                    \
  X(array, int, contact_model, "contacts", 1, "", 0) /* ContactModel (contact_params.h) */             \
  X(array, int, contact_kind, "contacts", 1, "", 0)  /* CollisionKind (collision_kind.h): the pair */  \
  X(array, double, contact_friction, "contacts", 1, "friction", 1)                                      \
  X(array, double, contact_radius, "contacts", 1, "radius", 1)                                          \
  X(array, double, contact_offset, "contacts", 3, "offset", 1) /* sphere centre, body frame */         \
  X(array, double, contact_shape, "contacts", 7, "against", 1) /* kShapeSize layout (collision_kind.h) */ \
  X(array, double, contact_restitution, "contacts", 1, "restitution", 1) /* [0, 1]; empty: all 0 */    \
  X(array, double, contact_shape_a, "contacts", 7, "shape", 1) /* kShapeASize layout, or empty */      \
  /* convex hulls on body b (CollisionKind::Hull; collision_hull.h): every hull's vertices */         \
  /* (body b's frame) and triangles (indices into hull_vertices), hull k's triangles */                 \
  /* hull_triangle_start[k] .. [k + 1] - 1; a hull contact's contact_shape[0] is k. Empty: none */     \
  X(array, double, hull_vertices, "", 3, "", 1)                                                         \
  X(array, int, hull_triangles, "", 3, "", 0)                                                           \
  X(array, int, hull_triangle_start, "", 1, "", 0)                                                      \
  /* actuators: the inputs u, in order (docs/scenes.md "Actuators"). Empty: one per free */             \
  /* coordinate with gain 1 (Dojo's joint inputs). Each is either a joint actuator (a free */           \
  /* coordinate, actuator_body -1) or a body actuator (actuator_free -1): a force fixed in */           \
  /* the body frame at a point of the body (body frame, from the centre of mass) and/or a */            \
  /* torque fixed in the body frame. */                                                                 \
  X(array, int, actuator_free, "actuators", 1, "", 0)                                                   \
  X(array, int, actuator_body, "actuators", 1, "", 0)                                                   \
  X(array, double, actuator_gain, "actuators", 1, "", 0)                                                \
  X(array, double, actuator_force, "actuators", 3, "", 0)                                               \
  X(array, double, actuator_point, "actuators", 3, "", 0)                                               \
  X(array, double, actuator_torque, "actuators", 3, "", 0)                                              \
  /* >= 0 or +infinity: the contact joins a step's solve only when its distance at the */               \
  /* step's predicted configuration is within this (m; margins.h); empty: all +infinity */              \
  X(array, double, contact_margin, "contacts", 1, "", 0)

// The C++ type of a field of each shape.
#define DOJO_FIELD_TYPE_scalar(type) type
#define DOJO_FIELD_TYPE_array(type) std::vector<type>
