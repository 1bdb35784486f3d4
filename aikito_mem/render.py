"""Rendering: plans and results as text or as the ``aikito.sync/1`` JSON document.

Pure: functions from values to strings/dicts; the CLI decides where they go.
"""

from __future__ import annotations

from typing import Any

from aikito_mem.model import (
    Action,
    CheckoutState,
    Operation,
    Plan,
    Status,
    SyncResult,
)

SCHEMA = "aikito.sync/1"

_NOOP = Action.NOOP
_CONFLICT = Action.CONFLICT


def _op_json(op: Operation, status: Status, error: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = {
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
    summary = (plan.summary() if plan is not None else
               {"create": 0, "noop": 0, "unlink": 0, "conflict": 0, "skip": 0})
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
    if result is not None and result.segments:
        segments = {s.name: {"success": s.success} for s in result.segments}
    else:
        segments = {"memory": {"success": exit_code in (0, 7)}}
    return {
        "schema": SCHEMA,
        "project": project if project is not None else (plan.project if plan else None),
        "workspace": workspace if workspace is not None else (plan.workspace if plan else None),
        "dry_run": dry_run,
        "outcome": outcome,
        "exit_code": exit_code,
        "summary": summary,
        "checkouts": [
            {"label": c.label, "path": c.path, "state": c.state.value,
             **({"reason": c.reason} if c.reason else {})}
            for c in (plan.checkouts if plan is not None else ())
        ],
        "operations": operations,
        "findings": [
            {"code": f.code, "severity": f.severity, "message": f.message, "path": f.path}
            for f in (plan.findings if plan is not None else ())
        ],
        "segments": segments,
        "registered": plan.register if (plan is not None and result is not None
                                         and result.registered) else None,
        "error": error,
    }


def json_text(doc: dict[str, Any]) -> str:
    """One JSON document as printed: UTF-8, or — when a non-UTF-8 name (a lone surrogate
    from ``os.fsdecode``) is in it — escaped, still valid JSON (``\\udcff``)."""
    import json

    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(doc, indent=2, ensure_ascii=True)
    return text


def printable(text: str) -> str:
    """Text with the raw byte of a non-UTF-8 name shown as ``\\xff`` (a strict stdout
    cannot encode a lone surrogate)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def summary_line(plan: Plan) -> str:
    """``memory: 3 to create, 1 to unlink, 0 conflicts, 27 unchanged, 2 skipped (…)``."""
    s = plan.summary()
    offline = sum(1 for c in plan.checkouts if c.state is CheckoutState.OFFLINE)
    shadowed = sum(1 for op in plan.operations
                   if op.action is Action.SKIP and op.rule == "S4")
    notes = []
    if offline:
        notes.append(f"{offline} checkout{'s' * (offline != 1)} offline")
    if shadowed:
        notes.append(f"{shadowed} shadowed")
    extra = f" ({', '.join(notes)})" if notes else ""
    conflicts = f"{s['conflict']} conflict{'s' * (s['conflict'] != 1)}"
    return (f"memory: {s['create']} to create, {s['unlink']} to unlink, {conflicts}, "
            f"{s['noop']} unchanged, {s['skip']} skipped{extra}")


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, fg: str, bold: bool = False) -> str:
        if not self.color:
            return text
        import click

        return click.style(text, fg=fg, bold=bold)


def text_report(
    plan: Plan,
    *,
    verbose: bool = False,
    quiet: bool = False,
    color: bool = False,
    statuses: tuple[Status, ...] | None = None,
) -> list[str]:
    """Operations grouped under a header per checkout, then findings and the summary."""
    style = _Style(color)
    lines: list[str] = []
    if not quiet:
        where = f" ({plan.register} will be registered in {plan.config_path})" \
            if plan.register else ""
        lines.append(f"project {plan.project} — workspace {plan.workspace}{where}")
    by_checkout: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        by_checkout.setdefault(op.checkout, []).append((i, op))
    for co in plan.checkouts:
        ops = by_checkout.get(co.path, [])
        body: list[str] = []
        if co.state is CheckoutState.OFFLINE and not quiet:
            body.append(style(f"  ~ checkout offline: {co.path}", "cyan"))
        for i, op in ops:
            a = op.action
            if (a is _NOOP and not verbose) or (quiet and a is not _CONFLICT):
                continue
            mark = ""
            if statuses is not None and statuses[i] in (Status.NOT_APPLIED, Status.UNKNOWN):
                mark = f" [{statuses[i].value}]"
            if a is Action.CREATE:
                line = style(f"  + {op.target} -> {op.source}{mark}", "green")
            elif a is Action.UNLINK:
                tail = "/" if op.entry == "directory" else ""
                line = style(f"  - {op.target}{tail}{mark}", "yellow")
            elif a is Action.CONFLICT:
                remedy = f" ({op.remedy})" if op.remedy else ""
                line = style(f"  ! {op.target}: {op.reason}{remedy}", "red", bold=True)
            elif a is Action.SKIP:
                if co.state is CheckoutState.OFFLINE or quiet:
                    continue
                line = f"  ~ {op.target}: skipped ({op.reason})"
            else:
                if not verbose:
                    continue
                line = f"  = {op.target} -> {op.source}"
            if quiet and a is not Action.CONFLICT:
                continue
            body.append(line)
        if body or (verbose and not quiet):
            lines.append(style(f"checkout {co.label}: {co.path}", "blue", bold=True)
                         if not quiet else f"checkout {co.label}: {co.path}")
            lines.extend(body)
    if not quiet:
        for f in plan.findings:
            if f.severity == "info" and not verbose:
                continue
            lines.append(style(f"{f.severity}: {f.message}", "magenta"))
    lines.append(summary_line(plan))
    return lines
