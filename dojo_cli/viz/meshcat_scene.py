"""Replay a stored run in meshcat: the scene tree, body transforms, animation, HTML export.

This is the only module of dojo_cli that reorders rotations for a viewer: dojo_cli
keeps quaternions [w, x, y, z]; meshcat gets 4x4 homogeneous transforms built from
``matrix_from_quaternion`` (``transform_from_pose``), never quaternions.

Scene tree (paths relative to the visualizer's root, ``/meshcat``)::

    dojo/world/ground                        thin box, top face on the scene's ground plane
                                             (`ground:`, z = 0 by default; see-through when
                                             no contact touches it)
    dojo/world/halfspace<i>                  thin box per other half-space of the contacts
    dojo/joints/<joint>                      --joints: a joint's point on the world (parent origin)
    dojo/bodies/<body>                       transform: body pose (centre of mass), animated
    dojo/bodies/<body>/shape                 transform: the shape offset (position, orientation)
    dojo/bodies/<body>/shape/<part>          geometry: box, sphere, cylinder, capsule parts,
                                             pyramid, mesh (or placeholder), triad
    dojo/bodies/<body>/visual<k>[/<part>]    the body's further visuals (URDF links), as shape
    dojo/bodies/<body>/frame                 --frames: a triad at the centre of mass
    dojo/bodies/<body>/joints/<joint>        --joints: joint points in this body's frame
    dojo/contacts/<body>                     --contacts: transform, the body's pose, animated
    dojo/contacts/<body>/<contact>           a contact sphere on its body, or the other body's
                                             collision shape of a body-body contact
    dojo/arrows/forces/<contact>             --arrows forces: a contact's force on its body a
    dojo/arrows/velocities/<body>            --arrows velocities: a body's linear velocity
                                             (viz/arrows.py: unit arrows, moved and scaled)

What a user toggles as one has its own subtree: meshcat's GUI (Open Controls, Scene) shows
the tree with a visibility checkbox per node, so ``dojo/contacts`` hides or shows every
contact marker, ``dojo/arrows/forces`` every force arrow, ``dojo/arrows/velocities`` every
velocity arrow. The contact markers therefore do not hang under their bodies' nodes: each
body that has markers has a node under ``dojo/contacts`` moved with it (the same transform
sent, or keyed, twice). The same three are also checkboxes at the top level of meshcat's
panel ("contacts", "force arrows", "velocity arrows": ``add_toggle``, meshcat's
``set_control``), one click away instead of four folders down.

Playback: animation frame f shows simulated time t0 + f speed / fps (the stored state
nearest in time), and the viewer plays frame f at wall time f / fps: real time at
speed 1. The same scene code drives a live server (``meshcat_server.start_server``)
and the standalone HTML page (``export_html``), which records the commands instead
of sending them (``CommandRecorder``) and embeds them with meshcat's viewer script.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import html as html_text
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import meshcat
import meshcat.geometry as g
import numpy as np
import umsgpack
from meshcat.animation import Animation

from dojo_cli.errors import InputError, StorageError
from dojo_cli.io.storage import STATUS_COMPLETE, StoredRun
from dojo_cli.math.quaternion import matrix_from_quaternion, skew
from dojo_cli.model.mechanism import ORIGIN, Mechanism
from dojo_cli.model.shapes import Shape
from dojo_cli.model.trajectory import Trajectory
from dojo_cli.scene.stored_run import run_mechanism
from dojo_cli.viz.mesh_files import MESH_SUFFIXES, MeshFileError, TriangleMesh, decimate, face_targets, read_mesh
from dojo_cli.viz.scenery import Light, Surface, set_light, set_surface

SCENE_ROOT = "dojo"
CAMERA_PATH = "/Cameras/default/rotated/<object>"

# meshcat's bundled viewer (three.js, dat.gui, msgpack), inlined into exported pages.
VIEWER_SCRIPT = Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js"

DEFAULT_FPS = 60.0
# Body colours when a shape has none (matplotlib's tab10 from orange on: orange reads
# well against meshcat's blue sky).
BODY_PALETTE = (0xFF7F0E, 0x2CA02C, 0xD62728, 0x9467BD, 0x8C564B, 0xE377C2, 0xBCBD22, 0x17BECF, 0x1F77B4)
GROUND_COLOR = 0xD0CCC4
# A ground no contact touches is only a reference plane: drawn see-through, so bodies
# below z = 0 (hanging chains, a ball rolled down an incline) stay visible.
GROUND_REFERENCE_OPACITY = 0.35
HALFSPACE_COLOR = 0x7F8FA6
HALFSPACE_OPACITY = 0.6
JOINT_COLOR = 0xFFD700
CONTACT_COLOR = 0xFF2020
CONTACT_OPACITY = 0.5
PLACEHOLDER_COLOR = 0xFF00FF
# Ground and half-spaces: thin boxes this thick (m); their top face is the surface.
SURFACE_THICKNESS = 0.02
# Surfaces are pushed back in the depth buffer (three.js polygon offset, in units of the
# depth slope and of the depth resolution) so that meshcat's grid at z = 0 and faces
# resting on a surface draw over it instead of flickering with it: the ground's top face
# stays exactly at z = 0 (a geometric clearance would need centimetres with 16-bit depth).
SURFACE_DEPTH_OFFSET = {"polygonOffset": True, "polygonOffsetFactor": 1.0, "polygonOffsetUnits": 1.0}
# Surfaces span at least this much (m), and this much beyond the farthest body (m).
SURFACE_MIN_SIZE = 6.0
SURFACE_MARGIN = 2.0
# Triads (shape "frame", --frames): axis length (m).
TRIAD_LENGTH = 0.2
# Markers (m): joint points; contact points of radius 0 are drawn this big.
JOINT_MARKER_RADIUS = 0.03
CONTACT_POINT_RADIUS = 0.015
# Edge of the box standing in for a mesh file that cannot be read (m).
PLACEHOLDER_SIZE = 0.1
# Default camera: looks at the origin from this direction, at CAMERA_DISTANCE_FACTOR
# times the radius the bodies sweep (but at least CAMERA_MIN_DISTANCE): meshcat's
# perspective camera has a 75 degree field of view, so a factor 2 frames the sphere.
CAMERA_DIRECTION = (1.0, 0.6, 0.45)
CAMERA_DISTANCE_FACTOR = 2.0
CAMERA_MIN_DISTANCE = 2.0
# Parallel to -z: the rotation taking z to the normal is then a half turn about x.
_ANTIPARALLEL = 1e-12
# Triangles of a scene's distinct meshes in a replay (each stored once in a page): Go1's
# 451,000 (trunk 351,394) become 200,000, about 4.8 MB of the page (float32 vertices,
# uint32 indices, base64), which then stays under 10 MB with its viewer script (0.85 MB)
# and minutes of animation.
REPLAY_FACE_BUDGET = 200_000
# Longest --name (a node of meshcat's scene tree; scene names have the same bound).
MAX_NAME = 256


@dataclass(frozen=True)
class ReplayOptions:
    """How to draw and play a run.

    Attributes:
        fps: animation frames per second of wall time (> 0).
        speed: simulated seconds per wall second (> 0).
        contacts: draw contact spheres (and the other bodies' collision shapes).
        joints: draw joint points on both sides of each joint.
        frames: draw a triad at each body's centre of mass.
        camera: (3,) camera position, world frame (m); None: placed from the run's extent.
        zoom: camera zoom (> 0), or None for meshcat's 1.
        loop: repeat the animation forever (else play once).
        arrows: which arrows to draw, of viz.arrows.ARROW_KINDS ("forces", "velocities").
        ground: the scene's ground {normal (3,), point (3,)} (``GroundSpec.half_space``), or
            None: read from the run's scene (``scene_ground``), else z >= 0.
        floor_size: edge of the drawn floor (m, > 0), or None: sized to the run's extent.
        floor_color: the floor's (r, g, b[, a]) in 0..1, or None: GROUND_COLOR, see-through
            when no contact touches the ground (Dojo's set_floor! color).
        color: (r, g, b[, a]) in 0..1 for every body's shapes and visuals (Dojo's
            ``visualize(color=)``), or None: each shape's own colour, else the palette's.
        name: the node of meshcat's scene tree the replay hangs from (Dojo's
            ``visualize(name=)``: ``/meshcat/NAME/dojo/...``), or None: ``/meshcat/dojo/...``.
        light: the lights (Dojo's ``set_light!``, viz.scenery.Light), or None: meshcat's.
        surface: a surface z = f(x, y) drawn in the world (Dojo's ``set_surface!``,
            viz.scenery.Surface), or None.
    """

    fps: float = DEFAULT_FPS
    speed: float = 1.0
    contacts: bool = False
    joints: bool = False
    frames: bool = False
    camera: tuple[float, float, float] | None = None
    zoom: float | None = None
    loop: bool = False
    arrows: tuple[str, ...] = ()
    ground: dict | None = None
    floor_size: float | None = None
    floor_color: tuple[float, ...] | None = None
    color: tuple[float, ...] | None = None
    name: str | None = None
    light: Light | None = None
    surface: Surface | None = None

    def check(self) -> None:
        """InputError naming the option that is out of range."""
        from dojo_cli.viz.arrows import ARROW_KINDS  # (arrows.py builds on this module)

        unknown = [a for a in self.arrows if a not in ARROW_KINDS]
        if unknown:
            raise InputError(f"--arrows: {', '.join(map(repr, unknown))}: not an arrow kind ({', '.join(ARROW_KINDS)})")
        for name in ("fps", "speed") + (("zoom",) if self.zoom is not None else ()):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise InputError(f"--{name}: must be > 0, got {value:g}")
        if self.camera is not None and (len(self.camera) != 3 or not all(math.isfinite(c) for c in self.camera)):
            raise InputError(f"--camera: must be three finite numbers x,y,z, got {self.camera}")
        if self.floor_size is not None and not (math.isfinite(self.floor_size) and self.floor_size > 0):
            raise InputError(f"--floor-size: must be > 0 (m), got {self.floor_size:g}")
        if self.floor_color is not None and (
            len(self.floor_color) not in (3, 4) or not all(math.isfinite(c) and 0.0 <= c <= 1.0 for c in self.floor_color)
        ):
            raise InputError(f"--floor-color: expected r,g,b or r,g,b,a in 0..1, got {self.floor_color}")
        if self.color is not None and (
            len(self.color) not in (3, 4) or not all(math.isfinite(c) and 0.0 <= c <= 1.0 for c in self.color)
        ):
            raise InputError(f"--color: expected r,g,b or r,g,b,a in 0..1, got {self.color}")
        if self.name is not None and not (
            isinstance(self.name, str) and 0 < len(self.name) <= MAX_NAME and self.name.isprintable() and "/" not in self.name
        ):
            raise InputError(f"--name: a node name of 1..{MAX_NAME} printable characters without '/', got {self.name!r}")
        if self.light is not None:
            self.light.check()
        if self.surface is not None:
            self.surface.check()


@dataclass
class Replay:
    """What ``load_run`` drew: the frame -> state map and the warnings to show."""

    indices: np.ndarray
    warnings: list[str] = field(default_factory=list)
    force_scale: float | None = None  # m of force arrow per N (--arrows forces)

    @property
    def frame_count(self) -> int:
        return len(self.indices)


class CommandRecorder:
    """Stands in for meshcat's ViewerWindow: keeps each command msgpack-encoded, as the
    server would receive it, instead of sending it (for the standalone page and tests)."""

    def __init__(self) -> None:
        self.commands: list[bytes] = []

    def send(self, command) -> None:
        self.commands.append(umsgpack.packb(command.lower()))

    def decoded(self) -> list[dict]:
        """The commands as dicts (``type``, ``path``, ``matrix`` ...)."""
        return [umsgpack.unpackb(c) for c in self.commands]


def recording_visualizer() -> tuple[meshcat.Visualizer, CommandRecorder]:
    """A meshcat Visualizer (root ``/meshcat``) whose commands go to a CommandRecorder."""
    recorder = CommandRecorder()
    return meshcat.Visualizer(window=recorder), recorder


# ------------------------------------------------------------------ transforms


def transform_from_pose(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Homogeneous transforms of poses.

    Args:
        x: (..., 3) positions (m).
        q: (..., 4) orientations [w, x, y, z], normalised here (a stored quaternion off
            unit length by rounding would otherwise become a scale in the viewer).

    Returns:
        (..., 4, 4) [[R(q), x], [0, 1]].
    """
    x = np.asarray(x, dtype=float)
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    out = np.zeros(x.shape[:-1] + (4, 4))
    out[..., :3, :3] = matrix_from_quaternion(q)
    out[..., :3, 3] = x
    out[..., 3, 3] = 1.0
    return out


def _translation(p) -> np.ndarray:
    out = np.eye(4)
    out[:3, 3] = p
    return out


def _rotation_x_quarter() -> np.ndarray:
    """three.js cylinders run along y; this turns y into z."""
    out = np.eye(4)
    out[1:3, 1:3] = [[0.0, -1.0], [1.0, 0.0]]
    return out


def rotation_from_z_to(n: np.ndarray) -> np.ndarray:
    """(3, 3) the smallest rotation taking the z axis to the unit vector ``n`` (3,)."""
    n = np.asarray(n, dtype=float) / np.linalg.norm(n)
    z = np.array([0.0, 0.0, 1.0])
    c = float(z @ n)
    if c < -1.0 + _ANTIPARALLEL:
        return np.diag([1.0, -1.0, -1.0])
    k = skew(np.cross(z, n))
    return np.eye(3) + k + k @ k / (1.0 + c)  # Rodrigues with sin = |v|, 1 - cos = |v|^2 / (1 + c)


# ------------------------------------------------------------------ materials, shapes


def _hex(rgb) -> int:
    r, gg, b = (int(round(255 * min(max(float(c), 0.0), 1.0))) for c in rgb[:3])
    return (r << 16) | (gg << 8) | b


def _material(color: int, opacity: float = 1.0, **kwargs) -> g.MeshPhongMaterial:
    return g.MeshPhongMaterial(color=color, opacity=float(opacity), transparent=opacity < 1.0, **kwargs)


def shape_material(shape: Shape, body_index: int) -> g.MeshPhongMaterial:
    """The shape's RGBA colour, or the palette colour of its body."""
    if shape.color is None:
        return _material(BODY_PALETTE[body_index % len(BODY_PALETTE)])
    rgba = tuple(shape.color) + (1.0,) * (4 - len(shape.color))
    return _material(_hex(rgba), rgba[3])


def _capsule_parts(radius: float, height: float, material, prefix: str = "") -> list[tuple[str, object, np.ndarray]]:
    """A capsule along z: a cylinder of ``height`` and two spheres at its ends."""
    return [
        (f"{prefix}cylinder", g.Mesh(g.Cylinder(height, radius), material), _rotation_x_quarter()),
        (f"{prefix}cap_top", g.Mesh(g.Sphere(radius), material), _translation([0.0, 0.0, 0.5 * height])),
        (f"{prefix}cap_bottom", g.Mesh(g.Sphere(radius), material), _translation([0.0, 0.0, -0.5 * height])),
    ]


def pyramid_geometry(width: float, height: float) -> g.TriangularMeshGeometry:
    """A square pyramid as a triangle mesh: base at z = -height/4, apex at 3 height/4
    (the solid's centroid at the origin, as in ``model.shapes``), faces wound outwards."""
    a = 0.5 * width
    zb = -0.25 * height
    vertices = [[a, a, zb], [-a, a, zb], [-a, -a, zb], [a, -a, zb], [0.0, 0.0, 0.75 * height]]
    faces = [[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4], [0, 2, 1], [0, 3, 2]]
    return g.TriangularMeshGeometry(vertices, faces)


def _mesh_file(name: str, base_dir: Path | None) -> tuple[Path | None, list[Path]]:
    """The file a shape's ``file`` names (absolute, or relative to ``base_dir``, then the
    cwd), or None; and the places looked."""
    candidates = [Path(name).expanduser()]
    if not candidates[0].is_absolute():
        candidates = ([base_dir / name] if base_dir is not None else []) + [Path.cwd() / name]
    return next((p for p in candidates if p.is_file()), None), candidates


def scene_meshes(mech: Mechanism, base_dir: Path | None, budget: int = REPLAY_FACE_BUDGET) -> dict[str, TriangleMesh | str]:
    """Every mesh file the bodies' shapes and visuals name, read once and decimated so that
    the distinct meshes hold ``budget`` triangles in all (``mesh_files.face_targets``:
    a page stores each mesh once, however many bodies draw it).

    Returns:
        file name as the scene writes it -> its mesh, or a line saying why it is not drawn.
    """
    found: dict[str, TriangleMesh | str] = {}
    for body in mech.bodies:
        for shape in (body.shape, *body.visuals):
            name = str(shape.params.get("file", ""))
            if shape.kind != "mesh" or name in found:
                continue
            path, candidates = _mesh_file(name, base_dir)
            if Path(name).suffix.lower() not in MESH_SUFFIXES:
                found[name] = f"unsupported mesh format {Path(name).suffix.lower() or '(none)'!r} (supported: {', '.join(MESH_SUFFIXES)})"
            elif path is None:
                found[name] = "no such file (looked in " + ", ".join(str(p.parent) for p in candidates) + ")"
            else:
                try:
                    found[name] = read_mesh(path)
                except MeshFileError as exc:
                    found[name] = str(exc)
    read = {m.digest: m for m in found.values() if isinstance(m, TriangleMesh)}
    targets = face_targets({d: (m.face_count, 1) for d, m in read.items()}, budget)
    return {name: m if isinstance(m, str) else decimate(m, targets[m.digest]) for name, m in found.items()}


def _mesh_parts(shape: Shape, material, meshes: dict[str, TriangleMesh | str], body: str) -> tuple[list, list[str]]:
    """The mesh's triangles (scaled), or a placeholder and a warning."""
    name = str(shape.params.get("file", ""))
    mesh = meshes.get(name, "not read")
    if isinstance(mesh, TriangleMesh):
        scale = np.broadcast_to(np.asarray(shape.params.get("scale", 1.0), dtype=float), (3,))
        geometry = g.TriangularMeshGeometry(mesh.vertices, mesh.faces)
        # CAD parts are flat faces and sharp edges: shaded per face (three.js computes
        # smooth vertex normals otherwise, rounding every edge of a merged mesh)
        faceted = copy.copy(material)
        faceted.properties = {**material.properties, "flatShading": True}
        return [("mesh", g.Mesh(geometry, faceted), np.diag(np.append(scale, 1.0)))], []
    placeholder = g.Mesh(g.Box([PLACEHOLDER_SIZE] * 3), _material(PLACEHOLDER_COLOR, wireframe=True))
    return [("placeholder", placeholder, np.eye(4))], [
        f"warning: body {body!r}: mesh {name!r}: {mesh}; drawing a placeholder box"
    ]


def shape_parts(shape: Shape, material, meshes: dict[str, TriangleMesh | str] | None = None,
                body: str = "") -> tuple[list, list[str]]:
    """Geometry of a shape in its own frame (``meshes``: what ``scene_meshes`` read).

    Returns:
        ([(part name, meshcat Object, (4, 4) transform in the shape frame)], warnings).
    """
    p = shape.params
    kind = shape.kind
    if kind == "box":
        return [("box", g.Mesh(g.Box([float(s) for s in p["size"]]), material), np.eye(4))], []
    if kind == "sphere":
        return [("sphere", g.Mesh(g.Sphere(float(p["radius"])), material), np.eye(4))], []
    if kind == "cylinder":
        return [("cylinder", g.Mesh(g.Cylinder(float(p["height"]), float(p["radius"])), material), _rotation_x_quarter())], []
    if kind == "capsule":
        return _capsule_parts(float(p["radius"]), float(p["height"]), material), []
    if kind == "pyramid":
        return [("pyramid", g.Mesh(pyramid_geometry(float(p["width"]), float(p["height"])), material), np.eye(4))], []
    if kind == "mesh":
        return _mesh_parts(shape, material, meshes or {}, body)
    if kind == "frame":
        return [("triad", g.triad(TRIAD_LENGTH), np.eye(4))], []
    if kind == "combined":  # each part placed by its own offsets in the combined frame
        out, warnings = [], []
        for k, part in enumerate(p["parts"]):
            pose = transform_from_pose(np.asarray(part.position_offset, float), np.asarray(part.orientation_offset, float))
            sub, more = shape_parts(part, material, meshes, body)
            out += [(f"part{k}_{name}", obj, pose @ local) for name, obj, local in sub]
            warnings += more
        return out, warnings
    return [], [f"warning: body {body!r}: shape {kind!r} is not drawn"]


def _place_shape(node, shape: Shape, body_index: int, meshes: dict[str, TriangleMesh | str], body: str,
                 material=None) -> list[str]:
    """Put a shape's parts on ``node`` (under a body's node), placed by the shape's offsets,
    in ``material`` (None: shape_material); returns the warnings of shape_parts."""
    node.set_transform(transform_from_pose(shape.position_offset, shape.orientation_offset))
    parts, warnings = shape_parts(shape, material or shape_material(shape, body_index), meshes, body)
    for name, obj, local in parts:
        node[name].set_object(obj)
        node[name].set_transform(local)
    return warnings


def shape_radius(shape: Shape) -> float:
    """Radius (m) of a sphere about the body origin that holds the shape (for framing)."""
    p = shape.params
    if shape.kind == "combined":
        return max(shape_radius(part) for part in p["parts"]) + float(np.linalg.norm(shape.position_offset))
    r = {
        "box": lambda: 0.5 * float(np.linalg.norm(p["size"])),
        "sphere": lambda: float(p["radius"]),
        "cylinder": lambda: math.hypot(p["radius"], 0.5 * p["height"]),
        "capsule": lambda: p["radius"] + 0.5 * p["height"],
        "pyramid": lambda: max(math.hypot(p["width"] / math.sqrt(2), 0.25 * p["height"]), 0.75 * p["height"]),
    }.get(shape.kind, lambda: TRIAD_LENGTH)()
    return float(r) + float(np.linalg.norm(shape.position_offset))


def _segment(name: str) -> str:
    """A name as one meshcat path segment ('/' separates segments)."""
    return str(name).replace("/", "_") or "_"


def body_path(name: str) -> str:
    """Path of a body's node, relative to the visualizer root."""
    return f"{SCENE_ROOT}/bodies/{_segment(name)}"


CONTACTS_ROOT = f"{SCENE_ROOT}/contacts"


def contacts_path(name: str) -> str:
    """Path of the node that carries a body's contact markers (moved with the body)."""
    return f"{CONTACTS_ROOT}/{_segment(name)}"


class SetControl:
    """meshcat's ``set_control`` command (a control in the viewer's panel whose JavaScript
    callback the viewer evaluates; meshcat-python 0.3.2 has no method that sends it)."""

    def __init__(self, name: str, callback: str, value):
        self.name, self.callback, self.value = name, callback, value

    def lower(self) -> dict:
        # "path": meshcat's ViewerWindow.send sends [type, path, data]; the server keys the
        # controls it keeps for browsers that connect later by it (meshcat_server)
        return {"type": "set_control", "path": f"/controls/{self.name}", "name": self.name,
                "callback": self.callback, "value": self.value}


def add_toggle(vis: meshcat.Visualizer, label: str, path: str) -> None:
    """A checkbox ``label`` at the top of meshcat's panel that shows or hides the node ``path``
    (relative to the visualizer's root) and everything under it, as the node's own checkbox
    in the scene tree does (which follows it: SceneNode.set_property updates its display)."""
    segments = [s for s in (vis.path.lower() + "/" + path).split("/") if s]
    # evaluated inside the viewer's set_control: ``this`` is the viewer
    callback = (f"(value) => {{ this.scene_tree.find({json.dumps(segments)}).set_property('visible', value); "
                "this.set_dirty(); }")
    vis.window.send(SetControl(label, callback, True))


def contact_marker_bodies(mech: Mechanism) -> list[int]:
    """The bodies with contact markers: each contact's body, and the other body of a body-body
    contact (its collision shape), in body order."""
    return sorted({c.body for c in mech.contacts} | {c.other for c in mech.contacts if c.other >= 0})


def moving_paths(mech: Mechanism, contacts: bool) -> list[tuple[int, str]]:
    """(body index, node path) of every node that moves with a body: its own node, and with
    ``contacts`` drawn, its node under CONTACTS_ROOT."""
    out = [(b, body_path(body.name)) for b, body in enumerate(mech.bodies)]
    if contacts:
        out += [(b, contacts_path(mech.bodies[b].name)) for b in contact_marker_bodies(mech)]
    return out


# ------------------------------------------------------------------ the scene


def mechanism_from_run(run: StoredRun) -> Mechanism:
    """Rebuild the run's Mechanism from its ``scene`` attribute alone, checked against
    its datasets (``dojo_cli.scene.stored_run.run_mechanism``).

    Relative mesh files resolve against the storage file's folder. The controller is
    dropped: replay does not need it, and a schedule's table may not travel with the file.

    Raises:
        StorageError: the stored scene does not validate or build, or does not match the
            stored trajectory (its bodies, coordinates, contacts).
    """
    _, mech = run_mechanism(run, controller=False)
    return mech


def swept_radius(mech: Mechanism, x: np.ndarray) -> float:
    """Largest distance (m) from the origin any body's shape reaches over ``x`` (T+1, nb, 3)."""
    if x.size == 0:
        return 0.0
    reach = np.linalg.norm(x, axis=-1).max(axis=0)
    return float(max(reach[b] + shape_radius(body.shape) for b, body in enumerate(mech.bodies)))


def default_camera_position(radius: float) -> np.ndarray:
    """(3,) world position framing a sphere of ``radius`` (m) about the origin."""
    d = np.asarray(CAMERA_DIRECTION) / np.linalg.norm(CAMERA_DIRECTION)
    return d * max(CAMERA_MIN_DISTANCE, CAMERA_DISTANCE_FACTOR * radius)


def set_camera(vis: meshcat.Visualizer, position, zoom: float | None = None) -> None:
    """Place meshcat's default camera (it orbits the origin).

    The camera sits under ``/Cameras/default/rotated``, which meshcat turns by +90
    degrees about x (three.js is y-up): world (x, y, z) is (x, z, -y) there.

    Args:
        position: (3,) world frame (m).
        zoom: > 0, or None to leave it.
    """
    x, y, z = (float(c) for c in position)
    vis[CAMERA_PATH].set_property("position", [x, z, -y])
    if zoom is not None:
        vis[CAMERA_PATH].set_property("zoom", float(zoom))


DEFAULT_GROUND = {"normal": np.array([0.0, 0.0, 1.0]), "point": np.zeros(3)}
# Planes whose unit normals are np.allclose and whose offsets differ by less than this (m)
# are the same plane (a contact `against: ground` carries the scene's ground exactly).
_SAME_PLANE_OFFSET = 1e-12


def _same_plane(n: np.ndarray, p: np.ndarray, ground: dict) -> bool:
    m = np.asarray(ground["normal"], float)
    m = m / np.linalg.norm(m)
    return bool(np.allclose(n / np.linalg.norm(n), m)
                and abs(float(m @ (p - np.asarray(ground["point"], float)))) < _SAME_PLANE_OFFSET)


def touches_ground(mech: Mechanism, ground: dict = DEFAULT_GROUND) -> bool:
    """Whether a contact of the mechanism is against the ground (the scene's ``ground:``)."""
    return any(
        c.other < 0 and _same_plane(np.asarray(c.params["normal"], float), np.asarray(c.params["point"], float), ground)
        for c in mech.contacts
    )


def _halfspaces(mech: Mechanism, ground: dict = DEFAULT_GROUND) -> list[tuple[np.ndarray, np.ndarray]]:
    """The distinct half-spaces of the contacts other than the ground."""
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for c in mech.contacts:
        if c.other >= 0:
            continue
        n = np.asarray(c.params["normal"], dtype=float)
        p = np.asarray(c.params["point"], dtype=float)
        if _same_plane(n, p, ground):
            continue  # the ground, drawn anyway
        if not any(np.allclose(n, m) and abs(float(n @ (p - q))) < 1e-12 for m, q in out):
            out.append((n, p))
    return out


def scene_ground(run: StoredRun) -> dict:
    """The ground {normal (3,), point (3,)} of a run's scene (its ``ground:``; z >= 0 by default)."""
    from dojo_cli.scene.stored_run import run_scene

    return run_scene(run).ground.half_space()


def _plane_pose(n, p) -> np.ndarray:
    """The transform (4, 4) of a surface box whose top face lies in the plane through p (3,)
    with normal n (3,)."""
    n = np.asarray(n, float)
    pose = np.eye(4)
    pose[:3, :3] = rotation_from_z_to(n)
    pose[:3, 3] = np.asarray(p, float) - 0.5 * SURFACE_THICKNESS * n / np.linalg.norm(n)  # top face through p
    return pose


def _surface(size: float, color: int, opacity: float = 1.0):
    return g.Mesh(g.Box([size, size, SURFACE_THICKNESS]), _material(color, opacity, **SURFACE_DEPTH_OFFSET))


def set_scene(
    vis: meshcat.Visualizer,
    mech: Mechanism,
    options: ReplayOptions = ReplayOptions(),
    base_dir: Path | None = None,
    extent: float = 0.0,
) -> list[str]:
    """Draw the mechanism: ground, half-spaces, bodies (at identity), markers, camera.

    Args:
        vis: visualizer (a server's or a recording one); the scene goes under ``dojo/``.
        mech: the mechanism.
        options: what to draw, and the camera.
        base_dir: folder relative mesh files resolve against (also tried: the cwd).
        extent: radius (m) the bodies sweep, for the surface size and default camera.

    Returns:
        Warnings (one line each), e.g. a mesh file that was not found.
    """
    warnings: list[str] = []
    root = vis[SCENE_ROOT]
    root.delete()
    size = max(SURFACE_MIN_SIZE, 2.0 * (extent + SURFACE_MARGIN))
    plane = options.ground if options.ground is not None else DEFAULT_GROUND

    ground = root["world"]["ground"]
    if options.floor_color is not None:
        rgba = tuple(options.floor_color) + (1.0,) * (4 - len(options.floor_color))
        floor = _surface(options.floor_size or size, _hex(rgba), rgba[3])
    else:
        floor = _surface(options.floor_size or size, GROUND_COLOR,
                         1.0 if touches_ground(mech, plane) else GROUND_REFERENCE_OPACITY)
    ground.set_object(floor)
    ground.set_transform(_plane_pose(plane["normal"], plane["point"]))
    for i, (n, p) in enumerate(_halfspaces(mech, plane)):
        node = root["world"][f"halfspace{i}"]
        node.set_object(_surface(size, HALFSPACE_COLOR, HALFSPACE_OPACITY))
        node.set_transform(_plane_pose(n, p))

    if options.surface is not None:
        set_surface(root, options.surface, 0.5 * (options.floor_size or size))
    if options.light is not None:
        set_light(vis, options.light)

    meshes = scene_meshes(mech, base_dir)
    override = None
    if options.color is not None:  # Dojo's visualize(color=): one colour for every body
        rgba = tuple(options.color) + (1.0,) * (4 - len(options.color))
        override = _material(_hex(rgba), rgba[3])
    for b, body in enumerate(mech.bodies):
        node = vis[body_path(body.name)]
        warnings += _place_shape(node["shape"], body.shape, b, meshes, body.name, override)
        # a URDF link's further visual elements, each on its own node like the shape
        for k, visual in enumerate(body.visuals):
            warnings += _place_shape(node[f"visual{k}"], visual, b, meshes, body.name, override)
        if options.frames:
            node["frame"].set_object(g.triad(TRIAD_LENGTH))
        node.set_transform(np.eye(4))

    if options.joints:
        marker = g.Mesh(g.Sphere(JOINT_MARKER_RADIUS), _material(JOINT_COLOR))
        for j in mech.joints:
            child = vis[body_path(mech.bodies[j.child].name)]["joints"][_segment(j.name)]
            child.set_object(marker)
            child.set_transform(_translation(j.child_vertex))
            if j.parent == ORIGIN:
                parent = root["joints"][_segment(j.name)]
            else:
                parent = vis[body_path(mech.bodies[j.parent].name)]["joints"][_segment(j.name) + "_parent"]
            parent.set_object(marker)
            parent.set_transform(_translation(j.parent_vertex))

    if options.contacts:
        material = _material(CONTACT_COLOR, CONTACT_OPACITY)
        for c in mech.contacts:
            node = vis[contacts_path(mech.bodies[c.body].name)][_segment(c.name)]
            node.set_object(g.Mesh(g.Sphere(max(float(c.radius), CONTACT_POINT_RADIUS)), material))
            node.set_transform(_translation(c.offset))
            if c.kind != "halfspace":
                other = vis[contacts_path(mech.bodies[c.other].name)][_segment(c.name) + "_" + c.kind]
                _draw_collision_shape(other, c.kind, c.params, material)
        for b in contact_marker_bodies(mech):
            vis[contacts_path(mech.bodies[b].name)].set_transform(np.eye(4))
        if mech.contacts:
            add_toggle(vis, "contacts", CONTACTS_ROOT)

    set_camera(vis, options.camera if options.camera is not None else default_camera_position(extent), options.zoom)
    return warnings


def _draw_collision_shape(node: meshcat.Visualizer, kind: str, params: dict, material) -> None:
    """The other body's collision shape of a body-body contact, in that body's frame."""
    if kind == "sphere":
        node.set_object(g.Mesh(g.Sphere(float(params["radius"])), material))
        node.set_transform(_translation(params["offset"]))
    elif kind == "capsule":
        e1, e2 = np.asarray(params["end1"], float), np.asarray(params["end2"], float)
        pose = np.eye(4)
        pose[:3, :3] = rotation_from_z_to(e2 - e1)
        pose[:3, 3] = 0.5 * (e1 + e2)
        node.set_transform(pose)
        for name, obj, local in _capsule_parts(float(params["radius"]), float(np.linalg.norm(e2 - e1)), material):
            node[name].set_object(obj)
            node[name].set_transform(local)
    elif kind == "box":
        node.set_object(g.Mesh(g.Box([float(2 * h) for h in params["half_sizes"]]), material))
        node.set_transform(_translation(params["centre"]))


# ------------------------------------------------------------------ playback


def set_body_transforms(vis: meshcat.Visualizer, mech: Mechanism, x: np.ndarray, q: np.ndarray,
                        contacts: bool = False) -> np.ndarray:
    """Move every body to one state.

    Args:
        x: (nb, 3) centre-of-mass positions, world frame.
        q: (nb, 4) orientations [w, x, y, z], body to world.
        contacts: the contact markers are drawn (their nodes move too: ``moving_paths``).

    Returns:
        (nb, 4, 4) the transforms sent.
    """
    transforms = transform_from_pose(x, q)
    for b, path in moving_paths(mech, contacts):
        vis[path].set_transform(transforms[b])
    return transforms


def set_frame(vis: meshcat.Visualizer, mech: Mechanism, traj: Trajectory, k: int, contacts: bool = False) -> np.ndarray:
    """Move every body to state ``k`` (0..T) of a run; returns the (nb, 4, 4) transforms."""
    if not -len(traj.time) <= k < len(traj.time):
        raise InputError(f"frame {k}: the run holds states 0..{len(traj.time) - 1}")
    return set_body_transforms(vis, mech, traj.x[k], traj.q[k], contacts)


# Frames of one animation at most: a million frames is hours at 60 fps and a page of
# hundreds of MB per body; beyond it is a typo in --speed or --fps.
MAX_FRAMES = 1_000_000


def frame_indices(time: np.ndarray, fps: float, speed: float) -> np.ndarray:
    """Stored state shown by each animation frame: frame f shows the state nearest to
    simulated time t0 + f speed / fps, for every such time up to the last state.

    Args:
        time: (T+1,) stored times (s), increasing.

    Returns:
        (n,) int state indices.

    Raises:
        InputError: more than MAX_FRAMES frames.
    """
    time = np.asarray(time, dtype=float)
    if len(time) < 2:
        return np.zeros(len(time), dtype=int)
    step = speed / fps
    # 1e-9: (t_end - t0) / step landing just below an integer by rounding
    frames = math.floor((time[-1] - time[0]) / step + 1e-9) + 1.0 if step > 0 else math.inf
    if not frames <= MAX_FRAMES:  # (a tiny --speed or a huge --fps: checked before any array is made)
        raise InputError(
            f"--speed {speed:g} at --fps {fps:g}: {frames:.3g} animation frames for {time[-1] - time[0]:g} s, "
            f"more than {MAX_FRAMES:,}; raise --speed or lower --fps"
        )
    n = int(frames)
    t = time[0] + np.arange(n) * step
    right = np.clip(np.searchsorted(time, t), 1, len(time) - 1)
    left = right - 1
    return np.where(t - time[left] <= time[right] - t, left, right)


def animation_from_run(
    vis: meshcat.Visualizer, mech: Mechanism, traj: Trajectory, fps: float = DEFAULT_FPS, speed: float = 1.0,
    arrows=None, contacts: bool = False,
) -> tuple[Animation, np.ndarray]:
    """A meshcat Animation of the body transforms, one keyframe per animation frame.

    Args:
        vis: the visualizer whose root the animation paths hang from.
        fps: frames per wall-clock second (the clip's frame rate).
        speed: simulated seconds per wall second.
        arrows: a viz.arrows.ArrowSet whose arrows are keyed too, or None.
        contacts: the contact markers are drawn (their nodes are keyed too).

    Returns:
        (animation, (n,) stored state index of each frame).
    """
    indices = frame_indices(traj.time, fps, speed)
    transforms = transform_from_pose(traj.x[indices], traj.q[indices])  # (n, nb, 4, 4)
    animation = Animation(default_framerate=fps)
    paths = moving_paths(mech, contacts)
    for f in range(len(indices)):
        with animation.at_frame(vis, f) as frame:
            for b, path in paths:
                frame[path].set_transform(transforms[f, b])
            if arrows is not None:
                arrows.key(frame, mech, *stored_arrows(arrows, mech, traj, int(indices[f])))
    return animation, indices


def stored_arrows(arrows, mech: Mechanism, traj: Trajectory, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(origins, arrows) (n, 3) of state k of a run (viz.arrows.ArrowSet.vectors): the contact
    impulses of the step that reached it (row k - 1; none for state 0), the knot velocities."""
    z = np.concatenate([traj.x[k], traj.v[k], traj.q[k], traj.omega[k]], axis=1).reshape(-1)
    normal = friction = None
    if k > 0 and traj.contact_normal_impulse is not None:
        normal = traj.contact_normal_impulse[k - 1]
        friction = traj.contact_friction_impulse[k - 1]
    return arrows.vectors(mech, z, normal, friction, v=traj.v[k])


def load_run(
    vis: meshcat.Visualizer,
    mech: Mechanism,
    run: StoredRun,
    options: ReplayOptions = ReplayOptions(),
    play: bool = True,
) -> Replay:
    """Draw the scene, put the bodies at the first state and hand meshcat the animation.

    Raises:
        InputError: an option out of range, or a run without any state.
    """
    options.check()
    traj = run.trajectory
    if len(traj.time) == 0:
        raise InputError(f"{run.path}: the run holds no state to replay")
    if options.name is not None:  # Dojo's visualize(name=): the whole replay under that node
        vis = vis[options.name]
    from dojo_cli.viz.arrows import arrow_set  # (arrows.py builds on this module)

    if options.ground is None:
        options = dataclasses.replace(options, ground=scene_ground(run))
    warnings = set_scene(vis, mech, options, Path(run.path).resolve().parent, swept_radius(mech, traj.x))
    arrows = arrow_set(mech, options.arrows)
    if arrows is not None:
        if arrows.forces and mech.contacts and traj.contact_normal_impulse is None and len(traj.time) > 1:
            warnings.append(f"warning: {run.path}: no contact impulses stored; the force arrows stay hidden")
        arrows.draw(vis, mech)
        arrows.place(vis, mech, *stored_arrows(arrows, mech, traj, 0))
    set_frame(vis, mech, traj, 0, options.contacts)
    animation, indices = animation_from_run(vis, mech, traj, options.fps, options.speed, arrows, options.contacts)
    vis.set_animation(animation, play=play, repetitions=math.inf if options.loop else 1)
    return Replay(indices, warnings, None if arrows is None or not arrows.forces else arrows.force_scale)


def status_note(run: StoredRun) -> str | None:
    """A line saying the run did not complete (killed, interrupted, failed, failed steps:
    ``StoredRun.status_note``), or None when it did."""
    note = run.status_note()
    if note is None:
        return None
    t = run.trajectory.time[-1] if len(run.trajectory.time) else 0.0
    return f"{note}; replaying the states it holds (t = 0 .. {t:g} s)"


# ------------------------------------------------------------------ standalone HTML


_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ margin: 0; }}
#meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}
#dojo-caption {{ position: absolute; left: 8px; bottom: 44px; color: #fff; font: 13px sans-serif;
  text-shadow: 0 0 3px #000; pointer-events: none; }}
#dojo-player {{ position: absolute; left: 0; right: 0; bottom: 0; height: 36px; display: flex;
  align-items: center; gap: 8px; padding: 0 8px; background: rgba(0, 0, 0, 0.55); color: #fff;
  font: 13px sans-serif; }}
#dojo-player[hidden] {{ display: none; }}
#dojo-play {{ width: 44px; font: 15px sans-serif; }}
#dojo-time {{ flex: 1; min-width: 80px; }}
#dojo-clock {{ min-width: 110px; font-variant-numeric: tabular-nums; }}
</style>
</head>
<body>
<div id="meshcat-pane"></div>
<div id="dojo-caption">{caption}</div>
<div id="dojo-player" hidden>
  <button id="dojo-play" type="button" title="play / pause (space)" aria-label="pause">&#10074;&#10074;</button>
  <input id="dojo-time" type="range" min="0" max="0" step="any" value="0" title="simulated time" aria-label="time">
  <span id="dojo-clock">t = 0 s</span>
  <label>speed <select id="dojo-speed" title="playback speed">
    <option value="0.1">0.1x</option><option value="0.25">0.25x</option><option value="0.5">0.5x</option>
    <option value="1" selected>1x</option><option value="2">2x</option><option value="4">4x</option>
  </select></label>
</div>
<script id="dojo-info" type="application/json">{info}</script>
<pre id="dojo-viewer-state" hidden></pre>
<script>
{viewer_script}
</script>
<script id="dojo-replay-arrays" type="application/json">{arrays}</script>
<script id="dojo-replay-commands" type="application/json">{commands}</script>
<script>
(function () {{
  // meshcat's viewer, fed the recorded commands (msgpack, base64) instead of a websocket.
  var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
  var commands = JSON.parse(document.getElementById("dojo-replay-commands").textContent);
  // Packed arrays (mesh vertices and triangles) are stored once in dojo-replay-arrays and
  // named in the commands by {{"dojo_array": index}}: put each back, as the typed array
  // meshcat's msgpack decoding would have made, before the viewer handles the command
  // (three.js copies the arrays it is given, so commands may share one).
  var kinds = {{Uint8Array: Uint8Array, Int32Array: Int32Array, Uint32Array: Uint32Array, Float32Array: Float32Array}};
  var arrays = JSON.parse(document.getElementById("dojo-replay-arrays").textContent).map(function (a) {{
    var text = atob(a.data);
    var bytes = new Uint8Array(text.length);
    for (var j = 0; j < text.length; j++) bytes[j] = text.charCodeAt(j);
    return new kinds[a.type](bytes.buffer);
  }});
  function resolve(node) {{
    for (var key in node) {{
      var value = node[key];
      if (value === null || typeof value !== "object" || ArrayBuffer.isView(value)) continue;
      if (typeof value.dojo_array === "number") node[key] = arrays[value.dojo_array];
      else resolve(value);
    }}
  }}
  var handle = viewer.handle_command.bind(viewer);
  viewer.handle_command = function (command) {{ resolve(command); handle(command); }};
  var applied = 0;
  for (var i = 0; i < commands.length; i++) {{
    var text = atob(commands[i]);
    var bytes = new Uint8Array(text.length);
    for (var j = 0; j < text.length; j++) bytes[j] = text.charCodeAt(j);
    viewer.handle_command_bytearray(bytes);
    applied++;
  }}
  // What the viewer actually loaded, for scripts and tests (chromium --dump-dom).
  var actions = viewer.animator.actions;
  var state = {{
    applied: applied,
    tracks: actions.length,
    frames: actions.length ? actions[0].getClip().tracks[0].times.length : 0,
    duration: viewer.animator.duration,
    webgl: !!viewer.renderer.getContext()
  }};
  document.getElementById("dojo-viewer-state").textContent = JSON.stringify(state);
  window.viewer = viewer;
}})();
</script>
<script>
{player_script}
</script>
</body>
</html>
"""

# The page's player bar (``_PAGE``'s #dojo-player): play/pause, a time slider that scrubs, the
# simulated time, and the playback speed, over meshcat's Animator (its clock, actions and
# mixer: the same animation meshcat's own panel plays, so the two stay in step). Offline: no
# library beyond the viewer's own script. The slider's value is the animation's time a (s of
# wall time at 1x); the clock shows the simulated time t0 + a speed (dojo-info's t0, speed).
PLAYER_SCRIPT = r"""
(function () {
  var viewer = window.viewer, animator = viewer.animator;
  var info = JSON.parse(document.getElementById("dojo-info").textContent);
  var bar = document.getElementById("dojo-player"), button = document.getElementById("dojo-play");
  var slider = document.getElementById("dojo-time"), clock = document.getElementById("dojo-clock");
  var speed = document.getElementById("dojo-speed");
  var duration = animator.duration;
  if (!animator.actions.length || !(duration > 0)) return;  // nothing to play: no bar
  bar.hidden = false;
  slider.max = String(duration);
  var t0 = typeof info.t0 === "number" ? info.t0 : 0, rate = typeof info.speed === "number" ? info.speed : 1;
  var digits = Math.max(3, Math.ceil(-Math.log10(rate / (info.fps || 60))));

  function now() {  // the animation's time (s): the furthest action's
    return animator.actions.reduce(function (m, a) { return Math.max(m, a.time); }, 0);
  }
  function show(a) {
    slider.value = String(a);
    clock.textContent = "t = " + (t0 + a * rate).toFixed(digits) + " s";
    button.innerHTML = animator.playing ? "&#10074;&#10074;" : "&#9654;";
    button.setAttribute("aria-label", animator.playing ? "pause" : "play");
  }
  function play() {
    if (now() >= duration) animator.actions.forEach(function (a) { a.reset(); });  // from the start again
    animator.actions.forEach(function (a) { a.paused = false; });
    animator.play();
  }
  function toggle() {
    if (animator.playing) animator.pause(); else play();
    show(now());
  }
  button.addEventListener("click", toggle);
  slider.addEventListener("input", function () {  // scrubbing pauses, and shows that time
    if (animator.playing) animator.pause();
    var a = Math.min(Math.max(parseFloat(slider.value), 0), duration);
    animator.seek(a);
    show(a);
  });
  speed.addEventListener("change", function () { animator.mixer.timeScale = parseFloat(speed.value); });
  document.addEventListener("keydown", function (e) {
    if (e.code === "Space" && e.target === document.body) { e.preventDefault(); toggle(); }
  });
  // meshcat's Animator, at the end of a clip, pauses and resets its actions to time 0 without
  // redrawing: the picture stays at the last frame, so the bar stays at the end too
  var was = animator.playing;
  function tick() {
    var a = now();
    if (was && !animator.playing && a === 0) { animator.seek(duration); a = duration; }
    was = animator.playing;
    if (was || a !== parseFloat(slider.value)) show(a);
    requestAnimationFrame(tick);
  }
  show(now());
  requestAnimationFrame(tick);
  window.dojoPlayer = {duration: duration, now: now};
})();
"""


# Typed arrays meshcat packs (msgpack extension types, ``meshcat.geometry.threejs_type``)
# that a page stores once and names from its commands.
SHARED_ARRAY_TYPES = ("Uint8Array", "Int32Array", "Uint32Array", "Float32Array")


def shared_arrays(commands: list[bytes]) -> tuple[list[bytes], list[dict]]:
    """Move the packed arrays of the commands (meshes' vertices and triangles) into one
    table, each distinct array once (by content): a mesh drawn by four legs, or drawn again
    by a second replay, costs the page once.

    Returns:
        (the commands, each array replaced by ``{"dojo_array": index}``; the table, one
        ``{"type": "Float32Array" ..., "data": base64}`` per distinct array).
    """
    table: list[dict] = []
    index: dict[tuple[str, bytes], int] = {}

    def swap(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, umsgpack.Ext) and node.get("type") in SHARED_ARRAY_TYPES:
                    k = index.setdefault((node["type"], value.data), len(table))
                    if k == len(table):
                        table.append({"type": node["type"], "data": base64.b64encode(value.data).decode("ascii")})
                    node[key] = {"dojo_array": k}
                else:
                    swap(value)
        elif isinstance(node, list):
            for value in node:
                swap(value)

    out = []
    for command in commands:
        decoded = umsgpack.unpackb(command)
        if decoded.get("type") == "set_object":
            swap(decoded)
            command = umsgpack.packb(decoded)
        out.append(command)
    return out, table


def viewer_html(commands: list[bytes], title: str = "dojo replay", caption: str = "", info: dict | None = None) -> str:
    """A standalone page: meshcat's viewer script inlined, then ``commands`` (msgpack
    bytes, as recorded by CommandRecorder) replayed into it. Nothing is fetched: the
    script, the commands (base64 in an inline JSON script), the arrays they share (mesh
    triangles, each stored once: ``shared_arrays``) and the viewer's own images (data:
    URIs in its CSS) are all in the file.

    The page carries ``<script id="dojo-info" type="application/json">`` (``info``: what
    was exported) and, once its script has run, ``<pre id="dojo-viewer-state">`` (JSON:
    the commands applied, the animation tracks, frames and duration the viewer loaded,
    whether WebGL is available). Under the viewer, a player bar (PLAYER_SCRIPT: play/pause,
    a time slider, the simulated time, the speed) when the commands hold an animation.
    """
    script = VIEWER_SCRIPT.read_text(encoding="utf-8")
    if "</script" in script.lower():  # would end the inline <script> early
        raise RuntimeError(f"{VIEWER_SCRIPT}: contains '</script' and cannot be inlined")
    commands, arrays = shared_arrays(commands)
    encoded = json.dumps([base64.b64encode(c).decode("ascii") for c in commands])
    facts = json.dumps(info or {}).replace("<", "\\u003c")  # no "</script>" inside the JSON
    return _PAGE.format(
        title=html_text.escape(title), caption=html_text.escape(caption), viewer_script=script, commands=encoded,
        arrays=json.dumps(arrays), info=facts, player_script=PLAYER_SCRIPT,
    )


def export_html(
    run: StoredRun,
    path: str | Path,
    fps: float = DEFAULT_FPS,
    speed: float = 1.0,
    mech: Mechanism | None = None,
    options: ReplayOptions | None = None,
) -> Replay:
    """Write a standalone HTML page that plays the run (no server, no network).

    Args:
        run: the stored run.
        path: the page to write.
        fps, speed: playback (used when ``options`` is None).
        mech: the run's mechanism (default: rebuilt from the run's scene).
        options: what to draw; its fps and speed win over the arguments.

    Raises:
        StorageError: the page cannot be written.
        SceneError, InputError: as ``mechanism_from_run`` and ``load_run``.
    """
    options = options or ReplayOptions(fps=fps, speed=speed)
    mech = mech if mech is not None else mechanism_from_run(run)
    vis, recorder = recording_visualizer()
    replay = load_run(vis, mech, run, options)
    name = run.attrs.get("scene_name", mech.name)
    caption = f"{name}: {run.steps_completed} steps, t = 0 .. {run.trajectory.time[-1]:g} s, speed {options.speed:g}"
    if run.status != STATUS_COMPLETE:
        caption += f" ({run.status} after {run.steps_completed} steps)"
    info = {
        "scene": name, "status": run.status, "steps_completed": run.steps_completed, "frames": replay.frame_count,
        "fps": options.fps, "speed": options.speed, "t0": float(run.trajectory.time[0]), "states": replay.indices.tolist(),
        "arrows": list(options.arrows), "force_scale": replay.force_scale,
    }
    page = viewer_html(recorder.commands, f"dojo replay: {name}", caption, info)
    try:
        Path(path).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return replay
