"""The scene library: the repository's scenes/<group>/*.yaml are the built-in scenes (one copy)."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.io.storage import read_storage
from dojo_cli.scene import loader
from dojo_cli.scene.loader import builtin_scene_groups, builtin_scene_names, builtin_scene_path, load_scene_spec

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "scenes"
GROUPS = ("basics", "contact", "pinnzoo", "robots", "skydy")

runner = CliRunner()


def test_every_scene_is_in_a_group_folder_with_a_unique_name():
    files = sorted(LIBRARY.rglob("*.yaml"))
    assert files, "scenes/ holds the library"
    misplaced = [str(f.relative_to(LIBRARY)) for f in files if f.parent.parent != LIBRARY]
    assert not misplaced, f"scenes belong in scenes/<group>/: {misplaced}"
    stems = [f.stem for f in files]
    duplicated = sorted({s for s in stems if stems.count(s) > 1})
    assert not duplicated, f"scene names used in more than one group: {duplicated}"
    assert sorted({f.parent.name for f in files}) == list(GROUPS), "the groups scenes/README.md documents"


def test_builtin_names_are_the_library_files():
    """A checkout (this one) resolves names to its own scenes/: no second copy in the package."""
    assert loader.scene_library() == LIBRARY
    files = {f.stem: f for f in LIBRARY.glob("*/*.yaml")}
    assert builtin_scene_names() == sorted(files)
    for name, file in files.items():
        assert builtin_scene_path(name) == file, name
    assert not list((ROOT / "dojo_cli").rglob("*.yaml")), "no scene YAML inside the package's sources"
    groups = builtin_scene_groups()
    assert list(groups) == list(GROUPS)
    assert groups["basics"][:2] == ["cartpole", "double_pendulum"] and "box" in groups["contact"]
    assert sorted(n for names in groups.values() for n in names) == builtin_scene_names()


def test_builtin_problems_name_the_library_file():
    spec = load_scene_spec("pendulum")
    assert spec.source.file == "scenes/basics/pendulum.yaml"


def test_scenes_lists_by_group():
    res = runner.invoke(app, ["scenes"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    headers = [line for line in lines if not line.startswith(" ")]
    assert headers == [f"{group}:" for group in GROUPS]
    basics = lines[lines.index("basics:") + 1: lines.index("contact:")]
    assert [line.split()[0] for line in basics] == builtin_scene_groups()["basics"]
    pendulum = next(line for line in basics if line.split()[0] == "pendulum")
    assert pendulum.startswith("  pendulum ") and "a single box link swinging" in pendulum, pendulum


def test_scenes_copy_writes_the_library_file(tmp_path):
    res = runner.invoke(app, ["scenes", "--copy", "box", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.stdout == f"copied box to {tmp_path / 'box.yaml'}\n"
    assert (tmp_path / "box.yaml").read_bytes() == (LIBRARY / "contact" / "box.yaml").read_bytes()


def test_simulate_a_library_path_writes_outputs_stem(tmp_path, monkeypatch):
    """`dojo simulate scenes/contact/box.yaml` in a project writes outputs/box.h5, as `dojo simulate box`."""
    (tmp_path / "scenes" / "contact").mkdir(parents=True)
    shutil.copyfile(LIBRARY / "contact" / "box.yaml", tmp_path / "scenes" / "contact" / "box.yaml")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["simulate", "scenes/contact/box.yaml", "--steps", "3"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("wrote outputs/box.h5:"), res.stdout
    assert read_storage(tmp_path / "outputs" / "box.h5").steps_completed == 3
