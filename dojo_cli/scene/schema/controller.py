"""Inputs: the controller (constant, pd, schedule, linear), external forces, and
actuators (an input on one coordinate of a joint, with its gain and range).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dojo_cli.scene.schema.field_types import (
    EXTENDED_REAL, FILE_PATH, INTEGER, NAME, NONZERO_REAL, NON_NEGATIVE_REAL, RANGE, REAL, REAL_LIST,
    SpecProblems, VECTOR3, _MAPPING, _SCALAR, _invalid, _three_entries, _zero_vector, value_text,
)
from dojo_cli.scene.specs import (
    Field, Spec, after, before, check, dict_of, ge, list_of, literal, nullable, tagged_union,
)


def _gains_tag(value: Any) -> str:
    return _MAPPING if isinstance(value, Mapping) else _SCALAR


GAINS = tagged_union(_gains_tag, {_SCALAR: NON_NEGATIVE_REAL, _MAPPING: dict_of(list_of(NON_NEGATIVE_REAL))})
"""One gain >= 0 for every free coordinate, or per joint name one per free coordinate."""


class ControllerSpec(Spec):
    """Joint inputs (forces and torques, SI units, held over each step).

    Attributes:
        type: none, constant, pd or schedule.
        inputs: constant: per joint name, one value per free coordinate (with ``actuators``:
            per actuator name, one value).
        kp: pd: position gain, for all coordinates or per joint.
        kd: pd: velocity gain, for all coordinates or per joint.
        targets: pd: per joint, target minimal coordinates (default zero).
        velocity_targets: pd: per joint, target minimal velocities (default zero).
        file: schedule: CSV or .h5 input table; the loader makes it absolute,
            resolving a relative path against the scene file's folder.
        after_end: schedule: inputs after the table ends, zero or hold the last row.
        u0: linear: (nu,) the feedforward inputs (default zero).
        K: linear: (nu, 2 nf) the gain, one row per input, one column per entry of the
            minimal state (per joint [coordinates; velocities], dojo.maximal_to_minimal).
        y0: linear: (2 nf,) the minimal state the law regulates to.
    """

    type = Field(literal("none", "constant", "pd", "schedule", "linear"), "none")
    inputs = Field(dict_of(REAL_LIST), factory=dict)
    kp = Field(GAINS, 0.0)
    kd = Field(GAINS, 0.0)
    targets = Field(dict_of(REAL_LIST), factory=dict)
    velocity_targets = Field(dict_of(REAL_LIST), factory=dict)
    file = Field(nullable(FILE_PATH), None)
    after_end = Field(literal("zero", "hold"), "zero")
    u0 = Field(nullable(REAL_LIST), None)
    K = Field(nullable(list_of(REAL_LIST)), None)
    y0 = Field(nullable(REAL_LIST), None)

    @check
    def _schedule_has_file(self) -> ControllerSpec:
        if self.type == "schedule" and self.file is None:
            raise SpecProblems([("file", "field required for a schedule controller")])
        return self

    @check
    def _linear_fields(self) -> ControllerSpec:
        # the shapes against the model (nu inputs, 2 nf minimal state) are the builder's
        if self.type == "linear":
            missing = [(key, "field required for a linear controller") for key in ("K", "y0")
                       if getattr(self, key) is None]
            if missing:
                raise SpecProblems(missing)
        else:
            given = [(key, f"only for a linear controller (type is {self.type})") for key in ("u0", "K", "y0")
                     if getattr(self, key) is not None]
            if given:
                raise SpecProblems(given)
        return self

    def per_joint_tables(self) -> dict[str, dict[str, list[float]]]:
        """The fields given per joint name, by field name (gains only when given per joint)."""
        tables = {
            "inputs": self.inputs,
            "kp": self.kp,
            "kd": self.kd,
            "targets": self.targets,
            "velocity_targets": self.velocity_targets,
        }
        return {key: table for key, table in tables.items() if isinstance(table, dict)}


class ExternalForceSpec(Spec):
    """A force and torque on a body, applied while start <= t < stop.

    Attributes:
        body: the body pushed.
        force: (3,) N, in ``frame``.
        torque: (3,) N m, in ``frame``.
        vertex: (3,) application point in the body frame (m).
        frame: frame of force and torque, body or world.
        start: s, >= 0.
        stop: s, > start (``.inf`` for never).
    """

    body = Field(NAME)
    force = Field(VECTOR3, factory=_zero_vector)
    torque = Field(VECTOR3, factory=_zero_vector)
    vertex = Field(VECTOR3, factory=_zero_vector)
    frame = Field(literal("body", "world"), "body")
    start = Field(NON_NEGATIVE_REAL, 0.0)
    stop = Field(EXTENDED_REAL, math.inf)

    @check
    def _stop_after_start(self) -> ExternalForceSpec:
        if self.stop <= self.start:
            raise SpecProblems([("stop", f"must be > start ({self.stop:g} <= {self.start:g})")])
        return self


def _nonzero_vector(value: list[float]) -> list[float]:
    if not any(value):
        raise _invalid(f"must be nonzero, got {value_text(value)}")
    return value


NONZERO_VECTOR3 = after(_nonzero_vector, before(_three_entries, list_of(REAL)))
"""Three finite numbers, not all zero."""


class ActuatorSpec(Spec):
    """A named input (docs/scenes.md "Actuators"): one free coordinate of a joint, or a
    force and/or torque fixed in a body (body frame: they turn with the body).

    Attributes:
        name: unique among the actuators; names the input (controllers, storage, gradients).
        joint: joint actuator: the joint whose free coordinate it drives.
        coordinate: joint actuator: which free coordinate (0-based; default 0).
        body: body actuator: the body pushed.
        force: body actuator: (3,) force per unit input, body frame (N).
        point: body actuator: (3,) where the force acts, body frame from the centre of mass (m).
        torque: body actuator: (3,) torque per unit input, body frame (N m).
        gain: the input is multiplied by it (default 1).
        ctrl_range: [lower, upper] the input is clamped to before the gain, whatever
            gives it (the controller, a schedule, a constant): MuJoCo's ``ctrlrange``.
    """

    name = Field(NAME)
    joint = Field(nullable(NAME), None)
    coordinate = Field(nullable(ge(0, INTEGER)), None)
    body = Field(nullable(NAME), None)
    force = Field(nullable(NONZERO_VECTOR3), None)
    point = Field(nullable(VECTOR3), None)
    torque = Field(nullable(NONZERO_VECTOR3), None)
    gain = Field(NONZERO_REAL, 1.0)
    ctrl_range = Field(nullable(RANGE), None)

    @check
    def _one_kind(self) -> ActuatorSpec:
        problems = []
        if self.ctrl_range is not None and not self.ctrl_range[0] <= self.ctrl_range[1]:
            problems.append(("ctrl_range", f"lower {self.ctrl_range[0]:g} is above upper {self.ctrl_range[1]:g}"))
        if self.joint is not None and self.body is not None:
            problems.append(("body", "give either joint (a joint actuator) or body (a body actuator), not both"))
        elif self.joint is None and self.body is None:
            problems.append(("joint", "field required: joint (with coordinate) or body (with force and/or torque)"))
        elif self.joint is not None:
            for key in ("force", "point", "torque"):
                if getattr(self, key) is not None:
                    problems.append((key, "only for a body actuator (this one drives a joint)"))
        else:
            if self.coordinate is not None:
                problems.append(("coordinate", "only for a joint actuator (this one pushes a body)"))
            if self.force is None and self.torque is None:
                problems.append(("force", "a body actuator needs a force or a torque (or both)"))
            if self.point is not None and self.force is None:
                problems.append(("point", "the point of a force: give force too"))
        if problems:
            raise SpecProblems(problems)
        return self
