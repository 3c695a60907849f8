"""Build the numeric Mechanism (and its initial state, controller, forces) from a SceneSpec.

The only place where the description (the scene specs) meets the numeric model.
The built Mechanism carries what running the scene needs, its run set-up
(Mechanism.with_run_setup, model.mechanism.RUN_SETUP_FIELDS): ``initial_t0`` or
``initial`` (13 nb,), ``default_options`` (SolverOptions), ``controller``, ``external``
(ExternalForce tuple), ``default_steps`` (int or None), ``integrator``, ``source`` (the
scene's SceneSource, for problems found later) and ``scene_file``.

The builder is arithmetic on the description: it never solves. The midpoint state of a
scene whose velocities are given at t = 0 is solved when a run starts
(simulation.initial.initial_state), and a failure there is the run's error.

Every quantity derived here from scene numbers (a body's inertia from its shape and
mass, its weight, the initial maximal state from the joints' minimal coordinates, a
schedule's inputs) is checked after the arithmetic against the scene's bounds
(schema.MAX_MAGNITUDE, schema.MIN_AMOUNT), so nothing non-finite or absurd reaches
the core; a problem names the field the quantity came from (the one set by ``--set``
when one was).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.io.tables import read_input_table
from dojo_cli.model.compiled import ARMATURE_MESSAGE, unsupported_armature
from dojo_cli.model.collisions import (
    BODY_SHAPES, GROUND, HALF_SPACE_SHAPES, UnsupportedPair, body_pair_contacts, half_space_contacts,
)
from dojo_cli.model.mechanism import ORIGIN, Actuator, Body, Contact, Joint, Mechanism
from dojo_cli.model.shapes import Shape, body_inertia
from dojo_cli.physics.coordinates import constraint_violation, interleave_minimal, minimal_to_maximal
from dojo_cli.model.joint_types import JointType
from dojo_cli.scene.dofs import held_frame
from dojo_cli.scene.schema import GROUND_NAME, MAX_MAGNITUDE, MAX_STEPS, MIN_AMOUNT, RANDOM_COORDINATES
from dojo_cli.model.controller import (
    ClampedInputs, ConstantController, Controller, ExternalForce, LinearController, PDController, ScheduleController,
)
from dojo_cli.solver.options import SolverOptions

# Initial configurations whose joints are violated by more than this (m, or
# quaternion vector part ~ rad/2) are rejected: the first step would snap them.
INITIAL_VIOLATION_TOL = 1e-6


def shape_from_spec(s) -> Shape:
    """Numeric Shape from a shape spec: a solid's ``scale`` multiplied into its dimensions, a
    combined shape's parts built.

    Raises:
        ValueError: a scale the solid cannot take (a sphere's must be uniform; a cylinder's,
            capsule's or pyramid's the same along x and y), with the field it concerns.
    """
    color = tuple(s.color) if getattr(s, "color", None) is not None else None
    if color is not None and len(color) == 3:
        color = color + (1.0,)
    if s.type == "combined":
        parts = tuple(shape_from_spec(part) for part in s.shapes)
        return Shape("combined", {"parts": parts}, tuple(s.position_offset), tuple(s.orientation_offset), color)
    params = {k: v for k, v in s.dump().items() if k not in ("type", "position_offset", "orientation_offset", "color")}
    if "size" in params and params["size"] is not None:
        params["size"] = tuple(params["size"])
    if s.type != "mesh" and "scale" in params:
        params = _scaled(s.type, params)
    return Shape(s.type, params, tuple(s.position_offset), tuple(s.orientation_offset), color)


def _scaled(kind: str, params: dict) -> dict:
    """A solid's dimensions times its scale (Dojo's shapes' scale), the scale consumed."""
    params = dict(params)
    scale = np.broadcast_to(np.asarray(params.pop("scale"), dtype=float), (3,))
    if np.all(scale == 1.0):
        return params
    if kind == "box":
        params["size"] = tuple(float(v) for v in np.asarray(params["size"], float) * scale)
        return params
    if kind == "sphere" and not (scale[0] == scale[1] == scale[2]):
        raise ValueError("scale: a sphere takes one scale (a scaled sphere would be an ellipsoid)")
    if kind != "sphere" and scale[0] != scale[1]:
        raise ValueError(f"scale: a {kind} takes the same scale along x and y (its cross-section stays round or square)")
    across, along = float(scale[0]), float(scale[2])
    for key in ("radius", "width"):
        if key in params:
            params[key] = float(params[key]) * across
    if "height" in params:
        params["height"] = float(params["height"]) * along
    return params


