"""Newton matrix against central finite differences of the residual for every contact
model, collision pair and joint limits (Dojo's jacobian.jl "in contact" set), both from
the C++ core, at random iterates with every cone variable strictly inside its cone."""

from __future__ import annotations

import numpy as np
import pytest

from dojo_cli.physics.coordinates import minimal_to_maximal
import dojo_cli as dojo
from tests.mechanisms import CONTACT_SCENES, CONTACT_VARIANTS, ball, ball_on, contact_box, contact_scene, limited_pendulum
from tests.properties.test_newton_matrix import check

MODELS = ["impact", "linear", "nonlinear"]


def rng_state(mech, y):
    return minimal_to_maximal(mech, np.asarray(y, float))


@pytest.mark.parametrize("model", MODELS)
def test_box_corners(model):
    mech = contact_box(model=model)
    z = rng_state(mech, [0.1, -0.2, 0.26, 0.3, -0.2, 0.1, 1.0, -0.5, -2.0, 3.0, 1.0, -2.0])
    check(mech, z, np.zeros(6), seed=1)


@pytest.mark.parametrize("model", MODELS)
def test_ball_on_tilted_plane(model):
    mech = ball(model=model, normal=(0, -np.sin(0.3), np.cos(0.3)))
    z = rng_state(mech, [0.0, 0.1, 0.52, 0.2, 0.3, -0.1, 0.5, -1.0, -0.3, 2.0, -1.0, 0.5])
    check(mech, z, np.zeros(6), seed=2)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["sphere", "capsule", "box"])
def test_ball_on_body(kind, model):
    mech = ball_on(kind, model=model)
    y = np.r_[0.2, 0.3, 1.02, 0.1, -0.2, 0.3, 0.3, -0.2, -1.0, 1.0, 2.0, -1.0]
    z = rng_state(mech, y)
    check(mech, z, np.zeros(6), seed=3)


def test_ball_inside_box_region():
    mech = ball_on("box")
    z = rng_state(mech, [0.1, 0.2, 0.4, 0, 0, 0, 0.1, 0, -0.5, 0, 0, 0])  # centre inside the box
    check(mech, z, np.zeros(6), seed=4)


def test_joint_limits():
    mech = limited_pendulum(lower=0.8, upper=1.2)
    check(mech, rng_state(mech, [0.9, 1.0]), np.array([0.3]), seed=5)


@pytest.mark.parametrize("variant", CONTACT_VARIANTS)
@pytest.mark.parametrize("scene", CONTACT_SCENES)
def test_builtin_scenes(scene, variant):
    """Every built-in contact scene under every contact model (and mixed), in contact:
    after 120 steps most contacts touch or rest."""
    mech = contact_scene(scene, variant)
    z = dojo.simulate(mech, steps=120).state(120)
    check(mech, z, seed=CONTACT_SCENES.index(scene) * len(CONTACT_VARIANTS) + CONTACT_VARIANTS.index(variant))
