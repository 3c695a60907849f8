"""The numeric model: bodies, joints, and the Python face of the compiled core Model.

A ``Mechanism`` is immutable after construction. It validates the description,
chooses the joint bases and lays out the flat arrays the core compiles
(model/compiled.py); the step's structure (unknown layout, tree order, Newton block
pattern, elimination order) is derived once by the core (core/maximal/model.cpp) and
read from ``Mechanism.core``, never computed a second time here.

Joints follow Dojo (dojo_engine_notes.md section 3): a translational element
constraining ``nt`` relative translations (measured in the parent body frame)
and a rotational element constraining ``nr`` relative rotations (measured in
the parent's joint frame, parent orientation times ``orientation_offset``).
Each element has a 3x3 row basis; its rows are either constrained or free.

In-plane basis (replaces Dojo's SVD basis, whose signs depend on LAPACK): for a
unit axis a, let k be the index of a's largest-magnitude component (lowest index
on ties). Then v1 = normalize(e_{k+1} - (e_{k+1}.a) a) (indices mod 3) and
v2 = a x v1, so (v1, v2, a) is right-handed; for a = e_k it gives
(e_{k+1}, e_{k+2}, e_k): axis X -> (y, z), axis Y -> (z, x), axis Z -> (x, y).
Element basis rows are (v1, v2, a) when exactly one or two directions are
constrained (one: a is constrained, v1 and v2 free; two: v1, v2 constrained,
a free) and the identity when none or all three are.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from dojo_cli.errors import Problem, SceneError
from dojo_cli.math.quaternion import IDENTITY
from dojo_cli import _core
from dojo_cli.model.compiled import compile_model
from dojo_cli.model.joint_types import AXES_JOINTS, CONSTRAINED, JointType
from dojo_cli.model.shapes import Shape

ORIGIN = -1  # parent index meaning the world frame
ORIGIN_NAME = "origin"  # the world frame's name in scenes (``parent: origin``) and in get_node


@dataclass(frozen=True)
class Origin:
    """The world frame as a node of the mechanism's graph (Dojo's Origin): ``get_node("origin")``."""

    name: str = ORIGIN_NAME
    index: int = ORIGIN


ORIGIN_NODE = Origin()
# Drake's PlanarJoint position and velocity suffixes (a planar_axis joint's coordinates)
PLANAR_Q_SUFFIXES = ("x", "y", "qz")
PLANAR_V_SUFFIXES = ("vx", "vy", "wz")


def axis_basis(axis: np.ndarray) -> np.ndarray:
    """Rows (v1, v2, a): the deterministic in-plane basis of the module docstring.

    Args:
        axis: (3,) finite nonzero axis.

    Returns:
        (3, 3) orthonormal rows, right-handed, last row the unit axis.

    Raises:
        ValueError: the axis is zero or not finite.
    """
    a = np.asarray(axis, dtype=float)
    scale = float(np.max(np.abs(a)))
    if not (math.isfinite(scale) and scale > 0.0):
        raise ValueError(f"must be a finite nonzero axis, got {a.tolist()}")
    if not 1e-150 < scale < 1e150:
        # the norm's squares would overflow or underflow: scale by the largest entry first
        # (only then, so that ordinary axes keep their exact rounding)
        a = a / scale
    a = a / np.linalg.norm(a)
    k = int(np.argmax(np.abs(a)))  # argmax returns the first index on ties
    e = np.zeros(3)
    e[(k + 1) % 3] = 1.0
    v1 = e - np.dot(e, a) * a
    v1 /= np.linalg.norm(v1)
    v2 = np.cross(a, v1)
    return np.array([v1, v2, a])


def element_basis(axis: np.ndarray, n_constrained: int) -> tuple[np.ndarray, np.ndarray]:
    """Row basis and constrained-row flags of one joint element.

    Returns:
        basis: (3, 3) rows; constrained: (3,) bool.
    """
    if n_constrained in (0, 3):
        return np.eye(3), np.full(3, n_constrained == 3)
    basis = axis_basis(axis)
    if n_constrained == 1:
        return basis, np.array([False, False, True])
    return basis, np.array([True, True, False])


# Axes of a universal or gimbal joint must be orthogonal to this, after normalising (the
# core's kAxesOrthogonalTolerance, core/maximal/euler_joints.h, on the unit rows it gets).
AXES_ORTHOGONAL_TOL = 1e-9


def joint_axes(joint_type, axis, axes=None) -> np.ndarray:
    """The unit axes (k, 3) of a universal (k = 2) or gimbal (k = 3) joint, in the joint frame.

    ``axes`` as given (normalised), or by default from ``axis`` a: (a, v1) and (a, v1, v2)
    with (v1, v2, a) = axis_basis(a), right-handed (axis z: z, x, y; a human's hips).

    Raises:
        ValueError: wrong count, a zero axis, or axes not orthogonal.
    """
    k = AXES_JOINTS[JointType(joint_type)]
    if axes is None:
        v1, v2, a = axis_basis(axis)
        return np.array([a, v1, v2][:k])
    rows = np.asarray(axes, dtype=float)
    if rows.shape != (k, 3):
        raise ValueError(f"a {JointType(joint_type).value} joint has {k} axes (3 numbers each), got {rows.tolist()}")
    out = np.array([axis_basis(r)[2] for r in rows])
    gram = out @ out.T - np.eye(k)
    if np.max(np.abs(gram)) > AXES_ORTHOGONAL_TOL:
        raise ValueError(f"the axes must be mutually orthogonal, got {rows.tolist()}")
    return out


def axis_names(joint) -> list[str]:
    """Names of a universal or gimbal joint's angles: its ``axis_names``, else ``NAME:t1``, ..."""
    if joint.axis_names is not None:
        return list(joint.axis_names)
    return [f"{joint.name}:t{i + 1}" for i in range(AXES_JOINTS[JointType(joint.type)])]


def axes_basis(joint_type, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotational rows and constrained flags of a universal or gimbal joint (the core's
    layout, euler_joints.h): universal (a1, a2, a1 x a2), the third constrained; gimbal
    (a1, a2, a3), none."""
    if JointType(joint_type) == JointType.UNIVERSAL:
        return np.array([axes[0], axes[1], np.cross(axes[0], axes[1])]), np.array([False, False, True])
    return np.array(axes, dtype=float), np.zeros(3, dtype=bool)


@dataclass(frozen=True)
class Body:
    """A rigid body; its frame is at the centre of mass.

    Attributes:
        name: unique name.
        mass: kg.
        inertia: (3, 3) inertia about the centre of mass, body frame (kg m^2).
        shape: geometry for drawing (and default inertia).
        visuals: more shapes, for drawing only.
    """

    name: str
    mass: float
    inertia: np.ndarray
    shape: Shape = field(default_factory=lambda: Shape("frame"))
    visuals: list[Shape] = field(default_factory=list)


@dataclass(frozen=True)
class Joint:
    """A joint between a parent (a body, or the origin) and a child body.

    Attributes:
        name: unique name.
        type: the Dojo joint type.
        parent: parent body index, or ORIGIN.
        child: child body index.
        axis: (3,) unit axis in the parent's joint frame.
        rotation_axis: (3,) the rotational element's own axis, or None for ``axis`` (Dojo's
            one axis for both elements); skydy's subsets whose free translations and
            rotations do not share an axis (scene/dofs.py).
        parent_vertex: (3,) joint point in the parent body frame (world frame for the origin).
        child_vertex: (3,) joint point in the child body frame.
        orientation_offset: (4,) joint frame relative to the parent body [w,x,y,z].
        spring: (n,) stiffness per free coordinate (N/m or N m/rad).
        damper: (n,) damping per free coordinate (N s/m or N m s/rad).
        armature: (n,) rotor inertia per free coordinate (kg m^2 or kg): kinetic energy
            1/2 a theta_dot^2 of the coordinate's rate (MuJoCo's armature). The
            minimal-coordinate layer models it (M += a on the coordinate's diagonal); the
            variational integrator refuses a mechanism with any (simulation.step).
        spring_offset: (n,) rest value of the free coordinates.
        friction: (n,) dry (Coulomb) friction per free coordinate (N m or N, >= 0): the
            step's impulse on the coordinate opposes its rate with |impulse| <= h F, and
            holds it when the other impulses are within that (core/maximal/residual.h).
        limits: (lower (n,), upper (n,)) or None.
        damper_form: "midpoint" (second order) or "implicit" (first order, L-stable):
            how the step discretises the damper (core/maximal/residual.h, docs/physics.md "Joints").
        locked: Drake's Lock: every free coordinate is held where each step starts
            (one lock row per free coordinate on the joint impulses, core/maximal/kinematics.h
            lock_row), so the joint's velocities stay zero. A no-op on a fixed joint.
        axes: (k, 3) a universal (k = 2) or gimbal (k = 3) joint's axes in the joint frame,
            orthogonal (joint_axes; None: from ``axis``); its rotation is R(a1, t1) R(a2, t2)
            [R(a3, t3)] and its rotational coordinates the angles t_i.
        axis_names: (k,) names of those angles (the URDF joints of the chain it stands for;
            None: ``name:t1`` ...): the minimal-coordinate layer's coordinate names (axis_names()).
    """

    name: str
    type: JointType
    parent: int
    child: int
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    parent_vertex: np.ndarray = field(default_factory=lambda: np.zeros(3))
    child_vertex: np.ndarray = field(default_factory=lambda: np.zeros(3))
    orientation_offset: np.ndarray = field(default_factory=lambda: IDENTITY.copy())
    spring: np.ndarray | None = None
    damper: np.ndarray | None = None
    spring_offset: np.ndarray | None = None
    friction: np.ndarray | None = None
    limits: tuple[np.ndarray, np.ndarray] | None = None
    damper_form: str = "midpoint"
    armature: np.ndarray | None = None
    locked: bool = False
    rotation_axis: np.ndarray | None = None
    axes: np.ndarray | None = None
    axis_names: tuple[str, ...] | None = None

    @property
    def element_axes(self) -> tuple[np.ndarray, np.ndarray]:
        """(translational element's axis, rotational element's axis), each (3,)."""
        return self.axis, self.axis if self.rotation_axis is None else self.rotation_axis

    @property
    def constrained(self) -> tuple[int, int]:
        """(constrained translations, constrained rotations)."""
        return CONSTRAINED[JointType(self.type)]

    @property
    def free(self) -> tuple[int, int]:
        """(free translations, free rotations)."""
        nt, nr = self.constrained
        return 3 - nt, 3 - nr

    @property
    def input_dimension(self) -> int:
        """Number of free coordinates (= inputs)."""
        return sum(self.free)


# How the step discretises a damper (core/maximal/residual.h): second order, or first
# order and L-stable. Read from the core, which defines it (model.h kDamperForms).
DAMPER_FORMS = _core.DAMPER_FORMS

# Contact models (dojo_engine_notes.md 4.2): unknowns per contact, s and gamma each
# (the core's contact_params.h).
CONTACT_HALF_SIZE = dict(_core.CONTACT_HALF_SIZE)
# The core's collision table (core/maximal/collision_kind.h), by what body a carries: a
# sphere against a half-space, sphere, capsule or box; a segment (a capsule's core)
# against a capsule or a box; a circle (a cylinder cap's rim) against a half-space; a
# box's corner against a box. Scene shape pairs compile into these (model/collisions.py).
COLLISION_KINDS = _core.COLLISION_KINDS
HALF_SPACE_KINDS = _core.HALFSPACE_KINDS


@dataclass(frozen=True)
class Contact:
    """A contact: a sphere (or a segment, a circle) on ``body`` against a half-space or another body's shape.

    Attributes:
        name: unique name.
        body: index of the body carrying the sphere (body a).
        model: "impact", "linear" or "nonlinear".
        friction: Coulomb coefficient (unused by impact).
        radius: sphere radius (m), 0 for a point.
        offset: (3,) sphere centre in the body frame (a segment's middle, a circle's centre).
        kind: one of COLLISION_KINDS (the pair).
        other: index of the other body, or ORIGIN for a half-space.
        params: kind parameters: halfspace ``normal`` (3,) unit and ``point`` (3,),
            world; sphere ``offset`` (3,) and ``radius`` in the other body's frame;
            capsule ``end1``, ``end2`` (3,) and ``radius``; box ``centre`` (3,) and
            ``half_sizes`` (3,).
        restitution: coefficient e in [0, 1] of the normal velocity after an impact
            (0: inelastic; core/maximal/restitution.h).
            ``half_sizes`` (3,); segment_capsule as capsule, segment_box and corner_box as box,
            circle_halfspace as halfspace.
        shape_a: (7,) body a's primitive beyond the sphere, in its frame: segment
            half-vector (3,) (ends offset -+ it); circle unit axis (3,) and radius;
            a box corner's box centre (3,) and half sizes (3,); zeros for a sphere (core/maximal/collision.h's kShapeASize layout).
        margin: the contact joins a step's solve only when its distance at the step's
            predicted configuration is within this (m); infinity: always (core/maximal/margins.h).
    """

    name: str
    body: int
    model: str = "nonlinear"
    friction: float = 0.5
    radius: float = 0.0
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))
    kind: str = "halfspace"
    other: int = ORIGIN
    params: dict = field(default_factory=lambda: {"normal": np.array([0.0, 0.0, 1.0]), "point": np.zeros(3)})
    restitution: float = 0.0
    shape_a: np.ndarray = field(default_factory=lambda: np.zeros(7))
    margin: float = math.inf


@dataclass(frozen=True)
class Actuator:
    """One input of the mechanism (docs/scenes.md "Actuators"): a joint's free coordinate,
    or a force and/or torque fixed in a body (body frame, so they turn with the body).

    Attributes:
        name: the input's name.
        joint: joint index of a joint actuator (-1 for a body actuator).
        coordinate: which free coordinate of that joint (0-based).
        body: body index of a body actuator (-1 for a joint actuator).
        force: (3,) body-frame force per unit input (N), or None.
        point: (3,) where the force acts, body frame from the centre of mass (m).
        torque: (3,) body-frame torque per unit input (N m), or None.
        gain: the input is multiplied by it.
    """

    name: str
    joint: int = -1
    coordinate: int = 0
    body: int = -1
    force: np.ndarray | None = None
    point: np.ndarray = field(default_factory=lambda: np.zeros(3))
    torque: np.ndarray | None = None
    gain: float = 1.0


# What a scene attaches to a mechanism for running it (Mechanism.with_run_setup).
RUN_SETUP_FIELDS = ("source", "scene_file", "integrator", "default_options", "default_steps", "initial", "initial_t0",
                    "initial_sources", "controller", "external", "random_initial", "random_intervals",
                    "default_positions", "joint_limits")
"""Plain data the scene builder derives; the builder never solves, so none of it is a
solve's result.

