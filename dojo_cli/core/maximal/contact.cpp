// Contact kernels: the contact models per contact and the flat geometry front end
// (contact.h, collision.h; the golden files in tests/data/golden hold this code to the
// results it had when it was written).
#include "contact.h"

#include <type_traits>

namespace dojo {
namespace {

// Columns of a pair's derivatives (the K output columns): body a's tangents [0, 6),
// body b's [6, 12) when b is a body (not the world), then with parameters the sphere
// offset (3) and radius (1). The geometry itself is differentiated over its own seeds:
// the primitive's centre c (3), a's rotation t_a (3), then b's x_b (3) and t_b (3)
// (every collision function sees a's position only through c; its rotation enters only
// for a segment or a circle, rotates_primitive(), and is zero for a sphere).
template <bool kWithB, bool kParameters>
struct Columns {
  static constexpr bool with_b = kWithB;
  static constexpr bool parameters = kParameters;
  static constexpr int xa = 0, ta = 3, xb = 6, tb = 9;
  static constexpr int tangents = kWithB ? 12 : 6;
  static constexpr int count = tangents + (kParameters ? 4 : 0);
  static constexpr int offset = tangents;
  static constexpr int radius = tangents + 3;
  static constexpr int geometry = kWithB ? 12 : 6;
  static constexpr int geometry_ta = 3, geometry_b = 6;  // first seeds of t_a and of b
};

// Everything of a contact at z3 that depends on the poses: the geometry, the contact
// points relative to the bodies, the velocities, the force and the torques.
template <class T>
struct PairState {
  Geometry<T> g;
  Vec3<T> ra, rb;                // contact points minus body positions (world)
  Vec3<T> wa_world, wb_world;    // R w per body
  Vec3<T> dv;                    // relative velocity of the contact points (world)
  T vt[2];                       // tangential velocity T dv
  Vec3<T> force;                 // on a, world
  Vec3<T> torque_a, torque_b;    // in a's and b's frames (torque_b unset for the world)
};

// The geometry at z3 (collision.h's table).
template <class T, class U>
inline void pair_geometry(const ContactParams& c, const TangentPose<T>& pose_a, const TangentPose<T>& pose_b,
                          const Vec3<U>& offset, const T& radius, Geometry<T>& g) {
  collide(c.kind, sphere_centre(pose_a, offset), radius, pose_a, c.shape_a, pose_b, body_b_shape(c), g);
}

// One contact's evaluation after the geometry (st.g set), templated on the scalar.
// Point velocity v + (R w) x (p - x) per body and vt = T (v_a(p_a) - v_b(p_b)) (notes 4.3);
// force n gn + T^T bt on a at p_a, its negative on b at p_b, torques R^T (p - x) x f in
// the body frames (notes 4.2).
//   coef: (gn, bt1, bt2), the force coefficients in the basis (n, t1, t2).
template <class T>
void pair_kinematics(ContactModel model, const TangentPose<T>& pose_a, const TangentPose<T>& pose_b, bool world_b,
                     const ContactBodyState& a, const ContactBodyState& b, const double coef[3], PairState<T>& st) {
  const Geometry<T>& g = st.g;
  st.ra = g.point_a - pose_a.x;
  st.rb = g.point_b - pose_b.x;

  // relative velocity of the contact points: v + (R w) x r per body
  const Vec3<double> wa{{a.w[0], a.w[1], a.w[2]}};
  st.wa_world = world_from_body(pose_a, wa);
  st.dv = cross(st.wa_world, st.ra);
  for (int i = 0; i < 3; ++i) st.dv[i] = st.dv[i] + a.v[i];
  if (!world_b) {  // the world's term is exactly zero
    const Vec3<double> wb{{b.w[0], b.w[1], b.w[2]}};
    st.wb_world = world_from_body(pose_b, wb);
    const Vec3<T> vb = cross(st.wb_world, st.rb);
    for (int i = 0; i < 3; ++i) st.dv[i] = st.dv[i] - (vb[i] + b.v[i]);
  }
  st.vt[0] = dot(g.tangent[0], st.dv);
  st.vt[1] = dot(g.tangent[1], st.dv);

  // force on a: n gn + T^T bt (impact: bt = 0, whose terms would add exact zeros)
  for (int i = 0; i < 3; ++i) st.force[i] = g.normal[i] * coef[0];
  if (model != ContactModel::Impact) {
    for (int i = 0; i < 3; ++i) st.force[i] = st.force[i] + (coef[1] * g.tangent[0][i] + coef[2] * g.tangent[1][i]);
  }
  // torques R^T (r x f) on a and R^T (r x -f) on b, in the body frames
  st.torque_a = body_from_world(pose_a, cross(st.ra, st.force));
  if (!world_b) st.torque_b = body_from_world(pose_b, cross(st.rb, -st.force));
}

// [f; tau_a; -f; tau_b], the b half zero for the world.
template <class T>
inline void pair_wrench(const PairState<T>& st, bool world_b, T wrench[12]) {
  for (int i = 0; i < 3; ++i) {
    wrench[i] = st.force[i];
    wrench[3 + i] = st.torque_a[i];
    wrench[6 + i] = world_b ? T(0.0) : -st.force[i];
    wrench[9 + i] = world_b ? T(0.0) : st.torque_b[i];
  }
}

// The force coefficients (gn, bt1, bt2) from gamma (notes 4.2:
// nonlinear bt = (b1, b2), linear bt = P^T (b1..b4)).
void force_coefficients(ContactModel model, const double* gamma, double coef[3]) {
  coef[0] = gamma[0];
  if (model == ContactModel::Impact) {
    coef[1] = coef[2] = 0.0;
  } else if (model == ContactModel::Nonlinear) {
    coef[1] = gamma[2];
    coef[2] = gamma[3];
  } else {  // P^T b
    coef[1] = gamma[4] - gamma[5];
    coef[2] = gamma[2] - gamma[3];
  }
}

// Residual rows of the model (notes 4.2), complementarity
// with kappa = 0 (the interior point subtracts its kappa target itself).
void model_rows(const ContactParams& c, const double* s, const double* g, double d, const double vt[2],
                ContactEval& out) {
  switch (c.model) {
    case ContactModel::Impact:
      out.comp[0] = g[0] * s[0];
      out.cons[0] = d - s[0];
      break;
    case ContactModel::Nonlinear:
      out.comp[0] = g[0] * s[0];
      // cone_product((psi, b), (e0, e1, e2))
      out.comp[1] = g[1] * s[1] + g[2] * s[2] + g[3] * s[3];
      out.comp[2] = g[1] * s[2] + s[1] * g[2];
      out.comp[3] = g[1] * s[3] + s[1] * g[3];
      out.cons[0] = d - s[0];
      out.cons[1] = c.friction * g[0] - g[1];
      out.cons[2] = vt[0] - s[2];
      out.cons[3] = vt[1] - s[3];
      break;
    case ContactModel::Linear: {
      for (int i = 0; i < 6; ++i) out.comp[i] = g[i] * s[i];
      out.cons[0] = d - s[0];
      out.cons[1] = (c.friction * g[0] - (((g[2] + g[3]) + g[4]) + g[5])) - s[1];
      const double pvt[4] = {vt[1], -vt[1], vt[0], -vt[0]};  // P vt
      for (int p = 0; p < 4; ++p) out.cons[2 + p] = (pvt[p] + g[1]) - s[2 + p];
      break;
    }
  }
}

// d comp / d [s, gamma] and d cons / d [s, gamma].
void model_local_jacobians(const ContactParams& c, int n, const double* s, const double* g, ContactEval& out) {
  for (int r = 0; r < n; ++r) {
    for (int k = 0; k < 2 * n; ++k) {
      out.comp_jac[r][k] = 0.0;
      out.cons_local[r][k] = 0.0;
    }
  }
  out.cons_local[0][0] = -1.0;  // d - sn
  switch (c.model) {
    case ContactModel::Impact:
      out.comp_jac[0][0] = g[0];
      out.comp_jac[0][1] = s[0];
      break;
    case ContactModel::Nonlinear: {
      out.comp_jac[0][0] = g[0];
      out.comp_jac[0][n] = s[0];
      // cone_product rows: arrow(psi, b) d/d eta and arrow(eta) d/d (psi, b),
      // arrow(u) = [[u0, u1, u2], [u1, u0, 0], [u2, 0, u0]]
      const double* psi_b = g + 1;
      const double* eta = s + 1;
      for (int side = 0; side < 2; ++side) {
        const double* u = side == 0 ? psi_b : eta;
        const int col = side == 0 ? 1 : n + 1;
        out.comp_jac[1][col] = u[0];
        out.comp_jac[1][col + 1] = u[1];
        out.comp_jac[1][col + 2] = u[2];
        out.comp_jac[2][col] = u[1];
        out.comp_jac[2][col + 1] = u[0];
        out.comp_jac[3][col] = u[2];
        out.comp_jac[3][col + 2] = u[0];
      }
      out.cons_local[1][n] = c.friction;  // mu gn
      out.cons_local[1][n + 1] = -1.0;    // - psi
      out.cons_local[2][2] = -1.0;        // vt - (e1, e2)
      out.cons_local[3][3] = -1.0;
      break;
    }
    case ContactModel::Linear:
      for (int i = 0; i < n; ++i) {
        out.comp_jac[i][i] = g[i];
        out.comp_jac[i][n + i] = s[i];
      }
      out.cons_local[1][n] = c.friction;  // mu gn
      for (int k = 2; k < 6; ++k) out.cons_local[1][n + k] = -1.0;  // - sum b
      out.cons_local[1][1] = -1.0;                                   // - s_psi
      for (int p = 0; p < 4; ++p) {
        out.cons_local[2 + p][n + 1] = 1.0;      // + psi
        out.cons_local[2 + p][2 + p] = -1.0;     // - sb
      }
      break;
  }
}

// The constraint rows' Jacobian from those of d and vt (d_jac, vt_jac: k columns).
template <int K>
void constraint_rows_jacobian(ContactModel model, const double d_jac[K], const double vt_jac[2][K], double rows[][K]) {
  for (int k = 0; k < K; ++k) rows[0][k] = d_jac[k];
  if (model == ContactModel::Nonlinear) {
    for (int k = 0; k < K; ++k) {
      rows[1][k] = 0.0;
      rows[2][k] = vt_jac[0][k];
      rows[3][k] = vt_jac[1][k];
    }
  } else if (model == ContactModel::Linear) {
    for (int k = 0; k < K; ++k) {
      rows[1][k] = 0.0;
      rows[2][k] = vt_jac[1][k];  // P vt
      rows[3][k] = -vt_jac[1][k];
      rows[4][k] = vt_jac[0][k];
      rows[5][k] = -vt_jac[0][k];
    }
  }
}

// jac (12 columns over z3) chained to [xi_a, xi_b]:
// x3 = x2 + h v25 and q3 = q2 qmap(w25) (notes 2.2) give dx3/dv25 = h I, dt3/dw25 = mw.
inline void chain_to_velocities(const double jac[12], double h, const double* mwa, const double* mwb, bool world_b,
                                double out[12]) {
  for (int k = 0; k < 3; ++k) {
    out[k] = h * jac[k];
    out[3 + k] = jac[3] * mwa[k] + jac[4] * mwa[3 + k] + jac[5] * mwa[6 + k];
  }
  if (world_b) {
    for (int k = 6; k < 12; ++k) out[k] = 0.0;
  } else {
    for (int k = 0; k < 3; ++k) {
      out[6 + k] = h * jac[6 + k];
      out[9 + k] = jac[9] * mwb[k] + jac[10] * mwb[3 + k] + jac[11] * mwb[6 + k];
    }
  }
}

// A row over the K output columns split into the 12 z3 columns (b's zero for the world)
// and the 4 parameter columns.
template <class C>
inline void split_row(const double* row, double z3[12], double* parameters) {
  for (int k = 0; k < C::tangents; ++k) z3[k] = row[k];
  for (int k = C::tangents; k < 12; ++k) z3[k] = 0.0;
  if constexpr (C::parameters) {
    for (int k = 0; k < 4; ++k) parameters[k] = row[C::offset + k];
  }
}

// ---------------------------------------------------------- 3 x K Jacobians
// The hand-chained path keeps the Jacobian of each 3-vector as a 3 x K block (K, the
// column count, is a compile-time constant, so the loops vectorise).
template <int K>
struct Jac3 {
  double m[3][K];
};

template <int K>
inline void set_zero(Jac3<K>& j) {
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < K; ++k) j.m[i][k] = 0.0;
}
// [a]x j
template <int K>
inline Jac3<K> skew_mul(const Vec3<double>& a, const Jac3<K>& j) {
  Jac3<K> out;
  for (int k = 0; k < K; ++k) {
    out.m[0][k] = a[1] * j.m[2][k] - a[2] * j.m[1][k];
    out.m[1][k] = a[2] * j.m[0][k] - a[0] * j.m[2][k];
    out.m[2][k] = a[0] * j.m[1][k] - a[1] * j.m[0][k];
  }
  return out;
}
// r^T j for a rotation (or any 3x3) r
template <int K>
inline Jac3<K> tmul(const Mat3<double>& r, const Jac3<K>& j) {
  Jac3<K> out;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < K; ++k) out.m[i][k] = r[0][i] * j.m[0][k] + r[1][i] * j.m[1][k] + r[2][i] * j.m[2][k];
  return out;
}
// v^T j
template <int K>
inline void vec_mul(const Vec3<double>& v, const Jac3<K>& j, double row[K]) {
  for (int k = 0; k < K; ++k) row[k] = v[0] * j.m[0][k] + v[1] * j.m[1][k] + v[2] * j.m[2][k];
}
template <int K>
inline void add_block(Jac3<K>& j, int col, const Mat3<double>& m) {
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k) j.m[i][col + k] += m[i][k];
}
template <int K>
inline void axpy(double s, const Jac3<K>& x, Jac3<K>& y) {  // y += s x
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < K; ++k) y.m[i][k] += s * x.m[i][k];
}

