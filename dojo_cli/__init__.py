"""dojo_cli: differentiable rigid-body simulation (Dojo's variational integrator).

``import dojo_cli as dojo`` gives the API below; see ``dojo --help`` for the
command line and docs/ for the scene and storage formats.
"""

from dojo_cli.api import (
    default_options,
    get_body,
    get_joint,
    get_node,
    initial_state,
    input_dimensions,
    kinetic_energy,
    load_scene,
    maximal_dimension,
    maximal_gradients,
    maximal_to_minimal,
    mechanical_energy,
    mechanics,
    minimal_dimension,
    minimal_gradients,
    minimal_to_maximal,
    momentum,
    parameter_gradients,
    parameter_labels,
    parameter_values,
    potential_energy,
    root_to_leaves_ordering,
    simulate,
    step,
    step_gradients,
    with_parameters,
)
from dojo_cli.errors import DojoError, SceneError, SolverError, StorageError
from dojo_cli.model.joint_types import JointType
from dojo_cli.model.mechanism import Body, Joint, Mechanism
from dojo_cli.simulation.controller import ConstantController, Controller, PDController, ScheduleController
from dojo_cli.simulation.simulate import Trajectory
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverStatus

__version__ = "0.1.0"

__all__ = [
    "Body", "ConstantController", "Controller", "DojoError", "Joint", "JointType", "Mechanism", "PDController",
    "SceneError", "ScheduleController", "SolverError", "SolverOptions", "SolverStatus", "StorageError", "Trajectory",
    "default_options", "get_body", "get_joint", "get_node", "initial_state", "input_dimensions", "kinetic_energy",
    "load_scene", "maximal_dimension", "maximal_to_minimal", "mechanical_energy", "mechanics", "minimal_dimension",
    "minimal_to_maximal", "momentum", "potential_energy", "root_to_leaves_ordering", "simulate", "step",
    "maximal_gradients", "minimal_gradients", "parameter_gradients", "parameter_labels", "parameter_values",
    "step_gradients", "with_parameters",
]
