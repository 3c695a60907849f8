"""A sweep's pre-flight: its axes and metrics checked against the scene before the first run.

A typo must stop the sweep at once (exit 2, the sweep file's line, "did you mean"), not
fail every run at run time or fill every row with NaN:

- an axis or ``set`` path that is no field of the scene: the first run's scene is loaded
  with its overrides (every run has the same paths; only the values differ), and its
  "unknown field" / "no such field" problems are the sweep's. A *value* that makes a run's
  scene invalid is that run's failure, not the sweep's, so other problems are left to the
  runs (the next runs are tried, up to ``PREFLIGHT_RUNS``, to find one that loads);
- a metric naming a dataset, a metric or a label (body, coordinate, contact, component) the
  runs will not have: one step of that run is simulated into a temporary file and every
  expression's names are resolved on it (``metrics.check_names``), so the check knows exactly
  what a run's file holds. What depends on a run's length is left to the runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from dojo_cli.errors import DojoError, Problem, SceneError
from dojo_cli.sweep.metrics import ExpressionError, RunData, check_names, is_entry_point, parse_expression
from dojo_cli.sweep.plan import SweepPlan

# Runs tried to find one whose scene loads (the others fail for their values, each at run time).
PREFLIGHT_RUNS = 10
# Problems of a scene that say a path names no field (an axis's typo), as scene.loader and
# scene.overrides word them.
_PATH_PROBLEMS = ("unknown field", "no such field")


def check_plan(plan: SweepPlan, lines: dict[str, int]) -> None:
    """Check a sweep's axis paths and metrics against its scene (module docstring).

    Raises:
        SceneError: a path that is no field, or a metric naming what the runs do not have;
            each problem at its line of the sweep file (exit code 2).
    """
    from dojo_cli.scene.loader import load_scene_spec

    file = str(plan.file)
    spec = None
    for run in plan.runs[:PREFLIGHT_RUNS]:
        try:
            spec = load_scene_spec(plan.scene, list(run.overrides))
            break
        except SceneError as exc:
            wrong_paths = [p for p in exc.problems if p.message.startswith(_PATH_PROBLEMS)]
            if wrong_paths:
                raise SceneError(wrong_paths) from None
    expressions = {name: text for name, text in plan.metrics.items() if not is_entry_point(text)}
    if spec is None or not expressions:
        return
    problems = []
    try:
        reference = _one_step(spec)
    except DojoError:
        return  # the scene cannot run a step: each run says why
    for name, text in expressions.items():
        try:
            check_names(parse_expression(text), reference)
        except ExpressionError as exc:
            where = str(reference.run.path)  # a temporary file: not worth naming
            message = str(exc).replace(f" on {where}: ", ": ").replace(f"{where}: ", "")
            problems.append(Problem(file, lines.get(f"metrics.{name}"), f"metrics.{name}", message))
    if problems:
        raise SceneError(problems)


def _one_step(spec) -> RunData:
    """One step of a scene in a temporary storage file, read back: what a run's file holds."""
    from dojo_cli.simulation.run import run_scene
    from dojo_cli.simulation.run_file import run_writer
    from dojo_cli.io.storage import read_storage
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import dump_scene

    mech = build_mechanism(spec)
    opts = mech.default_options
    with tempfile.TemporaryDirectory(prefix="dojo-preflight-") as folder:
        path = Path(folder) / "preflight.h5"
        writer = run_writer(mech, path, scene_yaml=dump_scene(spec), scene_name=spec.name, integrator=spec.integrator,
                            opts=opts, flush_interval=1.0, overwrite=True, steps=1)
        with writer:
            run_scene(mech, 1, writer, opts=opts)
        stored = read_storage(path, probe=False)
        data = RunData(stored, mech)
        data.datasets()  # read while the file exists (the StoredRun's trajectory holds arrays)
    return data