template <class T>
inline Vec3<double> values(const Vec3<T>& v) {
  return Vec3<double>{{value(v[0]), value(v[1]), value(v[2])}};
}

// The residual rows, wrench and records from a pair's state (values).
template <class T>
void write_values(const ContactParams& c, const PairState<T>& st, bool world_b, const double* s,
                  const double* gamma, ContactEval& out) {
  const double vt[2] = {value(st.vt[0]), value(st.vt[1])};
  model_rows(c, s, gamma, value(st.g.distance), vt, out);
  T wrench[12];
  pair_wrench(st, world_b, wrench);
  for (int i = 0; i < 12; ++i) out.wrench[i] = value(wrench[i]);
  out.distance = value(st.g.distance);
  out.slip[0] = vt[0];
  out.slip[1] = vt[1];
}

// The derivative outputs that follow from cons_z3 and wrench_z3 and from values:
// the direct dependence of vt on xi25, the chain to the velocities and the impulse map.
template <class C>
void finish_jacobians(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                      const Vec3<double>& ra, const Vec3<double>& rb, const Vec3<double>& normal,
                      const Vec3<double> tangent[2], const Mat3<double>& rot_a, const Mat3<double>& rot_b,
                      ContactEval& out) {
  constexpr bool world_b = !C::with_b;
  const int n = contact_half_size(c.model);
  // direct dependence of vt on xi25 = (v_a, w_a, v_b, w_b): d(R w x r)/dw = -[r]x R
  const Mat3<double> direct_a = matmul(-skew(ra), rot_a);  // d(R_a w_a x ra)/dw_a
  const Mat3<double> direct_b = matmul(skew(rb), rot_b);   // -d(R_b w_b x rb)/dw_b
  double vt_direct[2][12];
  for (int k = 0; k < 2; ++k) {
    const Vec3<double>& t = tangent[k];
    for (int j = 0; j < 3; ++j) {
      vt_direct[k][j] = t[j];
      vt_direct[k][3 + j] = t[0] * direct_a[0][j] + t[1] * direct_a[1][j] + t[2] * direct_a[2][j];
      vt_direct[k][6 + j] = world_b ? 0.0 : -t[j];
      vt_direct[k][9 + j] = world_b ? 0.0 : t[0] * direct_b[0][j] + t[1] * direct_b[1][j] + t[2] * direct_b[2][j];
    }
  }
  double direct[kMaxContactHalfSize][12];
  const double no_distance[12] = {0.0};  // d does not depend on the velocities
  constraint_rows_jacobian<12>(c.model, no_distance, vt_direct, direct);

  // chained to the velocities, plus the direct part
  for (int r = 0; r < n; ++r) {
    chain_to_velocities(out.cons_z3[r], h, a.mw, b.mw, world_b, out.cons_body[r]);
    for (int k = 0; k < 12; ++k) out.cons_body[r][k] = out.cons_body[r][k] + direct[r][k];
  }
  for (int r = 0; r < (world_b ? 6 : 12); ++r)
    chain_to_velocities(out.wrench_z3[r], h, a.mw, b.mw, world_b, out.wrench_body[r]);
  if constexpr (world_b) {
    for (int r = 6; r < 12; ++r)
      for (int k = 0; k < 12; ++k) out.wrench_body[r][k] = 0.0;
  }

  // impulse map: per unit force direction u in (n, t1, t2), [u; R_a^T (ra x u); -u; -R_b^T (rb x u)]
  double unit[12][3];
  for (int k = 0; k < 3; ++k) {
    const Vec3<double>& u = k == 0 ? normal : tangent[k - 1];
    const Vec3<double> ta = tmatvec(rot_a, cross(ra, u));
    const Vec3<double> tb = tmatvec(rot_b, cross(rb, u));
    for (int i = 0; i < 3; ++i) {
      unit[i][k] = u[i];
      unit[3 + i][k] = ta[i];
      unit[6 + i][k] = world_b ? 0.0 : -u[i];
      unit[9 + i][k] = world_b ? 0.0 : -tb[i];
    }
  }
  for (int r = 0; r < 12; ++r) {
    double* row = out.wrench_gamma[r];
    row[0] = unit[r][0];  // gn
    if (c.model == ContactModel::Nonlinear) {
      row[1] = 0.0;  // psi
      row[2] = unit[r][1];
      row[3] = unit[r][2];
    } else if (c.model == ContactModel::Linear) {
      row[1] = 0.0;
      for (int p = 0; p < 4; ++p) row[2 + p] = kPyramid[p][0] * unit[r][1] + kPyramid[p][1] * unit[r][2];
    }
  }
}

