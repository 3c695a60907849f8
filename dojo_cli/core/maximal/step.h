// One whole step of Dojo's variational integrator in maximal coordinates: setup, warm
// start, the contact set (margins.h), the solve (newton.h or interior_point.h), the next
// state. The residual it solves is written out in residual.h.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Interior-point starting value of joint-limit slacks and impulses (Dojo: reset to 1).
constexpr double kLimitStart = 1.0;

// Warm start: previous midpoint velocities, lambda0 (or zero), cone variables at
// Dojo's starting values strictly inside their cones (the contacts in the solve:
// d.contact_active; the others' unknowns are left as they are), the impulses of the
// contacts and joint limits (their gamma) times impulse_scale (a restart's, below).
void step_initial_guess(const Model& m, Data& d, const double* lambda0, double impulse_scale = 1.0);

// Restarts. The interior point starts every contact and limit at Dojo's point, impulses
// gamma = 1.5 N s (1 for limits), whatever the bodies they act on. That is the scale of
// a ~1 kg body at h = 0.01 (m |g| h ~ 0.1 N s); on a light link (a 0.1 kg pendulum base,
// a finger, a foot: m |g| h ~ 1e-3 N s, inertias ~ 1e-5 kg m^2) the starting impulses
// give the first iterates velocity changes of metres per second and angular ones at the
// 2/h clip, the Newton directions are huge (|dw| ~ 1e3) and the cones cut the steps to
// alpha ~ 1e-5: the solve stalls at max_iter (seen on 33 of 69 example-robot-data robots
// dropped limp, benchmarks/robot_zoo.py). The impulse scale a step needs depends on the
// load its contacts carry (a fingertip may hold the whole robot), which is not known
// before the solve. So a failed interior-point solve is solved again from the same point
// with the starting impulses scaled by the other kImpulseScales in turn, until one
// converges, and a run starts its next step from the scale that converged
// (Data::impulse_scale, 1 in a new Data: a stateless step starts from Dojo's point).
// The problem is the same: a converged restart is a solution of the step to the same
// tolerances (only the path to it differs), and a run whose steps converge from Dojo's
// start never leaves it (the goldens pin that path, iteration counts included).
// Data::restarts counts a step's restarts.
// If every scale fails, a second sweep solves from every scale again (Dojo's own
// included) with the line search's filter (interior_point.h, step 5, filter_acceptance).
// If that fails too, a third sweep solves from every scale with the filter and the
// re-centring of jammed cones (interior_point.h, recentre_jams; b1-z1 dropped limp,
// steps 40-43 at the relative tolerances). If that fails too, a fourth sweep adds
// Gondzio's centrality correctors (interior_point.h, centrality_correctors: light links
// lying on many hull-vertex contacts, whose badly centred cones cut every step short).
// A step that converges in an earlier sweep is
// untouched by the later ones: the runs that converged before them are the same to the bit.
// A step whose every attempt fails ends at the attempt that came closest, the smallest
// max(rvio / rtol, bvio / btol), not at the last one: its state starts the next step
// (the last attempt, from the smallest impulses, could end a contact 15 mm deep in the
// ground where an earlier attempt had it at the surface: g1 dropped limp, step 71).
constexpr double kImpulseScales[] = {1.0, 1e-1, 1e-2, 1e-3};
// The restart sweeps above: Dojo's scales; with the filter; with re-centring; with the correctors.
constexpr int kSweeps = 4;
// Solves of a step at most, not counting the margins' re-solves (margins.h): the first,
// the first sweep's restarts, the second's, the third's and the fourth's. The solver log has room for them all.
constexpr int kMaxAttempts = kSweeps * static_cast<int>(sizeof(kImpulseScales) / sizeof(kImpulseScales[0]));

// One whole step: setup, warm start, solve, next state. The result is in d.
SolverStatus step(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                  const double* tau_ext, const double* lambda0, const SolverOptions& opts);

}  // namespace dojo
