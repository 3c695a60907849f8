"""Running a sweep's runs: in this process, on local worker processes, or on a Dask cluster.

``run_sweep`` writes one storage file per run under ``FOLDER/runs/<run_id>.h5`` and the
manifest (dojo_cli.sweep.manifest) as runs finish. Workers are Dask's: ``workers=N``
starts a ``distributed.LocalCluster`` of N single-threaded processes on 127.0.0.1,
``scheduler=ADDRESS`` sends the same tasks to an existing cluster (``dask scheduler``,
``dask worker ADDRESS`` on each machine; the folder must be one they all see, the
package installed on each). ``workers=0`` runs them one after the other in this process.

Resuming: a run whose file is there and ``complete`` (or ``complete_with_failures``) is not
run again (its row comes from the previous manifest, or its metrics are evaluated on the
file); any other (interrupted, failed, killed while ``running``, missing) is run again,
replacing its file.

Isolation: a run that fails is a ``failed`` row (``task.execute`` never raises); a run
that crashes its worker process (a segmentation fault, the memory limit) is a ``failed``
row too: the local cluster does not retry it (``allowed-failures`` 0) and restarts the
worker for the others.

Stopping: ``stop()`` (polled; the command line's Ctrl-C) sets a Dask ``Event`` that every
running task polls between blocks of steps (``task.STOP_POLL_SECONDS``): their files end
``interrupted``, the runs not started are cancelled and stay ``pending``, and the manifest
says so. Local workers ignore SIGINT (a worker plugin), so a terminal's Ctrl-C, which goes
to the whole process group, reaches the sweep only.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dojo_cli.errors import DojoError, StorageError
from dojo_cli.sweep import manifest
from dojo_cli.sweep.plan import SweepPlan
from dojo_cli.sweep.task import FAILED, PENDING, RunTask, execute

RUNS_FOLDER = "runs"
DONE = ("complete", "complete_with_failures")
# The manifest CSV is rewritten at most this often while runs finish (and at the end).
MANIFEST_SECONDS = 0.5
# After a stop, how long running tasks have to finish their files (they poll every
# STOP_POLL_SECONDS and stop within a block of steps); then the sweep stops waiting.
STOP_GRACE_SECONDS = 30.0
# How often the waiting loop looks at results and at stop().
POLL_SECONDS = 0.05


@dataclass
class Progress:
    """What a progress display shows: runs done (ran or found done), of which failed, of total."""

    total: int
    done: int = 0
    failed: int = 0
    reused: int = 0
    started: float = field(default_factory=time.monotonic)


@dataclass
class SweepOutcome:
    """How a sweep went: its rows and columns, counts, and whether it was stopped."""

    rows: list[dict[str, Any]]
    columns: list[str]
    ran: int  # runs that ran to their end now (complete, with failures, or failed)
    reused: int
    failed: int
    stopped: bool


def run_file(folder: Path, run_id: str) -> Path:
    return Path(folder) / RUNS_FOLDER / f"{run_id}.h5"


def run_sweep(
    plan: SweepPlan,
    folder: str | os.PathLike,
    *,
    workers: int = 1,
    scheduler: str | None = None,
    stop: Callable[[], bool] | None = None,
    report: Callable[[Progress], None] | None = None,
    command_line: str = "",
    recompute: bool = False,
) -> SweepOutcome:
    """Run (or resume) a sweep into ``folder`` (module docstring). ``recompute``: evaluate the
    metrics again on every complete run's file and run nothing (the other runs keep the
    status their files say).

    Raises:
        StorageError: the folder or the manifest cannot be written.
        DojoError: the scheduler cannot be reached.
    """
    folder = Path(folder)
    try:
        (folder / RUNS_FOLDER).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{folder}: cannot create the sweep folder ({exc.strerror or exc})") from None
    previous = {} if recompute else _previous_rows(folder, plan)
    rows: list[dict[str, Any]] = []
    metric_columns: list[str] = list(plan.metrics)
    tasks: list[tuple[int, RunTask]] = []
    progress = Progress(total=len(plan.runs))
    for index, planned in enumerate(plan.runs):
        path = run_file(folder, planned.run_id)
        row: dict[str, Any] = {"run_id": planned.run_id, "file": f"{RUNS_FOLDER}/{path.name}", "status": PENDING,
                               "failed_steps": None, "wall_time": None, "error": "", **planned.values}
        done = _done_row(path, previous.get(planned.run_id), plan)
        if done is not None:
            row.update(done)
            progress.done += 1
            progress.reused += 1
            progress.failed += row["status"] == FAILED
        elif recompute:
            _from_file(folder, row)
        else:
            tasks.append((index, RunTask(
                run_id=planned.run_id, scene=plan.scene, overrides=planned.overrides, output=str(path.resolve()),
                metrics=tuple(plan.metrics.items()), module_paths=tuple(plan.module_paths), command_line=command_line,
            )))
        rows.append(row)
    writer = _ManifestWriter(folder, plan, rows, metric_columns)
    writer.write(force=True)
    if report is not None:
        report(progress)

    def take(index: int, result: dict[str, Any]) -> None:
        row = rows[index]
        if result.get("status") == PENDING:  # never started (the sweep stopped first)
            return
        if not result.get("status") or result["status"] == FAILED and not run_file(folder, row["run_id"]).exists():
            row["file"] = ""
        row.update(result)
        for key in result:
            if key not in manifest.FIRST_COLUMNS and key not in manifest.LAST_COLUMNS and key not in row_axes(plan) \
                    and key not in metric_columns:
                metric_columns.append(key)  # a module:function metric's columns
        progress.done += 1
        progress.failed += row["status"] == FAILED
        writer.write()
        if report is not None:
            report(progress)

    stopped = False
    if tasks:
        if workers == 0 and scheduler is None:
            stopped = _in_process(tasks, take, stop)
        else:
            stopped = _on_dask(tasks, take, stop, workers=workers, scheduler=scheduler)
    if stopped:
        for row in rows:
            if row["status"] == PENDING:
                _from_file(folder, row)
    for row in rows:
        if row["status"] == PENDING:
            row["file"] = ""  # no file (yet)
    writer.write(force=True)
    writer.write_parquet()
    ended = sum(r["status"] in (*DONE, FAILED) for r in rows)
    return SweepOutcome(
        rows=rows, columns=writer.columns(), ran=ended - progress.reused,
        reused=progress.reused, failed=sum(r["status"] == FAILED for r in rows), stopped=stopped,
    )


def row_axes(plan: SweepPlan) -> list[str]:
    return plan.axes


class _ManifestWriter:
    def __init__(self, folder: Path, plan: SweepPlan, rows: list[dict], metric_columns: list[str]):
        self.folder = folder
        self.plan = plan
        self.rows = rows
        self.metric_columns = metric_columns
        self.last = 0.0

    def columns(self) -> list[str]:
        return manifest.columns(self.plan.axes, self.metric_columns)

    def write(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < MANIFEST_SECONDS:
            return
        manifest.write_csv(self.folder / manifest.CSV_NAME, self.rows, self.columns())
        manifest.write_column_kinds(self.folder, self.plan.axes, self.metric_columns, self.plan.metrics)
        self.last = now

    def write_parquet(self) -> None:
        manifest.write_parquet(self.folder / manifest.PARQUET_NAME, self.rows, self.columns())


def _previous_rows(folder: Path, plan: SweepPlan) -> dict[str, dict[str, Any]]:
    """The previous manifest's rows by run id, without the metrics whose expression has
    changed since (columns.json records them): those are evaluated again on the files."""
    path = folder / manifest.CSV_NAME
    if not path.exists():
        return {}
    try:
        _, rows = manifest.read_csv(path)
    except StorageError:
        return {}  # a damaged manifest: the files say what is done
    before = manifest.read_metric_expressions(folder)
    changed = [name for name, text in plan.metrics.items() if before.get(name) != text]
    return {str(row.get("run_id")): {k: v for k, v in row.items() if k not in changed} for row in rows}


def _done_row(path: Path, previous: dict[str, Any] | None, plan: SweepPlan) -> dict[str, Any] | None:
    """The manifest values of a run already done (its file complete), or None to run it."""
    from dojo_cli.io.storage import read_storage, stored_status

    status = stored_status(path)
    if status not in DONE:
        return None
    if previous is not None and previous.get("status") == status and all(name in previous for name in plan.metrics):
        keep = {k: v for k, v in previous.items() if k not in ("run_id", "file") and k not in plan.axes}
        return keep
    from dojo_cli.sweep.metrics import RunData, metric_values

    try:
        stored = read_storage(path)
    except DojoError:
        return None  # damaged: run again
    values, problems = metric_values(RunData(stored), plan.metrics)
    # a metric that cannot be evaluated fails the row (its file stays: a fixed metric is
    # evaluated again on it, nothing is simulated again)
    return {"status": FAILED if problems else stored.status, "failed_steps": int(stored.attrs.get("failed_steps", 0)),
            "wall_time": float(stored.attrs.get("wall_time", math.nan)), "error": " | ".join(problems), **values}


def _from_file(folder: Path, row: dict[str, Any]) -> None:
    """A row whose task did not report (the sweep stopped): what its file says, if anything."""
    from dojo_cli.io.storage import stored_status

    status = stored_status(run_file(folder, row["run_id"]))
    if status in ("interrupted", "failed"):
        row["status"] = status
    elif status == "running":
        row["status"] = "interrupted"
        row["error"] = "the sweep stopped while this run was being written"


# ------------------------------------------------------------------ in this process


def _in_process(tasks: list[tuple[int, RunTask]], take, stop) -> bool:
    for index, task in tasks:
        if stop is not None and stop():
            return True
        take(index, execute(task, stop))
    return stop is not None and stop()


# ------------------------------------------------------------------ Dask


def _dask_task(task: RunTask, event_name: str) -> dict[str, Any]:
    """A run on a Dask worker: stops when the sweep's Event is set (checked first: a run the
    sweep stopped before it started writes no file)."""
    from distributed import Event

    event = Event(event_name)

    def stop() -> bool:
        return event.is_set()

    if stop():
        return {"run_id": task.run_id, "status": PENDING}
    return execute(task, stop)


def _ignore_interrupts() -> None:
    """In a local worker process: Ctrl-C at the terminal is the sweep's to handle."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to do there
        pass


