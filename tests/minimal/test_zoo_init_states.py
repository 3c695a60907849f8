"""PinnZoo's init_state in the zoo scenes (other_systems_notes.md 2.4): Go1's starting pose
and the quadrotor's zero state, as minimal.init_state returns them."""

from __future__ import annotations

import numpy as np

import dojo_cli as dojo
from dojo_cli import minimal

# PinnZoo's init_state(Go1()) in PinnZoo's nominal order (its vector_orders.c: FL, FR, RL, RR,
# hip, thigh, calf each): zero_state, then x[3] = 0.058, x[8:3:19] = (-0.55, 0.55, -0.55, 0.55),
# x[9:3:19] = 64 deg, x[10:3:19] = -155 deg (Julia's 1-based indices).
PINNZOO_GO1_LEGS = ["FL", "FR", "RL", "RR"]
PINNZOO_GO1_HIPS = [-0.55, 0.55, -0.55, 0.55]


def _pinnzoo_go1_init_state() -> dict[str, float]:
    out = {"floating_base:x": 0.0, "floating_base:y": 0.0, "floating_base:z": 0.058, "floating_base:qw": 1.0,
           "floating_base:qx": 0.0, "floating_base:qy": 0.0, "floating_base:qz": 0.0}
    for leg, hip in zip(PINNZOO_GO1_LEGS, PINNZOO_GO1_HIPS):
        out[f"{leg}_hip_joint"] = hip
        out[f"{leg}_thigh_joint"] = 64 * np.pi / 180
        out[f"{leg}_calf_joint"] = -155 * np.pi / 180
    return out


def test_pinnzoo_go1_init_state_is_pinnzoos():
    model = minimal.build_model(dojo.load_scene("pinnzoo_go1"))
    assert (model.nq, model.nv) == (19, 18)
    x = minimal.init_state(model)
    expected = _pinnzoo_go1_init_state()
    assert sorted(model.config_names) == sorted(expected)
    got = dict(zip(model.config_names, x[: model.nq]))
    for name, value in expected.items():
        assert abs(got[name] - value) < 1e-12, (name, got[name], value)
    np.testing.assert_array_equal(x[model.nq:], 0.0)  # at rest
    # and in PinnZoo's own order, through a registered order of the same names
    names = list(expected)
    minimal.register_order(model, "pinnzoo", names, model.velocity_names, model.torque_names)
    np.testing.assert_allclose(minimal.change_order(model, x, "nominal", "pinnzoo", kind="state")[: model.nq],
                               list(expected.values()), atol=1e-12)


def test_pinnzoo_quadrotor_init_state_is_the_zero_state():
    model = minimal.build_model(dojo.load_scene("pinnzoo_quadrotor"))
    np.testing.assert_array_equal(minimal.init_state(model), minimal.zero_state(model))
