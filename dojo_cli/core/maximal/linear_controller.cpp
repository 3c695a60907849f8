// The full-state linear controller (linear_controller.h).
#include "linear_controller.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "coordinates.h"

namespace dojo {

namespace {

void check_size(const std::vector<double>& v, size_t size, const char* what, bool optional) {
  if (optional && v.empty()) return;
  if (v.size() != size)
    throw std::invalid_argument(std::string("linear controller ") + what + ": expected " + std::to_string(size) +
                                " values, got " + std::to_string(v.size()));
}

}  // namespace

void check_linear_controller(const Model& m, const LinearController& c) {
  const size_t ny = 2 * static_cast<size_t>(m.nf), nu = m.nu;
  check_size(c.feedforward, nu, "u0", false);
  check_size(c.gain, nu * ny, "K", false);
  check_size(c.state_target, ny, "y0", false);
  check_size(c.lower, nu, "lower", true);
  check_size(c.upper, nu, "upper", true);
  if (c.lower.empty() != c.upper.empty())
    throw std::invalid_argument("linear controller lower and upper: give both or neither");
}

void linear_inputs(const Model& m, const LinearController& c, const double* z, double* y, double* u) {
  const int ny = 2 * m.nf, nu = m.nu;
  maximal_to_minimal(m, z, y);
  for (int i = 0; i < ny; ++i) y[i] -= c.state_target[i];
  for (int a = 0; a < nu; ++a) {
    const double* row = c.gain.data() + static_cast<size_t>(a) * ny;
    double sum = 0.0;
    for (int i = 0; i < ny; ++i) sum += row[i] * y[i];
    u[a] = c.feedforward[a] - sum;
  }
  if (!c.lower.empty())  // np.clip's order: max with the lower bound, then min with the upper
    for (int a = 0; a < nu; ++a) u[a] = std::min(std::max(u[a], c.lower[a]), c.upper[a]);
}

}  // namespace dojo
