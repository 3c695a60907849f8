"""Task files: what ``dojo optimize TASK.yaml`` optimises (docs/optimize.md).

A task file (YAML; ``scene`` and ``horizon`` required)::

    scene: cartpole                    # a built-in name, or a path relative to this file
    set: {solver.rtol: 1.0e-10}        # scene overrides (as --set)
    horizon: 100                       # steps
    representation: minimal            # or maximal: the coordinates of the backward pass
    goal:                              # targets of named coordinates (default 0)
      joints.pole_hinge: [0.0]
    costs:
      state: {joints.cart_slider: 1, joints.pole_hinge: 1}        # stage weights W
      input: 0.01                                                   # R: one number, or by input name
      terminal: {joints.pole_hinge: 100, joints.pole_hinge.velocity: 10}   # Wf
      targets: [{coordinate: bodies.pole.position, time: 1.0, value: [0, 0, 1], weight: 10}]   # at one knot
      reference: {file: run.h5, weight: {joints.pole_hinge: 1}}   # track a stored run (or a CSV) at knots 0..N
    constraints:
      inputs: {cart_slider: [-20, 20], pole_hinge: [0, 0]}         # box bounds, by input or joint name
      slack: [floating_base]                                       # inputs driven to zero (augmented Lagrangian)
      terminal: [joints.cart_slider, joints.pole_hinge]            # equal to the goal at the end
      path: [{coordinate: bodies.box.position, lower: [-.inf, -.inf, 0.2]}]
    initial_guess: zeros               # or {constant: {name: value}}, or {schedule: inputs.csv}
    solver: {max_iterations: 200, gradient_tolerance: 1.0e-6, kappa: [1.0e-2, 1.0e-4], exact_stage: true}

Named coordinates (a weight's or a goal's key): ``joints.NAME`` (the joint's free
coordinates), ``joints.NAME.velocity`` (their rates), ``bodies.NAME.position`` (the
centre of mass, world frame), ``bodies.NAME.orientation`` (a rotation vector: axis times
angle in rad, world frame; its cost is on the rotation from the target, per body axis). A value is one number for every component, or a list
with one per component. Inputs are named as the scene names them (``hinge:r0``, or
the actuators' names); a joint's name stands for all its inputs.

Every problem is reported at its line (``task.yaml:7: costs.state.joints.slidr:
unknown coordinate ...``), as a scene's are; the scene's own problems keep theirs.
"""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import DojoError, SceneError
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.optimize.ilqr import OptimizeOptions
from dojo_cli.optimize.problem import REPRESENTATIONS, Feature, FeatureSet, Problem as OptProblem, feature_catalogue
from dojo_cli.scene.overrides import Override
from dojo_cli.scene.schema import value_text
from dojo_cli.scene.task_file import TaskFile, open_task_file
from dojo_cli.simulation.initial import initial_state

KEYS = ("scene", "set", "horizon", "representation", "goal", "costs", "constraints", "initial_guess", "solver", "description")
COST_KEYS = ("state", "input", "terminal", "targets", "reference")
REFERENCE_KEYS = ("file", "weight")
TARGET_KEYS = ("coordinate", "step", "time", "value", "weight")
CONSTRAINT_KEYS = ("inputs", "terminal", "path", "slack")
SOLVER_KEYS = ("max_iterations", "gradient_tolerance", "constraint_tolerance", "regularization", "penalty",
               "penalty_scaling", "max_outer", "kappa", "exact_stage")
# A task's scene takes its initial velocities as midpoint velocities (load_task).
INITIAL_VELOCITY = "midpoint"
# A target's time is a knot's when it is a whole number of timesteps to this (relative) tolerance;
# a reference run's timestep must be the scene's to it.
TIME_TOLERANCE = 1e-9
# Most iterations a task may ask for: the log is stored as one root attribute per column,
# and an HDF5 attribute holds at most 64 KiB (8,192 numbers).
MAX_ITERATIONS = 5000
# Longest horizon a task may ask for: the solver keeps (N, ns, ns) Jacobians in memory,
# 10^5 steps of a 24-dimensional state is 460 MB.
MAX_HORIZON = 100_000