// The world as body b: identity pose (its velocities and columns are never read).
constexpr double kOrigin[3] = {0.0, 0.0, 0.0};
constexpr double kIdentity[4] = {1.0, 0.0, 0.0, 0.0};

// The residual path: plain doubles.
void evaluate_residual(const ContactParams& c, const ContactBodyState& a, const ContactBodyState& b, bool world_b,
                       const double* s, const double* gamma, const double coef[3], ContactEval& out) {
  const TangentPose<double> pose_a = tangent_pose<double>(a.x, a.q, -1);
  const TangentPose<double> pose_b =
      world_b ? tangent_pose<double>(kOrigin, kIdentity, -1) : tangent_pose<double>(b.x, b.q, -1);
  const Vec3<double> offset{{c.offset[0], c.offset[1], c.offset[2]}};
  PairState<double> st;
  pair_geometry(c, pose_a, pose_b, offset, c.radius, st.g);
  pair_kinematics(c.model, pose_a, pose_b, world_b, a, b, coef, st);
  write_values(c, st, world_b, s, gamma, out);
}

// The derivative path. The geometry is differentiated by dual numbers over its own seeds
// [c, t_a, x_b, t_b] and chained to the K columns: d/dx_a = d/dc,
// d/dt_a = d/dc (-R_a [offset]x) + the direct t_a seed (a segment's or circle's vectors),
// d/doffset = d/dc R_a (the offset moves the whole primitive); the radius enters only as
// distance - radius and point_a = (radius-0 point) - radius n (d/dradius = -1 and -n). The rest (contact points relative to
// the bodies, relative velocity, vt, force, torques) is chained by hand with 3 x K
// blocks, the derivatives of the dual-number operations: d(a x b) = -[b]x da + [a]x db;
// d(R(q exp(t/2)) u)/dt = -R [u]x; d(R(q exp(t/2))^T w)/dt = [R^T w]x.
template <class C>
void evaluate_derivatives(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                          const double* s, const double* gamma, const double coef[3], ContactEval& out) {
  constexpr int K = C::count;
  constexpr bool world_b = !C::with_b;
  using G = Dual<double, C::geometry>;
  const int n = contact_half_size(c.model);
  const TangentPose<double> pose_a = tangent_pose<double>(a.x, a.q, -1);
  const TangentPose<double> pose_b =
      world_b ? tangent_pose<double>(kOrigin, kIdentity, -1) : tangent_pose<double>(b.x, b.q, -1);
  const Vec3<double> offset{{c.offset[0], c.offset[1], c.offset[2]}};

  // geometry over its seeds; its values are those of the residual path. The
  // half-space's is affine in c with a constant frame, its Jacobian written out below.
  const Vec3<double> centre = sphere_centre(pose_a, offset);
  const bool moving_frame = c.kind != CollisionKind::Halfspace;
  PairState<double> st;
  Geometry<G> gg;
  if (moving_frame) {
    Vec3<G> centre_g;
    for (int i = 0; i < 3; ++i) centre_g[i] = G::variable(centre[i], i);
    // a's rotation seeded (its position is unused: it enters through the centre)
    TangentPose<G> pose_ag = tangent_pose<G>(a.x, a.q, -1);
    if (rotates_primitive(c.kind)) {
      pose_ag.seeded = true;
      for (int i = 0; i < 3; ++i) pose_ag.t[i] = G::variable(0.0, C::geometry_ta + i);
    }
    const TangentPose<G> pose_bg =
        world_b ? tangent_pose<G>(kOrigin, kIdentity, -1) : tangent_pose<G>(b.x, b.q, C::geometry_b);
    collide(c.kind, centre_g, G(c.radius), pose_ag, c.shape_a, pose_bg, body_b_shape(c), gg);
    st.g.distance = gg.distance.v;
    st.g.normal = values(gg.normal);
    st.g.tangent[0] = values(gg.tangent[0]);
    st.g.tangent[1] = values(gg.tangent[1]);
    st.g.point_a = values(gg.point_a);
    st.g.point_b = values(gg.point_b);
  } else {
    collide(c.kind, centre, c.radius, pose_a, c.shape_a, pose_b, body_b_shape(c), st.g);
    // distance = n.(c - point) - r, point_a = c - r n, point_b = c - n (n.(c - point)):
    // d/dc = n, I and I - n n^T (the dual numbers' products exactly)
    const Vec3<double>& u = st.g.normal;
    gg.distance = G(st.g.distance);
    for (int i = 0; i < 3; ++i) {
      gg.distance.d[i] = u[i];
      gg.point_a[i] = G(st.g.point_a[i]);
      gg.point_a[i].d[i] = 1.0;
      gg.point_b[i] = G(st.g.point_b[i]);
      for (int j = 0; j < 3; ++j) gg.point_b[i].d[j] = (i == j ? 1.0 : 0.0) - u[i] * u[j];
    }
  }
  pair_kinematics(c.model, pose_a, pose_b, world_b, a, b, coef, st);
  write_values(c, st, world_b, s, gamma, out);
  model_local_jacobians(c, n, s, gamma, out);

  // geometry Jacobians chained to the K columns
  const Mat3<double> centre_ta = matmul(pose_a.R, -skew(offset));  // dc/dt_a = -R_a [offset]x
  auto chain = [&](const G& x, double* row) {
    for (int j = 0; j < 3; ++j) {
      row[C::xa + j] = x.d[j];
      row[C::ta + j] = x.d[0] * centre_ta[0][j] + x.d[1] * centre_ta[1][j] + x.d[2] * centre_ta[2][j] +
                       x.d[C::geometry_ta + j];
    }
    if constexpr (C::with_b) {
      for (int j = 0; j < 3; ++j) {
        row[C::xb + j] = x.d[C::geometry_b + j];
        row[C::tb + j] = x.d[C::geometry_b + 3 + j];
      }
    }
    if constexpr (C::parameters) {
      for (int j = 0; j < 3; ++j)
        row[C::offset + j] = x.d[0] * pose_a.R[0][j] + x.d[1] * pose_a.R[1][j] + x.d[2] * pose_a.R[2][j];
      row[C::radius] = 0.0;
    }
  };
  auto chain3 = [&](const Vec3<G>& v, Jac3<K>& j) {
    for (int i = 0; i < 3; ++i) chain(v[i], j.m[i]);
  };
  double d_row[K];
  Jac3<K> j_pa, j_pb;
  chain(gg.distance, d_row);
  chain3(gg.point_a, j_pa);
  chain3(gg.point_b, j_pb);
  if constexpr (C::parameters) {
    d_row[C::radius] = -1.0;
    for (int i = 0; i < 3; ++i) j_pa.m[i][C::radius] = -st.g.normal[i];
  }
  Jac3<K> j_n, j_t[2];  // zero for the half-space
  if (moving_frame) {
    chain3(gg.normal, j_n);
    chain3(gg.tangent[0], j_t[0]);
    chain3(gg.tangent[1], j_t[1]);
  }

  // contact points relative to the bodies: r = p - x
  Jac3<K> j_ra = j_pa, j_rb = j_pb;
  for (int i = 0; i < 3; ++i) j_ra.m[i][C::xa + i] -= 1.0;
  if constexpr (C::with_b) {
    for (int i = 0; i < 3; ++i) j_rb.m[i][C::xb + i] -= 1.0;
  }

  // dv = (R_a w_a) x ra + v_a - ((R_b w_b) x rb + v_b); d(R w)/dt = -R [w]x
  const Vec3<double> wa{{a.w[0], a.w[1], a.w[2]}};
  Jac3<K> j_dv = skew_mul(st.wa_world, j_ra);
  add_block(j_dv, C::ta, matmul(skew(st.ra), matmul(pose_a.R, skew(wa))));  // -[ra]x (-R_a [w_a]x)
  if constexpr (C::with_b) {
    const Vec3<double> wb{{b.w[0], b.w[1], b.w[2]}};
    axpy(-1.0, skew_mul(st.wb_world, j_rb), j_dv);
    add_block(j_dv, C::tb, matmul(-skew(st.rb), matmul(pose_b.R, skew(wb))));
  }

  // vt = T dv
  double vt_row[2][K];
  for (int k = 0; k < 2; ++k) {
    vec_mul(st.g.tangent[k], j_dv, vt_row[k]);
    if (moving_frame) {
      double extra[K];
      vec_mul(st.dv, j_t[k], extra);
      for (int m = 0; m < K; ++m) vt_row[k][m] += extra[m];
    }
  }

  // force f = n gn + T^T bt and torques R_a^T (ra x f), R_b^T (rb x -f) (body frames)
  Jac3<K> j_f;
  set_zero(j_f);
  if (moving_frame) {
    axpy(coef[0], j_n, j_f);
    if (c.model != ContactModel::Impact) {
      axpy(coef[1], j_t[0], j_f);
      axpy(coef[2], j_t[1], j_f);
    }
  }
  Jac3<K> lever = skew_mul(-st.force, j_ra);  // d(ra x f) = -[f]x dra + [ra]x df
  if (moving_frame) axpy(1.0, skew_mul(st.ra, j_f), lever);
  Jac3<K> j_tau_a = tmul(pose_a.R, lever);
  add_block(j_tau_a, C::ta, skew(st.torque_a));
  Jac3<K> j_tau_b;
  if constexpr (C::with_b) {
    Jac3<K> lever_b = skew_mul(st.force, j_rb);  // d(rb x -f) = [f]x drb - [rb]x df
    if (moving_frame) axpy(-1.0, skew_mul(st.rb, j_f), lever_b);
    j_tau_b = tmul(pose_b.R, lever_b);
    add_block(j_tau_b, C::tb, skew(st.torque_b));
  }

  // constraint rows and wrench wrt z3 (and the parameters)
  double d_jac[12], vt_jac[2][12], d_par[4] = {0.0, 0.0, 0.0, 0.0}, vt_par[2][4];
  split_row<C>(d_row, d_jac, d_par);
  split_row<C>(vt_row[0], vt_jac[0], vt_par[0]);
  split_row<C>(vt_row[1], vt_jac[1], vt_par[1]);
  constraint_rows_jacobian<12>(c.model, d_jac, vt_jac, out.cons_z3);
  if constexpr (C::parameters) constraint_rows_jacobian<4>(c.model, d_par, vt_par, out.cons_parameters);
  for (int i = 0; i < 3; ++i) {
    split_row<C>(j_f.m[i], out.wrench_z3[i], out.wrench_parameters[i]);
    split_row<C>(j_tau_a.m[i], out.wrench_z3[3 + i], out.wrench_parameters[3 + i]);
    if constexpr (C::with_b) {
      for (int k = 0; k < 12; ++k) out.wrench_z3[6 + i][k] = -out.wrench_z3[i][k];
      if constexpr (C::parameters) {
        for (int k = 0; k < 4; ++k) out.wrench_parameters[6 + i][k] = -out.wrench_parameters[i][k];
      }
      split_row<C>(j_tau_b.m[i], out.wrench_z3[9 + i], out.wrench_parameters[9 + i]);
    } else {
      for (int k = 0; k < 12; ++k) out.wrench_z3[6 + i][k] = out.wrench_z3[9 + i][k] = 0.0;
      if constexpr (C::parameters) {
        for (int k = 0; k < 4; ++k) out.wrench_parameters[6 + i][k] = out.wrench_parameters[9 + i][k] = 0.0;
      }
    }
  }
  finish_jacobians<C>(c, h, a, b, st.ra, st.rb, st.g.normal, st.g.tangent, pose_a.R, pose_b.R, out);
}

