"""HDF5 storage files (format 1): one file per run, written step by step, readable after any stop.

The package, one subsystem a module (with io/gradient_files.py and io/dynamics_files.py,
the only place dojo_cli imports h5py; the user-facing contract is docs/formats.md and
docs/storage.md):

- ``format``: the names, layout, attributes and version of a file, how a series is created
  and an attribute encoded (its docstring is the full layout);
- ``writer``: ``StorageWriter``, buffered block writes, crash consistency, file-space
  reservation against full disks;
- ``locks``: one writer per file (``flock``), and whether a file is being written;
- ``compaction``: the gzip copy that replaces a run that ended normally;
- ``reader``: ``read_storage`` (validation; ``StoredRun``, the file's metadata and its
  ``Trajectory``), ``read_gradient_rows``,
  ``stored_status``;
- ``probe``: the walk of a file's structure in another process before it is read
  (``hdf5_walk``, run there, and ``hdf5_checks``, the byte check of a loop HDF5 cannot
  survive).

``from dojo_cli.io.storage import read_storage, StorageWriter`` gives the public names
below; each is imported from its module on first use (PEP 562), so that ``python -m
dojo_cli.io.storage.hdf5_walk`` (the probe's fresh interpreter) loads h5py and nothing
else of dojo_cli.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "CONTACT_DATASETS", "FINAL_STATUSES", "FORMAT_NAME", "FORMAT_VERSION", "GRADIENT_GROUP", "KNOT",
            "MIDPOINT", "STATUSES", "STATUS_BYTES", "STATUS_COMPLETE", "STATUS_COMPLETE_WITH_FAILURES",
            "STATUS_FAILED", "STATUS_INTERRUPTED", "STATUS_RUNNING", "STEP_SUCCESS", "VELOCITIES_ATTR",
            "NotStorageFileError", "scene_hash",
        ),
        "dojo_cli.io.storage.format",
    ),
    "StorageWriter": "dojo_cli.io.storage.writer",
    "being_written": "dojo_cli.io.storage.locks",
    **dict.fromkeys(("StoredRun", "read_gradient_rows", "read_storage", "stored_status"), "dojo_cli.io.storage.reader"),
    "check_hdf5_structure": "dojo_cli.io.storage.probe",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the package."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what type checkers and IDEs see: the same names, imported eagerly
    from dojo_cli.io.storage.format import (  # noqa: F401
        CONTACT_DATASETS,
        FINAL_STATUSES,
        FORMAT_NAME,
        FORMAT_VERSION,
        GRADIENT_GROUP,
        KNOT,
        MIDPOINT,
        STATUS_BYTES,
        STATUS_COMPLETE,
        STATUS_COMPLETE_WITH_FAILURES,
        STATUS_FAILED,
        STATUS_INTERRUPTED,
        STATUS_RUNNING,
        STATUSES,
        STEP_SUCCESS,
        VELOCITIES_ATTR,
        NotStorageFileError,
        scene_hash,
    )
    from dojo_cli.io.storage.locks import being_written  # noqa: F401
    from dojo_cli.io.storage.probe import check_hdf5_structure  # noqa: F401
    from dojo_cli.io.storage.reader import StoredRun, read_gradient_rows, read_storage, stored_status  # noqa: F401
    from dojo_cli.io.storage.writer import StorageWriter  # noqa: F401
