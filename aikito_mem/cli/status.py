"""``aikito status``: every project and checkout with its sync state (docs/commands.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import end_interrupted, error_handler
from aikito_mem.cli.options import Command, color_option, json_option, use_color, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.status import StatusReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output


class StatusView:
    failed_code = "status.os_error"

    def __init__(self, as_json: bool, *, color: bool = False) -> None:
        self.as_json = as_json
        self.color = color

    def render(self, report: StatusReport) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.render.status import render

        return render(report, display(as_json=self.as_json, color=self.color))

    def failed(self, error: AikitoError) -> StatusReport:
        from aikito_mem.commands.status import StatusReport

        return StatusReport(None, None, error=error)

    def interrupted(self, report: StatusReport, error: InterruptedError_) -> StatusReport:
        return end_interrupted(report, error)


STATUS_EPILOG = """\b
Examples:
  aikito status                 the table
  aikito status --json | jq '.projects[].name'
  aikito status --color | less -R
"""


@click.command("status", cls=Command, epilog=STATUS_EPILOG,
               short_help="Every project and checkout with its sync state (writes nothing).")
@json_option("aikito.status/1")
@color_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool, color: bool | None) -> None:
    """Every project and checkout with its sync state (a dry run; writes nothing).

    Exit codes are those of `aikito sync --check`: 0 every project in sync, 7 changes
    pending, 1 a segment blocked by conflicts, 4 a configuration error (the workspace,
    or a project that cannot be read).
    """
    view = StatusView(as_json, color=not as_json and use_color(color))
    with error_handler(view) as handler:
        from aikito_mem import signals
        from aikito_mem.commands.status import collect

        with signals.interruptible():  # writes nothing: a signal stops it at once
            report = collect(workspace_of(ctx))
        handler.finish(report)
