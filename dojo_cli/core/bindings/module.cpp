// The Python face of the C++ core (dojo_cli._core), one bind_<area>.cpp per area.
// Bindings are thin and mirror the C++ names; C++ exceptions become Python
// exceptions at this boundary (std::invalid_argument -> ValueError), which
// dojo_cli.simulation turns into DojoError. Entry points only tests and benchmarks call
// live in the submodule dojo_cli._core.testing.
#include "common.h"

using namespace dojo::bindings;

NB_MODULE(_core, m) {
  m.doc() = "dojo_cli's compiled core: Model, Data, the step, contacts, solvers and gradients.";
  nb::module_ testing = m.def_submodule(
      "testing", "Test-only entry points: the pieces of a step and of its solvers, and the block-sparse LU.");
  bind_model(m);
  bind_step(m);
  bind_coordinates(m);
  bind_contacts(m, testing);
  bind_block_lu(testing);
  bind_tree(m);
  bind_rk4(m);
  bind_variational4(m);
  bind_testing(testing);
}