@dataclass
class Task:
    """A task file, read and checked.

    Attributes:
        file: the task file (as given).
        scene: the scene: an absolute path or a built-in's name.
        overrides: the ``set:`` overrides.
        problem: the numeric problem (mechanism built).
        initial_guess: (N, nu) inputs to start from.
        options: the solver's options.
        text: the task file's text (stored with the result).
        spec: the scene's validated spec (with the task's overrides).
    """

    file: str
    scene: str
    overrides: list[Override]
    problem: OptProblem
    initial_guess: np.ndarray
    options: OptimizeOptions
    text: str = ""
    spec: Any = None


def _components(r: TaskFile, where: str, value: Any, size: int, **checks) -> np.ndarray | None:
    """One number for every component, or a list of ``size``."""
    if isinstance(value, list):
        if len(value) != size:
            r.problem(where, f"needs {size} value{'s' if size > 1 else ''} (one per component), got {len(value)}")
            return None
        out = [r.number(f"{where}.{i}", v, **checks) for i, v in enumerate(value)]
        return None if any(v is None for v in out) else np.array(out, dtype=float)
    v = r.number(where, value, **checks)
    return None if v is None else np.full(size, v)


def _feature(r: TaskFile, where: str, name: Any, catalogue: dict[str, Feature]) -> Feature | None:
    feature = catalogue.get(str(name))
    if feature is None:
        close = difflib.get_close_matches(str(name), list(catalogue), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        r.problem(where, f"unknown coordinate {str(name)!r}{hint} (joints.NAME, joints.NAME.velocity, bodies.NAME.position)")
    return feature


def input_groups(mech: Mechanism) -> dict[str, list[int]]:
    """Input names a task may use: each input's own (``hinge:r0``, an actuator's), and
    without actuators each joint's name for all its inputs."""
    out = {name: [i] for i, name in enumerate(mech.input_names())}
    if not mech.has_actuators:
        for j, joint in enumerate(mech.joints):
            r = [int(i) for i in np.arange(mech.nf)[mech.joint_free_range[j]]]
            if r:
                out.setdefault(joint.name, r)
    return out


def _inputs(r: TaskFile, where: str, name: Any, groups: dict[str, list[int]]) -> list[int] | None:
    found = groups.get(str(name))
    if found is None:
        close = difflib.get_close_matches(str(name), list(groups), n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else f" (inputs: {', '.join(groups)})"
        r.problem(where, f"unknown input {str(name)!r}{hint}")
    return found


def _weights(r: TaskFile, where: str, value: Any, catalogue, goal: dict[str, np.ndarray]) -> FeatureSet | None:
    entries = r.mapping(where, value, "coordinate: weight")
    features, weights, targets = [], [], []
    for name, w in entries.items():
        f = _feature(r, f"{where}.{name}", name, catalogue)
        if f is None:
            continue
        vals = _components(r, f"{where}.{name}", w, f.size, minimum=0.0)
        if vals is None:
            continue
        features.append(f)
        weights.append(vals)
        targets.append(goal.get(f.name, np.zeros(f.size)))
    if not features:
        return None
    return FeatureSet(features, np.concatenate(targets), weight=np.concatenate(weights))


def load_task(path: str | os.PathLike) -> Task:
    """Read and check a task file, load its scene and build the numeric problem.

    Raises:
        SceneError: every problem with the task file (and its scene), each with file, line
            and field (exit code 2); SceneFileError (exit 3) when a file cannot be read.
    """
    from dojo_cli.io.tables import read_input_table
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import load_scene_spec

    r, data = open_task_file(path, "a task file", "scene, horizon, costs, ...")
    file = r.file
    folder = Path(path).resolve().parent
    r.unknown_keys("", data, KEYS)

    # ------------------------------------------------------------ scene, set, horizon
    scene_ref, overrides = r.scene(data, folder), r.overrides(data)
    # The state the optimised run starts from must not depend on the inputs: with the
    # velocities at t = 0 (the scenes' default) the first midpoint velocity is solved with
    # the first input (simulation.initial). The scene's velocities are taken as Dojo's
    # midpoint velocities into the first step instead (docs/optimize.md).
    overrides.append(Override("initial_velocity", INITIAL_VELOCITY, file, None))
    horizon = None
    if "horizon" not in data:
        r.problem("horizon", "required: the number of steps to optimise")
    else:
        horizon = r.integer("horizon", data["horizon"], 1, MAX_HORIZON)
    representation = data.get("representation", "minimal")
    if representation not in REPRESENTATIONS:
        r.problem("representation", f"must be one of {', '.join(REPRESENTATIONS)}, got {value_text(representation)}")
    options = _solver_options(r, data.get("solver"))
    if scene_ref is None or r.problems:
        raise SceneError(r.problems)
    spec = load_scene_spec(scene_ref, overrides)  # the scene's own problems, at their lines
    # what the optimiser differentiates is the variational step without external forces
    # (the gradients do not include them, docs/gradients.md): a scene that runs otherwise
    # would not be the run the optimum is written as
    if spec.integrator != "variational":
        r.problem("scene", f"the scene runs the {spec.integrator} integrator; dojo optimize differentiates the "
                           "variational one (set: {integrator: variational})")
    if spec.external:
        r.problem("scene", "the scene has external forces, which the step gradients do not include "
                           "(set: {external: []} to optimise without them)")
    if spec.controller.type != "none":
        # the optimiser's inputs are the whole input: a controller's law (its feedback on the
        # state) is neither in the step gradients nor in the run written, so a task on such a
        # scene would optimise another system than the one it names (issue 26)
        where = next((f"set.{o.path}" for o in overrides if o.path.split(".")[0] == "controller"), "scene")
        r.problem(where, f"the scene has a {spec.controller.type} controller; dojo optimize computes every input "
                         "itself (set: {controller: {type: none}} to optimise without it)")
    if r.problems:
        raise SceneError(r.problems)
    mech = build_mechanism(spec)
    catalogue = feature_catalogue(mech)
    groups = input_groups(mech)

    # ------------------------------------------------------------ goal and costs
    goal: dict[str, np.ndarray] = {}
    for name, value in r.mapping("goal", data.get("goal"), "coordinate: target").items():
        f = _feature(r, f"goal.{name}", name, catalogue)
        if f is not None:
            vals = _components(r, f"goal.{name}", value, f.size)
            if vals is not None:
                goal[f.name] = vals
    costs = r.mapping("costs", data.get("costs"), "state, input, terminal")
    r.unknown_keys("costs", costs, COST_KEYS)
    stage = _weights(r, "costs.state", costs.get("state"), catalogue, goal)
    terminal = _weights(r, "costs.terminal", costs.get("terminal"), catalogue, goal)
    targets = _targets(r, costs.get("targets"), catalogue, horizon, mech.timestep)
    reference = _reference(r, costs.get("reference"), catalogue, mech, horizon, folder)
    effort = np.zeros(mech.nu)
    raw_effort = costs.get("input", 0.0)
    if isinstance(raw_effort, dict):
        for name, w in raw_effort.items():
            idx = _inputs(r, f"costs.input.{name}", name, groups)
            v = r.number(f"costs.input.{name}", w, minimum=0.0)
            if idx is not None and v is not None:
                effort[idx] = v
    else:
        v = r.number("costs.input", raw_effort, minimum=0.0)
        if v is not None:
            effort[:] = v

    # ------------------------------------------------------------ constraints
    cons = r.mapping("constraints", data.get("constraints"), "inputs, terminal, path")
    r.unknown_keys("constraints", cons, CONSTRAINT_KEYS)
    lower = np.full(mech.nu, -np.inf)
    upper = np.full(mech.nu, np.inf)
    for name, bounds in r.mapping("constraints.inputs", cons.get("inputs"), "input: [lower, upper]").items():
        where = f"constraints.inputs.{name}"
        idx = _inputs(r, where, name, groups)
        if not isinstance(bounds, list) or len(bounds) != 2:
            r.problem(where, f"must be [lower, upper], got {value_text(bounds)}")
            continue
        lo = r.number(f"{where}.0", bounds[0], infinite=True)
        hi = r.number(f"{where}.1", bounds[1], infinite=True)
        if lo is None or hi is None or idx is None:
            continue
        if lo > hi:
            r.problem(where, f"infeasible bounds: lower {lo:g} > upper {hi:g}")
            continue
        lower[idx], upper[idx] = lo, hi
    terminal_eq = None
    raw_terminal = cons.get("terminal")
    if raw_terminal is not None:
        if not isinstance(raw_terminal, list):
            r.problem("constraints.terminal", f"must be a list of coordinates, got {value_text(raw_terminal)}")
        else:
            feats = [f for i, n in enumerate(raw_terminal) if (f := _feature(r, f"constraints.terminal.{i}", n, catalogue))]
            if feats:
                terminal_eq = FeatureSet(feats, np.concatenate([goal.get(f.name, np.zeros(f.size)) for f in feats]))
    path_ineq = _path_constraints(r, cons.get("path"), catalogue)
    slack: list[int] = []
    raw_slack = cons.get("slack")
    if raw_slack is not None:
        if not isinstance(raw_slack, list):
            r.problem("constraints.slack", f"must be a list of input or joint names, got {value_text(raw_slack)}")
        else:
            for i, name in enumerate(raw_slack):
                idx = _inputs(r, f"constraints.slack.{i}", name, groups)
                for j in idx or []:
                    if not lower[j] <= 0.0 <= upper[j]:
                        r.problem(f"constraints.slack.{i}", f"slack input {mech.input_names()[j]!r} is driven to 0, "
                                                            f"outside its bounds [{lower[j]:g}, {upper[j]:g}]")
                    elif j not in slack:
                        slack.append(j)

    # ------------------------------------------------------------ initial guess
    guess = np.zeros((horizon, mech.nu))
    raw_guess = data.get("initial_guess", "zeros")
    if raw_guess == "zeros":
        pass
    elif isinstance(raw_guess, dict) and set(raw_guess) == {"constant"}:
        for name, value in r.mapping("initial_guess.constant", raw_guess["constant"], "input: value").items():
            idx = _inputs(r, f"initial_guess.constant.{name}", name, groups)
            v = r.number(f"initial_guess.constant.{name}", value)
            if idx is not None and v is not None:
                guess[:, idx] = v
    elif isinstance(raw_guess, dict) and set(raw_guess) == {"schedule"}:
        where = "initial_guess.schedule"
        name = raw_guess["schedule"]
        if not isinstance(name, str) or not name:
            r.problem(where, f"must be a CSV or HDF5 file of inputs, got {value_text(name)}")
        else:
            candidate = folder / name
            try:
                table = read_input_table(candidate if candidate.exists() else Path(name))
            except OSError as exc:
                r.problem(where, f"{name}: cannot read ({exc.strerror or exc})")
            except (ValueError, TypeError, KeyError) as exc:
                r.problem(where, f"{name}: {exc}")
            else:
                if table.shape[1] != mech.nu:
                    r.problem(where, f"{name}: has {table.shape[1]} columns, the mechanism has {mech.nu} inputs")
                elif len(table) < horizon:
                    r.problem(where, f"{name}: has {len(table)} rows, the horizon needs {horizon}")
                else:
                    guess = table[:horizon].copy()
    else:
        r.problem("initial_guess", f"must be zeros, {{constant: {{input: value}}}} or {{schedule: FILE}}, got {value_text(raw_guess)}")
    if r.problems:
        raise SceneError(r.problems)
    problem = OptProblem(
        mech=mech, horizon=horizon, representation=representation, z0=initial_state(mech), stage=stage,
        terminal=terminal, effort=effort, effort_reference=np.zeros(mech.nu), lower=lower, upper=upper,
        opts=mech.default_options, terminal_equality=terminal_eq, path_inequality=path_ineq, targets=targets,
        reference=reference, slack=tuple(slack),
    )
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    return Task(file=file, scene=scene_ref, overrides=overrides, problem=problem, initial_guess=guess, options=options,
                text=text, spec=spec)


def _targets(r: TaskFile, raw: Any, catalogue, horizon: int, timestep: float) -> list[tuple[int, FeatureSet]]:
    """``costs.targets``: [{coordinate, step or time, value, weight}]: a cost at one knot."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        r.problem("costs.targets", f"must be a list of {{coordinate, step or time, value, weight}}, got {value_text(raw)}")
        return []
    out = []
    for i, item in enumerate(raw):
        where = f"costs.targets.{i}"
        if not isinstance(item, dict) or "coordinate" not in item:
            r.problem(where, f"must be {{coordinate: NAME, step: K (or time: T), value: ..., weight: ...}}, got {value_text(item)}")
            continue
        r.unknown_keys(where, item, TARGET_KEYS)
        f = _feature(r, f"{where}.coordinate", item["coordinate"], catalogue)
        if ("step" in item) == ("time" in item):
            r.problem(where, "needs one of step (a knot, 1..horizon) and time (s, a multiple of the timestep)")
            continue
        knot = None
        if "step" in item:
            knot = r.integer(f"{where}.step", item["step"], 1, horizon)
        else:
            t = r.number(f"{where}.time", item["time"], positive=True)
            if t is not None:
                k = round(t / timestep)
                if abs(k * timestep - t) > TIME_TOLERANCE * max(1.0, t) or not 1 <= k <= horizon:
                    r.problem(f"{where}.time", f"must be a multiple of the timestep {timestep:g} s in "
                                               f"{timestep:g}..{horizon * timestep:g} s, got {t:g}")
                else:
                    knot = k
        if f is None or knot is None:
            continue
        value = _components(r, f"{where}.value", item.get("value", 0.0), f.size)
        weight = _components(r, f"{where}.weight", item.get("weight", 1.0), f.size, minimum=0.0)
        if value is not None and weight is not None:
            out.append((knot, FeatureSet([f], value, weight=weight)))
    return out


def _reference(r: TaskFile, raw: Any, catalogue, mech: Mechanism, horizon: int, folder: Path) -> FeatureSet | None:
    """``costs.reference: {file, weight: {coordinate: weight}}``: tracking of a reference
    trajectory at knots 0..N, its rows read from a stored run (HDF5, the same scene's) or a
    CSV whose header names the coordinates (``joints.cart_slider``; ``NAME[i]`` for the
    components of a coordinate with several)."""
    if raw is None:
        return None
    where = "costs.reference"
    if not isinstance(raw, dict) or "file" not in raw or "weight" not in raw:
        r.problem(where, f"must be {{file: RUN.h5 or TABLE.csv, weight: {{coordinate: weight}}}}, got {value_text(raw)}")
        return None
    r.unknown_keys(where, raw, REFERENCE_KEYS)
    fs = _weights(r, f"{where}.weight", raw["weight"], catalogue, {})
    name = raw["file"]
    if not isinstance(name, str) or not name:
        r.problem(f"{where}.file", f"must be a stored run (.h5) or a CSV table, got {value_text(name)}")
        return None
    if fs is None or horizon is None:
        return None
    candidate = folder / name
    path = candidate if candidate.exists() else Path(name)
    try:
        if path.suffix.lower() in (".h5", ".hdf5"):
            rows = _reference_from_run(path, mech, fs)
        else:
            rows = _reference_from_table(path, fs)
    except OSError as exc:
        r.problem(f"{where}.file", f"{name}: cannot read ({exc.strerror or exc})")
        return None
    except (ValueError, KeyError, DojoError) as exc:
        r.problem(f"{where}.file", f"{name}: {str(exc).removeprefix(f'{path}: ')}")
        return None
    if len(rows) < horizon + 1:
        r.problem(f"{where}.file", f"{name}: has {len(rows)} knots, the horizon needs {horizon + 1} (0..{horizon})")
        return None
    fs.target = rows[: horizon + 1]
    return fs


def _reference_from_run(path: Path, mech: Mechanism, fs: FeatureSet) -> np.ndarray:
    """(T+1, n) the features of a stored run's states (its maximal states with the
    integrator's midpoint velocities: the optimiser's own state, so the same minimal
    coordinates and velocities)."""
    from types import SimpleNamespace

    from dojo_cli.io.storage import read_storage
    from dojo_cli.optimize.problem import Rollout, feature_values, rotation_vector
    from dojo_cli.simulation.run import minimal_state

    run = read_storage(path)
    names = [b.name for b in mech.bodies]
    if list(run.body_names) != names:
        raise ValueError(f"is a run of bodies {', '.join(run.body_names)}, the task's scene has {', '.join(names)}")
    if abs(run.timestep - mech.timestep) > TIME_TOLERANCE * mech.timestep:
        raise ValueError(f"has timestep {run.timestep:g} s, the task's scene {mech.timestep:g} s")
    Z = np.stack([run.trajectory.state(k) for k in range(len(run.trajectory.x))])
    MQ, MV = minimal_state(mech, Z)
    traj = Rollout(U=run.trajectory.inputs, Z=Z, MQ=MQ, MV=MV, lam=np.zeros((0, 0)), status=np.zeros(0))
    out = feature_values(SimpleNamespace(mech=mech), fs, traj, np.arange(len(Z)))
    X = Z.reshape(len(Z), mech.nb, 13)
    i = 0
    for f in fs.features:  # an orientation's reference is its rotation vector (the target's form)
        if f.kind == "r":
            out[:, i:i + 3] = rotation_vector(X[:, f.index[0], 6:10])
        i += f.size
    return out


def _reference_from_table(path: Path, fs: FeatureSet) -> np.ndarray:
    """(rows, n) the weighted coordinates' columns of a CSV table with a header of names."""
    text = path.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        raise ValueError("is empty")
    header = [h.strip() for h in lines[0].split(",")]
    rows = []
    for i, ln in enumerate(lines[1:]):
        try:
            values = [float(v) for v in ln.split(",")]
        except ValueError:
            raise ValueError(f"row {i + 1} is not a list of comma-separated numbers") from None
        if len(values) != len(header):
            raise ValueError(f"row {i + 1} has {len(values)} values, the header {len(header)} names")
        rows.append(values)
    table = np.array(rows, dtype=float).reshape(len(rows), len(header))
    if not np.all(np.isfinite(table)):
        raise ValueError("contains non-finite values")
    cols = []
    for f in fs.features:
        names = [f.name] if f.size == 1 else [f"{f.name}[{i}]" for i in range(f.size)]
        for n in names:
            if n not in header:
                raise ValueError(f"has no column {n!r} (header: {', '.join(header)})")
            cols.append(header.index(n))
    return table[:, cols]


def _path_constraints(r: TaskFile, raw: Any, catalogue) -> FeatureSet | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        r.problem("constraints.path", f"must be a list of {{coordinate, lower, upper}}, got {value_text(raw)}")
        return None
    features, lows, highs = [], [], []
    for i, item in enumerate(raw):
        where = f"constraints.path.{i}"
        if not isinstance(item, dict) or "coordinate" not in item:
            r.problem(where, f"must be {{coordinate: NAME, lower: ..., upper: ...}}, got {value_text(item)}")
            continue
        r.unknown_keys(where, item, ("coordinate", "lower", "upper"))
        f = _feature(r, f"{where}.coordinate", item["coordinate"], catalogue)
        if f is None:
            continue
        lo = _components(r, f"{where}.lower", item.get("lower", -math.inf), f.size, infinite=True)
        hi = _components(r, f"{where}.upper", item.get("upper", math.inf), f.size, infinite=True)
        if lo is None or hi is None:
            continue
        if np.any(lo > hi):
            r.problem(where, "infeasible bounds: lower > upper")
            continue
        features.append(f)
        lows.append(lo)
        highs.append(hi)
    if not features:
        return None
    n = sum(f.size for f in features)
    return FeatureSet(features, np.zeros(n), lower=np.concatenate(lows), upper=np.concatenate(highs))


def _solver_options(r: TaskFile, raw: Any) -> OptimizeOptions:
    values = r.mapping("solver", raw, "solver options")
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        where = f"solver.{key}"
        if key not in SOLVER_KEYS:
            r.unknown_key(where, key, SOLVER_KEYS)
        elif key in ("max_iterations", "max_outer"):
            v = r.integer(where, value, 0 if key == "max_outer" else 1, MAX_ITERATIONS)
            if v is not None:
                kwargs[key] = v
        elif key == "kappa":
            items = value if isinstance(value, list) else [value]
            out = [r.number(f"{where}.{i}" if isinstance(value, list) else where, v, positive=True) for i, v in enumerate(items)]
            if all(v is not None for v in out):
                kwargs[key] = tuple(out)
        elif key == "exact_stage":
            if not isinstance(value, bool):
                r.problem(where, f"must be true or false, got {value_text(value)}")
            else:
                kwargs[key] = value
        elif key in ("regularization",):
            v = r.number(where, value, minimum=0.0)
            if v is not None:
                kwargs[key] = v
        elif key == "penalty_scaling":
            v = r.number(where, value, minimum=1.0)
            if v is not None:
                kwargs[key] = v
        else:
            v = r.number(where, value, positive=True)
            if v is not None:
                kwargs[key] = v
    if kwargs.get("exact_stage") is False and not kwargs.get("kappa"):
        r.problem("solver.exact_stage", "false needs a kappa schedule (solver.kappa) to end on")
    return OptimizeOptions(**kwargs)
