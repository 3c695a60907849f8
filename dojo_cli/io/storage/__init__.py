"""HDF5 storage files (format 1): the public API of the storage package.

``from dojo_cli.io.storage import read_storage, StorageWriter`` gives the names below; each
is imported from its module on first use (PEP 562), so that ``python -m
dojo_cli.io.storage.hdf5_walk`` (the structure probe's fresh interpreter) loads h5py and
nothing else of dojo_cli. The layout and the guarantees of the files are described in
the modules' docstrings and in docs/storage.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WRITER = "dojo_cli.io.storage.writer"

# Public name -> the module that defines it.
_EXPORTS: dict[str, str] = dict.fromkeys(
    (
        "CONTACT_DATASETS", "FINAL_STATUSES", "FORMAT_NAME", "FORMAT_VERSION", "GRADIENT_GROUP", "KNOT", "MIDPOINT",
        "STATUSES", "STATUS_BYTES", "STATUS_COMPLETE", "STATUS_COMPLETE_WITH_FAILURES", "STATUS_FAILED",
        "STATUS_INTERRUPTED", "STATUS_RUNNING", "STEP_SUCCESS", "VELOCITIES_ATTR", "NotStorageFileError",
        "scene_hash", "StorageWriter", "being_written", "StoredRun", "read_gradient_rows", "read_storage",
        "stored_status", "check_hdf5_structure",
    ),
    _WRITER,
)

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
    from dojo_cli.io.storage.writer import (  # noqa: F401
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
        StorageWriter,
        StoredRun,
        being_written,
        check_hdf5_structure,
        read_gradient_rows,
        read_storage,
        scene_hash,
        stored_status,
    )
