"""Contact geometry between a sphere on body a and a shape on body b, with exact Jacobians.

Body a always carries a sphere (radius >= 0; radius 0 is a point) centred at a
body-frame offset. Body b carries a half-space (fixed in the world), a sphere,
a capsule (a segment swept by a radius) or a box. Every function is vectorised
over ``nc`` contacts of one kind (leading axis ``nc``, which may be 0) and returns
a :class:`ContactGeometry`: signed distance, unit normal, two tangents and the
contact points on both surfaces, each a :class:`~dojo_cli.math.jet.Jet` whose
Jacobian is taken with respect to the 12 tangent coordinates
[x_a (3), t_a (3), x_b (3), t_b (3)] of the pair at the given poses: world-frame
position increments and body-frame rotation increments q -> q exp(t/2). The
Jacobians are exact (forward-mode Jets, chain rule per operation); none is a
finite difference.

Conventions (those of Dojo, ``src/contacts/collisions/collision.jl``; reference
notes dojo_engine_notes.md section 4.3): body a is Dojo's contact *parent*
(the first id of ``ContactConstraint((model, parent_id, child_id))``) and body b
its *child*; the normal points from b towards a (a is pushed along +normal);
the tangents are t1 = e_x x n (e_y x n when that is nearly zero) and
t2 = t1 x n.

Differences from Dojo, on purpose:
- t1 is normalised. Dojo uses e_x x n as it is, of length sqrt(1 - n_x^2), so
  its tangent rows are unit only for normals perpendicular to e_x (its
  diagonal sphere-sphere test expects rows of length 0.816).
- Sphere-box with the sphere centre inside the box: Dojo clamps the centre to
  the box (``point_to_box_v2.jl``), which returns the centre itself, so its
  distance is -radius at any depth (never below -radius) and its normal is
  normalize(0). Here the centre is pushed out through the nearest face.
- Dojo differentiates sphere-sphere and the box point by finite differences
  (``FiniteDiff`` in ``sphere_sphere.jl``, ``point_to_box_v2.jl``); here every
  Jacobian is analytic.
- Dojo's generic normal flips sign when the distance is negative, because it
  is built from the two contact points, which cross over when the surfaces
  overlap; the normals here are built from the sphere centre and the closest
  point of b, which do not cross, so no flip is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.math.jet import Jet, body_pose, stack, unrotate, where

# Tangent coordinates of a contact pair: [x_a, t_a, x_b, t_b].
N_TANGENT = 12
_COLUMNS_A = 0  # first tangent column of body a
_COLUMNS_B = 6  # first tangent column of body b

# Dojo's threshold for the tangent fallback (collision.jl, contact_tangent_one:
# t1 = e_x x n unless !(norm(t1) > 1e-6), then e_y x n): below it the normal is
# within 1e-6 rad of +-e_x and e_x x n has no usable direction.
TANGENT_FALLBACK_THRESHOLD = 1e-6

# Below this distance (m) between the sphere centre and the closest point of
# b, the direction between them is rounding noise: a fixed, documented normal
# is used instead (see each function).
_COINCIDENT = 1e-12

# Capsule segments shorter than this (m) are treated as a point (the
# projection parameter would divide by ~0).
_SHORT_SEGMENT = 1e-12

# Degenerate capsule normal: world +z projected perpendicular to the segment,
# or world +x when that projection is shorter than this (segment within 30
# degrees of z; then |x projected| >= sqrt(3)/2, well conditioned).
_PARALLEL_SINE = 0.5

_E_X = np.array([1.0, 0.0, 0.0])
_E_Y = np.array([0.0, 1.0, 0.0])
_E_Z = np.array([0.0, 0.0, 1.0])

# Box faces in the order of the nearest-face search (ties go to the first):
# +x, -x, +y, -y, +z, -z (outward normals in the box frame).
_BOX_FACE_NORMALS = np.array(
    [[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]
)


@dataclass
class ContactGeometry:
    """Geometry of nc contacts; Jacobians over [x_a, t_a, x_b, t_b] (12 columns).

    Attributes:
        distance: (nc,) signed distance (m): > 0 separated, < 0 penetrating.
        normal: (nc, 3) world unit normal, from body b towards body a (a is
            pushed along +normal).
        tangent: (nc, 2, 3) world rows t1, t2: t1 = normalize(e_x x n), or
            normalize(e_y x n) when |e_x x n| <= TANGENT_FALLBACK_THRESHOLD;
            t2 = t1 x n; orthonormal with t1 x t2 = -n (see :func:`tangent_basis`).
        point_a: (nc, 3) world contact point on a's sphere: centre_a - radius_a normal.
        point_b: (nc, 3) world contact point on b's surface.

    For every kind, point_a - point_b = distance * normal.
    """

    distance: Jet
    normal: Jet
    tangent: Jet
    point_a: Jet
    point_b: Jet


# ----------------------------------------------------------------- helpers
def _batch(array, tail: tuple, nc: int) -> np.ndarray:
    """A float array broadcast (and copied) to shape (nc,) + tail."""
    return np.array(np.broadcast_to(np.asarray(array, dtype=float), (nc,) + tail))


def _constant(value: np.ndarray) -> Jet:
    """A Jet with zero derivatives over the 12 pair coordinates."""
    return Jet.constant(value, N_TANGENT)


def _sphere_centre(xa, qa, offset_a) -> tuple[Jet, int]:
    """World centre of a's sphere, x_a + R(q_a) offset_a, and the batch size."""
    xa = np.asarray(xa, dtype=float)
    if xa.ndim != 2 or xa.shape[1] != 3:
        raise ValueError(f"xa must have shape (nc, 3), got {xa.shape}")
    nc = xa.shape[0]
    qa = _batch(qa, (4,), nc)
    position, _, rotate = body_pose(xa, qa, _COLUMNS_A, N_TANGENT)
    return position + rotate(_batch(offset_a, (3,), nc)), nc


