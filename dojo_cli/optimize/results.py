"""The optimum as files a user can use: a run's storage file, a schedule CSV, the record.

- ``INPUTS.csv``: the optimal inputs, one row per step, one column per input (header:
  the input names), every digit (``%.17g``): the schedule ``dojo simulate`` takes
  (``--set 'controller={type: schedule, file: INPUTS.csv}'``).
- ``OUT.h5``: a normal storage file (replay, plot, energy, info): the scene with that
  schedule as its controller, run by the library's run loop, so it is the file ``dojo
  simulate`` writes for it, and its states are the optimiser's own rollout (the same
  core loop with the same warm starts). Beside the run's datasets it holds the feedback
  gains per step, ``optimize/gains`` (N, nu, ns), u = u* + K (s - s*) in the task's
  representation (attributes ``rows``: inputs, ``cols``: state coordinates), and root
  attributes: ``optimize`` (JSON: status, message, whether it is the best iterate of an
  interrupted solve, the task's text, cost, violation, gradient, iterations, seconds and
  the time split) and the convergence log, one numeric array per column
  (``optimize_log_iteration``, ``optimize_log_cost``, ... see LOG_COLUMNS).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dojo_cli.errors import StorageError
from dojo_cli.optimize.ilqr import OptimizeResult
from dojo_cli.optimize.task import Task

LOG_COLUMNS = ("iteration", "cost", "objective", "violation", "gradient", "step", "regularization", "kappa",
               "penalty", "wall_time")
GAINS = "optimize/gains"
# How often the run's buffered steps are written (s); the run is short and rewritten whole.
FLUSH_SECONDS = 1.0


@dataclass
class Written:
    """The files written: the storage file and the schedule CSV."""

    storage: Path
    schedule: Path


def schedule_path(out: Path) -> Path:
    """The schedule CSV beside a storage file: ``run.h5`` -> ``run.inputs.csv``."""
    return out.with_suffix(".inputs.csv")


def write_schedule(path: Path, names: list[str], U: np.ndarray) -> None:
    """The inputs (N, nu) as a schedule CSV with a header of names and every digit."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(",".join(names) + "\n")
            for row in np.asarray(U, dtype=float):
                f.write(",".join(f"{v:.17g}" for v in row) + "\n")
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None


def state_labels(task: Task) -> list[str]:
    """Names of the representation's state coordinates (the gains' columns)."""
    from dojo_cli.simulation.gradient_record import maximal_labels, minimal_labels

    mech = task.problem.mech
    return minimal_labels(mech) if task.problem.representation == "minimal" else maximal_labels(mech)


def summary(task: Task, result: OptimizeResult) -> dict:
    """The ``optimize`` record (JSON-able)."""
    return {
        "status": result.status,
        "message": result.message,
        "best_iterate": result.status == "interrupted",
        "task_file": task.file,
        "task": task.text,
        "representation": task.problem.representation,
        "horizon": task.problem.horizon,
        "cost": float(result.cost),
        "violation": float(result.violation),
        "gradient": float(result.gradient),
        "iterations": int(result.iterations),
        "seconds": float(result.seconds),
        "timing": {k: float(v) for k, v in result.timing.items()},
    }


def write_results(task: Task, result: OptimizeResult, out: Path, schedule: Path | None = None, *,
                  overwrite: bool = False, command_line: str | None = None) -> Written:
    """Write the schedule CSV, then the scene run on it into ``out`` with the solver's record.

    Raises:
        StorageError: a file cannot be written (exit code 3).
    """
    from dojo_cli.simulation.run import run_scene
    from dojo_cli.simulation.run_file import run_writer
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import dump_scene, load_scene_spec
    from dojo_cli.scene.overrides import Override

    out = Path(out)
    schedule = schedule_path(out) if schedule is None else Path(schedule)
    mech = task.problem.mech
    U = result.traj.U
    write_schedule(schedule, list(mech.input_names()), U)
    N = task.problem.horizon
    # the task's scene, its overrides, and the schedule as its controller: what `dojo simulate` runs
    items = [*task.overrides, Override("controller", {"type": "schedule", "file": str(schedule.resolve()), "after_end": "zero"}),
             Override("steps", N)]
    spec = load_scene_spec(task.scene, items)
    run_mech = build_mechanism(spec)
    attrs = {"optimize": summary(task, result)}
    for column in LOG_COLUMNS:
        attrs[f"optimize_log_{column}"] = np.array([rec[column] for rec in result.log], dtype=float)
    gains = np.asarray(result.K, dtype=float)
    writer = run_writer(
        run_mech, out, scene_yaml=dump_scene(spec), scene_name=spec.name, integrator=spec.integrator,
        opts=run_mech.default_options, flush_interval=FLUSH_SECONDS, overwrite=overwrite,
        overrides={item.path: item.value for item in items}, command_line=command_line, steps=N, extra_attrs=attrs,
        dataset_attrs={GAINS: {"rows": list(mech.input_names()), "cols": state_labels(task),
                               "meaning": f"u = u* + K (s - s*), s in {task.problem.representation} coordinates"}},
    )
    with writer:
        run_scene(run_mech, N, _WithGains(writer, gains), opts=run_mech.default_options)
    return Written(storage=out, schedule=schedule)


class _WithGains:
    """A storage writer (io.storage's StorageWriter, behind run_scene's KnotRows) that adds
    each step's feedback gains (``optimize/gains``) to the run's blocks."""

    def __init__(self, writer, gains: np.ndarray):
        self.writer = writer
        self.gains = gains
        self.revise_last_state = writer.revise_last_state

    def write_initial(self, *args, **kwargs) -> None:
        self.writer.write_initial(*args, **kwargs)

    def write_block(self, mech, block, **kwargs) -> None:
        block.gradients[GAINS] = self.gains[block.k0: block.k0 + block.n]
        self.writer.write_block(mech, block, **kwargs)