``initial`` is Dojo's state [x, v15, q, w15] (the integrator's midpoint velocities into
step 0) when the scene gives it without a solve (``initial_velocity: midpoint``, or an rk4
scene), else None; ``initial_t0`` the same pose with the velocities at t = 0 (the scene's
initial velocities, docs/physics.md "Velocities at t0 and at the knots"), or None when not
known. The midpoint state of a t0 scene is solved when a run starts or when asked
(``simulation.initial.initial_state``, ``dojo.initial_state``); ``initial_sources`` are the
fields its failure is blamed on. ``integrator``: "variational" or "rk4".
``random_initial``: the coordinates drawn for joints' random initial poses,
{joint: {coordinate: value}} (docs/planar.md), or None; ``random_intervals``: {joint index:
{coordinate: (low, high)}} the draws came from; ``default_positions``: (nf,) the joints'
initial positions before any draw. ``joint_limits``: the joints' position, velocity and
acceleration limits as the run file's root attribute records them (Drake's three pairs).

``source`` is the one reference back to the description: the scene's SceneSource (file,
field lines, overrides), so that a problem found after the build (a run's initial state,
the minimal layer's refusals) names the file, line and field; the Mechanism reads nothing
else from the scene.
"""


def _readonly(a) -> np.ndarray:
    """A read-only float copy of an array (a built mechanism never changes)."""
    out = np.array(a, dtype=float)
    out.flags.writeable = False
    return out


def _frozen_parts(bodies, joints, contacts):
    """Copies of the parts whose arrays cannot be written (the dataclasses are frozen)."""
    bodies = tuple(replace(b, inertia=_readonly(b.inertia)) for b in bodies)
    joints = tuple(
        replace(
            j,
            axis=_readonly(j.axis), parent_vertex=_readonly(j.parent_vertex), child_vertex=_readonly(j.child_vertex),
            rotation_axis=None if j.rotation_axis is None else _readonly(j.rotation_axis),
            axes=None if j.axes is None else _readonly(j.axes),
            orientation_offset=_readonly(j.orientation_offset),
            spring=None if j.spring is None else _readonly(j.spring),
            damper=None if j.damper is None else _readonly(j.damper),
            armature=None if j.armature is None else _readonly(j.armature),
            spring_offset=None if j.spring_offset is None else _readonly(j.spring_offset),
            friction=None if j.friction is None else _readonly(j.friction),
            limits=None if j.limits is None else (_readonly(j.limits[0]), _readonly(j.limits[1])),
        )
        for j in joints
    )
    contacts = tuple(
        replace(c, offset=_readonly(c.offset), shape_a=_readonly(c.shape_a),
                params=MappingProxyType({k: _readonly(v) for k, v in c.params.items()}))
        for c in contacts
    )
    return bodies, joints, contacts


class Mechanism:
    """Bodies, joints and the state-independent structure of the step.

    Immutable once built: every array is read-only and setting an attribute raises,
    so a parameter cannot be edited behind the compiled core's back; a new value
    means a new Mechanism (``dojo.with_parameters``, ``--set``). The run set-up a
    scene attaches (initial state, solver options, controller, external forces,
    steps) is replaced by ``with_run_setup``, which shares the compiled core.

    Attributes (arrays over joints j, constraint rows r, free coordinates f):
        timestep, gravity (3,), bodies, joints, nb, nj.
        mass (nb,), inertia (nb,3,3).
        parent (nj,), child (nj,): body indices (parent ORIGIN for the world).
        parent_vertex, child_vertex (nj,3), orientation_offset (nj,4).
        basis (nj,6,3): rows of the translational (0:3) and rotational (3:6) basis.
        constrained (nj,6): True where a basis row is a constraint.
        locked (nj,): True for a locked joint (Joint.locked).
        nl: constraint rows (with the locked joints' lock rows).
        free_joint, free_slot (nf,): joint and basis row of each free coordinate.
        joint_free_range[j]: slice into the free-coordinate arrays.
        spring, damper, spring_offset (nf,): per free coordinate.
        tree_joints: joint indices in root-to-leaves order, loop joints excluded (the core's).
        loop_joints: joints closing kinematic loops (the core's).
        limit_free, limit_sign, limit_bound (nlim,): limited free coordinate, +1 for
            a lower bound (theta - bound >= 0) and -1 for an upper one (bound - theta >= 0).
        contacts: the Contact list; nc their number.
    """

    # What the core derives from the description, read from it (never a second copy):
    # tests/test_project.py keeps it so.
    @property
    def nl(self) -> int:
        """Constraint rows, with the locked joints' lock rows (the core's layout)."""
        return self.core.nl

    @property
    def tree_joints(self) -> list[int]:
        """Joint indices in root-to-leaves order, loop joints excluded (the core's)."""
        return self.core.tree_joints

    @property
    def loop_joints(self) -> list[int]:
        """Joints closing kinematic loops (Dojo's get_loop_joints; the core's)."""
        return self.core.loop_joints

    def __init__(
        self,
        bodies: list[Body],
        joints: list[Joint],
        timestep: float = 0.01,
        gravity=(0.0, 0.0, -9.81),
        name: str = "mechanism",
        contacts: list[Contact] | None = None,
        actuators: list[Actuator] | None = None,
    ):
        problems = _input_problems(bodies, joints, contacts or [], timestep, gravity)
        problems += _actuator_problems(actuators or [], bodies, joints)
        if problems:
            raise SceneError([Problem(f"mechanism {name!r}", None, path, message) for path, message in problems])
        self.name = name
        self.timestep = float(timestep)
        self.gravity = np.asarray(gravity, dtype=float).reshape(3)
        bodies, joints, contacts = _frozen_parts(bodies, joints, contacts or [])
        self.bodies = bodies
        self.joints = joints
        self.nb = len(self.bodies)
        self.nj = len(self.joints)
        self._names = {b.name: i for i, b in enumerate(self.bodies)}
        self._joint_names = {j.name: i for i, j in enumerate(self.joints)}

        self.mass = np.array([b.mass for b in self.bodies], dtype=float)
        self.inertia = np.array([np.asarray(b.inertia, dtype=float) for b in self.bodies]).reshape(self.nb, 3, 3)

        nj = self.nj
        self.parent = np.array([j.parent for j in self.joints], dtype=int)
        self.child = np.array([j.child for j in self.joints], dtype=int)
        self.parent_vertex = np.array([j.parent_vertex for j in self.joints], dtype=float).reshape(nj, 3)
        self.child_vertex = np.array([j.child_vertex for j in self.joints], dtype=float).reshape(nj, 3)
        self.orientation_offset = np.array([j.orientation_offset for j in self.joints], dtype=float).reshape(nj, 4)
        self.basis = np.zeros((nj, 6, 3))
        self.constrained = np.zeros((nj, 6), dtype=bool)
        for i, j in enumerate(self.joints):
            nt, nr = j.constrained
            translation_axis, rotation_axis = j.element_axes
            self.basis[i, :3], self.constrained[i, :3] = element_basis(translation_axis, nt)
            if JointType(j.type) in AXES_JOINTS:
                self.basis[i, 3:], self.constrained[i, 3:] = axes_basis(j.type, joint_axes(j.type, j.axis, j.axes))
            else:
                self.basis[i, 3:], self.constrained[i, 3:] = element_basis(rotation_axis, nr)
        # (nj,) how the core reads each joint's rotational rows (_core.JOINT_ROTATIONS)
        self.joint_rotation = np.array([_core.JOINT_ROTATIONS.index(
            JointType(j.type).value if JointType(j.type) in AXES_JOINTS else "quaternion") for j in self.joints], dtype=int)

        # Free coordinates, joint by joint, translational first (the core's order); the
        # constraint rows themselves are laid out by the core (core/maximal/model.cpp).
        self.locked = np.array([bool(j.locked) for j in self.joints], dtype=bool)
        frees = [(i, s) for i in range(nj) for s in range(6) if not self.constrained[i, s]]
        self.free_joint = np.array([f[0] for f in frees], dtype=int)
        self.free_slot = np.array([f[1] for f in frees], dtype=int)
        self.nf = len(frees)
        self.joint_free_range = _ranges(self.free_joint, nj)

        self.spring = np.concatenate([_per_free(j, j.spring) for j in self.joints]) if nj else np.zeros(0)
        self.damper = np.concatenate([_per_free(j, j.damper) for j in self.joints]) if nj else np.zeros(0)
        self.spring_offset = np.concatenate([_per_free(j, j.spring_offset) for j in self.joints]) if nj else np.zeros(0)
        # (nf,) rotor inertia per free coordinate (armature; core/maximal/rotor.h, minimal/tree.h)
        self.armature = np.concatenate([_per_free(j, j.armature) for j in self.joints]) if nj else np.zeros(0)
        self.has_armature = bool(np.any(self.armature != 0))
        # (nf,) dry joint friction per free coordinate (core/maximal/residual.h)
        self.joint_friction = np.concatenate([_per_free(j, j.friction) for j in self.joints]) if nj else np.zeros(0)
        self.has_joint_friction = bool(np.any(self.joint_friction > 0))
        # (nf,) 1 where the damper takes the first-order implicit form (core/maximal/residual.h)
        self.damper_implicit = np.concatenate(
            [np.full(j.input_dimension, int(j.damper_form == "implicit")) for j in self.joints]
        ).astype(int) if nj else np.zeros(0, dtype=int)

        # Joint limits: one inequality per finite bound of a free coordinate.
        limit_free, limit_sign, limit_bound = [], [], []
        for i, j in enumerate(self.joints):
            if j.limits is None:
                continue
            lower, upper = (np.asarray(v, dtype=float).reshape(-1) for v in j.limits)
            r = self.joint_free_range[i]
            for k, f in enumerate(range(r.start, r.stop)):
                if np.isfinite(lower[k]):
                    limit_free.append(f), limit_sign.append(1.0), limit_bound.append(lower[k])
                if np.isfinite(upper[k]):
                    limit_free.append(f), limit_sign.append(-1.0), limit_bound.append(upper[k])
        self.limit_free = np.array(limit_free, dtype=int)
        self.limit_sign = np.array(limit_sign, dtype=float)
        self.limit_bound = np.array(limit_bound, dtype=float)
        self.nlim = len(limit_free)

        self.contacts = contacts
        self.nc = len(self.contacts)

        # Inputs: the actuators in order, or one per free coordinate (Dojo's joint inputs).
        self.actuators = tuple(
            replace(a, force=None if a.force is None else _readonly(a.force), point=_readonly(a.point),
                    torque=None if a.torque is None else _readonly(a.torque))
            for a in (actuators or ())
        )
        self.has_actuators = bool(self.actuators)
        self.nu = len(self.actuators) if self.has_actuators else self.nf
        # (nu,) the free coordinate each input drives (-1 for a body actuator) and its gain
        if self.has_actuators:
            self.actuator_free = np.array(
                [self.joint_free_range[a.joint].start + a.coordinate if a.joint >= 0 else -1 for a in self.actuators],
                dtype=int)
            self.actuator_gain = np.array([float(a.gain) for a in self.actuators])
        else:
            self.actuator_free = np.arange(self.nf, dtype=int)
            self.actuator_gain = np.ones(self.nf)
        for c in self.contacts:
            if c.model not in CONTACT_HALF_SIZE:
                raise SceneError(f"contact {c.name!r}: unknown model {c.model!r}")
            if c.kind not in COLLISION_KINDS:
                raise SceneError(f"contact {c.name!r}: unknown collision kind {c.kind!r}")
            if (c.kind in HALF_SPACE_KINDS) != (c.other == ORIGIN):
                raise SceneError(f"contact {c.name!r}: a {c.kind} pair is against {'the world' if c.other == ORIGIN else 'a body'}")
        # The C++ core's frozen Model (the step's structure, compiled once) and the
        # scratch Data the API's one-off steps use (a run loop makes its own).
        self.core = compile_model(self)
        self.core_data = _core.Data(self.core)
        # the tree order is the core's (derived once there: nl, tree_joints, loop_joints
        # are properties reading it)
        self.tree_joint_of_body = np.full(self.nb, -1, dtype=int)
        for j in self.tree_joints:
            self.tree_joint_of_body[self.child[j]] = j
        for key in RUN_SETUP_FIELDS:
            self.__dict__[key] = None
        self.__dict__["external"] = ()
        self.__dict__["integrator"] = "variational"
        for key, value in self.__dict__.items():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        self.__dict__["_frozen"] = True

    def __setattr__(self, name: str, value) -> None:
        if self.__dict__.get("_frozen", False):
            raise AttributeError(
                f"a Mechanism is immutable: cannot set {name!r} on a built mechanism; build a new one "
                "(dojo.with_parameters, --set PATH=VALUE, or with_run_setup for the initial state and controller)"
            )
        object.__setattr__(self, name, value)

    def with_run_setup(self, **fields) -> Mechanism:
        """A copy with the run set-up replaced (RUN_SETUP_FIELDS).

        The physics is unchanged, so the compiled core Model is shared; the copy gets
        its own scratch Data.
        """
        unknown = set(fields) - set(RUN_SETUP_FIELDS)
        if unknown:
            raise TypeError(f"not run set-up fields: {', '.join(sorted(unknown))} (expected {', '.join(RUN_SETUP_FIELDS)})")
        out = copy.copy(self)
        out.__dict__.pop("_joint_handles", None)  # handles belong to the mechanism they were made for
        out.__dict__.pop("_initial_state", None)  # solved from the old set-up (simulation.initial)
        if "initial" in fields and "initial_t0" not in fields:
            out.__dict__["initial_t0"] = None  # the old one belongs to the old initial state
        for key, value in fields.items():
            if key in ("initial", "initial_t0", "default_positions") and value is not None:
                value = _readonly(value)
            elif key == "external":
                value = tuple(value or ())
            out.__dict__[key] = value
        out.__dict__["core_data"] = _core.Data(out.core)
        return out

    def run_setup(self) -> dict:
        """The run set-up fields and their values (for with_run_setup)."""
        return {key: self.__dict__[key] for key in RUN_SETUP_FIELDS}

    # ----------------------------------------------------------------- lookup
    def body_index(self, name: str) -> int:
        """Index of a body by name."""
        try:
            return self._names[name]
        except KeyError:
            raise KeyError(f"no body named {name!r} (bodies: {', '.join(self._names)})") from None

    def joint_index(self, name: str) -> int:
        """Index of a joint by name."""
        try:
            return self._joint_names[name]
        except KeyError:
            raise KeyError(f"no joint named {name!r} (joints: {', '.join(self._joint_names)})") from None

    def get_body(self, name_or_index: str | int) -> Body:
        """A body by name or index."""
        i = name_or_index if isinstance(name_or_index, int) else self.body_index(name_or_index)
        return self.bodies[i]

    def get_joint(self, name_or_index: str | int) -> Joint:
        """A joint by name or index."""
        i = name_or_index if isinstance(name_or_index, int) else self.joint_index(name_or_index)
        return self.joints[i]

    def joint(self, name_or_index: str | int):
        """A handle with Drake's joint accessors (dojo_cli.model.joint_handle, docs/planar.md).

        The handle is kept per mechanism, so that its default pose persists between calls."""
        from dojo_cli.model.joint_handle import JointHandle

        i = name_or_index if isinstance(name_or_index, int) else self.joint_index(name_or_index)
        handles = self.__dict__.setdefault("_joint_handles", {})
        if i not in handles:
            handles[i] = JointHandle(self, i)
        return handles[i]

    def get_contact(self, name_or_index: str | int) -> Contact:
        """A contact by name or index (Dojo's get_contact)."""
        i = name_or_index if isinstance(name_or_index, int) else self.contact_index(name_or_index)
        return self.contacts[i]

    def get_node(self, name: str) -> Body | Joint | Contact | Origin:
        """A node of the mechanism's graph by name (Dojo's get_node): ``"origin"`` (the world
        frame), a body, a joint or a contact, looked up in that order."""
        if name == ORIGIN_NAME:
            return ORIGIN_NODE
        if name in self._names:
            return self.get_body(name)
        if name in self._joint_names:
            return self.get_joint(name)
        if any(c.name == name for c in self.contacts):
            return self.get_contact(name)
        raise KeyError(f"no node named {name!r}: not 'origin', a body, a joint or a contact")

    # ------------------------------------------------------------- dimensions
    def input_dimensions(self) -> list[int]:
        """Inputs per joint, in joint order; with ``actuators``, one per actuator (their
        sum is always nu)."""
        if self.has_actuators:
            return [1] * self.nu
        return [j.input_dimension for j in self.joints]

    @property
    def input_dimension(self) -> int:
        """Total number of inputs nu (the free coordinates, or the actuators)."""
        return self.nu

    def input_names(self) -> list[str]:
        """One name per input: the actuators' names, or the coordinate names (``hinge:r0``)."""
        if self.has_actuators:
            return [a.name for a in self.actuators]
        return self.coordinate_names()

    def input_map(self) -> np.ndarray:
        """(nf, nu): the joint input per free coordinate of the inputs u is ``input_map() @ u``
        (the joint actuators' gains; body actuators' columns are zero)."""
        out = np.zeros((self.nf, self.nu))
        for a, f in enumerate(self.actuator_free):
            if f >= 0:
                out[f, a] = self.actuator_gain[a]
        return out

    def maximal_dimension(self, attitude_jacobian: bool = False) -> int:
        """13 per body ([x, v, q, w]), or 12 in tangent coordinates."""
        return (12 if attitude_jacobian else 13) * self.nb

    def minimal_dimension(self) -> int:
        """Minimal coordinates plus velocities: 2 per free coordinate."""
        return 2 * self.nf

    @property
    def has_inequalities(self) -> bool:
        """True when the step has contacts, joint limits or joint friction (interior-point solve)."""
        return self.nc > 0 or self.nlim > 0 or self.has_joint_friction

    def contact_index(self, name: str) -> int:
        """Index of a contact by name."""
        for i, c in enumerate(self.contacts):
            if c.name == name:
                return i
        raise KeyError(f"no contact named {name!r}")

    def root_to_leaves_ordering(self, exclude_origin: bool = True, exclude_loop_joints: bool = True) -> list[str]:
        """Node names from the root to the leaves, each visited once (Dojo's
        root_to_leaves_ordering, src/mechanism/ordering.jl): a depth-first walk of the
        mechanism's graph from "origin", each joint followed by its child body's subtree, a
        body's contacts after its child joints. ``exclude_origin`` leaves "origin" out;
        ``exclude_loop_joints`` leaves out the joints that close loops, which are otherwise
        appended at the end (as Dojo does). The joint indices alone, in the same order, are
        ``mech.tree_joints`` (and ``mech.loop_joints``)."""
        children: dict[int, list[int]] = {}
        for j in self.tree_joints:
            children.setdefault(int(self.joints[j].parent), []).append(int(j))
        contacts: dict[int, list[str]] = {}
        for c in self.contacts:
            contacts.setdefault(int(c.body), []).append(c.name)
        order: list[str] = [] if exclude_origin else [ORIGIN_NAME]

        def visit(body: int) -> None:
            for j in children.get(body, ()):
                order.append(self.joints[j].name)
                child = int(self.joints[j].child)
                order.append(self.bodies[child].name)
                visit(child)
            order.extend(contacts.get(body, ()))

        visit(ORIGIN)
        if not exclude_loop_joints:
            order.extend(self.joints[j].name for j in self.loop_joints)
        return order

    def coordinate_names(self) -> list[str]:
        """One name per free coordinate: ``joint:t0``, ``joint:r0``..."""
        names = []
        for i, s in zip(self.free_joint, self.free_slot):
            j = self.joints[i]
            elem = "t" if s < 3 else "r"
            k = int(np.sum((self.free_joint == i) & (self.free_slot < s) & ((self.free_slot < 3) == (s < 3))))
            names.append(f"{j.name}:{elem}{k}")
        return names

    def state_names(self) -> tuple[list[str], list[str]]:
        """Names of the stored minimal coordinates and velocities (storage ``minimal/q``,
        ``minimal/v``): a planar_axis joint's are Drake's PlanarJoint suffixes
        ``joint:x, joint:y, joint:qz`` / ``joint:vx, joint:vy, joint:wz`` (docs/planar.md);
        every other coordinate is ``coordinate_names()``'s, its rate ``<name>_dot``."""
        q_names = self.coordinate_names()
        v_names = [f"{c}_dot" for c in q_names]
        for i, j in enumerate(self.joints):
            if JointType(j.type) == JointType.PLANAR_AXIS:
                r = self.joint_free_range[i]
                q_names[r] = [f"{j.name}:{c}" for c in PLANAR_Q_SUFFIXES]
                v_names[r] = [f"{j.name}:{c}" for c in PLANAR_V_SUFFIXES]
        return q_names, v_names

    def __repr__(self) -> str:
        return (
            f"Mechanism({self.name!r}, {self.nb} bodies, {self.nj} joints, {self.nf} dof, "
            f"{self.nc} contacts, {self.nlim} limits, h={self.timestep})"
        )


def _input_problems(bodies, joints, contacts, timestep, gravity) -> list[tuple[str, str]]:
    """(field path, message) for each value the model cannot be built from.

    The last check before the compiled core: every number finite, masses and the
    timestep positive, inertias invertible, axes usable. Paths index the scene's
    sections (``bodies.0.inertia``), so the scene builder can point at the line.
    """
    problems: list[tuple[str, str]] = []

    def finite(path: str, value, what: str = "") -> bool:
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            problems.append((path, f"must be numbers, got {value!r}"))
            return False
        if not np.all(np.isfinite(arr)):
            problems.append((path, f"not finite{what} (got {arr.tolist()})"))
            return False
        return True

    if finite("timestep", timestep) and not float(timestep) > 0:
        problems.append(("timestep", f"must be > 0, got {float(timestep):g}"))
    if finite("gravity", gravity) and np.size(gravity) != 3:
        problems.append(("gravity", f"must have 3 entries, got {np.size(gravity)}"))
    for i, b in enumerate(bodies):
        if finite(f"bodies.{i}.mass", b.mass) and not float(b.mass) > 0:
            problems.append((f"bodies.{i}.mass", f"must be > 0, got {float(b.mass):g}"))
        if finite(f"bodies.{i}.inertia", b.inertia):
            inertia = np.asarray(b.inertia, dtype=float)
            if inertia.shape != (3, 3):
                problems.append((f"bodies.{i}.inertia", f"must be 3x3, got shape {inertia.shape}"))
            elif not _invertible(inertia):
                problems.append((f"bodies.{i}.inertia", f"must be invertible with a finite inverse, got {inertia.tolist()}"))
    for i, j in enumerate(joints):
        for key in ("parent_vertex", "child_vertex", "orientation_offset", "spring", "damper", "spring_offset", "armature", "friction"):
            value = getattr(j, key)
            if value is not None:
                finite(f"joints.{i}.{key}", value)
        if j.friction is not None and np.any(np.asarray(j.friction, dtype=float) < 0):
            problems.append((f"joints.{i}.friction", f"must be >= 0, got {np.asarray(j.friction, dtype=float).tolist()}"))
        if j.damper_form not in DAMPER_FORMS:
            problems.append((f"joints.{i}.damper_form", f"must be one of {', '.join(DAMPER_FORMS)}, got {j.damper_form!r}"))
        # the axis builds a basis only for an element with one or two constrained directions
        # (with a rotation_axis of its own, each element's axis for itself)
        checks = [("axis", j.axis, set(j.constrained))] if j.rotation_axis is None else \
            [("axis", j.axis, {j.constrained[0]}), ("rotation_axis", j.rotation_axis, {j.constrained[1]})]
        for key, axis, counts in checks:
            if finite(f"joints.{i}.{key}", axis) and {1, 2} & counts:
                try:
                    axis_basis(axis)
                except ValueError as exc:
                    problems.append((f"joints.{i}.{key}", str(exc)))
        if j.axis_names is not None and (JointType(j.type) not in AXES_JOINTS
                                         or len(j.axis_names) != AXES_JOINTS[JointType(j.type)]):
            problems.append((f"joints.{i}.axis_names", "one name per axis of a universal (2) or gimbal (3) joint"))
        if JointType(j.type) in AXES_JOINTS and finite(f"joints.{i}.axes", j.axis if j.axes is None else j.axes):
            try:
                joint_axes(j.type, j.axis, j.axes)
            except ValueError as exc:
                problems.append((f"joints.{i}.axes", str(exc)))
        if j.limits is not None and any(np.any(np.isnan(np.asarray(v, dtype=float))) for v in j.limits):
            problems.append((f"joints.{i}.limits", "not finite (nan; use -.inf or .inf for no bound)"))
    for i, c in enumerate(contacts):
        finite(f"contacts.{i}.friction", c.friction)
        finite(f"contacts.{i}.radius", c.radius)
        finite(f"contacts.{i}.offset", c.offset)
        if finite(f"contacts.{i}.restitution", c.restitution) and not 0.0 <= float(c.restitution) <= 1.0:
            problems.append((f"contacts.{i}.restitution", f"must be in [0, 1], got {float(c.restitution):g}"))
        finite(f"contacts.{i}.shape", c.shape_a)
        if not float(c.margin) >= 0.0:  # infinity is allowed (always in the solve)
            problems.append((f"contacts.{i}.margin", f"must be >= 0, got {float(c.margin):g}"))
        for key, value in c.params.items():
            finite(f"contacts.{i}.against", value, f" ({key})")
    return problems


def _actuator_problems(actuators, bodies, joints) -> list[tuple[str, str]]:
    """(field path, message) for actuators the model cannot be built from (the scene's
    schema checks names and counts first; this guards the Python API)."""
    problems: list[tuple[str, str]] = []
    names = set()
    for i, a in enumerate(actuators):
        path = f"actuators.{i}"
        if a.name in names:
            problems.append((f"{path}.name", f"duplicate actuator name {a.name!r}"))
        names.add(a.name)
        if (a.joint >= 0) == (a.body >= 0):
            problems.append((path, "needs exactly one of a joint and a body"))
            continue
        if not math.isfinite(float(a.gain)):
            problems.append((f"{path}.gain", f"not finite (got {a.gain})"))
        if a.joint >= 0:
            if a.joint >= len(joints):
                problems.append((f"{path}.joint", f"joint index {a.joint} out of range"))
            elif not 0 <= a.coordinate < joints[a.joint].input_dimension:
                n = joints[a.joint].input_dimension
                problems.append((f"{path}.coordinate", f"must be in 0..{n - 1} (joint {joints[a.joint].name!r} has {n} "
                                 f"free coordinate{'s' if n != 1 else ''}), got {a.coordinate}"))
            continue
        if a.body >= len(bodies):
            problems.append((f"{path}.body", f"body index {a.body} out of range"))
        if a.force is None and a.torque is None:
            problems.append((path, "a body actuator needs a force or a torque"))
        for key in ("force", "point", "torque"):
            value = getattr(a, key)
            if value is None:
                continue
            arr = np.asarray(value, dtype=float)
            if arr.shape != (3,) or not np.all(np.isfinite(arr)):
                problems.append((f"{path}.{key}", f"must be 3 finite numbers, got {arr.tolist()}"))
            elif key != "point" and not np.any(arr):
                problems.append((f"{path}.{key}", "must be nonzero"))
    return problems


def _invertible(matrix: np.ndarray) -> bool:
    """Whether a finite 3x3 matrix has a finite inverse (no warning either way)."""
    with np.errstate(all="ignore"):  # an inverse that overflows is the answer here, not a warning
        try:
            inverse = np.linalg.inv(matrix)
        except np.linalg.LinAlgError:
            return False
    return bool(np.all(np.isfinite(inverse)))


def _per_free(joint: Joint, values) -> np.ndarray:
    n = joint.input_dimension
    if values is None:
        return np.zeros(n)
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size == 1 and n != 1:
        arr = np.full(n, float(arr[0]))
    if arr.size != n:
        raise SceneError(f"joint {joint.name!r}: expected {n} values per free coordinate, got {arr.size}")
    return arr


def _ranges(owner: np.ndarray, n: int) -> list[slice]:
    out = []
    for i in range(n):
        idx = np.flatnonzero(owner == i)
        out.append(slice(int(idx[0]), int(idx[-1]) + 1) if idx.size else slice(0, 0))
    return out


