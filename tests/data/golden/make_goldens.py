"""Generator of the golden files in this folder (tests/test_goldens.py compares against them).

The goldens in this folder were written by this script, on commit
83cbf481eb68b923ebde879649209d2ac914fd5c (the numpy physics), run from a clean detached
checkout of that commit (git worktree), numpy 2.4.6, Python 3.11.7, with:

    python tests/data/golden/make_goldens.py --out <this folder> --jobs 2

(about 12 minutes on two cores; manifest.json records when). It is kept as the record of
how the goldens were made. Do NOT re-run it after the numpy
physics has been replaced by the C++ core: the goldens would then describe the new core
and hold it to nothing. It refuses to run on any other commit, or on a checkout with
local changes to dojo_cli/ (``--any-commit`` overrides, for experiments only, and marks
the files it writes as such).

One ``<scene>.npz`` per built-in scene (np.savez_compressed, no pickles), holding:

meta
    JSON text: source commit, scene, steps, horizon (and how it was measured), solver
    options of the trajectory and of the gradients, kappa, the state/Jacobian layouts,
    numpy/scipy/python versions, the robustness of every golden quantity (below), and the
    warnings the generation raised.
states, inputs, iterations, status, residual
    ``dojo.simulate(mech, steps=T)`` from the scene's own initial state with its own
    controller, external forces and solver options: the maximal state of every entry
    (T+1, 13 nb; per body [x(3), v(3), q(4), omega(3)]), the inputs the controller
    applied (T, nu), and the per-step solver record (T,).
divergence_velocity, divergence_position_velocity, horizon
    The run's sensitivity, measured: the run repeated from the initial state moved by
    PERTURBATION along SEEDS random directions of the minimal coordinates (so the joints
    stay satisfied), (a) the minimal velocities only, (b) positions and velocities; the
    curves are the largest |z - z_perturbed| over the seeds at every entry (T+1,). For
    each kind, its horizon is the number H of leading steps over which every state 0..H
    differs by less than HORIZON_THRESHOLD and the steps 0..H-1 take the same solver
    iterations and end with the same status. The horizon (meta) is the smaller of the
    two, except where the position perturbation differs by the threshold already after
    the first step: a position perturbation changes loop closures (fourbar, by ~1e-12)
    and the gaps of resting contacts (the robots standing on their feet), and the first
    step removes that defect with a velocity of defect / h = 1e-10 -- the integrator's
    constraint stabilisation, not a sensitivity of the run, and alone it would make the
    horizon 0 for those scenes. There the velocity perturbation's horizon is used: it
    leaves every joint, loop and contact gap exactly as the scene has them and reaches
    every direction of the state after one step. The horizon is also no larger than where
    the run with the other linear algebra (below) leaves the threshold. Every horizon is
    kept in meta (horizon_velocity, horizon_position_velocity, horizon_linear_algebra) and
    every divergence curve in the file (divergence_linear_algebra too). tests/test_goldens.py
    compares states and iterations over the horizon only (statuses over every step).
gradient_steps, gradient_states, gradient_inputs, A, B, gradient_iterations
    ``dojo.maximal_gradients(mech, z, u)`` (scene solver options, unrelaxed) at the
    initial state and at a state in the middle of the scene's whole run (RUN_STEPS), with
    the inputs the controller applied in that step: A (2, 12 nb, 12 nb), B (2, 12 nb, nu)
    in tangent coordinates [x, v, phi, omega] per body; the iterations of the step solve
    behind them. Computed on a freshly loaded scene in the order the test computes them.
A_relaxed, B_relaxed (scenes with contacts or joint limits)
    The same with ``kappa=KAPPA`` (differentiated on the central path).
minimal_states, A_minimal, B_minimal (MINIMAL_SCENES)
    ``dojo.minimal_gradients(mech, y, u)`` at y = maximal_to_minimal of the two states.
parameter_labels, P, P_relaxed (PARAMETER_SCENES)
    ``dojo.parameter_gradients(mech, z, u, names=PARAMETER_KINDS)`` at the two states
    (P (2, 12 nb, p)); P_relaxed with kappa where the scene has inequalities.
checkpoint_steps, checkpoint_states, checkpoint_inputs, checkpoint_next, checkpoint_iterations
    Single steps ``dojo.step(mech, z, u)`` (cold start, scene options) from states of the
    scene's whole run (RUN_STEPS steps: its own duration, capped for the robots), spread
    over it and at its contact events (the active contact set changes): they hold the
    physics after the horizon and after the compared trajectory too (the box's later
    impacts and rest, the tippe top's inversion), where a trajectory comparison cannot.

Robustness. Every golden quantity is also computed (a) from its state moved by PERTURBATION
(minimal coordinates, so consistent with the joints) and (b) with the other linear algebra
(the scene's Newton systems factorised with SuperLU instead of a dense LU, or the reverse):
a difference of rounding only, the stand-in for the C++ core's arithmetic. Both changes
are stored in meta. The horizon is cut where the rerun with the other linear algebra
leaves HORIZON_THRESHOLD or changes an iteration count. The mid-run gradient state is the
first state, from the middle of the run outwards, whose Jacobians (unrelaxed and relaxed)
move by less than ROBUST_JACOBIAN_CHANGE under (a) and (b) with the same iteration count:
at rest on several contacts (twister, snake, quadruped_feet) the unrelaxed Jacobian at the
solver's stopping point is ill-conditioned (the impulses are nearly indeterminate) and
differs between the two linear algebras by more than the test's tolerance. A checkpoint
whose next state moves by HORIZON_THRESHOLD or more under (a) or (b), or changes its
iteration count, is dropped.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import multiprocessing
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy

import dojo_cli as dojo
from dojo_cli.model.parameters import PARAMETER_KINDS
from dojo_cli.scene.loader import builtin_scene_names, builtin_scene_unavailable
from dojo_cli.simulation.step import step_structure
from dojo_cli.solver import linear

SOURCE_COMMIT = "83cbf481eb68b923ebde879649209d2ac914fd5c"
FORMAT = 1

# Steps of the compared trajectory per scene. It is the test's cost (the numpy core: ~1-2 ms
# a step without inequalities, 8-23 ms with), so where the run is chaotic it stops a little
# after the horizon (box: states compared through the first impacts of the landing, 36-45);
# joint-only scenes: 3 s (several periods); robots: 30-40 steps. The scene's whole run
# (RUN_STEPS, default: its own duration) is simulated here only, for the single-step
# checkpoints and the mid-run gradient state: those hold the rest of the physics (the box's
# tumble to rest, the tippe top's inversion, the Dzhanibekov flip) at the cost of a few steps.
STEPS = {
    "ball_on_ball": 135, "ball_on_box": 40, "ball_on_capsule": 40, "box": 60, "box2d": 70,
    "cartpole": 300, "double_pendulum": 300, "dzhanibekov": 120, "fourbar": 300, "go1": 40,
    "hopper": 40, "humanoid": 30, "incline": 60, "npendulum": 300, "nslider": 300,
    "orbital_chain": 300, "panda": 40, "pendulum": 300, "pendulum_limit": 200, "quadruped": 40,
    "quadruped_feet": 60, "raiberthopper": 40, "slider": 300, "sliding_box": 100, "snake": 40,
    "solo12": 40, "sphere": 60, "spherical_chain": 300, "tippetop": 150, "twister": 40,
}
RUN_STEPS = {"go1": 100, "humanoid": 100, "panda": 100, "quadruped": 100, "solo12": 100}  # the robots' runs, capped
MINIMAL_SCENES = ("pendulum", "cartpole", "double_pendulum", "npendulum", "fourbar")
PARAMETER_SCENES = ("pendulum", "box", "sliding_box")
KAPPA = 1e-3  # relaxed gradients: the value tests/simulation/test_gradients.py uses
PERTURBATION = 1e-12  # size of the initial-state perturbation (largest minimal-coordinate change)
HORIZON_THRESHOLD = 1e-10  # states "agree" while they differ by less than this
SEEDS = 3  # random perturbation directions per kind
GRADIENT_SEEDS = 2
ROBUST_JACOBIAN_CHANGE = 1e-8  # a tenth of the comparison tolerance (1e-7)
MID_STATE_TRIES = 10
MID_STATE_STRIDE = 5
CHECKPOINTS_SPREAD = 8
CHECKPOINTS_EVENTS = 8
ACTIVE_IMPULSE = 1e-6  # N s: a contact with a larger normal impulse is active
STATE_LAYOUT = "per body [x(3), v(3), q(4) (w, x, y, z), omega(3)], bodies in mech.bodies order"
TANGENT_LAYOUT = "per body [x(3), v(3), phi(3), omega(3)] (rows and state columns of A, B, P)"
HORIZON_DEFINITION = (
    f"largest H such that, for {SEEDS} reruns from the initial state moved by {PERTURBATION:g} along random "
    f"directions of the minimal coordinates (seeds 0..{SEEDS - 1}), states 0..H differ by < {HORIZON_THRESHOLD:g} "
    "(max abs over the maximal state) and steps 0..H-1 take the same iterations and end with the same status; "
    "the smaller of the horizons of the velocity-only and the position-and-velocity perturbations, or the "
    "velocity-only one where the position perturbation already differs by the threshold after the first step "
    "(its defect in a loop closure or a resting contact removed by a velocity defect / h); and no larger than "
    "the horizon of the same run with the other linear algebra (dense LU <-> SuperLU)"
)


# ------------------------------------------------------------------ helpers
def jacobian_change(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| / max(1, |b|), the comparison test's measure."""
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def perturbed_state(mech, z: np.ndarray, seed: int, part: str) -> np.ndarray:
    """z moved by PERTURBATION along a random minimal-coordinate direction.

    part: "velocity" (minimal velocities only: positions, joints, loops and contact gaps
    untouched) or "position_velocity" (both). The move is the difference of two
    minimal_to_maximal images, added to z itself, so z's own rounding is kept.
    """
    y = dojo.maximal_to_minimal(mech, z)
    nf = mech.nf
    d = np.random.default_rng(seed).standard_normal(2 * nf)
    if part == "velocity":
        d[:nf] = 0.0
    elif part != "position_velocity":
        raise ValueError(part)
    d /= np.max(np.abs(d))
    return z + (dojo.minimal_to_maximal(mech, y + PERTURBATION * d) - dojo.minimal_to_maximal(mech, y))


