"""What every command shares: its options and arguments, its error handling and its output naming.

The commands (one module each, listed in dojo_cli.cli.app.COMMANDS) import this module and
nothing of app.py; app.py imports the commands only by name, when one runs. So the imports
go one way: app -> (lazily) a command module -> shared.

Error handling: library errors (the DojoError family) are caught at the edge of each command
(``reports_errors``) and printed ``file:line: field: message`` with the error's exit code: 2
invalid input, 1 solver failure with --abort-on-failure, 3 I/O (a missing or unreadable input
file too) and out of memory, 4 a run with failed steps; Ctrl-C during parsing or imports is one line and 128 + N
(``interrupt_is_one_line``).
"""

from __future__ import annotations

import contextlib
import functools
import shlex
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dojo_cli.cli import signals

# -h as well as --help, for `dojo` and every command (a context setting children inherit)
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}

# The command line as given (["dojo", "simulate", ...]), set by cli.app's group when it
# parses one (the click context does not keep the raw words); None outside the command line.
_given: list[str] | None = None


def set_command_line(words: list[str]) -> None:
    """Record the command line being run (cli.app's group, before parsing it)."""
    global _given
    _given = [str(w) for w in words]


# ------------------------------------------------------------------ shared options

SceneArg = Annotated[
    str, typer.Argument(metavar="SCENE", help="Scene YAML file, or the name of a built-in scene (see `dojo scenes`).")
]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", "-s", metavar="PATH=VALUE",
                 help="Override a scene field: PATH=VALUE (e.g. bodies.0.mass=2, joints.hinge.spring=3). Repeatable."),
]
# A state of a stored run to start from (`dojo step`, `gradients`, `dynamics`, `simulate`;
# io.state_files.stored_knot reads it).
FromOpt = Annotated[
    Optional[Path],
    typer.Option("--from", metavar="RUN.h5", help="Start from a state stored in this run file (with --index K).", readable=False),
]
IndexOpt = Annotated[
    Optional[int],
    typer.Option("--index", metavar="K", help="State K of the --from run (0 = initial; negative counts from the end: -1 = last)."),
]
ConfigOpt = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--config", "-c", metavar="FILE",
        help="Preset YAML merged into the scene before --set (scene < config < --set; e.g. configs/solver/accurate.yaml). Repeatable.",
        readable=False,  # the loader reports a missing preset as file: problem (exit 3)
    ),
]


def show_flags_as_flags(command) -> None:
    """Show boolean flags in ``command``'s help (and its subcommands') as flags.

    typer (0.29, the newest release as of this writing) labels a flag's value type
    ``<bool>`` in its help, which reads as "takes true/false"; a flag takes no value and
    ``--quiet true`` is rejected. An empty metavar (the click parameter's public
    ``metavar``) leaves the type column empty, as click shows flags. The help option is
    made per invocation (``get_help_option``, a public method of click's Command), so that
    method is wrapped on the instance too.
    """
    for param in getattr(command, "params", ()):
        flag_shown_as_flag(param)
    make_help_option = command.get_help_option

    def get_help_option(ctx):
        return flag_shown_as_flag(make_help_option(ctx))

    command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        show_flags_as_flags(sub)


def flag_shown_as_flag(param):
    if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""
    return param


def load_scene_arguments(scene: str, overrides: list[str] | None, configs: list[Path] | None = None):
    """The validated spec and the built mechanism of a SceneArg with its --config presets and
    --set overrides (in that order)."""
    return load_scene_spec_and_mechanism(scene, scene_overrides(overrides, configs))


def load_scene_spec_and_mechanism(scene: str, items: list):
    """The validated spec and the built mechanism of a scene with overrides (``scene_overrides``)."""
    # here, not at the top: the commands that take no scene do not import the scene schema and the physics
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import load_scene_spec

    spec = load_scene_spec(scene, items)
    return spec, build_mechanism(spec)


def read_run(run: Path, command: str):
    """``read_storage(run)`` for a command that reads a run file (plot, energy, info, replay,
    contacts), saying so when it was given a scene instead: ``dojo plot box`` names the
    built-in scene box, which is simulated into a run file first (exit 2, with the commands).

    Raises:
        InputError: ``run`` is a built-in scene's name or a scene file, not a run file.
        StorageError: the file cannot be read as a run (exit 3).
    """
    from dojo_cli.errors import InputError, StorageError
    from dojo_cli.io.storage import read_storage

    try:
        return read_storage(run)
    except StorageError:
        from dojo_cli.scene.loader import builtin_scene_names

        name = str(run)
        is_builtin = not run.exists() and name in builtin_scene_names()
        is_scene_file = run.is_file() and run.suffix.lower() in (".yaml", ".yml")
        if not (is_builtin or is_scene_file):
            raise
        what = "a built-in scene" if is_builtin else "a scene file"
        out = f"{run.stem}.h5"
        raise InputError(
            f"{name}: {what}, not a run file: `dojo {command}` reads a run; simulate it first: "
            f"`dojo simulate {name} -o {out}`, then `dojo {command} {out}`"
        ) from None


def scene_overrides(overrides: list[str] | None, configs: list[Path] | None = None) -> list:
    """The presets' overrides (scene.presets.Override, with file and line), then --set's, in order."""
    from dojo_cli.scene.overrides import override_items
    from dojo_cli.scene.presets import read_preset

    items = [item for config in configs or [] for item in read_preset(config)]
    return items + override_items(overrides or [])


