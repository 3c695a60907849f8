"""Controllers: the inputs u (nu,: joint forces N and torques N m, or the scene's actuators) per
step, held over the step, and external forces.

They are the run set-up's input laws (``Mechanism.controller``, ``Mechanism.external``):
data the scene builder makes and the run loop evaluates, so they live with the model
(below the scene and the simulation, which both use them). The PD law and the full-state
linear law are the core's (core/maximal/pd_controller.h, linear_controller.h;
``_core.pd_inputs``, ``_core.linear_inputs``): the run loop hands them to the core's
rollout, which evaluates them before each step (``core_law``), and the Python controllers
call the same functions (``law_inputs``), so there is one law each.
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
        return law_inputs(mech, core_law(self), z)


@dataclass
class LinearController(Controller):
    """u = u0 - K (y - y0): full-state feedback on the minimal state y (2 nf,) of z, per
    joint [coordinates; velocities] as dojo.maximal_to_minimal gives it (an LQR about an
    equilibrium y0 held by u0: dojo_cli.optimize.balance).

    Attributes:
        u0: (nu,) feedforward inputs.
        K: (nu, 2 nf) gain.
        y0: (2 nf,) the state regulated to.
    """

    u0: np.ndarray
    K: np.ndarray
    y0: np.ndarray

    def __call__(self, mech, k, z):
        return law_inputs(mech, core_law(self), z)


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
        if law is not None:  # a clamped PD or linear law: the core's, clamp included
            return law_inputs(mech, law, z)
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


def core_law(controller: Controller | None) -> _core.PDController | _core.LinearController | None:
    """The core's copy of a controller whose law the core evaluates itself (a PDController
    or a LinearController, or one inside ClampedInputs: its clamp included), None for any
    other (exact types: a subclass may change the law). Made from the controller's current
    fields at each call.
    """
    lower = upper = None
    if type(controller) is ClampedInputs:
        controller, lower, upper = controller.inner, controller.lower, controller.upper

    def vector(a):
        return None if a is None else np.ascontiguousarray(a, dtype=float).reshape(-1)

    if type(controller) is LinearController:
        return _core.LinearController(vector(controller.u0), vector(controller.K), vector(controller.y0), vector(lower),
                                      vector(upper))
    if type(controller) is not PDController:
        return None
    return _core.PDController(vector(controller.kp), vector(controller.kd), vector(controller.target),
                              vector(controller.velocity_target), vector(controller.output), vector(lower),
                              vector(upper))


def law_inputs(mech: Mechanism, law: _core.PDController | _core.LinearController, z) -> np.ndarray:
    """The inputs (nu,) of a core law (core_law's) at the maximal state z (13 nb,)."""
    z = np.ascontiguousarray(z, dtype=float)
    if isinstance(law, _core.LinearController):
        return _core.linear_inputs(mech.core, law, z)
    return _core.pd_inputs(mech.core, law, z)


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

