"""``aikito agents`` and ``aikito agents add`` as text and as the ``aikito.agents/1``
document.  Pure: reports in, lines and dicts out."""

from __future__ import annotations

from typing import Any

from aikito_mem.commands.agents import AddStatus, AgentRow, AgentsAddReport, AgentsReport
from aikito_mem.errors import AikitoError
from aikito_mem.layout import agents_root
from aikito_mem.model import Finding
from aikito_mem.render.text import (
    Display,
    Output,
    error_json,
    error_lines,
    plural,
    printable,
    rendered,
)

SCHEMA = "aikito.agents/1"

__all__ = ["SCHEMA", "add_document", "add_lines", "list_document", "list_lines",
           "render_add", "render_list", "table_lines"]


def _finding(f: Finding) -> dict[str, Any]:
    return {"code": f.code, "severity": str(f.severity), "message": f.message, "path": f.path}


def _ending(doc: dict[str, Any], exit_code: int, error: AikitoError | None) -> dict[str, Any]:
    doc["exit_code"] = exit_code
    doc["error"] = None if error is None else error_json(error)
    return doc


def _row_json(row: AgentRow) -> dict[str, Any]:
    detect = None if row.detect is None else {"commands": list(row.detect.commands),
                                              "paths": list(row.detect.paths)}
    return {"name": row.name, "display_name": row.display_name,
            "in_catalogue": row.in_catalogue, "detected": row.detected,
            "registered": row.registered,
            "project_instruction_path": row.instruction_path,
            "project_skills_path": row.skills_path, "detect": detect}


def list_document(report: AgentsReport) -> dict[str, Any]:
    rows = report.rows
    doc: dict[str, Any] = {
        "schema": SCHEMA, "command": "list", "workspace": report.workspace,
        "found_via": report.found_via, "registry": report.registry_present,
        "summary": {"catalogue": sum(1 for r in rows if r.in_catalogue),
                    "detected": sum(1 for r in rows if r.detected),
                    "registered": sum(1 for r in rows if r.registered)},
        "agents": [_row_json(r) for r in rows],
        "findings": [_finding(f) for f in report.findings],
    }
    return _ending(doc, report.exit_code, report.error)


def _yes(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "-")


def list_lines(report: AgentsReport, display: Display) -> list[str]:
    """A header, one row per agent (:func:`table_lines`), the warnings, and how to add
    one — every line within the width ([U2])."""
    rows = report.rows
    known = sum(1 for r in rows if r.in_catalogue)
    lines = [display.line(f"aikito knows {plural(known, 'coding agent')}; "
                          "DETECTED: on this machine (PATH, home directory)", bold=True)]
    if report.workspace is not None:
        where = agents_root(report.workspace)
        lines.append(display.line(
            f"REGISTERED: in {where}" if report.registry_present else
            f"REGISTERED: the workspace has no {where}/ — AGENTS.md is the one "
            "instruction target for every agent"))
    table = [("AGENT", "DETECTED", "REGISTERED", "INSTRUCTIONS", "SKILLS")]
    table += [(r.name if r.in_catalogue else f"{r.name} (workspace)", _yes(r.detected),
               _yes(r.registered), r.instruction_path or "-", r.skills_path or "-")
              for r in rows]
    lines += table_lines([tuple(printable(c) for c in cells) for cells in table], display)
    lines += [display.line(f"warning: {f.message}", "magenta") for f in report.findings]
    detected = [r.name for r in rows if r.detected and not r.registered and r.in_catalogue]
    tail = (f"Register the detected ones: aikito agents add {' '.join(detected)}" if detected
            else "Register one: aikito agents add NAME…")
    lines.append(display.line(f"{sum(1 for r in rows if r.detected)} detected, "
                              f"{sum(1 for r in rows if r.registered)} registered. {tail}"))
    return lines


def table_lines(table: list[tuple[str, ...]], display: Display) -> list[str]:
    """The header row and one row per agent, columns aligned, when every row fits the
    width; else the first three columns aligned and each agent's instruction target and
    skills directory on an indented line below its row ([U2]).  A detected agent's rows
    are green."""
    widths = [max(len(t[i]) for t in table) for i in range(4)]
    full = ["  ".join([*(c.ljust(w) for c, w in zip(cells, widths, strict=False)),
                       cells[4]]).rstrip() for cells in table]
    fits = all(len(text) <= display.width for text in full)
    lines: list[str] = []
    for index, cells in enumerate(table):
        fg = "green" if index and cells[1] == "yes" else None
        if fits:
            lines.append(display.line(full[index], fg, bold=index == 0))
            continue
        head = "  ".join(c.ljust(w) for c, w in zip(cells[:2], widths, strict=False))
        lines.append(display.line(f"{head}  {cells[2]}", fg, bold=index == 0))
        below = (f"{cells[3]}, {cells[4]}" if index == 0 else
                 f"instructions {cells[3]}, skills {cells[4]}")
        lines.append(display.line(f"{'':<4}{below}", fg, bold=index == 0))
    return lines


def render_list(report: AgentsReport, display: Display) -> Output:
    return rendered(report, display, list_document, list_lines)


def add_document(report: AgentsAddReport) -> dict[str, Any]:
    directory = None if report.directory is None else {
        "path": report.directory,
        "status": None if report.directory_status is None else report.directory_status.value}
    doc: dict[str, Any] = {
        "schema": SCHEMA, "command": "add", "workspace": report.workspace,
        "dry_run": report.dry_run, "outcome": report.outcome, "directory": directory,
        "files": [{"agent": f.agent, "path": f.path, "status": f.status.value}
                  for f in report.files],
        "findings": [_finding(f) for f in report.findings],
    }
    return _ending(doc, report.exit_code, report.error)


_WORDS = {AddStatus.CREATED: "created", AddStatus.EXISTED: "exists",
          AddStatus.PLANNED: "would create"}


def add_lines(report: AgentsAddReport, display: Display | None = None) -> list[str]:
    """What ``agents add`` did (or would do), each line within the width ([U2])."""
    display = display or Display()
    new = sum(1 for f in report.files if f.status is not AddStatus.EXISTED)
    where = report.directory or "agents"
    if report.dry_run:
        head = f"Would add {plural(new, 'agent')} to {where}"
    elif new:
        head = f"Added {plural(new, 'agent')} to {where}"
    else:
        head = f"Nothing to add: every agent named is already in {where}"
    lines = [head]
    if report.directory_status is not None and report.directory_status is not AddStatus.EXISTED:
        lines.append(f"  {_WORDS[report.directory_status]:<12} agents/")
    for f in report.files:
        note = " (left as it is)" if f.status is AddStatus.EXISTED else ""
        lines.append(f"  {_WORDS[f.status]:<12} agents/{f.agent}.toml{note}")
    lines.append("Next: aikito sync project NAME --dry-run" if not report.dry_run
                 else "Run it without --dry-run to write them.")
    return [display.line(line) for line in lines]


def render_add(report: AgentsAddReport, display: Display) -> Output:
    if display.as_json:
        return Output(report.exit_code, document=add_document(report))
    if report.error is None:
        return Output(0, lines=tuple(add_lines(report, display)))
    done = [line for line in add_lines(report, display)[1:]
            if line.lstrip().startswith("created ")]
    lines = ("Created before stopping:", *done) if done else ()
    return Output(report.exit_code, lines=lines, errors=error_lines(report.error, display))
