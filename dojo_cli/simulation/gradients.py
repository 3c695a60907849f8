"""Exact derivatives of one step by the implicit function theorem (dojo_engine_notes.md 6).

The derivatives are computed by the C++ core (dojo_cli/core/maximal/gradients.h, which
documents the method: the Newton matrix refactorised at the step's own solution,
the regularisation removed by iterative refinement, the z2 impulse maps'
second derivatives from the templated kinematics over dual numbers, relaxed
gradients on the central path for kappa). This module is their Python face.

Tangent coordinates (docs/formats.md), per body [x, v, phi, w] on inputs and outputs, with
q -> q [sqrt(1 - |phi|^2), phi]. Everything is evaluated at the state the step
started from (Dojo differentiates at the post-step state).

Parameters: body mass and inertia, gravity, joint spring and damper coefficients,
and per contact the friction coefficient, the sphere's offset and radius and the restitution
(labels: dojo_cli.model.parameters).

Smoothness (the Dojo paper's relaxed gradients): by default the derivative is taken
where the solver stopped, on its final central-path value (s o gamma ~ kappa of the
last iterate). With ``kappa`` given, the step is first re-solved on the central path
s o gamma = kappa and differentiated there: larger kappa, smoother and more biased
gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import SolverError, from_core
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels
from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal
from dojo_cli.simulation.step import core_options, refuse_armature, singular_message, solve_step
from dojo_cli.simulation.substeps import Substeps
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverResult


@dataclass
class StepGradients:
    """One step and its derivatives.

    Attributes:
        next_state: (13 nb,) the step's result.
        A: (12 nb, 12 nb) dz'/dz, or None.
        B: (12 nb, nu) dz'/du, or None.
        P: (12 nb, p) dz'/dtheta, or None; ``labels`` names its columns.
        result: the solver's result (status, iterations, residual).
        kappa: central-path value the derivatives were taken at (0 without inequalities).
    """

    next_state: np.ndarray
    A: np.ndarray | None
    B: np.ndarray | None
    P: np.ndarray | None
    labels: list[str]
    result: SolverResult
    kappa: float


def step_gradients(
    mech: Mechanism,
    z,
    u=None,
    opts: SolverOptions | None = None,
    wrt=("state", "input"),
    params=(),
    kappa: float | None = None,
    angles=None,
) -> StepGradients:
    """Solve one step from z and differentiate it (implicit function theorem).

    One call into the core for the step, one for its derivatives on that same solve.

    Args:
        mech: the mechanism.
        z: (13 nb,) maximal state [x, v, q, w] per body.
        u: (nu,) joint inputs, or None for zero.
        opts: solver options (tight tolerances give the derivative of the exact step).
        wrt: any of "state", "input", "params".
        params: parameter kinds (PARAMETER_KINDS) when "params" is in wrt.
        kappa: central-path value to differentiate at (None: where the solver stopped).
        angles: (nf,) unwrapped minimal coordinates at z (solve_step): where limited
            revolute angles wound past +-pi start; None: a fresh start (start_angle).
    """
    opts = opts or DOJO_DEFAULTS
    unknown = [kind for kind in params if kind not in PARAMETER_KINDS]
    if unknown:
        raise ValueError(f"unknown parameter kind {unknown[0]!r}; expected one of {', '.join(PARAMETER_KINDS)}")
    z_next, result = solve_step(mech, z, u, opts, angles=angles)
    codes = [PARAMETER_KINDS.index(kind) for kind in params] if "params" in wrt else []
    data = mech.core_data
    try:
        A, B, P, kappa_used = _core.gradients(
            mech.core, data, "state" in wrt, "input" in wrt, codes, -1.0 if kappa is None else float(kappa)
        )
    except RuntimeError:
        # the matrix at the solution is singular: say where (an exact zero pivot)
        raise SolverError(f"gradients: {singular_message(mech, data.singular_node)}") from None
    except (ValueError, TypeError) as exc:
        raise from_core(exc, "gradients") from None
    labels = parameter_labels(mech, params) if codes else []
    if kappa is not None and mech.has_inequalities:
        z_next = data.z_next.copy()  # the relaxed step's result
    return StepGradients(next_state=z_next, A=A, B=B, P=P, labels=labels, result=result, kappa=float(kappa_used))


def substep_gradients(
    mech: Mechanism,
    z,
    u=None,
    n: int = 2,
    opts: SolverOptions | None = None,
    wrt=("state", "input"),
    params=(),
    angles=None,
    lam=None,
    minimal: bool = False,
) -> StepGradients:
    """A step of h solved as n substeps of h/n, as a run solves a step whose full step failed
    (simulation.substeps), and the derivatives of that composed map (docs/physics.md
    "Substeps", (8)): the chain rule through the re-expressions of the state and each
    substep's own implicit-function-theorem derivatives.

    Args:
        mech: the mechanism.
        z: (13 nb,) maximal state [x, v, q, w] per body (midpoint velocities of a step of h);
            with ``minimal``, (2 nf,) the minimal state y.
        u: (nu,) inputs held over the substeps, or None for zero.
        n: the substep count (a run's ``solver/substeps``).
        wrt: any of "state", "input", "params".
        params: parameter kinds (PARAMETER_KINDS) when "params" is in wrt.
        angles: (nf,) unwrapped minimal coordinates at z (None: z's own).
        lam: (nl,) joint impulses the first substep is warm-started with (scaled by 1/n;
            None: zero): a run's, so that the step is the run's to rounding.
        minimal: minimal coordinates: y -> y' with A (2 nf, 2 nf), B (2 nf, nu), P (2 nf, p),
            the maximal derivatives between dz/dy at y and dy'/dz' at the result (the core's
            analytic conversion Jacobians).

    Raises:
        SolverError: a substep did not converge (or its end state has no state of a step of
            h: docs/physics.md "Substeps"), or a substep's Newton matrix is singular at its
            solution.
    """
    opts = opts or DOJO_DEFAULTS
    unknown = [kind for kind in params if kind not in PARAMETER_KINDS]
    if unknown:
        raise ValueError(f"unknown parameter kind {unknown[0]!r}; expected one of {', '.join(PARAMETER_KINDS)}")
    if int(n) < 2:
        raise ValueError(f"n: a substep count is >= 2, got {n}")
    refuse_armature(mech)  # as every step does (simulation/step.py)
    y = None
    if minimal:
        y = np.asarray(z, dtype=float).reshape(-1)
        z = minimal_to_maximal(mech, y)
    z = np.ascontiguousarray(z, dtype=float).reshape(-1)
    if angles is None:
        angles = np.asarray(_core.unwrapped_coordinates(mech.core, z[None])).reshape(mech.nf)
    codes = [PARAMETER_KINDS.index(kind) for kind in params] if "params" in wrt else []
    res = Substeps(mech, opts).solve(0, z, u, np.zeros(mech.nl) if lam is None else lam, angles, counts=(int(n),),
                                     wrt=tuple(wrt) if wrt else (), kinds=codes)
    if res is None:
        raise SolverError(f"substeps: the step solved as {n} substeps of {mech.timestep / n:g} s did not converge, or "
                          f"its end state has no state of a step of {mech.timestep:g} s (docs/physics.md \"Substeps\")")
    out = res.out
    result = SolverResult(np.zeros(0), STATUS_FROM_CODE[int(out["status"][0])], int(out["iterations"][0]),
                          float(out["residual"][0]), float(out["complementarity"][0]))
    z_next = out["states"][0]
    A = B = P = None
    kappa = 0.0
    if wrt:
        g = res.gradients
        if g.singular_node != -1:
            raise SolverError(f"gradients: a substep of the step solved as {n} substeps: the Newton matrix is singular "
                              "at its solution")
        A, B, P, kappa = g.A, g.B, g.P, g.kappa
    labels = parameter_labels(mech, params) if codes else []
    if minimal:
        into = maximal_to_minimal_jacobian(mech, z_next)  # dy'/dz' at the result
        A = None if A is None else into @ A @ minimal_to_maximal_jacobian(mech, y)
        B = None if B is None else into @ B
        P = None if P is None else into @ P
        z_next = maximal_to_minimal(mech, z_next)
    return StepGradients(next_state=z_next, A=A, B=B, P=P, labels=labels, result=result, kappa=float(kappa))


def maximal_gradients(mech: Mechanism, z, u=None, opts: SolverOptions | None = None, kappa=None):
    """(A, B) = (dz'/dz (12 nb, 12 nb), dz'/du (12 nb, nu)) of one step from z."""
    g = step_gradients(mech, z, u, opts, wrt=("state", "input"), kappa=kappa)
    return g.A, g.B


def parameter_gradients(mech: Mechanism, z, u=None, names=PARAMETER_KINDS, opts: SolverOptions | None = None, kappa=None):
    """(dz'/dtheta (12 nb, p), labels) for the parameter kinds ``names``."""
    g = step_gradients(mech, z, u, opts, wrt=("params",), params=tuple(names), kappa=kappa)
    return g.P, g.labels


# ------------------------------------------------------ minimal coordinates
def minimal_to_maximal_jacobian(mech: Mechanism, y) -> np.ndarray:
    """d z / d y (12 nb, 2 nf) of physics.coordinates.minimal_to_maximal, exact (the core's
    analytic Jacobian, one pass over the tree), tangents [x, v, phi, w] per body."""
    return _core.minimal_to_maximal_jacobian(mech.core, np.ascontiguousarray(y, dtype=float).reshape(-1))


def maximal_to_minimal_jacobian(mech: Mechanism, z) -> np.ndarray:
    """d y / d z (2 nf, 12 nb) of physics.coordinates.maximal_to_minimal, exact (the core's
    analytic Jacobian, one pass over the tree), tangents [x, v, phi, w] per body."""
    return _core.maximal_to_minimal_jacobian(mech.core, np.ascontiguousarray(z, dtype=float).reshape(-1))


def minimal_step_gradients(
    mech: Mechanism, y, u=None, opts: SolverOptions | None = None, wrt=("state", "input"), params=(), kappa=None
) -> StepGradients:
    """step_gradients in minimal coordinates: y -> y' with A (2nf, 2nf), B (2nf, nu), P (2nf, p).

    One call into the core (gradients.h, minimal_step_gradients): the step from
    z = minimal_to_maximal(y), stateless as dojo.step's; with ``kappa`` its move onto the
    central path; then the chain dy'/dz' (maximal -> minimal at the next state) . dz'/dz .
    dz/dy (minimal -> maximal at y) formed with the minimal directions as the right-hand
    sides (dr/dz2 dz/dy: 2 nf solves, not 12 nb) and dy'/dz' applied to the solved columns,
    both maps' Jacobians analytic (core/maximal/coordinates.h); next_state is y'.
    """
    opts = opts or DOJO_DEFAULTS
    unknown = [kind for kind in params if kind not in PARAMETER_KINDS]
    if unknown:
        raise ValueError(f"unknown parameter kind {unknown[0]!r}; expected one of {', '.join(PARAMETER_KINDS)}")
    refuse_armature(mech)  # as every step does (simulation/step.py)
    codes = [PARAMETER_KINDS.index(kind) for kind in params] if "params" in wrt else []
    data = mech.core_data
    try:
        y_next, code, w, A, B, P, kappa_used = _core.minimal_gradients(
            mech.core, data, np.ascontiguousarray(y, dtype=float).reshape(-1),
            None if u is None else np.ascontiguousarray(u, dtype=float).reshape(-1), core_options(opts),
            "state" in wrt, "input" in wrt, codes, -1.0 if kappa is None else float(kappa),
        )
    except RuntimeError:
        raise SolverError(f"gradients: {singular_message(mech, data.singular_node)}") from None
    except (ValueError, TypeError) as exc:
        raise from_core(exc, "gradients") from None
    labels = parameter_labels(mech, params) if codes else []
    result = SolverResult(w, STATUS_FROM_CODE[code], data.iterations, data.residual, data.complementarity)
    return StepGradients(next_state=y_next, A=A, B=B, P=P, labels=labels, result=result, kappa=float(kappa_used))


def minimal_gradients(mech: Mechanism, y, u=None, opts: SolverOptions | None = None, kappa=None):
    """(A_min (2nf, 2nf), B_min (2nf, nu)) of one step in minimal coordinates."""
    g = minimal_step_gradients(mech, y, u, opts, kappa=kappa)
    return g.A, g.B
