// Forward-mode dual numbers: a value with its first derivatives along N directions.
//
// Dual<T, N> carries v (a T) and d[N] (d v / d seed_k). The physics code is written
// once as templates over the scalar type (Pinocchio's discipline): instantiated with
// double it gives values; with Dual<double, N> it gives values and exact first
// derivatives; Dual<Dual<double, M>, N> nests for second derivatives. Branches in
// templated code test value(x), the underlying double, so every instantiation takes
// the same branch.
#pragma once

#include <cmath>
#include <type_traits>

namespace dojo {

template <class T, int N>
struct Dual {
  T v;
  T d[N];

  Dual() : v(0.0) {
    for (int k = 0; k < N; ++k) d[k] = T(0.0);
  }
  Dual(double c) : v(c) {  // NOLINT: implicit, constants mix freely with duals
    for (int k = 0; k < N; ++k) d[k] = T(0.0);
  }
  template <class U = T, class = typename std::enable_if<!std::is_same<U, double>::value>::type>
  Dual(const T& c) : v(c) {  // NOLINT: a scalar of the inner type is a constant too
    for (int k = 0; k < N; ++k) d[k] = T(0.0);
  }

  // A seeded variable: value c, derivative 1 along direction k.
  static Dual variable(const T& c, int k) {
    Dual out(0.0);
    out.v = c;
    out.d[k] = T(1.0);
    return out;
  }

  Dual& operator+=(const Dual& o) {
    v += o.v;
    for (int k = 0; k < N; ++k) d[k] += o.d[k];
    return *this;
  }
  Dual& operator-=(const Dual& o) {
    v -= o.v;
    for (int k = 0; k < N; ++k) d[k] -= o.d[k];
    return *this;
  }
  Dual& operator*=(const Dual& o) {
    for (int k = 0; k < N; ++k) d[k] = d[k] * o.v + v * o.d[k];
    v *= o.v;
    return *this;
  }
  Dual& operator/=(const Dual& o) {
    const T inv = T(1.0) / o.v;
    v *= inv;
    for (int k = 0; k < N; ++k) d[k] = (d[k] - v * o.d[k]) * inv;
    return *this;
  }
  Dual& operator*=(double c) {
    v *= c;
    for (int k = 0; k < N; ++k) d[k] *= c;
    return *this;
  }
};

// --- the underlying double of any scalar (for branches and tolerances)
inline double value(double x) { return x; }
template <class T, int N>
inline double value(const Dual<T, N>& x) {
  return value(x.v);
}

// --- arithmetic
template <class T, int N>
inline Dual<T, N> operator-(const Dual<T, N>& a) {
  Dual<T, N> out(a);
  out.v = -a.v;
  for (int k = 0; k < N; ++k) out.d[k] = -a.d[k];
  return out;
}
template <class T, int N>
inline Dual<T, N> operator+(Dual<T, N> a, const Dual<T, N>& b) {
  return a += b;
}
template <class T, int N>
inline Dual<T, N> operator-(Dual<T, N> a, const Dual<T, N>& b) {
  return a -= b;
}
template <class T, int N>
inline Dual<T, N> operator*(Dual<T, N> a, const Dual<T, N>& b) {
  return a *= b;
}
template <class T, int N>
inline Dual<T, N> operator/(Dual<T, N> a, const Dual<T, N>& b) {
  return a /= b;
}
template <class T, int N>
inline Dual<T, N> operator+(Dual<T, N> a, double c) {
  a.v += c;
  return a;
}
template <class T, int N>
inline Dual<T, N> operator+(double c, Dual<T, N> a) {
  a.v += c;
  return a;
}
template <class T, int N>
inline Dual<T, N> operator-(Dual<T, N> a, double c) {
  a.v -= c;
  return a;
}
template <class T, int N>
inline Dual<T, N> operator-(double c, const Dual<T, N>& a) {
  return -a + c;
}
template <class T, int N>
inline Dual<T, N> operator*(Dual<T, N> a, double c) {
  return a *= c;
}
template <class T, int N>
inline Dual<T, N> operator*(double c, Dual<T, N> a) {
  return a *= c;
}
template <class T, int N>
inline Dual<T, N> operator/(Dual<T, N> a, double c) {
  return a *= (1.0 / c);
}
template <class T, int N>
inline Dual<T, N> operator/(double c, const Dual<T, N>& a) {
  return Dual<T, N>(c) / a;
}

// --- comparisons by value (branches)
template <class T, int N>
inline bool operator<(const Dual<T, N>& a, const Dual<T, N>& b) {
  return value(a) < value(b);
}
template <class T, int N>
inline bool operator>(const Dual<T, N>& a, const Dual<T, N>& b) {
  return value(a) > value(b);
}

// --- elementary functions (chain rule: f(v) + f'(v) dv)
template <class T, int N, class F>
inline Dual<T, N> apply_chain(const Dual<T, N>& a, const T& fv, const T& dfv) {
  Dual<T, N> out(0.0);
  out.v = fv;
  for (int k = 0; k < N; ++k) out.d[k] = dfv * a.d[k];
  return out;
}

using std::atan;
using std::atan2;
using std::cos;
using std::sin;
using std::sqrt;
using std::tan;

template <class T, int N>
inline Dual<T, N> sqrt(const Dual<T, N>& a) {
  const T s = sqrt(a.v);
  return apply_chain<T, N, void>(a, s, T(0.5) / s);
}
template <class T, int N>
inline Dual<T, N> sin(const Dual<T, N>& a) {
  return apply_chain<T, N, void>(a, sin(a.v), cos(a.v));
}
template <class T, int N>
inline Dual<T, N> cos(const Dual<T, N>& a) {
  return apply_chain<T, N, void>(a, cos(a.v), -sin(a.v));
}
template <class T, int N>
inline Dual<T, N> tan(const Dual<T, N>& a) {
  const T t = tan(a.v);
  return apply_chain<T, N, void>(a, t, T(1.0) + t * t);
}
template <class T, int N>
inline Dual<T, N> atan(const Dual<T, N>& a) {
  return apply_chain<T, N, void>(a, atan(a.v), T(1.0) / (T(1.0) + a.v * a.v));
}
// atan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
template <class T, int N>
inline Dual<T, N> atan2(const Dual<T, N>& y, const Dual<T, N>& x) {
  Dual<T, N> out(0.0);
  out.v = atan2(y.v, x.v);
  const T inv = T(1.0) / (x.v * x.v + y.v * y.v);
  for (int k = 0; k < N; ++k) out.d[k] = (x.v * y.d[k] - y.v * x.d[k]) * inv;
  return out;
}

}  // namespace dojo
