"""``aikito status``: every project of the workspace at once, as a dry run of each.

The sync state of every checkout comes from :meth:`Project.plan` — the one planner — so a
status can never disagree with what ``aikito sync project --dry-run`` would print.  Nothing
is written and no lock is taken ([E7]).  :func:`collect` returns a frozen
:class:`StatusReport`; :mod:`aikito_mem.render.status` turns it into text and into the
``aikito.status/1`` document.

Decisions where the spec is silent (also in docs/commands.md):

- ``in_sync`` is true when the plan has nothing to create or unlink and no conflict for
  that checkout.  Foreign entries are warnings: they are counted but do not make a
  checkout out of sync (a sync would not change them either).
- An offline checkout has no sync state: its ``sync`` is ``None`` and it never affects the
  exit code (offline checkouts never block active ones, INV-MEM-08).
- An invalid checkout (exists but is not a directory, or cannot be examined) counts its
  conflict, exactly as the sync plan does.
- A project whose ``agent.toml`` is broken, or whose plan cannot be made (a path the
  system refuses, a directory that cannot be examined), is listed with its error and makes
  the exit code 1: the listing goes on and succeeds, but not everything is known to be in
  sync.  Exit 4 is kept for the workspace itself (not found, no ``projects/``,
  unlistable).
- ``unlink`` counts every planned UNLINK, links and emptied directories alike.
- Each active checkout carries its memory descriptor (:func:`aikito_mem.world.descriptor.
  read_descriptor`: ``.agents/config.yaml`` by its reader rules; YAML is imported here
  only, and only when there is a file) and whether ``.agents/memory/MEMORY.md`` was
  recognised as the descriptor's index (the plan's ``memory.index_anchor`` finding).  A
  descriptor that cannot be read is a warning for that checkout: it never stops the
  listing and never changes the exit code (the exit code is the sync state).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from aikito_mem.errors import (
    EXIT_CONFLICT,
    EXIT_OK,
    EXIT_PENDING,
    AikitoError,
    ConfigError,
    InterruptedError_,
    exit_code_for,
)
from aikito_mem.layout import INDEX_NAME, MEMORY_DIR
from aikito_mem.model import (
    SEGMENT_ORDER,
    Action,
    CheckoutState,
    Finding,
    Plan,
    SegmentName,
    Severity,
)

if TYPE_CHECKING:  # pragma: no cover
    from aikito_mem.world.descriptor import MemoryDescriptor

#: 2: each active checkout gained ``descriptor``; 3: ``sync.segments`` per checkout and
#: the workspace-wide ``findings`` ([G5]).
CONTRACT_VERSION = 3


@attrs.frozen
class SyncCounts:
    """What a sync of one active (or invalid) checkout would do."""

    create: int = 0
    unlink: int = 0
    conflict: int = 0
    #: Entries under ``.agents/memory`` aikito did not create (``memory.foreign_entry``).
    foreign: int = 0

    @property
    def in_sync(self) -> bool:
        return self.create == 0 and self.unlink == 0 and self.conflict == 0


@attrs.frozen
class CheckoutStatus:
    label: str
    path: str
    state: CheckoutState
    reason: str | None = None
    #: ``None`` for an offline checkout: nothing below its path was observed.
    sync: SyncCounts | None = None
    #: The memory descriptor of an active checkout (``None`` otherwise).
    descriptor: MemoryDescriptor | None = None
    #: The path of ``.agents/memory/MEMORY.md`` when the plan recognised it as the
    #: descriptor's index (the anchor), else ``None``.
    index: str | None = None
    #: The same counts per segment (``skills``, ``instructions``, ``memory``) ([G5]).
    segments: tuple[tuple[str, SyncCounts], ...] = ()

    @property
    def in_sync(self) -> bool:
        return self.sync is None or self.sync.in_sync


@attrs.frozen
class ProjectStatus:
    """One project: its memory configuration and checkouts, or the error that stopped it."""

    name: str
    references: tuple[str, ...] = ()
    notes_source: str | None = None
    #: ``current``, ``legacy`` or ``None``.
    notes_location: str | None = None
    checkouts: tuple[CheckoutStatus, ...] = ()
    blocked: bool = False
    warnings: int = 0
    error: AikitoError | None = None

    @property
    def in_sync(self) -> bool:
        return self.error is None and all(co.in_sync for co in self.checkouts)

    @property
    def exit_code(self) -> int:
        """What ``aikito sync project NAME --check`` exits with for this project."""
        if self.error is not None:
            return exit_code_for(self.error)
        if self.blocked:
            return EXIT_CONFLICT
        return EXIT_OK if self.in_sync else EXIT_PENDING


@attrs.frozen
class StatusReport:
    """The whole ``aikito status`` answer."""

    workspace: str | None
    #: How the workspace was found: ``option``, ``AIKITO_DIR``, ``pointer file``, ``default``.
    workspace_source: str | None
    projects: tuple[ProjectStatus, ...] = ()
    #: The error that ended the command (workspace unusable, a signal).
    error: AikitoError | None = None
    #: Workspace-wide warnings: one checkout registered by two projects ([G5]).
    findings: tuple[Finding, ...] = ()

    @property
    def exit_code(self) -> int:
        """[U3]: ``sync --check``'s codes — 0 every project in sync, 7 changes pending, 1
        a segment blocked, 4 a project that cannot be read (a configuration error) — the
        first of 5, 3, 6, 4, 1, 7 any project has, as ``aikito sync`` combines them."""
        if self.error is not None:
            return exit_code_for(self.error)
        from aikito_mem.commands.sync_all import combined_exit_code

        return combined_exit_code([p.exit_code for p in self.projects])


def _counts(plan: Plan) -> dict[str, SyncCounts]:
    create = dict.fromkeys((co.path for co in plan.checkouts), 0)
    unlink, conflict, foreign = dict(create), dict(create), dict(create)
    for op in plan.operations:
        if op.checkout not in create:  # pragma: no cover - every op has a planned checkout
            continue
        if op.action is Action.CREATE:
            create[op.checkout] += 1
        elif op.action is Action.UNLINK:
            unlink[op.checkout] += 1
        elif op.action is Action.CONFLICT:
            conflict[op.checkout] += 1
    prefixes = [(f"{co.path.rstrip('/')}/{MEMORY_DIR}/", co.path) for co in plan.checkouts]
    for finding in plan.findings:
        if finding.code != "memory.foreign_entry" or not finding.path:
            continue
        for prefix, path in prefixes:
            if finding.path.startswith(prefix):
                foreign[path] += 1
                break
    return {path: SyncCounts(create[path], unlink[path], conflict[path], foreign[path])
            for path in create}


def _segment_counts(plan: Plan) -> dict[str, tuple[tuple[str, SyncCounts], ...]]:
    """Per checkout: (segment, counts) for each segment with anything there ([G5])."""
    table: dict[tuple[str, SegmentName], list[int]] = {}
    for op in plan.operations:
        row = table.setdefault((op.checkout, op.segment), [0, 0, 0])
        if op.action is Action.CREATE:
            row[0] += 1
        elif op.action is Action.UNLINK:
            row[1] += 1
        elif op.action is Action.CONFLICT:
            row[2] += 1
    out: dict[str, tuple[tuple[str, SyncCounts], ...]] = {}
    for co in plan.checkouts:
        out[co.path] = tuple(
            (seg.value, SyncCounts(*table[(co.path, seg)]))
            for seg in SEGMENT_ORDER if (co.path, seg) in table
        )
    return out


def shared_checkouts(projects: tuple[ProjectStatus, ...]) -> tuple[Finding, ...]:
    """[G5]: a checkout registered by two projects — their syncs would unlink each
    other's links, since ownership is by the link's literal."""
    owners: dict[str, list[str]] = {}
    for project in projects:
        for co in project.checkouts:
            if co.state is CheckoutState.ACTIVE:
                owners.setdefault(co.path, []).append(project.name)
    return tuple(
        Finding("status.shared_checkout", Severity.WARNING,
                f"checkout {path} is registered by the projects {', '.join(names)}: their "
                "syncs would unlink each other's links (ownership is by the link's "
                "literal) — register it in one project only", path)
        for path, names in sorted(owners.items()) if len(names) > 1
    )


def project_status(plan: Plan) -> ProjectStatus:
    """One project's status, from its dry-run plan."""
    counts = _counts(plan)
    per_segment = _segment_counts(plan)
    indexes = {f.path for f in plan.findings if f.code == "memory.index_anchor"}
    checkouts = tuple(
        CheckoutStatus(co.label, co.path, co.state, co.reason,
                       None if co.state is CheckoutState.OFFLINE else counts[co.path],
                       index=_index(co.path, indexes),
                       segments=() if co.state is CheckoutState.OFFLINE
                       else per_segment[co.path])
        for co in plan.checkouts
    )
    return ProjectStatus(
        name=plan.project,
        references=plan.memory,
        notes_source=plan.notes_source,
        notes_location=plan.notes_location,
        checkouts=checkouts,
        blocked=plan.blocked,
        warnings=sum(1 for f in plan.findings if f.severity == Severity.WARNING),
    )


