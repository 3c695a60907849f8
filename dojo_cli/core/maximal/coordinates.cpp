// Constraint violation, the instantaneous conversions (the templated conversions at dual
// numbers) and the exact Jacobians of the conversions (coordinates.h), analytic: one pass
// over the tree each (below, "analytic Jacobians").
#include "coordinates.h"

#include <algorithm>
#include <cmath>

#include "math/dual.h"

namespace dojo {

namespace {

// Tangent coordinates per body (docs/formats.md): [x, v, phi, w].
constexpr int kTangent = 12;

// ---------------------------------------------------------------- analytic Jacobians
//
// Both conversions are chains of rigid transforms: their derivatives are the joint-space
// Jacobians of the tree, built in one pass from the root as Pinocchio's
// computeJointJacobians builds them (a child's pose increment is its parent's carried
// across the joint plus the joint's own), not by differentiating the conversions with
// dual numbers (a 16-wide dual number through every quaternion product of three passes
// over the tree cost the 20-link chain 190 us, and the 24-wide one of the inverse map
// 260 us: 60 % of its minimal-coordinate gradients, issue 28 item 1).
//
// A body's pose increment: dx, a world-frame position increment, and dt, a body-frame
// rotation increment (q -> q exp(dt/2), the rotation vector of kinematics.h's tangents).
// Its maximal tangent [x, v, phi, w] (docs/formats.md) from the increments of its current
// pose (z2: dx, dt) and previous pose (z1 = (x2 - h v15, q2 qmap(-w15)): dx1, dt1):
//   x = dx, v = (dx - dx1) / h, phi = dt / 2 (q [1, phi] = q exp(dt/2) to first order),
//   w = (2/h) d Vec(q1* q) = (s (dt - dt1) + u x (dt + dt1)) / h,  [s, u] = q1* q,
// the last from q1* q -> exp(-dt1/2) q1* q exp(dt/2) to first order.

// Rows of a body's pose increments in minimal_to_maximal_jacobian's scratch: dx, dt of
// the current pose, dx1, dt1 of the previous one (each row ny columns).
constexpr int kNowX = 0, kNowT = 3, kPrevX = 6, kPrevT = 9, kPoseRows = 12;

inline Vec3<double> column3(const double* g, int row, int ny, int c) {
  return Vec3<double>{{g[row * ny + c], g[(row + 1) * ny + c], g[(row + 2) * ny + c]}};
}
inline void set_column3(double* g, int row, int ny, int c, const Vec3<double>& v) {
  for (int k = 0; k < 3; ++k) g[(row + k) * ny + c] = v[k];
}

// How joint j's child pose moves with its parent's pose and the joint's own motion, for
// the child pose xb = xa + Ra (pa + d) - Rb pb, Rb = Ra O Q (child_pose; O the offset's
// rotation, Q = R(q_rel)): with the parent's increments (dxa, dta), the displacement's dd
// and q_rel's right increment dpsi,
//   dtb = C dta + dpsi,                 C = (O Q)^T,
//   dxb = dxa + (K + P C) dta + Ra dd + P dpsi,   K = -Ra [pa + d]x,  P = Rb [pb]x
// (d(R v) = R (dt x v) for R -> R exp([dt]x)).
struct ChildMap {
  Mat3<double> c, kpc, ra, p;
};
inline ChildMap child_map(const Model& m, int j, const Pose<double>& a, const Vec3<double>& d, const Quat<double>& q_rel,
                          const Pose<double>& b) {
  const Vec3<double> pa = load3<double>(&m.parent_vertex[3 * j]);
  const Vec3<double> pb = load3<double>(&m.child_vertex[3 * j]);
  ChildMap out;
  out.c = transpose(matmul(load33<double>(&m.offset_rotation[9 * j]), rotation(q_rel)));
  out.ra = a.r;
  out.p = matmul(b.r, skew(pb));
  out.kpc = -matmul(a.r, skew(pa + d)) + matmul(out.p, out.c);
  return out;
}

// Right increments of q_rel = exp(a1 t1/2) exp(a2 t2/2) [exp(a3 t3/2)] (euler_joints.h)
// per angle: column i is R(A_{i+1} .. A_n)^T a_i.
inline void euler_increments(const Model& m, int j, const double* theta, Vec3<double> out[3]) {
  const int n = m.joint_rotation[j] == kRotationUniversal ? 2 : 3;
  Quat<double> tail = identity_quat<double>();
  for (int i = n - 1; i >= 0; --i) {
    const double* a = &m.basis[18 * j + 9 + 3 * i];
    out[i] = tmatvec(rotation(tail), load3<double>(a));
    const double half = 0.5 * theta[i], sh = std::sin(half);
    tail = multiply(Quat<double>{{std::cos(half), sh * a[0], sh * a[1], sh * a[2]}}, tail);
  }
}

// A joint row's 12 derivatives in [xa, ta, xb, tb] (kinematics.h's tangents at one of the
// poses) added, times `scale`, to row `out` of d y / d z (12 nb columns): at the current
// poses x -> x, t -> 2 phi; at the previous ones (x1 = x - h v, t1 = B^T t - M w with
// B = R(qmap(-w15)), M = d t1 / d(-w15) = integrator_map_jacobian(-w15)) x -> x, v,
// t -> phi, w.
struct BackMap {
  Mat3<double> rot, map;  // B, M
};
void add_current(double* out, const double* jac, int a, int b, double scale) {
  const int bodies[2] = {a, b};
  for (int s = 0; s < 2; ++s) {
    if (bodies[s] == kWorld) continue;
    double* o = out + kTangent * bodies[s];
    for (int k = 0; k < 3; ++k) {
      o[k] += scale * jac[6 * s + k];
      o[6 + k] += 2.0 * scale * jac[6 * s + 3 + k];
    }
  }
}
void add_previous(double* out, const double* jac, int a, int b, double scale, double h,
                  const std::vector<BackMap>& back) {
  const int bodies[2] = {a, b};
  for (int s = 0; s < 2; ++s) {
    if (bodies[s] == kWorld) continue;
    double* o = out + kTangent * bodies[s];
    const double* jx = jac + 6 * s;
    const double* jt = jac + 6 * s + 3;
    const BackMap& bm = back[bodies[s]];
    for (int k = 0; k < 3; ++k) {
      o[k] += scale * jx[k];
      o[3 + k] -= h * scale * jx[k];
      o[6 + k] += 2.0 * scale * (bm.rot[k][0] * jt[0] + bm.rot[k][1] * jt[1] + bm.rot[k][2] * jt[2]);
      o[9 + k] -= scale * (jt[0] * bm.map[0][k] + jt[1] * bm.map[1][k] + jt[2] * bm.map[2][k]);
    }
  }
}

}  // namespace

namespace {
using D1 = Dual<double, 1>;
// v as a rate: a zero whose derivative along direction 0 is v (coordinates.h).
inline D1 rate_seed(double v) { return D1::variable(0.0, 0) * v; }
}  // namespace

void minimal_to_maximal_instantaneous(const Model& m, const double* y, const BodyOverrides& overrides, double* z) {
  std::vector<D1> yd(2 * static_cast<size_t>(m.nf)), zd(13 * static_cast<size_t>(m.nb));
  for (int j = 0; j < m.nj; ++j) {
    const int f0 = m.joint_free_start[j], n = m.joint_free_start[j + 1] - f0;
    for (int i = 0; i < n; ++i) {
      yd[2 * f0 + i] = D1(y[2 * f0 + i]);
      yd[2 * f0 + n + i] = rate_seed(y[2 * f0 + n + i]);
    }
  }
  BodyOverrides seeded = overrides;
  seeded.instantaneous = true;
  minimal_to_maximal(m, yd.data(), nullptr, seeded, zd.data());
  // positions and orientations are the values; the velocities' values are zero and
  // their derivatives the rates
  for (int b = 0; b < m.nb; ++b)
    for (int k = 0; k < 13; ++k) {
      const D1& e = zd[13 * b + k];
      z[13 * b + k] = (k >= 3 && k < 6) || k >= 10 ? e.d[0] : e.v;
    }
}

void instantaneous_minimal_velocities(const Model& m, const double* z, double* rate) {
  std::vector<Pose<double>> now(m.nb);
  std::vector<double> v(3 * static_cast<size_t>(m.nb)), omega(3 * static_cast<size_t>(m.nb));
  for (int b = 0; b < m.nb; ++b) {
    const double* s = z + 13 * b;
    now[b] = detail::make_pose(load3<double>(s), load4<double>(s + 6));
    std::copy(s + 3, s + 6, v.begin() + 3 * b);
    std::copy(s + 10, s + 13, omega.begin() + 3 * b);
  }
  const Pose<double> world = world_pose<double>();
  std::vector<JointKinematics<double>> kin(m.nj);
  for (int j = 0; j < m.nj; ++j)
    joint_configuration(m, j, m.parent[j] == kWorld ? world : now[m.parent[j]], now[m.child[j]], kin[j]);
  instantaneous_minimal_velocities(m, now.data(), kin.data(), v.data(), omega.data(), rate);
}

// The rates as minimal_coordinates_and_velocities computes them at dual numbers seeded with
// the velocities (coordinates.h): only the previous poses, x - h v and q qmap(-w), carry a
// derivative; the current ones and their joint configurations are the values the dual
// numbers held (no division on their way, so the same operations in double give the same
// bits), taken from the caller, and enter the dual operations as constants. Of the previous
// configuration only what a joint's rates read is formed, with joint_kinematics's operations:
// q_rel always, d (and so the bodies' rotation matrices) for a translational coordinate,
// rot_rel for a universal or gimbal joint's angles.
void instantaneous_minimal_velocities(const Model& m, const Pose<double>* now, const JointKinematics<double>* kin,
                                      const double* v, const double* omega, double* rate) {
  const auto constant3 = [](const Vec3<double>& a) { return Vec3<D1>{{D1(a[0]), D1(a[1]), D1(a[2])}}; };
  const auto constant4 = [](const Quat<double>& a) { return Quat<D1>{{D1(a[0]), D1(a[1]), D1(a[2]), D1(a[3])}}; };
  // previous_pose's position and orientation of every body; its rotation matrix only where a
  // joint's d reads it
  std::vector<Pose<D1>> prev(m.nb);
  std::vector<uint8_t> with_matrix(m.nb, 0);
  for (int j = 0; j < m.nj; ++j)
    for (int f = m.joint_free_start[j]; f < m.joint_free_start[j + 1]; ++f)
      if (m.free_slot[f] < 3) {
        if (m.parent[j] != kWorld) with_matrix[m.parent[j]] = 1;
        with_matrix[m.child[j]] = 1;
      }
  for (int b = 0; b < m.nb; ++b) {
    const double *vb = v + 3 * b, *wb = omega + 3 * b;
    const Vec3<D1> v15{{rate_seed(vb[0]), rate_seed(vb[1]), rate_seed(vb[2])}};
    const Vec3<D1> w15{{rate_seed(wb[0]), rate_seed(wb[1]), rate_seed(wb[2])}};
    prev[b].x = constant3(now[b].x) - m.h * v15;
    prev[b].q = multiply(constant4(now[b].q), integrator_map(-w15, m.h));
    if (with_matrix[b]) prev[b].r = rotation(prev[b].q);
  }
  const Pose<D1> world = world_pose<D1>();
  JointKinematics<D1> k1;
  EulerAngles<D1> e2, e1;
  for (int j = 0; j < m.nj; ++j) {
    const int f0 = m.joint_free_start[j], f1 = m.joint_free_start[j + 1];
    if (f0 == f1) continue;
    // joint_minimal_state's rates: k2 the current configuration, k1 the previous one
    const JointKinematics<double>& k2 = kin[j];
    const Pose<D1>& a1 = m.parent[j] == kWorld ? world : prev[m.parent[j]];
    const Pose<D1>& b1 = prev[m.child[j]];
    const bool euler = m.joint_rotation[j] != kRotationQuaternion;
    bool translation = false;
    for (int f = f0; f < f1; ++f) translation = translation || m.free_slot[f] < 3;
    if (translation) {
      joint_configuration(m, j, a1, b1, k1);
    } else {
      const Quat<D1> off = load4<D1>(&m.orientation_offset[4 * j]);
      k1.q_rel = multiply(conjugate(off), multiply(conjugate(a1.q), b1.q));
      if (euler) k1.rot_rel = rotation(k1.q_rel);
    }
    if (euler) {
      Mat3<D1> rot2;
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) rot2[r][c] = D1(k2.rot_rel[r][c]);
      euler_angles(m, j, rot2, e2);
      euler_angles(m, j, k1.rot_rel, e1);
    }
    const Quat<D1> inc_q = multiply(conjugate(k1.q_rel), constant4(k2.q_rel));
    const Vec3<D1> inc = rotation_vector(inc_q);
    for (int f = f0; f < f1; ++f) {
      const int slot = m.free_slot[f];
      const double* b = detail::basis_row(m, j, slot);
      D1 r;
      if (euler && slot >= 3)
        r = wrapped_angle(e2.angle[slot - 3] - e1.angle[slot - 3]) / m.h;
      else if (slot >= 3)
        r = detail::basis_dot(b, inc) / m.h;
      else
        r = detail::basis_dot(b, constant3(k2.d) - k1.d) / m.h;
      rate[f] = r.d[0];
    }
  }
}