def build_mechanism(spec, file: str | None = None) -> Mechanism:
    """Mechanism with initial state, options, controller and external forces.

    Raises:
        SceneError: problems only visible when building (inertia missing for a
            shape without volume, an inconsistent initial configuration, an
            unreadable schedule, contacts not yet supported).
    """
    file = file or spec.source.file or f"<{spec.name}>"
    problems: list[Problem] = []
    names = {b.name: i for i, b in enumerate(spec.bodies)}

    gravity = math.hypot(*spec.gravity)
    bodies = []
    for i, b in enumerate(spec.bodies):
        try:
            shape = shape_from_spec(b.shape)
        except ValueError as exc:
            problems.append(_shape_problem(spec, f"bodies.{i}.shape", exc))
            shape = Shape("frame")
        inertia = b.inertia_matrix()
        sources = [f"bodies.{i}.inertia"]
        if inertia is None:
            # derived from the shape and the mass: a problem is theirs
            sources = [f"bodies.{i}.shape", f"bodies.{i}.mass"]
            try:
                inertia = body_inertia(shape, b.mass)
            except ValueError as exc:
                problems.append(_derived_problem(spec, sources, str(exc)))
                inertia = np.eye(3)
        if inertia is None:
            problems.append(spec.problem(f"bodies.{i}.inertia", f"required for a {shape.kind} shape (it has no volume)"))
            inertia = np.eye(3)
        problem = _inertia_problem(np.asarray(inertia, dtype=float), b.mass, len(sources) > 1)
        if problem is not None:
            problems.append(_derived_problem(spec, sources, problem))
            inertia = np.eye(3)
        if b.mass * gravity > MAX_MAGNITUDE:
            message = f"the weight mass * |gravity| = {b.mass * gravity:.3g} N is more than {MAX_MAGNITUDE:g}"
            problems.append(_derived_problem(spec, [f"bodies.{i}.mass", "gravity"], message))
        visuals = []
        for k, v in enumerate(b.visuals):
            try:
                visuals.append(shape_from_spec(v))
            except ValueError as exc:
                problems.append(_shape_problem(spec, f"bodies.{i}.visuals.{k}", exc))
        bodies.append(Body(b.name, float(b.mass), np.asarray(inertia, dtype=float), shape, visuals))

    joints = []
    for j in spec.joints:
        limits = (np.asarray(j.limits.lower, float), np.asarray(j.limits.upper, float)) if j.limits else None
        parent_vertex, offset = j.parent_vertex, j.orientation_offset
        if j.const_values:  # skydy's held degrees of freedom (scene/dofs.py)
            parent_vertex, offset = held_frame(j.const_values, parent_vertex, offset)
        joints.append(
            Joint(
                j.name, j.type.value if hasattr(j.type, "value") else j.type,
                ORIGIN if j.parent == "origin" else names[j.parent], names[j.child],
                axis=np.asarray(j.axis, float), parent_vertex=np.asarray(parent_vertex, float),
                child_vertex=np.asarray(j.child_vertex, float), orientation_offset=np.asarray(offset, float),
                rotation_axis=None if j.rotation_axis is None else np.asarray(j.rotation_axis, float),
                axes=None if j.axes is None else np.asarray(j.axes, float),
                axis_names=None if j.axis_names is None else tuple(j.axis_names),
                spring=j.spring_values(), damper=j.damper_values(), friction=j.friction_values(), armature=j.armature_values(), spring_offset=j.spring_offset_values(), limits=limits,
                damper_form=j.damper_form or spec.damper_form, locked=bool(j.locked),
            )
        )
    if problems:
        raise SceneError(problems)

    contacts = scene_contacts(spec, names, bodies, joints)
    joint_names = {j.name: i for i, j in enumerate(spec.joints)}
    actuators = [
        Actuator(a.name, joint=joint_names[a.joint], coordinate=int(a.coordinate or 0), gain=float(a.gain))
        if a.joint is not None else
        Actuator(a.name, body=names[a.body], force=None if a.force is None else np.asarray(a.force, float),
                 point=np.asarray(a.point if a.point is not None else [0.0, 0.0, 0.0], float),
                 torque=None if a.torque is None else np.asarray(a.torque, float), gain=float(a.gain))
        for a in spec.actuators
    ]
    try:
        mech = Mechanism(bodies, joints, spec.timestep, spec.gravity, name=spec.name, contacts=contacts,
                         actuators=actuators)
    except SceneError as exc:
        # the mechanism names scene fields (bodies.0.inertia): point them at the file's lines
        raise SceneError([spec.problem(p.field, p.message) if p.field else p for p in exc.problems]) from None
    external = [
        ExternalForce(names[e.body], np.asarray(e.force, float), np.asarray(e.torque, float), np.asarray(e.vertex, float),
                      e.frame, float(e.start), float(e.stop))
        for e in spec.external
    ]
    options = SolverOptions(**spec.solver.dump())
    controller = controller_from_spec(spec, mech, file)
    return mech.with_run_setup(
        source=spec.source,
        scene_file=file,
        integrator=spec.integrator,
        default_options=options,
        default_steps=_steps(spec),
        **initial_states_from_spec(spec, mech, file),
        controller=controller,
        external=external,
        joint_limits=joint_limits_record(spec),
    )


