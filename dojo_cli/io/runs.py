"""A scene's run into its storage file: the one place that opens a run's StorageWriter and
drives the integrator the scene asks for, used by `dojo simulate` and by sweep tasks (so a
sweep's file is the file `dojo simulate` writes, with the same datasets and attributes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from dojo_cli import __version__
from dojo_cli.io.storage import StorageWriter
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.physics.energy import knot_velocities
from dojo_cli.simulation.run import RK4_INTEGRATOR, VARIATIONAL_INTEGRATOR, RunSummary, run
from dojo_cli.solver.options import SolverOptions

if TYPE_CHECKING:  # (state_files is read only by runs that start from a stored one)
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
) -> StorageWriter:
    """The StorageWriter of a run: ``scene_yaml`` the resolved scene (scene.loader.dump_scene:
    the storage layer does not import the scene layer above it), ``integrator`` the scene's
    ("variational" or "rk4"), ``overrides`` the --set/preset values as path -> value, then the
    names, integrator and run record every run file has. ``steps``: the steps the run is to
    take (the writer sizes its chunks to it). ``started_from``: where a run continued from
    another starts ({"file", "index", "time", "step"}; root attribute ``started_from``).
    ``extra_attrs``: further root attributes of the run (an optimised run's record,
    dojo_cli.optimize.results)."""
    rk4 = integrator == "rk4"
    if rk4:  # the minimal-coordinate modules only for an rk4 run (~20 ms of start-up)
        from dojo_cli.simulation.rk4_run import knot_identity
    return StorageWriter(
        out,
        scene_yaml=scene_yaml,
        scene_name=scene_name,
        timestep=mech.timestep,
        gravity=list(mech.gravity),
        solver_options=opts.to_dict(),
        integrator=RK4_INTEGRATOR if rk4 else VARIATIONAL_INTEGRATOR,
        body_names=[b.name for b in mech.bodies],
        minimal_q_names=mech.state_names()[0],
        minimal_v_names=mech.state_names()[1],
        input_dim=mech.nu,
        input_names=mech.input_names(),
        dojo_cli_version=__version__,
        flush_every=1,  # (time decides: flush_interval)
        # v, omega at t_k; v_mid, omega_mid (rk4: the velocities at t_k already)
        knot_velocities=partial(knot_identity if rk4 else knot_velocities, mech),
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


def joint_limits_record(mech) -> dict:
    """{joint: {"position" | "velocity" | "acceleration": {"lower": [...], "upper": [...]}}}
    for the joints that set limits (Drake's three pairs; docs/planar.md): position limits
    are enforced, velocity and acceleration limits stored and reported."""
    scene = getattr(mech, "scene", None)
    out: dict = {}
    for j in getattr(scene, "joints", None) or ():
        entry = {}
        for key, field in (("position", "limits"), ("velocity", "velocity_limits"),
                           ("acceleration", "acceleration_limits")):
            limits = getattr(j, field, None)
            if limits is not None:
                entry[key] = {"lower": [float(v) for v in limits.lower], "upper": [float(v) for v in limits.upper]}
        if entry:
            out[j.name] = entry
    return out


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
    limits = joint_limits_record(mech)
    if limits:
        out["joint_limits"] = limits
    drawn = getattr(mech, "random_initial", None)
    if drawn:
        out["random_initial"] = drawn
    return out


def run_scene(
    mech: Mechanism,
    steps: int,
    writer: StorageWriter,
    *,
    integrator: str,
    opts: SolverOptions,
    gradients: tuple[str, ...] = (),
    abort_on_failure: bool = False,
    log=None,
    progress: Callable[[int], None] | None = None,
    start: StoredStart | None = None,
) -> RunSummary:
    """``steps`` steps of the scene's integrator ("variational" or "rk4") into ``writer``,
    from the scene's initial state or from ``start`` (a stored run's knot, ``--from``: the
    variational integrator takes its midpoint state, warm start and unwrapped angles, so the
    steps are the first run's to the solver's tolerance; rk4 takes the knot's velocities)."""
    if integrator == "rk4":
        from dojo_cli.simulation.rk4_run import run_rk4

        if start is None:
            return run_rk4(mech, steps, writer, controller=mech.controller, progress=progress)
        return run_rk4(mech, steps, writer, controller=mech.controller, progress=progress, knot=start.knot,
                       start_step=start.step, angles=start.angles)
    kwargs = {}
    if start is not None:
        kwargs = dict(z0=start.z, start_step=start.step, warm_start=start.warm_start, angles=start.angles)
    return run(mech, steps, writer, controller=mech.controller, opts=opts, external=mech.external,
               gradients=tuple(gradients), abort_on_failure=abort_on_failure, log=log, progress=progress, **kwargs)
