// PinnZoo's second-order products (kinematics_hvp, kinematics_force_hvp, kinematics_force_hTvp,
// inverse_dynamics_hvp, inverse_dynamics_hTvp): exact, by pushing forward-mode dual numbers
// (math/dual.h) through the point kinematics and RNEA written once as templates over the
// scalar (rnea<T> below: the equations of rnea.cpp; its second derivatives the same way).
//
// point_kinematics<T> is tree_forward_kinematics (tree.cpp) reduced to what the points need:
// the successor frames' placements R_i, p_i, the motion subspaces S_i(q) (a swing's
// J_r(phi) [b1 b2], translations measured in the predecessor frame R_J^T T^T) and the world
// Jacobian columns J_i = X_i S_i, then the points' positions and their tangent Jacobian
// J_v (3 np, nv) (a column: the linear part of J_j's motion at the point, v + w x pos). It
// reads the raw configuration (a quaternion as q/|q|, in T arithmetic), so the dual parts
// are derivatives with respect to the raw q, PinnZoo's convention (docs/minimal.md):
// with Dual<double, 1> seeded along u, pos.d = (d pos/dq) u and jac.d = (dJ_v/dq) u; with
// Dual<Dual<double, 1>, 1> seeded along u (inner) and e_j (outer), pos.d.d = d2 pos/dq_j du,
// the column j of the directional derivative of a Jacobian along u (no finite differences).
// The double path of the first-order functions (tree.cpp) stays the one used elsewhere; the
// tests check these against central differences of those.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "math/dual.h"
#include "math/spatial.h"
#include "tree.h"

