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
           "render_add", "render_list"]


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
    """A header, one row per agent, the warnings, and how to add one."""
    rows = report.rows
    known = sum(1 for r in rows if r.in_catalogue)
    lines = [display.line(f"aikito knows {plural(known, 'coding agent')}; "
                          "DETECTED: on this machine (PATH, home directory)", bold=True)]
    if report.workspace is not None:
        where = agents_root(report.workspace)
        lines += [display.line(part) for part in _wrapped(
            f"REGISTERED: in {where}" if report.registry_present else
            f"REGISTERED: the workspace has no {where}/ — AGENTS.md is the one "
            "instruction target for every agent")]
    table = [("AGENT", "DETECTED", "REGISTERED", "INSTRUCTIONS", "SKILLS")]
    table += [(r.name if r.in_catalogue else f"{r.name} (workspace)", _yes(r.detected),
               _yes(r.registered), r.instruction_path or "-", r.skills_path or "-")
              for r in rows]
    widths = [max(len(printable(t[i])) for t in table) for i in range(4)]
    for index, cells in enumerate(table):
        text = "  ".join([*(printable(c).ljust(w) for c, w in zip(cells, widths, strict=False)),
                          printable(cells[4])]).rstrip()
        fg = "green" if index and cells[1] == "yes" else None
        lines.append(display.line(text, fg, bold=index == 0))
    for f in report.findings:
        lines += [display.line(part, "magenta") for part in _wrapped(f"warning: {f.message}")]
    detected = [r.name for r in rows if r.detected and not r.registered and r.in_catalogue]
    tail = (f"Register the detected ones: aikito agents add {' '.join(detected)}" if detected
            else "Register one: aikito agents add NAME…")
    lines.append(f"{sum(1 for r in rows if r.detected)} detected, "
                 f"{sum(1 for r in rows if r.registered)} registered. {tail}")
    return lines


def _wrapped(text: str, width: int = 100) -> list[str]:
    """A message on lines of at most ``width``, with a hanging indent; a path is never cut."""
    import textwrap

    return textwrap.wrap(text, width, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False) or [text]


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


def add_lines(report: AgentsAddReport) -> list[str]:
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
    return [printable(line) for line in lines]


def render_add(report: AgentsAddReport, display: Display) -> Output:
    if display.as_json:
        return Output(report.exit_code, document=add_document(report))
    if report.error is None:
        return Output(0, lines=tuple(add_lines(report)))
    done = [line for line in add_lines(report)[1:] if line.lstrip().startswith("created ")]
    lines = ("Created before stopping:", *done) if done else ()
    return Output(report.exit_code, lines=lines, errors=error_lines(report.error, display))
