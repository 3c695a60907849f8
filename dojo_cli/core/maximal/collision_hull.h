// Convex hulls carried by body b (CollisionKind::Hull): the compiled record a hull contact
// refers to, and its compilation from vertices and triangles (collision_hull.cpp).
//
// A hull needs more than ContactParams::shape (kShapeSize) holds, so the compiled Model
// keeps one record per hull (Model::hulls, from ModelInput's hull_* fields) and each hull
// contact shares its hull's (ContactParams::hull); the collision function reads the record
// through the `shape` pointer of the table's signature (body_b_shape()). The record is flat
// doubles (indices stored as doubles, exact below 2^53), in b's frame:
//   [nv, nf, nt, ne, extent,
//    vertices (nv, 3),
//    planes (nf, 4): outward unit normal n and offset d of each face (n . x <= d inside);
//      coplanar triangles merged into one face,
//    triangles (nt, 4): three vertex indices, counter-clockwise about their face's normal,
//      then the face's index,
//    edges (ne, 2): vertex indices of the edges between two faces (a merged face's inner
//      diagonals left out)].
// extent is the largest |coordinate| of a vertex (the scene's length scale, model.cpp and
// tolerances.cpp).
#pragma once

#include <vector>

namespace dojo {

constexpr int kHullHeader = 5;
// Triangles whose unit normals differ by less than this (rad, about) and whose planes'
// offsets differ by less than kHullCoplanarOffset (1 + extent) make one face: qhull's
// triangulated output (scipy's ConvexHull) splits a mesh's flat face into triangles whose
// normals agree to rounding (1e-16 for a box; float32 mesh files to 1e-7 and more are
// distinct faces, which costs only extra edges).
constexpr double kHullCoplanarAngle = 1e-6;
constexpr double kHullCoplanarOffset = 1e-9;
// A vertex beyond a face's plane by more than this (1 + extent) is refused: not convex.
constexpr double kHullConvexity = 1e-6;

// Read access to a compiled record.
struct HullView {
  int nv, nf, nt, ne;
  double extent;
  const double* vertices;   // (nv, 3)
  const double* planes;     // (nf, 4)
  const double* triangles;  // (nt, 4)
  const double* edges;      // (ne, 2)
  explicit HullView(const double* r)
      : nv(static_cast<int>(r[0])), nf(static_cast<int>(r[1])), nt(static_cast<int>(r[2])),
        ne(static_cast<int>(r[3])), extent(r[4]), vertices(r + kHullHeader), planes(vertices + 3 * nv),
        triangles(planes + 4 * nf), edges(triangles + 4 * nt) {}
  const double* vertex(int i) const { return vertices + 3 * i; }
};

// The record of the hull of `nt` triangles (indices into `vertices`, (n, 3) doubles; only
// the vertices the triangles use are kept, renumbered), oriented outward (from the mean of
// its vertices) whatever their winding; zero-area triangles are dropped.
// Throws std::invalid_argument (naming `what`): fewer than 4 faces, an index out of
// range (0 <= index < vertex_count), or a vertex beyond a face (not convex).
std::vector<double> compile_hull(const double* vertices, int vertex_count, const int* triangles, int nt,
                                 const char* what);

}  // namespace dojo
