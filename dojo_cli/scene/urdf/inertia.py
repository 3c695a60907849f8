"""Links' mass properties: which links are massless, which inertias are positive definite,
and a link's inertia from its collision shapes (uniform density, ``--inertia-from-geometry``,
and a link whose file inertia is not positive definite).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from dojo_cli.scene.importing.mass import parallel_axis
from dojo_cli.scene.importing.meshes import mesh_vertices

if TYPE_CHECKING:
    from dojo_cli.scene.urdf.reader import _Reader


# Links lighter than this (kg) are massless: real files give 0 or 1e-6 to frames
# (sensor frames, a "base" above the trunk); they cannot be bodies of their own.
MASSLESS = 1e-5
# An inertia whose smallest eigenvalue is below this fraction of its largest (or
# not positive) is not positive definite for the solver.
INERTIA_EIGENVALUE_FLOOR = 1e-9


def _inertia_from_shapes(shapes: list, mass: float, com: np.ndarray, reader: _Reader) -> np.ndarray | None:
    """(3, 3) inertia about ``com`` (link frame) of ``mass`` spread uniformly over the
    volume of ``shapes`` (a link's collision elements: box, sphere, cylinder, capsule; a
    mesh as its convex hull), or None (no shape with volume). Shapes are taken as disjoint
    (overlaps count twice, as in MuJoCo's inertiafromgeom). Solid-body moments: box
    m/12 (b^2 + c^2); sphere 2/5 m r^2; cylinder (axis z) m/12 (3 r^2 + h^2) across,
    m r^2 / 2 along; capsule the cylinder plus two half spheres, each at 3r/8 from its
    flat face (parallel-axis to the centre)."""
    parts = []  # (volume, (3,) centroid in the link, (3, 3) inertia per unit density about the centroid, link axes)
    for kind, params, pose, _rgba, _line in shapes:
        rot, centre = pose[:3, :3], pose[:3, 3]
        if kind == "box":
            a, b, c = (float(v) for v in params["size"])
            volume = a * b * c
            unit = volume / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
        elif kind == "sphere":
            r = float(params["radius"])
            volume = 4.0 / 3.0 * math.pi * r**3
            unit = 0.4 * volume * r * r * np.eye(3)
        elif kind in ("cylinder", "capsule"):
            r, h = float(params["radius"]), float(params["height"])
            cylinder = math.pi * r * r * h
            across = cylinder * (3 * r * r + h * h) / 12.0
            along = cylinder * r * r / 2.0
            volume = cylinder
            if kind == "capsule":
                half = 2.0 / 3.0 * math.pi * r**3  # each end's half sphere
                offset = h / 2.0 + 3.0 * r / 8.0  # its centroid from the capsule's centre
                own_across = half * (2.0 / 5.0 * r * r - (3.0 * r / 8.0) ** 2)  # about its own centroid
                across += 2.0 * (own_across + half * offset * offset)
                along += 2.0 * (2.0 / 5.0 * half * r * r)
                volume += 2.0 * half
            unit = np.diag([across, across, along])
        elif kind == "mesh":
            made = _mesh_volume(params)
            if made is None:
                continue
            volume, mesh_centre, mesh_unit = made
            centre = centre + rot @ mesh_centre
            unit = mesh_unit
        else:
            continue
        if volume > 0.0 and np.all(np.isfinite(unit)):
            parts.append((volume, centre, rot @ unit @ rot.T))
    total = sum(v for v, _, _ in parts)
    if not parts or not total > 0.0:
        return None
    density = mass / total
    inertia = np.zeros((3, 3))
    for volume, centre, unit in parts:
        d = centre - com
        inertia += density * (unit + volume * parallel_axis(d))
    return 0.5 * (inertia + inertia.T)


def _mesh_volume(params: dict) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(volume, centroid (3,), inertia per unit density about it (3, 3)) of a mesh file's
    convex hull (scaled), or None (unreadable)."""
    try:
        import trimesh  # here: only a link with a mesh and a bad inertia pays for it

        points = mesh_vertices(params["file"], params["scale"])
        hull = trimesh.convex.convex_hull(points)  # of the scaled points: a mirror keeps its volume positive
        hull.density = 1.0
        return float(hull.volume), np.asarray(hull.center_mass, float), np.asarray(hull.moment_inertia, float)
    except Exception:  # noqa: BLE001 - trimesh raises what its loaders raise
        return None


def _positive_definite(inertia: np.ndarray) -> bool:
    eig = np.linalg.eigvalsh(inertia)
    return bool(eig.min() > INERTIA_EIGENVALUE_FLOOR * max(eig.max(), 1e-300) and eig.min() > 0)