void constraint_violation(const Model& m, const double* z, double* out) {
  std::vector<Pose<double>> pose(m.nb);
  for (int b = 0; b < m.nb; ++b) {
    const double* s = z + 13 * b;
    const Quat<double> q = load4<double>(s + 6);
    pose[b] = Pose<double>{load3<double>(s), q, rotation(q)};
  }
  const Pose<double> world = world_pose<double>();
  JointKinematics<double> kin;
  JointRow<double> row;
  for (int j = 0; j < m.nj; ++j) {
    joint_kinematics(m, j, m.parent[j] == kWorld ? world : pose[m.parent[j]], pose[m.child[j]], kin);
    out[j] = 0.0;
    for (int r = m.joint_row_start[j]; r < m.joint_row_start[j + 1]; ++r) {
      if (m.row_lock[r]) continue;  // a lock row holds a step's change, not a state's property
      constraint_row(m, j, m.row_slot[r], kin, row);
      out[j] = std::max(out[j], std::fabs(row.value));
    }
  }
}

void maximal_to_minimal_jacobian(const Model& m, const double* z, double* jac) {
  // Each joint's rows: its coordinates' derivatives at the current poses are kinematics.h's
  // minimal rows (d log q_rel = J_r^-1 dt, the angles' gradients of a universal or gimbal
  // joint); its velocities' are the differences of those rows at the two poses over h,
  // with the rotation increment inc = log(q_rel1* q_rel): d inc = J_r^-1(inc) (dpsi -
  // R(q_rel1* q_rel)^T dpsi1) for the right increments dpsi, dpsi1 of q_rel, q_rel1.
  const double h = m.h;
  const int nb = m.nb;
  const size_t cols = static_cast<size_t>(kTangent) * nb;
  std::fill(jac, jac + static_cast<size_t>(2 * m.nf) * cols, 0.0);
  std::vector<Pose<double>> now(nb), prev(nb);
  std::vector<BackMap> back(nb);
  for (int b = 0; b < nb; ++b) {
    body_poses(z, b, h, now[b], prev[b]);
    const Vec3<double> w_back = -load3<double>(z + 13 * b + 10);
    back[b].rot = rotation(integrator_map(w_back, h));
    back[b].map = integrator_map_jacobian(w_back, h);
  }
  const Pose<double> world = world_pose<double>();
  JointKinematics<double> k2, k1;
  JointRow<double> row2, row1;
  for (int j = 0; j < m.nj; ++j) {
    const int f0 = m.joint_free_start[j], n = m.joint_free_start[j + 1] - f0;
    if (n == 0) continue;
    const int a = m.parent[j], c = m.child[j];
    joint_kinematics(m, j, a == kWorld ? world : now[a], now[c], k2);
    joint_kinematics(m, j, a == kWorld ? world : prev[a], prev[c], k1);
    const Vec3<double> rv2 = rotation_vector(k2.q_rel);
    const bool euler = m.joint_rotation[j] != kRotationQuaternion;
    EulerAngles<double> e2, e1;
    Mat3<double> inc_inverse, inc_rot;
    if (euler) {
      euler_angles(m, j, k2.rot_rel, e2);
      euler_angles(m, j, k1.rot_rel, e1);
    } else {
      const Quat<double> inc = multiply(conjugate(k1.q_rel), k2.q_rel);
      inc_inverse = right_jacobian_inverse(rotation_vector(inc));
      inc_rot = rotation(inc);
    }
    for (int i = 0; i < n; ++i) {
      const int slot = m.free_slot[f0 + i];
      double* coordinate = jac + static_cast<size_t>(2 * f0 + i) * cols;
      double* velocity = jac + static_cast<size_t>(2 * f0 + n + i) * cols;
      minimal_row(m, j, slot, k2, rv2, row2);
      add_current(coordinate, row2.jac, a, c, 1.0);
      const double* b = detail::basis_row(m, j, slot);
      if (slot < 3) {
        detail::translational_row(b, k2, row2);
        detail::translational_row(b, k1, row1);
      } else if (euler) {
        detail::rotational_jacobian_of_gradient(e2.grad[slot - 3], k2, row2);
        detail::rotational_jacobian_of_gradient(e1.grad[slot - 3], k1, row1);
      } else {
        Vec3<double> g;  // J_r^-T(inc) b
        for (int k = 0; k < 3; ++k) g[k] = b[0] * inc_inverse[0][k] + b[1] * inc_inverse[1][k] + b[2] * inc_inverse[2][k];
        detail::rotational_jacobian_of_gradient(g, k2, row2);
        detail::rotational_jacobian_of_gradient(matvec(inc_rot, g), k1, row1);
      }
      add_current(velocity, row2.jac, a, c, 1.0 / h);
      add_previous(velocity, row1.jac, a, c, -1.0 / h, h, back);
    }
  }
}

