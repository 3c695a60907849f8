"""The solver against independent answers: the LQR solution of scipy's Riccati solver on a
double integrator, first-order conditions checked by finite differences of whole rollouts,
and the swing-up goal reached in both representations."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

import dojo_cli as dojo
from dojo_cli.optimize.boxqp import solve_box_qp
from dojo_cli.optimize.ilqr import OptimizeOptions, _Multipliers, cost, objective, solve
from dojo_cli.optimize.problem import rollout
from dojo_cli.optimize.task import load_task

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "optimize"

# One Riccati recursion in floating point against scipy's DARE: roundoff of O(100) sums
# of products of gains of size 1e3 (relative 1e-13 each).
LQR_TOLERANCE = 1e-9
# The swing-up's goal (the acceptance numbers): upright within 1e-3 rad, cart
# at the origin within 1e-3 m.
GOAL_TOLERANCE = 1e-3
# First-order conditions: every free input's partial derivative of the Lagrangian below this.
STATIONARITY_TOLERANCE = 1e-6
# Central differences of whole rollouts: step (relative to 1 N), truncation O(eps^2 f''')
# ~1e-10, noise rtol / eps ~1e-7 with the steps solved to rtol 1e-12.
FD_STEP = 1e-5


def test_box_qp_matches_a_brute_force_minimum():
    rng = np.random.default_rng(0)
    for _ in range(20):
        M = rng.normal(size=(3, 3))
        H = M @ M.T + 0.1 * np.eye(3)
        q = rng.normal(size=3) * 3
        lo, hi = -np.ones(3), np.ones(3)
        qp = solve_box_qp(H, q, lo, hi)
        grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, 41)] * 3), -1).reshape(-1, 3)
        values = 0.5 * np.einsum("ni,ij,nj->n", grid, H, grid) + grid @ q
        best = values.min()
        f = 0.5 * qp.x @ H @ qp.x + q @ qp.x
        assert f <= best + 1e-12, f"box QP value {f} above a grid point's {best}"
        g = q + H @ qp.x  # KKT: zero gradient on the free inputs, pointing out at the bounds
        assert np.all(np.abs(g[qp.free]) < 1e-10), g


def test_one_iteration_is_the_lqr_solution_of_scipy():
    """Double integrator (the slider without spring and gravity): the step is exactly
    x' = x + h v', v' = v + h u / m, and one iteration's first gains and inputs are the
    infinite-horizon LQR's (the horizon is long enough for the Riccati recursion to
    converge to 1e-13)."""
    task = load_task(CONFIGS / "slider_lqr.yaml")
    p = task.problem
    h, m = p.mech.timestep, p.mech.bodies[0].mass
    A = np.array([[1.0, h], [0.0, 1.0]])
    B = np.array([[h * h / m], [h / m]])
    y0 = dojo.maximal_to_minimal(p.mech, p.z0)
    A_dojo, B_dojo = dojo.minimal_gradients(p.mech, y0, [0.3], opts=p.opts)
    assert np.max(np.abs(A_dojo - A)) < 1e-12 and np.max(np.abs(B_dojo - B)) < 1e-12, (A_dojo, B_dojo)
    Q = np.diag(p.stage.weight)  # [position, velocity] weights, the minimal state's order
    R = np.diag(p.effort)
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    K_lqr = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
    result = solve(p, task.initial_guess, dataclasses.replace(task.options, max_iterations=1))
    assert result.iterations == 1 and result.status == "converged", result.message
    err = np.max(np.abs(result.K[0] + K_lqr))
    assert err < LQR_TOLERANCE * np.max(np.abs(K_lqr)), f"first gains differ from the DARE's by {err:.2e}"
    u0 = -K_lqr @ y0
    assert abs(result.traj.U[0, 0] - u0[0]) < LQR_TOLERANCE * abs(u0[0]), (result.traj.U[0], u0)
    # the whole trajectory is the closed loop of the finite-horizon Riccati gains (independent recursion)
    N = p.horizon
    Pk = np.diag(p.terminal.weight)
    gains = []
    for _ in range(N):
        Kk = np.linalg.solve(R + B.T @ Pk @ B, B.T @ Pk @ A)
        Pk = Q + A.T @ Pk @ (A - B @ Kk)
        gains.append(Kk)
    y = y0.copy()
    for k, Kk in enumerate(reversed(gains)):
        u = -Kk @ y
        assert abs(result.traj.U[k, 0] - u[0]) < LQR_TOLERANCE * max(1.0, abs(u[0])), (k, result.traj.U[k], u)
        y = A @ y + B @ u


def _lagrangian_gradient_by_differences(task, result):
    """d/du of J + lambda* . c(s_N) over the free inputs, central differences of full
    rollouts, with lambda* = lambda + mu c the multipliers the solver's last update gives."""
    p = task.problem
    c_of = lambda traj: dojo_cli_equality(p, traj)  # noqa: E731
    lam = result.multipliers["terminal"] + result.multipliers["penalty"] * c_of(result.traj)
    L = lambda U: (lambda tr: cost(p, tr) + lam @ c_of(tr))(rollout(p, U))  # noqa: E731
    U = result.traj.U
    free = np.argwhere((U > p.lower + 1e-9) & (U < p.upper - 1e-9))
    grad = np.zeros(len(free))
    for i, (k, j) in enumerate(free):
        Up, Um = U.copy(), U.copy()
        Up[k, j] += FD_STEP
        Um[k, j] -= FD_STEP
        grad[i] = (L(Up) - L(Um)) / (2 * FD_STEP)
    return grad, free


