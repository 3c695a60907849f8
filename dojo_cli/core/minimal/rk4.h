// Munthe-Kaas RK4 in minimal coordinates (RigidBodyDynamics.jl's simulate, issue 13 item 6).
//
// One step from (t, q0, v0) with step h (other_systems_notes.md 1.4): stage i sets
// q_i = global(q0, phi_i), v_i = v0 + h sum_j a_ij vdot_j, with local coordinates
// phi_i = h sum_j a_ij phidot_j around q0; the dynamics give vdot_i at t + c_i h and
// phidot_i is the rate of the local coordinates at (q_i, v_i); the classic tableau
// (a21 = a32 = 1/2, a43 = 1; b = 1/6, 1/3, 1/3, 1/6) combines them, and
// q = global(q0, phi). Local coordinates per tree joint:
// - vector-space joints (none, revolute, their translations): phi = q - q0,
//   phidot = q' = E(q) v (a planar joint's translations turn with its angle);
// - a spherical joint: phi the rotation vector of q0^-1 q, q = q0 exp(phi),
//   phidot = J_r^-1(phi) w;
// - a floating joint: phi = log(T0^-1 T) in SE(3) (rotation and translation coupled),
//   T = T0 exp(phi), phidot = V + ad_phi V / 2 + A ad_phi^2 V + B ad_phi^4 V
//   (Bullo and Murray, lemma 4; RBD's coefficients).
//
// The dynamics at a stage: tau = B(q) u (the scene's inputs, held over the step) +
// springs and dampers (minimal/inputs.py's passive_forces) + a control callback's
// torques; then ABA, or, with loop-closing joints, M vdot + c = tau - K^T lambda,
// K vdot = -Kdot v - kd (K v) - kp phi (RBD's dynamics!: Cholesky of M, the Schur
// complement A = K M^-1 K^T solved rank-revealing, here by pivoted Cholesky with a
// relative drop tolerance 1e-10, since redundant loop rows make A only PSD). Loop rows
// are Dojo's constrained basis rows of the joint: translational rows b . d with
// d = R_a^T (x_b + R_b p_b - x_a) - p_a (exact derivative), rotational rows b . w_rel
// (relative angular velocity in the joint frame) with phi = b . log(q_rel): tangent to
// the constraint manifold for revolute, spherical and fixed loop joints. Baumgarte
// gains per loop joint (kp, kd) for the translational and the rotational rows; RBD's
// default (100, 20), i.e. critical damping at 10 rad/s (Featherstone 2008, sec. 8.3).
//
// Locked joints (tree.h TreeInput.locked, Drake's Lock): each step zeroes their velocities,
// the dynamics solve the reduced system (ABA welds them; with loops, the reduced M^-1 makes
// the Schur complement K_f M_ff^-1 K_f^T), so vdot_l = 0, v_l stays exactly zero and the
// locked coordinates do not move.
//
// Allocation-free: every buffer lives in Rk4Data, sized once.
#pragma once

#include <functional>
#include <vector>

#include "tree.h"

namespace dojo {

// What Python hands over besides the TreeModel (flat arrays; n tree joints, nu inputs).
struct Rk4Input {
  int nb = 0;                              // scene bodies
  std::vector<int> body;                   // (n,) scene body of each tree joint (-1: a massless frame)
  std::vector<double> placement_quat;      // (n, 4) X_T rotation [w x y z]
  int nu = 0;                              // Dojo's free coordinates (inputs)
  std::vector<int> free_start;             // (n,) first free coordinate of each tree joint
  std::vector<int> floating;               // (n,) 1 for a floating joint
  std::vector<double> offset_quat;         // (n, 4) orientation offset (a floating joint's quaternion includes it)
  // (springs and dampers: the TreeModel's own values, tree_passive.cpp)
  // loop-closing joints (nl)
  std::vector<int> loop_parent, loop_child;  // (nl,) tree joint carrying the parent / child body (-1: the world)
  std::vector<double> loop_pa, loop_pb;      // (nl, 3) joint point in the parent / child body frame (from the centre of mass)
  std::vector<double> loop_offset;           // (nl, 4) orientation offset [w x y z]
  std::vector<int> loop_row_start;           // (nl + 1,) rows of each loop joint
  std::vector<int> row_rotational;           // (nr,) 0 translational (parent frame), 1 rotational (joint frame)
  std::vector<double> row_basis;             // (nr, 3) the constrained basis rows
  std::vector<double> loop_gains;            // (nl, 4) kp, kd of the translational rows, kp, kd of the rotational rows
  std::vector<int> loop_stabilized;          // (nl,) 0: no Baumgarte terms
};

struct Rk4Model {
  Rk4Model(const TreeModel& tree, const Rk4Input& in);
  int n = 0, nq = 0, nv = 0, nb = 0, nu = 0, nl = 0, nr = 0;
  Rk4Input in;
  std::vector<double> offset_R;  // (nl, 9) loop offsets as matrices
  bool has_passive = false;      // any spring or damper
};

// Torques of a control callback: (t, q, v, tau) with tau (nv) to fill (zeroed before).
using Rk4Control = std::function<void(double, const double*, const double*, double*)>;

struct Rk4Data {
  explicit Rk4Data(const Rk4Model& r);
  std::vector<double> q0, v0, qs, vs, phi, phid, vd;  // phid, vd: (4, nv)
  std::vector<double> tau, tau_user, f;
  std::vector<double> K, rhs, A, Lc, lam, y, Y;  // loop solve: (nr, nv) (nr) (nr, nr) (nr, nr) (nr) (nr) (nr, nv)
  std::vector<int> perm;
  std::vector<double> quat;   // (n, 4) body quaternions (composition along the tree)
};

// vdot at (t, q, v) with step inputs u (nu, or null) and an optional control.
void rk4_dynamics(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, double t, const double* q,
                  const double* v, const double* u, const Rk4Control* control, double* vdot);
// The scheme's Munthe-Kaas coordinate maps, per tree joint (the header's list), for a
// stepping loop with another tableau (minimal/integrator.py): q (nq) = global(q0, phi)
// with phi (nv) local coordinates around q0; phid (nv), the rate of the local coordinates
// phi (around q0) at the stage (q, v) (dexp^-1: J_r^-1 on SO(3), Bullo and Murray on SE(3)).
void rk4_global_coordinates(const TreeModel& m, const double* q0, const double* phi, double* q);
void rk4_local_rates(const TreeModel& m, const double* q, const double* phi, const double* v, double* phid);
// One step: q (nq), v (nv) in place.
void rk4_step(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, double t, double h, double* q,
              double* v, const double* u, const Rk4Control* control);
// Every scene body's maximal state [x, v, q, w] (13 nb) at (q, v) (forward kinematics).
void rk4_bodies(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, const double* q, const double* v,
                double* z);
// Per loop joint: the distance between its two joint points (m) and the rotation angle
// of its constrained rotational error (rad) at q, into out (nl, 2).
void rk4_loop_errors(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, const double* q, double* out);
// n steps from t0: q, v advanced in place; after step k, row (row0 + k) % cap of
// out_q (cap, nq), out_v (cap, nv) and out_z (cap, 13 nb, or null) receive the state.
// inputs: (n, nu) per step, or null. Returns the steps taken (fewer than n when the
// state stops being finite: the last row written is then the first non-finite state).
int rk4_run(const TreeModel& m, TreeData& d, const Rk4Model& r, Rk4Data& rd, double* q, double* v, double t0,
            double h, int n, const double* inputs, double* out_q, double* out_v, double* out_z, int cap, int row0,
            const Rk4Control* control);

}  // namespace dojo
