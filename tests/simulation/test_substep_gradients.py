"""The derivatives of a step solved as substeps (simulation.substeps.SubstepChain; docs/physics.md
"Substeps", Gradients): the re-expression of a state for another step length
(core step_length.h midpoint_for_step_jacobian) and the whole step of h solved as n substeps,
each against central finite differences of the map itself; the run's gradient rows of a
substepped step."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.analysis.gradient_check import check_gradients, four_point, perturb_maximal, perturb_tangent, tangent_difference
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels, parameter_values, with_parameters
from dojo_cli.simulation.integrators import Variational
from dojo_cli.simulation.rollout_gradients import rollout_jvp, rollout_vjp
from dojo_cli.simulation.substeps import Substeps
from dojo_cli.solver.status import STATUS_FROM_CODE, SolverStatus

# Solves to rtol = btol = 1e-12: the substeps' Newton solves (no inequalities here) end at
# rounding, so the finite differences measure the map, not the solver's tolerance.
TIGHT = 1e-12
# The 4-point stencil's steps: truncation O(e^4), rounding ~ (the solves' rounding) / e. The
# re-expression (Newton to 1e-14 of the momenta) at 1e-6: measured 1.2e-10 .. 4e-9 (the
# T-handle's inertia of 0.001 kg m^2 wants the smaller step); the substepped step (four
# solves at TIGHT) at 1e-5: measured 7e-9 (A), 1e-9 (B), 2.3e-9 (P) (3e-8 at 1e-6: rounding).
EPS = 1e-6
STEP_EPS = 1e-5
# Jacobian against finite differences, |J - FD| / max(1, |FD|), above what was measured; a
# missing term is far above it (without the springs' second derivatives in the
# re-expressions: 1.0 for the re-expression, 0.1 for the substepped step's A).
FD_TOL = 1e-7
# Reverse against forward mode, the same products summed in another order: rounding.
ADJOINT_TOL = 1e-12

# The cart-pole with springs on both joints (a translational and a rotational spring, so
# that the re-expressions' configuration term, the springs' second derivatives, is
# exercised), midpoint dampers, rotor inertia on both (a linear rotor on the slider, a
# rotational one on the hinge: their left momenta are in the re-expressions), and the pole
# swinging.
CARTPOLE_SET = {"joints.*.spring": 4.0, "joints.*.damper": 0.3, "joints.*.armature": 0.2,
                "joints.pole_hinge.initial.velocity": [2.0]}


@pytest.fixture(scope="module")
def cartpole():
    return dojo.load_scene("cartpole", CARTPOLE_SET)


def _options(mech):
    return dojo.default_options(mech).replace(rtol=TIGHT, btol=TIGHT, max_iter=100)


def _angles(mech, z):
    return np.asarray(_core.unwrapped_coordinates(mech.core, np.ascontiguousarray(z[None]))).reshape(mech.nf)


def _worst(J, FD):
    return float(np.max(np.abs(J - FD) / np.maximum(1.0, np.abs(FD))))


@pytest.mark.parametrize("scene", ["cartpole", "dzhanibekov"])
def test_reexpression_jacobian_matches_finite_differences(scene, cartpole):
    """midpoint_for_step_jacobian (h -> h/4 and back) against finite differences of
    midpoint_for_step: every state column (positions through the springs' forces, velocities
    through both left transforms) and the parameters it depends on (mass, inertia, gravity,
    spring), plus the zero columns of those it does not (damper)."""
    mech = cartpole if scene == "cartpole" else dojo.load_scene("dzhanibekov")
    z = dojo.initial_state(mech)
    fine, fine_data = Substeps(mech, _options(mech)).model(4)
    kinds = ("mass", "inertia", "gravity", "spring", "damper")
    codes = [PARAMETER_KINDS.index(k) for k in kinds]
    labels = parameter_labels(mech, kinds)
    values = parameter_values(mech, labels)
    for direction in ("down", "up"):
        def reexpress(m, z_in, n=4):
            coarse_data = _core.Data(m.core)
            f, fd = Substeps(m, _options(m)).model(n)
            if direction == "down":
                out, ok, _, _ = _core.midpoint_for_step(m.core, coarse_data, f, fd, z_in)
            else:
                out, ok, _, _ = _core.midpoint_for_step(f, fd, m.core, coarse_data, z_in)
            assert ok
            return out

        z_in = z if direction == "down" else reexpress(mech, z)  # a state of h/4 for "up"
        z_out = reexpress(mech, z_in)
        if direction == "down":
            A, P = _core.midpoint_for_step_jacobian(mech.core, _core.Data(mech.core), fine, fine_data, z_in, z_out, codes)
        else:
            A, P = _core.midpoint_for_step_jacobian(fine, fine_data, mech.core, _core.Data(mech.core), z_in, z_out, codes)
        fd_a = np.stack([four_point(lambda d, k=k: tangent_difference(mech.nb, z_out, reexpress(
            mech, perturb_maximal(z_in, mech.nb, k, d))), EPS) for k in range(12 * mech.nb)], axis=1)
        fd_p = np.stack([four_point(lambda d, lab=lab, v=v: tangent_difference(mech.nb, z_out, reexpress(
            with_parameters(mech, [lab], [v + d]), z_in)), EPS * max(1.0, abs(v)))
            for lab, v in zip(labels, values)], axis=1)
        assert _worst(A, fd_a) < FD_TOL, f"{scene} {direction}: A off by {_worst(A, fd_a):.2e}"
        assert _worst(P, fd_p) < FD_TOL, f"{scene} {direction}: P off by {_worst(P, fd_p):.2e}"
        assert np.abs(A).max() > 0 and np.abs(P[:, [i for i, l in enumerate(labels) if ".damper" not in l]]).max() > 0


def test_substepped_step_jacobians_match_finite_differences(cartpole):
    """The step of h solved as 2 substeps of h/2 (R_up S S R_down): its composed A, B and P
    (spring, mass) against finite differences of the whole substepped step."""
    mech = cartpole
    opts = _options(mech)
    z = dojo.initial_state(mech)
    u = np.array([0.3, -0.2])[: mech.nu]
    kinds = ("spring", "mass")
    codes = [PARAMETER_KINDS.index(k) for k in kinds]

    def step(m, z_in, u_in, **kwargs):
        res = Substeps(m, opts).solve(0, z_in, u_in, np.zeros(m.nl), _angles(m, z_in), counts=(2,), **kwargs)
        assert res is not None and res.n == 2
        return res

    res = step(mech, z, u, wrt=("state", "input", "params"), kinds=codes)
    g, z_next = res.gradients, res.out["states"][0]
    assert g.singular_node == -1
    fd_a = np.stack([four_point(lambda d, k=k: tangent_difference(mech.nb, z_next, step(
        mech, perturb_maximal(z, mech.nb, k, d), u).out["states"][0]), STEP_EPS) for k in range(12 * mech.nb)], axis=1)
    fd_b = np.stack([four_point(lambda d, i=i: tangent_difference(mech.nb, z_next, step(
        mech, z, u + d * np.eye(mech.nu)[i]).out["states"][0]), STEP_EPS) for i in range(mech.nu)], axis=1)
    labels = parameter_labels(mech, kinds)
    fd_p = np.stack([four_point(lambda d, lab=lab, v=v: tangent_difference(mech.nb, z_next, step(
        with_parameters(mech, [lab], [v + d]), z, u).out["states"][0]), STEP_EPS * max(1.0, abs(v)))
        for lab, v in zip(labels, parameter_values(mech, labels))], axis=1)
    for name, J, FD in (("A", g.A, fd_a), ("B", g.B, fd_b), ("P", g.P, fd_p)):
        assert _worst(J, FD) < FD_TOL, f"{name} off by {_worst(J, FD):.2e}"
    # not the full step's: the substeps' map is another one (it differs by O(h^2) terms)
    full = dojo.step_gradients(mech, z, u, opts, wrt=("state",))
    assert np.abs(full.A - g.A).max() > 1e-6


def test_a_runs_gradient_rows_of_a_substepped_step(cartpole):
    """A run with per-step gradients (dojo simulate --gradients) whose step 2 is solved as 2
    substeps: that step's A and B rows (gradients/A, gradients/B) against finite differences
    of the substepped step from the run's state 2 (the storage of these rows:
    test_substeps.py)."""
    mech = cartpole
    opts = _options(mech)
    integrator = Variational(mech, dojo.initial_state(mech), opts=opts, forced_substeps={2: 2},
                             gradients=("state", "input"))
    blocks = [integrator.advance(k, 1)[0] for k in range(4)]
    assert [int(b.substeps[0]) for b in blocks] == [1, 1, 2, 1]
    A, B = blocks[2].gradients["gradients/A"][0], blocks[2].gradients["gradients/B"][0]
    z, angles, z_next = blocks[1].z[-1], blocks[1].minimal_q[-1], blocks[2].z[-1]
    u = np.zeros(mech.nu)

    def step(z_in, u_in):
        res = Substeps(mech, opts).solve(2, z_in, u_in, np.zeros(mech.nl), angles, counts=(2,))
        return res.out["states"][0]

    np.testing.assert_allclose(step(z, u), z_next, rtol=0, atol=1e-12)
    fd_a = np.stack([four_point(lambda d, k=k: tangent_difference(mech.nb, z_next, step(
        perturb_maximal(z, mech.nb, k, d), u)), STEP_EPS) for k in range(12 * mech.nb)], axis=1)
    fd_b = np.stack([four_point(lambda d, i=i: tangent_difference(mech.nb, z_next, step(
        z, u + d * np.eye(mech.nu)[i])), STEP_EPS) for i in range(mech.nu)], axis=1)
    assert _worst(A, fd_a) < FD_TOL and _worst(B, fd_b) < FD_TOL, (_worst(A, fd_a), _worst(B, fd_b))


def _failing_at(T: int, step: int, code: int, monkeypatch) -> None:
    """The core's differentiated rollouts (``_core.rollout_jvp``, ``rollout_vjp``) report
    step ``step`` of a rollout of T steps failed with status ``code`` (the calls over all T
    steps from step 0: they stop there, as at a step whose solve fails after all its
    restarts); every other call (the stretches after it) as it is."""
    jvp, vjp = _core.rollout_jvp, _core.rollout_vjp
    n = step + 1

    def cut(a):
        return None if a is None else np.ascontiguousarray(a[:n])

    def failing(out):
        out["status"][step] = code
        return out

    def rollout_jvp_(model, data, z, k, inputs, lam, opts, kappa, codes, dz0, du, dp):
        if k != T:
            return jvp(model, data, z, k, inputs, lam, opts, kappa, codes, dz0, du, dp)
        return failing(jvp(model, data, z, n, cut(inputs), lam, opts, kappa, codes, dz0, cut(du), dp))

    def rollout_vjp_(model, data, z, k, inputs, lam, opts, kappa, codes, cotangents):
        if k != T:
            return vjp(model, data, z, k, inputs, lam, opts, kappa, codes, cotangents)
        return failing(vjp(model, data, z, n, cut(inputs), lam, opts, kappa, codes, cut(cotangents)))

    monkeypatch.setattr(_core, "rollout_jvp", rollout_jvp_)
    monkeypatch.setattr(_core, "rollout_vjp", rollout_vjp_)


@pytest.mark.parametrize("case", ["forced", "failed"])
def test_rollout_jvp_and_vjp_through_substepped_steps(case, cartpole, monkeypatch):
    """Rollouts of 6 steps through substepped steps (rollout_gradients: the core's stretches
    of full steps, the substepped steps' composed maps between them). "forced": steps 2 and 4
    solved as 2 and 4 substeps; "failed": the core reports step 2 failed (the rollout's own
    retry then solves it as substeps, 2 of them, the first count, as a run would). Forward
    mode against finite differences of the rollout along one direction in (z0, U, spring
    stiffnesses); reverse mode against forward mode (<zbar, J dz> = <J^T zbar, dz>, every
    state's cotangent at once)."""
    mech, opts, T = cartpole, _options(cartpole), 6
    forced = {2: 2, 4: 4}
    rng = np.random.default_rng(0)
    kinds = ("spring",)
    z0 = dojo.initial_state(mech)
    U = 0.3 * rng.standard_normal((T, mech.nu))
    dz0, dU = rng.standard_normal(12 * mech.nb), rng.standard_normal((T, mech.nu))
    labels = parameter_labels(mech, kinds)
    dp = rng.standard_normal(len(labels))
    values = parameter_values(mech, labels)
    reference = rollout_jvp(mech, z0, U, dz0, dU, dp, kinds, opts, forced_substeps={2: 2})
    if case == "failed":
        _failing_at(T, 2, STATUS_FROM_CODE.index(SolverStatus.MAX_ITERATIONS), monkeypatch)
        forced = None
    tan = rollout_jvp(mech, z0, U, dz0, dU, dp, kinds, opts, forced_substeps=forced)
    if case == "failed":  # the failed step retried as 2 substeps: the forced rollout's states and tangents
        np.testing.assert_array_equal(tan.states, reference.states)
        np.testing.assert_array_equal(tan.tangents, reference.tangents)
    # the substepped steps are not full steps: the plain rollout differs from step 2 on
    plain = rollout_jvp(mech, z0, U, dz0, dU, dp, kinds, opts) if case == "forced" else None
    if plain is not None:
        assert np.abs(plain.states[2] - tan.states[2]).max() > 1e-9 and np.array_equal(plain.states[:2], tan.states[:2])

    def states(e):
        m = with_parameters(mech, labels, values + e * dp)
        return rollout_jvp(m, perturb_tangent(mech.nb, z0, e * dz0), U + e * dU, opts=opts,
                           forced_substeps=forced).states

    fd = four_point(lambda e: np.stack([tangent_difference(mech.nb, a, b) for a, b in zip(tan.states, states(e))]),
                    STEP_EPS)
    err = _worst(tan.tangents, fd)
    assert err < FD_TOL, f"{case}: rollout tangents off by {err:.2e}"

    bar = rng.standard_normal((T, 12 * mech.nb))
    cot = rollout_vjp(mech, z0, U, bar, kinds, opts, forced_substeps=forced)
    np.testing.assert_array_equal(cot.states, tan.states)
    lhs = float(np.sum(bar * tan.tangents))
    rhs = float(cot.z0 @ dz0 + np.sum(cot.inputs * dU) + cot.params @ dp)
    assert abs(lhs - rhs) < ADJOINT_TOL * max(1.0, abs(lhs)), f"{case}: <zbar, J dz> {lhs!r}, <J^T zbar, dz> {rhs!r}"


@pytest.mark.parametrize("minimal", [False, True], ids=["maximal", "minimal"])
def test_step_gradients_of_substeps_pass_their_check(minimal, cartpole):
    """dojo.step_gradients(..., substeps=2) (what `dojo gradients --from RUN --index K` of a
    substepped step computes), in maximal and in minimal coordinates (the conversions'
    Jacobians around the composed map), against `dojo gradients --check`'s finite
    differences of the substepped map (analysis.gradient_check, substeps=2)."""
    mech = cartpole
    opts = _options(mech)
    z = dojo.initial_state(mech)
    x0 = dojo.maximal_to_minimal(mech, z) if minimal else z
    u = np.array([0.3, -0.2])[: mech.nu]
    g = dojo.step_gradients(mech, x0, u, opts, wrt=("state", "input", "params"), params=("spring",), minimal=minimal,
                            substeps=2)
    rows = [str(i) for i in range(g.A.shape[0])]
    blocks = {"A": (g.A, rows, rows), "B": (g.B, rows, [str(i) for i in range(mech.nu)]), "P": (g.P, rows, g.labels)}
    report = check_gradients(mech, x0, u, opts, blocks, minimal=minimal, eps=STEP_EPS, kinds=("spring",), substeps=2)
    assert report.unconverged == 0 and max(report.blocks.values()) < FD_TOL, report.blocks
