"""Options shared by several commands, and how a command reads the group's options.

Imports only ``click`` (``aikito --version`` must cost what ``import click`` costs).
"""

from __future__ import annotations

import math
import os
import sys
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import TypeVar

    from aikito_mem.render.text import Display

    F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.FloatRange):
    """A finite, non-negative number of seconds: ``nan``, ``inf`` and negative values are
    usage errors (exit 2) — a lock wait must end ([E3])."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(min=0)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return seconds


def json_option(schema: str) -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True,
                        help=f"Print one {schema} document.")


lock_timeout_option = click.option(
    "--lock-timeout", type=Seconds(), default=30.0, show_default=True, metavar="SECONDS",
    help="Wait this long for the lock.")

color_option = click.option(
    "--color/--no-color", default=None,
    help="Colour the output: --color forces it (also into a pipe, for less -R); "
         "default: only on a terminal, never with NO_COLOR or TERM=dumb.")


def use_color(option: bool | None) -> bool:
    """SPEC §9: an explicit ``--color`` / ``--no-color`` wins over the environment;
    otherwise colour only when stdout is a terminal, and never when ``NO_COLOR`` is set
    to a non-empty value (no-color.org) or the terminal says ``TERM=dumb`` (clig.dev)."""
    if option is not None:
        return option
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return sys.stdout is not None and sys.stdout.isatty()  # None: a closed stdout


def output_width() -> int:
    """[U2]: the width of every text line — ``COLUMNS`` when set, else the terminal's,
    else 100: the order ``shutil.get_terminal_size`` asks in, without importing
    ``shutil`` (and the compression modules it brings) on every run ([§12])."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
        except (ValueError, OSError):  # not a terminal, or a closed / detached stream
            columns = 0
    return columns if columns > 0 else HELP_WIDTH


def display(**options: Any) -> Display:
    """The :class:`~aikito_mem.render.text.Display` of a command: ``options`` plus where it
    prints — the width ([U2]), the current directory and the home directory (physical,
    as the paths of a plan are), which pasteable paths are written relative to."""
    from aikito_mem.config.discovery import home_directory
    from aikito_mem.render.text import Display

    try:
        cwd: str | None = os.getcwd()
    except OSError:  # a deleted current directory: every path stays absolute
        cwd = None
    home = home_directory()
    ctx = click.get_current_context(silent=True)
    program = ctx.find_root().info_name if ctx is not None else None
    return Display(width=output_width(), cwd=cwd,
                   home=os.path.realpath(home) if home else None,
                   program=program if program in PROGRAMS else "aikito",
                   **options)


def completion(name: str) -> Callable[[click.Context, click.Parameter, str], Any]:
    """The shell completion ``name`` of :mod:`aikito_mem.cli.complete`, imported only when
    a shell asks for completions (a run that completes nothing never loads it, [§12])."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> Any:
        from aikito_mem.cli import complete as completions

        return getattr(completions, name)(ctx, param, incomplete)

    complete.__name__ = complete.__qualname__ = name
    return complete


def workspace_of(ctx: click.Context) -> str | None:
    """The group's ``--workspace`` option."""
    obj = ctx.find_root().obj or {}
    value = obj.get("workspace")
    return value if isinstance(value, str) else None


#: Help text up to this width on a wide terminal (click's default stops at 80).
HELP_WIDTH = 100
#: The names the command is installed as: ``aikito``, and ``aikito-mem`` beside the
#: reference tool's ``aikito`` (README, Getting started).
PROGRAMS = ("aikito", "aikito-mem")


class FittedContext(click.Context):
    """A context whose help (and usage) is written by
    :class:`~aikito_mem.cli.help.FittedFormatter` — a module loaded only when a help or
    a usage line is written ([§12])."""

    def make_formatter(self) -> click.HelpFormatter:
        from aikito_mem.cli.help import FittedFormatter

        return FittedFormatter(self.terminal_width, self.max_content_width,
                               fit=min(output_width(), HELP_WIDTH))


def fit_help(command: click.Command) -> click.Command:
    """``command`` and every command below it with help that fits the width ([U2])."""
    command.context_class = FittedContext
    for sub in getattr(command, "commands", {}).values():
        fit_help(sub)
    return command


#: The help option's own text, as click words it.
HELP_TEXT = "Show this message and exit."


def _show_help(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(ctx.get_help(), color=ctx.color)
        ctx.exit()


def help_option(command: click.Command, ctx: click.Context) -> click.Option | None:
    """The ``-h`` / ``--help`` option of ``command``, made once, as click makes it but
    with its text untranslated: click passes its own texts through ``gettext``, which
    imports ``locale`` and searches for message catalogues at every call — for a tool
    whose help is English only ([§12]).  Stored under a name no parameter of ours
    takes, as click does since 8.5, so that it never clobbers a user parameter."""
    names = command.get_help_option_names(ctx)
    if not names or not command.add_help_option:
        return None
    option: click.Option | None = vars(command).get("_untranslated_help_option")
    if option is None:
        # Made once: click orders the eager callbacks by the option object itself.
        option = click.Option([*names, "_untranslated_help"], is_flag=True,
                              expose_value=False, is_eager=True, help=HELP_TEXT,
                              callback=_show_help)
        vars(command)["_untranslated_help_option"] = option
    return option


class Command(click.Command):
    """A command whose help option is :func:`help_option`'s."""

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        return help_option(self, ctx)


class Group(click.Group):
    """A group whose help option is :func:`help_option`'s, and whose subcommands and
    subgroups are made of this module's classes."""

    command_class = Command
    group_class = type

    def get_help_option(self, ctx: click.Context) -> click.Option | None:
        return help_option(self, ctx)


class FullSummaries(Group):
    """A group whose command list shows each command's whole summary — its
    ``short_help``, else the first sentence of its help — wrapped, never cut short with
    ``...`` (click shortens them to the terminal's width)."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=1 << 20)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
