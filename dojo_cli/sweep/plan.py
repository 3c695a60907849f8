"""Sweep files: which runs a sweep makes (``dojo sweep SWEEP.yaml``).

A sweep file (YAML; every key but ``scene`` optional)::

    scene: sliding_box                 # a built-in name, or a path relative to this file
    config: ../solver/fast.yaml        # preset(s) merged into the scene (dojo simulate --config)
    set: {duration: 1.0}               # overrides common to every run
    grid:                              # every combination of these
      contacts.*.friction: [0.2, 0.5, 0.8]
      bodies.0.mass: {linspace: [1.0, 3.0, 3]}   # numpy's (start, stop, num): 1, 2, 3
    zip: {}                            # lists of equal length, varied together
    random: {n: 0, seed: 0, axes: {}}  # e.g. {joints.0.damper: {uniform: [0, 1]}}
    metrics:                           # name: expression evaluated on each run
      final_x: "x[-1, box, 0]"
    output: outputs/sweeps/friction    # relative to the current directory; -o overrides

The runs are the product of the grid's axes (in file order), the zip's rows and the random
samples (each group that is present). Values are lists, or ``{linspace: [start, stop,
num]}``, ``{logspace: ...}``, ``{geomspace: ...}``, ``{arange: [start, stop, step]}``
(numpy's functions); random axes draw ``n`` samples with numpy's ``default_rng(seed)`` from
``{uniform: [low, high]}``, ``{loguniform: [low, high]}``, ``{normal: [mean, std]}``,
``{integers: [low, high]}`` (high excluded) or ``{choice: [values...]}``.

``scene`` and ``config`` resolve against the sweep file's folder, then the current
directory (so ``configs/solver/fast.yaml`` works from the repository's top as well).

Each run has an id, the first 12 hex digits of the SHA-256 of what defines it: the scene's
text, the presets' and the run's overrides (and, for random runs, the sample's number). A
re-run of the sweep finds the runs already done by their ids.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.scene.overrides import Override
from dojo_cli.scene.schema import value_text
from dojo_cli.scene.task_file import TaskFile, open_task_file, resolve_file
from dojo_cli.sweep.metrics import ExpressionError, is_entry_point, parse_expression

KEYS = ("scene", "config", "set", "grid", "zip", "random", "metrics", "output")
_RANGES = ("linspace", "logspace", "geomspace", "arange")
_DISTRIBUTIONS = ("uniform", "loguniform", "normal", "integers", "choice")
# Most runs a sweep file may define (a typo in a range, 1e9 points, is caught before any work).
MAX_RUNS = 1_000_000
# Length of a run id: 48 bits of SHA-256, no collision in any sweep of MAX_RUNS runs
# (probability about 2e-3 at a million runs; the plan checks and refuses one).
RUN_ID_DIGITS = 12


@dataclass(frozen=True)
class PlannedRun:
    """One run of a sweep.

    Attributes:
        run_id: its id (module docstring).
        values: {axis path: value} of this run.
        overrides: everything applied to the scene: presets, ``set``, the axes' values.
    """

    run_id: str
    values: dict[str, Any]
    overrides: tuple[Override, ...]


@dataclass
class SweepPlan:
    """A sweep file, read and checked.

    Attributes:
        file: the sweep file.
        scene: the scene: an absolute path, or a built-in's name.
        configs: the preset files, absolute.
        axes: axis paths in manifest column order (grid, zip, random).
        metrics: {name: expression or module:function}.
        output: the output folder the file names (None: not given).
        runs: the runs in order.
        module_paths: folders added to ``sys.path`` for ``module:function`` metrics (the
            sweep file's).
    """

    file: Path
    scene: str
    configs: list[Path]
    axes: list[str]
    metrics: dict[str, str]
    output: Path | None
    runs: list[PlannedRun] = field(default_factory=list)
    module_paths: list[str] = field(default_factory=list)


def load_sweep(path: str | os.PathLike) -> SweepPlan:
    """Read a sweep file and list its runs.

    Raises:
        SceneError: the file cannot be read, or a key, value, scene, preset or metric is
            invalid; one problem per issue, each with the file, line and key (exit code 2).
    """
    from dojo_cli.scene.presets import read_preset

    r, data = open_task_file(path, "a sweep file", "scene, grid, ...", name_enclosing_field=True)
    file, lines = r.file, r.lines
    folder = Path(path).resolve().parent
    for key in data:
        if key not in KEYS:
            r.problem(str(key), f"unknown key (known: {', '.join(KEYS)})")

    scene_ref = r.scene(data, folder) or ""

    configs: list[Path] = []
    raw_configs = data.get("config")
    if raw_configs is not None:
        listed = raw_configs if isinstance(raw_configs, list) else [raw_configs]
        for i, name in enumerate(listed):
            where = "config" if not isinstance(raw_configs, list) else f"config.{i}"
            if not isinstance(name, str) or not name:
                r.problem(where, f"a preset file, got {value_text(name)}")
                continue
            found = resolve_file(name, folder)
            if found is None:
                r.problem(where, f"no such preset file {name!r}")
            else:
                configs.append(found)

    common: list[Override] = []
    for config in configs:
        try:
            common += read_preset(config)
        except SceneError as exc:
            r.problems += exc.problems
    common += r.overrides(data, "set")

    axes: list[tuple[str, list]] = []
    grid = r.mapping("grid", data.get("grid"), "field paths")
    for key, spec in grid.items():
        values = _values(r, f"grid.{key}", spec)
        if values is not None:
            axes.append((str(key), values))
    zipped = r.mapping("zip", data.get("zip"), "field paths")
    zip_axes: list[tuple[str, list]] = []
    for key, spec in zipped.items():
        values = _values(r, f"zip.{key}", spec)
        if values is not None:
            zip_axes.append((str(key), values))
    if len({len(v) for _, v in zip_axes}) > 1:
        lengths = ", ".join(f"{k}: {len(v)}" for k, v in zip_axes)
        r.problem("zip", f"the lists must have the same length, got {lengths}")
    random_axes, samples = _random(r, data)

    names = [k for k, _ in axes] + [k for k, _ in zip_axes] + [k for k, _ in random_axes]
    for name in {n for n in names if names.count(n) > 1}:
        r.problem(name, "the same path is an axis twice (grid, zip, random)")

    metrics: dict[str, str] = {}
    for name, text in r.mapping("metrics", data.get("metrics"), "names: expressions").items():
        where = f"metrics.{name}"
        if not isinstance(text, str):
            r.problem(where, f"an expression or module:function, got {value_text(text)}")
            continue
        if not is_entry_point(text):
            try:
                parse_expression(text)
            except ExpressionError as exc:
                r.problem(where, str(exc))
                continue
        metrics[str(name)] = text

    output = data.get("output")
    if output is not None and (not isinstance(output, str) or not output):
        r.problem("output", f"a folder, got {value_text(output)}")
        output = None

    count = math.prod(len(v) for _, v in axes) * (len(zip_axes[0][1]) if zip_axes else 1) * (samples or 1)
    if count > MAX_RUNS:
        r.problem("grid", f"{count:,} runs, more than {MAX_RUNS:,}")
    if r.problems:
        raise SceneError(r.problems)

    plan = SweepPlan(
        file=Path(path).resolve(), scene=scene_ref, configs=configs, axes=names, metrics=metrics,
        output=Path(output) if output else None, module_paths=[str(folder)],
    )
    scene_text = _scene_text(scene_ref)
    axis_lines = {}
    for group, pairs in (("grid", axes), ("zip", zip_axes), ("random.axes", random_axes)):
        for name, _ in pairs:
            axis_lines[name] = lines.get(f"{group}.{name}")
    plan.runs = _runs(scene_text, common, axes, zip_axes, random_axes, samples, file, axis_lines)
    seen: dict[str, int] = {}
    for i, run in enumerate(plan.runs):
        if run.run_id in seen:
            j = seen[run.run_id]
            raise SceneError(Problem(file, None, "", f"runs {j} and {i} set the same values ({_shown(run.values)}): "
                                     "list each value once"))
        seen[run.run_id] = i
    from dojo_cli.sweep.preflight import check_plan  # here: it imports this module

    check_plan(plan, lines)
    return plan


def _scene_text(scene: str) -> str:
    """The scene's text (what its runs' ids depend on)."""
    from dojo_cli.scene.loader import builtin_scene_names, builtin_scene_path

    path = builtin_scene_path(scene) if scene in builtin_scene_names() and not Path(scene).is_file() else Path(scene)
    return path.read_text(encoding="utf-8", errors="replace")


def _values(r: TaskFile, where: str, spec: Any) -> list | None:
    """An axis's values: a list, or a numpy range."""
    if isinstance(spec, list):
        if not spec:
            r.problem(where, "an empty list of values")
            return None
        return spec
    if isinstance(spec, dict) and len(spec) == 1:
        (kind, args), = spec.items()
        if kind in _RANGES:
            return _range(r, f"{where}.{kind}", kind, args)
    r.problem(where, f"a list of values or one of {{{': [...]}, {'.join(_RANGES)}: [...]}}, got {value_text(spec)}")
    return None