def other_linear_algebra(name: str):
    """(the scene loaded with its Newton systems factorised the other way, the name of that way).

    A scene up to linear.DENSE_MAX unknowns is factorised with a dense LU, a larger one with
    SuperLU; this one uses the other. The results differ from the scene's by rounding only:
    a stand-in for another implementation's arithmetic (the C++ core's). The choice is
    fixed when the scene's step structure is first built, so the scene keeps it afterwards.
    """
    dense = step_structure(dojo.load_scene(name)).pattern.dense
    old = linear.DENSE_MAX
    linear.DENSE_MAX = -1 if dense else 10**9
    try:
        mech = dojo.load_scene(name)
        if step_structure(mech).pattern.dense == dense:
            raise RuntimeError(f"{name}: could not switch the linear algebra")
    finally:
        linear.DENSE_MAX = old
    return mech, "SuperLU" if dense else "dense LU"


def states_of(traj, steps: int) -> np.ndarray:
    return np.stack([traj.state(k) for k in range(steps + 1)])


def horizon_of(ref, ref_states, runs) -> int:
    """Largest H: states 0..H within HORIZON_THRESHOLD, steps 0..H-1 same iterations and status, for every run."""
    steps = len(ref.iterations)
    horizon = steps
    for traj, states in runs:
        diff = np.max(np.abs(states - ref_states), axis=1)
        bad_state = np.flatnonzero(diff >= HORIZON_THRESHOLD)
        bad_step = np.flatnonzero((traj.iterations != ref.iterations) | (np.array(traj.status) != np.array(ref.status)))
        h = steps
        if bad_state.size:
            h = min(h, int(bad_state[0]) - 1)
        if bad_step.size:
            h = min(h, int(bad_step[0]))
        horizon = min(horizon, max(h, 0))
    return horizon


