"""The frozen report of ``aikito init`` / ``aikito init project`` and its text lines.

:class:`InitReport` is what :func:`aikito_mem.commands.init.run.init_workspace` and
:func:`aikito_mem.commands.init.run.init_project` return (and what their errors carry in
``.result``):
every path looked at, each ``created``, ``existed`` or ``planned``; ``to_json`` is the
``--json`` document (schema ``aikito.init/1``); :func:`text_lines` the human output.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from aikito_mem.model import Finding

__all__ = ["SCHEMA", "EntryKind", "InitEntry", "InitReport", "InitStatus", "text_lines"]

#: ``schema`` of the ``--json`` document.
SCHEMA = "aikito.init/1"


class InitStatus(enum.Enum):
    """What happened to one path."""

    CREATED = "created"
    EXISTED = "existed"
    #: A dry run's "would create" (and, in a failed run's report, "not created").
    PLANNED = "planned"


class EntryKind(enum.Enum):
    DIRECTORY = "directory"
    FILE = "file"


@attrs.frozen
class InitEntry:
    """One path ``init`` looked at."""

    path: str
    kind: EntryKind
    status: InitStatus
    #: What the path is for: ``workspace``, ``parent``, ``projects``, ``memory``,
    #: ``skills``, ``agents``, ``agent``, ``subagents``, ``layout``, ``config_dir``,
    #: ``pointer``, ``project``, ``project_config``.
    role: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind.value, "status": self.status.value,
                "role": self.role}


@attrs.frozen
class InitReport:
    """The frozen result of :func:`init_workspace` or :func:`init_project`."""

    #: ``workspace`` or ``project``.
    command: str
    #: The physical workspace root.
    workspace: str
    #: How the workspace was chosen: ``argument``, ``AIKITO_DIR``, ``default`` (init) or
    #: discovery's ``option``, ``AIKITO_DIR``, ``pointer file``, ``default`` (project).
    found_via: str
    dry_run: bool
    entries: tuple[InitEntry, ...]
    findings: tuple[Finding, ...] = ()
    project: str | None = None
    #: The checkout registered by ``init project`` (absolute), and how it was written.
    checkout: str | None = None
    registered_as: str | None = None
    #: The pointer file considered (``None`` when no home directory is known).
    pointer: str | None = None
    #: The catalogue agents detected on this machine and registered in a new ``agents/``
    #: ([N2]); empty: none detected, so no ``agents/``; ``None``: ``agents/`` existed.
    agents: tuple[str, ...] | None = None

    def count(self, status: InitStatus) -> int:
        return sum(1 for e in self.entries if e.status is status)

    @property
    def outcome(self) -> str:
        """``planned`` (dry run), ``applied`` (something created) or ``unchanged``."""
        if self.dry_run:
            return "planned"
        return "applied" if self.count(InitStatus.CREATED) else "unchanged"

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "command": self.command,
            "workspace": self.workspace,
            "found_via": self.found_via,
            "dry_run": self.dry_run,
            "outcome": self.outcome,
            "project": self.project,
            "checkout": self.checkout,
            "registered_as": self.registered_as,
            "pointer": self.pointer,
            "agents": None if self.agents is None else list(self.agents),
            "summary": {s.value: self.count(s) for s in InitStatus},
            "entries": [e.to_json() for e in self.entries],
            "findings": [attrs.asdict(f) for f in self.findings],
        }


# --------------------------------------------------------------------------- text


_WORDS = {InitStatus.CREATED: "created", InitStatus.EXISTED: "exists",
          InitStatus.PLANNED: "would create"}


def _shown(path: str, report: InitReport, home: str | None) -> str:
    root = report.workspace.rstrip("/") + "/"
    if path.startswith(root):
        return path[len(root):]
    if home and home != "/" and path.startswith(home.rstrip("/") + "/"):
        return "~/" + path[len(home.rstrip("/")) + 1:]
    return path


def text_lines(report: InitReport, *, home: str | None = None) -> list[str]:
    """Human lines for a report: a header, one line per path, warnings, the next step."""
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
    lines += [f"note: {f.message}" for f in report.findings
              if f.code == "init.pointer_repointed"]
    lines += [f"warning: {f.message}" for f in report.findings if f.severity == "warning"]
    if report.agents == ():
        lines += ["note: no coding agent detected here, so no agents/ registry: AGENTS.md is the",
                  "note: one instruction target; `aikito agents` lists the agents aikito knows,",
                  "note: `aikito agents add NAME` registers one"]
    lines.append(after)
    return lines
