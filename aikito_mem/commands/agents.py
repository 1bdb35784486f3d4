"""``aikito agents`` and ``aikito agents add`` ([N2]): the catalogue, and registering from it.

- :func:`list_agents` — every agent of the catalogue, whether it is detected on this
  machine (the run's ``PATH`` and home directory, [G4]'s rule) and registered in the
  workspace, and the paths each would link; registry agents the catalogue does not know
  are listed too (as the registry spells them).  Writes nothing.
- :func:`add_agents` — writes ``agents/<name>.toml`` from the catalogue for each named
  agent, never overwriting: a file already there is left as it is and reported.  Planning
  comes first — names checked (an unknown one gets a did-you-mean), the registry read and
  the new one built as a sync would build it, so a name whose target would collide is
  refused before anything is written — then the writes, each through ``O_NOFOLLOW``
  descriptors below the physical workspace root, with :func:`aikito_mem.signals.check`
  before each.  A dry run stops after planning.

Both return frozen reports (rendered by :mod:`aikito_mem.render.agents`); errors are
:mod:`aikito_mem.errors` classes carrying the partial report in ``.result``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from enum import Enum

from attrs import frozen

from aikito_mem.config.catalogue import CatalogueEntry
from aikito_mem.config.registry import AgentEntry, Detect, Registry
from aikito_mem.errors import AikitoError, ConfigError
from aikito_mem.layout import AGENTS_ROOT, agents_root
from aikito_mem.model import Finding

__all__ = [
    "AddStatus",
    "AddedFile",
    "AgentRow",
    "AgentsAddReport",
    "AgentsReport",
    "add_agents",
    "list_agents",
]



@frozen
class AgentRow:
    """One agent as ``aikito agents`` lists it."""

    name: str
    display_name: str
    in_catalogue: bool
    detected: bool
    #: ``None`` when there is no workspace to look in.
    registered: bool | None
    #: What a sync would link for it: the registry's values when registered, else the
    #: catalogue's.
    instruction_path: str | None
    skills_path: str | None
    detect: Detect | None


@frozen
class AgentsReport:
    workspace: str | None
    found_via: str | None
    #: Whether the workspace has an ``agents/`` directory ([G3]).
    registry_present: bool
    rows: tuple[AgentRow, ...] = ()
    findings: tuple[Finding, ...] = ()
    error: AikitoError | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.error is None else self.error.exit_code


class AddStatus(Enum):
    CREATED = "created"
    EXISTED = "existed"
    #: A dry run's "would create" (and, in a failed run's report, "not created").
    PLANNED = "planned"


@frozen
class AddedFile:
    agent: str
    path: str
    status: AddStatus


@frozen
class AgentsAddReport:
    workspace: str | None
    dry_run: bool
    #: The registry directory, and whether it was (or would be) created.
    directory: str | None = None
    directory_status: AddStatus | None = None
    files: tuple[AddedFile, ...] = ()
    findings: tuple[Finding, ...] = ()
    error: AikitoError | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.error is None else self.error.exit_code

    @property
    def outcome(self) -> str:
        if self.error is not None:
            return self.error.outcome
        if self.dry_run:
            return "planned"
        created = [f for f in self.files if f.status is AddStatus.CREATED]
        return "applied" if created else "unchanged"


# ------------------------------------------------------------------------------ listing


def _row(entry: CatalogueEntry, registered: AgentEntry | None, present: bool | None,
         detected: bool) -> AgentRow:
    if registered is not None:
        return AgentRow(entry.name, entry.display_name, True, detected, True,
                        registered.instruction_path, registered.skills_path,
                        registered.detect)
    return AgentRow(entry.name, entry.display_name, True, detected,
                    None if present is None else False,
                    entry.instruction_path, entry.skills_path, entry.detect)


def list_agents(workspace: str | None = None, *,
                environ: Mapping[str, str] | None = None) -> AgentsReport:
    """The catalogue with this machine's detection and the workspace's registry.

    Without a usable workspace the catalogue is still listed (``registered`` unknown),
    with a warning finding; a registry that cannot be read is the report's error.
    """
    from aikito_mem.config.catalogue import load_catalogue
    from aikito_mem.config.discovery import home_directory, resolve_workspace
    from aikito_mem.config.registry import NO_REGISTRY, detected
    from aikito_mem.config.registry_read import load_registry

    env = os.environ if environ is None else environ
    home = home_directory(env)
    findings: list[Finding] = []
    registry: Registry = NO_REGISTRY
    root: str | None = None
    found_via: str | None = None
    try:
        ws = resolve_workspace(workspace, environ=env)
    except ConfigError as exc:
        findings.append(Finding("agents.no_workspace", "warning",
                                f"no workspace to compare with: {exc.message}"))
    else:
        root, found_via = ws.root, ws.found_via
        try:
            registry = load_registry(root)
        except ConfigError as exc:
            return AgentsReport(root, found_via, True, error=exc)
    present = registry.present if root is not None else None
    catalogue = load_catalogue()
    rows = [_row(e, registry.agent(e.name), present, detected(e.detect, env, home))
            for e in catalogue]
    known = {e.name for e in catalogue}
    rows += [AgentRow(a.name, a.name, False, detected(a.detect, env, home), True,
                      a.instruction_path, a.skills_path, a.detect)
             for a in registry.agents if a.name not in known]
    return AgentsReport(root, found_via, registry.present, tuple(rows), tuple(findings))


# ------------------------------------------------------------------------------- adding


def _unknown(name: str, catalogue: Sequence[CatalogueEntry]) -> ConfigError:
    from aikito_mem.config.catalogue import suggestions

    close = suggestions(name, [e.name for e in catalogue])
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "")
    return ConfigError(
        f"unknown agent {name!r}: the catalogue has no agent of that name — {hint}"
        f"`aikito agents` lists the {len(catalogue)} agents aikito knows; nothing was "
        "written", code="config.unknown_agent",
    )


def _selected(names: Sequence[str], catalogue: Sequence[CatalogueEntry]
              ) -> list[CatalogueEntry]:
    by_name = {e.name: e for e in catalogue}
    chosen: dict[str, CatalogueEntry] = {}
    for name in names:
        entry = by_name.get(name)
        if entry is None:
            raise _unknown(name, catalogue)
        chosen.setdefault(name, entry)
    return list(chosen.values())


def _check_combined(registry: Registry, new: Sequence[CatalogueEntry], root: str) -> None:
    """The registry the added files would make must load as a sync loads it ([G3]):
    a new target inside another agent's target is refused before anything is written."""
    from aikito_mem.config.catalogue import registry_text
    from aikito_mem.config.registry_read import build_registry, parse_agent_file

    entries = list(registry.agents)
    present = {a.name for a in entries}
    for entry in new:
        if entry.name not in present:
            file = f"{agents_root(root)}/{entry.name}.toml"
            entries.append(parse_agent_file(entry.name, registry_text(entry).encode(), file))
    build_registry(entries)


