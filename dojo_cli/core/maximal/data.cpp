// The step's scratch, allocated once per model (data.h).
#include "data.h"

#include <limits>

#include "contact_elimination.h"
#include "gradients.h"

namespace dojo {

Data::Data(const Model& m)
    : x2(3 * m.nb), v15(3 * m.nb), q2(4 * m.nb), w15(3 * m.nb), u(m.nf), u_act(m.nu), f_ext(3 * m.nb), tau_ext(3 * m.nb),
      constant(m.nv), jg2(12 * m.nl), jf2(12 * m.nf), rot2(9 * m.nb), contact_target(m.nc), w(m.n), r(m.n), delta(m.n), cand(m.n),
      rc(m.n), x3(3 * m.nb), q3(4 * m.nb), rot3(9 * m.nb), mw(9 * m.nb), jg3(12 * m.nl), jl3(12 * m.nlim), kin3(m.nj),
      rows3_w(m.nv), matrix(m.blocks.structural_size),
      target(m.n), d_aff(m.n), rhs(m.n), soc_w(3 * m.soc_s.size()), soc_w_inv(3 * m.soc_s.size()),
      soc_lambda(m.soc_s.size()), contact_distance(m.nc), contact_normal_impulse(m.nc),
      contact_friction_impulse(2 * m.nc), contact_slip(2 * m.nc), z_next(13 * m.nb) {
  contact_active.assign(m.nc, 1);
  gradients_condensed_sweeps = kCondensedRefinementSweeps;
  active_degree = m.degree;
  angle_ref.assign(m.nf, std::numeric_limits<double>::quiet_NaN());
  angle2.assign(m.nf, 0.0);
  qrel2.assign(4 * m.nj, 0.0);
  lock_d2.assign(3 * m.nj, 0.0);
  lock_q2.assign(4 * m.nj, 0.0);
  limit_target.assign(m.nlim, 0.0);
  w_warm.assign(m.n, 0.0);
  contact_active_warm.assign(m.nc, 0);
  z_warm.assign(13 * m.nb, 0.0);
  lu.init(m.blocks);
  lu_robust.init(m.blocks_robust);
  matrix_condensed.assign(m.blocks_condensed.structural_size, 0.0);
  lu_condensed.init(m.blocks_condensed);
  grad_contact_z3.resize(m.nc);
  contact_elimination.assign(static_cast<size_t>(kContactEliminationSize) * m.nc, 0.0);
}

}  // namespace dojo
