// The minimal-coordinate (tree) model: Featherstone's algorithms on joint coordinates.
//
// A TreeModel is compiled once from a TreeInput (dojo_cli/minimal/model.py builds it
// from a scene's tree joints) and never mutated; a TreeData holds every scratch
// buffer, allocated once, so the algorithms allocate nothing (MuJoCo's and
// Pinocchio's Model/Data discipline). The algorithms work on spatial.h's types (motions,
// forces, rigid-body inertias). kinematics.h holds the forward kinematics, the point
// kinematics and RNEA once, templated on the scalar; then one file per algorithm: tree.cpp
// (the model, velocity kinematics, point kinematics), rnea.cpp, crba.cpp, aba.cpp,
// tree_derivatives.cpp, tree_second_order.cpp (PinnZoo's second-order products: kinematics.h
// at nested dual numbers, their scratch in TreeData::second).
//
// Conventions (PinnZoo's, docs/minimal.md):
// - each tree joint i connects a parent frame (joint lambda(i)'s successor frame, or
//   the world) to its successor frame, through a constant placement X_T (the
//   predecessor frame in the parent frame) and the joint motion X_J(q_i):
//   translation p_J = T^T q_t along n_t fixed unit directions (rows of T,
//   predecessor frame), then a rotation R_J: none, about a fixed axis (revolute),
//   or a quaternion [w x y z] (body to parent). Coordinates: translations first.
// - velocities v_i are the successor frame's velocity relative to the predecessor,
//   in the successor frame: v_i = [linear (n_t) ; angular (0, 1 or 3)], so the motion
//   subspace S_i is constant in the successor frame (Featherstone, RBDA table 4.1
//   form). The translation directions must be invariant under R_J (checked in
//   Python), so q_t' = T R_J T^T v_t: the floating base's body-frame linear velocity.
// - spatial vectors are [linear; angular] (Pinocchio's order): motion m = [v; w]
//   (v the velocity of the point at the frame origin), force f = [f; n].
// - the algorithms run in the world frame (Carpentier and Mansard 2018, "Analytical
//   Derivatives of Rigid Body Dynamics Algorithms", sec. III): every spatial quantity
//   of body i is expressed at the world origin, so no transform is needed between a
//   body and its parent, and J_i = X_i S_i are the columns of the world Jacobian.
#pragma once

#include <vector>

#include "math/spatial.h"

