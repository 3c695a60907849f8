"""A joint handle with Drake's accessor names (``mech.joint("name")``; docs/planar.md).

Drake's joints read and write a ``Context``; here the state is the mechanism's minimal
state ``y`` (``dojo.maximal_to_minimal(mech, z)``: per joint, its coordinates then its
velocities; ``dojo.minimal_to_maximal(mech, y)`` turns it back into a maximal state). The
setters write into ``y`` in place and return the handle, so that calls chain as Drake's do:

    j = mech.joint("base")
    j.set_translation(y, [1.0, 0.3]).set_rotation(y, 1.5)

A planar_axis joint (Drake's PlanarJoint) has translation (x, y), rotation theta and their
rates (velocities exactly qdot, translation in the parent frame). The ``*_default_*``
accessors read and change the handle's default pose, which starts at the scene's
``initial.position`` (zero without one); ``set_default_state(y)`` writes it into a state
and ``set_random_state(y, rng)`` draws the scene's random pose (``initial.random``) or, without
one, writes the default pose (Drake's SetDefaultState / SetRandomState). Defaults never
change the mechanism, which stays immutable.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.model.joint_types import JointType

# A coordinate axis is in the span of a joint's free directions when its projection onto
# them misses it by less than this (the basis rows are unit vectors to rounding).
_AXIS_TOL = 1e-9


class JointHandle:
    """Accessors for one joint of a mechanism (see the module docstring)."""

    def __init__(self, mech, index: int):
        self._mech = mech
        self.index = int(index)
        joint = mech.joints[self.index]
        self.name = joint.name
        self.type = JointType(joint.type)
        self._free = mech.joint_free_range[self.index]
        self._n = self._free.stop - self._free.start
        # the scene's initial position before any random draw, and the draws' intervals
        # (the builder's run set-up; zeros and none for a mechanism built in Python)
        defaults = getattr(mech, "default_positions", None)
        self._default = np.zeros(self._n) if defaults is None else np.array(defaults[self._free], dtype=float)
        self._random = dict((getattr(mech, "random_intervals", None) or {}).get(self.index, {}))

    # ------------------------------------------------------------------ layout
    @property
    def type_name(self) -> str:
        """Drake's name for the joint's type where Drake has the same joint ("planar" for our
        planar_axis, "weld" for fixed, "quaternion_floating" for floating); for a joint Drake
        does not have, ``"dojo_"`` and our type name (our "planar" joint, two translations,
        would otherwise answer the same as Drake's PlanarJoint). ``self.type`` is always ours."""
        return _DRAKE_TYPE_NAMES.get(self.type, f"dojo_{self.type.value}")

    # ------------------------------------------------------------ structure
    def parent_body(self):
        """The parent Body, or None for the world (Drake's world body; our ORIGIN)."""
        parent = self._mech.joints[self.index].parent
        return None if parent < 0 else self._mech.bodies[parent]

    def child_body(self):
        """The child Body."""
        return self._mech.bodies[self._mech.joints[self.index].child]

    def frame_on_parent(self) -> tuple[np.ndarray, np.ndarray]:
        """Drake's frame F: (origin (3,), orientation [w,x,y,z]) in the parent body's frame
        (in the world frame for the world): our parent_vertex and orientation_offset."""
        joint = self._mech.joints[self.index]
        return np.array(joint.parent_vertex, dtype=float), np.array(joint.orientation_offset, dtype=float)

    def frame_on_child(self) -> tuple[np.ndarray, np.ndarray]:
        """Drake's frame M: (origin (3,), orientation [w,x,y,z]) in the child body's frame.
        M is aligned with F when the joint's coordinates are zero, so its orientation in the
        child frame is the same offset as F's in the parent frame (docs/scenes.md, joints)."""
        joint = self._mech.joints[self.index]
        return np.array(joint.child_vertex, dtype=float), np.array(joint.orientation_offset, dtype=float)

    def can_rotate(self) -> bool:
        """Whether the joint has a free rotational coordinate."""
        return self._mech.joints[self.index].free[1] > 0

    def can_translate(self) -> bool:
        """Whether the joint has a free translational coordinate."""
        return self._mech.joints[self.index].free[0] > 0

    def free_dofs(self) -> tuple[str, ...]:
        """skydy's free degrees of freedom of the joint (``DOF.idx`` with ``DOF.free``): the
        names among ``x y z rx ry rz`` (indices 0..5) whose directions the joint's free
        translations and rotations span, in index order; the others are held (skydy's
        ``free=False``). The directions are the joint's basis rows (the frame its ``axis``
        is given in: skydy's joint frame).

        Raises:
            ValueError: the free directions are not spanned by coordinate axes (a tilted
                axis: not a subset of skydy's six).
        """
        mech = self._mech
        basis = np.asarray(mech.basis[self.index], dtype=float)
        free = ~np.asarray(mech.constrained[self.index], dtype=bool)
        names = []
        for block, labels in ((slice(0, 3), ("x", "y", "z")), (slice(3, 6), ("rx", "ry", "rz"))):
            rows = basis[block][free[block]]
            spanned = [labels[i] for i in range(3)
                       if rows.size and np.linalg.norm(rows.T @ np.linalg.lstsq(rows.T, np.eye(3)[i], rcond=None)[0]
                                                       - np.eye(3)[i]) < _AXIS_TOL]
            if len(spanned) != rows.shape[0]:
                raise ValueError(f"joint {self.name!r}: its free {'translations' if block.start == 0 else 'rotations'} "
                                 f"are not along coordinate axes of the joint frame (rows {rows.tolist()}); "
                                 "skydy's six degrees of freedom cannot name them")
            names += spanned
        return tuple(names)

    def as_dict(self) -> dict:
        """skydy's ``Connection.as_dict``: the connection as plain data: ``body_in`` (the
        parent's name, "origin" for the world), ``body_out``, ``joint`` (its name), ``type``,
        ``body_in_coord`` (the joint point in the parent, parent_vertex), ``body_out_coord``
        (in the child, child_vertex: skydy's opposite sign, coverage table),
        ``orientation_offset`` [w, x, y, z] and ``dofs`` (``free_dofs``, None for a tilted
        axis)."""
        joint = self._mech.joints[self.index]
        parent = self.parent_body()
        try:
            dofs = list(self.free_dofs())
        except ValueError:
            dofs = None
        return {
            "body_in": "origin" if parent is None else parent.name, "body_out": self.child_body().name,
            "joint": self.name, "type": self.type.value,
            "body_in_coord": [float(v) for v in joint.parent_vertex],
            "body_out_coord": [float(v) for v in joint.child_vertex],
            "orientation_offset": [float(v) for v in joint.orientation_offset], "dofs": dofs,
        }

    def num_positions(self) -> int:
        return self._n

    def num_velocities(self) -> int:
        return self._n

    def position_start(self) -> int:
        """Index of the joint's first coordinate in the minimal state y."""
        return 2 * self._free.start

    def velocity_start(self) -> int:
        """Index of the joint's first velocity in the minimal state y."""
        return 2 * self._free.start + self._n

    def position_suffix(self, k: int) -> str:
        return self._mech.state_names()[0][self._free.start + k].split(":", 1)[-1]

    def velocity_suffix(self, k: int) -> str:
        return self._mech.state_names()[1][self._free.start + k].split(":", 1)[-1]

    def _q(self, y) -> np.ndarray:
        y = self._state(y)
        return y[self.position_start(): self.position_start() + self._n]

    def _v(self, y) -> np.ndarray:
        y = self._state(y)
        return y[self.velocity_start(): self.velocity_start() + self._n]

    def _state(self, y) -> np.ndarray:
        if not isinstance(y, np.ndarray) or y.dtype != float or y.shape != (2 * self._mech.nf,):
            raise ValueError(f"joint {self.name!r}: the state must be a float array of {2 * self._mech.nf} entries "
                             "(the minimal state, dojo.maximal_to_minimal)")
        return y

    def _planar(self) -> None:
        if self.type != JointType.PLANAR_AXIS:
            raise TypeError(f"joint {self.name!r} is a {self.type.value} joint; this accessor is a planar_axis "
                            "joint's (Drake's PlanarJoint)")

    def get_one_position(self, y) -> float:
        """The single coordinate of a one-coordinate joint (Drake's GetOnePosition)."""
        return float(self._q(y)[self._one("GetOnePosition")])

    def get_one_velocity(self, y) -> float:
        """The single velocity of a one-coordinate joint (Drake's GetOneVelocity)."""
        return float(self._v(y)[self._one("GetOneVelocity")])

    def _one(self, what: str) -> int:
        if self._n != 1:
            raise TypeError(f"joint {self.name!r} has {self._n} coordinates; {what} needs a joint with exactly one")
        return 0

    # ------------------------------------------------------------ parameters
    def default_damping(self) -> np.ndarray:
        """(n,) damping per coordinate: N s/m (translations), N m s (rotation)."""
        return np.array(self._mech.joints[self.index].damper, dtype=float)

    def _limits(self, field: str, which: int) -> np.ndarray:
        # the scene's limits as the run set-up records them (model.mechanism.RUN_SETUP_FIELDS)
        kind = {"limits": "position", "velocity_limits": "velocity", "acceleration_limits": "acceleration"}[field]
        limits = ((getattr(self._mech, "joint_limits", None) or {}).get(self.name) or {}).get(kind)
        if limits is None:
            return np.full(self._n, -np.inf if which == 0 else np.inf)
        return np.array(limits["lower"] if which == 0 else limits["upper"], dtype=float)

    def position_lower_limits(self) -> np.ndarray:
        return self._limits("limits", 0)

    def position_upper_limits(self) -> np.ndarray:
        return self._limits("limits", 1)

    def velocity_lower_limits(self) -> np.ndarray:
        return self._limits("velocity_limits", 0)

    def velocity_upper_limits(self) -> np.ndarray:
        return self._limits("velocity_limits", 1)

    def acceleration_lower_limits(self) -> np.ndarray:
        return self._limits("acceleration_limits", 0)

    def acceleration_upper_limits(self) -> np.ndarray:
        return self._limits("acceleration_limits", 1)

    # --------------------------------------------------------- state access
    def get_translation(self, y) -> np.ndarray:
        self._planar()
        return self._q(y)[:2].copy()

    def set_translation(self, y, p_FoMo_F) -> JointHandle:
        self._planar()
        self._q(y)[:2] = _vector(p_FoMo_F, 2, "translation")
        return self

    def get_rotation(self, y) -> float:
        self._planar()
        return float(self._q(y)[2])

    def set_rotation(self, y, theta: float) -> JointHandle:
        self._planar()
        self._q(y)[2] = float(theta)
        return self

    def set_pose(self, y, p_FoMo_F, theta: float) -> JointHandle:
        return self.set_translation(y, p_FoMo_F).set_rotation(y, theta)

    def get_translational_velocity(self, y) -> np.ndarray:
        self._planar()
        return self._v(y)[:2].copy()

    def set_translational_velocity(self, y, v_FoMo_F) -> JointHandle:
        self._planar()
        self._v(y)[:2] = _vector(v_FoMo_F, 2, "translational velocity")
        return self

    def get_angular_velocity(self, y) -> float:
        self._planar()
        return float(self._v(y)[2])

    def set_angular_velocity(self, y, theta_dot: float) -> JointHandle:
        self._planar()
        self._v(y)[2] = float(theta_dot)
        return self

    # ------------------------------------------------------------- defaults
    def default_positions(self) -> np.ndarray:
        return self._default.copy()

    def set_default_positions(self, q) -> JointHandle:
        self._default = _vector(q, self._n, "default positions")
        return self

    def get_default_translation(self) -> np.ndarray:
        self._planar()
        return self._default[:2].copy()

    def set_default_translation(self, p_FoMo_F) -> JointHandle:
        self._planar()
        self._default[:2] = _vector(p_FoMo_F, 2, "translation")
        return self

    def get_default_rotation(self) -> float:
        self._planar()
        return float(self._default[2])

    def set_default_rotation(self, theta: float) -> JointHandle:
        self._planar()
        self._default[2] = float(theta)
        return self

    def set_default_pose(self, p_FoMo_F, theta: float) -> JointHandle:
        return self.set_default_translation(p_FoMo_F).set_default_rotation(theta)

    def get_default_pose(self) -> tuple[np.ndarray, float]:
        """(translation (2,), theta): Drake's GetDefaultPose of a PlanarJoint."""
        return self.get_default_translation(), self.get_default_rotation()

    def set_default_pose_pair(self, pose: tuple) -> JointHandle:
        """Drake's SetDefaultPosePair: the pose as one (translation, theta) pair."""
        translation, theta = pose
        return self.set_default_pose(translation, theta)

    def get_default_pose_pair(self) -> tuple[np.ndarray, float]:
        """Drake's GetDefaultPosePair: (translation (2,), theta)."""
        return self.get_default_pose()

    def set_default_state(self, y) -> JointHandle:
        """Write the default pose into y (the velocities are left as they are)."""
        self._q(y)[:] = self._default
        return self

    def set_random_pose_distribution(self, intervals: dict) -> JointHandle:
        """Uniform intervals per coordinate, {"x": (lo, hi), "y": ..., "theta": ...}."""
        self._planar()
        names = ("x", "y", "theta")
        out = {}
        for key, (low, high) in intervals.items():
            key = "theta" if key == "qz" else key
            if key not in names:
                raise ValueError(f"unknown coordinate {key!r} (one of: x, y, theta)")
            if not low <= high:
                raise ValueError(f"{key}: must have lower <= upper, got [{low:g}, {high:g}]")
            out[names.index(key)] = (float(low), float(high))
        self._random = dict(sorted(out.items()))
        return self

    def set_random_state(self, y, rng: np.random.Generator) -> JointHandle:
        """The default pose, then the random distribution's coordinates drawn from rng."""
        self.set_default_state(y)
        q = self._q(y)
        for k, (low, high) in self._random.items():
            q[k] = rng.uniform(low, high)
        return self

    # ----------------------------------------------------------------- lock
    def is_locked(self) -> bool:
        """Whether the mechanism locks this joint (``locked: true``: velocities held at zero)."""
        return bool(self._mech.joints[self.index].locked)

    def lock(self, y) -> JointHandle:
        """Zero the joint's velocities in y (Drake's Lock on a context's state)."""
        self._v(y)[:] = 0.0
        return self

    def __repr__(self) -> str:
        return f"JointHandle({self.name!r}, {self.type.value}, {self._n} coordinates)"


# Drake's type_name() for the joints both have (drake/multibody/tree/*_joint.h kTypeName).
_DRAKE_TYPE_NAMES = {
    JointType.FIXED: "weld",
    JointType.REVOLUTE: "revolute",
    JointType.PRISMATIC: "prismatic",
    JointType.PLANAR_AXIS: "planar",
    JointType.FLOATING: "quaternion_floating",
}


def _vector(value, n: int, what: str) -> np.ndarray:
    out = np.asarray(value, dtype=float).reshape(-1)
    if out.shape != (n,):
        raise ValueError(f"{what} must have {n} values, got {out.size}")
    return out
