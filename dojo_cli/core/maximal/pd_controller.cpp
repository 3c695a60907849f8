// The PD controller (pd_controller.h).
#include "pd_controller.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "coordinates.h"

namespace dojo {

namespace {

void check_size(const std::vector<double>& v, size_t size, const char* what, bool optional) {
  if (optional && v.empty()) return;
  if (v.size() != size)
    throw std::invalid_argument(std::string("PD controller ") + what + ": expected " + std::to_string(size) +
                                " values, got " + std::to_string(v.size()));
}

}  // namespace

void check_pd_controller(const Model& m, const PDController& c) {
  const size_t nf = m.nf, nu = m.nu;
  check_size(c.kp, nf, "kp", false);
  check_size(c.kd, nf, "kd", false);
  check_size(c.target, nf, "target", false);
  check_size(c.velocity_target, nf, "velocity_target", false);
  if (c.output.empty() && nu != nf)
    throw std::invalid_argument("PD controller output: the model has " + std::to_string(nu) + " inputs and " +
                                std::to_string(nf) + " free coordinates: an output map (nu, nf) is needed");
  check_size(c.output, nu * nf, "output", true);
  check_size(c.lower, nu, "lower", true);
  check_size(c.upper, nu, "upper", true);
  if (c.lower.empty() != c.upper.empty())
    throw std::invalid_argument("PD controller lower and upper: give both or neither");
}

void pd_inputs(const Model& m, const PDController& c, const double* z, double* theta, double* rate, double* u) {
  const int nf = m.nf, nu = m.nu;
  minimal_coordinates_and_velocities(m, z, theta, rate);
  // tau into rate (each entry read once before it is written)
  for (int f = 0; f < nf; ++f)
    rate[f] = c.kp[f] * (c.target[f] - theta[f]) + c.kd[f] * (c.velocity_target[f] - rate[f]);
  if (c.output.empty()) {
    std::copy(rate, rate + nf, u);
  } else {
    for (int a = 0; a < nu; ++a) {
      const double* row = c.output.data() + static_cast<size_t>(a) * nf;
      double sum = 0.0;
      for (int f = 0; f < nf; ++f) sum += row[f] * rate[f];
      u[a] = sum;
    }
  }
  if (!c.lower.empty())  // np.clip's order: max with the lower bound, then min with the upper
    for (int a = 0; a < nu; ++a) u[a] = std::min(std::max(u[a], c.lower[a]), c.upper[a]);
}

}  // namespace dojo