// The reference derivative path: dual numbers over all K columns through every
// operation (geometry, kinematics, wrench), no hand-chained step.
template <class C>
void evaluate_reference(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                        const double* s, const double* gamma, const double coef[3], ContactEval& out) {
  using D = Dual<double, C::count>;
  constexpr bool world_b = !C::with_b;
  const int n = contact_half_size(c.model);
  const TangentPose<D> pose_a = tangent_pose<D>(a.x, a.q, C::xa);
  const TangentPose<D> pose_b = world_b ? tangent_pose<D>(kOrigin, kIdentity, -1) : tangent_pose<D>(b.x, b.q, C::xb);

  PairState<D> st;
  if constexpr (C::parameters) {
    Vec3<D> offset;
    for (int i = 0; i < 3; ++i) offset[i] = D::variable(c.offset[i], C::offset + i);
    pair_geometry(c, pose_a, pose_b, offset, D::variable(c.radius, C::radius), st.g);
  } else {
    const Vec3<double> offset{{c.offset[0], c.offset[1], c.offset[2]}};
    pair_geometry(c, pose_a, pose_b, offset, D(c.radius), st.g);
  }
  pair_kinematics(c.model, pose_a, pose_b, world_b, a, b, coef, st);
  write_values(c, st, world_b, s, gamma, out);
  model_local_jacobians(c, n, s, gamma, out);

  double d_jac[12], vt_jac[2][12], d_par[4] = {0.0, 0.0, 0.0, 0.0}, vt_par[2][4];
  split_row<C>(st.g.distance.d, d_jac, d_par);
  split_row<C>(st.vt[0].d, vt_jac[0], vt_par[0]);
  split_row<C>(st.vt[1].d, vt_jac[1], vt_par[1]);
  constraint_rows_jacobian<12>(c.model, d_jac, vt_jac, out.cons_z3);
  if constexpr (C::parameters) constraint_rows_jacobian<4>(c.model, d_par, vt_par, out.cons_parameters);
  D wrench[12];
  pair_wrench(st, world_b, wrench);
  for (int r = 0; r < 12; ++r) split_row<C>(wrench[r].d, out.wrench_z3[r], out.wrench_parameters[r]);

  const Vec3<double> tangent[2] = {values(st.g.tangent[0]), values(st.g.tangent[1])};
  finish_jacobians<C>(c, h, a, b, values(st.ra), values(st.rb), values(st.g.normal), tangent, pose_a.R, pose_b.R,
                      out);
}

