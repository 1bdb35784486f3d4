"""``aikito status``: every project and checkout with its sync state (docs/commands.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import json_option, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output
    from aikito_mem.status import StatusReport


class StatusView:
    failed_code = "status.os_error"

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def render(self, report: StatusReport) -> Output:
        from aikito_mem.render.status import render
        from aikito_mem.render.text import Display

        return render(report, Display(as_json=self.as_json))

    def failed(self, error: AikitoError) -> StatusReport:
        from aikito_mem.status import StatusReport

        return StatusReport(None, None, error=error)

    def interrupted(self, report: StatusReport, error: InterruptedError_) -> StatusReport:
        import attrs

        from aikito_mem.errors import InterruptedError_

        if isinstance(report.error, InterruptedError_):
            return report  # already ended by the signal
        return attrs.evolve(report, error=error)


@click.command("status")
@json_option("aikito.status/1")
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every project and checkout with its sync state (a dry run; writes nothing).

    Exit 0 when everything is in sync, 1 when something is pending, conflicting or a
    project cannot be read, 4 on a workspace error.
    """
    with error_handler(StatusView(as_json)) as handler:
        from aikito_mem import signals
        from aikito_mem.status import collect

        with signals.interruptible():  # writes nothing: a signal stops it at once
            report = collect(workspace_of(ctx))
        handler.finish(report)
