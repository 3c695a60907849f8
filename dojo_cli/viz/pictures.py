"""Still pictures with matplotlib: a scene sketched in 3D, and a run's series against time.

``draw_scene`` draws a mechanism in one configuration (by default its initial state) the
way one sketches it on paper: each body as its shape (placed by the body pose, then the
shape's offsets), each joint as a marker at its world position (the parent's joint
point) whose form tells the joint family, contact spheres, the ground or other
half-spaces as light grids. ``plot_run`` draws chosen quantities of a stored run against
time, one subplot per quantity, and can write the plotted series as CSV.

Both return what they drew (world positions, plotted arrays), so tests can check the
numbers and not only that a file appeared. Figures are made and written by
dojo_cli.viz.figures (matplotlib's Agg canvas, no pyplot).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator
from mpl_toolkits.mplot3d import proj3d  # also registers the "3d" projection
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.storage import StoredRun
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.joint_types import JointType, free_dimensions
from dojo_cli.model.mechanism import ORIGIN, Mechanism, axis_basis
from dojo_cli.model.shapes import Shape
from dojo_cli.model.state import unpack_maximal
from dojo_cli.viz.figures import DPI, new_figure, save_png
from dojo_cli.viz.mesh_files import MeshFileError, TriangleMesh, decimate, face_targets, read_mesh

DEFAULT_SCENE_SIZE = (800, 600)
# Matplotlib's own default 3D view (elevation, azimuth in degrees).
DEFAULT_VIEW = (20.0, -60.0)
# Sizes accepted for a picture, pixels: below 100 the axes and labels no longer fit;
# above 10000 a figure takes hundreds of MB.
MIN_PIXELS, MAX_PIXELS = 100, 10000

# ----------------------------------------------------------------- scene sketch

# Joint families: how a joint is drawn, by its free coordinates.
JOINT_FAMILY = {
    JointType.FIXED: "fixed",
    JointType.PRISMATIC: "prismatic",
    JointType.PLANAR: "planar",
    JointType.FIXED_ORIENTATION: "planar",
    JointType.REVOLUTE: "revolute",
    JointType.CYLINDRICAL: "revolute",
    JointType.PLANAR_AXIS: "revolute",
    JointType.FREE_REVOLUTE: "revolute",
    JointType.ORBITAL: "spherical",
    JointType.PRISMATIC_ORBITAL: "spherical",
    JointType.PLANAR_ORBITAL: "spherical",
    JointType.FREE_ORBITAL: "spherical",
    JointType.SPHERICAL: "spherical",
    JointType.CYLINDRICAL_FREE: "spherical",
    JointType.PLANAR_FREE: "spherical",
    JointType.FLOATING: "floating",
}
# Marker and colour of each family; revolute joints also get a line along their axis and
# joints with one free translation an arrow along it.
_FAMILY_STYLE = {
    "revolute": {"marker": "o", "color": "#d62728", "size": 5, "fill": True},
    "spherical": {"marker": "o", "color": "#9467bd", "size": 11, "fill": False},
    "prismatic": {"marker": "o", "color": "#2ca02c", "size": 5, "fill": True},
    "planar": {"marker": "D", "color": "#17becf", "size": 8, "fill": False},
    "fixed": {"marker": "s", "color": "#000000", "size": 8, "fill": True},
    "floating": {"marker": "x", "color": "#7f7f7f", "size": 8, "fill": True},
}
_UNFILLED_MARKERS = ("x", "+", "1", "2", "3", "4", "|", "_")
_CONTACT_COLOR = "#ff7f0e"
_CENTRE_COLOR = "#333333"
_LINK_COLOR = "#888888"
_GROUND_COLOR = "#a08c6e"
_GROUND_FACE = (0.85, 0.78, 0.65, 0.35)
# Lines of the grid drawn on the ground and other half-spaces, each way.
_PLANE_LINES = 11
# Default body colours when a shape has none (matplotlib's tab10, without the joint colours).
_BODY_COLORS = ("#1f77b4", "#8c564b", "#bcbd22", "#e377c2", "#7f7f7f", "#393b79")
# Face opacity of solid shapes: light enough to see joints and bodies behind them.
_FACE_ALPHA = 0.25
# Segments around a revolution surface (sphere, cylinder, capsule) and along a half meridian.
_AROUND, _MERIDIAN = 16, 6
# Axis lines, arrows and frame triads are this fraction of the scene's extent.
_GLYPH_FRACTION = 0.12
# Margin around the drawn content, fraction of its largest extent.
_MARGIN = 0.08
# Smallest half-extent of the drawing (m), so a single point still gets axes.
_MIN_HALF_EXTENT = 0.1
# Triangles of the meshes in one picture, every drawn copy counted (Go1: its 13 meshes drawn
# from 451,000 triangles, 300,000 drawn once per leg): matplotlib sorts and fills 40,000
# in about half a second, and at 800 x 600 pixels a triangle is then a few pixels.
PICTURE_FACE_BUDGET = 40_000
# Mesh shading: a face's colour times AMBIENT + DIFFUSE |n . l|, l a light from behind the
# viewer and above (two-sided: CAD files do not agree on the winding of their faces).
_MESH_AMBIENT, _MESH_DIFFUSE = 0.45, 0.55
_MESH_LIGHT_RISE = 0.5
# z-orders with computed_zorder off: grids under bodies under links under markers.
_Z_GROUND, _Z_BODY, _Z_LINK, _Z_MARKER, _Z_TEXT = 0, 1, 2, 5, 6


@dataclass(frozen=True)
class DrawnBody:
    """A body as drawn.

    Attributes:
        name, kind: body name and shape kind.
        position: (3,) centre of mass, world frame (m) (marked with a small +).
        rotation: (3, 3) body to world.
        shape_position: (3,) shape origin, world frame (body pose then position_offset).
        pixel: (2,) column, row of the centre of mass in the PNG (row 0 at the top).
    """

    name: str
    kind: str
    position: np.ndarray
    rotation: np.ndarray
    shape_position: np.ndarray
    pixel: np.ndarray


@dataclass(frozen=True)
class DrawnJoint:
    """A joint marker as drawn.

    Attributes:
        name, type: joint name and type.
        family: revolute | spherical | prismatic | planar | fixed | floating (JOINT_FAMILY).
        position: (3,) joint point on the parent (parent pose applied to parent_vertex;
            parent_vertex itself for the origin), world frame (m).
        axis: (3,) unit joint axis, world frame (parent orientation, then the joint's
            orientation_offset, applied to its axis).
        pixel: (2,) column, row of the marker in the PNG (row 0 at the top).
    """

    name: str
    type: str
    family: str
    position: np.ndarray
    axis: np.ndarray
    pixel: np.ndarray


@dataclass(frozen=True)
class DrawnContact:
    """A contact sphere as drawn: ``position`` (3,) its centre, world frame; ``radius`` m;
    ``against`` halfspace | sphere | capsule | box."""

    name: str
    body: str
    position: np.ndarray
    radius: float
    against: str


@dataclass
class ScenePicture:
    """What ``draw_scene`` drew.

    Attributes:
        path: the PNG written (None when drawn onto a given Axes without a path).
        size: (width, height) in pixels (of the Axes' figure when one was given).
        title: the title shown.
        bodies, joints, contacts: in the mechanism's order.
        ground: True when a contact uses the ground (z >= 0) and its grid is drawn.
        planes: (normal (3,), point (3,)) of every other half-space drawn as a grid.
        limits: (3, 2) axis limits (equal extents: equal scaling).
        warnings: things that could not be drawn as asked (e.g. an unreadable mesh).
        ax: the matplotlib Axes drawn on (the given one, or the new figure's).
    """

    path: Path | None
    size: tuple[int, int]
    title: str
    bodies: list[DrawnBody]
    joints: list[DrawnJoint]
    contacts: list[DrawnContact]
    ground: bool
    planes: list[tuple[np.ndarray, np.ndarray]]
    limits: np.ndarray
    warnings: list[str] = field(default_factory=list)
    ax: object = field(default=None, repr=False)

    @property
    def body_positions(self) -> np.ndarray:
        """(nb, 3) centres of mass, world frame."""
        return np.array([b.position for b in self.bodies]).reshape(-1, 3)

    @property
    def joint_positions(self) -> np.ndarray:
        """(nj, 3) joint markers, world frame."""
        return np.array([j.position for j in self.joints]).reshape(-1, 3)


def draw_scene(
    mech: Mechanism,
    path: str | os.PathLike | None = None,
    *,
    ax=None,
    state: np.ndarray | None = None,
    view: tuple[float, float] = DEFAULT_VIEW,
    size: tuple[int, int] = DEFAULT_SCENE_SIZE,
    labels: bool = False,
    title: str | None = None,
) -> ScenePicture:
    """Draw a mechanism in one configuration and write it as a PNG, or onto a given Axes
    (skydy's ``Connection.draw(ax=...)``).

    Args:
        mech: the mechanism (a built scene: ``mech.source`` resolves mesh files).
        path: PNG to write (overwritten); with ``ax``, optional (then the Axes' figure is
            written there).
        ax: a matplotlib 3D Axes (``projection="3d"``) of the caller's figure to draw on,
            instead of a new figure: the shapes, markers, grids and legend land on it, its
            title is ``title``, and the figure (its size, other Axes, suptitle) is left as
            it is (``size`` is then unused).
        state: (13 nb,) maximal state to draw; None for the scene's initial pose.
        view: (elevation, azimuth) of the camera, degrees.
        size: (width, height) of the PNG, pixels.
        labels: write body and joint names next to them.
        title: the title; None for the mechanism's name.

    Returns:
        What was drawn, with world positions and pixel positions.

    Raises:
        InputError: a size outside MIN_PIXELS..MAX_PIXELS, a state of the wrong shape,
            neither ``path`` nor ``ax``, or an ``ax`` that is not a 3D Axes.
        StorageError: the PNG cannot be written.
    """
    if ax is None and path is None:
        raise InputError("draw_scene: give a PNG path to write or an ax (a 3D matplotlib Axes) to draw on")
    if ax is not None and getattr(ax, "name", None) != "3d":
        raise InputError(f"ax: draw_scene draws in 3D; pass an Axes made with projection='3d' "
                         f"(got a {getattr(ax, 'name', type(ax).__name__)!r} Axes)")
    width, height = _checked_size(size)
    if state is None:  # the pose only: x and q are the same at t0 and in the midpoint state
        state = mech.initial if mech.initial is not None else mech.initial_t0
    z = state
    try:
        x, _, q, _ = unpack_maximal(z, mech.nb)
    except ValueError as exc:
        raise InputError(f"state: {exc}") from None
    rot = matrix_from_quaternion(q).reshape(mech.nb, 3, 3)
    title = mech.name if title is None else title

    own_figure = ax is None
    if own_figure:
        fig = new_figure(width / DPI, height / DPI)
        ax = fig.add_subplot(projection="3d", computed_zorder=False)
        fig.subplots_adjust(left=0.0, right=1.0, bottom=0.02, top=0.93)
    else:  # the caller's Axes: draw in the order given (our z-orders), keep its figure
        fig = ax.figure
        ax.computed_zorder = False

    geometry = _joint_geometry(mech, x, rot)
    contacts = [
        DrawnContact(c.name, mech.bodies[c.body].name, x[c.body] + rot[c.body] @ np.asarray(c.offset, float),
                     float(c.radius), c.kind)
        for c in mech.contacts
    ]
    # The glyph length (axis lines, arrows, triads) follows the scene's size.
    glyph = _GLYPH_FRACTION * _extent(np.vstack([x, geometry[1].reshape(-1, 3), _shape_extent_points(mech, x, rot)]))

    warnings: list[str] = []
    points: list[np.ndarray] = [x]  # everything drawn, for the limits
    meshes = picture_meshes(mech)
    triangles: list[tuple[np.ndarray, tuple]] = []  # every mesh's world triangles, drawn as one
    for i, body in enumerate(mech.bodies):
        default = _BODY_COLORS[i % len(_BODY_COLORS)]
        for shape in (body.shape, *body.visuals):
            color = shape.color if shape.color is not None else default
            points.append(_draw_shape(ax, shape, body.name, x[i], rot[i], color, glyph, meshes, triangles, warnings))
    if triangles:
        _draw_triangles(ax, triangles, view)
    ax.scatter(*x.T, marker="+", s=40, color=_CENTRE_COLOR, linewidths=1.0, zorder=_Z_MARKER, depthshade=False)

    drawn_joints = _draw_joints(ax, mech, x, geometry, glyph, points)
    for c in contacts:
        points.append(_draw_contact(ax, c, glyph))

    half_spaces = [c for c in mech.contacts if c.kind == "halfspace"]
    ground = any(_is_ground(c.params) for c in half_spaces)
    planes: list[tuple[np.ndarray, np.ndarray]] = []
    for c in half_spaces:
        n, p = np.asarray(c.params["normal"], float), np.asarray(c.params["point"], float)
        if not _is_ground(c.params) and not any(np.allclose(n, m) and np.isclose(n @ (p - o), 0.0) for m, o in planes):
            planes.append((n, p))
    # Half-spaces are drawn as square patches under the content, as wide as the content.
    content = _equal_limits(np.vstack(points))
    patches = [_plane_patch(np.array([0.0, 0.0, 1.0]), np.zeros(3), content)] if ground else []
    patches += [_plane_patch(n, p, content) for n, p in planes]
    limits = _equal_limits(np.vstack(points + [g.reshape(-1, 3) for g in patches]))
    for g in patches:
        _draw_plane_patch(ax, g)

    if labels:
        for b, xb in zip(mech.bodies, x):
            ax.text(*(xb + 0.3 * glyph * np.array([1.0, 1.0, 1.0])), b.name, fontsize=8, color="#222222", zorder=_Z_TEXT)
        for j in drawn_joints:
            ax.text(*(j.position - 0.3 * glyph * np.array([1.0, 1.0, 1.0])), j.name, fontsize=7,
                    color=_FAMILY_STYLE[j.family]["color"], zorder=_Z_TEXT)

    ax.set_xlim(*limits[0])
    ax.set_ylim(*limits[1])
    ax.set_zlim(*limits[2])
    ax.set_box_aspect((1.0, 1.0, 1.0))
    ax.view_init(elev=float(view[0]), azim=float(view[1]))
    ax.set_xlabel("x [m]", fontsize=8)
    ax.set_ylabel("y [m]", fontsize=8)
    ax.set_zlabel("z [m]", fontsize=8)
    ax.tick_params(labelsize=7)
    if own_figure:
        fig.suptitle(title, fontsize=12)
    else:
        ax.set_title(title, fontsize=10)
    _legend(ax, drawn_joints, contacts)

    if path is not None:
        save_png(fig, path)
    else:
        fig.draw_without_rendering()
    # Pixel positions need the projection of the final draw (savefig just made it).
    if not own_figure:
        width, height = int(round(fig.bbox.width)), int(round(fig.bbox.height))
    bodies = [
        DrawnBody(b.name, b.shape.kind, x[i].copy(), rot[i].copy(),
                  x[i] + rot[i] @ np.asarray(b.shape.position_offset, float), _pixel(ax, x[i], height))
        for i, b in enumerate(mech.bodies)
    ]
    drawn_joints = [
        DrawnJoint(j.name, j.type, j.family, j.position, j.axis, _pixel(ax, j.position, height)) for j in drawn_joints
    ]
    return ScenePicture(None if path is None else Path(path), (width, height), title, bodies, drawn_joints, contacts,
                        ground, planes, limits, warnings, ax=ax)


def _joint_geometry(mech: Mechanism, x: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World joint points (nj, 3) (on the parent) and unit axes (nj, 3)."""
    pos = np.zeros((mech.nj, 3))
    axes = np.zeros((mech.nj, 3))
    for k, j in enumerate(mech.joints):
        frame = matrix_from_quaternion(np.asarray(j.orientation_offset, float))
        axis = np.asarray(j.axis, float)
        if j.parent == ORIGIN:
            pos[k] = np.asarray(j.parent_vertex, float)
            axes[k] = frame @ axis
        else:
            pos[k] = x[j.parent] + rot[j.parent] @ np.asarray(j.parent_vertex, float)
            axes[k] = rot[j.parent] @ frame @ axis
        axes[k] /= np.linalg.norm(axes[k])
    return axes, pos


def _draw_joints(ax, mech: Mechanism, x, geometry, glyph: float, points: list) -> list[DrawnJoint]:
    """Joint markers, axis lines, translation arrows and the links body - joint - body."""
    axes, positions = geometry
    drawn = []
    for k, j in enumerate(mech.joints):
        family = JOINT_FAMILY[JointType(j.type)]
        style = _FAMILY_STYLE[family]
        p, a = positions[k], axes[k]
        # Thin links from the parent's centre (or nothing for the origin) through the joint
        # point to the child's centre: the skeleton of the mechanism.
        # A floating joint ties nothing: no link.
        if family != "floating":
            ends = [p, x[j.child]] if j.parent == ORIGIN else [x[j.parent], p, x[j.child]]
            ax.plot(*np.array(ends).T, color=_LINK_COLOR, linewidth=0.8, linestyle=":", zorder=_Z_LINK)
        if family == "revolute":
            seg = np.array([p - 0.5 * glyph * a, p + 0.5 * glyph * a])
            ax.plot(*seg.T, color=style["color"], linewidth=2.5, solid_capstyle="round", zorder=_Z_MARKER)
            points.append(seg)
        if free_dimensions(j.type)[0] == 1:  # one free translation: along the axis
            ax.quiver(*p, *(glyph * a), color=_FAMILY_STYLE["prismatic"]["color"], linewidth=1.8,
                      arrow_length_ratio=0.3, zorder=_Z_MARKER)
            points.append(p + glyph * a)
        # unfilled markers such as "x" take their colour from the face colour only
        edge = None if style["marker"] in _UNFILLED_MARKERS else style["color"]
        ax.scatter(*p, marker=style["marker"], s=style["size"] ** 2, zorder=_Z_MARKER, depthshade=False,
                   facecolors=style["color"] if style["fill"] else "none", edgecolors=edge,
                   linewidths=1.5)
        points.append(p[None, :])
        drawn.append(DrawnJoint(j.name, str(JointType(j.type).value), family, p.copy(), a.copy(), np.zeros(2)))
    return drawn


def _draw_contact(ax, c: DrawnContact, glyph: float) -> np.ndarray:
    """A contact sphere (a small wire sphere when its radius shows) and its centre; its points."""
    ax.scatter(*c.position, marker="o", s=16, color=_CONTACT_COLOR, zorder=_Z_MARKER, depthshade=False)
    if c.radius <= 0.05 * glyph:  # too small to see as a sphere: the dot says it
        return c.position[None, :]
    grid = _revolution(*_sphere_profile(c.radius))
    verts = grid + c.position
    ax.plot_wireframe(*np.moveaxis(verts, -1, 0), color=_CONTACT_COLOR, linewidth=0.5, alpha=0.7, zorder=_Z_MARKER)
    return verts.reshape(-1, 3)


def _is_ground(params: dict) -> bool:
    """A half-space that is the ground z >= 0."""
    n = np.asarray(params["normal"], float)
    return bool(np.allclose(n, [0.0, 0.0, 1.0]) and abs(float(np.asarray(params["point"], float)[2])) < 1e-12)


def _plane_patch(normal: np.ndarray, point: np.ndarray, content: np.ndarray) -> np.ndarray:
    """(_PLANE_LINES, _PLANE_LINES, 3) grid on the plane normal . (p - point) = 0: a square
    as wide as the content's cube (limits (3, 2)), centred under the content's centre."""
    u, v, n = axis_basis(normal)  # in-plane directions and the unit normal
    centre = content.mean(axis=1)
    origin = centre - (n @ (centre - point)) * n
    half = 0.5 * float(np.max(content[:, 1] - content[:, 0]))
    s = np.linspace(-half, half, _PLANE_LINES)
    uu, vv = np.meshgrid(s, s)
    return origin + uu[..., None] * u + vv[..., None] * v


def _draw_plane_patch(ax, grid: np.ndarray) -> None:
    """A light filled square with grid lines (the ground, an incline)."""
    corners = np.array([grid[0, 0], grid[0, -1], grid[-1, -1], grid[-1, 0]])
    ax.add_collection3d(Poly3DCollection([corners], facecolors=[_GROUND_FACE], edgecolors=[_GROUND_COLOR],
                                         linewidths=0.8, zorder=_Z_GROUND))
    ax.plot_wireframe(*np.moveaxis(grid, -1, 0), color=_GROUND_COLOR, linewidth=0.5, alpha=0.9, zorder=_Z_GROUND)


def _legend(ax, joints: list[DrawnJoint], contacts: list[DrawnContact]) -> None:
    handles = [Line2D([], [], linestyle="none", marker="+", color=_CENTRE_COLOR, label="centre of mass")]
    for family in dict.fromkeys(j.family for j in joints):
        st = _FAMILY_STYLE[family]
        handles.append(Line2D([], [], linestyle="-" if family == "revolute" else "none", linewidth=2.5,
                              marker=st["marker"], markersize=st["size"] * 0.8, color=st["color"],
                              markerfacecolor=st["color"] if st["fill"] else "none", label=f"{family} joint"))
    if any(free_dimensions(j.type)[0] == 1 for j in joints):
        handles.append(Line2D([], [], color=_FAMILY_STYLE["prismatic"]["color"], marker=">", linewidth=1.8,
                              label="sliding axis"))
    if contacts:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=4, color=_CONTACT_COLOR, label="contact"))
    ax.legend(handles=handles, loc="upper left", fontsize=7, framealpha=0.8)


# Shapes -------------------------------------------------------------------------


def _draw_shape(ax, shape: Shape, body: str, xb: np.ndarray, rb: np.ndarray, color, glyph: float,
                meshes: dict[str, TriangleMesh | str], triangles: list, warnings: list[str]) -> np.ndarray:
    """Draw one of a body's shapes at the body pose (xb, rb); returns (n, 3) world points
    drawn. A mesh's world triangles go to ``triangles`` (drawn together by _draw_triangles)."""
    r_shape = rb @ matrix_from_quaternion(np.asarray(shape.orientation_offset, float))
    c_shape = xb + rb @ np.asarray(shape.position_offset, float)
    p = shape.params
    rgba = to_rgba(color)
    if shape.kind == "frame":
        return _draw_triad(ax, c_shape, r_shape, glyph)
    if shape.kind == "mesh":
        name = str(p.get("file", ""))
        mesh = meshes.get(name, "not read")
        if isinstance(mesh, str):
            warnings.append(f"body {body!r}: mesh {name!r} not read ({mesh}); drawn as a marker")
            ax.scatter(*c_shape, marker="*", s=120, color=rgba, zorder=_Z_BODY, depthshade=False)
            return c_shape[None, :]
        scale = np.broadcast_to(np.asarray(p.get("scale", 1.0), float), (3,))
        world = (mesh.vertices * scale) @ r_shape.T + c_shape
        triangles.append((world[mesh.faces], rgba))
        return world
    local = _local_polygons(shape.kind, p)
    return _add_polys(ax, local, c_shape, r_shape, rgba, faces=True)


def picture_meshes(mech: Mechanism, budget: int = PICTURE_FACE_BUDGET) -> dict[str, TriangleMesh | str]:
    """Every mesh file the bodies' shapes and visuals name (resolved by the scene), read
    once and decimated so that the drawn copies hold ``budget`` triangles in all.

    Returns:
        file name as the scene writes it -> its mesh, or a line saying why it is not drawn.
    """
    source = getattr(mech, "source", None)
    found: dict[str, TriangleMesh | str] = {}
    uses: dict[str, int] = {}
    for body in mech.bodies:
        for shape in (body.shape, *body.visuals):
            if shape.kind != "mesh":
                continue
            name = str(shape.params.get("file", ""))
            uses[name] = uses.get(name, 0) + 1
            if name in found:
                continue
            path = source.resolve_path(name) if source is not None else Path(name)
            try:
                found[name] = read_mesh(path)
            except MeshFileError as exc:
                found[name] = str(exc)
    counts: dict[str, tuple[int, int]] = {}
    for name, mesh in found.items():
        if isinstance(mesh, TriangleMesh):
            n, k = counts.get(mesh.digest, (mesh.face_count, 0))
            counts[mesh.digest] = (n, k + uses[name])
    targets = face_targets(counts, budget)
    return {name: m if isinstance(m, str) else decimate(m, targets[m.digest]) for name, m in found.items()}


def _draw_triangles(ax, triangles: list[tuple[np.ndarray, tuple]], view: tuple[float, float]) -> None:
    """All meshes' triangles in one collection (so that matplotlib sorts them by depth
    together), each face shaded by its normal (no edges: CAD triangles are tiny)."""
    faces = np.concatenate([t for t, _ in triangles])  # (m, 3, 3) world
    rgba = np.concatenate([np.broadcast_to(np.asarray(c, float), (len(t), 4)) for t, c in triangles])
    normal = np.cross(faces[:, 1] - faces[:, 0], faces[:, 2] - faces[:, 0])
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = np.divide(normal, length, out=np.zeros_like(normal), where=length > 0)
    elev, azim = np.radians(view)
    light = np.array([np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev) + _MESH_LIGHT_RISE])
    light /= np.linalg.norm(light)
    shade = _MESH_AMBIENT + _MESH_DIFFUSE * np.abs(normal @ light)
    colors = np.column_stack([rgba[:, :3] * shade[:, None], rgba[:, 3]])
    ax.add_collection3d(Poly3DCollection(faces, facecolors=colors, edgecolors="none", linewidths=0.0, zorder=_Z_BODY))


