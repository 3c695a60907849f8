"""What scripts and people rely on from every command (issue 15 item 5): flags shown as flags,
-h, shell completion, files written are named, and the exit codes the README states."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dojo_cli.cli.app import COMMANDS, app

runner = CliRunner()
DOJO = Path(sys.executable).with_name("dojo")  # the installed entry point, next to this interpreter

# every command and subcommand, as typed
COMMAND_WORDS = [entry.name for entry in COMMANDS if entry.name != "sweep"] + ["sweep", "sweep run", "sweep summarize"]


def invoke(*args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


@pytest.mark.parametrize("words", COMMAND_WORDS)
def test_help_shows_flags_as_flags_and_h_is_help(words):
    """typer labels a flag `<bool>`, which reads as "takes true/false"; a flag takes no value."""
    args = words.split()
    full = invoke(*args, "--help", terminal_width=200)
    assert full.exit_code == 0, full.output
    assert "<bool>" not in full.stdout, f"dojo {words} --help:\n{full.stdout}"
    short = invoke(*args, "-h", terminal_width=200)
    assert short.exit_code == 0 and short.stdout == full.stdout, f"dojo {words} -h"


def test_root_help_and_flags():
    res = invoke("-h", terminal_width=200)
    assert res.exit_code == 0 and "<bool>" not in res.stdout
    for flag in ("--version", "--install-completion", "--show-completion"):
        assert flag in res.stdout, flag


def test_a_flag_given_a_value_is_refused_with_the_flag_form(tmp_path):
    ok = invoke("simulate", "pendulum", "--steps", 2, "-q", "-o", tmp_path / "a.h5")
    assert ok.exit_code == 0 and ok.stdout == ""
    bad = invoke("simulate", "pendulum", "--steps", 2, "-q", "true", "-o", tmp_path / "b.h5")
    assert bad.exit_code == 2 and "true" in bad.output, "a flag takes no value: 'true' is an extra argument"


@pytest.mark.skipif(not DOJO.exists(), reason="the dojo entry point is not installed next to this Python")
def test_shell_completion_installs_and_completes(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), SHELL="/bin/bash")
    # typer finds the shell among the process's ancestors (shellingham), not in $SHELL: run it from
    # bash as a user does (under a test runner whose ancestors hold no shell it found none). Not as
    # the string's only or last command: bash then execs it in place of itself, the shell is no longer
    # its parent, and the search depends on what started the tests ("Shell None is not supported")
    installed = subprocess.run(["/bin/bash", "-c", f"'{DOJO}' --install-completion; status=$?; exit $status"],
                               env=env, capture_output=True,
                               text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    script = tmp_path / ".bash_completions" / "dojo.sh"
    assert "_DOJO_COMPLETE" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
    for words, cword, expected in (("dojo sim", "1", "simulate"), ("dojo simulate --abort", "2", "--abort-on-failure")):
        env_complete = dict(env, _DOJO_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword)
        res = subprocess.run([DOJO], env=env_complete, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and res.stdout.split() == [expected], (words, res.stdout, res.stderr)


def test_commands_name_the_files_they_write(tmp_path):
    run = tmp_path / "box.h5"
    assert invoke("simulate", "box", "--steps", 5, "-q", "-o", run).exit_code == 0
    csv, js, png = tmp_path / "e.csv", tmp_path / "e.json", tmp_path / "e.png"
    res = invoke("energy", run, "--csv", csv, "--json", js, "--plot", png)
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-3:] == [f"wrote {csv}", f"wrote {js}", f"wrote {png}"]
    cj = tmp_path / "c.json"
    res = invoke("contacts", run, "--json", cj)
    assert res.exit_code == 0 and res.stdout.splitlines()[-1] == f"wrote {cj}"


@pytest.mark.parametrize(
    "args",
    [
        ("simulate", "MISSING.yaml"),
        ("simulate", "sub/MISSING"),
        ("check", "MISSING.yaml"),
        ("simulate", "pendulum", "--config", "MISSING.yaml"),
        ("energy", "MISSING.h5"),
        ("info", "MISSING.h5"),
        ("sweep", "MISSING.yaml"),
        ("import-urdf", "MISSING.urdf", "-o", "out.yaml"),
        ("import-mjcf", "MISSING.xml", "-o", "out.yaml"),
        ("step", "pendulum", "--state", "MISSING.json"),
    ],
    ids=lambda a: " ".join(a),
)
def test_a_missing_input_file_is_an_io_error(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    res = invoke(*args)
    assert res.exit_code == 3, res.output
    assert "no such file" in res.stderr or "No such file" in res.stderr, res.stderr
    assert "Traceback" not in res.output and len(res.stderr.splitlines()) == 1, res.stderr


def test_a_misspelt_scene_name_is_invalid_input():
    res = invoke("simulate", "pendulm")
    assert res.exit_code == 2
    assert res.stderr.startswith("pendulm: no such scene file or built-in scene 'pendulm'; did you mean 'pendulum' or "), res.stderr