def source_commit() -> tuple[str, bool]:
    """(HEAD of the checkout dojo_cli is imported from, whether dojo_cli/ is unchanged there)."""
    root = Path(dojo.__file__).resolve().parents[1]
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--", "dojo_cli", "pyproject.toml"],
        capture_output=True, text=True, check=True,
    )
    return head.stdout.strip(), status.stdout.strip() == ""


def gradients_at(mech, z, u, opts, kappa):
    """(A, B, iterations of the step solve) from dojo.step_gradients, the function maximal_gradients wraps."""
    g = dojo.step_gradients(mech, z, u, opts, wrt=("state", "input"), kappa=kappa)
    return g.A, g.B, int(g.result.iterations)


def gradient_robustness(mech, other, z, u, opts, kappas) -> dict:
    """How A, B at (z, u) move: from z moved by PERTURBATION (GRADIENT_SEEDS directions,
    positions and velocities), and with the other linear algebra; whether the step solve
    keeps its iteration count in both."""
    perturbed, flipped, same = 0.0, 0.0, True
    for kappa in kappas:
        a0, b0, it0 = gradients_at(mech, z, u, opts, kappa)
        for seed in range(GRADIENT_SEEDS):
            a1, b1, it1 = gradients_at(mech, perturbed_state(mech, z, seed, "position_velocity"), u, opts, kappa)
            perturbed = max(perturbed, jacobian_change(a1, a0), jacobian_change(b1, b0))
            same &= it1 == it0
        a1, b1, it1 = gradients_at(other, z, u, opts, kappa)
        flipped = max(flipped, jacobian_change(a1, a0), jacobian_change(b1, b0))
        same &= it1 == it0
    robust = bool(same and perturbed < ROBUST_JACOBIAN_CHANGE and flipped < ROBUST_JACOBIAN_CHANGE)
    return {"perturbed": perturbed, "linear_algebra": flipped, "same_iterations": bool(same), "robust": robust}


