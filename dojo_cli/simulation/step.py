"""One step of Dojo's variational integrator in maximal coordinates: the Python face
of the C++ core (dojo_cli/core/maximal/step.h, the step driver; residual.h and
newton_matrix.h, where the residual and its Newton matrix are defined; interior_point.h, the solver).

Unknowns w = [per body (v25, w25) (6 nb) | joint impulses lambda (nl) |
joint-limit slacks s and impulses gamma (nlim each) | joint-friction slacks s+-, rates v+-
(2 nfr each) and impulses beta (nfr) | per contact s, gamma] (dojo_cli/core/maximal/model.h). Without contacts,
limits and joint friction the system is smooth and solved by Newton's method; with them, by
the primal-dual interior-point method. The core's
test access, ``_core.testing.step_residual`` and ``step_matrix_dense``, evaluates the
residual and the Newton matrix at any unknowns (tests/properties/test_newton_matrix.py).
"""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.errors import InputError, from_core
from dojo_cli.model.compiled import ARMATURE_MESSAGE, unsupported_armature
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.solver.options import DOJO_DEFAULTS, SolverOptions
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverResult
from dojo_cli.solver.verbose import iteration_printer


def core_options(opts: SolverOptions) -> _core.SolverOptions:
    """The core's copy of a (frozen) SolverOptions, converted once and kept on it.

    (Kept in the instance's __dict__, outside the dataclass fields: equality, hashing
    and replace() ignore it, and the options cannot change after it was made.)
    """
    out = opts.__dict__.get("_core")
    if out is None:
        out = _core.SolverOptions()
        for name in ("rtol", "btol", "max_iter", "max_ls", "ls_scale", "undercut", "no_progress_max", "no_progress_undercut",
                     "warm_start"):
            setattr(out, name, getattr(opts, name))
        out.relative = opts.tolerances == "relative"
        opts.__dict__["_core"] = out
    return out


def _vector(a, size: int, what: str) -> np.ndarray | None:
    """a as a contiguous float64 vector of ``size`` entries, or None."""
    if a is None:
        return None
    try:
        out = np.ascontiguousarray(a, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what}: not an array of numbers ({exc})") from None
    if out.size != size:
        raise InputError(f"{what} must have {size} entries, got {out.size}")
    return out


def refuse_armature(mech: Mechanism) -> None:
    """The variational integrator's guard: a mechanism with a rotor inertia it does not model
    is refused, never stepped without it.

    Raises:
        SceneError: naming each such joint (its line when the scene is known).
    """
    bad = unsupported_armature(mech)
    if not bad:
        return
    from dojo_cli.errors import Problem, SceneError

    source = getattr(mech, "source", None)
    problems = []
    for i in bad:
        field = f"joints.{i}.armature"
        problems.append(source.problem(field, ARMATURE_MESSAGE) if source is not None
                        else Problem(f"mechanism {mech.name!r}", None, field, ARMATURE_MESSAGE))
    raise SceneError(problems)


def _core_step(mech: Mechanism, data, z, u, f_ext, tau_ext, lam0, opts: SolverOptions | None) -> int:
    """One step in the C++ core, in ``data`` (one call); returns the core's status code."""
    refuse_armature(mech)
    try:
        return _core.step(
            mech.core, data, _vector(z, 13 * mech.nb, "state"), _vector(u, mech.nu, "input"),
            _vector(f_ext, 3 * mech.nb, "f_ext"), _vector(tau_ext, 3 * mech.nb, "tau_ext"),
            _vector(lam0, mech.nl, "lambda0"), core_options(opts or DOJO_DEFAULTS),
        )
    except (ValueError, TypeError, RuntimeError) as exc:
        raise from_core(exc, "step") from None


def singular_part(mech: Mechanism, node: int) -> str:
    """What a Newton-matrix node is (Data.singular_node after a singular_matrix step), for
    the failed step's message: "contact 'c1'", "joint 'hinge'", "body 'box'"."""
    if node < 0:
        return "an unknown part"
    kind, index = mech.core.node_owner[node]
    items = {"body": mech.bodies, "joint": mech.joints, "contact": mech.contacts}[kind]
    return f"{kind} {items[index].name!r}"


def singular_message(mech: Mechanism, node: int) -> str:
    """The sentence for a Newton matrix that could not be factorised at ``node``."""
    return f"the Newton matrix is singular: a zero or non-finite pivot in the block of {singular_part(mech, node)}"