def _finish(centre_a: Jet, radius_a: np.ndarray, distance: Jet, normal: Jet, point_b: Jet) -> ContactGeometry:
    """Add the tangents and a's contact point (centre_a - radius_a normal)."""
    return ContactGeometry(
        distance=distance,
        normal=normal,
        tangent=tangent_basis(normal),
        point_a=centre_a - normal * radius_a[:, None],
        point_b=point_b,
    )


def tangent_basis(normal: Jet) -> Jet:
    """Dojo's tangent rows for unit normals (``collision.jl``, ``contact_tangent``).

    t1 = normalize(e_x x n), falling back to normalize(e_y x n) when
    |e_x x n| <= TANGENT_FALLBACK_THRESHOLD (n along +-e_x); t2 = t1 x n. For a
    unit n, t1 and t2 are unit, orthogonal to n and to each other, and
    (t1, t2, n) is left-handed (t1 x t2 = -n). Dojo does not normalise t1;
    for n perpendicular to e_x (or on the fallback) both agree, otherwise
    Dojo's rows are these times |e_x x n|.

    Args:
        normal: (..., 3) world unit normals (a Jet; its Jacobian carries through).

    Returns:
        (..., 2, 3) Jet: rows t1, t2 (world).
    """
    t1_x = -normal.cross(_E_X)  # e_x x n
    t1_y = -normal.cross(_E_Y)  # e_y x n
    # written as "not above" like Dojo's !(norm(t1) > 1e-6)
    fallback = ~(np.linalg.norm(t1_x.value, axis=-1) > TANGENT_FALLBACK_THRESHOLD)
    t1 = where(fallback, t1_y, t1_x).normalized()
    t2 = t1.cross(normal)
    return stack([t1, t2], axis=-2)


# ------------------------------------------------------------- collisions
def sphere_halfspace(xa, qa, offset_a, radius_a, normal, point) -> ContactGeometry:
    """Sphere on body a against a half-space fixed in the world.

    The half-space is {p : normal . (p - point) >= 0} (Dojo's
    ``sphere_halfspace.jl`` / ``SphereHalfSpaceCollision``, notes 4.3; the
    ground is normal [0, 0, 1], point 0). distance = n . (c - point) - r with
    c the sphere centre; the normal is constant; point_b is the projection of
    c on the plane. The body-b Jacobian columns are zero.

    Args:
        xa: (nc, 3) world position of body a (m).
        qa: (nc, 4) orientation of body a, unit quaternions [w, x, y, z] (body to world).
        offset_a: (nc, 3) or (3,) sphere centre in a's body frame (m).
        radius_a: (nc,) or scalar sphere radius (m), >= 0.
        normal: (nc, 3) or (3,) world normal of the plane, pointing into the
            free side (normalised here).
        point: (nc, 3) or (3,) world point on the plane (m).

    Returns:
        The contacts' geometry (normal, tangent constant).
    """
    centre, nc = _sphere_centre(xa, qa, offset_a)
    radius = _batch(radius_a, (), nc)
    unit = _batch(normal, (3,), nc)
    unit = unit / np.linalg.norm(unit, axis=-1, keepdims=True)
    height = (centre - _batch(point, (3,), nc)).dot(unit)  # of the centre above the plane
    n = _constant(unit)
    return _finish(centre, radius, height - radius, n, centre - n * height[:, None])


