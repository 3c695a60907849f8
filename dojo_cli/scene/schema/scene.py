"""The whole scene: ``SceneSpec`` (its sections and the cross-references between them:
names, the joint tree, actuators, controller tables), where it came from (``SceneSource``:
file, field lines, overrides), every spec model (``SPEC_MODELS``) and a field's default
looked up by its dotted path (``field_default``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dojo_cli.errors import Problem
from dojo_cli.model.joint_types import input_dimension
from dojo_cli.scene.schema.bodies import BodyInitialSpec, BodySpec, RESERVED_BODY_NAME
from dojo_cli.scene.schema.contacts import (
    BodyCollisionSpec, CollisionsSpec, ContactSpec, GROUND_NAME, GroundSpec, HalfSpaceSpec, HullShapeSpec,
)
from dojo_cli.scene.schema.controller import ActuatorSpec, ControllerSpec, ExternalForceSpec
from dojo_cli.scene.schema.field_types import (
    AMOUNT, INTEGER, MAX_STEPS, NAME, SpecProblems, TEXT, VECTOR3, _file_name_safe, _invalid,
    value_text,
)
from dojo_cli.scene.schema.joints import DAMPER_FORMS, JointInitialSpec, JointLimitsSpec, JointSpec, _count_message
from dojo_cli.scene.schema.shapes import (
    BoxShapeSpec, CapsuleShapeSpec, CombinedShapeSpec, CylinderShapeSpec, FrameShapeSpec, MeshShapeSpec,
    PyramidShapeSpec, SphereShapeSpec,
)
from dojo_cli.scene.schema.solver import SolverSpec
from dojo_cli.scene.specs import REQUIRED, Field, Spec, after, before, check, ge, gt, le, list_of, literal, nullable


OVERRIDE_FILE = "--set"
"""The "file" named by problems in fields set by overrides."""
MAPPING_OVERRIDE_FILE = "overrides"
"""The "file" of overrides given as a mapping (``load_scene(..., overrides={...})`` in Python,
where there is no ``--set``)."""


@dataclass(frozen=True)
class SceneSource:
    """Where a scene came from, so that problems found later point at it.

    Attributes:
        file: the file as named in problems ("scene.yaml", "<string>").
        base_dir: folder that relative paths in the scene resolve against
            (None: the current directory).
        lines: dotted field path -> 1-based line of that field in ``file``.
        overrides: field paths set by overrides, in index form
            (``joints.0.spring``) -> as the user wrote them (``joints.hinge.spring``).
        override_origins: the same paths -> (file, line) the override was written at
            (``--set``, None unless it came from a preset file: ``--config``).
    """

    file: str = "<scene>"
    base_dir: Path | None = None
    lines: Mapping[str, int] = field(default_factory=dict)
    overrides: Mapping[str, str] = field(default_factory=dict)
    override_origins: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)

    def line(self, path: str) -> int | None:
        """Line of a field, or of its closest enclosing field that is in the file."""
        while path not in self.lines:
            if not path:
                return None
            path = path.rpartition(".")[0]
        return self.lines[path]

    def problem(self, path: str, message: str) -> Problem:
        """A Problem at a field: in the file, or on ``--set`` when an override set it."""
        matches = [key for key in self.overrides if path == key or path.startswith(key + ".")]
        if matches:
            key = max(matches, key=len)
            file, line = self.override_origins.get(key, (OVERRIDE_FILE, None))
            return Problem(file, line, self.overrides[key] + path[len(key) :], message)
        return Problem(self.file, self.line(path), path, message)

    def derived_problem(self, sources: list[str], message: str) -> Problem:
        """A problem with a quantity derived from the fields ``sources``.

        Reported on the first source set by an override (on ``--set``, at the overridden
        field, which may lie inside the source: ``bodies.0.shape.size``), else on the
        first source's line in the file.
        """
        for path in sources:
            for key in self.overrides:
                if key == path or path.startswith(key + "."):
                    return self.problem(path, message)
                if key.startswith(path + "."):
                    return self.problem(key, message)
        return self.problem(sources[0], message)

    def resolve_path(self, path: str | os.PathLike) -> Path:
        """Absolute path of a file named in the scene (relative to the scene's folder)."""
        candidate = Path(path).expanduser()
        if candidate.is_absolute():
            return candidate
        return Path(os.path.abspath((self.base_dir or Path.cwd()) / candidate))


def _format_version(value: Any) -> Any:
    if isinstance(value, bool) or value != 1:
        raise _invalid(f"unsupported scene format {value_text(value)} (this version reads format 1)")
    return value


# Most names listed in "unknown body" messages.
_MAX_LISTED_NAMES = 12


def _listed(names: list[str]) -> str:
    """Names for a message: "a, b, c", shortened when long, "none" when empty."""
    names = list(dict.fromkeys(names))
    if not names:
        return "none"
    shown = ", ".join(names[:_MAX_LISTED_NAMES])
    return shown + ", ..." if len(names) > _MAX_LISTED_NAMES else shown


class SceneSpec(Spec):
    """A whole scene, as validated from a YAML file.

    Two scenes are equal when their fields are, wherever they were loaded from.

    Attributes:
        format: scene format version, 1.
        name: scene name.
        timestep: s, > 0.
        gravity: (3,) m/s^2, world frame.
        duration: s, or None (at most one of duration and steps).
        steps: number of steps, or None.
        seed: seed of anything random in the scene.
        solver: default solver options.
        bodies: at least one body.
        joints: joints in order (a body's first joint as child is its tree joint).
        contacts: contact spheres and shape pairs.
        collisions: collisions asked for wholesale.
        ground: the half-space ``against: ground`` and ``collisions:`` meet (z >= 0 by default).
        controller: joint inputs.
        external: external forces.
        actuators: the inputs u, in order (none: one per free coordinate of each joint).
        damper_form: ``midpoint`` (default, second order) or ``implicit`` (first
            order, L-stable): how joints' dampers are discretised unless a joint says.
        initial_velocity: what the initial velocities of bodies and joints mean: ``t0``
            (default) the velocities at t = 0, ``midpoint`` Dojo's convention, the
            integrator's midpoint velocity over [-h, 0] (docs/physics.md).
        integrator: ``variational`` (Dojo's, default) or ``rk4`` (the Munthe-Kaas RK4 in
            minimal coordinates, RigidBodyDynamics.jl's simulate; docs/minimal.md).
        description: free text.
    """

    format = Field(before(_format_version, literal(1)), 1)
    name = Field(after(_file_name_safe, NAME))
    timestep = Field(AMOUNT)
    gravity = Field(VECTOR3, factory=lambda: [0.0, 0.0, -9.81])
    duration = Field(nullable(AMOUNT), None)
    steps = Field(nullable(le(MAX_STEPS, gt(0, INTEGER))), None)
    seed = Field(ge(0, INTEGER), 0)
    solver = Field(SolverSpec.core_schema(), factory=SolverSpec, specs=(SolverSpec,))
    bodies = Field(list_of(BodySpec.core_schema(), min_length=1), specs=(BodySpec,))
    joints = Field(list_of(JointSpec.core_schema()), factory=list, specs=(JointSpec,))
    contacts = Field(list_of(ContactSpec.core_schema()), factory=list, specs=(ContactSpec,))
    collisions = Field(CollisionsSpec.core_schema(), factory=CollisionsSpec, specs=(CollisionsSpec,))
    ground = Field(GroundSpec.core_schema(), factory=GroundSpec, specs=(GroundSpec,))
    controller = Field(ControllerSpec.core_schema(), factory=ControllerSpec, specs=(ControllerSpec,))
    external = Field(list_of(ExternalForceSpec.core_schema()), factory=list, specs=(ExternalForceSpec,))
    actuators = Field(list_of(ActuatorSpec.core_schema()), factory=list, specs=(ActuatorSpec,))
    damper_form = Field(literal(*DAMPER_FORMS), "midpoint")
    initial_velocity = Field(literal("t0", "midpoint"), "t0")
    integrator = Field(literal("variational", "rk4", "variational4"), "variational")
    description = Field(TEXT, "")

    # (where it was loaded from is kept beside the fields: two scenes are equal when
    # their fields are, as Spec compares them)

    @check
    def _cross_references(self) -> SceneSpec:
        problems: list[tuple[str, str]] = []
        if self.steps is not None and self.duration is not None:
            problems.append(("steps", "give either steps or duration, not both"))
        for section, items in (("bodies", self.bodies), ("joints", self.joints), ("contacts", self.contacts),
                               ("actuators", self.actuators)):
            problems += _duplicate_names(section, items)
        problems += self._joint_references()
        problems += self._actuator_references()
        problems += self._tree_problems()
        problems += self._body_references()
        problems += self._controller_references()
        if problems:
            raise SpecProblems(problems)
        return self

    def _joint_references(self) -> list[tuple[str, str]]:
        bodies = [b.name for b in self.bodies]
        problems = []
        for i, joint in enumerate(self.joints):
            if joint.parent != RESERVED_BODY_NAME and joint.parent not in bodies:
                message = f"unknown body {joint.parent!r} (bodies: {_listed(bodies)}; or origin)"
                problems.append((f"joints.{i}.parent", message))
            if joint.child == RESERVED_BODY_NAME:
                problems.append((f"joints.{i}.child", "origin cannot be a child (it is the fixed world frame)"))
            elif joint.child not in bodies:
                problems.append((f"joints.{i}.child", f"unknown body {joint.child!r} (bodies: {_listed(bodies)})"))
            elif joint.child == joint.parent:
                problems.append((f"joints.{i}.child", f"is the same body as the parent ({joint.child!r})"))
        return problems

    def _tree_problems(self) -> list[tuple[str, str]]:
        """Each body hangs from its first joint as child; that tree must reach origin."""
        tree_parent: dict[str, str] = {}
        named_as_child = set()
        for joint in self.joints:
            named_as_child.add(joint.child)
            if joint.child != joint.parent:
                tree_parent.setdefault(joint.child, joint.parent)
        # body -> None when its parent chain reaches origin, else the loop it
        # runs into ("" when it ends at an unknown or unattached body, which
        # are reported on their own)
        outcome: dict[str, str | None] = {RESERVED_BODY_NAME: None}
        problems = []
        for i, body in enumerate(self.bodies):
            if body.name not in named_as_child:
                problems.append(
                    (f"bodies.{i}", f"body {body.name!r} is attached by no joint; add a floating joint to make it free")
                )
                continue
            chain: list[str] = []
            name = body.name
            while name not in outcome and name in tree_parent and name not in chain:
                chain.append(name)
                name = tree_parent[name]
            if name in outcome:
                result = outcome[name]
            elif name in chain:
                result = " <- ".join(chain[chain.index(name) :] + [name])
            else:
                result = ""
            for link in chain:
                outcome[link] = result
            if result:
                problems.append(
                    (
                        f"bodies.{i}",
                        f"body {body.name!r} is not connected to origin: its parent chain runs into the loop "
                        f"{result} (a body hangs from the first joint naming it as child; list a joint "
                        "leading towards origin first)",
                    )
                )
        return problems

    def _body_references(self) -> list[tuple[str, str]]:
        bodies = [b.name for b in self.bodies]
        problems = []

        def check(path: str, name: str) -> None:
            if name not in bodies:
                problems.append((path, f"unknown body {name!r} (bodies: {_listed(bodies)})"))

        for i, contact in enumerate(self.contacts):
            check(f"contacts.{i}.body", contact.body)
            if isinstance(contact.against, BodyCollisionSpec):
                check(f"contacts.{i}.against.body", contact.against.body)
                if contact.against.body == contact.body:
                    problems.append((f"contacts.{i}.against.body", "a body cannot collide with itself"))
        for i, pair in enumerate(self.collisions.exclude):
            for k, name in enumerate(pair):
                if name != GROUND_NAME and name not in bodies:
                    problems.append((f"collisions.exclude.{i}.{k}", f"unknown body {name!r} (bodies: {_listed(bodies)}; or ground)"))
        for i, force in enumerate(self.external):
            check(f"external.{i}.body", force.body)
        return problems

    def _actuator_references(self) -> list[tuple[str, str]]:
        types = {j.name: j.type for j in self.joints}
        bodies = [b.name for b in self.bodies]
        problems = []
        for i, a in enumerate(self.actuators):
            if a.joint is not None:
                if a.joint not in types:
                    problems.append((f"actuators.{i}.joint", f"unknown joint {a.joint!r} (joints: {_listed(list(types))})"))
                    continue
                n = input_dimension(types[a.joint])
                if (a.coordinate or 0) >= n:
                    kind = types[a.joint].value if hasattr(types[a.joint], "value") else types[a.joint]
                    problems.append((f"actuators.{i}.coordinate",
                                     f"must be in 0..{n - 1} (joint {a.joint!r}, {kind}, has {n} free "
                                     f"coordinate{'s' if n != 1 else ''}), got {a.coordinate}" if n else
                                     f"joint {a.joint!r} ({kind}) has no free coordinate to drive"))
            elif a.body is not None and a.body not in bodies:
                problems.append((f"actuators.{i}.body", f"unknown body {a.body!r} (bodies: {_listed(bodies)})"))
        return problems

    def _controller_references(self) -> list[tuple[str, str]]:
        types = {j.name: j.type for j in self.joints}
        actuators = [a.name for a in self.actuators]
        problems = []
        for key, table in self.controller.per_joint_tables().items():
            for name, values in table.items():
                path = f"controller.{key}.{name}"
                if key == "inputs" and actuators:
                    # with actuators, constant inputs are per actuator name, one value each
                    if name not in actuators:
                        problems.append((path, f"unknown actuator {name!r} (actuators: {_listed(actuators)})"))
                    elif len(values) != 1:
                        problems.append((path, f"must have 1 value (one input per actuator), got {len(values)}"))
                    continue
                if name not in types:
                    problems.append((path, f"unknown joint {name!r} (joints: {_listed(list(types))})"))
                elif len(values) != input_dimension(types[name]):
                    problems.append((path, _count_message(input_dimension(types[name]), types[name], len(values))))
        return problems

    @property
    def source(self) -> SceneSource:
        """Where this scene was loaded from (a default SceneSource when not from a file)."""
        private = self.__pydantic_private__
        return private["source"] if private else SceneSource()

    @property
    def base_dir(self) -> Path | None:
        """Folder that relative paths resolve against (None: the current directory)."""
        return self.source.base_dir

    def problem(self, path: str, message: str) -> Problem:
        """A Problem naming this scene's file and the line of field ``path``."""
        return self.source.problem(path, message)

    def resolve_path(self, path: str | os.PathLike) -> Path:
        """Absolute path of a file named in the scene (relative to the scene's folder)."""
        return self.source.resolve_path(path)

    def with_source(self, source: SceneSource) -> SceneSpec:
        """A copy that remembers ``source``, with ``controller.file`` made absolute."""
        spec = copy.deepcopy(self)
        object.__setattr__(spec, "__pydantic_private__", {"source": source})
        if spec.controller.file is not None:
            spec.controller.file = str(spec.resolve_path(spec.controller.file))
        return spec


def _duplicate_names(section: str, items: list[Any]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    problems = []
    singular = {"bodies": "body", "joints": "joint", "contacts": "contact", "actuators": "actuator"}[section]
    for i, item in enumerate(items):
        if item.name in seen:
            problems.append((f"{section}.{i}.name", f"duplicate {singular} name {item.name!r}"))
        seen.add(item.name)
    return problems


SPEC_MODELS: tuple[type[Spec], ...] = (
    SceneSpec,
    SolverSpec,
    BodySpec,
    BodyInitialSpec,
    BoxShapeSpec,
    SphereShapeSpec,
    CylinderShapeSpec,
    CapsuleShapeSpec,
    PyramidShapeSpec,
    MeshShapeSpec,
    FrameShapeSpec,
    CombinedShapeSpec,
    JointSpec,
    JointLimitsSpec,
    JointInitialSpec,
    ContactSpec,
    HalfSpaceSpec,
    BodyCollisionSpec,
    HullShapeSpec,
    CollisionsSpec,
    GroundSpec,
    ControllerSpec,
    ExternalForceSpec,
    ActuatorSpec,
)
"""Every model of the scene format (for "did you mean" suggestions)."""


def field_default(data: Mapping[str, Any], path: Sequence[str]) -> Any:
    """Default of a field missing from raw scene data, as plain data.

    Lets an override reach into a field the file leaves at its default
    (``gravity.2``, ``solver.rtol``).

    Args:
        data: raw scene data, holding every field of ``path`` but the last.
        path: the field, in index form (``["bodies", "0", "initial"]``).

    Returns:
        The default (None for optional fields).

    Raises:
        LookupError: the path names no field with a default.
    """
    models: tuple[type[Spec], ...] = (SceneSpec,)
    node: Any = data
    for part in path[:-1]:
        if isinstance(node, list):
            # an entry of a list of models: the same candidate models
            node = node[int(part)]
            continue
        models = _model_field(models, node, part).specs
        node = node.get(part) if isinstance(node, Mapping) else None
    default = _model_field(models, node, path[-1]).get_default()
    if default is REQUIRED:
        raise LookupError(f"field {'.'.join(path)} has no default")
    return default.dump() if isinstance(default, Spec) else default


def _model_field(models: tuple[type[Spec], ...], node: Any, key: str) -> Field:
    """The field ``key`` of the model among ``models`` that ``node`` is data for.

    ``type`` tells apart the members of a tagged union (the shapes: each declares its own
    tag as its default); for a lone model (a joint, a controller) it is an ordinary field,
    whatever its value."""
    kind = node.get("type") if isinstance(node, Mapping) else None
    for model in models:
        declared = model.fields.get("type")
        if key in model.fields and (kind is None or len(models) == 1 or declared is None
                                    or declared.default in (kind, None)):
            return model.fields[key]
    raise LookupError(f"no field {key!r} here")