namespace dojo {

// Rotation part of a tree joint.
// Swing: a rotation with two free axes b1, b2 (unit, orthogonal, predecessor frame) and
// no twist about b1 x b2, R_J = exp([q1 b1 + q2 b2]x): Dojo's orbital joints, whose
// constraint b3 . Vec(q_rel) = 0 leaves exactly these rotations, with Dojo's own minimal
// coordinates q1 = b1 . log(q_rel), q2 = b2 . log(q_rel). Velocities v = q' (E = I); the
// body angular velocity is J_r(phi) [b1 b2] v, a motion subspace that turns with q.
enum class TreeRotation : int { None = 0, Revolute = 1, Quaternion = 2, Swing = 3 };

// The description handed over from Python (flat, row-major arrays over tree joints i,
// parents before children).
struct TreeInput {
  std::vector<double> gravity{0.0, 0.0, -9.81};
  std::vector<int> parent;                     // (n,) parent tree joint, -1 for the world
  std::vector<int> n_trans;                    // (n,) free translations 0..3
  std::vector<double> trans_dirs;              // (n, 3, 3) unit directions (rows), predecessor frame
  std::vector<int> rot_kind;                   // (n,) TreeRotation
  std::vector<double> axis;                    // (n, 3) revolute axis, predecessor frame
  std::vector<double> placement_rotation;      // (n, 4) X_T rotation [w x y z]
  std::vector<double> placement_translation;   // (n, 3) X_T origin, parent frame
  std::vector<double> mass;                    // (n,) kg
  std::vector<double> com;                     // (n, 3) centre of mass, successor frame
  std::vector<double> inertia;                 // (n, 3, 3) about the centre of mass, successor axes
  std::vector<int> idx_q, idx_v;               // (n,) first configuration / velocity entry
  int nq = 0, nv = 0;
  std::vector<int> point_joint;                // (np,) kinematics points: the joint whose frame carries them
  std::vector<double> point_offset;            // (np, 3) in that successor frame
  // Joint springs and dampers (Dojo's, on the joint's free coordinates: physics.md), one
  // value per velocity entry (a joint's free coordinates are its velocities: translations,
  // then the rotation); empty: none. The coordinates they act on are Dojo's, measured in
  // Dojo's joint frame: translations theta_t = q_t - T r, rotations the rotation vector
  // log(o^* q_rel) with o^* q_rel's angle in [0, 2 pi), where the joint frame (r, o) is
  // given in the predecessor frame: the identity, except for a floating joint (its
  // predecessor is the parent body: r = parent_vertex, o = orientation_offset).
  std::vector<double> spring, damper, spring_offset;  // (nv,) each, or empty
  // Rotor inertia (MuJoCo's armature) per velocity entry, or empty (none): the kinetic energy
  // 1/2 a v_k^2 of the entry's rate, so M += diag(a) (crba), D_i += diag(a) (aba) and
  // tau += a vdot (rnea). Python gives it only where v_k is a coordinate's rate (a revolute
  // rotation, a translation whose rate map E_t is the identity or, isotropic, orthogonal).
  std::vector<double> armature;
  std::vector<double> joint_frame_translation;         // (n, 3) r, or empty (zeros)
  std::vector<double> joint_frame_rotation;            // (n, 4) o [w x y z], or empty (identity)
  // Translations measured in the predecessor frame: the joint's translation velocities are
  // the coordinates' rates q_t' (E = I), the motion subspace's translation columns
  // R_J^T T^T turn with the rotation (cylindrical_free, planar_free and the orbitals with
  // translations, whose translations are not invariant under the rotation). (n,) 0/1, or
  // empty (none). A swing joint with translations must have it.
  std::vector<int> trans_pred;
  std::vector<double> swing_axes;  // (n, 2, 3) b1, b2 of each swing joint (zeros otherwise), or empty
  // Locked joints (Drake's Lock, docs/scenes.md "Locked joints"): (n,) 1 for a locked tree
  // joint, or empty (none). Its velocities are held at zero and its coordinates where they
  // are: the forward dynamics solves the reduced system M_ff vdot_f = tau_f - c_f(q, v) over
  // the free velocities f, with v_l read as zero and vdot_l = 0 (aba.cpp); M, C and the
  // inverse dynamics stay the tree's (their locked rows minus tau are the lock forces).
  std::vector<int> locked;
};

struct TreeModel {
  explicit TreeModel(const TreeInput& in);

