"""The status report as the ``aikito.status/1`` document and as a text table.

Colour (when the display has it): each row in the colour of its state — in sync green,
changes pending yellow, a conflict or an unreadable project red and bold, offline cyan —
the header bold, and the summary green when all is in sync, else yellow (red with
errors).  Cells are padded before they are coloured, so columns stay aligned.
"""

from __future__ import annotations

from typing import Any

from aikito_mem.commands.status import (
    CONTRACT_VERSION,
    CheckoutStatus,
    ProjectStatus,
    StatusReport,
    SyncCounts,
)
from aikito_mem.layout import DESCRIPTOR, INDEX_NAME, MEMORY_DIR
from aikito_mem.model import CheckoutState
from aikito_mem.render.text import (
    Display,
    Output,
    error_json,
    plural,
    printable,
    rendered,
)
from aikito_mem.world.descriptor import DescriptorState

SCHEMA = "aikito.status/1"


def _checkout_json(co: CheckoutStatus) -> dict[str, Any]:
    entry: dict[str, Any] = {"label": co.label, "path": co.path, "state": co.state.value}
    if co.reason:
        entry["reason"] = co.reason
    s = co.sync
    entry["sync"] = None if s is None else {
        "in_sync": s.in_sync, "create": s.create, "unlink": s.unlink,
        "conflict": s.conflict, "foreign": s.foreign,
        "segments": {name: {"in_sync": c.in_sync, "create": c.create, "unlink": c.unlink,
                            "conflict": c.conflict} for name, c in co.segments},
    }
    entry["descriptor"] = _descriptor_json(co)
    return entry


def _descriptor_json(co: CheckoutStatus) -> dict[str, Any] | None:
    """The checkout's memory descriptor, plus ``index``: the recognised ``MEMORY.md``."""
    if co.descriptor is None:
        return None
    return {**co.descriptor.to_json(), "index": co.index}


def _project_json(project: ProjectStatus) -> dict[str, Any]:
    if project.error is not None:
        return {"name": project.name, "error": error_json(project.error)}
    return {
        "name": project.name,
        "memory": {
            "anchor": MEMORY_DIR,
            "references": list(project.references),
            "notes": {"source": project.notes_source, "location": project.notes_location},
        },
        "checkouts": [_checkout_json(co) for co in project.checkouts],
        "blocked": project.blocked,
        "warnings": project.warnings,
    }


def document(report: StatusReport) -> dict[str, Any]:
    """The ``aikito.status/1`` document (docs/commands.md)."""
    return {
        "schema": SCHEMA,
        "contract_version": CONTRACT_VERSION,
        "workspace": report.workspace,
        "workspace_source": report.workspace_source,
        "projects": [_project_json(p) for p in report.projects],
        "findings": [{"code": f.code, "severity": str(f.severity), "message": f.message,
                      "path": f.path} for f in report.findings],
        "exit_code": report.exit_code,
        "error": error_json(report.error) if report.error is not None else None,
    }


def _pending(sync: SyncCounts) -> str:
    parts = []
    if sync.create:
        parts.append(f"{sync.create} to create")
    if sync.unlink:
        parts.append(f"{sync.unlink} to unlink")
    if sync.conflict:
        parts.append(plural(sync.conflict, "conflict"))
    return ", ".join(parts)


def _sync_words(sync: SyncCounts | None, state: CheckoutState,
                segments: tuple[tuple[str, SyncCounts], ...] = ()) -> str:
    if sync is None:
        return "offline (not checked)" if state is CheckoutState.OFFLINE else "-"
    if sync.in_sync:
        words = "in sync"
    else:
        # [G5]: each segment's own state when more than memory has anything to do.
        behind = [(name, c) for name, c in segments if not c.in_sync]
        if behind and [name for name, _ in behind] != ["memory"]:
            words = "; ".join(f"{name}: {_pending(c)}" for name, c in behind)
        else:
            words = _pending(sync)
    if sync.foreign:
        words += f", {plural(sync.foreign, 'foreign entry', 'foreign entries')}"
    return words


