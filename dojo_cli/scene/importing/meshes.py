"""Mesh files read for their geometry: the vertices, scaled, in the mesh file's frame.

trimesh is imported here, in the call: only an import that opens a mesh pays for it (about
1 s). Both importers read vertices alone (for a convex hull, its volume or a bounding box).
MuJoCo's own binary format, ``.msh`` (robosuite's objects, dm_control's fruit fly), which
trimesh does not read, is read here (``read_msh``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

MSH_HEADER = 16
"""Bytes of a .msh file's header: four int32 counts (vertices, normals, texture coordinates, faces)."""


class MshError(ValueError):
    """A .msh file whose size is not the one its counts give."""


def read_msh(file) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3), faces (m, 3)) of a MuJoCo .msh file, as MuJoCo's legacy binary mesh
    format lays it out (MJCF reference, ``<mesh file>``): little-endian int32 nvertex, nnormal,
    ntexcoord, nface; then float32 vertex[3 nvertex], normal[3 nnormal], texcoord[2 ntexcoord];
    then int32 face[3 nface]. The file's size must be exactly that (MuJoCo checks the same);
    faces may be absent (nface 0: the vertices' convex hull is the mesh).

    Raises:
        OSError: the file cannot be read.
        MshError: negative counts, a size that does not match them, or faces naming no vertex.
    """
    data = Path(file).read_bytes()
    if len(data) < MSH_HEADER:
        raise MshError(f"{len(data)} bytes: shorter than the .msh header ({MSH_HEADER} bytes)")
    nv, nn, nt, nf = (int(n) for n in np.frombuffer(data, "<i4", 4))
    if min(nv, nn, nt, nf) < 0:
        raise MshError(f"negative counts in the .msh header: {nv} vertices, {nn} normals, {nt} texcoords, {nf} faces")
    expected = MSH_HEADER + 4 * (3 * nv + 3 * nn + 2 * nt + 3 * nf)
    if len(data) != expected:
        raise MshError(f"{len(data)} bytes, where the header's counts ({nv} vertices, {nn} normals, {nt} texcoords, "
                       f"{nf} faces) give {expected}")
    vertices = np.frombuffer(data, "<f4", 3 * nv, MSH_HEADER).astype(float).reshape(nv, 3)
    faces = np.frombuffer(data, "<i4", 3 * nf, expected - 12 * nf).astype(np.int64).reshape(nf, 3)
    if nf and (faces.min() < 0 or faces.max() >= nv):
        raise MshError(f"a face names vertex {int(faces.max()) if faces.max() >= nv else int(faces.min())}, "
                       f"outside the {nv} vertices")
    return vertices, faces


def mesh_triangles(file, scale) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3) times ``scale``, faces (m, 3)) of a mesh file, the faces as the file
    orders them (trimesh with processing off; MuJoCo's .msh by read_msh), reversed where the
    scale mirrors the mesh (a negative product: MuJoCo's rule, which keeps them outward).

    Raises:
        Exception: whatever trimesh's loaders raise (a missing file, a format it cannot read).
    """
    if Path(file).suffix.lower() == ".msh":
        vertices, faces = read_msh(file)
    else:
        import trimesh

        loaded = trimesh.load(str(file), force="mesh", process=False)
        vertices = np.asarray(loaded.vertices, float).reshape(-1, 3)
        faces = np.asarray(loaded.faces, np.int64).reshape(-1, 3)
    scale = np.broadcast_to(np.asarray(scale, float), (3,))
    if np.prod(scale) < 0:
        faces = faces[:, ::-1]
    return vertices * scale, faces


def mesh_vertices(file, scale) -> np.ndarray:
    """(n, 3) vertices of a mesh file times ``scale`` (one number, or (3,) per axis).

    Raises:
        Exception: whatever trimesh's loaders raise (a missing file, a format it cannot read).
    """
    if Path(file).suffix.lower() == ".msh":
        vertices, _ = read_msh(file)
    else:
        import trimesh

        vertices = np.asarray(trimesh.load(str(file), force="mesh").vertices, float)
    return vertices * np.broadcast_to(np.asarray(scale, float), (3,))
