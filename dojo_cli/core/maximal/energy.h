// Kinetic, potential and mechanical energy, linear and angular momentum of a
// trajectory's states (dojo_engine_notes.md 7.2).
//
// Dojo defines the momentum at time k by the discrete Legendre transform of the step
// that leaves k, minus half of that step's impulses. Since the step's residual is zero,
// that equals the average of the two one-sided transforms (dynamics.h momentum), which
// needs only the stored midpoint velocities into and out of k:
//     p_k = m (v[k] + v[k+1]) / 2                                     (world)
//     L_k = (h/4)[s+ J w+ + w+ x J w+ + s- J w- - w- x J w-]          (body)
// with w- = omega[k], w+ = omega[k+1], s = sqrt(4/h^2 - |w|^2). So energy and momentum
// are defined for the states 0..T-1 of a trajectory of T steps (the last state has no
// outgoing step). Kinetic energy is sum |p|^2/(2m) + L^T J^-1 L / 2; potential energy is
// -sum m g.x plus 1/2 k (theta - theta0)^2 for every joint spring. Angular momentum is
// about the world origin: sum R(q) L + x x p.
//
// Every function is batched over the T states: v, omega are (T+1, nb, 3) midpoint
// velocities (world linear, body angular), x (T, nb, 3) and q (T, nb, 4) the
// configurations of states 0..T-1 (row-major, contiguous).
#pragma once

#include "model.h"

namespace dojo {

// Per-body momenta of states 0..T-1: p (T, nb, 3) world linear, l (T, nb, 3) body angular.
void body_momenta(const Model& m, int steps, const double* v, const double* omega, double* p, double* l);

// (T,) kinetic energy of states 0..T-1.
void kinetic_energy(const Model& m, int steps, const double* v, const double* omega, double* out);

// (T,) gravity and spring potential energy of the configurations x, q.
void potential_energy(const Model& m, int steps, const double* x, const double* q, double* out);

// (T, 3) total linear momentum, world frame.
void linear_momentum(const Model& m, int steps, const double* v, const double* omega, double* out);

// (T, 3) total angular momentum about the world origin, world frame.
void angular_momentum(const Model& m, int steps, const double* x, const double* q, const double* v,
                      const double* omega, double* out);

// All of the above at once (the momenta computed once): kinetic (T,), potential (T,),
// linear (T, 3), angular (T, 3).
void mechanics(const Model& m, int steps, const double* x, const double* q, const double* v, const double* omega,
               double* kinetic, double* potential, double* linear, double* angular);

// Velocities at the knots t_0 .. t_{T-1} from the midpoint velocities v_mid, omega_mid
// (T+1, nb, 3): the knot momenta above (p_k, L_k) as velocities, v_k = p_k / m,
// omega_k = J^-1 L_k, second-order accurate (docs/physics.md). v, omega: (T, nb, 3).
// With `extrapolate_last`, one more knot (row T, the last midpoint row's own knot,
// whose outgoing step is unknown) is written as well, taking that step's impulses equal
// to the previous step's: p_T = left_T + (right_T - left_{T-1}) / 2, exact for constant
// forces, second order for smooth ones (v, omega then (T+1, nb, 3); with T = 0 the
// impulse is taken as zero).
void knot_velocities(const Model& m, int steps, const double* v_mid, const double* omega_mid, bool extrapolate_last,
                     double* v, double* omega);

// mechanics() of n states whose velocities are at the knots (v, omega (n, nb, 3), as
// knot_velocities gives): p = m v, L = J omega; every output has n rows.
void knot_mechanics(const Model& m, int states, const double* x, const double* q, const double* v,
                    const double* omega, double* kinetic, double* potential, double* linear, double* angular);

// Dojo's Storage.px and Storage.pq of n states whose velocities are at the knots (v, omega
// (n, nb, 3), as knot_velocities gives): each body's momenta at t_k, px = m v (world) and
// pq = R(q) J omega (world: the angular momentum about the body's centre of mass, as Dojo
// stores it). These are the knot momenta p_k, L_k that knot_velocities divides by the
// inertia (the discrete Legendre transforms on both sides of the knot averaged): every
// impulse at the knot counts half on each side, contacts included, where Dojo's
// momentum.jl leaves the contact impulses out of that half. px, pq: (n, nb, 3).
void knot_momenta(const Model& m, int states, const double* q, const double* v, const double* omega, double* px,
                  double* pq);

}  // namespace dojo
