// Bindings of the contact kernels (maximal/collision.h, maximal/contact.h).
#include "common.h"

#include "maximal/collision_hull.h"
#include "maximal/contact.h"

using namespace dojo;

namespace dojo::bindings {

// Contact kernels: contact_geometry (the URDF import measures gaps with it); the kernels
// themselves, for tests, in _core.testing (the step calls them from C++).
namespace {

using InputArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;

// A new numpy array (C order) holding a copy of `data`.

// The leading rows x cols block of a row-major matrix with `stride` columns, as numpy.
nb::object numpy_block(const double* data, size_t stride, size_t rows, size_t cols) {
  double tmp[12 * 16];
  for (size_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < cols; ++k) tmp[r * cols + k] = data[r * stride + k];
  return numpy_copy(tmp, {rows, cols});
}

const double* require_size(const InputArray& a, size_t size, const char* name) {
  if (a.size() != size) throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(size) +
                                                    " entries, got " + std::to_string(a.size()));
  return a.data();
}

void read_sequence(nb::handle obj, double* out, size_t max_size, const char* name, bool exact) {
  size_t i = 0;
  for (nb::handle item : obj) {
    if (i == max_size) throw std::invalid_argument(std::string(name) + ": too many entries");
    out[i++] = nb::cast<double>(item);
  }
  if (exact && i != max_size) throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(max_size) +
                                                          " entries, got " + std::to_string(i));
}

dojo::ContactModel parse_model(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj)) {
    const std::string name = nb::cast<std::string>(obj);
    if (name == "impact") return dojo::ContactModel::Impact;
    if (name == "nonlinear") return dojo::ContactModel::Nonlinear;
    if (name == "linear") return dojo::ContactModel::Linear;
    throw std::invalid_argument("model: unknown contact model '" + name + "'");
  }
  const int k = nb::cast<int>(obj);
  if (k < 0 || k > 2) throw std::invalid_argument("model: expected 0, 1 or 2");
  return static_cast<dojo::ContactModel>(k);
}

dojo::CollisionKind parse_kind(nb::handle obj) {
  if (nb::isinstance<nb::str>(obj)) {
    const std::string name = nb::cast<std::string>(obj);
    for (int k = 0; k < dojo::kCollisionKinds; ++k)
      if (name == dojo::kCollisionKindNames[k]) return static_cast<dojo::CollisionKind>(k);
    throw std::invalid_argument("kind: unknown collision kind '" + name + "'");
  }
  const int k = nb::cast<int>(obj);
  if (k < 0 || k >= dojo::kCollisionKinds)
    throw std::invalid_argument("kind: expected 0.." + std::to_string(dojo::kCollisionKinds - 1));
  return static_cast<dojo::CollisionKind>(k);
}

// A hull's record (collision_hull.h) from (vertices (n, 3), triangles (m, 3) indices).
std::shared_ptr<const std::vector<double>> parse_hull(nb::handle hull) {
  const nb::tuple pair = nb::cast<nb::tuple>(hull);
  if (pair.size() != 2) throw std::invalid_argument("hull: expected (vertices (n, 3), triangles (m, 3))");
  std::vector<double> vertices;
  for (nb::handle row : pair[0])
    for (nb::handle x : row) vertices.push_back(nb::cast<double>(x));
  std::vector<int> triangles;
  for (nb::handle row : pair[1])
    for (nb::handle x : row) triangles.push_back(nb::cast<int>(x));
  if (vertices.size() % 3 != 0 || triangles.size() % 3 != 0)
    throw std::invalid_argument("hull: expected (vertices (n, 3), triangles (m, 3))");
  return std::make_shared<const std::vector<double>>(
      dojo::compile_hull(vertices.data(), static_cast<int>(vertices.size() / 3), triangles.data(),
                         static_cast<int>(triangles.size() / 3), "hull"));
}