def _local_polygons(kind: str, p: dict) -> list[np.ndarray]:
    """Faces of a shape in its own frame, each (k, 3)."""
    if kind == "combined":  # the parts' faces, each part placed by its offsets
        faces = []
        for part in p["parts"]:
            rot = matrix_from_quaternion(np.asarray(part.orientation_offset, float))
            centre = np.asarray(part.position_offset, float)
            faces += [centre + face @ rot.T for face in _local_polygons(part.kind, part.params)]
        return faces
    if kind == "box":
        return _box_faces(np.asarray(p["size"], float), np.zeros(3))
    if kind == "pyramid":
        w, h = float(p["width"]), float(p["height"])
        zb = -0.25 * h  # base at -h/4: the centroid at the origin
        base = 0.5 * w * np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
        base = np.column_stack([base, np.full(4, zb)])
        apex = np.array([0.0, 0.0, 0.75 * h])
        return [base] + [np.array([base[k], base[(k + 1) % 4], apex]) for k in range(4)]
    if kind == "sphere":
        return _quads(_revolution(*_sphere_profile(float(p["radius"]))))
    if kind == "cylinder":
        r, h = float(p["radius"]), float(p["height"])
        return _quads(_revolution(np.array([0.0, r, r, 0.0]), np.array([-0.5 * h, -0.5 * h, 0.5 * h, 0.5 * h])))
    if kind == "capsule":
        r, h = float(p["radius"]), float(p["height"])
        phi = np.linspace(0.0, 0.5 * np.pi, _MERIDIAN // 2 + 1)
        radius = np.concatenate([r * np.sin(phi), r * np.cos(phi)])
        height = np.concatenate([-0.5 * h - r * np.cos(phi), 0.5 * h + r * np.sin(phi)])
        return _quads(_revolution(radius, height))
    raise ValueError(f"no drawing for shape kind {kind!r}")


def _sphere_profile(radius: float) -> tuple[np.ndarray, np.ndarray]:
    phi = np.linspace(0.0, np.pi, _MERIDIAN + 1)
    return radius * np.sin(phi), -radius * np.cos(phi)


def _revolution(radius: np.ndarray, height: np.ndarray) -> np.ndarray:
    """(m, _AROUND + 1, 3) surface of the profile (radius, height) turned about z."""
    t = np.linspace(0.0, 2.0 * np.pi, _AROUND + 1)
    return np.stack(
        [radius[:, None] * np.cos(t)[None, :], radius[:, None] * np.sin(t)[None, :],
         np.broadcast_to(height[:, None], (len(height), len(t)))],
        axis=-1,
    )


def _quads(grid: np.ndarray) -> list[np.ndarray]:
    """The quadrilaterals of a (m, n, 3) surface grid."""
    return [
        np.array([grid[a, b], grid[a + 1, b], grid[a + 1, b + 1], grid[a, b + 1]])
        for a in range(grid.shape[0] - 1)
        for b in range(grid.shape[1] - 1)
    ]


def _box_faces(size: np.ndarray, centre: np.ndarray) -> list[np.ndarray]:
    """The six faces (4, 3) of a box of full ``size`` at ``centre`` (its 12 edges are theirs)."""
    h = 0.5 * np.asarray(size, float)
    c = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float) * h + centre
    faces = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
    return [c[list(f)] for f in faces]


