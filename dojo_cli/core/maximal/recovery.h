// Recovery of a constraint violated at a step's start: a joint outside its range
// (residual.h, limit_target) and a contact that starts inside its surface (restitution.h,
// the gap target). Dojo's rows would close such a violation e2 > 0 within the step, at e2 / h
// (a box 3.25 cm inside a table at h = 1 ms leaves at 32.5 m/s and flies 28 m: gym-xarm's
// peg_in_box). The rows allow a violation at z3 instead that decays as a critically damped
// oscillator with time constant T does, MuJoCo's soft constraints' reference (solref: 0.02 s
// by default, at least 2 h, mjENBL_REFSAFE; damping ratio 1): the discrete critically damped
// recurrence e3 = 2 a e2 - a^2 e1, a = exp(-h / T), whose solutions are (c0 + c1 k) a^k, with
// the violation one step back e1 = e2 - h e_dot from its rate over the last step:
//   allowed = clamp((2 a - a^2) e2 + a^2 h e_dot, 0, e2) * ramp(e2),
//   ramp = clamp((e2 - band) / band, 0, 1),
// never more than the violation at z2 (one that grows is held where it is), never
// negative. From rest a violation closes from zero speed, fastest (e2 / (2.718 T)) after T,
// and slows to zero, as MuJoCo's does. Below kRecoveryBand nothing is allowed: Dojo's hard
// row, bit for bit; a converged step leaves a row violated by up to its tolerance (rtol 1e-6
// by default) and a body resting on it sits there, where a recovery starting at 0 would put
// a kink into the step's map. The ramp over the next band keeps the target continuous (its
// last two bands close within a step or two: 2 band / h, 0.1 m/s at h = 2 ms) and leaves the
// recurrence itself exact above them (running it on e2 - band instead closed one band more
// every step, band / h^2 of extra pull: a cube 3 cm inside the ground at h = 2 ms left at
// 0.75 m/s and hopped 1.4 cm, MuJoCo's at 0.57 m/s without a hop).
// The target is a constant of the step (from z2): the Newton matrix is unchanged; the
// gradients add its derivatives in z2.
#pragma once

#include <algorithm>
#include <cmath>

#include "math/dual.h"

namespace dojo {

constexpr double kRecoveryTime = 0.02;  // s: MuJoCo's default solref time constant
constexpr double kRecoverySteps = 2.0;  // T >= 2 h, MuJoCo's own floor on the time constant
constexpr double kRecoveryBand = 1e-4;  // rad or m: 100 times the default rtol of a row

// a = exp(-h / T) (h: timestep).
inline double recovery_factor(double h) { return std::exp(-h / std::max(kRecoveryTime, kRecoverySteps * h)); }

// The violation a row allows at z3, of a violation e2 at z2 growing at rate e_dot over the
// last step (0 unless e2 > kRecoveryBand), at scalar T (double; dual numbers for the
// gradients: the branches test values).
template <class T>
inline T recovered_violation(const T& e2, const T& e_dot, double h) {
  const T ramp = (e2 - kRecoveryBand) * (1.0 / kRecoveryBand);
  if (!(value(ramp) > 0.0)) return T(0.0);
  const double a = recovery_factor(h);
  T target = (2.0 * a - a * a) * e2 + (a * a * h) * e_dot;
  if (!(value(target) > 0.0)) return T(0.0);
  if (value(target) >= value(e2)) target = e2;
  return value(ramp) < 1.0 ? ramp * target : target;
}

}  // namespace dojo
