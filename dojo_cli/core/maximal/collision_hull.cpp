// A convex hull's compiled record (collision_hull.h): faces merged from coplanar
// triangles, their planes, and the edges between faces.
#include "collision_hull.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

namespace dojo {
namespace {

using V3 = std::array<double, 3>;

V3 sub(const V3& a, const V3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
V3 cross3(const V3& a, const V3& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double dot3(const V3& a, const V3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

}  // namespace

std::vector<double> compile_hull(const double* vertices, int vertex_count, const int* triangles, int nt,
                                 const char* what) {
  const std::string name(what);
  // the vertices the triangles use, renumbered in order of first use
  std::vector<int> local(vertex_count, -1);
  std::vector<V3> v;
  std::vector<std::array<int, 3>> tri;
  for (int t = 0; t < nt; ++t) {
    std::array<int, 3> k{};
    for (int i = 0; i < 3; ++i) {
      const int g = triangles[3 * t + i];
      if (g < 0 || g >= vertex_count)
        throw std::invalid_argument(name + ": triangle " + std::to_string(t) + " names vertex " + std::to_string(g) +
                                    ", out of range");
      if (local[g] < 0) {
        local[g] = static_cast<int>(v.size());
        v.push_back({vertices[3 * g], vertices[3 * g + 1], vertices[3 * g + 2]});
      }
      k[i] = local[g];
    }
    tri.push_back(k);
  }
  double extent = 0.0;
  V3 centre{0.0, 0.0, 0.0};
  for (const V3& p : v)
    for (int i = 0; i < 3; ++i) {
      extent = std::max(extent, std::fabs(p[i]));
      centre[i] += p[i] / static_cast<double>(v.size());
    }
  const double scale = 1.0 + extent;

  // oriented triangles with their unit normals; zero-area ones (qhull's slivers) dropped
  std::vector<std::array<int, 3>> kept;
  std::vector<V3> unit;
  for (std::array<int, 3> k : tri) {
    V3 n = cross3(sub(v[k[1]], v[k[0]]), sub(v[k[2]], v[k[0]]));
    const double len = std::sqrt(dot3(n, n));
    if (!(len > 1e-14 * scale * scale)) continue;
    if (dot3(n, sub(centre, v[k[0]])) > 0.0) {  // inward: turn it over
      std::swap(k[1], k[2]);
      n = {-n[0], -n[1], -n[2]};
    }
    kept.push_back(k);
    unit.push_back({n[0] / len, n[1] / len, n[2] / len});
  }
  // faces: coplanar triangles (the same outward normal and offset) together; the face's
  // normal the area-weighted mean of its triangles', its offset the largest over its vertices
  std::vector<int> face(kept.size(), -1);
  std::vector<V3> face_normal;
  std::vector<double> face_offset;
  const double cos_tol = std::cos(kHullCoplanarAngle);
  for (size_t t = 0; t < kept.size(); ++t) {
    const double d = dot3(unit[t], v[kept[t][0]]);
    for (size_t f = 0; f < face_normal.size() && face[t] < 0; ++f) {
      const double len = std::sqrt(dot3(face_normal[f], face_normal[f]));
      const V3 u{face_normal[f][0] / len, face_normal[f][1] / len, face_normal[f][2] / len};
      if (dot3(u, unit[t]) > cos_tol && std::fabs(dot3(u, v[kept[t][0]]) - face_offset[f]) < kHullCoplanarOffset * scale)
        face[t] = static_cast<int>(f);
    }
    const V3 n = cross3(sub(v[kept[t][1]], v[kept[t][0]]), sub(v[kept[t][2]], v[kept[t][0]]));
    if (face[t] < 0) {
      face[t] = static_cast<int>(face_normal.size());
      face_normal.push_back(n);
      face_offset.push_back(d);
    } else {
      for (int i = 0; i < 3; ++i) face_normal[face[t]][i] += n[i];
    }
  }
  const int nf = static_cast<int>(face_normal.size());
  if (nf < 4) throw std::invalid_argument(name + ": " + std::to_string(nf) + " faces, a solid hull has at least 4");
  std::vector<double> planes(4 * nf);
  for (int f = 0; f < nf; ++f) {
    const double len = std::sqrt(dot3(face_normal[f], face_normal[f]));
    const V3 u{face_normal[f][0] / len, face_normal[f][1] / len, face_normal[f][2] / len};
    double d = -INFINITY;
    for (size_t t = 0; t < kept.size(); ++t)
      if (face[t] == f)
        for (int i = 0; i < 3; ++i) d = std::max(d, dot3(u, v[kept[t][i]]));
    planes[4 * f] = u[0];
    planes[4 * f + 1] = u[1];
    planes[4 * f + 2] = u[2];
    planes[4 * f + 3] = d;
    for (const V3& p : v)
      if (dot3(u, p) - d > kHullConvexity * scale)
        throw std::invalid_argument(name + ": a vertex lies " + std::to_string(dot3(u, p) - d) +
                                    " m beyond a face's plane: not convex");
  }
  // edges between two faces: each triangle edge (sorted ends, its face), an edge whose
  // two triangles share a face left out
  std::vector<std::tuple<int, int, int>> sides;
  for (size_t t = 0; t < kept.size(); ++t)
    for (int i = 0; i < 3; ++i) {
      const int a = kept[t][i], b = kept[t][(i + 1) % 3];
      sides.emplace_back(std::min(a, b), std::max(a, b), face[t]);
    }
  std::sort(sides.begin(), sides.end());
  std::vector<int> edges;
  for (size_t i = 0; i < sides.size();) {
    size_t j = i;
    bool between = false;
    while (j < sides.size() && std::get<0>(sides[j]) == std::get<0>(sides[i]) &&
           std::get<1>(sides[j]) == std::get<1>(sides[i])) {
      between = between || std::get<2>(sides[j]) != std::get<2>(sides[i]);
      ++j;
    }
    if (between || j - i == 1) {  // between two faces (or open beside a dropped sliver)
      edges.push_back(std::get<0>(sides[i]));
      edges.push_back(std::get<1>(sides[i]));
    }
    i = j;
  }

  const int nv = static_cast<int>(v.size()), ntk = static_cast<int>(kept.size()), ne = static_cast<int>(edges.size() / 2);
  std::vector<double> record;
  record.reserve(kHullHeader + 3 * nv + 4 * nf + 4 * ntk + 2 * ne);
  for (double x : {double(nv), double(nf), double(ntk), double(ne), extent}) record.push_back(x);
  for (const V3& p : v)
    for (double x : p) record.push_back(x);
  record.insert(record.end(), planes.begin(), planes.end());
  for (size_t t = 0; t < kept.size(); ++t) {
    for (int i = 0; i < 3; ++i) record.push_back(kept[t][i]);
    record.push_back(face[t]);
  }
  for (int e : edges) record.push_back(e);
  return record;
}

}  // namespace dojo
