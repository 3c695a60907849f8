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


def contact_geometry(mech: Mechanism, contact: str | int | Contact, z) -> ContactGeometry:
    """The geometry of one contact (by name, index or object) at the maximal state z."""
    c = _contact(mech, contact)
    x, _, q, _ = unpack_maximal(np.asarray(z, dtype=float), mech.nb)
    if c.other == ORIGIN:
        xb, qb = np.zeros(3), IDENTITY
    else:
        xb, qb = x[c.other], q[c.other]
    g = _core.contact_geometry(c.kind, x[c.body], q[c.body], np.asarray(c.offset, dtype=float), float(c.radius),
                               xb, qb, contact_shape_parameters(c), False, list(np.asarray(c.shape_a, dtype=float)),
                               hull=contact_hull(c))
    return ContactGeometry(float(g["distance"]), g["normal"], g["tangent"], g["point_a"], g["point_b"])


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
