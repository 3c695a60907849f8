// Reverse-mode automatic differentiation: a scalar that records its operations on a tape,
// and one backward sweep over the tape.
//
// Rev carries a value and the index of the node that made it on a Tape (or none: a
// constant). Each operation appends one node holding its parents and its partial
// derivatives at the operands' values; Tape::sweep then propagates adjoints from the last
// node to the first, x_bar[parent] += partial * x_bar[node] (Griewank and Walther,
// Evaluating Derivatives, 2nd ed., section 3.2, the incremental reverse mode). The
// gradient of one weighted sum of outputs with respect to every input costs one recorded
// evaluation and one sweep, whatever the number of inputs: where Dual<double, N> carries N
// derivatives through every operation to give an N-input Jacobian, a vector-Jacobian
// product needs only this (gradients.cpp, step_vjp: the joints' impulse maps).
//
// The physics templates take Rev as they take Dual (dual.h): constants mix freely, branches
// test value(x). A constant added to or subtracted from a recorded value needs no node (the
// partial is 1): the result keeps the operand's node with the shifted value.
#pragma once

#include <cmath>
#include <vector>

// Every operation records one node: inlined explicitly (left to its heuristics, GCC kept
// the operators as calls returning their 24-byte result through memory, and
// vector::push_back as a call per node; perf showed both in the chain's reverse pass).
#if defined(__GNUC__)
#define DOJO_REV_INLINE __attribute__((always_inline)) inline
#define DOJO_REV_NOINLINE __attribute__((noinline))
#else
#define DOJO_REV_INLINE inline
#define DOJO_REV_NOINLINE
#endif

namespace dojo {

struct Tape;

struct Rev {
  double v = 0.0;
  int node = -1;         // index on *tape; -1: a constant
  Tape* tape = nullptr;  // the tape it was recorded on (null: a constant)

  Rev() = default;
  Rev(double c) : v(c) {}  // NOLINT: implicit, constants mix freely with recorded values
  Rev(double value, int index, Tape* t) : v(value), node(index), tape(t) {}
  bool recorded() const { return node >= 0; }
};

struct Tape {
  // One operation: its parents (b -1: a unary operation; a and b -1: an input) and the
  // partial derivatives of its result with respect to them.
  struct Node {
    int a, b;
    double da, db;
  };
  std::vector<Node> nodes;      // nodes[0, size): the recording (grown, never shrunk)
  std::vector<double> adjoint;  // the sweep's x_bar, one per node
  int size = 0;