def _descriptor_words(co: CheckoutStatus) -> str | None:
    """One checkout's memory descriptor in words; ``None`` when it has none to show."""
    d = co.descriptor
    if d is None or d.state is DescriptorState.ABSENT:
        return None
    if d.state is DescriptorState.INVALID:
        index = f", index {INDEX_NAME}" if co.index else ""
        return f"unreadable {DESCRIPTOR} (see the warning below){index}"
    if d.state is DescriptorState.NO_MEMORY:
        return f"no memory backend (contract v{d.contract_version})"
    stack = f" {d.stack}" if d.stack else ""
    words = [f"tier {d.tier}{stack}", f"contract v{d.contract_version}"]
    words.append(f"index {INDEX_NAME}" if co.index else f"no {INDEX_NAME} index")
    words.append("retrieval " + ", ".join(d.surfaces))
    return ", ".join(words)


def descriptor_lines(report: StatusReport) -> list[str]:
    """``descriptor PROJECT/LABEL: …`` per active checkout with a descriptor, then its
    warnings."""
    lines: list[str] = []
    for project in report.projects:
        for co in project.checkouts:
            words = _descriptor_words(co)
            if words is None:
                continue
            lines.append(printable(f"descriptor {project.name}/{co.label}: {words}"))
            assert co.descriptor is not None
            lines.extend(printable(f"warning: {f.message}") for f in co.descriptor.findings)
    return lines


def _row_style(project: ProjectStatus, co: CheckoutStatus | None) -> tuple[str | None, bool]:
    if project.error is not None:
        return "red", True
    if co is None:
        return None, False
    if co.sync is None:
        return ("cyan", False) if co.state is CheckoutState.OFFLINE else (None, False)
    if co.sync.conflict:
        return "red", True
    return ("green", False) if co.sync.in_sync else ("yellow", False)


def text_table(report: StatusReport, display: Display | None = None) -> list[str]:
    """One row per project/checkout, then each project's error, then a summary line."""
    display = display or Display()
    rows: list[tuple[tuple[str, str, str, str, str], tuple[str | None, bool]]] = []
    for project in report.projects:
        name = printable(project.name)
        if project.error is not None:
            rows.append(((name, "-", "error", "cannot be read (see below)", ""),
                         _row_style(project, None)))
            continue
        if not project.checkouts:
            rows.append(((name, "-", "-", "no checkout registered", ""), (None, False)))
        for co in project.checkouts:
            rows.append(((name, printable(co.label), co.state.value,
                          _sync_words(co.sync, co.state, co.segments), printable(co.path)),
                         _row_style(project, co)))
    header = ("PROJECT", "CHECKOUT", "STATE", "SYNC", "PATH")
    widths = [max(len(r[i]) for r in [header, *(row for row, _ in rows)]) for i in range(4)]
    lines = [display.line(f"workspace {report.workspace} ({report.workspace_source})")]
    for row, (fg, bold) in [(header, (None, True)), *rows]:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        text = "  ".join([*cells, row[4]]).rstrip()
        lines.append(display.line(text, fg, bold=bold))
    lines.extend(descriptor_lines(report))
    lines.extend(display.line(f"warning: {f.message}", "magenta") for f in report.findings)
    for project in report.projects:
        if project.error is not None:
            lines.append(display.line(f"error: project {project.name}: "
                                      f"{project.error.message}", "red"))
    broken = sum(1 for p in report.projects if p.error is not None)
    pending = sum(1 for p in report.projects if p.error is None and not p.in_sync)
    summary = f"status: {plural(len(report.projects), 'project')}"
    if pending or broken:
        extra = [f"{pending} not in sync"] if pending else []
        if broken:
            extra.append(f"{broken} with errors")
        summary += ", " + ", ".join(extra)
        colour = "red" if broken else "yellow"
    else:
        summary += ", all in sync"
        colour = "green"
    lines.append(display.line(summary, colour))
    return lines


def render(report: StatusReport, display: Display) -> Output:
    """What ``aikito status`` prints for ``report``."""
    return rendered(report, display, document, text_table)