def joint_limits_record(spec) -> dict:
    """{joint: {"position" | "velocity" | "acceleration": {"lower": [...], "upper": [...]}}}
    for the joints that set limits (Drake's three pairs; docs/planar.md): position limits
    are enforced, velocity and acceleration limits stored and reported."""
    out: dict = {}
    for j in spec.joints:
        entry = {}
        for key, field in (("position", "limits"), ("velocity", "velocity_limits"),
                           ("acceleration", "acceleration_limits")):
            limits = getattr(j, field, None)
            if limits is not None:
                entry[key] = {"lower": [float(v) for v in limits.lower], "upper": [float(v) for v in limits.upper]}
        if entry:
            out[j.name] = entry
    return out


def _inertia_problem(inertia: np.ndarray, mass: float, derived: bool) -> str | None:
    """What is wrong with a body's inertia (3, 3) against the scene's bounds, or None."""
    if not np.all(np.isfinite(inertia)):
        return f"the inertia is not finite ({inertia.tolist()})"
    eigenvalues = np.linalg.eigvalsh(0.5 * inertia + 0.5 * inertia.T)
    what = f"the inertia from this shape and the mass {mass:g} kg" if derived else "the inertia"
    if eigenvalues.max() > MAX_MAGNITUDE:
        return f"{what} reaches {eigenvalues.max():.3g} kg m^2, more than {MAX_MAGNITUDE:g}"
    if eigenvalues.min() < MIN_AMOUNT:
        return f"{what} is down to {eigenvalues.min():.3g} kg m^2, less than {MIN_AMOUNT:g}"
    return None


def _derived_problem(spec, sources: list[str], message: str) -> Problem:
    """A problem with a quantity derived from the fields ``sources`` (SceneSource.derived_problem)."""
    return spec.source.derived_problem(sources, message)


def _margin(value) -> float:
    """A contact's margin (m) from its spec: None is infinity (in every step's solve)."""
    return math.inf if value is None else float(value)


def contact_from_spec(c, names: dict[str, int], ground: dict | None = None) -> Contact:
    """Numeric Contact from a contact spec (``against`` ground, a half-space or a body's shape).
    ``ground``: the scene's ground half-space {normal, point} (default z >= 0)."""
    base = dict(name=c.name, body=names[c.body], model=c.model, friction=float(c.friction),
                radius=float(c.radius), offset=np.asarray(c.offset, float), restitution=float(c.restitution),
                margin=_margin(c.margin))
    against = c.against
    if against == "ground" or isinstance(against, str):
        plane = GROUND if ground is None else ground
        return Contact(**base, kind="halfspace", params={"normal": plane["normal"].copy(), "point": plane["point"].copy()})
    if hasattr(against, "normal"):
        n = np.asarray(against.normal, float)
        return Contact(**base, kind="halfspace", params={"normal": n / np.linalg.norm(n), "point": np.asarray(against.point, float)})
    other = names[against.body]
    offset = np.asarray(against.offset, float)
    if against.shape == "sphere":
        params = {"offset": offset, "radius": float(against.radius)}
    elif against.shape in ("capsule", "cylinder"):
        # the segment (a cylinder's: between its caps' centres) along the shape's z, centred at offset
        axis = matrix_from_quaternion(np.asarray(against.orientation_offset, float))[:, 2]
        half = 0.5 * float(against.height) * axis
        params = {"end1": offset - half, "end2": offset + half, "radius": float(against.radius)}
    else:
        params = {"centre": offset, "half_sizes": 0.5 * np.asarray(against.size, float)}
    return Contact(**base, kind=against.shape, other=other, params=params)


