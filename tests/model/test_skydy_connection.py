"""skydy's Connection and DOF read back from a built joint (issue 29, skydy rows):
``JointHandle.free_dofs`` (DOF.idx, DOF.free) names exactly the subset a scene's ``dofs:``
listed, for all 64 subsets, and ``JointHandle.as_dict`` (Connection.as_dict) is the
connection as plain data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dojo_cli.scene.builder import build_mechanism
from dojo_cli.scene.dofs import DOF_NAMES, TABLE
from dojo_cli.scene.loader import load_scene_spec

SCENE = """\
name: dofs
timestep: 0.01
gravity: [0, 0, 0]
steps: 1
bodies:
  - {{name: base, shape: {{type: box, size: [0.2, 0.2, 0.2]}}, mass: 1.0}}
  - {{name: link, shape: {{type: box, size: [0.1, 0.1, 0.5]}}, mass: 1.0}}
joints:
  - {{name: fix, type: fixed, parent: origin, child: base}}
  - name: cnx
    dofs: {dofs}
    parent: base
    child: link
    parent_vertex: [0.1, 0, 0]
    child_vertex: [0, 0, 0.25]
"""


def _joint(tmp_path, text):
    path = tmp_path / "scene.yaml"
    path.write_text(text, encoding="utf-8")
    return build_mechanism(load_scene_spec(path)).joint("cnx")


def test_free_dofs_are_the_listed_subset_for_all_64(tmp_path):
    assert len(TABLE) == 64
    for key in TABLE:
        dofs = sorted(key, key=DOF_NAMES.index)
        got = _joint(tmp_path, SCENE.format(dofs=json.dumps(dofs))).free_dofs()
        assert got == tuple(dofs), (dofs, got)


def test_a_tilted_axis_is_no_skydy_subset(tmp_path):
    text = SCENE.format(dofs="[rz]").replace("    dofs: [rz]\n", "    type: revolute\n    axis: [0, 0.6, 0.8]\n")
    handle = _joint(tmp_path, text)
    with pytest.raises(ValueError, match="not along coordinate axes"):
        handle.free_dofs()
    assert handle.as_dict()["dofs"] is None


def test_as_dict_is_the_connection(tmp_path):
    d = _joint(tmp_path, SCENE.format(dofs="[x, ry]")).as_dict()
    assert d["body_in"] == "base" and d["body_out"] == "link" and d["joint"] == "cnx"
    assert d["dofs"] == ["x", "ry"] and d["type"] == "cylindrical"
    assert np.allclose(d["body_in_coord"], [0.1, 0, 0]) and np.allclose(d["body_out_coord"], [0, 0, 0.25])
    json.dumps(d)  # plain data