def _numbers(args: Any, count: int) -> list[float] | None:
    if not isinstance(args, list) or len(args) != count:
        return None
    if not all(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) for a in args):
        return None
    return args


def _range(r: TaskFile, where: str, kind: str, args: Any) -> list | None:
    if kind == "arange":
        nums = _numbers(args, 3)
        if nums is None or nums[2] == 0:
            r.problem(where, f"[start, stop, step] with a step that is not 0, got {value_text(args)}")
            return None
        count = math.ceil((nums[1] - nums[0]) / nums[2])
        if not 0 < count <= MAX_RUNS:
            r.problem(where, f"{value_text(args)} gives {max(count, 0)} values (1 to {MAX_RUNS:,} allowed)")
            return None
        return np.arange(*nums).tolist()
    nums = _numbers(args, 3)
    if nums is None or not isinstance(args[2], int) or not 1 <= args[2] <= MAX_RUNS:
        r.problem(where, f"[start, stop, num] with an integer num from 1 to {MAX_RUNS:,}, got {value_text(args)}")
        return None
    if kind == "geomspace" and (nums[0] == 0 or nums[1] == 0 or (nums[0] < 0) != (nums[1] < 0)):
        r.problem(where, f"geomspace's start and stop must be non-zero and of one sign, got {value_text(args)}")
        return None
    function = {"linspace": np.linspace, "logspace": np.logspace, "geomspace": np.geomspace}[kind]
    with np.errstate(all="ignore"):
        values = function(nums[0], nums[1], int(args[2]))
    if not np.all(np.isfinite(values)):
        r.problem(where, f"{value_text(args)} gives values that are not finite")
        return None
    return values.tolist()


