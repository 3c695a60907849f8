"""Fit files: what ``dojo fit FIT.yaml`` identifies (docs/fit.md).

A fit file (YAML; ``scene``, ``parameters`` and ``data`` required)::

    scene: ../../scenes/contact/cube_toss.yaml    # a built-in name, or a path relative to this file
    set: {solver.btol: 1.0e-6}                    # scene overrides (as --set)
    parameters:                                   # labels of dojo_cli.model.parameters, wildcards allowed
      contacts.*.friction: {initial: 0.2, bounds: [0, 2], tie: true}    # tie: one value for every match
      contacts.*.restitution: {initial: 0.1, bounds: [0, 1], tie: true}
      contacts.corner_*.offset: {bounds: [-1.5, 1.5]}                   # 8 x 3 free values
    data:
      file: ../../data/cube_tosses/cube_tosses_train.npz   # .npz, .csv, .h5 (our storage files too)
      bodies: {cube: {position: [x, y, z], orientation: [qw, qx, qy, qz]}}
      quaternion_order: wxyz                     # or xyzw
      time: t                                    # optional time column (s); else the file's dt or the timestep
      train: "0:20"                              # trajectories (slice or list of indices)
      validation: "300:340"
    loss: {type: one_step, window: 10, rotation_weight: 1.0, huber: 0.05}   # shooting: also fit_states: true
    solver: {max_evaluations: 30, starts: 1, seed: 0, spread: 0.2, kappa: 1.0e-6, workers: 2}
    metrics: {width: 2.0}                        # length the position errors are percent of

A parameter key matches labels (``contacts.c1.offset.x``) either whole or as their prefix
(``contacts.c1.offset`` is its three components). Every problem is reported at its line
(``fit.yaml:7: parameters.contacts.*.fricton: matches no parameter``), the scene's problems
at theirs; a data file's problems name the file, row and cause.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import SceneError
from dojo_cli.fit.data import QUATERNION_ORDERS, BodyColumns, read_recordings
from dojo_cli.io.motion_tables import TableError
from dojo_cli.fit.problem import LOSSES, Parameters, Recording, initial_parameter_values
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels
from dojo_cli.scene.overrides import Override
from dojo_cli.scene.schema import value_text
from dojo_cli.scene.task_file import TaskFile, open_task_file

KEYS = ("scene", "set", "parameters", "data", "loss", "solver", "metrics", "description")
PARAMETER_KEYS = ("initial", "bounds", "tie")
DATA_KEYS = ("file", "files", "bodies", "quaternion_order", "time", "train", "validation")
LOSS_KEYS = ("type", "window", "rotation_weight", "huber", "fit_states")
SOLVER_KEYS = ("max_evaluations", "starts", "seed", "spread", "kappa", "tolerance", "workers")
# Most worker processes a fit may ask for.
MAX_WORKERS = 64
METRIC_KEYS = ("width", "clearance")
MAX_EVALUATIONS = 10_000
MAX_WINDOW = 10_000
MAX_STARTS = 100


@dataclass
class FitOptions:
    """How the least-squares problem is solved (scipy.optimize.least_squares, trust-region
    reflective with bounds).

    Attributes:
        max_evaluations: Jacobian evaluations per start at most.
        starts: starts of the multi-start (the first at the initial values, the others drawn
            uniformly within ``spread`` of each parameter's range around it).
        seed: of the starts' draws.
        spread: fraction of a parameter's bounded range the starts are drawn in.
        tolerance: ftol = xtol of least_squares.
        huber: the Huber loss's scale (residual units), or None for plain least squares.
        workers: processes the residuals and Jacobians are evaluated in (the recordings'
            segments split between them; 1: this process only).
    """

    max_evaluations: int = 30
    starts: int = 1
    seed: int = 0
    spread: float = 0.2
    tolerance: float = 1e-10
    huber: float | None = None
    workers: int = 1


@dataclass
class FitTask:
    """A fit file, read and checked (module docstring).

    Attributes:
        file: the fit file.
        scene: absolute scene path or built-in name; overrides: its ``set:``.
        mech: the scene's mechanism.
        parameters: the free parameters.
        train, validation: recordings.
        loss, window, rotation_weight, kappa, fit_states: the loss (problem.FitProblem).
        options: solver options.
        width: the length position errors are percent of; clearance: contact distance
            the ballistic start's free-flight frames keep.
        text: the file's text.
    """

    file: str
    scene: str
    overrides: list[Override]
    mech: Mechanism
    parameters: Parameters
    train: list[Recording]
    validation: list[Recording]
    loss: str = "one_step"
    window: int = 1
    rotation_weight: float = 1.0
    kappa: float | None = None
    fit_states: bool = False
    options: FitOptions = field(default_factory=FitOptions)
    width: float = 1.0
    clearance: float = 0.05
    text: str = ""


def match_labels(pattern: str, labels: list[str]) -> list[str]:
    """The labels a parameter key names: equal to it, or having it as a dotted prefix
    (``contacts.c1.offset`` names ``contacts.c1.offset.x`` ...); shell wildcards allowed."""
    out = []
    for label in labels:
        parts = label.split(".")
        if any(fnmatch.fnmatchcase(".".join(parts[:n]), pattern) for n in range(1, len(parts) + 1)):
            out.append(label)
    return out


def _selection(r: TaskFile, where: str, value: Any, count: int) -> list[int] | None:
    """Trajectory indices: ``"a:b"`` (a slice, Python's rules), a list of indices, or ``all``."""
    if value == "all":
        return list(range(count))
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d*\s*:\s*-?\d*\s*(:\s*-?\d+\s*)?", value):
        parts = [int(p) if p.strip() else None for p in value.split(":")]
        return list(range(count))[slice(*parts)]
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        bad = [v for v in value if not -count <= v < count]
        if bad:
            r.problem(where, f"index {bad[0]} out of range: the data has {count} trajectories")
            return None
        return [v % count for v in value]
    r.problem(where, f"must be a slice \"start:stop\", a list of indices or all, got {value_text(value)}")
    return None


def load_fit(path: str | os.PathLike) -> FitTask:
    """Read and check a fit file, load its scene and data.

    Raises:
        SceneError: every problem with the fit file, its scene and its data (file, line, field;
            exit code 2); SceneFileError (exit 3) when the fit file cannot be read.
    """
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import load_scene_spec

    r, data = open_task_file(path, "a fit file", "scene, parameters, data, ...")
    file = r.file
    folder = Path(path).resolve().parent
    r.unknown_keys("", data, KEYS)

    scene_ref, overrides = r.scene(data, folder), r.overrides(data)
    for key in ("parameters", "data"):
        if key not in data:
            r.problem(key, f"required: {'the parameters to fit' if key == 'parameters' else 'the recorded motion'}")
    if scene_ref is None or r.problems:
        raise SceneError(r.problems)
    spec = load_scene_spec(scene_ref, overrides)
    if spec.integrator != "variational":
        r.problem("scene", f"the scene runs the {spec.integrator} integrator; dojo fit differentiates the variational one")
    if spec.external:
        r.problem("scene", "the scene has external forces, which the step gradients do not include")
    if r.problems:
        raise SceneError(r.problems)
    mech = build_mechanism(spec)

    parameters = _parameters(r, data.get("parameters"), mech)
    loss, window, rotation_weight, huber, fit_states = _loss(r, data.get("loss"))
    options, kappa = _solver(r, data.get("solver"))
    options.huber = huber
    metrics = r.mapping("metrics", data.get("metrics"), "metric options")
    r.unknown_keys("metrics", metrics, METRIC_KEYS)
    width = r.number("metrics.width", metrics.get("width", 1.0), positive=True) or 1.0
    clearance = r.number("metrics.clearance", metrics.get("clearance", 0.05), minimum=0.0)
    train, validation = _data(r, data.get("data"), folder, mech)
    if r.problems:
        raise SceneError(r.problems)
    return FitTask(file=file, scene=scene_ref, overrides=overrides, mech=mech, parameters=parameters, train=train,
                   validation=validation, loss=loss, window=window, rotation_weight=rotation_weight, kappa=kappa,
                   fit_states=fit_states,
                   options=options, width=width, clearance=clearance if clearance is not None else 0.05,
                   text=Path(path).read_text(encoding="utf-8", errors="replace"))


def _parameters(r: TaskFile, raw: Any, mech: Mechanism) -> Parameters | None:
    entries = r.mapping("parameters", raw, "label: {initial, bounds, tie}")
    labels = parameter_labels(mech, PARAMETER_KINDS)
    names, groups, lows, highs, inits = [], [], [], [], []
    taken: dict[str, str] = {}
    for key, value in entries.items():
        where = f"parameters.{key}"
        matched = match_labels(str(key), labels)
        if not matched:
            close = sorted({".".join(lb.split(".")[:3]) for lb in labels})
            r.problem(where, f"matches no parameter (parameters of this scene: {', '.join(close[:12])}"
                             f"{', ...' if len(close) > 12 else ''})")
            continue
        again = [lb for lb in matched if lb in taken]
        if again:
            r.problem(where, f"{again[0]} is already fitted by parameters.{taken[again[0]]}")
            continue
        value = r.mapping(where, value, "initial, bounds, tie")
        r.unknown_keys(where, value, PARAMETER_KEYS)
        lo, hi = -math.inf, math.inf
        bounds = value.get("bounds")
        if bounds is not None:
            if not isinstance(bounds, list) or len(bounds) != 2:
                r.problem(f"{where}.bounds", f"must be [lower, upper], got {value_text(bounds)}")
                continue
            lo = r.number(f"{where}.bounds.0", bounds[0], infinite=True)
            hi = r.number(f"{where}.bounds.1", bounds[1], infinite=True)
            if lo is None or hi is None:
                continue
            if not lo < hi:
                r.problem(f"{where}.bounds", f"lower {lo:g} must be < upper {hi:g}")
                continue
        tie = value.get("tie", False)
        if not isinstance(tie, bool):
            r.problem(f"{where}.tie", f"must be true or false, got {value_text(tie)}")
            continue
        key_groups = [matched] if tie else [[lb] for lb in matched]
        init = None
        if "initial" in value:
            init = r.number(f"{where}.initial", value["initial"])
            if init is None:
                continue
        for g in key_groups:
            start = init if init is not None else float(initial_parameter_values(mech, [g])[0])
            if not lo <= start <= hi:
                r.problem(f"{where}.initial" if init is not None else f"{where}.bounds",
                          f"initial value {start:g} of {g[0]} is outside the bounds [{lo:g}, {hi:g}]")
                continue
            names.append(str(key) if tie else g[0])
            groups.append(g)
            lows.append(lo)
            highs.append(hi)
            inits.append(start)
        for lb in matched:
            taken[lb] = str(key)
    if not groups:
        if not r.problems:
            r.problem("parameters", "names no parameter to fit")
        return None
    return Parameters(names, groups, np.array(lows), np.array(highs), np.array(inits))


def _loss(r: TaskFile, raw: Any) -> tuple[str, int, float, float | None, bool]:
    values = r.mapping("loss", raw, "loss options")
    r.unknown_keys("loss", values, LOSS_KEYS)
    kind = values.get("type", "one_step")
    if kind not in LOSSES:
        r.problem("loss.type", f"must be one of {', '.join(LOSSES)}, got {value_text(kind)}")
    window = r.integer("loss.window", values.get("window", 1 if kind == "one_step" else 10), 1, MAX_WINDOW) or 1
    weight = r.number("loss.rotation_weight", values.get("rotation_weight", 1.0), minimum=0.0)
    huber = values.get("huber")
    if huber is not None:
        huber = r.number("loss.huber", huber, positive=True)
    fit_states = values.get("fit_states", False)
    if not isinstance(fit_states, bool):
        r.problem("loss.fit_states", f"must be true or false, got {value_text(fit_states)}")
        fit_states = False
    elif fit_states and kind != "shooting":
        r.problem("loss.fit_states", "with type: shooting only (the one-step loss has one step per recorded state)")
        fit_states = False
    return kind, window, weight if weight is not None else 1.0, huber, fit_states


def _solver(r: TaskFile, raw: Any) -> tuple[FitOptions, float | None]:
    values = r.mapping("solver", raw, "solver options")
    out, kappa = FitOptions(), None
    for key, value in values.items():
        where = f"solver.{key}"
        if key not in SOLVER_KEYS:
            r.unknown_key(where, key, SOLVER_KEYS)
        elif key == "max_evaluations":
            out.max_evaluations = r.integer(where, value, 1, MAX_EVALUATIONS) or out.max_evaluations
        elif key == "starts":
            out.starts = r.integer(where, value, 1, MAX_STARTS) or out.starts
        elif key == "workers":
            out.workers = r.integer(where, value, 1, MAX_WORKERS) or out.workers
        elif key == "seed":
            v = r.integer(where, value, 0, 2**32 - 1)
            out.seed = out.seed if v is None else v
        elif key == "spread":
            out.spread = r.number(where, value, positive=True) or out.spread
        elif key == "tolerance":
            out.tolerance = r.number(where, value, positive=True) or out.tolerance
        elif key == "kappa":
            kappa = r.number(where, value, positive=True)
    return out, kappa


def _data(r: TaskFile, raw: Any, folder: Path, mech: Mechanism) -> tuple[list[Recording], list[Recording]]:
    values = r.mapping("data", raw, "data options")
    r.unknown_keys("data", values, DATA_KEYS)
    files = values.get("files", [values["file"]] if "file" in values else None)
    if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
        r.problem("data.file", f"required: a data file (file: PATH or files: [PATH, ...]), got {value_text(files)}")
        return [], []
    order = values.get("quaternion_order", "wxyz")
    if order not in QUATERNION_ORDERS:
        r.problem("data.quaternion_order", f"must be one of {', '.join(QUATERNION_ORDERS)}, got {value_text(order)}")
        return [], []
    names = [b.name for b in mech.bodies]
    bodies: dict[str, BodyColumns] = {}
    for name, cols in r.mapping("data.bodies", values.get("bodies"), "body: {position, orientation}").items():
        where = f"data.bodies.{name}"
        if name not in names:
            r.problem(where, f"unknown body {name!r} (bodies: {', '.join(names)})")
            continue
        cols = r.mapping(where, cols, "position, orientation")
        pos, ori = cols.get("position"), cols.get("orientation")
        if not (isinstance(pos, list) and len(pos) == 3 and all(isinstance(c, str) for c in pos)):
            r.problem(f"{where}.position", f"must be 3 column names, got {value_text(pos)}")
            continue
        if not (isinstance(ori, list) and len(ori) == 4 and all(isinstance(c, str) for c in ori)):
            r.problem(f"{where}.orientation", f"must be 4 column names (in quaternion_order), got {value_text(ori)}")
            continue
        bodies[name] = BodyColumns(pos, ori, order)
    stored_only = all(Path(f).suffix.lower() in (".h5", ".hdf5") for f in files)
    body_order = [n for n in names if n in bodies] if bodies else (names if stored_only else [])
    if not body_order:
        r.problem("data.bodies", "required for tables: the columns of each body (position, orientation)")
        return [], []
    if body_order != names:
        r.problem("data.bodies", f"every body must be recorded; missing {', '.join(n for n in names if n not in body_order)}")
        return [], []
    time_column = values.get("time")
    if time_column is not None and not isinstance(time_column, str):
        r.problem("data.time", f"must be a column name, got {value_text(time_column)}")
        return [], []
    recordings: list[Recording] = []
    where = "data.files" if "files" in values else "data.file"
    for f in files:
        candidate = folder / f
        p = candidate if candidate.exists() else Path(f)
        if not p.is_file():
            r.problem(where, f"{f}: no such file")
            continue
        try:
            recordings += read_recordings(p, f, bodies, body_order, mech.timestep, time_column)
        except TableError as exc:
            r.problem(where, str(exc))
        except OSError as exc:
            r.problem(where, f"{f}: cannot read ({exc.strerror or exc})")
        except (ValueError, KeyError) as exc:
            r.problem(where, f"{f}: {exc}")
    if r.problems:
        return [], []
    train = _selection(r, "data.train", values.get("train", "all"), len(recordings))
    validation = _selection(r, "data.validation", values.get("validation", []), len(recordings)) if "validation" in values else []
    if train is None or validation is None:
        return [], []
    overlap = sorted(set(train) & set(validation))
    if overlap:
        r.problem("data.validation", f"trajectory {overlap[0]} is in train too: validation must be unseen")
    if not train:
        r.problem("data.train", "selects no trajectory")
    return [recordings[i] for i in train], [recordings[i] for i in validation]
