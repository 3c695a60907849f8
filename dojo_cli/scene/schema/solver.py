"""The solver section: the step's tolerances and iteration limits, its defaults the core's
(``_core.SolverOptions()``).
"""

from __future__ import annotations

from dojo_cli import _core
from dojo_cli.scene.schema.field_types import EXTENDED_REAL, INTEGER, MAX_ITERATIONS, POSITIVE_REAL, REAL
from dojo_cli.scene.specs import Field, Spec, ge, gt, le, literal, lt


# The core's solver defaults (core/maximal/data.h SolverOptions: Dojo's), read once.
_SOLVER_DEFAULTS = _core.SolverOptions()


class SolverSpec(Spec):
    """The scene's default solver options (Dojo's names and defaults, SolverOptions)."""

    rtol = Field(POSITIVE_REAL, _SOLVER_DEFAULTS.rtol)
    btol = Field(POSITIVE_REAL, _SOLVER_DEFAULTS.btol)
    # rtol, btol relative to the scene's scales (default) or absolute, SI (docs/physics.md)
    tolerances = Field(literal("relative", "absolute"), "relative" if _SOLVER_DEFAULTS.relative else "absolute")
    max_iter = Field(le(MAX_ITERATIONS, ge(1, INTEGER)), _SOLVER_DEFAULTS.max_iter)
    max_ls = Field(le(MAX_ITERATIONS, ge(0, INTEGER)), _SOLVER_DEFAULTS.max_ls)
    ls_scale = Field(lt(1, gt(0, REAL)), _SOLVER_DEFAULTS.ls_scale)
    undercut = Field(gt(0, EXTENDED_REAL), _SOLVER_DEFAULTS.undercut)
    no_progress_max = Field(le(MAX_ITERATIONS, ge(1, INTEGER)), _SOLVER_DEFAULTS.no_progress_max)
    no_progress_undercut = Field(gt(1, REAL), _SOLVER_DEFAULTS.no_progress_undercut)
    # start a run's next step from the previous step's cones (core/maximal/step.h, "Warm start")
    warm_start = Field({"type": "bool", "strict": True}, _SOLVER_DEFAULTS.warm_start)
