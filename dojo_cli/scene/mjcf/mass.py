"""Bodies' mass properties: each geom's by MuJoCo's uniform-density solids (sphere, capsule,
cylinder, box, ellipsoid, a mesh by its ``inertia`` rule), a body's from its ``<inertial>`` or its
geoms (``inertiafromgeom``, of the ``inertiagrouprange``'s groups), then ``settotalmass``.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.scene.importing.mass import combine
from dojo_cli.scene.mjcf.elements import _Geom
from dojo_cli.scene.mjcf.reader import _Reader


# MuJoCo's mjMINVAL: a body lighter than this (kg) has no mass, and one whose principal
# inertias are not all at least this (kg m^2) no inertia (a point mass, a rod). MuJoCo's
# compiler (mjCModel::CheckBodyMassInertia) accepts a body that moves on joints only if it,
# or a body welded to it (no joints between them, at any depth), has both.
MASSLESS = 1e-15
# MuJoCo's mjEPS: a geom lighter than this (kg) gives its body no mass (mjCBody::InertiaFromGeom)
MJEPS = 1e-14


def _hull_properties(points: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(volume, centre, (3,3) inertia about the centre at unit density) of a point set's convex hull."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    centre = points[hull.vertices].mean(axis=0)
    volume = 0.0
    first = np.zeros(3)
    second = np.zeros((3, 3))
    # tetrahedra from an inside point to each (outward-oriented) facet
    for simplex, eq in zip(hull.simplices, hull.equations):
        a, b, c = points[simplex]
        n = np.cross(b - a, c - a)
        if np.dot(n, eq[:3]) < 0:
            b, c = c, b
        v = np.array([centre, a, b, c])
        d = v[1:] - centre
        vol = abs(np.linalg.det(d)) / 6.0
        volume += vol
        first += vol * v.mean(axis=0)
        # second moment of a tetrahedron: vol/20 (sum v v^T + (sum v)(sum v)^T)
        s = v.sum(axis=0)
        second += vol / 20.0 * (v.T @ v + np.outer(s, s))
    com = first / volume
    cov = second - volume * np.outer(com, com)
    inertia = np.trace(cov) * np.eye(3) - cov
    return volume, com, inertia


def _mesh_properties(points: np.ndarray, faces: np.ndarray | None, mode: str) -> tuple[float, np.ndarray, np.ndarray]:
    """(volume, centre, (3,3) inertia about the centre at unit density) of a mesh by MuJoCo's
    rule for its ``inertia`` (mjCMesh::Process, ComputeVolume, ComputeInertia):

    - convex, or a mesh without faces: its convex hull's (``_hull_properties``);
    - exact: the solid the triangles bound (signed tetrahedra);
    - legacy (MuJoCo's default): the same sums with each tetrahedron's volume taken positive,
      which counts a non-convex mesh's hollows too (robosuite's can: 3.4 % over its hull);
    - shell: the mass on the surface (per unit area: "volume" is the area).

    The sums, as MuJoCo does them: the centre from pyramids with their apex at the faces'
    area-weighted centroid c_f, each of volume v_i = (m_i - c_f) . n_i A_i / 3 (m_i, n_i, A_i the
    face's centroid, unit normal and area) and centre 3/4 m_i + 1/4 c_f; then, with the vertices
    relative to that centre, the volume again from apex 0 and the second moments of each
    tetrahedron (v/20, a triangle's A/12, times sum_a d_a d_a^T + (sum_a d_a)(sum_a d_a)^T), whose
    total volume is the mesh's.
    """
    if mode == "convex" or faces is None or len(faces) == 0:
        return _hull_properties(points)
    # MuJoCo keeps a mesh's vertices in float32
    v = np.asarray(points, np.float32).astype(float)
    a, b, c = v[faces[:, 0]], v[faces[:, 1]], v[faces[:, 2]]
    cross = np.cross(b - a, c - a)
    norm = np.linalg.norm(cross, axis=1)
    area = 0.5 * norm
    normal = np.divide(cross, norm[:, None], out=np.zeros_like(cross), where=norm[:, None] > 0)
    middle = (a + b + c) / 3.0
    facecen = area @ middle / area.sum()
    shell = mode == "shell"

    def volumes(apex: np.ndarray) -> np.ndarray:
        vol = area if shell else np.einsum("ij,ij->i", middle - apex, normal) * area / 3.0
        return np.abs(vol) if mode == "legacy" else vol

    vol = volumes(facecen)
    centre = vol @ (0.75 * middle + 0.25 * facecen) / vol.sum()
    vol = volumes(centre)
    # each simplex's corners relative to the centre (the apex, 0, adds nothing): sum v v^T +
    # (sum v)(sum v)^T, the form _hull_properties uses, is MuJoCo's 2 sum d d^T + cross terms
    corners = np.stack([a, b, c], axis=1) - centre
    total = corners.sum(axis=1)
    second = np.einsum("nki,nkj->nij", corners, corners) + np.einsum("ni,nj->nij", total, total)
    cov = np.einsum("n,nij->ij", vol / (12.0 if shell else 20.0), second)
    inertia = np.trace(cov) * np.eye(3) - cov
    return float(vol.sum()), centre, inertia


def geom_mass_properties(geom: _Geom) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass, centre in the body frame, (3,3) inertia about it in the body frame) of a geom.

    MuJoCo's uniform-density solids (mjCGeom::SetInertia): sphere, capsule (a cylinder and
    two hemispheres, each hemisphere's inertia moved by the parallel-axis rule from its own
    centre of mass, 3r/8 from its flat face), cylinder, box, ellipsoid, mesh (_mesh_properties).
    """
    s = geom.size
    kind = geom.type
    if kind == "sphere":
        volume = 4.0 / 3.0 * math.pi * s[0] ** 3
        unit = np.full(3, 2.0 / 5.0 * s[0] ** 2)
    elif kind == "capsule":
        r, h = s[0], 2.0 * s[1]
        cyl, sph = math.pi * r * r * h, 4.0 / 3.0 * math.pi * r ** 3
        volume = cyl + sph
        axial = cyl * r * r / 2.0 + sph * 2.0 * r * r / 5.0
        lateral = cyl * (r * r / 4.0 + h * h / 12.0) + sph * (2.0 * r * r / 5.0 + h * h / 4.0 + 3.0 * h * r / 8.0)
        unit = np.array([lateral, lateral, axial]) / volume
    elif kind == "cylinder":
        r, h = s[0], 2.0 * s[1]
        volume = math.pi * r * r * h
        unit = np.array([(3 * r * r + h * h) / 12.0, (3 * r * r + h * h) / 12.0, r * r / 2.0])
    elif kind == "box":
        volume = 8.0 * s[0] * s[1] * s[2]
        unit = np.array([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2]) / 3.0
    elif kind == "ellipsoid":
        volume = 4.0 / 3.0 * math.pi * s[0] * s[1] * s[2]
        unit = np.array([s[1] ** 2 + s[2] ** 2, s[0] ** 2 + s[2] ** 2, s[0] ** 2 + s[1] ** 2]) / 5.0
    elif kind == "mesh":
        volume, centre, inertia = _mesh_properties(geom.points, geom.faces, geom.mesh_inertia)
        mass = geom.mass if geom.mass is not None else geom.density * volume
        rot = geom.rot
        return mass, geom.pos + rot @ centre, mass / volume * (rot @ inertia @ rot.T) if volume > 0 else np.zeros((3, 3))
    else:  # plane: no volume
        return 0.0, geom.pos.copy(), np.zeros((3, 3))
    mass = geom.mass if geom.mass is not None else geom.density * volume
    return mass, geom.pos.copy(), geom.rot @ np.diag(mass * unit) @ geom.rot.T


def has_mass_and_inertia(mass: float, inertia: np.ndarray) -> bool:
    """MuJoCo's test of one body (mjCModel::CheckBodyMassInertia): its mass and each of its
    principal inertias (the eigenvalues of ``inertia`` (3, 3)) at least mjMINVAL."""
    return mass >= MASSLESS and bool(np.linalg.eigvalsh(0.5 * (inertia + inertia.T)).min() >= MASSLESS)


def _mass_properties(reader: _Reader) -> None:
    """Each body's mass, centre of mass and inertia (MJCF body frame), then settotalmass."""
    for body in reader.bodies:
        from_geoms = reader.inertiafromgeom == "true" or (reader.inertiafromgeom == "auto" and body.inertial is None)
        if from_geoms:
            # MuJoCo's selection (mjCBody::InertiaFromGeom): geoms of the inertiagrouprange's
            # groups, heavier than mjEPS (a visual group's meshes give no mass)
            lo, hi = reader.inertiagrouprange
            items = [geom_mass_properties(g) for g in body.geoms if g.type != "plane" and lo <= g.group <= hi]
            items = [it for it in items if it[0] > MJEPS]
            body.mass, body.com, body.inertia = combine(items)
        elif body.inertial is not None:
            body.mass, body.com, body.inertia = body.inertial
    if reader.settotalmass > 0:
        total = sum(b.mass for b in reader.bodies)
        if total > 0:
            scale = reader.settotalmass / total
            for b in reader.bodies:
                b.mass *= scale
                b.inertia = b.inertia * scale
