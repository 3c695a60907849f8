"""Replay in meshcat: the scene tree of a Mechanism, its animation, standalone HTML.

This module is the only meshcat user and the only place where orientations
leave the [w, x, y, z] convention: meshcat is always handed 4x4 homogeneous
transforms built from ``matrix_from_quaternion``, never quaternions.

Scene tree: ``/dojo/bodies/<body>`` carries the body pose; its child
``shape`` carries the shape's offset; ``/dojo/world`` holds the ground and the
half-spaces; optional ``frame`` (triads), ``contacts/<name>`` (contact spheres)
on the bodies and ``/dojo/joints/<name>`` markers.

Standalone HTML: meshcat's viewer script (``meshcat/viewer/dist/main.min.js``)
is inlined and every command is embedded as a base64 ``data:`` URL, as
meshcat's own server does for its static export, so the page fetches nothing
from outside the file. The commands are recorded by a window object that packs
them instead of sending them, so no server is needed for the export.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.mechanism import Mechanism, axis_basis
from dojo_cli.model.shapes import Shape

DEFAULT_COLOR = (0.55, 0.6, 0.75, 1.0)
GROUND_COLOR = 0xB0B0B0
CONTACT_COLOR = 0xFF8C00
JOINT_COLOR = 0xD62728
# Size of the drawn ground and half-space slabs (m) and their thickness.
SURFACE_SIZE = 20.0
SURFACE_THICKNESS = 0.01


def transform(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """4x4 homogeneous transform of position x (3,) and orientation q (4,) [w,x,y,z]."""
    out = np.eye(4)
    out[:3, :3] = matrix_from_quaternion(np.asarray(q, dtype=float))
    out[:3, 3] = x
    return out


def _hex(color) -> int:
    r, g, b = (int(round(255 * float(c))) for c in color[:3])
    return (r << 16) | (g << 8) | b


def _material(color, opacity=None):
    import meshcat.geometry as g

    color = DEFAULT_COLOR if color is None else color
    alpha = float(color[3]) if len(color) > 3 else 1.0
    alpha = alpha if opacity is None else opacity
    return g.MeshLambertMaterial(color=_hex(color), opacity=alpha, transparent=alpha < 1.0)


# meshcat's cylinder runs along its y axis; our shapes' axis is z.
_Y_TO_Z = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])


def shape_objects(shape: Shape, base_dir: Path | None = None) -> list[tuple[object, np.ndarray]]:
    """meshcat geometries of a shape and their transforms in the shape's frame.

    Returns:
        [(geometry, (4,4) transform)], empty for a frame shape (drawn as a triad elsewhere).
    """
    import meshcat.geometry as g

    p = shape.params
    kind = shape.kind
    if kind == "box":
        return [(g.Box(list(p["size"])), np.eye(4))]
    if kind == "sphere":
        return [(g.Sphere(p["radius"]), np.eye(4))]
    if kind == "cylinder":
        return [(g.Cylinder(p["height"], p["radius"]), _Y_TO_Z)]
    if kind == "capsule":
        r, h = p["radius"], p["height"]
        ends = []
        for z in (-h / 2, h / 2):
            t = np.eye(4)
            t[2, 3] = z
            ends.append((g.Sphere(r), t))
        return [(g.Cylinder(h, r), _Y_TO_Z)] + ends
    if kind == "pyramid":
        w, h = p["width"], p["height"]
        b, top = -h / 4, 3 * h / 4  # base at -h/4: the centroid at the origin
        v = np.array([[-w / 2, -w / 2, b], [w / 2, -w / 2, b], [w / 2, w / 2, b], [-w / 2, w / 2, b], [0, 0, top]])
        f = np.array([[0, 2, 1], [0, 3, 2], [0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]])
        return [(g.TriangularMeshGeometry(v, f), np.eye(4))]
    if kind == "mesh":
        path = mesh_path(shape, base_dir)
        if path is None:
            return [(g.Box([0.05, 0.05, 0.05]), np.eye(4))]  # placeholder; replay warns
        loader = {".obj": g.ObjMeshGeometry, ".stl": g.StlMeshGeometry, ".dae": g.DaeMeshGeometry}[path.suffix.lower()]
        scale = np.eye(4)
        scale[:3, :3] = np.diag(np.broadcast_to(np.asarray(p.get("scale", 1.0), float), (3,)))
        return [(loader.from_file(str(path)), scale)]
    return []


MESH_SUFFIXES = (".obj", ".stl", ".dae")


def mesh_path(shape: Shape, base_dir: Path | None) -> Path | None:
    """The readable mesh file of a mesh shape, or None when missing or of an unknown type."""
    path = Path(shape.params["file"])
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    return path if path.suffix.lower() in MESH_SUFFIXES and path.is_file() else None


class RecordingWindow:
    """A meshcat window that keeps the packed commands instead of sending them."""

    web_url = None

    def __init__(self):
        self.commands: list[bytes] = []

    def send(self, command) -> None:
        import umsgpack

        self.commands.append(umsgpack.packb(command.lower()))


def recording_visualizer():
    """A meshcat Visualizer writing into a RecordingWindow (no server)."""
    import meshcat

    return meshcat.Visualizer(window=RecordingWindow())


class ReplayScene:
    """A Mechanism drawn in a meshcat visualizer.

    Args:
        vis: a meshcat.Visualizer (a server's, or recording_visualizer()).
        mech: the mechanism.
        contacts, joints, frames: draw contact spheres, joint markers, body triads.
        base_dir: folder for relative mesh paths.
    """

    def __init__(self, vis, mech: Mechanism, contacts=False, joints=False, frames=False, base_dir=None):
        import meshcat.geometry as g

        self.vis, self.mech = vis, mech
        self.root = vis["dojo"]
        self.missing_meshes: list[str] = []
        for b in mech.bodies:
            node = self.root["bodies"][b.name]
            objects = shape_objects(b.shape, base_dir)
            if b.shape.kind == "mesh" and mesh_path(b.shape, base_dir) is None:
                self.missing_meshes.append(str(b.shape.params.get("file")))
            offset = transform(np.asarray(b.shape.position_offset), np.asarray(b.shape.orientation_offset))
            for i, (geom, t) in enumerate(objects):
                part = node["shape"][str(i)]
                part.set_object(geom, _material(b.shape.color))
                part.set_transform(offset @ t)
            if frames or b.shape.kind == "frame":
                node["frame"].set_object(g.triad(0.2))
        self._surfaces(g)
        if contacts:
            for c in mech.contacts:
                node = self.root["bodies"][mech.bodies[c.body].name]["contacts"][c.name]
                node.set_object(g.Sphere(max(c.radius, 0.01)), g.MeshLambertMaterial(color=CONTACT_COLOR, opacity=0.5, transparent=True))
                node.set_transform(transform(c.offset, np.array([1.0, 0, 0, 0])))
        self.joints = joints
        if joints:
            for j in mech.joints:
                self.root["joints"][j.name].set_object(g.Sphere(0.03), g.MeshLambertMaterial(color=JOINT_COLOR))

    def _surfaces(self, g) -> None:
        """The ground (when a contact uses it) and every other half-space as thin slabs."""
        planes = {}
        for c in self.mech.contacts:
            if c.kind == "halfspace":
                n = np.asarray(c.params["normal"], float)
                key = (tuple(np.round(n, 9)), tuple(np.round(c.params["point"], 9)))
                planes[key] = (n, np.asarray(c.params["point"], float))
        if not planes:
            planes[((0, 0, 1), (0, 0, 0))] = (np.array([0.0, 0, 1]), np.zeros(3))
        for i, (n, point) in enumerate(planes.values()):
            # the slab's z axis along n (columns: in-plane basis, normal); top face in the plane
            t = np.eye(4)
            t[:3, :3] = axis_basis(n).T
            t[:3, 3] = point - n * SURFACE_THICKNESS / 2
            node = self.root["world"][f"surface{i}"]
            node.set_object(g.Box([SURFACE_SIZE, SURFACE_SIZE, SURFACE_THICKNESS]), g.MeshLambertMaterial(color=GROUND_COLOR))
            node.set_transform(t)

    def body_transforms(self, x: np.ndarray, q: np.ndarray) -> dict[str, np.ndarray]:
        """{body name: (4,4)} for positions x (nb,3) and orientations q (nb,4)."""
        return {b.name: transform(x[i], q[i]) for i, b in enumerate(self.mech.bodies)}

    def joint_positions(self, x: np.ndarray, q: np.ndarray) -> np.ndarray:
        """(nj, 3) world positions of the joints' points on their child bodies."""
        rot = matrix_from_quaternion(q[self.mech.child])
        return x[self.mech.child] + np.einsum("jik,jk->ji", rot, self.mech.child_vertex)

    def set_state(self, x: np.ndarray, q: np.ndarray, target=None) -> None:
        """Place every body (and joint marker) at x (nb,3), q (nb,4), in ``target``
        (the visualizer, or an animation frame)."""
        root = (target or self.vis)["dojo"]
        for name, t in self.body_transforms(x, q).items():
            root["bodies"][name].set_transform(t)
        if self.joints:
            for j, p in zip(self.mech.joints, self.joint_positions(x, q)):
                t = np.eye(4)
                t[:3, 3] = p
                root["joints"][j.name].set_transform(t)

    def animation(self, time: np.ndarray, x: np.ndarray, q: np.ndarray, fps: float = 60.0, speed: float = 1.0):
        """A meshcat Animation of stored states, one frame every 1/fps s of wall time.

        Frames sample the stored states at simulated times k * speed / fps (the
        nearest stored state at or before each time).

        Returns:
            (animation, state indices (F,)).
        """
        from meshcat.animation import Animation

        duration = float(time[-1] - time[0])
        n_frames = int(np.floor(duration * fps / speed + 1e-9)) + 1
        sim_times = time[0] + np.arange(n_frames) * speed / fps
        idx = np.clip(np.searchsorted(time, sim_times + 1e-12, side="right") - 1, 0, len(time) - 1)
        anim = Animation(default_framerate=fps)
        for f, k in enumerate(idx):
            with anim.at_frame(self.vis, f) as frame:
                self.set_state(x[k], q[k], frame)
        return anim, idx


def standalone_html(commands: list[bytes], info: dict | None = None) -> str:
    """A self-contained page: meshcat's viewer script inlined and the commands as data: URLs.

    Args:
        commands: packed meshcat commands in order.
        info: JSON-serialisable facts embedded for readers and tests (frames, fps...).
    """
    import meshcat

    viewer_js = (Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js").read_text(encoding="utf-8")
    calls = "\n".join(
        "commands.push(fetch('data:application/octet-binary;base64,{}').then(r => r.arrayBuffer()));".format(
            base64.b64encode(c).decode("ascii")
        )
        for c in commands
    )
    # Commands are applied in order once all are decoded (fetches may resolve out of order).
    return f"""<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>dojo replay</title>
<style>body {{ margin: 0; }} #meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}</style>
</head>
<body>
<div id="meshcat-pane"></div>
<script id="dojo-info" type="application/json">{json.dumps(info or {})}</script>
<script>{viewer_js}</script>
<script>
var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
var commands = [];
{calls}
Promise.all(commands).then(buffers => {{
  for (const b of buffers) viewer.handle_command_bytearray(new Uint8Array(b));
  document.body.setAttribute("data-dojo-loaded", buffers.length);
}});
</script>
</body>
</html>
"""


def decode_commands(html: str) -> list[dict]:
    """The meshcat commands embedded in a standalone page (for checks and tests)."""
    import re

    import umsgpack

    return [umsgpack.unpackb(base64.b64decode(m)) for m in re.findall(r"base64,([A-Za-z0-9+/=]+)'", html)]


def camera_commands(vis, position=None, zoom=None) -> None:
    """Place meshcat's default camera at ``position`` (3,) world frame (z up) and set its zoom."""
    cam = vis["/Cameras/default/rotated/<object>"]
    if position is not None:
        x, y, z = (float(v) for v in position)
        cam.set_property("position", [x, z, -y])  # three.js is y-up under meshcat's "rotated" node
    if zoom is not None:
        cam.set_property("zoom", float(zoom))


def replay_commands(mech: Mechanism, time, x, q, fps=60.0, speed=1.0, contacts=False, joints=False, frames=False,
                    camera=None, zoom=None, base_dir=None, vis=None):
    """Draw a mechanism and its stored motion into ``vis`` (default: a recording visualizer).

    Returns:
        (visualizer, ReplayScene, state indices of the animation frames).
    """
    vis = vis if vis is not None else recording_visualizer()
    scene = ReplayScene(vis, mech, contacts, joints, frames, base_dir)
    scene.set_state(x[0], q[0])
    anim, idx = scene.animation(np.asarray(time), np.asarray(x), np.asarray(q), fps, speed)
    vis.set_animation(anim, play=True, repetitions=1)
    if camera is not None or zoom is not None:
        camera_commands(vis, camera, zoom)
    return vis, scene, idx
