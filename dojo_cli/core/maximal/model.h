// The compiled Model: everything about a mechanism that does not change during a
// run, as flat arrays (MuJoCo's mjModel discipline), built once and never mutated.
//
// Python compiles a scene into a ModelInput (per-body, per-joint, per-contact flat
// arrays, validated and with the joint bases already chosen: dojo_cli/model), and
// Model's constructor derives the step's structure from it once: the unknown
// layout, the Newton matrix's block pattern, the elimination order and its
// symbolic factorisation. A new parameter value means a new Model.
//
// Unknowns of a step, w = [per body (v25, w25) (6 nb) | joint impulses lambda (nl: the
//   joints' constraint rows and the locked joints' lock rows, joint by joint)
//   | joint-limit slacks s (nlim) | limit impulses gamma (nlim)
//   | joint-friction slacks (2 nfr: s+, s- per frictional coordinate) | their rates (2 nfr:
//   v+, v-) | joint-friction impulses (nfr: beta) | per contact s (N), gamma (N)]
// (the layout of the numpy implementation this replaced, dojo_engine_notes.md 2.3).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "linalg/block_lu.h"
#include "contact_params.h"
#include "fields.h"

namespace dojo {

constexpr int kWorld = -1;  // parent index meaning the world frame
// A damper's two forms, by ModelInput::damper_implicit (residual.h): second order, or first
// order and L-stable (dojo_cli._core.DAMPER_FORMS).
constexpr const char* kDamperForms[2] = {"midpoint", "implicit"};
// Divergence bound relative to the scene's length scale (Model::state_bound): far beyond
// any motion a scene describes (10^8 body lengths), far below overflow.
constexpr double kDivergenceFactor = 1e8;
// The robust elimination order's structure (Model::blocks_robust) is kept within this
// many bytes (its factor's doubles and one factorisation's block-update offsets), or a
// bounded order replaces it (model.cpp). The test suite's models need at most 30 MB
// (centauro's 1272 hull contacts 30, anymal-kinova's 160 on one body 27); dm_control's
// humanoid_CMU would need more than 1.2 GB.
constexpr long long kRobustStructureBytes = 128LL << 20;
// In the bounded order, a body with more contacts than this (its own and those against
// it) has them eliminated before it: at most 64 x 64 fill blocks of 8 x 8 (2 MB) a body.
constexpr int kRobustContactsPerBody = 64;

// The description handed over from Python (every array flat, row-major): the fields of
// fields.h, each as DOJO_FIELD_TYPE_<shape>(type).
struct ModelInput {
#define DOJO_DECLARE_FIELD(shape, type, name, owner, width, scene, finite) DOJO_FIELD_TYPE_##shape(type) name;
  DOJO_MODEL_INPUT_FIELDS(DOJO_DECLARE_FIELD)
#undef DOJO_DECLARE_FIELD
  ModelInput() : timestep(0.01), gravity{0.0, 0.0, -9.81} {}
};


struct Model {
  explicit Model(const ModelInput& in);

  // ---- sizes
  int nb = 0, nj = 0, nl = 0, nf = 0, nlim = 0, nc = 0;
  double h = 0.01;
  double gravity[3] = {0.0, 0.0, -9.81};

  // ---- bodies
  std::vector<double> mass, inertia;  // (nb,), (nb, 9)

  // ---- joints (arrays over joints j)
  std::vector<int> parent, child;
  std::vector<double> parent_vertex, child_vertex, orientation_offset, basis;  // (nj,3) (nj,3) (nj,4) (nj,18)
  std::vector<int> constrained;                                               // (nj, 6)
  std::vector<double> offset_rotation;                                        // (nj, 9) R(orientation_offset)
  std::vector<int> locked;                                                    // (nj,) 1: locked (ModelInput)
  std::vector<int> joint_rotation;  // (nj,) JointRotation (euler_joints.h; ModelInput)
  // constraint rows r and free coordinates f: joint and basis row (slot 0..5). A joint's
  // rows are its constraint rows, then (a locked joint) one lock row per free coordinate.
  std::vector<int> row_joint, row_slot, free_joint, free_slot;
  std::vector<char> row_lock;  // (nl,) 1: a lock row (the slot is a free coordinate's)
  std::vector<int> joint_row_start, joint_free_start;  // (nj+1,) ranges into rows / frees
  std::vector<double> spring, damper, spring_offset;   // (nf,)
  bool has_springs = false, has_dampers = false;
  std::vector<int> damped_free;  // free coordinates with a damper
  std::vector<int> damper_implicit;  // (nf,) 1 implicit, 0 midpoint (ModelInput)
  int nr = 0;  // rotors (ModelInput.rotor_*; rotor.h)
  std::vector<int> rotor_joint;
  std::vector<double> rotor_armature, rotor_axis_child, rotor_axis_parent;
  std::vector<int> rotor_linear;  // 1: on the child's linear velocity along a world axis (rotor.h)
  // tree order (root to leaves) and loop-closing joints
  std::vector<int> tree_joints, loop_joints;

