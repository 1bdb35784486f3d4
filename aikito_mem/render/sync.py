"""Plans, results and sync reports as text or as the ``aikito.sync/2`` JSON document.

Pure: functions from values to strings/dicts; the command line decides where they go.
"""

from __future__ import annotations

from typing import Any

from aikito_mem.errors import Outcome
from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    CheckoutState,
    Operation,
    Plan,
    SegmentName,
    Severity,
    Status,
    SyncResult,
)
from aikito_mem.outcome import SyncReport
from aikito_mem.render.text import Display, Output, error_json, error_lines, plural

SCHEMA = "aikito.sync/2"

_NOOP = Action.NOOP
_CONFLICT = Action.CONFLICT
_EMPTY_SUMMARY = {"create": 0, "noop": 0, "unlink": 0, "conflict": 0, "skip": 0}


def _op_json(op: Operation, status: Status, error: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "segment": op.segment.value,
        "action": op.action.value,
        "rule": op.rule,
        "checkout": op.checkout,
        "resource": op.resource,
        "target": op.target,
        "source": op.source,
        "reason": op.reason,
        "status": status.value,
        "entry": op.entry,
        "found": op.observed.describe(),
    }
    if op.remedy is not None:
        doc["remedy"] = op.remedy
    if error is not None:
        doc["error"] = error
    return doc


