"""``aikito adopt TARGET``: move a real file or directory that blocks a sync into the
workspace, list it in ``memory`` and link it back (docs/commands.md).

A thin call into :func:`aikito_mem.commands.adopt.run.adopt`, which returns an
:class:`~aikito_mem.commands.adopt.plan.AdoptReport`, rendered by :mod:`aikito_mem.render.adopt`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import Command, json_option, lock_timeout_option, workspace_of

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.adopt.plan import AdoptReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output


class AdoptView:
    failed_code = "adopt.examine_failed"

    def __init__(self, as_json: bool, *, dry_run: bool) -> None:
        self.as_json = as_json
        self.dry_run = dry_run

    def render(self, report: AdoptReport) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.render.adopt import json_document, text_lines
        from aikito_mem.render.text import Output, message_lines

        if self.as_json:
            return Output(report.exit_code, document=json_document(report))
        shown = display()
        lines = tuple(shown.line(line) for line in text_lines(
            report, cwd=shown.cwd, home=shown.home, program=shown.program))
        error = report.error
        errors = message_lines(error.message, shown) if error is not None else ()
        return Output(report.exit_code, lines=lines, errors=errors)

    def failed(self, error: AikitoError) -> AdoptReport:
        from aikito_mem.commands.adopt.plan import AdoptReport

        return AdoptReport.from_error(error, dry_run=self.dry_run)

    def interrupted(self, report: AdoptReport, error: InterruptedError_) -> AdoptReport:
        if report.outcome.value == error.outcome:
            return report  # already ended by the signal
        return report.ended_by(error)


ADOPT_EPILOG = """\b
Examples:
  aikito adopt ~/code/demo/.agents/memory/style.md --dry-run
  aikito adopt ~/code/demo/.agents/memory/style.md
  aikito adopt ~/code/demo/.claude/skills/review
"""


@click.command("adopt", cls=Command, epilog=ADOPT_EPILOG)
@click.argument("target")
@click.option("--project", metavar="NAME", default=None,
              help="The project, when the checkout is registered for several.")
@click.option("--dry-run", is_flag=True, help="Check and print what would happen; write nothing.")
@json_option("aikito.adopt/1")
@lock_timeout_option
@click.pass_context
def adopt_cmd(ctx: click.Context, target: str, project: str | None, dry_run: bool,
              as_json: bool, lock_timeout: float) -> None:
    """Move TARGET into the workspace, list it in agent.toml and link it back.

    TARGET is a file or directory at
    <checkout>/.agents/memory/REL (to memory/REL, listed in memory), a directory at
    <checkout>/.agents/skills/NAME or in an agent's project_skills_path such as
    <checkout>/.claude/skills/NAME (to skills/NAME, listed in skills; linked back there
    only, the next `aikito sync project` links the rest), or a file at an instruction
    target such as AGENTS.md while the project's AGENTS.md is absent or empty (to
    projects/NAME/AGENTS.md; every instruction target of the checkout linked).  An
    identical copy is replaced by the link.

    Exit 0 adopted (or a clean dry run; other conflicts of the checkout are listed, never
    a reason to stop), 1 refused (nothing written; a differing copy, a file git tracks),
    3 something changed meanwhile, 4 configuration error or TARGET is the workspace's own
    copy, 5 a step failed, 6 checkout busy, 130/143 interrupted.  Every failure says
    where the content is.
    """
    with error_handler(AdoptView(as_json, dry_run=dry_run)) as handler:
        from aikito_mem.commands.adopt.run import adopt

        handler.finish(adopt(target, workspace_of(ctx), project=project, dry_run=dry_run,
                             lock_timeout=lock_timeout))