def add_agents(workspace: str | None, names: Sequence[str], *, dry_run: bool = False,
               environ: Mapping[str, str] | None = None) -> AgentsAddReport:
    """Write ``agents/<name>.toml`` from the catalogue for each of ``names``.

    Never overwrites: an existing file is :attr:`AddStatus.EXISTED`.  ``ConfigError``
    (exit 4, nothing written) for an unknown name, an unusable workspace or registry, or
    a registry the new files would make invalid; ``StalePlanError`` (exit 3) when a file
    appears meanwhile; ``ExecutionError`` (exit 5) when a write fails.
    """
    from aikito_mem import signals
    from aikito_mem.config.catalogue import load_catalogue
    from aikito_mem.config.discovery import resolve_workspace
    from aikito_mem.config.registry_read import load_registry

    env = os.environ if environ is None else environ
    with signals.interruptible():
        catalogue = load_catalogue()
        chosen = _selected(names, catalogue)
        ws = resolve_workspace(workspace, environ=env)
        directory = agents_root(ws.root)
        # A symlinked or non-directory agents/ is refused here, as a sync refuses it: so
        # nothing is ever written through a symlink or over a file.
        registry = load_registry(ws.root)
        exists = registry.present
        _check_combined(registry, chosen, ws.root)
        planned = tuple(
            AddedFile(e.name, f"{directory}/{e.name}.toml",
                      AddStatus.EXISTED if os.path.lexists(f"{directory}/{e.name}.toml")
                      else AddStatus.PLANNED)
            for e in chosen
        )
    report = AgentsAddReport(ws.root, dry_run, directory,
                             AddStatus.EXISTED if exists else AddStatus.PLANNED, planned)
    if dry_run:
        return report
    return _write(report, {e.name: e for e in chosen})


def _finished(report: AgentsAddReport, created: set[str]) -> AgentsAddReport:
    import attrs

    def status(path: str, planned: AddStatus) -> AddStatus:
        return AddStatus.CREATED if path in created else planned

    assert report.directory is not None and report.directory_status is not None
    return attrs.evolve(
        report,
        directory_status=status(report.directory, report.directory_status),
        files=tuple(attrs.evolve(f, status=status(f.path, f.status)) for f in report.files),
    )


def _write(report: AgentsAddReport, entries: Mapping[str, CatalogueEntry]) -> AgentsAddReport:
    """Create the registry directory and the planned files, never replacing anything."""
    import errno

    from aikito_mem import fsutil, signals
    from aikito_mem.config.catalogue import registry_text
    from aikito_mem.errors import ExecutionError, InterruptedError_, StalePlanError

    assert report.workspace is not None and report.directory is not None
    created: set[str] = set()
    fds: list[int] = []
    current = report.directory
    try:
        root_fd = fsutil.open_subdir(None, report.workspace)  # physical: no symlink in it
        fds.append(root_fd)
        if report.directory_status is AddStatus.PLANNED:
            signals.check()
            os.mkdir(AGENTS_ROOT, 0o777, dir_fd=root_fd)
            created.add(report.directory)
        dir_fd = fsutil.open_subdir(root_fd, AGENTS_ROOT)
        fds.append(dir_fd)
        for added in report.files:
            if added.status is not AddStatus.PLANNED:
                continue
            current = added.path
            signals.check()
            data = registry_text(entries[added.agent]).encode("utf-8")
            fsutil.create_new(dir_fd, f"{added.agent}.toml", data)  # fails on any entry
            created.add(added.path)
    except FileExistsError:
        raise StalePlanError(
            f"{current} appeared while aikito agents add was running; it was not touched "
            "— run the command again (it adds only what is missing)",
            differences=(f"{current} appeared since planning",),
            result=_finished(report, created),
        ) from None
    except InterruptedError_ as exc:
        exc.result = _finished(report, created)
        raise
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            reason = "a directory on the way was replaced by a symlink or a file"
        raise ExecutionError(
            f"cannot create {current}: {reason}; expected to create it — fix the cause and "
            "run again (it adds only what is missing; nothing existing was changed)",
            result=_finished(report, created), path=current,
        ) from None
    finally:
        for fd in fds:
            os.close(fd)
    return _finished(report, created)
