"""Joints: type (or Drake's and skydy's ``dofs``), parent and child, axes, the values per
free coordinate (springs, dampers, limits, efforts, armature) checked against the type, and
initial coordinates (given or random).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dojo_cli import _core
from dojo_cli.model.joint_types import AXES_JOINTS, JointType, input_dimension
from dojo_cli.model.mechanism import joint_axes
from dojo_cli.scene.schema.field_types import (
    BOUND, DIRECTION, EXTENDED_REAL_LIST, GAIN, NAME, QUATERNION, REAL, REAL_LIST, SpecProblems, VECTOR3,
    _entries, _identity_quaternion, _invalid, _zero_vector, value_text,
)
from dojo_cli.scene.specs import Field, Spec, after, before, check, dict_of, list_of, literal, nullable, plain


def _count_message(n: int, joint_type: JointType, got: int) -> str:
    """"must have n values for a <type> joint (its free coordinates), got m"."""
    article = "an" if joint_type.value[0] in "aeiou" else "a"
    values = "value" if n == 1 else "values"
    return f"must have {n} {values} for {article} {joint_type.value} joint (its free coordinates), got {got}"


class JointLimitsSpec(Spec):
    """Bounds on a joint's free coordinates (``-.inf``/``.inf`` for none)."""

    lower = Field(EXTENDED_REAL_LIST)
    upper = Field(EXTENDED_REAL_LIST)

    @check
    def _ordered(self) -> JointLimitsSpec:
        # Drake's Joint::set_*_limits checks, its condition text kept (docs/planar.md)
        if len(self.upper) != len(self.lower):
            message = (f"must have as many values as lower ({len(self.lower)}), got {len(self.upper)} "
                       "(condition 'lower_limits.size() == upper_limits.size()' failed)")
            raise SpecProblems([("upper", message)])
        problems = [
            (f"lower.{i}", f"must be <= upper ({low:g} > {high:g}) "
                           "(condition '(lower_limits.array() <= upper_limits.array()).all()' failed)")
            for i, (low, high) in enumerate(zip(self.lower, self.upper))
            if low > high
        ]
        if problems:
            raise SpecProblems(problems)
        return self


# How the step discretises dampers (core/maximal/residual.h): second order (midpoint), or
# first order and L-stable (implicit: stiff damping at large steps); the core's names.
DAMPER_FORMS = _core.DAMPER_FORMS


def _interval(value: Any) -> list:
    entries = _entries(value)
    if entries is None or len(entries) != 2:
        raise _invalid(f"must be an interval [lower, upper], got {value_text(value)}")
    return entries


def _ordered_interval(value: list[float]) -> list[float]:
    if value[0] > value[1]:
        raise _invalid(f"must have lower <= upper, got [{value[0]:g}, {value[1]:g}]")
    return value


INTERVAL = after(_ordered_interval, before(_interval, list_of(REAL)))
"""[lower, upper], finite, lower <= upper."""

# The coordinates a random initial pose may name, per joint type (Drake's PlanarJoint:
# x, y, theta). ``qz`` is the coordinate's storage name, accepted as theta's alias.
RANDOM_COORDINATES: dict[JointType, tuple[str, ...]] = {JointType.PLANAR_AXIS: ("x", "y", "theta")}
RANDOM_ALIASES = {"qz": "theta"}


class JointInitialSpec(Spec):
    """A joint's initial minimal coordinates (None = zero).

    ``random``: a uniform random pose, coordinate -> [lower, upper] (planar_axis: ``x``,
    ``y``, ``theta``), drawn from the scene's ``seed``; it replaces those coordinates of
    ``position`` (Drake's random pose distribution; docs/planar.md).
    """

    position = Field(nullable(REAL_LIST), None)
    velocity = Field(nullable(REAL_LIST), None)
    random = Field(nullable(dict_of(INTERVAL)), None)