def _add_polys(ax, local: list[np.ndarray], centre: np.ndarray, rotation: np.ndarray, rgba, faces: bool) -> np.ndarray:
    """Place shape-frame polygons in the world and draw them; returns their vertices (n, 3)."""
    world = [poly @ rotation.T + centre for poly in local]
    face = (*rgba[:3], _FACE_ALPHA * rgba[3]) if faces else (0.0, 0.0, 0.0, 0.0)
    # Many-faceted round shapes get faint edges; boxes and pyramids show every edge.
    edge_alpha = 0.35 if len(local) > 6 else 0.9
    coll = Poly3DCollection(world, facecolors=[face], edgecolors=[(*rgba[:3], edge_alpha * rgba[3])],
                            linewidths=0.8 if faces else 1.2, linestyles="-" if faces else "--", zorder=_Z_BODY)
    ax.add_collection3d(coll)
    return np.vstack(world)


def _draw_triad(ax, origin: np.ndarray, rotation: np.ndarray, length: float) -> np.ndarray:
    """x, y, z axes of a frame in red, green, blue."""
    tips = origin + length * rotation.T  # rows: tips of the x, y, z axes
    for tip, col in zip(tips, ("#d62728", "#2ca02c", "#1f77b4")):
        ax.plot(*np.array([origin, tip]).T, color=col, linewidth=2.0, zorder=_Z_BODY)
    return np.vstack([origin, tips])