def scene_contacts(spec, names: dict[str, int], bodies: list[Body], joints: list[Joint]) -> list[Contact]:
    """The contacts of a scene: its listed contacts (a sphere, or a shape pair compiled into
    the collision table's contacts, model/collisions.py), then those ``collisions:`` asks for.

    Raises:
        SceneError: a shape pair the table has no entry for; two contacts of one name.
    """
    problems: list[Problem] = []
    contacts: list[Contact] = []
    fields: list[str] = []  # the scene field each contact comes from (for duplicate names)
    ground = spec.ground.half_space()
    for i, c in enumerate(spec.contacts):
        try:
            made = [contact_from_spec(c, names, ground)] if c.shape is None else _shape_contacts(c, names, bodies, ground)
        except UnsupportedPair as exc:
            problems.append(spec.problem(f"contacts.{i}.shape", str(exc)))
            continue
        contacts += made
        fields += [f"contacts.{i}.name"] * len(made)
    generated = _collision_contacts(spec, bodies, joints, ground)
    contacts += generated
    fields += ["collisions"] * len(generated)
    seen: dict[str, str] = {}
    for contact, path in zip(contacts, fields):
        if contact.name in seen:
            problems.append(spec.problem(path, f"contact name {contact.name!r} is also made by {seen[contact.name]}"))
        seen.setdefault(contact.name, path)
    if problems:
        raise SceneError(problems)
    return contacts


def _shape_contacts(c, names: dict[str, int], bodies: list[Body], ground: dict) -> list[Contact]:
    """A listed contact with a shape: the shape pair's contacts (UnsupportedPair if none)."""
    body = names[c.body]
    shape = bodies[body].shape if c.shape == "body" else shape_from_spec(c.shape)
    base = dict(model=c.model, friction=float(c.friction), restitution=float(c.restitution), margin=_margin(c.margin))
    against = c.against
    if isinstance(against, str):
        return half_space_contacts(c.name, body, shape, ground, rim_points=c.rim_points, **base)
    if hasattr(against, "normal"):
        n = np.asarray(against.normal, float)
        plane = {"normal": n / np.linalg.norm(n), "point": np.asarray(against.point, float)}
        return half_space_contacts(c.name, body, shape, plane, rim_points=c.rim_points, **base)
    other = names[against.body]
    if against.shape == "body":
        other_shape = bodies[other].shape
    else:
        size = {"sphere": {}, "capsule": {"height": float(against.height)}, "cylinder": {"height": float(against.height)},
                "box": {"size": tuple(against.size or (0.0, 0.0, 0.0))},
                "hull": {"vertices": tuple(map(tuple, against.vertices or ()))}}[against.shape]
        radius = {} if against.shape == "box" else {"radius": float(against.radius)}
        other_shape = Shape(against.shape, {**size, **radius}, tuple(against.offset), tuple(against.orientation_offset))
    return body_pair_contacts(c.name, body, shape, other, other_shape, **base)


