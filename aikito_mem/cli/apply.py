"""``aikito apply PLANFILE``: execute a plan saved by ``sync project --dry-run --out``.

A thin call into the engine: read the plan, check it names the workspace given, execute
it with every observation re-verified ([E9]).  Rendered as ``sync project`` is.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import color_option, json_option, lock_timeout_option, workspace_of
from aikito_mem.cli.sync import SyncView, display_for

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.outcome import SyncReport


@click.command("apply")
@click.argument("planfile")
@json_option("aikito.sync/1")
@lock_timeout_option
@color_option
@click.pass_context
def apply_cmd(
    ctx: click.Context, planfile: str, as_json: bool, lock_timeout: float, color: bool | None
) -> None:
    """Execute a plan saved with `sync project --dry-run --out PLANFILE`."""
    view = SyncView(display_for(as_json, color), dry_run=False)
    with error_handler(view) as handler:
        handler.finish(_apply(view, workspace_of(ctx), planfile, lock_timeout))


def _apply(view: SyncView, workspace: str | None, planfile: str,
           lock_timeout: float) -> SyncReport:
    from aikito_mem import signals
    from aikito_mem.errors import PlanFileError
    from aikito_mem.execute import execute
    from aikito_mem.outcome import run_report
    from aikito_mem.planfile import read_plan

    with signals.interruptible():  # nothing is written before execution
        plan = read_plan(planfile)
        view.project, view.workspace = plan.project, plan.workspace
        if workspace is not None or os.environ.get("AIKITO_DIR"):
            from aikito_mem.discovery import resolve_workspace

            ws = resolve_workspace(workspace)
            if ws.root != plan.workspace:
                raise PlanFileError(
                    f"plan file {planfile!r} is for workspace {plan.workspace}, but the "
                    f"workspace given ({ws.found_via}) is {ws.root} — apply it without "
                    "--workspace/AIKITO_DIR, or plan again for this workspace",
                    path=planfile, code="plan.foreign",
                )
    return run_report(execute(plan, lock_timeout=lock_timeout, always_verify=True))
