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
from aikito_mem.outcome import SyncReport, segment_results
from aikito_mem.render.paths import Paths
from aikito_mem.render.text import (
    Display,
    Output,
    error_json,
    error_lines,
    plural,
    shown_name,
)

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
             display: Display, paths: Paths) -> str | None:
    """One operation's line, or ``None`` when the display leaves it out."""
    a = op.action
    if display.quiet and a is not _CONFLICT:
        return None
    mark = ""
    if status is Status.NOT_APPLIED or status is Status.UNKNOWN:
        mark = f" [{status.value}]"
    target = shown_name(paths.target(op))
    source = shown_name(paths.source(op.source)) if op.source is not None else None
    if a is Action.CREATE:
        return display.line(f"  + {target} -> {source}{mark}", "green")
    if a is Action.UNLINK:
        tail = "/" if op.entry == "directory" else ""
        return display.line(f"  - {target}{tail}{mark}", "yellow")
    if a is _CONFLICT:
        remedy = f" ({paths.text(op.remedy)})" if op.remedy else ""
        return display.line(f"  ! {target}: {paths.text(op.reason)}{remedy}", "red",
                            bold=True)
    if a is Action.SKIP:
        return None if offline else display.line(
            f"  ~ {target}: skipped ({paths.text(op.reason)})")
    if not display.verbose:
        return None
    return display.line(f"  = {target} -> {source}")


_SEGMENT_RANK = {segment: rank for rank, segment in enumerate(SEGMENT_ORDER)}


def _listed_order(ops: list[tuple[int, Operation]]) -> list[tuple[int, Operation]]:
    """A checkout's operations in the order they are listed: the plan's order (segment,
    then target), except that a pruned directory comes after the links it contained —
    it is removed after them ([P2], [E4]) and reads that way."""
    def key(item: tuple[int, Operation]) -> tuple[int, str]:
        op = item[1]
        if op.action is Action.UNLINK and op.entry == "directory":
            return _SEGMENT_RANK.get(op.segment, 0), op.target + "/\U0010ffff"
        return _SEGMENT_RANK.get(op.segment, 0), op.target
    return sorted(ops, key=key)  # stable: an UNLINK stays before a CREATE of its target


def _in_checkout(path: str | None, checkout: str) -> bool:
    return path is not None and path.startswith(checkout.rstrip("/") + "/")


def text_report(plan: Plan, display: Display,
                statuses: tuple[Status, ...] | None = None, *,
                header: bool = True) -> list[str]:
    """Operations grouped under a header per checkout (each with its findings), then the
    findings of no checkout and the summary.  Paths are shown relative
    (:mod:`aikito_mem.render.paths`)."""
    lines: list[str] = []
    quiet, verbose = display.quiet, display.verbose
    top = Paths(plan.workspace)
    if header and not quiet:
        where = (f" ({plan.register} will be registered in "
                 f"{top.source(plan.config_path)})") if plan.register else ""
        lines.append(display.line(f"project {plan.project} — workspace {plan.workspace}"
                                  f"{where}"))
    by_checkout: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        by_checkout.setdefault(op.checkout, []).append((i, op))
    shown = [f for f in plan.findings
             if not quiet and (verbose or f.severity != Severity.INFO)]
    placed: set[int] = set()
    for co in plan.checkouts:
        paths = Paths(plan.workspace, co.path)
        offline = co.state is CheckoutState.OFFLINE
        body: list[str] = []
        if offline and not quiet:
            body.append(display.line(f"  ~ checkout offline: {co.path}", "cyan"))
        for i, op in _listed_order(by_checkout.get(co.path, [])):
            if op.action is _NOOP and not verbose:
                continue
            line = _op_line(op, statuses[i] if statuses is not None else None, offline,
                            display, paths)
            if line is not None:
                body.append(line)
        if not offline:
            for n, f in enumerate(shown):
                if n not in placed and _in_checkout(f.path, co.path):
                    placed.add(n)
                    body.append(display.line(f"  {f.severity}: {paths.text(f.message)}",
                                             "magenta"))
        if body or (verbose and not quiet):
            head = f"checkout {co.label}: {co.path}"
            lines.append(display.line(head) if quiet else
                         display.line(head, "blue", bold=True))
            lines.extend(body)
    for n, f in enumerate(shown):
        if n not in placed:
            lines.append(display.line(f"{f.severity}: {top.text(f.message)}", "magenta"))
    lines.extend(display.line(line) for line in summary_lines(plan))
    return lines


