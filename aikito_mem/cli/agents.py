"""``aikito agents [--json]`` and ``aikito agents add NAME… [--dry-run] [--json]`` ([N2]).

A thin layer over :mod:`aikito_mem.commands.agents`: the engine builds a frozen report,
:mod:`aikito_mem.render.agents` renders it, the one error handler maps errors to exit
codes and to the ``aikito.agents/1`` document.  Imports only ``click`` at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import end_interrupted, error_handler
from aikito_mem.cli.options import Group, color_option, json_option, use_color, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.agents import AgentsAddReport, AgentsReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output

SCHEMA = "aikito.agents/1"


class ListView:
    failed_code = "agents.os_error"

    def __init__(self, as_json: bool, color: bool) -> None:
        self.as_json = as_json
        self.color = color

    def render(self, report: AgentsReport) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.render.agents import render_list

        # [U2]: the width of this terminal
        return render_list(report, display(as_json=self.as_json, color=self.color))

    def failed(self, error: AikitoError) -> AgentsReport:
        from aikito_mem.commands.agents import AgentsReport

        return AgentsReport(None, None, False, error=error)

    def interrupted(self, report: AgentsReport, error: InterruptedError_) -> AgentsReport:
        return end_interrupted(report, error)


class AddView:
    failed_code = "agents.os_error"

    def __init__(self, as_json: bool, dry_run: bool) -> None:
        self.as_json = as_json
        self.dry_run = dry_run

    def render(self, report: AgentsAddReport) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.render.agents import render_add

        return render_add(report, display(as_json=self.as_json))

    def failed(self, error: AikitoError) -> AgentsAddReport:
        import attrs

        from aikito_mem.commands.agents import AgentsAddReport

        partial = getattr(error, "result", None)
        if isinstance(partial, AgentsAddReport):
            return attrs.evolve(partial, error=error)
        return AgentsAddReport(None, self.dry_run, error=error)

    def interrupted(self, report: AgentsAddReport, error: InterruptedError_
                    ) -> AgentsAddReport:
        return end_interrupted(report, error)


AGENTS_EPILOG = """\b
Examples:
  aikito agents                          the catalogue: detected here, registered
  aikito agents --json | jq '.agents[] | select(.detected) | .name'
  aikito agents add claude-code codex    write agents/claude-code.toml, agents/codex.toml
  aikito agents add cursor --dry-run     say what would be written
"""


@click.group("agents", cls=Group, invoke_without_command=True, epilog=AGENTS_EPILOG,
             short_help="The coding agents aikito knows; register them in the workspace.")
@json_option(SCHEMA)
@color_option
@click.pass_context
def agents_cmd(ctx: click.Context, as_json: bool, color: bool | None) -> None:
    """List the catalogue of coding agents aikito knows: whether each is detected on this
    machine (a command on PATH, a path under your home directory), whether it is
    registered in the workspace (agents/<name>.toml), and where a sync would link the
    project's instructions and skills for it. Writes nothing.

    Exit 0, or 4 when the workspace's agents/ registry cannot be read.
    """
    if ctx.invoked_subcommand is not None:
        return
    view = ListView(as_json, not as_json and use_color(color))
    with error_handler(view) as handler:
        from aikito_mem import signals
        from aikito_mem.commands.agents import list_agents

        with signals.interruptible():
            report = list_agents(workspace_of(ctx))
        handler.finish(report)


@agents_cmd.command("add", short_help="Register agents from the catalogue (never overwriting).")
@click.argument("names", nargs=-1, required=True, metavar="NAME…")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@json_option(SCHEMA)
@click.pass_context
def add_cmd(ctx: click.Context, names: tuple[str, ...], dry_run: bool, as_json: bool) -> None:
    """Write agents/<NAME>.toml in the workspace from the catalogue, for each NAME
    (`aikito agents` lists them). A file already there is left as it is. The files hold
    only [agents.<NAME>], as the reference tool requires.

    Exit 0 written (or nothing missing, or a dry run), 3 a file appeared meanwhile (run
    again), 4 an unknown NAME (with a did-you-mean) or an unusable workspace or registry
    — nothing written, 5 a write failed, 130/143 interrupted.
    """
    as_json = as_json or bool((ctx.parent.params if ctx.parent else {}).get("as_json"))
    view = AddView(as_json, dry_run)
    with error_handler(view) as handler:
        from aikito_mem.commands.agents import add_agents

        handler.finish(add_agents(workspace_of(ctx), names, dry_run=dry_run))


__all__ = ["agents_cmd"]
