"""A plan, and the statuses a run gave it, as text lines (SPEC §9): a header per
checkout with its operations (``+``, ``-``, ``!``, ``~``, ``=``) and findings, the findings
of no checkout, a summary line per segment, and the line a report closes with.

Pure: values in, strings out.  Imported by a report that shows a plan — not by the one
line of a run with nothing to do ([U3], [§12]).  Paths are shown relative
(:mod:`aikito_mem.render.paths`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aikito_mem.errors import EXIT_PENDING, Outcome
from aikito_mem.model import SEGMENT_ORDER, Action, CheckoutState, SegmentName, Status
from aikito_mem.outcome import run_findings
from aikito_mem.planner import R_MOVED
from aikito_mem.render.paths import Paths
from aikito_mem.render.text import Display, plural, shown_name

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from aikito_mem.model import Finding, Operation, Plan
    from aikito_mem.outcome import SyncReport

_NOOP = Action.NOOP


_CONFLICT = Action.CONFLICT


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


def plan_paths(plan: Plan, display: Display, checkout: str | None = None) -> Paths:
    """How ``plan``'s lines name paths: targets relative to ``checkout``, sources to the
    workspace, remedies pasteable where the command ran ([U2])."""
    return Paths(plan.workspace, checkout, cwd=display.cwd, home=display.home,
                 named=plan.workspace_source == "option", program=display.program)


def text_report(plan: Plan, display: Display,
                statuses: tuple[Status, ...] | None = None, *,
                header: bool = True, dry_run: bool = True,
                shown: Sequence[Finding] = ()) -> list[str]:
    """Operations grouped under a header per checkout (each with its findings), then the
    findings of no checkout and the summary; ``shown``: the findings the report shows
    (:func:`aikito_mem.render.sync.shown_findings`).  Paths are shown relative
    (:mod:`aikito_mem.render.paths`)."""
    lines: list[str] = []
    quiet, verbose = display.quiet, display.verbose
    top = plan_paths(plan, display)
    if header and not quiet:
        where = (f" ({plan.register} will be registered in "
                 f"{top.source(plan.config_path)})") if plan.register and dry_run else ""
        lines.append(display.line(f"project {plan.project} — workspace {plan.workspace}"
                                  f"{where}"))
    by_checkout: dict[str, list[tuple[int, Operation]]] = {}
    for i, op in enumerate(plan.operations):
        by_checkout.setdefault(op.checkout, []).append((i, op))
    placed: set[int] = set()
    for co in plan.checkouts:
        paths = plan_paths(plan, display, co.path)
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
    paths = plan_paths(plan, display)
    words = ["aikito", "sync", "project", quote(plan.project)]
    if plan.explicit_path is not None:
        words.append(paths.pasteable(quote(plan.explicit_path)))
        labels = {c.label for c in plan.checkouts}
        if plan.register is None and labels == {"explicit"}:
            words.append("--no-register")
    if plan.moved_from is not None:  # without it the relinks are conflicts ([L4])
        words += ["--moved-from", quote(plan.moved_from)]
    return paths.text(" ".join(words))


def closing_lines(report: SyncReport, plan_file: str | None,
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
            where = plan_paths(plan, display).source(plan.config_path)
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
