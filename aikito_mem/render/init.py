"""Rendering of ``aikito init`` and ``aikito init project``: an
:class:`~aikito_mem.commands.init.report.InitReport` (and the error that ended the run)
as the ``aikito.init/1`` document or as text lines.  Pure: values in, values out; the CLI
decides where they go (the error message goes to stderr)."""

from __future__ import annotations

from typing import Any

from aikito_mem.commands.init.report import SCHEMA, EntryKind, InitEntry, InitReport, InitStatus
from aikito_mem.errors import AikitoError
from aikito_mem.render.text import error_json
from aikito_mem.values import asdict

__all__ = ["json_document", "stopped_lines", "text_lines"]


def _entry(e: InitEntry) -> dict[str, Any]:
    return {"path": e.path, "kind": e.kind.value, "status": e.status.value, "role": e.role}


def json_document(report: InitReport | None, error: AikitoError | None, *, command: str,
                  dry_run: bool, project: str | None = None) -> dict[str, Any]:
    """The one ``aikito.init/1`` document, errors included (``report`` is ``None`` when
    the run ended before it had one)."""
    if report is not None:
        doc: dict[str, Any] = {
            "schema": SCHEMA,
            "command": report.command,
            "workspace": report.workspace,
            "found_via": report.found_via,
            "dry_run": report.dry_run,
            "outcome": report.outcome,
            "project": report.project,
            "checkout": report.checkout,
            "registered_as": report.registered_as,
            "pointer": report.pointer,
            "agents": None if report.agents is None else list(report.agents),
            "summary": {s.value: report.count(s) for s in InitStatus},
            "entries": [_entry(e) for e in report.entries],
            "findings": [asdict(f) for f in report.findings],
        }
    else:
        doc = {
            "schema": SCHEMA, "command": command, "workspace": None,
            "found_via": None, "dry_run": dry_run, "outcome": None,
            "project": project, "checkout": None, "registered_as": None,
            "pointer": None, "summary": {s.value: 0 for s in InitStatus},
            "entries": [], "findings": [],
        }
    if error is not None:
        doc["outcome"] = error.outcome
    doc["exit_code"] = 0 if error is None else error.exit_code
    doc["error"] = error_json(error) if error is not None else None
    return doc


_WORDS = {InitStatus.CREATED: "created", InitStatus.EXISTED: "exists",
          InitStatus.PLANNED: "would create"}


def _shown(path: str, report: InitReport, home: str | None) -> str:
    root = report.workspace.rstrip("/") + "/"
    if path.startswith(root):
        return path[len(root):]
    if home and home != "/" and path.startswith(home.rstrip("/") + "/"):
        return "~/" + path[len(home.rstrip("/")) + 1:]
    return path


def text_lines(report: InitReport, *, home: str | None = None,
               cwd: str | None = None) -> list[str]:
    """Human lines for a report: a header, one line per path, warnings, the next step.
    The paths a note or warning names are written to work where the command ran
    (``cwd``, ``home``: [U2])."""
    from aikito_mem.render.paths import Paths

    paths = Paths(None, cwd=cwd, home=home)
    dry = report.dry_run
    if report.command == "workspace":
        if not dry and report.count(InitStatus.CREATED) == 0:
            head = f"Workspace {report.workspace} is already initialised; nothing to add."
        else:
            head = f"{'Would initialise' if dry else 'Initialised'} workspace {report.workspace}"
        after = "Next: aikito init project NAME [CHECKOUT]"
    else:
        head = f"{'Would create' if dry else 'Created'} project {report.project} in " \
               f"{report.workspace}"
        after = (f"Next: aikito sync project {report.project}" if report.checkout
                 else f"Next: aikito sync project {report.project} PATH")
    lines = [head]
    for e in report.entries:
        if e.role == "workspace" and e.path == report.workspace:
            continue
        shown = _shown(e.path, report, home)
        if e.kind is EntryKind.DIRECTORY:
            shown += "/"
        word = _WORDS[e.status]
        if e.role == "pointer_repointed":  # [L4]
            word = "re-pointed" if e.status is InitStatus.CREATED else "would re-point"
        lines.append(f"  {word:<12} {shown}")
    if report.registered_as is not None:
        lines.append(f"  checkout     {report.registered_as}")
    lines += [f"note: {paths.text(f.message)}" for f in report.findings
              if f.code == "init.pointer_repointed"]
    lines += [f"warning: {paths.text(f.message)}" for f in report.findings
              if f.severity == "warning"]
    if report.agents == ():
        lines.append("note: no coding agent detected here, so no agents/ registry: AGENTS.md "
                     "is the one instruction target; `aikito agents` lists the agents aikito "
                     "knows, `aikito agents add NAME` registers one")
    lines.append(after)
    return lines


def stopped_lines(report: InitReport | None, *, home: str | None = None,
                  cwd: str | None = None) -> list[str]:
    """What a failed or interrupted run did write (the rest was not created)."""
    if report is None or not report.count(InitStatus.CREATED):
        return []
    done = [line for line in text_lines(report, home=home, cwd=cwd)
            if line.lstrip().startswith("created ")]
    return ["Created before stopping:", *done]
