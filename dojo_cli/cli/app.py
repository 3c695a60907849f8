"""The ``dojo`` command line: the table of commands and the group that registers them.

Only the cli package prints or exits. What the commands share (options, error handling:
one line per problem and the error's exit code) is dojo_cli.cli.shared, which they import;
this module only registers them and never is imported by them. A command stopped by
Ctrl-C exits 130 (a simulation stopped by signal N, 128 + N). The executable's entry point
is dojo_cli.__main__.main.

The commands live in their own modules (dojo_cli/cli/commands/) and are listed in COMMANDS by name, module
and help line. ``dojo --help`` shows that table; the module of a command is imported
only when that command runs (or shows its own --help), so ``dojo simulate`` does not
import matplotlib, meshcat or the URDF reader, and ``dojo --help`` imports none of
them. tests/test_imports.py keeps it so, and checks each help line against the
command's docstring.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from dojo_cli import __version__
from dojo_cli.cli import signals
from dojo_cli.cli.shared import (
    CONTEXT_SETTINGS,
    flag_shown_as_flag,
    interrupt_is_one_line,
    set_command_line,
    show_flags_as_flags,
)


class CommandEntry(NamedTuple):
    """A command as ``dojo --help`` lists it, and where its function lives."""

    name: str
    target: str  # "module:function", the typer command function
    help: str  # the function's docstring, shown by `dojo --help` without importing the module


# In the order `dojo --help` lists them.
COMMANDS = (
    CommandEntry("simulate", "dojo_cli.cli.commands.simulate:simulate",
                 "Simulate a scene and write the trajectory to an HDF5 storage file."),
    CommandEntry("energy", "dojo_cli.cli.commands.energy:energy",
                 "Kinetic, potential and mechanical energy and momentum of a run."),
    CommandEntry("contacts", "dojo_cli.cli.commands.contacts:contacts",
                 "Per-contact summary of a run: penetration, time in contact, stick/slip, cone violation."),
    CommandEntry("check", "dojo_cli.cli.commands.scene:check",
                 "Validate a scene and print its bodies, joints, contacts and dimensions."),
    CommandEntry("scenes", "dojo_cli.cli.commands.scene:scenes",
                 "List the built-in scenes, print one (--show) or copy one (--copy NAME DIR)."),
    CommandEntry("draw", "dojo_cli.cli.commands.picture:draw",
                 "Draw a scene's initial configuration: bodies, joints, contacts, ground (a PNG)."),
    CommandEntry("plot", "dojo_cli.cli.commands.picture:plot",
                 "Plot quantities of a run against time (a PNG; --csv writes the numbers)."),
    CommandEntry("replay", "dojo_cli.cli.commands.replay:replay",
                 "Replay a run in meshcat in the browser (until Ctrl-C), or write it as a standalone HTML page (--html)."),
    CommandEntry("import-urdf", "dojo_cli.cli.commands.urdf:import_urdf",
                 "Import a URDF as an editable scene: bodies at their centres of mass, joints with limits and dampers, contacts."),
    CommandEntry("import-mjcf", "dojo_cli.cli.commands.mjcf:import_mjcf",
                 "Import a MuJoCo MJCF model as an editable scene: bodies, joints, contacts, actuators, keyframes."),
    CommandEntry("sweep", "dojo_cli.cli.commands.sweep:sweep",
                 "Run a scene over a grid of parameters (locally or on Dask) and summarize the runs."),
    CommandEntry("info", "dojo_cli.cli.commands.info:info",
                 "Status, steps, wall time, overrides and final state of a run; --get EXPR prints one number."),
    CommandEntry("step", "dojo_cli.cli.commands.gradient:step_command",
                 "One step of a scene: print or write the next state and the solver's record."),
    CommandEntry("gradients", "dojo_cli.cli.commands.gradient:gradients_command",
                 "Jacobians of one step (implicit function theorem): A = d z'/d z, B = d z'/d u, P = d z'/d theta."),
    CommandEntry("dynamics", "dojo_cli.cli.commands.dynamics:dynamics",
                 "Minimal-coordinate dynamics at one state: M, C, forward and inverse dynamics, E (and derivatives)."),
    CommandEntry("analyze", "dojo_cli.cli.commands.analyze:analyze",
                 "Equilibria, linearisation, stability and controllability of a scene without contacts."),
    CommandEntry("optimize", "dojo_cli.cli.commands.optimize:optimize",
                 "Optimise a task's inputs (iLQR on the exact step gradients) and write the optimal run."),
    CommandEntry("fit", "dojo_cli.cli.commands.fit:fit",
                 "Fit a scene's parameters to recorded motion (least squares on the exact step gradients)."),
)


def load_command(entry: CommandEntry) -> TyperCommand:
    """Import the entry's module and build its command, as ``@app.command(name)`` would."""
    module, _, function = entry.target.partition(":")
    target = getattr(importlib.import_module(module), function)
    if isinstance(target, typer.Typer):  # a command with subcommands (dojo sweep, dojo sweep summarize)
        command = typer.main.get_group(target)
        command.name = entry.name
    else:
        single = typer.Typer(add_completion=False)
        single.command(entry.name)(target)
        command = typer.main.get_command(single)
    show_flags_as_flags(command)
    return command


class LazyCommand(TyperCommand):
    """The stand-in of a command in ``dojo --help``: its name and help line, nothing imported.

    ``LazyGroup.resolve_command`` replaces it by the real command before it parses
    anything, so it never runs itself.
    """

    def __init__(self, entry: CommandEntry):
        super().__init__(name=entry.name, help=entry.help)
        self.entry = entry


class LazyGroup(TyperGroup):
    """The ``dojo`` group: lists COMMANDS as stand-ins, imports a command when it is invoked."""

    def __init__(self, **attrs: Any):
        super().__init__(**attrs)
        for entry in COMMANDS:
            self.commands.setdefault(entry.name, LazyCommand(entry))
        show_flags_as_flags(self)  # --version, --help

    def get_params(self, ctx):
        # typer appends --install-completion and --show-completion after construction
        params = super().get_params(ctx)
        for param in params:
            flag_shown_as_flag(param)
        return params

    # Ctrl-C (SIGTERM, SIGHUP) while the arguments are parsed, a command's modules are
    # imported, or before the command handles signals itself: one line and exit 128 + the
    # signal (typer's own handling of KeyboardInterrupt exits 130 without a word). These
    # two calls are all typer runs.
    def make_context(self, info_name, args, *rest, **kwargs):
        set_command_line(["dojo", *args])  # what runs record (storage attribute command_line)
        with interrupt_is_one_line():
            return super().make_context(info_name, args, *rest, **kwargs)

    def invoke(self, ctx):
        with interrupt_is_one_line():
            return super().invoke(ctx)

    def resolve_command(self, ctx, args):
        # The one way to a command's own parsing, help and callback: load the real command here.
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, LazyCommand):
            with signals.signals_deferred():  # the command's imports build the scene validators
                command = self.commands[name] = load_command(command.entry)
        return name, command, rest


app = typer.Typer(
    name="dojo",
    cls=LazyGroup,
    help="Differentiable rigid-body simulation with contact (Dojo's variational integrator), driven by YAML scenes.",
    no_args_is_help=True,
    # `dojo --install-completion` / `--show-completion` (bash, zsh, fish, PowerShell); the
    # completion script asks `dojo` itself, so command names complete without importing them
    add_completion=True,
    context_settings=CONTEXT_SETTINGS,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"dojo_cli {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
) -> None:
    """Differentiable rigid-body simulation with contact, driven by YAML scenes."""

