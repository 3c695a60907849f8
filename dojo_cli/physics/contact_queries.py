"""Contact geometry at a state, under Dojo.jl's names: ``get_sdf``, ``contact_location``,
``contact_normal``, ``contact_tangent`` (Dojo's src/contacts/collisions/*.jl).

Each is one call to the core's narrow phase (core/maximal/collision.h, the same function a
step uses for its contact rows), for one contact of a mechanism at a maximal state z
(13 nb, ``dojo.initial_state``, ``traj.state(k)``; only the positions and orientations are
read). Dojo passes a body's pose (``get_sdf(contact, x, q)``); here the mechanism and a state
name both bodies of a pair, so body-body pairs work the same way.

- ``get_sdf``: the signed distance between the contact's primitive (a sphere, a segment, a
  circle or a box corner on body a) and the other shape: positive apart, negative in
  penetration (m). This is the gap the contact's complementarity holds at >= 0.
- ``contact_location``: the point of body a's primitive nearest the other shape, in the world
  frame (Dojo's ``contact_location``: the sphere's centre minus radius times the normal).
- ``contact_normal``: the unit normal (3,), world frame, pointing from the other shape to body a
  (Dojo's "from child to parent").
- ``sdf_jacobian``: ``get_sdf`` with its derivatives in the state's tangent coordinates and in
  the contact's offset and radius (the fit's start states, dojo_cli.fit.problem).
- ``contact_tangent``: (2, 3) the two unit tangents spanning the contact plane, world frame,
  in the order the friction impulses use them (docs/physics.md, "Contacts").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.math.quaternion import IDENTITY
from dojo_cli.model.compiled import contact_hull, contact_shape_parameters
from dojo_cli.model.mechanism import ORIGIN, Contact, Mechanism
from dojo_cli.model.state import unpack_maximal


@dataclass(frozen=True)
class ContactGeometry:
    """One contact's geometry at a state (world frame): see the module docstring."""

    distance: float
    normal: np.ndarray
    tangent: np.ndarray
    point_a: np.ndarray  # on body a's primitive (contact_location)
    point_b: np.ndarray  # on the other shape


def _core_geometry(mech: Mechanism, c: Contact, z, parameters: bool) -> dict:
    """The core's collision-table geometry of contact c at the maximal state z, with its
    Jacobians over [x_a, t_a, x_b, t_b] and, with ``parameters``, the offset and radius."""
    x, _, q, _ = unpack_maximal(np.asarray(z, dtype=float), mech.nb)
    if c.other == ORIGIN:
        xb, qb = np.zeros(3), IDENTITY
    else:
        xb, qb = x[c.other], q[c.other]
    return _core.contact_geometry(c.kind, x[c.body], q[c.body], np.asarray(c.offset, dtype=float), float(c.radius),
                                  xb, qb, contact_shape_parameters(c), parameters,
                                  list(np.asarray(c.shape_a, dtype=float)), hull=contact_hull(c))


def contact_geometry(mech: Mechanism, contact: str | int | Contact, z) -> ContactGeometry:
    """The geometry of one contact (by name, index or object) at the maximal state z."""
    g = _core_geometry(mech, _contact(mech, contact), z, False)
    return ContactGeometry(float(g["distance"]), g["normal"], g["tangent"], g["point_a"], g["point_b"])


def sdf_jacobian(mech: Mechanism, contact: str | int | Contact, z) -> tuple[float, np.ndarray, np.ndarray]:
    """The signed distance of a contact at the maximal state z (m); its derivative in z's
    tangent coordinates (12 nb,: per body [x, v, phi, w], q -> q [sqrt(1 - |phi|^2), phi], the
    step gradients' layout); and in the contact's offset (3) and radius, (4,)."""
    c = _contact(mech, contact)
    g = _core_geometry(mech, c, z, True)
    jac = np.asarray(g["distance_jac"])  # [x_a, t_a, x_b, t_b, offset, radius]; q -> q exp(t / 2): t = 2 phi
    d_state = np.zeros(12 * mech.nb)
    for side, body in ((0, c.body), (1, c.other)):
        if body != ORIGIN:
            d_state[12 * body:12 * body + 3] += jac[6 * side:6 * side + 3]
            d_state[12 * body + 6:12 * body + 9] += 2.0 * jac[6 * side + 3:6 * side + 6]
    return float(g["distance"]), d_state, jac[12:16].copy()


def get_sdf(mech: Mechanism, contact: str | int | Contact, z) -> float:
    """Signed distance of a contact at the state z (m; negative in penetration)."""
    return contact_geometry(mech, contact, z).distance


def contact_location(mech: Mechanism, contact: str | int | Contact, z) -> np.ndarray:
    """The contact point on body a's primitive, world frame (3,)."""
    return contact_geometry(mech, contact, z).point_a


def contact_normal(mech: Mechanism, contact: str | int | Contact, z) -> np.ndarray:
    """The contact normal, world frame (3,), from the other shape towards body a."""
    return contact_geometry(mech, contact, z).normal


def contact_tangent(mech: Mechanism, contact: str | int | Contact, z) -> np.ndarray:
    """The two contact tangents, world frame (2, 3)."""
    return contact_geometry(mech, contact, z).tangent


def _contact(mech: Mechanism, contact) -> Contact:
    if isinstance(contact, Contact):
        return contact
    return mech.get_contact(int(contact) if isinstance(contact, np.integer) else contact)
