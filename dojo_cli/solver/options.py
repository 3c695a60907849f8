"""Solver options (Dojo's ``SolverOptions``: names and defaults, notes 5.1)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from dojo_cli import _core

# The core's defaults (core/maximal/data.h SolverOptions: Dojo's), read once.
_CORE = _core.SolverOptions()
# What rtol and btol are measured against (SolverOptions.tolerances).
TOLERANCE_MODES = ("relative", "absolute")


@dataclass(frozen=True)
class SolverOptions:
    """Options of the per-step solver.

    Attributes:
        rtol: equality residual tolerance (infinity norm).
        btol: complementarity tolerance (used once inequality constraints exist).
        tolerances: ``relative`` (default): rtol and btol are dimensionless, each residual
            row measured in its own unit derived from the scene's masses, sizes, timestep
            and gravity (core/maximal/tolerances.h; docs/physics.md "Solver tolerances");
            ``absolute``: rtol and btol in SI units (N s, m, m N s, ...), every row alike.
        max_iter: Newton iterations per step.
        max_ls: backtracking steps per iteration.
        ls_scale: factor applied to the step length at each backtracking step
            (Dojo ignores it and always halves; here it is used).
        undercut: centering floor btol/undercut (interior point).
        no_progress_max: iterations without progress before the undercut grows.
        no_progress_undercut: factor applied to undercut then.
        warm_start: start each step of a run that continues a converged step from that
            step's contact and limit impulses and slacks, moved back off the cones'
            boundaries (core/maximal/step.h, "Warm start"); only the solver's path changes,
            not its test; a warm attempt that fails is solved again from Dojo's start.
            True by default; False: every step from Dojo's fixed starting point (Dojo's
            iterates, for comparisons with Dojo itself).
        verbose: print Dojo's table of the solver's iterations, one line each, on stderr
            (dojo.step and dojo.simulate; solver.verbose).
    """

    rtol: float = _CORE.rtol
    btol: float = _CORE.btol
    tolerances: str = "relative" if _CORE.relative else "absolute"
    max_iter: int = _CORE.max_iter
    max_ls: int = _CORE.max_ls
    ls_scale: float = _CORE.ls_scale
    undercut: float = _CORE.undercut
    no_progress_max: int = _CORE.no_progress_max
    no_progress_undercut: float = _CORE.no_progress_undercut
    warm_start: bool = _CORE.warm_start
    verbose: bool = False

    def __post_init__(self):
        if self.tolerances not in TOLERANCE_MODES:
            raise ValueError(f"tolerances: must be one of {', '.join(TOLERANCE_MODES)}, got {self.tolerances!r}")

    def replace(self, **changes) -> SolverOptions:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """Plain dict of the options (for storage attributes)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of the fields."""
        return [f.name for f in fields(cls)]


# Dojo's defaults as one instance, so the core's converted copy of them is made once
# (simulation.step.core_options keeps it on the instance).
DOJO_DEFAULTS = SolverOptions()
