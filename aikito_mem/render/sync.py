"""A sync report as printed: the ``aikito.sync/2`` document (``--json``:
:mod:`~aikito_mem.render.sync_json`), or the text — the one line of a run with nothing
to do ([U3]), else the plan's lines and the closing line
(:mod:`~aikito_mem.render.sync_plan`), and the error's lines on stderr.

Pure: functions from values to strings/dicts; the command line decides where they go.
The document and the plan's lines are imported by the reports that show them: an
in-sync run prints one line ([§12]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aikito_mem.errors import Outcome
from aikito_mem.model import CheckoutState, Severity
from aikito_mem.outcome import run_findings
from aikito_mem.render.text import Display, Output, error_lines, plural

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.model import Finding, Plan
    from aikito_mem.outcome import SyncReport


def shown_findings(plan: Plan, display: Display, *, dry_run: bool) -> list[Finding]:
    """The findings a text report shows: warnings (and, with -v, notes), the run's own
    warnings ([U3]) included."""
    if display.quiet:  # -q keeps the run's own warning: nothing was synced
        return list(run_findings(plan, dry_run=dry_run))
    every = (*plan.findings, *run_findings(plan, dry_run=dry_run))
    return [f for f in every if display.verbose or f.severity != Severity.INFO]


def compact_lines(report: SyncReport, display: Display) -> list[str] | None:
    """[U3]: a run where nothing changed — nothing to do, nothing blocked — in one line
    (``demo: in sync (3 checkouts, 1 offline)``), then its warnings; ``None`` when the
    report needs more (changes, conflicts, an error, or -v)."""
    plan = report.plan
    if (plan is None or report.error is not None or display.verbose or plan.has_changes
            or plan.blocked or report.outcome not in (Outcome.UNCHANGED, Outcome.PLANNED)):
        return None
    n = len(plan.checkouts)
    gone = CheckoutState.OFFLINE
    offline = sum(1 for c in plan.checkouts if c.state is gone)
    if n == 0:
        head = f"{plan.project}: not synced (no checkout registered)"
    elif offline == n:
        head = f"{plan.project}: not synced ({plural(n, 'checkout')}, all offline)"
    else:
        rest = f", {offline} offline" if offline else ""
        head = f"{plan.project}: in sync ({plural(n, 'checkout')}{rest})"
    lines = [display.line(head, "green" if n > offline else "yellow")]
    shown = shown_findings(plan, display, dry_run=report.dry_run)
    if shown:
        from aikito_mem.render.sync_plan import plan_paths

        top = plan_paths(plan, display)
        lines.extend(display.line(f"{f.severity}: {top.text(f.message)}", "magenta")
                     for f in shown)
    return lines


def text_lines(report: SyncReport, display: Display, *, plan_file: str | None = None,
               header: bool = True) -> list[str]:
    """The text report of a sync: the one line of a run with nothing to do
    (:func:`compact_lines`), else the plan (with statuses of a real run) and the closing
    line.  ``-q`` keeps the closing line of a real run (whether changes were applied),
    the command that applies a dry run, and where a plan was saved."""
    if report.plan is None:  # [U4]: its path written where the command ran ([U2])
        from aikito_mem.render.paths import Paths

        where = Paths(None, cwd=display.cwd, home=display.home)
        return [display.line(f"notice: {where.text(f.message)}", "yellow")
                for f in report.findings]
    if plan_file is None:
        compact = compact_lines(report, display)
        if compact is not None:
            return compact
    from aikito_mem.render.sync_plan import closing_lines, text_report

    statuses = None
    if report.result is not None and report.result.statuses and not report.dry_run:
        statuses = report.result.statuses
    lines = text_report(report.plan, display, statuses, header=header,
                        dry_run=report.dry_run,
                        shown=shown_findings(report.plan, display, dry_run=report.dry_run))
    if report.error is None:
        for text, colour in closing_lines(report, plan_file, display):
            if display.quiet and report.dry_run and plan_file is None \
                    and "to apply:" not in text:
                continue
            lines.append(display.line(text, colour))
    return lines


def render(report: SyncReport, display: Display, *, plan_file: str | None = None) -> Output:
    """What ``sync project`` and ``apply`` print for ``report`` (``plan_file``: where
    ``--out`` saved the plan)."""
    if display.as_json:
        from aikito_mem.render.sync_json import document

        return Output(report.exit_code, document=document(report))
    errors = error_lines(report.error, display) if report.error is not None else ()
    return Output(report.exit_code,
                  lines=tuple(text_lines(report, display, plan_file=plan_file)),
                  errors=errors)