def mid_candidates(run_steps: int) -> list[int]:
    """Steps to try for the mid-run gradient state: the middle and the MID_STATE_TRIES - 1 after
    it, then every MID_STATE_STRIDE-th step of the run, nearest the middle first."""
    middle = run_steps // 2
    first = list(range(middle, min(middle + MID_STATE_TRIES, run_steps)))
    rest = sorted(range(MID_STATE_STRIDE, run_steps, MID_STATE_STRIDE), key=lambda k: (abs(k - middle), k))
    return first + [k for k in rest if k not in first]


def contact_events(mech, traj) -> list[int]:
    """Steps where the set of active contacts (normal impulse > ACTIVE_IMPULSE) changes."""
    if not mech.nc:
        return []
    active = traj.contact_normal_impulse > ACTIVE_IMPULSE
    return [k for k in range(len(active)) if k == 0 or np.any(active[k] != active[k - 1])]


def thin(steps: list[int], count: int) -> list[int]:
    if len(steps) <= count:
        return list(steps)
    pick = np.unique(np.round(np.linspace(0, len(steps) - 1, count)).astype(int))
    return [steps[i] for i in pick]


# -------------------------------------------------------------- one scene
def make_scene(name: str, out: Path, commit: str, experimental: bool) -> dict:
    t_start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data, meta = _make_scene(name, commit)
    meta["warnings"] = sorted({f"{w.category.__name__}: {w.message} ({Path(w.filename).name}:{w.lineno})" for w in caught})
    meta["experimental"] = experimental
    meta["generation_seconds"] = round(time.perf_counter() - t_start, 1)
    path = out / f"{name}.npz"
    np.savez_compressed(path, meta=np.array(json.dumps(meta, indent=1, sort_keys=True)), **data)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    summary = {
        "file": path.name, "sha256": digest, "bytes": path.stat().st_size, "steps": meta["steps"],
        "run_steps": meta["run_steps"], "horizon": meta["horizon"], "horizon_velocity": meta["horizon_velocity"],
        "horizon_position_velocity": meta["horizon_position_velocity"],
        "horizon_linear_algebra": meta["horizon_linear_algebra"],
        "gradient_steps": meta["gradient_steps"], "checkpoint_steps": meta["checkpoint_steps"],
        "warnings": len(meta["warnings"]), "generation_seconds": meta["generation_seconds"],
    }
    print(f"{name:16s} T {meta['steps']:4d}  horizon {meta['horizon']:4d} (velocity {meta['horizon_velocity']}, "
          f"position+velocity {meta['horizon_position_velocity']}, linear algebra {meta['horizon_linear_algebra']})  "
          f"grad steps {meta['gradient_steps']}  checkpoints {len(meta['checkpoint_steps'])}  "
          f"{path.stat().st_size / 1e3:.0f} kB  {meta['generation_seconds']} s", flush=True)
    return summary


