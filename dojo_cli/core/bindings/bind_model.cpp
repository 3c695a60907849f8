// Bindings of the compiled model and its scratch (maximal/model.h, maximal/data.h) and the
// solver options.
#include "common.h"

#include "maximal/data.h"
#include "maximal/euler_joints.h"
#include "maximal/recovery.h"
#include "maximal/model.h"

using namespace dojo;

namespace dojo::bindings {

void bind_model(nb::module_& m) {
  nb::class_<ModelInput>(m, "ModelInput", "The description a Model is compiled from (flat arrays).")
      .def(nb::init<>())
#define DOJO_BIND_FIELD(shape, type, name, owner, width, scene, finite) .def_rw(#name, &ModelInput::name)
      DOJO_MODEL_INPUT_FIELDS(DOJO_BIND_FIELD);
#undef DOJO_BIND_FIELD

  // The field table of fields.h, for Python (dojo_cli/model/compiled.py): one dict per
  // field, in order: name, shape ("scalar" or "array"), type ("double" or "int"), owner,
  // width, scene, finite.
  nb::list fields;
#define DOJO_FIELD_ROW(shape, type, name, owner, width, scene, finite)                                         \
  {                                                                                                         \
    nb::dict row;                                                                                           \
    row["name"] = #name;                                                                                    \
    row["shape"] = #shape;                                                                                  \
    row["type"] = #type;                                                                                    \
    row["owner"] = owner;                                                                                   \
    row["width"] = width;                                                                                   \
    row["scene"] = scene;                                                                                   \
    row["finite"] = static_cast<bool>(finite);                                                             \
    fields.append(row);                                                                                     \
  }
  DOJO_MODEL_INPUT_FIELDS(DOJO_FIELD_ROW)
#undef DOJO_FIELD_ROW
  m.attr("MODEL_INPUT_FIELDS") = nb::tuple(fields);

  // The enums' names by code, so that Python mirrors none of them.
  nb::list kinds, halfspace_kinds, models, statuses;
  for (int k = 0; k < kCollisionKinds; ++k) {
    kinds.append(kCollisionKindNames[k]);
    if (is_halfspace(static_cast<CollisionKind>(k))) halfspace_kinds.append(kCollisionKindNames[k]);
  }
  nb::dict half_size;
  for (int k = 0; k < kContactModels; ++k) {
    models.append(kContactModelNames[k]);
    half_size[kContactModelNames[k]] = contact_half_size(static_cast<ContactModel>(k));
  }
  for (int k = 0; k < kSolverStatuses; ++k) statuses.append(kSolverStatusNames[k]);
  m.attr("COLLISION_KINDS") = nb::tuple(kinds);
  m.attr("HALFSPACE_KINDS") = nb::tuple(halfspace_kinds);
  m.attr("CONTACT_MODELS") = nb::tuple(models);
  m.attr("CONTACT_HALF_SIZE") = half_size;
  m.attr("SOLVER_STATUSES") = nb::tuple(statuses);
  m.attr("DAMPER_FORMS") = nb::make_tuple(kDamperForms[0], kDamperForms[1]);
  // The recovery of rows violated at a step's start (maximal/recovery.h): its time constant
  // T = max(RECOVERY_TIME, RECOVERY_STEPS h), which the importers' notes and checks name
  m.attr("RECOVERY_TIME") = kRecoveryTime;
  m.attr("RECOVERY_STEPS") = kRecoverySteps;
  // JointRotation names, by value (maximal/euler_joints.h)
  m.attr("JOINT_ROTATIONS") = nb::make_tuple(kJointRotationNames[0], kJointRotationNames[1], kJointRotationNames[2]);
  m.attr("SHAPE_SIZE") = kShapeSize;
  m.attr("SHAPE_A_SIZE") = kShapeASize;

  nb::class_<Model>(m, "Model", "A compiled mechanism: frozen flat arrays and the step's block structure.")
      .def(nb::init<const ModelInput&>(), nb::arg("input"))
      .def_ro("nb", &Model::nb)
      .def_ro("nj", &Model::nj)
      .def_ro("nl", &Model::nl)
      .def_ro("nf", &Model::nf)
      .def_ro("nu", &Model::nu)
      .def_ro("nlim", &Model::nlim)
      .def_ro("nfr", &Model::nfr)
      .def_ro("nc", &Model::nc)
      .def_ro("n", &Model::n)
      .def_ro("h", &Model::h)
      .def_prop_ro("n_blocks", [](const Model& s) { return static_cast<int>(s.blocks.block_row.size()); })
      .def_prop_ro("n_fill_blocks",
                   [](const Model& s) { return static_cast<int>(s.blocks.block_row.size()) - s.blocks.n_structural; })
      .def_prop_ro(
          "structure_sizes",
          [](const Model& s) {
            // what each block structure costs a Data (its BlockLU) and a factorisation
            nb::dict out;
            const std::pair<const char*, const BlockStructure*> kinds[] = {
                {"blocks", &s.blocks}, {"robust", &s.blocks_robust}, {"condensed", &s.blocks_condensed}};
            for (const auto& kind : kinds) {
              const BlockStructure& b = *kind.second;
              nb::dict d;
              d["blocks"] = static_cast<int>(b.block_row.size());
              d["fill_blocks"] = static_cast<int>(b.block_row.size()) - b.n_structural;
              d["doubles"] = b.total_size;
              d["updates"] = static_cast<long long>(b.update_off.size());
              out[kind.first] = d;
            }
            return out;
          },
          "Per block structure (blocks: the model's order, robust: the robust order, condensed: the contacts\n"
          "eliminated in closed form; model.h): its blocks, the fill among them, the doubles of its factor and\n"
          "the block updates of one factorisation.")
      .def_prop_ro("elimination_order", [](const Model& s) { return s.blocks.order; })
      .def_prop_ro("tree_joints", [](const Model& s) { return s.tree_joints; })
      .def_prop_ro("limit_free", [](const Model& s) { return s.limit_free; })
      .def_prop_ro("angle_unwrapped",
                   [](const Model& s) { return std::vector<bool>(s.angle_unwrapped.begin(), s.angle_unwrapped.end()); },
                   "(nf,) the coordinate is its joint's only rotation (an angle unwrapped through turns).")
      .def_prop_ro("loop_joints", [](const Model& s) { return s.loop_joints; })
      .def_prop_ro("row_scale", [](const Model& s) { return s.row_scale; },
                   "(n,) each residual row's unit, which relative tolerances measure it in (tolerances.h).")
      .def_prop_ro("contact_start", [](const Model& s) { return s.contact_start; },
                   "(nc+1,) first unknown of each contact (its slacks, then its impulses).")
      .def_prop_ro(
          "node_owner",
          [](const Model& s) {
            // per Newton-matrix node: ("body" | "joint" | "contact", index)
            std::vector<std::pair<std::string, int>> out(s.blocks.n_nodes);
            const std::pair<const char*, const std::vector<int>*> kinds[] = {
                {"body", &s.body_node}, {"joint", &s.joint_node}, {"contact", &s.contact_node}};
            for (const auto& kind : kinds)
              for (size_t i = 0; i < kind.second->size(); ++i)
                if ((*kind.second)[i] >= 0) out[(*kind.second)[i]] = {kind.first, static_cast<int>(i)};
            return out;
          },
          "Per Newton-matrix node, what owns its unknowns: (kind, index) with kind body, joint or contact.");

  nb::class_<SolverOptions>(m, "SolverOptions", "The per-step solver's options (Dojo's names and defaults).")
      .def(nb::init<>())
      .def_rw("rtol", &SolverOptions::rtol)
      .def_rw("btol", &SolverOptions::btol)
      .def_rw("relative", &SolverOptions::relative,
              "rtol, btol relative to the scene's scales (True, default) or absolute, SI (tolerances.h).")
      .def_rw("max_iter", &SolverOptions::max_iter)
      .def_rw("max_ls", &SolverOptions::max_ls)
      .def_rw("ls_scale", &SolverOptions::ls_scale)
      .def_rw("undercut", &SolverOptions::undercut)
      .def_rw("no_progress_max", &SolverOptions::no_progress_max)
      .def_rw("no_progress_undercut", &SolverOptions::no_progress_undercut)
      .def_rw("warm_start", &SolverOptions::warm_start,
              "Start a run's next step from the previous step's cones, moved off their boundaries (step.h, \"Warm start\").");

  nb::class_<Data>(m, "Data", "Per-run scratch of a Model: the step's state and buffers, allocated once.")
      .def(nb::init<const Model&>(), nb::arg("model"))
      .def_prop_ro("z_next", data_view<&Data::z_next>(1))
      .def_prop_ro("w", data_view<&Data::w>(1))
      .def_prop_ro("residual_vector", data_view<&Data::r>(1))
      .def_prop_ro("angle_ref", data_view<&Data::angle_ref>(1),
                   "(nf,) unwrapped angles where the next step starts, NaN where not known (writable; runs carry\n"
                   "it: advance_angles; a restart sets it from the stored minimal/q).")
      .def_prop_ro("angle2", data_view<&Data::angle2>(1), "(nf,) the last step's unwrapped angles at z2 (limited angles).")
      .def_prop_ro("log", [](nb::handle self) {
        Data& d = nb::cast<Data&>(self);
        return view(d.log, self, {static_cast<size_t>(d.log_rows), static_cast<size_t>(kLogColumns)});
      })
      .def_prop_ro("contact_distance", data_view<&Data::contact_distance>(1))
      .def_prop_ro("contact_normal_impulse", data_view<&Data::contact_normal_impulse>(1))
      .def_prop_ro("contact_friction_impulse", data_view<&Data::contact_friction_impulse>(2))
      .def_prop_ro("contact_slip", data_view<&Data::contact_slip>(2))
      .def_prop_ro("status", [](const Data& d) { return static_cast<int>(d.status); })
      .def_ro("iterations", &Data::iterations)
      .def_prop_ro("contact_active",
                   [](const Data& d) { return std::vector<bool>(d.contact_active.begin(), d.contact_active.end()); },
                   "(nc,) whether each contact was in the last step's solve (margins.h).")
      .def_ro("solves", &Data::solves, "Solves of the last step (1, or more when a left-out contact touched or it restarted).")
      .def_rw("impulse_scale", &Data::impulse_scale,
              "Starting impulse scale of the next step's interior point (step.h, \"Restarts\"); 1: Dojo's start.")
      .def_rw("warm_valid", &Data::warm_valid,
              "The next step from the last step's state starts warm (step.h, \"Warm start\"); False: from Dojo's point.")
      .def_ro("warm_started", &Data::warm_started, "The last step's first attempt started warm.")
      .def_ro("warm_fell_back", &Data::warm_fell_back,
              "The last step's warm attempt failed and the step was solved from Dojo's start.")
      .def_ro("restarts", &Data::restarts, "Restarts of the last step's solve from scaled impulses (step.h, \"Restarts\").")
      .def_ro("recovery_iteration", &Data::recovery_iteration)
      .def_ro("lu_is_robust", &Data::lu_is_robust, "The last factorisation used the robust elimination order.")
      .def_ro("lu_is_condensed", &Data::lu_is_condensed,
              "The last factorisation eliminated the contacts in closed form (factor.h factor_matrix_condensed).")
      .def_rw("gradients_condensed", &Data::gradients_condensed,
              "The gradients factorise dr/dw at the solution with the contacts eliminated in closed form where "
              "they can (gradients.cpp, factor_at_solution); False: always the robust order's block LU.")
      .def_rw("gradients_condensed_sweeps", &Data::gradients_condensed_sweeps,
              "Refinement sweeps a solve with that factorisation may take before the block LU takes over "
              "(gradients.cpp, solve_condensed_refined); 0: every solve falls back (tests).")
      .def_ro("lu_exact", &Data::lu_exact,
              "The last factorisation was of the exact matrix dr/dw, without the joint-impulse regularisation "
              "(the gradients, where every joint-impulse pivot allows: gradients.cpp, factor_at_solution).")
      .def_ro("residual", &Data::residual)
      .def_ro("complementarity", &Data::complementarity)
      .def_ro("singular_node", &Data::singular_node,
              "After a singular_matrix step: the node (Model.node_owner) with the zero pivot; else -1.");
}

}  // namespace dojo::bindings
