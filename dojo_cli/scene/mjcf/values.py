"""Attribute values and frames of MJCF elements: numbers, flags, and a frame's ``pos`` with
one of ``quat``, ``axisangle``, ``euler`` (``eulerseq``: lower case axes move with the frame,
upper case stay), ``xyaxes``, ``zaxis`` (angles in ``<compiler angle>``'s unit).

``_ValueReader`` is a part of the MJCF reader (``dojo_cli.scene.mjcf.reader._Reader``): it
reads the reader's ``angle_scale`` and ``eulerseq`` and reports through its ``problem``.
"""

from __future__ import annotations

import math

import numpy as np

from dojo_cli.scene.mjcf.rotations import _axis_rotation, _matrix_from_quaternion


class _ValueReader:
    """Numbers, flags and frames of MJCF attributes, each problem at its element's line."""

    def numbers(self, el, file: str, attr: str, count: int | None, default=None, element: str | None = None):
        text = el.get(attr)
        if text is None:
            return None if default is None else np.asarray(default, float)
        try:
            values = np.array([float(t) for t in text.split()], float)
        except ValueError:
            self.problem(file, el.sourceline, element or f"<{el.tag}>", f"{attr}={text!r}: not numbers")
            return None if default is None else np.asarray(default, float)
        if not np.all(np.isfinite(values)):
            self.problem(file, el.sourceline, element or f"<{el.tag}>", f"{attr}={text!r}: must be finite")
            return None if default is None else np.asarray(default, float)
        if count is not None and len(values) != count:
            self.problem(file, el.sourceline, element or f"<{el.tag}>", f"{attr}={text!r}: needs {count} numbers, got {len(values)}")
            return None if default is None else np.asarray(default, float)
        return values

    def frame(self, el, a: dict, file: str, element: str) -> tuple[np.ndarray, np.ndarray]:
        """(pos, rot) of an element's frame (pos and one orientation attribute)."""
        pos = self.vec(a, "pos", 3, [0, 0, 0], el, file, element)
        given = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in a]
        if len(given) > 1:
            self.problem(file, el.sourceline, element, f"more than one orientation: {', '.join(given)}")
        rot = np.eye(3)
        if "quat" in a:
            q = self.vec(a, "quat", 4, [1, 0, 0, 0], el, file, element)
            if np.linalg.norm(q) > 0:
                rot = _matrix_from_quaternion(q)
            else:
                self.problem(file, el.sourceline, element, "quat must not be zero")
        elif "axisangle" in a:
            v = self.vec(a, "axisangle", 4, [0, 0, 1, 0], el, file, element)
            if np.linalg.norm(v[:3]) > 0:
                rot = _axis_rotation(v[:3], v[3] * self.angle_scale)
            else:
                self.problem(file, el.sourceline, element, "axisangle's axis must not be zero")
        elif "euler" in a:
            v = self.vec(a, "euler", 3, [0, 0, 0], el, file, element) * self.angle_scale
            for ch, angle in zip(self.eulerseq, v):
                r = _axis_rotation(np.eye(3)["xyz".index(ch.lower())], angle)
                # lower case: about the moving frame's axis (intrinsic); upper case: the fixed one
                rot = rot @ r if ch.islower() else r @ rot
        elif "xyaxes" in a:
            v = self.vec(a, "xyaxes", 6, [1, 0, 0, 0, 1, 0], el, file, element)
            x = v[:3] / max(np.linalg.norm(v[:3]), 1e-300)
            y = v[3:] - np.dot(v[3:], x) * x
            if np.linalg.norm(y) < 1e-12:
                self.problem(file, el.sourceline, element, "xyaxes: the two axes are parallel")
            else:
                y /= np.linalg.norm(y)
                rot = np.column_stack([x, y, np.cross(x, y)])
        elif "zaxis" in a:
            rot = self.zaxis(self.vec(a, "zaxis", 3, [0, 0, 1], el, file, element))
        return pos, rot

    @staticmethod
    def zaxis(z: np.ndarray) -> np.ndarray:
        """The smallest rotation taking (0, 0, 1) to z (MuJoCo's zaxis, and fromto's frame)."""
        z = np.asarray(z, float)
        n = np.linalg.norm(z)
        if n < 1e-300:
            return np.eye(3)
        z = z / n
        c = float(z[2])
        axis = np.cross([0.0, 0.0, 1.0], z)
        s = float(np.linalg.norm(axis))
        if s < 1e-14:
            return np.eye(3) if c > 0 else _axis_rotation([1.0, 0.0, 0.0], math.pi)
        return _axis_rotation(axis / s, math.atan2(s, c))

    def vec(self, a: dict, key: str, count: int, default, el, file: str, element: str) -> np.ndarray:
        text = a.get(key)
        if text is None:
            return np.asarray(default, float)
        try:
            values = np.array([float(t) for t in text.split()], float)
        except ValueError:
            self.problem(file, el.sourceline, element, f"{key}={text!r}: not numbers")
            return np.asarray(default, float)
        if not np.all(np.isfinite(values)) or (count and len(values) != count):
            self.problem(file, el.sourceline, element, f"{key}={text!r}: needs {count} finite numbers")
            return np.asarray(default, float)
        return values

    def real(self, a: dict, key: str, default: float, el, file: str, element: str) -> float:
        v = self.vec(a, key, 1, [default], el, file, element)
        return float(v[0])

    def flag(self, a: dict, key: str, default: str, el, file: str, element: str) -> str:
        value = a.get(key, default)
        if value not in ("true", "false", "auto"):
            self.problem(file, el.sourceline, element, f"{key}={value!r}: must be true, false or auto")
            return default
        return value