def _make_scene(name: str, commit: str) -> tuple[dict, dict]:
    mech = dojo.load_scene(name)
    other, other_kind = other_linear_algebra(name)
    steps = STEPS[name]
    run_steps = RUN_STEPS.get(name, mech.default_steps)
    opts = dojo.default_options(mech)
    inequalities = bool(mech.has_inequalities)
    data: dict[str, np.ndarray] = {}
    meta: dict = {
        "format": FORMAT, "source_commit": commit, "scene": name, "steps": steps, "run_steps": run_steps,
        "timestep": mech.timestep, "nb": mech.nb, "nf": mech.nf, "nc": mech.nc, "has_inequalities": inequalities,
        "body_names": [b.name for b in mech.bodies], "solver_options": opts.to_dict(),
        "gradient_solver_options": opts.to_dict(), "kappa": KAPPA if inequalities else None,
        "controller": type(getattr(mech, "controller", None)).__name__,
        "external_forces": len(getattr(mech, "external", None) or []),
        "linear_algebra": "dense LU" if step_structure(mech).pattern.dense else "SuperLU",
        "other_linear_algebra": other_kind, "newton_unknowns": int(step_structure(mech).n),
        "state_layout": STATE_LAYOUT, "tangent_layout": TANGENT_LAYOUT,
        "numpy": np.__version__, "scipy": scipy.__version__, "python": platform.python_version(),
        "platform": platform.platform(), "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "generator": "tests/data/golden/make_goldens.py",
    }

    # ---- the trajectory, exactly as dojo.simulate produces it on a freshly loaded scene, as
    # the test runs it. (A scene factorised with SuperLU fixes its column ordering at its
    # first factorisation, so a second run on the same Mechanism object differs from the
    # first by rounding: recorded as reuse_difference.)
    traj = dojo.simulate(mech, steps=steps)
    states = states_of(traj, steps)
    run = dojo.simulate(dojo.load_scene(name), steps=run_steps)  # the scene's whole run, from a fresh load
    run_states = states_of(run, run_steps)
    if not (np.array_equal(run_states[: steps + 1], states) and np.array_equal(run.iterations[:steps], traj.iterations)):
        raise RuntimeError(f"{name}: two runs on freshly loaded scenes differ (the simulation is not deterministic)")
    reused = dojo.simulate(mech, steps=steps)
    meta["reuse_difference"] = float(np.max(np.abs(states_of(reused, steps) - states)))
    meta["reuse_same_iterations"] = bool(np.array_equal(reused.iterations, traj.iterations))
    data.update(
        states=states, inputs=np.asarray(traj.inputs, dtype=float), iterations=np.asarray(traj.iterations, dtype=np.int64),
        status=np.array(traj.status, dtype=str), residual=np.asarray(traj.residual, dtype=float),
    )
    meta["statuses"] = sorted(set(traj.status))
    meta["run_statuses"] = sorted(set(run.status))
    run_inputs = np.asarray(run.inputs, dtype=float)

    # ---- horizon: perturbed reruns of the compared trajectory, and a rerun with the other linear algebra
    z0 = dojo.initial_state(mech)
    curves, horizons = {}, {}
    for part in ("velocity", "position_velocity"):
        runs = []
        for seed in range(SEEDS):
            rerun = dojo.simulate(mech, steps=steps, z0=perturbed_state(mech, z0, seed, part))
            runs.append((rerun, states_of(rerun, steps)))
        curves[part] = np.max([np.max(np.abs(s - states), axis=1) for _, s in runs], axis=0)
        horizons[part] = horizon_of(traj, states, runs)
    flipped = dojo.simulate(other, steps=steps)
    flipped_states = states_of(flipped, steps)
    curves["linear_algebra"] = np.max(np.abs(flipped_states - states), axis=1)
    horizons["linear_algebra"] = horizon_of(traj, states, [(flipped, flipped_states)])
    for part, curve in curves.items():
        data[f"divergence_{part}"] = curve
        meta[f"horizon_{part}"] = horizons[part]
        meta[f"max_divergence_{part}"] = float(curve.max())
    stabilisation = bool(curves["position_velocity"][1] >= HORIZON_THRESHOLD)
    meta["position_defect_corrected_in_first_step"] = stabilisation
    horizon = horizons["velocity"] if stabilisation else min(horizons["velocity"], horizons["position_velocity"])
    meta["horizon"] = min(horizon, horizons["linear_algebra"])
    meta["horizon_definition"] = HORIZON_DEFINITION
    meta["linear_algebra_difference_over_horizon"] = float(curves["linear_algebra"][: meta["horizon"] + 1].max())

    # ---- gradients at the initial state and a robust state nearest the middle of the scene's run
    kappas = (None, KAPPA) if inequalities else (None,)
    robustness = {"0": gradient_robustness(mech, other, run_states[0], run_inputs[0], opts, kappas)}
    tried = []
    for k in mid_candidates(run_steps):
        tried.append({"step": k, **gradient_robustness(mech, other, run_states[k], run_inputs[k], opts, kappas)})
        if tried[-1]["robust"]:
            break
    mid = tried[-1] if tried[-1]["robust"] else min(tried, key=lambda t: (not t["same_iterations"], max(t["perturbed"], t["linear_algebra"])))
    robustness[str(mid["step"])] = mid
    meta["mid_state_candidates"] = tried
    grad_steps = [0, mid["step"]]
    meta["gradient_steps"] = grad_steps
    meta["gradient_robustness"] = robustness
    zs = run_states[grad_steps]
    us = run_inputs[grad_steps]
    data.update(gradient_steps=np.array(grad_steps, dtype=np.int64), gradient_states=zs, gradient_inputs=us)

    # The golden Jacobians: on a freshly loaded scene, in the order tests/test_goldens.py
    # computes them (so that today's code reproduces them bit for bit).
    fresh = dojo.load_scene(name)
    kinds = list(PARAMETER_KINDS)
    ys = np.array([dojo.maximal_to_minimal(mech, z) for z in zs])
    gold: dict[str, list] = {}
    for n, (z, u) in enumerate(zip(zs, us)):
        A, B = dojo.maximal_gradients(fresh, z, u, opts)
        gold.setdefault("A", []).append(A), gold.setdefault("B", []).append(B)
        if inequalities:
            A, B = dojo.maximal_gradients(fresh, z, u, opts, kappa=KAPPA)
            gold.setdefault("A_relaxed", []).append(A), gold.setdefault("B_relaxed", []).append(B)
        if name in MINIMAL_SCENES:
            A, B = dojo.minimal_gradients(fresh, ys[n], u, opts)
            gold.setdefault("A_minimal", []).append(A), gold.setdefault("B_minimal", []).append(B)
        if name in PARAMETER_SCENES:
            for key, kappa in (("P", None), ("P_relaxed", KAPPA)) if inequalities else (("P", None),):
                P, labels = dojo.parameter_gradients(fresh, z, u, names=kinds, opts=opts, kappa=kappa)
                gold.setdefault(key, []).append(P)
                data["parameter_labels"] = np.array(labels, dtype=str)
    for key, values in gold.items():
        data[key] = np.array(values)
    for key in ("B", "B_relaxed"):
        if key in data:
            data[key] = data[key].reshape(2, 12 * mech.nb, mech.nf)
    if name in MINIMAL_SCENES:
        data["minimal_states"] = ys
    if name in PARAMETER_SCENES:
        meta["parameter_kinds"] = kinds

    its, reuse = [], 0.0
    for n, (z, u) in enumerate(zip(zs, us)):
        A2, B2, it = gradients_at(mech, z, u, opts, None)
        its.append(it)
        reuse = max(reuse, jacobian_change(A2, data["A"][n]), jacobian_change(B2, data["B"][n]))
    meta["gradient_reuse_difference"] = reuse
    data["gradient_iterations"] = np.array(its, dtype=np.int64)

    if name in MINIMAL_SCENES:
        perturbed, flip = 0.0, 0.0
        for n, (y, u) in enumerate(zip(ys, us)):
            ref = (data["A_minimal"][n], data["B_minimal"][n])
            for seed in range(GRADIENT_SEEDS):
                d = np.random.default_rng(seed).standard_normal(y.size)
                got = dojo.minimal_gradients(mech, y + PERTURBATION * d / np.abs(d).max(), u, opts)
                perturbed = max(perturbed, *(jacobian_change(a, b) for a, b in zip(got, ref)))
            got = dojo.minimal_gradients(other, y, u, opts)
            flip = max(flip, *(jacobian_change(a, b) for a, b in zip(got, ref)))
        meta["minimal_gradient_robustness"] = {"perturbed": perturbed, "linear_algebra": flip}

    if name in PARAMETER_SCENES:
        for key, kappa in (("P", None), ("P_relaxed", KAPPA)) if inequalities else (("P", None),):
            perturbed, flip = 0.0, 0.0
            for n, (z, u) in enumerate(zip(zs, us)):
                for seed in range(GRADIENT_SEEDS):
                    P1, _ = dojo.parameter_gradients(
                        mech, perturbed_state(mech, z, seed, "position_velocity"), u, names=kinds, opts=opts, kappa=kappa
                    )
                    perturbed = max(perturbed, jacobian_change(P1, data[key][n]))
                P1, _ = dojo.parameter_gradients(other, z, u, names=kinds, opts=opts, kappa=kappa)
                flip = max(flip, jacobian_change(P1, data[key][n]))
            meta[f"{key}_robustness"] = {"perturbed": perturbed, "linear_algebra": flip}

    # ---- single-step checkpoints over the scene's whole run and at its contact events
    spread = [int(k) for k in np.unique(np.round(np.linspace(0, run_steps - 1, CHECKPOINTS_SPREAD)).astype(int))]
    events = thin([k for k in contact_events(mech, run) if k not in spread], CHECKPOINTS_EVENTS)
    kept, nexts, iters, dropped, flip_worst = [], [], [], [], 0.0
    fresh = dojo.load_scene(name)  # the golden steps: a fresh scene, in the test's order
    for k in sorted(set(spread) | set(events)):
        z, u = run_states[k], run_inputs[k]
        nxt = dojo.step(fresh, z, u, opts)
        g = dojo.step_gradients(mech, z, u, opts, wrt=())
        assert np.max(np.abs(g.next_state - nxt)) < 1e-11, "step_gradients solves the same step"
        worst, same = 0.0, True
        for seed in range(GRADIENT_SEEDS):
            g1 = dojo.step_gradients(mech, perturbed_state(mech, z, seed, "velocity"), u, opts, wrt=())
            worst = max(worst, float(np.max(np.abs(g1.next_state - nxt))))
            same &= g1.result.iterations == g.result.iterations
        g1 = dojo.step_gradients(other, z, u, opts, wrt=())
        flip = float(np.max(np.abs(g1.next_state - nxt)))
        same &= g1.result.iterations == g.result.iterations
        if same and worst < HORIZON_THRESHOLD and flip < HORIZON_THRESHOLD:
            kept.append(k), nexts.append(nxt), iters.append(int(g.result.iterations))
            flip_worst = max(flip_worst, flip)
        else:
            dropped.append({"step": k, "perturbed": worst, "linear_algebra": flip, "same_iterations": bool(same)})
    meta["checkpoint_steps"] = kept
    meta["checkpoint_contact_events"] = [k for k in kept if k in events]
    meta["checkpoints_dropped"] = dropped
    meta["checkpoint_linear_algebra_difference"] = flip_worst
    data.update(
        checkpoint_steps=np.array(kept, dtype=np.int64),
        checkpoint_states=run_states[kept].reshape(len(kept), 13 * mech.nb),
        checkpoint_inputs=run_inputs[kept].reshape(len(kept), mech.nf),
        checkpoint_next=np.array(nexts).reshape(len(kept), 13 * mech.nb),
        checkpoint_iterations=np.array(iters, dtype=np.int64),
    )
    return data, meta


