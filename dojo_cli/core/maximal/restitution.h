// Restitution: a Newton target on a contact's normal velocity, built into its gap row.
//
// Dojo's contact holds at the next configuration, d(z3) >= 0 (gap row d - s = 0, s >= 0
// complementary to the normal impulse; contact.h). That is perfectly inelastic: an
// impact ends with the bodies touching, the normal relative velocity zero. With a
// restitution coefficient e the gap row becomes d(z3) - tau - s = 0, where the target
// tau >= 0 is computed from the state the step starts from (z2, with the midpoint
// velocities xi15), so the step is still one interior-point solve and tau is a constant
// of it (the Newton matrix is unchanged; the gradients add d tau / d z2 and d tau / d
// parameters: restitution_target_jacobian).
//
// The target (docs/physics.md, "Restitution"). At z2, with the collision table's geometry
// (distance d2, normal n, contact points), vn = n . (relative velocity of the contact
// points over the last step, from v15, w15) and A the relative normal acceleration that
// gravity gives (n . g against a half-space; 0 between two bodies, which both fall):
// - an impact is predicted when the free motion would close the gap within the step,
//   d2 + h (vn + h A) < 0; otherwise tau = 0 (Dojo's contact);
// - then the normal velocity leaving the step, v* (tau = d2 + h v*), is the one whose
//   discrete energy in the normal direction is e^2 times the energy before: along the
//   normal the integrator is Stormer-Verlet for d'' = A, which conserves exactly
//   E_k = -A d_k + v_{k-1/2} v_{k+1/2} / 2 (a parabola's apex is E / -A above the contact).
//   With E = -A d2 + vn (vn + h A) / 2 the condition -A (d2 + h v) + v (v + h A) / 2 =
//   e^2 E gives v* = h A / 2 + sqrt(h^2 A^2 / 4 + 2 A d2 (1 - e^2) + e^2 vn (vn + h A)),
//   clamped at 0 under the root and tau at 0 below. For A = 0 this is Newton's law
//   v* = -e vn. The bounce happens in the step that would close the gap, so the rebound
//   may start up to one step's travel early (d2 <= h |vn|), never inside the surface;
//   its energy, so the apex, is right (exactly, under gravity alone);
// - resting contacts: the approach speed V = -vn must exceed a threshold; the target is
//   scaled by smoothstep((V - v_th) / v_th), v_th = kRestitutionThreshold |g| h (the
//   speed gravity adds in one step): a body at rest, or bouncing slower than the step
//   can resolve, gets Dojo's inelastic contact and comes to rest. Without gravity
//   v_th = 0 (any approaching contact bounces).
//
// The same target brings out a contact that starts the step inside its surface, deeper than
// recovery.h's band, with or without restitution: tau = -(the penetration recovery.h's
// recurrence allows at z3), so d(z3) >= tau < 0 (docs/physics.md, "Contacts that start
// inside"); there is no bounce from inside.
#pragma once

#include "contact.h"

namespace dojo {

// v_th / (|g| h): restitution is off below v_th and full above 2 v_th (C1 in between).
constexpr double kRestitutionThreshold = 1.0;

// One body as the target reads it at z2 (pointers into the caller's arrays; null for the
// world): x2 (3), q2 (4), v15 (3), w15 (3, body frame).
struct RestitutionBody {
  const double* x;
  const double* q;
  const double* v;
  const double* w;
};

// The target tau (m) of contact c: a recovery from inside (< 0), a restitution target (> 0),
// or 0 (Dojo's contact: outside, and no restitution or no impact predicted).
//   h: timestep; gravity: (3,); a, b: bodies a and b (b unread for the world).
double restitution_target(const ContactParams& c, double h, const double gravity[3], const RestitutionBody& a,
                          const RestitutionBody& b);

// Columns of restitution_target_jacobian: per body (a, then b) its state tangents
// [x (3), v (3), phi (3), w (3)] (gradients.h's state layout, q -> q [sqrt(1 - |phi|^2), phi]),
// then the parameters: sphere offset (3), radius, restitution, gravity (3).
constexpr int kTargetStateColumns = 24;
constexpr int kTargetOffset = 24, kTargetRadius = 27, kTargetRestitution = 28, kTargetGravity = 29;
constexpr int kTargetColumns = 32;

// tau and its exact derivatives (dual numbers through the same code) into jac
// (kTargetColumns; body b's columns 0 for the world). Returns tau.
double restitution_target_jacobian(const ContactParams& c, double h, const double gravity[3],
                                   const RestitutionBody& a, const RestitutionBody& b, double jac[kTargetColumns]);

}  // namespace dojo
