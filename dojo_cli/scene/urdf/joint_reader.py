"""A URDF ``<joint>`` read: its type (URDF's and Bullet's spherical), parent and child links,
origin, axis, ``<limit>`` (Bullet's lower > upper as no limit; a spherical joint's swing-twist
limit kept to be reported), ``<dynamics>`` (a planar joint's damping per axis, as Drake) and
``<mimic>``.

``_JointReader`` is a part of the URDF reader (``dojo_cli.scene.urdf.reader._Reader``): it
reads numbers and origins through the reader's ``numbers`` and ``origin``, and reports
through its ``problem``, ``warn``, ``finite`` and ``lenient``.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.scene.importing.messages import listed, shortened
from dojo_cli.scene.urdf.elements import _Joint
from dojo_cli.scene.urdf.options import BULLET_JOINT_TYPES, URDF_JOINT_TYPES
from dojo_cli.scene.urdf.values import (
    LENIENT_EXTRA_NUMBERS, LENIENT_NO_LIMIT, LENIENT_NUMBER_END, _is_number, _lenient_float, _number,
    _planar_damping, _xacro_hint,
)


class _JointReader:
    """Joints, with their limits and dynamics."""

    def _joint(self, element, name: str, links, refused: set[str]) -> _Joint | None:
        where = f"joint {name!r}"
        line = element.sourceline
        ok = True
        kind = element.get("type")
        if kind not in URDF_JOINT_TYPES + BULLET_JOINT_TYPES:
            shown = "missing" if kind is None else repr(kind)
            self.problem(line, where, f"unknown joint type {shown} (one of: {', '.join(URDF_JOINT_TYPES + BULLET_JOINT_TYPES)})")
            ok = False
        ends = {}
        for role in ("parent", "child"):
            tag = element.find(role)
            ends[role] = tag.get("link") if tag is not None else None
            tag_line = tag.sourceline if tag is not None else line
            if ends[role] is None:
                self.problem(tag_line, where, f"<{role} link=...> missing")
                ok = False
            elif ends[role] in refused:
                ok = False
            elif ends[role] not in links:
                self.problem(tag_line, where, f"{role} link {ends[role]!r} is not defined (links: {listed(list(links))})")
                ok = False
        if not ok:
            return None
        axis_element = element.find("axis")
        axis = np.array([1.0, 0.0, 0.0]) if axis_element is None else self.numbers(axis_element, "xyz", where, "1 0 0")
        if axis is None:
            return None
        if axis.size > 3:
            # Bullet reads a vector's first 3 numbers
            self.lenient(LENIENT_EXTRA_NUMBERS, axis_element.sourceline, f"{where} <axis xyz> {shortened(axis_element.get('xyz'))}")
            axis = axis[:3]
        if axis.shape != (3,):
            self.problem(line, where, f"<axis xyz> must be 3 numbers, got {axis.size}")
            return None
        origin = self.origin(element, where)
        if origin is None:
            return None
        if not (self.finite(line, where, "<axis xyz>", axis) and self.finite(line, where, "<origin>", origin)):
            return None
        if kind in ("revolute", "continuous", "prismatic", "planar") and np.linalg.norm(axis) < 1e-12:
            self.problem(line, where, "<axis xyz> must be nonzero")
            return None
        out = _Joint(name, line, kind, ends["parent"], ends["child"], origin, axis / max(np.linalg.norm(axis), 1e-300))
        limit_element = element.find("limit")
        if limit_element is not None:
            try:
                read = {key: _lenient_float(limit_element.get(key)) if limit_element.get(key) is not None else (None, False)
                        for key in ("effort", "velocity", "lower", "upper")}
                out.effort, out.velocity = read["effort"][0], read["velocity"][0]
                lower, upper = read["lower"][0], read["upper"][0]
                for key, (_, stray) in read.items():
                    if stray:
                        self.lenient(LENIENT_NUMBER_END, limit_element.sourceline,
                                     f"{where} <limit {key}> {shortened(limit_element.get(key))}")
            except ValueError as exc:
                hint = "".join(_xacro_hint(limit_element.get(k) or "") for k in ("effort", "velocity", "lower", "upper"))
                self.problem(limit_element.sourceline, where, f"<limit> values must be numbers ({exc}){hint}")
                return None
            given = [v for v in (out.effort, out.velocity, lower, upper) if v is not None]
            if not self.finite(limit_element.sourceline, where, "<limit>", given, infinite=True):
                return None
            if kind in ("revolute", "prismatic"):
                # the spec defaults lower and upper to 0; a missing one means no bound here,
                # and equal bounds (a joint locked by its limits) are not solvable as inequalities
                if lower is not None and upper is not None and lower > upper:
                    # Bullet's "no limit" (biped2d_pybullet's lower="1" upper="-1"): btMultiBody
                    # applies a limit only when lower <= upper
                    self.lenient(LENIENT_NO_LIMIT, limit_element.sourceline, f"joint {name!r} [{lower:g}, {upper:g}]")
                elif lower is not None and upper is not None and lower == upper:
                    self.warn(limit_element.sourceline, where, f"<limit> lower = upper = {lower:g}; position limits ignored")
                else:
                    out.lower, out.upper = lower, upper
            if kind == "spherical" and all(v is not None and v > 0 for v in (lower, upper, out.effort)):
                twist = _number(limit_element.get("twist")) if _is_number(limit_element.get("twist")) else None
                if twist is not None and twist > 0:
                    out.swing_twist = (lower, upper, twist)
        elif kind in ("revolute", "prismatic"):
            self.warn(line, where, "has no <limit> (required for its type); no position limits")
        dynamics = element.find("dynamics")
        if dynamics is not None:
            try:
                if kind == "planar":
                    # Drake's parser: a planar joint's damping is 3 values (x, y, theta), or one for all
                    out.damping = _planar_damping(dynamics.get("damping"))
                else:
                    out.damping = _number(dynamics.get("damping")) or 0.0
                out.friction = _number(dynamics.get("friction")) or 0.0
            except ValueError as exc:
                self.problem(line, where, f"<dynamics> values must be numbers ({exc})")
                return None
            if not self.finite(line, where, "<dynamics>", np.r_[out.damping, out.friction]):
                return None
            if np.min(out.damping) < 0:
                self.problem(line, where, f"<dynamics damping> must be >= 0, got {np.min(out.damping):g}")
        mimic = element.find("mimic")
        if mimic is not None:
            out.mimic = mimic.get("joint")
        return out
