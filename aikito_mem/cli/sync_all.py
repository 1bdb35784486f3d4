"""``aikito sync`` with no subcommand: every project (:mod:`aikito_mem.commands.sync_all`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.sync_all import SyncAllReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Display, Output


class SyncAllView:
    failed_code = "sync.failed"

    def __init__(self, display: Display, *, dry_run: bool, check: bool) -> None:
        self.display = display
        self.dry_run = dry_run
        self.check = check

    def render(self, report: SyncAllReport) -> Output:
        from aikito_mem.render.sync_all import render

        return render(report, self.display)

    def failed(self, error: AikitoError) -> SyncAllReport:
        from aikito_mem.commands.sync_all import SyncAllReport

        return SyncAllReport(None, None, self.dry_run, self.check, error=error)

    def interrupted(self, report: SyncAllReport, error: InterruptedError_) -> SyncAllReport:
        import attrs

        from aikito_mem.errors import InterruptedError_

        if isinstance(report.error, InterruptedError_):
            return report  # already ended by the signal
        return attrs.evolve(report, error=error)


def run_all(ctx: click.Context, display: Display, *, dry_run: bool, check: bool,
            lock_timeout: float, moved_from: str | None = None) -> NoReturn:
    """Sync (or plan) every project and exit with the combined code."""
    with error_handler(SyncAllView(display, dry_run=dry_run, check=check)) as handler:
        from aikito_mem.commands.sync_all import sync_all

        handler.finish(sync_all(workspace_of(ctx), dry_run=dry_run, check=check,
                                lock_timeout=lock_timeout, moved_from=moved_from))
    raise AssertionError("unreachable")  # pragma: no cover - finish() exits
