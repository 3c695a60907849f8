"""The scene stored in a run's storage file, rebuilt and checked against the run's datasets.

``read_storage`` (dojo_cli.io.storage) validates a file's own structure; the readers
that need the run's mechanism (``dojo energy``, ``dojo contacts``, ``dojo replay``)
rebuild it from the ``scene`` attribute here, so that a stored scene that is not valid
(damaged, tampered, hostile: the loader's limits apply) or that does not describe the
stored datasets is a StorageError naming the storage file (exit 3), like any other
damage, never a SceneError about a file the user never wrote.
"""

from __future__ import annotations

from pathlib import Path

from dojo_cli.errors import DojoError, StorageError, shown
from dojo_cli.io.storage import StoredRun
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import load_scene_spec_from_string
from dojo_cli.scene.schema import SceneSpec


class StoredSceneError(StorageError):
    """The stored scene is not a valid scene: a damaged storage file (exit code 3), one line
    saying so, then the loader's problems, each on ``<file>:scene:<line>``."""

    def __init__(self, head: str, problems: list[str]):
        self._lines = [head] + list(problems)
        super().__init__("\n".join(self._lines))

    def lines(self) -> list[str]:
        return list(self._lines)


def _scene_error(run: StoredRun, error: DojoError | str) -> StorageError:
    """A problem of the stored scene as a StorageError naming the file."""
    lines = error.lines() if isinstance(error, DojoError) else [str(error)]
    return StoredSceneError(f"{run.path}: damaged storage file: its 'scene' attribute is not a valid scene:", lines)


def run_scene(run: StoredRun) -> SceneSpec:
    """The run's scene (a ``SceneSpec``), validated from its ``scene`` attribute.

    Relative files (meshes) resolve against the storage file's folder; problems are
    reported as ``<file>:scene:<line>: <field>: <message>``.

    Raises:
        StorageError: the attribute is not a valid scene (the file is damaged or tampered).
    """
    label = f"{run.path}:scene"
    try:
        return load_scene_spec_from_string(run.scene_yaml, file=label, base_dir=Path(run.path).resolve().parent)
    except DojoError as exc:
        raise _scene_error(run, exc) from None
    except RecursionError:
        raise _scene_error(run, f"{label}: nested too deeply") from None


def check_run_mechanism(run: StoredRun, mech: Mechanism) -> None:
    """The stored datasets belong to ``mech``: the same bodies in order, as many
    coordinates and inputs, as many contacts.

    Raises:
        StorageError: they do not (the file's scene attribute and datasets disagree).
    """
    names = [b.name for b in mech.bodies]
    problems = []
    if run.body_names != names:
        problems.append(f"its datasets hold bodies {shown(run.body_names, 120)}, its scene has {shown(names, 120)}")
    nf, nu, traj = mech.nf, mech.nu, run.trajectory
    for what, width, want, kind in (("minimal/q", traj.minimal_q.shape[1], nf, "coordinates"),
                                    ("minimal/v", traj.minimal_v.shape[1], nf, "coordinates"),
                                    ("inputs", traj.inputs.shape[1], nu, "inputs")):
        if width != want:
            problems.append(f"dataset {what!r} holds {width} columns, its scene has {want} {kind}")
    distance = traj.contact_distance
    if distance is not None and distance.shape[1] != mech.nc:
        problems.append(f"dataset 'contacts/distance' holds {distance.shape[1]} contacts, its scene has {mech.nc}")
    if problems:
        raise StorageError(f"{run.path}: damaged storage file: {'; '.join(problems)}")


def run_mechanism(run: StoredRun, *, controller: bool = True) -> tuple[SceneSpec, Mechanism]:
    """(spec, mechanism) of the run, rebuilt from its ``scene`` attribute and checked
    against its datasets (``check_run_mechanism``).

    Args:
        controller: keep the scene's controller (False drops it: a schedule's table may
            not travel with the file, and replaying needs none).

    Raises:
        StorageError: the scene attribute is not a valid scene, or does not build, or does
            not match the datasets.
    """
    spec = run_scene(run)
    if not controller:
        spec = spec.replace(controller=type(spec.controller)())
    try:
        mech = build_mechanism(spec, f"{run.path}:scene")
    except DojoError as exc:
        raise _scene_error(run, exc) from None
    check_run_mechanism(run, mech)
    return spec, mech