def _collision_contacts(spec, bodies: list[Body], joints: list[Joint], ground: dict) -> list[Contact]:
    """The contacts ``collisions:`` asks for: each body's shape against the ground
    (``<body>/ground``), with mode all also each pair of bodies not joined as parent
    and child (``<body>/<body>``, in body order), but the excluded pairs. Shapes the
    collision table cannot pair are left out (docs/physics.md, "Collision table")."""
    options = spec.collisions
    if options.mode == "none":
        return []
    excluded = {frozenset(pair) for pair in options.exclude}
    base = dict(model=options.model, friction=float(options.friction), restitution=float(options.restitution),
                margin=_margin(options.margin))
    out: list[Contact] = []
    for i, body in enumerate(bodies):
        if body.shape.kind in HALF_SPACE_SHAPES and frozenset((body.name, GROUND_NAME)) not in excluded:
            out += half_space_contacts(f"{body.name}/{GROUND_NAME}", i, body.shape, ground, **base)
    if options.mode == "ground":
        return out
    joined = {frozenset((j.parent, j.child)) for j in joints}
    for i, j in itertools.combinations(range(len(bodies)), 2):
        a, b = bodies[i], bodies[j]
        if (frozenset((i, j)) in joined or frozenset((a.name, b.name)) in excluded
                or a.shape.kind not in BODY_SHAPES or b.shape.kind not in BODY_SHAPES):
            continue
        try:
            out += body_pair_contacts(f"{a.name}/{b.name}", i, a.shape, j, b.shape, **base)
        except UnsupportedPair:
            continue  # a flat hull or a pyramid: no table pair (documented)
    return out


def _shape_problem(spec, path: str, exc: ValueError) -> Problem:
    """A shape's problem at its field (``scale: ...`` names the sub-field)."""
    text = str(exc)
    field, _, message = text.partition(": ")
    if field == "scale" and message:
        return spec.problem(f"{path}.scale", message)
    return spec.problem(path, text)


def _steps(spec) -> int | None:
    if spec.steps is not None:
        return int(spec.steps)
    if spec.duration is not None:
        n = spec.duration / spec.timestep
        # checked after the division: a fine duration over a tiny timestep is still too many steps
        if not n <= MAX_STEPS:
            message = f"{spec.duration:g} s at timestep {spec.timestep:g} s is {n:.3g} steps, more than {MAX_STEPS:.0e}"
            raise SceneError(_derived_problem(spec, ["duration", "timestep"], message))
        # 1e-9 guards against duration/h landing just above an integer in floating point
        return int(math.ceil(n - 1e-9))
    return None


def initial_states_from_spec(spec, mech: Mechanism, file: str) -> dict:
    """The run set-up's initial state (model.mechanism.RUN_SETUP_FIELDS): joint initial
    values (minimal coordinates) root to leaves, then body overrides, as ``initial_t0`` (the
    velocities at t = 0, ``initial_velocity: t0``, the default: converted with the exact
    velocity map) or ``initial`` (``midpoint``: Dojo's midpoint velocities, as given).

    Nothing is solved here: the midpoint state of a t0 scene is found when a run starts
    (simulation.initial.initial_state), which blames ``initial_sources`` when it fails.
    """
    theta = np.zeros(mech.nf)
    rate = np.zeros(mech.nf)
    rng = None  # random initial poses, joint order (docs/planar.md); made when one is drawn (numpy.random: ~5 ms to import)
    drawn: dict[str, dict[str, float]] = {}
    intervals: dict[int, dict] = {}  # the joints' random intervals (JointHandle's), drawn or not
    default_positions = np.zeros(mech.nf)  # the joints' initial positions before any draw
    for i, j in enumerate(spec.joints):
        r = mech.joint_free_range[i]
        random = j.random_intervals()
        if random:
            intervals[i] = random
        if j.initial is not None:
            if j.initial.position is not None:
                theta[r] = j.initial.position
                default_positions[r] = j.initial.position
            if j.initial.velocity is not None and not j.locked:  # Drake's Lock zeroes a locked joint's velocities
                rate[r] = j.initial.velocity
            names = RANDOM_COORDINATES.get(JointType(j.type), ())
            for k, (low, high) in random.items():
                if rng is None:
                    rng = np.random.default_rng(spec.seed)
                value = float(rng.uniform(low, high))
                theta[r.start + k] = value
                drawn.setdefault(j.name, {})[names[k]] = value
    overrides = {}
    for i, b in enumerate(spec.bodies):
        if b.initial is not None:
            overrides[i] = b.initial.dump()
    at_t0 = spec.initial_velocity == "t0"
    z = minimal_to_maximal(mech, interleave_minimal(mech, theta, rate), body_overrides=overrides, instantaneous=at_t0)
    problems = _initial_state_problems(spec, mech, z)
    if problems:
        raise SceneError(problems)
    viol = constraint_violation(mech, z)
    bad = [(i, v) for i, v in enumerate(viol) if v > INITIAL_VIOLATION_TOL]
    if bad:
        problems = []
        for i, v in bad:
            j = mech.joints[i]
            what = "closes a loop; its two sides' initial values disagree" if i in mech.loop_joints else (
                "a body's initial pose moves its child away from the joint")
            problems.append(spec.problem(f"joints.{i}", f"joint {j.name!r} is violated by {v:.3g} in the initial state ({what})"))
        raise SceneError(problems)
    out = {"random_initial": drawn or None, "random_intervals": intervals, "default_positions": default_positions}
    if mech.has_armature and spec.integrator != "rk4":
        bad = unsupported_armature(mech)
        if bad:
            raise SceneError([spec.problem(f"joints.{i}.armature", ARMATURE_MESSAGE) for i in bad])
    if not at_t0:
        return {**out, "initial": z, "initial_t0": None}
    if spec.integrator == "rk4" and mech.has_armature:
        # rk4 starts from the velocities at t0; no variational midpoint state is made (its
        # integrator may not model every rotor the minimal layer does)
        return {**out, "initial": z, "initial_t0": z}
    # The first step is solved with the scene's timestep when a run starts: the velocities
    # at t0 and the step's length fail together. Its failure blames whichever of them was
    # changed by an override (--set timestep=1 on a scene that runs at its own step is the
    # timestep's fault), else the initial values' lines.
    sources = [f"bodies.{i}.initial" for i, b in enumerate(spec.bodies) if b.initial is not None]
    sources += [f"joints.{i}.initial" for i, j in enumerate(spec.joints) if j.initial is not None]
    if "timestep" in spec.source.overrides:
        sources.insert(0, "timestep")
    return {**out, "initial": None, "initial_t0": z, "initial_sources": tuple(sources or ["timestep"])}