  int n = 0, nq = 0, nv = 0, np = 0;
  double gravity[3] = {0.0, 0.0, -9.81};
  std::vector<int> parent, n_trans, rot_kind, nq_i, nv_i, idx_q, idx_v;
  std::vector<double> trans_dirs, axis, placement_R, placement_p;  // (n,9) (n,3) (n,9) (n,3)
  std::vector<double> S;        // (n, 36) motion subspace, successor frame, column-major 6 x nv_i
  std::vector<double> body_mass, body_com, body_inertia;  // (n,), (n, 3), (n, 9): the same, as given
  std::vector<int> point_joint;
  std::vector<double> point_offset;
  // subtree[i]: joints of the subtree rooted at i (i first), in model order
  std::vector<std::vector<int>> subtree;
  // springs and dampers (TreeInput): (nv,) each, zeros when none; joint frames (n, 3), (n, 4)
  std::vector<double> spring, damper, spring_offset, joint_frame_p, joint_frame_q;
  std::vector<double> armature;  // (nv,) rotor inertia (TreeInput), zeros when none
  // trans_pred and swing axes (TreeInput); variable[i]: S_i depends on q (trans_pred or swing)
  std::vector<int> trans_pred, variable;
  std::vector<double> swing_axes;  // (n, 6)
  // joint-type specialisations (the forward kinematics' fast paths, exact): axis_index (n,) the
  // coordinate axis 0, 1, 2 of a revolute joint whose axis is exactly +-e_k (-1 otherwise),
  // axis_sign (n,) its sign; placement_identity (n,) 1 where X_T's rotation is exactly I
  std::vector<int> axis_index, placement_identity;
  std::vector<double> axis_sign;
  // CRBA's flat index lists (crba.cpp), so that its inner loop is one dot product a pair: for
  // velocity entry k of joint i's column c, v_joint[k] = i and v_col[k] = 6 i + c (its column of
  // J and S); support_v[support_start[k] .. support_start[k + 1]) the entries r whose M_rk can
  // be nonzero and is not already filled as M_kr: the strict ancestors' columns and i's own
  // from c on (M_rk = J_r^T Yc_i J_k with r the later column of a joint's own pair, as the
  // nested loops had it: the same rounding); the rest of row k is zero (other branches)
  std::vector<int> v_joint, v_col, support_start, support_v;
  // locked joints (TreeInput.locked): locked (n,) 0/1; locked_v (nv,) 0/1 per velocity entry;
  // free_v the indices of the free (not locked) velocities, in order (nf = free_v.size())
  std::vector<int> locked, locked_v, free_v;
  bool any_locked = false;
};

// What the kinematics and RNEA compute at one scalar type T (kinematics.h): T = double in
// TreeData, where the other algorithms read it; T = nested dual numbers for PinnZoo's
// second-order products (tree_second_order.cpp), which push the same code through. Sized once
// (resize, at the model's compile), so the algorithms allocate nothing.
template <class T>
struct TreeState {
  void resize(const TreeModel& m) {
    const size_t n = static_cast<size_t>(m.n);
    q.assign(static_cast<size_t>(m.nq), T(0.0));
    qnorm.assign(n, T(1.0));
    RJ.assign(n, identity3<T>());
    R.assign(n, identity3<T>());
    p.assign(n, zero3<T>());
    phi.assign(n, zero3<T>());
    S.assign(6 * n, zero_motion<T>());
    for (size_t k = 0; k < 6 * n; ++k)
      for (int r = 0; r < 3; ++r) {
        S[k].v[r] = T(m.S[6 * k + r]);
        S[k].w[r] = T(m.S[6 * k + 3 + r]);
      }
    J.assign(6 * n, zero_motion<T>());
    Y.assign(n, Inertia<T>{T(0.0), zero3<T>(), identity3<T>()});
    ov.assign(n, zero_motion<T>());
    oa.assign(n, zero_motion<T>());
    of.assign(n, zero_force<T>());
    tau.assign(static_cast<size_t>(m.nv), T(0.0));
  }
  // ---- per joint (world frame: placements of the successor frames)
  std::vector<T> q;                 // (nq,) the configuration with its quaternions normalised
  std::vector<T> qnorm;             // (n,) |q| of each quaternion joint (1 otherwise)
  std::vector<Mat3<T>> RJ, R;       // joint rotation R_J; successor frame's rotation in the world
  std::vector<Vec3<T>> p, phi;      // successor frame's origin in the world; a swing's rotation vector
  std::vector<Motion<T>> S, J;      // (6 n) joint i's columns at 6 i: motion subspace S_i(q) (successor
                                    // frame; the model's unless variable) and world Jacobian X_i S_i
  std::vector<Inertia<T>> Y;        // body inertia, world (about the origin)
  std::vector<Motion<T>> ov, oa;    // velocity, acceleration (gravity included), world
  std::vector<Force<T>> of;         // body forces; after RNEA's backward pass the subtree forces
  std::vector<T> tau;               // (nv,) RNEA's result
};

// The variation of a body's (or a subtree's) momentum equation with the velocity, the matrix
// B of the RNEA derivatives (Carpentier and Mansard 2018, eq. 14's dYcrb with the momentum
// cross term): B u = Y (u x v) + u x* (Y v) + v x* (Y u), linear in the motion u. Written out
// with Y = [[m 1, -[g]x], [[g]x, I]] (g = m c, spatial.h's Inertia), v = [vl; w] and the
// momentum Y v = [f; n], B = [[0, -2 [f]x], [0, Bw]] with
//   Bw = [w]x I - I [w]x + 2 (vl . g) 1 - vl g^T - g vl^T - [n]x:
// B reads only u's angular part, 12 numbers instead of a dense 6x6, and sums as such.
struct InertiaVariation {
  Vec3<double> f;
  Mat3<double> Bw;
};
inline InertiaVariation operator+(const InertiaVariation& a, const InertiaVariation& b) {
  return InertiaVariation{a.f + b.f, a.Bw + b.Bw};
}
// B of a body with inertia Y (world) moving with v
inline InertiaVariation inertia_variation(const Inertia<double>& Y, const Motion<double>& v) {
  const Force<double> h = Y * v;
  const Vec3<double>& vl = v.v;
  const Vec3<double>& g = Y.h;
  const Mat3<double> wx = skew(v.w);
  const Mat3<double> WI = matmul(wx, Y.I);  // [w]x I; I [w]x = -([w]x I)^T (I symmetric)
  const double vg = 2.0 * dot(vl, g);
  InertiaVariation out;
  out.f = h.f;
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) out.Bw[r][k] = WI[r][k] + WI[k][r] - vl[r] * g[k] - g[r] * vl[k];
  for (int r = 0; r < 3; ++r) out.Bw[r][r] += vg;
  const Mat3<double> nx = skew(h.n);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) out.Bw[r][k] -= nx[r][k];
  return out;
}
// B u = [-2 f x u_w; Bw u_w]
inline Force<double> operator*(const InertiaVariation& B, const Motion<double>& u) {
  return Force<double>{-2.0 * cross(B.f, u.w), matvec(B.Bw, u.w)};
}
// B^T u = [0; 2 f x u_v + Bw^T u_w] (a row of J^T B, as a force to dot with motions)
inline Force<double> transpose_mul(const InertiaVariation& B, const Motion<double>& u) {
  return Force<double>{zero3<double>(), 2.0 * cross(B.f, u.v) + tmatvec(B.Bw, u.w)};
}

