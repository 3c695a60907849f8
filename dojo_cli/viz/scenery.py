"""Dojo's visualisation options for a replay beyond the bodies: ``set_light!`` (the lights of
meshcat's scene tree) and ``set_surface!`` (a function surface, e.g. a terrain z = f(x, y)),
beside the replay's ``visualize(color=, name=)`` options (meshcat_scene.ReplayOptions; docs/replay.md, "Colour, name,
lights, surface").

Dojo (src/visuals/set.jl) sets the lights of meshcat's default scene: the ambient light's
intensity (``ambient``, 0.35), the fill light's (0.25) and one of the two point lights, on the
positive or negative x side (``direction``), at 0.85 with shadows. meshcat's viewer puts
those lights at ``/Lights/AmbientLight``, ``/Lights/FillLight``, ``/Lights/PointLightPositiveX``
and ``/Lights/PointLightNegativeX``; ``set_light`` sends the same properties there.

Dojo's ``set_surface!(vis, f)`` meshes an implicit surface f(x, y, z) = 0 by marching cubes;
here the surface is a height field z = f(x, y) (the terrain case, the one a scene's ground
would be), sampled on an n x n grid over ``xlims`` x ``ylims`` and drawn as a triangle mesh
under the replay's scene root. ``f`` is a Python callable of two arrays, or an expression in
x and y with numpy's elementary functions (``surface_function``: parsed, never ``eval``-ed).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass

import meshcat
import meshcat.geometry as g
import numpy as np

from dojo_cli.errors import InputError

# Dojo's set_light! (src/visuals/set.jl): ambient 0.35, fill 0.25, the point light 0.85 with
# shadows, on the positive x side.
DOJO_AMBIENT = 0.35
DOJO_FILL = 0.25
DOJO_POINT = 0.85
LIGHT_DIRECTIONS = ("positive", "negative")
LIGHTS_ROOT = "/Lights"
# Brightest intensity accepted (three.js has no bound; past this a typo, not a light).
MAX_INTENSITY = 100.0

# set_surface: samples along each axis (Dojo's n = 200 are marching-cubes cells of a 3-D
# grid; a height field of 100 x 100 vertices, 19,602 triangles, is smooth at a metre scale).
SURFACE_SAMPLES = 100
SURFACE_MAX_SAMPLES = 1000
# The surface's default colour (Dojo's default is transparent white) and its node.
SURFACE_COLOR = (0.55, 0.62, 0.5, 1.0)
SURFACE_NODE = "world/surface"

# What a surface expression may use: x, y, these constants and numpy functions, numbers
# and + - * / ** %.
_SURFACE_NAMES = {"pi": math.pi, "e": math.e}
_SURFACE_FUNCTIONS = {name: getattr(np, name) for name in (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "exp", "log", "log10",
    "sqrt", "abs", "floor", "ceil", "minimum", "maximum", "hypot", "sign",
)}
_SURFACE_OPERATORS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
                      ast.Pow: np.power, ast.Mod: np.mod}
_SURFACE_UNARY = {ast.USub: np.negative, ast.UAdd: np.positive}
# Longest expression accepted (characters) and deepest nesting (a hostile input stays cheap).
_SURFACE_MAX_TEXT = 1000
_SURFACE_MAX_DEPTH = 50


@dataclass(frozen=True)
class Light:
    """Dojo's ``set_light!`` options (its names and defaults; ``fill``, ``point`` and
    ``shadow`` are fixed in Dojo and options here).

    Attributes:
        ambient: the ambient light's intensity (>= 0).
        fill: the fill (directional) light's intensity (>= 0).
        point: the intensity of the point light on the ``direction`` side (>= 0).
        direction: "positive" or "negative": which point light (x > 0 or x < 0).
        shadow: that point light casts shadows.
    """

    ambient: float = DOJO_AMBIENT
    fill: float = DOJO_FILL
    point: float = DOJO_POINT
    direction: str = "positive"
    shadow: bool = True

    def check(self, flag: str = "--light") -> None:
        """InputError naming the field that is out of range."""
        for name in ("ambient", "fill", "point"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= MAX_INTENSITY):
                raise InputError(f"{flag}: {name} must be an intensity in 0..{MAX_INTENSITY:g}, got {value!r}")
        if self.direction not in LIGHT_DIRECTIONS:
            raise InputError(f"{flag}: direction must be one of {', '.join(LIGHT_DIRECTIONS)}, got {self.direction!r}")


def light_from_text(text: str) -> Light:
    """A Light from ``dojo`` (Dojo's defaults) or ``key=value`` pairs separated by commas
    (``ambient=0.5,direction=negative,shadow=false``); InputError naming the pair."""
    text = text.strip()
    if text in ("", "dojo"):
        return Light()
    values: dict = {}
    for item in text.split(","):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or key not in Light.__dataclass_fields__:
            raise InputError(f"--light: expected 'dojo' or key=value pairs of {', '.join(Light.__dataclass_fields__)}, "
                             f"got {item.strip()!r}")
        if key == "direction":
            values[key] = value.lower()
        elif key == "shadow":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise InputError(f"--light: shadow must be true or false, got {value!r}")
            values[key] = value.lower() in ("true", "1", "yes")
        else:
            try:
                values[key] = float(value)
            except ValueError:
                raise InputError(f"--light: {key} must be a number, got {value!r}") from None
    light = Light(**values)
    light.check()
    return light


class _SetProperty:
    """meshcat's set_property command with the property's name as given: meshcat-python's
    SetProperty lowercases it, and the viewer sets ``object[name]``, so three.js's
    camel-case ``castShadow`` would become a new, unread ``castshadow``."""

    def __init__(self, path, key: str, value) -> None:
        self.path, self.key, self.value = path, key, value

    def lower(self) -> dict:
        return {"type": "set_property", "path": self.path.lower(), "property": self.key, "value": self.value}


def set_light(vis: meshcat.Visualizer, light: Light = Light()) -> None:
    """Dojo's ``set_light!``: the intensities of meshcat's default lights (module doc)."""
    light.check("light")
    lights = vis[LIGHTS_ROOT]
    lights["AmbientLight/<object>"].set_property("intensity", float(light.ambient))
    lights["FillLight/<object>"].set_property("intensity", float(light.fill))
    point = lights[f"PointLight{light.direction.capitalize()}X/<object>"]
    point.set_property("intensity", float(light.point))
    point.window.send(_SetProperty(point.path, "castShadow", bool(light.shadow)))


# ------------------------------------------------------------------ surfaces


def surface_function(text: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """z = f(x, y) from an expression in x and y (module doc); InputError naming what is
    not allowed. The expression is parsed once and evaluated on numpy arrays."""
    if len(text) > _SURFACE_MAX_TEXT:
        raise InputError(f"--surface: the expression is longer than {_SURFACE_MAX_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise InputError(f"--surface: {text!r} is not an expression in x and y ({exc.msg})") from None

    def check(node, depth: int) -> None:
        if depth > _SURFACE_MAX_DEPTH:
            raise InputError(f"--surface: the expression nests deeper than {_SURFACE_MAX_DEPTH}")
        if isinstance(node, ast.Expression):
            check(node.body, depth + 1)
        elif isinstance(node, ast.BinOp) and type(node.op) in _SURFACE_OPERATORS:
            check(node.left, depth + 1)
            check(node.right, depth + 1)
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _SURFACE_UNARY:
            check(node.operand, depth + 1)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            pass
        elif isinstance(node, ast.Name) and (node.id in ("x", "y") or node.id in _SURFACE_NAMES):
            pass
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SURFACE_FUNCTIONS
              and not node.keywords):
            for arg in node.args:
                check(arg, depth + 1)
        else:
            what = ast.get_source_segment(text.strip(), node) or type(node).__name__
            raise InputError(f"--surface: {what!r} is not allowed (x, y, numbers, + - * / ** %, pi, e and "
                             f"{', '.join(sorted(_SURFACE_FUNCTIONS))})")

    check(tree, 0)

    def evaluate(node, x, y):
        if isinstance(node, ast.Expression):
            return evaluate(node.body, x, y)
        if isinstance(node, ast.BinOp):
            return _SURFACE_OPERATORS[type(node.op)](evaluate(node.left, x, y), evaluate(node.right, x, y))
        if isinstance(node, ast.UnaryOp):
            return _SURFACE_UNARY[type(node.op)](evaluate(node.operand, x, y))
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return {"x": x, "y": y}.get(node.id, _SURFACE_NAMES.get(node.id))
        return _SURFACE_FUNCTIONS[node.func.id](*(evaluate(a, x, y) for a in node.args))

    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):  # non-finite values are reported by surface_mesh
            return np.asarray(evaluate(tree, x, y), dtype=float)

    return f


@dataclass(frozen=True)
class Surface:
    """Dojo's ``set_surface!`` options for a height field z = f(x, y) (module doc).

    Attributes:
        f: a callable f(x, y) of two (n, n) arrays returning z (n, n) (world frame, m), or
            an expression in x and y (``surface_function``).
        xlims, ylims: (lower, upper) of the drawn domain (m); None: the replay's floor.
        color: (r, g, b[, a]) in 0..1.
        n: samples along each axis (2..SURFACE_MAX_SAMPLES).
    """

    f: Callable[[np.ndarray, np.ndarray], np.ndarray] | str
    xlims: tuple[float, float] | None = None
    ylims: tuple[float, float] | None = None
    color: tuple[float, ...] = SURFACE_COLOR
    n: int = SURFACE_SAMPLES

    def function(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        return surface_function(self.f) if isinstance(self.f, str) else self.f

    def check(self) -> None:
        """InputError naming the option that is out of range (an expression is parsed)."""
        if isinstance(self.f, str):
            surface_function(self.f)
        elif not callable(self.f):
            raise InputError(f"surface: f must be an expression in x and y or a callable, got {type(self.f).__name__}")
        for name in ("xlims", "ylims"):
            lims = getattr(self, name)
            if lims is not None and not (len(lims) == 2 and all(math.isfinite(v) for v in lims) and lims[0] < lims[1]):
                raise InputError(f"--surface-limits: {name} must be two finite numbers, lower < upper, got {lims}")
        if not (len(self.color) in (3, 4) and all(math.isfinite(c) and 0.0 <= c <= 1.0 for c in self.color)):
            raise InputError(f"--surface-color: expected r,g,b or r,g,b,a in 0..1, got {self.color}")
        if not (isinstance(self.n, int) and 2 <= self.n <= SURFACE_MAX_SAMPLES):
            raise InputError(f"surface: n must be an integer in 2..{SURFACE_MAX_SAMPLES}, got {self.n!r}")


def surface_mesh(surface: Surface, half_size: float) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n^2, 3), faces (2 (n-1)^2, 3)) of the height field over its limits, or
    [-half_size, half_size] on an axis without. InputError where f is not finite or has
    the wrong shape."""
    n = surface.n
    xl = surface.xlims or (-half_size, half_size)
    yl = surface.ylims or (-half_size, half_size)
    x, y = np.meshgrid(np.linspace(xl[0], xl[1], n), np.linspace(yl[0], yl[1], n), indexing="ij")
    try:
        z = np.asarray(surface.function()(x, y), dtype=float)
    except InputError:
        raise
    except Exception as exc:  # a user's callable
        raise InputError(f"--surface: f(x, y) failed: {exc}") from None
    z = np.broadcast_to(z, x.shape) if z.size in (1, x.size) else z
    if z.shape != x.shape:
        raise InputError(f"--surface: f(x, y) returned shape {z.shape} for x, y of shape {x.shape}")
    bad = ~np.isfinite(z)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"--surface: f is not finite at x = {x[i, j]:g}, y = {y[i, j]:g} ({z[i, j]})")
    vertices = np.stack([x, y, z], axis=-1).reshape(-1, 3)
    k = np.arange(n * n).reshape(n, n)
    a, b, c, d = k[:-1, :-1].ravel(), k[1:, :-1].ravel(), k[1:, 1:].ravel(), k[:-1, 1:].ravel()
    # two triangles per cell, counter-clockwise seen from +z (normals up)
    faces = np.concatenate([np.stack([a, b, c], axis=1), np.stack([a, c, d], axis=1)])
    return vertices, faces


def set_surface(vis: meshcat.Visualizer, surface: Surface, half_size: float) -> None:
    """Dojo's ``set_surface!``: the height field as a triangle mesh at ``SURFACE_NODE`` of
    ``vis`` (the replay's scene root), in the world frame."""
    surface.check()
    vertices, faces = surface_mesh(surface, half_size)
    rgba = tuple(surface.color) + (1.0,) * (4 - len(surface.color))
    color = (int(round(255 * rgba[0])) << 16) | (int(round(255 * rgba[1])) << 8) | int(round(255 * rgba[2]))
    material = g.MeshPhongMaterial(color=color, opacity=float(rgba[3]), transparent=rgba[3] < 1.0)
    node = vis[SURFACE_NODE]
    node.set_object(g.TriangularMeshGeometry(vertices.astype(np.float32), faces.astype(np.uint32)), material)
    node.set_transform(np.eye(4))
