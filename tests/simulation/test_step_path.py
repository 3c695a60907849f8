"""dojo.step's one crossing (simulation.step.step, _core.next_state): the same next state, to the
bit, as the solver-record path (solve_step: _core.step, then data.z_next copied), for every form
of argument; arrays the crossing does not take as they are (lists, other dtypes, strided views)
go the checked path, with its conversions and its messages (tests/core/test_bad_input.py)."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.simulation import step as step_module
from dojo_cli.simulation.step import solve_step


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


ONE_CROSSING = ("float64", "(nb, 13)")  # the forms _core.next_state takes as they are


@pytest.mark.parametrize("scene", ["pendulum", "pendulum_limit", "box"])  # Newton, limits, contacts
def test_one_crossing_is_the_recorded_step_bit_for_bit(scene, monkeypatch):
    mech = dojo.load_scene(scene)
    checked_path = step_module._core_step
    taken = []
    monkeypatch.setattr(step_module, "_core_step", lambda *a: taken.append(1) or checked_path(*a))
    z = np.asarray(dojo.simulate(mech, steps=3).state(3))
    rng = np.random.default_rng(0)
    u = 0.1 * rng.standard_normal(mech.nu)
    f_ext, tau_ext = 0.1 * rng.standard_normal((mech.nb, 3)), 0.1 * rng.standard_normal((mech.nb, 3))
    for args in [(), (u,), (u, None, f_ext, tau_ext)]:
        expected, result = solve_step(mech, z, *args)
        assert result.success, result.status
        forms = {"float64": z, "(nb, 13)": z.reshape(mech.nb, 13), "list": z.tolist(),
                 "strided": np.repeat(z, 2)[::2], "float32": z.astype(np.float32)}
        for form, zz in forms.items():
            taken.clear()
            out = dojo.step(mech, zz, *args)
            assert bool(taken) == (form not in ONE_CROSSING), f"{form}: the checked path taken: {bool(taken)}"
            want = expected if form != "float32" else solve_step(mech, zz, *args)[0]
            assert same_bits(out, want), f"{scene}, {form}, {len(args)} arguments: max |difference| " \
                                         f"{np.max(np.abs(np.asarray(out) - want)):.2e}"
            assert out.shape == (13 * mech.nb,) and out.dtype == np.float64


def test_each_step_returns_a_new_array_and_is_stateless():
    """The result is the caller's (a new array each step, not a view of the scratch), and a
    step does not depend on what the mechanism's scratch stepped before (Dojo's start)."""
    mech = dojo.load_scene("box")
    z = dojo.initial_state(mech)
    first = dojo.step(mech, z)
    keep = first.copy()
    for _ in range(3):
        dojo.step(mech, first)
    assert same_bits(first, keep), "a later step changed an earlier step's result"
    assert same_bits(dojo.step(mech, z), keep), "the same step from the same state, after others"


def test_the_crossing_refuses_what_it_does_not_take_as_it_is():
    """_core.next_state converts nothing: the Python side sends such arguments the checked way."""
    mech = dojo.load_scene("pendulum")
    z = dojo.initial_state(mech)
    opts = _core.SolverOptions()
    out = np.empty(13)
    with pytest.raises(TypeError):
        _core.next_state(mech.core, mech.core_data, z.astype(np.float32), None, None, None, opts, out)
    with pytest.raises(ValueError, match="state: expected 13 values, got 5"):
        _core.next_state(mech.core, mech.core_data, z[:5].copy(), None, None, None, opts, out)
    with pytest.raises(ValueError, match="out: expected 13 values, got 12"):
        _core.next_state(mech.core, mech.core_data, z, None, None, None, opts, np.empty(12))