// The scratch of PinnZoo's second-order products (tree_second_order.cpp): the kinematics and
// RNEA at second-order dual numbers, their seeded inputs and the points' outputs.
using TreeDual2 = Dual<Dual<double, 1>, 1>;
struct TreeSecondOrder {
  void resize(const TreeModel& m) {
    s.resize(m);
    x.assign(static_cast<size_t>(m.nq + 2 * m.nv), TreeDual2(0.0));
    pos.assign(static_cast<size_t>(3 * m.np), TreeDual2(0.0));
    jac.assign(static_cast<size_t>(3 * m.np * m.nv), TreeDual2(0.0));
  }
  TreeState<TreeDual2> s;
  std::vector<TreeDual2> x;         // (nq + 2 nv,) seeded [q; v; vdot]
  std::vector<TreeDual2> pos, jac;  // (3 np,), (3 np, nv)
};

struct TreeData : TreeState<double> {
  explicit TreeData(const TreeModel& m);

  // ---- per joint (world frame) beyond TreeState
  std::vector<Inertia<double>> Yc;    // composite (subtree) inertia, world
  std::vector<InertiaVariation> Bc;   // subtree sum of the inertia variation (derivatives)
  std::vector<Motion<double>> dVdq, dAdq, dAdv, psi;  // (6 n) columns per joint (derivatives)
  std::vector<Force<double>> P, Q, Delta, DeltaV;     // (6 n) (derivatives)
  // ---- articulated body scratch (aba.cpp)
  std::vector<double> IA, Dinv;             // (n, 36): articulated inertia (6x6 row-major), D^-1 (nv_i x nv_i)
  std::vector<Force<double>> U;             // (6 n) U = IA J, per column
  std::vector<Force<double>> pA;            // articulated bias forces
  std::vector<Motion<double>> c;            // velocity-product accelerations
  std::vector<double> u;                    // (n, 6)
  // ---- generalized quantities
  std::vector<double> qdot, vdot;           // (nq,), (nv,)
  std::vector<double> v;                    // (nv,) the velocities of the last tree_velocities
  std::vector<double> M, Minv, L;           // (nv, nv) row-major
  std::vector<double> dtau_dq, dtau_dv;     // (nv, nv) tangent derivatives
  std::vector<double> work, work2;          // (nv * nv) scratch
  // ---- locked joints (TreeModel.locked)
  std::vector<double> v_held;    // (nv,) the velocities with the locked entries zeroed (tree_held_velocities)
  std::vector<double> lock_tau;  // (nv,) lock forces of the last tree_aba: (M vdot + C - tau) on locked rows, 0 elsewhere
  std::vector<double> Mff;       // (nf, nf) scratch: the free block of M
  // ---- PinnZoo's second-order products (tree_second_order.cpp): the kinematics and RNEA at
  // second-order dual numbers, and their seeds and outputs, sized once
  TreeSecondOrder second;
};