def _joint_type_name(value: Any) -> Any:
    if isinstance(value, JointType):
        return value
    names = ", ".join(t.value for t in JointType)
    if not isinstance(value, str):
        raise _invalid(f"must be a joint type name (one of: {names}), got {value_text(value)}")
    if value not in {t.value for t in JointType}:
        raise _invalid(f"unknown joint type {value!r} (one of: {names})")
    return value


def _drake_size_condition(path: str) -> str:
    """Drake's condition text for a limit vector of the wrong size ("" for other fields)."""
    kind = {"limits": "num_positions()", "velocity_limits": "num_velocities()",
            "acceleration_limits": "num_velocities()"}.get(path.split(".")[0])
    if kind is None:
        return ""
    return f" (condition '{path.split('.')[-1]}_limits.size() == {kind}' failed)"


def _type_from_dofs(data: Any) -> Any:
    """skydy's ``dofs: [x, rz]`` instead of ``type`` and ``axis`` (scene/dofs.py), and the
    held values of the others (``const_values``)."""
    if not isinstance(data, dict):
        return data
    if "dofs" not in data:
        if data.get("const_values") is not None:
            raise SpecProblems([("const_values", "goes with dofs (it holds the degrees of freedom dofs leaves out)")])
        return data
    from dojo_cli.scene.dofs import check_const_values, dofs_to_joint

    try:
        check_const_values(data["dofs"], data.get("const_values"))
    except ValueError as exc:
        raise SpecProblems([("const_values", str(exc))]) from None

    given = [k for k in ("type", "axis", "rotation_axis") if k in data]
    if given:
        raise SpecProblems([("dofs", f"give either dofs or {' and '.join(given)}, not both (dofs sets the type and axis)")])
    try:
        joint_type, axis, rotation_axis = dofs_to_joint(data["dofs"])
    except ValueError as exc:
        raise SpecProblems([("dofs", str(exc))]) from None
    out = {k: v for k, v in data.items() if k != "dofs"}
    out["type"], out["axis"] = joint_type.value, axis
    if rotation_axis is not None:
        out["rotation_axis"] = rotation_axis
    return out