// d z / d y, one pass from the root over the tree joints (minimal_to_maximal's walk):
// each body's pose increments per minimal direction (its ancestors' joints' coordinates
// and velocities only: `cols`), carried to its children by child_map, then the maximal
// tangents (header of this section).
void minimal_to_maximal_jacobian(const Model& m, const double* y, const double* z_base,
                                 const BodyOverrides& overrides, double* jac) {
  const double h = m.h;
  const int nb = m.nb, ny = 2 * m.nf;
  const size_t block = static_cast<size_t>(kPoseRows) * ny;
  std::vector<double> inc(static_cast<size_t>(nb) * block, 0.0);
  std::vector<std::vector<int>> cols(nb);
  std::vector<Pose<double>> now(nb), prev(nb);
  for (int b = 0; b < nb; ++b) {
    if (z_base) {
      body_poses(z_base, b, h, now[b], prev[b]);
    } else {
      now[b] = world_pose<double>();
      prev[b] = world_pose<double>();
    }
  }
  const Pose<double> world = world_pose<double>();
  for (int j : m.tree_joints) {
    const int a = m.parent[j], b = m.child[j], f0 = m.joint_free_start[j];
    const int n = m.joint_free_start[j + 1] - f0;
    // the values, as minimal_to_maximal computes them
    double six[6] = {0, 0, 0, 0, 0, 0}, rate[6] = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n; ++i) {
      six[m.free_slot[f0 + i]] = y[2 * f0 + i];
      rate[m.free_slot[f0 + i]] = y[2 * f0 + n + i];
    }
    const double* bt = &m.basis[18 * j];
    const double* br = &m.basis[18 * j + 9];
    const Pose<double>& a2 = a == kWorld ? world : now[a];
    const Pose<double>& a1 = a == kWorld ? world : prev[a];
    const bool euler = m.joint_rotation[j] != kRotationQuaternion;
    const Vec3<double> d = detail::basis_transpose_times(bt, six);
    const Vec3<double> r = detail::basis_transpose_times(br, six + 3);
    const Quat<double> q_rel = euler ? quaternion_from_euler_angles(m, j, six + 3) : quaternion_from_rotation_vector(r);
    now[b] = detail::child_pose(m, j, a2, d, q_rel);
    double prev_t[3], back_r[3], prev_r[3];
    for (int s = 0; s < 3; ++s) prev_t[s] = six[s] - h * rate[s];
    for (int s = 0; s < 3; ++s) back_r[s] = -h * rate[3 + s];
    for (int s = 0; s < 3; ++s) prev_r[s] = six[3 + s] + back_r[s];
    const Vec3<double> d1 = detail::basis_transpose_times(bt, prev_t);
    const Vec3<double> back = detail::basis_transpose_times(br, back_r);
    const Quat<double> step_back = quaternion_from_rotation_vector(back);
    const Quat<double> q_rel1 = euler ? quaternion_from_euler_angles(m, j, prev_r) : multiply(q_rel, step_back);
    prev[b] = detail::child_pose(m, j, a1, d1, q_rel1);
    const ChildMap map2 = child_map(m, j, a2, d, q_rel, now[b]);
    const ChildMap map1 = child_map(m, j, a1, d1, q_rel1, prev[b]);

    double* gb = &inc[b * block];
    std::vector<int>& cb = cols[b];
    // the parent's directions, carried across the joint
    if (a != kWorld) {
      const double* ga = &inc[a * block];
      cb = cols[a];
      for (int c : cb) {
        const Vec3<double> dta = column3(ga, kNowT, ny, c), dta1 = column3(ga, kPrevT, ny, c);
        set_column3(gb, kNowT, ny, c, matvec(map2.c, dta));
        set_column3(gb, kNowX, ny, c, column3(ga, kNowX, ny, c) + matvec(map2.kpc, dta));
        set_column3(gb, kPrevT, ny, c, matvec(map1.c, dta1));
        set_column3(gb, kPrevX, ny, c, column3(ga, kPrevX, ny, c) + matvec(map1.kpc, dta1));
      }
    }
    // the joint's own directions: per coordinate and velocity, the increments of
    // (d, q_rel) and of (d1, q_rel1): d = bt^T theta_t, d1 = bt^T (theta_t - h rate_t);
    // q_rel = exp(br^T theta_r) (right increment J_r(r) dr) and q_rel1 = q_rel exp(s),
    // s = -h br^T rate_r (R(exp s)^T dpsi + J_r(s) ds); Euler: the angles' increments.
    Vec3<double> m2[3], m1[3];
    Mat3<double> jr2, jr1, back_t;
    if (euler) {
      euler_increments(m, j, six + 3, m2);
      euler_increments(m, j, prev_r, m1);
    } else {
      jr2 = right_jacobian(r);
      jr1 = right_jacobian(back);
      back_t = transpose(rotation(step_back));
    }
    const Vec3<double> zero{{0.0, 0.0, 0.0}};
    for (int i = 0; i < n; ++i) {
      const int slot = m.free_slot[f0 + i];
      const Vec3<double> row = load3<double>(detail::basis_row(m, j, slot));
      // [coordinate, velocity] x (dd, dpsi, dd1, dpsi1)
      Vec3<double> local[2][4];
      auto set = [&local](int kind, const Vec3<double>& dd, const Vec3<double>& dpsi, const Vec3<double>& dd1,
                          const Vec3<double>& dpsi1) {
        local[kind][0] = dd;
        local[kind][1] = dpsi;
        local[kind][2] = dd1;
        local[kind][3] = dpsi1;
      };
      if (slot < 3) {
        set(0, row, zero, row, zero);
        set(1, zero, zero, -h * row, zero);
      } else if (euler) {
        set(0, zero, m2[slot - 3], zero, m1[slot - 3]);
        set(1, zero, zero, zero, -h * m1[slot - 3]);
      } else {
        const Vec3<double> dpsi = matvec(jr2, row);
        set(0, zero, dpsi, zero, matvec(back_t, dpsi));
        set(1, zero, zero, zero, matvec(jr1, -h * row));
      }
      for (int kind = 0; kind < 2; ++kind) {
        const int c = 2 * f0 + kind * n + i;
        const Vec3<double>* l = local[kind];
        set_column3(gb, kNowT, ny, c, l[1]);
        set_column3(gb, kNowX, ny, c, matvec(map2.ra, l[0]) + matvec(map2.p, l[1]));
        set_column3(gb, kPrevT, ny, c, l[3]);
        set_column3(gb, kPrevX, ny, c, matvec(map1.ra, l[2]) + matvec(map1.p, l[3]));
        cb.push_back(c);
      }
    }
    if (!overrides.flags) continue;
    bool any = false;
    for (int part = 0; part < kOverrideParts; ++part) any = any || overrides.has(b, static_cast<OverridePart>(part));
    if (!any) continue;
    // apply_override keeps the parts not overridden as the velocity v = (x - x1) / h and
    // the body-frame increment q* q1 (right increment g = -R(q* q1)^T dt + dt1), and
    // rebuilds x1 = x - h v, q1 = q (q* q1): dx1 = dx - h dv, dt1 = R(q* q1)^T dt + g; an
    // overridden part is a constant (zero increment).
    const Mat3<double> back_before = transpose(rotation(multiply(conjugate(now[b].q), prev[b].q)));
    detail::apply_override(overrides, b, h, now[b], prev[b]);
    const Mat3<double> back_after = transpose(rotation(multiply(conjugate(now[b].q), prev[b].q)));
    for (int c : cb) {
      Vec3<double> dx = column3(gb, kNowX, ny, c), dt = column3(gb, kNowT, ny, c);
      Vec3<double> dv = (1.0 / h) * (dx - column3(gb, kPrevX, ny, c));
      Vec3<double> g = column3(gb, kPrevT, ny, c) - matvec(back_before, dt);
      if (overrides.has(b, kOverridePosition)) dx = zero;
      if (overrides.has(b, kOverrideOrientation)) dt = zero;
      if (overrides.has(b, kOverrideVelocity)) dv = zero;
      if (overrides.has(b, kOverrideAngularVelocity)) g = zero;
      set_column3(gb, kNowX, ny, c, dx);
      set_column3(gb, kNowT, ny, c, dt);
      set_column3(gb, kPrevX, ny, c, dx - h * dv);
      set_column3(gb, kPrevT, ny, c, matvec(back_after, dt) + g);
    }
  }
  std::fill(jac, jac + static_cast<size_t>(kTangent) * nb * ny, 0.0);
  for (int b = 0; b < nb; ++b) {
    const double* gb = &inc[b * block];
    const Quat<double> step = multiply(conjugate(prev[b].q), now[b].q);  // [s, u] = q1* q
    const Vec3<double> u{{step[1], step[2], step[3]}};
    for (int c : cols[b]) {
      const Vec3<double> dx = column3(gb, kNowX, ny, c), dt = column3(gb, kNowT, ny, c);
      const Vec3<double> dx1 = column3(gb, kPrevX, ny, c), dt1 = column3(gb, kPrevT, ny, c);
      const Vec3<double> dw = (1.0 / h) * (step[0] * (dt - dt1) + cross(u, dt + dt1));
      for (int k = 0; k < 3; ++k) {
        double* row = jac + static_cast<size_t>(kTangent * b + k) * ny + c;
        row[0] = dx[k];
        row[3 * static_cast<size_t>(ny)] = (dx[k] - dx1[k]) / h;
        row[6 * static_cast<size_t>(ny)] = 0.5 * dt[k];
        row[9 * static_cast<size_t>(ny)] = dw[k];
      }
    }
  }
}

}  // namespace dojo
