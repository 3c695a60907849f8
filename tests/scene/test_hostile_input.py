"""Hostile scene files (issue 11, item 3): YAML limits checked while the tree is composed,
characters YAML refuses, and the same limits on --set values and on scene text kept in
storage files. Each is one problem naming the file, the line and the limit; exit 2 on the
command line, never a traceback."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import app
from dojo_cli.errors import SceneError
from dojo_cli.scene.loader import (
    MAX_DOCUMENT_BYTES,
    MAX_EXPANDED_NODES,
    MAX_NESTING_DEPTH,
    YamlProblem,
    load_scene_spec_from_string,
    read_yaml,
)
from tests.cli.test_cli import PENDULUM

runner = CliRunner()


def _laughs(levels: int) -> str:
    """A "billion laughs" document: each level an alias list of nine of the one before."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _problem(text: str, file: str = "scene.yaml", **kwargs):
    with pytest.raises(SceneError) as info:
        load_scene_spec_from_string(text, file, **kwargs)
    assert len(info.value.problems) == 1, info.value.problems
    return info.value.problems[0]


def _check(tmp_path, text: str | bytes, name: str = "bad.yaml"):
    """`dojo check` of a scene file: (exit code, stderr); never a traceback."""
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["check", str(path)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    return res.exit_code, res.stderr, path


# ------------------------------------------------------------ alias expansion


def test_billion_laughs_is_refused_in_milliseconds_at_the_crossing_line(tmp_path):
    # 9^6 = 531,441 strings once expanded (36 s and 1.7 GB before the limits)
    start = time.perf_counter()
    code, err, path = _check(tmp_path, _laughs(6))
    elapsed = time.perf_counter() - start
    assert code == 2
    # a4 stands for 66,430 nodes (nine of a3's 7,381, and its own list), a5 for 597,871:
    # the line of a5 crosses the limit
    assert err.strip() == (
        f"{path}:6: more than {MAX_EXPANDED_NODES:,} nodes once aliases are expanded "
        "(the limit; an alias counts as the nodes it stands for)"
    )
    assert elapsed < 2.0, f"took {elapsed:.2f} s"


def test_alias_expansion_below_the_limit_is_read():
    _, data = read_yaml(_laughs(4))  # 74,742 nodes expanded: under the limit
    assert len(data["a4"]) == 9 and data["a4"][0][0][0][0] == ["x"] * 9


def test_expansion_is_counted_through_merge_keys():
    # about 60,000 nodes up to b; the merge of b into c doubles it
    text = _laughs(3) + "b: &b {" + ", ".join(f"k{i}: *a3" for i in range(7)) + "}\n"
    read_yaml(text)
    with pytest.raises(YamlProblem, match="nodes once aliases are expanded") as info:
        read_yaml(text + "c: {<<: *b}\n")
    assert info.value.line == 6


def test_recursive_alias_is_refused_at_its_line(tmp_path):
    code, err, path = _check(tmp_path, "name: x\nbodies: &b [*b]\n")
    assert code == 2
    assert err.strip() == f"{path}:2: recursive alias *b: it stands for a collection that contains it"
    problem = _problem("a: 1\nb: &m {c: [1, {d: *m}]}\n")
    assert problem.line == 2 and "recursive alias *m" in problem.message


def test_an_alias_of_an_earlier_sibling_is_not_recursive():
    _, data = read_yaml("a: &v [1, 2]\nb: [*v, *v]\n")
    assert data == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


# ---------------------------------------------------------------- nesting depth


def test_yaml_nested_400_deep_is_refused(tmp_path):
    code, err, path = _check(tmp_path, "a: " + "[" * 400 + "]" * 400 + "\n")
    assert code == 2
    assert err.strip() == f"{path}:1: nested deeper than {MAX_NESTING_DEPTH} levels (the limit)"


def test_nesting_limit_is_exact_and_block_style_counts_too():
    read_yaml("[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH)
    with pytest.raises(YamlProblem, match="nested deeper"):
        read_yaml("[" * (MAX_NESTING_DEPTH + 1) + "]" * (MAX_NESTING_DEPTH + 1))
    block = "".join("  " * i + f"k{i}:\n" for i in range(MAX_NESTING_DEPTH + 1)) + "  " * (MAX_NESTING_DEPTH + 1) + "x\n"
    with pytest.raises(YamlProblem, match="nested deeper") as info:
        read_yaml(block)
    assert info.value.line == MAX_NESTING_DEPTH + 1


def test_an_alias_reaches_the_depth_of_what_it_stands_for():
    deep = "[" * 40 + "]" * 40
    read_yaml(f"a: &a {deep}\nb: " + "[" * 23 + "*a" + "]" * 23)  # 1 + 23 + 40 = 64 levels
    with pytest.raises(YamlProblem, match="nested deeper") as info:
        read_yaml(f"a: &a {deep}\nb: " + "[" * 24 + "*a" + "]" * 24)
    assert info.value.line == 2


# ---------------------------------------------------------------- document size


def test_oversized_file_is_refused_before_reading(tmp_path):
    text = PENDULUM + "description: '" + "x" * MAX_DOCUMENT_BYTES + "'\n"
    code, err, path = _check(tmp_path, text)
    assert code == 2
    assert err.strip() == (
        f"{path}: the document is {len(text.encode()):,} bytes, more than the limit of {MAX_DOCUMENT_BYTES:,} bytes"
    )


def test_oversized_string_counts_utf8_bytes():
    text = "description: '" + "é" * (MAX_DOCUMENT_BYTES // 2) + "'\n"  # fewer characters than the limit
    problem = _problem(text)
    assert problem.line is None and f"limit of {MAX_DOCUMENT_BYTES:,} bytes" in problem.message


# ------------------------------------------------------------------ characters


@pytest.mark.parametrize("character", ["\x00", "\x07", "\x1b", "\x7f"])
def test_control_character_in_a_scene_file_names_its_line(tmp_path, character):
    text = PENDULUM.replace("name: link", f"name: li{character}nk")
    code, err, path = _check(tmp_path, text)
    assert code == 2
    line = text.splitlines().index(f"  - name: li{character}nk") + 1
    assert err.startswith(f"{path}:{line}: character U+{ord(character):04X} ")
    assert "not allowed in YAML" in err and character not in err


def test_invalid_utf8_names_its_line_and_byte(tmp_path):
    data = PENDULUM.replace("name: link", "name: li\udcffnk").encode("utf-8", "surrogateescape")
    code, err, path = _check(tmp_path, data)
    assert code == 2
    offset = data.index(b"\xff")
    assert err.strip() == f"{path}:6: cannot read the file: not UTF-8 text (byte {offset}: b'\\xff')"


def test_escaped_nul_in_a_name_is_a_field_problem(tmp_path):
    # YAML's "\0" escape gives a NUL the reader never sees: the name rule catches it
    code, err, path = _check(tmp_path, PENDULUM.replace("name: link", 'name: "li\\0nk"').replace("child: link", 'child: "li\\0nk"'))
    assert code == 2
    assert f"{path}:6: bodies.0.name: must be printable text, got '\\x00' (U+0000) at character 3" in err


def test_integer_with_too_many_digits_names_its_line():
    problem = _problem(PENDULUM.replace("steps: 20", "steps: " + "9" * 5000))
    assert (problem.line, problem.message) == (4, "invalid YAML: an integer of 5,000 digits is too long")


# ------------------------------------------------- --set values and stored scenes


@pytest.mark.parametrize(
    "value,words",
    [
        ("[" * 100 + "]" * 100, f"nested deeper than {MAX_NESTING_DEPTH} levels"),
        ("&a [*a]", "recursive alias *a"),
        ('"a\x07b"', "character U+0007"),
        ("[&a [1,1,1,1,1,1,1,1,1,1], &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], "
         + "&d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d], [*e,*e]]", "nodes once aliases are expanded"),
    ],
    ids=["deep", "recursive", "control", "laughs"],
)
def test_set_values_have_the_same_limits(tmp_path, value, words):
    path = tmp_path / "scene.yaml"
    path.write_text(PENDULUM)
    res = runner.invoke(app, ["check", str(path), "--set", f"description={value}"])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.stderr.startswith("--set: description: invalid value ") and words in res.stderr, res.stderr


def test_scene_text_from_a_storage_file_names_its_origin():
    # what `dojo replay`, `energy`, `contacts` pass: the scene attribute of run.h5
    for text, words in (
        (_laughs(7), "nodes once aliases are expanded"),
        ("bodies: &b [*b]\n", "recursive alias"),
        ("a: " + "[" * 400 + "]" * 400, "nested deeper"),
        ("name: a\x00b\n", "character U+0000"),
        (b"name: \xff\n", "not UTF-8"),
    ):
        problem = _problem(text, file="run.h5:scene")
        assert problem.file == "run.h5:scene" and problem.line is not None and words in problem.message, problem
    problem = _problem("x" * (MAX_DOCUMENT_BYTES + 1), file="run.h5:scene")
    assert problem.file == "run.h5:scene" and "more than the limit" in problem.message
    with pytest.raises(SceneError, match="run.h5:scene: a scene must be YAML text, got int"):
        load_scene_spec_from_string(3, "run.h5:scene")


# -------------------------------------------------------------- hostile names


def test_scene_path_the_file_system_refuses(tmp_path):
    res = runner.invoke(app, ["check", str(tmp_path / ("s" * 300 + ".yaml"))])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().endswith(".yaml: cannot read the file: File name too long"), res.stderr


def test_control_characters_in_a_file_name_or_key_never_reach_the_terminal(tmp_path):
    path = tmp_path / "e\x1b[31mvil.yaml"
    path.write_text(PENDULUM + '"k\\e[2J": 1\n')
    res = runner.invoke(app, ["check", str(path)])
    assert res.exit_code == 2 and "\x1b" not in res.stderr
    line = len(PENDULUM.splitlines()) + 1
    shown = str(path).replace("\x1b", "\\x1b")
    assert res.stderr.strip() == f"{shown}:{line}: k\\x1b[2J: unknown field 'k\\x1b[2J'"
    res = runner.invoke(app, ["check", "no\x07such"])
    assert res.exit_code == 2 and "\x07" not in res.stderr and res.stderr.startswith("no\\x07such: no such scene")


@pytest.mark.parametrize(
    "value,message",
    [
        ("!!float abc", "'abc' is not a valid !!float"),
        ("!!bool maybe", "'maybe' is not a valid !!bool"),
        ("!!timestamp 12", "'12' is not a valid !!timestamp"),
        ("!!int 1.5", "'1.5' is not a valid !!int"),
    ],
)
def test_scalar_with_a_tag_it_does_not_fit_names_its_line(value, message):
    problem = _problem(PENDULUM.replace("steps: 20", f"steps: {value}"))
    assert (problem.line, problem.message) == (4, f"invalid YAML: {message}")
