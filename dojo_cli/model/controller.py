"""Controllers: the inputs u (nu,: joint forces N and torques N m, or the scene's actuators) per
step, held over the step, and external forces.

They are the run set-up's input laws (``Mechanism.controller``, ``Mechanism.external``):
data the scene builder makes and the run loop evaluates, so they live with the model
(below the scene and the simulation, which both use them). The PD law is the core's
(core/maximal/pd_controller.h, ``_core.pd_inputs``): the run loop hands it to the core's
rollout, which evaluates it before each step (``core_law``), and the Python controllers
call the same function, so there is one law.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.math.quaternion import matrix_from_quaternion
from dojo_cli.model.mechanism import Mechanism


class Controller:
    """Base controller: zero input. Subclasses override ``__call__``."""

    def __call__(self, mech: Mechanism, k: int, z: np.ndarray) -> np.ndarray:
        """Inputs (nu,) for step k from state z (13 nb,)."""
        return np.zeros(mech.nu)


@dataclass
class ConstantController(Controller):
    """The same inputs at every step.

    Attributes:
        u: (nu,) inputs in joint order.
    """

    u: np.ndarray

    def __call__(self, mech, k, z):
        return self.u


@dataclass
class PDController(Controller):
    """u = kp (target - theta) + kd (velocity_target - theta_dot) on minimal coordinates.

    Attributes:
        kp, kd, target, velocity_target: (nf,) per free coordinate.
        output: (nu, nf) map from the joint forces to the inputs (a scene's joint
            actuators: 1 / gain), or None (the inputs are the joint forces).
    """

    kp: np.ndarray
    kd: np.ndarray
    target: np.ndarray
    velocity_target: np.ndarray
    output: np.ndarray | None = None

    def __call__(self, mech, k, z):
        return _core.pd_inputs(mech.core, core_law(self), np.ascontiguousarray(z, dtype=float))


@dataclass
class ClampedInputs(Controller):
    """Another controller's inputs clamped to the actuators' ranges (MuJoCo's ``ctrlrange``:
    the control is clipped before the gain, whatever produced it).

    Attributes:
        inner: the controller whose inputs are clamped, or None (zero inputs).
        lower, upper: (nu,) bounds per input (-inf, inf where an actuator has none).
    """

    inner: Controller | None
    lower: np.ndarray
    upper: np.ndarray

    def __call__(self, mech, k, z):
        law = core_law(self)
        if law is not None:  # a clamped PD: the core's law, clamp included
            return _core.pd_inputs(mech.core, law, np.ascontiguousarray(z, dtype=float))
        u = np.zeros(mech.nu) if self.inner is None else np.asarray(self.inner(mech, k, z), dtype=float)
        return np.clip(u, self.lower, self.upper)


@dataclass
class ScheduleController(Controller):
    """Inputs read from a table, one row per step.

    Attributes:
        table: (rows, nu) inputs.
        after_end: "zero" (no input after the last row) or "hold" (keep the last row).
    """

    table: np.ndarray
    after_end: str = "zero"

    def __call__(self, mech, k, z):
        if k < len(self.table):
            return self.table[k]
        if self.after_end == "hold" and len(self.table):
            return self.table[-1]
        return np.zeros(mech.nu)


def core_law(controller: Controller | None) -> _core.PDController | None:
    """The core's copy of a controller whose law the core evaluates itself (a PDController,
    or one inside ClampedInputs: its clamp included), None for any other (exact types: a
    subclass may change the law). Made from the controller's current fields at each call.
    """
    lower = upper = None
    if type(controller) is ClampedInputs:
        controller, lower, upper = controller.inner, controller.lower, controller.upper
    if type(controller) is not PDController:
        return None

    def vector(a):
        return None if a is None else np.ascontiguousarray(a, dtype=float).reshape(-1)

    return _core.PDController(vector(controller.kp), vector(controller.kd), vector(controller.target),
                              vector(controller.velocity_target), vector(controller.output), vector(lower),
                              vector(upper))


@dataclass
class ExternalForce:
    """A force and torque on one body during [start, stop) seconds.

    Attributes:
        body: body index.
        force: (3,) N; torque: (3,) N m; both in ``frame`` ("body" or "world").
        vertex: (3,) application point of the force, body frame.
    """

    body: int
    force: np.ndarray
    torque: np.ndarray
    vertex: np.ndarray
    frame: str = "body"
    start: float = 0.0
    stop: float = float("inf")


def external_wrench(mech: Mechanism, forces: list[ExternalForce], t: float, q: np.ndarray):
    """External forces (nb,3, world) and torques (nb,3, body frame) at time t.

    A body-frame force F at vertex p gives the world force R(q) F and the body
    torque tau + p x F (Dojo's set_external_force!, notes 2.4).
    """
    f = np.zeros((mech.nb, 3))
    tau = np.zeros((mech.nb, 3))
    for e in forces:
        if not (e.start <= t < e.stop):
            continue
        rot = matrix_from_quaternion(q[e.body])
        if e.frame == "world":
            f_body, tau_body = rot.T @ e.force, rot.T @ e.torque
        else:
            f_body, tau_body = np.asarray(e.force, float), np.asarray(e.torque, float)
        f[e.body] += rot @ f_body
        tau[e.body] += tau_body + np.cross(e.vertex, f_body)
    return f, tau