def dojo_cli_equality(p, traj):
    from dojo_cli.optimize.ilqr import _equality

    return _equality(p, traj)


def test_cartpole_swing_up_reaches_upright_and_is_stationary():
    """The full swing-up in minimal coordinates (its maximal twin, the same in maximal
    coordinates, is in benchmarks/optimize_speed.py; the representations are compared on
    a shorter task below)."""
    task = load_task(CONFIGS / "cartpole_swingup.yaml")
    assert task.problem.representation == "minimal"
    result = solve(task.problem, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    q_end, v_end = result.traj.MQ[-1], result.traj.MV[-1]
    assert abs(q_end[0]) < GOAL_TOLERANCE, f"cart at {q_end[0]:.2e} m"
    assert abs(q_end[1]) < GOAL_TOLERANCE, f"pole at {q_end[1]:.2e} rad from upright"
    assert np.max(np.abs(v_end)) < GOAL_TOLERANCE, f"final velocities {v_end}"
    # it swung up: the pole went through the horizontal from hanging (pi) to upright (0)
    assert abs(result.traj.MQ[0, 1]) > 3.1
    # the hinge's input stayed at its bounds [0, 0]; the cart's within [-30, 30]
    assert np.all(result.traj.U[:, 1] == 0.0) and np.all(np.abs(result.traj.U[:, 0]) <= 30.0)
    grad, free = _lagrangian_gradient_by_differences(task, result)
    assert len(free) > 50, "most cart inputs are off their bounds"
    worst = np.max(np.abs(grad))
    assert worst < STATIONARITY_TOLERANCE, f"Lagrangian gradient {worst:.2e} (finite differences of rollouts)"
    _gains_track_the_plan_under_a_perturbation(task, result)


CATCH = """\
scene: cartpole
set: {{timestep: 0.02, solver.rtol: 1.0e-12}}
horizon: 30
representation: {representation}
costs: {{state: {{joints.cart_slider: 1.0}}, input: 0.01}}
constraints:
  inputs: {{pole_hinge: [0, 0]}}
  terminal: [joints.pole_hinge, joints.pole_hinge.velocity]
solver: {{gradient_tolerance: 1.0e-8, constraint_tolerance: 1.0e-8, penalty: 100.0}}
"""


def test_both_representations_give_the_same_stationary_optimum(tmp_path):
    """The cartpole's falling pole (pi/4 from upright) caught upright in 0.6 s by the cart,
    solved with the backward pass in minimal and in maximal coordinates: the same optimum;
    the maximal one stationary by finite differences of rollouts, and its gains (12 per
    body, on the maximal tangent) track the plan under a perturbation."""
    results = {}
    for representation in ("minimal", "maximal"):
        path = tmp_path / f"catch_{representation}.yaml"
        path.write_text(CATCH.format(representation=representation))
        task = load_task(path)
        results[representation] = result = solve(task.problem, task.initial_guess, task.options)
        assert result.status == "converged", (representation, result.message)
        assert abs(result.traj.MQ[-1, 1]) < 1e-8 and abs(result.traj.MV[-1, 1]) < 1e-8
    a, b = results["minimal"].traj.U[:, 0], results["maximal"].traj.U[:, 0]
    assert np.max(np.abs(a - b)) < 1e-5 * np.max(np.abs(a)), f"optima differ by {np.max(np.abs(a - b)):.2e} N"
    grad, free = _lagrangian_gradient_by_differences(task, result)
    assert len(free) == 30
    worst = np.max(np.abs(grad))
    assert worst < STATIONARITY_TOLERANCE, f"Lagrangian gradient {worst:.2e} (finite differences of rollouts)"
    _gains_track_the_plan_under_a_perturbation(task, result)


def _gains_track_the_plan_under_a_perturbation(task, result):
    """The stored gains are what they are for: started 0.02 rad off, the open-loop plan
    ends far from upright, the plan tracked with u = u* + K (s - s*) ends close to it."""
    from dojo_cli.optimize.problem import closed_loop_rollout, linearize

    p = task.problem
    y0 = dojo.maximal_to_minimal(p.mech, p.z0)
    y0[2] += 0.02  # the pole's angle (per joint [coordinates; velocities]: cart q, cart v, pole q, pole v)
    off = dataclasses.replace(p, z0=dojo.minimal_to_maximal(p.mech, y0))
    open_loop = rollout(off, result.traj.U)
    lin = linearize(p, result.traj, None, False, False) if p.representation == "minimal" else None
    tracked = closed_loop_rollout(off, result.traj, lin, np.zeros_like(result.d), result.K, 0.0)
    upright = lambda traj: abs(np.angle(np.exp(1j * traj.MQ[-1, 1])))  # noqa: E731 (the angle from upright, wrapped)
    miss_open, miss_tracked = upright(open_loop), upright(tracked)
    assert miss_tracked < 0.05 * miss_open, f"pole {miss_tracked:.2e} rad from upright tracked, {miss_open:.2e} open loop"


def test_interrupt_keeps_the_best_iterate():
    task = load_task(CONFIGS / "cartpole_swingup.yaml")
    costs = []

    def progress(record):
        costs.append(record["objective"])
        if record["iteration"] == 3:
            raise KeyboardInterrupt

    result = solve(task.problem, task.initial_guess, task.options, progress)
    assert result.status == "interrupted" and result.iterations == 3
    # each iteration lowered the objective (the augmented Lagrangian; no outer update in 3
    # iterations here), and the kept iterate is the last, the best
    m = _Multipliers(eq=result.multipliers["terminal"], ineq=result.multipliers["path"], mu=result.multipliers["penalty"])
    first = objective(task.problem, rollout(task.problem, task.initial_guess), m)
    assert first > costs[0] > costs[1] > costs[2], (first, costs)
    assert objective(task.problem, result.traj, m) == costs[-1]
    # the kept trajectory is the rollout of its own inputs
    again = rollout(task.problem, result.traj.U)
    assert np.max(np.abs(again.Z - result.traj.Z)) == 0.0


def test_a_rollout_that_fails_ends_diverged_with_its_reason():
    task = load_task(CONFIGS / "cartpole_swingup.yaml")
    p = dataclasses.replace(task.problem, opts=task.problem.opts.replace(max_iter=1))
    result = solve(p, task.initial_guess, task.options)
    assert result.status == "diverged" and "fails at step 0" in result.message, result.message


def test_python_api_and_the_written_run_is_the_optimal_trajectory(tmp_path):
    from dojo_cli.io.storage import read_storage
    from dojo_cli.optimize.results import write_results

    result = dojo.optimize(CONFIGS / "slider_lqr.yaml")
    assert result.status == "converged" and result.task.problem.horizon == 100
    assert abs(result.traj.MQ[-1, 0]) < 1e-6, "the slider is brought to the origin"
    written = write_results(result.task, result, tmp_path / "out.h5")
    stored = read_storage(written.storage)
    Z = result.traj.Z.reshape(len(result.traj.Z), -1, 13)
    # the library's run loop on the written schedule is the optimiser's own rollout, bit for bit
    assert np.array_equal(stored.trajectory.x, Z[:, :, 0:3]) and np.array_equal(stored.trajectory.q, Z[:, :, 6:10])
    assert np.array_equal(stored.trajectory.inputs, result.traj.U)
    assert isinstance(OptimizeOptions(), OptimizeOptions)


# The block's acceptance number (the issue): within 1 cm of its goal.
BLOCK_TOLERANCE = 0.01


_BLOCK_FINAL: dict[str, np.ndarray] = {}


def _block_task(tmp_path, representation: str):
    """The block task, or its maximal-coordinate twin with the goal as the body's position."""
    if representation == "minimal":
        return load_task(CONFIGS / "block_push.yaml")
    text = (CONFIGS / "block_push.yaml").read_text()
    text = text.replace("representation: minimal", "representation: maximal")
    text = text.replace("goal: {joints.floating_base: [1.0, 0.0, 0.25, 0.0, 0.0, 0.0]}", "goal: {bodies.box.position: [1.0, 0.0, 0.25]}")
    text = text.replace("terminal: {joints.floating_base: [1000, 1000, 0, 0, 0, 0]", "terminal: {bodies.box.position: [1000, 1000, 0]")
    assert text.count("bodies.box.position") == 2
    path = tmp_path / "block_push_maximal.yaml"
    path.write_text(text)
    return load_task(path)


@pytest.mark.parametrize("representation", ["minimal", "maximal"])
def test_block_pushed_through_friction_from_zero_inputs(tmp_path, representation):
    """At rest the box sticks: the exact derivative of its next position with respect to a
    push below mu m g is zero (static friction holds it), so exact gradients from a
    zero-input start see nothing; the relaxed ones (kappa) do, and the kappa schedule
    brings the box to its goal 1 m away. The same problem posed in maximal coordinates,
    with the goal as the body's position, has the same optimum."""
    task = _block_task(tmp_path, representation)
    p = task.problem
    y0 = dojo.maximal_to_minimal(p.mech, p.z0)
    A, B = dojo.minimal_gradients(p.mech, y0, np.zeros(p.nu), opts=p.opts)
    push = B[0, 0]  # d x' / d u_x, the minimal state's first entry (x), the first input (force along x)
    assert abs(push) < 1e-6, f"exact gradient of a sticking box {push:.2e}"
    _, B_relaxed = dojo.minimal_gradients(p.mech, y0, np.zeros(p.nu), opts=p.opts, kappa=1e-2)
    assert B_relaxed[0, 0] > 1e-6, f"relaxed gradient {B_relaxed[0, 0]:.2e}"
    result = solve(p, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    stages = sorted({rec["kappa"] for rec in result.log})
    assert stages == [-1.0, 1e-4, 1e-2], f"the schedule's stages were solved in turn: {stages}"
    x_end = result.traj.Z[-1, 0:3]
    assert abs(x_end[0] - 1.0) < BLOCK_TOLERANCE and abs(x_end[1]) < BLOCK_TOLERANCE, f"box ends at {x_end}"
    assert np.all(result.traj.U[:, 2:] == 0.0), "only horizontal forces"
    _BLOCK_FINAL[representation] = x_end
    if len(_BLOCK_FINAL) == 2:  # (both ran in this process: compare)
        diff = np.max(np.abs(_BLOCK_FINAL["minimal"] - _BLOCK_FINAL["maximal"]))
        assert diff < 1e-6, f"minimal and maximal optima differ by {diff:.2e} m"


def test_path_constraint_bounds_the_velocity_and_the_goal_is_still_reached(tmp_path):
    """The double integrator brought from 1 m to rest at the origin moves at up to 12.8 m/s;
    with the path inequality |v| <= 2 m/s the optimum runs along the bound (active) and
    still ends at the origin (the terminal constraint)."""
    text = (CONFIGS / "slider_lqr.yaml").read_text()
    free = solve(load_task(CONFIGS / "slider_lqr.yaml").problem, np.zeros((100, 1))).traj.MV[:, 0]
    assert np.max(np.abs(free)) > 2.0, f"unconstrained top speed {np.max(np.abs(free)):.2f} m/s"
    text = text.replace("solver: {gradient_tolerance: 1.0e-9}",
                        "constraints:\n  terminal: [joints.slide, joints.slide.velocity]\n"
                        "  path: [{coordinate: joints.slide.velocity, lower: -2.0, upper: 2.0}]\n"
                        "solver: {gradient_tolerance: 1.0e-6, constraint_tolerance: 1.0e-5}")
    path = tmp_path / "slider_path.yaml"
    path.write_text(text)
    task = load_task(path)
    result = solve(task.problem, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    v = result.traj.MV[:, 0]
    tol = task.options.constraint_tolerance
    assert np.max(np.abs(v)) <= 2.0 + tol, np.max(np.abs(v))
    assert np.sum(np.abs(v) > 2.0 - 1e-3) >= 10, "the bound is active along a stretch"
    assert abs(result.traj.MQ[-1, 0]) < tol and abs(v[-1]) < tol, (result.traj.MQ[-1], v[-1])


def test_a_target_at_a_chosen_time_is_the_least_squares_optimum(tmp_path):
    """A cost on the slider's position at t = 0.5 s (besides stage, effort and terminal
    costs) keeps the problem linear-quadratic: one iteration is its optimum, which is
    also the solution of the dense least-squares problem in the inputs (states linear in
    U, built here from the analytic double integrator)."""
    text = (CONFIGS / "slider_lqr.yaml").read_text()
    text = text.replace("  terminal: {joints.slide: 10000.0, joints.slide.velocity: 10.0}",
                        "  terminal: {joints.slide: 10000.0, joints.slide.velocity: 10.0}\n"
                        "  targets: [{coordinate: joints.slide, time: 0.5, value: 2.0, weight: 1.0e+6}]")
    assert "targets" in text
    path = tmp_path / "waypoint.yaml"
    path.write_text(text)
    task = load_task(path)
    p = task.problem
    assert [k for k, _ in p.targets] == [50]
    result = solve(p, task.initial_guess, dataclasses.replace(task.options, max_iterations=1))
    assert result.status == "converged", result.message
    h, m, N = p.mech.timestep, p.mech.bodies[0].mass, p.horizon
    A = np.array([[1.0, h], [0.0, 1.0]])
    B = np.array([[h * h / m], [h / m]])
    y0 = dojo.maximal_to_minimal(p.mech, p.z0)
    # y_k = A^k y0 + sum_j A^(k-1-j) B u_j: rows of the residual, linear in U
    rows, rhs = [], []
    Ak = [np.linalg.matrix_power(A, k) for k in range(N + 1)]

    def state_rows(k):
        G = np.zeros((2, N))
        for j in range(k):
            G[:, j] = (Ak[k - 1 - j] @ B)[:, 0]
        return G, Ak[k] @ y0

    for k in range(N + 1):
        G, c = state_rows(k)
        w = p.stage.weight if k < N else p.terminal.weight
        rows.append(np.sqrt(w)[:, None] * G)
        rhs.append(-np.sqrt(w) * c)
    G, c = state_rows(50)
    rows.append(np.sqrt(1e6) * G[:1])
    rhs.append(np.sqrt(1e6) * (2.0 - c[:1]))
    rows.append(np.sqrt(p.effort[0]) * np.eye(N))
    rhs.append(np.zeros(N))
    U, *_ = np.linalg.lstsq(np.concatenate(rows), np.concatenate(rhs), rcond=None)
    err = np.max(np.abs(result.traj.U[:, 0] - U))
    assert err < LQR_TOLERANCE * np.max(np.abs(U)), f"inputs differ from least squares by {err:.2e}"
    # the target pulls the slider from the origin, where the stage cost holds it, towards 2 m
    assert result.traj.MQ[50, 0] > 1.5, f"the slider at t = 0.5 s: {result.traj.MQ[50, 0]:.4f} m"


# The hopper's acceptance number (the issue): within 5 cm of its goal.
HOPPER_TOLERANCE = 0.05
# The foot has left the ground when its centre is this far above its resting height (1 cm).
LIFT_OFF = 0.01


def test_raibert_hopper_hops_to_its_goal():
    """configs/optimize/hopper_hop.yaml: from standing with zero inputs (a sticking foot:
    the exact gradients see nothing), the kappa schedule finds a hop; the body ends within
    5 cm of its goal 0.5 m ahead, upright, and the foot was off the ground on the way."""
    from dojo_cli.optimize.problem import orientation_residual

    task = load_task(CONFIGS / "hopper_hop.yaml")
    result = solve(task.problem, task.initial_guess, task.options)
    assert result.status == "converged", result.message
    Z = result.traj.Z.reshape(len(result.traj.Z), 2, 13)
    body, foot = Z[:, 0], Z[:, 1]
    miss = np.linalg.norm(body[-1, 0:3] - [0.5, 0.0, 0.55])
    assert miss < HOPPER_TOLERANCE, f"body ends {miss:.3f} m from its goal"
    tilt = np.linalg.norm(orientation_residual(body[-1, 6:10], np.zeros(3))[0])
    assert tilt < 0.01, f"body tilted {tilt:.2e} rad at the end"
    rest = foot[0, 2]
    airborne = np.flatnonzero(foot[:, 2] > rest + LIFT_OFF)
    assert airborne.size, f"the foot never left the ground (highest {foot[:, 2].max() - rest:.3f} m up)"
    assert foot[airborne[0] - 1, 0] < 0.1 and foot[airborne[-1] + 1, 0] > 0.3, "it hopped forward"
    stages = sorted({rec["kappa"] for rec in result.log})
    assert stages == [-1.0, 1e-4, 1e-2], stages


def test_a_trial_that_cannot_be_differentiated_is_rejected_not_a_traceback(tmp_path, monkeypatch):
    """Measured on the hopper: an accepted line-search trial whose step has a singular
    Newton matrix at its solution (a contact exactly at its switch) cannot be linearised.
    The trial is rejected like a failed line search and the solve goes on; when the kept
    trajectory itself cannot be (at the start), the solve ends "diverged" with the reason."""
    import dojo_cli.optimize.ilqr as ilqr
    from dojo_cli.errors import SolverError

    path = tmp_path / "catch.yaml"
    path.write_text(CATCH.format(representation="minimal"))
    task = load_task(path)
    real, calls = ilqr.linearize, []

    def flaky(*args):
        calls.append(1)
        if len(calls) == 3:
            raise SolverError("optimize: gradients of step 7: the Newton matrix is singular")
        return real(*args)

    monkeypatch.setattr(ilqr, "linearize", flaky)
    opts = dataclasses.replace(task.options, max_iterations=4)
    result = solve(task.problem, task.initial_guess, opts)
    assert result.status == "max_iterations", result.message
    assert [rec["step"] == 0.0 for rec in result.log] == [False, True, False, False], "the second trial rejected"
    assert np.max(np.abs(rollout(task.problem, result.traj.U).Z - result.traj.Z)) == 0.0
    calls.clear()
    monkeypatch.setattr(ilqr, "linearize", lambda *a: (_ for _ in ()).throw(SolverError("singular")))
    result = solve(task.problem, task.initial_guess, opts)
    assert result.status == "diverged" and "cannot be differentiated: singular" in result.message, result.message