def _worker(args):
    return args[0], make_scene(*args)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--scenes", nargs="*", help="default: every built-in scene")
    parser.add_argument("--any-commit", action="store_true", help="experiments only: allow another commit or local changes")
    args = parser.parse_args(argv)
    commit, clean = source_commit()
    experimental = commit != SOURCE_COMMIT or not clean
    if experimental and not args.any_commit:
        print(f"refusing: dojo_cli is imported from commit {commit} ({'clean' if clean else 'with local changes'}), "
              f"the goldens belong to {SOURCE_COMMIT} (see the docstring)", file=sys.stderr)
        return 2
    names = args.scenes or builtin_scene_names()
    missing = [n for n in names if n not in STEPS]
    unavailable = {n: builtin_scene_unavailable(n) for n in names if builtin_scene_unavailable(n)}
    if missing or unavailable:
        print(f"no step count for {missing}; unavailable here: {unavailable} (install the [robots] extra)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"dojo_cli from {Path(dojo.__file__).parent} at {commit}; numpy {np.__version__}; writing {args.out}", flush=True)
    jobs = [(n, args.out, commit, experimental) for n in names]
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = dict(pool.imap_unordered(_worker, jobs))
    else:
        results = dict(_worker(j) for j in jobs)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() and args.scenes else {"scenes": {}}
    manifest.update(
        format=FORMAT, source_commit=commit, experimental=experimental,
        generated_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        numpy=np.__version__, python=platform.python_version(), kappa=KAPPA, perturbation=PERTURBATION,
        horizon_threshold=HORIZON_THRESHOLD,
    )
    manifest["scenes"].update(results)
    manifest["scenes"] = dict(sorted(manifest["scenes"].items()))
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(s["bytes"] for s in manifest["scenes"].values())
    print(f"{len(manifest['scenes'])} scenes, {total / 1e6:.2f} MB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
