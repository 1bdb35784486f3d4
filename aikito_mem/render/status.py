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
    HANGING,
    Display,
    Output,
    error_json,
    plural,
    printable,
    rendered,
    shown_name,
    wrap,
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


def descriptor_lines(report: StatusReport, display: Display | None = None) -> list[str]:
    """``descriptor PROJECT/LABEL: …`` per active checkout with a descriptor, then its
    warnings — each wrapped to the width ([U2])."""
    display = display or Display()
    lines: list[str] = []
    for project in report.projects:
        for co in project.checkouts:
            words = _descriptor_words(co)
            if words is None:
                continue
            lines.append(display.line(f"descriptor {project.name}/{co.label}: {words}"))
            assert co.descriptor is not None
            lines.extend(display.line(f"warning: {f.message}") for f in co.descriptor.findings)
    return lines


def _row_style(project: ProjectStatus, co: CheckoutStatus | None) -> Style:
    if project.error is not None:
        return "red", True
    if co is None:
        return None, False
    if co.sync is None:
        return ("cyan", False) if co.state is CheckoutState.OFFLINE else (None, False)
    if co.sync.conflict:
        return "red", True
    return ("green", False) if co.sync.in_sync else ("yellow", False)


#: A row's colour and boldness.
Style = tuple[str | None, bool]
#: A row of the table: PROJECT, CHECKOUT, STATE, SYNC, PATH — each printable (the path
#: as an operation line shows a name, quoted when a component starts or ends with a space).
Cells = tuple[str, str, str, str, str]
_HEADER: Cells = ("PROJECT", "CHECKOUT", "STATE", "SYNC", "PATH")
_GAP = "  "
#: The narrowest SYNC column worth wrapping in; narrower, each checkout is a block.
MIN_SYNC = 24


def _rows(report: StatusReport) -> list[tuple[Cells, Style]]:
    rows: list[tuple[Cells, Style]] = []
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
                          _sync_words(co.sync, co.state, co.segments), shown_name(co.path)),
                         _row_style(project, co)))
    return rows


def _styled(text: str, style: Style, display: Display) -> str:
    """``text`` (printable, never wrapped) in ``style`` when colour is on."""
    fg, bold = style
    if not display.color or (fg is None and not bold):
        return text
    import click

    return click.style(text, fg=fg, bold=bold or None)


def _path_line(path: str, style: Style, display: Display) -> list[str]:
    """A checkout's path on a line of its own, indented, never cut nor wrapped ([U2])."""
    return [_styled(f"{'':<{HANGING}}{path}", style, display)] if path else []


def table_lines(rows: list[tuple[Cells, Style]], display: Display) -> list[str]:
    """The rows at the width ([U2]): a table with a PATH column when every line fits;
    else the table without it, SYNC wrapped in its column and each path on an indented
    line of its own below its row; and when not even a SYNC column of :data:`MIN_SYNC`
    fits, one block per checkout (:func:`_blocks`).  A path is never cut: one wider than
    the line stands whole on its line."""
    table = [(_HEADER, (None, True)), *rows]
    widths = [max(len(row[i]) for row, _ in table) for i in range(4)]
    full = [_GAP.join([*(row[i].ljust(widths[i]) for i in range(4)), row[4]]).rstrip()
            for row, _ in table]
    if all(len(text) <= display.width for text in full):
        return [_styled(text, style, display)
                for text, (_, style) in zip(full, table, strict=True)]
    lead = sum(widths[:3]) + 3 * len(_GAP)
    if display.width - lead < MIN_SYNC:
        return _blocks(rows, display)
    lines: list[str] = []
    for row, style in table:
        cells = _GAP.join(row[i].ljust(widths[i]) for i in range(3)) + _GAP
        sync = wrap(row[3], display.width - lead, 0)
        lines.append(_styled((cells + sync[0]).rstrip(), style, display))
        lines.extend(_styled(" " * lead + more, style, display) for more in sync[1:])
        if row is not _HEADER:
            lines.extend(_path_line(row[4], style, display))
    return lines


def _blocks(rows: list[tuple[Cells, Style]], display: Display) -> list[str]:
    """One block per checkout: ``PROJECT/LABEL: STATE, SYNC`` wrapped (hanging deeper
    than the path), then the path on its own line."""
    lines: list[str] = []
    for (project, label, state, sync, path), style in rows:
        head = project if label == "-" else f"{project}/{label}"
        words = sync if state == "-" or sync.startswith(state) else f"{state}, {sync}"
        for text in wrap(f"{head}: {words}", display.width, 2 * HANGING):
            lines.append(_styled(text, style, display))
        lines.extend(_path_line(path, style, display))
    return lines


def text_table(report: StatusReport, display: Display | None = None) -> list[str]:
    """The rows (:func:`table_lines`), then each project's error, then a summary line."""
    display = display or Display()
    where = shown_name(report.workspace) if report.workspace is not None else None
    lines = [display.line(f"workspace {where} ({report.workspace_source})")]
    lines.extend(table_lines(_rows(report), display))
    lines.extend(descriptor_lines(report, display))
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
