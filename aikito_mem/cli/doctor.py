"""``aikito doctor``: health checks of the memory substrate (docs/commands.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import end_interrupted, error_handler
from aikito_mem.cli.options import Command, color_option, json_option, use_color, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.doctor.report import DoctorReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output


class DoctorView:
    failed_code = "doctor.os_error"

    def __init__(self, as_json: bool, *, strict: bool, verbose: bool, color: bool = False,
                 fix: bool = False, dry_run: bool = False) -> None:
        self.as_json = as_json
        self.strict = strict
        self.verbose = verbose
        self.color = color
        self.fix = fix
        self.dry_run = dry_run

    def render(self, report: DoctorReport) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.render.doctor import render

        return render(report, display(as_json=self.as_json, verbose=self.verbose,
                                      color=self.color))

    def failed(self, error: AikitoError) -> DoctorReport:
        from aikito_mem.commands.doctor.report import DoctorReport

        return DoctorReport(None, None, self.strict, error=error, fix=self.fix,
                            dry_run=self.dry_run)

    def interrupted(self, report: DoctorReport, error: InterruptedError_) -> DoctorReport:
        return end_interrupted(report, error)


DOCTOR_EPILOG = """\b
Examples:
  aikito doctor                  warnings and errors, each with its remedy
  aikito doctor -v               every check, the passing ones too
  aikito doctor --fix --dry-run  the fixes --fix would make
  aikito doctor --fix            make git ignore .agents/memory/ and .agents/skills/
"""


@click.command("doctor", cls=Command, epilog=DOCTOR_EPILOG,
               short_help="Health checks of the memory substrate, each with a remedy; "
                          "--fix makes the safe fixes.")
@json_option("aikito.doctor/1")
@click.option("--strict", is_flag=True, help="Warnings count as errors for the exit code.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the checks that passed.")
@click.option("--fix", is_flag=True,
              help="Make the safe fixes: append .agents/memory/ and .agents/skills/ to "
                   "each repository's info/exclude where git does not ignore them.")
@click.option("--dry-run", is_flag=True, help="With --fix: print the fixes; write nothing.")
@color_option
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool, strict: bool, verbose: bool, fix: bool,
               dry_run: bool, color: bool | None) -> None:
    """Health checks of the memory substrate, each ok / warning / error with a remedy.

    Doctor writes nothing, except with --fix: then the lines git needs to ignore each
    checkout's runtime links are appended to its repository's info/exclude (once per
    repository, however many worktrees share it; existing lines are never rewritten), and
    the checks describe the fixed state.

    Exit 0 with no errors (warnings allowed unless --strict), 1 with errors or a fix that
    failed, 4 when the workspace cannot be resolved.
    """
    if dry_run and not fix:
        raise click.UsageError("--dry-run goes with --fix: aikito doctor --fix --dry-run")
    view = DoctorView(as_json, strict=strict, verbose=verbose,
                      color=not as_json and use_color(color), fix=fix, dry_run=dry_run)
    with error_handler(view) as handler:
        from aikito_mem import signals
        from aikito_mem.commands.doctor.checks import run

        # Questions only, and at most one small append per repository (signals.check()
        # before it): a signal stops doctor at once.
        with signals.interruptible():
            report = run(workspace_of(ctx), strict=strict, fix=fix, dry_run=dry_run)
        handler.finish(report)