def _random(r: TaskFile, data: dict) -> tuple[list[tuple[str, list]], int]:
    spec = data.get("random")
    if spec is None:
        return [], 0
    if not isinstance(spec, dict):
        r.problem("random", f"{{n: N, seed: S, axes: {{...}}}}, got {value_text(spec)}")
        return [], 0
    for key in spec:
        if key not in ("n", "seed", "axes"):
            r.problem(f"random.{key}", "unknown key (known: n, seed, axes)")
    n = spec.get("n", 0)
    seed = spec.get("seed", 0)
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_RUNS:
        r.problem("random.n", f"an integer from 0 to {MAX_RUNS:,}, got {value_text(n)}")
        return [], 0
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        r.problem("random.seed", f"an integer >= 0, got {value_text(seed)}")
        return [], 0
    axes_spec = spec.get("axes") or {}
    if not isinstance(axes_spec, dict):
        r.problem("random.axes", f"a mapping of field paths, got {value_text(axes_spec)}")
        return [], 0
    if n and not axes_spec:
        r.problem("random.axes", f"n is {n} but no axis is given")
    if not n:
        return [], 0
    rng = np.random.default_rng(seed)
    axes = []
    for path, dist in axes_spec.items():
        where = f"random.axes.{path}"
        if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in _DISTRIBUTIONS:
            r.problem(where, f"one of {{{': [...]}, {'.join(_DISTRIBUTIONS)}: [...]}}, got {value_text(dist)}")
            continue
        (kind, args), = dist.items()
        values = _draw(r, f"{where}.{kind}", rng, kind, args, n)
        if values is not None:
            axes.append((str(path), values))
    return axes, n


def _draw(r: TaskFile, where: str, rng: np.random.Generator, kind: str, args: Any, n: int) -> list | None:
    if kind == "choice":
        if not isinstance(args, list) or not args:
            r.problem(where, f"a non-empty list of values, got {value_text(args)}")
            return None
        return [args[i] for i in rng.integers(0, len(args), n)]
    nums = _numbers(args, 2)
    if nums is None:
        r.problem(where, f"two finite numbers, got {value_text(args)}")
        return None
    a, b = nums
    if kind == "uniform" and a < b:
        return rng.uniform(a, b, n).tolist()
    if kind == "loguniform" and 0 < a < b:
        return np.exp(rng.uniform(math.log(a), math.log(b), n)).tolist()
    if kind == "normal" and b >= 0:
        return rng.normal(a, b, n).tolist()
    if kind == "integers" and float(a).is_integer() and float(b).is_integer() and a < b:
        return rng.integers(int(a), int(b), n).tolist()
    need = {"uniform": "low < high", "loguniform": "0 < low < high", "normal": "[mean, std] with std >= 0",
            "integers": "integers low < high"}[kind]
    r.problem(where, f"{need}, got {value_text(args)}")
    return None


def _runs(scene_text: str, common: list[Override], grid, zipped, random_axes, samples: int, file: str,
          axis_lines: dict[str, int | None]) -> list[PlannedRun]:
    """Every run: grid product x zip rows x random samples."""
    groups: list[list[tuple[dict, dict]]] = []  # per group, its rows as ({path: value}, identity extras)
    for path, values in grid:
        groups.append([({path: v}, {}) for v in values])
    if zipped:
        groups.append([({p: vs[i] for p, vs in zipped}, {}) for i in range(len(zipped[0][1]))])
    if samples:
        groups.append([({p: vs[i] for p, vs in random_axes}, {"sample": i}) for i in range(samples)])
    base = {
        "scene": hashlib.sha256(scene_text.encode("utf-8")).hexdigest(),
        "common": [[o.path, o.value] for o in common],
    }
    runs = []
    for combination in itertools.product(*groups) if groups else [()]:
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for row, more in combination:
            values.update(row)
            extra.update(more)
        identity = dict(base, axes=[[p, v] for p, v in values.items()], **extra)
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode("utf-8")).hexdigest()
        overrides = tuple(common) + tuple(Override(p, v, file, axis_lines.get(p)) for p, v in values.items())
        runs.append(PlannedRun(digest[:RUN_ID_DIGITS], values, overrides))
    return runs


def _shown(values: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items()) or "no axes"