// ---- tree.cpp
// Placements R, p, world Jacobians J and world inertias Y at q (nq,) (quaternions normalised).
void tree_forward_kinematics(const TreeModel& m, TreeData& d, const double* q);
// Velocities ov (world) at v (nv,), after tree_forward_kinematics.
void tree_velocities(const TreeModel& m, TreeData& d, const double* v);
// E(q) (nq, nv) with q' = E v, and E_T(q) (nv, nq) with v = E_T q', E_T E = I (PinnZoo's
// velocity_kinematics / velocity_kinematics_T; quaternions used as given).
void tree_velocity_kinematics(const TreeModel& m, const double* q, double* E);
void tree_velocity_kinematics_T(const TreeModel& m, const double* q, double* ET);
// d(E(q) v)/dx (nq, nq + nv) and d(E_T(q) y)/dx (nv, nq + nv), PinnZoo's *_jvp_deriv.
void tree_velocity_kinematics_jvp_deriv(const TreeModel& m, const double* q, const double* v, double* out);
void tree_velocity_kinematics_T_jvp_deriv(const TreeModel& m, const double* q, const double* y, double* out);
// Right-multiply a tangent derivative A (rows, nv) by d(tangent)/d(raw q) (nv, nq), into
// out (rows, nq) with row stride ld_out: the chain rule to PinnZoo's raw-x derivatives
// (a function of a quaternion is evaluated at q/|q|).
void tree_tangent_to_raw(const TreeModel& m, const TreeData& d, const double* A, int rows, double* out, int ld_out);
// Point kinematics (after forward kinematics; velocities after tree_velocities).
void tree_point_positions(const TreeModel& m, const TreeData& d, double* pos);       // (np, 3)
void tree_point_velocities(const TreeModel& m, const TreeData& d, double* vel);      // (np, 3)
void tree_point_jacobian(const TreeModel& m, const TreeData& d, double* jac);        // (3np, nv) tangent
// Generalized force (added into tau, nv) of a wrench fixed in joint k's successor frame:
// the force f at the point offset and the torque t (both in that frame), after forward
// kinematics: tau += J_k^T [R f; (p + R offset) x R f + R t] (world spatial force at the
// origin through the world Jacobian columns of k and its ancestors).
void tree_frame_wrench(const TreeModel& m, const TreeData& d, int k, const double* offset, const double* f,
                       const double* t, double* tau);
// d(point velocity)/d(tangent q) (3np, nv)
void tree_point_velocity_jacobian(const TreeModel& m, const TreeData& d, double* jac);
// d(J_v^T lambda)/d(tangent q) (nv, nv) for world forces lambda (np, 3) at the points
void tree_point_force_jacobian(const TreeModel& m, TreeData& d, const double* lambda, double* jac);

// Tangent derivatives of a variable joint's subspace and bias, world frame at the origin,
// after forward kinematics: for each tangent direction s of joint i (0..nv_i-1)
// dS[s][c] = X d(S col c)/ds, dSv[s] = X (dS/ds) v_i, dSa[s] = X (dS/ds) a_i (a null: 0),
// dbq[s] = X d(beta)/ds, dbv[s] = X d(beta)/dv_s, beta = Sdot v_i (successor frame).
struct JointVariation {
  Motion<double> dS[6][6], dSv[6], dSa[6], dbq[6], dbv[6];
};
void tree_joint_variation(const TreeModel& m, const TreeData& d, int i, const double* v, const double* a,
                          JointVariation& out);
