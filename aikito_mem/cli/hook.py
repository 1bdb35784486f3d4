"""``aikito hook install|uninstall [PATH] [--dry-run]``: the ``post-checkout`` hook that
syncs a new git worktree ([L6]; :mod:`aikito_mem.commands.hook`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import end_interrupted, error_handler
from aikito_mem.cli.options import Group

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.commands.hook import HookAction, HookReport
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.render.text import Output


class HookView:
    failed_code = "hook.os_error"

    def __init__(self, action: HookAction, path: str | None, dry_run: bool) -> None:
        self.action = action
        self.path = path
        self.dry_run = dry_run

    def render(self, report: HookReport) -> Output:
        from aikito_mem.cli.options import display
        from aikito_mem.render.hook import render

        return render(report, display())  # [U2]: the width of this terminal

    def failed(self, error: AikitoError) -> HookReport:
        from aikito_mem.commands.hook import HookReport

        return HookReport(self.action, self.path, dry_run=self.dry_run, error=error)

    def interrupted(self, report: HookReport, error: InterruptedError_) -> HookReport:
        return end_interrupted(report, error)


HOOK_EPILOG = """\b
Examples:
  aikito hook install            in a checkout: new worktrees get their links
  aikito hook install --dry-run  where the hook would go
  aikito hook uninstall          remove it (only aikito's own hook)
"""


@click.group("hook", cls=Group, epilog=HOOK_EPILOG,
             short_help="Install the post-checkout hook that syncs new git worktrees.")
def hook_group() -> None:
    """The post-checkout hook that syncs a new git worktree (git worktree add) with
    aikito sync project --quiet.  It never fails git, and an existing hook is never
    overwritten."""


def _run(install: bool, path: str | None, dry_run: bool) -> None:
    from aikito_mem.commands.hook import HookAction

    action = HookAction.INSTALL if install else HookAction.UNINSTALL
    with error_handler(HookView(action, path, dry_run)) as handler:
        from aikito_mem.commands import hook

        run = hook.install if install else hook.uninstall
        handler.finish(run(path, dry_run=dry_run))


@hook_group.command("install")
@click.argument("path", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would be done; write nothing.")
def install_cmd(path: str | None, dry_run: bool) -> None:
    """Install the post-checkout hook in the hooks directory of PATH's repository
    (default: the current directory; git rev-parse --git-path hooks, so core.hooksPath
    is respected).

    Exit 0 installed (or aikito's hook is there already), 1 another post-checkout hook
    is there (left as it is; the line to add to it is printed), 4 PATH is not in a git
    work tree.
    """
    _run(True, path, dry_run)


@hook_group.command("uninstall")
@click.argument("path", required=False)
@click.option("--dry-run", is_flag=True, help="Say what would be done; write nothing.")
def uninstall_cmd(path: str | None, dry_run: bool) -> None:
    """Remove the post-checkout hook aikito hook install wrote (only when it is
    byte-identical to it).

    Exit 0 removed (or no hook there), 1 the hook there is not aikito's (left as it is),
    4 PATH is not in a git work tree.
    """
    _run(False, path, dry_run)
