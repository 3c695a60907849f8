"""The physics against golden files written by the numpy implementation (tests/data/golden).

The goldens were generated once, by tests/data/golden/make_goldens.py on the commit named in
tests/data/golden/manifest.json, before the physics moved to the C++ core; they are never
regenerated (see the generator's docstring for what each file holds and how). For every
built-in scene this re-runs, with the solver options stored in the file:

- the trajectory (dojo.simulate, the scene's own initial state, controller and forces):
  maximal states and per-step iteration counts over the scene's measured horizon (the steps
  over which the run is not chaotic), statuses over every step;
- single steps (dojo.step) from stored states spread over the scene's whole run and at its
  contact events, which hold the physics after the horizon and the compared trajectory;
- the Jacobians: maximal A, B at the initial and a mid-run state (unrelaxed, and relaxed
  with the stored kappa where the scene has contacts or joint limits), minimal A, B for the
  joint-only scenes that have them, parameter Jacobians for those that have them.

Each assertion names the field, the step and the measured error.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
import yaml

import dojo_cli as dojo
from dojo_cli.scene.loader import builtin_scene_text

GOLDEN_DIR = Path(__file__).resolve().parent / "data" / "golden"
MANIFEST = json.loads((GOLDEN_DIR / "manifest.json").read_text())
SCENES = sorted(MANIFEST["scenes"])

STATE_TOL = 1e-9
"""Largest |z - z_golden| (any component of a maximal state: m, m/s, quaternion, rad/s).

Over a scene's horizon, runs that start 1e-12 apart stay within 1e-10 of each other, and
the same run with its linear systems factorised another way (dense LU <-> SuperLU, a
difference of rounding like the C++ core's) within 9e-12 (fourbar; <= 4e-13 elsewhere;
the single steps within 5e-13): make_goldens.py measured both. So a core that computes the
same thing stays well below 1e-9, while 1e-9 is three orders below the solver's own
tolerance (rtol 1e-6): a change of the equations, of the solver's path (iterations, line
search, warm start) or of a parameter shows (gravity 1e-7 larger fails every scene with
gravity at the first step)."""

JACOBIAN_TOL = 1e-7
"""Largest |J - J_golden| / max(1, |J_golden|) over the entries of a Jacobian.

