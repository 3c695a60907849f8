// The only nanobind file: the Python face of the C++ core (dojo_cli._core).
// Bindings are thin and mirror the C++ names; C++ exceptions become Python
// exceptions at this boundary (dojo_cli.simulation turns them into DojoError).
#include <nanobind/nanobind.h>

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "dojo_cli's compiled core: Model, Data, the step, contacts, solvers and gradients.";
}