// A = J_r(phi) [b1 b2] (3x2) of swing joint i at its coordinates qr (2,), phi = b1 q1 + b2 q2,
// with dA[k] = dA/dq_k and d2A[k][l] = d2A/dq_k dq_l (null: not wanted); J_r the right
// Jacobian of SO(3) (exact derivatives: nested dual numbers, dual.h).
void tree_swing_jacobian(const TreeModel& m, int i, const double* qr, double A[3][2], double dA[2][3][2],
                         double d2A[2][2][3][2]);

// v (nv) as the dynamics read it: v itself without locked joints, else a copy in d.v_held
// with the locked joints' entries zero (Drake's Lock holds them at zero).
const double* tree_held_velocities(const TreeModel& m, TreeData& d, const double* v);

// ---- tree_passive.cpp
// tau (nv,) of the joints' springs and dampers at x = [q; v] (nq + nv,), which C leaves
// out: Dojo's -k (theta - theta0) - c theta' on each free coordinate theta (TreeInput),
// mapped by d theta'/dv^T: E_t^T = T R_J^T T^T for translations, 1 for a revolute angle,
// J_r^-1(theta)^T (spatial.h) for a rotation vector. Quaternions are normalised.
void tree_passive_forces(const TreeModel& m, const double* x, double* tau);
// tau (nv) += the same forces at configuration q (nq) and velocities v (nv) (rk4's stages).
void tree_passive_forces_add(const TreeModel& m, const double* q, const double* v, double* tau);

// ---- rnea.cpp (Featherstone, RBDA algorithm 5.1, world frame)
// tau = M(q) a + C(q, v) into d.tau; a null: the bias C (Pinocchio's nonLinearEffects).
void tree_rnea(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a);

// ---- crba.cpp (RBDA algorithm 6.2, world frame): d.M (nv, nv), both triangles.
void tree_crba(const TreeModel& m, TreeData& d, const double* q);
// The same after tree_forward_kinematics (or an algorithm that ran it) at q.
void tree_crba_at_kinematics(const TreeModel& m, TreeData& d);
// Cholesky of d.M into d.L and d.Minv = M^-1 (after tree_crba); throws if M is not positive
// definite. With locked joints, d.Minv is the reduced inverse: M_ff^-1 on the free rows and
// columns, zero on the locked ones (d vdot / d tau of the reduced solve; d.L factors M_ff).
void tree_mass_matrix_inverse(const TreeModel& m, TreeData& d);

// ---- aba.cpp (RBDA algorithm 7.3, world frame): d.vdot. A locked joint is welded at its q
// (no free columns, v_l read as zero, vdot_l = 0); its lock force goes to d.lock_tau.
void tree_aba(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* tau);

// ---- tree_derivatives.cpp (Carpentier and Mansard 2018)
// d.dtau_dq, d.dtau_dv (nv, nv), tangent, of tau = rnea(q, v, a); also leaves d.tau.
void tree_rnea_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a);
// ABA derivatives: vdot = aba(q, v, tau) into d.vdot, d.Minv (= dvdot/dtau), and
// dvdot_dq = -M^-1 dtau_dq, dvdot_dv = -M^-1 dtau_dv (tangent) into the outputs (nv, nv).
// With locked joints, those of the reduced solve: M^-1 the reduced inverse (zero locked rows
// and columns), dtau at v_l = 0, and zero columns for v_l (read as zero).
void tree_aba_derivatives(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* tau,
                          double* dvdot_dq, double* dvdot_dv);