def sphere_sphere(xa, qa, offset_a, radius_a, xb, qb, offset_b, radius_b) -> ContactGeometry:
    """Sphere on body a against a sphere on body b (Dojo's ``sphere_sphere.jl``).

    distance = |ca - cb| - ra - rb; normal = normalize(ca - cb);
    point_b = cb + rb normal.

    Degenerate case: coincident centres (|ca - cb| <= 1e-12 m) take the world
    +z as normal (constant, zero Jacobian) and distance -(ra + rb).

    Args:
        xa: (nc, 3) world position of body a (m).
        qa: (nc, 4) orientation of body a, unit quaternions [w, x, y, z].
        offset_a: (nc, 3) or (3,) a's sphere centre in a's body frame (m).
        radius_a: (nc,) or scalar a's sphere radius (m).
        xb: (nc, 3) world position of body b (m).
        qb: (nc, 4) orientation of body b, unit quaternions [w, x, y, z].
        offset_b: (nc, 3) or (3,) b's sphere centre in b's body frame (m).
        radius_b: (nc,) or scalar b's sphere radius (m).

    Returns:
        The contacts' geometry.
    """
    centre_a, nc = _sphere_centre(xa, qa, offset_a)
    position_b, _, rotate_b = body_pose(_batch(xb, (3,), nc), _batch(qb, (4,), nc), _COLUMNS_B, N_TANGENT)
    centre_b = position_b + rotate_b(_batch(offset_b, (3,), nc))
    ra, rb = _batch(radius_a, (), nc), _batch(radius_b, (), nc)

    diff = centre_a - centre_b
    gap = diff.norm()
    coincident = gap.value <= _COINCIDENT
    normal = where(coincident, _constant(np.broadcast_to(_E_Z, (nc, 3))), diff).normalized()
    return _finish(centre_a, ra, gap - ra - rb, normal, centre_b + normal * rb[:, None])


def sphere_capsule(xa, qa, offset_a, radius_a, xb, qb, end1_b, end2_b, radius_b) -> ContactGeometry:
    """Sphere on body a against a capsule on body b (Dojo's ``sphere_capsule.jl``).

    The capsule is the segment [e1, e2] swept by radius rb. The closest
    segment point to the sphere centre c has parameter
    s = clamp((c - e1).(e2 - e1) / |e2 - e1|^2, 0, 1) (Dojo's
    ``point_to_segment.jl``); distance = |c - closest| - ra - rb,
    normal = normalize(c - closest), point_b = closest + rb normal.

    Degenerate cases: a segment shorter than 1e-12 m is the point e1. A centre
    on the segment (|c - closest| <= 1e-12 m) takes as normal the world +z
    projected perpendicular to the segment, or the world +x projected when the
    segment is within 30 degrees of z (so that point_b lies on the capsule's
    cylinder); its Jacobian follows b's rotation only.

    Args:
        xa: (nc, 3) world position of body a (m).
        qa: (nc, 4) orientation of body a, unit quaternions [w, x, y, z].
        offset_a: (nc, 3) or (3,) sphere centre in a's body frame (m).
        radius_a: (nc,) or scalar sphere radius (m).
        xb: (nc, 3) world position of body b (m).
        qb: (nc, 4) orientation of body b, unit quaternions [w, x, y, z].
        end1_b: (nc, 3) or (3,) first segment end in b's body frame (m).
        end2_b: (nc, 3) or (3,) second segment end in b's body frame (m).
        radius_b: (nc,) or scalar capsule radius (m).

    Returns:
        The contacts' geometry.
    """
    centre, nc = _sphere_centre(xa, qa, offset_a)
    position_b, _, rotate_b = body_pose(_batch(xb, (3,), nc), _batch(qb, (4,), nc), _COLUMNS_B, N_TANGENT)
    end1 = position_b + rotate_b(_batch(end1_b, (3,), nc))
    end2 = position_b + rotate_b(_batch(end2_b, (3,), nc))
    ra, rb = _batch(radius_a, (), nc), _batch(radius_b, (), nc)

    axis = end2 - end1
    length2 = axis.dot(axis)
    short = length2.value <= _SHORT_SEGMENT**2
    ones, zeros = _constant(np.ones(nc)), _constant(np.zeros(nc))
    along = (centre - end1).dot(axis) / where(short, ones, length2)
    along = where(short, zeros, along).clip(0.0, 1.0)
    closest = end1 + axis * along[:, None]

    diff = centre - closest
    gap = diff.norm()
    on_segment = gap.value <= _COINCIDENT
    # fallback normal (used only on the segment): +z (else +x) made perpendicular to the segment
    direction = where(short, _constant(np.broadcast_to(_E_X, (nc, 3))), axis).normalized()
    perp_z = _constant(np.broadcast_to(_E_Z, (nc, 3))) - direction * direction[:, 2:3]
    perp_x = _constant(np.broadcast_to(_E_X, (nc, 3))) - direction * direction[:, 0:1]
    near_z = np.linalg.norm(perp_z.value, axis=-1) < _PARALLEL_SINE
    fallback = where(near_z, perp_x, perp_z)
    normal = where(on_segment, fallback, diff).normalized()
    return _finish(centre, ra, gap - ra - rb, normal, closest + normal * rb[:, None])


