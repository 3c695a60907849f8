"""Mesh files read for their geometry: the vertices, scaled, in the mesh file's frame.

trimesh is imported here, in the call: only an import that opens a mesh pays for it (about
1 s). Both importers read vertices alone (for a convex hull, its volume or a bounding box).
"""

from __future__ import annotations

import numpy as np


def mesh_vertices(file, scale) -> np.ndarray:
    """(n, 3) vertices of a mesh file times ``scale`` (one number, or (3,) per axis).

    Raises:
        Exception: whatever trimesh's loaders raise (a missing file, a format it cannot read).
    """
    import trimesh

    mesh = trimesh.load(str(file), force="mesh")
    return np.asarray(mesh.vertices, float) * np.broadcast_to(np.asarray(scale, float), (3,))
