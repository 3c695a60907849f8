// Scale-aware convergence test (tolerances.h).
#include "tolerances.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "collision_hull.h"

namespace dojo {

namespace {

// Root of b's set in a union-find over bodies (path halving).
int find_root(std::vector<int>& up, int b) {
  while (up[b] != b) b = up[b] = up[up[b]];
  return b;
}

}  // namespace

void tolerance_scales(const Model& m, std::vector<double>& row_scale) {
  const int nb = m.nb;
  const double g = std::sqrt(m.gravity[0] * m.gravity[0] + m.gravity[1] * m.gravity[1] + m.gravity[2] * m.gravity[2]);
  const double velocity = (g > 0.0 ? g : kStandardGravity) * m.h;

  // length of each body: radius of gyration, joint levers, contact geometry
  std::vector<double> length(nb, 0.0);
  auto grow = [&](int b, double x) {
    if (b >= 0) length[b] = std::max(length[b], x);
  };
  auto norm3 = [](const double* p) { return std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]); };
  for (int b = 0; b < nb; ++b) {
    const double* jb = &m.inertia[9 * b];
    grow(b, std::sqrt(std::max(jb[0] + jb[4] + jb[8], 0.0) / (2.0 * m.mass[b])));
  }
  for (int j = 0; j < m.nj; ++j) {
    grow(m.parent[j], norm3(&m.parent_vertex[3 * j]));
    grow(m.child[j], norm3(&m.child_vertex[3 * j]));
  }
  for (int c = 0; c < m.nc; ++c) {
    grow(m.contact_body[c], norm3(&m.contact_offset[3 * c]) + m.contact_radius[c]);
    if (m.contact_other[c] == kWorld) continue;
    double extent = 0.0;  // body b's shape: offsets, ends, half sizes, radius (collision.h kShapeSize layout)
    for (int k = 0; k < 7; ++k) extent = std::max(extent, std::fabs(m.contact_shape[7 * c + k]));
    if (m.contacts[c].hull) extent = HullView(m.contacts[c].hull->data()).extent;  // its index is no length
    grow(m.contact_other[c], extent);
  }
  double largest = 0.0;
  for (double x : length) largest = std::max(largest, x);
  if (!(largest > 0.0)) largest = kDefaultLength;
  for (double& x : length) x = std::max(x, kMinLengthFraction * largest);

  // mass of the articulated system of each body (bodies joined by joints)
  std::vector<int> up(nb);
  std::iota(up.begin(), up.end(), 0);
  for (int j = 0; j < m.nj; ++j)
    if (m.parent[j] != kWorld) up[find_root(up, m.parent[j])] = find_root(up, m.child[j]);
  std::vector<double> system_mass(nb, 0.0);
  for (int b = 0; b < nb; ++b) system_mass[find_root(up, b)] += m.mass[b];
  std::vector<double> load(nb);
  for (int b = 0; b < nb; ++b) load[b] = system_mass[find_root(up, b)];

  row_scale.assign(m.n, 1.0);
  double* s = row_scale.data();
  // a body's rows carry the impulses its joints pass on, which scale with the weight of
  // the system it belongs to: a light link of a heavy robot is measured in the robot's
  // units (in its own, 50x tighter on a 0.2 kg wrist of a 33 kg arm, solves stalled)
  for (int b = 0; b < nb; ++b)
    for (int k = 0; k < 3; ++k) {
      s[6 * b + k] = load[b] * velocity;                  // N s
      s[6 * b + 3 + k] = load[b] * velocity * length[b];  // N m s
    }
  for (int r = 0; r < m.nl; ++r)
    s[m.lam + r] = m.row_slot[r] < 3 ? length[m.child[m.row_joint[r]]] : 1.0;  // m, or rad
  for (int l = 0; l < m.nlim; ++l) {
    const int f = m.limit_free[l];
    const int b = m.child[m.free_joint[f]];
    const double lever = length[b];
    s[m.lim_g + l] = m.free_slot[f] < 3 ? lever : 1.0;  // the limit's row: m, or rad
    s[m.lim_s + l] = load[b] * velocity * lever;        // s gamma: m x N s, or rad x N m s
  }
  // joint friction (residual.h): the rate rows in the coordinate's velocity unit, the
  // impulse row in its impulse unit, the products in their product
  for (int k = 0; k < m.nfr; ++k) {
    const int f = m.friction_free[k];
    const int b = m.child[m.free_joint[f]];
    const double lever = m.free_slot[f] < 3 ? 1.0 : length[b];
    const double rate = velocity / lever;             // m/s, or rad/s
    const double impulse = load[b] * velocity * lever;  // N s, or N m s
    s[m.fr_s + 2 * k] = s[m.fr_s + 2 * k + 1] = rate * impulse;  // s+- v+-
    s[m.fr_g + 2 * k] = s[m.fr_g + 2 * k + 1] = impulse;         // s+- - h F +- beta
    s[m.fr_b + k] = rate;                                       // Jf xi25 - v- + v+
  }
  for (int c = 0; c < m.nc; ++c) {
    const int a = m.contact_body[c], b = m.contact_other[c];
    const double len = b == kWorld ? length[a] : std::min(length[a], length[b]);
    const double impulse = (b == kWorld ? load[a] : std::min(load[a], load[b])) * velocity;
    const ContactModel model = static_cast<ContactModel>(m.contact_model[c]);
    const int half = contact_half_size(model);
    double* comp = s + m.contact_start[c];  // complementarity rows at the slacks (contact.h)
    double* cons = comp + half;             // constraint rows at the impulses
    comp[0] = len * impulse;  // gn sn
    cons[0] = len;            // d - tau - sn
    for (int k = 1; k < half; ++k) comp[k] = impulse * velocity;  // friction cone products
    if (model == ContactModel::Nonlinear) {
      cons[1] = impulse;                   // mu gn - psi
      cons[2] = cons[3] = velocity;        // vt - e
    } else if (model == ContactModel::Linear) {
      cons[1] = impulse;                                  // mu gn - sum b - s_psi
      for (int k = 2; k < half; ++k) cons[k] = velocity;  // P vt + psi - sb
    }
  }
}

double scaled_norm(const double* r, const double* scale, int begin, int end) {
  double out = 0.0;
  for (int i = begin; i < end; ++i) {
    const double a = scale ? std::fabs(r[i]) / scale[i] : std::fabs(r[i]);
    if (a != a) return a;
    out = std::max(out, a);
  }
  return out;
}

double complementarity_floor_scale(const Model& m, const double* scale) {
  if (!scale) return 1.0;
  double out = std::numeric_limits<double>::infinity();
  for (int i = 0; i < m.n; ++i)
    if (m.is_complementarity[i]) out = std::min(out, scale[i]);
  return std::isfinite(out) ? out : 1.0;
}

}  // namespace dojo