// ContactParams from a dict {body, other, model, kind, friction, radius, offset (3,),
// shape_a (<= 7,), shape (<= 7,), hull ((n, 3) vertices, (m, 3) triangles): kind 'hull'};
// missing keys take the defaults (the ground, nonlinear, mu 0.5).
dojo::ContactParams parse_contact(const nb::dict& d) {
  dojo::ContactParams c{};
  c.body = d.contains("body") ? nb::cast<int>(d["body"]) : 0;
  c.other = d.contains("other") ? nb::cast<int>(d["other"]) : -1;
  c.model = d.contains("model") ? parse_model(d["model"]) : dojo::ContactModel::Nonlinear;
  c.kind = d.contains("kind") ? parse_kind(d["kind"]) : dojo::CollisionKind::Halfspace;
  c.friction = d.contains("friction") ? nb::cast<double>(d["friction"]) : 0.5;
  c.radius = d.contains("radius") ? nb::cast<double>(d["radius"]) : 0.0;
  if (d.contains("offset")) read_sequence(d["offset"], c.offset, 3, "offset", true);
  if (d.contains("shape_a")) read_sequence(d["shape_a"], c.shape_a, dojo::kShapeASize, "shape_a", false);
  if (c.kind == dojo::CollisionKind::Hull) {
    if (!d.contains("hull")) throw std::invalid_argument("hull: required for kind 'hull'");
    c.hull = parse_hull(d["hull"]);
  } else if (d.contains("shape")) {
    read_sequence(d["shape"], c.shape, dojo::kShapeSize, "shape", false);
  } else if (c.kind == dojo::CollisionKind::Halfspace) {
    c.shape[2] = 1.0;  // the ground: normal +z through the origin
  } else {
    throw std::invalid_argument("shape: required for a body shape");
  }
  return c;
}

const char* output_names[] = {"residual", "jacobians", "parameters"};

dojo::ContactOutput parse_output(const std::string& name) {
  for (int k = 0; k < 3; ++k)
    if (name == output_names[k]) return static_cast<dojo::ContactOutput>(k);
  throw std::invalid_argument("output: expected 'residual', 'jacobians' or 'parameters', got '" + name + "'");
}

}  // namespace

