// Recursive Newton-Euler inverse dynamics (Featherstone, RBDA algorithm 5.1), in the world
// frame (tree.h): kinematics.h's rnea at T = double.
#include "kinematics.h"
#include "tree.h"

namespace dojo {

void tree_rnea(const TreeModel& m, TreeData& d, const double* q, const double* v, const double* a) {
  rnea(m, d, q, v, a);
}

}  // namespace dojo
