// What a run keeps beside its states (storage's minimal/q, v, omega, minimal/v at the
// knots), computed in one pass over a block's states: each state's poses and joint
// configurations once, shared by its unwrapped coordinates, the next state's unwrapping and
// its knot's minimal velocities. The numbers are those of the separate functions it stands
// for (coordinates.h minimal_coordinates_and_velocities, angles.h unwrap_angles,
// energy.h knot_velocities, coordinates.h instantaneous_minimal_velocities), operation for
// operation: the same values, bit for bit (tests/simulation/test_run_record.py).
#pragma once

#include <vector>

#include "kinematics.h"
#include "model.h"

namespace dojo {

// The unwrapped minimal coordinates of consecutive states, state by state: per state one
// pass over its joints' configurations (what minimal_coordinates_and_velocities and
// unwrap_angles computed three times for an angle: the state's, its own canonical angle,
// and the next state's reference), the canonical angles carried to the next state.
class CoordinateRecord {
 public:
  explicit CoordinateRecord(const Model& m);

  // State z (13 nb,): its joint configurations (configurations()), and with theta (nf,) its
  // minimal coordinates, each angle coordinate (Model.angle_unwrapped) unwrapped from the
  // state before as a step measures it (kinematics.h angle_branch) or, for the first state
  // with no reference (start()), where a step with no carried angle starts (start_angle).
  // The state becomes the next one's reference.
  void state(const double* z, double* theta);

  // The next state is unwrapped from theta_prev (nf,), the unwrapped coordinates of the state
  // last given to state() (its reference): a run's state before a block.
  void start(const double* theta_prev);

  // The last state's poses (nb,) and joint configurations (nj,: d, q_rel, rot_rel; those
  // of joints without free coordinates not computed).
  const std::vector<Pose<double>>& poses() const { return pose_; }
  const std::vector<JointKinematics<double>>& configurations() const { return kin_; }

 private:
  const Model& m_;
  std::vector<Pose<double>> pose_;
  std::vector<JointKinematics<double>> kin_;
  std::vector<double> canonical_, theta_ref_;  // (nf,) the reference state's canonical and unwrapped angles
  std::vector<double> q_ref_;                  // (nj, 4) its relative rotations
  bool has_ref_ = false;                       // a reference to unwrap from (else start_angle)
  bool theta_ref_set_ = false;                 // theta_ref_ holds the reference's unwrapped angles
};

// Minimal coordinates theta (steps, nf) of states (steps, 13 nb), unwrapped on from z_prev
// (13 nb,) with its unwrapped coordinates theta_prev (nf,) (both null: the first state as a
// run's first): minimal_coordinates_and_velocities then unwrap_angles, state by state.
void unwrapped_coordinates(const Model& m, const double* states, int steps, const double* z_prev,
                           const double* theta_prev, double* theta);

// A block's record: of `steps` states (steps, 13 nb) reached from z_prev (13 nb, with its
// unwrapped coordinates theta_prev, nf), minimal_q (steps, nf) unwrapped as
// unwrapped_coordinates does; knot_v, knot_omega (steps + 1, nb, 3) and knot_minimal_v
// (steps + 1, nf), the velocities at the knots of z_prev and the states. Midpoint states
// (exact_knots false): energy.h knot_velocities, the last extrapolated (what
// simulation.knots.KnotRows derives); states that carry their knot velocities already
// (exact_knots, the rk4 integrator's): their own v, omega. knot_minimal_v is the exact
// velocity map of the knot velocities (instantaneous_minimal_velocities).
void run_record(const Model& m, const double* states, int steps, const double* z_prev, const double* theta_prev,
                bool exact_knots, double* minimal_q, double* knot_v, double* knot_omega, double* knot_minimal_v);

}  // namespace dojo
