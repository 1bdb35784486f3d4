"""The frozen report of ``aikito init`` / ``aikito init project``.

:class:`InitReport` is what :func:`aikito_mem.commands.init.run.init_workspace` and
:func:`aikito_mem.commands.init.run.init_project` return (and what their errors carry in
``.result``): every path looked at, each ``created``, ``existed`` or ``planned``.
:mod:`aikito_mem.render.init` turns it into the ``aikito.init/1`` document and text.
"""

from __future__ import annotations

from enum import Enum

import attrs

from aikito_mem.model import Finding

__all__ = ["SCHEMA", "EntryKind", "InitEntry", "InitReport", "InitStatus"]

#: ``schema`` of the ``--json`` document.
SCHEMA = "aikito.init/1"


class InitStatus(Enum):
    """What happened to one path."""

    CREATED = "created"
    EXISTED = "existed"
    #: A dry run's "would create" (and, in a failed run's report, "not created").
    PLANNED = "planned"


class EntryKind(Enum):
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
