"""A sync report as the ``aikito.sync/2`` JSON document (SPEC §9): every outcome, each
operation with its status, each segment's own outcome ([G6]).

Pure: values in, dicts out.  Imported by the runs that print JSON (and the commands
whose documents embed one: ``sync`` of every project, ``clean``, ``adopt``) ([§12]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aikito_mem.model import SEGMENT_ORDER, Status
from aikito_mem.outcome import run_findings, segment_results
from aikito_mem.render.text import error_json

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.model import Finding, Operation, Plan, SyncResult
    from aikito_mem.outcome import SyncReport

SCHEMA = "aikito.sync/2"

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
