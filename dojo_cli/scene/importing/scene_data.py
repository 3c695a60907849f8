"""Scene data as the importers write it, and read back while they place a robot.

Numbers go into a scene as plain floats (``plain_vector``); a shape mapping of the scene
format (``type``, its sizes, ``position_offset``, ``orientation_offset``) is the compile's
``Shape`` (``shape_of``), so that an importer asks the collision table what the builder
will make of it; ``contact_distance`` is where such a contact starts.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.model.shapes import Shape


def plain_vector(values) -> list[float]:
    """Plain floats of an array (flattened), with -0.0 written as 0.0."""
    return [float(v) + 0.0 for v in np.asarray(values, dtype=float).reshape(-1)]


def shape_of(given: dict) -> Shape:
    """A scene shape mapping as the compile's Shape."""
    params = {k: v for k, v in given.items() if k not in ("type", "position_offset", "orientation_offset")}
    return Shape(given["type"], params, tuple(given["position_offset"]), tuple(given["orientation_offset"]))


def contact_distance(contact, own: tuple, other: tuple) -> float:
    """The signed distance of one collision-table contact (``dojo_cli.model.collisions``:
    ``body_pair_contacts``, ``half_space_contacts``) with its body at ``own`` and the other
    body at ``other``, each (position (3,), quaternion (4,) [w, x, y, z] body to world);
    negative: overlapping."""
    from dojo_cli import _core
    from dojo_cli.model.compiled import contact_hull, contact_shape_parameters

    return _core.contact_geometry(contact.kind, own[0], own[1], np.asarray(contact.offset, float), float(contact.radius),
                                  other[0], other[1], contact_shape_parameters(contact), False,
                                  list(contact.shape_a), hull=contact_hull(contact))["distance"]