namespace dojo {

namespace {

using D1 = Dual<double, 1>;
using D2 = Dual<D1, 1>;

// Placements R_i, p_i (world), motion subspaces S_i(q) (successor frame, column-major
// 6 x nv_i) and world Jacobian columns J_i = X_i S_i at the raw configuration q (nq,), as
// tree_forward_kinematics (tree.cpp) computes them; phi: a swing's rotation vector.
template <class T>
struct Frames {
  std::vector<Mat3<T>> R;
  std::vector<Vec3<T>> p, phi;
  std::vector<T> S, J;  // (36 n) each
};

template <class T>
void frames(const TreeModel& m, const T* q, Frames<T>& F) {
  const int n = m.n;
  F.R.assign(n, identity3<T>());
  F.p.assign(n, Vec3<T>{{T(0.0), T(0.0), T(0.0)}});
  F.phi.assign(n, Vec3<T>{{T(0.0), T(0.0), T(0.0)}});
  F.S.assign(static_cast<size_t>(36 * n), T(0.0));
  F.J.assign(static_cast<size_t>(36 * n), T(0.0));
  for (int i = 0; i < n; ++i) {
    const int nt = m.n_trans[i], iq = m.idx_q[i], rk = m.rot_kind[i];
    // joint rotation R_J
    Mat3<T> RJ = identity3<T>();
    if (rk == 1) {
      RJ = rotation(quaternion_from_rotation_vector(q[iq + nt] * load3<T>(&m.axis[3 * i])));
    } else if (rk == 3) {
      const double* b = &m.swing_axes[6 * i];
      for (int k = 0; k < 3; ++k) F.phi[i][k] = b[k] * q[iq + nt] + b[3 + k] * q[iq + nt + 1];
      RJ = rotation(quaternion_from_rotation_vector(F.phi[i]));
    } else if (rk == 2) {
      const T* qq = q + iq + nt;
      const T norm = sqrt(qq[0] * qq[0] + qq[1] * qq[1] + qq[2] * qq[2] + qq[3] * qq[3]);
      if (!(value(norm) > 0.0)) throw std::invalid_argument("a quaternion of the configuration is zero or not finite");
      RJ = rotation(Quat<T>{{qq[0] / norm, qq[1] / norm, qq[2] / norm, qq[3] / norm}});
    }
    // joint translation p_J = T^T q_t (predecessor frame)
    Vec3<T> pJ{{T(0.0), T(0.0), T(0.0)}};
    for (int c = 0; c < nt; ++c)
      for (int k = 0; k < 3; ++k) pJ[k] += m.trans_dirs[9 * i + 3 * c + k] * q[iq + c];
    // predecessor frame in the world: parent placement times X_T
    const int lam = m.parent[i];
    Mat3<T> Rpre = load33<T>(&m.placement_R[9 * i]);
    Vec3<T> ppre = load3<T>(&m.placement_p[3 * i]);
    if (lam >= 0) {
      Rpre = matmul(F.R[lam], Rpre);
      ppre = F.p[lam] + matvec(F.R[lam], ppre);
    }
    F.R[i] = matmul(Rpre, RJ);
    F.p[i] = ppre + matvec(Rpre, pJ);
    // motion subspace: translation columns R_J^T T^T when measured in the predecessor
    // frame, a swing's rotation columns J_r(phi) [b1 b2]
    T* S = &F.S[36 * i];
    for (int k = 0; k < 36; ++k) S[k] = T(m.S[36 * i + k]);
    if (m.variable[i]) {
      if (m.trans_pred[i])
        for (int c = 0; c < nt; ++c) {
          const Vec3<T> col = tmatvec(RJ, load3<T>(&m.trans_dirs[9 * i + 3 * c]));
          for (int k = 0; k < 3; ++k) S[6 * c + k] = col[k];
        }
      if (rk == 3) {
        const double* b = &m.swing_axes[6 * i];
        const Mat3<T> Jr = right_jacobian(F.phi[i]);
        for (int c = 0; c < 2; ++c) {
          const Vec3<T> col = matvec(Jr, load3<T>(b + 3 * c));
          for (int k = 0; k < 3; ++k) S[6 * (nt + c) + 3 + k] = col[k];
        }
      }
    }
    // world Jacobian columns: w = R s_w, v = R s_v + p x w
    for (int col = 0; col < m.nv_i[i]; ++col) {
      const Vec3<T> w = matvec(F.R[i], Vec3<T>{{S[6 * col + 3], S[6 * col + 4], S[6 * col + 5]}});
      const Vec3<T> v = matvec(F.R[i], Vec3<T>{{S[6 * col], S[6 * col + 1], S[6 * col + 2]}}) + cross(F.p[i], w);
      for (int k = 0; k < 3; ++k) {
        F.J[36 * i + 6 * col + k] = v[k];
        F.J[36 * i + 6 * col + 3 + k] = w[k];
      }
    }
  }
}

// The point kinematics at the raw configuration q (nq,): positions pos (np, 3) and, unless
// jac is null, the tangent Jacobian jac (3 np, nv) row-major (a column: the linear part of
// J_j's motion at the point, v + w x pos).
template <class T>
void point_kinematics(const TreeModel& m, const T* q, T* pos, T* jac) {
  const int nv = m.nv;
  Frames<T> F;
  frames(m, q, F);
  if (jac)
    for (int k = 0; k < 3 * m.np * nv; ++k) jac[k] = T(0.0);
  for (int k = 0; k < m.np; ++k) {
    const int i = m.point_joint[k];
    const Vec3<T> x = F.p[i] + matvec(F.R[i], load3<T>(&m.point_offset[3 * k]));
    for (int r = 0; r < 3; ++r) pos[3 * k + r] = x[r];
    if (!jac) continue;
    for (int j = i; j >= 0; j = m.parent[j])
      for (int s = 0; s < m.nv_i[j]; ++s) {
        const T* c = &F.J[36 * j + 6 * s];
        const Vec3<T> col = Vec3<T>{{c[0], c[1], c[2]}} + cross(Vec3<T>{{c[3], c[4], c[5]}}, x);
        for (int r = 0; r < 3; ++r) jac[(3 * k + r) * nv + m.idx_v[j] + s] = col[r];
      }
  }
}

// A spatial vector [linear; angular] at the world origin (tree.h).
template <class T>
struct Sv {
  Vec3<T> l, a;
};
template <class T>
Sv<T> operator+(const Sv<T>& x, const Sv<T>& y) {
  return Sv<T>{x.l + y.l, x.a + y.a};
}
template <class T>
Sv<T> motion_cross(const Sv<T>& x, const Sv<T>& y) {  // [w1 x v2 + v1 x w2; w1 x w2]
  return Sv<T>{cross(x.a, y.l) + cross(x.l, y.a), cross(x.a, y.a)};
}
template <class T>
Sv<T> force_cross(const Sv<T>& x, const Sv<T>& f) {  // [w x f; w x n + v x f]
  return Sv<T>{cross(x.a, f.l), cross(x.a, f.a) + cross(x.l, f.l)};
}
template <class T>
Sv<T> column(const std::vector<T>& J, int i, int col) {
  const T* c = &J[36 * i + 6 * col];
  return Sv<T>{Vec3<T>{{c[0], c[1], c[2]}}, Vec3<T>{{c[3], c[4], c[5]}}};
}

// The bias X_i Sdot_i v_i of a variable motion subspace (tree_joint_bias, tree.cpp), in the
// world at the origin: translations in the predecessor frame give -w x u (successor frame),
// a swing Adot v_r, A = J_r(phi) [b1 b2] differentiated along q_r' = v_r by one more dual
// level (exact at any nesting of T).
template <class T>
Sv<T> joint_bias(const TreeModel& m, const Frames<T>& F, int i, const T* v) {
  const Vec3<T> zero{{T(0.0), T(0.0), T(0.0)}};
  if (!m.variable[i]) return Sv<T>{zero, zero};
  const int nt = m.n_trans[i], iv = m.idx_v[i];
  Vec3<T> u = zero, w = zero, bl = zero, ba = zero;
  for (int c = 0; c < m.nv_i[i]; ++c)
    for (int k = 0; k < 3; ++k) {
      u[k] += F.S[36 * i + 6 * c + k] * v[iv + c];
      w[k] += F.S[36 * i + 6 * c + 3 + k] * v[iv + c];
    }
  if (m.trans_pred[i]) bl = -cross(w, u);
  if (m.rot_kind[i] == 3) {
    using E = Dual<T, 1>;
    const double* b = &m.swing_axes[6 * i];
    Vec3<E> phi;
    for (int k = 0; k < 3; ++k) {
      phi[k] = E(F.phi[i][k]);
      phi[k].d[0] = b[k] * v[iv + nt] + b[3 + k] * v[iv + nt + 1];
    }
    const Mat3<E> Jr = right_jacobian(phi);
    for (int c = 0; c < 2; ++c) {
      const Vec3<E> col = matvec(Jr, load3<E>(b + 3 * c));
      for (int k = 0; k < 3; ++k) ba[k] += col[k].d[0] * v[iv + nt + c];
    }
  }
  const Vec3<T> wa = matvec(F.R[i], ba);
  return Sv<T>{matvec(F.R[i], bl) + cross(F.p[i], wa), wa};
}

// tau (nv,) = M(q) a + C(q, v) by RNEA in the world frame (rnea.cpp, the same equations) at
// the raw configuration q: v_i = v_lambda + J_i v_i, a_i = a_lambda + J_i a_i + v_i x J_i v_i
// + X_i Sdot_i v_i (a_0 = -g), f_i = Y_i a_i + v_i x* Y_i v_i, tau_i = J_i^T F_i (+ the rotor
// inertia), Y_i v = [m (v_l + w x c); c x m (v_l + w x c) + I_c w] with c and I_c the body's
// centre and rotational inertia in the world.
template <class T>
void rnea(const TreeModel& m, const T* q, const T* v, const T* a, T* tau) {
  const int n = m.n;
  Frames<T> F;
  frames(m, q, F);
  const Vec3<T> zero{{T(0.0), T(0.0), T(0.0)}};
  std::vector<Sv<T>> ov(n), oa(n), of(n);
  for (int i = 0; i < n; ++i) {
    const int lam = m.parent[i], iv = m.idx_v[i];
    Sv<T> vj{zero, zero}, aj{zero, zero};
    for (int col = 0; col < m.nv_i[i]; ++col) {
      const Sv<T> c = column(F.J, i, col);
      vj = vj + Sv<T>{v[iv + col] * c.l, v[iv + col] * c.a};
      aj = aj + Sv<T>{a[iv + col] * c.l, a[iv + col] * c.a};
    }
    const Sv<T> a0{Vec3<T>{{T(-m.gravity[0]), T(-m.gravity[1]), T(-m.gravity[2])}}, zero};
    ov[i] = (lam < 0 ? Sv<T>{zero, zero} : ov[lam]) + vj;
    oa[i] = (lam < 0 ? a0 : oa[lam]) + aj + motion_cross(ov[i], vj) + joint_bias(m, F, i, v);
    // world inertia: centre c = R c_local + p, I_c = R I_local R^T
    const Vec3<T> c = F.p[i] + matvec(F.R[i], load3<T>(&m.body_com[3 * i]));
    const Mat3<double> Il = load33<double>(&m.body_inertia[9 * i]);
    const double mass = m.body_mass[i];
    auto Y = [&](const Sv<T>& s) {
      const Vec3<T> lin = mass * (s.l + cross(s.a, c));
      const Vec3<T> ang = cross(c, lin) + matvec(F.R[i], matvec(Il, tmatvec(F.R[i], s.a)));
      return Sv<T>{lin, ang};
    };
    of[i] = Y(oa[i]) + force_cross(ov[i], Y(ov[i]));
  }
  for (int i = n - 1; i >= 0; --i) {
    for (int col = 0; col < m.nv_i[i]; ++col) {
      const int k = m.idx_v[i] + col;
      const Sv<T> c = column(F.J, i, col);
      tau[k] = dot(c.l, of[i].l) + dot(c.a, of[i].a) + m.armature[k] * a[k];
    }
    const int lam = m.parent[i];
    if (lam >= 0) of[lam] = of[lam] + of[i];
  }
}

// q as D2: value q, inner direction u (may be null: zero), outer direction e_j (j < 0: none)
std::vector<D2> seed2(const TreeModel& m, const double* q, const double* u, int j) {
  std::vector<D2> out(static_cast<size_t>(m.nq));
  for (int k = 0; k < m.nq; ++k) {
    out[k] = D2(0.0);
    out[k].v.v = q[k];
    if (u) out[k].v.d[0] = u[k];
    if (k == j) out[k].d[0].v = 1.0;
  }
  return out;
}

}  // namespace

void tree_kinematics_hvp(const TreeModel& m, const double* q, const double* dq, double* out) {
  const int nq = m.nq, rows = 3 * m.np;
  std::vector<D2> pos(static_cast<size_t>(rows));
  for (int j = 0; j < nq; ++j) {
    const std::vector<D2> qd = seed2(m, q, dq, j);
    point_kinematics(m, qd.data(), pos.data(), static_cast<D2*>(nullptr));
    for (int r = 0; r < rows; ++r) out[r * nq + j] = pos[r].d[0].d[0];
  }
}

void tree_kinematics_force_hvp(const TreeModel& m, const double* q, const double* lambda, const double* dq,
                               double* out_q, double* out_lambda) {
  const int nq = m.nq, nv = m.nv, rows = 3 * m.np;
  std::vector<D2> pos(static_cast<size_t>(rows)), jac(static_cast<size_t>(rows * nv));
  for (int j = 0; j < nq; ++j) {
    const std::vector<D2> qd = seed2(m, q, dq, j);
    point_kinematics(m, qd.data(), pos.data(), jac.data());
    // d/dq_j of D_dq (J_v^T lambda) (the outer part of the inner derivative)
    for (int c = 0; c < nv; ++c) {
      double s = 0.0;
      for (int r = 0; r < rows; ++r) s += jac[r * nv + c].d[0].d[0] * lambda[r];
      out_q[c * nq + j] = s;
    }
    // D_dq J_v (the inner derivative; the same at every j): its transpose is d/dlambda
    if (j == 0)
      for (int c = 0; c < nv; ++c)
        for (int r = 0; r < rows; ++r) out_lambda[c * rows + r] = jac[r * nv + c].v.d[0];
  }
  if (nq == 0)
    for (int k = 0; k < nv * rows; ++k) out_lambda[k] = 0.0;
}

void tree_kinematics_force_hTvp(const TreeModel& m, const double* q, const double* lambda, const double* mult,
                                double* out_q, double* out_lambda) {
  const int nq = m.nq, nv = m.nv, rows = 3 * m.np;
  std::vector<D2> pos(static_cast<size_t>(rows)), jac(static_cast<size_t>(rows * nv));
  // s(q) = lambda . J_v(q) mult: its Hessian (symmetric, nq (nq + 1) / 2 passes) and the
  // Jacobian of J_v(q) mult, whose transpose is d/dlambda of grad s
  for (int j = 0; j < nq; ++j)
    for (int k = j; k < nq; ++k) {
      std::vector<D2> qd = seed2(m, q, nullptr, j);
      qd[k].v.d[0] = 1.0;
      point_kinematics(m, qd.data(), pos.data(), jac.data());
      double h = 0.0;
      for (int r = 0; r < rows; ++r) {
        D2 jm(0.0);
        for (int c = 0; c < nv; ++c) jm += jac[r * nv + c] * mult[c];
        h += jm.d[0].d[0] * lambda[r];
        if (j == 0) out_lambda[k * rows + r] = jm.v.d[0];
      }
      out_q[j * nq + k] = out_q[k * nq + j] = h;
    }
}

// x, vdot as D2 (x = [q; v] (nx,) then vdot (nv,)): value, inner direction u over the same
// nx + nv entries (null: zero), outer direction e_j (j < 0: none)
namespace {
std::vector<D2> seed_state(int size, const double* x, const double* vdot, int nx, const double* u, int j) {
  std::vector<D2> out(static_cast<size_t>(size));
  for (int k = 0; k < size; ++k) {
    out[k] = D2(0.0);
    out[k].v.v = k < nx ? x[k] : vdot[k - nx];
    if (u) out[k].v.d[0] = u[k];
    if (k == j) out[k].d[0].v = 1.0;
  }
  return out;
}
}  // namespace

void tree_inverse_dynamics_hvp(const TreeModel& m, const double* x, const double* vdot, const double* lam,
                               double* out_x, double* out_a) {
  const int nq = m.nq, nv = m.nv, nx = nq + nv, size = nx + nv;
  std::vector<double> u(static_cast<size_t>(size), 0.0);
  for (int k = 0; k < nx; ++k) u[k] = lam[k];
  std::vector<D2> tau(static_cast<size_t>(nv));
  for (int j = 0; j < size; ++j) {
    const std::vector<D2> s = seed_state(size, x, vdot, nx, u.data(), j);
    rnea(m, s.data(), s.data() + nq, s.data() + nx, tau.data());
    for (int r = 0; r < nv; ++r) {
      if (j < nx)
        out_x[r * nx + j] = tau[r].d[0].d[0];
      else
        out_a[r * nv + j - nx] = tau[r].d[0].d[0];
    }
  }
}

void tree_inverse_dynamics_hTvp(const TreeModel& m, const double* x, const double* vdot, const double* lam,
                                double* out_x, double* out_m) {
  const int nq = m.nq, nv = m.nv, nx = nq + nv, size = nx + nv;
  std::vector<D2> tau(static_cast<size_t>(nv));
  // the Hessian of lam . tau over x (symmetric: nx (nx + 1) / 2 passes)
  for (int j = 0; j < nx; ++j)
    for (int k = j; k < nx; ++k) {
      std::vector<D2> s = seed_state(size, x, vdot, nx, nullptr, j);
      s[k].v.d[0] = 1.0;
      rnea(m, s.data(), s.data() + nq, s.data() + nx, tau.data());
      double h = 0.0;
      for (int r = 0; r < nv; ++r) h += lam[r] * tau[r].d[0].d[0];
      out_x[j * nx + k] = out_x[k * nx + j] = h;
    }
  // d(M lam)/dx: the inner direction lam on vdot gives M lam (tau is affine in vdot)
  std::vector<double> u(static_cast<size_t>(size), 0.0);
  for (int k = 0; k < nv; ++k) u[nx + k] = lam[k];
  for (int j = 0; j < nx; ++j) {
    const std::vector<D2> s = seed_state(size, x, vdot, nx, u.data(), j);
    rnea(m, s.data(), s.data() + nq, s.data() + nx, tau.data());
    for (int r = 0; r < nv; ++r) out_m[r * nx + j] = tau[r].d[0].d[0];
  }
}

}  // namespace dojo
