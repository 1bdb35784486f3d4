"""``aikito sync project [NAME] [PATH]`` (SPEC §9): plan, or lock + plan + execute.

The command only sequences the engine and renders its :class:`~aikito_mem.outcome.SyncReport`;
the outcome and exit code of every case are decided in :mod:`aikito_mem.outcome`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import (
    color_option,
    json_option,
    lock_timeout_option,
    use_color,
    workspace_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.api import Project
    from aikito_mem.errors import AikitoError, InterruptedError_
    from aikito_mem.outcome import SyncReport
    from aikito_mem.render.text import Display, Output


class SyncView:
    """How ``sync project`` and ``apply`` render: the ``aikito.sync/2`` document or the
    text report.  Remembers the project and workspace as soon as they are known, so that
    the document of an error names them."""

    failed_code = "sync.failed"

    def __init__(self, display: Display, *, dry_run: bool) -> None:
        self.display = display
        self.dry_run = dry_run
        self.project: str | None = None
        self.workspace: str | None = None

    def render(self, report: SyncReport) -> Output:
        from aikito_mem.render.sync import render

        return render(report, self.display)

    def failed(self, error: AikitoError) -> SyncReport:
        from aikito_mem.outcome import error_report

        return error_report(error, project=self.project, workspace=self.workspace,
                            dry_run=self.dry_run)

    def interrupted(self, report: SyncReport, error: InterruptedError_) -> SyncReport:
        from aikito_mem.outcome import interrupted

        return interrupted(report, error)


def display_for(as_json: bool, color: bool | None, *, verbose: bool = False,
                quiet: bool = False) -> Display:
    from aikito_mem.render.text import Display

    return Display(as_json=as_json, verbose=verbose, quiet=quiet,
                   color=not as_json and use_color(color))


@click.group()
def sync() -> None:
    """Synchronise runtime links."""


@sync.command("project")
@click.argument("name", required=False)
@click.argument("path", required=False)
@click.option("--dry-run", is_flag=True, help="Plan and print; write nothing.")
@json_option("aikito.sync/2")
@click.option("--check", is_flag=True, help="Dry run; exit 7 when changes are pending.")
@click.option("--no-register", is_flag=True, help="Do not add PATH to agent.toml.")
@click.option("--out", metavar="PLANFILE", default=None,
              help="With --dry-run: save the frozen plan for `aikito apply`.")
@lock_timeout_option
@click.option("-v", "--verbose", is_flag=True, help="Also list unchanged links.")
@click.option("-q", "--quiet", is_flag=True, help="Print only conflicts and the summary.")
@color_option
@click.pass_context
def sync_project(
    ctx: click.Context,
    name: str | None,
    path: str | None,
    dry_run: bool,
    as_json: bool,
    check: bool,
    no_register: bool,
    out: str | None,
    lock_timeout: float,
    verbose: bool,
    quiet: bool,
    color: bool | None,
) -> None:
    """Link the memory of project NAME into its checkouts (or only into PATH)."""
    dry = dry_run or check
    if out is not None and not dry:
        raise click.UsageError("--out PLANFILE needs --dry-run (or --check)")
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be combined")
    view = SyncView(display_for(as_json, color, verbose=verbose, quiet=quiet), dry_run=dry)
    with error_handler(view) as handler:
        if dry:
            handler.finish(_dry_run(view, workspace_of(ctx), name, path, check=check,
                                    register=not no_register, out=out))
        handler.finish(_sync(view, workspace_of(ctx), name, path, register=not no_register,
                             lock_timeout=lock_timeout))


def _project(view: SyncView, workspace: str | None, name: str | None) -> Project:
    """The project NAME, or the one whose active checkout holds the current directory."""
    from aikito_mem.api import Project
    from aikito_mem.discovery import resolve_workspace

    view.project = name
    ws = resolve_workspace(workspace)
    view.workspace = ws.root  # named by the document even if agent.toml is broken
    # NAME omitted or ".": the current directory's project (a deleted one: ConfigError).
    project = Project.for_directory(".", ws) if name in (None, ".") else Project.load(name, ws)
    view.project, view.workspace = project.name, project.workspace
    return project


def _dry_run(view: SyncView, workspace: str | None, name: str | None, path: str | None, *,
             check: bool, register: bool, out: str | None) -> SyncReport:
    """Plan and show; the only write is the plan file of ``--out``."""
    from aikito_mem import signals
    from aikito_mem.outcome import dry_run_report

    with signals.interruptible():  # nothing is written while planning: stop at once
        project = _project(view, workspace, name)
        # A plan only shown needs no source identities; a saved one does ([P5]).
        plan = project.plan(path, register=register, identify=out is not None)
    if out is not None:
        from aikito_mem.planfile import write_plan

        signals.check()
        write_plan(plan, out)
    return dry_run_report(plan, check=check)


def _sync(view: SyncView, workspace: str | None, name: str | None, path: str | None, *,
          register: bool, lock_timeout: float) -> SyncReport:
    """Lock, plan and execute ([E3]); the engine handles signals while it writes."""
    from aikito_mem import signals
    from aikito_mem.outcome import run_report

    with signals.interruptible():
        project = _project(view, workspace, name)
    return run_report(project.sync(path, register=register, lock_timeout=lock_timeout))