def _part_extent(part) -> np.ndarray:
    """A solid's span along its own axes (m), for the glyph size only."""
    faces = np.concatenate(_local_polygons(part.kind, part.params))
    return faces.max(axis=0) - faces.min(axis=0)


def _shape_extent_points(mech: Mechanism, x: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """A few points per body spanning its shape roughly (for the glyph size only)."""
    pts = []
    for i, b in enumerate(mech.bodies):
        p = b.shape.params
        if b.shape.kind == "box":
            r = 0.5 * float(np.max(p["size"]))
        elif b.shape.kind in ("sphere", "cylinder", "capsule"):
            r = float(p["radius"]) + 0.5 * float(p.get("height", 0.0))
        elif b.shape.kind == "pyramid":
            r = 0.75 * max(float(p["width"]), float(p["height"]))
        elif b.shape.kind == "combined":
            r = max(float(np.linalg.norm(part.position_offset)) + 0.5 * float(np.max(_part_extent(part)))
                    for part in p["parts"])
        else:
            r = 0.0
        c = x[i] + rot[i] @ np.asarray(b.shape.position_offset, float)
        pts += [c - r, c + r]
    return np.array(pts).reshape(-1, 3)


def _extent(points: np.ndarray) -> float:
    """Largest coordinate range of the points (m), at least 2 _MIN_HALF_EXTENT."""
    if len(points) == 0:
        return 2.0 * _MIN_HALF_EXTENT
    return max(2.0 * _MIN_HALF_EXTENT, float(np.max(points.max(axis=0) - points.min(axis=0))))


def _equal_limits(points: np.ndarray) -> np.ndarray:
    """(3, 2) limits of a cube around the points: equal scaling on every axis."""
    points = points[np.all(np.isfinite(points), axis=1)]
    lo, hi = points.min(axis=0), points.max(axis=0)
    centre = 0.5 * (lo + hi)
    half = max(_MIN_HALF_EXTENT, 0.5 * float(np.max(hi - lo)) * (1.0 + 2.0 * _MARGIN))
    return np.column_stack([centre - half, centre + half])


def _pixel(ax, point: np.ndarray, height: int) -> np.ndarray:
    """(2,) column and row (from the top) of a world point in the last drawn figure."""
    px, py, _ = proj3d.proj_transform(*np.asarray(point, float), ax.get_proj())
    col, row_up = ax.transData.transform((px, py))
    return np.array([col, height - row_up])


# ------------------------------------------------------------------- run plots

QUANTITIES = ("position", "minimal", "velocity", "inputs", "iterations", "residual", "distance")
# Axis label of each quantity.
_YLABEL = {
    "position": "position [m]",
    "minimal": "minimal coordinates\n[m, rad]",
    "velocity": "minimal velocities\n[m/s, rad/s]",
    "inputs": "inputs [N, N m]",
    "iterations": "solver iterations",
    "residual": "solver residual\n(inf-norm)",
    "distance": "contact distance [m]",
}
# When each quantity's rows happen: "state" rows are the T+1 states at time[k]; "start"
# rows are held over step k (from time[k]); "end" rows are the outcome of step k (time[k+1]).
_TIMING = {"position": "state", "minimal": "state", "velocity": "state", "inputs": "start",
           "iterations": "end", "residual": "end", "distance": "end"}
# Line markers only while they stay readable.
_MAX_MARKED_POINTS = 60
# Legends with more entries go in columns.
_LEGEND_ROWS = 8


@dataclass(frozen=True)
class PlottedSeries:
    """One plotted line.

    Attributes:
        quantity: one of QUANTITIES.
        label: ``link.x``, ``hinge:r0``, ``hinge:r0_dot``, a contact name, or the quantity.
        time: (n,) s, the abscissae (state times; step starts for inputs; step ends for
            per-step solver and contact records).
        values: (n,) the ordinates, exactly the stored numbers.
    """

    quantity: str
    label: str
    time: np.ndarray
    values: np.ndarray

    @property
    def column(self) -> str:
        """CSV column name: ``quantity/label``, or the quantity for a single series."""
        return self.quantity if self.label == self.quantity else f"{self.quantity}/{self.label}"


@dataclass
class RunPlot:
    """What ``plot_run`` drew: ``series`` in subplot order; ``path``, ``size`` (px), ``csv``."""

    path: Path
    size: tuple[int, int]
    quantities: list[str]
    series: list[PlottedSeries]
    csv: Path | None = None

    def get(self, quantity: str, label: str | None = None) -> PlottedSeries:
        """The series of ``quantity`` (with ``label``, needed when it has several)."""
        found = [s for s in self.series if s.quantity == quantity and (label is None or s.label == label)]
        if len(found) != 1:
            have = ", ".join(s.column for s in self.series)
            raise KeyError(f"{quantity}/{label}: {len(found)} matching series (plotted: {have})")
        return found[0]


def default_plot_size(n_quantities: int) -> tuple[int, int]:
    """(width, height) px: 240 px per subplot plus the title, at least 400 px high."""
    return 900, max(400, 240 * n_quantities + 80)


def run_series(
    run: StoredRun,
    quantity: str,
    *,
    bodies: list[str] | None = None,
    coordinates: list[str] | None = None,
) -> list[PlottedSeries]:
    """The series of one quantity of a run.

    Args:
        run: the stored run.
        quantity: one of QUANTITIES.
        bodies: for ``position``: body names (None: every body).
        coordinates: for ``minimal``, ``velocity`` and ``inputs``: coordinate names
            (``hinge:r0``) or joint names (all of that joint's); None: all.

    Raises:
        InputError: unknown quantity, body or coordinate (the message lists the choices),
            or ``distance`` of a run without contacts.
    """
    if quantity not in QUANTITIES:
        raise InputError(f"unknown quantity {quantity!r} (choose from {', '.join(QUANTITIES)})")
    traj = run.trajectory
    t = traj.time
    times = {"state": t, "start": t[:-1], "end": t[1:]}[_TIMING[quantity]]
    if quantity == "position":
        idx = _select(run, "body", bodies, run.body_names, {})
        return [PlottedSeries(quantity, f"{run.body_names[b]}.{c}", times, traj.x[:, b, k])
                for b in idx for k, c in enumerate("xyz")]
    if quantity in ("minimal", "velocity", "inputs"):
        names = list(run.minimal_q_names)
        joints: dict[str, list[int]] = {}
        for k, n in enumerate(names):
            joints.setdefault(n.rsplit(":", 1)[0], []).append(k)
        idx = _select(run, "coordinate", coordinates, names, joints)
        if quantity == "minimal":
            return [PlottedSeries(quantity, names[k], times, traj.minimal_q[:, k]) for k in idx]
        if quantity == "velocity":
            vnames = list(run.minimal_v_names) or [f"{n}_dot" for n in names]
            return [PlottedSeries(quantity, vnames[k], times, traj.minimal_v[:, k]) for k in idx if k < traj.minimal_v.shape[1]]
        nu = traj.inputs.shape[1] if traj.inputs.ndim == 2 else 0
        if nu != len(names):  # inputs not one per coordinate: plot them all, numbered
            return [PlottedSeries(quantity, f"u{k}", times, traj.inputs[:, k]) for k in range(nu)]
        return [PlottedSeries(quantity, names[k], times, traj.inputs[:, k]) for k in idx]
    if quantity in ("iterations", "residual"):
        return [PlottedSeries(quantity, quantity, times, getattr(traj, quantity))]
    # distance
    if traj.contact_distance is None:
        raise InputError(f"{run.path}: quantity 'distance': the run has no contact records ({run.no_contacts_reason()})")
    d = traj.contact_distance.reshape(len(times), -1)
    names = run.attrs.get("contact_names")
    if not isinstance(names, list) or len(names) != d.shape[1]:
        names = [f"contact{k}" for k in range(d.shape[1])]
    return [PlottedSeries(quantity, str(names[k]), times, d[:, k]) for k in range(d.shape[1])]


def _select(run: StoredRun, what: str, wanted: list[str] | None, names: list[str], groups: dict[str, list[int]]) -> list[int]:
    """Indices of the wanted names (a name, or a group name standing for its members)."""
    if not wanted:
        return list(range(len(names)))
    idx: list[int] = []
    for w in wanted:
        if w in names:
            hits = [names.index(w)]
        elif w in groups:
            hits = groups[w]
        else:
            listed = ", ".join(names) or "none"
            extra = f"; or a joint: {', '.join(groups)}" if groups else ""
            raise InputError(f"{run.path}: no {what} {w!r} (choose from {listed}{extra})")
        idx += [k for k in hits if k not in idx]
    return idx


def plot_run(
    run: StoredRun,
    quantities: list[str],
    path: str | os.PathLike,
    *,
    bodies: list[str] | None = None,
    coordinates: list[str] | None = None,
    size: tuple[int, int] | None = None,
    title: str | None = None,
    csv_path: str | os.PathLike | None = None,
) -> RunPlot:
    """Plot quantities of a run against time, one subplot each (shared time axis), as a PNG.

    Args:
        run: the stored run (any status: a partial run plots what it holds).
        quantities: names from QUANTITIES, in subplot order (repeats are dropped).
        path: PNG to write (overwritten).
        bodies, coordinates: selections, as for ``run_series``; a selection needs a
            quantity it applies to.
        size: (width, height) px; None for ``default_plot_size``.
        title: the figure title; None for the scene name, status and steps.
        csv_path: also write the plotted series there: a ``time`` column (the T+1 state
            times) and one column per series, each value on the row of its time, empty
            where a series has none (per-step series have T values); numbers are
            written in full precision (Python's repr), so they read back exactly.

    Returns:
        The plotted series.

    Raises:
        InputError: unknown quantity, body or coordinate; a selection without its
            quantity; no quantity; a bad size.
        StorageError: the PNG or the CSV cannot be written.
    """
    quantities = list(dict.fromkeys(quantities))
    if not quantities:
        raise InputError(f"no quantity to plot (choose from {', '.join(QUANTITIES)})")
    for q in quantities:
        if q not in QUANTITIES:
            raise InputError(f"unknown quantity {q!r} (choose from {', '.join(QUANTITIES)})")
    if bodies and "position" not in quantities:
        raise InputError("a body selection applies to the quantity 'position', which is not plotted")
    if coordinates and not {"minimal", "velocity", "inputs"} & set(quantities):
        raise InputError("a coordinate selection applies to the quantities 'minimal', 'velocity' and 'inputs', none plotted")
    width, height = _checked_size(size or default_plot_size(len(quantities)))
    groups = [run_series(run, q, bodies=bodies, coordinates=coordinates) for q in quantities]

    fig = new_figure(width / DPI, height / DPI, layout="constrained")
    axes = fig.subplots(len(quantities), 1, sharex=True, squeeze=False)[:, 0]
    for ax, q, series in zip(axes, quantities, groups):
        _plot_quantity(ax, q, series)
    axes[-1].set_xlabel("time [s]")
    if title is None:
        name = run.attrs.get("scene_name", run.path.stem)
        title = f"{name}: {run.steps_completed} steps, {run.status}"
    fig.suptitle(title)
    save_png(fig, path)
    plotted = [s for g in groups for s in g]
    if csv_path is not None:
        _write_series_csv(csv_path, run, plotted)
    return RunPlot(Path(path), (width, height), quantities, plotted, Path(csv_path) if csv_path is not None else None)


def _plot_quantity(ax, quantity: str, series: list[PlottedSeries]) -> None:
    styles = _line_styles(quantity, series)
    for s, style in zip(series, styles):
        n = len(s.values)
        ax.plot(s.time, s.values, label=s.label, linewidth=1.2,
                marker="." if 0 < n <= _MAX_MARKED_POINTS else None,
                drawstyle="steps-post" if quantity == "inputs" else "default", **style)
    values = np.concatenate([s.values.astype(float).ravel() for s in series]) if series else np.zeros(0)
    finite = values[np.isfinite(values)]
    if quantity == "residual" and finite.size and np.all(finite > 0):
        ax.set_yscale("log")
    if quantity == "iterations":
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(bottom=0)
    if quantity == "distance":
        ax.axhline(0.0, color="#999999", linewidth=0.8, linestyle="--")
    ax.set_ylabel(_YLABEL[quantity], fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=8)
    if not series:
        ax.text(0.5, 0.5, "nothing stored", transform=ax.transAxes, ha="center", va="center", color="#999999")
    elif len(series) > 1 or series[0].label != quantity:
        ncol = math.ceil(len(series) / _LEGEND_ROWS)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, ncol=ncol, frameon=False)