// Dispatch on the output level and on whether b is a body (compile-time column sets).
template <template <class> class Path>
void dispatch(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
              const double* s, const double* gamma, ContactOutput output, ContactEval& out) {
  const bool world_b = c.other < 0;
  out.n = contact_half_size(c.model);
  double coef[3];
  force_coefficients(c.model, gamma, coef);
  out.normal_impulse = coef[0];
  out.friction_impulse[0] = coef[1];
  out.friction_impulse[1] = coef[2];
  switch (output) {
    case ContactOutput::Residual:
      evaluate_residual(c, a, b, world_b, s, gamma, coef, out);
      break;
    case ContactOutput::Jacobians:
      if (world_b) {
        Path<Columns<false, false>>::run(c, h, a, b, s, gamma, coef, out);
      } else {
        Path<Columns<true, false>>::run(c, h, a, b, s, gamma, coef, out);
      }
      break;
    case ContactOutput::Parameters:
      if (world_b) {
        Path<Columns<false, true>>::run(c, h, a, b, s, gamma, coef, out);
      } else {
        Path<Columns<true, true>>::run(c, h, a, b, s, gamma, coef, out);
      }
      break;
  }
}

template <class C>
struct HandChained {
  static void run(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                  const double* s, const double* gamma, const double coef[3], ContactEval& out) {
    evaluate_derivatives<C>(c, h, a, b, s, gamma, coef, out);
  }
};
template <class C>
struct AllDual {
  static void run(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                  const double* s, const double* gamma, const double coef[3], ContactEval& out) {
    evaluate_reference<C>(c, h, a, b, s, gamma, coef, out);
  }
};

}  // namespace

