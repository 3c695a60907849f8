"""Mesh files (.dae, .stl, .obj) as triangle meshes for pictures and replays.

A robot's visual meshes come from CAD: Go1's trunk.dae is 28 MB of COLLADA text holding
351,394 triangles, and the same calf mesh serves four legs. Both viewers draw them from
one reading here:

- ``read_mesh``: the file's triangles (trimesh; COLLADA through pycollada), vertices shared
  between the triangles that touch (CAD exporters repeat a corner per triangle, twice the
  data for nothing), in the file's frame and units. The scale of a scene's shape is applied
  by the caller.
- ``decimate``: quadric edge collapse (Garland and Heckbert 1997, "Surface simplification
  using quadric error metrics", through fast-simplification's wrapper of Sp4cerat's
  Fast-Quadric-Mesh-Simplification, the library trimesh's ``simplify_quadric_decimation``
  uses) down to a triangle count; the silhouette and the bounding box stay (Go1 at the
  replay budget: bounding boxes within 0.03-0.13 mm, one thin edge of thigh.dae 2.6 mm;
  tests/viz/test_meshes.py).
- ``face_targets``: a scene's triangle budget shared among its distinct meshes in
  proportion to their triangles, so that no mesh is coarsened while another is kept whole.

Reading and decimating cost seconds for a large file (Go1's trunk: 2.5 s to read, 0.5-3 s
to decimate), so both are cached: in memory for the process, and on disk under the cache
folder of ``dojo_cli.scene.hull_cache`` (``meshes/``), keyed by the SHA-256 of the file's
bytes, the cache's version and the triangle count. An unreadable or unwritable cache is
never an error: the mesh is computed again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dojo_cli.scene.hull_cache import cache_dir, file_digest
from dojo_cli.scene.importing.meshes import read_msh

MESH_SUFFIXES = (".dae", ".stl", ".obj", ".msh")
"""The mesh file formats drawn (what URDF and MJCF robots ship; .msh is MuJoCo's own binary format)."""
# Bump when read_mesh or decimate change what they give, so older entries are not read.
MESH_CACHE_VERSION = 1
# fast-simplification's aggressiveness (its default): lower keeps the shape better at more
# cost and may stop short of the target.
_DECIMATION_AGGRESSION = 7.0


class MeshFileError(ValueError):
    """A mesh file that cannot be read as triangles (the message says why)."""


@dataclass(frozen=True, eq=False)
class TriangleMesh:
    """Triangles of a mesh file.

    Attributes:
        vertices: (n, 3) positions in the file's frame and units.
        faces: (m, 3) int64 vertex indices of each triangle.
        digest: SHA-256 of the file's bytes (the cache key; equal files, equal meshes).
    """

    vertices: np.ndarray
    faces: np.ndarray
    digest: str

    @property
    def face_count(self) -> int:
        return int(len(self.faces))

    def bounds(self, scale=1.0) -> np.ndarray:
        """(2, 3) lower and upper corners of the scaled vertices."""
        v = self.vertices * np.broadcast_to(np.asarray(scale, float), (3,))
        return np.array([v.min(axis=0), v.max(axis=0)])


_read: dict[tuple, TriangleMesh] = {}
_decimated: dict[tuple[str, int], TriangleMesh] = {}


def read_mesh(path: str | os.PathLike) -> TriangleMesh:
    """The triangles of a .dae, .stl or .obj file, its vertices merged.

    Raises:
        MeshFileError: not one of MESH_SUFFIXES, unreadable, or holding no triangle.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in MESH_SUFFIXES:
        raise MeshFileError(f"unsupported mesh format {suffix or '(none)'!r} (supported: {', '.join(MESH_SUFFIXES)})")
    try:
        stat = path.stat()
    except OSError as exc:
        raise MeshFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    memo = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if memo in _read:
        return _read[memo]
    try:
        digest = file_digest(path)
    except OSError as exc:
        raise MeshFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    mesh = _load_cached(digest, 0)
    if mesh is None:
        mesh = _parse(path, digest)
        _store_cached(mesh, 0)
    _read[memo] = mesh
    return mesh


def _parse(path: Path, digest: str) -> TriangleMesh:
    import trimesh  # ~1 s to import: only scenes with meshes pay for it

    try:
        if path.suffix.lower() == ".msh":  # MuJoCo's binary format, which trimesh does not read
            vertices, faces = read_msh(path)
        else:
            loaded = trimesh.load(str(path), force="mesh", process=False)
            vertices = np.asarray(loaded.vertices, dtype=float).reshape(-1, 3)
            faces = np.asarray(loaded.faces, dtype=np.int64).reshape(-1, 3)
    except Exception as exc:  # noqa: BLE001 - trimesh raises what its loaders raise (XML, struct, ...)
        raise MeshFileError(f"cannot read {path}: {type(exc).__name__}: {exc}") from None
    if len(faces) == 0 or not np.all(np.isfinite(vertices)):
        raise MeshFileError(f"cannot read {path}: no triangles" if len(faces) == 0 else f"{path}: non-finite vertices")
    # one vertex per position: trimesh's merge (exact positions; normals and texture
    # coordinates, which split CAD corners, are not drawn from the file)
    merged = trimesh.Trimesh(vertices, faces, process=False)
    merged.merge_vertices(merge_tex=True, merge_norm=True)
    merged.update_faces(merged.nondegenerate_faces())
    return TriangleMesh(np.asarray(merged.vertices, float), np.asarray(merged.faces, np.int64), digest)


def decimate(mesh: TriangleMesh, faces: int) -> TriangleMesh:
    """The mesh with at most about ``faces`` triangles (quadric edge collapse); the mesh
    itself when it has no more. The collapse may stop above the target where further
    collapses would fold the surface (Go1's trunk, 180 separate parts, stops at ~28,000)."""
    faces = max(int(faces), 1)
    if mesh.face_count <= faces:
        return mesh
    key = (mesh.digest, faces)
    if key in _decimated:
        return _decimated[key]
    out = _load_cached(mesh.digest, faces)
    if out is None:
        import fast_simplification

        vertices, triangles = fast_simplification.simplify(
            mesh.vertices, mesh.faces.astype(np.int32), target_count=faces, agg=_DECIMATION_AGGRESSION
        )
        out = TriangleMesh(np.asarray(vertices, float), np.asarray(triangles, np.int64), mesh.digest)
        _store_cached(out, faces)
    _decimated[key] = out
    return out


def face_targets(counts: dict, budget: int) -> dict:
    """Share a triangle budget among meshes in proportion to their triangles.

    Args:
        counts: key -> (triangles of the mesh, times it is drawn); a mesh stored once
            (the replay page) counts once whatever its uses.
        budget: triangles drawn in all (each use counted).

    Returns:
        key -> triangles to keep (its own count when everything fits).
    """
    total = sum(n * uses for n, uses in counts.values())
    if total <= budget:
        return {k: n for k, (n, _) in counts.items()}
    ratio = budget / total
    return {k: max(1, int(n * ratio)) for k, (n, _) in counts.items()}


# ------------------------------------------------------------------ the disk cache


def _cache_path(digest: str, faces: int) -> Path:
    key = hashlib.sha256(f"v{MESH_CACHE_VERSION}|{digest}|{faces}".encode()).hexdigest()
    return cache_dir() / "meshes" / f"{key}.npz"


def _load_cached(digest: str, faces: int) -> TriangleMesh | None:
    try:
        with np.load(_cache_path(digest, faces)) as entry:
            vertices = np.asarray(entry["vertices"], float).reshape(-1, 3)
            triangles = np.asarray(entry["faces"], np.int64).reshape(-1, 3)
    except (OSError, ValueError, KeyError):
        return None
    if len(triangles) == 0 or triangles.min() < 0 or triangles.max() >= len(vertices) or not np.all(np.isfinite(vertices)):
        return None  # a damaged entry: computed again
    return TriangleMesh(vertices, triangles, digest)


def _store_cached(mesh: TriangleMesh, faces: int) -> None:
    target = _cache_path(mesh.digest, faces)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".mesh-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, vertices=mesh.vertices, faces=mesh.faces)
            os.replace(temporary, target)  # atomic: a reader sees a whole entry or none
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only or full cache: computed again next time


__all__ = ["MESH_SUFFIXES", "MeshFileError", "TriangleMesh", "decimate", "face_targets", "read_mesh"]