def _line_styles(quantity: str, series: list[PlottedSeries]) -> list[dict]:
    """Colour per body and dash per component for positions; one colour per line otherwise."""
    if quantity == "position":
        bodies = list(dict.fromkeys(s.label.rsplit(".", 1)[0] for s in series))
        dash = {"x": "-", "y": "--", "z": ":"}
        return [{"color": f"C{bodies.index(s.label.rsplit('.', 1)[0]) % 10}", "linestyle": dash[s.label[-1]]} for s in series]
    cmap = "tab10" if len(series) <= 10 else "tab20"
    colors = colormaps[cmap]
    return [{"color": colors(k % colors.N)} for k in range(len(series))]


def _write_series_csv(path: str | os.PathLike, run: StoredRun, series: list[PlottedSeries]) -> None:
    t = run.trajectory.time
    first_row = {"state": 0, "start": 0, "end": 1}
    table: list[list[str]] = [[repr(float(v))] for v in t]
    for s in series:
        r0 = first_row[_TIMING[s.quantity]]
        cells = [""] * len(t)
        for k, v in enumerate(s.values.tolist()):
            cells[r0 + k] = repr(v)
        for row, cell in zip(table, cells):
            row.append(cell)
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["time"] + [s.column for s in series])
            w.writerows(table)
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None


# ---------------------------------------------------------------------- shared


def _checked_size(size) -> tuple[int, int]:
    width, height = (int(v) for v in size)
    for name, v in (("width", width), ("height", height)):
        if not MIN_PIXELS <= v <= MAX_PIXELS:
            raise InputError(f"size: {name} must be {MIN_PIXELS}..{MAX_PIXELS} pixels, got {v}")
    return width, height
