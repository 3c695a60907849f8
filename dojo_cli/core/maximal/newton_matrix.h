// The Newton matrix of the step's residual (residual.h): its structural blocks
// (model.h's block pattern), assembled at the unknowns w.
#pragma once

#include "data.h"
#include "model.h"

namespace dojo {

// Regularisation of the joint-impulse diagonal (Dojo's REG, notes 1 and 3.3): redundant
// constraints (a planar loop closed by revolute joints constrains out-of-plane motion
// twice) make the Newton matrix singular; with the Schur complement Jg A^-1 Jg^T
// positive semidefinite, +REG I makes it definite without changing the residual.
constexpr double kConstraintRegularization = 1e-10;

// The Newton matrix at w into d.matrix (structural blocks), with `regularization` on the
// joint-impulse diagonal (0: the exact matrix dr/dw, which the gradients factorise when
// its joint pivots allow: gradients.cpp, factor_at_solution). With contact_z3 (nc,), each
// contact in the solve also leaves its derivatives at z3 there (the gradients' dr/dz2).
void step_matrix(const Model& m, Data& d, const double* w, double regularization = kConstraintRegularization,
                 ContactZ3* contact_z3 = nullptr);

}  // namespace dojo
