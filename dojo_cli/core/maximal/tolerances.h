// Scale-aware convergence test of the step's solvers (docs/physics.md, "Solver tolerances").
//
// The step's residual mixes units: momenta (N s, N m s), joint and gap rows (m, or
// dimensionless rotations), friction rows (N s, m/s) and complementarity products
// (m N s, N s m/s). An absolute tolerance on all of them is right for one size of
// scene only: at btol = 1e-4 a 10 cm cube rests 8 mm above the table and a bouncing
// ball is pushed up by its relaxed contact (~btol / distance per step), while a 100 kg
// robot is held to needless digits. With SolverOptions::relative (the default) the
// convergence test measures each row i in its own unit, |r_i| / row_scale_i, and rtol,
// btol are dimensionless; with relative = false they are absolute (SI), row_scale = 1.
// Only the test (and the progress bookkeeping's "still unconverged") uses the units: the
// solvers' paths (line searches, fractions to the boundary) keep the raw residual, so a
// step is solved along the same iterates as with absolute tolerances and only stops
// elsewhere (scaling the line search too changed the paths: 7 robots of the zoo began to
// fail a step, benchmarks/robot_zoo.py). Fallback: the interior point keeps the first
// iterate that meets the absolute test (rtol, btol in SI units, Dojo's); a solve that
// cannot reach the relative test within max_iter ends there, as the absolute solver
// did, and says so (Data::fell_back, its residual above rtol or btol). So the relative
// default never fails a step the absolute one solved on the same path (the zoo: several
// large robots stall a step or two short of the relative test).
//
// The units come from the model alone (tolerance_scales, computed once per Model):
// - time h (the step) and acceleration a0 = |gravity| (standard gravity without
//   gravity); velocity V = a0 h, the speed gravity adds in one step;
// - length of body b: L_b = max(radius of gyration sqrt(tr J / 2m), |joint vertices on b|,
//   |contact offset| + radius of its contacts), floored at kMinLengthFraction of the
//   largest (a point mass);
// - mass: the mass M of the articulated system a row belongs to (the bodies joined by
//   joints: the weight a foot, a limit stop or a link's joints may carry), the lighter
//   of the two systems for a contact between two.
// Rows (w's layout, model.h): body b linear momentum M V, angular M V L_b; joint
// and lock rows L_child (translation) or 1 (rotation); a limit's row L or 1 and its
// product s gamma M V L (both kinds: m x N s, or rad x N m s); a contact (L = the
// smaller of its bodies' lengths, P = M V): gap row L, normal product L P, friction
// rows P (mu gn - psi) and V (slip), cone products P V.
// So a resting contact keeps a gap below btol L M / gn ~ btol L x (contacts sharing
// the load), a relaxed free contact pushes with at most btol L P / d, and a converged
// velocity of a free body is within rtol V of the exact step's whatever its size.
#pragma once

#include <vector>

#include "data.h"
#include "model.h"

namespace dojo {

// The acceleration scale of a scene without gravity: the same bodies' tolerances on Earth.
constexpr double kStandardGravity = 9.80665;
// A body's length scale is at least this fraction of the scene's largest (a point mass
// with no inertia, no joint lever and no contact would otherwise get none).
constexpr double kMinLengthFraction = 1e-3;
// The length scale of a scene with no size at all (a lone point mass): 1 m.
constexpr double kDefaultLength = 1.0;

// Each residual row's unit (n,) as described above; written into row_scale.
void tolerance_scales(const Model& m, std::vector<double>& row_scale);

// The scales a solve measures its residual with: m.row_scale when opts.relative, else
// null (absolute, every scale 1).
inline const double* tolerance_row_scale(const Model& m, const SolverOptions& opts) {
  return opts.relative ? m.row_scale.data() : nullptr;
}

// max_i |r_i| / scale_i over rows [begin, end) (scale null: 1); NaN if any r_i is NaN.
double scaled_norm(const double* r, const double* scale, int begin, int end);

// The smallest complementarity scale (1 when absolute or without complementarity rows):
// the interior point's centering floor btol / undercut is in its unit.
double complementarity_floor_scale(const Model& m, const double* scale);

}  // namespace dojo