def _initial_state_problems(spec, mech: Mechanism, z: np.ndarray) -> list[Problem]:
    """Bodies whose initial maximal state (from the joints' initial values, chained
    root to leaves, and the bodies' own) is not finite or beyond MAX_MAGNITUDE."""
    problems = []
    parts = ("position", "velocity", "orientation", "angular velocity")
    for i, state in enumerate(np.asarray(z, dtype=float).reshape(mech.nb, 13)):
        bad = [name for name, values in zip(parts, np.split(state, [3, 6, 10]))
               if not (np.all(np.isfinite(values)) and np.max(np.abs(values)) <= MAX_MAGNITUDE)]
        if not bad:
            continue
        # what set it: the body's own initial state, else the joints' initial values on its
        # way to the origin (nearest first)
        sources = [f"bodies.{i}.initial"] if spec.bodies[i].initial is not None else []
        body = i
        while body >= 0 and mech.tree_joint_of_body[body] >= 0:
            j = int(mech.tree_joint_of_body[body])
            if spec.joints[j].initial is not None:
                sources.append(f"joints.{j}.initial")
            body = int(mech.parent[j])
        message = (f"the initial {' and '.join(bad)} of body {mech.bodies[i].name!r} "
                   f"{'is' if len(bad) == 1 else 'are'} not finite or more than {MAX_MAGNITUDE:g} in magnitude")
        problems.append(_derived_problem(spec, sources or [f"bodies.{i}"], message))
    return problems


def controller_from_spec(spec, mech: Mechanism, file: str) -> Controller | None:
    """The scene's controller (None for type none and no actuator's ``ctrl_range``), its
    inputs clamped to the actuators' ``ctrl_range`` where they have one."""
    controller = _unclamped_controller(spec, mech, file)
    ranges = [a.ctrl_range for a in (spec.actuators or [])]
    if not any(r is not None for r in ranges):
        return controller
    lower = np.array([-np.inf if r is None else float(r[0]) for r in ranges])
    upper = np.array([np.inf if r is None else float(r[1]) for r in ranges])
    return ClampedInputs(controller, lower, upper)