  // ---- joint limits
  std::vector<int> limit_free;
  std::vector<double> limit_sign, limit_bound;
  std::vector<int> joint_limit_start;  // (nj+1,) limits of joint j, in limit order
  // (nf,) the coordinate is the only rotation of its joint (a revolute or cylindrical
  // angle): a limit on it measures the angle unwrapped through any number of turns
  // (kinematics.h unwrapped_angle), and stored minimal coordinates are unwrapped too
  std::vector<char> angle_unwrapped;
  // (nf,) the coordinate's limit interval (-inf / +inf where it has no bound): where a
  // step with no carried angle puts the angle (kinematics.h start_angle)
  std::vector<double> free_lower, free_upper;
  // (nf,) a universal or gimbal joint's full-turn angle is read in (c - pi, c + pi] around
  // this centre c of its limit interval (0 without a finite one narrower than a turn), so
  // that an angle kept inside its limits never crosses the chart's seam (euler_joints.h)
  std::vector<double> angle_centre;

  // ---- joint friction (residual.h): the free coordinates with dry friction F > 0, in
  // joint order, each with two orthant pairs and its impulse in the joint's node
  int nfr = 0;
  std::vector<double> joint_friction;  // (nf,) F (ModelInput; 0: none)
  std::vector<int> friction_free;      // (nfr,) free coordinate of each frictional coordinate
  std::vector<int> joint_friction_start;  // (nj+1,) frictional coordinates of joint j

  // ---- contacts
  std::vector<int> contact_body, contact_other, contact_model, contact_kind;
  std::vector<double> contact_friction, contact_radius, contact_offset, contact_shape;
  std::vector<double> contact_restitution;  // (nc,)
  bool has_restitution = false;             // any contact_restitution > 0
  std::vector<double> contact_margin;       // (nc,) +infinity: always in the solve
  bool has_margins = false;                 // any finite contact_margin
  std::vector<ContactParams> contacts;  // (nc,) the same, as the contact kernels take them (contact.h)
  std::vector<int> contact_start;  // (nc+1,) first unknown of each contact (its N slacks, then N impulses)
  // convex hulls on body b (ModelInput's hull_* fields): each one's record
  // (collision_hull.h), shared with its contacts (ContactParams::hull)
  std::vector<std::shared_ptr<const std::vector<double>>> hulls;

  // ---- actuators (the inputs u, nu of them; ModelInput): joint actuator a drives free
  // coordinate actuator_free[a] with actuator_gain[a]; body actuator a (actuator_body[a]
  // >= 0) applies the body-frame force actuator_force (gain included) and the body-frame
  // moment actuator_moment = gain (point x force + torque) per unit input.
  int nu = 0;
  std::vector<int> actuator_free, actuator_body;
  std::vector<double> actuator_gain, actuator_force, actuator_moment;  // (nu,), (nu, 3), (nu, 3)
  std::vector<int> body_actuators;  // actuators with a body

