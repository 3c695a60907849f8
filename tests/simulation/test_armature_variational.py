"""Rotor inertia (armature) in the variational integrator (core maximal/rotor.h).

Oracles: the exact pendulum period with the rotor's inertia added (elliptic integral), and the
exact oscillation of a slider whose translation carries a rotor (a linear rotor); the
energy including the rotor's, whose error a variational integrator keeps bounded and second
order; the minimal-coordinate layer, which adds the armature independently (M += a: crba,
aba, rnea), run by RK4 at a small step, on a 3D tumbling body whose rotor axis turns (the
rotor's gyroscopic terms w x p matter there); the step's gradients against finite differences.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ellipk
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.physics.energy import knot_mechanics
from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.loader import spec_from_dict

ARMATURE = 0.7  # kg m^2: twice the pendulum's pivot inertia
THETA0 = 0.1  # rad
TIGHT = dojo.SolverOptions(rtol=1e-12, btol=1e-12)
SECOND_ORDER = (3.5, 4.5)  # error ratio between h and h/2


def _pendulum_run(h: float):
    mech = dojo.load_scene("pendulum", overrides={"joints.0.armature": ARMATURE, "timestep": h,
                                                  "joints.0.initial": {"position": [THETA0]}})
    traj = dojo.simulate(mech, steps=int(round(10.0 / h)), opts=TIGHT)
    assert set(traj.status) == {"success"}
    energy = knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega).mechanical
    theta, t = traj.minimal_q[:, 0], traj.time
    k = np.flatnonzero(np.sign(theta[:-1]) != np.sign(theta[1:]))
    crossings = t[k] - theta[k] * (t[k + 1] - t[k]) / (theta[k + 1] - theta[k])  # linear: its error is O(h^2) too, smaller
    link = mech.bodies[0]
    lever = float(np.linalg.norm(mech.joints[0].child_vertex))
    pivot = float(link.inertia[0, 0]) + link.mass * lever**2
    exact = 4.0 * math.sqrt((pivot + ARMATURE) / (link.mass * float(np.linalg.norm(mech.gravity)) * lever)) \
        * ellipk(math.sin(THETA0 / 2) ** 2)
    return float(np.ptp(energy) / abs(energy[0])), abs(2.0 * float(np.mean(np.diff(crossings))) - exact)


def test_pendulum_with_armature_keeps_energy_and_the_exact_period_to_second_order():
    (e1, p1), (e2, p2) = _pendulum_run(0.01), _pendulum_run(0.005)
    # measured: energy 4.9e-7, 1.2e-7 relative over 10 s (bounded, no drift); period 5.8e-5, 1.4e-5 s
    assert e1 < 1e-6 and SECOND_ORDER[0] < e1 / e2 < SECOND_ORDER[1], f"energy errors {e1:.2e}, {e2:.2e}"
    assert p1 < 1e-4 and SECOND_ORDER[0] < p1 / p2 < SECOND_ORDER[1], f"period errors {p1:.2e}, {p2:.2e} s"


def _tumbler(h: float, integrator: str, armature: float = 0.05):
    """A free box (no gravity) carrying a link on a revolute joint about x with a rotor, spun
    about all three axes: the rotor's axis turns with the box."""
    scene = {
        "name": "tumbler", "timestep": h, "gravity": [0.0, 0.0, 0.0], "integrator": integrator,
        "bodies": [
            {"name": "box", "mass": 2.0, "shape": {"type": "box", "size": [0.4, 0.3, 0.2]}},
            {"name": "link", "mass": 0.5, "shape": {"type": "box", "size": [0.05, 0.05, 0.4]}},
        ],
        "joints": [
            {"name": "base", "type": "floating", "parent": "origin", "child": "box",
             "initial": {"position": [0.0] * 6, "velocity": [0.1, 0.0, 0.0, 1.0, -0.7, 0.5]}},
            {"name": "hinge", "type": "revolute", "parent": "box", "child": "link", "axis": [1.0, 0.0, 0.0],
             "parent_vertex": [0.2, 0.0, 0.1], "child_vertex": [0.0, 0.0, -0.2], "armature": armature,
             "initial": {"position": [0.3], "velocity": [2.0]}},
        ],
    }
    mech = build_mechanism(spec_from_dict(scene, file="tumbler"))
    traj = dojo.simulate(mech, steps=int(round(1.0 / h)), opts=TIGHT if integrator == "variational" else None)
    return traj.x[-1], traj.q[-1]