def json_document(
    *,
    project: str | None,
    workspace: str | None,
    dry_run: bool,
    outcome: str,
    exit_code: int,
    plan: Plan | None = None,
    result: SyncResult | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The one JSON document of SPEC §9, for every outcome."""
    if result is not None:
        plan = result.plan
    summary = plan.summary() if plan is not None else dict(_EMPTY_SUMMARY)
    operations: list[dict[str, Any]] = []
    if plan is not None:
        if result is not None and result.statuses:
            statuses = result.statuses
            errors = result.errors or tuple(None for _ in plan.operations)
        else:
            fill = Status.PLANNED if dry_run else Status.NOT_APPLIED
            statuses = tuple(fill for _ in plan.operations)
            errors = tuple(None for _ in plan.operations)
        operations = [_op_json(op, st, er) for op, st, er in
                      zip(plan.operations, statuses, errors, strict=True)]
    segments = _segments_json(plan, result, dry_run=dry_run, outcome=str(outcome),
                              exit_code=exit_code)
    return {
        "schema": SCHEMA,
        "project": project if project is not None else (plan.project if plan else None),
        "workspace": workspace if workspace is not None else (plan.workspace if plan else None),
        "dry_run": dry_run,
        "outcome": str(outcome),
        "exit_code": exit_code,
        "summary": summary,
        "checkouts": [
            {"label": c.label, "path": c.path, "state": c.state.value,
             **({"reason": c.reason} if c.reason else {})}
            for c in (plan.checkouts if plan is not None else ())
        ],
        "operations": operations,
        "findings": [
            {"code": f.code, "severity": str(f.severity), "message": f.message,
             "path": f.path}
            for f in (plan.findings if plan is not None else ())
        ],
        "segments": segments,
        "registered": plan.register if (plan is not None and result is not None
                                         and result.registered) else None,
        "error": error,
    }


def _segments_json(plan: Plan | None, result: SyncResult | None, *, dry_run: bool,
                   outcome: str, exit_code: int) -> dict[str, Any]:
    """[G6]: all three segments, each ``{"active", "success", "outcome", "summary"}``."""
    if plan is None:  # refused before planning (configuration error, busy …)
        failed = exit_code not in (0, 7)
        return {seg.value: {"active": False, "success": not failed, "outcome": outcome,
                            "summary": dict(_EMPTY_SUMMARY)} for seg in SEGMENT_ORDER}
    by_name = {s.name: s for s in result.segments} if result is not None else {}
    if not by_name and plan is not None:
        from aikito_mem.execute import segment_results

        if dry_run:
            by_name = {s.name: s for s in segment_results(plan, dry_run=True)}
        elif outcome in ("stale", "failed", "interrupted", "busy", "blocked"):
            by_name = {s.name: s for s in segment_results(plan, halted=outcome)}
    out: dict[str, Any] = {}
    for seg in SEGMENT_ORDER:
        summary = plan.summary(seg) if plan is not None else dict(_EMPTY_SUMMARY)
        known = by_name.get(seg.value)
        if known is not None:
            out[seg.value] = {"active": known.active, "success": known.success,
                              "outcome": known.outcome, "summary": summary}
        else:
            active = plan.segment_active(seg) if plan is not None else False
            ok = exit_code in (0, 7) or not active
            word = outcome if active else ("planned" if dry_run else "unchanged")
            out[seg.value] = {"active": active, "success": ok, "outcome": word,
                              "summary": summary}
    return out


def document(report: SyncReport) -> dict[str, Any]:
    """The ``aikito.sync/2`` document of a report."""
    return json_document(
        project=report.project, workspace=report.workspace, dry_run=report.dry_run,
        outcome=report.outcome, exit_code=report.exit_code, plan=report.plan,
        result=report.result,
        error=error_json(report.error) if report.error is not None else None,
    )


def summary_lines(plan: Plan) -> list[str]:
    """One summary line per segment that has anything configured or found (SPEC §9):
    skills and instructions when active, memory always."""
    out = []
    for seg in (SegmentName.SKILLS, SegmentName.INSTRUCTIONS):
        if plan.segment_active(seg) or (seg is SegmentName.SKILLS and plan.skills):
            s = plan.summary(seg)
            out.append(f"{seg.value}: {s['create']} to create, {s['unlink']} to unlink, "
                       f"{plural(s['conflict'], 'conflict')}, {s['noop']} unchanged, "
                       f"{s['skip']} skipped")
    out.append(summary_line(plan))
    return out


def summary_line(plan: Plan) -> str:
    """``memory: 3 to create, 1 to unlink, 0 conflicts, 27 unchanged, 2 skipped (…)``."""
    s = plan.summary(SegmentName.MEMORY)
    offline = sum(1 for c in plan.checkouts if c.state is CheckoutState.OFFLINE)
    shadowed = sum(1 for op in plan.operations
                   if op.action is Action.SKIP and op.rule == "S4")
    notes = []
    if offline:
        notes.append(f"{plural(offline, 'checkout')} offline")
    if shadowed:
        notes.append(f"{shadowed} shadowed")
    extra = f" ({', '.join(notes)})" if notes else ""
    return (f"memory: {s['create']} to create, {s['unlink']} to unlink, "
            f"{plural(s['conflict'], 'conflict')}, {s['noop']} unchanged, "
            f"{s['skip']} skipped{extra}")


def _op_line(op: Operation, status: Status | None, offline: bool,
             display: Display) -> str | None:
    """One operation's line, or ``None`` when the display leaves it out."""
    a = op.action
    if display.quiet and a is not _CONFLICT:
        return None
    mark = ""
    if status is Status.NOT_APPLIED or status is Status.UNKNOWN:
        mark = f" [{status.value}]"
    if a is Action.CREATE:
        return display.line(f"  + {op.target} -> {op.source}{mark}", "green")
    if a is Action.UNLINK:
        tail = "/" if op.entry == "directory" else ""
        return display.line(f"  - {op.target}{tail}{mark}", "yellow")
    if a is _CONFLICT:
        remedy = f" ({op.remedy})" if op.remedy else ""
        return display.line(f"  ! {op.target}: {op.reason}{remedy}", "red", bold=True)
    if a is Action.SKIP:
        return None if offline else display.line(f"  ~ {op.target}: skipped ({op.reason})")
    if not display.verbose:
        return None
    return display.line(f"  = {op.target} -> {op.source}")


def text_report(plan: Plan, display: Display,
                statuses: tuple[Status, ...] | None = None) -> list[str]:
    """Operations grouped under a header per checkout, then findings and the summary."""
    lines: list[str] = []
    quiet, verbose = display.quiet, display.verbose
    if not quiet:
        where = f" ({plan.register} will be registered in {plan.config_path})" \
            if plan.register else ""
        lines.append(display.line(f"project {plan.project} — workspace {plan.workspace}"
                                  f"{where}"))
    by_checkout: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        by_checkout.setdefault(op.checkout, []).append((i, op))
    for co in plan.checkouts:
        offline = co.state is CheckoutState.OFFLINE
        body: list[str] = []
        if offline and not quiet:
            body.append(display.line(f"  ~ checkout offline: {co.path}", "cyan"))
        for i, op in by_checkout.get(co.path, ()):
            if op.action is _NOOP and not verbose:
                continue
            line = _op_line(op, statuses[i] if statuses is not None else None, offline,
                            display)
            if line is not None:
                body.append(line)
        if body or (verbose and not quiet):
            header = f"checkout {co.label}: {co.path}"
            lines.append(display.line(header) if quiet else
                         display.line(header, "blue", bold=True))
            lines.extend(body)
    if not quiet:
        for f in plan.findings:
            if f.severity == Severity.INFO and not verbose:
                continue
            lines.append(display.line(f"{f.severity}: {f.message}", "magenta"))
    lines.extend(display.line(line) for line in summary_lines(plan))
    return lines


def _closing_line(report: SyncReport) -> list[str]:
    """``done: …`` / ``dry run: nothing was written`` after a report without error."""
    plan = report.plan
    if plan is None:
        return []
    if report.outcome is Outcome.APPLIED:
        out = []
        if report.result is not None and report.result.registered:
            out.append(f"registered {plan.register} in {plan.config_path}")
        out.append(f"done: {plural(len(plan.changes), 'change')} applied")
        return out
    if report.outcome is Outcome.UNCHANGED:
        return ["done: already in sync, nothing to do"]
    if report.outcome is Outcome.PLANNED and report.dry_run:
        return ["dry run: nothing was written"]
    return []


def text_lines(report: SyncReport, display: Display) -> list[str]:
    """The text report of a sync: the plan (with statuses of a real run), then the
    closing line."""
    if report.plan is None:
        return []
    statuses = None
    if report.result is not None and report.result.statuses and not report.dry_run:
        statuses = report.result.statuses
    lines = text_report(report.plan, display, statuses)
    if not display.quiet and report.error is None:
        lines.extend(display.line(line) for line in _closing_line(report))
    return lines


def render(report: SyncReport, display: Display) -> Output:
    """What ``sync project`` and ``apply`` print for ``report``."""
    if display.as_json:
        return Output(report.exit_code, document=document(report))
    errors = error_lines(report.error, display) if report.error is not None else ()
    return Output(report.exit_code, lines=tuple(text_lines(report, display)), errors=errors)