def solve_step(
    mech: Mechanism, z, u=None, opts: SolverOptions | None = None, f_ext=None, tau_ext=None, lam0=None, log=None,
    data=None, angles=None, start_record=None,
) -> tuple[np.ndarray, SolverResult]:
    """Solve one step in the C++ core; returns (next state, solver result).

    Args:
        lam0: (nl,) joint impulses to warm-start with (a run's previous step).
        log: receives one dict per solver iteration (--verbose).
        data: the scratch to step in (a run's own; default the mechanism's). Its contact
            records (contact_distance, contact_normal_impulse, contact_friction_impulse,
            contact_slip) hold the solution's until the next step.
        angles: (nf,) the unwrapped minimal coordinates at z (a run's stored minimal/q):
            where limited revolute angles start (docs/physics.md, "Revolute limits of any
            size"); None: a run's data carries them, the mechanism's starts afresh.
        start_record: the interior point's start record of the step that reached z (a
            stored run's solver/start row, core maximal/step.h): the step starts as the
            run's next step did (its warm start, its restart scale); None: a run's data
            carries it, the mechanism's starts from Dojo's point.
    """
    shared = data is None
    data = mech.core_data if shared else data
    if shared:
        data.impulse_scale = 1.0  # a stateless step starts from Dojo's point (core/step.h, "Restarts")
        data.warm_valid = False  # ... and not from the last step's cones (core/step.h, "Warm start")
    if angles is not None:
        data.angle_ref[:] = _vector(angles, mech.nf, "angles")
    if start_record is not None:
        _core.restore_start(mech.core, data, np.ascontiguousarray(start_record, dtype=float),
                            np.ascontiguousarray(z, dtype=float).reshape(-1))
    try:
        code = _core_step(mech, data, z, u, f_ext, tau_ext, lam0, opts)
    finally:
        if shared and angles is not None:
            data.angle_ref[:] = np.nan  # the mechanism's scratch stays stateless (dojo.step)
    if log is not None:
        inequalities = mech.has_inequalities
        for it, res, bvio, alpha, kappa, step_norm, rvio in data.log:
            rec = {"iteration": int(it), "residual": res, "alpha": alpha, "step": step_norm}
            if inequalities:
                rec.update(bvio=bvio, rvio=rvio, kappa=kappa)
            log(rec)
    result = SolverResult(data.w.copy(), STATUS_FROM_CODE[code], data.iterations, data.residual, data.complementarity)
    return data.z_next.copy(), result


def step(mech: Mechanism, z, u=None, opts: SolverOptions | None = None, f_ext=None, tau_ext=None) -> np.ndarray:
    """The next maximal state [x3, v25, q3, w25] per body, (13 nb,).

    Args:
        mech: the mechanism.
        z: (13 nb,) maximal state [x2, v15, q2, w15] per body.
        u: (nu,) joint inputs in joint order (forces N, torques N m), or None for zero.
        opts: solver options (defaults: Dojo's); with ``verbose``, the solver's iterations
            are printed on stderr.
        f_ext: (nb,3) external forces on the centres of mass, world frame.
        tau_ext: (nb,3) external torques, body frame.
    """
    if opts is not None and opts.verbose:  # Dojo's iteration table on stderr (solver.verbose)
        return solve_step(mech, z, u, opts, f_ext, tau_ext, log=iteration_printer())[0]
    if mech.has_armature:
        refuse_armature(mech)
    # the shortest path, one crossing: no solver record (solve_step has it); stateless, from
    # Dojo's starting point (core/step.h, "Restarts"); float64 C-contiguous arrays of the
    # right sizes go in as they are, and the next state comes back as one new array
    out = np.empty(13 * mech.nb)
    try:
        _core.next_state(mech.core, mech.core_data, z, u, f_ext, tau_ext, core_options(opts or DOJO_DEFAULTS), out)
        return out
    except (TypeError, ValueError):
        pass  # other arrays, lists, wrong sizes: converted, or refused with their message, below
    mech.core_data.impulse_scale = 1.0
    mech.core_data.warm_valid = False
    _core_step(mech, mech.core_data, z, u, f_ext, tau_ext, None, opts)
    return mech.core_data.z_next.copy()
