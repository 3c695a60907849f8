"""Implicit-function-theorem input Jacobians against central finite differences of step."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.math import quaternion as quat
from dojo_cli.simulation.gradients import input_jacobian
from dojo_cli.simulation.step import step

TIGHT = dojo.SolverOptions(rtol=1e-9, btol=1e-9)  # tighter stalls near 1e-8 in contact
FD = 1e-6


def tangent_difference(mech, za, zb):
    """Per body [x, v, phi, w] of zb relative to za (phi: Dojo's attitude, q_a* q_b vector part)."""
    a, b = za.reshape(mech.nb, 13), zb.reshape(mech.nb, 13)
    dphi = quat.multiply(quat.conjugate(a[:, 6:10]), b[:, 6:10])[:, 1:]
    return np.concatenate([b[:, 0:3] - a[:, 0:3], b[:, 3:6] - a[:, 3:6], dphi, b[:, 10:13] - a[:, 10:13]], axis=1).ravel()


def fd_input_jacobian(mech, z, u):
    out = np.zeros((12 * mech.nb, len(u)))
    for i in range(len(u)):
        e = np.zeros(len(u))
        e[i] = FD
        plus, minus = step(mech, z, u + e, TIGHT), step(mech, z, u - e, TIGHT)
        out[:, i] = tangent_difference(mech, minus, plus) / (2 * FD)
    return out


@pytest.mark.parametrize(
    "scene,steps",
    [("pendulum", 10), ("cartpole", 10), ("npendulum", 5), ("spherical_chain", 5), ("box", 10), ("box", 300)],
    ids=["pendulum", "cartpole", "npendulum", "spherical_chain", "box-flying", "box-resting"],
)
def test_input_jacobian_matches_finite_differences(scene, steps):
    mech = dojo.load_scene(scene)
    traj = dojo.simulate(mech, steps=steps, opts=TIGHT)
    z = traj.state(steps)
    u = 0.1 * np.ones(mech.nf)
    _, b = input_jacobian(mech, z, u, TIGHT)
    numeric = fd_input_jacobian(mech, z, u)
    err = np.max(np.abs(b - numeric)) / max(1.0, np.max(np.abs(numeric)))
    assert err < 1e-5, f"relative error {err:.2e}"
