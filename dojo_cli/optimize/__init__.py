"""Trajectory optimisation through contact on the exact step gradients (docs/optimize.md).

- task: task files (``configs/optimize/*.yaml``), read and checked like scenes;
- problem: the problem in numbers, rollouts and linearisations through the core;
- boxqp: the box-constrained QP of a backward-pass step;
- ilqr: iterative LQR with box inputs, augmented Lagrangian and a kappa schedule;
- results: the optimum as a storage file, a schedule CSV and the solver's record.
- balance: an LQR about a standing equilibrium on the step's gradients (``import-urdf --stand``
  for a robot its support cannot hold: the scene's ``linear`` controller).
"""

import sys
import types


class _CallableModule(types.ModuleType):
    """``dojo.optimize(task)`` is the API's function (dojo_cli.api.optimize), and
    ``dojo_cli.optimize`` is this package: importing any of its modules makes the package
    the attribute ``optimize`` of dojo_cli, where the function was. So the package is
    callable, and calling it is calling the function: the two names cannot disagree,
    whatever was imported first."""

    def __call__(self, task, progress=None):
        from dojo_cli.api import optimize

        return optimize(task, progress)


sys.modules[__name__].__class__ = _CallableModule
