"""Scene data of a body: the mass and central inertia of its group of links, and the shapes
drawn from their visual (or collision) elements, placed in the body's frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dojo_cli.scene.importing.scene_data import plain_vector
from dojo_cli.scene.urdf.inertia import INERTIA_EIGENVALUE_FLOOR, _positive_definite
from dojo_cli.scene.urdf.options import UrdfOptions
from dojo_cli.scene.urdf.elements import _Link
from dojo_cli.scene.urdf.reader import _Reader
from dojo_cli.scene.urdf.transforms import _pose, _translation
from dojo_cli.scene.urdf.tree import _Group


def _shape_data(kind: str, params: dict, body_pose: np.ndarray, rgba) -> dict:
    shape = {"type": kind, **params, **_pose(body_pose)}
    if rgba is not None:
        shape["color"] = [min(max(float(c), 0.0), 1.0) for c in rgba]
    return shape


def _body(reader: _Reader, group: _Group, links: dict[str, _Link], options: UrdfOptions) -> dict:
    """Scene data of one body: mass, central inertia, shapes from its links' geometry."""
    inertia = group.inertia
    if not _positive_definite(inertia):
        eig, vec = np.linalg.eigh(inertia)
        floor = max(INERTIA_EIGENVALUE_FLOOR * max(eig.max(), 0.0), 1e-9)
        reader.warn(links[group.reference].line, f"link {group.reference!r}",
                    f"inertia eigenvalues [{', '.join(f'{e:.3g}' for e in eig)}] are not positive; raised to at least {floor:.3g}")
        inertia = vec @ np.diag(np.maximum(eig, floor)) @ vec.T
    shapes = []
    # the heaviest link's geometry first: it becomes the body's shape (not a frame marker's)
    for name, pose in sorted(group.links.items(), key=lambda item: -links[item[0]].mass):
        link = links[name]
        body_pose = _translation(-group.com) @ pose
        items = link.visuals if options.geometry == "visual" else link.collisions
        if not items and options.geometry == "visual":
            items = [] if link.visuals else [c for c in link.collisions]
        for kind, params, origin, rgba, _line in items:
            if kind == "mesh" and not options.meshes:
                continue
            shapes.append(_shape_data(kind, params, body_pose @ origin, rgba))
    body: dict[str, Any] = {"name": group.name, "mass": float(group.mass)}
    # the inertia is written in full (3x3): a diagonal would drop the URDF's products
    body["inertia"] = [plain_vector(row) for row in inertia]
    body["shape"] = shapes[0] if shapes else {"type": "frame"}
    if len(shapes) > 1:
        body["visuals"] = shapes[1:]
    return body
