"""skydy's analysis, numerically: equilibria, linearisation, stability, controllability and
accessibility of a scene without contacts (docs/analysis.md).

``from dojo_cli import analysis``; ``analysis.equilibria(model)``, ``analysis.linearize(model, x)``,
``analysis.discrete_linearization(model, x)``. Built on dojo_cli.minimal (M, C and their
analytic derivatives) and, for the discrete map, the variational step's gradients
(dojo_cli.simulation.gradients), so it sits above simulation in the layering.
"""

from dojo_cli.analysis.analyze import (  # noqa: F401
    ACCESSIBILITY_TOL, CONTROLLABILITY_TOL, EIGEN_TOL, Equilibrium, Linearization, accessibility_rank,
    controllability_rank, discrete_linearization, equilibria, lie_bracket, linearize, locked_names, stability,
    state_names, velocity_state_names,
)
