// The step driver (step.h).
#include "step.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "interior_point.h"
#include "margins.h"
#include "newton.h"
#include "residual.h"

namespace dojo {

namespace {
// A limit whose bound lies farther than this from the angle at z2 (rad) starts with its
// slack at that distance (Dojo's start, s = gamma = 1, is kept below it: the goldens pin it).
// From s = 1 the first Newton step asks the joint to close the gap s - distance at once; a
// revolute bound several radians away (possible since angles unwrap) then throws the
// iterate far off and the solve stalls. kFarLimit is below the smallest gap that stalled
// in tests/properties/test_revolute_winding.py and above every gap of the built-in scenes.
constexpr double kFarLimit = 4.0;

// Raises the smaller of a pair's two values (each in its unit, >= 0) until their product
// is at least mu, both to sqrt(mu) when both are below it (step.h, "Warm start").
inline void centre_pair(double& a, double& b, double mu) {
  const double t = std::sqrt(mu);
  if (a >= b) {
    a = std::max(a, t);
    b = std::max(b, mu / a);
  } else {
    b = std::max(b, t);
    a = std::max(a, mu / b);
  }
}

// The warm start's cones (step.h, "Warm start"): every orthant pair and second-order cone
// of a joint limit, or of a contact in this solve that was in the previous one, from the
// previous step's solution d.w_warm, each pair moved to a product of at least the step's
// common target in its units. The others keep what step_initial_guess gave them. change:
// (n,) or null, the residual of the constraint rows at the point the first pass gave;
// the target grows with how far the pairs' rows are from holding (step.h).
void warm_cones_pass(const Model& m, Data& d, const SolverOptions& opts, const double* change) {
  const double* unit = m.row_scale.data();
  auto warm = [&](int c) { return c < 0 || (d.contact_active[c] && d.contact_active_warm[c]); };
  // the constraint rows [begin, end) beside a pair: a limit's bound row (at its impulse
  // ig), a contact's rows after its complementarity rows
  auto rows_of = [&](int c, int ig, int& begin, int& end) {
    if (c < 0) {
      begin = ig;
      end = ig + 1;
    } else {
      begin = m.contact_start[c] + contact_half_size(m.contacts[c].model);
      end = m.contact_start[c + 1];
    }
  };
  // the largest residual of a pair's constraint rows, each in its unit
  auto moved = [&](int c, int ig) {
    if (!change) return 0.0;
    int begin, end;
    rows_of(c, ig, begin, end);
    double out = 0.0;
    for (int i = begin; i < end; ++i) out = std::max(out, std::fabs(change[i]) / unit[i]);
    return out;
  };
  // The target product, in the products' units (btol is in the test's unit, tolerances.h:
  // relative, or SI): kWarmCentrality btol, or the square of the largest change of any
  // warm pair's rows. One target for every pair: a pair whose rows move (an impact, a
  // contact starting to slide) given room beside resting pairs close to the boundary
  // would start far off the central path while they sit on it, and the first iterations
  // jam, each step cut to alpha ~ 1e-5 by the resting cones (kinova dropped limp, 200
  // steps: 29 warm attempts fell back with a target per pair, 8 with one target).
  double largest = 0.0;
  if (change) {
    for (size_t i = 0; i < m.orthant_s.size(); ++i)
      if (warm(m.orthant_contact[i])) largest = std::max(largest, moved(m.orthant_contact[i], m.orthant_g[i]));
    for (size_t k = 0; k < m.soc_contact.size(); ++k)
      if (warm(m.soc_contact[k])) largest = std::max(largest, moved(m.soc_contact[k], m.soc_g[3 * k]));
  }
  auto target = [&](int row) {
    return std::max(kWarmCentrality * opts.btol / (opts.relative ? 1.0 : unit[row]), largest * largest);
  };
  for (size_t i = 0; i < m.orthant_s.size(); ++i) {
    const int c = m.orthant_contact[i];
    if (!warm(c)) continue;
    const int is = m.orthant_s[i], ig = m.orthant_g[i];
    // the slack is in the unit of its constraint row (at the impulse's index), the
    // impulse in the product's unit over the slack's
    const double us = unit[ig], ug = unit[is] / us;
    double a = d.w_warm[is] / us, b = d.w_warm[ig] / ug;
    centre_pair(a, b, target(is));
    d.w[is] = a * us;
    d.w[ig] = b * ug;
  }
  for (size_t k = 0; k < m.soc_contact.size(); ++k) {
    const int c = m.soc_contact[k];
    if (!warm(c)) continue;
    const int* is = &m.soc_s[3 * k];
    const int* ig = &m.soc_g[3 * k];
    // slip-cone vector in the unit of the tangential velocity rows, friction in the product's over it
    const double us = unit[ig[1]], ug = unit[is[0]] / us;
    const double ts = std::hypot(d.w_warm[is[1]], d.w_warm[is[2]]);
    const double tg = std::hypot(d.w_warm[ig[1]], d.w_warm[ig[2]]);
    // each vector's smallest eigenvalue x0 - |x1:| (its distance to the cone's boundary)
    double a = (d.w_warm[is[0]] - ts) / us, b = (d.w_warm[ig[0]] - tg) / ug;
    centre_pair(a, b, target(is[0]));
    d.w[is[0]] = ts + a * us;
    d.w[ig[0]] = tg + b * ug;
    for (int i = 1; i < 3; ++i) {
      d.w[is[i]] = d.w_warm[is[i]];
      d.w[ig[i]] = d.w_warm[ig[i]];
    }
  }
}

// A contact in this solve (d.contact_active) that was not in the warm start's (step.h, "Warm start").
bool contact_set_grew(const Model& m, const Data& d) {
  for (int c = 0; c < m.nc; ++c)
    if (d.contact_active[c] && !d.contact_active_warm[c]) return true;
  return false;
}

// The warm start's cones as the next step needs them (step.h, "The start record"): each
// pair's value that centre_pair replaces whatever the step's target is, set to zero. With a
// target mu >= floor (kWarmCentrality btol, the least target of any step), the larger value
// a of a pair becomes max(a, sqrt(mu)) and the smaller b becomes max(b, mu / max(a, sqrt(mu))),
// which is at least min(floor / a, sqrt(floor)): a b at or below that is replaced, as is a
// pair's larger value at or below sqrt(floor) (both then start at sqrt(mu)). An orthant
// pair starts bit for bit as from its stored values. A second-order cone's vector is
// dropped only when it is replaced and wholly at that level (x0, which bounds each
// component inside the cone, at or below the same bound: a resting contact's slip slack,
// a separated contact's friction impulse); it then starts on the cone's axis, its
// tangential part zero instead of rounding noise. A replaced vector with a large
// tangential part (a sliding contact's slip, its friction on the cone's edge) is kept:
// dropping it too cost the zoo's limp drops 11.4 -> 14.4 iterations a step and 180 -> 710
// restarted steps. So the record a run stores (48 % of the box's numbers zero) restores
// the same start, and a warm step is the same for the run and for a run continued from
// its record (--from).
void keep_needed_cones(const Model& m, Data& d, const SolverOptions& opts) {
  const double* unit = m.row_scale.data();
  auto floor_of = [&](int row) { return kWarmCentrality * opts.btol / (opts.relative ? 1.0 : unit[row]); };
  // which of the pair's two values (each in its unit) no step's start depends on
  auto replaced = [](double a, double b, double floor, bool& drop_a, bool& drop_b) {
    const double root = std::sqrt(floor);
    const double large = std::max(a, b), small = std::min(a, b);
    const bool both = large <= root;
    const bool smaller = both || small <= std::min(floor / large, root);
    drop_a = a >= b ? both : smaller;
    drop_b = a >= b ? smaller : both;
  };
  for (size_t i = 0; i < m.orthant_s.size(); ++i) {
    const int c = m.orthant_contact[i];
    if (c >= 0 && !d.contact_active_warm[c]) continue;
    const int is = m.orthant_s[i], ig = m.orthant_g[i];
    const double us = unit[ig], ug = unit[is] / us;
    bool drop_s, drop_g;
    replaced(d.w_warm[is] / us, d.w_warm[ig] / ug, floor_of(is), drop_s, drop_g);
    if (drop_s) d.w_warm[is] = 0.0;
    if (drop_g) d.w_warm[ig] = 0.0;
  }
  for (size_t k = 0; k < m.soc_contact.size(); ++k) {
    if (!d.contact_active_warm[m.soc_contact[k]]) continue;
    const int* is = &m.soc_s[3 * k];
    const int* ig = &m.soc_g[3 * k];
    const double us = unit[ig[1]], ug = unit[is[0]] / us;
    const double a = (d.w_warm[is[0]] - std::hypot(d.w_warm[is[1]], d.w_warm[is[2]])) / us;
    const double b = (d.w_warm[ig[0]] - std::hypot(d.w_warm[ig[1]], d.w_warm[ig[2]])) / ug;
    bool drop_s, drop_g;
    const double floor = floor_of(is[0]);
    replaced(a, b, floor, drop_s, drop_g);
    // a vector whose distance to the boundary is replaced may still carry a large
    // tangential part (a sliding contact's slip, its friction on the cone's edge): only a
    // vector wholly at the rounding level of the cone's apex (x0 >= |x1:|, so x0 bounds
    // every component) is dropped
    const double bound = std::min(floor / std::max(std::max(a, b), 0.0), std::sqrt(floor));
    drop_s = drop_s && d.w_warm[is[0]] / us <= bound;
    drop_g = drop_g && d.w_warm[ig[0]] / ug <= bound;
    for (int i = 0; i < 3; ++i) {
      if (drop_s) d.w_warm[is[i]] = 0.0;
      if (drop_g) d.w_warm[ig[i]] = 0.0;
    }
  }
}

void warm_cones(const Model& m, Data& d, const SolverOptions& opts) {
  warm_cones_pass(m, d, opts, nullptr);
  step_residual(m, d, d.w.data(), d.rc.data());
  warm_cones_pass(m, d, opts, d.rc.data());
}
}  // namespace

void step_initial_guess(const Model& m, Data& d, const double* lambda0, double impulse_scale) {
  std::fill(d.w.begin(), d.w.end(), 0.0);
  for (int b = 0; b < m.nb; ++b)
    for (int k = 0; k < 3; ++k) {
      d.w[6 * b + k] = d.v15[3 * b + k];
      d.w[6 * b + 3 + k] = d.w15[3 * b + k];
    }
  if (lambda0)
    for (int r = 0; r < m.nl; ++r) d.w[m.lam + r] = lambda0[r];
  for (int l = 0; l < m.nlim; ++l) {
    d.w[m.lim_s + l] = kLimitStart;
    d.w[m.lim_g + l] = kLimitStart;
    // a far angle bound (kFarLimit): s at its distance, gamma such that s gamma stays
    // Dojo's starting complementarity (1)
    const int f = m.limit_free[l];
    const double far = m.angle_unwrapped[f] ? m.limit_sign[l] * (d.angle2[f] - m.limit_bound[l]) : 0.0;
    if (far > kFarLimit) {
      d.w[m.lim_s + l] = far;
      d.w[m.lim_g + l] = kLimitStart * kLimitStart / far;
    }
    d.w[m.lim_g + l] *= impulse_scale;
  }
  // joint friction (step.h, kFrictionStartRate)
  for (int k = 0; k < m.nfr; ++k) {
    d.w[m.fr_s + 2 * k] = d.w[m.fr_s + 2 * k + 1] = m.h * m.joint_friction[m.friction_free[k]];
    d.w[m.fr_g + 2 * k] = d.w[m.fr_g + 2 * k + 1] = kFrictionStartRate;
    d.w[m.fr_b + k] = 0.0;
  }
  // contacts: Dojo's starting point (contact.h)
  for (int c = 0; c < m.nc; ++c) {
    const int s0 = m.contact_start[c];
    if (!d.contact_active[c]) continue;
    const int half = contact_half_size(m.contacts[c].model);
    contact_starting_point(m.contacts[c].model, &d.w[s0], &d.w[s0 + half]);
    if (impulse_scale != 1.0)
      for (int i = 0; i < half; ++i) d.w[s0 + half + i] *= impulse_scale;
  }
}

int start_record_size(const Model& m) { return 2 + (m.n - m.lim_s); }

void record_start(const Model& m, const Data& d, double* out) {
  out[0] = d.warm_valid ? 1.0 : 0.0;
  out[1] = d.impulse_scale;
  double* cones = out + 2;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (!d.warm_valid) {
    std::fill(cones, cones + (m.n - m.lim_s), nan);
    return;
  }
  std::copy(d.w_warm.begin() + m.lim_s, d.w_warm.end(), cones);
  for (int c = 0; c < m.nc; ++c)
    if (!d.contact_active_warm[c])
      std::fill(cones + (m.contact_start[c] - m.lim_s), cones + (m.contact_start[c + 1] - m.lim_s), nan);
}

void restore_start(const Model& m, Data& d, const double* record, const double* z) {
  d.warm_valid = record[0] != 0.0;
  d.impulse_scale = record[1];
  if (!d.warm_valid) return;
  const double* cones = record + 2;
  std::copy(cones, cones + (m.n - m.lim_s), d.w_warm.begin() + m.lim_s);
  for (int c = 0; c < m.nc; ++c) {
    const bool in_solve = !std::isnan(cones[m.contact_start[c] - m.lim_s]);
    d.contact_active_warm[c] = in_solve ? 1 : 0;
    if (!in_solve) std::fill(d.w_warm.begin() + m.contact_start[c], d.w_warm.begin() + m.contact_start[c + 1], 0.0);
  }
  std::copy(z, z + 13 * static_cast<size_t>(m.nb), d.z_warm.begin());
}

SolverStatus step(const Model& m, Data& d, const double* z, const double* u, const double* f_ext,
                  const double* tau_ext, const double* lambda0, const SolverOptions& opts) {
  // every attempt's iterations (each starts again at iteration 1), grown once per larger max_iter
  d.log.resize(static_cast<size_t>(opts.max_iter * (kMaxAttempts + kWarmAttempts) + 1) * kLogColumns);
  d.log_rows = 0;
  d.filter.resize(static_cast<size_t>(opts.max_iter) * 2);  // grows once per larger max_iter
  d.filter_acceptance = false;
  d.recentre_jams = false;
  d.centrality_correctors = false;
  d.iterations = 0;
  d.complementarity = 0.0;
  d.singular_node = -1;
  if (!step_setup(m, d, z, u, f_ext, tau_ext)) {
    d.residual = std::numeric_limits<double>::quiet_NaN();
    std::fill(d.z_next.begin(), d.z_next.end(), std::numeric_limits<double>::quiet_NaN());
    d.status = SolverStatus::NonFinite;
    d.warm_valid = false;
    return d.status;
  }
  // the contacts within their margins at the predicted configuration; after the solve,
  // any left-out contact that the solution brings to touch (distance <= 0) joins and
  // the step is solved again from the start, so the left-out contacts are separated at
  // the solution (margins.h)
  std::fill(d.contact_active.begin(), d.contact_active.end(), uint8_t{1});
  const bool inequalities = m.degree > 0;  // limits, joint friction or contacts
  const double first_scale = inequalities ? d.impulse_scale : 1.0;
  // a run's next step: the previous converged step reached this state (step.h, "Warm start")
  bool warm = inequalities && opts.warm_start && d.warm_valid &&
              std::equal(z, z + 13 * static_cast<size_t>(m.nb), d.z_warm.begin());
  // the starting point: Dojo's at an impulse scale, then (warm) the previous step's cones
  auto start = [&](double scale, bool from_warm) {
    step_initial_guess(m, d, lambda0, scale);
    if (from_warm) warm_cones(m, d, opts);
  };
  start(first_scale, warm);
  select_contacts(m, d);
  if (warm && contact_set_grew(m, d)) {
    // a contact new to the solve: the whole step from Dojo's start (step.h, "Warm start")
    warm = false;
    std::fill(d.contact_active.begin(), d.contact_active.end(), uint8_t{1});
    start(first_scale, false);
    select_contacts(m, d);
  }
  int iterations = 0;
  d.solves = 0;
  d.restarts = 0;
  // one solve from the starting point in d.w, with the margins' re-solves
  auto solve = [&](double scale, bool from_warm) {
    for (;;) {
      ++d.solves;
      d.status = inequalities ? interior_point(m, d, opts) : newton(m, d, opts);
      iterations += d.iterations;
      if (!m.has_margins) break;
      step_contact_records(m, d, d.w.data());
      if (!admit_touching_contacts(m, d)) break;
      if (from_warm && contact_set_grew(m, d)) {
        // a contact joined that the warm start has no values for: the warm attempt ends
        // here, unconverged, and the step is solved from Dojo's start (step.h, "Warm start")
        d.status = SolverStatus::MaxIterations;
        break;
      }
      start(scale, from_warm);
      leave_out_contacts(m, d);
    }
  };
  // the warm attempt (step.h, "Warm start"), or Dojo's start
  solve(first_scale, warm);
  d.warm_started = warm;
  d.warm_fell_back = false;
  // a warm attempt counts only when it met the test itself (not the absolute test's
  // fallback, tolerances.h, which a cold solve might have gone past)
  if (warm && (d.status != SolverStatus::Success || d.fell_back)) {
    // the warm attempt is forgotten: the step is solved from Dojo's start as without it
    d.warm_fell_back = true;
    std::fill(d.contact_active.begin(), d.contact_active.end(), uint8_t{1});
    start(first_scale, false);
    select_contacts(m, d);
    solve(first_scale, false);
  }
  // Restarts (step.h): a failed interior-point solve is solved again from the other
  // starting scales in turn; the first that converges is the step, and its scale is
  // where the next step starts. If none does, a second sweep over every scale accepts
  // line-search candidates through a filter (interior_point.h, step 5).
  if (inequalities && d.status != SolverStatus::Success && d.status != SolverStatus::NonFinite) {
    // the attempt whose solution violates the step's equations least, in units of the
    // tolerances: a step that fails ends there, not wherever the last attempt stopped
    // (the state it gives is the next step's start)
    double kept = std::numeric_limits<double>::infinity();
    SolverStatus kept_status = d.status;
    double kept_residual = d.residual, kept_complementarity = d.complementarity;
    auto keep = [&]() {
      double rvio, bvio;
      violations(m, d.r.data(), rvio, bvio);
      const double merit = std::max(rvio / opts.rtol, bvio / opts.btol);
      if (!(merit < kept)) return;  // NaN never kept
      kept = merit;
      kept_status = d.status;
      kept_residual = d.residual;
      kept_complementarity = d.complementarity;
      d.w_kept.assign(d.w.begin(), d.w.end());
      d.contact_active_kept.assign(d.contact_active.begin(), d.contact_active.end());
    };
    keep();
    for (int sweep = 0; sweep < kSweeps; ++sweep) {
      const bool filter = sweep >= 1;
      d.filter_acceptance = filter;
      d.recentre_jams = sweep >= 2;
      d.centrality_correctors = sweep == 3;
      for (double scale : kImpulseScales) {
        if (scale == first_scale && !filter) continue;
        ++d.restarts;
        step_initial_guess(m, d, lambda0, scale);
        leave_out_contacts(m, d);
        solve(scale, false);
        if (d.status == SolverStatus::Success) {
          d.impulse_scale = scale;
          break;
        }
        if (d.status != SolverStatus::NonFinite) keep();
      }
      if (d.status == SolverStatus::Success) break;
    }
    d.filter_acceptance = false;
    d.recentre_jams = false;
    d.centrality_correctors = false;
    if (d.status != SolverStatus::Success && kept < std::numeric_limits<double>::infinity()) {
      d.w.assign(d.w_kept.begin(), d.w_kept.end());
      d.contact_active.assign(d.contact_active_kept.begin(), d.contact_active_kept.end());
      d.status = kept_status;
      d.residual = kept_residual;
      d.complementarity = kept_complementarity;
      step_residual(m, d, d.w.data(), d.r.data());
      if (m.has_margins) step_contact_records(m, d, d.w.data());
    }
  }
  d.iterations = iterations;
  step_next_state(m, d, d.w.data());
  // a "converged" step must also land on a finite state within the model's bounds
  if (d.status == SolverStatus::Success) {
    const double v_bound = m.state_bound / m.h;
    for (int b = 0; b < m.nb && d.status == SolverStatus::Success; ++b)
      for (int k = 0; k < 13; ++k) {
        const double x = d.z_next[13 * b + k];
        if (!std::isfinite(x)) {
          d.status = SolverStatus::NonFinite;
          break;
        }
        const double bound = k < 3 ? m.state_bound : (k < 6 ? v_bound : std::numeric_limits<double>::infinity());
        if (std::fabs(x) > bound) {
          d.status = SolverStatus::Diverged;
          break;
        }
      }
  }
  // the next step of the run starts warm from this one if it converged (step.h, "Warm start")
  d.warm_valid = opts.warm_start && inequalities && d.status == SolverStatus::Success;
  if (d.warm_valid) {
    std::copy(d.w.begin(), d.w.end(), d.w_warm.begin());
    std::copy(d.contact_active.begin(), d.contact_active.end(), d.contact_active_warm.begin());
    std::copy(d.z_next.begin(), d.z_next.end(), d.z_warm.begin());
    keep_needed_cones(m, d, opts);
  }
  // (with margins the solve loop has recorded them at this solution already)
  if (!m.has_margins) step_contact_records(m, d, d.w.data());
  return d.status;
}

}  // namespace dojo