def command_line() -> str:
    """The command as given (``dojo simulate box --set ...``), shell-quoted: what a run records."""
    words = _given if _given is not None else ["dojo", *sys.argv[1:]]
    return shlex.join(words)


# Where runs go without -o (docs/formats.md: never overwriting), relative to the current directory.
OUTPUTS_FOLDER = Path("outputs")
# Most numbered names tried for a free default output (outputs/box-2.h5, ...).
_MAX_NUMBERED = 100_000


def default_output(scene: str, suffix: str = ".h5", overwrite: bool = False) -> Path:
    """The output of a run without -o: ``outputs/<stem>.h5``, or (unless ``overwrite``, --force)
    the first free ``outputs/<stem>-2.h5``, ``-3``, ... (the scene file's stem, a built-in's name)."""
    stem = Path(scene).stem if Path(scene).suffix in (".yaml", ".yml") else Path(scene).name
    stem = stem or "run"
    first = OUTPUTS_FOLDER / f"{stem}{suffix}"
    if overwrite or not first.exists():
        return first
    for n in range(2, _MAX_NUMBERED):
        candidate = OUTPUTS_FOLDER / f"{stem}-{n}{suffix}"
        if not candidate.exists():
            return candidate
    return first  # (then refused as existing, like -o)


def make_parent_folder(path: Path) -> None:
    """Create the folder a file goes in (and its parents).

    Raises:
        StorageError: it cannot be created (exit code 3).
    """
    from dojo_cli.errors import StorageError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"{path}: cannot create the folder {path.parent}: {exc.strerror or exc}") from None


# ------------------------------------------------------------------ error handling


def printable(text: str) -> str:
    """``text`` with every character that is not printable written as its escape
    (``\\x1b``, ``\\x00``): a file name, a YAML key or a value from a hostile input never
    sends control characters (terminal escape sequences) to the user's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def echo_err(line: str) -> None:
    """One line on stderr, control characters escaped."""
    typer.echo(printable(line), err=True)


# Exit code of a command that ran out of memory: the machine could not give a resource, as
# with an I/O error (a full disk is 3 too).
OUT_OF_MEMORY_EXIT = 3


def reports_errors(command):
    """Print DojoError problems one per line and exit with the error's code; running out of
    memory is one line too (OUT_OF_MEMORY_EXIT), never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from dojo_cli.errors import DojoError  # here: `dojo --help` imports nothing of the library

        try:
            return command(*args, **kwargs)
        except DojoError as exc:
            for line in exc.lines():
                echo_err(line)
            raise typer.Exit(exc.exit_code) from None
        except MemoryError as exc:
            # numpy names what it could not allocate ("Unable to allocate 2.9 GiB for an array
            # with shape ..."), the core's std::bad_alloc only itself. A file being written was
            # finished 'failed' on the way out with the steps stored before (StorageWriter).
            what = str(exc).strip() or type(exc).__name__
            echo_err(f"dojo: out of memory: {what}")
            raise typer.Exit(OUT_OF_MEMORY_EXIT) from None

    return wrapper


@contextlib.contextmanager
def interrupt_is_one_line():
    try:
        yield
    except KeyboardInterrupt as exc:
        signals.ignore_stop_signals()  # a second Ctrl-C while we exit changes nothing
        signum = signals.signal_number(exc)
        typer.echo(f"dojo: interrupted by {signal.Signals(signum).name}", err=True)
        raise typer.Exit(128 + signum) from None


def check_import_target(output: Path, force: bool, timestep: float | None) -> None:
    """The checks an importer command (import-urdf, import-mjcf) makes before it reads its
    file: a usable --timestep, and an output it may write."""
    import math

    from dojo_cli.errors import InputError, StorageError

    if timestep is not None and not (timestep > 0 and math.isfinite(timestep)):
        raise InputError(f"--timestep: must be > 0, got {timestep:g}")
    try:
        exists = output.exists()
    except OSError as exc:  # a name the file system refuses (longer than NAME_MAX, ...)
        raise StorageError(f"{output}: cannot write ({exc.strerror or exc})") from None
    if exists and not force:
        raise StorageError(f"{output}: already exists (use --force to overwrite)")


def write_imported_scene(result, source: Path, output: Path, *, name: str | None, timestep: float | None,
                         header: str):
    """An importer's scene (``result.scene``, with --name and --timestep applied) validated
    and built, then written to ``output`` under the comment ``# NAME: header`` (``header``'s
    further lines are comments too), and the importer's warnings on stderr.

    Returns:
        the Mechanism built from it: what is written must load, so it is built before writing.
    """
    from dojo_cli.errors import StorageError
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import dump_scene_data, spec_from_dict

    scene = result.scene
    if name:
        scene["name"] = name
    if timestep is not None:
        scene["timestep"] = timestep
    mech = build_mechanism(spec_from_dict(scene, file=str(source), base_dir=output.resolve().parent))
    try:
        output.write_text(f"# {scene['name']}: {header}" + dump_scene_data(scene), encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"{output}: cannot write ({exc.strerror or exc})") from None
    for warning in result.warnings:
        echo_err(warning)
    return mech
