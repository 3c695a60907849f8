"""Body shapes and their inertias about the centre of mass.

A shape is placed in its body frame by ``position_offset`` and
``orientation_offset``; the body frame is the centre of mass. The default
inertia of a body is its shape's central inertia, rotated by the orientation
offset (Dojo ignores the offset there, so a capsule turned sideways keeps its
upright inertia; we do not copy that). Formulas are the textbook ones for
uniform solids; notably the cylinder's transverse moment is m (3 r^2 + h^2)/12,
not Dojo's m (r^2 + h^2/6)/2 (dojo_engine_notes.md 8.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.math.quaternion import IDENTITY, matrix_from_quaternion, multiply

SHAPE_KINDS = ("box", "sphere", "cylinder", "capsule", "pyramid", "mesh", "frame", "combined")
# A combined shape's parts must have their volume centroid at its origin (the body frame is
# the centre of mass) to this, relative to the parts' size.
CENTROID_TOL = 1e-9


@dataclass(frozen=True)
class Shape:
    """A body's geometry.

    Attributes:
        kind: one of SHAPE_KINDS.
        params: size parameters: box ``size`` (3,), sphere ``radius``, cylinder and
            capsule ``radius``, ``height`` (along the shape's z axis; a capsule's
            height is its cylinder part), pyramid ``width``, ``height`` (square
            base at z = -height/4, the centroid at the origin), mesh ``file``, ``scale``;
            combined ``parts`` (a tuple of solid Shapes placed in the combined frame).
        position_offset: (3,) shape origin in the body frame.
        orientation_offset: (4,) shape orientation in the body frame [w,x,y,z].
        color: (4,) RGBA in [0, 1], or None for the default.
    """

    kind: str
    params: dict = field(default_factory=dict)
    position_offset: tuple = (0.0, 0.0, 0.0)
    orientation_offset: tuple = tuple(IDENTITY)
    color: tuple | None = None


def central_inertia(shape: Shape, mass: float) -> np.ndarray | None:
    """Inertia (3, 3) of a uniform solid about its centroid, in the shape's axes.

    Returns None for shapes without volume (mesh, frame): their bodies need an
    explicit inertia.

    Raises:
        ValueError: a combined shape whose parts' centroid is not at its origin.
    """
    p = shape.params
    m = mass
    if shape.kind == "combined":
        return _combined_inertia(shape, mass)
    if shape.kind == "box":
        x, y, z = p["size"]
        return m / 12.0 * np.diag([y * y + z * z, x * x + z * z, x * x + y * y])
    if shape.kind == "sphere":
        return 0.4 * m * p["radius"] ** 2 * np.eye(3)
    if shape.kind == "cylinder":
        r, h = p["radius"], p["height"]
        t = m * (3.0 * r * r + h * h) / 12.0
        return np.diag([t, t, 0.5 * m * r * r])
    if shape.kind == "capsule":
        # Mass split by volume between the cylinder and the two hemispheres; each
        # hemisphere: 2/5 m r^2 about the axis, 83/320 m r^2 transverse about its
        # own centroid, which sits 3r/8 beyond the cylinder's end.
        r, h = p["radius"], p["height"]
        v_cyl = np.pi * r * r * h
        v_sph = 4.0 / 3.0 * np.pi * r**3
        m_cyl = m * v_cyl / (v_cyl + v_sph)
        m_hemi = 0.5 * (m - m_cyl)
        axial = 0.5 * m_cyl * r * r + 2.0 * 0.4 * m_hemi * r * r
        transverse = m_cyl * (3.0 * r * r + h * h) / 12.0 + 2.0 * m_hemi * (
            83.0 / 320.0 * r * r + (0.5 * h + 3.0 * r / 8.0) ** 2
        )
        return np.diag([transverse, transverse, axial])
    if shape.kind == "pyramid":
        w, h = p["width"], p["height"]
        return m / 80.0 * np.diag([4 * w * w + 3 * h * h, 4 * w * w + 3 * h * h, 8 * w * w])
    return None


def body_inertia(shape: Shape, mass: float) -> np.ndarray | None:
    """Central inertia of the shape expressed in the body frame (3, 3), or None.

    Raises:
        ValueError: the inertia is not finite (a size or a mass so large that the
            products overflow; a scene's bounds keep them finite).
    """
    # an overflow is answered below, not warned about: numpy's products give inf, and
    # Python's float ** raises OverflowError
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            inertia = central_inertia(shape, mass)
        except ArithmeticError:
            inertia = np.full((3, 3), np.inf)
    if inertia is None:
        return None
    if not np.all(np.isfinite(inertia)):
        # checked before rotating, which would mix inf * 0 = nan (and warn)
        raise ValueError(f"the inertia of this {shape.kind} of mass {mass:g} kg is not finite (the products overflow)")
    rot = matrix_from_quaternion(np.asarray(shape.orientation_offset, dtype=float))
    return rot @ inertia @ rot.T


def volume(shape: Shape) -> float | None:
    """The solid's volume (m^3), or None for a shape without one (mesh, frame)."""
    p = shape.params
    if shape.kind == "box":
        return float(np.prod(p["size"]))
    if shape.kind == "sphere":
        return 4.0 / 3.0 * np.pi * p["radius"] ** 3
    if shape.kind == "cylinder":
        return np.pi * p["radius"] ** 2 * p["height"]
    if shape.kind == "capsule":
        return np.pi * p["radius"] ** 2 * p["height"] + 4.0 / 3.0 * np.pi * p["radius"] ** 3
    if shape.kind == "pyramid":
        return p["width"] ** 2 * p["height"] / 3.0
    if shape.kind == "combined":
        return float(sum(volume(part) for part in p["parts"]))
    return None


def _combined_inertia(shape: Shape, mass: float) -> np.ndarray:
    """Dojo's CombinedShapes with a composite inertia: the parts share the mass by volume
    (one density), each contributes its central inertia turned into the combined frame plus
    m_k (|c_k|^2 I - c_k c_k^T) (the parallel-axis theorem) for its centroid c_k."""
    parts = shape.params["parts"]
    volumes = np.array([volume(part) for part in parts], dtype=float)
    centres = np.array([part.position_offset for part in parts], dtype=float)
    centroid = volumes @ centres / volumes.sum()
    size = max(float(np.max(np.abs(centres))), float(volumes.sum()) ** (1.0 / 3.0))
    if np.linalg.norm(centroid) > CENTROID_TOL * size:
        raise ValueError(f"the parts' centroid is at {np.round(centroid, 9).tolist()} in the combined shape's frame, not "
                         "at its origin (the body frame is the centre of mass): move the parts by "
                         f"{np.round(-centroid, 9).tolist()}, or give the body an inertia")
    total = np.zeros((3, 3))
    for part, v, c in zip(parts, volumes, centres):
        m = mass * v / volumes.sum()
        rot = matrix_from_quaternion(np.asarray(part.orientation_offset, dtype=float))
        total += rot @ central_inertia(part, m) @ rot.T + m * (c @ c * np.eye(3) - np.outer(c, c))
    return total


def combined_parts(shape: Shape) -> list[Shape]:
    """A combined shape's parts placed in the body frame (the combined shape's offsets
    composed with each part's); any other shape: [shape]."""
    if shape.kind != "combined":
        return [shape]
    rot = matrix_from_quaternion(np.asarray(shape.orientation_offset, dtype=float))
    out = []
    for part in shape.params["parts"]:
        position = np.asarray(shape.position_offset, float) + rot @ np.asarray(part.position_offset, float)
        orientation = multiply(np.asarray(shape.orientation_offset, float), np.asarray(part.orientation_offset, float))
        color = part.color if part.color is not None else shape.color
        out.append(Shape(part.kind, part.params, tuple(position), tuple(orientation), color))
    return out
