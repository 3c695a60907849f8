"""Newton matrix against central finite differences of the residual (Dojo's jacobian.jl)."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.simulation.simulate import simulate
from dojo_cli.simulation.step import StepProblem
from dojo_cli.simulation.controller import ConstantController
from tests.mechanisms import CONSTRAINED_JOINT_TYPES, pendulum, random_state, slider, snake, twister

FD_STEP = 1e-6  # central differences: truncation ~1e-12, rounding ~1e-10
FD_TOL = 1e-6  # relative to the largest entry


def fd_jacobian(problem: StepProblem, w: np.ndarray) -> np.ndarray:
    n = w.size
    out = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = FD_STEP
        out[:, i] = (problem.residual(w + e) - problem.residual(w - e)) / (2 * FD_STEP)
    return out


def check(mech, z, u=None, seed=0):
    problem = StepProblem(mech, z, u)
    rng = np.random.default_rng(seed)
    w = problem.initial_guess() + 0.1 * rng.standard_normal(problem.s.n)
    analytic = problem.s.pattern.to_dense(problem.matrix_values(w))
    numeric = fd_jacobian(problem, w)
    err = np.max(np.abs(analytic - numeric)) / max(1.0, np.max(np.abs(numeric)))
    assert err < FD_TOL, f"Newton matrix vs finite differences: relative error {err:.2e}"


@pytest.mark.parametrize("joint_type", CONSTRAINED_JOINT_TYPES)
@pytest.mark.parametrize("build", [snake, twister], ids=["snake", "twister"])
def test_every_joint_type(build, joint_type):
    mech = build(3, joint_type, spring=1.0, damper=0.2, gravity=(0, 0, -9.81))
    z = random_state(mech, seed=3)
    u = 0.1 * np.ones(mech.nf)
    # evaluate "flying" after 0.1 s of simulation, as Dojo's test does
    tr = simulate(mech, 10, z, ConstantController(u))
    check(mech, tr.state(10), u)


@pytest.mark.parametrize("build", [pendulum, slider], ids=["pendulum", "slider"])
def test_simple(build):
    mech = build(spring=2.0, damper=0.3)
    check(mech, random_state(mech, seed=4), np.array([0.1]))