void bind_contacts(nb::module_& m, nb::module_& testing) {
  testing.def(
      "evaluate_contact",
      [](const nb::dict& params, double h, const InputArray& xa, const InputArray& qa, const InputArray& va,
         const InputArray& wa, const InputArray& mwa, const InputArray& xb, const InputArray& qb,
         const InputArray& vb, const InputArray& wb, const InputArray& mwb, const InputArray& s,
         const InputArray& gamma, const std::string& output, bool reference) {
        const dojo::ContactParams c = parse_contact(params);
        const size_t n = static_cast<size_t>(dojo::contact_half_size(c.model));
        const dojo::ContactBodyState a{require_size(xa, 3, "xa"), require_size(qa, 4, "qa"), require_size(va, 3, "va"),
                                       require_size(wa, 3, "wa"), require_size(mwa, 9, "mwa")};
        const dojo::ContactBodyState b{require_size(xb, 3, "xb"), require_size(qb, 4, "qb"), require_size(vb, 3, "vb"),
                                       require_size(wb, 3, "wb"), require_size(mwb, 9, "mwb")};
        const dojo::ContactOutput level = parse_output(output);
        dojo::ContactEval ev;
        const double* sp = require_size(s, n, "s");
        const double* gp = require_size(gamma, n, "gamma");
        if (reference) {
          dojo::evaluate_contact_reference(c, h, a, b, sp, gp, level, ev);
        } else {
          dojo::evaluate_contact(c, h, a, b, sp, gp, level, ev);
        }
        nb::dict out;
        out["comp"] = numpy_copy(ev.comp, {n});
        out["cons"] = numpy_copy(ev.cons, {n});
        out["wrench"] = numpy_copy(ev.wrench, {12});
        out["distance"] = ev.distance;
        out["normal_impulse"] = ev.normal_impulse;
        out["friction_impulse"] = numpy_copy(ev.friction_impulse, {2});
        out["slip"] = numpy_copy(ev.slip, {2});
        if (level != dojo::ContactOutput::Residual) {
          out["comp_jac"] = numpy_block(&ev.comp_jac[0][0], 2 * dojo::kMaxContactHalfSize, n, 2 * n);
          out["cons_local"] = numpy_block(&ev.cons_local[0][0], 2 * dojo::kMaxContactHalfSize, n, 2 * n);
          out["cons_body"] = numpy_block(&ev.cons_body[0][0], 12, n, 12);
          out["wrench_gamma"] = numpy_block(&ev.wrench_gamma[0][0], dojo::kMaxContactHalfSize, 12, n);
          out["wrench_body"] = numpy_block(&ev.wrench_body[0][0], 12, 12, 12);
          out["cons_z3"] = numpy_block(&ev.cons_z3[0][0], 12, n, 12);
          out["wrench_z3"] = numpy_block(&ev.wrench_z3[0][0], 12, 12, 12);
        }
        if (level == dojo::ContactOutput::Parameters) {
          out["cons_parameters"] = numpy_block(&ev.cons_parameters[0][0], 4, n, 4);
          out["wrench_parameters"] = numpy_block(&ev.wrench_parameters[0][0], 4, 12, 4);
        }
        return out;
      },
      nb::arg("params"), nb::arg("h"), nb::arg("xa"), nb::arg("qa"), nb::arg("va"), nb::arg("wa"), nb::arg("mwa"),
      nb::arg("xb"), nb::arg("qb"), nb::arg("vb"), nb::arg("wb"), nb::arg("mwb"), nb::arg("s"), nb::arg("gamma"),
      nb::arg("output") = "jacobians", nb::arg("reference") = false,
      "One contact's residual rows, wrench and derivatives (contact.h's evaluate_contact).\n\n"
      "params: dict with body, other (-1 = world), model ('impact' | 'nonlinear' | 'linear'),\n"
      "kind ('halfspace' | 'sphere' | 'capsule' | 'box' | 'segment_capsule' | 'segment_box' |\n"
      "'circle_halfspace' | 'corner_box' | 'cylinder' | 'segment_cylinder' | 'hull'), friction, radius, offset (3,),\n"
      "shape_a (<= 7,), shape (7,); hull ((n, 3) vertices, (m, 3) triangles) for kind 'hull'.\n"
      "x/q: (3,)/(4,) next configuration; v/w: (3,) midpoint velocities; mw: (3, 3) dt3/dw25;\n"
      "s, gamma: (N,). output: 'residual', 'jacobians' or 'parameters'. reference: use\n"
      "evaluate_contact_reference (dual numbers through every operation; for tests).\n"
      "Returns a dict of ContactEval's fields (leading N rows / 2N columns).");

  m.def(
      "contact_geometry",
      [](nb::handle kind, const InputArray& xa, const InputArray& qa, const InputArray& offset, double radius,
         const InputArray& xb, const InputArray& qb, const InputArray& shape, bool parameters, nb::handle shape_a,
         nb::handle hull) {
        double shape7[dojo::kShapeSize] = {0.0};
        if (shape.size() > static_cast<size_t>(dojo::kShapeSize)) throw std::invalid_argument("shape: too many entries");
        std::copy(shape.data(), shape.data() + shape.size(), shape7);
        double shape4[dojo::kShapeASize] = {0.0};
        if (!shape_a.is_none()) read_sequence(shape_a, shape4, dojo::kShapeASize, "shape_a", false);
        const dojo::CollisionKind k = parse_kind(kind);
        std::shared_ptr<const std::vector<double>> record;
        if (k == dojo::CollisionKind::Hull) {
          if (hull.is_none()) throw std::invalid_argument("hull: required for kind 'hull'");
          record = parse_hull(hull);
        }
        dojo::GeometryJacobian g;
        dojo::contact_geometry(k, require_size(xa, 3, "xa"), require_size(qa, 4, "qa"),
                               require_size(offset, 3, "offset"), radius, shape4, require_size(xb, 3, "xb"),
                               require_size(qb, 4, "qb"), record ? record->data() : shape7, parameters, g);
        const size_t cols = static_cast<size_t>(g.columns);
        const size_t stride = dojo::kPairParameterColumns;
        nb::dict out;
        out["distance"] = g.distance;
        out["normal"] = numpy_copy(g.normal, {3});
        out["tangent"] = numpy_copy(&g.tangent[0][0], {2, 3});
        out["point_a"] = numpy_copy(g.point_a, {3});
        out["point_b"] = numpy_copy(g.point_b, {3});
        out["distance_jac"] = numpy_copy(g.distance_jac, {cols});
        out["normal_jac"] = numpy_block(&g.normal_jac[0][0], stride, 3, cols);
        double tangent_jac[6 * dojo::kPairParameterColumns];
        for (size_t r = 0; r < 6; ++r)
          for (size_t k = 0; k < cols; ++k) tangent_jac[r * cols + k] = (&g.tangent_jac[0][0][0])[r * stride + k];
        out["tangent_jac"] = numpy_copy(tangent_jac, {2, 3, cols});
        out["point_a_jac"] = numpy_block(&g.point_a_jac[0][0], stride, 3, cols);
        out["point_b_jac"] = numpy_block(&g.point_b_jac[0][0], stride, 3, cols);
        return out;
      },
      nb::arg("kind"), nb::arg("xa"), nb::arg("qa"), nb::arg("offset"), nb::arg("radius"), nb::arg("xb"),
      nb::arg("qb"), nb::arg("shape"), nb::arg("parameters") = false, nb::arg("shape_a") = nb::none(),
      nb::arg("hull") = nb::none(),
      "Collision geometry of a primitive on body a (a sphere; a segment, circle or box corner, shape_a (<= 7,))\n"
      "against body b's shape (collision.h), with Jacobians over [x_a, t_a, x_b, t_b] (12 columns)\n"
      "or also offset (3) and radius (16). Kind 'hull': body b's convex hull is hull = (vertices (n, 3),\n"
      "triangles (m, 3) indices) in b's frame (shape unread).");

  testing.def(
      "compile_hull",
      [](nb::handle vertices, nb::handle triangles) {
        const dojo::HullView h(parse_hull(nb::make_tuple(vertices, triangles))->data());
        nb::dict out;
        out["vertices"] = numpy_copy(h.vertices, {static_cast<size_t>(h.nv), 3});
        out["planes"] = numpy_copy(h.planes, {static_cast<size_t>(h.nf), 4});
        out["triangles"] = numpy_copy(h.triangles, {static_cast<size_t>(h.nt), 4});
        out["edges"] = numpy_copy(h.edges, {static_cast<size_t>(h.ne), 2});
        out["extent"] = h.extent;
        return out;
      },
      nb::arg("vertices"), nb::arg("triangles"),
      "A convex hull's compiled record (collision_hull.h): vertices (nv, 3), planes (nf, 4: outward unit\n"
      "normal, offset), triangles (nt, 4: vertex indices, face), edges (ne, 2), extent.");

  testing.def(
      "contact_starting_point",
      [](nb::handle model) {
        const dojo::ContactModel k = parse_model(model);
        const size_t n = static_cast<size_t>(dojo::contact_half_size(k));
        double s[dojo::kMaxContactHalfSize], gamma[dojo::kMaxContactHalfSize];
        dojo::contact_starting_point(k, s, gamma);
        return nb::make_tuple(numpy_copy(s, {n}), numpy_copy(gamma, {n}));
      },
      nb::arg("model"), "Dojo's interior-point starting (s, gamma) of one contact.");

  testing.def(
      "contact_half_size", [](nb::handle model) { return dojo::contact_half_size(parse_model(model)); },
      nb::arg("model"), "N: the number of slacks (and of impulses) of one contact.");
}

}  // namespace dojo::bindings
