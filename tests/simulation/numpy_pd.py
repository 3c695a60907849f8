"""The PD law as Python evaluated it before it moved into the core (core/maximal/pd_controller.h):
the independent twin tests/simulation/test_pd_controller.py holds the core's law to, bit for
bit, and the "per-step" path benchmarks/pd_run_speed.py times against it."""

from __future__ import annotations

import numpy as np

from dojo_cli import _core
from dojo_cli.model.controller import ClampedInputs, Controller


class NumpyPD(Controller):
    """A scene's PD controller (clamped to the actuators' ranges or not) with minimal
    coordinates and velocities from the core's maps, the law, the output map and the clamp in
    numpy. A Controller subclass: the run loop steps it one state at a time
    (model.controller.core_law has no core copy of it)."""

    def __init__(self, controller):
        self.lower = self.upper = None
        if isinstance(controller, ClampedInputs):
            controller, self.lower, self.upper = controller.inner, controller.lower, controller.upper
        self.pd = controller

    def __call__(self, mech, k, z):
        s = z.reshape(mech.nb, 13)
        theta = _core.minimal_coordinates(mech.core, np.ascontiguousarray(s[:, 0:3]), np.ascontiguousarray(s[:, 6:10]))
        rate = _core.minimal_velocities(mech.core, np.ascontiguousarray(z, dtype=float))
        pd = self.pd
        tau = pd.kp * (pd.target - theta) + pd.kd * (pd.velocity_target - rate)
        u = tau if pd.output is None else pd.output @ tau
        return u if self.lower is None else np.clip(u, self.lower, self.upper)