class JointSpec(Spec):
    """A joint between a parent (a body or origin) and a child body.

    Attributes:
        name: unique joint name.
        type: one of the sixteen Dojo joint types.
        parent: parent body name, or "origin".
        child: child body name. The first joint naming a body as child is its
            tree joint; later ones close loops.
        axis: (3,) unit axis in the parent's joint frame.
        rotation_axis: (3,) the rotational element's own axis (None: ``axis``, Dojo's one
            axis for both elements); with it the free translations and rotations need not
            share an axis (skydy's ``[x, ry]``; docs/scenes.md "Joints by degrees of freedom").
        axes: a ``universal`` joint's two or a ``gimbal``'s three mutually orthogonal axes
            in the parent's joint frame (None: from ``axis`` a, (a, v1[, v2]) of its
            in-plane basis: axis z gives z, x, y); the rotation is R(a1, t1) R(a2, t2)
            [R(a3, t3)], the coordinates the angles (docs/scenes.md "Universal and gimbal joints").
        axis_names: names of those angles, one per axis (a URDF chain's joint names; None:
            ``NAME:t1``, ...): the minimal-coordinate layer's coordinate names.
        const_values: skydy's ``const_value``: constrained degrees of freedom held at a
            value, ``{y: 0.1, rx: 0.2}`` (names of scene/dofs.py, none of the free ones);
            translations in the parent body frame, rotations applied before the free ones
            (scene/dofs.py ``held_frame``).
        parent_vertex: (3,) joint point in the parent body frame (m).
        child_vertex: (3,) joint point in the child body frame (m).
        orientation_offset: (4,) joint frame in the parent frame, [w, x, y, z].
        spring: stiffness, scalar or one per free coordinate (>= 0).
        damper: damping, scalar or one per free coordinate (>= 0).
        friction: dry (Coulomb) friction, scalar or one per free coordinate (>= 0; N m for
            a rotation, N for a translation): the joint's impulse on the coordinate opposes
            its rate, at most h F a step, and holds it still while the other forces on it
            are within F (URDF's ``<dynamics friction>``, MJCF's ``frictionloss``;
            docs/physics.md "Joints").
        armature: rotor inertia, scalar or one per free coordinate (>= 0; kg m^2 or kg):
            the kinetic energy 1/2 a theta_dot^2 of the coordinate's rate (MuJoCo's
            armature); modelled by the minimal-coordinate layer (integrator: rk4,
            ``dojo dynamics``), refused by the variational integrator (docs/physics.md).
        spring_offset: rest values of the free coordinates (None = zero).
        limits: bounds on the free coordinates.
        initial: initial minimal coordinates and velocities.
        effort_limit: largest force or torque per free coordinate (a URDF
            ``<limit effort>``); recorded, not enforced by the simulator.
        velocity_limit: largest speed per free coordinate (``<limit velocity>``);
            recorded, not enforced.
        velocity_limits, acceleration_limits: Drake's lower and upper velocity and
            acceleration limits per free coordinate; stored and reported, not enforced
            (as in Drake's dynamics).
        damper_form: ``midpoint`` or ``implicit``, the damper's discretisation (None:
            the scene's ``damper_form``; docs/physics.md "Joints" says which when).
        locked: Drake's Lock: the joint's free coordinates are held where they are
            (velocities zero, initial velocity set to zero); a no-op on a fixed joint
            (docs/scenes.md "Locked joints").
    """

    prepare = _type_from_dofs
    name = Field(NAME)
    # (the names are checked first; JointType(name) then only meets valid ones)
    type = Field(before(_joint_type_name, plain(JointType)))
    parent = Field(NAME)
    child = Field(NAME)
    axis = Field(DIRECTION, factory=lambda: [0.0, 0.0, 1.0])
    rotation_axis = Field(nullable(DIRECTION), None)
    axes = Field(nullable(list_of(DIRECTION)), None)
    axis_names = Field(nullable(list_of(NAME)), None)
    const_values = Field(nullable(dict_of(REAL)), None)
    parent_vertex = Field(VECTOR3, factory=_zero_vector)
    child_vertex = Field(VECTOR3, factory=_zero_vector)
    orientation_offset = Field(QUATERNION, factory=_identity_quaternion)
    spring = Field(GAIN, 0.0)
    damper = Field(GAIN, 0.0)
    friction = Field(GAIN, 0.0)
    armature = Field(GAIN, 0.0)
    spring_offset = Field(nullable(REAL_LIST), None)
    limits = Field(nullable(JointLimitsSpec.core_schema()), None, specs=(JointLimitsSpec,))
    initial = Field(nullable(JointInitialSpec.core_schema()), None, specs=(JointInitialSpec,))
    effort_limit = Field(nullable(BOUND), None)
    velocity_limit = Field(nullable(BOUND), None)
    velocity_limits = Field(nullable(JointLimitsSpec.core_schema()), None, specs=(JointLimitsSpec,))
    acceleration_limits = Field(nullable(JointLimitsSpec.core_schema()), None, specs=(JointLimitsSpec,))
    damper_form = Field(nullable(literal(*DAMPER_FORMS)), None)
    locked = Field({"type": "bool", "strict": True}, False)

    @check
    def _axes(self) -> JointSpec:
        count = AXES_JOINTS.get(JointType(self.type))
        if self.axis_names is not None:
            if count is None or len(self.axis_names) != count:
                raise SpecProblems([("axis_names", "one name per axis of a universal (2) or gimbal (3) joint, got "
                                                   f"{len(self.axis_names)}")])
            if len(set(self.axis_names)) != len(self.axis_names):
                raise SpecProblems([("axis_names", "the names must differ")])
        if self.axes is None:
            return self
        if count is None:
            kinds = " and ".join(t.value for t in AXES_JOINTS)
            raise SpecProblems([("axes", f"axes are for {kinds} joints; a {JointType(self.type).value} joint has "
                                         "`axis`")])
        try:
            joint_axes(self.type, self.axis, self.axes)
        except ValueError as exc:
            raise SpecProblems([("axes", str(exc))]) from None
        return self

    @check
    def _random_coordinates(self) -> JointSpec:
        if self.initial is None or self.initial.random is None:
            return self
        known = RANDOM_COORDINATES.get(JointType(self.type))
        if known is None:
            kinds = ", ".join(t.value for t in RANDOM_COORDINATES)
            raise SpecProblems([("initial.random", f"a random initial pose is for {kinds} joints, not {self.type.value}")])
        problems = []
        seen: dict[str, str] = {}
        for key in self.initial.random:
            name = RANDOM_ALIASES.get(key, key)
            if name not in known:
                problems.append((f"initial.random.{key}", f"unknown coordinate {key!r} (one of: {', '.join(known)})"))
            elif name in seen:
                problems.append((f"initial.random.{key}", f"names the same coordinate as {seen[name]!r}"))
            seen[name] = key
        if problems:
            raise SpecProblems(problems)
        return self

    def random_intervals(self) -> dict[int, tuple[float, float]]:
        """Free-coordinate index -> (lower, upper) of the random initial pose (empty: none)."""
        if self.initial is None or not self.initial.random:
            return {}
        known = RANDOM_COORDINATES[JointType(self.type)]
        out = {known.index(RANDOM_ALIASES.get(k, k)): (float(v[0]), float(v[1])) for k, v in self.initial.random.items()}
        return dict(sorted(out.items()))

    @check
    def _counts_match_type(self) -> JointSpec:
        n = input_dimension(self.type)
        given = {
            "spring": self.spring if isinstance(self.spring, list) else None,
            "damper": self.damper if isinstance(self.damper, list) else None,
            "friction": self.friction if isinstance(self.friction, list) else None,
            "armature": self.armature if isinstance(self.armature, list) else None,
            "effort_limit": self.effort_limit if isinstance(self.effort_limit, list) else None,
            "velocity_limit": self.velocity_limit if isinstance(self.velocity_limit, list) else None,
            "spring_offset": self.spring_offset,
            "limits.lower": self.limits.lower if self.limits else None,
            "limits.upper": self.limits.upper if self.limits else None,
            "initial.position": self.initial.position if self.initial else None,
            "initial.velocity": self.initial.velocity if self.initial else None,
        }
        for name in ("velocity_limits", "acceleration_limits"):
            limits = getattr(self, name)
            given[f"{name}.lower"] = limits.lower if limits else None
            given[f"{name}.upper"] = limits.upper if limits else None
        problems = [
            (path, _count_message(n, self.type, len(values)) + _drake_size_condition(path))
            for path, values in given.items()
            if values is not None and len(values) != n
        ]
        if self.velocity_limit is not None and self.velocity_limits is not None:
            problems.append(("velocity_limits", "give velocity_limit (a URDF bound) or velocity_limits, not both"))
        if problems:
            raise SpecProblems(problems)
        return self

    def _per_coordinate(self, value: float | list[float]) -> np.ndarray:
        if isinstance(value, list):
            return np.array(value, dtype=float)
        return np.full(input_dimension(self.type), float(value))

    def spring_values(self) -> np.ndarray:
        """(n,) spring stiffness per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.spring)

    def damper_values(self) -> np.ndarray:
        """(n,) damping per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.damper)

    def friction_values(self) -> np.ndarray:
        """(n,) dry friction per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.friction)

    def armature_values(self) -> np.ndarray:
        """(n,) rotor inertia per free coordinate (a scalar broadcast)."""
        return self._per_coordinate(self.armature)

    def spring_offset_values(self) -> np.ndarray:
        """(n,) spring rest values of the free coordinates (zeros when not given)."""
        return self._per_coordinate(0.0 if self.spring_offset is None else self.spring_offset)
