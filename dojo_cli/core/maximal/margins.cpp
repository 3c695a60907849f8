// Contact margins (margins.h).
#include "margins.h"

#include <algorithm>
#include <cmath>

#include "residual.h"

namespace dojo {

void select_contacts(const Model& m, Data& d) {
  std::fill(d.contact_active.begin(), d.contact_active.end(), uint8_t{1});
  d.active_degree = m.degree;
  if (!m.has_margins) return;
  // the predicted configuration: the initial guess holds xi25 = xi15
  next_configuration(m, d, d.w.data(), false);
  bool any_out = false;
  for (int c = 0; c < m.nc; ++c) {
    if (!std::isfinite(m.contacts[c].margin)) continue;
    const ContactEval& ev = evaluate_step_contact(m, d, d.w.data(), c, ContactOutput::Residual);
    if (ev.distance > m.contacts[c].margin) {
      d.contact_active[c] = 0;
      any_out = true;
    }
  }
  if (any_out) leave_out_contacts(m, d);
}

void leave_out_contacts(const Model& m, Data& d) {
  int degree = 0;
  for (int c : m.orthant_contact) degree += (c < 0 || d.contact_active[c]) ? 1 : 0;
  for (int c : m.soc_contact) degree += d.contact_active[c] ? 1 : 0;
  d.active_degree = degree;
  for (int c = 0; c < m.nc; ++c)
    if (!d.contact_active[c]) std::fill(d.w.begin() + m.contact_start[c], d.w.begin() + m.contact_start[c + 1], 0.0);
}

bool admit_touching_contacts(const Model& m, Data& d) {
  bool any = false;
  for (int c = 0; c < m.nc; ++c)
    if (!d.contact_active[c] && !(d.contact_distance[c] > 0.0)) {
      d.contact_active[c] = 1;
      any = true;
    }
  return any;
}

}  // namespace dojo