def _index(checkout: str, indexes: set[str | None]) -> str | None:
    path = f"{checkout.rstrip('/')}/{MEMORY_DIR}/{INDEX_NAME}"
    return path if path in indexes else None


def with_descriptors(project: ProjectStatus) -> ProjectStatus:
    """``project`` with the memory descriptor of each active checkout read (I/O)."""
    from aikito_mem.world.descriptor import read_descriptor

    if not any(co.state is CheckoutState.ACTIVE for co in project.checkouts):
        return project
    return attrs.evolve(project, checkouts=tuple(
        attrs.evolve(co, descriptor=read_descriptor(co.path))
        if co.state is CheckoutState.ACTIVE else co
        for co in project.checkouts
    ))


def _problem(name: str, error: AikitoError | OSError | ValueError) -> AikitoError:
    """The error of one project that cannot be planned, as data for its entry."""
    if isinstance(error, AikitoError):
        return error
    if isinstance(error, OSError):
        return AikitoError(f"{error.filename}: {error.strerror}", code="status.os_error")
    # ValueError: a path the system refuses (an embedded NUL byte, …).
    return ConfigError(f"project {name!r} cannot be examined: {error} — fix the paths in "
                       "its agent.toml", code="status.invalid_path")


def collect(workspace: str | None, *, environ: Mapping[str, str] | None = None
            ) -> StatusReport:
    """The status of every project of ``workspace`` (``None``: discovery).  Writes nothing.

    A workspace that cannot be used is the report's ``error``; a project that cannot be
    planned is listed with its own error and the others are listed as usual.
    """
    from aikito_mem.api import Project
    from aikito_mem.config.discovery import resolve_workspace
    from aikito_mem.config.projects import list_projects, load_project_config

    try:
        ws = resolve_workspace(workspace, environ=environ)
        names = list_projects(ws.root)
    except ConfigError as exc:
        return StatusReport(None, None, error=exc)
    projects: list[ProjectStatus] = []
    for name in names:
        try:
            config = load_project_config(ws.root, name, environ=environ)
            # Only shown, never executed: no source identities ([P5]).
            plan = Project(config=config, workspace=ws).plan(identify=False)
        except InterruptedError_:
            raise
        except (AikitoError, OSError, ValueError) as exc:
            projects.append(ProjectStatus(name=name, error=_problem(name, exc)))
            continue
        projects.append(with_descriptors(project_status(plan)))
    listed = tuple(projects)
    return StatusReport(ws.root, ws.found_via, listed, findings=shared_checkouts(listed))
