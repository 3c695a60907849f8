// One whole step of Dojo's variational integrator in maximal coordinates: setup, warm
// start, the contact set (margins.h), the solve (newton.h or interior_point.h), the next
// state. The residual it solves is written out in residual.h.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Interior-point starting value of joint-limit slacks and impulses (Dojo: reset to 1).
constexpr double kLimitStart = 1.0;
// Joint friction's starting point (residual.h): beta = 0 with its slacks s+- = h F (the
// bounds' rows hold exactly; the impulse's scale is known, h F, unlike a contact's load, so
// the restarts' impulse scales leave it), the rates v+- at Dojo's 1. (Tried on talos_full_v2
// dropped limp, 200 steps: v+- at the rate row's unit, with or without the rate at xi15
// split onto them, took 19-24.5 iterations a step (median) against 18 for this start.)
constexpr double kFrictionStartRate = 1.0;

// Warm start: previous midpoint velocities, lambda0 (or zero), cone variables at
// Dojo's starting values strictly inside their cones (the contacts in the solve:
// d.contact_active; the others' unknowns are left as they are), the impulses of the
// contacts and joint limits (their gamma) times impulse_scale (a restart's, below).
void step_initial_guess(const Model& m, Data& d, const double* lambda0, double impulse_scale = 1.0);

// Warm start. Dojo starts every step's cones at its fixed point (above): s = gamma = 1.5
// whatever the step, so a robot at rest spends most of a step's iterations travelling
// from there back to the impulses and gaps the previous step ended with (Go1 standing
// under PD: 9 iterations a step at h = 0.01). With SolverOptions::warm_start a step whose
// state is the one the previous converged step of the same Data reached (a run's next
// step: Data::z_warm, compared bit for bit) starts each cone that was in that solve and
// is in this one from that step's solution, moved back into the neighbourhood of the
// central path: starting on the cones' boundary (a resting contact's gap slack ~1e-9)
// would jam the first steps (Yildirim and Wright, "Warm-start strategies in interior-point
// methods for linear programming", SIAM J. Optim. 12, 2002; Gondzio and Grothey,
// "A new unblocking technique to warmstart interior point methods based on sensitivity
// analysis", SIAM J. Optim. 19, 2008: shift the old solution by a fraction, never start
// on the boundary). Each pair is measured in its units (tolerances.h: the product in its
// complementarity row's, the slack in the unit of the constraint row beside its impulse)
// and, where the product s gamma (a second-order cone: the product of the two vectors'
// smallest eigenvalues x0 - |x1:|) is below its target, the smaller of the two, relative
// to its unit, is raised until it is not (both to the target's square root when both are
// below it); the larger, the load a resting contact carries or the gap of a separated
// one, is kept. The target is kWarmCentrality btol, or the square of the largest residual
// of the pair's constraint rows at the start so made (each in its unit; a second pass
// then moves the pair again): a contact whose gap or slip changes in the step gets room
// to move (without it the box's landings took up to 40 iterations, Dojo's start 17). The
// target is one for the whole step, the largest over its warm pairs: a moving pair given
// room beside resting pairs near the boundary starts far off the central path while they
// sit on it, and the first iterations jam (alpha ~ 1e-5). For the same reason a step whose
// solve holds a contact the previous solve did not (margins.h) starts wholly at Dojo's
// point, as does every step that does not continue a converged one; a contact admitted
// during a warm attempt ends that attempt (kinova dropped limp, 200 steps: 52 warm attempts
// fell back, 29 with the contact-set rule, 8 with one target as well). Only the start
// changes: the solve's test is the same, so a warm-started step is a solution to the same
// tolerances. Robust: a warm attempt that has not met the test within max_iter (or met
// only the relative tolerances' absolute fallback, tolerances.h, which a cold solve might
// have gone past) is forgotten and the step is solved from Dojo's point, with the restarts
// below, exactly as without the warm start (Data::warm_fell_back). The warm attempt is a
// whole attempt, as a restart is: cut at 15 iterations, the warm attempts of big steps (an
// impact, a tumble; the warm start no better there than Dojo's, no worse either) fell back
// at 15 where they were as close to converging as Dojo's start would have been, and the
// step paid both (every step of alex_nub_hands' limp drop solved also from Dojo's point:
// 28.8 iterations a step warm against 25.0, 77 of 200 warm attempts fell back; with
// max_iter, 30.8 against 30.7 and 15; talos_full_v2 36.9 against 32.7, now 30.4 against 34.3).
// kWarmCentrality: 1e-1 gave the Go1 2.1 iterations a step, 1e-2 1.6, 1e-3 1.0 (where most
// steps passed the test at their start, leaving velocities ~1e-6 m/s at rest against
// 1e-11).
constexpr double kWarmCentrality = 1e-2;

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
// The warm attempt before them (above, "Warm start"); the log has room for it too.
constexpr int kWarmAttempts = 1;

// The start record: what a run carries from one step to the next besides the state, the
// joint impulses and the unwrapped angles, so that a run continued from a stored state
// (dojo simulate --from) takes the same steps as the run it continues, bit for bit. Row
// layout (start_record_size values): [warm_valid (0 or 1), impulse_scale (Data, "Restarts"),
// the warm start's cones: the unknowns w[lim_s:n] of the step's solution (the limits'
// slacks and impulses, each contact's slacks and impulses; NaN for a contact left out of
// the solve, margins.h), zero where the warm start replaces the value whatever the step
// (step.cpp keep_needed_cones: a resting contact's gap and slip slacks, a separated one's
// impulses; the run starts from the same zeros, so --from stays bit for bit, and the
// record compresses: the box's 500 steps, 196 KB -> 124 KB)], the cones NaN
// where warm_valid is 0 (the step did not converge, or the run does not warm-start).
int start_record_size(const Model& m);
// The record of the step d last took (out: (start_record_size,)).
void record_start(const Model& m, const Data& d, double* out);
// The next step of d continues the step a record was taken after, which reached z (13 nb,).
void restore_start(const Model& m, Data& d, const double* record, const double* z);

// One whole step: setup, warm start, solve, next state. The result is in d.
SolverStatus step(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                  const double* tau_ext, const double* lambda0, const SolverOptions& opts);

}  // namespace dojo