def test_tumbling_rotor_follows_the_minimal_layers_dynamics_to_second_order():
    reference_x, reference_q = _tumbler(2.5e-4, "rk4")
    errors = []
    for h in (0.01, 0.005):
        x, q = _tumbler(h, "variational")
        dq = np.minimum(np.abs(q - reference_q).max(axis=1), np.abs(q + reference_q).max(axis=1)).max()
        errors.append(max(float(np.abs(x - reference_x).max()), float(dq)))
    ratio = errors[0] / errors[1]
    assert errors[1] < 1e-3 and SECOND_ORDER[0] < ratio < SECOND_ORDER[1], f"errors {errors}, ratio {ratio:.2f}"
    # without the rotor the motion is another one: the term is really there
    plain_x, _ = _tumbler(0.005, "variational", armature=0.0)
    assert np.abs(plain_x - reference_x).max() > 30 * errors[1]


def test_step_gradients_with_armature_match_finite_differences():
    res = CliRunner().invoke(app, ["gradients", "double_pendulum", "--set", "joints.0.armature=0.2",
                                   "--set", "joints.1.armature=0.3", "--set",
                                   "joints.0.initial={position: [0.4], velocity: [1.0]}", "--check"])
    assert res.exit_code == 0, res.output
    assert "check passed" in res.output


SLIDER_ARMATURE = 1.0  # kg: the box's mass again
SLIDER_STIFFNESS, SLIDER_MASS, GRAVITY = 10.0, 1.0, 9.81  # the slider scene's spring (N/m), box (kg), |g|


def _slider_run(h: float, armature: float = SLIDER_ARMATURE):
    """The slider scene (a box on a vertical prismatic joint from the world, on a spring) with a
    rotor on its translation: its displacement and energy errors against the exact harmonic
    motion x(t) = x_eq (1 - cos(w t)), w = sqrt(k / (m + a)), x_eq = -m g / k (the rotor has
    inertia but no weight), over 5 s."""
    mech = dojo.load_scene("slider", overrides={"joints.0.armature": armature, "timestep": h})
    traj = dojo.simulate(mech, steps=int(round(5.0 / h)), opts=TIGHT)
    assert set(traj.status) == {"success"}
    omega = math.sqrt(SLIDER_STIFFNESS / (SLIDER_MASS + SLIDER_ARMATURE))
    exact = -SLIDER_MASS * GRAVITY / SLIDER_STIFFNESS * (1.0 - np.cos(omega * traj.time))
    energy = knot_mechanics(mech, traj.time, traj.x, traj.q, traj.v, traj.omega).mechanical
    return float(np.abs(traj.minimal_q[:, 0] - exact).max()), float(np.ptp(energy) / abs(energy).max())


def test_slider_with_armature_follows_the_exact_oscillation_to_second_order():
    """The linear rotor (core maximal/rotor.h): the rate of a translation from the world is the
    child's velocity along it, so its armature is a mass a n n^T added to the child's in the
    sliding direction, without weight. The displacement follows the exact solution to second
    order and the energy, the rotor's 1/2 a x_dot^2 included, stays bounded."""
    (x1, e1), (x2, e2) = _slider_run(0.01), _slider_run(0.005)
    # measured: displacement 2.3e-4, 5.6e-5 m; energy 1.2e-4, 3.1e-5 relative over 5 s
    assert x1 < 5e-4 and SECOND_ORDER[0] < x1 / x2 < SECOND_ORDER[1], f"displacement errors {x1:.2e}, {x2:.2e} m"
    assert e1 < 3e-4 and SECOND_ORDER[0] < e1 / e2 < SECOND_ORDER[1], f"energy errors {e1:.2e}, {e2:.2e}"
    # without the rotor the box oscillates faster (1.9 m off the exact motion): the term is really there
    assert _slider_run(0.005, armature=0.0)[0] > 1000 * x2


def test_step_gradients_with_a_linear_rotor_match_finite_differences():
    res = CliRunner().invoke(app, ["gradients", "cartpole", "--set", "joints.0.armature=0.5",
                                   "--set", "joints.1.armature=0.1", "--set",
                                   "joints.0.initial={position: [0.1], velocity: [0.7]}", "--check"])
    assert res.exit_code == 0, res.output
    assert "check passed" in res.output


def test_armature_on_a_translation_from_a_moving_body_is_refused_by_the_variational_integrator():
    """A slide on a moving parent: its rate R(q_p)^T (v_c - v_p) - w_p x R(q_p)^T (x_c - x_p)
    depends on the configuration, which the rotor's constant form does not hold."""
    box = {"type": "box", "size": [0.2, 0.2, 0.2]}
    scene = {"name": "carried", "timestep": 0.01,
             "bodies": [{"name": "base", "mass": 1.0, "shape": box}, {"name": "slider", "mass": 1.0, "shape": box}],
             "joints": [{"name": "hinge", "type": "revolute", "parent": "origin", "child": "base", "axis": [0, 0, 1]},
                        {"name": "slide", "type": "prismatic", "parent": "base", "child": "slider", "axis": [1, 0, 0],
                         "armature": 0.1}]}
    with pytest.raises(SceneError, match=r"joints\.1\.armature: the variational integrator models rotor inertia"):
        build_mechanism(spec_from_dict(scene, file="carried"))
