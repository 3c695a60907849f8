// Steps of another length from a knot: the state a step of length h2 starts from, given
// the state of a step of length h1 that reached the knot (the run loop's substeps,
// docs/physics.md "Substeps").
//
// A state [x, v15, q, w15] holds the midpoint velocities xi15 = (v15, w15) of the interval
// of length h1 before its knot q_k. The discrete Euler-Lagrange equation with different
// steps before and after the knot,
//     D2 L_{h1}(q_{k-1}, q_k) + D1 L_{h2}(q_k, q_{k+1}) + forces = 0,
// depends on the interval before only through the knot momentum
//     p^- = L_{h1}(xi15) + (h1 / 2) F(q_k),
// with C_h(z) = L_h(xi15) + h F(q_k) + h E + D_h(xi15) the step's known side (residual.cpp
// step_setup, Data::constant): L_h the discrete Legendre transform (the bodies' left
// transforms, dynamics.h, and the rotors' left momenta, rotor.h); F the configuration's
// forces (gravity, springs), split evenly between the two ends of each step as Dojo's
// trapezoidal potential h (V(q_k) + V(q_k+1)) / 2 splits them; E the inputs and external
// forces of the step to come, whose whole impulse h2 E sits at its first knot (Dojo's
// placement, docs/physics.md (1): sampled at the step's start, not split), so E is not part
// of p^-; D_h the midpoint dampers' known half -(h c / 2) Jf^T Jf xi15 (below). With
// h1 = h2 = h this is (1) of docs/physics.md, right(xi25) - left(xi15) - h (F + E) - D.
// So the step of length h2 is the fixed-step h2 step from the state whose midpoint
// velocities xi' solve
//     L_{h2}(xi') = p^- - (h2 / 2) F(q_k)                                          (S)
// (the variational4 integrator's hand-over between sub-steps, variational4.h, with the
// rotors' momenta included): the step-length bookkeeping is this one map at a knot, and
// every step stays the core's fixed-step step (step.h) of its own Model.
//
// Dampers. A midpoint damper's impulse over a step, -h c Jf^T Jf xi, is split between the
// step's two ends (discrete Lagrange-d'Alembert). Its known half is not inverted in (S):
// with it, (S) would invert M - (h2 c / 2) Jf^T Jf, which is singular or indefinite for
// the light links where h c / 2 exceeds the link's inertia (alex_sake_hands' fingers: no
// re-expressed state from h/2 back to h), while the step itself only ever inverts
// M + (h c / 2) Jf^T Jf. So the re-expressed state's next step computes its own known half
// from xi' with its own h2: at the knot after n substeps the damper's impulse is
// -(h c / 2) Jf^T Jf (xi' + xi25) where Lagrange-d'Alembert's would weigh xi' by h/n, and at
// the knot before them -(h/n c / 2) (...) where it would weigh xi15 by h: the two
// differences cancel to first order over the substepped step (the damping impulse moves
// by a fraction of a step; none is lost or added).
//
// (S) is solved by Newton's method on the 6 nb velocities from xi15, with the exact dense
// Jacobian (the bodies' left-transform Jacobians, the rotors' Jacobians). The angular part
// of a body's left transform folds at |w| = sqrt(2)/h2 (its magnitude is largest there:
// dynamics.h): a knot whose angular momentum is past what a step of h2 can carry has no
// solution on the physical branch, and the map says so.
#pragma once

#include <vector>

#include "data.h"
#include "model.h"

namespace dojo {

// Newton iterations on (S) and its tolerance, relative to the largest entry of its
// right-hand side (momenta): rounding level, far below any solver tolerance (the
// re-expressed state must start the same step the knot momentum defines).
constexpr int kStepLengthMaxIterations = 30;
constexpr double kStepLengthTolerance = 1e-14;
// The physical branch of the left transform: |w| h2 below sqrt(2) (its fold), squared.
constexpr double kStepLengthFoldSq = 2.0;

struct StepLengthResult {
  bool ok = false;  // (S) solved on the physical branch
  int iterations = 0;
  double residual = 0.0;  // |(S)| (infinity norm) at the end, N s or N m s
};

// z_out (13 nb,): the state z (13 nb,) of a step of `from` (its midpoint velocities over
// from.h) with its velocities re-expressed for a step of `to` (to.h) from the same knot;
// positions and orientations unchanged. d_from, d_to: scratch of the two Models (their
// step set-up is overwritten; angle_ref is read, not changed). The two Models must be
// compiled from one description with different timesteps.
StepLengthResult midpoint_for_step(const Model& from, Data& d_from, const Model& to, Data& d_to, const double* z,
                                   double* z_out);

// Knot velocities at a knot between a step of h1 and one of h2 = m.h (storage v, omega;
// docs/physics.md "Substeps"). The fixed-step knot momentum (2) of docs/physics.md splits
// the knot's impulse evenly between the two half steps around it; with steps of different
// lengths each half step takes its share of the dual interval, h1 / (h1 + h2) before the
// knot:
//     p_k = P^- + s (P^+ - P^-),  s = h1 / (h1 + h2),
//     P^- = left_h2(xi15') + (h2/2) F,  P^+ = right_h2(xi25) - (h2/2) F,
// with xi15' the state's midpoint velocities re-expressed for h2 (midpoint_for_step: P^- is
// then the knot momentum p^- of the step before) and xi25 those of the step of h2 from it;
// P^+ - P^- is the knot's impulse less the configuration forces (constraint, contact and
// damper impulses, the inputs and external forces). With h1 = h2 it is (2) exactly. Only
// the bodies' transforms (energy.h knot_velocities). z (13 nb,): the state at the knot for
// a step of m (its midpoint velocities xi15'); z_next (13 nb,): the state that step
// reached (xi25); v, omega (nb, 3): the knot velocities (world linear, body angular).
// False when a state is not finite.
bool knot_velocities_between(const Model& m, Data& d, const double* z, const double* z_next, double h1, double* v,
                             double* omega);

// The Jacobian of midpoint_for_step at z, whose result is z_out (ok), in the gradients'
// tangent coordinates (gradients.h: [x, v, phi, w] per body, 12 nb): the map a substepped
// step's derivative chains through at both ends (docs/physics.md "Substeps", Gradients).
// Positions and orientations pass unchanged (identity rows); the velocities xi' solve (S),
//     L_h2(xi') = L_h1(xi) + ((h1 - h2) / 2) F(q),   h1 = from.h, h2 = to.h,
// F the configuration's forces per unit time (m g, the springs' -Jf^T k (m - m0)), so by
// the implicit function theorem on (S)
//     dxi' = L_h2'(xi')^-1 [L_h1'(xi) dxi + ((h1 - h2) / 2) (dF/dq) dq + (d/dtheta) dtheta],
// with L' the left transforms' Jacobians (the bodies' and the rotors', as the Newton
// iterations of (S) use), dF/dq the springs' second derivatives (kinematics.h at dual
// numbers, as the step's own gradients take them: gravity does not depend on q) and the
// parameter columns (gradients.h's kinds): mass and inertia through both left transforms
// and F, gravity and spring through F; dampers (their known half is not in (S)), friction
// and the contact kinds do not enter (zero columns). Writes A (12 nb x 12 nb) and P
// (12 nb x p for `kinds`), row-major, for the non-null ones. d_from, d_to: scratch of the
// two Models (their step set-up is overwritten). False when a state is not finite or
// L_h2'(xi') is singular.
bool midpoint_for_step_jacobian(const Model& from, Data& d_from, const Model& to, Data& d_to, const double* z,
                                const double* z_out, const std::vector<int>& kinds, double* A, double* P);

}  // namespace dojo
