"""`--set` wildcards (contacts.*.friction) and presets (--config): which fields they set, in
which order, and where their problems are reported."""

from __future__ import annotations

import pytest

from dojo_cli.errors import SceneError
from dojo_cli.scene.loader import load_scene_spec
from dojo_cli.scene.overrides import Override, apply_override_items
from dojo_cli.scene.presets import read_preset

BOX_CONTACTS = 8  # the built-in box's corners


def test_star_sets_every_entry_of_a_list():
    spec = load_scene_spec("box", ["contacts.*.friction=0.2"])
    assert [c.friction for c in spec.contacts] == [0.2] * BOX_CONTACTS


def test_name_pattern_sets_the_matching_entries_only():
    spec = load_scene_spec("box", ["contacts.corner_?pm.friction=0.1"])
    changed = {c.name for c in spec.contacts if c.friction == 0.1}
    assert changed == {"corner_ppm", "corner_mpm"}
    assert sum(c.friction == 0.8 for c in spec.contacts) == BOX_CONTACTS - 2


def test_wildcard_on_a_mapping_matches_its_keys():
    data = {"solver": {"rtol": 1e-6, "btol": 1e-4, "max_iter": 50}}
    result, paths, _ = apply_override_items(data, ["solver.*tol=1.0e-9"])
    assert result["solver"] == {"rtol": 1e-9, "btol": 1e-9, "max_iter": 50}
    assert paths == {"solver.rtol": "solver.*tol", "solver.btol": "solver.*tol"}


def test_joint_dampers_by_wildcard():
    spec = load_scene_spec("double_pendulum", ["joints.*.damper=0.1"])
    assert len(spec.joints) == 2
    for joint in spec.joints:
        assert joint.damper == 0.1, joint.name


def test_pattern_matching_nothing_is_an_error_on_set():
    with pytest.raises(SceneError) as err:
        load_scene_spec("pendulum", ["contacts.*.friction=0.2"])
    assert err.value.lines() == ["--set: contacts.*.friction: no such field: the pattern matches no field of the scene"]


def test_a_bad_wildcard_value_is_reported_once():
    with pytest.raises(SceneError) as err:
        load_scene_spec("box", ["contacts.*.friction=-1"])
    assert err.value.lines() == ["--set: contacts.*.friction: must be >= 0, got -1"]


def test_duration_override_replaces_steps():
    spec = load_scene_spec("pendulum", ["steps=7"])
    assert spec.steps == 7 and spec.duration is None
    spec = load_scene_spec("pendulum", ["steps=7", "duration=0.5"])
    assert spec.duration == 0.5 and spec.steps is None


def test_preset_merges_nested_fields_and_set_wins(tmp_path):
    preset = tmp_path / "accurate.yaml"
    preset.write_text("solver:\n  rtol: 1.0e-10\n  max_iter: 80\ncontacts.*.friction: 0.3\n")
    items = read_preset(preset)
    assert [(i.path, i.value, i.line) for i in items] == [
        ("solver.rtol", 1e-10, 2), ("solver.max_iter", 80, 3), ("contacts.*.friction", 0.3, 4)]
    spec = load_scene_spec("box", items + ["solver.max_iter=90"])
    assert spec.solver.rtol == 1e-10, "from the preset"
    assert spec.solver.max_iter == 90, "--set after the preset wins"
    assert spec.solver.btol == 1e-4, "the scene's other solver options are kept"
    assert {c.friction for c in spec.contacts} == {0.3}


def test_preset_problem_names_its_file_and_line(tmp_path):
    preset = tmp_path / "bad.yaml"
    preset.write_text("# a comment\nsolver:\n  rtol: -1\n")
    with pytest.raises(SceneError) as err:
        load_scene_spec("pendulum", read_preset(preset))
    assert err.value.lines() == [f"{preset}:3: solver.rtol: must be > 0, got -1"]


def test_preset_that_is_not_a_mapping(tmp_path):
    preset = tmp_path / "list.yaml"
    preset.write_text("- 1\n- 2\n")
    with pytest.raises(SceneError) as err:
        read_preset(preset)
    assert err.value.lines() == [f"{preset}:1: a preset must be a mapping of scene fields; got [1, 2]"]


def test_override_items_keep_their_origin_in_no_such_field():
    with pytest.raises(SceneError) as err:
        load_scene_spec("pendulum", [Override("joints.nope.spring", 1.0, "p.yaml", 4)])
    assert err.value.lines()[0].startswith("p.yaml:4: joints.nope.spring: no such field")


def test_misspelt_scene_name_suggests_the_close_ones():
    with pytest.raises(SceneError) as err:
        load_scene_spec("sliding_bx")
    assert err.value.lines() == ["sliding_bx: no such scene file or built-in scene 'sliding_bx'; did you mean 'sliding_box'?"]
    with pytest.raises(SceneError) as err:
        load_scene_spec("xyzzy")
    assert "(built-in: ball_on_ball, " in err.value.lines()[0], "nothing close: every name"
