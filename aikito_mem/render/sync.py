"""Plans, results and sync reports as text or as the ``aikito.sync/2`` JSON document.

Pure: functions from values to strings/dicts; the command line decides where they go.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aikito_mem.errors import EXIT_PENDING, Outcome
from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    CheckoutState,
    Finding,
    Operation,
    Plan,
    SegmentName,
    Severity,
    Status,
    SyncResult,
)
from aikito_mem.outcome import SyncReport, run_findings, segment_results
from aikito_mem.planner import R_MOVED
from aikito_mem.render.text import (
    Display,
    Output,
    error_json,
    error_lines,
    plural,
    shown_name,
)

if TYPE_CHECKING:  # pragma: no cover — a line that names no path needs no Paths
    from aikito_mem.render.paths import Paths

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
    findings: tuple[Finding, ...] = (),
) -> dict[str, Any]:
    """The one JSON document of SPEC §9, for every outcome (``findings``: those of a run
    without a plan)."""
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
            for f in (findings if plan is None else
                      (*plan.findings, *run_findings(plan, dry_run=dry_run)))
        ],
        "segments": segments,
        "registered": plan.register if (plan is not None and result is not None
                                         and result.registered) else None,
        **({"moved_from": plan.moved_from} if plan is not None and plan.moved_from else {}),
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
        findings=report.findings,
    )


def _counts(plan: Plan, seg: SegmentName, statuses: tuple[Status, ...] | None) -> str:
    """``3 to create, 1 to unlink, 0 conflicts, 27 unchanged, 2 skipped`` — or, for a run
    that was carried out (``statuses`` given), what it did: ``3 created, 1 unlinked, …``
    and how many changes were not applied or had an unknown effect."""
    s = plan.summary(seg)
    conflicts = plural(s["conflict"], "conflict")
    tail = f"{conflicts}, {s['noop']} unchanged, {s['skip']} skipped"
    if statuses is None:
        return f"{s['create']} to create, {s['unlink']} to unlink, {tail}"
    done = {Action.CREATE: 0, Action.UNLINK: 0}
    missed = {Status.NOT_APPLIED: 0, Status.UNKNOWN: 0}
    for op, status in zip(plan.operations, statuses, strict=True):
        if op.segment is not seg or op.action not in done:
            continue
        if status is Status.APPLIED:
            done[op.action] += 1
        elif status in missed:
            missed[status] += 1
    extra = "".join(f", {n} {st.value.replace('_', ' ')}" for st, n in missed.items() if n)
    return (f"{done[Action.CREATE]} created, {done[Action.UNLINK]} unlinked, {tail}"
            f"{extra}")


def summary_lines(plan: Plan, statuses: tuple[Status, ...] | None = None) -> list[str]:
    """One summary line per segment that has anything configured or found (SPEC §9):
    skills and instructions when active, memory always; in the past tense for a run
    that was carried out (``statuses`` given)."""
    out = []
    for seg in (SegmentName.SKILLS, SegmentName.INSTRUCTIONS):
        if plan.segment_active(seg) or (seg is SegmentName.SKILLS and plan.skills):
            out.append(f"{seg.value}: {_counts(plan, seg, statuses)}")
    out.append(summary_line(plan, statuses))
    return out


def summary_line(plan: Plan, statuses: tuple[Status, ...] | None = None) -> str:
    """``memory: 3 to create, 1 to unlink, 0 conflicts, 27 unchanged, 2 skipped (…)``."""
    offline = sum(1 for c in plan.checkouts if c.state is CheckoutState.OFFLINE)
    shadowed = sum(1 for op in plan.operations
                   if op.action is Action.SKIP and op.rule == "S4")
    notes = []
    if offline:
        notes.append(f"{plural(offline, 'checkout')} offline")
    if shadowed:
        notes.append(f"{shadowed} shadowed")
    extra = f" ({', '.join(notes)})" if notes else ""
    return f"memory: {_counts(plan, SegmentName.MEMORY, statuses)}{extra}"


def _undetected(op: Operation) -> bool:
    """A SKIP because no agent that reads the target is installed: shown with -v only
    ([U3]; still counted in the summary)."""
    return op.action is Action.SKIP and op.reason.startswith("agent not detected")


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
        moved = f" ({op.reason})" if op.rule == R_MOVED else ""  # relinked from OLD [L4]
        return display.line(f"  + {target} -> {source}{moved}{mark}", "green")
    if a is Action.UNLINK:
        tail = "/" if op.entry == "directory" else ""
        return display.line(f"  - {target}{tail}{mark}", "yellow")
    if a is _CONFLICT:
        remedy = f" ({paths.text(op.remedy)})" if op.remedy else ""
        return display.line(f"  ! {target}: {paths.reason(op.reason)}{remedy}", "red",
                            bold=True)
    if a is Action.SKIP:
        if offline or (_undetected(op) and not display.verbose):
            return None
        return display.line(f"  ~ {target}: skipped ({paths.reason(op.reason)})")
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


def _paths(plan: Plan, display: Display, checkout: str | None = None) -> Paths:
    from aikito_mem.render.paths import Paths

    return Paths(plan.workspace, checkout, cwd=display.cwd, home=display.home,
                 named=plan.workspace_source == "option", program=display.program)


def _shown_findings(plan: Plan, display: Display, *, dry_run: bool) -> list[Finding]:
    """The findings a text report shows: warnings (and, with -v, notes), the run's own
    warnings ([U3]) included."""
    if display.quiet:  # -q keeps the run's own warning: nothing was synced
        return list(run_findings(plan, dry_run=dry_run))
    every = (*plan.findings, *run_findings(plan, dry_run=dry_run))
    return [f for f in every if display.verbose or f.severity != Severity.INFO]


def text_report(plan: Plan, display: Display,
                statuses: tuple[Status, ...] | None = None, *,
                header: bool = True, dry_run: bool = True) -> list[str]:
    """Operations grouped under a header per checkout (each with its findings), then the
    findings of no checkout and the summary.  Paths are shown relative
    (:mod:`aikito_mem.render.paths`)."""
    lines: list[str] = []
    quiet, verbose = display.quiet, display.verbose
    top = _paths(plan, display)
    if header and not quiet:
        where = (f" ({plan.register} will be registered in "
                 f"{top.source(plan.config_path)})") if plan.register and dry_run else ""
        lines.append(display.line(f"project {plan.project} — workspace {plan.workspace}"
                                  f"{where}"))
    by_checkout: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        by_checkout.setdefault(op.checkout, []).append((i, op))
    shown = _shown_findings(plan, display, dry_run=dry_run)
    placed: set[int] = set()
    for co in plan.checkouts:
        paths = _paths(plan, display, co.path)
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
    lines.extend(display.line(line) for line in summary_lines(plan, statuses))
    return lines


def quote(word: str) -> str:
    """``shlex.quote``, imported only for the lines that show a command ([§12])."""
    from shlex import quote

    return quote(word)


def apply_command(plan: Plan, display: Display) -> str:
    """The command that applies what ``plan`` would change ([U3]), its paths pasteable
    where the command ran ([U2])."""
    paths = _paths(plan, display)
    words = ["aikito", "sync", "project", quote(plan.project)]
    if plan.explicit_path is not None:
        words.append(paths.pasteable(quote(plan.explicit_path)))
        labels = {c.label for c in plan.checkouts}
        if plan.register is None and labels == {"explicit"}:
            words.append("--no-register")
    if plan.moved_from is not None:  # without it the relinks are conflicts ([L4])
        words += ["--moved-from", quote(plan.moved_from)]
    return paths.text(" ".join(words))


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
    shown = _shown_findings(plan, display, dry_run=report.dry_run)
    if shown:
        top = _paths(plan, display)
        lines.extend(display.line(f"{f.severity}: {top.text(f.message)}", "magenta")
                     for f in shown)
    return lines


def _closing_lines(report: SyncReport, plan_file: str | None,
                   display: Display) -> list[tuple[str, str | None]]:
    """What a report without error ends with, and each line's colour: what was done
    (``done: …``), or what a dry run did and the command that applies it."""
    plan = report.plan
    if plan is None:
        return []
    outcome = report.outcome
    if outcome is Outcome.APPLIED:
        out: list[tuple[str, str | None]] = []
        if report.result is not None and report.result.registered:
            where = _paths(plan, display).source(plan.config_path)
            out.append((f"registered {plan.register} in {where}", None))
        out.append((f"done: {plural(len(plan.changes), 'change')} applied", "green"))
        return out
    if outcome not in (Outcome.UNCHANGED, Outcome.PLANNED) or run_findings(
            plan, dry_run=report.dry_run):
        return []  # nothing was synced: its warning says so
    if not report.dry_run:
        return [("done: already in sync, nothing to do", "green")]
    if plan_file is not None:
        return [(f"dry run: nothing was synced; plan saved to {plan_file} — apply it with: "
                 f"aikito apply {quote(plan_file)}", None)]
    if not plan.has_changes:
        return [("dry run: already in sync, nothing to do", None)]
    what = ("changes pending, nothing was written" if report.exit_code == EXIT_PENDING
            else "nothing was written")
    return [(f"dry run: {what} — to apply: {apply_command(plan, display)}", None)]


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
    statuses = None
    if report.result is not None and report.result.statuses and not report.dry_run:
        statuses = report.result.statuses
    lines = text_report(report.plan, display, statuses, header=header,
                        dry_run=report.dry_run)
    if report.error is None:
        for text, colour in _closing_lines(report, plan_file, display):
            if display.quiet and report.dry_run and plan_file is None \
                    and "to apply:" not in text:
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
