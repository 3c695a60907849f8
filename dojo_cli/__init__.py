"""dojo_cli: differentiable rigid-body simulation (Dojo's variational integrator).

``import dojo_cli as dojo`` gives the API below; see ``dojo --help`` for the
command line and docs/ for the scene and storage formats.

The package imports nothing up front (PEP 562): each name is imported from its
module the first time it is used, so ``import dojo_cli`` (and with it every ``dojo``
command) does not pay for numpy, scipy, pydantic-core or h5py until they are needed.
tests/test_imports.py keeps it so.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "default_options", "get_body", "get_contact", "get_joint", "get_node", "initial_state", "input_dimensions",
            "kinetic_energy", "load_scene", "maximal_dimension", "maximal_gradients", "maximal_to_minimal",
            "mechanical_energy", "mechanics", "minimal_dimension", "minimal_gradients", "minimal_to_maximal",
            "momentum", "parameter_gradients", "parameter_labels", "parameter_values", "potential_energy",
            "root_to_leaves_ordering", "rollout_jvp", "rollout_vjp", "simulate", "step", "step_gradients", "with_parameters",
        ),
        "dojo_cli.api",
    ),
    **dict.fromkeys(("DojoError", "SceneError", "SolverError", "StorageError"), "dojo_cli.errors"),
    "JointType": "dojo_cli.model.joint_types",
    **dict.fromkeys(
        ("contact_geometry", "contact_location", "contact_normal", "contact_tangent", "get_sdf"),
        "dojo_cli.physics.contact_queries",
    ),
    "set_floating_base": "dojo_cli.scene.floating_base",
    **dict.fromkeys(("Body", "Joint", "Mechanism"), "dojo_cli.model.mechanism"),
    **dict.fromkeys(
        ("ConstantController", "Controller", "LinearController", "PDController", "ScheduleController"),
        "dojo_cli.model.controller",
    ),
    "Trajectory": "dojo_cli.model.trajectory",
    "SolverOptions": "dojo_cli.solver.options",
    "SolverStatus": "dojo_cli.solver.status",
}

# Subpackages an eager ``import dojo_cli`` used to leave as attributes (``dojo.math``), and
# ``optimize``: the package dojo_cli.optimize, which is callable, ``dojo.optimize(task)``
# (dojo_cli.api.optimize; see the package's __init__ for why it is the package); ``fit`` the same.
_SUBMODULES = ("api", "errors", "fit", "io", "math", "minimal", "model", "optimize", "physics", "scene", "simulation",
               "solver")

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name (or a subpackage) on first use and keep it in the module."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from dojo_cli.api import (  # noqa: F401
        default_options,
        get_body,
        get_contact,
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
        rollout_jvp,
        rollout_vjp,
        simulate,
        step,
        step_gradients,
        with_parameters,
    )
    from dojo_cli.errors import DojoError, SceneError, SolverError, StorageError  # noqa: F401
    from dojo_cli.scene.floating_base import set_floating_base  # noqa: F401
    from dojo_cli.model.joint_types import JointType  # noqa: F401
    from dojo_cli.physics.contact_queries import (  # noqa: F401
        contact_geometry,
        contact_location,
        contact_normal,
        contact_tangent,
        get_sdf,
    )
    from dojo_cli.model.mechanism import Body, Joint, Mechanism  # noqa: F401
    from dojo_cli.model.controller import (  # noqa: F401
        ConstantController,
        Controller,
        LinearController,
        PDController,
        ScheduleController,
    )
    from dojo_cli.model.trajectory import Trajectory  # noqa: F401
    from dojo_cli.solver.options import SolverOptions  # noqa: F401
    from dojo_cli.solver.status import SolverStatus  # noqa: F401
