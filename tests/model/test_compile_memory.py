"""A model too large for memory at compile time is a clear error, not a traceback (dm_control's
humanoid_CMU: 3836 contacts, 740 on one finger body, std::bad_alloc in the core's analysis)."""

from __future__ import annotations

import pytest

import dojo_cli as dojo
from dojo_cli.errors import SceneError
from dojo_cli.model import compiled


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
