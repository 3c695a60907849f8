"""One run of a sweep: the scene with its overrides, simulated into its storage file, then
its metrics. What a worker (a local process or a Dask worker) executes.

``execute`` never raises for a run that goes wrong: an invalid scene, a write error, a
bug, all become a row with status ``failed`` and the reason in ``error``, so that one run
never stops the others. A stop asked for by the sweep (Ctrl-C) is polled between blocks
of steps: the run's file is finished as ``interrupted``, every computed step kept.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dojo_cli.errors import DojoError
from dojo_cli.scene.overrides import Override

# A run's buffered steps are written once this many seconds have passed since the last
# write: a killed worker loses at most that much of a run, which a re-run redoes anyway
# (`dojo simulate` writes every 0.1 s; 1 s keeps the writes, about 5 ms each, to 0.5 % of
# a run).
FLUSH_SECONDS = 1.0
# How often a run asks whether the sweep is stopping (each ask may cross the network).
STOP_POLL_SECONDS = 0.25

# Statuses of a manifest row beyond the storage file's own.
PENDING = "pending"  # not run (the sweep stopped first)
FAILED = "failed"


class StopSweep(KeyboardInterrupt):
    """The sweep is stopping: the run ends here, its file 'interrupted' (a KeyboardInterrupt,
    which is what the storage writer finishes as 'interrupted')."""


@dataclass(frozen=True)
class RunTask:
    """Everything a worker needs for one run (picklable).

    Attributes:
        run_id: the run's id.
        scene: a scene file (absolute path) or a built-in's name.
        overrides: presets, common values and the run's axis values, in order.
        output: the storage file (absolute path).
        metrics: (name, expression or module:function) pairs.
        module_paths: folders to put on sys.path for module:function metrics.
        command_line: what the run records as its command line.
    """

    run_id: str
    scene: str
    overrides: tuple[Override, ...]
    output: str
    metrics: tuple[tuple[str, str], ...]
    module_paths: tuple[str, ...] = ()
    command_line: str = ""


def execute(task: RunTask, stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Run one task: its row of the manifest (run_id, status, failed_steps, wall_time,
    error, metrics by name). ``stop()`` True ends the run early ('interrupted')."""
    for folder in task.module_paths:
        if folder not in sys.path:
            sys.path.append(folder)
    row: dict[str, Any] = {"run_id": task.run_id, "status": FAILED, "failed_steps": None, "wall_time": None, "error": ""}
    try:
        _simulate(task, stop, row)
    except StopSweep:
        row["status"] = "interrupted"
    except DojoError as exc:
        row["error"] = " | ".join(exc.lines())
    except Exception as exc:  # noqa: BLE001 - a bug in one run must not stop the sweep
        where = traceback.extract_tb(exc.__traceback__)[-1]
        row["error"] = f"internal error: {type(exc).__name__}: {exc} ({Path(where.filename).name}:{where.lineno})"
    return row


def _simulate(task: RunTask, stop: Callable[[], bool] | None, row: dict[str, Any]) -> None:
    from dojo_cli.simulation.run import run_scene
    from dojo_cli.simulation.run_file import run_writer
    from dojo_cli.io.storage import read_storage
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import dump_scene, load_scene_spec
    from dojo_cli.sweep.metrics import RunData, metric_values

    spec = load_scene_spec(task.scene, list(task.overrides))
    mech = build_mechanism(spec)
    steps = mech.default_steps
    if steps is None:
        raise DojoError(f"{task.scene}: the scene sets neither steps nor duration (set one in the sweep's set:)")
    opts = mech.default_options
    writer = run_writer(
        mech, task.output, scene_yaml=dump_scene(spec), scene_name=spec.name, integrator=spec.integrator, opts=opts, flush_interval=FLUSH_SECONDS,
        overwrite=True,  # an interrupted or failed earlier try of this run is redone
        stop_requested=stop,
        overrides={item.path: item.value for item in task.overrides},
        command_line=task.command_line,
        steps=steps,
    )
    progress = None
    if stop is not None:
        last = [time.monotonic()]

        def progress(k: int) -> None:
            now = time.monotonic()
            if now - last[0] >= STOP_POLL_SECONDS:
                last[0] = now
                if stop():
                    raise StopSweep()

    with writer:
        run_scene(mech, steps, writer, opts=opts, progress=progress)
    stored = read_storage(task.output, probe=False)  # (our own file, just finished: no need to fork a probe)
    row["status"] = stored.status
    row["failed_steps"] = int(stored.attrs.get("failed_steps", 0))
    row["wall_time"] = float(stored.attrs.get("wall_time", float("nan")))
    values, problems = metric_values(RunData(stored, mech), dict(task.metrics))
    row.update(values)
    row["error"] = " | ".join(problems)
    if problems:  # a metric that cannot be evaluated fails its row (status, exit code), not only a NaN
        row["status"] = FAILED
