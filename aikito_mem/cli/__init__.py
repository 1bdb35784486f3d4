"""The ``aikito`` command line (SPEC §9): one module per command, one error handler.

- :mod:`~aikito_mem.cli.sync` — ``sync project``; :mod:`~aikito_mem.cli.apply` —
  ``apply``; :mod:`~aikito_mem.cli.agents` — ``agents`` and ``agents add``;
  :mod:`~aikito_mem.cli.status`, :mod:`~aikito_mem.cli.doctor`,
  :mod:`~aikito_mem.cli.adopt`, :mod:`~aikito_mem.cli.hook` — the commands of the same
  names;
- :mod:`~aikito_mem.cli.error_handler` — every command body runs inside it: the signal
  record installed first, every error mapped to its exit code and its one JSON document,
  the one place output is written;
- :mod:`~aikito_mem.cli.options` — options several commands share;
  :mod:`~aikito_mem.cli.help` — help that fits the width, loaded only to write one.

Only ``click`` is imported at start-up: the root group loads a command's module when that
command runs (or when the help lists it), and every other room is imported inside the
command that needs it, so ``aikito --version`` costs what ``import click`` costs and a
sync imports no other command's module ([§12]).
Commands render a report and exit; outcomes and exit codes are decided by the engine
(:mod:`aikito_mem.outcome`, the report values of status and doctor, ``aikito_mem.errors``).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from aikito_mem import __version__
from aikito_mem.cli.options import HELP_WIDTH, PROGRAMS, FittedContext, FullSummaries, fit_help

#: Each command of the root group: its module (under ``aikito_mem.cli``) and attribute.
COMMANDS = {
    "adopt": ("adopt", "adopt_cmd"),
    "agents": ("agents", "agents_cmd"),
    "apply": ("apply", "apply_cmd"),
    "clean": ("clean", "clean_cmd"),
    "doctor": ("doctor", "doctor_cmd"),
    "hook": ("hook", "hook_group"),
    "init": ("init", "init_cmd"),
    "status": ("status", "status_cmd"),
    "sync": ("sync", "sync"),
}


class AikitoGroup(FullSummaries):
    """The root group: the signal record is installed before a subcommand is even parsed
    ([E5]), and an interrupt that still reaches click (before that) is exit 130 with a
    message of ours, never click's ``Aborted!``.

    Its commands are loaded lazily ([§12]): ``get_command`` imports the one module of
    :data:`COMMANDS` a run names, so ``aikito sync project`` never imports ``adopt``,
    ``doctor``, ``init``…; the help imports them all to list them."""

    #: [U2]: the help fits the width, examples included.
    context_class = FittedContext

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            name = f"aikito_mem.cli.{module}"
            __import__(name)  # the interpreter's own import: ``-X importtime`` reports it
            command = fit_help(getattr(sys.modules[name], attr))
            self.add_command(command, cmd_name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests among the commands loaded so far: suggest among all of them.
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        from aikito_mem import signals

        with signals.installed():
            return super().invoke(ctx)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:
            _fit(exc)
            code = exc.exit_code
            try:
                exc.show()
            except BrokenPipeError:
                pass  # the reader of stderr has gone: the usage error's code is kept
            except OSError as failed:  # stderr itself fails (a full disk): said nowhere
                from aikito_mem.cli.error_handler import environment_error
                from aikito_mem.errors import exit_code_for

                code = exit_code_for(environment_error(failed, "output.failed"))
        except click.Abort:
            from aikito_mem.cli.error_handler import emit, interruption
            from aikito_mem.render.text import Display, Output, error_lines
            from aikito_mem.signals import SIGINT

            error = interruption(SIGINT)
            emit(Output(error.exit_code, errors=error_lines(error, Display())))
        except BrokenPipeError:
            raise  # the reader of a help has gone: as before
        except OSError as exc:  # click's own output (a help, --version) to a full disk
            import contextlib

            from aikito_mem.cli.error_handler import emit, environment_error
            from aikito_mem.errors import exit_code_for
            from aikito_mem.render.text import Display, Output, error_lines

            failure = environment_error(exc, "output.failed")
            code = exit_code_for(failure)
            with contextlib.suppress(OSError):  # stderr on a full disk too: said nowhere
                emit(Output(code, errors=error_lines(failure, Display())))
        sys.exit(code if isinstance(code, int) else 0)


def _fit(exc: click.ClickException) -> None:
    """[U2]: click's ``Error: MESSAGE`` wrapped to the width, with a hanging indent —
    the whole message as click prints it (a bad value's ``Invalid value for '--X': ``
    is put before its own message)."""
    from aikito_mem.cli.options import output_width
    from aikito_mem.render.text import wrap

    prefix = "Error: "
    lines = wrap(prefix + exc.format_message(), output_width(), 2)
    fitted = "\n".join(lines)[len(prefix):]
    vars(exc)["message"] = fitted  # click types it Final
    vars(exc)["format_message"] = lambda: fitted


ROOT_EPILOG = """\b
Examples:
  aikito init                      create a workspace (~/aikito) to start with
  aikito sync                      sync every project of the workspace
  aikito sync project demo         sync project demo's checkouts
  aikito status                    what a sync would change, project by project
  aikito doctor --fix              check the set-up; add the git exclude lines
  aikito hook install              sync each new git worktree as it is created
  aikito --workspace ~/aikito status

\b
Shell completion (bash; zsh and fish: see the README):
  eval "$(_AIKITO_COMPLETE=bash_source aikito)"
"""


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"aikito {__version__} (aikito_mem)", color=ctx.color)
        ctx.exit()


@click.group(cls=AikitoGroup, epilog=ROOT_EPILOG,
             context_settings={"help_option_names": ["-h", "--help"],
                               "max_content_width": HELP_WIDTH})
# click's version_option, without the gettext of its help text ([§12]).
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              help="Show the version and exit.", callback=_show_version)
@click.option("--workspace", metavar="PATH", default=None,
              help="Workspace root (default: $AIKITO_DIR, the pointer file, ~/aikito).")
@click.pass_context
def cli(ctx: click.Context, workspace: str | None) -> None:
    """Make an agent workspace's durable memory visible in project checkouts.

    Each command finds the workspace the same way: --workspace, else $AIKITO_DIR, else the
    first line of ~/.config/aikito/workspace, else ~/aikito.
    """
    ctx.obj = {"workspace": workspace}


def main() -> None:
    """Run the command line (the console scripts reach it through
    :func:`aikito_mem.console.main`, which turns the cyclic collector off before click and
    the package are imported).

    One run is one short process whose only cyclic garbage is the few hundred objects its
    imports leave behind: the cyclic collector would only cost time — some forty passes in
    a warm sync, more as plans grow — so the command line keeps it off ([§12]) when it is
    entered here too.  Reference counting still frees everything else at once.  The API,
    a library in someone else's process, never touches the collector."""
    gc.disable()
    # The program names itself as it was called: its help, and the commands its remedies
    # name, read ``aikito-mem …`` when it is called so (beside the reference tool).
    called = os.path.basename(sys.argv[0]) if sys.argv else ""
    cli(prog_name=called if called in PROGRAMS else "aikito")


__all__ = ["cli", "main"]