try:  # the plugin's base class exists only with distributed installed
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # pragma: no cover
    _WorkerPlugin = object  # type: ignore[assignment,misc]


class IgnoreInterrupts(_WorkerPlugin):  # type: ignore[misc]
    """Worker plugin: the worker process ignores SIGINT (module docstring)."""

    name = "dojo-ignore-sigint"

    def setup(self, worker) -> None:
        loop = getattr(worker, "loop", None)
        if loop is not None:
            loop.add_callback(_ignore_interrupts)  # the worker's event loop runs in its main thread
        _ignore_interrupts()


def _on_dask(tasks, take, stop, *, workers: int, scheduler: str | None) -> bool:
    import dask
    from distributed import Client, Event, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    cluster = None
    try:
        if scheduler is None:
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                cluster = LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address=None, silence_logs=logging.ERROR,
                )
            client = Client(cluster)
            client.register_plugin(IgnoreInterrupts())
        else:
            try:
                client = Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise DojoError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})") from None
        try:
            return _gather(client, Event, tasks, take, stop)
        finally:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def _gather(client, Event, tasks, take, stop) -> bool:
    from distributed import as_completed

    event_name = f"dojo-sweep-stop-{uuid.uuid4().hex}"
    event = Event(event_name, client=client)
    by_key = {}
    futures = []
    for index, task in tasks:
        future = client.submit(_dask_task, task, event_name, key=f"dojo-run-{task.run_id}-{uuid.uuid4().hex[:8]}",
                               pure=False, retries=0)
        by_key[future.key] = (index, task)
        futures.append(future)
    pending = as_completed(futures)
    stopped = False
    deadline = None
    while not pending.is_empty():
        batch = pending.next_batch(block=False)
        for future in batch:
            index, task = by_key[future.key]
            take(index, _result(future, task))
        if deadline is not None and time.monotonic() > deadline:
            break  # the runs still going are left to the cluster's shutdown
        if not batch:
            if not stopped and stop is not None and stop():
                stopped = True
                event.set()
                deadline = time.monotonic() + STOP_GRACE_SECONDS
                _cancel_queued(client, futures)
            time.sleep(POLL_SECONDS)
    return stopped


def _cancel_queued(client, futures) -> None:
    """Cancel the tasks no worker has started (the ones running finish their files)."""
    try:
        processing = {key for keys in client.processing().values() for key in keys}
    except Exception:  # noqa: BLE001 - then let every task see the stop itself
        return
    queued = [f for f in futures if not f.done() and f.key not in processing]
    if queued:
        client.cancel(queued)


def _result(future, task: RunTask) -> dict[str, Any]:
    if future.cancelled():
        return {"run_id": task.run_id, "status": PENDING}
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - the worker died (KilledWorker) or the task could not run
        name = type(exc).__name__
        why = "the worker process died running it" if name == "KilledWorker" else "the task could not run"
        return {"run_id": task.run_id, "status": FAILED, "error": f"{why} ({name}: {exc})"}
