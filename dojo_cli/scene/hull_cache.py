"""Reduced convex hulls of mesh files, computed once and cached by the file's content.

A robot's collision meshes become ``hull`` shapes (``dojo_cli.model.collisions.reduced_hull``:
at most N hull vertices and the Hausdorff error of the reduction). Reading a mesh needs
trimesh (a second or more to import) and the reduction costs 0.01 to 0.3 s a mesh; a
robot has up to ~50 meshes, and the same file is imported again and again. So the result
is stored under the user's cache folder, keyed by the SHA-256 of the mesh file's bytes
(not its path or time: a copied or touched file hits, an edited one misses), the scale
and the vertex budget; a hit reads a small JSON file and imports no trimesh.

Folder: ``$DOJO_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/dojo_cli``, else
``~/.cache/dojo_cli``; hulls go to its ``hulls/`` subfolder. Safe against concurrent
writers (parallel imports, sweep workers): each writes a temporary file in the folder
and renames it over the entry (``os.replace`` is atomic on POSIX and Windows), so a
reader sees a whole entry or none; two writers of one key write the same bytes. An
unreadable, corrupt or unwritable cache is never an error: the hull is computed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

CACHE_VARIABLE = "DOJO_CACHE_DIR"
"""Environment variable naming the cache folder (else XDG_CACHE_HOME/dojo_cli)."""
# The format of an entry, and of the reduction: bump it when reduced_hull changes, so
# that entries computed by an older reduction are not read.
HULL_CACHE_VERSION = 1
_READ_CHUNK = 1 << 20


def cache_dir() -> Path:
    """The dojo_cli cache folder (it may not exist yet)."""
    given = os.environ.get(CACHE_VARIABLE)
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg and os.path.isabs(os.path.expanduser(xdg)) else Path.home() / ".cache"
    return base / "dojo_cli"


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes (hex).

    Raises:
        OSError: the file cannot be read.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_READ_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _key(digest: str, scale, most: int) -> str:
    scale_text = ",".join(repr(float(s)) for s in np.broadcast_to(np.asarray(scale, float), (3,)))
    return hashlib.sha256(f"v{HULL_CACHE_VERSION}|{digest}|{scale_text}|{most}".encode()).hexdigest()


def load_hull(digest: str, scale, most: int) -> tuple[np.ndarray, float] | None:
    """The cached (vertices (k, 3), error) of a mesh of this content, scale and budget, or None."""
    path = cache_dir() / "hulls" / f"{_key(digest, scale, most)}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        vertices = np.asarray(entry["vertices"], dtype=float).reshape(-1, 3)
        error = float(entry["error"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no entry, or one that cannot be used: computed again
    if len(vertices) == 0 or not np.all(np.isfinite(vertices)) or not np.isfinite(error):
        return None
    return vertices, error


def store_hull(digest: str, scale, most: int, vertices: np.ndarray, error: float) -> None:
    """Cache a hull (atomically; a cache that cannot be written is skipped)."""
    folder = cache_dir() / "hulls"
    # repr of a float reads back as the same float: a hit gives the numbers a miss computes
    text = json.dumps({"vertices": np.asarray(vertices, float).tolist(), "error": float(error)})
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".hull-", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, folder / f"{_key(digest, scale, most)}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only or full cache: the next import computes the hull again


__all__ = ["CACHE_VARIABLE", "HULL_CACHE_VERSION", "cache_dir", "file_digest", "load_hull", "store_hull"]
