"""A model too large for memory at compile time is a clear error, not a traceback (dm_control's
humanoid_CMU: 3836 contacts, 740 on one finger body, std::bad_alloc in the core's analysis)."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli.errors import SceneError
from dojo_cli.model import compiled

GRADIENT_AGREEMENT = 1e-8  # two eliminations of one well-conditioned matrix: rounding, relative to max(1, |A|)


def test_a_model_that_does_not_fit_in_memory_names_its_contacts(monkeypatch):
    mech = dojo.load_scene("box")

    def exhausted(_input):
        raise MemoryError("std::bad_alloc")  # what nanobind turns std::bad_alloc into

    monkeypatch.setattr(compiled._core, "Model", exhausted)
    with pytest.raises(SceneError) as info:
        compiled.compile_model(mech)
    text = str(info.value)
    assert "did not fit in memory" in text and f"{mech.nc} contacts" in text, text
    assert f"'{mech.bodies[0].name}' {mech.nc}" in text, text  # the box's 8 corners, all on its one body


def _bowl(per_side: int):
    """A 1 kg box resting on the ground on per_side^2 contact points spread over a shallow
    paraboloid under it (a collision hull's points, as an importer writes them): the lowest
    four touch, the others are 1 mm to 1.4 cm up and their 5 mm margin keeps most of them
    out of a step's solve."""
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict

    half, rise = 0.2, 0.05  # half-width of the grid (m); height of the bowl's rim over its bottom (m)
    grid = (np.arange(per_side) + 0.5) / per_side * 2 * half - half
    contacts = [
        {"name": f"p{i}_{j}", "body": "box", "model": "nonlinear", "friction": 0.5, "radius": 0.0, "margin": 5e-3,
         "offset": [float(x), float(y), float(-0.1 + rise * (x * x + y * y) / (2 * half * half))], "against": "ground"}
        for i, x in enumerate(grid) for j, y in enumerate(grid)
    ]
    bottom = min(c["offset"][2] for c in contacts)
    scene = {
        "format": 1, "name": "bowl", "timestep": 0.01, "gravity": [0, 0, -9.81],
        "bodies": [{"name": "box", "shape": {"type": "box", "size": [0.4, 0.4, 0.2]}, "mass": 1.0}],
        "joints": [{"name": "base", "type": "floating", "parent": "origin", "child": "box",
                    "initial": {"position": [0, 0, -bottom, 0, 0, 0], "velocity": [0, 0, 0, 0, 0, 0]}}],
        "contacts": contacts,
    }
    return build_mechanism(spec_from_dict(scene))


def test_a_body_with_hundreds_of_contacts_compiles_without_fill_among_them_and_steps():
    """The Newton matrix's robust elimination order (core model.h, blocks_robust: each body
    before its contacts, a factorisation's fallback and the gradients') fills densely among
    a body's contacts: k^2 blocks and ~k^3 / 3 updates, 740 contacts on one of
    humanoid_CMU's fingers did not fit in memory. Where that exceeds its budget a body with
    that many keeps its contacts first (no fill among them); a body with few keeps the robust
    order. The crowded body's steps converge, and its gradients through the block LU in that
    order equal those of the closed-form factorisation (gradients.cpp), another elimination."""
    few, many = _bowl(8), _bowl(24)  # 64 and 576 contacts on one body
    sizes = few.core.structure_sizes
    assert sizes["robust"]["fill_blocks"] >= 64 * 63, sizes  # every pair of its contacts: the robust order kept
    sizes = many.core.structure_sizes
    # no fill among the 576: the robust structure is the model's own, linear in the contacts
    assert sizes["robust"]["fill_blocks"] == sizes["blocks"]["fill_blocks"] < many.nc, sizes
    assert sizes["robust"]["doubles"] == sizes["blocks"]["doubles"], sizes

    traj = dojo.simulate(many, steps=20)
    assert set(traj.status) == {"success"}, traj.status
    assert -np.min(traj.contact_distance) < 1e-3, "a contact sank into the ground"
    z = traj.state(10)
    data = many.core_data
    closed = dojo.maximal_gradients(many, z)
    data.gradients_condensed = False
    try:
        block = dojo.maximal_gradients(many, z)
    finally:
        data.gradients_condensed = True
    for name, a, b in zip("AB", closed, block):
        error = np.abs(a - b).max() / max(1.0, np.abs(a).max())
        assert error < GRADIENT_AGREEMENT, f"{name}: block LU vs closed form {error:.2e}"
