"""A clean ([L3]) as text or as the ``aikito.clean/1`` document.

The document has exactly the fields of ``aikito.sync/2`` (the same words, the same
per-operation statuses, the same ``segments`` object), with ``schema`` set to
``aikito.clean/1`` and ``project`` ``null`` for ``aikito clean PATH``.  The text report
lists, per checkout, each removal (``- .agents/memory/style.md``, a pruned directory with
a trailing ``/``) and each foreign entry kept, then one summary line.  Pure.
"""

from __future__ import annotations

from shlex import quote
from typing import Any

from aikito_mem.errors import Outcome
from aikito_mem.model import SEGMENT_ORDER, Action, CheckoutState, Operation, Plan, Severity, Status
from aikito_mem.outcome import SyncReport
from aikito_mem.render.paths import Paths
from aikito_mem.render.text import Display, Output, error_lines, plural

SCHEMA = "aikito.clean/1"


def document(report: SyncReport) -> dict[str, Any]:
    """The ``aikito.clean/1`` document of a clean's report."""
    from aikito_mem.render.sync_json import document as sync_document

    doc = sync_document(report)
    doc["schema"] = SCHEMA
    if not doc.get("project"):
        doc["project"] = None
    doc.pop("registered", None)
    return doc


def _rel(path: str, checkout: str) -> str:
    return path[len(checkout) + 1:] if path.startswith(checkout + "/") else path


def summary(plan: Plan, *, done: bool = False) -> str:
    """``clean: 3 links to remove, 2 directories to prune, 1 foreign entry kept``; after a
    real run that applied them, ``3 links removed, 2 directories pruned`` ([U3]'s words
    that say what happened)."""
    links = sum(1 for op in plan.operations
                if op.action is Action.UNLINK and op.entry == "link")
    dirs = sum(1 for op in plan.operations
               if op.action is Action.UNLINK and op.entry == "directory")
    kept = sum(1 for f in plan.findings if f.code == "clean.foreign_entry")
    offline = sum(1 for c in plan.checkouts if c.state is CheckoutState.OFFLINE)
    tail = f" ({plural(offline, 'checkout')} offline)" if offline else ""
    removed, pruned = ("removed", "pruned") if done else ("to remove", "to prune")
    return (f"clean: {plural(links, 'link')} {removed}, "
            f"{plural(dirs, 'directory', 'directories')} {pruned}, "
            f"{plural(kept, 'foreign entry', 'foreign entries')} kept{tail}")


def _listed(plan: Plan, checkout: str) -> list[tuple[int, Operation]]:
    """A checkout's removals as listed: a pruned directory after what it contained."""
    ops = [(i, op) for i, op in enumerate(plan.operations)
           if op.checkout == checkout and op.action is Action.UNLINK]
    rank = {seg: n for n, seg in enumerate(SEGMENT_ORDER)}
    return sorted(ops, key=lambda item: (
        rank[item[1].segment],
        item[1].target + ("/\U0010ffff" if item[1].entry == "directory" else "")))


def _what(plan: Plan) -> str:
    if plan.project:
        return f"clean project {plan.project}"
    return f"clean {plan.explicit_path}"


def text_lines(report: SyncReport, display: Display) -> list[str]:
    plan = report.plan
    if plan is None:
        return []
    statuses = (report.result.statuses if report.result is not None
                and report.result.statuses and not report.dry_run else None)
    lines: list[str] = []
    if not display.quiet:
        lines.append(display.line(f"{_what(plan)} — workspace {plan.workspace}"))
    shown = [f for f in plan.findings
             if not display.quiet and (display.verbose or f.severity != Severity.INFO)]
    placed: set[int] = set()
    for co in plan.checkouts:
        paths = Paths(plan.workspace, co.path, cwd=display.cwd, home=display.home,
                      named=plan.workspace_source == "option", program=display.program)
        body: list[str] = []
        if co.state is CheckoutState.OFFLINE and not display.quiet:
            body.append(display.line(f"  ~ checkout offline: {co.path}", "cyan"))
        for i, op in _listed(plan, co.path):
            status = statuses[i] if statuses is not None else None
            mark = (f" [{status.value}]" if status in (Status.NOT_APPLIED, Status.UNKNOWN)
                    else "")
            tail = "/" if op.entry == "directory" else ""
            if not display.quiet:
                body.append(display.line(f"  - {_rel(op.target, co.path)}{tail}{mark}",
                                         "yellow"))
        for n, f in enumerate(shown):
            if n not in placed and f.path is not None and (
                    f.path == co.path or f.path.startswith(co.path + "/")):
                placed.add(n)
                body.append(display.line(f"  {f.severity}: {paths.text(f.message)}",
                                         "magenta"))
        if body or display.verbose:
            lines.append(display.line(f"checkout {co.label}: {co.path}", "blue", bold=True))
            lines.extend(body)
    for n, f in enumerate(shown):
        if n not in placed:
            where = Paths(plan.workspace, cwd=display.cwd, home=display.home)
            lines.append(display.line(f"{f.severity}: {where.text(f.message)}", "magenta"))
    lines.append(display.line(summary(plan, done=report.outcome is Outcome.APPLIED)))
    if report.error is None:
        lines.extend(display.line(t, c) for t, c in _closing(report))
    return lines


def _closing(report: SyncReport) -> list[tuple[str, str | None]]:
    plan = report.plan
    assert plan is not None
    n = len(plan.changes)
    if report.outcome is Outcome.APPLIED:
        return [(f"done: {plural(n, 'removal')} applied; agent.toml was not edited",
                 "green")]
    if report.outcome is Outcome.UNCHANGED:
        return [("done: nothing to clean", "green")]
    if report.outcome is Outcome.PLANNED:
        if not n:
            return [("dry run: nothing to clean", None)]
        explicit = quote(plan.explicit_path) if plan.explicit_path else ""
        args = (f"project {quote(plan.project)} {explicit}".rstrip() if plan.project
                else explicit)
        return [(f"dry run: nothing was removed — to remove: aikito clean {args}", None)]
    return []


def render(report: SyncReport, display: Display) -> Output:
    """What ``aikito clean`` prints for ``report``."""
    if display.as_json:
        return Output(report.exit_code, document=document(report))
    errors = error_lines(report.error, display) if report.error is not None else ()
    return Output(report.exit_code, lines=tuple(text_lines(report, display)), errors=errors)