  // ---- unknown layout
  int nv = 0;          // 6 nb body velocities
  int lam = 0;         // first joint impulse
  int lim_s = 0;       // first limit slack
  int lim_g = 0;       // first limit impulse
  int fr_s = 0;        // first joint-friction slack (s+, s- of coordinate k at fr_s + 2 k)
  int fr_g = 0;        // first joint-friction rate (v+, v- of coordinate k at fr_g + 2 k)
  int fr_b = 0;        // first joint-friction impulse (beta of coordinate k at fr_b + k)
  int n = 0;           // unknowns
  // Cone structure for the interior point: orthant pairs (slack, impulse) and
  // second-order-cone triples; complementarity rows sit at the slack indices.
  std::vector<int> orthant_s, orthant_g;  // (no,)
  std::vector<int> soc_s, soc_g;          // (ns, 3)
  std::vector<int> soc_contact;           // (ns,) the nonlinear contact of each SOC block
  std::vector<int> orthant_contact;       // (no,) the contact of each orthant pair, -1 for a limit or joint friction
  std::vector<uint8_t> is_complementarity;  // (n,) 1 for complementarity rows
  int degree = 0;                          // orthant pairs + SOC blocks

  // ---- Newton matrix blocks over the graph: nodes are bodies (0..nb-1), joints
  // with rows or limits, and contacts.
  std::vector<int> body_node, joint_node, contact_node;  // node of each (-1: none)
  BlockStructure blocks;
  // The same pattern with each body eliminated before its contacts (each contact right
  // after the last of its bodies), then the body's joint: a contact's own diagonal block
  // is singular where its cones are degenerate (a sliding contact at the raw, unscaled
  // solution the gradients linearise at: both arrow matrices singular), and only the
  // body's coupling makes the pivot sequence regular. It costs fill among the contacts
  // of one body, so it serves the gradients and any factorisation the first order fails.
  // Where that order's structure exceeds kRobustStructureBytes (thousands of contacts:
  // the fill among a body's contacts grows as their number squared), a bounded order: a
  // body with more than kRobustContactsPerBody contacts keeps them before it (a fallback
  // factorisation whose singular pivot is one of those contacts fails), every other contact
  // follows the first of its bodies (model.cpp).
  BlockStructure blocks_robust;
  // The interior point's factorisation with every contact's node eliminated in closed
  // form (contact_elimination.h, factor.h factor_matrix_condensed): the pattern without the
  // contacts' nodes (bodies and joints, the same nodes and order, the unknowns before the
  // first contact's), into which the contacts' Schur complements are added. False (the
  // block LU of the whole matrix) without contacts or with a linear (pyramid) contact.
  bool contacts_condensed = false;
  BlockStructure blocks_condensed;
  // (runs, 3): [offset in blocks, offset in blocks_condensed, doubles] of the structural
  // blocks the two patterns share (the bodies' and joints' blocks, copied per factorisation)
  std::vector<int> condensed_copy;
  std::vector<int> condensed_body;    // (nb,) offset of body b's diagonal block in blocks_condensed
  std::vector<int> condensed_ab[2];   // (nc,) offsets of the a-b [0] and b-a [1] blocks (-1: the world)
  // block ids used by the assembly (-1 where the world is involved)
  std::vector<int> blk_body;                    // (nb,) body diagonal
  std::vector<int> blk_joint_diag;              // (nj,) joint node diagonal
  std::vector<int> blk_joint_body[2];           // (nj,) rows of joint, columns of parent [0] / child [1]
  std::vector<int> blk_body_joint[2];           // (nj,) rows of parent [0] / child [1], joint columns
  std::vector<int> blk_body_body;               // (nj,) parent-child coupling (dampers), parent rows
  std::vector<int> blk_body_body_t;             // (nj,) child rows, parent columns
  std::vector<int> blk_contact_diag;            // (nc,)
  std::vector<int> blk_contact_body[2];         // (nc,) contact rows, body a [0] / b [1] columns
  std::vector<int> blk_body_contact[2];         // (nc,) body a [0] / b [1] rows, contact columns
  std::vector<int> blk_contact_ab[2];           // (nc,) a-b [0] and b-a [1] body coupling
  // position of an unknown inside its node (row/column within blocks)
  std::vector<int> local_index;  // (n,)

  // A step whose next state has a position beyond state_bound (m) or a linear velocity
  // beyond state_bound / h (m/s) diverged, whatever the solver says: the integrator
  // cannot be trusted there (a spring too stiff for the timestep, a huge input).
  // state_bound = kDivergenceFactor (1 + the scene's length scale: joint vertices,
  // contact offsets, radii and shapes).
  double state_bound = 0.0;

  // (n,) each residual row's unit, for the relative tolerances (tolerances.h)
  std::vector<double> row_scale;

  int input_dimension() const { return nu; }
};

}  // namespace dojo
