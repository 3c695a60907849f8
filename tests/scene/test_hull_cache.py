"""Collision-mesh hulls are computed once and cached by the mesh file's content
(dojo_cli.scene.hull_cache): a second import reads no mesh and gives the same numbers."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import numpy as np
import pytest

from dojo_cli.model.collisions import reduced_hull
from dojo_cli.scene import hull_cache
from dojo_cli.scene.urdf import contacts as urdf_module
from dojo_cli.scene.urdf import HULL_VERTICES, UrdfOptions, read_urdf

DATA = Path(__file__).resolve().parent.parent / "data" / "urdf"
_SCALE = [1.0, 0.6, 0.4]  # the mesh's scale in primitives.urdf


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(hull_cache.CACHE_VARIABLE, str(folder))
    return folder


def _robot(folder: Path) -> Path:
    """primitives.urdf (its last collision element is meshes/blob.obj) in a folder of its own."""
    shutil.copy(DATA / "primitives.urdf", folder / "robot.urdf")
    shutil.copytree(DATA / "meshes", folder / "meshes")
    return folder / "robot.urdf"


def _hull(path: Path) -> dict:
    contacts = read_urdf(path, UrdfOptions(floating=True, contacts="collision")).scene["contacts"]
    return next(c["shape"] for c in contacts if c["shape"]["type"] == "hull")


def _no_mesh_reading(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the mesh was read: the cache missed")

    monkeypatch.setattr(urdf_module, "_mesh_points", refuse)


def test_second_import_reads_no_mesh_and_gives_the_same_hull(cache, tmp_path, monkeypatch):
    path = _robot(tmp_path)
    first = _hull(path)
    # the cached hull is the reduction of the mesh itself, to the bit
    import trimesh

    points = np.asarray(trimesh.load(tmp_path / "meshes" / "blob.obj", force="mesh").vertices) * _SCALE
    vertices, error = reduced_hull(points, HULL_VERTICES)
    assert np.array_equal(np.asarray(first["vertices"]), vertices) and first["radius"] == error
    entries = list((cache / "hulls").glob("*.json"))
    assert len(entries) == 1, entries
    stored = json.loads(entries[0].read_text())
    assert np.array_equal(np.asarray(stored["vertices"]), vertices) and stored["error"] == error
    _no_mesh_reading(monkeypatch)
    assert _hull(path) == first


def test_the_key_is_the_content_not_the_path(cache, tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _hull(_robot(tmp_path / "a"))
    # the same bytes under another folder: a hit
    with monkeypatch.context() as patch:
        _no_mesh_reading(patch)
        assert _hull(_robot(tmp_path / "b"))["vertices"] == first["vertices"]
    # an edited mesh (one vertex moved out): a miss, and another hull
    mesh = tmp_path / "b" / "meshes" / "blob.obj"
    lines = mesh.read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("v "))
    lines[k] = "v 0.5 0.5 0.5"
    mesh.write_text("\n".join(lines) + "\n")
    assert _hull(tmp_path / "b" / "robot.urdf")["vertices"] != first["vertices"]
    assert len(list((cache / "hulls").glob("*.json"))) == 2


def test_a_corrupt_or_unwritable_cache_is_no_error(cache, tmp_path):
    path = _robot(tmp_path)
    first = _hull(path)
    for entry in (cache / "hulls").glob("*.json"):
        entry.write_text('{"vertices": [[1, 2')  # cut short: computed again and rewritten
    assert _hull(path) == first
    assert all(json.loads(e.read_text())["vertices"] for e in (cache / "hulls").glob("*.json"))
    shutil.rmtree(cache)
    cache.write_text("a file where the folder should be")
    assert _hull(path) == first


def _store_many(folder: str, digest: str, rounds: int) -> None:
    import os

    os.environ[hull_cache.CACHE_VARIABLE] = folder
    vertices = np.arange(12.0).reshape(4, 3) / 7.0
    for _ in range(rounds):
        hull_cache.store_hull(digest, 1.0, HULL_VERTICES, vertices, 0.125)


def test_concurrent_writers_leave_one_whole_entry(cache):
    """Writers of one key race (two processes, 200 writes each) while this process reads:
    every read sees a whole entry or none, and no temporary file is left."""
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_store_many, args=(str(cache), "ab" * 32, 200)) for _ in range(2)]
    for w in writers:
        w.start()
    seen = 0
    while any(w.is_alive() for w in writers):
        got = hull_cache.load_hull("ab" * 32, 1.0, HULL_VERTICES)
        if got is not None:
            seen += 1
            assert np.array_equal(got[0], np.arange(12.0).reshape(4, 3) / 7.0) and got[1] == 0.125
    for w in writers:
        w.join()
        assert w.exitcode == 0
    assert hull_cache.load_hull("ab" * 32, 1.0, HULL_VERTICES) is not None
    assert [p.name for p in (cache / "hulls").iterdir() if not p.name.endswith(".json")] == []