Relative for large entries, absolute for small ones. With the other linear algebra the
golden Jacobians move by at most 6e-10 (hopper; quadruped_feet 3e-10, sliding_box 3e-11,
<= 1e-12 elsewhere), and by ~1e-8 or less when their state moves by 1e-12 (2e-7 for
quadruped_feet, which stands on four feet the whole run) -- meta: gradient_robustness. States where the
unrelaxed Jacobian is ill-conditioned (at rest on several contacts) were not used. A
changed derivative (a term dropped, a sign, a wrong kappa, friction 1e-4 larger) moves
them by far more."""

STATE_FIELDS = [("x", 3), ("v", 3), ("q", 4), ("omega", 3)]
TANGENT_FIELDS = ["x", "v", "phi", "omega"]


@lru_cache(maxsize=None)
def golden(scene: str) -> tuple[dict, dict]:
    """(meta, arrays) of a scene's golden file."""
    with np.load(GOLDEN_DIR / MANIFEST["scenes"][scene]["file"], allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    return json.loads(str(arrays.pop("meta"))), arrays


# The goldens were written with every damper in its first-order implicit form, the only
# one then (issue 12 made the second-order midpoint form the default): every scene is
# compared in that form. It changes the trajectories of the damped scenes that use the
# default (hopper, raiberthopper) and, in every scene, the derivatives with respect to
# damper coefficients. The midpoint form is checked against continuous-time references
# (tests/properties/test_damper_order.py).
# They were also written with Dojo's convention for initial velocities (mechanism()).
GOLDEN_FORM = {"damper_form": "implicit", "initial_velocity": "midpoint"}


def golden_model(scene: str) -> dict:
    """GOLDEN_FORM, and for a scene imported from a URDF the model the goldens were written
    for: the importer then left out revolute bounds beyond +-pi (angles lived in (-pi, pi]).
    Since revolute limits of any size work (issue 12, item 7b) it keeps them; in the golden
    runs they are never reached, but each is one more inequality of the interior point,
    whose path then ends elsewhere within its tolerance (panda 3e-6 from its golden:
    test_urdf_bounds_beyond_pi_leave_the_golden_runs_within_solver_tolerance). So the
    compared scenes leave them out, by the old importer's rule, as the goldens' model did."""
    overrides = dict(GOLDEN_FORM)
    if "urdf" not in yaml.safe_load(builtin_scene_text(scene)):
        return overrides
    for i, joint in enumerate(dojo.load_scene(scene, overrides=GOLDEN_FORM).joints):
        if joint.type == "revolute" and joint.limits is not None:
            lower, upper = (float(np.asarray(b).reshape(-1)[0]) for b in joint.limits)
            if lower <= -np.pi:
                overrides[f"joints.{i}.limits.lower"] = [-np.inf]
            if upper >= np.pi:
                overrides[f"joints.{i}.limits.upper"] = [np.inf]
    return overrides


def mechanism(scene: str, model: bool = True):
    """The scene with Dojo's convention for its initial velocities (``initial_velocity:
    midpoint``), which the goldens were written with: they hold the integrator's midpoint
    velocities (Trajectory.state, v_mid), and that option must reproduce them; with
    ``model``, the goldens' model (golden_model)."""
    return dojo.load_scene(scene, overrides=golden_model(scene) if model else GOLDEN_FORM)


# The goldens were written when rtol and btol were absolute (SI units, every residual row
# alike), the only meaning before issue 27 made them relative to the scene's scales by
# default: the compared runs use the goldens' tolerances in that meaning, so the solver's
# path (iteration counts included) is the one the goldens pin. The relative tolerances are
# checked against analytic answers (tests/solver/test_tolerances.py).
GOLDEN_TOLERANCES = "absolute"

# The goldens were written with every step starting from Dojo's fixed point: the compared
# runs start there too, whatever the default (the warm start, core/maximal/step.h "Warm
# start", is an option), so the path they pin is Dojo's. The warm start moves a run only
# within the solver's tolerance: test_warm_start_keeps_the_golden_runs_within_solver_tolerance.
GOLDEN_WARM_START = False


def options(settings: dict) -> dojo.SolverOptions:
    return dojo.SolverOptions(**dict(settings, tolerances=GOLDEN_TOLERANCES, warm_start=GOLDEN_WARM_START))


def state_label(meta: dict, index: int) -> str:
    """'body.field[i]' of an entry of a maximal state (13 per body)."""
    body, offset = divmod(int(index), 13)
    for name, size in STATE_FIELDS:
        if offset < size:
            return f"{meta['body_names'][body]}.{name}[{offset}]"
        offset -= size
    raise AssertionError(index)


def tangent_label(meta: dict, index: int) -> str:
    """'body.field[i]' of a tangent coordinate (12 per body: x, v, phi, omega)."""
    body, offset = divmod(int(index), 12)
    return f"{meta['body_names'][body]}.{TANGENT_FIELDS[offset // 3]}[{offset % 3}]"


def state_error(z: np.ndarray, g: np.ndarray) -> tuple[float, int]:
    """(largest |z - g|, the index where it is)."""
    d = np.abs(np.asarray(z) - g)
    i = int(np.argmax(d))
    return float(d[i]), i


def jacobian_error(j: np.ndarray, g: np.ndarray) -> tuple[float, tuple[int, int]]:
    """(largest |j - g| / max(1, |g|), the entry where it is)."""
    if j.shape != g.shape:
        return float("inf"), (-1, -1)
    if g.size == 0:
        return 0.0, (0, 0)
    e = np.abs(j - g) / np.maximum(1.0, np.abs(g))
    i = np.unravel_index(int(np.argmax(e)), e.shape)
    return float(e[i]), (int(i[0]), int(i[1]))


# ------------------------------------------------------------------ files
def test_golden_files_are_the_generated_ones():
    """Every scene of the manifest has its file, unchanged since generation, from one commit."""
    problems = []
    for scene, entry in MANIFEST["scenes"].items():
        path = GOLDEN_DIR / entry["file"]
        if not path.exists():
            problems.append(f"{scene}: {path.name} missing")
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            problems.append(
                f"{scene}: {path.name} sha256 {digest[:12]} != manifest {entry['sha256'][:12]} "
                "(goldens are never regenerated)"
            )
            continue
        meta, _ = golden(scene)
        if meta["source_commit"] != MANIFEST["source_commit"] or meta.get("experimental"):
            problems.append(f"{scene}: generated on {meta['source_commit']} (experimental={meta.get('experimental')})")
    count = len(MANIFEST["scenes"])
    assert count >= 30, f"the manifest lists {count} scenes, not the 30 built-in ones"
    assert not MANIFEST.get("experimental"), "the goldens were made by an experimental run (--any-commit)"
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------- trajectory
@pytest.mark.parametrize("scene", SCENES)
def test_golden_trajectory(scene):
    meta, g = golden(scene)
    mech = mechanism(scene)
    steps, horizon = meta["steps"], meta["horizon"]
    traj = dojo.simulate(mech, steps=steps, opts=options(meta["solver_options"]))
    states = np.stack([traj.state(k) for k in range(steps + 1)])
    assert states.shape == g["states"].shape, f"{scene}: states shape {states.shape}, golden {g['states'].shape}"
    h = mech.timestep
    failures = []
    defaults = dojo.default_options(mech).to_dict()
    defaults.pop("tolerances")  # the goldens' are absolute (GOLDEN_TOLERANCES)
    defaults.pop("warm_start")  # the goldens' runs start cold (GOLDEN_WARM_START)
    if defaults != meta["solver_options"]:
        failures.append(
            f"solver options: the scene's are now {defaults}, the golden's {meta['solver_options']} "
            "(compared with the golden's)"
        )

    diff = np.max(np.abs(states[: horizon + 1] - g["states"][: horizon + 1]), axis=1)
    bad = np.flatnonzero(diff >= STATE_TOL)
    if bad.size:
        k = int(bad[0])
        err, i = state_error(states[k], g["states"][k])
        failures.append(
            f"states: |z - golden| = {err:.3e} >= {STATE_TOL:g} first at step {k} (t = {k * h:.4g} s) in "
            f"{state_label(meta, i)}; largest over the horizon ({horizon} of {steps} steps): "
            f"{diff.max():.3e} at step {int(np.argmax(diff))}"
        )
    iterations = np.asarray(traj.iterations)
    bad = np.flatnonzero(iterations[:horizon] != g["iterations"][:horizon])
    if bad.size:
        k = int(bad[0])
        failures.append(
            f"iterations: step {k} (t = {k * h:.4g} s) took {iterations[k]} iterations, golden {g['iterations'][k]} "
            f"({bad.size} of the {horizon} steps of the horizon differ)"
        )
    status = np.array(traj.status, dtype=str)
    bad = np.flatnonzero(status != g["status"])
    if bad.size:
        k = int(bad[0])
        failures.append(
            f"status: step {k} (t = {k * h:.4g} s) ended '{status[k]}', golden '{g['status'][k]}' "
            f"({bad.size} of {steps} steps differ)"
        )
    assert not failures, f"{scene}:\n  " + "\n  ".join(failures)


URDF_SCENES = [scene for scene in SCENES if "urdf" in yaml.safe_load(builtin_scene_text(scene))]


@pytest.mark.parametrize("scene", URDF_SCENES)
def test_urdf_bounds_beyond_pi_leave_the_golden_runs_within_solver_tolerance(scene):
    """The bounds the goldens' model left out (golden_model) are kept by the importer now.
    Never reached in these runs, they change the physics by nothing: with the solver's
    tolerances tight (rtol 1e-9, btol 1e-8), the run with them and the goldens' model agree
    to 1.2e-6 (go1, solo12; panda 3e-11), while at the goldens' tolerances each run, the
    golden's own included, is up to 2.3e-3 from the tight one (solo12; go1 1.1e-3, panda
    3.4e-6): how far an extra inequality moves the interior point's path. Every step
    succeeds, and each kept bound stays unreached."""
    meta, g = golden(scene)
    horizon = meta["horizon"]
    tight = dojo.SolverOptions(**dict(meta["solver_options"], rtol=1e-9, btol=1e-8))
    runs = {}
    for kept in (False, True):  # the last, with the bounds kept, is checked below
        mech = mechanism(scene, model=not kept)
        traj = dojo.simulate(mech, steps=horizon, opts=tight)
        assert set(traj.status) == {"success"}, f"{scene}: {sorted(set(traj.status))} (bounds kept: {kept})"
        runs[kept] = np.stack([traj.state(k) for k in range(horizon + 1)])
    err = np.max(np.abs(runs[True] - runs[False]))
    assert err < 1e-5, f"{scene}: |z(bounds kept) - z(golden model)| = {err:.3e} over the horizon (tight tolerances)"
    starts = np.cumsum([0] + list(mech.input_dimensions()))
    for joint, f in zip(mech.joints, starts):
        if joint.type != "revolute" or joint.limits is None:
            continue
        lower, upper = (float(np.asarray(b).reshape(-1)[0]) for b in joint.limits)
        theta = traj.minimal_q[:, f]
        for bound, side in ((lower, -1), (upper, 1)):
            if abs(bound) >= np.pi:
                gap = side * (bound - theta)
                assert gap.min() > 0.1, f"{scene}: {joint.name} comes within {gap.min():.3g} rad of its bound {bound:g}"


WARM_START_FACTOR = 2.5
"""How much farther than the golden run a warm-started run may end from the converged run.

Both runs stop where the solver's test is met (the goldens' tolerances: rtol 1e-6, btol 1e-4,
absolute), which leaves each within its own distance of the run solved to rtol = btol =
1e-10; those distances are large where contacts are relaxed by btol (ball_on_ball 0.12,
pendulum_limit 0.041, quadruped_feet 0.011). Measured: the warm run is closer than the golden
in 13 of the 20 scenes with inequalities and at most 2.0x as far in the others
(quadruped_feet 2.1e-2 against 1.1e-2; pendulum_limit 1.3x, quadruped 1.4x, solo12 1.3x).
A warm start that changed the problem, not the path (a cone started outside, a step
accepted beyond the test), would move the run by the size of the change instead."""


@pytest.mark.parametrize("scene", SCENES)
def test_warm_start_keeps_the_golden_runs_within_solver_tolerance(scene):
    """The warm start (solver.warm_start, core/maximal/step.h "Warm start") changes where each
    step's interior point starts, not what it solves: over the horizon, the warm-started run
    at the goldens' tolerances is no farther from the converged run (rtol = btol = 1e-10)
    than WARM_START_FACTOR times the golden run (Dojo's start), and every step succeeds
    (fewer iterations: tests/solver/test_warm_start.py). A scene without contacts or limits never starts warm (Newton's
    method has no cones): its run is the golden's to the bit."""
    meta, g = golden(scene)
    mech = mechanism(scene)
    horizon = meta["horizon"]
    opts = options(meta["solver_options"])
    warm = dojo.simulate(mech, steps=horizon, opts=opts.replace(warm_start=True))
    states = np.stack([warm.state(k) for k in range(horizon + 1)])
    if not mech.has_inequalities:
        err = np.max(np.abs(states - g["states"][: horizon + 1]))
        assert err < STATE_TOL, f"{scene}: |z(warm) - golden| = {err:.3e} without inequalities"
        return
    assert set(warm.status) == {"success"}, f"{scene}: warm-started steps ended {sorted(set(warm.status))}"
    tight = dojo.simulate(mech, steps=horizon, opts=opts.replace(rtol=1e-10, btol=1e-10))
    converged = np.stack([tight.state(k) for k in range(horizon + 1)])
    golden_err = np.max(np.abs(g["states"][: horizon + 1] - converged))
    warm_err = np.max(np.abs(states - converged))
    assert warm_err <= WARM_START_FACTOR * golden_err, (
        f"{scene}: the warm-started run is {warm_err:.3e} from the converged one, the golden {golden_err:.3e} "
        f"(at most {WARM_START_FACTOR}x allowed)"
    )


# ----------------------------------------------------------- single steps
@pytest.mark.parametrize("scene", SCENES)
def test_golden_single_steps(scene):
    meta, g = golden(scene)
    mech = mechanism(scene)
    opts = options(meta["solver_options"])
    failures = []
    h = mech.timestep
    for n, k in enumerate(g["checkpoint_steps"]):
        z, u = g["checkpoint_states"][n], g["checkpoint_inputs"][n]
        nxt = dojo.step(mech, z, u, opts)
        err, i = state_error(nxt, g["checkpoint_next"][n])
        if not err < STATE_TOL:
            record = dojo.step_gradients(mech, z, u, opts, wrt=()).result
            failures.append(
                f"step from the stored state of step {k} (t = {k * h:.4g} s): |z' - golden| = {err:.3e} "
                f">= {STATE_TOL:g} in {state_label(meta, i)} (the step took {record.iterations} iterations, golden "
                f"{g['checkpoint_iterations'][n]}; status {record.status.value})"
            )
    assert not failures, f"{scene}:\n  " + "\n  ".join(failures)


# -------------------------------------------------------------- Jacobians
def _compare(failures, meta, what, step, jac, gold, rows="tangent", cols="tangent", col_labels=None):
    err, (r, c) = jacobian_error(np.asarray(jac), gold)
    if err < JACOBIAN_TOL:
        return
    if r < 0:
        failures.append(f"{what} at step {step}: shape {np.shape(jac)}, golden {gold.shape}")
        return
    row = tangent_label(meta, r) if rows == "tangent" else f"row {r}"
    if col_labels is not None:
        col = f"input {col_labels[c]}" if cols == "input" else col_labels[c]
    else:
        col = tangent_label(meta, c) if cols == "tangent" else f"column {c}"
    failures.append(
        f"{what} at step {step}: |J - G| / max(1, |G|) = {err:.3e} >= {JACOBIAN_TOL:g} at [{row}, {col}] "
        f"(J = {np.asarray(jac)[r, c]:.10g}, golden {gold[r, c]:.10g})"
    )


@pytest.mark.parametrize("scene", SCENES)
def test_golden_jacobians(scene):
    meta, g = golden(scene)
    mech = mechanism(scene)
    opts = options(meta["gradient_solver_options"])
    kappa = meta["kappa"]
    inputs = mech.coordinate_names()  # one input per free coordinate, in joint order
    failures = []
    for n, step in enumerate(g["gradient_steps"]):
        z, u = g["gradient_states"][n], g["gradient_inputs"][n]
        A, B = dojo.maximal_gradients(mech, z, u, opts)
        before = len(failures)
        _compare(failures, meta, "A", step, A, g["A"][n])
        _compare(failures, meta, "B", step, B, g["B"][n], cols="input", col_labels=inputs)
        if len(failures) > before:
            it = dojo.step_gradients(mech, z, u, opts, wrt=()).result.iterations
            failures.append(f"  (the step solve at {step} took {it} iterations, golden {g['gradient_iterations'][n]})")
        if "A_relaxed" in g:
            A, B = dojo.maximal_gradients(mech, z, u, opts, kappa=kappa)
            _compare(failures, meta, f"A (kappa {kappa:g})", step, A, g["A_relaxed"][n])
            _compare(
                failures, meta, f"B (kappa {kappa:g})", step, B, g["B_relaxed"][n], cols="input", col_labels=inputs
            )
        if "A_minimal" in g:
            y = g["minimal_states"][n]
            A, B = dojo.minimal_gradients(mech, y, u, opts)
            _compare(failures, meta, "A_minimal", step, A, g["A_minimal"][n], rows="minimal", cols="minimal")
            _compare(
                failures, meta, "B_minimal", step, B, g["B_minimal"][n], rows="minimal", cols="input", col_labels=inputs
            )
        if "P" in g:
            labels = [str(s) for s in g["parameter_labels"]]
            for key, k in (("P", None), ("P_relaxed", kappa)):
                if key not in g:
                    continue
                P, got = dojo.parameter_gradients(mech, z, u, names=meta["parameter_kinds"], opts=opts, kappa=k)
                if list(got) != labels:
                    failures.append(f"{key} at step {step}: parameter labels {got}, golden {labels}")
                    continue
                _compare(failures, meta, key, step, P, g[key][n], cols="parameter", col_labels=labels)
    assert not failures, f"{scene}:\n  " + "\n  ".join(failures)