def _unclamped_controller(spec, mech: Mechanism, file: str) -> Controller | None:
    c = spec.controller
    if c is None or c.type == "none":
        return None
    if c.type == "constant":
        if mech.has_actuators:
            u = np.zeros(mech.nu)
            for name, values in (c.inputs or {}).items():
                u[mech.input_names().index(name)] = values[0]
            return ConstantController(u)
        return ConstantController(_per_joint(mech, c.inputs))
    if c.type == "pd":
        def gains(g):
            return np.full(mech.nf, float(g)) if isinstance(g, (int, float)) else _per_joint(mech, g)

        kp, kd = gains(c.kp), gains(c.kd)
        output = None
        if mech.has_actuators:
            # the PD law's joint forces, through the joint actuators: u_a = tau_f / gain_a
            output = np.zeros((mech.nu, mech.nf))
            driven = np.zeros(mech.nf, dtype=bool)
            for a, f in enumerate(mech.actuator_free):
                if f >= 0 and not driven[f]:
                    output[a, f] = 1.0 / mech.actuator_gain[a]
                    driven[f] = True
            missing = [int(f) for f in np.flatnonzero(((kp != 0) | (kd != 0)) & ~driven)]
            if missing:
                joints = sorted({mech.joints[int(mech.free_joint[f])].name for f in missing})
                field = "controller.kp" if np.any(kp[missing]) else "controller.kd"
                raise SceneError(spec.problem(field, f"gains on joint{'s' if len(joints) > 1 else ''} "
                                              f"{', '.join(joints)} that no joint actuator drives (with `actuators`, "
                                              "a pd controller acts through the joint actuators)"))
        return PDController(kp, kd, _per_joint(mech, c.targets), _per_joint(mech, c.velocity_targets), output)
    if c.type == "linear":
        return _linear_controller(spec, mech)
    try:
        table = read_input_table(c.file)
    except OSError as exc:
        raise SceneError(spec.problem("controller.file", f"{c.file}: cannot read ({exc.strerror or exc})")) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise SceneError(spec.problem("controller.file", f"{c.file}: {exc}")) from None
    if table.size and not np.max(np.abs(table)) <= MAX_MAGNITUDE:
        row, col = np.unravel_index(int(np.argmax(~(np.abs(table) <= MAX_MAGNITUDE))), table.shape)
        message = f"{c.file}: row {row + 1}, column {col + 1} is {table[row, col]:g}, more than {MAX_MAGNITUDE:g} in magnitude"
        raise SceneError(spec.problem("controller.file", message))
    if table.shape[1] != mech.nu:
        raise SceneError(spec.problem("controller.file", f"{c.file}: has {table.shape[1]} columns, the mechanism has {mech.nu} inputs"))
    return ScheduleController(table, c.after_end)


def _linear_controller(spec, mech: Mechanism) -> LinearController:
    """The scene's ``linear`` controller, its shapes checked against the model: u0 (nu,),
    K (nu, 2 nf), y0 (2 nf,) (the schema checked that K and y0 are given)."""
    c = spec.controller
    ny = 2 * mech.nf
    what = f"{mech.nu} inputs" + (" (the actuators)" if mech.has_actuators else "")
    state = f"the minimal state has {ny} entries (2 x {mech.nf} free coordinates)"
    if c.u0 is not None and len(c.u0) != mech.nu:
        raise SceneError(spec.problem("controller.u0", f"must have {mech.nu} values (the model has {what}), got {len(c.u0)}"))
    if len(c.K) != mech.nu:
        raise SceneError(spec.problem("controller.K", f"must have {mech.nu} rows (one per input: the model has {what}), "
                                      f"got {len(c.K)}"))
    for i, row in enumerate(c.K):
        if len(row) != ny:
            raise SceneError(spec.problem(f"controller.K.{i}", f"must have {ny} values ({state}), got {len(row)}"))
    if len(c.y0) != ny:
        raise SceneError(spec.problem("controller.y0", f"must have {ny} values ({state}), got {len(c.y0)}"))
    u0 = np.zeros(mech.nu) if c.u0 is None else np.asarray(c.u0, dtype=float)
    return LinearController(u0, np.asarray(c.K, dtype=float).reshape(mech.nu, ny), np.asarray(c.y0, dtype=float))


def _per_joint(mech: Mechanism, values: dict) -> np.ndarray:
    out = np.zeros(mech.nf)
    for name, vals in (values or {}).items():
        out[mech.joint_free_range[mech.joint_index(name)]] = vals
    return out