def sphere_box(xa, qa, offset_a, radius_a, xb, qb, centre_b, half_sizes_b) -> ContactGeometry:
    """Sphere on body a against a box on body b (Dojo's ``sphere_box.jl``).

    The box is centred at centre_b in b's frame with its axes along b's axes.
    With p the sphere centre in box coordinates:
    - outside (some |p_i| > h_i): the closest box point clamps p per axis
      (Dojo's ``point_to_box_v2.jl``); distance = |c - closest| - ra,
      normal = normalize(c - closest), point_b = closest;
    - inside or on the surface (all |p_i| <= h_i): the nearest face (smallest
      depth h_i -+ p_i; ties go to the first of +x, -x, +y, -y, +z, -z);
      distance = -depth - ra, normal = that face's outward normal (world),
      point_b = the centre projected on that face. Dojo instead returns the
      centre itself as closest point (distance -ra at any depth, normal
      normalize(0)).
    Degenerate case: a centre on the surface takes the inside branch, so its
    normal is the face's (depth 0, distance -ra, continuous with outside).

    Args:
        xa: (nc, 3) world position of body a (m).
        qa: (nc, 4) orientation of body a, unit quaternions [w, x, y, z].
        offset_a: (nc, 3) or (3,) sphere centre in a's body frame (m).
        radius_a: (nc,) or scalar sphere radius (m).
        xb: (nc, 3) world position of body b (m).
        qb: (nc, 4) orientation of body b, unit quaternions [w, x, y, z].
        centre_b: (nc, 3) or (3,) box centre in b's body frame (m).
        half_sizes_b: (nc, 3) or (3,) half sizes along b's x, y, z axes (m), >= 0.

    Returns:
        The contacts' geometry.
    """
    centre, nc = _sphere_centre(xa, qa, offset_a)
    position_b, rot_b, rotate_b = body_pose(_batch(xb, (3,), nc), _batch(qb, (4,), nc), _COLUMNS_B, N_TANGENT)
    box_centre = position_b + rotate_b(_batch(centre_b, (3,), nc))
    half = _batch(half_sizes_b, (3,), nc)
    ra = _batch(radius_a, (), nc)

    local = unrotate(rot_b, _COLUMNS_B, centre - box_centre)  # sphere centre in box coordinates
    inside = np.all(np.abs(local.value) <= half, axis=-1)

    # inside: push out through the nearest face
    depths = np.concatenate([half - local.value, half + local.value], axis=-1)[:, [0, 3, 1, 4, 2, 5]]
    face = np.argmin(depths, axis=-1)
    face_normal = _BOX_FACE_NORMALS[face]  # (nc, 3), box frame
    depth = -local.dot(face_normal) + np.sum(half * np.abs(face_normal), axis=-1)
    normal_in = rotate_b(face_normal)
    point_in = centre + normal_in * depth[:, None]

    # outside: closest box point by per-axis clamping
    closest = box_centre + rotate_b(local.clip(-half, half))
    diff = centre - closest
    normal_out = where(inside, normal_in, diff).normalized()  # inside rows are discarded below

    distance = where(inside, -depth - ra, diff.norm() - ra)
    normal = where(inside, normal_in, normal_out)
    return _finish(centre, ra, distance, normal, where(inside, point_in, closest))