void evaluate_contact(const ContactParams& c, double h, const ContactBodyState& a, const ContactBodyState& b,
                      const double* s, const double* gamma, ContactOutput output, ContactEval& out) {
  dispatch<HandChained>(c, h, a, b, s, gamma, output, out);
}

void evaluate_contact_reference(const ContactParams& c, double h, const ContactBodyState& a,
                                const ContactBodyState& b, const double* s, const double* gamma,
                                ContactOutput output, ContactEval& out) {
  dispatch<AllDual>(c, h, a, b, s, gamma, output, out);
}

void contact_starting_point(ContactModel model, double* s, double* gamma) {
  const int n = contact_half_size(model);
  for (int i = 0; i < n; ++i) s[i] = gamma[i] = kContactConeStart;
  if (model == ContactModel::Nonlinear) s[2] = s[3] = gamma[2] = gamma[3] = 0.0;  // SOC (1.5, 0, 0)
}

// ------------------------------------------------------------- geometry front end
namespace {

template <int N>
void geometry_with_columns(CollisionKind kind, const double xa[3], const double qa[4], const double offset_a[3],
                           double radius_a, const double* shape_a, const double xb[3], const double qb[4],
                           const double* shape, GeometryJacobian& out) {
  using D = Dual<double, N>;
  const TangentPose<D> pose_a = tangent_pose<D>(xa, qa, kColumnsA);
  const TangentPose<D> pose_b = tangent_pose<D>(xb, qb, kColumnsB);
  Geometry<D> g;
  if constexpr (N == kPairParameterColumns) {
    Vec3<D> offset;
    for (int i = 0; i < 3; ++i) offset[i] = D::variable(offset_a[i], kColumnsOffset + i);
    collide(kind, sphere_centre(pose_a, offset), D::variable(radius_a, kColumnRadius), pose_a, shape_a, pose_b, shape,
            g);
  } else {
    const Vec3<double> offset{{offset_a[0], offset_a[1], offset_a[2]}};
    collide(kind, sphere_centre(pose_a, offset), D(radius_a), pose_a, shape_a, pose_b, shape, g);
  }
  out.columns = N;
  auto put = [](const D& x, double& v, double* jac) {
    v = x.v;
    for (int k = 0; k < kPairParameterColumns; ++k) jac[k] = k < N ? x.d[k] : 0.0;
  };
  put(g.distance, out.distance, out.distance_jac);
  for (int i = 0; i < 3; ++i) {
    put(g.normal[i], out.normal[i], out.normal_jac[i]);
    put(g.tangent[0][i], out.tangent[0][i], out.tangent_jac[0][i]);
    put(g.tangent[1][i], out.tangent[1][i], out.tangent_jac[1][i]);
    put(g.point_a[i], out.point_a[i], out.point_a_jac[i]);
    put(g.point_b[i], out.point_b[i], out.point_b_jac[i]);
  }
}

}  // namespace

void contact_geometry(CollisionKind kind, const double xa[3], const double qa[4], const double offset_a[3],
                      double radius_a, const double* shape_a, const double xb[3], const double qb[4],
                      const double* shape, bool parameters, GeometryJacobian& out) {
  if (parameters) {
    geometry_with_columns<kPairParameterColumns>(kind, xa, qa, offset_a, radius_a, shape_a, xb, qb, shape, out);
  } else {
    geometry_with_columns<kPairTangents>(kind, xa, qa, offset_a, radius_a, shape_a, xb, qb, shape, out);
  }
}

}  // namespace dojo
