"""``aikito doctor``: health checks of the memory substrate (docs/commands.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import json_option, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.doctor import DoctorReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output


class DoctorView:
    failed_code = "doctor.os_error"

    def __init__(self, as_json: bool, *, strict: bool, verbose: bool) -> None:
        self.as_json = as_json
        self.strict = strict
        self.verbose = verbose

    def render(self, report: DoctorReport) -> Output:
        from aikito_mem.render.doctor import render
        from aikito_mem.render.text import Display

        return render(report, Display(as_json=self.as_json, verbose=self.verbose))

    def failed(self, error: AikitoError) -> DoctorReport:
        from aikito_mem.doctor import DoctorReport

        return DoctorReport(None, None, self.strict, error=error)

    def interrupted(self, report: DoctorReport, error: InterruptedError_) -> DoctorReport:
        import attrs

        from aikito_mem.errors import InterruptedError_

        if isinstance(report.error, InterruptedError_):
            return report  # already ended by the signal
        return attrs.evolve(report, error=error)


@click.command("doctor")
@json_option("aikito.doctor/1")
@click.option("--strict", is_flag=True, help="Warnings count as errors for the exit code.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the checks that passed.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool, strict: bool, verbose: bool) -> None:
    """Health checks of the memory substrate, each ok / warning / error with a remedy.

    Exit 0 with no errors (warnings allowed unless --strict), 1 with errors, 4 when the
    workspace cannot be resolved.
    """
    with error_handler(DoctorView(as_json, strict=strict, verbose=verbose)) as handler:
        from aikito_mem import signals
        from aikito_mem.doctor import run

        with signals.interruptible():  # writes nothing: a signal stops it at once
            report = run(workspace_of(ctx), strict=strict)
        handler.finish(report)