def quote(word: str) -> str:
    """``shlex.quote``, imported only for the lines that show a command ([§12])."""
    from shlex import quote

    return quote(word)


def _nothing_synced(plan: Plan) -> str | None:
    """Why a run that found nothing to do synced nothing at all: no active checkout."""
    if any(c.state is not CheckoutState.OFFLINE for c in plan.checkouts):
        return None
    if not plan.checkouts:
        return (f"project {plan.project} has no checkout registered — add one with: "
                f"aikito sync project {quote(plan.project)} PATH")
    n = len(plan.checkouts)
    every = "its only checkout is" if n == 1 else f"all {n} of its checkouts are"
    return (f"{every} offline (project {plan.project}) — plug in or clone a checkout, "
            "then sync again")


def _closing_lines(report: SyncReport, plan_file: str | None) -> list[tuple[str, str | None]]:
    """What a report without error ends with, and each line's colour: what was done
    (``done: …``), that nothing was synced (a warning), or what a dry run did."""
    plan = report.plan
    if plan is None:
        return []
    outcome = report.outcome
    if outcome is Outcome.APPLIED:
        out: list[tuple[str, str | None]] = []
        if report.result is not None and report.result.registered:
            where = Paths(plan.workspace).source(plan.config_path)
            out.append((f"registered {plan.register} in {where}", None))
        out.append((f"done: {plural(len(plan.changes), 'change')} applied", "green"))
        return out
    if outcome not in (Outcome.UNCHANGED, Outcome.PLANNED):
        return []
    idle = _nothing_synced(plan) if not plan.has_changes else None
    if not report.dry_run:
        if idle is not None:
            return [(f"warning: nothing was synced: {idle}", "yellow")]
        return [("done: already in sync, nothing to do", "green")]
    if plan_file is not None:
        return [(f"dry run: nothing was synced; plan saved to {plan_file} — apply it with: "
                 f"aikito apply {quote(plan_file)}", None)]
    if idle is not None:
        return [(f"warning: nothing to sync: {idle}", "yellow")]
    if not plan.has_changes:
        return [("dry run: already in sync, nothing to do", None)]
    return [("dry run: nothing was written", None)]


def text_lines(report: SyncReport, display: Display, *, plan_file: str | None = None,
               header: bool = True) -> list[str]:
    """The text report of a sync: the plan (with statuses of a real run), then the
    closing line.  ``-q`` keeps the closing line of a real run (whether changes were
    applied), the warning that nothing was synced, and where a plan was saved."""
    if report.plan is None:
        return []
    statuses = None
    if report.result is not None and report.result.statuses and not report.dry_run:
        statuses = report.result.statuses
    lines = text_report(report.plan, display, statuses, header=header)
    if report.error is None:
        for text, colour in _closing_lines(report, plan_file):
            if display.quiet and report.dry_run and plan_file is None \
                    and not text.startswith("warning:"):
                continue
            lines.append(display.line(text, colour))
    return lines


def render(report: SyncReport, display: Display, *, plan_file: str | None = None) -> Output:
    """What ``sync project`` and ``apply`` print for ``report`` (``plan_file``: where
    ``--out`` saved the plan)."""
    if display.as_json:
        return Output(report.exit_code, document=document(report))
    errors = error_lines(report.error, display) if report.error is not None else ()
    return Output(report.exit_code,
                  lines=tuple(text_lines(report, display, plan_file=plan_file)),
                  errors=errors)
