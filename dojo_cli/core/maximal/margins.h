// Contact margins. A contact with a finite margin (ContactParams::margin) joins a
// step's solve only when its distance at the predicted configuration (x2 + h v15,
// q2 qmap(w15): the initial guess) is within the margin: MuJoCo's margin, which keeps
// far contacts out of its constraint solver. A left-out contact's unknowns are held at
// 0 (no impulse), its residual rows are 0 = 0 and its diagonal block is the identity,
// so the interior point neither evaluates it nor counts it (d.active_degree), and the
// storage keeps its shape. After the solve, a left-out contact whose distance at the
// solution is not positive joins and the step is solved again (d.solves counts the
// solves); so at the returned solution every left-out contact is separated, and with
// s = its distance, gamma = 0 it satisfies its rows of the full problem (s gamma = 0):
// the solution is one of the whole contact set's, and the step's derivatives
// (gradients.h) are those of the solve with this contact set, which is locally
// constant (a separated contact stays separated under a small change of the inputs).
// What differs: a left-out contact has exactly no impulse, where in the solve it would
// keep kappa / distance (the complementarity tolerance over its gap), and the relaxed
// gradients (kappa > 0) see no smoothing from it. Without margins d.contact_active is
// all 1 and the step is the same computation as before margins existed.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// select_contacts: the contact set from the initial guess in d.w (sets d.contact_active
// and leaves the others out); leave_out_contacts: the unknowns of the left-out contacts
// to 0 and d.active_degree; admit_touching_contacts: the left-out contacts whose
// d.contact_distance (step_contact_records at the solution) is not positive join the
// set; whether any did.
void select_contacts(const Model& m, Data& d);
void leave_out_contacts(const Model& m, Data& d);
bool admit_touching_contacts(const Model& m, Data& d);

}  // namespace dojo