  void clear() { size = 0; }
  // One node (inline: a recording makes hundreds per joint; only the growth is a call).
  DOJO_REV_INLINE int push(int a, int b, double da, double db) {
    if (size == static_cast<int>(nodes.size())) grow();
    nodes[size] = Node{a, b, da, db};
    return size++;
  }
  DOJO_REV_NOINLINE void grow() { nodes.resize(nodes.empty() ? 1024 : 2 * nodes.size()); }
  // An input with value v: gradient(x) reads its adjoint after the sweep.
  DOJO_REV_INLINE Rev variable(double v) { return Rev(v, push(-1, -1, 0.0, 0.0), this); }
  DOJO_REV_INLINE Rev unary(double v, const Rev& a, double da) { return Rev(v, push(a.node, -1, da, 0.0), this); }
  DOJO_REV_INLINE Rev binary(double v, const Rev& a, double da, const Rev& b, double db) {
    return Rev(v, push(a.node, b.node, da, db), this);
  }
  // The sweep: zero the adjoints, seed(y, w) for each output y of the weighted sum
  // sum w y (a constant output is skipped), then sweep().
  void start_sweep() { adjoint.assign(static_cast<size_t>(size), 0.0); }
  void seed(const Rev& y, double w) {
    if (y.node >= 0) adjoint[y.node] += w;
  }
  void sweep() {
    double* x_bar = adjoint.data();
    const Node* node = nodes.data();
    for (int n = size - 1; n >= 0; --n) {
      const double g = x_bar[n];
      if (g == 0.0) continue;
      if (node[n].a >= 0) x_bar[node[n].a] += node[n].da * g;
      if (node[n].b >= 0) x_bar[node[n].b] += node[n].db * g;
    }
  }
  // d (sum w y) / d x for an input x (variable()) after sweep().
  double gradient(const Rev& x) const { return x.node >= 0 ? adjoint[x.node] : 0.0; }
};

DOJO_REV_INLINE double value(const Rev& x) { return x.v; }

// --- arithmetic (non-template: a double converts to a constant Rev)
DOJO_REV_INLINE Rev operator-(const Rev& a) { return a.recorded() ? a.tape->unary(-a.v, a, -1.0) : Rev(-a.v); }
DOJO_REV_INLINE Rev operator+(const Rev& a, const Rev& b) {
  if (!b.recorded()) return Rev(a.v + b.v, a.node, a.tape);
  if (!a.recorded()) return Rev(a.v + b.v, b.node, b.tape);
  return a.tape->binary(a.v + b.v, a, 1.0, b, 1.0);
}
DOJO_REV_INLINE Rev operator-(const Rev& a, const Rev& b) {
  if (!b.recorded()) return Rev(a.v - b.v, a.node, a.tape);
  if (!a.recorded()) return b.tape->unary(a.v - b.v, b, -1.0);
  return a.tape->binary(a.v - b.v, a, 1.0, b, -1.0);
}
DOJO_REV_INLINE Rev operator*(const Rev& a, const Rev& b) {
  if (!b.recorded()) return a.recorded() ? a.tape->unary(a.v * b.v, a, b.v) : Rev(a.v * b.v);
  if (!a.recorded()) return b.tape->unary(a.v * b.v, b, a.v);
  return a.tape->binary(a.v * b.v, a, b.v, b, a.v);
}
DOJO_REV_INLINE Rev operator/(const Rev& a, const Rev& b) {
  const double q = a.v / b.v;
  if (!b.recorded()) return a.recorded() ? a.tape->unary(q, a, 1.0 / b.v) : Rev(q);
  if (!a.recorded()) return b.tape->unary(q, b, -q / b.v);
  return a.tape->binary(q, a, 1.0 / b.v, b, -q / b.v);
}
DOJO_REV_INLINE Rev& operator+=(Rev& a, const Rev& b) { return a = a + b; }
DOJO_REV_INLINE Rev& operator-=(Rev& a, const Rev& b) { return a = a - b; }
DOJO_REV_INLINE Rev& operator*=(Rev& a, const Rev& b) { return a = a * b; }
DOJO_REV_INLINE Rev& operator/=(Rev& a, const Rev& b) { return a = a / b; }

// --- comparisons by value (branches)
DOJO_REV_INLINE bool operator<(const Rev& a, const Rev& b) { return a.v < b.v; }
DOJO_REV_INLINE bool operator>(const Rev& a, const Rev& b) { return a.v > b.v; }

// --- elementary functions: f(v), recorded with f'(v)
DOJO_REV_INLINE Rev chain(const Rev& a, double fv, double dfv) { return a.recorded() ? a.tape->unary(fv, a, dfv) : Rev(fv); }
DOJO_REV_INLINE Rev sqrt(const Rev& a) {
  const double s = std::sqrt(a.v);
  return chain(a, s, 0.5 / s);
}
DOJO_REV_INLINE Rev sin(const Rev& a) { return chain(a, std::sin(a.v), std::cos(a.v)); }
DOJO_REV_INLINE Rev cos(const Rev& a) { return chain(a, std::cos(a.v), -std::sin(a.v)); }
DOJO_REV_INLINE Rev tan(const Rev& a) {
  const double t = std::tan(a.v);
  return chain(a, t, 1.0 + t * t);
}
DOJO_REV_INLINE Rev atan(const Rev& a) { return chain(a, std::atan(a.v), 1.0 / (1.0 + a.v * a.v)); }
// atan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
DOJO_REV_INLINE Rev atan2(const Rev& y, const Rev& x) {
  const double v = std::atan2(y.v, x.v);
  const double inv = 1.0 / (x.v * x.v + y.v * y.v);
  if (!x.recorded()) return chain(y, v, x.v * inv);
  if (!y.recorded()) return x.tape->unary(v, x, -y.v * inv);
  return y.tape->binary(v, y, x.v * inv, x, -y.v * inv);
}

}  // namespace dojo
