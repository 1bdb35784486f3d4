"""``aikito apply PLANFILE``: execute a plan saved by ``sync project --dry-run --out``.

A thin call into :mod:`aikito_mem.commands.apply`: read the plan, then re-plan under the lock and
execute only a plan equal to the saved one ([E9]).  Rendered as ``sync project`` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aikito_mem.cli.error_handler import error_handler
from aikito_mem.cli.options import (
    Command,
    color_option,
    completion,
    json_option,
    lock_timeout_option,
    workspace_of,
)
from aikito_mem.cli.sync import SyncView, display_for

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.outcome import SyncReport


APPLY_EPILOG = """\b
Example:
  aikito sync project demo --dry-run --out plan.toml   # review it, then:
  aikito apply plan.toml
"""


@click.command("apply", cls=Command, epilog=APPLY_EPILOG)
@click.argument("planfile", shell_complete=completion("files"))
@json_option("aikito.sync/2")
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
    from aikito_mem.commands.apply import apply_plan, read_saved
    from aikito_mem.outcome import run_report

    with signals.interruptible():  # nothing is written before execution
        plan = read_saved(planfile)
        view.project, view.workspace = plan.project, plan.workspace
    return run_report(apply_plan(plan, workspace=workspace, lock_timeout=lock_timeout,
                                 planfile=planfile))
