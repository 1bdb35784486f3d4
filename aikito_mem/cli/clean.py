"""``aikito clean project NAME [PATH]`` and ``aikito clean PATH`` ([L3]).

The command only sequences :mod:`aikito_mem.commands.clean` and renders its report
(:mod:`aikito_mem.render.clean`); outcomes and exit codes are those of a sync
(:mod:`aikito_mem.outcome`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import (
    Command,
    color_option,
    json_option,
    lock_timeout_option,
    workspace_of,
)
from aikito_mem.cli.sync import SyncView, display_for

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.outcome import SyncReport
    from aikito_mem.render.text import Output


class CleanView(SyncView):
    """Rendered as ``aikito.clean/1`` (the fields of ``aikito.sync/2``) or as text."""

    failed_code = "clean.failed"

    def render(self, report: SyncReport) -> Output:
        from aikito_mem.render.clean import render

        return render(report, self.display)


CLEAN_HELP = """Remove every link this workspace owns from a checkout.

\b
aikito clean project NAME [PATH]  the checkouts of project NAME (or only PATH)
aikito clean PATH                 one checkout, whose project may no longer exist
                                  (a checkout named `project`: write ./project)

In all three segments — .agents/memory (recursively), .agents/skills, the instruction
targets of the agent registry and the legacy .agents/AGENTS.md — every link whose target
is the workspace's canonical path for its place is removed; then the directories that
leaves empty (.agents/memory/…, .agents/memory, .agents/skills, .agents, an instruction
target's directory such as .claude) are removed. Anything else is kept and listed.
A directory that is a mount point is kept, and said so. With --moved-from OLD (the
workspace was moved from OLD), a link naming OLD + the canonical remainder of its place
is removed too. agent.toml is never edited; a second clean has nothing to do. Exit codes
as for `aikito sync project`.
"""

CLEAN_EPILOG = """\b
Examples:
  aikito clean project demo --dry-run    what would be removed
  aikito clean project demo ~/code/demo  only that checkout
  aikito clean ~/code/old-project        a checkout of a deleted project
"""


def _arguments(args: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(project, path) of ``project NAME [PATH]`` or ``PATH``; a usage error otherwise.
    An empty argument is one too ([L8]): ``aikito clean "$UNSET"`` must never clean the
    current directory (nor ``clean project NAME ""`` a checkout named by nothing)."""
    if "" in args:
        which = ("NAME" if len(args) > 1 and args[0] == "project" and args[1] == ""
                 else "PATH")
        raise click.UsageError(
            f"{which} is empty; expected a non-empty {which} (an unset shell variable? "
            "to clean the current directory, write `aikito clean .`)")
    if args and args[0] == "project":
        if len(args) not in (2, 3):
            raise click.UsageError(
                "expected `aikito clean project NAME [PATH]` (a checkout named `project` "
                "is written ./project)")
        return args[1], (args[2] if len(args) == 3 else None)
    if len(args) != 1:
        raise click.UsageError(
            "expected `aikito clean project NAME [PATH]` or `aikito clean PATH`")
    return None, args[0]


@click.command("clean", cls=Command, help=CLEAN_HELP, epilog=CLEAN_EPILOG,
               short_help="Remove this workspace's links from a project's checkouts.")
@click.argument("args", nargs=-1, required=True, metavar="project NAME [PATH] | PATH")
@click.option("--dry-run", is_flag=True, help="Plan and print; remove nothing.")
@json_option("aikito.clean/1")
@lock_timeout_option
@click.option("--moved-from", "moved_from", metavar="OLD", default=None,
              help="The workspace moved from OLD: its links into OLD are removed too.")
@click.option("-v", "--verbose", is_flag=True, help="Also list checkouts with nothing to do.")
@click.option("-q", "--quiet", is_flag=True, help="Print only findings and the summary.")
@color_option
@click.pass_context
def clean_cmd(ctx: click.Context, args: tuple[str, ...], dry_run: bool, as_json: bool,
              lock_timeout: float, moved_from: str | None, verbose: bool, quiet: bool,
              color: bool | None) -> None:
    project, path = _arguments(args)
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be combined")
    view = CleanView(display_for(as_json, color, verbose=verbose, quiet=quiet),
                     dry_run=dry_run)
    with error_handler(view) as handler:
        handler.finish(_clean(view, workspace_of(ctx), project, path, dry_run=dry_run,
                              lock_timeout=lock_timeout, moved_from=moved_from))


def _clean(view: CleanView, workspace: str | None, project: str | None, path: str | None,
           *, dry_run: bool, lock_timeout: float, moved_from: str | None = None
           ) -> SyncReport:
    from aikito_mem import signals
    from aikito_mem.commands.clean import cleaner
    from aikito_mem.config.discovery import resolve_workspace
    from aikito_mem.outcome import dry_run_report, run_report

    with signals.interruptible():
        view.project = project
        ws = resolve_workspace(workspace)
        view.workspace = ws.root
        job = cleaner(ws, project, path, moved_from)
        if dry_run:
            return dry_run_report(job.plan())
    return run_report(job.run(lock_timeout=lock_timeout))
