"""A scene's run into its storage file: the one place that opens a run's StorageWriter (with
the run's attributes) and hands it to the run driver (simulation.run.run_scene), used by
`dojo simulate`, sweep tasks and optimised runs (so a sweep's file is the file `dojo
simulate` writes, with the same datasets and attributes).

`dojo simulate` is, after parsing its options and loading the scene: ``check_run`` (the
integrator can run what was asked), ``plan_run`` (where the run starts and goes, checked
before any file is created), then ``write_run`` (the file opened and the run written into
it, with progress and stop requests from the caller); the command only prints and exits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dojo_cli import __version__
from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.storage import KNOT, StorageWriter
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.energy import knot_momenta
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.integrators import (
    RK4_INTEGRATOR, VARIATIONAL4_INTEGRATOR, VARIATIONAL_INTEGRATOR, integrator_problems,
)
from dojo_cli.simulation.run import RunSummary, StepBlock, run_scene
from dojo_cli.solver.options import SolverOptions

if TYPE_CHECKING:  # (state_files is read only by runs that start from a stored one)
    import numpy as np

    from dojo_cli.io.state_files import StoredStart


def run_writer(
    mech: Mechanism,
    out: str | Path,
    *,
    scene_yaml: str,
    scene_name: str,
    integrator: str,
    opts: SolverOptions,
    flush_interval: float,
    overwrite: bool,
    stop_requested: Callable[[], bool] | None = None,
    overrides: dict | None = None,
    command_line: str | None = None,
    dataset_attrs: dict | None = None,
    steps: int | None = None,
    started_from: dict | None = None,
    extra_attrs: dict | None = None,
    momenta: bool = True,
) -> StorageWriter:
    """The StorageWriter of a run: ``scene_yaml`` the resolved scene (scene.loader.dump_scene:
    the storage layer does not import the scene layer above it), ``integrator`` the scene's
    ("variational", "variational4" or "rk4"), ``overrides`` the --set/preset values as path -> value, then the
    names, integrator and run record every run file has. ``steps``: the steps the run is to
    take (the writer sizes its chunks to it). ``started_from``: where a run continued from
    another starts ({"file", "index", "time", "step"}; root attribute ``started_from``).
    ``extra_attrs``: further root attributes of the run (an optimised run's record,
    dojo_cli.optimize.results)."""
    stored_integrator = {"rk4": RK4_INTEGRATOR, "variational4": VARIATIONAL4_INTEGRATOR}.get(integrator,
                                                                                           VARIATIONAL_INTEGRATOR)
    return StorageWriter(
        out,
        scene_yaml=scene_yaml,
        scene_name=scene_name,
        timestep=mech.timestep,
        gravity=list(mech.gravity),
        solver_options=opts.to_dict(),
        integrator=stored_integrator,
        body_names=[b.name for b in mech.bodies],
        minimal_q_names=mech.state_names()[0],
        minimal_v_names=mech.state_names()[1],
        input_dim=mech.nu,
        input_names=mech.input_names(),
        dojo_cli_version=__version__,
        flush_every=1,  # (time decides: flush_interval)
        # v, omega at t_k, v_mid, omega_mid: computed by run_scene's KnotRows
        velocities=KNOT,
        # px, pq (Dojo's Storage.px, pq) of the knot rows, by the core, as the writer stores them
        # (`dojo simulate --no-momenta` leaves them out: 20 % of the file, docs/storage.md)
        momenta=(lambda q, v, omega: knot_momenta(mech, q, v, omega)) if momenta else None,
        flush_interval=flush_interval,
        overwrite=overwrite,
        stop_requested=stop_requested,
        extra_attrs={**run_attrs(mech), **({"started_from": started_from} if started_from else {}),
                     **(extra_attrs or {})} or None,
        dataset_attrs=dataset_attrs,
        overrides=overrides,
        command_line=command_line,
        steps=steps,
    )


def run_attrs(mech) -> dict:
    """The scene-specific root attributes of a run file: contact names, the joints' limits
    (``joint_limits``), the locked joints (``locked_joints``: names, Drake's Lock; absent
    when none) and the drawn random initial poses (``random_initial``)."""
    out: dict = {}
    if mech.nc:
        out["contact_names"] = [c.name for c in mech.contacts]
    locked = [j.name for j in mech.joints if j.locked]
    if locked:
        out["locked_joints"] = locked
    limits = getattr(mech, "joint_limits", None)
    if limits:
        out["joint_limits"] = limits
    drawn = getattr(mech, "random_initial", None)
    if drawn:
        out["random_initial"] = drawn
    return out


def check_run(mech: Mechanism, scene: str, scene_name: str, integrator: str, gradients: tuple[str, ...] | None) -> None:
    """Refuse a run the integrator cannot take: the joint-only integrators' unsupported features
    (simulation.integrators.integrator_problems), per-step gradients (``gradients``: the Jacobians
    asked for, None when not asked) of a scene with external forces.

    Raises:
        InputError: naming the scene (``scene``: as the user gave it) and what is refused.
    """
    problems = integrator_problems(mech, integrator, mech.external, tuple(gradients or ()))
    if problems:
        raise InputError(f"{scene}: " + "; ".join(problems))
    if gradients is not None and mech.external:
        raise InputError(f"--gradients: scene {scene_name!r} has external forces, which the gradients do not include yet")


@dataclass
class RunPlan:
    """A run checked before its file exists: what `write_run` writes.

    Attributes:
        out: the storage file.
        steps: the steps to take.
        integrator: the scene's ("variational", "variational4" or "rk4").
        gradients: the Jacobians stored at each step (() for none).
        start: the stored knot the run continues from (``--from``), or None.
        started_from: the root attribute ``started_from`` ({"file", "index", "time",
            "step"}) of a continued run, or None.
        momenta: store the bodies' momenta at the knots (``px``, ``pq``, Dojo's Storage.px, pq).
    """

    out: Path
    steps: int
    integrator: str
    gradients: tuple[str, ...] = ()
    start: StoredStart | None = None
    started_from: dict | None = None
    momenta: bool = True


def plan_run(
    mech: Mechanism,
    out: Path,
    steps: int,
    *,
    scene_name: str,
    integrator: str,
    gradients: tuple[str, ...] = (),
    start_run: Path | None = None,
    index: int | None = None,
    overwrite: bool = False,
    warn: Callable[[str], None] = lambda line: None,
    momenta: bool = True,
) -> RunPlan:
    """The run of ``steps`` steps into ``out``, from the scene's initial state or, with
    ``start_run``, from state ``index`` of that run (docs/storage.md, "Continuing a run";
    ``warn`` gets the notes about it: its status, another scene or timestep).

    A run from the scene's initial state has it solved here (simulation.initial.initial_state,
    kept on ``mech`` for the run), so that a failure leaves no file behind.

    Raises:
        InputError: a start the scene cannot continue from (io.state_files.stored_start),
            or ``out`` is the ``start_run`` file.
        StorageError: ``out`` exists (without ``overwrite``), a damaged ``start_run``.
        SolverError: the scene's velocities at t = 0 give no first step.
    """
    start = started_from = None
    if start_run is not None:
        from dojo_cli.io.state_files import stored_start  # here: only a continued run reads one

        start = stored_start(start_run, index, mech, scene_name, warn, whole_steps=True)
        started_from = {"file": str(start_run), "index": start.k, "time": start.time, "step": start.step}
        if _same_file(out, start_run):
            raise InputError(f"--output {out}: is the --from run; write the continued run to another file")
    if out.exists() and not overwrite:
        raise StorageError(f"{out}: already exists (use --force to overwrite)")
    if start is None and integrator != "rk4":
        initial_state(mech)
    return RunPlan(out, steps, integrator, tuple(gradients), start, started_from, momenta)


def write_run(
    plan: RunPlan,
    mech: Mechanism,
    *,
    scene_yaml: str,
    scene_name: str,
    opts: SolverOptions,
    flush_interval: float,
    overwrite: bool,
    on_writer: Callable[[StorageWriter], None],
    overrides: dict | None = None,
    command_line: str | None = None,
    abort_on_failure: bool = False,
    log=None,
    progress: Callable[[int], None] | None = None,
    stop_requested: Callable[[], bool] | None = None,
    on_start: Callable[[float, np.ndarray], None] | None = None,
    on_block: Callable[[StepBlock], None] | None = None,
) -> RunSummary:
    """Open the plan's file and write the run into it (``run_writer``, ``run_scene``).

    ``on_writer`` is handed the writer once the file exists (before the first step),
    so that a caller can say what the file keeps when the run stops with an exception;
    ``progress(k)`` is called after each block of steps (it may raise to stop the run: the
    file is then finished as interrupted or failed), ``stop_requested()`` between the
    blocks of the final compression (True skips it); ``on_start`` and ``on_block`` receive the
    first state and each written block (a live viewer, ``dojo simulate --view``; they may
    raise to stop the run as ``progress`` may).

    Raises:
        StorageError: the file cannot be created or written (it keeps what was written).
        SolverError: a step failed with ``abort_on_failure`` (the file is marked failed).
    """
    dataset_attrs = None
    if plan.gradients:
        from dojo_cli.simulation.gradient_record import gradient_dataset_attrs

        dataset_attrs = gradient_dataset_attrs(mech, plan.gradients)
    writer = run_writer(
        mech, plan.out, scene_yaml=scene_yaml, scene_name=scene_name, integrator=plan.integrator, opts=opts,
        flush_interval=flush_interval,
        overwrite=overwrite,  # (refused atomically if the file appeared since plan_run)
        stop_requested=stop_requested, overrides=overrides, command_line=command_line, dataset_attrs=dataset_attrs,
        steps=plan.steps, started_from=plan.started_from, momenta=plan.momenta,
    )
    with writer:
        on_writer(writer)
        return run_scene(mech, plan.steps, writer, opts=opts, gradients=plan.gradients,
                         abort_on_failure=abort_on_failure, log=log, progress=progress, start=plan.start,
                         on_start=on_start, on_block=on_block)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False
