"""Hostile state files for `dojo step --state` / `dojo gradients --state` and --input-file
(issue 11, item 3): a size limit, deep nesting, NaN/Infinity tokens, wrong types, each an
InputError (exit 2) naming the file and the entry; and damaged JSON gradient files."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli.cli.app import app
from dojo_cli.io.state_files import MAX_NUMBERS_FILE_BYTES
from dojo_cli.errors import StorageError
from dojo_cli.io.gradient_files import read_gradient_file

runner = CliRunner()


def _run(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    return res


STATES = [
    ("nan-token", "[0, 1, NaN]", "entry[2]: must be a finite number, got NaN"),
    ("infinity-in-key", '{"maximal": [0, -Infinity]}', "'maximal'[1]: must be a finite number, got -Infinity"),
    ("overflowing-number", '{"minimal": [1e400, 0]}', "'minimal'[0]: must be a finite number, got Infinity (beyond the floating-point range)"),
    ("overflowing-integer", "[" + "9" * 400 + "]", "entry[0]: must be a finite number, got 99999999999999999999 (beyond the floating-point range)"),
    ("boolean", '{"minimal": [true, 0]}', "'minimal'[0]: must be a number, got true"),
    ("string", '{"maximal": "0 0 0"}', "'maximal': must be a list of numbers, got \"0 0 0\""),
    ("object", '{"maximal": {"x": 1}}', "'maximal': must be a list of numbers, got an object"),
    ("string-entry", '[0, "1"]', "entry[1]: must be a number, got \"1\""),
    ("nested", "[[[[0]]]]", "entry[0][0]: nested deeper than a list of rows"),
    ("deep", "[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
    ("scalar", "3.5", "expected a JSON list of numbers or an object, got float"),
    ("malformed", "[0, 1", "cannot read numbers (Expecting ',' delimiter: line 1 column 6 (char 5))"),
]


@pytest.mark.parametrize("case,text,message", STATES, ids=[s[0] for s in STATES])
@pytest.mark.parametrize("command", ["step", "gradients"])
def test_bad_json_state_is_an_input_error_naming_file_and_entry(tmp_path, command, case, text, message):
    state = tmp_path / "state.json"
    state.write_text(text)
    res = _run(command, "pendulum", "--state", state)
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == f"--state {state}: {message}"


def test_bad_input_file_names_its_entry(tmp_path):
    inputs = tmp_path / "u.json"
    inputs.write_text('{"input": [NaN]}')
    res = _run("step", "pendulum", "--input-file", inputs)
    assert res.exit_code == 2 and res.stderr.strip() == f"--input-file {inputs}: 'input'[0]: must be a finite number, got NaN"


def test_oversized_and_special_files_are_refused_before_reading(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as stream:
        stream.truncate(MAX_NUMBERS_FILE_BYTES + 1)
    res = _run("step", "pendulum", "--state", big)
    assert res.exit_code == 2
    assert res.stderr.strip() == (
        f"--state {big}: {MAX_NUMBERS_FILE_BYTES + 1:,} bytes, more than the limit of {MAX_NUMBERS_FILE_BYTES:,} bytes"
    )
    res = _run("step", "pendulum", "--state", "/dev/null")
    assert res.exit_code == 2 and res.stderr.strip() == "--state /dev/null: not a regular file"
    long = tmp_path / ("s" * 300 + ".json")
    res = _run("step", "pendulum", "--state", long)
    assert res.exit_code == 2 and "File name too long" in res.stderr


def test_npy_state_must_hold_real_numbers(tmp_path):
    state = tmp_path / "state.npy"
    np.save(state, np.array([1 + 2j, 0j]))
    res = _run("step", "pendulum", "--state", state)
    assert res.exit_code == 2 and res.stderr.strip() == f"--state {state}: holds complex128 values, not real numbers"


def test_state_as_rows_still_reads(tmp_path):
    mech = dojo.load_scene("pendulum")
    z = dojo.initial_state(mech)
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"maximal": z.reshape(mech.nb, 13).tolist()}))
    res = _run("step", "pendulum", "--state", state, "--json")
    assert res.exit_code == 0, res.output
    assert np.allclose(json.loads(res.stdout)["maximal"], dojo.step(mech, z), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "text,words",
    [
        ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
        ("[1, 2]", "not a dojo gradient file (a JSON list, not an object)"),
        ('{"A": {"rows": ["a"], "cols": ["b"], "data": [[1, 2]]}}', "A: must be {rows, cols, data} with a rows x cols matrix"),
        ('{"A": {"rows": 3}}', "A: must be {rows, cols, data}"),
        ('{"state": [[1], [2, 3]]}', "state: must be a list of numbers"),
    ],
)
def test_damaged_json_gradient_file_is_a_storage_error(tmp_path, text, words):
    path = tmp_path / "g.json"
    path.write_text(text)
    with pytest.raises(StorageError, match=re.escape(words)) as info:
        read_gradient_file(path)
    assert str(path) in str(info.value)