// ---- tree_second_order.cpp: PinnZoo's second-order kinematics products, exact (dual numbers
// through kinematics.h's point kinematics and RNEA, at T = second-order duals; d.second holds
// their scratch), with respect to the raw q (nq,); J_v (3np, nv) the
// points' tangent Jacobian (d kinematics_velocity / dv), lambda (3np,) world forces at them.
// out (3np, nq): d/dq_j [(d pos/dq) dq], PinnZoo's kinematics_hvp (its q columns).
void tree_kinematics_hvp(const TreeModel& m, TreeData& d, const double* q, const double* dq, double* out);
// With F(q, lambda) = d(J_v^T lambda)/dq (nv, nq): out_q (nv, nq) = d(F dq)/dq and
// out_lambda (nv, 3np) = d(F dq)/dlambda = (dJ_v/dq . dq)^T (kinematics_force_hvp).
void tree_kinematics_force_hvp(const TreeModel& m, TreeData& d, const double* q, const double* lambda, const double* dq,
                               double* out_q, double* out_lambda);
// out_q (nq, nq) = d(F^T mult)/dq, the Hessian of lambda . J_v(q) mult (symmetric), and
// out_lambda (nq, 3np) = d(F^T mult)/dlambda = (d(J_v mult)/dq)^T (kinematics_force_hTvp); mult (nv,).
void tree_kinematics_force_hTvp(const TreeModel& m, TreeData& d, const double* q, const double* lambda, const double* mult,
                                double* out_q, double* out_lambda);

// With tau(x, vdot) the inverse dynamics (kinematics.h's RNEA) at raw x = [q; v]:
// inverse_dynamics_hvp, lam (nx,): out_x (nv, nx) = d((dtau/dx) lam)/dx and out_a (nv, nv) =
// d((dtau/dx) lam)/dvdot (= (dM/dq . lam_q)).
void tree_inverse_dynamics_hvp(const TreeModel& m, TreeData& d, const double* x, const double* vdot, const double* lam,
                               double* out_x, double* out_a);
// inverse_dynamics_hTvp, lam (nv,): out_x (nx, nx) = d((dtau/dx)^T lam)/dx, the Hessian of
// lam . tau (symmetric), and out_m (nv, nx) = d((dtau/dvdot)^T lam)/dx = d(M lam)/dx.
void tree_inverse_dynamics_hTvp(const TreeModel& m, TreeData& d, const double* x, const double* vdot, const double* lam,
                                double* out_x, double* out_m);

// ---- small spatial helpers shared by the algorithm files
namespace tree {

// The inverse of a symmetric positive definite n x n matrix A (row-major) by Cholesky,
// A = L L^T, A^-1 = L^-T L^-1, into Ainv (which may be A itself: A is read only while it
// is factored). L (which keeps the factor) and Li are n x n scratch. Throws
// std::domain_error(what) when A is not positive definite. (CRBA's M^-1, ABA's D_i^-1.)
void spd_inverse(const double* A, int n, double* L, double* Li, double* Ainv, const char* what);

// 6x6 row-major A times a motion: a force (the articulated inertias of aba.cpp)
inline Force<double> mat6_mul(const double* A, const Motion<double>& x) {
  Force<double> out;
  for (int r = 0; r < 3; ++r) {
    const double* a = A + 6 * r;
    const double* b = A + 6 * (r + 3);
    out.f[r] = a[0] * x.v[0] + a[1] * x.v[1] + a[2] * x.v[2] + a[3] * x.w[0] + a[4] * x.w[1] + a[5] * x.w[2];
    out.n[r] = b[0] * x.v[0] + b[1] * x.v[1] + b[2] * x.v[2] + b[3] * x.w[0] + b[4] * x.w[1] + b[5] * x.w[2];
  }
  return out;
}

// the 6x6 row-major matrix of a rigid-body inertia: [[m 1, -[h]x], [[h]x, I]] (spatial.h)
inline void inertia_matrix(const Inertia<double>& Y, double* A) {
  const Vec3<double>& h = Y.h;
  const double hx[3][3] = {{0.0, -h[2], h[1]}, {h[2], 0.0, -h[0]}, {-h[1], h[0], 0.0}};
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) {
      A[6 * r + k] = r == k ? Y.m : 0.0;
      A[6 * r + 3 + k] = -hx[r][k];
      A[6 * (3 + r) + k] = hx[r][k];
      A[6 * (3 + r) + 3 + k] = Y.I[r][k];
    }
}

}  // namespace tree
}  // namespace dojo
